#!/usr/bin/env python3
"""Write a set of synthetic multichannel table scenes with their truth (issue 7).

For every scene: NAME.wav (16 kHz, 16-bit, one channel per player's mic), NAME.json (the
truth), NAME.calibration.wav (what `orderup calibrate` records at its table before the game:
the room, then each player saying their name, scenes.SEAT_NAMES in seating order) and, when
the app spoke, NAME.app.wav (what it played). Plus index.json listing the scenes. Same
--set and --seed, same bytes.

Truth (NAME.json): name, kind (race | commands | chatter | narration | session), seed, split
(tune | holdout | null), rate_hz, n_samples, duration_s, condition (room dims_m and rt60_s,
voices per player, shouted, clip, snr_db, noise, gap_ms, babble), ism_order, mouths_m, mics_m,
loudspeaker_m, mic_distance_m, utterances (in onset order: speaker and mic (null for the app),
role call | chatter | app, text, voice, shouted, level_db, source_onset_sample,
onset_sample / onset_s (arrival on the speaker's own mic; the app's: its earliest mic),
end_sample, arrival_samples on every mic, grammar for commands), noise (kind, snr_db,
talkers: a synthesised babble talker's voice, or the speaker a recorded one is), peak_dbfs
and clipped_samples per mic, expected (calls a referee should accept, in onset order, each
with player, text, onset_sample, onset_s and gap_ms from the first; races add
tie_window_ms and first).

Run: .venv/bin/python scripts/make_scenes.py --set quick --out /tmp/scenes [--seed N]
     [--only race] [--jobs N]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import scenes

from voice.audio.files import write_wav


def render(spec: scenes.SceneSpec, out: Path) -> tuple[float, int, float]:
    """Render and write one scene: (duration_s, bytes written, seconds taken)."""
    start = time.perf_counter()
    scene = scenes.make_scene(spec.kind, spec.condition, spec.seed)
    paths = scenes.write_scene(out, spec.name, scene)
    c = spec.condition
    take = scenes.calibration_take(c.room, c.voices, scenes.SEAT_NAMES[: c.n_players], spec.seed,
                                   snr_db=c.snr_db, noise=c.noise, clip=c.clip)
    paths.append(out / f"{spec.name}.calibration.wav")
    write_wav(paths[-1], take, scenes.RATE_HZ)
    return (
        scene.truth["duration_s"],
        sum(p.stat().st_size for p in paths),
        time.perf_counter() - start,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--set", choices=scenes.SET_NAMES, default="quick", help="which scenes (default quick)"
    )
    parser.add_argument("--out", type=Path, required=True, help="directory to write into")
    parser.add_argument("--seed", type=int, default=0, help="set seed (default 0)")
    parser.add_argument("--only", choices=scenes.KINDS, help="only scenes of this kind")
    parser.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        help="scenes rendered in parallel (default: one per CPU; output is identical)",
    )
    args = parser.parse_args(argv)
    if args.set == scenes.RECORDED_BABBLE_SET and not scenes.have_recordings():
        parser.error(f"--set {args.set} babbles with people's recordings, and there are none "
                     f"at {scenes.REAL_SPEECH} (ORDERUP_REAL_SPEECH names another folder)")

    specs = [s for s in scenes.scene_set(args.set, args.seed) if args.only in (None, s.kind)]
    args.out.mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()
    total_s, total_bytes, index = 0.0, 0, []
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = pool.map(render, specs, [args.out] * len(specs))
        for i, (spec, (duration_s, size, took_s)) in enumerate(zip(specs, results), 1):
            c = spec.condition
            noise = f"{c.noise} {c.snr_db:g} dB" if c.snr_db is not None else "clean"
            shout = f"shouted {c.clip}" if c.shouted else ""
            print(
                f"[{i:3d}/{len(specs)}] {spec.name:22s} {duration_s:5.2f} s  {c.n_players} mics  "
                f"rt60 {c.room.rt60_s:.1f} s  {noise:16s} {shout:14s} "
                f"{size / 1e6:5.2f} MB  {took_s:4.1f} s",
                flush=True,
            )
            total_s += duration_s
            total_bytes += size
            index.append(
                {"name": spec.name, "kind": spec.kind, "split": c.split, "duration_s": duration_s}
            )
    (args.out / "index.json").write_text(
        json.dumps({"set": args.set, "seed": args.seed, "scenes": index}, indent=1) + "\n",
        encoding="utf-8",
    )
    print(
        f"{len(specs)} scenes, {total_s:.1f} s of audio, {total_bytes / 1e6:.1f} MB in {args.out}, "
        f"rendered in {time.perf_counter() - began:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
