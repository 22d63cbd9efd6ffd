"""Nothing lost: the journal restores the exact state, even after SIGKILL mid-game."""

from __future__ import annotations

import argparse
import errno
import json
import os
import re
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import pytest
from referee_helpers import orderup_argv

from voice.audio.live import MicInput
from voice.cli.play import default_journal, play_live
from voice.recognition.interface import RecognizerError
from voice.table.journal import Journal, JournalError, Setup, read_journal, replay_journal, restore
from voice.table.options import DessertsOptions, Options
from voice.table.referee import Referee

PHRASES = ["got it", "pass", "rocky road", "brownie and whipped cream", "apple pie", "banana split",
           "what", "favorite eclair", "sorbet"]


def fast_transcript(path: Path, lines: int = 120) -> None:
    body = ["@players Ann, Bob, Cat", "@seed 5"]
    for i in range(lines):
        speaker = ("Ann", "Bob", "Cat")[(i * 7) % 3]
        body.append(f"{0.03 * i:.3f} {speaker}: {PHRASES[(i * 5) % len(PHRASES)]}")
    path.write_text("\n".join(body) + "\n", "utf-8")


def run_orderup(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "voice.cli", *argv], capture_output=True, text=True,
                          check=False)


def orderup(*argv: str) -> list[str]:
    run = run_orderup(*argv)
    assert run.returncode == 0, run.stderr
    return run.stdout.splitlines()


def framed(entry: dict[str, Any]) -> str:
    """A journal line as the format says: the JSON, a tab, the CRC-32 of its UTF-8 bytes."""
    body = json.dumps(entry, ensure_ascii=False)
    return f"{body}\t{zlib.crc32(body.encode()):08x}\n"


def refereed(tmp_path: Path, lines: int = 20) -> tuple[Path, Path, list[str]]:
    """A transcript, its journal and the uninterrupted run's output (JSON lines)."""
    transcript = tmp_path / "game.txt"
    fast_transcript(transcript, lines)
    journal = tmp_path / "j.jsonl"
    out = orderup("referee", "desserts", "--transcript", str(transcript), "--json",
                  "--guest-timeout", "0.5", "--journal", str(journal))
    return transcript, journal, out


