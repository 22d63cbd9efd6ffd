"""``orderup resume``: bring a game back exactly where its journal left it."""

from __future__ import annotations

import argparse
import sys

from engine.core import Event
from voice.cmd_referee import add_output_arguments, emit, fail, run_utterances
from voice.journal import Journal, JournalError, restore
from voice.referee import Referee
from voice.transcript import TranscriptError, read_transcript


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "resume",
        help="restore a game from its journal after a crash or a closed lid",
        description="Restore the exact state of a journaled game and show it. With "
        "--transcript, go on refereeing that transcript from the first utterance the "
        "journal had not heard yet, appending to the same journal.",
    )
    p.add_argument("journal", metavar="JOURNAL", help="the journal file written by --journal")
    p.add_argument("--transcript", metavar="FILE", help="the transcript the game was refereed from")
    add_output_arguments(p)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    try:
        game, state, restored = restore(args.journal)
        transcript = read_transcript(args.transcript) if args.transcript else None
    except (JournalError, TranscriptError) as exc:
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
    if transcript is None:
        emit(args, sys.stdout, [{"type": "final", "finished": state.finished, **state.summary()}])
        return 0
    try:
        journal = Journal(args.journal, setup, fresh=False)
    except JournalError as exc:
        return fail(str(exc))
    referee = Referee(game, state, journal)
    return run_utterances(args, referee, transcript, transcript.utterances[restored.heard :], sys.stdout)
