"""``orderup referee``: drive a game from a text transcript of timed utterances."""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from engine.core import ConfigError
from voice.cli.options import add_game_arguments, add_output_arguments, setup_from
from voice.cli.output import Output, fail, finish_transcript
from voice.table.games import UnknownGame
from voice.table.journal import JournalError, Setup
from voice.table.referee import Referee
from voice.table.transcript import Transcript, TranscriptError, read_transcript

EXAMPLE = """\
transcript format (UTF-8, one utterance per line):
  @players Ann, Bob, Cat          directives first (the command line wins)
  @seed 7
  @stack guests: Rocky, Frosty    fix the top of a deck, top card first
  @end 60                         the table listened until then (default: the last line)
  # a comment
  2.350 Ann: got it               SECONDS SPEAKER: TEXT, in time order
  2.371 Bob: got it
  4.100 Ann: rocky road

example:
  orderup referee desserts --players Ann,Bob,Cat --seed 7 --transcript game.txt --json
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "referee",
        help="referee a game from a transcript of timed utterances",
        description="Referee a game from a text transcript: the app's announcements and "
        "verdicts are printed one per line (or as JSON objects with --json).",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_game_arguments(p)
    p.add_argument("--transcript", required=True, metavar="FILE", help="the transcript to referee")
    add_output_arguments(p)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    try:
        transcript = read_transcript(args.transcript)
    except TranscriptError as exc:
        return fail(args.command, str(exc))
    return referee_transcript(args, transcript, sys.stdout)


def referee_transcript(args: argparse.Namespace, transcript: Transcript, out: TextIO) -> int:
    """Referee ``transcript`` as the flags in ``args`` say; print events to ``out``."""
    try:
        setup = setup_from(args, transcript)
    except (UnknownGame, ConfigError, TranscriptError) as exc:
        return fail(args.command, str(exc))
    return run_transcript(setup, transcript, Output(args.command, out, args.json),
                          journal=args.journal, realtime=args.realtime)


def run_transcript(setup: Setup, transcript: Transcript, output: Output, *,
                   journal: str | None = None, realtime: bool = False) -> int:
    """Referee the game ``setup`` describes from ``transcript`` (journaled to ``journal``),
    paced in real time if asked; the exit status."""
    try:
        referee = Referee.start(setup, journal)
    except (ConfigError, JournalError) as exc:
        return fail(output.command, str(exc))
    return finish_transcript(referee, transcript, transcript.utterances, output, opening=True,
                             realtime=realtime)
