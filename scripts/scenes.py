"""Realistic, reproducible multichannel table scenes with known truth (issue 7).

A scene is a short recording of a game table: a shoebox room (pyroomacoustics image
sources for the early reflections, a seeded stochastic tail for the late reverberation),
a round table with 2–8 seats, one microphone 20–40 cm in front of each player, espeak-ng
and flite talkers (several voices, speeds and pitches; shouting louder and clipping at
times; flite's voices are built from recordings of people, espeak-ng's are formant
synthesis, whose sounds PocketSphinx's model does not always take for speech), the
app's narration from a laptop loudspeaker on the table, and background babble (other
tables' talkers) and clatter (cutlery, plates) at a chosen SNR. Everything is drawn from
one seed: the same seed gives the same samples, so the same WAV bytes.

Scene kinds, each with what the referee should conclude (``truth["expected"]``):

- ``race``: 2–3 players shout the same call at onset gaps of 0–300 ms; expected: the
  calls in onset order on their own mics (:func:`first_callers` for any tie window).
- ``commands``: one player says an in-grammar phrase (a call or a card from the decks).
- ``chatter``: out-of-grammar table talk; expected: no call.
- ``narration``: the app speaks from the loudspeaker while (or just after) a player calls;
  the app's own utterance is marked ``role: "app"`` and must not count.

Entry points (sibling scripts ``import scenes``): :func:`make_scene`, :func:`render_session`
(a whole scripted game, for the demo recording), :func:`scene_set`, :func:`write_scene`,
:func:`first_callers`, :func:`synth`.

Not modelled: the table top as a reflector, directivity of mouths and mics, clock drift.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pyroomacoustics as pra
from scipy.signal import butter, fftconvolve, sosfilt

from engine import decks
from engine.core import DEFAULT_TIE_WINDOW_MS
from voice.audio.files import write_wav
from voice.audio.frames import PIPELINE_RATE_HZ
from voice.table.narration import EspeakSynthesizer, FliteSynthesizer

RATE_HZ = PIPELINE_RATE_HZ
SPEED_OF_SOUND_M_S = float(pra.constants.get("c"))
KINDS = ("race", "commands", "chatter", "narration")
NOISE_KINDS = ("babble", "clatter", "both")
CLIP_MODES = ("none", "soft", "hard")
SNRS_DB: tuple[float | None, ...] = (None, 20.0, 10.0, 5.0)
TIE_WINDOW_MS = DEFAULT_TIE_WINDOW_MS
"""The games' default tie window; truth records gaps so any window can be used."""
RACE_GAPS_MS = (
    0.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0, 45.0, 60.0, 90.0, 130.0, 180.0, 240.0, 300.0
)
"""Gaps the scene sets' races are drawn from: dense around the first-speaker targets' 15 and
30 ms boundaries."""

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
ISM_MAX_ORDER = 10
"""Image-source order cap: exact early reflections, fast; the late tail is stochastic."""
ONSET_FRACTION = 1e-3
"""A synthesised phrase starts at its first sample above this fraction of its peak."""
BABBLE_TALKERS = 4
"""Distinct babble voices per split."""
LEAD_S = (1.0, 1.3)
"""Ambient lead-in before a scene's first sound (drawn in this range): a running session's
onset detector has heard the room for a while and knows its noise floor before anyone calls."""
TAIL_S = (0.5, 0.8)
"""Room sound after a scene's last sound ends: longer than the detector's end-of-speech
hangover (300 ms), so every utterance ends inside the scene as it would in a session."""

CALLS = ("got it", "pass", "stop", "bell", "favorite")
RACE_CALLS = ("got it", "got it", "got it", "stop", "bell")
CHATTER = (
    "pass me the salt please",
    "whose turn is it",
    "I love this game",
    "wait what did it say",
    "can you read that card again",
    "I think I had that one",
    "hang on a second",
    "who wants another drink",
    "that was so close",
    "no way you were first",
    "my phone is ringing",
    "let me see your cards",
    "this one is impossible",
    "how many points do I have",
    "you always win this",
    "okay okay I am ready",
    "did anyone hear that",
    "turn the music down a bit",
    "where did the cookies go",
    "I am starving",
    "we should order a pizza",
    "stop looking at my hand",
    "that is not fair at all",
    "can we play again after this",
    "the bell is over there",
    "is it my go now",
    "I got distracted sorry",
    "what time is it",
    "one more round then bed",
    "nice move",
    "I forgot the rules already",
    "you need to speak up",
)

