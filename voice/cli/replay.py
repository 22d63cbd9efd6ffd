"""``orderup replay``: referee a whole game from a multichannel recording."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from engine.core import ConfigError, Event
from voice.cli.options import (
    add_backend_argument,
    add_clips_argument,
    add_game_arguments,
    add_join_gap_argument,
    add_output_arguments,
    setup_from,
)
from voice.cli.output import Output, fail, loading, progress, stopped
from voice.table.games import UnknownGame
from voice.table.journal import JournalError, Setup
from voice.table.referee import Referee
from voice.table.transcript import TranscriptError

if TYPE_CHECKING:
    from voice.table.clips import ClipStore
    from voice.table.journal import Restored
    from voice.table.loop import TableLoop
    from voice.table.pipeline import Heard
    from voice.table.setup import TableSetup


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "replay",
        help="referee a game from a recording (one channel per player)",
        description="Runs a multichannel recording through the whole table loop — onsets, "
        "recognition, arbitration, rules — and prints what the app hears and says. Channel i "
        "is the i-th player of --players. If FILE.app.wav exists beside the recording (what the "
        "app played through its speaker), the app's own voice is told apart from the players'; "
        "if FILE.table.json does (the table's 'orderup calibrate' set-up), each player's voice is "
        "told apart from its echo on the others' mics from the first call on.",
        epilog="example: orderup replay game.wav --game desserts --players Maya,Leo,Priya --seed 11",
    )
    p.add_argument("wav", metavar="FILE.wav", help="the recording")
    add_game_arguments(p, game_option=True)
    add_join_gap_argument(p)
    add_clips_argument(p)
    p.add_argument("--app-audio", metavar="FILE",
                   help="what the app played, aligned to the recording (default: FILE.app.wav)")
    p.add_argument("--setup", metavar="FILE",
                   help="the table's set-up saved by 'orderup calibrate' (--out) for these players: "
                   "the onset detector starts from the crosstalk it measured between the mics, as "
                   "'orderup play' does (default: FILE.table.json beside the recording, if any)")
    p.add_argument("--disputes", metavar="DIR",
                   help="write a timeline picture and the calls' sound, in onset order, for every "
                   "close call (two players within 150 ms) into DIR")
    add_backend_argument(p)
    add_output_arguments(p)
    p.set_defaults(handler=handle)


def app_audio_path(wav: str, given: str | None) -> str | None:
    """The app's playback track: given, or FILE.app.wav / FILE.app.ogg beside the recording."""
    if given:
        return given
    for suffix in (".app.wav", ".app" + Path(wav).suffix):
        beside = Path(wav).with_suffix(suffix)
        if beside.exists():
            return str(beside)
    return None


def calibration_for(wav: str, given: str | None, players: Sequence[str]) -> TableSetup | None:
    """The set-up given, or FILE.table.json beside the recording; None when there is
    neither. A set-up for other players is an error, not a guess."""
    from voice.table.setup import SetupError, TableSetup

    path = Path(given) if given else Path(wav).with_suffix(".table.json")
    if not given and not path.exists():
        return None
    setup = TableSetup.load(path)
    if setup.players != tuple(players):
        raise SetupError(f"{path} is the set-up of {', '.join(setup.players)}, "
                         f"not of {', '.join(players)}")
    return setup


def handle(args: argparse.Namespace) -> int:
    try:
        setup = setup_from(args)
    except (UnknownGame, ConfigError, TranscriptError) as exc:
        return fail(args.command, str(exc))
    return replay(setup, args.wav, Output(args.command, sys.stdout, args.json), journal=args.journal,
                  backend=args.backend, app_audio=args.app_audio, calibration=args.setup,
                  realtime=args.realtime, disputes=args.disputes)


