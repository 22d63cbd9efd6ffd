"""Options checked at the door: every number finite and in range or one line and exit 2, and
the journal's options keyed by field, versioned, whatever the flags are called."""

from __future__ import annotations

import io
import json
import math
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from referee_helpers import in_process

from voice.audio.files import write_wav
from voice.cli import options as cli_options
from voice.cli.main import build_parser
from voice.cli.options import Flag, command_line, game_options
from voice.cli.referee import referee_transcript
from voice.table.games import GAMES
from voice.table.journal import JournalError, read_journal, restore
from voice.table.options import (
    OPTIONS_VERSION,
    ChaosteriaOptions,
    DessertsOptions,
    OptionError,
    Options,
    PoutineOptions,
    TableOptions,
)
from voice.table.transcript import parse_transcript

TRANSCRIPT = "1.0 Ann: got it\n1.5 Bob: pass\n"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("options")
    transcript = folder / "game.txt"
    transcript.write_text(TRANSCRIPT, "utf-8")
    mono = folder / "mono.wav"
    write_wav(mono, np.zeros((1600, 1), np.float32), 16000)
    return {"t": str(transcript), "mono": str(mono), "none": str(folder / "none.wav"),
            "nosetup": str(folder / "none.json")}


REFEREE = ("referee", "{game}", "--players", "Ann,Bob", "--transcript", "{t}")
COMMANDS = [
    # (argv with {placeholders}, the numeric flag, whether a value it accepts exits 0)
    *[((*REFEREE,), flag, True) for flag in ("--tie-window-ms", "--seed", "--trump-window",
                                             "--guest-timeout")],
    (tuple(a.replace("{game}", "poutine") for a in REFEREE), "--orders-shown", True),
    (tuple(a.replace("{game}", "chaosteria") for a in REFEREE), "--kitchen", True),
    (tuple(a.replace("{game}", "chaosteria") for a in REFEREE), "--bell-window", True),
    (("replay", "{mono}", "--game", "desserts", "--players", "Ann,Bob"), "--tie-window-ms", False),
    (("replay", "{mono}", "--game", "desserts", "--players", "Ann,Bob"), "--guest-timeout", False),
    (("play", "desserts", "--players", "Ann,Bob", "--setup", "{nosetup}"), "--rate", False),
    (("play", "desserts", "--players", "Ann,Bob", "--setup", "{nosetup}"), "--trump-window", False),
    (("listen", "{none}"), "--tie-window-ms", False),
    (("listen", "{none}"), "--join-gap", False),
    (("replay", "{mono}", "--game", "desserts", "--players", "Ann,Bob"), "--join-gap", False),
    (("replay", "{mono}", "--game", "desserts", "--players", "Ann,Bob"), "--clips-mb", False),
    (("play", "desserts", "--players", "Ann,Bob", "--setup", "{nosetup}"), "--clips-mb", False),
    (("say", "hello", "--voice", "zz-nowhere"), "--rate", False),
    (("calibrate", "--players", "Ann,Bob", "--from-wav", "{none}"), "--noise", False),
    (("calibrate", "--players", "Ann,Bob", "--from-wav", "{none}"), "--turn", False),
    (("models", "fetch", "no-such-model"), "--timeout-s", False),
]

BAD = ["nan", "NaN", "inf", "-inf", "-5", "-0.001", "1e308", "1e400", "9" * 30, "abc", ""]

values = st.one_of(
    st.sampled_from(BAD),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-(10**12), 10**12).map(str),
    st.floats(0, 100).map(lambda x: f"{x:.3f}"),
)


@pytest.mark.parametrize("argv, flag, accepted_exits_0", COMMANDS,
                         ids=[f"{c[0][0]} {c[1]}" for c in COMMANDS])
@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=values)
def test_every_number_is_checked_at_the_door(files: dict[str, str], argv: tuple[str, ...], flag: str,
                                             accepted_exits_0: bool, value: str) -> None:
    args = [a.format(game="desserts", **files) for a in argv]
    code, _, err = in_process(*args, f"{flag}={value}")
    refused = f"argument {flag}:" in err
    if refused or code != 0:
        assert code in (1, 2) and len(err.strip().splitlines()) == 1, err
        assert err.startswith(f"orderup {args[0]}"), err
    if refused:
        assert code == 2
    elif accepted_exits_0:
        assert code == 0, err
    if value in BAD or _not_finite(value):
        assert refused, err


