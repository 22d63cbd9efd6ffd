"""Nothing lost: the journal restores the exact state, even after SIGKILL mid-game."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from voice.table.journal import JournalError, read_journal, restore

PHRASES = ["got it", "pass", "rocky road", "brownie and whipped cream", "apple pie", "banana split",
           "what", "favorite eclair", "sorbet"]


def fast_transcript(path: Path, lines: int = 120) -> None:
    body = ["@players Ann, Bob, Cat", "@seed 5"]
    for i in range(lines):
        speaker = ("Ann", "Bob", "Cat")[(i * 7) % 3]
        body.append(f"{0.03 * i:.3f} {speaker}: {PHRASES[(i * 5) % len(PHRASES)]}")
    path.write_text("\n".join(body) + "\n", "utf-8")


def orderup(*argv: str) -> list[str]:
    run = subprocess.run([sys.executable, "-m", "voice.cli", *argv], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    return run.stdout.splitlines()


@pytest.mark.slow
def test_sigkill_mid_game_then_resume_matches_an_uninterrupted_run(tmp_path: Path) -> None:
    transcript = tmp_path / "game.txt"
    fast_transcript(transcript)
    full_journal = tmp_path / "full.jsonl"
    uninterrupted = orderup("referee", "desserts", "--transcript", str(transcript), "--json",
                            "--guest-timeout", "0.5", "--journal", str(full_journal))

    journal = tmp_path / "killed.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "voice.cli", "referee", "desserts", "--transcript", str(transcript),
         "--json", "--guest-timeout", "0.5", "--realtime", "--journal", str(journal)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (not journal.exists() or len(journal.read_text().splitlines()) < 30):
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    killed_at = read_journal(str(journal))
    assert 0 < killed_at.heard < 120, "the kill should land mid-game"

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
    transcript = tmp_path / "game.txt"
    fast_transcript(transcript, 20)
    journal = tmp_path / "j.jsonl"
    orderup("referee", "desserts", "--transcript", str(transcript), "--journal", str(journal))
    text = journal.read_text()
    journal.write_text(text[:-25])
    restored = read_journal(str(journal))
    assert restored.warnings and "unfinished last line" in restored.warnings[0]


def test_damaged_journals_are_clear_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "step"}\n')
    with pytest.raises(JournalError, match="no game header"):
        restore(str(bad))
    with pytest.raises(JournalError, match="cannot read"):
        restore(str(tmp_path / "missing.jsonl"))
    run = subprocess.run([sys.executable, "-m", "voice.cli", "resume", str(bad)], capture_output=True, text=True, check=False)
    assert run.returncode == 2 and "no game header" in run.stderr and "Traceback" not in run.stderr


def test_a_journal_of_another_version_is_refused_not_misread(tmp_path: Path) -> None:
    transcript = tmp_path / "game.txt"
    fast_transcript(transcript, 5)
    journal = tmp_path / "j.jsonl"
    orderup("referee", "desserts", "--transcript", str(transcript), "--journal", str(journal))
    head, *rest = journal.read_text().splitlines()
    old = tmp_path / "old.jsonl"
    old.write_text("\n".join([json.dumps({**json.loads(head), "version": 1}), *rest]) + "\n")
    with pytest.raises(JournalError, match="journal version 1, this one reads 2"):
        restore(str(old))
    assert restore(str(journal))[1].history  # the same journal at this version resumes


def test_undo_takes_back_the_last_call_and_is_journaled(tmp_path: Path) -> None:
    from voice.table.games import lookup
    from voice.table.journal import Journal, Setup
    from voice.table.referee import Referee

    setup = Setup("desserts", ("Ann", "Bob"), {"guests": ("Rocky",)}, {}, 1)
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
