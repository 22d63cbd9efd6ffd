"""``orderup play``: the live game — microphones in, verdicts and narration out."""

from __future__ import annotations

import argparse
import contextlib
import os
import queue
import select
import shutil
import subprocess
import sys
import termios
import threading
import time
import tty
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from engine.core import ConfigError, Event
from voice.cli.options import (
    add_backend_argument,
    add_clips_argument,
    add_game_arguments,
    add_join_gap_argument,
    add_live_arguments,
    add_voice_arguments,
    setup_from,
)
from voice.cli.output import Output, crashed, fail, loading, resume_hint, stopped
from voice.table.games import UnknownGame
from voice.table.journal import JournalError, unique_stamp
from voice.table.options import TableOptions
from voice.table.referee import Referee, render_text
from voice.table.transcript import TranscriptError

if TYPE_CHECKING:
    from voice.table.journal import Restored
    from voice.table.setup import TableSetup

URGENT = {"first", "tie", "false_stop", "round_end", "overruled"}
"""Event kinds whose narration cuts a long announcement: short verdicts come first."""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "play",
        help="play a live game with one microphone per player",
        description="The live game: every player's microphone is heard at once, calls are "
        "recognised, the first caller is decided on onsets, the rules applied and the outcome "
        "said aloud. Every action is journaled as it happens; after a crash or a pulled "
        "microphone, 'orderup resume JOURNAL --play' brings the table back.",
        epilog="examples:\n"
        "  orderup calibrate --players Maya,Leo,Priya --mics 2     (once, saves the set-up)\n"
        "  orderup play desserts                                   (uses the saved set-up)\n"
        "  orderup play poutine --players Ann,Bob,Cat --mics 3:0,4:0,5:0\n"
        "keys while playing: p pause, r replay the last close call (who was first, by how much:\n"
        "  the calls played again in onset order, and a timeline picture), u undo the last\n"
        "  verdict (recorded in the journal, with the close call it answers), q quit",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_game_arguments(p)
    add_join_gap_argument(p)
    add_clips_argument(p)
    p.add_argument("--journal", metavar="FILE",
                   help="where to journal the game (default: a new file in your data dir)")
    add_live_arguments(p)
    add_backend_argument(p)
    add_voice_arguments(p)
    p.set_defaults(handler=handle)


def default_journal(game: str) -> Path:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(Path.home(), ".local", "share")
    return Path(base) / "orderup" / "journals" / f"{unique_stamp()}-{game}.jsonl"


def handle(args: argparse.Namespace) -> int:
    from voice.table.setup import SetupError, TableSetup, default_path, table_inputs

    try:
        saved = None
        if args.mics is None:
            path = Path(args.setup) if args.setup else default_path()
            if path.exists():
                saved = TableSetup.load(path)
            elif args.setup:
                raise SetupError(f"no table set-up at {path}")
        if args.players is None and saved is not None:
            args.players = saved.players
        if args.journal is None:
            args.journal = str(default_journal(args.game))
            Path(args.journal).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        setup = setup_from(args)
        referee = Referee.start(setup, args.journal, args.backend)
        mics, calibration = table_inputs(saved, referee.state.config.players, args.mics)
    except (UnknownGame, ConfigError, TranscriptError, JournalError, SetupError, OSError) as exc:
        return fail(args.command, str(exc))
    return play_live(args, referee, setup.options.table, mics, calibration)


def play_live(
    args: argparse.Namespace, referee: Referee, table: TableOptions, mics: list[Any],
    calibration: TableSetup | None = None, resumed: Restored | None = None,
) -> int:
    """Run the live table until the game ends, the players quit or every mic is gone, as
    ``args`` say (the live arguments and the journal), with the ``table``'s options
    (``calibration``: the table's saved set-up; ``resumed``: the journal a resumed game was
    read back from, whose clock it goes on from: see :class:`voice.table.loop.TableLoop`)."""
    from voice.audio.frames import AudioStreamError
    from voice.audio.live import LiveSource
    from voice.recognition.interface import RecognizerError, create_recognizer
    from voice.recognition.models import ModelNotFound
    from voice.table.clips import ClipStore, clip_folder
    from voice.table.loop import TableLoop
    from voice.table.narration import ReferenceTap, UnknownVoice, start_announcer
    from voice.table.pipeline import with_reference

    view_lines: list[str] = []
    tap = ReferenceTap()
    statuses: list[str] = []
    source = LiveSource(mics, on_status=lambda s: statuses.append(s.message))
    players = referee.state.config.players
    announcer = None
    try:  # from here on Ctrl-C (even while the recogniser loads) says how to go on
        announcer = start_announcer(table.rate_wpm, table.voice, speaker=not args.no_speech,
                                    echo=view_lines.append, tap=tap)
        with loading(Output(args.command, sys.stdout), args.backend):
            loop = TableLoop(referee, create_recognizer(args.backend), players, app_channel=True,
                             tie_window_ms=table.tie_window_ms, join_gap_s=table.join_gap_s,
                             calibration=calibration,
                             clips=ClipStore(clip_folder(args.journal), table.clips_mb),
                             heard=resumed.heard if resumed else (),
                             resume="live" if resumed else None)
        narrate(announcer, referee.state.opening)
        with Keys() as keys:
            frames = with_reference(started(source, tap), tap.read)
            drive(loop, frames, announcer, keys, statuses, view_lines, referee.game.name)
    except (UnknownVoice, ModelNotFound) as exc:
        referee.close()
        return fail(args.command, str(exc))
    except (AudioStreamError, RecognizerError) as exc:
        referee.close()
        return fail(args.command, f"{exc}. {resume_hint(referee.journal, '--play')}")
    except KeyboardInterrupt:
        if announcer is not None:
            announcer.hush()
        return stopped(args.command, referee, "--play")
    except Exception as exc:  # noqa: BLE001 - a bug: the game is saved all the same, and says so
        if announcer is not None:
            announcer.hush()
        return crashed(args.command, referee, "--play", exc)
    finally:
        if announcer is not None:
            announcer.close()
    referee.close()
    print(resume_hint(referee.journal, "--play"))
    return 0


