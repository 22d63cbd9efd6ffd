"""The voice pipeline: audio frames in, heard utterances out, released in onset order.

frames → the app's echo cancelled → onsets (bleed rejected) → recognition against the grammar
of the moment → arbitration on onsets. :class:`Pipeline` runs these stages for the live
table and ``replay`` (through :class:`voice.table.loop.TableLoop`), for ``orderup listen`` and
for the benchmark, so what the bench measures is the table's code.

The app's own voice (DESIGN principle 6): when the audio the app played is known (the
narration track of a recording, or what the announcer sends to the speaker), it rides along
as one more channel. An echo canceller (:mod:`voice.hearing.echo`) removes it from every
player's mic before onset detection, and tells the detector how much of it may be left, so a
player who shouts over the app is heard and the app is not. An utterance whose sound was
mostly the app's echo (before the canceller has learned the room, say) is the app's own and
is dropped.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from voice.audio.files import read_wav
from voice.audio.frames import MIN_SPEECH_MS, PIPELINE_RATE_HZ, AudioFrame, speech_like_ms
from voice.hearing.echo import EchoCanceller
from voice.hearing.onsets import OnsetConfig, OnsetDetector, Segment, SpeechEnd, SpeechStart
from voice.recognition.grammar import Grammar
from voice.recognition.interface import Hypothesis, Recognizer
from voice.table.arbiter import DEFAULT_TIE_WINDOW_MS, Arbiter
from voice.table.options import DEFAULT_JOIN_GAP_S
from voice.table.setup import TableSetup

Reference = Callable[[int, int], np.ndarray]
"""Reads the app's output for input samples [start, start + n): 16 kHz mono."""

APP_ECHO_SHARE = 0.5
"""An utterance whose sound was more than this share the app's echo is the app's own."""

KEEP_AUDIO_S = 30.0
"""How much of the players' recent audio the pipeline keeps, for the clips of calls."""

CALL_OVER_NOISE_DB = 10.0
"""At a calibrated table, an utterance whose loudest part is less than this far above its
mic's noise floor is background: calibration refuses a player whose name is heard less than
this far above it, the name's level measured the same way (`Segment.level_db`)."""


def recorded_reference(track: np.ndarray) -> Reference:
    """A reference read from a recorded track of what the app played (zeros past its end)."""

    def read(start: int, n: int) -> np.ndarray:
        out = np.zeros(n, np.float32)
        chunk = track[start : start + n]
        out[: len(chunk)] = chunk
        return out

    return read


def with_reference(frames: Iterable[AudioFrame], reference: Reference) -> Iterator[AudioFrame]:
    """Append the app's own output, aligned to the stream, as a last channel."""
    for frame in frames:
        ref = reference(frame.start_sample, frame.n_samples).reshape(-1, 1)
        yield AudioFrame(
            np.hstack([frame.samples, ref]), frame.rate_hz, frame.channels + 1,
            frame.start_sample, frame.t_s,
        )


def recorded_frames(frames: Iterable[AudioFrame], app_audio: str | None) -> Iterator[AudioFrame]:
    """A recording's frames, with the app's recorded playback (a file) as a last channel when
    there is one."""
    if app_audio is None:
        return iter(frames)
    return with_reference(frames, recorded_reference(read_wav(app_audio)[:, 0]))


