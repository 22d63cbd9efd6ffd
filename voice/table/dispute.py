"""Disputed calls: "I said it first!" answered from the sound, in onset order.

A *race* is a run of understood calls by different players whose onsets follow each other
by less than :data:`DISPUTE_GAP_MS` (say two "got it"s 20 ms apart). For a race the table
can give the reason of its verdict in one line ("Maya, 18 milliseconds before Leo"), play
the calls again one after the other, earliest onset first, each from its own player's mic
(:func:`playlist`), and draw the race (:func:`timeline`, :mod:`voice.table.timeline`): a lane
per mic with its envelope, every onset the detector found, the copies of a call on the other
mics, the tie window around the first onset.

Everything here reads the journal's records of the calls (their detector onsets, mics and
clips, :mod:`voice.table.clips`), so it works the same at the table (``r``), after
``orderup resume``, from ``orderup dispute JOURNAL`` and for every close call of a recording
(``orderup replay --disputes DIR``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from voice.table.clips import Clip, load_clip

DISPUTE_GAP_MS = 150.0
"""Calls whose onsets are closer than this are a race a table may dispute."""
PLAY_LEAD_S = 0.05
"""A call is played back from this long before its onset."""


class DisputeError(ValueError):
    """No race to dispute where one was asked for."""


@dataclass(frozen=True)
class Call:
    """One understood call as the journal keeps it: who, on which mic, what; its onset in game
    time (``onset_s``) and, on the audio's clock, its onset (``at_s``) and end; its clip, and
    the copies of sounds heard on other mics around it (``copies``: (mic, onset, end), audio
    clock) that the detector rejected as not their player's."""

    player: str
    mic: int
    text: str
    onset_s: float
    at_s: float
    end_s: float
    clip: Mapping[str, Any]
    copies: tuple[tuple[int, float, float], ...] = ()

    @classmethod
    def from_heard(cls, heard: Mapping[str, Any]) -> Call | None:
        """The call a journal's ``heard`` record describes; None for one with no sound kept
        (a transcript's line, or a journal written before clips were kept)."""
        if "clip" not in heard:
            return None
        return cls(str(heard["player"]), int(heard["mic"]), str(heard["text"]),
                   float(heard["onset_s"]), float(heard["at_s"]), float(heard["end_s"]),
                   heard["clip"], tuple((int(m), float(a), float(b)) for m, a, b in heard["copies"]))


@dataclass(frozen=True)
class Race:
    """Calls within :data:`DISPUTE_GAP_MS` of each other, in onset order; ``number`` counts
    the races of a game from 1."""

    number: int
    calls: tuple[Call, ...]

    def gaps_ms(self) -> list[float]:
        """Each later call's onset after the first's, in ms."""
        first = self.calls[0].at_s
        return [(c.at_s - first) * 1000 for c in self.calls[1:]]

    def reason(self, tie_window_ms: float) -> str:
        """The verdict's reason in one line, as the table says it."""
        first, gaps = self.calls[0], self.gaps_ms()
        tied = [c.player for c, gap in zip(self.calls[1:], gaps) if gap < tie_window_ms]
        if tied:
            return (f"{' and '.join([first.player, *tied])}, within {round(max(gaps[:len(tied)]))} "
                    f"milliseconds: a tie (the tie window is {tie_window_ms:g})")
        after = [f"{round(gap)} milliseconds before {c.player}" if i == 0 else
                 f"{round(gap)} before {c.player}" for i, (c, gap) in enumerate(zip(self.calls[1:], gaps))]
        return f"{first.player}, {', '.join(after)}"


def races(heard: Iterable[Mapping[str, Any]], gap_ms: float = DISPUTE_GAP_MS) -> list[Race]:
    """The races among a game's heard calls, numbered in order."""
    calls = sorted((c for c in map(Call.from_heard, heard) if c is not None),
                   key=lambda c: c.at_s)
    groups: list[list[Call]] = []
    for call in calls:
        group = groups[-1] if groups else None
        if (group is not None and (call.at_s - group[-1].at_s) * 1000 < gap_ms
                and call.player not in {c.player for c in group}):
            group.append(call)
        else:
            groups.append([call])
    return [Race(i, tuple(g)) for i, g in
            enumerate((g for g in groups if len(g) > 1), start=1)]


def pick(found: Sequence[Race], *, number: int | None = None, at_s: float | None = None) -> Race:
    """The race asked for: by number, the one nearest a game time, or else the last."""
    if not found:
        raise DisputeError("no close calls to dispute: no two players called within "
                           f"{DISPUTE_GAP_MS:g} ms of each other")
    if number is not None:
        if not 1 <= number <= len(found):
            raise DisputeError(f"there is no verdict {number}: this game has close calls 1 to "
                               f"{len(found)}")
        return found[number - 1]
    if at_s is not None:
        return min(found, key=lambda r: abs(r.calls[0].onset_s - at_s))
    return found[-1]


def clip_of(folder: Path, call: Call) -> Clip:
    return load_clip(folder, dict(call.clip))


def playlist(race: Race, folder: Path) -> list[tuple[Call, np.ndarray]]:
    """The race's calls to play again, earliest onset first, each from its own mic."""
    return [(call, clip_of(folder, call).between(call.at_s - PLAY_LEAD_S, call.end_s, call.mic))
            for call in race.calls]