def started(frames: Iterable[Any], tap: Any) -> Iterator[Any]:
    """Pass frames on, telling the reference tap when input sample 0 was captured."""
    for frame in frames:
        if tap.t0 is None:
            tap.start(time.monotonic() - frame.duration_s)
        yield frame


def narrate(announcer: Any, events: Iterable[Event]) -> None:
    """Say what happened, one line per batch; short verdicts cut long announcements."""
    batch = [e for e in events if e.say]
    if batch:
        announcer.say(" ".join(e.say for e in batch), urgent=batch[0].kind in URGENT)


def drive(loop: Any, frames: Iterable[Any], announcer: Any, keys: Keys, statuses: list[str],
          narration: list[str], title: str) -> None:
    """Feed frames to the table loop, narrate, show the screen and obey the keys."""
    from rich.live import Live

    from voice.table.pipeline import Heard
    from voice.table.screen import TableView, render

    view = TableView(title, loop.players, clock=loop.game_time)
    live = (Live(render(view), refresh_per_second=8, transient=False, vertical_overflow="crop")
            if sys.stdout.isatty() else None)
    disputed: int | None = None  # the close call just heard again, which a "u" answers
    with live or contextlib.nullcontext():
        for frame in frames:
            key = keys.get()
            if key == "q":
                break
            if key == "p":
                (loop.resume if loop.paused else loop.pause)(frame.t_s)
            if key == "r":
                disputed = replay_close_call(loop, announcer, narration)
            items: list[Heard | Event] = []
            if key == "u":
                items += loop.referee.undo(loop.referee.state.t, dispute=disputed)
                disputed = None
            view.meter(frame.samples[:, : len(loop.players)])
            items += loop.feed(frame)
            narrate(announcer, [i for i in items if isinstance(i, Event)])
            view.take(items)
            view.said.extend(narration)
            narration.clear()
            view.summary = loop.referee.state.summary()
            view.status = ("PAUSED  " if loop.paused else "") + (statuses[-1] if statuses else "")
            if live is not None:
                live.update(render(view, live.console.size.height))
            else:
                for item in items:
                    print(render_text(item) if isinstance(item, Event) else
                          f"{heard_at(loop, item):>8}  heard {item.player}: {item.text!r}",
                          flush=True)
            if loop.referee.state.finished:
                break


def heard_at(loop: Any, heard: Any) -> str:
    """When a call was heard, on the game's clock (a resumed game's goes on from the
    journal's)."""
    t_s = loop.game_time(heard.onset_s)
    return "paused" if t_s is None else f"{t_s:.2f}"


def replay_close_call(loop: Any, announcer: Any, narration: list[str]) -> int | None:
    """``r``: say who was first in the game's last close call and by how much, play the calls
    again in onset order, and draw the race beside the journal (opened in the desktop's viewer
    where there is one); returns the close call's number."""
    from voice.cli.dispute import dispute
    from voice.table.dispute import DisputeError, pick, races

    try:
        race = pick(races(loop.calls))
    except DisputeError as exc:
        narration.append(str(exc))
        return None
    folder = loop.clips.folder
    picture = folder / f"close-call-{race.number}.png"
    dispute(race, folder, loop.players, loop.referee.state.config.tie_window_ms, picture,
            announcer)
    narration.append(f"timeline of close call {race.number}: {picture}")
    viewer = shutil.which("xdg-open") if os.environ.get("DISPLAY") else None
    if viewer is not None:
        subprocess.Popen([viewer, str(picture)], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    return race.number


class Keys:
    """Single key presses from the terminal, read on a thread without waiting for Enter."""

    def __init__(self) -> None:
        self._queue: queue.Queue[str] = queue.Queue()
        self._saved: list[Any] | None = None
        self._stop = threading.Event()

    def __enter__(self) -> Self:
        if sys.stdin.isatty():
            fd = sys.stdin.fileno()
            self._saved = termios.tcgetattr(fd)
            tty.setcbreak(fd)
            threading.Thread(target=self._read, args=(fd,), daemon=True).start()
        return self

    def _read(self, fd: int) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([fd], [], [], 0.1)
            if ready:
                self._queue.put(os.read(fd, 1).decode(errors="ignore").lower())

    def get(self) -> str | None:
        try:
            return self._queue.get_nowait()
        except queue.Empty:
            return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        if self._saved is not None:
            termios.tcsetattr(sys.stdin.fileno(), termios.TCSADRAIN, self._saved)
