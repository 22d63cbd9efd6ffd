"""Rendering a scene: players' and the app's utterances as sources, mixed through the room with
the condition's noise, the mics' self-noise and clipping, with the truth of who said what when."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy.signal import butter, fftconvolve, sosfilt

from engine.core import DEFAULT_TIE_WINDOW_MS

from .conditions import Condition
from .noises import babble, clatter
from .rooms import Layout, Sound, impulse_responses, ism_order
from .speech import APP_VOICE, RATE_HZ, Voice, synth

SPEECH_PEAK = 0.2
"""Peak of a normal talker's direct sound at REF_DISTANCE_M (full scale 1.0)."""
REF_DISTANCE_M = 0.3
SHOUT_DB = 14.0
LEVEL_SPREAD_DB = 3.0
"""Talkers differ by up to this much either way; each utterance by half of it again."""
MIC_FLOOR_DBFS = -70.0
"""Every mic's self-noise (white, independent per mic), present even in clean scenes."""
SOFT_KNEE = 0.6
"""Soft clipping is linear up to this level, then saturates smoothly towards 1.0."""
TIE_WINDOW_MS = DEFAULT_TIE_WINDOW_MS
"""The games' default tie window; truth records gaps so any window can be used."""
_LOUDSPEAKER_SOS = butter(2, 300.0, "highpass", fs=RATE_HZ, output="sos")
"""A laptop speaker has no bass."""


@dataclass(frozen=True)
class Scene:
    """A rendered scene: ``audio`` (n, mics) float32 at RATE_HZ, mic i in front of player i;
    ``truth`` (JSON-ready, see the package doc and make_scenes.py); ``playback`` (n,) float32,
    what the app sent to its loudspeaker (for echo cancellation), or None if it said nothing."""

    audio: np.ndarray
    truth: dict[str, Any]
    playback: np.ndarray | None = None


@dataclass(frozen=True)
class Talker:
    voice: Voice
    level_db: float


def draw_talkers(condition: Condition, rng: np.random.Generator) -> list[Talker]:
    return [
        Talker(v, float(rng.uniform(-LEVEL_SPREAD_DB, LEVEL_SPREAD_DB))) for v in condition.voices
    ]


def _gain(level_db: float) -> float:
    """Source gain giving a direct-sound peak of SPEECH_PEAK (+ level_db) at REF_DISTANCE_M
    (pyroomacoustics' direct path has amplitude 1 / distance)."""
    return SPEECH_PEAK * REF_DISTANCE_M * 10 ** (level_db / 20)


def say(
    layout: Layout,
    talker: Talker,
    player: int,
    text: str,
    role: str,
    onset_sample: int,
    shouted: bool,
    rng: np.random.Generator,
) -> Sound:
    """A player's utterance as a sound at their mouth; shouting is louder and brighter."""
    level_db = (
        talker.level_db
        + rng.uniform(-LEVEL_SPREAD_DB / 2, LEVEL_SPREAD_DB / 2)
        + (SHOUT_DB if shouted else 0.0)
    )
    signal = synth(text, talker.voice)
    if shouted:  # more high-frequency effort: a first-order tilt, peak restored
        tilted = np.append(signal[0], signal[1:] - 0.5 * signal[:-1])
        signal = tilted / np.abs(tilted).max()
    truth = {
        "speaker": player,
        "mic": player,
        "role": role,
        "text": text,
        "voice": asdict(talker.voice),
        "shouted": shouted,
        "level_db": round(level_db, 2),
    }
    return Sound(signal * _gain(level_db), tuple(layout.mouths_m[player]), onset_sample, truth)


def speaker_volume_db(rng: np.random.Generator) -> float:
    """The laptop's volume setting, in dB about a talker at 1 m: fixed for a whole game (the
    echo path does not change from one line to the next)."""
    return float(rng.uniform(-3.0, 3.0))


def announce(layout: Layout, text: str, onset_sample: int, level_db: float) -> Sound:
    """The app saying ``text`` through the laptop speaker at volume ``level_db``."""
    signal = sosfilt(_LOUDSPEAKER_SOS, synth(text, APP_VOICE))
    truth = {
        "speaker": None,
        "mic": None,
        "role": "app",
        "text": text,
        "voice": asdict(APP_VOICE),
        "shouted": False,
        "level_db": round(level_db, 2),
    }
    return Sound(signal * _gain(level_db), tuple(layout.loudspeaker_m), onset_sample, truth)


