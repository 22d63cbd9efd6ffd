"""Real people's recordings (``../shared/real_speech``, its SOURCES.md; another folder with
``ORDERUP_REAL_SPEECH``): the manifest's clips, each speaker in one part — *tune* (settings
are chosen on it) or *heldout* (never tuned on) — and each part's sentences, which speak the
babble of the ``real-babble`` scene set and of ``scripts/measure_recognition.py``.

The recordings are not part of the project: without them :func:`have_recordings` is False
and whatever needs them says so.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .speech import RATE_HZ

REAL_SPEECH = Path(os.environ.get(
    "ORDERUP_REAL_SPEECH", Path(__file__).resolve().parents[3] / "shared" / "real_speech"))
REAL_PARTS = ("tune", "heldout")


@dataclass(frozen=True)
class Clip:
    path: str
    kind: str
    text: str
    speaker: str
    source: str
    part: str


def part_of(split: str | None) -> str:
    """The part of the recorded speakers a split hears: tune for the tune split (and a
    scripted session's None), held out for every other."""
    return "tune" if split in (None, "tune") else "heldout"


def have_recordings(root: Path = REAL_SPEECH) -> bool:
    return (root / "manifest.tsv").is_file()


def real_clips(root: Path = REAL_SPEECH) -> list[Clip]:
    """The manifest's clips, each with its speaker's part: within each source (the sentences
    as one source), speakers ranked by the SHA-256 of their id; every third held out."""
    with (root / "manifest.tsv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))

    def stratum(row: dict[str, str]) -> str:
        return "sentence" if row["kind"] == "sentence" else row["source"].split(" (")[0]

    speakers: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        speakers[stratum(row)].add(row["speaker"])
    held: set[str] = set()
    for group in speakers.values():
        ranked = sorted(group, key=lambda s: hashlib.sha256(s.encode()).hexdigest())
        held.update(s for i, s in enumerate(ranked) if i % 3 == 2)
    return [Clip(r["path"], r["kind"], r["text"], r["speaker"], r["source"],
                 "heldout" if r["speaker"] in held else "tune") for r in rows]


def read_clip(path: Path) -> np.ndarray:
    """A recording as mono float32 at the pipeline's rate."""
    import soundfile as sf

    x, rate = sf.read(str(path), dtype="float32", always_2d=True)
    if rate != RATE_HZ:
        raise ValueError(f"{path}: {rate} Hz, expected {RATE_HZ}")
    return x.mean(axis=1)


@functools.cache
def sentences(part: str, root: Path = REAL_SPEECH) -> dict[str, tuple[np.ndarray, ...]]:
    """The recorded sentences of one part's speakers, by speaker in the manifest's order:
    trimmed to their sound (2 % of the peak) and at unit power over their voiced samples
    (above 5 % of the peak)."""
    said: dict[str, list[np.ndarray]] = defaultdict(list)
    for clip in real_clips(root):
        if clip.kind == "sentence" and clip.part == part:
            x = read_clip(root / clip.path)
            loud = np.flatnonzero(np.abs(x) > 0.02 * np.abs(x).max())
            x = x[loud[0] : loud[-1] + 1]
            said[clip.speaker].append(
                x / np.sqrt(np.mean(x[np.abs(x) > 0.05 * np.abs(x).max()] ** 2)))
    return {speaker: tuple(xs) for speaker, xs in said.items()}
