"""``orderup referee``: drive a game from a text transcript of timed utterances."""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

from engine.core import ConfigError
from voice.games import GAMES, UnknownGame, lookup
from voice.referee import Referee, render_final_text, render_json, render_text
from voice.transcript import (
    Transcript,
    TranscriptError,
    parse_stack,
    read_transcript,
    speaker_name,
    split_list,
)

EXAMPLE = """\
transcript format (UTF-8, one utterance per line):
  @players Ann, Bob, Cat          directives first (the command line wins)
  @seed 7
  @stack guests: Rocky, Frosty    fix the top of a deck, top card first
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
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.set_defaults(handler=handle)


def add_game_arguments(p: argparse.ArgumentParser) -> None:
    """GAME, players, seed, stacked decks, tie window and each game's own options."""
    p.add_argument("game", metavar="GAME", help=f"one of: {', '.join(GAMES)}")
    p.add_argument("--players", type=split_list, metavar="A,B,C", help="seating order, to the right")
    p.add_argument("--seed", type=int, metavar="N", help="shuffle seed (default 0)")
    p.add_argument(
        "--stack", metavar="FILE",
        help="file of 'DECK: Card, Card, ...' lines fixing the top of decks (top first)",
    )
    p.add_argument(
        "--tie-window-ms", type=float, default=40.0, metavar="MS",
        help="calls whose onsets differ by less than this are simultaneous (default 40)",
    )
    for game in GAMES.values():
        game.add_options(p.add_argument_group(f"{game.title} options"))


def read_stack_file(path: str) -> dict[str, tuple[str, ...]]:
    stacks: dict[str, tuple[str, ...]] = {}
    try:
        with open(path, encoding="utf-8") as fh:
            for number, line in enumerate(fh, start=1):
                line = line.strip()
                if line and not line.startswith("#"):
                    try:
                        deck, cards = parse_stack(line.removeprefix("@stack").strip())
                    except ValueError as exc:
                        raise TranscriptError(path, number, str(exc)) from exc
                    stacks[deck] = cards
    except (OSError, UnicodeDecodeError) as exc:
        raise TranscriptError(path, 0, f"cannot read: {exc}") from exc
    return stacks


def fail(message: str) -> int:
    print(f"orderup: error: {message}", file=sys.stderr)
    return 2


def handle(args: argparse.Namespace) -> int:
    try:
        transcript = read_transcript(args.transcript)
    except TranscriptError as exc:
        return fail(str(exc))
    return referee_transcript(args, transcript, sys.stdout)


def referee_transcript(args: argparse.Namespace, transcript: Transcript, out: TextIO) -> int:
    """Referee ``transcript`` with the options in ``args``; print events to ``out``."""
    try:
        game = lookup(args.game)
        stacks = dict(transcript.stacks)
        if args.stack:
            stacks.update(read_stack_file(args.stack))
        players = args.players or transcript.players
        if not players:
            return fail("no players: give --players A,B,C or an '@players' line in the transcript")
        seed = args.seed if args.seed is not None else (transcript.seed or 0)
        unknown = set(stacks) - set(game.decks)
        if unknown:
            return fail(f"{game.title} has no deck {', '.join(sorted(unknown))}; "
                        f"stackable: {', '.join(game.decks)}")
        state = game.new_game(game.make_config(tuple(players), stacks, vars(args)), seed)
    except (UnknownGame, ConfigError, TranscriptError) as exc:
        return fail(str(exc))

    def emit(events: list[Any]) -> None:
        for event in events:
            print(render_json(event) if args.json else render_text(event), file=out, flush=True)

    referee = Referee(game, state)
    emit(state.opening)
    error = transcript.error
    for u in transcript.utterances:
        player = speaker_name(u.speaker, state.config.players)
        if player is None:
            error = TranscriptError(
                transcript.path, u.line,
                f"unknown speaker {u.speaker!r} (players: {', '.join(state.config.players)})",
            )
            break
        emit(referee.hear(u.onset_s, player, u.text))
    if error is not None:
        print(f"orderup: error: {error} (nothing after it was applied)", file=sys.stderr)
        if args.json:
            print(render_json({"type": "error", "line": error.line, "message": str(error)}), file=out)
    final = referee.final()
    print(render_json(final) if args.json else render_final_text(final), file=out)
    return 1 if error is not None else 0
