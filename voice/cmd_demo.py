"""``orderup demo``: referee a bundled game so everyone hears what the app does."""

from __future__ import annotations

import argparse
import sys
from importlib import resources

from voice.cmd_referee import referee_transcript
from voice.transcript import parse_transcript

DEMO = "demo_desserts.txt"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "demo",
        help="referee a bundled short game of Just Desserts, no microphone needed",
        description="Plays a bundled transcript of a short Just Desserts game through the "
        "referee and prints what the app says.",
    )
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    text = resources.files("voice").joinpath("data", DEMO).read_text("utf-8")
    transcript = parse_transcript(text.splitlines(), DEMO)
    from voice.cli import build_parser

    argv = ["referee", "desserts", "--transcript", DEMO] + (["--json"] if args.json else [])
    options = build_parser().parse_args(argv)
    print("orderup demo: a short game of Just Desserts, refereed from a transcript.\n")
    return referee_transcript(options, transcript, sys.stdout)
