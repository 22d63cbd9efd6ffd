"""Resampling: a streaming polyphase resampler and whole-signal helpers.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator

import numpy as np

from voice.audio.frames import PIPELINE_RATE_HZ, AudioFrame, AudioStreamError

log = logging.getLogger(__name__)



class Resampler:
    """Streaming polyphase resampler (Kaiser-windowed sinc), any rational ratio.

    Frames go in one at a time and come out at `out_rate_hz`; filter state carries across
    frame boundaries so block size never matters (no clicks), and output sample k is the
    signal at time k / out_rate_hz: the filter delay is compensated, so `start_sample` and
    `t_s` stay on the same clock as the input. Call :meth:`flush` at the end of the stream.
    """

    def __init__(self, in_rate_hz: int, out_rate_hz: int, channels: int) -> None:
        if in_rate_hz <= 0 or out_rate_hz <= 0:
            raise AudioStreamError(f"rates must be positive, got {in_rate_hz} -> {out_rate_hz}")
        g = math.gcd(in_rate_hz, out_rate_hz)
        self.in_rate_hz = in_rate_hz
        self.out_rate_hz = out_rate_hz
        self.channels = channels
        self._up = out_rate_hz // g
        self._down = in_rate_hz // g
        # ~16 zero crossings of the sinc either side, measured at the lower of the two rates
        self._taps = taps_per_phase = 32 * max(1, -(-self._down // self._up))
        self._half = (taps_per_phase * self._up) // 2  # filter half-length, upsampled units
        self._phases = self._design()
        self._history = np.zeros((taps_per_phase, channels), np.float32)
        self._hist_start = -taps_per_phase  # absolute input index of _history[0]
        self._n_in = 0
        self._n_out = 0

    def _design(self) -> np.ndarray:
        """Polyphase matrix H[p, t] = h[p + t*up] of a low-pass at the lower Nyquist."""
        up, taps = self._up, self._taps
        n = np.arange(taps * up) - self._half
        cutoff = 0.5 / max(up, self._down) * 0.92  # cycles per upsampled sample
        h = 2 * cutoff * np.sinc(2 * cutoff * n) * np.kaiser(taps * up, 8.0) * up
        return h.reshape(taps, up).T.astype(np.float32)

    def process(self, frame: AudioFrame) -> AudioFrame:
        """Resample one frame; the output may be a sample shorter or longer than exact."""
        if frame.rate_hz != self.in_rate_hz or frame.channels != self.channels:
            raise AudioStreamError(
                f"resampler expects {self.in_rate_hz} Hz x{self.channels}, "
                f"got {frame.rate_hz} Hz x{frame.channels}"
            )
        if frame.start_sample != self._n_in:
            raise AudioStreamError(
                f"frame starts at sample {frame.start_sample}, expected {self._n_in} (gap)"
            )
        return self._run(frame.samples, final=False)

    def flush(self) -> AudioFrame:
        """Emit the tail still held back for the filter's look-ahead."""
        return self._run(np.zeros((0, self.channels), np.float32), final=True)

    def _run(self, samples: np.ndarray, final: bool) -> AudioFrame:
        up, down, half = self._up, self._down, self._half
        x = np.concatenate([self._history, samples.astype(np.float32, copy=False)])
        self._n_in += samples.shape[0]
        if final:
            total = -(-self._n_in * up // down)  # ceil: every output inside the input span
            pad = half // up + 2
            x = np.concatenate([x, np.zeros((pad, self.channels), np.float32)])
        else:
            # outputs whose newest tap, floor((k*down + half)/up), has arrived: k*down + half < n_in*up
            total = max(self._n_out, (self._n_in * up - half - 1) // down + 1)
        k = np.arange(self._n_out, total)
        pos = k * down + half
        newest = pos // up
        phase = pos - newest * up
        idx = newest[:, None] - np.arange(self._taps)[None, :] - self._hist_start
        out = np.einsum("kt,ktc->kc", self._phases[phase], x[idx]) if k.size else x[:0]
        start = self._n_out
        self._n_out = total
        keep_from = self._n_out * down // up - self._taps  # oldest input a later output needs
        keep_from = max(self._hist_start, min(keep_from, self._n_in - self._taps))
        cut = keep_from - self._hist_start
        self._history = x[cut : cut + (self._n_in - keep_from)].copy()
        self._hist_start = keep_from
        return AudioFrame(
            np.clip(out, -1.0, 1.0).astype(np.float32),
            self.out_rate_hz,
            self.channels,
            start,
            start / self.out_rate_hz,
        )


def resample(samples: np.ndarray, in_rate_hz: int, out_rate_hz: int) -> np.ndarray:
    """Resample a whole signal, shape (n,) or (n, channels), keeping time zero aligned."""
    two_d = samples.reshape(samples.shape[0], -1).astype(np.float32)
    if in_rate_hz == out_rate_hz:
        return two_d.reshape((-1,) + samples.shape[1:])
    r = Resampler(in_rate_hz, out_rate_hz, two_d.shape[1])
    head = r.process(AudioFrame(two_d, in_rate_hz, two_d.shape[1], 0, 0.0))
    out = np.concatenate([head.samples, r.flush().samples])
    return out.reshape((-1,) + samples.shape[1:])


def resampled(
    frames: Iterator[AudioFrame], rate_hz: int = PIPELINE_RATE_HZ
) -> Iterator[AudioFrame]:
    """Wrap a frame iterator so it yields `rate_hz` frames (a no-op when it already does)."""
    r: Resampler | None = None
    for frame in frames:
        if r is None:
            if frame.rate_hz == rate_hz:
                yield frame
                yield from frames
                return
            r = Resampler(frame.rate_hz, rate_hz, frame.channels)
        out = r.process(frame)
        if out.n_samples:
            yield out
    if r is not None:
        tail = r.flush()
        if tail.n_samples:
            yield tail