@pytest.mark.slow
def test_sigkill_mid_game_then_resume_matches_an_uninterrupted_run(tmp_path: Path) -> None:
    transcript = tmp_path / "game.txt"
    fast_transcript(transcript)
    full_journal = tmp_path / "full.jsonl"
    uninterrupted = orderup("referee", "desserts", "--transcript", str(transcript), "--json",
                            "--guest-timeout", "0.5", "--journal", str(full_journal))

    journal = tmp_path / "killed.jsonl"
    proc = subprocess.Popen(
        orderup_argv("referee", "desserts", "--transcript", str(transcript), "--json",
                     "--guest-timeout", "0.5", "--realtime", "--journal", str(journal)),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (not journal.exists() or len(journal.read_text().splitlines()) < 30):
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    killed_at = read_journal(str(journal))
    assert 0 < len(killed_at.heard) < 120, "the kill should land mid-game"

    # The restored state equals the uninterrupted game after the same actions.
    _, state, _ = restore(str(journal))
    binding, full_state, full = restore(str(full_journal))
    assert full.actions[: len(killed_at.actions)] == killed_at.actions
    prefix = binding.new_game(full_state.config, full_state.seed)
    for action in killed_at.actions:
        prefix.apply(action)
    assert state.summary() == prefix.summary() and state.t == prefix.t

    # Resuming the same transcript finishes exactly as the uninterrupted run.
    resumed = orderup("resume", str(journal), "--transcript", str(transcript), "--json")
    assert json.loads(resumed[0])["type"] == "resumed"
    assert json.loads(resumed[-1]) == json.loads(uninterrupted[-1])
    assert read_journal(str(journal)).actions == full.actions


def test_torn_last_line_is_dropped_with_a_warning(tmp_path: Path) -> None:
    _, journal, _ = refereed(tmp_path)
    lines = journal.read_bytes().count(b"\n")
    journal.write_bytes(journal.read_bytes()[:-25])
    torn = journal.read_bytes()
    restored = read_journal(str(journal))
    assert restored.warnings == (
        f"{journal}:{lines}: an unfinished last line (a crash mid-write) is left out",
    )
    assert journal.read_bytes() == torn  # reading changes nothing


@pytest.mark.parametrize("tear", ["cut mid-line", "NUL bytes", "bad checksum"])
def test_a_torn_tail_is_cut_off_and_kept_then_the_game_resumes_twice(tmp_path: Path, tear: str) -> None:
    transcript, journal, uninterrupted = refereed(tmp_path)
    whole = journal.read_bytes()
    lines = whole.count(b"\n")
    last = whole.rstrip(b"\n").rsplit(b"\n", 1)[1]
    good = whole[: len(whole) - len(last) - 1]
    torn = {"cut mid-line": whole[:-25], "NUL bytes": good + b"\0" * 300,
            "bad checksum": good + last.replace(b'"heard"', b'"heard" ') + b"\n"}[tear]
    journal.write_bytes(torn)

    first = run_orderup("resume", str(journal), "--transcript", str(transcript), "--json")
    assert first.returncode == 0, first.stderr
    [copy] = tmp_path.glob("j.jsonl.torn-*")
    assert first.stderr == (
        f"orderup resume: warning: {journal}:{lines}: an unfinished last line (a crash mid-write) was "
        f"cut off; the journal as it was is kept in {copy}\n"
    )
    assert copy.read_bytes() == torn and copy.stat().st_mode & 0o777 == 0o600
    assert json.loads(first.stdout.splitlines()[-1]) == json.loads(uninterrupted[-1])
    assert journal.read_bytes().startswith(good)

    again = run_orderup("resume", str(journal), "--transcript", str(transcript), "--json")
    assert again.returncode == 0 and again.stderr == ""
    assert json.loads(again.stdout.splitlines()[-1]) == json.loads(uninterrupted[-1])
    assert read_journal(str(journal)).actions == restore(str(tmp_path / "j.jsonl"))[2].actions


def test_a_hand_edited_line_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    transcript, journal, _ = refereed(tmp_path)
    lines = journal.read_bytes().split(b"\n")
    lines[2] = re.sub(rb'"player": "(Ann|Bob|Cat)"', rb'"player": "Zed"', lines[2], count=1)
    assert b"Zed" in lines[2]
    edited = b"\n".join(lines)
    journal.write_bytes(edited)
    for how in ([], ["--transcript", str(transcript)]):
        run = run_orderup("resume", str(journal), *how)
        assert run.returncode == 2 and run.stdout == ""
        assert run.stderr == (
            f"orderup resume: {journal}:3: the line does not match its checksum, so it was changed "
            "after it was written (or written by an orderup without checksums); the journal is left "
            "as it is and not replayed\n"
        )
    assert journal.read_bytes() == edited
    assert sorted(tmp_path.iterdir()) == [transcript, journal]


def test_a_journal_never_replaces_a_file(tmp_path: Path) -> None:
    transcript = tmp_path / "game.txt"
    fast_transcript(transcript, 5)
    before = transcript.read_bytes()
    run = run_orderup("referee", "desserts", "--transcript", str(transcript), "--journal", str(transcript))
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr == (
        f"orderup referee: {transcript} already exists: a new journal never replaces a file (choose "
        f"another --journal; to go on with a journal, 'orderup resume {transcript}')\n"
    )
    assert transcript.read_bytes() == before
    run = run_orderup("resume", str(transcript), "--transcript", str(transcript))
    assert run.returncode == 2 and ":1: the line does not match its checksum" in run.stderr
    assert transcript.read_bytes() == before


def test_a_journal_is_private_and_held_by_one_process(tmp_path: Path) -> None:
    transcript, journal, _ = refereed(tmp_path)
    assert journal.stat().st_mode & 0o777 == 0o600
    before = journal.read_bytes()
    held, _ = Journal.reopen(str(journal))
    try:
        run = run_orderup("resume", str(journal), "--transcript", str(transcript))
        assert run.returncode == 2 and run.stdout == ""
        assert run.stderr == (
            f"orderup resume: {journal} is in use by another orderup: a journal is written by one "
            "game at a time\n"
        )
        with pytest.raises(JournalError, match="in use"):
            Journal.reopen(str(journal))
    finally:
        held.close()
    assert journal.read_bytes() == before
    assert run_orderup("resume", str(journal), "--transcript", str(transcript)).returncode == 0


def test_default_journal_names_are_unique(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    names = {default_journal("desserts") for _ in range(50)}
    assert len(names) == 50
    for name in names:
        assert name.parent == tmp_path / "orderup" / "journals"
        assert re.fullmatch(r"\d{8}-\d{6}-\d{3}-[0-9a-f]{6}-desserts\.jsonl", name.name)


def test_a_game_that_never_starts_leaves_no_journal(tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"
    run = run_orderup("play", "desserts", "--players", "Ann,Bob", "--mics", "nowhere", "--no-speech",
                      "--journal", str(journal))
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert run.stderr.endswith("Nothing was journaled: the game had not started.\n")
    assert "saved" not in run.stderr and not journal.exists()

    transcript = tmp_path / "game.txt"
    transcript.write_text("@players Ann, Bob\n1.0 Zed: got it\n", "utf-8")
    run = run_orderup("referee", "desserts", "--transcript", str(transcript), "--journal", str(journal))
    assert run.returncode == 2 and "unknown speaker" in run.stderr and run.stdout == ""
    assert not journal.exists()


@pytest.mark.parametrize("call", ["pwrite", "fsync"])
def test_a_full_disk_is_a_warning_and_the_game_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], call: str
) -> None:
    setup = Setup("desserts", ("Ann", "Bob"), {"guests": ("Rocky", "Frosty")}, Options(DessertsOptions()), 1)
    game, state = setup.new_state()
    path = tmp_path / "j.jsonl"
    journal = Journal(str(path), setup)
    referee = Referee(game, state, journal)
    referee.hear(1.0, "Ann", "got it")
    real = getattr(os, call)

    def full(*args: Any) -> Any:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, call, full)
    assert "served" in [e.kind for e in referee.hear(2.0, "Ann", "rocky road")]
    referee.hear(3.0, "Bob", "got it")
    warning = (f"orderup: warning: cannot write the journal {path} (No space left on device): the "
               "game goes on, with its last {} lines held in memory until they can be written\n")
    assert capsys.readouterr().err == warning.format(1) + warning.format(2)
    assert journal.unwritten == 2

    monkeypatch.setattr(os, call, real)
    referee.hear(4.0, "Bob", "pass")
    assert capsys.readouterr().err == ""
    assert restore(str(path))[1].summary() == referee.state.summary()

    monkeypatch.setattr(os, call, full)
    referee.hear(5.0, "Ann", "pass")
    capsys.readouterr()
    referee.close()
    assert capsys.readouterr().err == (
        f"orderup: warning: cannot write the journal {path} (No space left on device): its last "
        "1 lines are lost\n"
    )
    assert journal.written and journal.unwritten == 1