def _place(image: np.ndarray, onset: int, into: np.ndarray) -> None:
    """Add a (mics, k) image starting at scene sample ``onset`` into ``into``, cut to fit."""
    lo, hi = max(onset, 0), min(onset + image.shape[1], into.shape[1])
    if hi > lo:
        into[:, lo:hi] += image[:, lo - onset : hi - onset]


def _limit(audio: np.ndarray, clip: str) -> np.ndarray:
    """What the mic preamp and converter do to a signal over full scale."""
    if clip == "hard":
        return np.clip(audio, -1.0, 1.0)
    if clip == "soft":
        over = np.maximum(np.abs(audio) - SOFT_KNEE, 0.0)
        squashed = SOFT_KNEE + (1 - SOFT_KNEE) * np.tanh(over / (1 - SOFT_KNEE))
        return np.where(over > 0, np.sign(audio) * squashed, audio)
    peak = float(np.abs(audio).max())
    return audio * min(1.0, 0.99 / peak) if peak else audio  # "none": gain set with headroom


def _noise(
    layout: Layout,
    condition: Condition,
    n: int,
    rirs: dict[tuple[float, float, float], np.ndarray],
    rng: np.random.Generator,
) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """The condition's noise at the mics, shape (mics, n), mean power 1 (babble and clatter an
    equal share each), and the babble talkers' voices."""
    taps = next(iter(rirs.values())).shape[1]
    start = -taps  # noise was already going: its reverberation is built up at sample 0
    parts = []
    if condition.noise in ("babble", "both"):
        parts.append(babble(layout, condition.split, start, n + taps, rng,
                            recorded=condition.babble == "recorded"))
    if condition.noise in ("clatter", "both"):
        parts.append(clatter(layout, start, n + taps, rng))
    noise = np.zeros((layout.mics_m.shape[0], n))
    for part in parts:
        mixed = np.zeros_like(noise)
        for sound in part:
            _place(fftconvolve(sound.signal[None, :], rirs[sound.position_m], axes=1), start, mixed)
        noise += mixed / math.sqrt(np.mean(mixed**2) * len(parts))
    talkers = [sound.truth["voice"] for part in parts for sound in part if sound.truth]
    return noise, talkers


