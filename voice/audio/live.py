"""Live microphones through sounddevice: one interface or several devices merged onto one
clock, behind a bounded queue that never blocks the audio callback.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from voice.audio.clock import ClockFit, _DriftCorrector
from voice.audio.frames import PIPELINE_RATE_HZ, AudioFrame, AudioStreamError

log = logging.getLogger(__name__)


# --------------------------------------------------------------------------- bounded queue


class DropQueue:
    """A bounded FIFO that never blocks the producer: when full it drops the oldest item and
    counts it in `dropped`, so an audio callback can never stall on a slow consumer."""

    def __init__(self, maxsize: int) -> None:
        if maxsize <= 0:
            raise ValueError(f"maxsize must be positive, got {maxsize}")
        self.maxsize = maxsize
        self.dropped = 0
        self._items: deque[Any] = deque()
        self._cond = threading.Condition()

    def put(self, item: Any) -> None:
        """Append an item, dropping (and counting) the oldest one when full."""
        with self._cond:
            if len(self._items) >= self.maxsize:
                self._items.popleft()
                self.dropped += 1
            self._items.append(item)
            self._cond.notify()

    def get(self, timeout_s: float | None = None) -> Any:
        """Remove and return the oldest item; raise queue.Empty after `timeout_s`."""
        with self._cond:
            if not self._cond.wait_for(lambda: bool(self._items), timeout_s):
                raise queue.Empty
            return self._items.popleft()

    def __len__(self) -> int:
        return len(self._items)


# --------------------------------------------------------------------------- clock alignment

@dataclass(frozen=True)
class DeviceStatus:
    """A problem a live source reports without stopping: overflow, a lost device."""

    device: int
    kind: str  # "overflow" | "lost" | "behind"
    message: str


class DeviceMerger:
    """Merges several devices' streams, each on its own clock, into one multichannel stream.

    Each device's blocks are mapped onto the reference clock (device 0's) by its
    :class:`ClockFit`, then columns are aligned sample for sample. A device that falls more
    than `stall_samples` behind the others is declared lost: reported once through
    `on_status`, and its channels read as silence from then on so the others go on.
    """

    def __init__(
        self,
        channels_per_device: Sequence[int],
        fits: Sequence[ClockFit] | None = None,
        stall_samples: int = PIPELINE_RATE_HZ // 2,
        on_status: Callable[[DeviceStatus], None] | None = None,
    ) -> None:
        self.channels_per_device = list(channels_per_device)
        fits = (
            list(fits) if fits is not None else [ClockFit(0.0, 0.0)] * len(self.channels_per_device)
        )
        if len(fits) != len(self.channels_per_device):
            raise ValueError(f"{len(fits)} clock fits for {len(self.channels_per_device)} devices")
        self._correctors = [_DriftCorrector(f, c) for f, c in zip(fits, self.channels_per_device)]
        self._pending = [np.zeros((0, c), np.float32) for c in self.channels_per_device]
        self.lost: set[int] = set()
        self.stall_samples = stall_samples
        self._on_status = on_status or _log_status

    @property
    def channels(self) -> int:
        """Total channels of the merged stream."""
        return sum(self.channels_per_device)

    def push(self, device: int, block: np.ndarray) -> None:
        """Add one block (n, channels) from `device`, in that device's clock."""
        if device in self.lost:
            return
        out = self._correctors[device].push(np.asarray(block, np.float32))
        self._pending[device] = np.concatenate([self._pending[device], out])

    def mark_lost(self, device: int, why: str) -> None:
        """Declare a device gone: report it and read its channels as silence from now on."""
        if device not in self.lost:
            self.lost.add(device)
            self._on_status(DeviceStatus(device, "lost", f"device {device} lost: {why}"))

    def pop(self) -> np.ndarray:
        """All merged samples every live device has delivered so far, shape (n, channels);
        once every device is lost, all that any of them delivered (the end of the stream)."""
        live = [d for d in range(len(self._pending)) if d not in self.lost]
        lengths = {d: self._pending[d].shape[0] for d in live}
        for d in live:
            if max(lengths.values()) - lengths[d] > self.stall_samples:
                self.mark_lost(d, f"no audio for {self.stall_samples} samples")
        live = [d for d in live if d not in self.lost]
        n = min((self._pending[d].shape[0] for d in live),
                default=max(p.shape[0] for p in self._pending))
        cols = []
        for d, c in enumerate(self.channels_per_device):
            got = self._pending[d][:n]  # a lost device's last samples, then silence
            cols.append(np.concatenate([got, np.zeros((n - got.shape[0], c), np.float32)]))
            self._pending[d] = self._pending[d][n:]
        return np.concatenate(cols, axis=1)


def _log_status(status: DeviceStatus) -> None:
    log.warning("audio: %s", status.message)


# --------------------------------------------------------------------------- live microphones


@dataclass(frozen=True)
class MicInput:
    """One player's microphone: a sounddevice device (index or name) and a channel on it."""

    device: int | str | None
    channel: int = 0


