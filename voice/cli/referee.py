"""``orderup referee``: drive a game from a text transcript of timed utterances."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any, TextIO

from engine.core import ConfigError, Event
from voice.table.games import GAMES, UnknownGame, lookup
from voice.table.journal import Journal, JournalError, Setup
from voice.table.referee import Referee, render_final_text, render_json, render_text
from voice.table.transcript import (
    Transcript,
    TranscriptError,
    Utterance,
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


def add_output_arguments(p: argparse.ArgumentParser, journal: bool = True) -> None:
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    if journal:
        p.add_argument(
            "--journal", metavar="FILE",
            help="append every step to this journal as it happens (restore: 'orderup resume FILE')",
        )
    p.add_argument(
        "--realtime", action="store_true",
        help="pace the transcript in real time, as a live table would hear it",
    )


def add_game_arguments(p: argparse.ArgumentParser, game_option: bool = False) -> None:
    """GAME, players, seed, stacked decks, tie window and each game's own options."""
    if game_option:
        p.add_argument("--game", required=True, metavar="GAME", help=f"one of: {', '.join(GAMES)}")
    else:
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


def stopped(referee: Referee, how: str) -> int:
    """After Ctrl-C: close the journal and say how to go on."""
    referee.close()
    print(f"orderup: stopped. {resume_hint(referee.journal, how)}", file=sys.stderr)
    return 130


def handle(args: argparse.Namespace) -> int:
    try:
        transcript = read_transcript(args.transcript)
    except TranscriptError as exc:
        return fail(str(exc))
    return referee_transcript(args, transcript, sys.stdout)


def make_referee(args: argparse.Namespace, transcript: Transcript | None = None) -> Referee:
    """The referee of the game the options (then the transcript's directives) describe.

    Raises a ``ValueError`` subclass naming what is wrong.
    """
    game = lookup(args.game)
    stacks = dict(transcript.stacks) if transcript else {}
    if args.stack:
        stacks.update(read_stack_file(args.stack))
    players = args.players or (transcript.players if transcript else None)
    if not players:
        where = " or an '@players' line in the transcript" if transcript else ""
        raise ConfigError(f"no players: give --players A,B,C{where}")
    seed = args.seed if args.seed is not None else ((transcript.seed if transcript else None) or 0)
    unknown = set(stacks) - set(game.decks)
    if unknown:
        raise ConfigError(
            f"{game.title} has no deck {', '.join(sorted(unknown))}; stackable: {', '.join(game.decks)}"
        )
    setup = Setup(game.name, tuple(players), stacks, vars(args), seed)
    _, state = setup.new_state()
    journal = Journal(args.journal, setup) if args.journal else None
    return Referee(game, state, journal)


def referee_transcript(args: argparse.Namespace, transcript: Transcript, out: TextIO) -> int:
    """Referee ``transcript`` with the options in ``args``; print events to ``out``."""
    try:
        referee = make_referee(args, transcript)
    except (UnknownGame, ConfigError, TranscriptError, JournalError) as exc:
        return fail(str(exc))
    emit(args, out, referee.state.opening)
    return run_utterances(args, referee, transcript, transcript.utterances, out)


def emit(args: argparse.Namespace, out: TextIO, events: Sequence[Event | dict[str, Any]]) -> None:
    """Print events (and the final line) as text or JSON lines."""
    for event in events:
        if args.json:
            line = render_json(event)
        else:
            line = render_text(event) if isinstance(event, Event) else render_final_text(event)
        print(line, file=out, flush=True)


def run_utterances(
    args: argparse.Namespace,
    referee: Referee,
    transcript: Transcript,
    utterances: Sequence[Utterance],
    out: TextIO,
) -> int:
    """Feed utterances to the referee (paced if ``--realtime``), let the game clock run to
    where the transcript ends (:meth:`Transcript.ends_at`: a last call waits out the tie
    window for rivals before the rules take it), then print the final line."""
    error = transcript.error
    players = referee.state.config.players
    clock = time.monotonic() - referee.state.t

    def wait(t: float) -> None:
        if args.realtime:
            time.sleep(max(0.0, clock + t - time.monotonic()))

    try:
        for u in utterances:
            player = speaker_name(u.speaker, players)
            if player is None:
                error = TranscriptError(
                    transcript.path, u.line, f"unknown speaker {u.speaker!r} (players: {', '.join(players)})"
                )
                break
            wait(u.onset_s)
            emit(args, out, referee.hear(u.onset_s, player, u.text))
        end = transcript.ends_at(referee.state.config.tie_window_ms / 1000)
        if error is None and end is not None:
            wait(end)
            emit(args, out, referee.tick(end))
    except KeyboardInterrupt:
        return stopped(referee, f"--transcript {transcript.path}")
    referee.close()
    if error is not None:
        print(f"orderup: error: {error} (nothing after it was applied)", file=sys.stderr)
        if args.json:
            emit(args, out, [{"type": "error", "line": error.line, "message": str(error)}])
    emit(args, out, [referee.final()])
    return 1 if error is not None else 0
