"""``orderup replay``: referee a whole game from a multichannel recording."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from engine.core import ConfigError, Event
from voice.cli.referee import add_game_arguments, add_output_arguments, emit, fail, make_referee
from voice.table.games import UnknownGame
from voice.table.journal import JournalError
from voice.table.transcript import Transcript, TranscriptError

if TYPE_CHECKING:
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
    p.add_argument("--app-audio", metavar="FILE",
                   help="what the app played, aligned to the recording (default: FILE.app.wav)")
    p.add_argument("--setup", metavar="FILE",
                   help="the table's set-up saved by 'orderup calibrate' (--out) for these players: "
                   "the onset detector starts from the crosstalk it measured between the mics, as "
                   "'orderup play' does (default: FILE.table.json beside the recording, if any)")
    p.add_argument("--backend", default="sphinx", help="recogniser: sphinx (default), vosk or whisper")
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
    return replay(args, sys.stdout)


def replay(args: argparse.Namespace, out: TextIO, transcript: Transcript | None = None) -> int:
    """Referee the recording ``args.wav``; print events (and what was heard) to ``out``.

    A ``transcript``'s directives may give the players, seed and stacked decks.
    """
    from voice.audio.files import WavSource
    from voice.audio.frames import AudioFileError, AudioStreamError
    from voice.recognition.grammar import GrammarError
    from voice.recognition.interface import RecognizerError, create_recognizer
    from voice.recognition.models import ModelNotFound
    from voice.table.loop import TableLoop
    from voice.table.pipeline import recorded_frames
    from voice.table.setup import SetupError

    try:
        referee = make_referee(args, transcript)
        source = WavSource(args.wav, realtime=args.realtime)
        players = referee.state.config.players
        if source.channels != len(players):
            raise ConfigError(f"{args.wav} has {source.channels} channels for {len(players)} players")
        app = app_audio_path(args.wav, args.app_audio)
        frames = recorded_frames(source, app)
        loop = TableLoop(referee, create_recognizer(args.backend), players,
                         app_channel=app is not None, tie_window_ms=args.tie_window_ms,
                         calibration=calibration_for(args.wav, args.setup, players))
        emit(args, out, referee.state.opening)
        for frame in frames:
            show(args, out, loop.feed(frame))
        show(args, out, loop.finish())
        referee.close()
    except (UnknownGame, ConfigError, TranscriptError, JournalError, AudioFileError,
            AudioStreamError, GrammarError, ModelNotFound, RecognizerError, SetupError) as exc:
        return fail(str(exc))
    emit(args, out, [loop.referee.final()])
    return 0


def show(args: argparse.Namespace, out: TextIO, items: Sequence[Heard | Event]) -> None:
    """Print heard utterances and game events as they happen."""
    from voice.table.pipeline import Heard

    for item in items:
        if isinstance(item, Heard) and not args.json:
            mark = "" if item.understood else ", not understood"
            print(f"{item.onset_s:8.2f}  heard {item.player}: {item.text!r} "
                  f"({item.confidence:.2f}{mark})", file=out, flush=True)
        else:
            emit(args, out, [item.to_json() if isinstance(item, Heard) else item])