class LiveSource:
    """Frames from live microphones via sounddevice: one multichannel interface (every channel
    a player) or several devices (one per player) merged onto one clock.

    `mics` lists each player's :class:`MicInput`; devices are opened at `rate_hz` directly
    (PortAudio resamples if needed). Overflows are counted in `overflows`, frames a slow
    consumer missed in `dropped`; problems go to `on_status` (default: a logged warning).
    Up to `queue_s` of sound waits for the consumer: the table decodes calls between frames,
    so it falls behind for a moment at each call and catches up after.
    `stream_factory(device, channels, rate_hz, blocksize, callback, finished_callback)`
    opens a stream; tests inject a fake one.
    """

    def __init__(
        self,
        mics: Sequence[MicInput],
        block_ms: float = 20.0,
        rate_hz: int = PIPELINE_RATE_HZ,
        fits: Sequence[ClockFit] | None = None,
        queue_s: float = 30.0,
        stream_factory: Callable[..., Any] | None = None,
        on_status: Callable[[DeviceStatus], None] | None = None,
    ) -> None:
        if not mics:
            raise ValueError("LiveSource needs at least one MicInput")
        self.mics = list(mics)
        self.rate_hz = rate_hz
        self.channels = len(self.mics)
        self.block = max(1, round(rate_hz * block_ms / 1000))
        self.devices: list[int | str | None] = list(dict.fromkeys(m.device for m in self.mics))
        self._device_cols = [
            [m.channel for m in self.mics if m.device == dev] for dev in self.devices
        ]
        self._order = np.argsort(
            np.concatenate(
                [[i for i, m in enumerate(self.mics) if m.device == dev] for dev in self.devices]
            ),
            kind="stable",
        )
        self.overflows = 0
        self._status = on_status or _log_status
        self._queue = DropQueue(max(1, round(queue_s * 1000 / block_ms)) * len(self.devices))
        self._merger = DeviceMerger(
            [len(c) for c in self._device_cols], fits, on_status=self._status
        )
        self._factory = stream_factory or _sounddevice_stream
        self._streams: list[Any] = []

    @property
    def dropped(self) -> int:
        """Device blocks dropped because the consumer fell behind."""
        return self._queue.dropped

    def _callback(self, device: int) -> Callable[..., None]:
        cols = self._device_cols[device]

        def cb(indata: np.ndarray, frames: int, time_info: Any, status: Any) -> None:
            if status and getattr(status, "input_overflow", False):
                self.overflows += 1
                self._status(DeviceStatus(device, "overflow", f"device {device}: input overflow"))
            self._queue.put((device, np.array(indata[:, cols], np.float32)))

        return cb

    def _finished(self, device: int) -> Callable[[], None]:
        def done() -> None:
            self._queue.put((device, None))

        return done

    def open(self) -> None:
        """Open and start one input stream per device."""
        for d, dev in enumerate(self.devices):
            stream = self._factory(
                device=dev,
                channels=max(self._device_cols[d]) + 1,
                rate_hz=self.rate_hz,
                blocksize=self.block,
                callback=self._callback(d),
                finished_callback=self._finished(d),
            )
            stream.start()
            self._streams.append(stream)

    def close(self) -> None:
        """Stop and close every stream."""
        for s in self._streams:
            s.stop()
            s.close()
        self._streams.clear()

    def __iter__(self) -> Iterator[AudioFrame]:
        self.open()
        start = 0
        reported = 0  # blocks dropped and already reported
        try:
            while len(self._merger.lost) < len(self.devices):
                try:
                    device, block = self._queue.get(timeout_s=1.0)
                except queue.Empty:
                    continue
                if self._queue.dropped > reported:
                    lost_s = (self._queue.dropped - reported) * self.block / self.rate_hz
                    reported = self._queue.dropped
                    self._status(DeviceStatus(device, "behind", f"fell behind: {lost_s:.2f} s "
                                              "of sound lost (the computer is too busy)"))
                if block is None:
                    self._merger.mark_lost(device, "stream stopped")
                else:
                    self._merger.push(device, block)
                merged = self._merger.pop()
                if merged.shape[0]:
                    yield AudioFrame(
                        merged[:, self._order],
                        self.rate_hz,
                        self.channels,
                        start,
                        start / self.rate_hz,
                    )
                    start += merged.shape[0]
        finally:
            self.close()


def _sounddevice_stream(
    device: int | str | None,
    channels: int,
    rate_hz: int,
    blocksize: int,
    callback: Callable[..., None],
    finished_callback: Callable[[], None],
) -> Any:
    """Open a real sounddevice InputStream (imported here: it needs libportaudio2)."""
    try:
        import sounddevice as sd
    except OSError as exc:  # PortAudio library missing
        raise AudioStreamError(f"live audio unavailable: {exc} (install libportaudio2)") from None
    try:
        return sd.InputStream(
            device=device,
            channels=channels,
            samplerate=rate_hz,
            blocksize=blocksize,
            dtype="float32",
            callback=callback,
            finished_callback=finished_callback,
        )
    except (sd.PortAudioError, ValueError) as exc:
        which = "the default input device" if device is None else f"input device {device!r}"
        raise AudioStreamError(
            f"cannot open {which} with {channels} channels at {rate_hz} Hz: {exc} "
            "(see 'orderup devices')"
        ) from None
