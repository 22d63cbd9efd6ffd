"""The room: a shoebox with a round table, players' mouths and mics, the laptop, babble and
clatter spots (:func:`table_layout`), and its impulse responses (:func:`impulse_responses`:
pyroomacoustics image sources for the early reflections, a seeded stochastic tail)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyroomacoustics as pra
from scipy.signal import butter, sosfilt

from .speech import RATE_HZ

SPEED_OF_SOUND_M_S = float(pra.constants.get("c"))
ISM_MAX_ORDER = 10
"""Image-source order cap: exact early reflections, fast; the late tail is stochastic."""
_TAIL_SOS = butter(2, 4000.0, "lowpass", fs=RATE_HZ, output="sos")
"""Late reverberation is darker than the direct sound (walls and air absorb highs)."""


@dataclass(frozen=True)
class Room:
    """A shoebox room: inner dimensions (x, y, height) in metres and its RT60."""

    dims_m: tuple[float, float, float]
    rt60_s: float


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


@dataclass(frozen=True)
class Sound:
    """One sound placed in a scene: samples at the source, from where, starting when (scene
    samples at the source, negative for noise that was already going), and its truth (an
    utterance's fields; a babble talker's voice; nothing for clatter)."""

    signal: np.ndarray
    position_m: tuple[float, float, float]
    onset_sample: int
    truth: dict[str, Any] = field(default_factory=dict)


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
