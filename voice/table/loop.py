"""The table loop: audio frames in, refereed game events out — live or from a recording.

frames → onsets (bleed rejected) → recognition against the game's grammar →
arbitration on onsets → referee → events to print, narrate and journal.

The app's own voice (DESIGN principle 6): when the audio the app played is
known (the narration track of a recording, or what the announcer sends to the
speaker), it rides along as one more channel. An echo canceller
(:mod:`voice.hearing.echo`) removes it from every player's mic before onset detection,
and tells the detector how much of it may be left, so a player who shouts over
the app is heard and the app is not. An utterance whose sound was mostly the
app's echo (before the canceller has learned the room, say) is the app's own
and is dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from engine.core import Event
from voice.audio.frames import AudioFrame
from voice.hearing.echo import EchoCanceller
from voice.hearing.onsets import OnsetDetector, Segment, SpeechEnd, SpeechStart
from voice.recognition.grammar import Grammar, NothingToSay, game_grammar
from voice.recognition.interface import Hypothesis, Recognizer
from voice.table.arbiter import Arbiter, Utterance
from voice.table.referee import Referee
from voice.table.setup import TableSetup


@dataclass(frozen=True)
class Heard:
    """One utterance the table heard: who (by mic), when, what, and how sure."""

    mic: int
    player: str
    onset_s: float
    end_s: float
    text: str
    understood: bool
    confidence: float

    def to_json(self) -> dict[str, Any]:
        return {
            "type": "heard", "mic": self.mic, "player": self.player,
            "onset_s": round(self.onset_s, 4), "end_s": round(self.end_s, 4), "text": self.text,
            "understood": self.understood, "confidence": round(self.confidence, 3),
        }


Reference = Callable[[int, int], np.ndarray]
"""Reads the app's output for input samples [start, start + n): 16 kHz mono."""

JOIN_GAP_S = 1.2
"""A pause inside an unfinished phrase ("brownie and … whipped cream") up to this long does not
cut it in two: the parts are decoded together."""

APP_ECHO_SHARE = 0.5
"""An utterance whose sound was more than this share the app's echo is the app's own."""

CALL_OVER_NOISE_DB = 10.0
"""At a calibrated table, an utterance less than this far above its mic's noise floor is
background: calibration refuses a player heard less than this far above it."""


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


class Ears:
    """The pipeline's front: the app's echo cancelled (when its playback rides along as the
    last channel), then onsets detected on the players' mics. Shared by the table loop,
    ``orderup listen`` and the benchmark, so they all measure the same code."""

    def __init__(
        self, players: int, app_channel: bool = False, calibration: TableSetup | None = None
    ) -> None:
        setup = calibration or TableSetup((), ())
        self.detector = OnsetDetector(
            players, crosstalk_db=np.array(setup.crosstalk_db) if setup.crosstalk_db else None)
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

    def is_other(self, segment: Segment) -> bool:
        """Whether a segment was not its player's call: another player's voice heard on that
        mic (crosstalk) or background too faint to tell, or the app's own voice."""
        return segment.not_own or self.is_background(segment) or self.is_app(segment)


