"""Transcripts of timed utterances: ``12.340 Ann: got it``, with ``@`` directives.

Blank lines and ``#`` comments are ignored. Directives (before the first
utterance): ``@players Ann, Bob``, ``@seed 7``, ``@stack DECK: Card, Card``,
``@end 81.5`` (when the table stopped listening; no line may come after it).
Parsing stops at the first bad line; the lines before it stay usable, so a
referee can apply them and then report the error.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from engine.players import check_names
from voice.table.options import SEED

_LINE = re.compile(r"^(?P<onset>\d+(?:\.\d*)?)\s+(?P<speaker>[^:]+?)\s*:\s*(?P<text>.*)$")


class TranscriptError(ValueError):
    """A bad transcript line, named by file and line number."""

    def __init__(self, path: str, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}")
        self.path = path
        self.line = line
        self.message = message


@dataclass(frozen=True)
class Utterance:
    """What ``speaker`` said, starting ``onset_s`` seconds into the game."""

    onset_s: float
    speaker: str
    text: str
    line: int = 0


@dataclass(frozen=True)
class Transcript:
    """The directives and the utterances read before the first error (if any)."""

    path: str
    players: tuple[str, ...] | None = None
    seed: int | None = None
    stacks: dict[str, tuple[str, ...]] = field(default_factory=dict)
    utterances: tuple[Utterance, ...] = ()
    error: TranscriptError | None = None
    end_s: float | None = None

    def ends_at(self, tie_window_s: float) -> float | None:
        """When the table stopped listening: the ``@end``, else once the tie window has closed
        on the last line, so that calls said with it have all arrived and it is decided
        (None: an empty transcript with no ``@end``)."""
        if self.end_s is not None or not self.utterances:
            return self.end_s
        return self.utterances[-1].onset_s + tie_window_s

    def cast(self, players: Sequence[str]) -> dict[str, str]:
        """The player each speaker names (case-insensitive). Raises the transcript's first
        error: a bad line, or a speaker who is not one of ``players``, whichever comes first."""
        cast: dict[str, str] = {}
        for u in self.utterances:
            player = speaker_name(u.speaker, players)
            if player is None:
                raise TranscriptError(self.path, u.line,
                                      f"unknown speaker {u.speaker!r} (players: {', '.join(players)})")
            cast[u.speaker] = player
        if self.error is not None:
            raise self.error
        return cast


def split_list(text: str) -> tuple[str, ...]:
    """'Ann, Bob ,Cat' → ('Ann', 'Bob', 'Cat'); an empty item ('Ann,,Cat') is a ``ValueError``."""
    items = tuple(item.strip() for item in text.split(","))
    if not all(items):
        raise ValueError(f"an empty item in {text.strip()!r}")
    return items


def split_names(text: str) -> tuple[str, ...]:
    """'Ann, Bob' → ('Ann', 'Bob'): non-empty names, no two the same (else ``ValueError``)."""
    return check_names(split_list(text))


def parse_stack(text: str) -> tuple[str, tuple[str, ...]]:
    """'guests: Rocky, Frosty' → ('guests', ('Rocky', 'Frosty'))."""
    deck, sep, cards = text.partition(":")
    if not sep or not deck.strip():
        raise ValueError(f"expected 'DECK: Card, Card, ...', got {text.strip()!r}")
    return deck.strip().casefold(), split_list(cards)


def _seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds < math.inf:
        raise ValueError(f"expected seconds (a number, at least 0), got {text.strip()!r}")
    return seconds


def parse_transcript(lines: Iterable[str], path: str = "<transcript>") -> Transcript:
    players: tuple[str, ...] | None = None
    seed: int | None = None
    stacks: dict[str, tuple[str, ...]] = {}
    utterances: list[Utterance] = []
    last_onset = 0.0
    end_s: float | None = None

    def done(error: TranscriptError | None = None) -> Transcript:
        return Transcript(path, players, seed, stacks, tuple(utterances), error, end_s)

    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("@"):
            if utterances:
                return done(TranscriptError(path, number, "directives must come before the first utterance"))
            name, _, rest = line[1:].partition(" ")
            try:
                if name == "players":
                    players = split_list(rest)
                elif name == "seed":
                    try:
                        seed = int(SEED.parse(rest.strip()))
                    except ValueError as exc:
                        raise ValueError(f"@seed: {exc}") from None
                elif name == "stack":
                    deck, cards = parse_stack(rest)
                    stacks[deck] = cards
                elif name == "end":
                    end_s = _seconds(rest)
                else:
                    raise ValueError(f"unknown directive @{name} (known: @players, @seed, @stack, @end)")
            except ValueError as exc:
                return done(TranscriptError(path, number, str(exc)))
            continue
        match = _LINE.match(line)
        if match is None:
            return done(TranscriptError(path, number, f"expected 'SECONDS SPEAKER: TEXT', got {line!r}"))
        onset = float(match["onset"])
        if onset < last_onset:
            return done(
                TranscriptError(path, number, f"onset {onset:.3f} s is before the previous line's {last_onset:.3f} s")
            )
        if end_s is not None and onset > end_s:
            return done(TranscriptError(path, number, f"onset {onset:.3f} s is after the @end at {end_s:.3f} s"))
        last_onset = onset
        utterances.append(Utterance(onset, match["speaker"].strip(), match["text"].strip(), number))
    return done()


def read_stack_file(path: str) -> dict[str, tuple[str, ...]]:
    """The decks a file of ``DECK: Card, Card, ...`` lines stacks (top card first)."""
    stacks: dict[str, tuple[str, ...]] = {}
    try:
        with open(path, encoding="utf-8-sig") as fh:
            for number, line in enumerate(fh, start=1):
                line = line.strip()
                if line and not line.startswith("#"):
                    try:
                        deck, cards = parse_stack(line.removeprefix("@stack").strip())
                    except ValueError as exc:
                        raise TranscriptError(path, number, str(exc)) from exc
                    stacks[deck] = cards
    except (OSError, UnicodeDecodeError) as exc:
        raise TranscriptError(path, 0, f"cannot read: {exc}") from exc
    return stacks


def read_transcript(path: str) -> Transcript:
    """Read a UTF-8 transcript file; unreadable files raise ``TranscriptError`` on line 0."""
    try:
        with open(path, encoding="utf-8-sig") as fh:  # a byte-order mark is not the first line
            return parse_transcript(fh.readlines(), path)
    except (OSError, UnicodeDecodeError) as exc:
        raise TranscriptError(path, 0, f"cannot read: {exc}") from exc


def speaker_name(speaker: str, players: Sequence[str]) -> str | None:
    """The player a transcript speaker names (case-insensitive), or None."""
    folded = speaker.casefold()
    return next((p for p in players if p.casefold() == folded), None)
