"""Typed audio frames, the rate every stage works at, and the per-frame features that tell
speech from pause and from a knock.

Every source yields :class:`AudioFrame` objects at :data:`PIPELINE_RATE_HZ` by default, one
channel per player, so the rest of the pipeline never knows whether it hears a microphone or a
recording (DESIGN: "the same frame iterator for a microphone and a WAV file").
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

log = logging.getLogger(__name__)


PIPELINE_RATE_HZ = 16_000
"""The rate every stage after the source works at: one 16 kHz stream per microphone."""


SPEECH_FRAME = PIPELINE_RATE_HZ // 100
"""10 ms: the frame in which speech is told from pause and from noise."""
LOUD_DB = 25.0
"""A frame is loud (speech, not pause) within this many dB of the utterance's loudest."""
VOICE_BINS = slice(1, 10)
"""The voice's band, 100-900 Hz (the bins of a 10 ms frame's spectrum): its fundamental and
first formant, where a vowel has most of its energy and a knock of cutlery little."""
VOICE_SHARE = 0.3
"""A frame is speech-like when at least this share of its energy lies in the voice's band."""
MIN_SPEECH_MS = 50.0
"""A call holds at least this much speech-like sound; less is a knock or a click, not a call."""
LEVEL_FRAME = PIPELINE_RATE_HZ // 50
"""20 ms: the frame levels are measured in (a name at calibration, an utterance)."""
LOUD_PERCENTILE = 98.0
"""How loud a stretch of sound is where it is loudest: this percentile of its frames' levels
(a short word inside a stretch that is mostly quiet still sets it)."""


def _frames(samples: np.ndarray) -> np.ndarray:
    n = samples.size // SPEECH_FRAME
    return samples[: n * SPEECH_FRAME].astype(np.float64).reshape(n, SPEECH_FRAME)


def _within(energy: np.ndarray) -> np.ndarray:
    db = 10 * np.log10(energy + 1e-12)
    return db > db.max(initial=-np.inf) - LOUD_DB


def frame_power(samples: np.ndarray) -> np.ndarray:
    """The power (mean square) of each 10 ms frame of mono `samples` (16 kHz)."""
    return np.mean(_frames(samples) ** 2, axis=1)


def loud_frames(samples: np.ndarray) -> np.ndarray:
    """Which 10 ms frames of mono `samples` (16 kHz) are loud (see :data:`LOUD_DB`)."""
    return _within(frame_power(samples))


def speech_like_frames(samples: np.ndarray) -> np.ndarray:
    """Which 10 ms frames of mono `samples` (16 kHz) are loud speech: loud in the voice's band
    (within :data:`LOUD_DB` of its loudest there) with :data:`VOICE_SHARE` of their energy in
    it, and next to another such frame. A knock on the table (broadband, ringing high) is loud,
    but not speech-like; a vowel lasts longer than one frame, a knock's ringing flickers
    (every other frame, in a replayed game: 50 ms of "speech", a call's minimum)."""
    spectrum = np.abs(np.fft.rfft(_frames(samples) * np.hanning(SPEECH_FRAME), axis=1)) ** 2
    voice = spectrum[:, VOICE_BINS].sum(axis=1)
    like = _within(voice) & (voice >= VOICE_SHARE * spectrum.sum(axis=1))
    neighbour = np.zeros_like(like)
    neighbour[1:] |= like[:-1]
    neighbour[:-1] |= like[1:]
    return like & neighbour


def frame_rms(samples: np.ndarray) -> np.ndarray:
    """The RMS of each whole 20 ms frame (:data:`LEVEL_FRAME`) of `samples`, (n,) or
    (n, channels) at 16 kHz: (frames,) or (frames, channels), never exactly zero."""
    n = (len(samples) // LEVEL_FRAME) * LEVEL_FRAME
    frames = samples[:n].reshape(-1, LEVEL_FRAME, *samples.shape[1:]).astype(np.float64)
    return np.sqrt(np.mean(frames**2, axis=1)) + 1e-9


def loud_level_db(samples: np.ndarray) -> float:
    """How loud mono `samples` (16 kHz) are where loudest (dBFS): the
    :data:`LOUD_PERCENTILE` of their 20 ms frames' RMS, as calibration measures a name; their
    RMS when shorter than a frame."""
    rms = frame_rms(samples)
    if rms.size == 0:
        rms = np.array([np.sqrt(np.mean(np.asarray(samples, np.float64) ** 2)) + 1e-9])
    return float(20 * np.log10(np.percentile(rms, LOUD_PERCENTILE)))


def speech_like_ms(samples: np.ndarray) -> float:
    """How much of mono `samples` (16 kHz) is speech-like (:func:`speech_like_frames`), in ms."""
    return int(speech_like_frames(samples).sum()) * SPEECH_FRAME * 1000 / PIPELINE_RATE_HZ


class AudioFileError(ValueError):
    """A WAV file that cannot be read: missing, not a WAV, corrupt or truncated."""


class AudioStreamError(ValueError):
    """A frame stream that breaks its contract (gap, rate or channel change)."""


@dataclass(frozen=True, repr=False)
class AudioFrame:
    """A block of samples from every microphone, stamped with its place in the stream.

    `samples` has shape (n, channels), float32 in [-1, 1]; `start_sample` is the index of its
    first sample since the stream started and `t_s` that sample's time in seconds.
    """

    samples: np.ndarray = field(compare=False)
    rate_hz: int
    channels: int
    start_sample: int
    t_s: float

    def __post_init__(self) -> None:
        if self.samples.ndim != 2 or self.samples.shape[1] != self.channels:
            raise AudioStreamError(
                f"AudioFrame samples have shape {self.samples.shape}, expected (n, {self.channels})"
            )

    @property
    def n_samples(self) -> int:
        """Number of samples per channel."""
        return int(self.samples.shape[0])

    @property
    def end_sample(self) -> int:
        """Index one past the last sample."""
        return self.start_sample + self.n_samples

    @property
    def duration_s(self) -> float:
        """Length of the frame in seconds."""
        return self.n_samples / self.rate_hz

    def __repr__(self) -> str:
        return (
            f"AudioFrame(<{self.n_samples}x{self.channels} float32>, rate_hz={self.rate_hz}, "
            f"channels={self.channels}, start_sample={self.start_sample}, t_s={self.t_s:.4f})"
        )


class FrameSource(Protocol):
    """What the pipeline consumes: an iterable of contiguous frames of a fixed rate and width."""

    rate_hz: int
    channels: int

    def __iter__(self) -> Iterator[AudioFrame]: ...