def render(
    kind: str,
    seed: int,
    layout: Layout,
    condition: Condition,
    speech: list[Sound],
    tail_s: float,
    rng: np.random.Generator,
) -> Scene:
    """Mix ``speech`` (utterances) through the room with the condition's noise, mic floor and
    clipping; the truth lists every utterance with its arrival on every mic."""
    positions = list(dict.fromkeys(s.position_m for s in speech))
    noise_positions = []
    if condition.noise in ("babble", "both"):
        noise_positions += [tuple(p) for p in layout.babble_m]
    if condition.noise in ("clatter", "both"):
        noise_positions += [tuple(p) for p in layout.clatter_m]
    all_positions = positions + noise_positions
    rirs = dict(
        zip(
            all_positions,
            impulse_responses(layout.room, np.array(all_positions), layout.mics_m, rng),
        )
    )
    n = max(s.onset_sample + s.signal.size for s in speech) + round(tail_s * RATE_HZ)
    mics = layout.mics_m.shape[0]

    audio = np.zeros((mics, n))
    utterances = []
    reference_power = []
    for sound in speech:
        image = fftconvolve(sound.signal[None, :], rirs[sound.position_m], axes=1)
        _place(image, sound.onset_sample, audio)
        arrivals = sound.onset_sample + layout.delays_samples(np.array(sound.position_m))
        own = sound.truth["mic"] if sound.truth["mic"] is not None else int(np.argmin(arrivals))
        onset = float(arrivals[own])
        span = image[
            own,
            int(onset) - sound.onset_sample : int(onset) - sound.onset_sample + sound.signal.size,
        ]
        reference_power.append((sound.truth["role"] != "app", float(np.mean(span**2))))
        utterances.append(
            {
                **sound.truth,
                "source_onset_sample": sound.onset_sample,
                "onset_sample": round(onset),
                "onset_s": round(onset / RATE_HZ, 6),
                "end_sample": round(onset) + sound.signal.size,
                "arrival_samples": [round(float(a), 2) for a in arrivals],
            }
        )
    utterances.sort(key=lambda u: u["onset_s"])

    noise_truth: dict[str, Any] = {
        "kind": condition.noise,
        "snr_db": condition.snr_db,
        "talkers": [],
    }
    if condition.snr_db is not None:
        noise, noise_truth["talkers"] = _noise(layout, condition, n, rirs, rng)
        # SNR: players' speech power on their own mics (while speaking) over mean noise power
        powers = [p for counts, p in reference_power if counts] or [p for _, p in reference_power]
        audio += noise * math.sqrt(float(np.mean(powers)) / 10 ** (condition.snr_db / 10))
    audio += rng.standard_normal(audio.shape) * 10 ** (MIC_FLOOR_DBFS / 20)

    peaks = np.abs(audio).max(axis=1)
    clipping = condition.clip != "none"  # "none" scales the whole scene down instead
    clipped = [int(c) if clipping else 0 for c in np.sum(np.abs(audio) > 1.0, axis=1)]
    audio = _limit(audio, condition.clip)
    truth = {
        "kind": kind,
        "seed": seed,
        "split": condition.split,
        "rate_hz": RATE_HZ,
        "n_samples": n,
        "duration_s": round(n / RATE_HZ, 4),
        "condition": asdict(condition),
        "ism_order": ism_order(layout.room),
        "mouths_m": np.round(layout.mouths_m, 3).tolist(),
        "mics_m": np.round(layout.mics_m, 3).tolist(),
        "loudspeaker_m": np.round(layout.loudspeaker_m, 3).tolist(),
        "mic_distance_m": np.round(
            np.linalg.norm(layout.mics_m - layout.mouths_m, axis=1), 3
        ).tolist(),
        "utterances": utterances,
        "noise": noise_truth,
        "peak_dbfs": [round(20 * math.log10(p), 2) for p in peaks],
        "clipped_samples": clipped,
        "expected": _expected(utterances, race=kind == "race"),
    }
    return Scene(audio.T.astype(np.float32), truth, _playback(speech, n))


def _playback(speech: list[Sound], n: int) -> np.ndarray | None:
    """What the app sent to its speaker: each narration line as rendered, at its start."""
    lines = [s for s in speech if s.truth["role"] == "app"]
    if not lines:
        return None
    out = np.zeros((1, n))
    for line in lines:
        _place(synth(line.truth["text"], APP_VOICE)[None, :], line.onset_sample, out)
    return out[0].astype(np.float32)


def _expected(utterances: list[dict[str, Any]], race: bool) -> dict[str, Any]:
    """The calls a referee should accept, in onset order on their own mics, with their gap
    from the first; for races also the first caller(s) under the default tie window."""
    calls = [u for u in utterances if u["role"] == "call"]
    t0 = calls[0]["onset_s"] if calls else 0.0
    expected: dict[str, Any] = {
        "calls": [
            {
                "player": u["speaker"],
                "text": u["text"],
                "onset_sample": u["onset_sample"],
                "onset_s": u["onset_s"],
                "gap_ms": round((u["onset_s"] - t0) * 1000, 3),
            }
            for u in calls
        ]
    }
    if race:
        expected["tie_window_ms"] = TIE_WINDOW_MS
        expected["first"] = _first(
            [(c["player"], c["gap_ms"]) for c in expected["calls"]], TIE_WINDOW_MS
        )
    return expected


def _first(gaps: list[tuple[int, float]], tie_window_ms: float) -> list[int]:
    return [player for player, gap_ms in gaps if gap_ms <= tie_window_ms]


def first_callers(truth: dict[str, Any], tie_window_ms: float = TIE_WINDOW_MS) -> list[int]:
    """The player(s) a referee with this tie window should rank first: every call whose onset
    on its own mic is within ``tie_window_ms`` of the earliest (one player: a clear winner)."""
    return _first([(c["player"], c["gap_ms"]) for c in truth["expected"]["calls"]], tie_window_ms)