def test_ctrl_c_says_how_to_resume(tmp_path: Path) -> None:
    transcript, full_journal, uninterrupted = refereed(tmp_path, 120)
    journal = tmp_path / "stopped.jsonl"
    proc = subprocess.Popen(
        orderup_argv("referee", "desserts", "--transcript", str(transcript), "--json",
                     "--guest-timeout", "0.5", "--realtime", "--journal", str(journal)),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (not journal.exists() or journal.read_bytes().count(b"\n") < 10):
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert err == (f"orderup referee: stopped. The game is saved: orderup resume {journal} "
                   f"--transcript {transcript}\n")
    resumed = orderup("resume", str(journal), "--transcript", str(transcript), "--json")
    assert json.loads(resumed[-1]) == json.loads(uninterrupted[-1])
    assert read_journal(str(journal)).actions == read_journal(str(full_journal)).actions


def resumed_live_game_loading_raises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     error: BaseException) -> tuple[int, Path, bytes]:
    """A journaled game resumed live (``resume --play``) whose recogniser raises `error` while
    it loads: play_live's exit status, the journal and its bytes before."""
    _, journal, _ = refereed(tmp_path)
    before = journal.read_bytes()

    def raising_while_loading(backend: str) -> None:
        raise error

    monkeypatch.setattr("voice.recognition.interface.create_recognizer", raising_while_loading)
    reopened, restored = Journal.reopen(str(journal))
    game, state = replay_journal(str(journal), restored)
    args = argparse.Namespace(command="resume", backend="pocketsphinx", no_speech=True,
                              journal=str(journal))
    mics = [MicInput(None, channel) for channel in range(3)]
    code = play_live(args, Referee(game, state, reopened), restored.setup.options.table, mics,
                     resumed=restored)
    return code, journal, before


