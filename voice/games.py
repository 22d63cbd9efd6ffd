"""The games the app referees: engine state, config from options, intent parser.

Each game is bound once here; the referee, the listener and the live loop look
games up by name or alias (``desserts``, ``jd``, ``poutine``, ``chaosteria``…).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from engine.core import Action, GameState
from voice.intents import desserts as desserts_intents

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


def _desserts_options(group: argparse._ArgumentGroup) -> None:
    group.add_argument(
        "--trump-window", type=float, default=1.5, metavar="S",
        help="seconds after a serve is named in which another caller may trump it (default 1.5)",
    )
    group.add_argument(
        "--guest-timeout", type=float, default=20.0, metavar="S",
        help="seconds of silence after a guest is announced before it leaves hungry (default 20)",
    )


def _desserts_config(players: tuple[str, ...], stacks: dict[str, tuple[str, ...]], options: Options) -> Any:
    from engine.desserts import DessertsConfig

    return DessertsConfig(
        players=players,
        tie_window_ms=options.get("tie_window_ms", 40.0),
        trump_window_s=options.get("trump_window", 1.5),
        guest_timeout_s=options.get("guest_timeout", 20.0),
        stacks=stacks,
    )


def _desserts_new_game(config: Any, seed: int) -> GameState[Any]:
    from engine.desserts import new_game

    return new_game(config, seed)


GAMES: dict[str, GameBinding] = {
    "desserts": GameBinding(
        name="desserts",
        title="Just Desserts",
        aliases=("just-desserts", "justdesserts", "jd", "dessert"),
        decks=("guests",),
        add_options=_desserts_options,
        make_config=_desserts_config,
        new_game=_desserts_new_game,
        parse=desserts_intents.parse,
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
