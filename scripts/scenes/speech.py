"""Synthesised talkers: every phrase a scene or a test says, rendered once and cached.

:func:`synth` is what the room scenes use (resampled to 16 kHz, then trimmed, 16-bit);
:func:`spoken` is the unit tests' shorthand for an espeak-ng voice at a peak amplitude
(trimmed at the synthesiser's own rate, then resampled). Both come from one rendering,
cached on disk under the temp dir and in memory.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from voice.audio.frames import PIPELINE_RATE_HZ
from voice.audio.resample import resample
from voice.table.narration import EspeakSynthesizer, FliteSynthesizer

RATE_HZ = PIPELINE_RATE_HZ
ESPEAK = shutil.which("espeak-ng")
ONSET_FRACTION = 1e-3
"""A synthesised phrase starts at its first sample above this fraction of its peak."""
FLITE = "flite:"
"""A voice name with this prefix is flite's (:class:`voice.table.narration.FliteSynthesizer`)."""

_CACHE_DIR = Path(tempfile.gettempdir()) / "orderup-speech"


@dataclass(frozen=True)
class Voice:
    """A talker: an espeak-ng voice name with optional variant ("en-us+f3") or a flite voice
    ("flite:slt", :data:`FLITE`), speed, pitch 0–99."""

    name: str = "en-us"
    speed_wpm: int = 170
    pitch: int = 50


APP_VOICE = Voice("en-us", 170, 50)
"""The app's narration voice (the announcer's default rate)."""


def voiced_span(x: np.ndarray) -> slice:
    """From the first to the last sample of ``x`` above ONSET_FRACTION of its peak."""
    loud = np.flatnonzero(np.abs(x) > ONSET_FRACTION * np.abs(x).max())
    return slice(int(loud[0]), int(loud[-1]) + 1)


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


def _rendered(text: str, voice: Voice) -> tuple[np.ndarray, int]:
    """``text`` as the synthesiser made it (espeak-ng at its own rate, flite at 16 kHz), from
    the disk cache when it is there, keyed by text, voice and the synthesiser's version."""
    flite = voice.name.startswith(FLITE)
    key = repr((text, voice.name, voice.speed_wpm, voice.pitch,
                _version("flite" if flite else "espeak-ng")))
    path = _CACHE_DIR / f"{hashlib.sha1(key.encode()).hexdigest()[:20]}.npz"
    if path.exists():
        with np.load(path) as cached:
            return cached["samples"], int(cached["rate_hz"])
    if flite:
        samples, rate = synthesizer(voice).render(text), RATE_HZ
    else:
        samples, rate = EspeakSynthesizer(voice.name, voice.speed_wpm, voice.pitch).native(text)
    _CACHE_DIR.mkdir(exist_ok=True)
    partial = path.with_name(f"{path.stem}.{os.getpid()}.partial")
    with open(partial, "wb") as f:
        np.savez(f, samples=samples, rate_hz=rate)
    os.replace(partial, path)  # atomic: parallel renderers never read half a file
    return samples, rate


@functools.lru_cache(maxsize=2048)
def _trimmed(text: str, voice: Voice, at_source_rate: bool) -> np.ndarray:
    """``text`` at 16 kHz, read-only, cut to its :func:`voiced_span`: at the synthesiser's rate
    before resampling (float, its level as rendered), or after it (16-bit at peak 1, as the
    synthesiser's own output is, so a scene is the same bytes cached or not)."""
    raw, rate = _rendered(text, voice)
    if at_source_rate:
        out = resample(raw[voiced_span(raw)], rate, RATE_HZ)
    else:
        raw = resample(raw, rate, RATE_HZ)
        pcm = np.round(raw[voiced_span(raw)] / np.abs(raw).max() * 32767).astype(np.int16)
        out = (pcm / 32767).astype(np.float32)
    out.setflags(write=False)
    return out


def synth(text: str, voice: Voice) -> np.ndarray:
    """``text`` spoken by ``voice``: read-only 16 kHz float32, peak 1, trimmed so sample 0 is
    the onset (first sample above ONSET_FRACTION of the peak) — truth onsets rest on that."""
    return _trimmed(text, voice, False)


def spoken(
    text: str, voice: str = "en-us", speed: int = 170, pitch: int = 50, amplitude: float = 0.5
) -> np.ndarray:
    """``text`` spoken by espeak-ng voice ``voice`` (the unit tests' talkers): a fresh 16 kHz
    float32 array, peak ``amplitude``, cut to its voiced span at espeak-ng's own rate."""
    x = _trimmed(text, Voice(voice, speed, pitch), True)
    return (x * (amplitude / np.abs(x).max())).astype(np.float32)
