"""``orderup models [fetch NAME [--url URL]]``: list speech models, or download one."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from voice.cli.options import in_range, number
from voice.cli.output import fail
from voice.table.options import Bounds

TIMEOUT_S = Bounds(0, 600, "seconds", low_open=True)
DEFAULT_TIMEOUT_S = 15.0


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("models", help="list speech models, or fetch one")
    parser.set_defaults(handler=run, action=None)
    sub = parser.add_subparsers(dest="action", metavar="ACTION")
    fetch = sub.add_parser("fetch", help="download and verify a model")
    fetch.add_argument("name", help="catalogue name, e.g. vosk-en-small")
    fetch.add_argument("--url", help="download from this URL (a mirror) instead")
    fetch.add_argument("--dest", type=Path, help="directory to install into")
    fetch.add_argument("--timeout-s", type=number(TIMEOUT_S), default=DEFAULT_TIMEOUT_S,
                       help=in_range("network timeout", TIMEOUT_S, DEFAULT_TIMEOUT_S))


def run(args: argparse.Namespace) -> int:
    from voice.recognition import models

    if args.action == "fetch":
        try:
            path = models.fetch(args.name, args.dest, args.url, args.timeout_s)
        except (models.ModelFetchError, models.ModelNotFound) as exc:
            return fail(args.command, str(exc))
        print(f"{args.name}: installed in {path}")
        return 0
    for entry in models.CATALOGUE:
        found = models.locate(entry.name)
        status = f"present  {found}" if found else "missing"
        print(f"{entry.name:15s} {entry.backend:6s} {status}\n{'':22s}{entry.description}")
    print("search path: " + ", ".join(str(d) for d in models.search_dirs()))
    return 0
