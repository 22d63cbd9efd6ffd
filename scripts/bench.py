#!/usr/bin/env python3
"""``make bench``: the voice pipeline over a fixed scene set, beside baselines (issue 7).

Renders the scene set once (cached under the temp dir, keyed by set, seed and the scene
library's source), runs every scene through the pipeline and the baselines
(scripts/bench_scene.py) on all cores, decodes people's recordings (scripts/bench_real.py),
hears the scenes with babble again babbled by recorded people (the full set, where the
recordings are here), then measures on one core how many microphones the
onset detector keeps up with, and the table's pipeline decoding every utterance with each
recogniser, and each pipeline's peak memory in a fresh process. Writes
OUT/results.json (every figure, its baseline and target, and the raw per-scene results),
OUT/README.md (the tables) and OUT/*.png (the plots; scripts/bench_report.py).

    .venv/bin/python scripts/bench.py [--quick] [--out bench] [--seed 0] [--jobs N]

The full run (300 scenes) takes about 20 minutes on 2 cores; --quick (18 scenes, races at
gaps 0–45 ms) under one.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # one core per process: the throughput figures are per core

import argparse
import functools
import hashlib
import itertools
import json
import multiprocessing
import platform
import resource
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bench_real
import bench_report
import bench_scene
import make_scenes
import scenes

from voice.audio.files import read_wav
from voice.audio.frames import AudioFrame
from voice.hearing.onsets import OnsetDetector
from voice.recognition.interface import Recognizer, create_recognizer
from voice.table.pipeline import Pipeline

FRAME_MS = 20.0
"""Block size fed to the detectors in the throughput test (as WAV replay and live audio)."""


def scene_dir(set_name: str, seed: int) -> Path:
    """Where the rendered scene set is cached: keyed by set, seed and the scene library (and
    make_scenes, which writes each scene's files; and the recordings' manifest, for the set
    they babble in)."""
    sources = [*sorted(Path(scenes.__file__).parent.glob("*.py")), Path(make_scenes.__file__)]
    if set_name == scenes.RECORDED_BABBLE_SET:
        sources.append(scenes.REAL_SPEECH / "manifest.tsv")
    library = b"".join(p.read_bytes() for p in sources)
    key = hashlib.sha1(library).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / "orderup-bench-scenes" / f"{set_name}-{seed}-{key}"


def rendered(set_name: str, seed: int, jobs: int) -> list[Path]:
    """The scene set's WAVs, rendered (in parallel) unless already cached. Rendered into a
    scratch directory and renamed into place, so a run never reads another's half-written set."""
    out = scene_dir(set_name, seed)
    specs = scenes.scene_set(set_name, seed)
    if not out.exists():
        scratch = out.with_name(f"{out.name}.{os.getpid()}.partial")
        print(f"rendering {len(specs)} scenes into {out}", flush=True)
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            list(pool.map(make_scenes.render, specs, [scratch] * len(specs)))
        try:
            scratch.rename(out)
        except OSError:  # another run got there first: same bytes
            shutil.rmtree(scratch)
        for stale in out.parent.glob(f"{set_name}-{seed}-*"):  # older scene libraries' sets
            if stale != out and stale.suffix != ".partial":
                shutil.rmtree(stale, ignore_errors=True)
    return [out / f"{spec.name}.wav" for spec in specs]


def measure_scenes(wavs: list[Path], jobs: int,
                   measure: Callable[[str], dict[str, Any]] = bench_scene.measure_or_fail,
                   ) -> list[dict[str, Any]]:
    """Every scene through the pipeline and the baselines (or `measure`), ``jobs`` scenes at a
    time."""
    records = []
    with ProcessPoolExecutor(max_workers=jobs, initializer=bench_scene.init_worker) as pool:
        for i, record in enumerate(pool.map(measure, map(str, wavs)), 1):
            records.append(record)
            if i % 20 == 0 or i == len(wavs):
                print(f"  {i}/{len(wavs)} scenes measured", flush=True)
    return records


