"""WAV (and other soundfile formats) replay as frames, and whole-file read and write.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from voice.audio.frames import PIPELINE_RATE_HZ, AudioFileError, AudioFrame
from voice.audio.resample import resampled

log = logging.getLogger(__name__)




def _pace(frames: Iterator[AudioFrame]) -> Iterator[AudioFrame]:
    """Hold each frame back until the wall clock reaches its end time, as a live mic would."""
    t0 = time.monotonic()
    for frame in frames:
        delay = t0 + frame.t_s + frame.duration_s - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        yield frame


MIN_RATE_HZ, MAX_RATE_HZ = 8000, 192000
"""The sample rates a recording may have."""


class WavSource:
    """Frames from a WAV file: mono or multichannel, 8/16/24/32-bit PCM or 32-bit float.

    Each channel is one player's microphone. Output is resampled to `rate_hz` (16 kHz by
    default; None keeps the file's rate). `realtime=True` paces frames to the wall clock.
    The header is checked on construction, so a bad file fails early with
    :class:`AudioFileError` naming the file and the problem. What C libraries print on
    stderr while the file is opened is muted (:func:`_native_stderr_muted`) unless
    `mute_native` is False: a file orderup wrote itself, read on a thread while others may
    be saying something on stderr.
    """

    def __init__(
        self,
        path: str | Path,
        block_ms: float = 20.0,
        realtime: bool = False,
        rate_hz: int | None = PIPELINE_RATE_HZ,
        mute_native: bool = True,
    ) -> None:
        import soundfile as sf

        self.path = Path(path)
        self._muted = _native_stderr_muted if mute_native else contextlib.nullcontext
        if block_ms <= 0:
            raise ValueError(f"block_ms must be positive, got {block_ms}")
        if not self.path.is_file():
            raise AudioFileError(f"{self.path}: no such file")
        try:
            with self._muted():
                info = sf.info(str(self.path))
        except (RuntimeError, OSError) as exc:  # LibsndfileError is a RuntimeError
            raise AudioFileError(f"{self.path}: not a readable audio file ({exc})") from None
        if info.format not in ("WAV", "WAVEX", "RF64", "FLAC", "OGG"):
            raise AudioFileError(f"{self.path}: is {info.format_info}, not a WAV, FLAC or Ogg file")
        if info.frames <= 0:
            raise AudioFileError(f"{self.path}: WAV file holds no samples")
        if not MIN_RATE_HZ <= info.samplerate <= MAX_RATE_HZ:
            raise AudioFileError(f"{self.path}: a sample rate of {info.samplerate} Hz is not a "
                                 f"recording's (orderup reads {MIN_RATE_HZ}-{MAX_RATE_HZ} Hz)")
        promised = _promised_frames(self.path) if info.format in ("WAV", "WAVEX") else None
        if promised is not None and promised > info.frames:
            raise AudioFileError(f"{self.path}: its header promises {promised} samples a channel "
                                 f"but it holds {info.frames}: the file is cut short")
        self.file_rate_hz = int(info.samplerate)
        self.duration_s = info.frames / info.samplerate
        self.channels = int(info.channels)
        self.rate_hz = rate_hz or self.file_rate_hz
        self.subtype = str(info.subtype)
        self.block_ms = block_ms
        self.realtime = realtime

    def __repr__(self) -> str:
        return (
            f"WavSource({str(self.path)!r}, block_ms={self.block_ms}, realtime={self.realtime}, "
            f"rate_hz={self.rate_hz})"
        )

    def _read(self) -> Iterator[AudioFrame]:
        import soundfile as sf

        block = max(1, round(self.file_rate_hz * self.block_ms / 1000))
        start = 0
        try:
            with self._muted():
                opened = sf.SoundFile(str(self.path))
            with opened as f:
                while True:
                    data = f.read(block, dtype="float32", always_2d=True)
                    if data.shape[0] == 0:
                        return
                    bad = np.flatnonzero(~np.isfinite(data).all(axis=1))
                    if bad.size:
                        raise AudioFileError(f"{self.path}: a sample that is not a number (NaN or "
                                             f"infinite) at {(start + bad[0]) / self.file_rate_hz:.3f} s")
                    yield AudioFrame(
                        np.clip(data, -1.0, 1.0),
                        self.file_rate_hz,
                        self.channels,
                        start,
                        start / self.file_rate_hz,
                    )
                    start += data.shape[0]
        except (RuntimeError, OSError) as exc:
            raise AudioFileError(
                f"{self.path}: read failed after {start} samples ({exc})"
            ) from None

    def __iter__(self) -> Iterator[AudioFrame]:
        frames = resampled(self._read(), self.rate_hz)
        return _pace(frames) if self.realtime else frames


@contextlib.contextmanager
def _native_stderr_muted() -> Iterator[None]:
    """Silence what C libraries print on the process's stderr meanwhile: libsndfile's MPEG
    decoder prints its resync notes on a file that is not audio, where orderup says one line.
    The process's stderr is muted, every thread's: what another thread says meanwhile is lost."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _promised_frames(path: Path) -> int | None:
    """How many frames a RIFF/WAVE header's data chunk says it holds (None: not stated, as
    a file still being written says 0 or 0xFFFFFFFF)."""
    with open(path, "rb") as fh:
        head = fh.read(1 << 16)
    if head[:4] != b"RIFF" or head[8:12] != b"WAVE":
        return None
    at, align = 12, 0
    while at + 8 <= len(head):
        kind, size = head[at:at + 4], int.from_bytes(head[at + 4:at + 8], "little")
        if kind == b"fmt " and at + 22 <= len(head):
            align = int.from_bytes(head[at + 20:at + 22], "little")  # bytes per frame
        if kind == b"data":
            return size // align if align and size not in (0, 0xFFFFFFFF) else None
        at += 8 + size + (size & 1)
    return None


def read_wav(path: str | Path, rate_hz: int | None = PIPELINE_RATE_HZ,
             mute_native: bool = True) -> np.ndarray:
    """A whole WAV file as one (n, channels) float32 array at `rate_hz` (`mute_native`: see
    :class:`WavSource`)."""
    src = WavSource(path, block_ms=1000.0, rate_hz=rate_hz, mute_native=mute_native)
    blocks = [f.samples for f in src]
    return np.concatenate(blocks) if blocks else np.zeros((0, src.channels), np.float32)


def write_wav(path: str | Path, samples: np.ndarray, rate_hz: int, subtype: str = "PCM_16") -> None:
    """Write (n,) or (n, channels) float samples to a WAV file (scene fixtures, recordings)."""
    import soundfile as sf

    sf.write(str(path), np.clip(samples, -1.0, 1.0), rate_hz, subtype=subtype, format="WAV")