_CACHE_DIR = Path(tempfile.gettempdir()) / "orderup-scene-speech"
_TAIL_SOS = butter(2, 4000.0, "lowpass", fs=RATE_HZ, output="sos")
"""Late reverberation is darker than the direct sound (walls and air absorb highs)."""
_LOUDSPEAKER_SOS = butter(2, 300.0, "highpass", fs=RATE_HZ, output="sos")
"""A laptop speaker has no bass."""


# --------------------------------------------------------------------------- value types


@dataclass(frozen=True)
class Voice:
    """A talker: an espeak-ng voice name with optional variant ("en-us+f3") or a flite voice
    ("flite:slt", :data:`FLITE`), speed, pitch 0–99."""

    name: str = "en-us"
    speed_wpm: int = 170
    pitch: int = 50


FLITE = "flite:"
"""A voice name with this prefix is flite's (:class:`voice.table.narration.FliteSynthesizer`)."""
FLITE_SHARE = 0.5
"""Of the talkers a scene set draws, the share that speaks with flite."""

APP_VOICE = Voice("en-us", 170, 50)
"""The app's narration voice (the announcer's default rate)."""


@dataclass(frozen=True)
class Room:
    """A shoebox room: inner dimensions (x, y, height) in metres and its RT60."""

    dims_m: tuple[float, float, float]
    rt60_s: float


@dataclass(frozen=True)
class Pool:
    """What one split may draw from; the splits' voices, speeds, pitches and rooms are disjoint."""

    voices: tuple[str, ...]
    flite_voices: tuple[str, ...]
    speeds_wpm: tuple[int, ...]
    pitches: tuple[int, ...]
    rooms_m: tuple[tuple[float, float, float], ...]
    rt60s_s: tuple[float, ...]


SPLITS = {
    "tune": Pool(
        voices=tuple(
            f"{base}{variant}"
            for base in ("en-us", "en", "en-029", "en-gb-x-gbclan")
            for variant in ("", "+f3", "+m3")
        ),
        flite_voices=("flite:awb", "flite:slt"),
        speeds_wpm=(150, 175, 200),
        pitches=(35, 50, 65),
        rooms_m=((4.0, 3.5, 2.6), (5.5, 4.5, 2.7), (7.0, 5.5, 3.0)),
        rt60s_s=(0.2, 0.4, 0.6),
    ),
    "holdout": Pool(
        voices=tuple(
            f"{base}{variant}"
            for base in ("en-gb-scotland", "en-gb-x-gbcwmd")
            for variant in ("", "+f2", "+m5")
        ),
        flite_voices=("flite:rms", "flite:kal16"),
        speeds_wpm=(135, 215),
        pitches=(25, 80),
        rooms_m=((3.6, 3.2, 2.5), (8.5, 6.5, 3.2)),
        rt60s_s=(0.3, 0.5, 0.8),
    ),
}


@dataclass(frozen=True)
class Condition:
    """How a scene sounds: room, players' voices, shouting, noise. ``split`` is "tune",
    "holdout" (scene sets) or None (a scripted session). ``noise`` is set exactly when
    ``snr_db`` is. ``gap_ms`` (races only) fixes the gap between the first two callers;
    None draws it from 0–300 ms."""

    room: Room
    voices: tuple[Voice, ...]
    split: str | None = "tune"
    shouted: bool = False
    clip: str = "none"
    snr_db: float | None = None
    noise: str | None = None
    gap_ms: float | None = None

    def __post_init__(self) -> None:
        if not 2 <= len(self.voices) <= 8:
            raise ValueError(f"a table has 2-8 players, got {len(self.voices)} voices")
        if self.split is not None and self.split not in SPLITS:
            raise ValueError(f"split {self.split!r} is not one of {sorted(SPLITS)} or None")
        if self.clip not in CLIP_MODES:
            raise ValueError(f"clip {self.clip!r} is not one of {CLIP_MODES}")
        if (self.snr_db is None) != (self.noise is None) or self.noise not in (None, *NOISE_KINDS):
            raise ValueError(
                f"noise {self.noise!r} with snr_db {self.snr_db!r}: give both (noise one of "
                f"{NOISE_KINDS}) or neither"
            )

    @property
    def n_players(self) -> int:
        return len(self.voices)


