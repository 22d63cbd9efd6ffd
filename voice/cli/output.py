"""What the commands print: events as text or JSON lines, and errors as one line on stderr."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from engine.core import Event
from voice.table.referee import (
    Referee,
    referee_utterances,
    render_final_text,
    render_json,
    render_text,
)
from voice.table.transcript import Transcript, Utterance


def fail(command: str, message: str) -> int:
    """Say what is wrong in one line, ``orderup COMMAND: ...``; the exit status 2."""
    print(f"orderup {command}: {message}", file=sys.stderr)
    return 2


@dataclass(frozen=True)
class Output:
    """Where a command prints its events, and how (text, or one JSON object per line)."""

    command: str
    out: TextIO
    json: bool = False

    def emit(self, events: Sequence[Event | dict[str, Any]]) -> None:
        """Print events (and the final line) as text or JSON lines."""
        for event in events:
            if self.json:
                line = render_json(event)
            else:
                line = render_text(event) if isinstance(event, Event) else render_final_text(event)
            print(line, file=self.out, flush=True)


def finish_transcript(referee: Referee, transcript: Transcript, utterances: Sequence[Utterance],
                      output: Output, *, realtime: bool = False) -> int:
    """Referee ``utterances``, print what happens, then the final line; exit status 1 when
    the transcript has an error (said on stderr, and as a JSON line with ``--json``)."""
    error = referee_utterances(referee, transcript, utterances, output.emit, realtime=realtime)
    if error is not None:
        print(f"orderup {output.command}: {error} (nothing after it was applied)", file=sys.stderr)
        if output.json:
            output.emit([{"type": "error", "line": error.line, "message": str(error)}])
    output.emit([referee.final()])
    return 1 if error is not None else 0
