"""The game journal: every action appended to disk as it happens, so nothing is lost.

JSON lines: a header naming the game, its players, stacked decks, options (versioned,
keyed by field: :meth:`voice.table.options.Options.to_json`), seed and the recogniser the
table hears it with (none for a transcript); then one ``step`` line per utterance heard (or
timer fired) carrying the actions it caused, written in one piece and fsynced, and ``undo``
lines where a human referee overruled a verdict. Because the engine replays
deterministically, config + seed + actions restore the exact state; the count
of utterances heard tells a resumed recording where to go on.

Each line is ``JSON<TAB>CRC\n``: CRC is the CRC-32 of the JSON's UTF-8 bytes in eight
hex digits (JSON text never holds a raw tab, so the last tab splits the line). A
checksum beside the JSON, not inside it, is checked before anything is parsed and
leaves the JSON as it was. CRC-32 is there to catch accidents, not tampering: it
finds every torn write, run of NUL bytes or hand edit that was not given a new
checksum. Reading back, a bad line at the very end, or a last line without its
newline, is a crash mid-write (a torn tail): it is left out, and cut off (the
journal as it was copied to ``JOURNAL.torn-STAMP``) before a resumed game appends
to it. A bad line anywhere else was changed after it was written: the journal is
refused as it is, never replayed around the change.

A new journal never replaces a file: an existing path is refused, and the file is
created (``O_EXCL``, mode 0600) with the game's first step, so a game that never
starts leaves none. The process that writes a journal holds an exclusive
``flock`` on it for the whole game; another is refused. A write that fails (a full
disk) is a warning, repeated at each failure: the game goes on with the lines not
yet written held in memory, and every later step writes them all again at the same
place, so once there is room again nothing is lost.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import sys
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
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
    """Appends a game's actions to ``path`` as they happen (see the module's docstring)."""

    def __init__(self, path: str, setup: Setup, backend: str | None = None) -> None:
        """A new journal at ``path``, which must not exist; the file is made with the first step.
        ``backend`` is the recogniser the table hears the game with: a resumed game goes on
        with it."""
        if os.path.lexists(path):
            raise JournalError(
                f"{path} already exists: a new journal never replaces a file (choose another "
                f"--journal; to go on with a journal, 'orderup resume {path}')"
            )
        self._attach(path, setup, None, 0)
        self._header = {
            "type": "game", "version": VERSION, "game": setup.game,
            "players": list(setup.players),
            "stacks": {k: list(v) for k, v in setup.stacks.items()},
            "options": setup.options.to_json(), "seed": setup.seed, "backend": backend,
        }

    @classmethod
    def reopen(cls, path: str) -> tuple[Journal, Restored]:
        """The journal at ``path``, locked to go on appending, and what it holds. A torn tail
        is cut off first (a copy of the journal as it was is kept, and named in a warning)."""
        fd = _open_locked(path)
        try:
            data = _read_all(fd)
            restored, good = _parse(path, data)
            if good < len(data):
                copy = f"{path}.torn-{unique_stamp()}"
                _write_new(copy, data)
                os.ftruncate(fd, good)
                os.fsync(fd)
                restored = _torn(path, data, good, restored,
                                 f"was cut off; the journal as it was is kept in {copy}")
        except OSError as exc:
            os.close(fd)
            raise JournalError(f"cannot repair the journal {path}: {exc.strerror}") from exc
        except BaseException:
            os.close(fd)
            raise
        journal = cls.__new__(cls)
        journal._attach(path, restored.setup, fd, good)
        return journal, restored

    def _attach(self, path: str, setup: Setup, fd: int | None, size: int) -> None:
        """``fd``: the open, locked file (None until the first step); ``size``: how many of its
        bytes are written and fsynced; the lines not written yet are held, oldest first."""
        self.path = path
        self.setup = setup
        self._fd = fd
        self._size = size
        self._held: list[bytes] = []

    @property
    def written(self) -> bool:
        """Whether the file holds the game (at least its header)."""
        return self._size > 0

    @property
    def unwritten(self) -> int:
        """How many lines are held in memory only."""
        return len(self._held)

    def _write(self, entry: dict[str, Any]) -> None:
        if self._size == 0 and not self._held:
            self._held.append(_frame(self._header))
        self._held.append(_frame(entry))
        error = self._flush()
        if error is not None:
            _warn(f"cannot write the journal {self.path} ({error}): the game goes on, with "
                  f"its last {self.unwritten} lines held in memory until they can be written")

    def _flush(self) -> str | None:
        """Write the held lines where the file's good part ends; the error, if any."""
        data = b"".join(self._held)
        try:
            if self._fd is None:
                self._fd = _create(self.path)
            offset = self._size
            view = memoryview(data)
            while view:
                done = os.pwrite(self._fd, view, offset)
                view, offset = view[done:], offset + done
            os.fsync(self._fd)
        except OSError as exc:
            return exc.strerror or str(exc)
        self._size += len(data)
        self._held.clear()
        return None

    def record(self, actions: Sequence[Action], heard: Mapping[str, Any] | None = None) -> None:
        """One step: the utterance heard (if any) and the actions it caused, atomically."""
        self._write({"type": "step", "heard": heard, "actions": [a.to_json() for a in actions]})

    def undo(self, keep: int, t: float, reason: str, dispute: int | None = None) -> None:
        """Record that only the first ``keep`` actions stand (a human override), and the close
        call (:mod:`voice.table.dispute`, by number) it answers, if any."""
        entry = {"type": "undo", "keep": keep, "t": t, "reason": reason}
        self._write(entry if dispute is None else {**entry, "dispute": dispute})

    def close(self) -> None:
        """Try once more to write what is held, then release the file and its lock."""
        error = self._flush() if self._held else None
        if error is not None:
            _warn(f"cannot write the journal {self.path} ({error}): its last "
                  f"{self.unwritten} lines are lost")
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def unique_stamp() -> str:
    """Local time to the millisecond and a random suffix: a name no other run will pick."""
    return f"{datetime.now():%Y%m%d-%H%M%S-%f}"[:-3] + f"-{secrets.token_hex(3)}"


