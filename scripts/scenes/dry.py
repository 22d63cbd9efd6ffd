"""Dry scenes for the unit tests: calls placed on microphones, bleed into every other microphone
as a fractional delay and a gain (no room), and independent white or pink noise per mic, with
the truth of who spoke when (:func:`mix_scene`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .speech import RATE_HZ, voiced_span


@dataclass(frozen=True)
class BleedSpec:
    """How each call leaks into the other mics: per (source, mic) pair a random delay and gain
    drawn uniformly from these ranges (delay fractional, band-limited)."""

    delay_ms: tuple[float, float] = (1.0, 6.0)
    gain_db: tuple[float, float] = (-20.0, -6.0)


@dataclass(frozen=True)
class TruthCall:
    """Where a call really is: `mic` it was spoken into, onset/end samples on that mic."""

    mic: int
    onset_sample: int
    end_sample: int
    label: str = ""


@dataclass(frozen=True)
class DryScene:
    """A mixed scene: `audio` (n, n_mics) float32 at 16 kHz, `truth` in onset order."""

    audio: np.ndarray = field(repr=False)
    truth: tuple[TruthCall, ...]
    bleed_delay_ms: np.ndarray = field(repr=False)
    bleed_gain_db: np.ndarray = field(repr=False)


def _delayed(x: np.ndarray, delay_samples: float, length: int) -> np.ndarray:
    """x delayed by a fractional number of samples (band-limited, via the FFT), cut to length."""
    n = 1 << (max(length, x.size + int(delay_samples) + 64) - 1).bit_length()
    spec = np.fft.rfft(x, n) * np.exp(-2j * np.pi * np.fft.rfftfreq(n) * delay_samples)
    return np.fft.irfft(spec, n)[:length]


def _noise(rng: np.random.Generator, n: int, kind: str) -> np.ndarray:
    white = rng.standard_normal(n)
    if kind == "white":
        return white
    if kind == "pink":
        spec = np.fft.rfft(white)
        f = np.fft.rfftfreq(n, 1 / RATE_HZ)
        spec *= 1 / np.sqrt(np.maximum(f, 50.0))
        out = np.fft.irfft(spec, n)
        return out / out.std()
    raise ValueError(f"noise kind must be 'white' or 'pink', got {kind!r}")


def mix_scene(
    calls: list[tuple[int, np.ndarray, int]],
    n_mics: int,
    bleed: BleedSpec | None = BleedSpec(),
    noise_snr_db: float | None = 30.0,
    noise: str = "white",
    seed: int = 0,
    length: int | None = None,
    labels: list[str] | None = None,
) -> DryScene:
    """Mix `calls` — (mic, clean 16 kHz samples, onset sample) — into an n_mics scene.

    Noise is independent per mic, at `noise_snr_db` below the mean power of the calls' voiced
    parts (None: silence). The truth onset of a call is where its clean source first exceeds
    :data:`~.speech.ONSET_FRACTION` of its peak (:func:`~.speech.voiced_span`).
    """
    rng = np.random.default_rng(seed)
    end = max(onset + s.size for _, s, onset in calls) if calls else 0
    length = length or end + RATE_HZ // 2
    out = np.zeros((length, n_mics))
    delay_ms = np.zeros((n_mics, n_mics))
    gain_db = np.full((n_mics, n_mics), -np.inf)
    if bleed is not None:
        delay_ms = rng.uniform(*bleed.delay_ms, (n_mics, n_mics))
        gain_db = rng.uniform(*bleed.gain_db, (n_mics, n_mics))
    np.fill_diagonal(delay_ms, 0.0)
    np.fill_diagonal(gain_db, 0.0)
    truth = []
    powers = []
    for i, (mic, s, onset) in enumerate(calls):
        placed = np.zeros(length)
        placed[onset : onset + s.size] = s[: length - onset]
        for dst in range(n_mics):
            if np.isfinite(gain_db[mic, dst]):
                d = delay_ms[mic, dst] * RATE_HZ / 1000
                out[:, dst] += 10 ** (gain_db[mic, dst] / 20) * _delayed(placed, d, length)
        span = voiced_span(s)
        truth.append(
            TruthCall(mic, onset + span.start, onset + span.stop, labels[i] if labels else "")
        )
        voiced = s[np.abs(s) > 0.05 * np.abs(s).max()]
        powers.append(np.mean(voiced.astype(np.float64) ** 2))
    if noise_snr_db is not None and calls:
        level = np.sqrt(np.mean(powers) / 10 ** (noise_snr_db / 10))
        for dst in range(n_mics):
            out[:, dst] += level * _noise(rng, length, noise)
    audio = np.clip(out, -1.0, 1.0).astype(np.float32)
    return DryScene(audio, tuple(sorted(truth, key=lambda t: t.onset_sample)), delay_ms, gain_db)
