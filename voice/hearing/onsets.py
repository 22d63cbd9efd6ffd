"""Per-microphone speech detection with sample-accurate onsets and bleed rejection, streaming.

Feed 16 kHz multichannel :class:`~voice.audio.frames.AudioFrame` objects to
:meth:`OnsetDetector.feed`; it returns :class:`SpeechStart` as soon as an utterance's onset is
known and attributed, and :class:`SpeechEnd` (carrying the :class:`Segment`) once it has ended.

Each microphone is a small state machine, stepped every `hop_ms` (vectorised over mics):

* *idle*: the change-point test runs on the mic's residual (its bleed removed); an alarm makes
  its onset *pending*. Nothing is looked for in the first `warmup_ms`, while the floor is
  learned from the room (a session always starts with some of it).
* *pending*: `confirm_ms` after the onset it is decided. A copy of other mics (bleed), or
  sound that was never the mic's own (crosstalk), is rejected, and the residual re-scanned
  from a hop later; an onset without `min_active_ms` of rising evidence is dropped; else the
  utterance is *speech* and its :class:`SpeechStart` is reported.
* *speech*: it ends after `end_silence_ms` without an active hop (`active_db` over the noise,
  whitened, or over its band floor, plain), sooner when it is a knock,
  where a call rises out of a knock's ring, or after `max_segment_ms` (a change in the noise,
  whose floor is learned again); its :class:`SpeechEnd` is reported, and the mic is idle. A
  call found after knocks that kept it going is split from them there, with a
  :class:`SpeechStart` of its own.

What each step decides lives in its own module, with its own state:

* :mod:`voice.hearing.background` — the high-pass, the whitening filter and noise floor of the
  quiet room, and the residual echo added to that floor;
* :mod:`voice.hearing.changepoint` — the CUSUM test: where an onset is, and whether it holds;
* :mod:`voice.hearing.bleed` — the copy tests, the bleed paths fitted and removed, and the
  residual detection runs on (the detector's known limits in telling copies from calls);
* :mod:`voice.hearing.coupling` — the seats' crosstalk couplings, which sound is a mic's own,
  and what of a segment's audio is turned down;
* :mod:`voice.hearing.follows` — over a whole utterance, whether it follows louder mics'
  sound (a copy);
* :mod:`voice.hearing.knocks` — a knock's short hangover, and a call out of its ring;
* :mod:`voice.hearing.history` — the sample-indexed buffers they share.

Every parameter is a field of :class:`OnsetConfig`. This module runs over 400 lines because
callers import the public types from here with the detector: :class:`OnsetConfig` (every
parameter, documented in one place), :class:`Segment`, :class:`SpeechStart`,
:class:`SpeechEnd`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from voice.audio.frames import (
    MIN_SPEECH_MS,
    PIPELINE_RATE_HZ,
    AudioFrame,
    AudioStreamError,
    loud_level_db,
)
from voice.hearing.background import Background, Highpass, ResidualEcho
from voice.hearing.bleed import Bleed, Residual
from voice.hearing.changepoint import ChangePoints
from voice.hearing.coupling import Coupling
from voice.hearing.follows import Follows
from voice.hearing.history import History, ms_samples
from voice.hearing.knocks import Knocks


@dataclass(frozen=True)
class OnsetConfig:
    """Tuning of :class:`OnsetDetector`; times in ms, levels in dB, evidence in nats.

    `whitening_range_db` caps how much the whitening filter may boost quiet bands;
    `floor_time_ms` is the background model's memory; nothing is detected in the first
    `warmup_ms`; the floor is at least the `floor_quantile` of the last `floor_window_ms` of
    background hops (refreshed every `level_update_ms`). The copy test compares band energy
    in `envelope_ms` bins (see :meth:`voice.hearing.bleed.Bleed.quieter_copy` for `copy_*`);
    residual echo decays at `echo_decay_db_per_s`. An onset must hold `min_active_ms` of
    rising evidence within `confirm_ms` (clicks do not). A hop is active when its whitened power
    is `active_db` over the noise, or its plain band power that far over its band floor while
    it beats the crosstalk held from the talking mics by `plain_own_margin_db` and no residual
    echo over the floor is expected in it. A path's expected miss is bounded by
    `bleed_leak_db` (min, max); an onset found while bleed is removed is a new source only if
    what is left exceeds `bleed_new_source_db` of what was removed. A source must add
    `bleed_min_gain` of explained energy to be kept in a fit. `max_segment_ms` ends a runaway
    utterance (a noise change). The `knock_*` fields say what a knock is and what its ring
    is, out of which a call may rise, and how long a start without speech-like sound makes an
    utterance knocks a call may be split from (see :mod:`voice.hearing.knocks`).

    Crosstalk (see :mod:`voice.hearing.coupling`): band power over `crosstalk_window_ms`, a
    source's held at peaks and decaying at `crosstalk_decay_db_per_s`; each
    pair's coupling starts at `crosstalk_initial_db`, stays within `crosstalk_range_db`, and is
    learned (time constant `crosstalk_learn_time_ms` of learning hops) while the source is
    `crosstalk_learn_above_db` over its band floor and the other mic is idle. A mic's sound is
    its own when it exceeds `own_margin_db` (`onset_own_margin_db` for an onset to stand) over
    every other mic's expected crosstalk, and, at a table of `shared_min_mics` mics or more,
    stands more than `shared_margin_db` further over its band floor than the quietest other
    mic does over its own, once the crosstalk each is expected to hear (of this one's
    player, of the players already talking) is taken from it (sound every mic hears alike,
    such as the next table's babble, is no one's own); an
    utterance with less than `min_own_ms` of its own sound (loud over the background and
    over crosstalk), or `follow_explained` or more of whose power in the
    `follow_bands_hz` bands the `follow_sources` louder mics explain (delayed, smeared by a
    decay of one of `follow_tails_ms`, quieter; over a `follow_floor_quantile` floor: see
    :mod:`voice.hearing.follows`), was not its player's call. A segment's audio more than
    `own_span_keep_ms` before its first or after its last own sound is turned down by
    `not_own_attenuation_db` (see :attr:`Segment.samples`). Before that,
    the voices of the other players talking meanwhile are turned down in it by spectral
    subtraction, `crosstalk_oversubtract` times their expected crosstalk, to no less than
    `crosstalk_floor_db` (:func:`voice.hearing.crosstalk.suppress`; an over-subtraction of 0
    leaves it).
    """

    hop_ms: float = 5.0
    end_silence_ms: float = 300.0
    knock_ms: float = 120.0
    knock_silence_ms: float = 80.0
    knock_speech_ms: float = MIN_SPEECH_MS
    knock_peak_ms: float = 10.0
    knock_decay_ms: float = 30.0
    knock_ring_ms: float = 600.0
    knock_lead_ms: float = 300.0
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
    plain_own_margin_db: float = 12.0
    onset_own_margin_db: float = 3.0
    min_own_ms: float = 80.0
    own_span_keep_ms: float = 30.0
    not_own_attenuation_db: float = 30.0
    crosstalk_oversubtract: float = 1.5
    crosstalk_floor_db: float = -10.0
    shared_min_mics: int = 3
    shared_margin_db: float = 3.0
    follow_bands_hz: tuple[float, ...] = (150.0, 400.0, 1000.0, 2000.0, 4000.0)
    follow_tails_ms: tuple[float, ...] = (30.0, 80.0, 200.0)
    follow_sources: int = 2
    follow_floor_quantile: float = 0.1
    follow_explained: float = 0.75

    @property
    def hop_samples(self) -> int:
        """`hop_ms` in samples at the pipeline's rate (at least one)."""
        return max(1, ms_samples(self.hop_ms))


