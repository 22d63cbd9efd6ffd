"""``orderup resume``: bring a game back exactly where its journal left it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from engine.core import Event
from voice.cli.play import add_live_arguments
from voice.cli.referee import add_output_arguments, emit, fail, run_utterances
from voice.table.journal import Journal, JournalError, Setup, read_journal, replay_journal
from voice.table.referee import Referee
from voice.table.transcript import TranscriptError, read_transcript


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "resume",
        help="restore a game from its journal after a crash or a closed lid",
        description="Restore the exact state of a journaled game and show it. With "
        "--transcript, go on refereeing that transcript from the first utterance the "
        "journal had not heard yet, appending to the same journal (a last line torn by a crash "
        "is cut off first, and the journal as it was kept beside it).",
    )
    p.add_argument("journal", metavar="JOURNAL", help="the journal file written by --journal")
    p.add_argument("--transcript", metavar="FILE", help="the transcript the game was refereed from")
    p.add_argument("--play", action="store_true",
                   help="go on with the live game (microphones as in 'orderup play')")
    add_output_arguments(p, journal=False)
    add_live_arguments(p)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    journal = None
    try:
        transcript = read_transcript(args.transcript) if args.transcript else None
        if args.play or transcript is not None:
            journal, restored = Journal.reopen(args.journal)
        else:
            restored = read_journal(args.journal)
        game, state = replay_journal(args.journal, restored)
    except (JournalError, TranscriptError) as exc:
        if journal is not None:
            journal.close()
        return fail(str(exc))
    for warning in restored.warnings:
        print(f"orderup: warning: {warning}", file=sys.stderr)
    setup = restored.setup
    resumed = Event(
        "resumed", state.t,
        f"Resuming {game.title} at {state.t:.2f} s with {', '.join(setup.players)}.",
        setup.players, {"actions": len(restored.actions), "heard": restored.heard},
    )
    emit(args, sys.stdout, [resumed])
    referee = Referee(game, state, journal)
    if args.play:
        return resume_live(args, referee, setup)
    if transcript is None:
        emit(args, sys.stdout, [referee.final()])
        return 0
    return run_utterances(args, referee, transcript, transcript.utterances[restored.heard :], sys.stdout)


def resume_live(args: argparse.Namespace, referee: Referee, setup: Setup) -> int:
    """Continue the restored game live, appending to the same journal."""
    from voice.cli.play import play_live
    from voice.table.setup import SetupError, TableSetup, default_path, table_inputs

    try:
        saved_path = Path(args.setup) if args.setup else default_path()
        saved = TableSetup.load(saved_path) if args.mics is None and saved_path.exists() else None
        mics, calibration = table_inputs(saved, setup.players, args.mics)
    except SetupError as exc:
        referee.close()
        return fail(str(exc))
    args.game = referee.game.name
    args.tie_window_ms = setup.options.get("tie_window_ms", 40.0)
    return play_live(args, referee, mics, calibration)
