"""A copy follows its source (DESIGN principle 4), judged over a whole utterance.

The copy test and the bleed fit (:mod:`voice.hearing.bleed`) judge an onset on its first
40 ms, and the own test (:mod:`voice.hearing.coupling`) each hop against the crosstalk held
from the talking mics at their peaks. Well into a reverberant call, its copy on another mic
can beat that held crosstalk by the margin often enough to be reported. Over the whole
utterance, a copy gives itself away: its power rises and falls with a louder mic's, a few
ms later and smeared by the room, in every band; a player's own call, even the same word
called at once, has its own syllables and its own voice's spectrum.

So when an utterance ends, its mic's power in `follow_bands_hz` bands (5 ms hops) is fitted,
band by band, as a sum of the power of the `follow_sources` mics louder than it there, each
delayed by 0 to `max_bleed_delay_ms` and, for the room's reverberation, smoothed by an
exponential decay (whichever of `follow_tails_ms` fits best), every gain at most the
strongest coupling a pair of seats may have (`crosstalk_range_db`'s top), by bounded least
squares (:func:`scipy.optimize.lsq_linear`). What it explains of the mic's power over its
floor (a low quantile of its power from the pre-roll on) is summed over the bands; an
utterance `follow_explained` or more of which is explained is another player's voice on
that mic, not its player's call.
"""

from __future__ import annotations

from itertools import pairwise
from typing import TYPE_CHECKING

import numpy as np
from scipy.optimize import lsq_linear
from scipy.signal import butter, lfilter, sosfilt

from voice.audio.frames import PIPELINE_RATE_HZ

if TYPE_CHECKING:
    from voice.hearing.onsets import OnsetConfig


class Follows:
    """How much of an utterance the louder mics' sound explains (see the module docstring)."""

    def __init__(self, cfg: OnsetConfig) -> None:
        edges = cfg.follow_bands_hz
        self._bands = [
            butter(4, (low, high), btype="band", fs=PIPELINE_RATE_HZ, output="sos")
            for low, high in pairwise(edges)
        ]
        self._hop = cfg.hop_samples
        self._delays = range(round(cfg.max_bleed_delay_ms / cfg.hop_ms) + 1)
        self._tails = [np.exp(-cfg.hop_ms / ms) for ms in cfg.follow_tails_ms]
        self._sources = cfg.follow_sources
        self._max_gain = 10 ** (cfg.crosstalk_range_db[1] / 10)
        self._floor_quantile = cfg.follow_floor_quantile

    def explained(self, mics: np.ndarray, mic: int, onset: int) -> float:
        """The share of `mic`'s power over its floor from sample `onset` of `mics` (n, channels:
        the utterance with its pre-roll before `onset`) that the louder mics explain."""
        explained = total = 0.0
        for sos in self._bands:
            power = self._power(sosfilt(sos, mics, axis=0))
            left, over = self._fit(power, mic, onset // self._hop)
            explained += over - left
            total += over
        return explained / total if total > 0 else 0.0

    def _power(self, band: np.ndarray) -> np.ndarray:
        """Mean power per hop (hops, channels)."""
        n = len(band) // self._hop
        return np.mean(band[: n * self._hop].reshape(n, self._hop, -1) ** 2, axis=1)

    def _fit(self, power: np.ndarray, mic: int, start: int) -> tuple[float, float]:
        """One band: (power over the floor the fit leaves, power over the floor) from hop
        `start` on."""
        own = power[:, mic]
        floor = np.quantile(own, self._floor_quantile)
        target = own[start:] - floor
        over = float(np.sum(np.maximum(target, 0.0)))
        level = power[start:].mean(axis=0)
        louder = [m for m in np.argsort(-level) if level[m] > level[mic]][: self._sources]
        if not louder or over == 0.0:
            return over, over
        best, left = np.inf, over
        for tail in self._tails:
            columns = []
            for m in louder:
                columns += [np.roll(power[:, m], d)[start:] for d in self._delays]
                columns.append(lfilter([1 - tail], [1, -tail], power[:, m])[start:])
            paths = np.stack(columns, axis=1)
            miss = target - paths @ lsq_linear(paths, target, bounds=(0.0, self._max_gain)).x
            if miss @ miss < best:  # the tail that fits best, by least squares
                best, left = miss @ miss, float(np.sum(np.maximum(miss, 0.0)))
        return left, over