def tiled_audio(wavs: list[Path], mics: int, duration_s: float) -> np.ndarray:
    """(n, mics) audio: whole scenes side by side (so each keeps its bleed between its own
    mics; as many times over as needed), each looped to ``duration_s``."""
    n = round(duration_s * bench_scene.RATE_HZ)
    columns: list[np.ndarray] = []
    for wav in itertools.cycle(wavs):
        audio = read_wav(wav)
        columns.extend(audio[np.arange(n) % audio.shape[0]].T)
        if len(columns) >= mics:
            return np.stack(columns[:mics], axis=1)
    raise ValueError("no scenes to tile")


def _frames(audio: np.ndarray) -> Iterator[AudioFrame]:
    """``audio`` as the 20 ms frames a WAV replay or a live table delivers."""
    block = round(FRAME_MS * bench_scene.RATE_HZ / 1000)
    for at in range(0, audio.shape[0], block):
        yield AudioFrame(audio[at : at + block], bench_scene.RATE_HZ, audio.shape[1], at,
                         at / bench_scene.RATE_HZ)


def detector_cpu_seconds(detector: str, audio: np.ndarray) -> float:
    """CPU time (s) onset detection takes over ``audio``: "orderup" (the onset detector) or
    "naive"."""
    start = time.process_time()
    if detector == "orderup":
        onsets = OnsetDetector(audio.shape[1])
        for frame in _frames(audio):
            onsets.feed(frame)
        onsets.flush()
    else:
        naive = bench_scene.NaiveDetector(audio.shape[1])
        for frame in _frames(audio):
            naive.feed(frame.samples)
        naive.flush()
    return time.process_time() - start


def pipeline_cpu_seconds(backend: str, audio: np.ndarray) -> float:
    """CPU time (s) the table's pipeline takes over ``audio``: onsets, arbitration and every
    utterance decoded by ``backend`` on one thread, against the first game's grammar."""
    grammar = bench_scene.grammar_for(bench_scene.GAMES[0], len(bench_scene.PLAYERS))
    recognizer = _recognizers(backend)
    recognizer.prepare(grammar)
    start = time.process_time()
    pipeline = Pipeline([f"mic {i}" for i in range(audio.shape[1])], recognizer,
                        lambda *_: grammar)
    for _ in pipeline.run(_frames(audio)):
        pass
    return time.process_time() - start


@functools.cache
def _recognizers(backend: str) -> Recognizer:
    """One recogniser per backend, loaded once (on one thread)."""
    return create_recognizer(backend)


def throughput(wavs: list[Path], duration_s: float, max_mics: int,
               backends: tuple[str, ...]) -> dict[str, Any]:
    """Real-time factor on one core at 1, 2, 4, … mics of each detector, and of the table's
    pipeline with each of ``backends``, doubling until the onset detector falls behind real
    time or ``max_mics`` is reached (a pipeline once behind is not measured further)."""
    rows: list[dict[str, Any]] = []
    behind: set[str] = set()
    mics = 1
    while mics <= max_mics:
        audio = tiled_audio(wavs, mics, duration_s)
        row: dict[str, Any] = {"mics": mics}
        for detector in ("orderup", "naive"):
            row[detector] = round(detector_cpu_seconds(detector, audio) / duration_s, 4)
        row["pipeline"] = {}
        for backend in backends:
            if backend not in behind:
                row["pipeline"][backend] = round(
                    pipeline_cpu_seconds(backend, audio) / duration_s, 4)
                if row["pipeline"][backend] >= 1.0:
                    behind.add(backend)
        rows.append(row)
        decoding = ", ".join(f"with {b} {f:.3f}" for b, f in row["pipeline"].items())
        print(f"  {mics:3d} mics: real-time factor {row['orderup']:.3f} "
              f"(naive {row['naive']:.3f}; the pipeline {decoding})", flush=True)
        if row["orderup"] >= 1.0:
            break
        mics *= 2
    return {"duration_s": duration_s, "max_mics_tested": max_mics, "rows": rows}


