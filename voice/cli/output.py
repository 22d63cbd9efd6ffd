"""What the commands print: events as text or JSON lines, and errors as one line on stderr."""

from __future__ import annotations

import contextlib
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, TextIO

from engine.core import Event
from voice.table.journal import Journal
from voice.table.referee import (
    Referee,
    referee_utterances,
    render_final_text,
    render_json,
    render_text,
)
from voice.table.transcript import Transcript, TranscriptError, Utterance


def fail(command: str, message: str) -> int:
    """Say what is wrong in one line, ``orderup COMMAND: ...``; the exit status 2. Control
    characters (a file's own, quoted back) are shown escaped, so they cannot break the line."""
    print(f"orderup {command}: {one_line(message)}", file=sys.stderr)
    return 2


def one_line(text: str) -> str:
    """``text`` with every character that is not printable escaped (``\\x0b``, ``\\n``)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def resume_hint(journal: Journal | None, how: str) -> str:
    """Where the game is saved and how to go on with it (``how``: resume's options), or why
    there is nothing to resume; asked once the journal is closed."""
    if journal is None:
        return "No journal was kept."
    if not journal.written:
        if journal.unwritten:
            return f"The journal {journal.path} could not be written: the game is not saved."
        return "Nothing was journaled: the game had not started."
    lost = f", but for its last {journal.unwritten} lines" if journal.unwritten else ""
    return f"The game is saved{lost}: orderup resume {journal.path} {how}"


def stopped(command: str, referee: Referee, how: str) -> int:
    """After Ctrl-C: close the journal and say how to go on; the exit status 130."""
    referee.close()
    print(f"orderup {command}: stopped. {resume_hint(referee.journal, how)}", file=sys.stderr)
    return 130


def crashed(command: str, referee: Referee, how: str, error: BaseException) -> int:
    """After an error the app did not foresee (a bug) in a live game: close the journal and
    say what stopped the game (:func:`unexpected`) and how to go on; the exit status 1."""
    referee.close()
    print(f"{unexpected(command, error, referee.journal)}. {resume_hint(referee.journal, how)}",
          file=sys.stderr)
    return 1


def unexpected(command: str, error: BaseException, journal: Journal | None = None) -> str:
    """One line for an error the app did not foresee: what it was and where its details are
    kept (:func:`keep_details`)."""
    return (f"orderup {command}: stopped by an unexpected error ({type(error).__name__}: "
            f"{one_line(str(error))}); {keep_details(journal, command, error)}")


def keep_details(journal: Journal | None, command: str, error: BaseException) -> str:
    """Add `error`'s traceback to ``JOURNAL.error.txt`` beside the journal (a file in the
    temporary folder without one), to report the bug with; say where. Where no file can be
    written, the traceback goes to stderr."""
    text = (f"--- {time.strftime('%Y-%m-%d %H:%M:%S %Z')}: orderup {command}\n"
            + "".join(traceback.format_exception(error)))
    try:
        if journal is not None:
            path = f"{journal.path}.error.txt"
            with open(path, "a", encoding="utf-8") as f:
                f.write(text)
        else:
            with tempfile.NamedTemporaryFile("w", prefix="orderup-error-", suffix=".txt",
                                             delete=False, encoding="utf-8") as f:
                f.write(text)
                path = f.name
    except OSError as exc:
        print(text, end="", file=sys.stderr)
        return f"its details are above (not kept in a file: {exc.strerror or exc})"
    return f"its details are in {path}"


@contextlib.contextmanager
def loading(output: Output, backend: str) -> Iterator[None]:
    """While the recogniser loads (seconds, for Whisper on a slow laptop): a spinner saying
    so when the output is text on a terminal, gone once it has loaded; elsewhere nothing."""
    if output.json or not output.out.isatty():
        yield
        return
    from rich.console import Console

    with Console(file=output.out).status(f"Loading the {backend} recogniser..."):
        yield


@contextlib.contextmanager
def progress(output: Output, total_s: float, what: str
             ) -> Iterator[tuple[Output, Callable[[float], None]]]:
    """While a recording of ``total_s`` seconds is refereed: where to print (``output``, its
    lines printed above the bar) and how to say how far it has got (seconds of the recording).
    The bar — elapsed and total time of the recording, and the time it has taken — shows when
    the output is text on a terminal; elsewhere there is none."""
    if output.json or not output.out.isatty():
        yield output, lambda t_s: None
        return
    from rich.console import Console
    from rich.file_proxy import FileProxy
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(file=output.out)
    bar = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[at]}"),
                   TimeElapsedColumn(), console=console, transient=True)

    def at(t_s: float) -> str:
        return f"{_clock(t_s)} / {_clock(total_s)} of the recording"

    with bar:
        task = bar.add_task(what, total=total_s, at=at(0.0))
        yield (replace(output, out=FileProxy(console, output.out)),  # type: ignore[arg-type]
               lambda t_s: bar.update(task, completed=t_s, at=at(t_s)))


def _clock(seconds: float) -> str:
    return f"{int(seconds) // 60}:{int(seconds) % 60:02d}"


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
                      output: Output, *, opening: bool = False, realtime: bool = False) -> int:
    """Referee ``utterances`` (after the game's ``opening`` if asked), print what happens, then
    the final line; the exit status. A transcript with an error (a bad line, an unknown
    speaker) is refused whole before anything is refereed: one line, exit status 2."""
    try:
        cast = transcript.cast(referee.state.config.players)
    except TranscriptError as exc:
        referee.close()
        return fail(output.command, str(exc))
    if opening:
        output.emit(referee.state.opening)
    try:
        referee_utterances(referee, transcript, cast, utterances, output.emit, realtime=realtime)
    except KeyboardInterrupt:
        return stopped(output.command, referee, f"--transcript {transcript.path}")
    referee.close()
    output.emit([referee.final()])
    return 0