def _not_finite(text: str) -> bool:
    try:
        return not math.isfinite(float(text))
    except ValueError:
        return False


@pytest.mark.parametrize("players", ["Ann,,Cat", "Ann,Bob,", "Ann,Bob,ann", "Ann,Ann",
                                     "Ann,B\x0bob", "Ann,Bo:b", "Ann,B\nob"])
@pytest.mark.parametrize("command", ["referee", "calibrate", "listen"])
def test_empty_duplicate_and_unprintable_players_are_refused(files: dict[str, str], command: str,
                                                 players: str) -> None:
    argv = {"referee": ["referee", "desserts", "--transcript", files["t"]],
            "calibrate": ["calibrate", "--from-wav", files["none"]],
            "listen": ["listen", files["none"]]}[command]
    code, _, err = in_process(*argv, "--players", players)
    assert code == 2 and err.startswith(f"orderup {command}: argument --players:"), err
    assert len(err.strip().splitlines()) == 1


def test_a_flag_of_another_game_is_refused(files: dict[str, str]) -> None:
    code, _, err = in_process("referee", "desserts", "--players", "Ann,Bob", "--transcript", files["t"],
                       "--kitchen", "4")
    assert code == 2 and err == "orderup referee: argument --kitchen: not an option of Just Desserts\n"


def test_the_join_gap_reaches_the_pipeline() -> None:
    from voice.cli.options import setup_from
    from voice.recognition.interface import create_recognizer
    from voice.table.loop import TableLoop
    from voice.table.referee import Referee

    args = build_parser().parse_args(["replay", "x.wav", "--game", "desserts", "--players",
                                      "Ann,Bob", "--join-gap", "0.4"])
    table = setup_from(args).options.table
    loop = TableLoop(Referee.start(setup_from(args)), create_recognizer("sphinx"), ("Ann", "Bob"),
                     join_gap_s=table.join_gap_s)
    assert table.join_gap_s == 0.4 and loop.pipeline.join_gap_s == 0.4


def test_options_are_validated_however_they_are_made() -> None:
    for bad in (math.nan, math.inf, -1.0, 61.0, "1.5", True):
        with pytest.raises(OptionError, match="trump_window_s"):
            DessertsOptions(trump_window_s=bad)  # type: ignore[arg-type]
    with pytest.raises(OptionError, match="kitchen"):
        ChaosteriaOptions(kitchen=2.5)  # type: ignore[arg-type]
    with pytest.raises(OptionError, match="variants"):
        PoutineOptions(variants=["gifts"])  # type: ignore[arg-type]
    with pytest.raises(OptionError, match="waitresses"):
        PoutineOptions(waitresses=("Ann", "ann"))
    with pytest.raises(OptionError, match="rate_wpm"):
        TableOptions(rate_wpm=0)
    assert TableOptions().tie_window_ms == 40.0 and DessertsOptions().guest_timeout_s == 20.0


game_values = st.one_of(
    st.builds(DessertsOptions, st.floats(0, 60), st.floats(0.001, 3600)),
    st.builds(PoutineOptions, st.sampled_from([(), ("Ann",), ("Ann", "Cat")]),
              st.sampled_from([(), ("gifts",), ("live", "gifts")]), st.sampled_from([None, 2, 3])),
    st.builds(ChaosteriaOptions, st.sampled_from(["house", "table"]), st.integers(1, 12),
              st.floats(0.001, 60)),
)
table_values = st.builds(TableOptions, st.floats(0, 1000), st.floats(0, 5), st.floats(1, 1e5),
                         st.integers(80, 450),
                         st.sampled_from([None, "en-gb"]))


@given(game_values, table_values)
def test_options_survive_json(game: object, table: TableOptions) -> None:
    options = Options(game, table)
    again = Options.from_json(type(game), json.loads(json.dumps(options.to_json())))
    assert again == options


@given(game_values)
def test_the_command_line_of_options_gives_them_back(game: object) -> None:
    name = next(g for g in GAMES.values() if g.options is type(game))
    args = build_parser().parse_args(["referee", name.name, "--transcript", "-", *command_line(game)])
    assert game_options(args, name) == game


