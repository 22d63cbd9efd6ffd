"""``orderup listen`` and ``orderup models`` end to end, as a user runs them (a subprocess):
a synthesised two-player table recording through onsets, the real recogniser (the one that
hears synthesised voices best) and the arbiter, and the one-line errors for bad input."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from scripts.scenes import BleedSpec, DryScene, mix_scene, spoken
from voice.audio.files import write_wav
from voice.recognition.interface import SYNTHESISED_BACKEND

RATE_HZ = 16_000
GAP_S = 0.060
needs_espeak = pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng missing")


def orderup(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "voice.cli", *args], capture_output=True,
                          text=True, timeout=120, check=False,
                          cwd=Path(__file__).resolve().parents[1])


def lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, DryScene]:
    """Ann (mic 0) then Bob (mic 1), 60 ms later, both shout "got it"; each call leaks into
    the other mic 12–18 dB down, 1–4 ms late; independent noise 30 dB down."""
    ann = spoken("got it", "en-us", 170, 50)
    bob = spoken("got it", "en-gb", 150, 40)
    onset = RATE_HZ // 2
    scene = mix_scene([(0, ann, onset), (1, bob, onset + round(GAP_S * RATE_HZ))], n_mics=2,
                      bleed=BleedSpec((1.0, 4.0), (-18.0, -12.0)), noise_snr_db=30.0, seed=2)
    path = tmp_path_factory.mktemp("listen") / "table.wav"
    write_wav(path, scene.audio, RATE_HZ)
    return path, scene


def assert_one_line_error(done: subprocess.CompletedProcess[str], code: int, *words: str) -> None:
    assert done.returncode == code, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert all(w in done.stderr for w in words), done.stderr


@pytest.mark.slow
@needs_espeak
def test_listen_json_reports_each_call_and_who_was_first(table: tuple[Path, DryScene]) -> None:
    path, scene = table
    done = orderup("listen", str(path), "--players", "Ann,Bob", "--game", "desserts", "--json",
                   "--backend", SYNTHESISED_BACKEND)
    assert done.returncode == 0, done.stderr
    *utterances, verdict = lines(done.stdout)
    assert [(u["type"], u["mic"], u["player"], u["text"], u["understood"]) for u in utterances] == [
        ("utterance", 0, "Ann", "got it", True), ("utterance", 1, "Bob", "got it", True)]
    truth = [t.onset_sample / RATE_HZ for t in scene.truth]
    assert abs(utterances[0]["onset_s"] - truth[0]) < 0.005
    assert truth[1] - 0.005 < utterances[1]["onset_s"] < truth[1] + 0.040
    assert all(u["onset_s"] < u["end_s"] and 0 < u["confidence"] <= 1 for u in utterances)
    assert verdict == {"type": "arbitration", "phrase": "got it", "order": ["Ann", "Bob"],
                       "ties": []}


@pytest.mark.slow
@needs_espeak
@pytest.mark.xfail(strict=True, reason="voice/hearing/bleed.py: a call starting while another's "
                   "bleed is on its mic is detected ~30 ms late where the table's crosstalk is "
                   "not known (-10 dB assumed; `listen` takes no calibration)")
def test_listen_second_caller_onset_under_bleed(table: tuple[Path, DryScene]) -> None:
    path, scene = table
    done = orderup("listen", str(path), "--players", "Ann,Bob", "--json")
    bob = lines(done.stdout)[1]
    assert abs(bob["onset_s"] - scene.truth[1].onset_sample / RATE_HZ) < 0.005


@pytest.mark.slow
@needs_espeak
def test_listen_with_a_phrase_file(table: tuple[Path, DryScene], tmp_path: Path) -> None:
    path, _ = table
    phrases = tmp_path / "calls.txt"
    phrases.write_text("# our house rules\ngot it\nnot me\n{player} wins\n", encoding="utf-8")
    done = orderup("listen", str(path), "--players", "Ann,Bob", "--phrases", str(phrases))
    assert done.returncode == 0, done.stderr
    text = done.stdout.splitlines()
    assert len(text) == 3 and all("'got it'" in line for line in text)
    assert text[0].lstrip().startswith("0.50") and "Ann" in text[0] and "Bob" in text[1]
    assert text[2] == "'got it': Ann then Bob"


@pytest.mark.slow
def test_listen_errors_are_one_line_and_exit_2(tmp_path: Path) -> None:
    assert_one_line_error(orderup("listen", str(tmp_path / "none.wav")), 2, "none.wav",
                          "no such file")
    corrupt = tmp_path / "corrupt.wav"
    corrupt.write_bytes(b"RIFF\x10\x00\x00\x00WAVEfmt garbage")
    assert_one_line_error(orderup("listen", str(corrupt)), 2, "corrupt.wav")
    silence = tmp_path / "quiet.wav"
    write_wav(silence, np.zeros((1600, 2), np.float32), RATE_HZ)
    assert_one_line_error(orderup("listen", str(silence), "--game", "chess"), 2, "chess",
                          "unknown game")
    missing = tmp_path / "missing.txt"
    assert_one_line_error(orderup("listen", str(silence), "--phrases", str(missing)), 2,
                          "missing.txt")


def test_models_lists_the_bundled_sphinx_model() -> None:
    done = orderup("models")
    assert done.returncode == 0, done.stderr
    sphinx = next(line for line in done.stdout.splitlines() if line.startswith("sphinx-en-us"))
    assert "present" in sphinx and "pocketsphinx" in sphinx


def test_models_fetch_fails_fast_with_one_line(tmp_path: Path) -> None:
    done = orderup("models", "fetch", "vosk-en-small", "--url", "http://127.0.0.1:9/x.zip",
                   "--dest", str(tmp_path))
    assert_one_line_error(done, 2, "vosk-en-small", "127.0.0.1:9", "cannot download")
    assert list(tmp_path.iterdir()) == []
