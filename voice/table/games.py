"""The games the app referees: engine state, config from options, intent parser.

Each game is bound once here; the referee, the listener and the live loop look
games up by name or alias (``desserts``, ``jd``, ``poutine``, ``chaosteria``…).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from engine import chaosteria, desserts, poutine
from engine.core import NARRATION_WPM, Action, GameState
from voice.recognition.intents import Phrases
from voice.recognition.intents import chaosteria as chaosteria_intents
from voice.recognition.intents import desserts as desserts_intents
from voice.recognition.intents import poutine as poutine_intents
from voice.table.transcript import split_list

Options = Mapping[str, Any]


@dataclass(frozen=True)
class GameBinding:
    """What the voice side needs to know about one game."""

    name: str
    title: str
    aliases: tuple[str, ...]
    decks: tuple[str, ...]
    add_options: Callable[[argparse._ArgumentGroup], None]
    make_config: Callable[[tuple[str, ...], dict[str, tuple[str, ...]], Options], Any]
    new_game: Callable[[Any, int], GameState[Any]]
    parse: Callable[[str, str, float, Any], Action]
    phrases: Callable[[tuple[str, ...], Any, str | None], Phrases]
    """What can be said now (templates and slots), by one player when one is named: the
    recogniser's grammar of the moment."""
    awaited: Callable[[Any], tuple[str, ...]]
    """The players whose words the game waits for now (a serve, an answer): one of them not
    understood is asked to say it again."""


def _desserts_options(group: argparse._ArgumentGroup) -> None:
    group.add_argument(
        "--trump-window", type=float, default=1.5, metavar="S",
        help="seconds after a serve is named in which another caller may trump it (default 1.5)",
    )
    group.add_argument(
        "--guest-timeout", type=float, default=20.0, metavar="S",
        help="seconds of silence after a guest's announcement ends before it leaves hungry "
        "(default 20)",
    )


def _desserts_config(players: tuple[str, ...], stacks: dict[str, tuple[str, ...]], options: Options) -> Any:
    return desserts.DessertsConfig(
        players=players,
        tie_window_ms=options.get("tie_window_ms", 40.0),
        trump_window_s=options.get("trump_window", 1.5),
        guest_timeout_s=options.get("guest_timeout", 20.0),
        stacks=stacks,
        narration_wpm=options.get("rate", NARRATION_WPM),  # the announcer's --rate when playing
    )



def _poutine_options(group: argparse._ArgumentGroup) -> None:
    group.add_argument(
        "--waitresses", type=split_list, default=(), metavar="A,B",
        help="players who wait tables in round 1, rotating left each round "
        "(default: the app plays the waitresses and everyone cooks)",
    )
    group.add_argument(
        "--variant", type=split_list, default=(), metavar="V,V",
        help="variants: gifts (mop gifts at round start), live (one open offer per cook)",
    )
    group.add_argument(
        "--orders-shown", type=int, choices=(2, 3), metavar="N",
        help="orders each waitress shows at once: 2 or 3 (default 3; 2 with bigger staff)",
    )


def _poutine_config(players: tuple[str, ...], stacks: dict[str, tuple[str, ...]], options: Options) -> Any:
    return poutine.PoutineConfig(
        players=players,
        waitresses=tuple(options.get("waitresses") or ()),
        orders_shown=options.get("orders_shown"),
        variants=tuple(options.get("variant") or ()),
        tie_window_ms=options.get("tie_window_ms", 40.0),
        stacks=stacks,
    )



def _chaosteria_options(group: argparse._ArgumentGroup) -> None:
    group.add_argument(
        "--orders", choices=("house", "table"), default="house",
        help="house: the app deals order cards and reads the options; "
        "table: players hold physical cards and say their choices (default house)",
    )
    group.add_argument(
        "--kitchen", type=int, default=3, metavar="N",
        help="dishes face up in the kitchen, refilled after every turn (default 3)",
    )
    group.add_argument(
        "--bell-window", type=float, default=2.0, metavar="S",
        help="seconds after a client is named (or a dish returned) in which the bell may ring "
        "(default 2.0)",
    )


def _chaosteria_config(players: tuple[str, ...], stacks: dict[str, tuple[str, ...]], options: Options) -> Any:
    return chaosteria.ChaosteriaConfig(
        players=players,
        orders=options.get("orders", "house"),
        kitchen=options.get("kitchen", 3),
        bell_window_s=options.get("bell_window", 2.0),
        tie_window_ms=options.get("tie_window_ms", 40.0),
        stacks=stacks,
    )



GAMES: dict[str, GameBinding] = {
    "desserts": GameBinding(
        name="desserts",
        title="Just Desserts",
        aliases=("just-desserts", "justdesserts", "jd", "dessert"),
        decks=("guests",),
        add_options=_desserts_options,
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
        add_options=_poutine_options,
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
        add_options=_chaosteria_options,
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
