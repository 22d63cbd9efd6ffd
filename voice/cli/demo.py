"""``orderup demo``: a recorded game played through the whole app, no microphone needed."""

from __future__ import annotations

import argparse
import sys
from importlib import resources

from voice.cli.options import add_backend_argument
from voice.cli.output import Output
from voice.cli.referee import run_transcript
from voice.cli.replay import replay
from voice.recognition.interface import SYNTHESISED_BACKEND
from voice.table.games import lookup
from voice.table.options import Options
from voice.table.referee import game_setup
from voice.table.transcript import parse_transcript

DEMO = "demo"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "demo",
        help="play a bundled recording of a game of Just Desserts through the whole app",
        description="Replays a bundled recording of a short game of Just Desserts — three "
        "players at a table, one microphone each, the app's own voice from its speaker — "
        "through onset detection, recognition, arbitration and the rules, printing what the "
        "app hears and says as it happens, starting from the table's calibration as "
        "'orderup play' does. The recording and its calibration are made by "
        "scripts/make_demo.py.",
    )
    p.add_argument("--transcript", action="store_true",
                   help="referee the demo's transcript instead of its recording (instant)")
    p.add_argument("--realtime", action="store_true", help="play at the pace of the recording")
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    add_backend_argument(p, SYNTHESISED_BACKEND,
                         "the demo's players are synthesised voices, which it hears better")
    p.add_argument("--disputes", metavar="DIR",
                   help="draw every close call of the game, with its calls' sound, into DIR "
                   "(see 'orderup replay --disputes')")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    folder = resources.files("voice").joinpath("data", DEMO)
    text = folder.joinpath("desserts.txt").read_text("utf-8")
    transcript = parse_transcript(text.splitlines(), "desserts.txt")
    game = lookup("desserts")
    setup = game_setup(game, Options(game.options()), transcript)
    output = Output(args.command, sys.stdout, args.json)
    if args.transcript:
        return run_transcript(setup, transcript, output, realtime=args.realtime)
    if not args.json:
        print("orderup demo: a recorded game of Just Desserts, heard through three microphones.\n"
              "Lines starting 'heard' are what the app recognised; the others are what it says.\n")
    return replay(setup, str(folder.joinpath("desserts.ogg")), output, backend=args.backend,
                  realtime=args.realtime, disputes=args.disputes)
