"""Per-microphone speech detection with sample-accurate onsets and bleed rejection, streaming.

Feed 16 kHz multichannel :class:`~voice.audio.frames.AudioFrame` objects to
:meth:`OnsetDetector.feed`; it returns :class:`SpeechStart` as soon as an utterance's onset is
known and attributed, and :class:`SpeechEnd` (carrying the :class:`Segment`) once it has ended.

How it works, per microphone:

* the signal is high-passed (100 Hz) and *whitened* by a linear predictor fitted to the quiet
  background, so coloured noise (fans, rumble, pink noise) becomes white and any spectral
  change stands out: a fricative's hiss above a hum is as visible as a vowel above hiss;
* the prediction error power of that fit is the noise floor (tracked on quiet hops only:
  quick to fall, slow to rise), raised to the `floor_quantile` of the background's hop
  powers over the last `floor_window_ms`: babble from the next table fluctuates, and its
  peaks are background too. Nothing is reported in the first `warmup_ms`, while the floor is
  learned from the room (a session always starts with some of it);
* after an echo canceller (:mod:`voice.hearing.echo`), the echo it may have left is added to the
  floor: its whitened power, held at peaks and decaying at `echo_decay_db_per_s` like a
  room's tail, so the app's own voice is not an onset;
* a CUSUM test for a power rise of `cusum_ratio_db` raises an alarm once its evidence (a
  log-likelihood ratio, in nats) exceeds `alarm_llr`; the onset is the sample where that
  evidence began to accumulate — the maximum-likelihood change point, to the sample;
* hangover: an utterance ends after `end_silence_ms` without an active hop, or after
  `knock_silence_ms` when it is a knock: a sound of at most `knock_ms` with less than
  `knock_speech_ms` of speech in it (cutlery on a plate). A call right after a knock
  then has its own onset, not the knock's, and the knock, not a call, is dropped by the
  recogniser. A loud knock rings on for a while in a room; a call that rises out of its ring
  (see `_call_out_of_ring`) ends the knock there and has its own onset too.

Bleed (DESIGN principle 4): `confirm_ms` after a new onset on mic m, m is fitted as a sum of
delayed, filtered, quieter copies of the mics already speaking (up to `max_bleed_paths` sources,
delay 0..`max_bleed_delay_ms`, a `bleed_fir_taps` FIR each, least squares over the first
`fit_ms` and over the whole `confirm_ms`). If the fit explains at least `bleed_explained` of m's
energy above its noise, the onset is a copy: never reported. A room's reverberation is more
than a short FIR can fit, so first, and cheaply, the close-talk geometry is tested: an onset
that rises far less than a speaking mic's sound did a few ms earlier is a copy too (see
`_quieter_copy`). The fitted paths are then
subtracted from m while their sources are loud, and detection goes on on the residual, judged
against the noise floor plus what the subtraction is expected to miss; so a player who starts
talking on their own mic 20 ms into someone else's shout is still heard, with their own onset.
What an utterance's segment carries for the recogniser has the other players who talked
meanwhile turned down (:mod:`voice.hearing.crosstalk`, from their own mics and the learned couplings).

Known limits (dry synthetic and room-simulated scenes, bench/README.md): a second caller
whose start is weak under another's bleed is heard 10-30 ms late (later in reverberant rooms)
where the mics' crosstalk is -10 dB or more, or not known yet (-10 dB is assumed until
calibration or some talk): the onset is found, but in its first `confirm_ms` the caller is
quieter than the bleed on that mic, so `_quieter_copy` and the crosstalk margin take it for a
copy (the rise measured on the residual too), and the re-scan starts a hop later. Where the
crosstalk is lower, the rise test weighs it (the bundled demo's Leo, 25 ms after Priya: 10 ms
late, 28 ms before). With both left out where every talker's bleed is already being removed,
Bob's onset in tests/test_listen.py is found 0.6 ms off, but copies the removal leaves only
1-6 dB under what it removed are then reported (two scenes of tests/test_onsets.py). Moving
an accepted onset back to where the chain of such re-scans began (each finding its rise
within 10 ms of its start; the first after 10 ms of a quiet residual; at most `confirm_ms`
long) found Leo's "got it" 25 ms after Priya's in the
bundled demo 0.4 ms off (28 ms late then) and that Bob right, but on the bench's scenes it
moved 19 onsets more than 2 ms further from the truth and 9 closer, most of the 19 to before
the call (the chain began on what the bleed's removal left). Well into a reverberant call
(RT60 0.2-0.8 s) its copies on other mics are still reported at times; background that is
loud against the calls (babble or clatter 5-10 dB under them) still triggers onsets and can
hide calls.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from typing import NamedTuple

import numpy as np

from voice.audio.frames import (
    MIN_SPEECH_MS,
    PIPELINE_RATE_HZ,
    SPEECH_FRAME,
    AudioFrame,
    AudioStreamError,
    speech_like_frames,
)
from voice.hearing.crosstalk import suppress


@dataclass(frozen=True)
class OnsetConfig:
    """Tuning of :class:`OnsetDetector`; times in ms, levels in dB, evidence in nats.

    `whitening_range_db` caps how much the whitening filter may boost quiet bands;
    `floor_time_ms` is the background model's memory; nothing is detected in the first
    `warmup_ms`; the floor is at least the `floor_quantile` of the last `floor_window_ms` of
    background hops (refreshed every `level_update_ms`). The copy test compares band energy
    in `envelope_ms` bins (see `_quieter_copy` for `copy_*`); residual echo decays at
    `echo_decay_db_per_s`. An onset must hold `min_active_ms` of rising evidence within `confirm_ms`
    (clicks do not). A path's expected miss is bounded by `bleed_leak_db` (min, max); an onset
    found while bleed is removed is a new source only if what is left exceeds
    `bleed_new_source_db` of what was removed. A source must add `bleed_min_gain` of explained
    energy to be kept in a fit. `max_segment_ms` ends a runaway utterance (a noise change).
    The `knock_*` fields say what a knock is (the hangover above) and what its ring is, out of
    which a call may rise (see `_call_out_of_ring`).

    Crosstalk (see :meth:`OnsetDetector._own`): band power over `crosstalk_window_ms`, a
    source's held at peaks and decaying at `crosstalk_decay_db_per_s`; each
    pair's coupling starts at `crosstalk_initial_db`, stays within `crosstalk_range_db`, and is
    learned (time constant `crosstalk_learn_time_ms` of learning hops) while the source is
    `crosstalk_learn_above_db` over its band floor and the other mic is idle. A mic's sound is
    its own when it exceeds `own_margin_db` (`onset_own_margin_db` for an onset to stand) over
    every other mic's expected crosstalk; an utterance with less than `min_own_ms` of its own
    sound (loud over the background and over crosstalk) was not its player's call. A
    segment's audio more than `own_span_keep_ms` before its first or after its last own sound
    is turned down by `not_own_attenuation_db` (see :attr:`Segment.samples`). Before that,
    the voices of the other players talking meanwhile are turned down in it by spectral
    subtraction, `crosstalk_oversubtract` times their expected crosstalk, to no less than
    `crosstalk_floor_db` (:func:`voice.hearing.crosstalk.suppress`; an over-subtraction of 0 leaves it).
    """

    hop_ms: float = 5.0
    end_silence_ms: float = 300.0
    knock_ms: float = 120.0
    knock_silence_ms: float = 80.0
    knock_speech_ms: float = MIN_SPEECH_MS
    knock_peak_ms: float = 10.0
    knock_decay_ms: float = 30.0
    knock_ring_ms: float = 600.0
    pre_roll_ms: float = 100.0
    post_roll_ms: float = 100.0
    highpass_hz: float = 100.0
    whitening_order: int = 8
    whitening_range_db: float = 30.0
    floor_time_ms: float = 500.0
    warmup_ms: float = 200.0
    floor_window_ms: float = 1500.0
    floor_quantile: float = 0.9
    level_update_ms: float = 25.0
    cusum_ratio_db: float = 6.0
    alarm_llr: float = 30.0
    active_db: float = 6.0
    confirm_ms: float = 40.0
    min_active_ms: float = 15.0
    fit_ms: float = 8.0
    max_bleed_delay_ms: float = 10.0
    bleed_explained: float = 0.6
    bleed_fir_taps: int = 7
    max_bleed_paths: int = 2
    bleed_min_gain: float = 0.1
    bleed_leak_db: tuple[float, float] = (-25.0, -6.0)
    bleed_new_source_db: float = -10.0
    bleed_tail_ms: float = 200.0
    envelope_ms: float = 2.0
    copy_max_lag_ms: float = 16.0
    copy_window_ms: float = 30.0
    late_copy_level_db: float = -8.0
    copy_level_db: float = -8.0
    copy_over_coupling_db: float = 3.0
    echo_decay_db_per_s: float = 75.0
    max_segment_ms: float = 15_000.0
    crosstalk_window_ms: float = 25.0
    crosstalk_initial_db: float = -10.0
    crosstalk_decay_db_per_s: float = 120.0
    crosstalk_range_db: tuple[float, float] = (-30.0, -3.0)
    crosstalk_learn_above_db: float = 25.0
    crosstalk_learn_time_ms: float = 2000.0
    own_margin_db: float = 6.0
    onset_own_margin_db: float = 3.0
    min_own_ms: float = 80.0
    own_span_keep_ms: float = 30.0
    not_own_attenuation_db: float = 30.0
    crosstalk_oversubtract: float = 1.5
    crosstalk_floor_db: float = -10.0


@dataclass(frozen=True)
class Segment:
    """One attributed utterance on one mic; samples are at 16 kHz on that mic's clock.

    `samples` is the mic's audio from `samples_start_sample` (onset minus the pre-roll) to
    `end_sample` plus the post-roll (a recogniser needs the quiet around a word), turned down
    before the player's first and after their last own sound (:meth:`OnsetDetector._own`):
    what is there is background or a neighbour still talking, whose words a recogniser would
    otherwise try to fit into this call or count against it as speech left over; `level_db`
    is its mean level from onset to end in dB full scale, before any turning down.
    """

    mic: int
    onset_sample: int
    end_sample: int
    onset_s: float
    end_s: float
    level_db: float
    samples_start_sample: int
    samples: np.ndarray = field(compare=False, repr=False)
    own_s: float = 0.0
    """How long, between onset and end, the mic's sound was its own player's: over the
    background and over what other talking players' mics leak into it (crosstalk)."""
    not_own: bool = False
    """Whether too little of it was (:attr:`OnsetConfig.min_own_ms`): another player's voice
    heard on this mic, or sound too faint to be told from the background; not a call."""

    @property
    def duration_s(self) -> float:
        """Onset to end, in seconds."""
        return self.end_s - self.onset_s


