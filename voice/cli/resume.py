"""``orderup resume``: bring a game back exactly where its journal left it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from engine.core import Event, GameState
from voice.cli.options import add_live_arguments, add_output_arguments
from voice.cli.output import Output, fail, finish_transcript
from voice.table.games import GameBinding
from voice.table.journal import Journal, JournalError, Restored, restore
from voice.table.referee import Referee
from voice.table.transcript import TranscriptError, read_transcript


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "resume",
        help="restore a game from its journal after a crash or a closed lid",
        description="Restore the exact state of a journaled game and show it. With "
        "--transcript, go on refereeing that transcript from the first utterance the "
        "journal had not heard yet; with --recording, go on with the recording a killed "
        "'orderup replay' was refereeing, from where it stopped; with --play, go on with the "
        "live game on the journal's clock. Each appends to the same journal. The game's and "
        "the table's options (tie window, narration) are the journal's.",
    )
    p.add_argument("journal", metavar="JOURNAL", help="the journal file written by --journal")
    p.add_argument("--transcript", metavar="FILE", help="the transcript the game was refereed from")
    p.add_argument("--recording", metavar="FILE.wav",
                   help="the recording the game was replayed from (as in 'orderup replay')")
    p.add_argument("--play", action="store_true",
                   help="go on with the live game (microphones as in 'orderup play')")
    add_output_arguments(p, journal=False)
    add_live_arguments(p)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    try:
        game, state, restored = restore(args.journal)
        transcript = read_transcript(args.transcript) if args.transcript else None
    except (JournalError, TranscriptError) as exc:
        return fail(args.command, str(exc))
    for warning in restored.warnings:
        print(f"orderup {args.command}: warning: {warning}", file=sys.stderr)
    setup = restored.setup
    resumed = Event(
        "resumed", state.t,
        f"Resuming {game.title} at {state.t:.2f} s with {', '.join(setup.players)}.",
        setup.players, {"actions": len(restored.actions), "heard": len(restored.heard)},
    )
    output = Output(args.command, sys.stdout, args.json)
    output.emit([resumed])
    if args.play:
        return resume_live(args, game, state, restored)
    if args.recording:
        return resume_recording(args, game, state, restored)
    if transcript is None:
        output.emit([{"type": "final", "finished": state.finished, **state.summary()}])
        return 0
    try:
        journal = Journal(args.journal, setup, fresh=False)
    except JournalError as exc:
        return fail(args.command, str(exc))
    referee = Referee(game, state, journal)
    return finish_transcript(referee, transcript, transcript.utterances[len(restored.heard) :], output,
                             realtime=args.realtime)


def resume_recording(args: argparse.Namespace, game: GameBinding, state: GameState[Any],
                     restored: Restored) -> int:
    """Go on with a replayed recording from where its journal stopped."""
    from voice.cli.replay import replay

    try:
        journal = Journal(args.journal, restored.setup, fresh=False)
    except JournalError as exc:
        return fail(args.command, str(exc))
    return replay(restored.setup, args.recording, Output(args.command, sys.stdout, args.json),
                  journal=args.journal, backend=args.backend, calibration=args.setup,
                  resumed=(Referee(game, state, journal), restored))


def resume_live(args: argparse.Namespace, game: GameBinding, state: GameState[Any],
                restored: Restored) -> int:
    """Continue the restored game live, appending to the same journal (its calls' sound kept
    in the same folder)."""
    setup = restored.setup
    from voice.cli.play import play_live
    from voice.table.setup import SetupError, TableSetup, default_path, table_inputs

    try:
        journal = Journal(args.journal, setup, fresh=False)
        saved_path = Path(args.setup) if args.setup else default_path()
        saved = TableSetup.load(saved_path) if args.mics is None and saved_path.exists() else None
        mics, calibration = table_inputs(saved, setup.players, args.mics)
    except (JournalError, SetupError) as exc:
        return fail(args.command, str(exc))
    return play_live(args, Referee(game, state, journal), setup.options.table, mics, calibration,
                     restored)
