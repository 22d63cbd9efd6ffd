"""`scripts/bench.py --quick` runs end to end and reports every figure beside its baseline, so
the benchmark cannot rot (issue 7). Runs the script as a subprocess (nothing imports
``scripts``); it takes about a minute."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
FIGURES = (
    "onset_error_median_ms",
    "onset_error_p95_ms",
    "utterances_missed_pct",
    "first_speaker_30ms_pct",
    "first_speaker_15_30ms_pct",
    "first_speaker_tie_pct",
    "first_speaker_text_15ms_pct",
    "bleed_false_utterances",
    "app_false_utterances",
    "calls_over_app_heard_pct",
    "other_false_utterances",
    "command_accuracy_clean_pct",
    "not_understood_clean_pct",
    "command_accuracy_clean_vosk_pct",
    "command_accuracy_babble10_pct",
    "not_understood_babble10_pct",
    "command_accuracy_babble10_vosk_pct",
    "chatter_accepted_pct",
    "latency_median_ms",
    "latency_p95_ms",
    "end_of_speech_to_text_median_ms",
    "end_of_speech_to_text_p95_ms",
    "rtf_8_mics",
    "cpu_per_mic_pct",
    "max_realtime_mics",
    "max_realtime_mics_sphinx",
    "peak_memory_mb",
)
"""Every figure the issues ask the bench for (with the voice pipeline's targets among them)."""


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    out = tmp_path_factory.mktemp("bench")
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench.py"), "--quick", "--out", str(out)],
        capture_output=True, text=True, timeout=600, cwd=ROOT, check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads((out / "results.json").read_text(encoding="utf-8")), out


def test_every_figure_is_reported_beside_its_baseline(report: tuple[dict, Path]) -> None:
    results, _ = report
    figures = {f["key"]: f for f in results["figures"]}
    assert set(FIGURES) <= set(figures)
    for key in FIGURES:
        f = figures[key]
        assert f["baseline_name"], key
        if f["n"] == 0:  # the quick set may have no scene of a condition (10 dB babble)
            assert f["orderup"] is None and f["baseline"] is None, key
            continue
        assert f["baseline"] is not None, f"{key}: no baseline measured"
        assert f["orderup"] is not None or "vosk" in key, f"{key}: not measured"
        if f["target"] is not None and f["orderup"] is not None:
            assert isinstance(f["met"], bool), key
    measured = [k for k in FIGURES if figures[k]["n"] > 0]
    assert len(measured) >= len(FIGURES) - 4, f"the quick set measures too little: {measured}"


def test_targets_splits_and_run_details_are_recorded(report: tuple[dict, Path]) -> None:
    results, _ = report
    targets = {f["key"] for f in results["figures"] if f["target"] is not None}
    assert {
        "onset_error_median_ms", "onset_error_p95_ms", "first_speaker_30ms_pct",
        "first_speaker_15_30ms_pct", "bleed_false_utterances", "command_accuracy_clean_pct",
        "command_accuracy_babble10_pct", "chatter_accepted_pct", "latency_p95_ms",
        "max_realtime_mics",
    } <= targets
    assert set(results["breakdown"]) == {"tune", "holdout", "clean", "noisy"}
    assert results["breakdown"]["tune"]["scenes"] + results["breakdown"]["holdout"]["scenes"] == (
        results["run"]["scenes"]
    )
    assert results["run"]["set"] == "quick" and results["run"]["machine"]["cores"] >= 1
    assert results["commands_by_snr"][0]["snr"] == "clean"


def test_readme_quotes_the_command_table_and_plots(report: tuple[dict, Path]) -> None:
    results, out = report
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert results["run"]["command"] in readme
    assert "| figure | orderup | baseline | target | met? |" in readme
    for plot in ("first_speaker_by_gap", "command_accuracy_by_snr", "onset_error", "latency"):
        png = out / f"{plot}.png"
        assert png.stat().st_size < 100_000
        assert f"]({plot}.png)" in readme


def test_real_voices_are_decoded_by_each_backend_beside_the_baseline(
        report: tuple[dict, Path]) -> None:
    """Where the real recordings are (CI has ../shared), the held-out speakers' figures stand
    beside the free model's, and the tune and held-out parts are both in the README."""
    results, out = report
    readme = (out / "README.md").read_text(encoding="utf-8")
    if not (ROOT.parent / "shared" / "real_speech" / "manifest.tsv").is_file():
        assert results["real_speech"] == [] and "No real recordings here" in readme
        return
    figures = {f["key"]: f for f in results["figures"]}
    for key in ("real_call_clean_pct", "real_word_clean_pct", "real_sentence_clean_pct"):
        assert figures[key]["n"] > 0 and figures[key]["baseline"] is not None, key
        assert isinstance(figures[key]["met"], bool), key
    assert {r["backend"] for r in results["real_speech"]} >= {"sphinx", "free"}
    assert {r["part"] for r in results["real_speech"]} == {"tune", "heldout"}
    assert "| tune | clean |" in readme and "| held-out | clean |" in readme


def test_races_of_at_most_four_utterances_are_timed_apart(report: tuple[dict, Path]) -> None:
    """The latency target's four players calling at once: the races with at most four
    utterances to decode have a row of their own; the note of the row held to the target
    says what the others held."""
    results, _ = report
    figures = {f["key"]: f for f in results["figures"]}
    if not results["run"]["models"]["whisper"]:
        assert "race_four_p95_ms" not in figures
        return
    sizes = [r["at_once_ms"]["n"] for r in results["scenes"] if "whisper" in r.get("at_once_ms", {})]
    assert figures["race_four_p95_ms"]["n"] == sum(n <= 4 for n in sizes) > 0
    assert figures["race_at_once_p95_ms"]["n"] == len(sizes)
    crowded = sum(n > 4 for n in sizes)
    assert (f"{crowded} races held more than 4" in figures["race_at_once_p95_ms"]["note"]) == (
        crowded > 0)


def test_the_pipeline_survives_every_scene(report: tuple[dict, Path]) -> None:
    results, _ = report
    assert results["failed"] == []
    assert len(results["scenes"]) == results["run"]["scenes"]


def test_detection_alone_gives_the_bench_s_detection_figures(report: tuple[dict, Path]) -> None:
    """scripts/measure_detection.py hears the scenes as the bench does: on the scenes
    calibration sets up, its rows are the bench's calibrated table, line for line."""
    _, out = report
    bench_rows = [line for line in (out / "README.md").read_text(encoding="utf-8").splitlines()
                  if line.startswith(("| tune | ", "| holdout | ")) and "calibrated |" in line]
    assert len(bench_rows) == 4
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "measure_detection.py"), "--quick", "--jobs", "2"],
        capture_output=True, text=True, timeout=600, cwd=ROOT, check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    ours = run.stdout.replace("| uncalibrated, calibration's scenes |", "| uncalibrated |")
    for line in bench_rows:
        assert line in ours.splitlines(), line


def test_detection_alone_refuses_an_unknown_setting() -> None:
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "measure_detection.py"), "--onsets",
         '{"own_margin": 5}'], capture_output=True, text=True, timeout=60, cwd=ROOT, check=False,
    )
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.count("\n") == 1 and "own_margin" in run.stderr