@dataclass(frozen=True)
class Line:
    """One thing a player says in a scripted session: when they start (scene seconds,
    at the mouth), which seat, what, and whether they shout it."""

    onset_s: float
    player: int
    text: str
    shouted: bool = False


@dataclass(frozen=True)
class Scene:
    """A rendered scene: ``audio`` (n, mics) float32 at RATE_HZ, mic i in front of player i;
    ``truth`` (JSON-ready, see the module doc and make_scenes.py); ``playback`` (n,) float32,
    what the app sent to its loudspeaker (for echo cancellation), or None if it said nothing."""

    audio: np.ndarray
    truth: dict[str, Any]
    playback: np.ndarray | None = None


class SceneSpec(NamedTuple):
    """One entry of a scene set: render it with ``make_scene(kind, condition, seed)``."""

    name: str
    kind: str
    condition: Condition
    seed: int


@dataclass(frozen=True)
class Layout:
    """Where everything is (metres, room coordinates): players' mouths and their mics (same
    index), the app's loudspeaker, babble talkers at other tables, clatter spots on the table."""

    room: Room
    mouths_m: np.ndarray
    mics_m: np.ndarray
    loudspeaker_m: np.ndarray
    babble_m: np.ndarray
    clatter_m: np.ndarray

    def delays_samples(self, source_m: np.ndarray) -> np.ndarray:
        """Direct-path delay from ``source_m`` to every mic, in (fractional) samples."""
        return delays_samples(source_m, self.mics_m)


def delays_samples(source_m: np.ndarray, mics_m: np.ndarray) -> np.ndarray:
    """Direct-path delay from ``source_m`` (3,) to each of ``mics_m`` (k, 3), in samples."""
    distances_m = np.linalg.norm(np.asarray(mics_m) - np.asarray(source_m), axis=1)
    return np.asarray(distances_m / SPEED_OF_SOUND_M_S * RATE_HZ)


# --------------------------------------------------------------------------- speech


@functools.cache
def _version(program_name: str) -> str:
    program = shutil.which(program_name)
    if program is None:
        return ""
    return subprocess.run(
        [program, "--version"], capture_output=True, text=True, check=False
    ).stdout.strip()


def synthesizer(voice: Voice) -> EspeakSynthesizer | FliteSynthesizer:
    if voice.name.startswith(FLITE):
        return FliteSynthesizer(voice.name.removeprefix(FLITE), voice.speed_wpm, voice.pitch)
    return EspeakSynthesizer(voice.name, voice.speed_wpm, voice.pitch)


@functools.lru_cache(maxsize=2048)
def synth(text: str, voice: Voice) -> np.ndarray:
    """``text`` spoken by ``voice``: read-only 16 kHz float32, peak 1, trimmed so sample 0 is
    the onset (first sample above ONSET_FRACTION of the peak) — truth onsets rest on that.

    Cached in memory and on disk under the temp dir, keyed by text, voice and the
    synthesiser's version, so a second run of a scene set synthesises nothing.
    """
    program = "flite" if voice.name.startswith(FLITE) else "espeak-ng"
    key = repr((text, voice.name, voice.speed_wpm, voice.pitch, _version(program)))
    path = _CACHE_DIR / f"{hashlib.sha1(key.encode()).hexdigest()[:20]}.npy"
    if path.exists():
        pcm = np.load(path)
    else:
        raw = synthesizer(voice).render(text)
        peak = float(np.abs(raw).max())
        loud = np.flatnonzero(np.abs(raw) > ONSET_FRACTION * peak)
        pcm = np.round(raw[loud[0] : loud[-1] + 1] / peak * 32767).astype(np.int16)
        _CACHE_DIR.mkdir(exist_ok=True)
        partial = path.with_name(f"{path.stem}.{os.getpid()}.partial.npy")
        np.save(partial, pcm)
        os.replace(partial, path)  # atomic: parallel renderers never read half a file
    samples = (pcm / 32767).astype(np.float32)  # 16-bit, as the synthesiser made it: same cached or not
    samples.setflags(write=False)
    return samples