@dataclass(frozen=True)
class Segment:
    """One attributed utterance on one mic; samples are at 16 kHz on that mic's clock.

    `samples` is the mic's audio from `samples_start_sample` (onset minus the pre-roll) to
    `end_sample` plus the post-roll (a recogniser needs the quiet around a word), turned down
    before the player's first and after their last own sound (:mod:`voice.hearing.coupling`):
    what is there is background or a neighbour still talking, whose words a recogniser would
    otherwise try to fit into this call or count against it as speech left over; `level_db`
    is how loud it is from onset to end where loudest, as calibration measures a name
    (:func:`~voice.audio.frames.loud_level_db`, dB full scale), before any turning down.
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
    """Whether too little of it was (:attr:`OnsetConfig.min_own_ms`), or it follows the sound
    of louder mics (:mod:`voice.hearing.follows`): another player's voice heard on this mic,
    or sound too faint to be told from the background; not a call."""

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



class OnsetDetector:
    """Streaming per-mic speech detector with bleed rejection (see the module docstring).

    Feed contiguous 16 kHz frames (any block size); each call returns the events completed by
    that frame. `settled_sample` says how far onsets are final: no onset earlier than it will
    be reported later (the arbiter's watermark). Call :meth:`flush` at the end of a stream.
    `crosstalk_db` [source][mic], calibrated, seeds the crosstalk couplings (else
    `crosstalk_initial_db`); they are learned on from it.
    """

    def __init__(
        self, channels: int, config: OnsetConfig | None = None,
        crosstalk_db: np.ndarray | None = None,
    ) -> None:
        if channels < 1:
            raise ValueError(f"channels must be at least 1, got {channels}")
        self.channels = channels
        self.config = cfg = config or OnsetConfig()
        self.rate_hz = PIPELINE_RATE_HZ
        self._hop = cfg.hop_samples
        self._end_silence = ms_samples(cfg.end_silence_ms)
        self._pre_roll = ms_samples(cfg.pre_roll_ms)
        self._post_roll = min(self._end_silence, ms_samples(cfg.post_roll_ms))
        self._confirm = ms_samples(cfg.confirm_ms)
        self._max_segment = ms_samples(cfg.max_segment_ms)
        self._warmup = ms_samples(cfg.warmup_ms)
        self._listen_from = np.full(channels, self._warmup)  # per mic: the end of its warm-up
        self._active = 10 ** (cfg.active_db / 10)
        self._highpass = Highpass(channels, cfg.highpass_hz)
        self._raw = History(channels)
        self._band = History(channels)  # the high-passed mics
        self._background = Background(channels, cfg)
        self._echo = ResidualEcho(channels, cfg, self._background)
        self._changes = ChangePoints(channels, cfg)
        self._bleed = Bleed(channels, cfg, self._band, self._background, self._echo)
        self._coupling = Coupling(channels, cfg, crosstalk_db)
        self._knocks = Knocks(channels, cfg)
        self._follows = Follows(cfg)
        self._done = 0  # absolute index: samples analysed so far (whole hops), i.e. "now"
        self._state = [_State.IDLE] * channels
        self._onset = [0] * channels
        self._last_active = [0] * channels
        self._own_at: list[list[int]] = [[] for _ in range(channels)]
        """Per mic: where each hop of its utterance that was its own ended."""
        self.rejected_bleed = 0
        """Onsets found to be copies of another mic and not reported."""

    # ------------------------------------------------------------------ public

    @property
    def settled_sample(self) -> int:
        """Every onset before this sample has been reported (or rejected) already."""
        marks = [self._done]
        for ch, state in enumerate(self._state):
            if state is _State.IDLE:
                marks.append(int(self._changes.excursion[ch]))
            elif state is _State.PENDING or self._knocks.may_split(ch):
                marks.append(self._onset[ch])  # pending, or a call may be split from its knocks
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
        x = frame.samples.astype(np.float32, copy=False)
        self._raw.append(x)
        self._band.append(self._highpass(x))
        if residual_echo is not None and residual_echo.shape != x.shape:
            raise AudioStreamError(
                f"residual_echo has shape {residual_echo.shape}, the frame {x.shape}"
            )
        self._echo.append(residual_echo, x)
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

    # ------------------------------------------------------------------ per hop

    def _llr(self, sig: Residual) -> np.ndarray:
        return self._changes.llr(sig.white, sig.noise)

    def _hop_step(self, s: int, events: list[Event]) -> None:
        e = s + self._hop
        self._echo.track(s, e)
        everyone = list(range(self.channels))
        talking = np.array([st is not _State.IDLE for st in self._state])
        speaking = [st is _State.SPEECH for st in self._state]
        own, own_now, band_power = self._coupling.own(self._band, e, talking, speaking)
        sounding = self._background.begin(self._band.get(s - self._background.order, e))
        self._listen_from[sounding] = s + self._warmup  # its first sound: warm up from there
        sig = self._bleed.residual(s, e, everyone)
        power = np.mean(sig.white * sig.white, axis=0)
        noise = np.mean(sig.noise, axis=0)
        idle = np.array([st is _State.IDLE for st in self._state])
        warming = e <= self._listen_from  # learn the background before listening for speech
        for mic in np.flatnonzero(warming):
            self._changes.reset(int(mic), e)
        if (idle & ~warming).any():
            for ch, onset in self._changes.scan(self._llr(sig), s, idle & ~warming):
                self._start_pending(ch, onset, events)
        # learn the background only from hops that are plainly background: idle, no bleed
        # being subtracted, not much above the floor
        still_idle = np.array([st is _State.IDLE for st in self._state])
        unbled = np.array([not b for b in self._bleed.paths])
        quiet = self._background.listen(sig.residual, power, still_idle & unbled)
        if quiet.any():
            self._coupling.learn_floor(quiet, band_power, self._background.floor_alpha)
        # loud on the whitened power, over the noise; or plainly loud, on the band power: a
        # filter that whitens babble (speech too) flattens a vowel heard over it as much as
        # the babble. Not where the app's echo may be left (the band floor does not hold it).
        echo_free = self._echo.level < self._background.noise_floor()
        plain = self._coupling.plainly_loud(band_power, self._active) & echo_free
        loud = (power > noise * self._active) | plain
        active, held = loud & own_now, loud & own
        for ch in range(self.channels):
            state = self._state[ch]
            if state is _State.PENDING and e >= self._onset[ch] + self._confirm:
                self._decide(ch, events)
            elif state is _State.SPEECH:
                self._speech_hop(ch, e, bool(active[ch]), bool(held[ch]),
                                 float(power[ch] / noise[ch]), events)
        bg = self._background
        raw = bg.whiten(self._band.get(s - bg.order, e), bg.lpc)
        self._bleed.keep_alive(e, np.mean(raw * raw, axis=0) > bg.noise_floor() * self._active)

    def _speech_hop(
        self, ch: int, e: int, active: bool, held: bool, power: float, events: list[Event]
    ) -> None:
        """One hop of an utterance on `ch`, ending at `e`: `active` (loud and its own, now),
        `held` (loud and its own against the crosstalk held from its neighbours), `power`
        over the noise. Decides whether and where it ends."""
        if active:
            self._last_active[ch] = e
        if held:
            self._own_at[ch].append(e)
        onset = self._onset[ch]
        self._knocks.hear_lead(ch, onset, e, self._raw)
        call = self._knocks.call_out_of_ring(ch, power, onset, e, self._raw)
        quiet_for = e - self._last_active[ch]
        if call is not None:  # the knock ends where a call rises out of its ring
            self._last_active[ch] = call
            self._end(ch, events)
            self._rescan(ch, call, events)
        elif quiet_for >= self._end_silence or self._knocks.ends(
                ch, onset, self._last_active[ch], quiet_for, self._raw):
            self._end(ch, events)
        elif e - onset >= self._max_segment:
            self._end(ch, events)  # a noise change, not a speech: relearn the floor
            self._background.forget(ch)

    # ------------------------------------------------------------------ decisions

    def _start_pending(self, ch: int, onset: int, events: list[Event]) -> None:
        self._state[ch] = _State.PENDING
        self._onset[ch] = onset
        if self._done >= onset + self._confirm:
            self._decide(ch, events)

    def _decide(self, ch: int, events: list[Event]) -> None:
        """Attribute a pending onset: a copy of other mics or crosstalk (re-scan the
        residual), too brief (re-scan after it), or speech."""
        onset = self._onset[ch]
        stop = min(self._done, onset + self._confirm)
        copy, paths = self._bleed.judge(
            ch, onset, stop, [st is _State.SPEECH for st in self._state],
            [st is _State.PENDING for st in self._state], self._onset, self._coupling.matrix,
        )
        crosstalk = not self._coupling.own_onset(ch, onset, stop)
        if copy or crosstalk or self._bleed.misfit(ch, onset, stop):
            self.rejected_bleed += 1
            self._state[ch] = _State.IDLE
            if paths:
                self._bleed.paths[ch] = paths  # the freshest, longest fit replaces the old
            self._rescan(ch, onset + self._hop, events)
            return
        # sustained evidence in hop-sized chunks of [onset, stop): rejects clicks and thumps
        n_chunks = (stop - onset) // self._hop
        sig = self._bleed.residual(onset, onset + n_chunks * self._hop, [ch]) if n_chunks else None
        if sig is None or not self._changes.sustained(self._llr(sig)[:, 0]):
            self._state[ch] = _State.IDLE
            self._rescan(ch, stop, events)
            return
        self._knocks.begin(ch, sig.white[:, 0], sig.noise[:, 0])
        self._state[ch] = _State.SPEECH
        self._last_active[ch] = stop
        self._own_at[ch] = []
        self._coupling.talk(ch, onset)
        events.append(SpeechStart(ch, onset, onset / self.rate_hz, self._done))

    def _rescan(self, ch: int, start: int, events: list[Event]) -> None:
        """Restart the change-point test of `ch` at `start` and replay it over audio already
        analysed."""
        self._changes.reset(ch, start)
        if self._done <= start:
            return
        llr = self._llr(self._bleed.residual(start, self._done, [ch]))
        onset = self._changes.replay(ch, start, llr)
        if onset is not None:
            self._start_pending(ch, onset, events)

    def _end(self, ch: int, events: list[Event]) -> None:
        """End the utterance on `ch`; a call after knocks that kept it going
        (:meth:`~voice.hearing.knocks.Knocks.call_after_knocks`) is an utterance of its own,
        the knocks before it another, ended where it begins."""
        onset = self._onset[ch]
        end = max(self._last_active[ch], onset + 1)
        call = self._knocks.call_after_knocks(ch, onset, end, self._raw, self._band)
        if call is not None:
            events.append(self._segment(ch, onset, call, call))
            self._coupling.talk(ch, call)
            events.append(SpeechStart(ch, call, call / self.rate_hz, self._done))
            onset = call
        events.append(self._segment(ch, onset, end, end + self._post_roll))
        self._state[ch] = _State.IDLE
        self._changes.reset(ch, self._done)

    def _segment(self, ch: int, onset: int, end: int, stop: int) -> SpeechEnd:
        """The utterance on `ch` from `onset` to `end`, its audio kept up to `stop`."""
        first = max(0, onset - self._pre_roll)
        mics = self._raw.get(first, min(self._done, stop))
        level_db = loud_level_db(mics[onset - first : end - first, ch])
        own_ms = sum(onset < at <= end for at in self._own_at[ch]) * self.config.hop_ms
        not_own = own_ms < self.config.min_own_ms or (
            self._follows.explained(mics[: end - first], ch, onset - first)
            >= self.config.follow_explained
        )
        return SpeechEnd(Segment(
            ch, onset, end, onset / self.rate_hz, end / self.rate_hz, level_db, first,
            self._coupling.segment_audio(ch, end, first, mics), own_ms / 1000, not_own,
        ))

    def _trim(self) -> None:
        keep = self._done - self.rate_hz  # a second of context for fits and re-scans
        for ch, state in enumerate(self._state):
            if state is not _State.IDLE:
                keep = min(keep, self._onset[ch] - self._pre_roll)
        keep -= self._bleed.max_delay + self.config.bleed_fir_taps + self._background.order
        self._raw.trim_before(keep)
        self._band.trim_before(keep)
        self._echo.trim_before(keep)
        self._coupling.trim_before(keep)
