"""The games the app referees: engine state, config from typed options, intent parser.

Each game is bound once here; the referee, the listener and the live loop look
games up by name or alias (``desserts``, ``jd``, ``poutine``, ``chaosteria``…).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine import chaosteria, desserts, poutine
from engine.core import Action, GameState
from voice.recognition.intents import Phrases
from voice.recognition.intents import chaosteria as chaosteria_intents
from voice.recognition.intents import desserts as desserts_intents
from voice.recognition.intents import poutine as poutine_intents
from voice.table.options import ChaosteriaOptions, DessertsOptions, PoutineOptions, TableOptions

Stacks = dict[str, tuple[str, ...]]


@dataclass(frozen=True)
class GameBinding:
    """What the voice side needs to know about one game."""

    name: str
    title: str
    aliases: tuple[str, ...]
    decks: tuple[str, ...]
    options: type[Any]
    """The game's options: a frozen, validated dataclass (see :mod:`voice.table.options`)."""
    make_config: Callable[[tuple[str, ...], Stacks, Any, TableOptions], Any]
    new_game: Callable[[Any, int], GameState[Any]]
    parse: Callable[[str, str, float, Any], Action]
    phrases: Callable[[tuple[str, ...], Any, str | None], Phrases]
    """What can be said now (templates and slots), by one player when one is named: the
    recogniser's grammar of the moment."""
    awaited: Callable[[Any], tuple[str, ...]]
    """The players whose words the game waits for now (a serve, an answer): one of them not
    understood is asked to say it again."""


def _desserts_config(players: tuple[str, ...], stacks: Stacks, options: DessertsOptions,
                     table: TableOptions) -> desserts.DessertsConfig:
    return desserts.DessertsConfig(
        players=players,
        tie_window_ms=table.tie_window_ms,
        trump_window_s=options.trump_window_s,
        guest_timeout_s=options.guest_timeout_s,
        stacks=stacks,
        narration_wpm=table.rate_wpm,
    )


def _poutine_config(players: tuple[str, ...], stacks: Stacks, options: PoutineOptions,
                    table: TableOptions) -> poutine.PoutineConfig:
    return poutine.PoutineConfig(
        players=players,
        waitresses=options.waitresses,
        orders_shown=options.orders_shown,
        variants=options.variants,
        tie_window_ms=table.tie_window_ms,
        stacks=stacks,
    )


def _chaosteria_config(players: tuple[str, ...], stacks: Stacks, options: ChaosteriaOptions,
                       table: TableOptions) -> chaosteria.ChaosteriaConfig:
    return chaosteria.ChaosteriaConfig(
        players=players,
        orders=options.orders,
        kitchen=options.kitchen,
        bell_window_s=options.bell_window_s,
        tie_window_ms=table.tie_window_ms,
        stacks=stacks,
    )


GAMES: dict[str, GameBinding] = {
    "desserts": GameBinding(
        name="desserts",
        title="Just Desserts",
        aliases=("just-desserts", "justdesserts", "jd", "dessert"),
        decks=("guests",),
        options=DessertsOptions,
        make_config=_desserts_config,
        new_game=desserts.new_game,
        parse=desserts_intents.parse,
        phrases=desserts_intents.phrases,
        awaited=desserts_intents.awaited,
    ),
    "poutine": GameBinding(
        name="poutine",
        title="Miss Poutine",
        aliases=("miss-poutine", "misspoutine", "mp"),
        decks=("orders",),
        options=PoutineOptions,
        make_config=_poutine_config,
        new_game=poutine.new_game,
        parse=poutine_intents.parse,
        phrases=poutine_intents.phrases,
        awaited=poutine_intents.awaited,
    ),
    "chaosteria": GameBinding(
        name="chaosteria",
        title="Chaosteria",
        aliases=("chaos", "kaosuteria", "カオステリア"),
        decks=("orders", "dishes"),
        options=ChaosteriaOptions,
        make_config=_chaosteria_config,
        new_game=chaosteria.new_game,
        parse=chaosteria_intents.parse,
        phrases=chaosteria_intents.phrases,
        awaited=chaosteria_intents.awaited,
    ),
}


class UnknownGame(ValueError):
    def __init__(self, name: str) -> None:
        super().__init__(f"unknown game {name!r}; choose one of: {', '.join(GAMES)}")


def lookup(name: str) -> GameBinding:
    """The game called ``name`` or one of its aliases (case-insensitive)."""
    key = name.strip().casefold()
    for game in GAMES.values():
        if key == game.name or key in game.aliases:
            return game
    raise UnknownGame(name)
