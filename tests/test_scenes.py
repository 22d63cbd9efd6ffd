"""Synthetic table scenes (scripts/make_scenes.py): files, determinism, and truth that matches
the signal. Runs the command as a subprocess (nothing imports ``scripts``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from voice.audio.files import read_wav
from voice.audio.frames import PIPELINE_RATE_HZ

MAKE_SCENES = Path(__file__).resolve().parent.parent / "scripts" / "make_scenes.py"
MS = PIPELINE_RATE_HZ // 1000
FLOOR_PEAK = 6 * 10 ** (-70 / 20)
"""Six standard deviations of the mics' self-noise (scenes.MIC_FLOOR_DBFS): the floor alone
never reaches it, however long a scene's quiet lead-in."""

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng is not installed"),
]


def make_scenes(out: Path, *options: str) -> str:
    done = subprocess.run(
        [sys.executable, str(MAKE_SCENES), "--out", str(out), *options],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def load(directory: Path) -> list[tuple[dict[str, Any], np.ndarray]]:
    """Every scene listed in the index: (truth, audio (n, mics))."""
    index = json.loads((directory / "index.json").read_text())
    return [
        (
            json.loads((directory / f"{s['name']}.json").read_text()),
            read_wav(directory / f"{s['name']}.wav"),
        )
        for s in index["scenes"]
    ]


@pytest.fixture(scope="module")
def test_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("scenes")
    summary = make_scenes(out, "--set", "test")
    assert "5 scenes" in summary.splitlines()[-1]
    return out


@pytest.fixture(scope="module")
def scenes(test_set: Path) -> list[tuple[dict[str, Any], np.ndarray]]:
    return load(test_set)


def clean(
    scenes: list[tuple[dict[str, Any], np.ndarray]],
) -> list[tuple[dict[str, Any], np.ndarray]]:
    found = [(t, a) for t, a in scenes if t["condition"]["snr_db"] is None]
    assert found, "the test set has no clean scene"
    return found


def test_every_kind_and_split_is_written_with_consistent_shapes(
    test_set: Path, scenes: list
) -> None:
    assert {t["kind"] for t, _ in scenes} == {"race", "commands", "chatter", "narration"}
    assert {t["split"] for t, _ in scenes} == {"tune", "holdout"}
    for truth, audio in scenes:
        assert audio.shape == (truth["n_samples"], len(truth["condition"]["voices"]))
        assert 0.5 < truth["duration_s"] < 10
        assert np.abs(audio).max() > 0.01
        for u in truth["utterances"]:
            assert 0 <= u["onset_sample"] < u["end_sample"] <= truth["n_samples"]
        app = [u for u in truth["utterances"] if u["role"] == "app"]
        playback = test_set / f"{truth['name']}.app.wav"
        assert playback.exists() == bool(app)
        if app:  # what the app played starts when its first line leaves the speaker
            played = read_wav(playback)[:, 0]
            assert played.shape == (truth["n_samples"],)
            assert np.flatnonzero(np.abs(played) > 1e-4)[0] == pytest.approx(
                app[0]["source_onset_sample"], abs=1
            )


def test_each_scene_comes_with_the_calibration_its_table_would_record(
    test_set: Path, scenes: list
) -> None:
    """NAME.calibration.wav: the room, then each player saying their name, at the scene's
    table; in the clean scenes calibration maps every player to their own mic."""
    from voice.table.setup import NOISE_S, TURN_S, calibrate

    for truth, _ in scenes:
        mics = len(truth["mics_m"])
        take = read_wav(test_set / f"{truth['name']}.calibration.wav")
        assert take.shape[1] == mics and take.shape[0] >= (NOISE_S + TURN_S * mics) * 16000
        if truth["condition"]["snr_db"] is None:
            names = [f"p{i}" for i in range(mics)]
            assert calibrate(take, names).channels == tuple(range(mics))


def test_same_seed_same_bytes_and_another_seed_differs(test_set: Path, tmp_path: Path) -> None:
    make_scenes(tmp_path / "again", "--set", "test", "--jobs", "1")
    make_scenes(tmp_path / "other", "--set", "test", "--seed", "1")
    files = sorted(p.name for p in test_set.iterdir())
    assert files == sorted(p.name for p in (tmp_path / "again").iterdir())
    for name in files:
        assert (test_set / name).read_bytes() == (tmp_path / "again" / name).read_bytes(), name
    wavs = [n for n in files if n.endswith(".wav")]
    assert not any(
        (tmp_path / "other" / n).exists()
        and (test_set / n).read_bytes() == (tmp_path / "other" / n).read_bytes()
        for n in wavs
    )


def test_truth_onsets_and_arrivals_match_the_signal(scenes: list) -> None:
    """In a clean, dry scene each mic is silent (mic floor only) until the first utterance
    arrives: it first exceeds 2 % of that utterance's peak on it (and the floor's own peaks)
    within 1 ms of the truth."""
    for truth, audio in clean(scenes):
        first = truth["utterances"][0]
        assert truth["condition"]["room"]["rt60_s"] <= 0.2
        for mic, arrival in enumerate(first["arrival_samples"]):
            x = np.abs(audio[:, mic])
            span = x[: int(arrival) + first["end_sample"] - first["onset_sample"]]
            crossing = int(np.argmax(span > max(0.02 * span.max(), FLOOR_PEAK)))
            assert abs(crossing - arrival) <= MS, (truth["name"], mic, crossing, arrival)
        assert first["onset_sample"] == round(first["arrival_samples"][first["mic"]])


def test_own_mic_is_the_nearest_and_the_loudest(scenes: list) -> None:
    """Every player's mic is nearest to them and hears them first; while only they speak
    (clean scenes, the span before anyone else starts), it is also the loudest."""
    checked = 0
    for truth, audio in scenes:
        mics = np.array(truth["mics_m"])
        said = truth["utterances"]
        for i, u in enumerate(said):
            if u["role"] == "app":
                continue
            mouth = np.array(truth["mouths_m"][u["speaker"]])
            assert int(np.argmin(np.linalg.norm(mics - mouth, axis=1))) == u["mic"]
            assert int(np.argmin(u["arrival_samples"])) == u["mic"]
            alone_until = min([v["onset_sample"] for v in said[i + 1 :]] + [u["end_sample"]])
            if (
                truth["condition"]["snr_db"] is None
                and i == 0
                and alone_until - u["onset_sample"] > 50 * MS
            ):
                energy = np.sum(audio[u["onset_sample"] : alone_until] ** 2, axis=0)
                assert int(np.argmax(energy)) == u["mic"], (truth["name"], energy)
                checked += 1
    assert checked >= 2


def test_expected_calls_follow_onsets_and_the_tie_window(scenes: list) -> None:
    for truth, _ in scenes:
        calls = truth["expected"]["calls"]
        said = [u for u in truth["utterances"] if u["role"] == "call"]
        assert [c["player"] for c in calls] == [u["speaker"] for u in said]
        assert [c["onset_s"] for c in calls] == sorted(c["onset_s"] for c in calls)
        if truth["kind"] == "race":
            assert len({c["text"] for c in calls}) == 1 and 2 <= len(calls) <= 3
            assert calls[1]["gap_ms"] == pytest.approx(truth["condition"]["gap_ms"], abs=0.1)
            window = truth["expected"]["tie_window_ms"]
            assert truth["expected"]["first"] == [
                c["player"] for c in calls if c["gap_ms"] <= window
            ]
        elif truth["kind"] == "chatter":
            assert calls == [] and all(u["role"] == "chatter" for u in truth["utterances"])
        elif truth["kind"] == "narration":
            app = [u for u in truth["utterances"] if u["role"] == "app"]
            # a line, sometimes after another (a canceller that has heard the app before)
            assert 1 <= len(app) <= 2 and all(u["speaker"] is None for u in app)
            assert len(calls) <= 1
    gaps = sorted(t["condition"]["gap_ms"] for t, _ in scenes if t["kind"] == "race")
    assert gaps[0] < 40 < gaps[-1], "the test set should hold a tie and a clear winner"


def test_clipping_is_what_the_truth_says(scenes: list) -> None:
    for truth, audio in scenes:
        at_full_scale = np.sum(np.abs(audio) >= 32766 / 32768, axis=0)
        if truth["condition"]["clip"] == "none":
            assert at_full_scale.sum() == 0 and sum(truth["clipped_samples"]) == 0
        for mic, clipped in enumerate(truth["clipped_samples"]):
            assert (clipped > 0) == (at_full_scale[mic] > 0) or truth["condition"]["clip"] == "soft"


REAL_SPEECH = Path(os.environ.get(
    "ORDERUP_REAL_SPEECH", MAKE_SCENES.parents[2] / "shared" / "real_speech"))


@pytest.mark.skipif(not (REAL_SPEECH / "manifest.tsv").is_file(),
                    reason="people's recordings (../shared/real_speech) are not here")
def test_recorded_babble_is_the_full_sets_babble_scenes_babbled_by_each_splits_own_people(
    tmp_path: Path,
) -> None:
    full, recorded = tmp_path / "full", tmp_path / "recorded"
    make_scenes(full, "--set", "full", "--only", "chatter")
    make_scenes(recorded, "--set", "real-babble", "--only", "chatter")
    synthesised = {t["name"]: t for t, _ in load(full)}
    speakers: dict[str, set[str]] = {"tune": set(), "holdout": set()}
    for truth, _ in load(recorded):
        twin = synthesised[truth["name"]]
        assert twin["noise"]["kind"] in ("babble", "both")
        assert truth["condition"] == {**twin["condition"], "babble": "recorded"}
        assert truth["utterances"] == twin["utterances"]
        speakers[truth["split"]] |= {t["recorded"] for t in truth["noise"]["talkers"]}
    assert all(speakers.values()) and not speakers["tune"] & speakers["holdout"]
    with_babble = [t for t in synthesised.values() if t["noise"]["kind"] in ("babble", "both")]
    assert len(load(recorded)) == len(with_babble)


def test_holdout_voices_speeds_pitches_and_rooms_never_appear_in_tune(tmp_path: Path) -> None:
    make_scenes(tmp_path, "--set", "quick")
    seen: dict[str, dict[str, set[Any]]] = {}
    for truth, _ in load(tmp_path):
        voices = truth["condition"]["voices"] + truth["noise"]["talkers"]
        room = truth["condition"]["room"]
        split = seen.setdefault(
            truth["split"], {"voice": set(), "speed": set(), "pitch": set(), "room": set()}
        )
        split["voice"] |= {v["name"] for v in voices}
        split["speed"] |= {v["speed_wpm"] for v in voices}
        split["pitch"] |= {v["pitch"] for v in voices}
        split["room"] |= {(tuple(room["dims_m"]), room["rt60_s"])}
    assert set(seen) == {"tune", "holdout"}
    for factor, held_out in seen["holdout"].items():
        assert held_out and not held_out & seen["tune"][factor], factor