def command_phrases() -> tuple[tuple[str, str], ...]:
    """Every in-grammar phrase a player may say, as (grammar, text): the calls, and the cards
    of the three games' decks as said in play (desserts by name, the poutine menu's spoken
    forms, chaosteria's variants claimed and dishes returned: "mine onion soup", "nobody
    ordered soup" — the game grammar has no bare dish names)."""
    phrases = [("call", c) for c in CALLS]
    phrases += [("desserts", d.name.lower()) for d in decks.desserts().desserts]
    menu = decks.poutine()
    phrases += [("poutine", s) for item in (*menu.menu, menu.fries) for s in item.spoken]
    for dish in decks.chaosteria().dishes:
        phrases += [("chaosteria", f"mine {v.lower()}") for v in dish.variants]
        phrases.append(("chaosteria", f"nobody ordered {dish.dish.lower()}"))
    return tuple(dict.fromkeys(phrases))


def narration_lines() -> tuple[str, ...]:
    """Things the app says: guest announcements from the desserts deck, and short verdicts
    that sound like calls (the hard case for "the app never hears itself")."""
    guests = [
        f"Next guest: {g.name}. Craves {' and '.join(g.craves)}."
        + (f" Favorite: {g.favorite}." if g.favorite else "")
        for g in decks.desserts().guests
    ]
    verdicts = [
        "Stop!",
        "Got it. Maya first.",
        "Leo passes.",
        "Pass.",
        "Bell!",
        "Time is up.",
        "Rocky Road is Rocky's favorite!",
        "Priya takes the guest and draws a card.",
        "Omar, that is not on the menu.",
    ]
    return (*guests, *verdicts)


# --------------------------------------------------------------------------- room acoustics


def table_layout(room: Room, n_players: int, rng: np.random.Generator) -> Layout:
    """A round table (bigger for more players) near the room's centre, players seated evenly
    around it with mouths at 1.1–1.25 m, each mic 20–40 cm from its player's mouth towards the
    table and 20–50 degrees below the mouth; the laptop on the table; 5 babble talkers as far
    from the table as the room allows; 2 clatter spots on the table top."""
    dims = np.array(room.dims_m)
    table_radius_m = max(0.45, 0.62 * n_players / (2 * math.pi))
    reach_m = table_radius_m + 0.3 + 0.4  # farthest mouth plus a margin to the walls
    if np.any(dims[:2] < 2 * reach_m):
        raise ValueError(f"room {room.dims_m} is too small for a table of {n_players}")
    centre = np.append(rng.uniform(reach_m, dims[:2] - reach_m), 0.0)
    step = 2 * math.pi / n_players
    angles = (
        rng.uniform(0, step)
        + step * np.arange(n_players)
        + rng.uniform(-0.1, 0.1, n_players) * step
    )
    outward = np.stack([np.cos(angles), np.sin(angles), np.zeros(n_players)], axis=1)
    mouths = centre + outward * (table_radius_m + rng.uniform(0.15, 0.3, (n_players, 1)))
    mouths[:, 2] = rng.uniform(1.1, 1.25, n_players)
    distance_m = rng.uniform(0.2, 0.4, (n_players, 1))
    below = np.radians(rng.uniform(20, 50, (n_players, 1)))
    turn = np.radians(rng.uniform(-15, 15, n_players))
    inward = -np.stack([np.cos(angles + turn), np.sin(angles + turn), np.zeros(n_players)], axis=1)
    mics = mouths + distance_m * (np.cos(below) * inward - np.sin(below) * np.array([0, 0, 1]))
    laptop = centre + _in_disc(rng, 0.6 * table_radius_m) + np.array([0, 0, 0.87])
    clatter = np.array(
        [centre + _in_disc(rng, 0.8 * table_radius_m) + [0, 0, 0.76] for _ in range(2)]
    )
    candidates = np.column_stack(
        [
            rng.uniform(0.3, dims[0] - 0.3, 200),
            rng.uniform(0.3, dims[1] - 0.3, 200),
            rng.uniform(1.1, 1.7, 200),
        ]
    )
    far = np.argsort(-np.linalg.norm(candidates[:, :2] - centre[:2], axis=1))[:20]
    babble = candidates[rng.choice(far, 5, replace=False)]
    return Layout(room, mouths, mics, laptop, babble, clatter)


