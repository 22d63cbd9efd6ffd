"""The referee: heard utterances in, game events out.

The same driver serves a transcript, a recording and the live table: each
utterance (onset, player, text) first lets the game clock run to its onset,
then is parsed into an action and applied. Words that are not a phrase of the
game, or actions the rules refuse, change nothing and come back as events.
"""

from __future__ import annotations

import json
from typing import Any

from engine.core import Event, GameState, IllegalAction
from voice.games import GameBinding
from voice.intents import UnparseableUtterance


class Referee:
    """Drives one game from utterances."""

    def __init__(self, game: GameBinding, state: GameState[Any]) -> None:
        self.game = game
        self.state = state

    def hear(self, onset_s: float, player: str, text: str) -> list[Event]:
        events = self.state.tick(onset_s)
        if self.state.finished:
            return events
        try:
            action = self.game.parse(text, player, onset_s, self.state)
        except UnparseableUtterance as exc:
            return events + [
                Event("not_understood", onset_s, "", (player,), {"text": text, "reason": exc.reason})
            ]
        try:
            return events + self.state.apply(action)
        except IllegalAction as exc:
            return events + [
                Event("refused", onset_s, "", (player,), {"text": text, "reason": exc.reason})
            ]

    def tick(self, t: float) -> list[Event]:
        return self.state.tick(t)

    def final(self) -> dict[str, Any]:
        return {"type": "final", "finished": self.state.finished, **self.state.summary()}


def render_text(event: Event) -> str:
    """One readable line: what the app says, or a note in brackets for silent events."""
    stamp = f"{event.t:8.2f}  "
    if event.kind == "not_understood":
        return f"{stamp}({event.players[0]}: {event.data['text']!r} not understood)"
    if event.kind == "refused":
        return f"{stamp}({event.players[0]}: {event.data['text']!r} ignored: {event.data['reason']})"
    return stamp + event.say


def render_final_text(final: dict[str, Any]) -> str:
    lines = ["", "Final scores" + ("" if final["finished"] else " (game not finished)") + ":"]
    for name in final["ranking"]:
        fields = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in final["players"][name].items())
        lines.append(f"  {name}: {fields}")
    return "\n".join(lines)


def render_json(obj: Event | dict[str, Any]) -> str:
    data = obj.to_json() if isinstance(obj, Event) else obj
    return json.dumps(data, ensure_ascii=False)
