"""The onset detector's time base: sample counts at the pipeline's rate, and append-only
multichannel buffers addressed by absolute sample index (the stream's "now" grows, old audio
is forgotten once no fit, re-scan or segment can reach back to it)."""

from __future__ import annotations

import numpy as np

from voice.audio.frames import PIPELINE_RATE_HZ

PER_MS = PIPELINE_RATE_HZ / 1000
"""Samples per millisecond at the pipeline's rate."""


def ms_samples(ms: float) -> int:
    """`ms` milliseconds as a whole number of samples at the pipeline's rate."""
    return round(ms * PER_MS)


class History:
    """An append-only (n, channels) buffer addressed by absolute sample index."""

    def __init__(self, channels: int) -> None:
        self._data = np.zeros((1 << 14, channels), np.float32)
        self.start = 0  # absolute index of _data[self._lo]
        self._lo = 0
        self._hi = 0

    @property
    def end(self) -> int:
        """Absolute index one past the newest sample."""
        return self.start + self._hi - self._lo

    def append(self, block: np.ndarray) -> None:
        n = block.shape[0]
        if self._hi + n > self._data.shape[0]:
            live = self._data[self._lo : self._hi]
            size = max(self._data.shape[0], 2 * (live.shape[0] + n))
            data = np.zeros((size, self._data.shape[1]), np.float32)
            data[: live.shape[0]] = live
            self._data, self._lo, self._hi = data, 0, live.shape[0]
        self._data[self._hi : self._hi + n] = block
        self._hi += n

    def get(self, start: int, stop: int) -> np.ndarray:
        """Samples [start, stop) as float64; indices before the retained history read as 0."""
        if start >= self.start:
            lo = self._lo + start - self.start
            return self._data[lo : lo + stop - start].astype(np.float64)
        out = np.zeros((stop - start, self._data.shape[1]))
        keep = max(0, stop - self.start)
        if keep:
            out[-keep:] = self._data[self._lo : self._lo + keep]
        return out

    def trim_before(self, index: int) -> None:
        """Forget samples before absolute `index` (kept if that is in the future)."""
        drop = min(max(0, index - self.start), self._hi - self._lo)
        self._lo += drop
        self.start += drop