def test_ctrl_c_while_a_live_game_loads_says_how_to_resume(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Ctrl-C before the mics open (the recogniser still loading, on a slow laptop) stops a
    resumed live game as Ctrl-C at the table does: the journal closed, and how to go on."""
    code, journal, before = resumed_live_game_loading_raises(
        tmp_path, monkeypatch, KeyboardInterrupt())
    assert code == 130
    assert capsys.readouterr().err == (f"orderup resume: stopped. The game is saved: orderup "
                                       f"resume {journal} --play\n")
    assert journal.read_bytes() == before
    Journal.reopen(str(journal))[0].close()  # the lock released


def test_a_recogniser_failing_in_a_live_game_says_how_to_resume(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, journal, before = resumed_live_game_loading_raises(
        tmp_path, monkeypatch, RecognizerError("whisper: the decoder ran out of memory"))
    assert code == 2
    assert capsys.readouterr().err == (
        "orderup resume: whisper: the decoder ran out of memory. The game is saved: orderup "
        f"resume {journal} --play\n")
    assert journal.read_bytes() == before


def test_a_bug_in_a_live_game_is_one_line_with_its_details_kept_and_the_game_saved(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """An error the app did not foresee does not end a live game in a traceback: one line
    says what stopped it, where its details are kept (beside the journal, added to at each
    such error) and how to go on; the journal is closed and whole."""
    details = tmp_path / "j.jsonl.error.txt"
    details.write_text("--- an earlier error\n")
    code, journal, before = resumed_live_game_loading_raises(
        tmp_path, monkeypatch, ZeroDivisionError("float division by zero"))
    assert code == 1
    assert capsys.readouterr().err == (
        "orderup resume: stopped by an unexpected error (ZeroDivisionError: float division by "
        f"zero); its details are in {details}. The game is saved: orderup resume {journal} "
        "--play\n")
    kept = details.read_text()
    assert kept.startswith("--- an earlier error\n--- ")
    assert ": orderup resume\nTraceback (most recent call last):" in kept
    assert "raising_while_loading" in kept and kept.endswith(
        "ZeroDivisionError: float division by zero\n")
    assert journal.read_bytes() == before
    Journal.reopen(str(journal))[0].close()  # the lock released


def test_damaged_journals_are_clear_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(framed({"type": "step"}) + framed({"type": "step"}))
    with pytest.raises(JournalError, match="no game header"):
        restore(str(bad))
    with pytest.raises(JournalError, match="cannot read"):
        restore(str(tmp_path / "missing.jsonl"))
    run = run_orderup("resume", str(bad))
    assert run.returncode == 2 and "no game header" in run.stderr and "Traceback" not in run.stderr


def test_a_journal_of_another_version_is_refused_not_misread(tmp_path: Path) -> None:
    _, journal, _ = refereed(tmp_path, 5)
    head, rest = journal.read_text().split("\n", 1)
    old = tmp_path / "old.jsonl"
    old.write_text(framed({**json.loads(head.split("\t")[0]), "version": 1}) + rest)
    with pytest.raises(JournalError, match="journal version 1, this one reads 2"):
        restore(str(old))
    assert restore(str(journal))[1].history  # the same journal at this version resumes


def test_undo_takes_back_the_last_call_and_is_journaled(tmp_path: Path) -> None:
    from voice.table.games import lookup

    setup = Setup("desserts", ("Ann", "Bob"), {"guests": ("Rocky",)}, Options(DessertsOptions()), 1)
    game, state = setup.new_state()
    path = tmp_path / "j.jsonl"
    referee = Referee(game, state, Journal(str(path), setup))
    referee.hear(1.0, "Ann", "got it")
    referee.hear(2.0, "Ann", "rocky road")
    assert referee.state.summary()["players"]["Ann"]["guests"] == 1
    events = referee.undo(3.0)
    assert events[0].kind == "overruled" and events[0].players == ("Ann",)
    assert referee.state.summary()["players"]["Ann"]["guests"] == 0
    referee.hear(4.0, "Ann", "rocky road")
    _, restored, _ = restore(str(path))
    assert restored.summary() == referee.state.summary()
    assert lookup("jd") is game


def test_resuming_with_another_transcript_is_refused(tmp_path: Path) -> None:
    _, journal, _ = refereed(tmp_path, 5)
    other = tmp_path / "other.txt"
    other.write_text("@players Ann, Bob\n0.5 Bob: pass\n", "utf-8")
    before = journal.read_bytes()
    run = run_orderup("resume", str(journal), "--transcript", str(other))
    assert run.returncode == 2 and len(run.stderr.splitlines()) == 1, run.stderr
    assert f"{journal} was not refereed from {other}: line 2 is 0.500 Bob: 'pass'" in run.stderr
    assert journal.read_bytes() == before
