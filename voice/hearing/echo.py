"""Acoustic echo cancellation: removes the app's own voice from every microphone (DESIGN 6).

The app knows what it played (the *reference*, aligned to the microphones' sample clock).
What each mic hears of it went through the loudspeaker and the room: a few ms of direct path
and hundreds of ms of reverberation. :class:`EchoCanceller` learns that path per mic with a
partitioned-block frequency-domain adaptive filter (overlap-save, `block_samples` blocks, a
constrained normalised-LMS update per partition, `filter_ms` long) and subtracts its estimate.

Double talk (a player shouting over the app) must not be cancelled or wreck the filter. Two
filters per mic, as in Valin's MDF: a *background* one adapts at every block; the *foreground*
one, which makes the output, is replaced by the background only when the background's error
has been clearly smaller over the last blocks. During double talk the background chases the
player's voice, its error grows, and the foreground keeps the path it had; a background that
drifted far is reset from the foreground.

The background's step also shrinks with the share of its error that is echo the foreground
is expected to miss (plus the background noise) — near-end speech, as the variable step of
Speex's MDF does: a player talking over the app would otherwise be learned as echo, the
filters would chase their voice, and the app's echo would come back around their call.

Cancelling only ever takes sound away (:data:`ADDS_MARGIN`). Where the app's sound does not
reach a mic (a speaker turned right down, headphones), there is no path to learn, and a
filter fitted to a player talking over the app would subtract the app's next line *into* the
mic: a block it would make louder is left as it was, and such a filter is forgotten.

Each processed block also yields the echo estimate that was removed and, per mic, how much of
it the canceller is expected to miss (`leak`, the inverse of its measured echo return loss
enhancement, with a margin, bounded). It is measured in blocks where the echo estimate is
louder than what is left, and may rise by at most `leak_rise_db_per_s`: a player about as loud
as the app's echo on their mic, talking over it, passes that test in some blocks, and one such
block would make the app's whole echo count as missed and the player's call be judged against
it; a path that really changed is still followed, over seconds. The onset detector judges
speech against that residual as it does against removed bleed, so what is left of the app's
voice is never an onset. The mics' background noise (learned while the app is quiet) counts
as missed echo in `leak`: the detector's floor errs high at a noisy table. It does not count
when judging whether a mic's path has been learned (at a noisy table the app's echo would
otherwise seem never learned). Until it has been, for at most the app's first `learn_s` of
playing, the residual is all that mic hears while the app plays: a gate, so the app's first
words are not taken for a player's (a player talking over them is not heard either: the price
of a cold start). After that the residual is at most the echo estimate itself, so a player
clearly louder than the app's echo on their mic is always heard.

Streaming and vectorised over microphones: feed any frame size; output comes in whole blocks
(`block_samples` of latency), on the same sample clock as the input.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from voice.audio.frames import PIPELINE_RATE_HZ, AudioFrame, AudioStreamError

ADDS_TIME_S, ADDS_MARGIN = 0.25, 1.25
"""Cancelling may only take sound away: a block it would make louder than ADDS_MARGIN times
what the mic heard is left as it was, and a foreground filter whose output has been that much
louder over the last ADDS_TIME_S is forgotten (see :meth:`EchoCanceller._block_step`)."""


@dataclass(frozen=True)
class EchoConfig:
    """Tuning of :class:`EchoCanceller`.

    `step` is the background filter's normalised step (0..1]; `proportionate` how much of it
    goes to the filter's strong partitions (0: plain NLMS, 1: all; IPNLMS); `smoothing_blocks` the time
    constant of the statistics that decide a foreground update: with G the foreground's error
    power minus the background's and D the error power times the power of the difference of
    their outputs, the foreground takes the background when G|G| > D in a block or, smoothed,
    > `adopt_margin` D; the background is reset when -G|G| > `reset_margin` D in a block. `leak_db` bounds the
    residual echo reported to the detector (min, max, dB of the removed echo power), which is
    `leak_margin` times what the canceller has been measured to leave, which rises by at
    most `leak_rise_db_per_s`;
    `active_ref_db` is the reference level (dBFS) under which nothing adapts; `ledger_s` how
    far back :meth:`EchoCanceller.echo_share` can look. The mics' background is learned from
    blocks a filter length after the app last played, over `noise_time_s`, rising by at most
    `noise_rise_db_per_s`; the cold-start gate lasts at most `learn_s` of the app playing;
    the background's step is never cut below `min_step_share` of `step` (an echo path that
    really changed is still learned).
    """

    block_samples: int = 128
    filter_ms: float = 320.0
    step: float = 0.5
    proportionate: float = 0.5
    smoothing_blocks: float = 8.0
    adopt_margin: float = 0.25
    reset_margin: float = 4.0
    leak_db: tuple[float, float] = (-25.0, 0.0)
    leak_margin: float = 4.0
    leak_rise_db_per_s: float = 6.0
    active_ref_db: float = -70.0
    ledger_s: float = 30.0
    noise_time_s: float = 1.0
    noise_rise_db_per_s: float = 3.0
    learn_s: float = 2.0
    min_step_share: float = 0.05

    def __post_init__(self) -> None:
        if self.block_samples < 8 or self.block_samples & (self.block_samples - 1):
            raise ValueError(f"block_samples must be a power of two >= 8, got {self.block_samples}")
        if self.filter_ms <= 0 or not 0 < self.step <= 1:
            raise ValueError(
                f"filter_ms must be > 0 and step in (0, 1], got {self.filter_ms}, {self.step}"
            )


@dataclass(frozen=True)
class Cancelled:
    """One stretch of cancelled audio: `frame` (the mics with the app's echo removed), `echo`
    (n, mics) what was removed, `residual` (n, mics) a signal whose power is the echo the
    canceller is expected to have missed: the echo scaled by sqrt(leak) per mic, or, while
    the app plays and a mic's path is not learned yet, everything left on that mic."""

    frame: AudioFrame
    echo: np.ndarray = field(repr=False)
    residual: np.ndarray = field(repr=False)


class EchoCanceller:
    """Per-mic echo canceller against one reference signal (see the module docstring).

    :meth:`process` takes a frame of `channels` mics and the reference samples for the same
    span; it returns the whole blocks completed so far as a :class:`Cancelled` whose frame
    continues the output stream without gaps. :meth:`flush` returns the rest.
    """

    def __init__(self, channels: int, config: EchoConfig | None = None) -> None:
        if channels < 1:
            raise ValueError(f"channels must be at least 1, got {channels}")
        self.channels = channels
        self.config = cfg = config or EchoConfig()
        self.rate_hz = PIPELINE_RATE_HZ
        b = self._block = cfg.block_samples
        self._parts = max(1, round(cfg.filter_ms * self.rate_hz / 1000 / b))
        bins = b + 1
        self._x_spec = np.zeros((self._parts, bins), np.complex128)  # newest partition first
        self._x_prev = np.zeros(b)
        self._fg = np.zeros((channels, self._parts, bins), np.complex128)
        self._bg = np.zeros_like(self._fg)
        self._gain = np.zeros(channels)  # smoothed foreground error minus background's
        self._spread = np.zeros(channels)  # smoothed error power x filter output difference
        self._echo_power = np.zeros(channels)  # smoothed power of the echo estimate
        self._check_alpha = min(1.0, b / (ADDS_TIME_S * self.rate_hz))
        self._out_power = np.zeros(channels)  # smoothed power of the output, and of the input
        self._in_power = np.zeros(channels)
        self._missed = np.ones(channels)  # smoothed share of it the foreground leaves
        self._leak_rise = 10 ** (cfg.leak_rise_db_per_s * b / self.rate_hz / 10)
        self._noise_power = np.zeros(channels)  # the mics' background, while the app is quiet
        self._noise_alpha = min(1.0, b / (cfg.noise_time_s * self.rate_hz))
        self._noise_rise = 10 ** (cfg.noise_rise_db_per_s * b / self.rate_hz / 10)
        self._quiet_blocks = 0  # blocks since the reference was last active
        self._noise_blocks = 0  # background blocks seen
        self._active_blocks = 0  # blocks the app has played
        self._learn_blocks = round(cfg.learn_s * self.rate_hz / b)
        self._alpha = 1.0 / cfg.smoothing_blocks
        self._active_power = 10 ** (cfg.active_ref_db / 10)
        self._leak_min, self._leak_max = (10 ** (d / 10) for d in cfg.leak_db)
        self._mics = np.zeros((0, channels), np.float32)
        self._ref = np.zeros(0, np.float32)
        self._in = 0  # input samples received
        self._out = 0  # output samples emitted
        # per block and mic: energy removed as echo and energy left, the last `ledger_s`
        self._ledger_blocks = max(1, round(cfg.ledger_s * self.rate_hz / b))
        self._removed = np.zeros((self._ledger_blocks, channels))
        self._left = np.zeros((self._ledger_blocks, channels))

    @property
    def leak(self) -> np.ndarray:
        """Per mic: expected residual echo power over removed echo power (1 / ERLE), bounded.
        The mics' background counts as missed echo here: at a noisy table the floor the
        detector judges speech against errs high, never low."""
        return self._bounded_leak(
            self._missed + self._noise_power / np.maximum(self._echo_power, 1e-20))

    def _learned_leak(self) -> np.ndarray:
        """`leak` less the mics' background: how well the path itself has been learned."""
        return self._bounded_leak(self._missed)

    def _bounded_leak(self, missed: np.ndarray) -> np.ndarray:
        return np.clip(self.config.leak_margin * missed, self._leak_min, self._leak_max)

    def echo_share(self, mic: int, start_sample: int, stop_sample: int) -> float:
        """Of the sound mic `mic` picked up over [start, stop) (output samples of the last
        `ledger_s`), the share that was the app's echo: removed / (removed + left), 0..1."""
        b = self._block
        first = max(start_sample // b, self._out // b - self._ledger_blocks)
        idx = np.arange(first, max(first, -(-stop_sample // b))) % self._ledger_blocks
        removed = float(self._removed[idx, mic].sum())
        total = removed + float(self._left[idx, mic].sum())
        return removed / total if total > 0 else 0.0

    def process(self, frame: AudioFrame, reference: np.ndarray) -> Cancelled:
        """Cancel the reference's echo in `frame` (`reference`: its n samples, mono)."""
        if frame.rate_hz != self.rate_hz or frame.channels != self.channels:
            raise AudioStreamError(
                f"EchoCanceller expects {self.rate_hz} Hz x{self.channels}, "
                f"got {frame.rate_hz} Hz x{frame.channels}"
            )
        if frame.start_sample != self._in:
            raise AudioStreamError(
                f"frame starts at sample {frame.start_sample}, expected {self._in} (gap)"
            )
        ref = np.asarray(reference, np.float32).reshape(-1)
        if ref.size != frame.n_samples:
            raise AudioStreamError(
                f"reference has {ref.size} samples for a frame of {frame.n_samples}"
            )
        self._in += frame.n_samples
        self._mics = np.concatenate([self._mics, frame.samples.astype(np.float32, copy=False)])
        self._ref = np.concatenate([self._ref, ref])
        return self._run(self._mics.shape[0] // self._block * self._block)

    def flush(self) -> Cancelled:
        """End of stream: cancel the samples held back for a partial block."""
        n = self._mics.shape[0]
        pad = -n % self._block
        self._mics = np.concatenate([self._mics, np.zeros((pad, self.channels), np.float32)])
        self._ref = np.concatenate([self._ref, np.zeros(pad, np.float32)])
        out = self._run(self._mics.shape[0])
        keep = out.frame.n_samples - pad
        return Cancelled(
            AudioFrame(out.frame.samples[:keep], self.rate_hz, self.channels,
                       out.frame.start_sample, out.frame.t_s),
            out.echo[:keep], out.residual[:keep],
        )

    def _run(self, n: int) -> Cancelled:
        b = self._block
        outs, echoes, residual = [], [], []
        for lo in range(0, n, b):
            e, y, active = self._block_step(self._mics[lo : lo + b].T.astype(np.float64),
                                            self._ref[lo : lo + b].astype(np.float64))
            row = (self._out + lo) // b % self._ledger_blocks
            self._removed[row] = np.sum(y * y, axis=1)
            self._left[row] = np.sum(e * e, axis=1)
            outs.append(e.T)
            echoes.append(y.T)
            # until a mic's path is learned, all it hears while the app plays may be the app
            leak = self.leak
            self._active_blocks += active
            learning = (active and self._active_blocks <= self._learn_blocks
                        and bool(np.any(self._learned_leak() >= self._leak_max)))
            residual.append(np.where(leak >= self._leak_max, e.T, y.T * np.sqrt(leak))
                            if learning else y.T * np.sqrt(leak))
        self._mics, self._ref = self._mics[n:], self._ref[n:]
        start = self._out
        self._out += n
        empty = np.zeros((0, self.channels))
        cat = (lambda parts: np.concatenate(parts) if parts else empty)
        echo = cat(echoes)
        return Cancelled(
            AudioFrame(cat(outs).astype(np.float32), self.rate_hz, self.channels, start,
                       start / self.rate_hz),
            echo.astype(np.float32),
            cat(residual).astype(np.float32),
        )

    def _proportions(self) -> np.ndarray:
        """Per mic and partition, the share of the step (summing to 1 per mic): proportionate
        to each partition's weight in the background filter (IPNLMS), so the strong early part
        of a room's response is learned first and fast; uniform for an empty filter."""
        p = self._parts
        weight = np.sqrt(np.einsum("mpk,mpk->mp", self._bg.real, self._bg.real)
                         + np.einsum("mpk,mpk->mp", self._bg.imag, self._bg.imag))
        total = weight.sum(axis=1, keepdims=True)
        mix = self.config.proportionate
        share = np.where(total > 0, weight / np.maximum(total, 1e-30), 1.0 / p)
        return (1 - mix) / p + mix * share

    def _block_step(
        self, mics: np.ndarray, ref: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, bool]:
        """One block: (mics, b) in; out the error and the echo estimate, both (mics, b), and
        whether the app was playing."""
        b, cfg = self._block, self.config
        x = np.concatenate([self._x_prev, ref])
        self._x_prev = ref
        self._x_spec = np.roll(self._x_spec, 1, axis=0)
        self._x_spec[0] = np.fft.rfft(x)
        # filter outputs: overlap-save, the last b samples of the circular convolution
        y_fg = np.fft.irfft(np.einsum("mpk,pk->mk", self._fg, self._x_spec), 2 * b)[:, b:]
        y_bg = np.fft.irfft(np.einsum("mpk,pk->mk", self._bg, self._x_spec), 2 * b)[:, b:]
        e_fg, e_bg = mics - y_fg, mics - y_bg
        # a foreground that makes a mic louder is not the app's echo path (learned while a
        # player talked over the app, with the app's sound not reaching that mic: a speaker
        # turned down): subtracting it would put the app's voice into the mic. Forget it.
        c, out_power = self._check_alpha, np.mean(e_fg**2, axis=1)
        in_power = np.mean(mics**2, axis=1)
        self._out_power += c * (out_power - self._out_power)
        self._in_power += c * (in_power - self._in_power)
        adds = self._out_power > ADDS_MARGIN * self._in_power
        if adds.any():
            self._out_power[adds] = self._in_power[adds]
            self._fg[adds] = 0.0
            self._bg[adds] = 0.0
            self._gain[adds] = self._spread[adds] = 0.0
        louder = adds | (out_power > ADDS_MARGIN * in_power)  # this block: left as it was
        y_fg[louder], e_fg[louder] = 0.0, mics[louder]
        ref_power = float(ref @ ref) / b
        a = self._alpha
        active = ref_power > self._active_power
        if active:
            # proportionate normalised LMS per bin, constrained, on the background filter:
            # W_p += step g_p conj(X_p) E / sum_q g_q |X_q|^2 (stable for step < 2)
            share = self._proportions()[:, :, None]
            x_power = self._x_spec.real**2 + self._x_spec.imag**2
            norm = np.einsum("mpk,pk->mk", share, x_power)
            norm += 1e-3 * np.mean(norm, axis=1, keepdims=True) + 1e-10
            err_spec = np.fft.rfft(np.concatenate([np.zeros_like(e_bg), e_bg], axis=1))
            grad = share * np.conj(self._x_spec)[None] * (err_spec / norm)[:, None, :]
            g = np.fft.irfft(grad, 2 * b)
            g[..., b:] = 0.0  # the gradient constraint: a linear, not circular, convolution
            # the step shrinks with the share of the error that is echo the foreground missed:
            # a player talking over the app makes the error large and must not be learned
            leak = self._learned_leak()
            missed = leak * np.mean(y_fg**2, axis=1) + self._noise_power
            share = np.clip(missed / np.maximum(np.mean(e_fg**2, axis=1), 1e-20),
                            cfg.min_step_share, 1.0)
            share[leak >= self._leak_max] = 1.0  # not learned yet: learn fast
            self._bg += (cfg.step * share)[:, None, None] * np.fft.rfft(g)
            # Valin's test (Speex MDF): the background's gain in error, G, must be large
            # against D, the error power times the power of the difference of the filters'
            # outputs (a player talking makes the error large; only a clear gain then counts),
            # in this block or on average (G and D smoothed as a mean and its variance)
            s_ff, s_bb = np.mean(e_fg**2, axis=1), np.mean(e_bg**2, axis=1)
            gain, spread = s_ff - s_bb, s_ff * np.mean((y_fg - y_bg) ** 2, axis=1)
            self._gain = (1 - a) * self._gain + a * gain
            self._spread = (1 - a) ** 2 * self._spread + a**2 * spread
            adopt = (gain * np.abs(gain) > spread) | (
                self._gain * np.abs(self._gain) > cfg.adopt_margin * self._spread
            )
            reset = -gain * np.abs(gain) > cfg.reset_margin * spread
            self._fg[adopt] = self._bg[adopt]
            self._bg[reset] = self._fg[reset]
            self._gain[adopt | reset] = 0.0  # the two filters are the same again
            self._spread[adopt | reset] = 0.0
            # how much echo the foreground leaves (its error, s_ff, less the background noise),
            # from blocks where the echo dominates, rising slowly (see the module docstring)
            echo_p = np.mean(y_fg**2, axis=1)
            self._echo_power += a * (echo_p - self._echo_power)
            missed = np.maximum(s_ff - self._noise_power, 0.0) / np.maximum(echo_p, 1e-20)
            moved = np.minimum(self._missed + a * (missed - self._missed),
                               self._missed * self._leak_rise)
            echo_only = missed < 1.0  # no loud player on top of it
            self._missed = np.where(echo_only, np.maximum(moved, self._leak_min / cfg.leak_margin),
                                    self._missed)
        self._quiet_blocks = 0 if active else self._quiet_blocks + 1
        if self._quiet_blocks > self._parts:  # the app's echo has died away
            self._track_noise(np.mean(mics**2, axis=1))
        return e_fg, y_fg, active

    def _track_noise(self, power: np.ndarray) -> None:
        """The mics' background while the app is quiet: a plain mean at first, then
        exponential forgetting, rising by at most `noise_rise_db_per_s` (players talk while
        the app is quiet; their calls are not background)."""
        self._noise_blocks += 1
        rate = max(self._noise_alpha, 1.0 / self._noise_blocks)
        moved = self._noise_power + rate * (power - self._noise_power)
        self._noise_power = (moved if rate > self._noise_alpha
                             else np.minimum(moved, self._noise_power * self._noise_rise))
