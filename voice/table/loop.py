"""The table loop: audio frames in, refereed game events out — live or from a recording.

The :class:`voice.table.pipeline.Pipeline` hears the utterances (onsets, recognition with
each player's grammar of the moment, arbitration on onsets); the table loop referees what it
releases, runs the game clock on to what is settled, and keeps the clock still while the table
is paused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engine.core import Event
from voice.audio.frames import AudioFrame
from voice.recognition.grammar import Grammar, NothingToSay, game_grammar
from voice.recognition.interface import Recognizer
from voice.table.arbiter import DEFAULT_TIE_WINDOW_MS
from voice.table.clips import LEAD_S, TAIL_S, Clip, ClipStore
from voice.table.options import DEFAULT_JOIN_GAP_S
from voice.table.pipeline import Heard, Pipeline
from voice.table.referee import Referee
from voice.table.setup import TableSetup


class TableLoop:
    """Drives a :class:`Referee` from multichannel audio frames.

    Channel i is ``players[i]``; with ``app_channel`` the last channel carries the app's own
    output, and ``calibration`` is the table's set-up from ``orderup calibrate`` (see
    :class:`voice.table.pipeline.Pipeline`). With ``clips``, the sound of every understood
    call is kept there and named in the journal (:mod:`voice.table.clips`); ``heard`` are the
    journal's records of a resumed game's calls.

    A resumed game (``resume``) goes on from its state's clock: ``"live"``, the new audio
    starts where the game's clock stands (timers keep their deadlines); ``"recording"``, the
    recording is heard again from its start and the calls up to that clock or the last of
    ``heard``, refereed already, are not refereed twice.
    """

    def __init__(
        self,
        referee: Referee,
        recognizer: Recognizer,
        players: Sequence[str],
        *,
        app_channel: bool = False,
        tie_window_ms: float = DEFAULT_TIE_WINDOW_MS,
        join_gap_s: float = DEFAULT_JOIN_GAP_S,
        calibration: TableSetup | None = None,
        clips: ClipStore | None = None,
        heard: Sequence[Mapping[str, Any]] = (),
        resume: str | None = None,
    ) -> None:
        self.referee = referee
        self.clips = clips
        self.calls: list[Mapping[str, Any]] = [h for h in heard if "clip" in h]
        """The understood calls whose sound is kept, as journaled (for disputes)."""
        self.recognizer = recognizer
        self.players = tuple(players)
        self._prepare()
        self.pipeline = Pipeline(self.players, recognizer, self._grammar_at,
                                 app_channel=app_channel, calibration=calibration,
                                 tie_window_ms=tie_window_ms, join_gap_s=join_gap_s)
        self._pauses: list[list[float]] = []  # [start_s, end_s], end = inf while paused
        if resume not in (None, "live", "recording"):
            raise ValueError(f"resume is 'live' or 'recording', not {resume!r}")
        self._offset_s = referee.state.t if resume == "live" else 0.0
        last_heard = max((float(h["onset_s"]) for h in heard), default=referee.state.t)
        self._refereed_until_s = (max(referee.state.t, last_heard) if resume == "recording"
                                  else float("-inf"))

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
        """Audio time to game time (pauses taken out, a resumed live game's clock added);
        None inside a pause."""
        paused = 0.0
        for start, end in self._pauses:
            if start <= t_s < end:
                return None
            if end <= t_s:
                paused += end - start
        return t_s - paused + self._offset_s

    def feed(self, frame: AudioFrame) -> list[Heard | Event]:
        """Analyse one frame; return what was heard and what the game did, in time order."""
        return [item for batch in self.pipeline.feed(frame) for item in self._referee(batch)]

    def finish(self) -> list[Heard | Event]:
        """End of the audio: settle everything still pending."""
        return [item for batch in self.pipeline.finish() for item in self._referee(batch)]

    def _referee(self, released: Sequence[Heard]) -> list[Heard | Event]:
        """Hear released utterances, then let the game clock run to what is settled."""
        out: list[Heard | Event] = []
        for heard in released:
            game_t = self.game_time(heard.onset_s)
            if game_t is not None and game_t <= self._refereed_until_s:
                continue  # refereed before the game was resumed
            out.append(heard)
            if game_t is None:
                continue
            if heard.understood:
                sound = self._sound(heard)
                out += self.referee.hear(game_t, heard.player, heard.text, sound)
                if sound is not None:
                    self.calls.append({"onset_s": game_t, "player": heard.player,
                                       "text": heard.text, **sound})
            else:
                out += self.referee.not_understood(game_t, heard.player, heard.text)
        watermark = self.game_time(self.pipeline.watermark_s())
        if watermark is not None and watermark > self.referee.state.t:
            out += self.referee.tick(watermark)
        if any(isinstance(item, Event) for item in out):  # the game moved
            self._prepare()
        return out

    def _sound(self, heard: Heard) -> dict[str, Any] | None:
        """The journal's record of a call's sound: its mic, onset and end on the audio's clock,
        the copies heard on other mics around it, and its clip."""
        if self.clips is None:
            return None
        start, end = heard.onset_s - LEAD_S, heard.end_s + TAIL_S
        clip = self.clips.save(Clip(self.pipeline.audio(start, end), start))
        if clip is None:
            return None
        copies = [[m, round(a, 4), round(b, 4)] for m, a, b in self.pipeline.copies
                  if a < end and b > start]
        return {"mic": heard.mic, "at_s": round(heard.onset_s, 4), "end_s": round(heard.end_s, 4),
                "copies": copies, "clip": clip}

    def _grammar_at(self, mic: int, onset_s: float) -> Grammar | None:
        """What the player on ``mic`` may say at ``onset_s``: the game with the timers due by
        then run on (on a copy: calls said before it may not be refereed yet)."""
        game_t = self.game_time(onset_s)
        state = self.referee.state
        return self._grammar(state if game_t is None else state.at(game_t), self.players[mic])

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
