"""The picture of a race: one lane per mic, every onset marked, the tie window drawn.

:func:`timeline` gathers what the picture shows — from the race's own records (the
detector's onsets, the copies it rejected) and its clip — as plain data, so what is drawn
can be checked without looking at pixels; :func:`draw` renders it as a PNG with matplotlib.
Times are in milliseconds from the first onset.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from voice.table.dispute import Race, clip_of

BEFORE_S = 0.25
"""The picture starts this long before the first onset."""
AFTER_S = 0.1
"""… and ends this long after the last call's end."""
ENVELOPE_MS = 2.5
"""The lanes' envelope: the peak of each stretch this long."""


@dataclass(frozen=True, eq=False)
class Lane:
    """One mic: its player and its envelope (peak per :data:`ENVELOPE_MS`, ms from the first
    onset)."""

    mic: int
    player: str
    times_ms: np.ndarray
    envelope: np.ndarray


@dataclass(frozen=True)
class Onset:
    """A call's onset on its own mic, as the detector found it."""

    mic: int
    player: str
    at_ms: float
    text: str


@dataclass(frozen=True, eq=False)
class Timeline:
    title: str
    lanes: tuple[Lane, ...]
    onsets: tuple[Onset, ...]
    copies: tuple[tuple[int, float, float], ...]  # (mic, start_ms, end_ms)
    tie_ms: tuple[float, float]


def timeline(race: Race, folder: Path, players: Sequence[str], tie_window_ms: float,
             reason: str) -> Timeline:
    """What the picture of ``race`` shows (``players`` by mic; its clips in ``folder``)."""
    zero = race.calls[0].at_s
    last = max(race.calls, key=lambda c: c.end_s)
    clip = clip_of(folder, last)  # it starts LEAD_S before its onset: every onset is in it
    start = max(clip.start_s, zero - BEFORE_S)
    end = last.end_s + AFTER_S
    hop = max(1, round(ENVELOPE_MS / 1000 * clip.rate_hz))
    lanes = []
    for mic, player in enumerate(players):
        audio = clip.between(start, end, mic)
        frames = audio[: audio.size // hop * hop].reshape(-1, hop)
        times = (start - zero) * 1000 + (np.arange(len(frames)) + 0.5) * ENVELOPE_MS
        lanes.append(Lane(mic, player, times, np.abs(frames).max(axis=1)))
    copies = tuple(sorted({(m, (a - zero) * 1000, (b - zero) * 1000)
                           for call in race.calls for m, a, b in call.copies
                           if b > start and a < end}))
    onsets = tuple(Onset(c.mic, c.player, (c.at_s - zero) * 1000, c.text) for c in race.calls)
    texts = " / ".join(dict.fromkeys(c.text for c in race.calls))
    return Timeline(f"\u201c{texts}\u201d \u2014 {reason}", tuple(lanes), onsets, copies,
                    (0.0, tie_window_ms))


def draw(picture: Timeline, path: Path) -> None:
    """Write ``picture`` as a PNG at ``path`` (readable on a laptop screen)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lanes = picture.lanes
    fig, axes = plt.subplots(len(lanes), 1, sharex=True, figsize=(11, 1.3 + 1.25 * len(lanes)),
                             squeeze=False)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for lane, ax in zip(lanes, axes[:, 0]):
        peak = max(float(lane.envelope.max(initial=0.0)), 1e-6)
        colour = colours[lane.mic % len(colours)]
        ax.fill_between(lane.times_ms, -lane.envelope / peak, lane.envelope / peak,
                        color=colour, alpha=0.55, linewidth=0)
        ax.axvspan(*picture.tie_ms, color="gold", alpha=0.25, linewidth=0)
        for mic, a, b in picture.copies:
            if mic == lane.mic:
                ax.axvspan(a, b, facecolor="none", edgecolor="grey", hatch="///", linewidth=0)
                ax.text(a, -0.95, " copy of another mic's call", fontsize=8, color="dimgrey")
        for onset in picture.onsets:
            if onset.mic == lane.mic:
                ax.axvline(onset.at_ms, color="black", linewidth=1.6)
                ax.text(onset.at_ms, 0.75, f" {onset.player} +{onset.at_ms:.0f} ms",
                        fontsize=11, fontweight="bold")
        ax.set_ylim(-1.05, 1.05)
        ax.set_yticks([])
        ax.set_ylabel(f"{lane.player}\n(mic {lane.mic + 1})", rotation=0, ha="right",
                      va="center", fontsize=10)
    axes[-1, 0].set_xlabel("milliseconds from the first onset (shaded gold: the tie window; "
                           "hatched: copies of a call on other mics)")
    fig.suptitle(picture.title, fontsize=12)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
