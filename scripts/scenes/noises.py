"""Background sound: babble (other tables' talkers chaining chatter, or people's recorded
sentences) and clatter (knocks of cutlery and plates), as sources placed in the room."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import asdict

import numpy as np

from .conditions import SPLITS
from .phrases import CHATTER
from .recorded import part_of, sentences
from .rooms import Layout, Sound
from .speech import RATE_HZ, Voice, synth

BABBLE_TALKERS = 4
"""Distinct babble voices per split."""


@functools.cache
def _babble_talkers(split: str) -> tuple[Voice, ...]:
    """A few fixed voices of the split: babble needs variety in a scene, not across scenes, and
    few talkers keep the speech cache small."""
    pool = SPLITS[split]
    return tuple(
        Voice(
            pool.voices[k * 5 % len(pool.voices)],
            pool.speeds_wpm[k % len(pool.speeds_wpm)],
            pool.pitches[k // 2 % len(pool.pitches)],
        )
        for k in range(BABBLE_TALKERS)
    )


def _chain(say: Callable[[], np.ndarray], n: int, rng: np.random.Generator) -> np.ndarray:
    """What `say` says, again and again with 0.15–0.7 s pauses, cut at a random point to `n`
    samples, at a random level within ±4 dB."""
    parts, length = [], 0
    while length < n:
        pause = np.zeros(int(rng.uniform(0.15, 0.7) * RATE_HZ))
        parts += [say(), pause]
        length += parts[-2].size + pause.size
    signal = np.concatenate(parts)
    skip = int(rng.integers(0, max(1, signal.size - n)))
    return signal[skip : skip + n] * 10 ** (rng.uniform(-4, 4) / 20)


def babble(
    layout: Layout, split: str | None, start: int, n: int, rng: np.random.Generator,
    recorded: bool = False,
) -> list[Sound]:
    """Other tables: each babble position a talker chaining chatter with short pauses, one of
    the split's BABBLE_TALKERS (truth: just the voice); `recorded`, one of the split's part's
    recorded speakers chaining their sentences (:func:`.recorded.sentences`; truth: the
    speaker)."""
    sounds = []
    if recorded:
        said = sentences(part_of(split))
        speakers = list(said)
        for position in layout.babble_m:
            speaker = speakers[rng.integers(len(speakers))]
            signal = _chain(lambda mine=said[speaker]: mine[rng.integers(len(mine))], n, rng)
            sounds.append(Sound(signal, tuple(position), start, {"voice": {"recorded": speaker}}))
        return sounds
    talkers = _babble_talkers(split or "tune")
    for position in layout.babble_m:
        voice = talkers[rng.integers(len(talkers))]
        signal = _chain(lambda voice=voice: synth(str(rng.choice(CHATTER)), voice), n, rng)
        sounds.append(Sound(signal, tuple(position), start, {"voice": asdict(voice)}))
    return sounds


def clatter_hit(rng: np.random.Generator) -> np.ndarray:
    """One knock of cutlery or plates, 250 ms at 16 kHz, unscaled: a broadband click (noise of
    unit variance) decaying in milliseconds plus a few ringing partials (1.5–7 kHz, amplitude
    0.2–0.6) decaying in tens of ms."""
    k = np.arange(RATE_HZ // 4) / RATE_HZ
    hit = rng.standard_normal(k.size) * np.exp(-k / rng.uniform(0.002, 0.01))
    for _ in range(int(rng.integers(2, 5))):
        ring = np.sin(2 * math.pi * rng.uniform(1500, 7000) * k + rng.uniform(0, 2 * math.pi))
        hit += rng.uniform(0.2, 0.6) * ring * np.exp(-k / rng.uniform(0.02, 0.08))
    return hit


def clatter(layout: Layout, start: int, n: int, rng: np.random.Generator) -> list[Sound]:
    """Cutlery and plates: at each spot one knock (:func:`clatter_hit`) plus about one more a
    second, all after scene sample 0, which is ``-start`` here."""
    sounds = []
    for position in layout.clatter_m:
        signal = np.zeros(n)
        for at in rng.integers(-start, n, 1 + rng.poisson((n + start) / RATE_HZ)):
            piece = clatter_hit(rng)[: n - at] * 10 ** (rng.uniform(-15, 0) / 20)
            signal[at : at + piece.size] += piece
        sounds.append(Sound(signal, tuple(position), start))
    return sounds
