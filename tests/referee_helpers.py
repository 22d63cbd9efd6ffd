"""Run transcripts through the real ``orderup referee`` path for rule tests, and orderup as
a process that Ctrl-C stops."""

from __future__ import annotations

import contextlib
import io
import json
import sys
import textwrap
from typing import Any

from voice.cli.main import build_parser, main
from voice.cli.referee import referee_transcript
from voice.table.transcript import parse_transcript


def referee(game: str, transcript: str, *argv: str) -> tuple[list[dict[str, Any]], dict[str, Any], int]:
    """Referee ``transcript`` (dedented) as ``orderup referee GAME ... --json`` would.

    Returns the events (JSON objects, final line excluded), the final line and
    the exit code.
    """
    args = build_parser().parse_args(["referee", game, "--transcript", "-", "--json", *argv])
    parsed = parse_transcript(textwrap.dedent(transcript).splitlines(), "test.txt")
    out = io.StringIO()
    code = referee_transcript(args, parsed, out)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    finals = [line for line in lines if line["type"] == "final"]
    return [line for line in lines if line["type"] != "final"], (finals[0] if finals else {}), code


def in_process(*argv: str) -> tuple[int, str, str]:
    """``orderup ARGV`` in this process: exit status, stdout, stderr (an exception escapes)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def said(events: list[dict[str, Any]]) -> list[str]:
    return [e["say"] for e in events if e.get("say")]


CTRL_C_HEARD = ("import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
                "runpy.run_module('voice.cli', run_name='__main__', alter_sys=True)")


def orderup_argv(*argv: str) -> list[str]:
    """``python -m voice.cli ARGV`` with Ctrl-C (SIGINT) raising KeyboardInterrupt as at a
    terminal, even where the tests run in the background: a shell starts background jobs with
    SIGINT ignored, and a Python started so never raises KeyboardInterrupt."""
    return [sys.executable, "-c", CTRL_C_HEARD, *argv]
