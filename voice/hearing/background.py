"""What each mic hears when nobody talks: the floor speech is judged against.

* The signal is high-passed (:class:`Highpass`, `highpass_hz`) and *whitened* by a linear
  predictor fitted to the quiet background (:class:`Background`), so coloured noise (fans,
  rumble, pink noise) becomes white and any spectral change stands out: a fricative's hiss
  above a hum is as visible as a vowel above hiss.
* The prediction error power of that fit is the noise floor (learned on quiet hops only:
  quick to fall, slow to rise), raised to the `floor_quantile` of the background's hop powers
  over the last `floor_window_ms`: babble from the next table fluctuates, and its peaks are
  background too.
* After an echo canceller (:mod:`voice.hearing.echo`), the echo it may have left is added to
  the floor (:class:`ResidualEcho`): its whitened power, held at peaks and decaying at
  `echo_decay_db_per_s` like a room's tail, so the app's own voice is not an onset.

A mic carrying no signal at all (digital silence: a muted input, or a stream that has not
started delivering sound) is not a quiet room: nothing is learned from it, and its model
starts afresh from its first sound (:data:`SILENT_POWER`).

Which hops are background is the detector's call (idle, no bleed being removed, not much
above the floor); this module learns from those it is given. Known limit: background that is
loud against the calls (babble or clatter 5-10 dB under them) still triggers onsets and can
hide calls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from voice.audio.frames import PIPELINE_RATE_HZ
from voice.hearing.history import History

if TYPE_CHECKING:
    from voice.hearing.onsets import OnsetConfig


SILENT_POWER = 1e-10
"""Band power per sample below this (-100 dBFS) is no signal at all. A floor learned from it
would sit so far below any real room that nothing after it could ever be quiet enough to
correct it (the floor rises only from quiet hops)."""


class Highpass:
    """A streaming second-order Butterworth high-pass over (n, channels) blocks: the band the
    detector listens in (rumble below `highpass_hz` is no one's voice)."""

    def __init__(self, channels: int, highpass_hz: float) -> None:
        from scipy.signal import butter

        self._sos = np.asarray(
            butter(2, highpass_hz, "highpass", fs=PIPELINE_RATE_HZ, output="sos")
        )
        self._zi = np.zeros((self._sos.shape[0], 2, channels))

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """The next block, filtered, as float32."""
        from scipy.signal import sosfilt

        y, self._zi = sosfilt(self._sos, x, axis=0, zi=self._zi)
        return np.asarray(y).astype(np.float32)


class Background:
    """Per mic, the quiet room's whitening filter and the whitened noise power per sample
    (the floor) that speech must rise above; learned from the hops it is told are background."""

    def __init__(self, channels: int, cfg: OnsetConfig) -> None:
        self.order = p = cfg.whitening_order
        self.floor_alpha = min(1.0, cfg.hop_ms / cfg.floor_time_ms)
        """Share of a quiet hop in the background model once its time constant is reached."""
        self._loading = 10 ** (-cfg.whitening_range_db / 10)
        self._quantile = cfg.floor_quantile
        self._level_every = max(1, round(cfg.level_update_ms / cfg.hop_ms))
        self._acf = np.zeros((channels, p + 1))  # background autocorrelation, lags 0..p
        self.lpc = np.zeros((channels, p + 1))  # whitening filters, a[0] = 1
        self.lpc[:, 0] = 1.0
        self.floor = np.full(channels, np.nan)  # the fit's whitened noise power per sample
        # the whitened power of recent background hops (nan: the mic was busy then); the floor
        # speech is judged against is at least their `floor_quantile`, so the peaks of a
        # fluctuating background (babble at the next table) are not taken for speech
        self._recent = np.full((max(1, round(cfg.floor_window_ms / cfg.hop_ms)), channels), np.nan)
        self._recent_at = 0
        self._level = np.zeros(channels)
        self._learned = np.zeros(channels, np.int64)  # quiet hops learned from
        self.heard = np.zeros(channels, bool)  # mics that have carried any signal yet
        self._present = np.zeros(channels, bool)  # mics with a signal in this hop

    def whiten(self, x: np.ndarray, lpc: np.ndarray) -> np.ndarray:
        """Filter columns of x (order + n rows) by their predictors lpc (cols, order+1)."""
        win = np.lib.stride_tricks.sliding_window_view(x, self.order + 1, axis=0)
        return np.einsum("nck,ck->nc", win[..., ::-1], lpc)

    def noise_floor(self) -> np.ndarray:
        """Whitened background power per sample: the fitted floor, or the upper part of what
        the background has recently been, whichever is higher."""
        return np.maximum(self.floor, self._level)

    def begin(self, band: np.ndarray) -> np.ndarray:
        """Start the model of every mic not yet learned (the very first hop, the first after
        :meth:`forget`, or its first sound after nothing but digital silence) from `band`,
        that hop's band signal with the filter's history. Returns the mics whose first sound
        this hop is."""
        self._present = np.mean(band[self.order :] ** 2, axis=0) > SILENT_POWER
        sounding = self._present & ~self.heard
        for ch in np.flatnonzero(sounding):
            self.forget(int(ch))
        self.heard |= self._present
        first = np.isnan(self.floor)
        if first.any():
            self.learn(band, first, first)
        return sounding

    def listen(self, resid: np.ndarray, power: np.ndarray, usable: np.ndarray) -> np.ndarray:
        """Take in one hop: `resid` its band signal with the filter's history, `power` its
        whitened power per mic, `usable` the mics whose hop may be background. Returns the mics
        learned from: usable, carrying a signal and not much above the floor."""
        usable = usable & self._present
        self._track_level(np.where(usable, power, np.nan))
        quiet = usable & (power < 4 * self.noise_floor())
        if quiet.any():
            self.learn(resid, quiet, power < self.floor / 2)
        return quiet

    def learn(self, resid: np.ndarray, quiet: np.ndarray, fast: np.ndarray) -> None:
        """Fold quiet hops into the background autocorrelation; refit whitening and floor."""
        p, n = self.order, resid.shape[0] - self.order
        acf = np.stack(
            [np.einsum("nc,nc->c", resid[p:], resid[p - k : p - k + n]) / n for k in range(p + 1)],
            axis=1,
        )
        first = np.isnan(self.floor)
        self._learned += quiet | first
        # a plain running mean until the time constant is reached, then exponential forgetting
        slow = np.maximum(self.floor_alpha, 1.0 / self._learned)
        rate = np.where(fast & ~first, np.maximum(0.3, slow), slow)[:, None]
        use = quiet | first
        self._acf[use] += (rate * (acf - self._acf))[use]
        r = self._acf[use]
        r0 = r[:, :1] * (1 + self._loading) + 1e-12
        idx = np.abs(np.arange(p)[:, None] - np.arange(p)[None, :])
        toeplitz = np.where(idx == 0, r0[:, :, None], r[:, idx])
        a = np.linalg.solve(toeplitz, -r[:, 1:, None])[:, :, 0]
        self.lpc[use] = np.concatenate([np.ones((a.shape[0], 1)), a], axis=1)
        error = r0[:, 0] + np.einsum("ck,ck->c", a, r[:, 1:])
        self.floor[use] = np.maximum(error, self._loading * r0[:, 0])

    def forget(self, ch: int) -> None:
        """Learn mic `ch`'s background again from scratch (its noise changed)."""
        self.floor[ch] = np.nan
        self._recent[:, ch] = np.nan
        self._level[ch] = 0.0
        self._learned[ch] = 0

    def _track_level(self, power: np.ndarray) -> None:
        """Add one hop's background power per mic (nan where busy); refresh the level."""
        self._recent[self._recent_at % self._recent.shape[0]] = power
        self._recent_at += 1
        if self._recent_at % self._level_every == 0:
            seen = ~np.all(np.isnan(self._recent), axis=0)
            if seen.any():
                self._level[seen] = np.nanquantile(self._recent[:, seen], self._quantile, axis=0)


class ResidualEcho:
    """The app's echo an echo canceller may have left in each mic, as whitened power to
    expect per sample: what it misses is mostly reverberation, smeared over the next hundreds
    of ms, so its power is held at its peak and let decay like a room's tail."""

    def __init__(self, channels: int, cfg: OnsetConfig, background: Background) -> None:
        self._background = background
        self._highpass = Highpass(channels, cfg.highpass_hz)
        self._decay = 10 ** (-cfg.echo_decay_db_per_s * cfg.hop_ms / 1000 / 10)
        self._hold = np.zeros(channels)  # the peak-hold envelope, per hop
        self._band = History(channels)  # the band-passed residual echo signal
        self.power = History(channels)  # whitened residual echo power to expect, per sample

    def append(self, residual: np.ndarray | None, like: np.ndarray) -> None:
        """Take in the residual echo of the frame `like` (None: no canceller, no echo)."""
        if residual is None:
            self._band.append(np.zeros_like(like))
        else:
            self._band.append(self._highpass(residual))

    def track(self, s: int, e: int) -> None:
        """Extend :attr:`power` over hop [s, e)."""
        bg = self._background
        echo = self._band.get(s - bg.order, e)
        if echo.any():
            w = bg.whiten(echo, bg.lpc)
            self._hold = np.maximum(np.mean(w * w, axis=0), self._hold * self._decay)
        else:
            self._hold *= self._decay
        self.power.append(np.repeat(self._hold[None, :].astype(np.float32), e - s, axis=0))

    @property
    def level(self) -> np.ndarray:
        """Per mic, the whitened residual echo power expected in the hop last tracked."""
        return self._hold

    def trim_before(self, index: int) -> None:
        self._band.trim_before(index)
        self.power.trim_before(index)
