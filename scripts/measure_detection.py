#!/usr/bin/env python3
"""Onset detection alone over the bench's scenes, tune and held-out apart, each scene heard
uncalibrated and, where ``orderup calibrate`` sets its table up, calibrated: player
utterances with no onset, first speaker right by gap, bleed and other false utterances.

The same scenes, pipeline and scoring as ``make bench`` (scripts/bench_scene.py), without
the second recognisers, the baselines and the report, so a setting of the onset detector
(``--onsets``, :class:`voice.hearing.onsets.OnsetConfig` fields as JSON) can be tried on the
tune scenes and checked on the held-out ones in minutes:

    .venv/bin/python scripts/measure_detection.py [--quick] [--seed 0] [--jobs N]
        [--onsets '{"own_margin_db": 5}']

Every utterance is decoded by PocketSphinx, as the bench's pipeline does (a phrase cut by a
pause is joined on what it was heard to say). The full set (300 scenes) takes about 5
minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bench_report
import bench_scene

import bench
from voice.hearing.onsets import OnsetConfig
from voice.recognition.interface import Recognizer, create_recognizer

_WORKER: list[tuple[Recognizer, OnsetConfig]] = []


def _init(onsets: OnsetConfig) -> None:
    _WORKER.append((create_recognizer("sphinx"), onsets))


def measure(wav_path: str) -> dict[str, Any]:
    """One scene heard uncalibrated and, where calibration sets its table up, calibrated."""
    sphinx, onsets = _WORKER[0]
    wav = Path(wav_path)
    truth = json.loads(wav.with_suffix(".json").read_text(encoding="utf-8"))
    mics = len(truth["mics_m"])
    grammar = bench_scene.grammar_for(bench_scene.scene_game(truth), mics)
    out = {"split": truth["split"], "uncalibrated": bench_scene.heard_at_table(
        wav, truth, grammar, sphinx, onsets=onsets)}
    setup = bench_scene.table_setup(wav, mics)
    if setup is not None:
        out["calibrated"] = bench_scene.heard_at_table(wav, truth, grammar, sphinx, setup, onsets)
    return out


def rows(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per split: every scene uncalibrated; the scenes calibration sets up, both ways."""
    out = []
    for split in ("tune", "holdout"):
        chosen = [r for r in records if r["split"] == split]
        set_up = [r for r in chosen if "calibrated" in r]
        out += [
            bench_report.detection_row(split, "uncalibrated", [r["uncalibrated"] for r in chosen],
                                       len(chosen)),
            bench_report.detection_row(split, "uncalibrated, calibration's scenes",
                                       [r["uncalibrated"] for r in set_up], len(chosen)),
            bench_report.detection_row(split, "calibrated", [r["calibrated"] for r in set_up],
                                       len(chosen)),
        ]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the bench's 18 quick scenes")
    parser.add_argument("--seed", type=int, default=0, help="scene set seed (default 0)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes")
    parser.add_argument("--onsets", default="{}", help="OnsetConfig fields as JSON")
    args = parser.parse_args(argv)
    try:
        onsets = OnsetConfig(**json.loads(args.onsets))
    except (ValueError, TypeError) as e:
        parser.exit(2, f"measure_detection: --onsets: {e}\n")
    jobs = max(1, args.jobs)
    wavs = bench.rendered("quick" if args.quick else "full", args.seed, jobs)
    print(f"hearing {len(wavs)} scenes on {jobs} processes", file=sys.stderr, flush=True)
    records = []
    with ProcessPoolExecutor(jobs, initializer=_init, initargs=(onsets,)) as pool:
        for i, record in enumerate(pool.map(measure, map(str, wavs)), 1):
            records.append(record)
            if i % 20 == 0 or i == len(wavs):
                print(f"  {i}/{len(wavs)} scenes heard", file=sys.stderr, flush=True)
    print(bench_report.detection_markdown(rows(records)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
