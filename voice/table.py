"""The table loop: audio frames in, refereed game events out — live or from a recording.

frames → onsets (bleed rejected) → recognition against the game's grammar →
arbitration on onsets → referee → events to print, narrate and journal.

The app's own voice: when the audio the app played is known (the narration
track of a recording, or what the announcer sends to the speaker), it rides
along as one more channel. The onset detector then treats the app like a
player whose voice bleeds into every microphone: its copies on the players'
mics are recognised as bleed and never reported, and a player who shouts over
it is still heard on the residual. Utterances attributed to that channel are
the app's own and are dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.core import Event
from voice.arbiter import Arbiter
from voice.audio import AudioFrame
from voice.onsets import OnsetDetector, SpeechEnd, SpeechStart
from voice.recognize import Hypothesis, Recognizer
from voice.referee import Referee


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


def with_reference(frames: Iterable[AudioFrame], reference: np.ndarray) -> Iterator[AudioFrame]:
    """Append the app's own output (16 kHz mono, aligned to the stream) as a last channel."""
    for frame in frames:
        start, n = frame.start_sample, frame.n_samples
        ref = np.zeros((n, 1), np.float32)
        chunk = reference[start : start + n]
        ref[: len(chunk), 0] = chunk
        yield AudioFrame(
            np.hstack([frame.samples, ref]), frame.rate_hz, frame.channels + 1,
            frame.start_sample, frame.t_s,
        )


class TableLoop:
    """Drives a :class:`Referee` from multichannel audio frames.

    Channel i is ``players[i]``; with ``app_channel`` the last channel carries
    the app's own output (see the module docstring).
    """

    def __init__(
        self,
        referee: Referee,
        recognizer: Recognizer,
        players: Sequence[str],
        *,
        app_channel: bool = False,
        tie_window_ms: float = 40.0,
    ) -> None:
        from voice.grammar import game_grammar

        self.referee = referee
        self.recognizer = recognizer
        self.players = tuple(players)
        self.app_mic = len(self.players) if app_channel else None
        self.grammar = game_grammar(referee.game.name, list(self.players))
        recognizer.prepare(self.grammar)
        self.detector = OnsetDetector(len(self.players) + (1 if app_channel else 0))
        self.arbiter = Arbiter(tie_window_ms)
        self._open: set[tuple[float, int]] = set()
        self.app_utterances = 0

    def feed(self, frame: AudioFrame) -> list[Heard | Event]:
        """Analyse one frame; return what was heard and what the game did, in time order."""
        return self._handle(self.detector.feed(frame))

    def finish(self) -> list[Heard | Event]:
        """End of the audio: settle everything still pending."""
        out = self._handle(self.detector.flush())
        self.arbiter.close()
        return out + self._handle([])

    def _handle(self, detected: Sequence[SpeechStart | SpeechEnd]) -> list[Heard | Event]:
        for event in detected:
            if isinstance(event, SpeechStart):
                self.arbiter.started(event.mic, event.onset_s)
                self._open.add((event.onset_s, event.mic))
            else:
                seg = event.segment
                hyp = (
                    Hypothesis.nothing() if seg.mic == self.app_mic
                    else self.recognizer.decode(seg.samples, self.grammar)
                )
                self.arbiter.recognised(seg.mic, seg.onset_s, (seg.end_s, hyp))
        self.arbiter.settle(self.detector.settled_s)
        out: list[Heard | Event] = []
        for u in self.arbiter.ready():
            self._open.discard((u.onset_s, u.mic))
            if u.mic == self.app_mic:
                self.app_utterances += 1
                continue
            end_s, hyp = u.result  # type: ignore[misc]
            player = self.players[u.mic]
            out.append(Heard(u.mic, player, u.onset_s, end_s, hyp.text, hyp.understood, hyp.confidence))
            if hyp.understood:
                out += self.referee.hear(u.onset_s, player, hyp.text)
        watermark = min([self.detector.settled_s, *(onset for onset, _ in self._open)])
        if watermark > self.referee.state.t:
            out += self.referee.tick(watermark)
        return out
