"""The game journal: every action appended to disk as it happens, so nothing is lost.

JSON lines: a header naming the game, its players, stacked decks, options (versioned,
keyed by field: :meth:`voice.table.options.Options.to_json`) and
seed; then one ``step`` line per utterance heard (or timer fired) carrying the
actions it caused, written in one piece and fsynced, and ``undo`` lines where a
human referee overruled a verdict. Because the engine replays
deterministically, config + seed + actions restore the exact state; the count
of utterances heard tells a resumed recording where to go on.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.core import Action, ConfigError, GameState, action_from_json
from voice.table.games import GameBinding, UnknownGame, lookup
from voice.table.options import OptionError, Options

VERSION = 2
"""Bumped whenever the rules a journal replays through change (2: the Just Desserts guest
timeout runs from the end of the announcement): an older journal would not come back to
the state it recorded."""


class JournalError(ValueError):
    """A journal that cannot be written or read back, named by path (and line)."""


@dataclass(frozen=True)
class Setup:
    """How a game was made: enough to build the same fresh state again."""

    game: str
    players: tuple[str, ...]
    stacks: dict[str, tuple[str, ...]]
    options: Options
    seed: int

    def new_state(self) -> tuple[GameBinding, GameState[Any]]:
        binding = lookup(self.game)
        if not isinstance(self.options.game, binding.options):
            raise ConfigError(f"{binding.title} is not played with {self.options.game!r}")
        config = binding.make_config(self.players, self.stacks, self.options.game, self.options.table)
        return binding, binding.new_game(config, self.seed)


class Journal:
    """Appends a game's actions to ``path`` as they happen."""

    def __init__(self, path: str, setup: Setup, *, fresh: bool = True) -> None:
        self.path = path
        self.setup = setup
        try:
            # Held open for the whole game: every step is appended and fsynced at once.
            self._fh = open(path, "w" if fresh else "a", encoding="utf-8")  # noqa: SIM115
        except OSError as exc:
            raise JournalError(f"cannot write the journal {path}: {exc.strerror}") from exc
        if fresh:
            self._write({
                "type": "game", "version": VERSION, "game": setup.game,
                "players": list(setup.players),
                "stacks": {k: list(v) for k, v in setup.stacks.items()},
                "options": setup.options.to_json(), "seed": setup.seed,
            })

    def _write(self, entry: dict[str, Any]) -> None:
        self._fh.write(json.dumps(entry, ensure_ascii=False) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def record(self, actions: Sequence[Action], heard: Mapping[str, Any] | None = None) -> None:
        """One step: the utterance heard (if any) and the actions it caused, atomically."""
        self._write({"type": "step", "heard": heard, "actions": [a.to_json() for a in actions]})

    def undo(self, keep: int, t: float, reason: str, dispute: int | None = None) -> None:
        """Record that only the first ``keep`` actions stand (a human override), and the close
        call (:mod:`voice.table.dispute`, by number) it answers, if any."""
        entry = {"type": "undo", "keep": keep, "t": t, "reason": reason}
        self._write(entry if dispute is None else {**entry, "dispute": dispute})

    def close(self) -> None:
        self._fh.close()


@dataclass(frozen=True)
class Restored:
    """A journal read back: how the game was made, its actions, how many utterances it heard
    (``heard``: their records, in order) and what was repaired on the way."""

    setup: Setup
    actions: tuple[Action, ...]
    heard: tuple[dict[str, Any], ...]
    warnings: tuple[str, ...]


def read_journal(path: str) -> Restored:
    """Read a journal back; a torn last line (a crash mid-write) is dropped with a warning."""
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().split("\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise JournalError(f"cannot read the journal {path}: {exc}") from exc
    entries: list[dict[str, Any]] = []
    warnings: list[str] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            entries.append(json.loads(line))
        except json.JSONDecodeError as exc:
            if number >= len(lines) - 1:
                warnings.append(f"{path}:{number}: dropped an unfinished last line")
                break
            raise JournalError(f"{path}:{number}: not a journal line ({exc.msg})") from exc
    if not entries or entries[0].get("type") != "game":
        raise JournalError(f"{path}: not an orderup journal (no game header)")
    head = entries[0]
    if head.get("version") != VERSION:
        raise JournalError(
            f"{path}: written by another version of orderup (journal version "
            f"{head.get('version')}, this one reads {VERSION}): its rules may differ, so it "
            "cannot be resumed exactly; start a new game"
        )
    try:
        setup = Setup(
            game=head["game"], players=tuple(head["players"]),
            stacks={k: tuple(v) for k, v in head["stacks"].items()},
            options=Options.from_json(lookup(head["game"]).options, head["options"]),
            seed=int(head["seed"]),
        )
        actions: list[Action] = []
        heard: list[dict[str, Any]] = []
        for entry in entries[1:]:
            if entry["type"] == "step":
                actions += [action_from_json(a) for a in entry["actions"]]
                if entry["heard"] is not None:
                    heard.append(dict(entry["heard"]))
            elif entry["type"] == "undo":
                del actions[int(entry["keep"]):]
    except (UnknownGame, OptionError) as exc:
        raise JournalError(f"{path}: cannot be resumed: {exc}") from exc
    except (KeyError, TypeError, ValueError) as exc:
        raise JournalError(f"{path}: damaged journal ({exc})") from exc
    return Restored(setup, tuple(actions), tuple(heard), tuple(warnings))


def restore(path: str) -> tuple[GameBinding, GameState[Any], Restored]:
    """The game of a journal, brought back to exactly where it was."""
    restored = read_journal(path)
    try:
        binding, state = restored.setup.new_state()
        for action in restored.actions:
            state.apply(action)
    except (ConfigError, ValueError) as exc:
        raise JournalError(f"{path}: cannot replay the journal: {exc}") from exc
    return binding, state, restored