def peak_memory(wav: Path) -> dict[str, float]:
    """Each pipeline's peak RSS (MB) over one scene, each in a fresh process."""
    spawn = multiprocessing.get_context("spawn")
    out = {}
    for pipeline in ("orderup", "baseline"):
        with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as pool:
            out[pipeline] = round(pool.submit(bench_scene.peak_rss_mb, pipeline, str(wav)).result(), 1)
    return out


def _mics(wav: Path) -> int:
    return len(json.loads(wav.with_suffix(".json").read_text(encoding="utf-8"))["mics_m"])


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    model = ""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        model = next(
            (line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
             if line.startswith("model name")),
            "",
        )
    return {
        "cores": os.cpu_count(),
        "cpu": model or platform.processor(),
        "python": platform.python_version(),
        "system": f"{platform.system()} {platform.release()}",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="18 scenes, under a minute")
    parser.add_argument("--out", type=Path, default=Path("bench"), help="output directory")
    parser.add_argument("--seed", type=int, default=0, help="scene set seed (default 0)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes")
    args = parser.parse_args(argv)
    began, load_before = time.perf_counter(), os.getloadavg()[0]
    set_name = "quick" if args.quick else "full"
    jobs = max(1, args.jobs)

    wavs = rendered(set_name, args.seed, jobs)
    print(f"measuring {len(wavs)} scenes on {jobs} processes", flush=True)
    records = measure_scenes(wavs, jobs)
    backends = ("sphinx", "free", *(("whisper",) if bench_scene.whisper_model() else ()))
    print(f"real voices: {', '.join(backends)}", flush=True)
    real = bench_real.measure(set_name, jobs, backends)
    recorded = []
    if set_name == "full" and scenes.have_recordings():
        print("the scenes with babble again, babbled by recorded people", flush=True)
        recorded = measure_scenes(rendered(scenes.RECORDED_BABBLE_SET, args.seed, jobs), jobs,
                                  bench_scene.detection_or_fail)
    print("throughput on one core: the onset detectors, the pipeline with each backend",
          flush=True)
    multi_mic = sorted(wavs, key=lambda w: -_mics(w))[:8]
    speed = throughput(multi_mic, 3.0 if args.quick else 15.0, 16 if args.quick else 64,
                       tuple(b for b in backends if b != "free"))
    print("peak memory of each pipeline", flush=True)
    memory = peak_memory(multi_mic[0])
    rss_mb = max(
        resource.getrusage(who).ru_maxrss / 1024
        for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )

    invocation = shlex.join(["python", "scripts/bench.py", *(sys.argv[1:] if argv is None else argv)])
    run = {
        "command": "make bench" if invocation == "python scripts/bench.py" else invocation,
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "set": set_name,
        "seed": args.seed,
        "scenes": len(records),
        "audio_s": round(sum(r.get("duration_s", 0.0) for r in records), 1),
        "models": {"vosk": bench_scene.english_vosk_model(),
                   "whisper": bench_scene.whisper_model()},
        "tie_window_ms": bench_scene.TIE_WINDOW_MS,
        "runtime_s": round(time.perf_counter() - began, 1),
        "load_average": [round(load_before, 1), round(os.getloadavg()[0], 1)],
        "bench_peak_rss_mb": round(rss_mb, 1),
    }
    report = bench_report.build(run, records, speed, memory, real, recorded)
    for failed in report["failed"]:
        print(f"  the pipeline raised on {failed['name']}: {failed['error']}", file=sys.stderr)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    bench_report.write(report, args.out)
    print(bench_report.table(report["figures"]))
    print(f"wrote {args.out}/results.json, README.md and plots in {run['runtime_s']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
