#!/usr/bin/env python3
"""Onset detection alone over the bench's scenes, tune and held-out apart, each scene heard
uncalibrated and, where ``orderup calibrate`` sets its table up, calibrated: player
utterances with no onset, first speaker right by gap, bleed and other false utterances.

The same scenes, pipeline and scoring as ``make bench`` (scripts/bench_scene.py), without
the second recognisers, the baselines and the report, so a setting of the onset detector
(``--onsets``, :class:`voice.hearing.onsets.OnsetConfig` fields as JSON) can be tried on the
tune scenes and checked on the held-out ones in minutes:

    .venv/bin/python scripts/measure_detection.py [--quick | --real-babble] [--seed 0]
        [--jobs N] [--onsets '{"own_margin_db": 5}']

With --real-babble, the full set's 152 scenes with babble are heard twice, side by side: as
in the bench, and with people's recorded sentences babbling instead of synthesised talkers
(scripts/scenes/sets.py).

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
from scenes import REAL_SPEECH, RECORDED_BABBLE_SET, have_recordings

import bench
from voice.hearing.onsets import OnsetConfig
from voice.recognition.interface import Recognizer, create_recognizer

_WORKER: list[tuple[Recognizer, OnsetConfig]] = []


def _init(onsets: OnsetConfig) -> None:
    _WORKER.append((create_recognizer("sphinx"), onsets))


def measure(wav_path: str) -> dict[str, Any]:
    """One scene heard uncalibrated and, where calibration sets its table up, calibrated."""
    sphinx, onsets = _WORKER[0]
    return bench_scene.heard_both_ways(wav_path, sphinx, onsets)


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
    parser.add_argument(
        "--real-babble", action="store_true",
        help="the full set's 152 scenes with babble, babbled by people's recorded sentences "
        "(../shared/real_speech) instead of synthesised talkers")
    parser.add_argument("--seed", type=int, default=0, help="scene set seed (default 0)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes")
    parser.add_argument("--onsets", default="{}", help="OnsetConfig fields as JSON")
    args = parser.parse_args(argv)
    try:
        onsets = OnsetConfig(**json.loads(args.onsets))
    except (ValueError, TypeError) as e:
        parser.exit(2, f"measure_detection: --onsets: {e}\n")
    if args.real_babble and (args.quick or not have_recordings()):
        parser.exit(2, "measure_detection: --real-babble needs the recordings "
                    f"({REAL_SPEECH / 'manifest.tsv'}) and the full set, not --quick\n")
    jobs = max(1, args.jobs)
    wavs = bench.rendered("quick" if args.quick else "full", args.seed, jobs)
    runs = {"": wavs}
    if args.real_babble:
        recorded = bench.rendered(RECORDED_BABBLE_SET, args.seed, jobs)
        names = {w.name for w in recorded}
        runs = {"babble of synthesised talkers": [w for w in wavs if w.name in names],
                "the same scenes, babble of recorded people": recorded}
    with ProcessPoolExecutor(jobs, initializer=_init, initargs=(onsets,)) as pool:
        for title, chosen in runs.items():
            print(f"hearing {len(chosen)} scenes on {jobs} processes", file=sys.stderr, flush=True)
            records = []
            for i, record in enumerate(pool.map(measure, map(str, chosen)), 1):
                records.append(record)
                if i % 20 == 0 or i == len(chosen):
                    print(f"  {i}/{len(chosen)} scenes heard", file=sys.stderr, flush=True)
            print(f"{title}:\n" if title else "", end="")
            print(bench_report.detection_markdown(rows(records)) + ("\n" if title else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
