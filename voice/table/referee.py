"""The referee: heard utterances in, game events out.

The same driver serves a transcript, a recording and the live table: each
utterance (onset, player, text) first lets the game clock run to its onset,
then is parsed into an action and applied. Words that are not a phrase of the
game, or actions the rules refuse, change nothing and come back as events; a
player the game waits for (a serve, an answer) is asked to say it again.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from engine.core import ConfigError, Event, GameState, IllegalAction, replay
from voice.recognition.intents import AmbiguousUtterance, UnparseableUtterance
from voice.table.games import GameBinding
from voice.table.journal import Journal, Setup
from voice.table.options import Options
from voice.table.transcript import Transcript, Utterance


def game_setup(
    game: GameBinding, options: Options, transcript: Transcript | None = None, *,
    players: Sequence[str] | None = None, seed: int | None = None,
    stacks: Mapping[str, tuple[str, ...]] | None = None,
) -> Setup:
    """The game ``options`` describe, with the players, seed and stacked decks given (those
    missing from a ``transcript``'s directives; seed 0 when neither has one).

    Raises :class:`ConfigError` naming what is missing or wrong.
    """
    stacked = {**(transcript.stacks if transcript else {}), **(stacks or {})}
    seated = players or (transcript.players if transcript else None)
    if not seated:
        where = " or an '@players' line in the transcript" if transcript else ""
        raise ConfigError(f"no players: give --players A,B,C{where}")
    if seed is None:
        seed = (transcript.seed if transcript else None) or 0
    unknown = set(stacked) - set(game.decks)
    if unknown:
        raise ConfigError(
            f"{game.title} has no deck {', '.join(sorted(unknown))}; stackable: {', '.join(game.decks)}"
        )
    return Setup(game.name, tuple(seated), stacked, options, seed)


class Referee:
    """Drives one game from utterances, journaling every step when given a journal."""

    def __init__(self, game: GameBinding, state: GameState[Any], journal: Journal | None = None) -> None:
        self.game = game
        self.state = state
        self.journal = journal
        self._recorded = len(state.history)

    @classmethod
    def start(cls, setup: Setup, journal: str | None = None, backend: str | None = None) -> Referee:
        """A new game as ``setup`` describes it, journaled to the path ``journal`` if given
        (with the name of the recogniser ``backend`` the table hears it with)."""
        game, state = setup.new_state()
        return cls(game, state, Journal(journal, setup, backend) if journal else None)

    def _record(self, heard: dict[str, Any] | None) -> None:
        new = [record.action for record in self.state.history[self._recorded :]]
        if self.journal is not None and (new or heard is not None):
            self.journal.record(new, heard)
        self._recorded = len(self.state.history)

    def hear(self, onset_s: float, player: str, text: str,
             sound: Mapping[str, Any] | None = None) -> list[Event]:
        """What the table learns from ``player`` saying ``text`` at ``onset_s``; ``sound``
        (its mic, onsets on the audio's clock, clip: :class:`voice.table.dispute.Call`) goes
        into the journal beside it."""
        events = self._hear(onset_s, player, text)
        self._record({"onset_s": onset_s, "player": player, "text": text, **(sound or {})})
        return events

    def _hear(self, onset_s: float, player: str, text: str) -> list[Event]:
        events = self.state.tick(onset_s)
        if self.state.finished:
            return events
        try:
            action = self.game.parse(text, player, onset_s, self.state)
        except UnparseableUtterance as exc:
            candidates = exc.candidates if isinstance(exc, AmbiguousUtterance) else ()
            return events + [self._not_understood(onset_s, player, text, exc.reason, candidates)]
        try:
            return events + self.state.apply(action)
        except IllegalAction as exc:
            return events + [
                Event("refused", onset_s, "", (player,), {"text": text, "reason": exc.reason})
            ]

    def not_understood(self, onset_s: float, player: str, text: str) -> list[Event]:
        """What the table learns from ``player`` saying something the recogniser could not
        make out (``text``: its best guess): nothing, unless the game waits for their words."""
        events = self.tick(onset_s)
        if self.state.finished:
            return events
        asked = self._not_understood(onset_s, player, text, "not recognised")
        return events + [asked] if asked.say else events

    def _not_understood(self, onset_s: float, player: str, text: str, reason: str,
                        candidates: Sequence[str] = ()) -> Event:
        """Asks ``player`` to say it again (or which of ``candidates`` they mean) if the game
        waits for their words: at a table they may not see the screen, and their time runs."""
        say = ""
        if player in self.game.awaited(self.state):
            say = f"{player}, {' or '.join(candidates)}?" if candidates else f"{player}, say that again?"
        return Event("not_understood", onset_s, say, (player,), {"text": text, "reason": reason})

    def tick(self, t: float) -> list[Event]:
        events = self.state.tick(t)
        self._record(None)
        return events

    def undo(self, t: float, reason: str = "overruled by the referee",
             dispute: int | None = None) -> list[Event]:
        """Take back the last player's action and all it caused (a human override); ``dispute``
        is the close call it answers, when the table had just heard one again."""
        history = self.state.history
        keep = max((i for i, r in enumerate(history) if r.player is not None), default=None)
        if keep is None:
            return [Event("refused", t, "", (), {"text": "undo", "reason": "nothing to undo"})]
        undone = history[keep].action
        state = replay(self.game.new_game(self.state.config, self.state.seed), history[:keep])
        self.state = state
        self._recorded = len(state.history)
        if self.journal is not None:
            self.journal.undo(keep, t, reason, dispute)
        return [Event("overruled", t, f"Overruled: {undone.player}'s last call is taken back.",
                      (str(undone.player),), {"action": undone.to_json(), "reason": reason})]

    def close(self) -> None:
        """Close the journal, if any, releasing its lock."""
        if self.journal is not None:
            self.journal.close()

    def final(self) -> dict[str, Any]:
        return {"type": "final", "finished": self.state.finished, **self.state.summary()}


def referee_utterances(
    referee: Referee, transcript: Transcript, cast: Mapping[str, str],
    utterances: Sequence[Utterance], emit: Callable[[list[Event]], None], *, realtime: bool = False,
) -> None:
    """Feed ``utterances`` of ``transcript`` to the referee, each as the player ``cast`` names
    (:meth:`Transcript.cast`), paced in real time if asked, then let the game clock run to
    where the transcript ends (:meth:`Transcript.ends_at`: a last call waits out the tie
    window for rivals before the rules take it), passing what happens to ``emit`` as it
    happens."""
    clock = time.monotonic() - referee.state.t

    def wait(t: float) -> None:
        if realtime:
            time.sleep(max(0.0, clock + t - time.monotonic()))

    for u in utterances:
        wait(u.onset_s)
        emit(referee.hear(u.onset_s, cast[u.speaker], u.text))
    end = transcript.ends_at(referee.state.config.tie_window_ms / 1000)
    if end is not None:
        wait(end)
        emit(referee.tick(end))


def render_text(event: Event) -> str:
    """One readable line: what the app says, or a note in brackets for silent events."""
    stamp = f"{event.t:8.2f}  "
    if event.kind == "not_understood":
        return f"{stamp}({event.players[0]}: {event.data['text']!r} not understood) {event.say}".rstrip()
    if event.kind == "refused":
        return f"{stamp}({event.players[0]}: {event.data['text']!r} ignored: {event.data['reason']})"
    return stamp + event.say


def render_final_text(final: dict[str, Any]) -> str:
    lines = ["", "Final scores" + ("" if final["finished"] else " (game not finished)") + ":"]
    for name in final.get("ranking", final["players"]):
        fields = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in final["players"][name].items())
        lines.append(f"  {name}: {fields}")
    return "\n".join(lines)


def render_json(obj: Event | dict[str, Any]) -> str:
    data = obj.to_json() if isinstance(obj, Event) else obj
    return json.dumps(data, ensure_ascii=False)
