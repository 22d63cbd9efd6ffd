"""Player lists: the ``--players`` list is the seating order, going to the right."""

from __future__ import annotations

from collections.abc import Sequence

from engine.core import ConfigError


def check_names(names: Sequence[str]) -> tuple[str, ...]:
    """Validate a list of names: each non-empty, printable and without a colon (a transcript
    line is ``ONSET NAME: WORDS``), no two the same (case-insensitive)."""
    players = tuple(n.strip() for n in names)
    if any(not p for p in players):
        raise ConfigError(f"empty player name in {list(names)!r}")
    for p in players:
        if not p.isprintable() or ":" in p:
            raise ConfigError(f"player name {p!r} holds a colon or a control character")
    folded = [p.casefold() for p in players]
    dupes = sorted({p for p in players if folded.count(p.casefold()) > 1})
    if dupes:
        raise ConfigError(f"player names must differ: {', '.join(dupes)} given twice")
    return players


def check_players(names: Sequence[str], minimum: int = 2, maximum: int = 8) -> tuple[str, ...]:
    """Validate a seating list: ``minimum``..``maximum`` distinct, non-empty names."""
    players = check_names(names)
    if not minimum <= len(players) <= maximum:
        raise ConfigError(f"{len(players)} players given; this game takes {minimum} to {maximum}")
    return players


def to_the_right(players: Sequence[str], player: str, steps: int = 1) -> str:
    """The player ``steps`` seats to the right (the next name in the list, wrapping)."""
    return players[(players.index(player) + steps) % len(players)]
