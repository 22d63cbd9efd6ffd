#!/usr/bin/env python3
"""Regenerate the golden playthroughs: the --json output of ``orderup referee``.

Cases: the bundled demo transcript, and every ``tests/golden/GAME-NAME.txt``
(a first line ``# options: --waitresses Ann,Cat`` adds command-line options).
Each case's expected output is written beside it as ``GAME-NAME.jsonl``.
Run: .venv/bin/python scripts/golden.py          (rewrite the expected outputs)
     .venv/bin/python scripts/golden.py --check  (compare; exit 1 naming what differs)
"""

from __future__ import annotations

import difflib
import io
import sys
from pathlib import Path

from voice.cli.main import build_parser
from voice.cli.referee import referee_transcript
from voice.table.transcript import parse_transcript

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
DEMO = ROOT / "voice" / "data" / "demo" / "desserts.txt"


def cases() -> list[tuple[str, Path, Path]]:
    """(game, transcript, expected output) for every golden playthrough."""
    found = [("desserts", DEMO, GOLDEN / "desserts-demo.jsonl")]
    for path in sorted(GOLDEN.glob("*-*.txt")):
        found.append((path.name.split("-")[0], path, path.with_suffix(".jsonl")))
    return found


def playthrough(game: str, transcript: Path) -> str:
    lines = transcript.read_text("utf-8").splitlines()
    options = lines[0].removeprefix("# options:").split() if lines[0].startswith("# options:") else []
    argv = ["referee", game, "--transcript", str(transcript), "--json", *options]
    args = build_parser().parse_args(argv)
    parsed = parse_transcript(lines, transcript.name)
    out = io.StringIO()
    referee_transcript(args, parsed, out)
    return out.getvalue()


def main(argv: list[str]) -> int:
    check = "--check" in argv
    failed = 0
    for game, transcript, expected in cases():
        actual = playthrough(game, transcript)
        name = expected.relative_to(ROOT)
        if not check:
            expected.write_text(actual, "utf-8")
            print(f"wrote {name}")
            continue
        old = expected.read_text("utf-8") if expected.exists() else ""
        if actual != old:
            failed += 1
            diff = difflib.unified_diff(old.splitlines(), actual.splitlines(), str(name), "now", lineterm="")
            print("\n".join(list(diff)[:40]))
        else:
            print(f"ok {name}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