class TableLoop:
    """Drives a :class:`Referee` from multichannel audio frames.

    Channel i is ``players[i]``; with ``app_channel`` the last channel carries
    the app's own output (see the module docstring). ``calibration`` is the table's set-up
    from ``orderup calibrate`` (players in channel order): the onset detector starts from its
    crosstalk (how much lower player i is heard on player j's mic than on their own) instead
    of a guess (see :class:`OnsetDetector`), and what is no louder than its mic's measured
    noise is not a call (:meth:`Ears.is_background`).
    """

    def __init__(
        self,
        referee: Referee,
        recognizer: Recognizer,
        players: Sequence[str],
        *,
        app_channel: bool = False,
        tie_window_ms: float = 40.0,
        calibration: TableSetup | None = None,
    ) -> None:
        self.referee = referee
        self.recognizer = recognizer
        self.players = tuple(players)
        self._prepare()
        self.ears = Ears(len(self.players), app_channel, calibration)
        self.arbiter = Arbiter(tie_window_ms)
        self._open: set[tuple[float, int]] = set()
        self._pauses: list[list[float]] = []  # [start_s, end_s], end = inf while paused
        self._held: dict[int, tuple[Segment, Hypothesis, Grammar]] = {}  # unfinished, by mic
        self._ended: dict[tuple[float, int], Segment] = {}  # heard, not yet decoded

    @property
    def paused(self) -> bool:
        return bool(self._pauses) and self._pauses[-1][1] == float("inf")

    def pause(self, t_s: float) -> None:
        """Stop the game clock at ``t_s``: calls while paused are shown but not refereed."""
        if not self.paused:
            self._pauses.append([t_s, float("inf")])

    def resume(self, t_s: float) -> None:
        if self.paused:
            self._pauses[-1][1] = t_s

    def game_time(self, t_s: float) -> float | None:
        """Audio time to game time (pauses taken out); None inside a pause."""
        paused = 0.0
        for start, end in self._pauses:
            if start <= t_s < end:
                return None
            if end <= t_s:
                paused += end - start
        return t_s - paused

    def feed(self, frame: AudioFrame) -> list[Heard | Event]:
        """Analyse one frame; return what was heard and what the game did, in time order."""
        return self._handle(self.ears.feed(frame))

    def finish(self) -> list[Heard | Event]:
        """End of the audio: settle everything still pending."""
        out = self._handle(self.ears.flush())
        self._release_held(float("inf"))
        self.arbiter.close()
        return out + self._handle([])

    def _handle(self, detected: Sequence[SpeechStart | SpeechEnd]) -> list[Heard | Event]:
        """Utterances are decoded in onset order, each once every earlier one has been
        refereed: the grammar of the moment for the state it was said in."""
        for event in detected:
            if isinstance(event, SpeechStart):
                self.arbiter.started(event.mic, event.onset_s)
                self._open.add((event.onset_s, event.mic))
            elif self.ears.is_other(event.segment):
                self.arbiter.recognised(event.segment.mic, event.segment.onset_s, None)
            else:
                self._ended[(event.segment.onset_s, event.segment.mic)] = event.segment
        self._release_held(self.ears.settled_s)
        self.arbiter.settle(self.ears.settled_s)
        out: list[Heard | Event] = []
        while True:
            out += self._referee(self.arbiter.ready())
            key = self._next_to_decode()
            if key is None:
                return out
            self._recognise(self._ended.pop(key))

    def _next_to_decode(self) -> tuple[float, int] | None:
        """The utterance to decode next, once it has ended: the earliest not decoded yet. After
        an unfinished phrase waiting for its continuation (``_held``), only a continuation: a
        later call's grammar of the moment depends on that phrase ("favorite" may be called on
        the dessert a player is still naming), so it is decoded once the phrase is refereed."""
        held = {(seg.onset_s, seg.mic) for seg, *_ in self._held.values()}
        waiting = [key for key in self.arbiter.unresolved() if key not in held]
        if held and waiting and min(held) < waiting[0]:
            waiting = [key for key in waiting if key[1] in self._held]
        return waiting[0] if waiting and waiting[0] in self._ended else None

    def _referee(self, ready: Sequence[Utterance]) -> list[Heard | Event]:
        """Hear released utterances, then let the game clock run to what is settled."""
        out: list[Heard | Event] = []
        for u in ready:
            self._open.discard((u.onset_s, u.mic))
            if u.result is None:  # not a call (see Ears.is_other), or a joined phrase's tail
                continue
            end_s, hyp = cast(tuple[float, Hypothesis], u.result)
            player = self.players[u.mic]
            out.append(Heard(u.mic, player, u.onset_s, end_s, hyp.text, hyp.understood, hyp.confidence))
            game_t = self.game_time(u.onset_s)
            if game_t is not None:
                out += (self.referee.hear if hyp.understood else self.referee.not_understood)(
                    game_t, player, hyp.text)
        watermark = self.game_time(min([self.ears.settled_s, *(onset for onset, _ in self._open)]))
        if watermark is not None and watermark > self.referee.state.t:
            out += self.referee.tick(watermark)
        if any(isinstance(item, Event) for item in out):  # the game moved
            self._prepare()
        return out

    def _recognise(self, seg: Segment) -> None:
        """Decode a segment with its player's grammar of the moment; an unfinished phrase
        waits for its continuation on the same mic."""
        held = self._held.pop(seg.mic, None)
        if held is not None:
            first, first_hyp, first_grammar = held
            gap = seg.samples_start_sample - (first.samples_start_sample + first.samples.size)
            head = first.samples[: first.samples.size + min(0, gap)]  # the rolls may overlap
            joined = self.recognizer.decode(
                np.concatenate([head, np.zeros(max(0, gap), np.float32), seg.samples]),
                first_grammar,
            )
            if joined.understood:
                self.arbiter.recognised(first.mic, first.onset_s, (seg.end_s, joined))
                self.arbiter.recognised(seg.mic, seg.onset_s, None)
                return
            self.arbiter.recognised(first.mic, first.onset_s, (first.end_s, first_hyp))
        grammar = self._grammar_at(seg)
        if grammar is None:  # the rules let this player say nothing now
            self.arbiter.recognised(seg.mic, seg.onset_s, (seg.end_s, Hypothesis.nothing()))
            return
        hyp = self.recognizer.decode(seg.samples, grammar)
        words = hyp.text.split()
        # A grammar decoder finds no path at all through the first part of a phrase cut by a
        # pause ("brownie and"): nothing heard may be unfinished too.
        if not hyp.understood and (not words or grammar.unfinished(words)):
            self._held[seg.mic] = (seg, hyp, grammar)
        else:
            self.arbiter.recognised(seg.mic, seg.onset_s, (seg.end_s, hyp))

    def _release_held(self, now_s: float) -> None:
        """Give up waiting for the rest of a phrase after JOIN_GAP_S with nothing new begun."""
        for mic, (seg, hyp, _) in list(self._held.items()):
            continuing = any(m == mic and onset > seg.onset_s for onset, m in self._open)
            if now_s > seg.end_s + JOIN_GAP_S and not continuing:
                del self._held[mic]
                self.arbiter.recognised(mic, seg.onset_s, (seg.end_s, hyp))

    def _grammar_at(self, seg: Segment) -> Grammar | None:
        """What the segment's player may say at its onset: the game with the timers due by
        then run on (on a copy: calls said before it may not be refereed yet)."""
        game_t = self.game_time(seg.onset_s)
        state = self.referee.state
        return self._grammar(state if game_t is None else state.at(game_t), self.players[seg.mic])

    def _grammar(self, state: Any, player: str) -> Grammar | None:
        """The grammar of the moment for ``player``; None when they may say nothing."""
        try:
            return game_grammar(self.referee.game.name, self.players, state, player)
        except NothingToSay:
            return None

    def _prepare(self) -> None:
        """Each player's grammar of the moment, built ahead of their calls."""
        for player in self.players:
            grammar = self._grammar(self.referee.state, player)
            if grammar is not None:
                self.recognizer.prepare(grammar)
