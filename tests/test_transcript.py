"""Transcript parsing and the ``orderup referee`` command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from referee_helpers import kinds, referee

from engine.desserts import Favorite, GotIt, Pass, Serve
from voice.recognition.intents import UnparseableUtterance
from voice.recognition.intents.desserts import parse
from voice.table.transcript import parse_transcript


def run_cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "voice.cli", *argv], capture_output=True, text=True, check=False)


def test_directives_comments_and_utterances() -> None:
    t = parse_transcript(
        ["# a comment", "", "@players Ann, Bob ,Cat", "@seed 7", "@stack guests: Rocky, Frosty",
         "1.5 Ann: got it!", "2 Bob : pass"],
        "x.txt",
    )
    assert t.error is None
    assert t.players == ("Ann", "Bob", "Cat") and t.seed == 7
    assert t.stacks == {"guests": ("Rocky", "Frosty")}
    assert [(u.onset_s, u.speaker, u.text, u.line) for u in t.utterances] == [
        (1.5, "Ann", "got it!", 6), (2.0, "Bob", "pass", 7)]


@pytest.mark.parametrize(
    "lines, message",
    [
        (["1.0 Ann: pass", "0.5 Bob: pass"], "x.txt:2: onset 0.500 s is before"),
        (["1.0 Ann: pass", "Bob said pass"], "x.txt:2: expected 'SECONDS SPEAKER: TEXT'"),
        (["@seed seven"], "x.txt:1: @seed: expected a whole number"),
        (["@colour blue"], "x.txt:1: unknown directive @colour"),
        (["1.0 Ann: pass", "@seed 3"], "x.txt:2: directives must come before"),
        (["@end soon"], "x.txt:1: expected seconds (a number, at least 0), got 'soon'"),
        (["@end -1"], "x.txt:1: expected seconds"),
    ],
)
def test_bad_lines_stop_parsing_and_name_the_line(lines: list[str], message: str) -> None:
    t = parse_transcript(lines, "x.txt")
    assert t.error is not None and str(t.error).startswith(message)
    assert len(t.utterances) == (1 if lines[0].startswith("1.0") else 0)


@pytest.mark.parametrize(
    "text, action",
    [
        ("Got it!", GotIt("Ann", 1.0)),
        ("i got it", GotIt("Ann", 1.0)),
        ("PASS.", Pass("Ann", 1.0)),
        ("favorite", Favorite("Ann", 1.0)),
        ("Favourite: Rocky Road!", Favorite("Ann", 1.0, ("Rocky Road",))),
        ("brownie and whipped cream", Serve("Ann", 1.0, ("Brownie", "Whipped Cream"))),
        ("the pound cake, whipped cream and fruit salad",
         Serve("Ann", 1.0, ("Pound Cake", "Whipped Cream", "Fruit Salad"))),
        ("Vanilla ice cream and an ice cream sandwich",
         Serve("Ann", 1.0, ("Vanilla Ice Cream", "Ice Cream Sandwich"))),
    ],
)
def test_desserts_intents(text: str, action: object) -> None:
    assert parse(text, "Ann", 1.0) == action


@pytest.mark.parametrize("text", ["", "got", "brownie and the moon", "I want cake",
                                  "brownie, eclair, sorbet and pound cake"])
def test_desserts_nonsense_is_unparseable(text: str) -> None:
    with pytest.raises(UnparseableUtterance):
        parse(text, "Ann", 1.0)


def test_the_last_line_is_decided_once_its_tie_window_has_closed() -> None:
    """A call waits out the tie window for rivals; the transcript's last one must not be
    left waiting when it ends (here Cat's hot dog, offered last, completes an order)."""
    events, final, code = referee("poutine", """
        @players Ann, Bob, Cat
        @seed 5
        @stack orders: Order 17, Order 3, Order 7, Order 11, Order 2, Order 8
        1.0 Ann: gravy
        2.0 Bob: fries
        3.0 Cat: hot dog
    """)
    assert code == 0
    assert events[-2]["say"] == "Cat's hot dog for order 17."
    assert events[-1]["type"] == "order_complete" and events[-1]["t"] == 3.04
    assert final["players"]["Cat"]["cards_left"] == 15


def test_the_clock_runs_on_to_the_end_of_the_transcript() -> None:
    """``@end``: the table went on listening after the last line; timers due by then fire."""
    game = """
        @players Ann, Bob
        @stack guests: Rocky
        {end}
        1.0 Ann: got it
    """
    events, _, _ = referee("desserts", game.format(end=""))
    assert kinds(events)[-1] == "first" and events[-1]["t"] == 1.04
    events, final, code = referee("desserts", game.format(end="@end 60"))
    assert code == 0
    assert [(e["type"], e["t"]) for e in events if e["type"] in ("erroneous", "timeout")] == [
        ("erroneous", 11.04), ("timeout", 45.99)]
    assert final["players"]["Ann"]["dirty_dishes"] == 1


def test_no_line_may_come_after_the_end() -> None:
    t = parse_transcript(["@end 1.5", "1.0 Ann: pass", "2.0 Bob: pass"], "x.txt")
    assert t.error is not None and str(t.error).startswith("x.txt:3: onset 2.000 s is after the @end")
    assert len(t.utterances) == 1 and t.end_s == 1.5


def test_a_transcript_with_an_unknown_speaker_is_refused_whole() -> None:
    events, final, code = referee("desserts", """
        @players Ann, Bob
        @stack guests: Rocky
        1.0 Ann: got it
        2.0 Zed: got it
        3.0 Ann: rocky road
    """)
    assert code == 2 and events == [] and final == {}  # nothing refereed, nothing printed


def test_command_line_wins_over_directives(tmp_path: Path) -> None:
    stack = tmp_path / "stack.txt"
    stack.write_text("guests: Frosty\n")
    events, final, code = referee("desserts", "@players Ann, Bob\n@stack guests: Rocky\n",
                                  "--players", "Cat,Dan,Eve", "--stack", str(stack))
    assert code == 0
    assert list(final["players"]) == ["Cat", "Dan", "Eve"]
    assert events[1]["guest"] == "Frosty"


def test_cli_referee_text_output(tmp_path: Path) -> None:
    path = tmp_path / "game.txt"
    path.write_text("@stack guests: Rocky\n1.0 Ann: got it\n2.0 Ann: rocky road\n", "utf-8")
    run = run_cli("referee", "jd", "--players", "Ann,Bob", "--seed", "3", "--transcript", str(path))
    assert run.returncode == 0, run.stderr
    assert "Ann first." in run.stdout and "Ann takes Rocky." in run.stdout
    assert "Final scores (game not finished):" in run.stdout


def test_cli_json_lines_end_with_final(tmp_path: Path) -> None:
    path = tmp_path / "game.txt"
    path.write_text("1.0 Ann: pass\n", "utf-8")
    run = run_cli("referee", "desserts", "--players", "Ann,Bob", "--transcript", str(path), "--json")
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    assert all("type" in line for line in lines)
    assert lines[-1]["type"] == "final" and set(lines[-1]["players"]) == {"Ann", "Bob"}


@pytest.mark.parametrize(
    "argv, message",
    [
        (["referee", "chess", "--players", "A,B", "--transcript", "{t}"], "unknown game 'chess'"),
        (["referee", "desserts", "--transcript", "{t}"], "no players"),
        (["referee", "desserts", "--players", "A,B", "--transcript", "/nonexistent"], "cannot read"),
        (["referee", "desserts", "--players", "A,A", "--transcript", "{t}"], "given twice"),
        (["referee", "desserts", "--players", "A,B", "--stack", "{t}", "--transcript", "{t}"],
         "has no deck 1.0 a"),
        (["models", "fetch", "no-such-model"], "unknown model 'no-such-model'"),
    ],
)
def test_cli_errors_are_one_clear_line(tmp_path: Path, argv: list[str], message: str) -> None:
    path = tmp_path / "t.txt"
    path.write_text("1.0 A: pass\n", "utf-8")
    run = run_cli(*[a.replace("{t}", str(path)) for a in argv])
    assert run.returncode == 2
    assert message in run.stderr and "Traceback" not in run.stderr


def test_help_teaches_the_transcript_format() -> None:
    run = run_cli("referee", "--help")
    assert run.returncode == 0
    assert "SECONDS SPEAKER: TEXT" in run.stdout and "--tie-window-ms" in run.stdout


def test_demo_transcript_plays_to_the_end() -> None:
    run = run_cli("demo", "--transcript")
    assert run.returncode == 0, run.stderr
    assert "Game over." in run.stdout


@pytest.mark.parametrize("text, message", [
    ("@seed abc\n1.0 A: pass\n", "t.txt:1: @seed: expected a whole number from 0 to 4294967295, got 'abc'"),
    ("1.0 A: pass\n0.5 B: pass\n", "t.txt:2: onset 0.500 s is before the previous line's 1.000 s"),
    ("1.0 A: pass\n2.0 Zed: pass\n", "t.txt:2: unknown speaker 'Zed'"),
])
def test_a_bad_transcript_is_refused_whole_in_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "t.txt"
    path.write_text(text, "utf-8")
    run = run_cli("referee", "desserts", "--players", "A,B", "--transcript", str(path))
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.startswith(f"orderup referee: {tmp_path / message}")
    assert len(run.stderr.splitlines()) == 1


def test_a_byte_order_mark_is_not_part_of_the_first_line(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_bytes("\ufeff@players Ann, Bob\n1.0 Ann: pass\n".encode())
    run = run_cli("referee", "desserts", "--transcript", str(path), "--json")
    assert run.returncode == 0, run.stderr
    assert set(json.loads(run.stdout.splitlines()[-1])["players"]) == {"Ann", "Bob"}


def test_a_control_character_quoted_back_does_not_break_the_error_line(tmp_path: Path) -> None:
    stack = tmp_path / "stack.txt"
    stack.write_bytes(b"g\x0bests: Rocky\n")  # a vertical tab, which splitlines() breaks at
    game = tmp_path / "t.txt"
    game.write_text("1.0 A: pass\n", "utf-8")
    run = run_cli("referee", "desserts", "--players", "A,B", "--stack", str(stack),
                  "--transcript", str(game))
    assert run.returncode == 2
    line = "orderup referee: Just Desserts has no deck g\\x0bests; stackable: guests"
    assert run.stderr.splitlines() == [line]
