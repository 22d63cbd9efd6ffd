"""Whole games from recordings: what the app hears must referee to the true final scores.

Each recording is a scripted game rendered in a simulated room by
scripts/make_demo.py (players' voices, bleed, reverberation, noise and the app's
own narration from its speaker), with its truth as a transcript and the table's
calibration (GAME.table.json, as `orderup calibrate` saves it before a game).
Replaying the audio through the full table loop must end exactly as refereeing
the truth does. The players are espeak-ng voices, so the games are heard as the demo is, with
the backend that hears synthesised voices best (README, "Which to use").
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from voice.recognition.interface import SYNTHESISED_BACKEND

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "voice" / "data" / "demo"


def orderup(*argv: str) -> list[dict[str, object]]:
    run = subprocess.run([sys.executable, "-m", "voice.cli", *argv], capture_output=True,
                         text=True, check=False)
    assert run.returncode == 0, run.stderr
    return [json.loads(line) for line in run.stdout.splitlines()]


def options(truth: Path) -> list[str]:
    first = truth.read_text("utf-8").splitlines()[0]
    return first.removeprefix("# options:").split() if first.startswith("# options:") else []


def check(game: str, recording: Path, truth: Path) -> None:
    expected = orderup("referee", game, "--transcript", str(truth), "--json", *options(truth))[-1]
    players = next(line for line in truth.read_text("utf-8").splitlines() if line.startswith("@players"))
    seed = next(line for line in truth.read_text("utf-8").splitlines() if line.startswith("@seed"))
    stacks = [line.removeprefix("@stack ") for line in truth.read_text("utf-8").splitlines()
              if line.startswith("@stack")]
    stack_file = recording.with_suffix(".stack")
    stack_file.write_text("\n".join(stacks) + "\n", "utf-8")
    heard = orderup(
        "replay", str(recording), "--game", game, "--json", "--backend", SYNTHESISED_BACKEND,
        *options(truth),
        "--players", players.removeprefix("@players ").replace(" ", ""),
        "--seed", seed.removeprefix("@seed "), "--stack", str(stack_file),
    )
    assert heard[-1] == expected


def test_the_bundled_demo_replays_to_its_true_final_scores(tmp_path: Path) -> None:
    for name in ("desserts.ogg", "desserts.app.ogg", "desserts.table.json"):
        (tmp_path / name).write_bytes((DEMO / name).read_bytes())
    check("desserts", tmp_path / "desserts.ogg", DEMO / "desserts.txt")


def record_and_check(game: str, out: Path, *flags: str) -> None:
    subprocess.run([sys.executable, str(ROOT / "scripts" / "make_demo.py"), "--game", game,
                    "--out", str(out), *flags], check=True, capture_output=True)
    check(game, out / f"{game}.ogg", out / f"{game}.txt")


@pytest.mark.parametrize("game", ["poutine", "chaosteria"])
def test_a_recorded_game_in_a_quiet_room_replays_to_its_true_final_scores(
        game: str, tmp_path: Path) -> None:
    """The bundled demo's conditions: reverberation, the players' bleed and the app's voice
    (players call over it), no background noise."""
    record_and_check(game, tmp_path, "--quiet")


@pytest.mark.xfail(
    strict=True,
    reason="in clatter and babble (20 dB) a call 60 ms after another's is not found and a "
    "few calls are taken for another phrase (Bob's 'stop' for 'pogo' in clatter, Sophie's "
    "five-dish order in babble), so these replayed games drift from the truth (README, "
    "'Whole games')",
)
@pytest.mark.parametrize("game", ["poutine", "chaosteria"])
def test_a_recorded_game_at_a_noisy_table_replays_to_its_true_final_scores(
        game: str, tmp_path: Path) -> None:
    record_and_check(game, tmp_path)
