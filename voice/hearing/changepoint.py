"""Where speech begins: a CUSUM change-point test per mic, to the sample.

The test is for a rise of the whitened power by `cusum_ratio_db` over the noise it is judged
against (:mod:`voice.hearing.background`, plus what bleed removal may miss): evidence, a
log-likelihood ratio in nats, accumulates per sample, and once it exceeds `alarm_llr` the
onset is the sample where that evidence began to build — the maximum-likelihood change point.
Plosives ("got it") and fricatives ("stop") alike. An onset then stands only if it holds
`min_active_ms` of rising evidence within its first `confirm_ms` (clicks and thumps do not).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from voice.hearing.onsets import OnsetConfig


def cusum(
    llr: np.ndarray, c0: np.ndarray, m0: np.ndarray, alarm: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Page's CUSUM over columns of per-sample log-likelihood ratios, vectorised.

    S_k = C_k - min(m0, min_j<=k C_j), C the running sum (Lindley's closed form of
    S_k = max(0, S_k-1 + llr_k)). Returns the final C and running min; `began` (per column,
    the relative index where the current excursion began, -1 if before this block);
    `alarm_at` (first index with S > alarm, -1 if none); and `alarm_began` (where that
    excursion began, -1 if before this block).
    """
    n, cols = llr.shape
    if n == 0:
        none = np.full(cols, -1)
        return c0, m0, none, none, none
    c = c0 + np.cumsum(llr, axis=0)
    m = np.minimum(m0, np.minimum.accumulate(c, axis=0))
    idx = np.arange(n)[:, None]
    began = np.maximum.accumulate(np.where(c <= m, idx + 1, -1), axis=0)
    hit = (c - m) > alarm
    alarm_at = np.where(hit.any(axis=0), hit.argmax(axis=0), -1)
    alarm_began = began[np.maximum(alarm_at, 0), np.arange(cols)]
    return c[-1], m[-1], began[-1], alarm_at, alarm_began


class ChangePoints:
    """The running CUSUM of every mic: decides where an onset is, and whether it holds.

    :attr:`excursion` is, per mic, where the evidence now accumulating began: no onset before
    it can still be found there (the detector's settled watermark)."""

    def __init__(self, channels: int, cfg: OnsetConfig) -> None:
        gamma = 10 ** (cfg.cusum_ratio_db / 10)
        self._scale = 0.5 * (1 - 1 / gamma)
        self._bias = 0.5 * math.log(gamma)
        self._alarm = cfg.alarm_llr
        self._hop = cfg.hop_samples
        self._min_active_hops = max(1, math.ceil(cfg.min_active_ms / cfg.hop_ms))
        self._c = np.zeros(channels)
        self._m = np.zeros(channels)
        self.excursion = np.zeros(channels, np.int64)

    def llr(self, white: np.ndarray, noise: np.ndarray) -> np.ndarray:
        """Per-sample log-likelihood ratio of "power rose by gamma" against the noise power."""
        return white * white / noise * self._scale - self._bias

    def scan(self, llr: np.ndarray, s: int, idle: np.ndarray) -> list[tuple[int, int]]:
        """Run the test of the `idle` mics over one hop from sample `s` (`llr` per sample and
        mic); return the (mic, onset) of each alarm, in mic order."""
        c, m, began, alarm_at, alarm_began = cusum(llr, self._c, self._m, self._alarm)
        prev = self.excursion
        self._c = np.where(idle, c, self._c)
        self._m = np.where(idle, m, self._m)
        self.excursion = np.where(idle & (began >= 0), s + began, prev)
        return [
            (int(ch), s + int(alarm_began[ch]) if alarm_began[ch] >= 0 else int(prev[ch]))
            for ch in np.flatnonzero(idle & (alarm_at >= 0))
        ]

    def reset(self, ch: int, at: int) -> None:
        """Start mic `ch`'s test afresh at sample `at`."""
        self._c[ch] = 0.0
        self._m[ch] = 0.0
        self.excursion[ch] = at

    def replay(self, ch: int, start: int, llr: np.ndarray) -> int | None:
        """Run mic `ch`'s test, just reset at `start`, over `llr` (one column, from `start`):
        the onset of its first alarm, else None (the test carries on from there)."""
        c, m, began, alarm_at, alarm_began = cusum(
            llr, self._c[ch : ch + 1], self._m[ch : ch + 1], self._alarm
        )
        if alarm_at[0] >= 0:
            return start + max(0, int(alarm_began[0]))
        self._c[ch], self._m[ch] = c[0], m[0]
        self.excursion[ch] = start + max(0, int(began[0]))
        return None

    def sustained(self, llr: np.ndarray) -> bool:
        """Whether a new onset's evidence (`llr`, one column over whole hops from the onset)
        rose in at least `min_active_ms` of its hops."""
        evidence = llr.reshape(-1, self._hop).sum(axis=1)
        return int(np.sum(evidence > 0)) >= self._min_active_hops
