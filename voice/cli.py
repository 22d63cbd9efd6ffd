"""The ``orderup`` command line.

Each command lives in its own module exposing ``register(subparsers)``; heavy
imports happen inside the command handlers so ``orderup --help`` stays fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from voice import (
    cmd_calibrate,
    cmd_demo,
    cmd_listen,
    cmd_models,
    cmd_play,
    cmd_referee,
    cmd_replay,
    cmd_resume,
    cmd_say,
)

COMMANDS = (
    cmd_demo,
    cmd_play,
    cmd_referee,
    cmd_replay,
    cmd_resume,
    cmd_listen,
    cmd_say,
    cmd_calibrate,
    cmd_models,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
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
    except KeyboardInterrupt:
        print("orderup: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    return code


if __name__ == "__main__":
    sys.exit(main())