def _in_disc(rng: np.random.Generator, radius_m: float) -> np.ndarray:
    r, a = radius_m * math.sqrt(rng.uniform()), rng.uniform(0, 2 * math.pi)
    return np.array([r * math.cos(a), r * math.sin(a), 0.0])


def ism_order(room: Room) -> int:
    """The image-source order used: Sabine's order for the RT60, capped at ISM_MAX_ORDER."""
    return min(int(pra.inverse_sabine(room.rt60_s, room.dims_m)[1]), ISM_MAX_ORDER)


def impulse_responses(
    room: Room, sources_m: np.ndarray, mics_m: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Room impulse responses, shape (sources, mics, taps), aligned so tap k is k samples after
    emission: the direct path of source s to mic m peaks at ``delays_samples`` (pyroomacoustics'
    fractional-delay-filter offset is removed).

    Image sources up to ISM_MAX_ORDER give the direct path and early reflections exactly; past
    the time they stop being complete, a seeded noise tail decaying 60 dB per ``rt60_s`` takes
    over, its level fitted to the image-source energy just before. Full-order image sources
    would take minutes per scene at RT60 0.8 s; this takes a fraction of a second.
    """
    absorption, order = pra.inverse_sabine(room.rt60_s, room.dims_m)[0], ism_order(room)
    box = pra.ShoeBox(
        list(room.dims_m), fs=RATE_HZ, materials=pra.Material(absorption), max_order=order
    )
    for source in sources_m:
        box.add_source(np.asarray(source))
    box.add_microphone_array(np.asarray(mics_m).T)
    hpf = pra.constants.get("rir_hpf_enable")
    pra.constants.set("rir_hpf_enable", False)  # zero-phase: it leaks sound before the direct path
    try:
        box.compute_rir()
    finally:
        pra.constants.set("rir_hpf_enable", hpf)
    offset = int(pra.constants.get("frac_delay_length")) // 2
    # every path shorter than order x the radius of the sphere inside the image "diamond" is present
    dims = room.dims_m
    inscribed_m = min(
        a * b / math.hypot(a, b)
        for a, b in ((dims[0], dims[1]), (dims[0], dims[2]), (dims[1], dims[2]))
    )
    complete = int(order * inscribed_m / SPEED_OF_SOUND_M_S * RATE_HZ)
    fade = RATE_HZ // 200
    taps = max(int(room.rt60_s * RATE_HZ), complete + fade)
    n = np.arange(taps)
    decay = np.exp(-n * math.log(1000.0) / (room.rt60_s * RATE_HZ))
    ramp = np.clip((n - (complete - fade)) / fade, 0.0, 1.0)
    direct = np.array([delays_samples(source, mics_m) for source in sources_m])
    out = np.zeros((len(sources_m), len(mics_m), taps))
    for m, row in enumerate(box.rir):
        for s, rir in enumerate(row):
            early = np.zeros(taps)
            part = rir[offset : offset + taps]
            early[: part.size] = part
            start = max(complete // 2, int(direct[s, m]) + RATE_HZ // 500)
            fit = slice(min(start, complete - fade), complete)
            tail = sosfilt(_TAIL_SOS, rng.standard_normal(taps))
            tail *= decay / np.sqrt(np.mean(tail**2))
            level = math.sqrt(np.sum(early[fit] ** 2) / np.sum(decay[fit] ** 2))
            out[s, m] = early * (1 - ramp) + level * tail * ramp
    return out


def own_mic_response(room: Room, rng: np.random.Generator) -> np.ndarray:
    """The impulse response from a player's mouth to their own mic, seated at a table for
    four in `room` (:func:`table_layout`'s seating, drawn from `rng`)."""
    layout = table_layout(room, 4, rng)
    return impulse_responses(room, layout.mouths_m[:1], layout.mics_m[:1], rng)[0, 0]


# --------------------------------------------------------------------------- rendering


@dataclass(frozen=True)
class _Sound:
    """One sound placed in a scene: samples at the source, from where, starting when (scene
    samples at the source, negative for noise that was already going), and its truth (an
    utterance's fields; a babble talker's voice; nothing for clatter)."""

    signal: np.ndarray
    position_m: tuple[float, float, float]
    onset_sample: int
    truth: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class _Talker:
    voice: Voice
    level_db: float


def _talkers(condition: Condition, rng: np.random.Generator) -> list[_Talker]:
    return [
        _Talker(v, float(rng.uniform(-LEVEL_SPREAD_DB, LEVEL_SPREAD_DB))) for v in condition.voices
    ]


def _gain(level_db: float) -> float:
    """Source gain giving a direct-sound peak of SPEECH_PEAK (+ level_db) at REF_DISTANCE_M
    (pyroomacoustics' direct path has amplitude 1 / distance)."""
    return SPEECH_PEAK * REF_DISTANCE_M * 10 ** (level_db / 20)


def _say(
    layout: Layout,
    talker: _Talker,
    player: int,
    text: str,
    role: str,
    onset_sample: int,
    shouted: bool,
    rng: np.random.Generator,
) -> _Sound:
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
    return _Sound(signal * _gain(level_db), tuple(layout.mouths_m[player]), onset_sample, truth)


def _speaker_volume_db(rng: np.random.Generator) -> float:
    """The laptop's volume setting, in dB about a talker at 1 m: fixed for a whole game (the
    echo path does not change from one line to the next)."""
    return float(rng.uniform(-3.0, 3.0))


def _announce(layout: Layout, text: str, onset_sample: int, level_db: float) -> _Sound:
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
    return _Sound(signal * _gain(level_db), tuple(layout.loudspeaker_m), onset_sample, truth)


def _random_voice(pool: Pool, rng: np.random.Generator) -> Voice:
    return Voice(
        str(rng.choice(pool.flite_voices if rng.uniform() < FLITE_SHARE else pool.voices)),
        int(rng.choice(pool.speeds_wpm)),
        int(rng.choice(pool.pitches)),
    )


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


def _babble(
    layout: Layout, split: str | None, start: int, n: int, rng: np.random.Generator
) -> list[_Sound]:
    """Other tables: each babble position a talker chaining chatter with short pauses, one of
    the split's BABBLE_TALKERS (truth: just the voice)."""
    talkers = _babble_talkers(split or "tune")
    sounds = []
    for position in layout.babble_m:
        voice = talkers[rng.integers(len(talkers))]
        parts, length = [], 0
        while length < n:
            pause = np.zeros(int(rng.uniform(0.15, 0.7) * RATE_HZ))
            parts += [synth(str(rng.choice(CHATTER)), voice), pause]
            length += parts[-2].size + pause.size
        signal = np.concatenate(parts)
        skip = int(rng.integers(0, max(1, signal.size - n)))
        signal = signal[skip : skip + n] * 10 ** (rng.uniform(-4, 4) / 20)
        sounds.append(_Sound(signal, tuple(position), start, {"voice": asdict(voice)}))
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


def _clatter(layout: Layout, start: int, n: int, rng: np.random.Generator) -> list[_Sound]:
    """Cutlery and plates: at each spot one knock (:func:`clatter_hit`) plus about one more a
    second, all after scene sample 0, which is ``-start`` here."""
    sounds = []
    for position in layout.clatter_m:
        signal = np.zeros(n)
        for at in rng.integers(-start, n, 1 + rng.poisson((n + start) / RATE_HZ)):
            piece = clatter_hit(rng)[: n - at] * 10 ** (rng.uniform(-15, 0) / 20)
            signal[at : at + piece.size] += piece
        sounds.append(_Sound(signal, tuple(position), start))
    return sounds


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
        parts.append(_babble(layout, condition.split, start, n + taps, rng))
    if condition.noise in ("clatter", "both"):
        parts.append(_clatter(layout, start, n + taps, rng))
    noise = np.zeros((layout.mics_m.shape[0], n))
    for part in parts:
        mixed = np.zeros_like(noise)
        for sound in part:
            _place(fftconvolve(sound.signal[None, :], rirs[sound.position_m], axes=1), start, mixed)
        noise += mixed / math.sqrt(np.mean(mixed**2) * len(parts))
    talkers = [sound.truth["voice"] for part in parts for sound in part if sound.truth]
    return noise, talkers


def _render(
    kind: str,
    seed: int,
    layout: Layout,
    condition: Condition,
    speech: list[_Sound],
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


def _playback(speech: list[_Sound], n: int) -> np.ndarray | None:
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


# --------------------------------------------------------------------------- scene kinds


def _race(
    layout: Layout,
    condition: Condition,
    talkers: list[_Talker],
    lead: int,
    rng: np.random.Generator,
) -> list[_Sound]:
    """2–3 players shout the same call; arrival gaps on their own mics are exactly the drawn
    gaps (the source starts earlier by the direct-path delay)."""
    n_callers = 3 if condition.n_players >= 3 and rng.uniform() < 0.35 else 2
    players = [int(p) for p in rng.choice(condition.n_players, n_callers, replace=False)]
    text = str(rng.choice(RACE_CALLS))
    first_gap_ms = condition.gap_ms if condition.gap_ms is not None else rng.uniform(0, 300)
    gaps_ms = [0.0, first_gap_ms, *rng.uniform(0, 300, n_callers - 2)]
    arrivals = lead + np.cumsum(gaps_ms) * RATE_HZ / 1000
    return [
        _say(
            layout,
            talkers[p],
            p,
            text,
            "call",
            round(arrival - layout.delays_samples(layout.mouths_m[p])[p]),
            condition.shouted,
            rng,
        )
        for p, arrival in zip(players, arrivals)
    ]


def _call(
    layout: Layout,
    condition: Condition,
    talkers: list[_Talker],
    onset: int,
    rng: np.random.Generator,
) -> _Sound:
    """A random player saying a random in-grammar phrase (calls 40 %, card names 60 %)."""
    phrases = command_phrases()
    calls = [p for p in phrases if p[0] == "call"]
    cards = [p for p in phrases if p[0] != "call"]
    grammar, text = (
        calls[rng.integers(len(calls))] if rng.uniform() < 0.4 else cards[rng.integers(len(cards))]
    )
    player = int(rng.integers(condition.n_players))
    sound = _say(layout, talkers[player], player, text, "call", onset, condition.shouted, rng)
    return replace(sound, truth={**sound.truth, "grammar": grammar})


def _commands(
    layout: Layout,
    condition: Condition,
    talkers: list[_Talker],
    lead: int,
    rng: np.random.Generator,
) -> list[_Sound]:
    return [_call(layout, condition, talkers, lead, rng)]


def _chatter(
    layout: Layout,
    condition: Condition,
    talkers: list[_Talker],
    lead: int,
    rng: np.random.Generator,
) -> list[_Sound]:
    """One player's table talk, sometimes answered by another."""
    n_lines = 2 if rng.uniform() < 0.3 else 1
    players = [int(p) for p in rng.choice(condition.n_players, n_lines, replace=False)]
    sounds, onset = [], lead
    for p in players:
        sounds.append(
            _say(
                layout,
                talkers[p],
                p,
                str(rng.choice(CHATTER)),
                "chatter",
                onset,
                condition.shouted,
                rng,
            )
        )
        onset += sounds[-1].signal.size + int(rng.uniform(0.1, 0.5) * RATE_HZ)
    return sounds


def _narration(
    layout: Layout,
    condition: Condition,
    talkers: list[_Talker],
    lead: int,
    rng: np.random.Generator,
) -> list[_Sound]:
    """The app speaks; usually a player calls over it (or just after it), sometimes nobody.
    Half the time the app has already said a line before (as it has at a table in play, where
    its echo canceller has learned the room); otherwise the call comes in its first line."""
    lines = narration_lines()
    volume_db = _speaker_volume_db(rng)
    before: list[_Sound] = []
    if rng.uniform() < 0.5:
        before = [_announce(layout, lines[rng.integers(len(lines))], lead, volume_db)]
        lead += before[0].signal.size + int(rng.uniform(0.3, 1.0) * RATE_HZ)
    app = _announce(layout, lines[rng.integers(len(lines))], lead, volume_db)
    length = app.signal.size
    draw = rng.uniform()
    if draw < 0.2:
        return [*before, app]
    if draw < 0.4:  # right after the app stops: its reverberation is still decaying
        at = lead + length + int(rng.uniform(0.0, 0.3) * RATE_HZ)
    else:
        at = lead + int(rng.uniform(0.2, max(0.25, length / RATE_HZ - 0.2)) * RATE_HZ)
    return [*before, app, _call(layout, condition, talkers, at, rng)]


_SCRIPTS = {"race": _race, "commands": _commands, "chatter": _chatter, "narration": _narration}


def make_scene(kind: str, condition: Condition, seed: int) -> Scene:
    """One scene of ``kind`` (one of KINDS) under ``condition``; the table layout, who speaks,
    what, when, levels, noise and reverberation tails all come from ``seed``."""
    if kind not in _SCRIPTS:
        raise ValueError(f"scene kind {kind!r} is not one of {KINDS}")
    rng = np.random.default_rng(seed)
    layout = table_layout(condition.room, condition.n_players, rng)
    talkers = _talkers(condition, rng)
    lead = int(rng.uniform(*LEAD_S) * RATE_HZ)
    speech = _SCRIPTS[kind](layout, condition, talkers, lead, rng)
    return _render(kind, seed, layout, condition, speech, rng.uniform(*TAIL_S), rng)


def render_session(
    room: Room,
    players: Sequence[Voice],
    lines: Sequence[Line],
    narration: Sequence[tuple[float, str]],
    seed: int,
    *,
    snr_db: float | None = None,
    noise: str | None = None,
    clip: str = "none",
    length_s: float = 0.0,
) -> Scene:
    """A whole scripted game in one room recording (the demo): ``players`` are the seats'
    voices, ``lines`` what they say and when, ``narration`` the app's (onset_s, text) lines.
    Onsets are when the sound leaves the mouth or speaker; the truth gives the arrivals.
    Every player line is an expected call (``kind: "session"``). The recording runs a second
    past the last sound, and at least ``length_s``."""
    if not lines and not narration:
        raise ValueError("a session needs at least one player line or narration line")
    condition = Condition(
        room,
        tuple(players),
        split=None,
        shouted=any(line.shouted for line in lines),
        clip=clip,
        snr_db=snr_db,
        noise=noise,
    )
    rng = np.random.default_rng(seed)
    layout = table_layout(room, condition.n_players, rng)
    talkers = _talkers(condition, rng)
    speech = [
        _say(
            layout,
            talkers[line.player],
            line.player,
            line.text,
            "call",
            round(line.onset_s * RATE_HZ),
            line.shouted,
            rng,
        )
        for line in lines
    ]
    volume_db = _speaker_volume_db(rng)
    speech += [
        _announce(layout, text, round(onset_s * RATE_HZ), volume_db) for onset_s, text in narration
    ]
    end_s = max(s.onset_sample + s.signal.size for s in speech) / RATE_HZ
    return _render("session", seed, layout, condition, speech, max(1.0, length_s - end_s), rng)


# --------------------------------------------------------------------------- scene sets

_SETS = {
    "quick": ({"race": 8, "commands": 4, "chatter": 3, "narration": 3}, (2, 3, 4, 5, 8)),
    "full": (
        {"race": 140, "commands": 90, "chatter": 35, "narration": 35},
        (2, 3, 3, 4, 4, 5, 6, 7, 8),
    ),
}
SET_NAMES = ("test", *_SETS)


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
    """
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
