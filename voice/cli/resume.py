"""``orderup resume``: bring a game back exactly where its journal left it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from engine.core import Event
from voice.cli.options import add_backend_argument, add_live_arguments, add_output_arguments
from voice.cli.output import Output, fail, finish_transcript
from voice.recognition.interface import DEFAULT_BACKEND
from voice.table.journal import Journal, JournalError, Restored, read_journal, replay_journal
from voice.table.referee import Referee
from voice.table.transcript import Transcript, TranscriptError, read_transcript


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "resume",
        help="restore a game from its journal after a crash or a closed lid",
        description="Restore the exact state of a journaled game and show it. With "
        "--transcript, go on refereeing that transcript from the first utterance the "
        "journal had not heard yet; with --recording, go on with the recording a killed "
        "'orderup replay' was refereeing, from where it stopped; with --play, go on with the "
        "live game on the journal's clock. Each appends to the same journal (a last line torn "
        "by a crash is cut off first, and the journal as it was kept beside it). The game's "
        "and the table's options (tie window, narration) are the journal's, and so is the "
        "recogniser the game was heard with, unless --backend names another.",
    )
    p.add_argument("journal", metavar="JOURNAL", help="the journal file written by --journal")
    p.add_argument("--transcript", metavar="FILE", help="the transcript the game was refereed from")
    p.add_argument("--recording", metavar="FILE.wav",
                   help="the recording the game was replayed from (as in 'orderup replay')")
    p.add_argument("--play", action="store_true",
                   help="go on with the live game (microphones as in 'orderup play')")
    add_output_arguments(p, journal=False)
    add_live_arguments(p)
    add_backend_argument(p, None, f"the one the journal's game was heard with, else {DEFAULT_BACKEND}")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    journal = None
    try:
        transcript = read_transcript(args.transcript) if args.transcript else None
        if args.play or args.recording or transcript is not None:
            journal, restored = Journal.reopen(args.journal)
        else:
            restored = read_journal(args.journal)
        game, state = replay_journal(args.journal, restored)
    except (JournalError, TranscriptError) as exc:
        if journal is not None:
            journal.close()
        return fail(args.command, str(exc))
    for warning in restored.warnings:
        print(f"orderup {args.command}: warning: {warning}", file=sys.stderr)
    setup = restored.setup
    data: dict[str, Any] = {"actions": len(restored.actions), "heard": len(restored.heard)}
    if args.play or args.recording:
        args.backend = args.backend or restored.backend or DEFAULT_BACKEND
        data["backend"] = args.backend
    resumed = Event(
        "resumed", state.t,
        f"Resuming {game.title} at {state.t:.2f} s with {', '.join(setup.players)}.",
        setup.players, data,
    )
    output = Output(args.command, sys.stdout, args.json)
    output.emit([resumed])
    referee = Referee(game, state, journal)
    if args.play:
        return resume_live(args, referee, restored)
    if args.recording:
        from voice.cli.replay import replay

        return replay(setup, args.recording, output, journal=args.journal, backend=args.backend,
                      calibration=args.setup, resumed=(referee, restored))
    if transcript is None:
        output.emit([referee.final()])
        return 0
    mismatch = transcript_mismatch(restored, transcript, state.t)
    if mismatch is not None:
        referee.close()
        return fail(args.command, f"{args.journal} was not refereed from {transcript.path}: {mismatch}")
    return finish_transcript(referee, transcript, transcript.utterances[len(restored.heard) :], output,
                             realtime=args.realtime)


def transcript_mismatch(restored: Restored, transcript: Transcript, game_t: float) -> str | None:
    """Why ``transcript`` cannot be the one the journal heard (its first utterances are what
    the journal heard, the next comes after the game's clock), or None when it can."""
    said = transcript.utterances
    for heard, u in zip(restored.heard, said):
        if (abs(float(heard["onset_s"]) - u.onset_s) > 1e-6 or heard["text"] != u.text
                or str(heard["player"]).casefold() != u.speaker.casefold()):
            return (f"line {u.line} is {u.onset_s:.3f} {u.speaker}: {u.text!r}, the journal heard "
                    f"{float(heard['onset_s']):.3f} {heard['player']}: {heard['text']!r}")
    if len(restored.heard) > len(said):
        return f"the journal heard {len(restored.heard)} utterances, the transcript has {len(said)}"
    rest = said[len(restored.heard):]
    if rest and rest[0].onset_s < game_t:
        return f"line {rest[0].line} is at {rest[0].onset_s:.3f} s, before the game's clock ({game_t:.3f} s)"
    return None


def resume_live(args: argparse.Namespace, referee: Referee, restored: Restored) -> int:
    """Continue the restored game live, appending to the same journal (its calls' sound kept
    in the same folder)."""
    from voice.cli.play import play_live
    from voice.table.setup import SetupError, TableSetup, default_path, table_inputs

    setup = restored.setup
    try:
        saved_path = Path(args.setup) if args.setup else default_path()
        saved = TableSetup.load(saved_path) if args.mics is None and saved_path.exists() else None
        mics, calibration = table_inputs(saved, setup.players, args.mics)
    except SetupError as exc:
        referee.close()
        return fail(args.command, str(exc))
    return play_live(args, referee, setup.options.table, mics, calibration, restored)