def replay(setup: Setup, wav: str, output: Output, *, backend: str, journal: str | None = None,
           app_audio: str | None = None, calibration: str | None = None,
           realtime: bool = False, disputes: str | None = None,
           resumed: tuple[Referee, Restored] | None = None) -> int:
    """Referee the game ``setup`` describes from the recording ``wav`` (journaled to
    ``journal``); print events (and what was heard) to ``output``. ``app_audio`` and
    ``calibration`` default to the files beside the recording (see :func:`app_audio_path`,
    :func:`calibration_for`); every close call is drawn into the folder ``disputes``. A
    ``resumed`` game (its referee, journaling to ``journal``, and its journal read back) goes on
    from where its journal stopped."""
    from voice.audio.files import WavSource
    from voice.audio.frames import AudioFileError, AudioStreamError
    from voice.recognition.grammar import GrammarError
    from voice.recognition.interface import RecognizerError, create_recognizer
    from voice.recognition.models import ModelNotFound
    from voice.table.loop import TableLoop
    from voice.table.pipeline import recorded_frames
    from voice.table.setup import SetupError

    try:
        referee = resumed[0] if resumed else Referee.start(setup, journal, backend)
        source = WavSource(wav, realtime=realtime)
        players = referee.state.config.players
        if source.channels != len(players):
            raise ConfigError(f"{wav} has {source.channels} channels for {len(players)} players")
        app = app_audio_path(wav, app_audio)
        frames = recorded_frames(source, app)
        with loading(output, backend):
            loop = TableLoop(referee, create_recognizer(backend), players,
                             app_channel=app is not None,
                             tie_window_ms=setup.options.table.tie_window_ms,
                             join_gap_s=setup.options.table.join_gap_s,
                             calibration=calibration_for(wav, calibration, players),
                             clips=clip_store(journal, disputes, setup.options.table.clips_mb),
                             heard=resumed[1].heard if resumed else (),
                             resume="recording" if resumed else None)
        if not resumed:
            output.emit(referee.state.opening)
        with progress(output, source.duration_s, Path(wav).name) as (shown, reached):
            for frame in frames:
                show(shown, loop.feed(frame))
                reached(frame.t_s)
            show(shown, loop.finish())
        referee.close()
    except KeyboardInterrupt:
        return stopped(output.command, referee, f"--recording {wav}")
    except (ConfigError, JournalError, AudioFileError, AudioStreamError, GrammarError,
            ModelNotFound, RecognizerError, SetupError) as exc:
        return fail(output.command, str(exc))
    output.emit([loop.referee.final()])
    if disputes:
        write_disputes(loop, Path(disputes))
    return 0


def clip_store(journal: str | None, disputes: str | None, limit_mb: float) -> ClipStore | None:
    """Where the calls' sound is kept: in the disputes folder (all of it), or beside the journal
    (under ``limit_mb``)."""
    from voice.table.clips import ClipStore, clip_folder

    if disputes:
        return ClipStore(Path(disputes) / "clips", limit_mb=float("inf"))
    return ClipStore(clip_folder(journal), limit_mb) if journal else None


def write_disputes(loop: TableLoop, folder: Path) -> None:
    """Every close call of the game: its picture and its calls in onset order (FLAC)."""
    import numpy as np
    import soundfile as sf

    from voice.audio.frames import PIPELINE_RATE_HZ
    from voice.cli.dispute import dispute
    from voice.table.dispute import playlist, races

    assert loop.clips is not None
    config = loop.referee.state.config
    found = races(loop.calls)
    for race in found:
        name = folder / f"close-call-{race.number:03d}"
        gap = np.zeros(PIPELINE_RATE_HZ // 3, np.float32)
        sounds = [part for _, sound in playlist(race, loop.clips.folder) for part in (sound, gap)]
        sf.write(f"{name}.flac", np.concatenate(sounds), PIPELINE_RATE_HZ, format="FLAC")
        dispute(race, loop.clips.folder, config.players, config.tie_window_ms,
                name.with_suffix(".png"), None)
    print(f"{len(found)} close calls drawn in {folder}", file=sys.stderr)


def show(output: Output, items: Sequence[Heard | Event]) -> None:
    """Print heard utterances and game events as they happen."""
    from voice.table.pipeline import Heard

    for item in items:
        if isinstance(item, Heard) and not output.json:
            mark = "" if item.understood else ", not understood"
            print(f"{item.onset_s:8.2f}  heard {item.player}: {item.text!r} "
                  f"({item.confidence:.2f}{mark})", file=output.out, flush=True)
        else:
            output.emit([item.to_json() if isinstance(item, Heard) else item])
