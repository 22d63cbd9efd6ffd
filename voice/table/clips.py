"""The sound of every call, kept beside the journal so a disputed verdict can be heard again.

Each utterance the table hears is saved as one FLAC file (16-bit, every mic one channel)
from :data:`LEAD_S` before its onset — so it holds the onsets of the calls it raced — to
:data:`TAIL_S` after its end, in a folder beside the journal (``JOURNAL.clips/``), and the
journal's line for it names the file. The folder is bounded: once its files pass the limit,
the oldest are deleted, so an evening's game stays a few tens of MB. A resumed game goes on
in the same folder.
"""

from __future__ import annotations

import os
import sys
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from voice.audio.frames import PIPELINE_RATE_HZ
from voice.table.options import DEFAULT_CLIPS_MB

LEAD_S = 0.5
"""A clip starts this long before its call's onset: a rival's onset up to the dispute window
(150 ms) earlier, with the room before it."""
TAIL_S = 0.2
"""A clip goes on this long after its call's end."""


class ClipError(ValueError):
    """A clip that cannot be read back (missing, dropped for space, or damaged)."""


def clip_folder(journal: str) -> Path:
    """Where the clips of the journal at ``journal`` live."""
    return Path(f"{journal}.clips")


@dataclass(frozen=True)
class Clip:
    """Audio of every mic around one call: ``audio`` is (samples, mics) at ``rate_hz``;
    ``start_s`` is the stream time of its first sample."""

    audio: np.ndarray
    start_s: float
    rate_hz: int = PIPELINE_RATE_HZ

    def between(self, start_s: float, end_s: float, mic: int) -> np.ndarray:
        """One mic's samples between two stream times (clipped to the clip)."""
        lo = max(0, round((start_s - self.start_s) * self.rate_hz))
        hi = max(lo, round((end_s - self.start_s) * self.rate_hz))
        return self.audio[lo:hi, mic]


class ClipStore:
    """Writes clips into ``folder`` (made when the first is saved, private to the user) and
    keeps the folder under ``limit_mb``, deleting the oldest files first."""

    def __init__(self, folder: Path, limit_mb: float = DEFAULT_CLIPS_MB) -> None:
        if not limit_mb > 0:
            raise ValueError(f"the clip limit must be above 0 MB, not {limit_mb}")
        self.folder = folder
        self.limit_bytes = limit_mb * 1e6
        existing = sorted(folder.glob("*.flac")) if folder.is_dir() else []
        self._files = deque((p.name, p.stat().st_size) for p in existing)  # oldest first
        self.size_bytes = sum(size for _, size in self._files)
        self._next = 1 + max((int(p.stem) for p in existing if p.stem.isdigit()), default=0)
        self.failing = False

    def save(self, clip: Clip) -> dict[str, Any] | None:
        """Write one clip; returns the journal's reference to it, or None when it cannot be
        written (a full disk, say: said once on stderr, and the game goes on without it)."""
        import soundfile as sf

        name = f"{self._next:06d}.flac"
        path = self.folder / name
        try:
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            sf.write(str(path), np.clip(clip.audio, -1.0, 1.0), clip.rate_hz, subtype="PCM_16",
                     format="FLAC")
            os.chmod(path, 0o600)
            size = path.stat().st_size
        except (OSError, sf.LibsndfileError) as exc:
            if not self.failing:
                print(f"orderup: warning: the calls' sound is not kept in {self.folder} "
                      f"({exc}); the game goes on", file=sys.stderr)
            self.failing = True
            return None
        self.failing = False
        self._next += 1
        self._files.append((name, size))
        self.size_bytes += size
        while self.size_bytes > self.limit_bytes and len(self._files) > 1:
            oldest, dropped = self._files.popleft()
            self.size_bytes -= dropped
            (self.folder / oldest).unlink(missing_ok=True)
        return {"file": name, "start_s": round(clip.start_s, 4)}


def load_clip(folder: Path, reference: dict[str, Any]) -> Clip:
    """The clip a journal line refers to."""
    import soundfile as sf

    path = folder / str(reference["file"])
    try:
        audio, rate = sf.read(str(path), dtype="float32", always_2d=True)
    except (OSError, RuntimeError, sf.LibsndfileError) as exc:
        raise ClipError(f"the clip {path} cannot be read (dropped to keep the folder under "
                        f"its limit, or damaged): {exc}") from None
    return Clip(audio, float(reference["start_s"]), int(rate))