@dataclass(frozen=True)
class SpeechStart:
    """Early notice: speech began on `mic` at `onset_sample`; its end is not known yet.

    `decided_sample` is the stream position at which the detector committed to it."""

    mic: int
    onset_sample: int
    onset_s: float
    decided_sample: int


@dataclass(frozen=True)
class SpeechEnd:
    """The utterance that started at `segment.onset_sample` on `segment.mic` has ended."""

    segment: Segment


Event = SpeechStart | SpeechEnd


class _State(Enum):
    IDLE = "idle"
    PENDING = "pending"  # onset found, attribution not decided yet
    SPEECH = "speech"


class _History:
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


@dataclass
class _Bleed:
    """A fitted bleed path into one mic: sum_j taps[j] * x_leader(t - delay_samples - j).

    A short FIR rather than one gain absorbs fractional delays and the room's coloration."""

    leader: int
    taps: np.ndarray
    delay_samples: int
    leak: float  # power of the bleed this path misses, relative to what it removes
    expires_sample: int

    def apply(self, band: _History, start: int, stop: int) -> np.ndarray:
        """The bleed this path puts into [start, stop)."""
        d0, k = self.delay_samples, self.taps.size
        src = band.get(start - d0 - k + 1, stop - d0)[:, self.leader]
        return np.convolve(src, self.taps, mode="valid")


class _Sig(NamedTuple):
    white: np.ndarray  # (n, mics) whitened residual
    noise: np.ndarray  # (n, mics) noise power to judge it against, per sample
    residual: np.ndarray  # (order + n, mics) unwhitened residual, with the filter's history
    removed: np.ndarray  # (n, mics) whitened bleed that was subtracted