class Ears:
    """The pipeline's front: the app's echo cancelled (when its playback rides along as the
    last channel), then onsets detected on the players' mics."""

    def __init__(
        self, players: int, app_channel: bool = False, calibration: TableSetup | None = None,
        onsets: OnsetConfig | None = None,
    ) -> None:
        setup = calibration or TableSetup((), ())
        self.detector = OnsetDetector(
            players, onsets,
            crosstalk_db=np.array(setup.crosstalk_db) if setup.crosstalk_db else None)
        self.echo = EchoCanceller(players) if app_channel else None
        self._noise_floor_db = np.array(setup.noise_floor_db) if setup.noise_floor_db else None

    @property
    def settled_s(self) -> float:
        return self.detector.settled_s

    def feed(self, frame: AudioFrame) -> list[SpeechStart | SpeechEnd]:
        if self.echo is None:
            return self.detector.feed(frame)
        mics = AudioFrame(frame.samples[:, :-1], frame.rate_hz, frame.channels - 1,
                          frame.start_sample, frame.t_s)
        cancelled = self.echo.process(mics, frame.samples[:, -1])
        return self.detector.feed(cancelled.frame, cancelled.residual)

    def flush(self) -> list[SpeechStart | SpeechEnd]:
        events: list[SpeechStart | SpeechEnd] = []
        if self.echo is not None:
            rest = self.echo.flush()
            events += self.detector.feed(rest.frame, rest.residual)
        return events + self.detector.flush()

    def is_app(self, segment: Segment) -> bool:
        """Whether a segment's sound was mostly the app's own echo."""
        return self.echo is not None and (
            self.echo.echo_share(segment.mic, segment.onset_sample, segment.end_sample)
            > APP_ECHO_SHARE
        )

    def is_background(self, segment: Segment) -> bool:
        """Whether a segment is no louder than the background calibration measured on its mic
        (within :data:`CALL_OVER_NOISE_DB`): the room's noise, not a call."""
        return self._noise_floor_db is not None and (
            segment.level_db < self._noise_floor_db[segment.mic] + CALL_OVER_NOISE_DB
        )

    @staticmethod
    def is_knock(segment: Segment) -> bool:
        """Whether a segment holds less speech-like sound than a call
        (:data:`~voice.audio.frames.MIN_SPEECH_MS`): a knock of cutlery, a thump, a click."""
        return speech_like_ms(segment.samples) < MIN_SPEECH_MS

    def is_other(self, segment: Segment) -> bool:
        """Whether a segment was not its player's call: another player's voice heard on that
        mic (crosstalk) or background too faint to tell, the app's own voice, or no speech
        at all (a knock)."""
        return (segment.not_own or self.is_background(segment) or self.is_app(segment)
                or self.is_knock(segment))


@dataclass(frozen=True, eq=False)
class Heard:
    """One utterance the table heard: who (by mic), when, what and how sure, the audio that was
    decoded, when its end was detected (stream time) and how long its decoding took. The one
    record the pipeline keeps of an utterance, from its end to its verdict."""

    mic: int
    player: str
    onset_s: float
    end_s: float
    hypothesis: Hypothesis
    onset_sample: int
    end_sample: int
    samples: np.ndarray
    delivered_s: float
    decode_ms: float

    @property
    def text(self) -> str:
        return self.hypothesis.text

    @property
    def understood(self) -> bool:
        return self.hypothesis.understood

    @property
    def confidence(self) -> float:
        return self.hypothesis.confidence

    def to_json(self) -> dict[str, Any]:
        return {
            "type": "heard", "mic": self.mic, "player": self.player,
            "onset_s": round(self.onset_s, 4), "end_s": round(self.end_s, 4), "text": self.text,
            "understood": self.understood, "confidence": round(self.confidence, 3),
        }


GrammarAt = Callable[[int, float], Grammar | None]
"""What the player on mic ``m`` may say at onset ``t`` s: their grammar of the moment, or None
when the rules let them say nothing."""


@dataclass(frozen=True)
class _Partial:
    """The first part of a phrase, decoded: what was heard, with which grammar, in how long."""

    hypothesis: Hypothesis
    grammar: Grammar
    decode_ms: float


@dataclass(frozen=True, eq=False)
class _Ended:
    """An utterance heard to its end and not decoded yet, or (``partial``) decoded as the
    first part of an unfinished phrase waiting for its continuation on the same mic."""

    segment: Segment
    delivered_s: float
    partial: _Partial | None = None