def journal_of(tmp_path: Path, *flags: str) -> tuple[dict[str, object], Path]:
    path = tmp_path / f"j{len(list(tmp_path.iterdir()))}.jsonl"
    args = build_parser().parse_args(["referee", "desserts", "--players", "Ann,Bob", "--transcript",
                                      "-", "--journal", str(path), *flags])
    assert referee_transcript(args, parse_transcript(TRANSCRIPT.splitlines()), io.StringIO()) == 0
    return json.loads(path.read_text("utf-8").splitlines()[0].rpartition("\t")[0]), path


def framed(entry: dict[str, object]) -> str:
    """A journal line as a writer with checksums writes it: JSON, a tab, its CRC-32."""
    body = json.dumps(entry, ensure_ascii=False)
    return f"{body}\t{zlib.crc32(body.encode()):08x}"


def test_the_journal_records_typed_options_and_resume_reads_them(tmp_path: Path) -> None:
    head, path = journal_of(tmp_path, "--trump-window", "0.7", "--tie-window-ms", "25")
    assert head["options"] == {
        "version": OPTIONS_VERSION,
        "game": {"trump_window_s": 0.7, "guest_timeout_s": 20.0},
        "table": {"tie_window_ms": 25.0, "join_gap_s": 1.2, "clips_mb": 40.0, "rate_wpm": 170,
                  "voice": None},
    }
    restored = read_journal(str(path)).setup.options
    assert restored == Options(DessertsOptions(trump_window_s=0.7), TableOptions(tie_window_ms=25.0))
    _, state, _ = restore(str(path))
    assert state.config.trump_window_s == 0.7 and state.config.tie_window_ms == 25.0


def test_renaming_a_flag_does_not_change_the_journal(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    before, _ = journal_of(tmp_path, "--guest-timeout", "7.5")
    renamed = tuple(Flag("--leave-after", f.field, f.metavar, f.help) if f.flag == "--guest-timeout"
                    else f for f in cli_options.GAME_FLAGS[DessertsOptions])
    monkeypatch.setitem(cli_options.GAME_FLAGS, DessertsOptions, renamed)
    after, _ = journal_of(tmp_path, "--leave-after", "7.5")
    assert after == before and after["options"]["game"]["guest_timeout_s"] == 7.5  # type: ignore[index]


TABLE_JSON = {"tie_window_ms": 40.0, "join_gap_s": 1.2, "clips_mb": 40.0, "rate_wpm": 170,
              "voice": None}


@pytest.mark.parametrize("options, message", [
    ({"version": 99, "game": {}, "table": {}}, "version 99 is unknown"),
    ({"tie_window_ms": 40.0}, "version None is unknown"),
    ({"version": OPTIONS_VERSION, "game": {"trump_window_s": math.nan, "guest_timeout_s": 20.0},
      "table": TABLE_JSON}, "trump_window_s"),
    ({"version": OPTIONS_VERSION, "game": {"trump_window": 1.5},
      "table": TABLE_JSON}, "has the fields"),
])
def test_journal_options_that_cannot_be_read_back_are_one_line(
        tmp_path: Path, options: dict[str, object], message: str) -> None:
    head, path = journal_of(tmp_path)
    rest = path.read_text("utf-8").splitlines()[1:]
    path.write_text("\n".join([framed({**head, "options": options}), *rest]) + "\n", "utf-8")
    with pytest.raises(JournalError, match=message):
        read_journal(str(path))
    code, _, err = in_process("resume", str(path))
    assert code == 2 and len(err.strip().splitlines()) == 1 and message in err, err


def test_a_bug_in_any_command_is_one_line_with_its_details_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An error the app did not foresee ends a command in one line naming it and where its
    traceback is kept (a file in the temporary folder), the exit status 1, not a traceback."""

    class Broken:
        def __init__(self, *args: object) -> None:
            pass

        def render(self, text: str) -> None:
            raise ValueError(f"cannot render {text!r}")

    monkeypatch.setattr("voice.table.narration.Pyttsx3Synthesizer", Broken)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    code, out, err = in_process("say", "Maya first.", "--out", str(tmp_path / "maya.wav"))
    [kept] = tmp_path.glob("orderup-error-*.txt")
    assert (code, out) == (1, "")
    assert err == ("orderup say: stopped by an unexpected error (ValueError: cannot render "
                   f"'Maya first.'); its details are in {kept}.\n")
    details = kept.read_text()
    assert details.startswith("--- ") and ": orderup say\nTraceback (most recent call last):" in details
    assert details.endswith("ValueError: cannot render 'Maya first.'\n")
    assert not (tmp_path / "maya.wav").exists()