def _moving_mean(x: np.ndarray, width: int) -> np.ndarray:
    """Centred moving average along axis 0, same length (shorter windows at the edges)."""
    acc = np.concatenate([np.zeros((1,) + x.shape[1:]), np.cumsum(x, axis=0)])
    i = np.arange(x.shape[0])
    lo = np.maximum(i - width // 2, 0)
    hi = np.minimum(i + width - width // 2, x.shape[0])
    return (acc[hi] - acc[lo]) / (hi - lo).reshape((-1,) + (1,) * (x.ndim - 1))


def _cusum(
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


class OnsetDetector:
    """Streaming per-mic speech detector with bleed rejection (see the module docstring).

    Feed contiguous 16 kHz frames (any block size); each call returns the events completed by
    that frame. `settled_sample` says how far onsets are final: no onset earlier than it will
    be reported later (the arbiter's watermark). Call :meth:`flush` at the end of a stream.
    Per-hop work is vectorised over microphones. `crosstalk_db` [source][mic], calibrated,
    seeds the crosstalk couplings (else `crosstalk_initial_db`); they are learned on from it.
    """

    def __init__(
        self, channels: int, config: OnsetConfig | None = None,
        crosstalk_db: np.ndarray | None = None,
    ) -> None:
        from scipy.signal import butter

        if channels < 1:
            raise ValueError(f"channels must be at least 1, got {channels}")
        self.channels = channels
        self.config = cfg = config or OnsetConfig()
        self.rate_hz = PIPELINE_RATE_HZ
        per_ms = self.rate_hz / 1000
        self._hop = max(1, round(cfg.hop_ms * per_ms))
        self._end_silence = round(cfg.end_silence_ms * per_ms)
        self._knock = round(cfg.knock_ms * per_ms)
        self._knock_silence = round(cfg.knock_silence_ms * per_ms)
        self._knock_speech = round(cfg.knock_speech_ms * per_ms)
        self._knock_peak_hops = round(cfg.knock_peak_ms / cfg.hop_ms)
        self._knock_decay_hops = round(cfg.knock_decay_ms / cfg.hop_ms)
        self._knock_ring_hops = round(cfg.knock_ring_ms / cfg.hop_ms)
        self._pre_roll = round(cfg.pre_roll_ms * per_ms)
        self._post_roll = min(self._end_silence, round(cfg.post_roll_ms * per_ms))
        self._confirm = round(cfg.confirm_ms * per_ms)
        self._fit = round(cfg.fit_ms * per_ms)
        self._max_delay = round(cfg.max_bleed_delay_ms * per_ms)
        self._tail = round(cfg.bleed_tail_ms * per_ms)
        self._max_segment = round(cfg.max_segment_ms * per_ms)
        self._warmup = round(cfg.warmup_ms * per_ms)
        self._level_every = max(1, round(cfg.level_update_ms / cfg.hop_ms))
        self._envelope_bin = max(1, round(cfg.envelope_ms * per_ms))
        self._copy_lags = round(cfg.copy_max_lag_ms / cfg.envelope_ms)
        self._copy_window = round(cfg.copy_window_ms * per_ms)
        self._copy_ratio = 10 ** (cfg.copy_level_db / 10)
        self._late_copy_ratio = 10 ** (cfg.late_copy_level_db / 10)
        self._copy_over_coupling = 10 ** (cfg.copy_over_coupling_db / 10)
        self._min_active_hops = max(1, math.ceil(cfg.min_active_ms / cfg.hop_ms))
        gamma = self._gamma = 10 ** (cfg.cusum_ratio_db / 10)
        self._llr_scale = 0.5 * (1 - 1 / gamma)
        self._llr_bias = 0.5 * math.log(gamma)
        self._active = 10 ** (cfg.active_db / 10)
        self._xt_len = max(self._hop, round(cfg.crosstalk_window_ms * per_ms))
        lo_db, hi_db = cfg.crosstalk_range_db
        self._xt_range = (10 ** (lo_db / 10), 10 ** (hi_db / 10))
        self._xt_learn_above = 10 ** (cfg.crosstalk_learn_above_db / 10)
        self._xt_rate = min(1.0, cfg.hop_ms / cfg.crosstalk_learn_time_ms)
        self._xt_decay = 10 ** (-cfg.crosstalk_decay_db_per_s * cfg.hop_ms / 1000 / 10)
        self._own_margin = 10 ** (cfg.own_margin_db / 10)
        self._own_keep = round(cfg.own_span_keep_ms * per_ms)
        self._not_own_gain = 10 ** (-cfg.not_own_attenuation_db / 20)
        self._onset_own_margin = 10 ** (cfg.onset_own_margin_db / 10)
        self._new_source = 10 ** (cfg.bleed_new_source_db / 10)
        self._min_leak = 10 ** (cfg.bleed_leak_db[0] / 10)
        self._max_leak = 10 ** (cfg.bleed_leak_db[1] / 10)
        self._loading = 10 ** (-cfg.whitening_range_db / 10)
        self._floor_alpha = min(1.0, cfg.hop_ms / cfg.floor_time_ms)
        self._order = p = cfg.whitening_order
        self._sos = np.asarray(
            butter(2, cfg.highpass_hz, "highpass", fs=self.rate_hz, output="sos")
        )
        self._zi = np.zeros((self._sos.shape[0], 2, channels))
        self._echo_zi = np.zeros_like(self._zi)
        self._raw = _History(channels)
        self._band = _History(channels)
        self._echo_band = _History(channels)  # band-passed residual echo signal, see feed
        self._echo = _History(channels)  # whitened residual echo power to expect, per sample
        self._echo_hold = np.zeros(channels)  # its peak-hold envelope, per hop
        self._echo_decay = 10 ** (-cfg.echo_decay_db_per_s * cfg.hop_ms / 1000 / 10)
        self._done = 0  # absolute index: samples analysed so far (whole hops), i.e. "now"
        self._acf = np.zeros((channels, p + 1))  # background autocorrelation, lags 0..p
        self._lpc = np.zeros((channels, p + 1))  # whitening filters, a[0] = 1
        self._lpc[:, 0] = 1.0
        self._floor = np.full(channels, np.nan)  # whitened noise power per sample
        # the whitened power of recent background hops (nan: the mic was busy then); the floor
        # speech is judged against is at least their `floor_quantile`, so the peaks of a
        # fluctuating background (babble at the next table) are not taken for speech
        self._recent = np.full((max(1, round(cfg.floor_window_ms / cfg.hop_ms)), channels), np.nan)
        self._recent_at = 0
        self._level = np.zeros(channels)
        self._learned = np.zeros(channels, np.int64)  # quiet hops learned from
        self._c = np.zeros(channels)
        self._m = np.zeros(channels)
        self._excursion = np.zeros(channels, np.int64)  # where current evidence began
        self._state = [_State.IDLE] * channels
        self._onset = [0] * channels
        self._last_active = [0] * channels
        self._bleed: list[list[_Bleed]] = [[] for _ in range(channels)]
        # crosstalk: [source, mic] band power ratio, the band floor, own hops per utterance
        seed_db = (  # calibrated: [source][mic]; learned on from the seed
            np.full((channels, channels), cfg.crosstalk_initial_db) if crosstalk_db is None
            else np.asarray(crosstalk_db, float)
        )
        self._coupling = np.clip(10 ** (seed_db / 10), *self._xt_range)
        self._band_floor = np.full(channels, np.nan)
        self._src_hold = np.zeros(channels)  # band power held at peaks, decaying like a room
        self._own_log = _History(channels)  # per sample: its hop's power over crosstalk
        self._own_hops = [0] * channels
        # per hop of an utterance that may still be a knock ringing: its power over the floor
        self._ring: list[list[float] | None] = [None] * channels
        self._spans: list[list[list[int]]] = [[] for _ in range(channels)]  # [onset, end]
        self.rejected_bleed = 0
        """Onsets found to be copies of another mic and not reported."""

    # ------------------------------------------------------------------ public

    @property
    def settled_sample(self) -> int:
        """Every onset before this sample has been reported (or rejected) already."""
        marks = [self._done]
        for ch, state in enumerate(self._state):
            if state is _State.IDLE:
                marks.append(int(self._excursion[ch]))
            elif state is _State.PENDING:
                marks.append(self._onset[ch])
        return min(marks)

    @property
    def settled_s(self) -> float:
        """:attr:`settled_sample` in seconds."""
        return self.settled_sample / self.rate_hz

    def feed(self, frame: AudioFrame, residual_echo: np.ndarray | None = None) -> list[Event]:
        """Analyse one frame; return the events it completes, in the order they were decided.

        `residual_echo` (n, channels), when the frame has been through an echo canceller: a
        signal whose power is the app's echo the canceller may have left in each mic (see
        :class:`voice.hearing.echo.Cancelled`); speech is judged against the floor plus that."""
        if frame.rate_hz != self.rate_hz or frame.channels != self.channels:
            raise AudioStreamError(
                f"OnsetDetector expects {self.rate_hz} Hz x{self.channels}, "
                f"got {frame.rate_hz} Hz x{frame.channels} (resample first)"
            )
        if frame.start_sample != self._raw.end:
            raise AudioStreamError(
                f"frame starts at sample {frame.start_sample}, expected {self._raw.end} (gap)"
            )
        if frame.n_samples == 0:  # an echo canceller still filling a block passes on nothing
            return []
        from scipy.signal import sosfilt

        x = frame.samples.astype(np.float32, copy=False)
        self._raw.append(x)
        y, self._zi = sosfilt(self._sos, x, axis=0, zi=self._zi)
        self._band.append(y.astype(np.float32))
        if residual_echo is not None and residual_echo.shape != x.shape:
            raise AudioStreamError(
                f"residual_echo has shape {residual_echo.shape}, the frame {x.shape}"
            )
        if residual_echo is None:
            self._echo_band.append(np.zeros_like(x))
        else:
            r, self._echo_zi = sosfilt(self._sos, residual_echo, axis=0, zi=self._echo_zi)
            self._echo_band.append(r.astype(np.float32))
        events: list[Event] = []
        while self._done + self._hop <= self._raw.end:
            self._done += self._hop
            self._hop_step(self._done - self._hop, events)
        self._trim()
        return events

    def flush(self) -> list[Event]:
        """End of stream: decide pending onsets on the audio there is and end every utterance."""
        events: list[Event] = []
        for ch in range(self.channels):
            if self._state[ch] is _State.PENDING:
                self._decide(ch, events)
            if self._state[ch] is _State.SPEECH:
                self._end(ch, events)
        return events

    # ------------------------------------------------------------------ signal helpers

    def _whiten(self, x: np.ndarray, lpc: np.ndarray) -> np.ndarray:
        """Filter columns of x (order + n rows) by their predictors lpc (cols, order+1)."""
        win = np.lib.stride_tricks.sliding_window_view(x, self._order + 1, axis=0)
        return np.einsum("nck,ck->nc", win[..., ::-1], lpc)

    def _signal(self, start: int, stop: int, mics: list[int], unbleed: bool = True) -> _Sig:
        """Whitened residual of `mics` over [start, stop) — their bleed paths removed unless
        `unbleed` is false — and the noise power to judge it by: the floor plus the part of
        what was removed that the paths are expected to miss."""
        ext = start - self._order
        resid = self._band.get(ext, stop)[:, mics]
        removed = np.zeros_like(resid)
        leak = np.zeros(len(mics))
        for j, ch in enumerate(mics):
            for b in self._bleed[ch] if unbleed else ():
                removed[:, j] += b.apply(self._band, ext, stop)
                leak[j] = max(leak[j], b.leak)
        resid -= removed
        lpc = self._lpc[mics]
        noise = np.repeat(self._noise_floor()[mics][None, :], stop - start, axis=0)
        removed_w = self._whiten(removed, lpc)
        if removed.any():
            noise += leak * _moving_mean(removed_w * removed_w, self._hop)
        noise += self._echo.get(start, stop)[:, mics]
        return _Sig(self._whiten(resid, lpc), noise, resid, removed_w)

    def _llr(self, sig: _Sig) -> np.ndarray:
        """Per-sample log-likelihood ratio of "power rose by gamma" against the noise power."""
        return sig.white * sig.white / sig.noise * self._llr_scale - self._llr_bias

    def _learn_background(self, resid: np.ndarray, quiet: np.ndarray, fast: np.ndarray) -> None:
        """Fold quiet hops into the background autocorrelation; refit whitening and floor."""
        p, n = self._order, resid.shape[0] - self._order
        acf = np.stack(
            [np.einsum("nc,nc->c", resid[p:], resid[p - k : p - k + n]) / n for k in range(p + 1)],
            axis=1,
        )
        first = np.isnan(self._floor)
        self._learned += quiet | first
        # a plain running mean until the time constant is reached, then exponential forgetting
        slow = np.maximum(self._floor_alpha, 1.0 / self._learned)
        rate = np.where(fast & ~first, np.maximum(0.3, slow), slow)[:, None]
        use = quiet | first
        self._acf[use] += (rate * (acf - self._acf))[use]
        r = self._acf[use]
        r0 = r[:, :1] * (1 + self._loading) + 1e-12
        idx = np.abs(np.arange(p)[:, None] - np.arange(p)[None, :])
        toeplitz = np.where(idx == 0, r0[:, :, None], r[:, idx])
        a = np.linalg.solve(toeplitz, -r[:, 1:, None])[:, :, 0]
        self._lpc[use] = np.concatenate([np.ones((a.shape[0], 1)), a], axis=1)
        error = r0[:, 0] + np.einsum("ck,ck->c", a, r[:, 1:])
        self._floor[use] = np.maximum(error, self._loading * r0[:, 0])

    # ------------------------------------------------------------------ per hop

    def _track_echo(self, s: int, e: int) -> None:
        """The residual echo power to expect in hop [s, e): the whitened power of what the
        echo canceller may have missed, held at its peak and let decay like a room's tail
        (what it misses is mostly reverberation, smeared over the next hundreds of ms)."""
        echo = self._echo_band.get(s - self._order, e)
        if echo.any():
            w = self._whiten(echo, self._lpc)
            self._echo_hold = np.maximum(np.mean(w * w, axis=0), self._echo_hold * self._echo_decay)
        else:
            self._echo_hold *= self._echo_decay
        self._echo.append(np.repeat(self._echo_hold[None, :].astype(np.float32), e - s, axis=0))

    def _noise_floor(self) -> np.ndarray:
        """Whitened background power per sample: the fitted floor, or the upper part of what
        the background has recently been, whichever is higher."""
        return np.maximum(self._floor, self._level)

    def _track_level(self, power: np.ndarray) -> None:
        """Add one hop's background power per mic (nan where busy); refresh the level."""
        self._recent[self._recent_at % self._recent.shape[0]] = power
        self._recent_at += 1
        if self._recent_at % self._level_every == 0:
            seen = ~np.all(np.isnan(self._recent), axis=0)
            if seen.any():
                self._level[seen] = np.nanquantile(
                    self._recent[:, seen], self.config.floor_quantile, axis=0
                )

    def _hop_step(self, s: int, events: list[Event]) -> None:
        e = s + self._hop
        self._track_echo(s, e)
        everyone = list(range(self.channels))
        own, own_now, band_power = self._own(e)
        first = np.isnan(self._floor)
        if first.any():  # the very first hop: start the background model from it
            self._learn_background(self._band.get(s - self._order, e), first, first)
        sig = self._signal(s, e, everyone)
        power = np.mean(sig.white * sig.white, axis=0)
        noise = np.mean(sig.noise, axis=0)
        idle = np.array([st is _State.IDLE for st in self._state])
        if e <= self._warmup:  # learn the background before listening for speech
            self._excursion[:] = e
        elif idle.any():
            self._scan_idle(sig, s, idle, events)
        still_idle = np.array([st is _State.IDLE for st in self._state])
        # learn the background only from hops that are plainly background: idle, no bleed
        # being subtracted, not much above the floor
        unbled = np.array([not b for b in self._bleed])
        self._track_level(np.where(still_idle & unbled, power, np.nan))
        quiet = still_idle & unbled & (power < 4 * self._noise_floor())
        if quiet.any():
            self._learn_background(sig.residual, quiet, power < self._floor / 2)
            self._band_floor += np.where(
                quiet, self._floor_alpha * (band_power - self._band_floor), 0.0
            )
        loud = power > noise * self._active
        active = loud & (own_now > self._own_margin)
        held = loud & (own > self._own_margin)
        for ch in range(self.channels):
            state = self._state[ch]
            if state is _State.PENDING and e >= self._onset[ch] + self._confirm:
                self._decide(ch, events)
            elif state is _State.SPEECH:
                if active[ch]:
                    self._last_active[ch] = e
                if held[ch]:
                    self._own_hops[ch] += 1
                call = self._call_out_of_ring(ch, float(power[ch] / noise[ch]), e)
                quiet_for = e - self._last_active[ch]
                if call is not None:  # the knock ends where a call rises out of its ring
                    self._last_active[ch] = call
                    self._end(ch, events)
                    self._rescan(ch, call, events)
                elif quiet_for >= self._end_silence or (
                        0 <= quiet_for - self._knock_silence < self._hop and self._knocked(ch)):
                    self._end(ch, events)
                elif e - self._onset[ch] >= self._max_segment:
                    self._end(ch, events)  # a noise change, not a speech: relearn the floor
                    self._floor[ch] = np.nan
                    self._recent[:, ch] = np.nan
                    self._level[ch] = 0.0
                    self._learned[ch] = 0
        # a bleed path lives while its leader's mic is loud, and a tail after
        raw = self._whiten(self._band.get(s - self._order, e), self._lpc)
        loud = np.mean(raw * raw, axis=0) > self._noise_floor() * self._active
        for ch in range(self.channels):
            for b in self._bleed[ch]:
                if loud[b.leader]:
                    b.expires_sample = e + self._tail
            self._bleed[ch] = [b for b in self._bleed[ch] if b.expires_sample > e]

    def _own(self, e: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per mic: how far its sound in the hop ending at `e` exceeds the crosstalk expected
        from the other mics, as power ratios: against their held and their present power;
        and its band power.

        Close-talk geometry: a player's voice reaches their own mic several dB louder than any
        other, so what mic m hears of a player at mic c is c's band power times a steady
        coupling c→m. Mic m's sound is its own when it exceeds every other talking mic's power
        (an idle mic's sound is noise or the app's echo, which reach every mic alike) times its
        coupling by `own_margin_db` (`onset_own_margin_db` for an onset's first hops, which may
        be weak): this holds for a player who talks over someone else (their own mic is loud
        with them), not for the copy of that someone. The room keeps a copy ringing after its
        source has dropped, so the held ratio compares with the sources' power held at peaks
        and decaying at `crosstalk_decay_db_per_s` (it judges onsets and what an utterance
        was, logged per sample for :meth:`_decide`); the present one only keeps a player's
        utterance going (a second caller's words right after a loud one of the first).
        Each coupling is learned while its source is speaking, the loudest and well above its
        band floor, and m is idle; mics of different gains are learned as they are.
        """
        band = self._band.get(e - self._xt_len, e)
        p = np.einsum("nc,nc->c", band, band) / band.shape[0] + 1e-20
        self._band_floor = np.where(np.isnan(self._band_floor), p, self._band_floor)
        self._src_hold = np.maximum(p, self._src_hold * self._xt_decay)
        talking = np.array([st is not _State.IDLE for st in self._state])

        def over_crosstalk(source_power: np.ndarray) -> np.ndarray:
            crosstalk = self._coupling * np.where(talking, source_power, 0.0)[:, None]
            np.fill_diagonal(crosstalk, 0.0)
            return p / np.maximum(crosstalk.max(axis=0), 1e-30)

        held, now = over_crosstalk(self._src_hold), over_crosstalk(p)
        self._own_log.append(np.repeat(held[None, :].astype(np.float32), self._hop, axis=0))
        src = int(np.argmax(p))
        if self._state[src] is _State.SPEECH and p[src] > self._xt_learn_above * self._band_floor[src]:
            idle = ~talking
            idle[src] = False
            log_c = np.log(self._coupling[src, idle])
            log_c += self._xt_rate * (np.log(p[idle] / p[src]) - log_c)
            lo, hi = self._xt_range
            self._coupling[src, idle] = np.clip(np.exp(log_c), lo, hi)
        return held, now, p

    def _scan_idle(self, sig: _Sig, s: int, idle: np.ndarray, events: list[Event]) -> None:
        """Run the CUSUM of every idle channel over one hop; alarms become pending onsets."""
        c, m, began, alarm_at, alarm_began = _cusum(
            self._llr(sig), self._c, self._m, self.config.alarm_llr
        )
        prev = self._excursion
        self._c = np.where(idle, c, self._c)
        self._m = np.where(idle, m, self._m)
        self._excursion = np.where(idle & (began >= 0), s + began, prev)
        for ch in np.flatnonzero(idle & (alarm_at >= 0)):
            a = alarm_began[ch]
            self._start_pending(int(ch), s + int(a) if a >= 0 else int(prev[ch]), events)

    def _reset_cusum(self, ch: int, at: int) -> None:
        self._c[ch] = 0.0
        self._m[ch] = 0.0
        self._excursion[ch] = at

    # ------------------------------------------------------------------ decisions

    def _start_pending(self, ch: int, onset: int, events: list[Event]) -> None:
        self._state[ch] = _State.PENDING
        self._onset[ch] = onset
        if self._done >= onset + self._confirm:
            self._decide(ch, events)

    def _fit_bleed(self, ch: int, start: int, stop: int) -> tuple[float, list[_Bleed]]:
        """Fit mic `ch` over [start, stop) as a sum of delayed, filtered, quieter copies of
        other mics (several people may be talking into it at once).

        Sources are mics with speech detected (or pending) on them. The whole signal is fitted afresh (paths already in use are ignored), greedily, up to
        `max_bleed_paths` leaders: pick the mic and lag with the best normalised
        cross-correlation with what is still unexplained (among copies quieter than their
        source), then fit FIRs around the chosen lags jointly by least squares; a leader that
        adds little is dropped. Everything is whitened with `ch`'s background filter, so bands
        are weighed by their SNR. Returns the fraction of `ch`'s energy above its noise that
        the paths explain (so a faint copy in noise still counts as a copy) and the paths;
        (1, []) when nothing is above the noise.
        """
        own = self._signal(start, stop, [ch], unbleed=False)
        y = own.white[:, 0]
        excess = float(y @ y) - float(own.noise.sum())
        if excess <= 0:
            return 1.0, []  # nothing above the noise: nothing a new source would explain
        n, d_max, p = stop - start, self._max_delay, self._order
        half = self.config.bleed_fir_taps // 2
        lpc = np.repeat(self._lpc[ch : ch + 1], self.channels, axis=0)
        src = self._whiten(self._band.get(start - d_max - half - p, stop), lpc)
        # mic c delayed by lag L (0..d_max+half) is src[d_max + half - L :][:n, c]
        windows = np.lib.stride_tricks.sliding_window_view(src, n, axis=0)[::-1][: d_max + 1]
        energy = np.einsum("dcn,dcn->dc", windows, windows) + 1e-20
        # only a mic with speech on it, or a first onset about to be judged, can be a source
        silent = [c for c, st in enumerate(self._state) if st is _State.IDLE]
        chosen: list[tuple[int, int]] = []
        bases: list[np.ndarray] = []
        rest, explained, taps = y, 0.0, np.zeros(0)
        for _ in range(self.config.max_bleed_paths):
            cov = np.einsum("dcn,n->dc", windows, rest)
            rho2 = cov * cov / (energy * float(rest @ rest))
            rho2[:, [ch] + [c for c, _ in chosen] + silent] = 0.0
            rho2[cov * cov >= energy * energy] = 0.0  # a copy is quieter than its source
            best = float(rho2.max())
            if best <= 0:
                break
            # copies of one source all correlate with each other: of the lags that explain
            # nearly as well as the best, take the loudest mic, the source itself
            near = np.where(rho2 >= 0.9 * best, energy, -np.inf)
            d, leader = (int(i) for i in np.unravel_index(int(np.argmax(near)), near.shape))
            d0 = max(0, d - half)  # FIR lags d0..d0+2*half, column j is lag d0+j
            rows = [d_max + half - d0 - j for j in range(2 * half + 1)]
            basis = np.concatenate(
                bases + [np.stack([src[r : r + n, leader] for r in rows], axis=1)], axis=1
            )
            new_taps, *_ = np.linalg.lstsq(basis, y, rcond=None)
            fitted = basis @ new_taps
            gain = float(fitted @ fitted) / excess - explained
            if (chosen and gain < self.config.bleed_min_gain) or self._louder(basis, new_taps):
                break
            bases.append(basis[:, -len(rows) :])
            chosen.append((leader, d0))
            taps, explained, rest = new_taps, explained + gain, y - fitted
        # what the fit leaves above the noise, with a 2x margin, bounds what it will miss later
        e_fit = explained * excess
        missed = max(0.0, float(rest @ rest) - float(own.noise.sum()))
        leak = float(np.clip(2 * missed / max(e_fit, 1e-20), self._min_leak, self._max_leak))
        k = 2 * half + 1
        paths = [
            _Bleed(leader, taps[i * k : (i + 1) * k], d0, leak, stop + self._tail)
            for i, (leader, d0) in enumerate(chosen)
        ]
        return explained, paths

    def _louder(self, basis: np.ndarray, taps: np.ndarray) -> bool:
        """Whether any fitted path (a block of basis columns per leader) comes out louder than
        its leader's own signal: then it is no bleed, bleed is always quieter."""
        k = 2 * (self.config.bleed_fir_taps // 2) + 1
        for lo in range(0, basis.shape[1], k):
            block, t = basis[:, lo : lo + k], taps[lo : lo + k]
            out = block @ t
            if float(out @ out) >= float(np.max(np.einsum("nk,nk->k", block, block))):
                return True
        return False

    def _quieter_copy(self, ch: int, onset: int, stop: int) -> bool:
        """Whether the onset on `ch` is a reverberant copy of mics already speaking (the
        close-talk geometry: a copy arrives a few ms later and rises far less than the sound
        on the source's own mic, while a second caller's onset rises on their own mic about
        as much as anything the first caller's ongoing speech does on theirs).

        The rise is the band energy over the onset window minus that over as long a window
        just before; a source's is taken up to `copy_max_lag_ms` earlier (its largest). Sources
        are mics in speech, and pending onsets up to `copy_window_ms` earlier. A copy if `ch`
        rose by at most `copy_level_db` of a source's rise, `late_copy_level_db` for a source
        whose onset is older than `copy_window_ms` (mid-speech rises are smaller and noisier),
        or by at most `copy_over_coupling_db` more than the source's coupling into `ch` where
        that is lower: at a table whose mics are well apart (calibrated or learned crosstalk of
        -15 dB, say) a copy rises about 15 dB less than its source, and a second caller whose
        first sounds rise 11 dB less than the first caller's is no copy.
        Bleed from several talkers is a sum of copies each quieter than its source, so one of
        those rose more. Reflections defeat a short FIR fit, not this test."""
        sources = [
            m for m, st in enumerate(self._state)
            if m != ch and (st is _State.SPEECH or (
                st is _State.PENDING and onset - self._copy_window <= self._onset[m] < onset))
        ]
        if not sources:
            return False
        bin_, lags = self._envelope_bin, self._copy_lags
        n = max(1, (stop - onset + self._hop) // bin_)
        lo = onset - self._hop  # a hop of lead: the copy's own onset may be a little late
        span = self._band.get(lo - (n + lags) * bin_, lo + n * bin_)[:, [ch] + sources]
        env = (span * span).reshape(-1, bin_, 1 + len(sources)).sum(axis=1)
        acc = np.concatenate([np.zeros((1, env.shape[1])), np.cumsum(env, axis=0)])
        # rise at lag d (bins): window after [lags - d + n, lags - d + 2n) minus before
        d = np.arange(lags + 1)
        after_end, mid = 2 * n + lags - d, n + lags - d
        rise = (acc[after_end] - acc[mid]) - (acc[mid] - acc[mid - n])  # (lags+1, 1+sources)
        recent = np.array([self._onset[m] >= onset - self._copy_window for m in sources])
        ratio = np.minimum(np.where(recent, self._copy_ratio, self._late_copy_ratio),
                           self._copy_over_coupling * self._coupling[sources, ch])
        return bool(np.any(rise[0, 0] <= ratio * np.max(rise[:, 1:], axis=0)))

    def _misfit(self, ch: int, onset: int, stop: int) -> bool:
        """Whether an onset found while bleed is being removed is only that removal falling
        short: what is left above the noise is far weaker than what was removed (a new
        speaker on their own mic is louder than the bleed they talk over)."""
        if not self._bleed[ch]:
            return False
        sig = self._signal(onset, stop, [ch])
        left = float(np.sum(sig.white**2)) - float(self._noise_floor()[ch] * (stop - onset))
        return left < self._new_source * float(np.sum(sig.removed**2))

    def _decide(self, ch: int, events: list[Event]) -> None:
        """Attribute a pending onset: a copy of other mics (re-scan the residual) or speech."""
        onset = self._onset[ch]
        lead = min(self._hop, onset)
        stop = min(self._done, onset + self._confirm)
        # a plainly quieter copy is judged without a fit; it is fitted (for its paths, to
        # remove) only when none are being removed yet: the cheap test first, bleed is common
        quieter = self._quieter_copy(ch, onset, stop)
        spans = sorted({min(self._fit, stop - onset), stop - onset} - {0})
        fits = [
            self._fit_bleed(ch, onset - lead, onset + span)
            for span in (spans[-1:] if quieter and not self._bleed[ch] else [] if quieter else spans)
        ]
        copies = [quieter or explained >= self.config.bleed_explained for explained, _ in fits]
        # First onset: a copy if either window is (the first few ms alone may be a copy with
        # the mic's own speaker starting later: the re-scan finds them). An onset found while
        # copies are already being removed must be a copy in both windows.
        judged_copy = bool(copies) and (all(copies) if self._bleed[ch] else any(copies))
        crosstalk = not np.any(self._own_log.get(onset, stop)[:, ch] > self._onset_own_margin)
        if quieter or judged_copy or crosstalk or self._misfit(ch, onset, stop):
            self.rejected_bleed += 1
            self._state[ch] = _State.IDLE
            fitted = [paths for (_, paths), copy in zip(fits, copies) if copy and paths]
            if fitted:
                self._bleed[ch] = fitted[-1]  # the freshest, longest fit replaces the old
            self._rescan(ch, onset + self._hop, events)
            return
        # sustained evidence in hop-sized chunks of [onset, stop): rejects clicks and thumps
        n_chunks = (stop - onset) // self._hop
        if n_chunks:
            sig = self._signal(onset, onset + n_chunks * self._hop, [ch])
            evidence = self._llr(sig)[:, 0].reshape(n_chunks, self._hop).sum(axis=1)
        if not n_chunks or int(np.sum(evidence > 0)) < self._min_active_hops:
            self._state[ch] = _State.IDLE
            self._rescan(ch, stop, events)
            return
        over = sig.white[:, 0] ** 2 / np.maximum(sig.noise[:, 0], 1e-30)
        self._ring[ch] = over.reshape(n_chunks, self._hop).mean(axis=1).tolist()
        self._state[ch] = _State.SPEECH
        self._last_active[ch] = stop
        self._own_hops[ch] = 0
        self._spans[ch].append([onset, -1])  # -1: still talking
        events.append(SpeechStart(ch, onset, onset / self.rate_hz, self._done))

    def _rescan(self, ch: int, start: int, events: list[Event]) -> None:
        """Restart the CUSUM of `ch` at `start` and replay it over audio already analysed."""
        self._reset_cusum(ch, start)
        if self._done <= start:
            return
        llr = self._llr(self._signal(start, self._done, [ch]))
        c, m, began, alarm_at, alarm_began = _cusum(
            llr, self._c[ch : ch + 1], self._m[ch : ch + 1], self.config.alarm_llr
        )
        if alarm_at[0] >= 0:
            self._start_pending(ch, start + max(0, int(alarm_began[0])), events)
            return
        self._c[ch], self._m[ch] = c[0], m[0]
        self._excursion[ch] = start + max(0, int(began[0]))

    def _end(self, ch: int, events: list[Event]) -> None:
        onset = self._onset[ch]
        end = max(self._last_active[ch], onset + 1)
        first = max(0, onset - self._pre_roll)
        mics = self._raw.get(first, min(self._done, end + self._post_roll))
        body = mics[onset - first : end - first, ch]
        level_db = 10 * math.log10(float(np.mean(body * body)) + 1e-12)
        own_ms = self._own_hops[ch] * self.config.hop_ms
        self._spans[ch][-1][1] = end
        audio = self._others_turned_down(ch, first, mics)
        seg = Segment(
            ch, onset, end, onset / self.rate_hz, end / self.rate_hz, level_db, first,
            self._outside_own_turned_down(ch, first, audio), own_ms / 1000,
            own_ms < self.config.min_own_ms,
        )
        events.append(SpeechEnd(seg))
        self._state[ch] = _State.IDLE
        self._reset_cusum(ch, self._done)

    def _call_out_of_ring(self, ch: int, power: float, e: int) -> int | None:
        """Where a call rises out of a knock's ring on `ch`, given the power over the floor of
        the hop ending at `e`; None while there is none. The utterance so far must be a knock
        ringing: its loudest sound in its first `knock_peak_ms`, fallen `cusum_ratio_db` within
        `knock_decay_ms` after it, none of it speech-like, not over `knock_ring_ms` long; and
        its last two hops `cusum_ratio_db` over the trough they rise from, at least
        `knock_silence_ms` after the peak (a plosive's burst and aspiration end sooner, and a
        call's first sound is its loudest only when it is one). The call begins at the trough
        its rise starts from."""
        ring = self._ring[ch]
        if ring is None:
            return None
        ring.append(power)
        p = np.asarray(ring)
        peak = int(np.argmax(p[: self._knock_peak_hops + 1]))
        decayed = peak + self._knock_decay_hops
        if len(p) > self._knock_ring_hops or p[:-2].max() > p[peak] or (
                len(p) > decayed and p[decayed] * self._gamma > p[peak]):
            self._ring[ch] = None  # not a knock: a call from its start, or a long noise
            return None
        if (len(p) - 2 - peak) * self._hop < self._knock_silence:
            return None
        low = len(p) - 3  # the trough the last hops rise from
        while low > peak and p[low - 1] <= p[low]:
            low -= 1
        if p[-2:].min() < self._gamma * p[low]:
            return None
        onset = self._onset[ch]
        speech = speech_like_frames(self._raw.get(onset, e)[:, ch])
        if int(speech.sum()) * SPEECH_FRAME >= self._knock_speech:
            self._ring[ch] = None
            return None
        return onset + low * self._hop

    def _knocked(self, ch: int) -> bool:
        """Whether the utterance on `ch` so far is a knock: its sound lasted no longer than
        `knock_ms`, less than `knock_speech_ms` of it speech-like
        (:func:`voice.audio.frames.speech_like_frames`)."""
        onset, last = self._onset[ch], self._last_active[ch]
        if last - onset > self._knock:
            return False
        speech = speech_like_frames(self._raw.get(onset, last)[:, ch])
        return int(speech.sum()) * SPEECH_FRAME < self._knock_speech

    def _others_turned_down(self, ch: int, first: int, mics: np.ndarray) -> np.ndarray:
        """Mic `ch`'s audio (`mics` from sample `first`) with the other players who talked
        meanwhile turned down (:func:`voice.hearing.crosstalk.suppress`), by their learned coupling."""
        n = mics.shape[0]
        talking = np.zeros((n, self.channels), bool)
        for c, spans in enumerate(self._spans):
            for onset, end in spans if c != ch else ():
                talking[max(0, onset - first) : n if end < 0 else max(0, end - first), c] = True
        others = np.flatnonzero(talking.any(axis=0))
        cfg = self.config
        return suppress(
            mics[:, ch], mics[:, others], self._coupling[others, ch], talking[:, others],
            oversubtract=cfg.crosstalk_oversubtract, floor_db=cfg.crosstalk_floor_db,
            decay_db_per_s=cfg.crosstalk_decay_db_per_s,
        )

    def _outside_own_turned_down(self, ch: int, first: int, audio: np.ndarray) -> np.ndarray:
        """`audio` (mic `ch` from sample `first`) turned down outside its own sound, give or
        take `own_span_keep_ms`, with hop-long ramps; unchanged when none of it was its own."""
        own = np.flatnonzero(self._own_log.get(first, first + audio.size)[:, ch] > self._own_margin)
        if own.size == 0:
            return audio
        gain = np.full(audio.size, self._not_own_gain)
        gain[max(0, own[0] - self._own_keep) : own[-1] + self._own_keep] = 1.0
        ramp = np.hanning(2 * self._hop + 1)
        gain = np.convolve(np.pad(gain, self._hop, mode="edge"), ramp / ramp.sum(), mode="valid")
        return (audio * gain).astype(np.float32)

    def _trim(self) -> None:
        keep = self._done - self.rate_hz  # a second of context for fits and re-scans
        for ch, state in enumerate(self._state):
            if state is not _State.IDLE:
                keep = min(keep, self._onset[ch] - self._pre_roll)
        keep -= self._max_delay + self.config.bleed_fir_taps + self._order
        self._raw.trim_before(keep)
        self._band.trim_before(keep)
        self._echo.trim_before(keep)
        self._echo_band.trim_before(keep)
        self._own_log.trim_before(keep)
        for spans in self._spans:  # in time order, only the last one still open
            while spans and 0 <= spans[0][1] <= keep:
                spans.pop(0)