class Pipeline:
    """Runs the pipeline's stages over multichannel frames (channel i is ``players[i]``; with
    ``app_channel`` a last channel carries the app's own output).

    Utterances are decoded in onset order, each with ``grammar_at`` asked only once every
    earlier utterance has been released, so the grammar of the moment may depend on what the
    released ones did. :meth:`feed` and :meth:`finish` yield the released utterances, a batch
    each time the arbiter may release more (empty batches too: the caller may let a game clock
    run on to :meth:`watermark_s`); iterate each to its end before feeding the next frame.

    ``calibration`` is the table's set-up from ``orderup calibrate`` (players in channel
    order): the onset detector starts from its crosstalk instead of a guess (see
    :class:`OnsetDetector`), and what is no louder than its mic's measured noise is not a call
    (:meth:`Ears.is_background`). A pause inside an unfinished phrase up to ``join_gap_s`` does
    not cut it in two. ``onsets`` tunes the onset detector (its defaults when None).
    """

    def __init__(
        self,
        players: Sequence[str],
        recognizer: Recognizer,
        grammar_at: GrammarAt,
        *,
        app_channel: bool = False,
        calibration: TableSetup | None = None,
        tie_window_ms: float = DEFAULT_TIE_WINDOW_MS,
        join_gap_s: float = DEFAULT_JOIN_GAP_S,
        onsets: OnsetConfig | None = None,
    ) -> None:
        self.players = tuple(players)
        self.recognizer = recognizer
        self.grammar_at = grammar_at
        self.join_gap_s = join_gap_s
        self.ears = Ears(len(self.players), app_channel, calibration, onsets)
        self.arbiter: Arbiter[Heard] = Arbiter(tie_window_ms)
        self._ended: dict[tuple[float, int], _Ended] = {}  # by (onset_s, mic)
        self._now_s = 0.0
        self._recent: deque[AudioFrame] = deque()
        self._finished = False  # the audio has ended: unfinished phrases wait no more
        self.copies: deque[tuple[int, float, float]] = deque(maxlen=256)
        """The latest sounds heard on a mic as another player's: (mic, onset_s, end_s)."""

    @property
    def settled_s(self) -> float:
        """No utterance with an onset before this is still to be heard."""
        return self.ears.settled_s

    def watermark_s(self) -> float:
        """How far time is settled: no utterance before this is still to be released."""
        return min([self.settled_s, *(onset for onset, _ in self.arbiter.unreleased())])

    def feed(self, frame: AudioFrame) -> Iterator[list[Heard]]:
        """Analyse one frame; yield what it lets the arbiter release."""
        self._now_s = frame.end_sample / frame.rate_hz
        self._keep(frame)
        return self._step(self.ears.feed(frame))

    def audio(self, start_s: float, end_s: float) -> np.ndarray:
        """The players' mics between two stream times, (samples, players); zeros for what is
        not kept (older than :data:`KEEP_AUDIO_S`, or not heard yet)."""
        rate = self._recent[0].rate_hz if self._recent else PIPELINE_RATE_HZ
        start, stop = round(start_s * rate), round(end_s * rate)
        out = np.zeros((max(0, stop - start), len(self.players)), np.float32)
        for frame in self._recent:
            lo, hi = max(start, frame.start_sample), min(stop, frame.end_sample)
            if lo < hi:
                out[lo - start : hi - start] = frame.samples[lo - frame.start_sample :
                                                             hi - frame.start_sample]
        return out

    def _keep(self, frame: AudioFrame) -> None:
        mics = frame.samples[:, : len(self.players)].copy()
        self._recent.append(AudioFrame(mics, frame.rate_hz, mics.shape[1], frame.start_sample,
                                       frame.t_s))
        oldest = frame.end_sample - KEEP_AUDIO_S * frame.rate_hz
        while self._recent[0].end_sample < oldest:
            self._recent.popleft()

    def finish(self) -> Iterator[list[Heard]]:
        """End of the audio: yield everything still pending. Nothing more will be heard, so
        an unfinished phrase no longer waits for its rest: each is released as it is, those
        decoded here too."""
        detected = self.ears.flush()
        self.arbiter.close()
        self._finished = True
        yield from self._step(detected)

    def run(self, frames: Iterable[AudioFrame]) -> Iterator[Heard]:
        """Every utterance of a recording, in onset order."""
        for frame in frames:
            for batch in self.feed(frame):
                yield from batch
        for batch in self.finish():
            yield from batch

    def _step(self, detected: Sequence[SpeechStart | SpeechEnd]) -> Iterator[list[Heard]]:
        for event in detected:
            if isinstance(event, SpeechStart):
                self.arbiter.started(event.mic, event.onset_s)
            elif self.ears.is_other(event.segment):
                seg = event.segment
                if seg.not_own:
                    self.copies.append((seg.mic, seg.onset_s, seg.end_s))
                self.arbiter.recognised(seg.mic, seg.onset_s, None)
            else:
                self._ended[(event.segment.onset_s, event.segment.mic)] = _Ended(
                    event.segment, self._now_s)
        self.arbiter.settle(self.settled_s)
        while True:
            self._give_up_joining(float("inf") if self._finished else self.settled_s)
            yield [u.result for u in self.arbiter.ready() if u.result is not None]
            key = self._next_to_decode()
            if key is None:
                return
            self._recognise(self._ended.pop(key))

    def _take_partial(self, mic: int) -> tuple[_Ended, _Partial] | None:
        """The unfinished phrase waiting on ``mic`` for its continuation, if any, taken."""
        for key, ended in self._ended.items():
            if key[1] == mic and ended.partial is not None:
                del self._ended[key]
                return ended, ended.partial
        return None

    def _next_to_decode(self) -> tuple[float, int] | None:
        """The utterance to decode next, once it has ended: the earliest not decoded yet. After
        an unfinished phrase waiting for its continuation, only a continuation: a later call's
        grammar of the moment depends on that phrase ("favorite" may be called on the dessert
        a player is still naming), so it is decoded once the phrase is refereed."""
        partial = {k for k, e in self._ended.items() if e.partial}
        waiting = [key for key in self.arbiter.unresolved() if key not in partial]
        if partial and waiting and min(partial) < waiting[0]:
            waiting = [key for key in waiting if any(mic == key[1] for _, mic in partial)]
        if waiting and waiting[0] in self._ended:
            return waiting[0]
        return None

    def _decode(self, samples: np.ndarray, grammar: Grammar) -> tuple[Hypothesis, float]:
        start = time.perf_counter()
        hyp = self.recognizer.decode(samples, grammar)
        return hyp, (time.perf_counter() - start) * 1000

    def _heard(self, first: _Ended, last: _Ended, samples: np.ndarray, hyp: Hypothesis,
               decode_ms: float) -> None:
        seg, end = first.segment, last.segment
        self.arbiter.recognised(seg.mic, seg.onset_s, Heard(
            seg.mic, self.players[seg.mic], seg.onset_s, end.end_s, hyp, seg.onset_sample,
            end.end_sample, samples, last.delivered_s, decode_ms))

    def _recognise(self, ended: _Ended) -> None:
        """Decode a segment with its player's grammar of the moment; an unfinished phrase
        waits for its continuation on the same mic."""
        seg = ended.segment
        waiting = self._take_partial(seg.mic)
        if waiting is not None:
            first, part = waiting
            head = first.segment
            gap = seg.samples_start_sample - (head.samples_start_sample + head.samples.size)
            audio = np.concatenate([head.samples[: head.samples.size + min(0, gap)],  # overlap
                                    np.zeros(max(0, gap), np.float32), seg.samples])
            joined, ms = self._decode(audio, part.grammar)
            if joined.understood:
                self._heard(first, ended, audio, joined, ms)
                self.arbiter.recognised(seg.mic, seg.onset_s, None)
                return
            self._heard(first, first, head.samples, part.hypothesis, part.decode_ms)
        grammar = self.grammar_at(seg.mic, seg.onset_s)
        if grammar is None:  # the rules let this player say nothing now
            self._heard(ended, ended, seg.samples, Hypothesis.nothing(), 0.0)
            return
        hyp, ms = self._decode(seg.samples, grammar)
        words = hyp.text.split()
        # A grammar decoder finds no path at all through the first part of a phrase cut by a
        # pause ("brownie and"): nothing heard may be unfinished too.
        if not hyp.understood and (not words or grammar.unfinished(words)):
            self._ended[(seg.onset_s, seg.mic)] = _Ended(
                seg, ended.delivered_s, _Partial(hyp, grammar, ms))
        else:
            self._heard(ended, ended, seg.samples, hyp, ms)

    def _give_up_joining(self, now_s: float) -> None:
        """Give up waiting for the rest of a phrase after ``join_gap_s`` with nothing new begun
        on its mic that may continue it (a sound heard there as another player's, already
        settled, does not: the phrase would wait for it, and it for the phrase, for ever)."""
        for key, ended in list(self._ended.items()):
            if ended.partial is None:
                continue
            seg = ended.segment
            continuing = any(m == seg.mic and onset > seg.onset_s
                             for onset, m in self.arbiter.unresolved())
            if now_s > seg.end_s + self.join_gap_s and not continuing:
                del self._ended[key]
                self._heard(ended, ended, seg.samples, ended.partial.hypothesis,
                            ended.partial.decode_ms)

