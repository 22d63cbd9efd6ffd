"""The ``orderup`` command line.

Each command lives in its own module exposing ``register(subparsers)``; heavy
imports happen inside the command handlers so ``orderup --help`` stays fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from voice.cli import (
    calibrate,
    demo,
    dispute,
    listen,
    models,
    play,
    referee,
    replay,
    resume,
    say,
)
from voice.cli.options import Parser, UsageError
from voice.cli.output import fail, unexpected

COMMANDS = (
    demo,
    play,
    referee,
    replay,
    resume,
    dispute,
    listen,
    say,
    calibrate,
    models,
)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="orderup",
        description=(
            "orderup: an offline, voice-refereed party app for Just Desserts, "
            "Miss Poutine and Chaosteria."
        ),
        epilog="Run 'orderup COMMAND --help' for the options of one command.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in COMMANDS:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.handler(args)
    except UsageError as exc:
        return fail(args.command, str(exc))
    except KeyboardInterrupt:
        print("orderup: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # noqa: BLE001 - a bug: one line, its details kept to report it with
        print(f"{unexpected(args.command, exc)}.", file=sys.stderr)
        return 1
    return code