def _warn(message: str) -> None:
    print(f"orderup: warning: {message}", file=sys.stderr, flush=True)


def _frame(entry: dict[str, Any]) -> bytes:
    body = json.dumps(entry, ensure_ascii=False).encode("utf-8")
    return body + b"\t" + f"{zlib.crc32(body):08x}".encode() + b"\n"


def _unframe(line: bytes) -> dict[str, Any] | None:
    """The entry of one line without its newline; None unless it matches its checksum."""
    body, tab, crc = line.rpartition(b"\t")
    if not tab or crc != f"{zlib.crc32(body):08x}".encode():
        return None
    try:
        entry = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return entry if isinstance(entry, dict) else None


def _torn(path: str, data: bytes, good: int, restored: Restored, fate: str) -> Restored:
    """``restored`` with a warning naming the torn tail's line (from byte ``good`` on)."""
    line = data.count(b"\n", 0, good) + 1
    return replace(restored, warnings=(
        f"{path}:{line}: an unfinished last line (a crash mid-write) {fate}",
    ))


def _create(path: str) -> int:
    """A new, private, locked journal file (and its directory entry made durable)."""
    fd = _new_private(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        folder = os.open(os.path.dirname(path) or ".", os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_locked(path: str) -> int:
    """``path`` opened and locked against every other orderup for as long as it is open."""
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError as exc:
        raise JournalError(f"cannot read the journal {path}: {exc.strerror}") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as exc:
        os.close(fd)
        raise JournalError(
            f"{path} is in use by another orderup: a journal is written by one game at a time"
        ) from exc
    return fd


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


def _new_private(path: str) -> int:
    """A file made for writing that did not exist, readable by its owner only."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)


def _write_new(path: str, data: bytes) -> None:
    """A new private file holding ``data``, fsynced."""
    with open(_new_private(path), "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


@dataclass(frozen=True)
class Restored:
    """A journal read back: how the game was made, its actions, how many utterances it heard
    (``heard``: their records, in order), the recogniser the table heard them with (None for
    a transcript, or a journal older than the record) and what was repaired on the way."""

    setup: Setup
    actions: tuple[Action, ...]
    heard: tuple[dict[str, Any], ...]
    backend: str | None
    warnings: tuple[str, ...]


def read_journal(path: str) -> Restored:
    """Read a journal back, changing nothing; a torn tail is left out with a warning."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise JournalError(f"cannot read the journal {path}: {exc.strerror}") from exc
    restored, good = _parse(path, data)
    return _torn(path, data, good, restored, "is left out") if good < len(data) else restored


def _parse(path: str, data: bytes) -> tuple[Restored, int]:
    """What a journal's bytes hold, and where its torn tail starts (``len(data)``: none)."""
    pieces = data.split(b"\n")
    tail = pieces.pop()
    if not tail and pieces and _unframe(pieces[-1]) is None:
        tail = pieces.pop() + b"\n"
    entries: list[dict[str, Any]] = []
    for number, piece in enumerate(pieces, start=1):
        entry = _unframe(piece)
        if entry is None:
            raise JournalError(
                f"{path}:{number}: the line does not match its checksum, so it was changed after "
                "it was written (or written by an orderup without checksums); the journal is "
                "left as it is and not replayed"
            )
        entries.append(entry)
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
        backend = head.get("backend")
        if backend is not None and not isinstance(backend, str):
            raise TypeError(f"the recogniser is {backend!r}, not a name")
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
    return Restored(setup, tuple(actions), tuple(heard), backend, ()), len(data) - len(tail)


def restore(path: str) -> tuple[GameBinding, GameState[Any], Restored]:
    """The game of a journal, brought back to exactly where it was."""
    restored = read_journal(path)
    return (*replay_journal(path, restored), restored)


def replay_journal(path: str, restored: Restored) -> tuple[GameBinding, GameState[Any]]:
    """The game ``restored`` from the journal at ``path`` holds, replayed."""
    try:
        binding, state = restored.setup.new_state()
        for action in restored.actions:
            state.apply(action)
    except (ConfigError, ValueError) as exc:
        raise JournalError(f"{path}: cannot replay the journal: {exc}") from exc
    return binding, state
