"""The named scene sets (the unit tests', the quick bench's, the full bench's), balanced over
the conditions, and writing a scene to disk."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from voice.audio.files import write_wav

from .conditions import CLIP_MODES, NOISE_KINDS, SPLITS, Condition, Pool
from .render import Scene
from .rooms import Room
from .speech import RATE_HZ, Voice

SNRS_DB: tuple[float | None, ...] = (None, 20.0, 10.0, 5.0)
RACE_GAPS_MS = (
    0.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0, 45.0, 60.0, 90.0, 130.0, 180.0, 240.0, 300.0
)
"""Gaps the scene sets' races are drawn from: dense around the first-speaker targets' 15 and
30 ms boundaries."""
FLITE_SHARE = 0.5
"""Of the talkers a scene set draws, the share that speaks with flite."""


class SceneSpec(NamedTuple):
    """One entry of a scene set: render it with ``make_scene(kind, condition, seed)``."""

    name: str
    kind: str
    condition: Condition
    seed: int


def _random_voice(pool: Pool, rng: np.random.Generator) -> Voice:
    return Voice(
        str(rng.choice(pool.flite_voices if rng.uniform() < FLITE_SHARE else pool.voices)),
        int(rng.choice(pool.speeds_wpm)),
        int(rng.choice(pool.pitches)),
    )


_SETS = {
    "quick": ({"race": 8, "commands": 4, "chatter": 3, "narration": 3}, (2, 3, 4, 5, 8)),
    "full": (
        {"race": 140, "commands": 90, "chatter": 35, "narration": 35},
        (2, 3, 3, 4, 4, 5, 6, 7, 8),
    ),
}
RECORDED_BABBLE_SET = "real-babble"
"""The full set's scenes with babble, its talkers people's recorded sentences instead."""
SET_NAMES = ("test", *_SETS, RECORDED_BABBLE_SET)


def _balanced(rng: np.random.Generator, values: Sequence[Any], count: int) -> list[Any]:
    """``count`` values cycling through ``values`` in a shuffled order: every value about equally
    often, and independent of the other factors drawn this way."""
    return [values[i] for i in rng.permutation(np.resize(np.arange(len(values)), count))]


def _draw_condition(
    rng: np.random.Generator, split: str, n_players: int, room: Room | None = None, **fields: Any
) -> Condition:
    pool = SPLITS[split]
    if room is None:
        room = Room(pool.rooms_m[rng.integers(len(pool.rooms_m))], float(rng.choice(pool.rt60s_s)))
    voices = tuple(_random_voice(pool, rng) for _ in range(n_players))
    return Condition(room, voices, split, **fields)


def scene_set(name: str, seed: int = 0) -> list[SceneSpec]:
    """The scenes of a named set (SET_NAMES), reproducible from ``seed``.

    ``test``: 5 small scenes for the unit tests (the first two clean at RT60 0.2 s).
    ``quick``: 18 scenes, every kind, both splits, races at gaps 0–45 ms, a few MB.
    ``full``: 300 scenes for the benchmark. Conditions are balanced: split 2:1 tune/holdout, SNR None/20/10/5 dB, noise
    kind, shouting (half; those clip none/soft/hard), players 2–8, race gaps RACE_GAPS_MS.
    ``real-babble`` (RECORDED_BABBLE_SET): the full set's 152 scenes with babble, the same
    tables, players, calls and SNRs, babbled by people's recorded sentences (needs the
    recordings, :func:`.recorded.have_recordings`; the clatter and the mics' floor, drawn
    after the babble, differ too).
    """
    if name == RECORDED_BABBLE_SET:
        return [s._replace(condition=replace(s.condition, babble="recorded"))
                for s in scene_set("full", seed) if s.condition.noise in ("babble", "both")]
    rng = np.random.default_rng([seed, *name.encode()])
    if name == "test":
        clean = Room(SPLITS["tune"].rooms_m[0], 0.2)
        plan: list[tuple[str, Condition]] = [
            ("race", _draw_condition(rng, "tune", 3, clean, gap_ms=120.0)),
            ("commands", _draw_condition(rng, "tune", 4, clean)),
            ("chatter", _draw_condition(rng, "tune", 2, snr_db=10.0, noise="babble")),
            ("narration", _draw_condition(rng, "holdout", 3, snr_db=20.0, noise="clatter")),
            (
                "race",
                _draw_condition(
                    rng,
                    "holdout",
                    4,
                    snr_db=5.0,
                    noise="both",
                    shouted=True,
                    clip="hard",
                    gap_ms=10.0,
                ),
            ),
        ]
        return [
            SceneSpec(f"{kind}-{c.split}-{i:03d}", kind, c, int(rng.integers(2**31)))
            for i, (kind, c) in enumerate(plan)
        ]
    if name not in _SETS:
        raise ValueError(f"scene set {name!r} is not one of {SET_NAMES}")
    sizes, player_counts = _SETS[name]
    specs = []
    for kind, count in sizes.items():
        splits = _balanced(rng, ("tune", "tune", "holdout"), count)
        snrs = _balanced(rng, SNRS_DB, count)
        noises = _balanced(rng, NOISE_KINDS, count)
        shouts = _balanced(rng, (False, True), count)
        clips = _balanced(rng, CLIP_MODES, count)
        players = _balanced(rng, player_counts, count)
        gaps = _balanced(rng, RACE_GAPS_MS, count)
        for i in range(count):
            condition = _draw_condition(
                rng,
                splits[i],
                players[i],
                snr_db=snrs[i],
                noise=None if snrs[i] is None else noises[i],
                shouted=shouts[i],
                clip=clips[i] if shouts[i] else "none",
                gap_ms=gaps[i] if kind == "race" else None,
            )
            specs.append(
                SceneSpec(f"{kind}-{splits[i]}-{i:03d}", kind, condition, int(rng.integers(2**31)))
            )
    return specs


def write_scene(directory: str | Path, name: str, scene: Scene) -> list[Path]:
    """Write ``NAME.wav`` (16-bit, one channel per mic), ``NAME.json`` (the truth, with its
    name) and, when the app spoke, ``NAME.app.wav`` (its playback); returns the paths."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    wav, truth = directory / f"{name}.wav", directory / f"{name}.json"
    write_wav(wav, scene.audio, RATE_HZ)
    text = json.dumps({"name": name, **scene.truth}, indent=1)
    # indented, but lists of numbers on one line
    text = re.sub(
        r"\[\s+([-+.,\deEnul\s]*?)\s+\]", lambda m: f"[{' '.join(m.group(1).split())}]", text
    )
    truth.write_text(text + "\n", encoding="utf-8")
    if scene.playback is None:
        return [wav, truth]
    playback = directory / f"{name}.app.wav"
    write_wav(playback, scene.playback, RATE_HZ)
    return [wav, truth, playback]
