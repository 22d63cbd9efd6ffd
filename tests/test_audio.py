"""Audio frames, resampling, WAV replay, clock alignment and the live source's merge logic."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from voice.audio.clock import ClockFit, calibration_chirp, estimate_clock_fit
from voice.audio.files import WavSource, read_wav, write_wav
from voice.audio.frames import (
    PIPELINE_RATE_HZ,
    AudioFileError,
    AudioFrame,
    AudioStreamError,
    loud_level_db,
    speech_like_frames,
)
from voice.audio.live import DeviceMerger, DeviceStatus, DropQueue, LiveSource, MicInput
from voice.audio.resample import Resampler, resample

RATES = [8000, 11025, 16000, 22050, 32000, 44100, 48000]


def _tone(rate_hz: int, seconds: float, freq_hz: float = 440.0, channels: int = 1) -> np.ndarray:
    t = np.arange(int(rate_hz * seconds)) / rate_hz
    cols = [0.5 * np.sin(2 * np.pi * freq_hz * (c + 1) * t) for c in range(channels)]
    return np.stack(cols, axis=1).astype(np.float32)


def test_frame_repr_is_short_and_shape_checked() -> None:
    f = AudioFrame(np.zeros((320, 4), np.float32), 16000, 4, 640, 0.04)
    assert repr(f) == (
        "AudioFrame(<320x4 float32>, rate_hz=16000, channels=4, start_sample=640, t_s=0.0400)"
    )
    assert (f.end_sample, f.duration_s) == (960, 0.02)
    with pytest.raises(AudioStreamError, match="shape"):
        AudioFrame(np.zeros((320, 3), np.float32), 16000, 4, 0, 0.0)


@pytest.mark.parametrize("rate_hz", RATES)
def test_resample_to_16k_keeps_tone_and_time(rate_hz: int) -> None:
    x = _tone(rate_hz, 0.5, freq_hz=1000.0)
    y = resample(x, rate_hz, PIPELINE_RATE_HZ)[:, 0]
    assert y.size == -(-x.shape[0] * PIPELINE_RATE_HZ // rate_hz)  # every output in the span
    t = np.arange(y.size) / PIPELINE_RATE_HZ
    ref = 0.5 * np.sin(2 * np.pi * 1000.0 * t)
    inner = slice(200, y.size - 200)  # away from the edges, where the signal starts cold
    assert np.max(np.abs(y[inner] - ref[inner])) < 5e-3


@pytest.mark.parametrize("rate_hz", [11025, 44100, 48000])
def test_streaming_resampler_matches_whole_signal(rate_hz: int) -> None:
    x = _tone(rate_hz, 0.3, channels=2)
    whole = resample(x, rate_hz, PIPELINE_RATE_HZ)
    r = Resampler(rate_hz, PIPELINE_RATE_HZ, 2)
    rng = np.random.default_rng(rate_hz)
    outs: list[np.ndarray] = []
    i = 0
    while i < x.shape[0]:
        n = int(rng.integers(1, 900))
        out = r.process(AudioFrame(x[i : i + n], rate_hz, 2, i, i / rate_hz))
        assert out.start_sample == sum(o.shape[0] for o in outs)
        assert out.t_s == pytest.approx(out.start_sample / PIPELINE_RATE_HZ)
        outs.append(out.samples)
        i += n
    outs.append(r.flush().samples)
    np.testing.assert_allclose(np.concatenate(outs), whole, atol=1e-6)


def test_speech_is_held_longer_than_one_frame() -> None:
    """A voice-band sound that flickers frame by frame (a knock's ringing) is not speech; the
    same sound held for 60 ms is."""
    tone = _tone(PIPELINE_RATE_HZ, 0.2, freq_hz=300.0)[:, 0]
    frame = PIPELINE_RATE_HZ // 100
    flicker = tone * (np.arange(tone.size) // frame % 2 == 0)
    assert speech_like_frames(flicker).sum() == 0
    held = np.concatenate([np.zeros(5 * frame, np.float32), tone[: 6 * frame],
                           np.zeros(9 * frame, np.float32)])
    assert speech_like_frames(held).sum() == 6


def test_a_short_word_sets_the_level_of_a_mostly_quiet_stretch() -> None:
    """A 200 ms tone in 2 s of near silence is as loud as the tone alone where loudest, 10 dB
    over its mean level (a call's pauses do not make it quieter); under a frame, the RMS."""
    tone = _tone(PIPELINE_RATE_HZ, 0.2)[:, 0]  # RMS 0.5/sqrt(2): -9.03 dBFS
    quiet = np.full(PIPELINE_RATE_HZ, 1e-4, np.float32)
    stretch = np.concatenate([quiet, tone, quiet[: PIPELINE_RATE_HZ * 4 // 5]])
    assert loud_level_db(stretch) == pytest.approx(-9.03, abs=0.05)
    assert 10 * np.log10(np.mean(stretch.astype(np.float64) ** 2)) == pytest.approx(-19.03, abs=0.05)
    assert loud_level_db(tone[:100]) == pytest.approx(-9.03, abs=0.2)


def test_resampler_keeps_an_impulse_in_place() -> None:
    x = np.zeros(44100, np.float32)
    x[22050] = 1.0  # exactly 0.5 s
    y = resample(x, 44100, PIPELINE_RATE_HZ)
    assert int(np.argmax(np.abs(y))) == 8000


def test_resampler_rejects_gaps_and_wrong_rates() -> None:
    r = Resampler(48000, PIPELINE_RATE_HZ, 1)
    with pytest.raises(AudioStreamError, match="gap"):
        r.process(AudioFrame(np.zeros((10, 1), np.float32), 48000, 1, 5, 0.0))
    with pytest.raises(AudioStreamError, match="expects 48000"):
        r.process(AudioFrame(np.zeros((10, 1), np.float32), 44100, 1, 0, 0.0))


SUBTYPES = {"PCM_U8": 1 / 64, "PCM_16": 1e-3, "PCM_24": 1e-3, "PCM_32": 1e-3, "FLOAT": 1e-3}


@pytest.mark.parametrize("subtype", list(SUBTYPES))
@pytest.mark.parametrize("channels", [1, 3])
def test_wav_source_reads_every_format(tmp_path: Path, subtype: str, channels: int) -> None:
    x = _tone(44100, 0.25, channels=channels)
    path = tmp_path / f"t_{subtype}.wav"
    write_wav(path, x, 44100, subtype=subtype)
    src = WavSource(path)
    assert (src.rate_hz, src.channels, src.subtype) == (PIPELINE_RATE_HZ, channels, subtype)
    frames = list(src)
    assert all(f.rate_hz == PIPELINE_RATE_HZ and f.channels == channels for f in frames)
    starts = [f.start_sample for f in frames]
    assert starts == list(np.cumsum([0] + [f.n_samples for f in frames[:-1]]))
    got = np.concatenate([f.samples for f in frames])
    want = resample(x, 44100, PIPELINE_RATE_HZ)
    assert got.shape == want.shape
    assert np.max(np.abs(got - want)) < SUBTYPES[subtype] + 2e-3


def test_wav_source_native_rate_and_block_size(tmp_path: Path) -> None:
    x = _tone(22050, 0.1, channels=2)
    write_wav(tmp_path / "a.wav", x, 22050, subtype="FLOAT")
    frames = list(WavSource(tmp_path / "a.wav", block_ms=10, rate_hz=None))
    assert frames[0].rate_hz == 22050 and frames[0].n_samples == 220
    np.testing.assert_array_equal(np.concatenate([f.samples for f in frames]), x)
    np.testing.assert_array_equal(read_wav(tmp_path / "a.wav", rate_hz=None), x)


def test_wav_source_realtime_yields_the_same_frames(tmp_path: Path) -> None:
    x = _tone(16000, 0.06)
    write_wav(tmp_path / "a.wav", x, 16000)
    fast = [f.samples for f in WavSource(tmp_path / "a.wav")]
    paced = [f.samples for f in WavSource(tmp_path / "a.wav", realtime=True)]
    assert len(fast) == len(paced) == 3
    for a, b in zip(fast, paced):
        np.testing.assert_array_equal(a, b)


def _garbage(tmp_path: Path) -> dict[str, Path]:
    good = tmp_path / "good.wav"
    write_wav(good, _tone(16000, 0.1), 16000)
    data = good.read_bytes()
    files = {
        "empty": b"",
        "text": b"this is not audio at all\n" * 10,
        "random": np.random.default_rng(0).integers(0, 256, 4000, dtype=np.uint8).tobytes(),
        "header_cut": data[:30],
        "bad_fmt": data[:20] + b"\x63\x00" + data[22:],  # format tag 99: unknown codec
        "no_samples": data[:44],
    }
    out = {}
    for name, blob in files.items():
        out[name] = tmp_path / f"{name}.wav"
        out[name].write_bytes(blob)
    return out


@pytest.mark.parametrize("name", ["empty", "text", "random", "header_cut", "bad_fmt", "no_samples"])
def test_corrupt_wav_raises_clear_error(tmp_path: Path, name: str) -> None:
    path = _garbage(tmp_path)[name]
    with pytest.raises(AudioFileError) as err:
        list(WavSource(path))
    assert str(path) in str(err.value)
    assert isinstance(err.value, ValueError)


def test_missing_and_non_wav_files(tmp_path: Path) -> None:
    with pytest.raises(AudioFileError, match="no such file"):
        WavSource(tmp_path / "nope.wav")
    import soundfile as sf

    sf.write(str(tmp_path / "a.flac"), _tone(16000, 0.1), 16000, format="FLAC")
    assert WavSource(tmp_path / "a.flac").channels == 1  # recordings may be FLAC or Ogg
    sf.write(str(tmp_path / "a.aiff"), _tone(16000, 0.1), 16000, format="AIFF")
    with pytest.raises(AudioFileError, match="not a WAV, FLAC or Ogg"):
        WavSource(tmp_path / "a.aiff")


def test_a_wav_cut_short_of_its_header_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "cut.wav"
    write_wav(path, _tone(16000, 0.5), 16000)
    path.write_bytes(path.read_bytes()[:-4000])  # the header still claims 0.5 s
    with pytest.raises(AudioFileError, match="promises 8000 samples a channel but it holds 6000"):
        WavSource(path)


def test_samples_that_are_not_numbers_and_absurd_rates_are_refused(tmp_path: Path) -> None:
    samples = _tone(16000, 0.5)
    samples[4000] = np.nan
    write_wav(tmp_path / "nan.wav", samples, 16000, subtype="FLOAT")
    with pytest.raises(AudioFileError, match="not a number .* at 0.250 s"):
        list(WavSource(tmp_path / "nan.wav"))
    write_wav(tmp_path / "slow.wav", _tone(16000, 0.1)[:100], 1)
    with pytest.raises(AudioFileError, match="a sample rate of 1 Hz"):
        WavSource(tmp_path / "slow.wav")


def test_drop_queue_counts_what_it_drops() -> None:
    q = DropQueue(3)
    for i in range(5):
        q.put(i)
    assert q.dropped == 2 and len(q) == 3
    assert [q.get(0) for _ in range(3)] == [2, 3, 4]


def _warped_chirp_train(
    n: int,
    chirp: np.ndarray,
    at: list[int],
    offset: float,
    drift_ppm: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """The recording a device with clock other = offset + ratio * ref makes of chirps played
    at reference samples `at`: evaluated analytically at the warped times (no resampling)."""
    ratio = 1 + drift_ppm * 1e-6
    ref_t = (np.arange(n) - offset) / ratio  # reference time of each device sample
    out = np.zeros(n)
    grid = np.arange(chirp.size)
    for a in at:
        out += np.interp(ref_t - a, grid, chirp, left=0.0, right=0.0)
    return out + 0.05 * np.abs(chirp).max() * rng.standard_normal(n)


@pytest.mark.parametrize(("offset", "drift_ppm"), [(0.0, 0.0), (317.3, 80.0), (-123.6, -200.0)])
def test_clock_fit_recovers_offset_and_drift(offset: float, drift_ppm: float) -> None:
    rng = np.random.default_rng(1)
    chirp = calibration_chirp()
    at = [4000 + k * 32000 for k in range(5)]  # 5 chirps, 2 s apart
    n = at[-1] + 8000
    ref = _warped_chirp_train(n, chirp, at, 0.0, 0.0, rng)
    other = _warped_chirp_train(n, chirp, at, offset, drift_ppm, rng)
    fit = estimate_clock_fit(ref, other, chirp, n_chirps=5)
    assert fit.offset_samples == pytest.approx(offset, abs=0.1)
    assert fit.drift_ppm == pytest.approx(drift_ppm, abs=1.0)


def test_device_merger_aligns_clocks() -> None:
    n = 16000
    sig = np.sin(np.arange(n + 400) * 0.01).astype(np.float32)
    fit = ClockFit(offset_samples=100.0, drift_ppm=0.0)  # device 1 started 100 samples early
    m = DeviceMerger([1, 1], [ClockFit(0.0, 0.0), fit])
    dev0, dev1 = sig[:n, None], sig[:n, None].copy()
    dev1 = np.concatenate([np.zeros((100, 1), np.float32), dev0])[:n]
    out = []
    for i in range(0, n, 320):
        m.push(0, dev0[i : i + 320])
        m.push(1, dev1[i : i + 320])
        out.append(m.pop())
    merged = np.concatenate(out)
    assert merged.shape[1] == 2 and merged.shape[0] >= n - 400
    np.testing.assert_allclose(merged[:, 0], merged[:, 1], atol=1e-6)


def test_device_merger_corrects_drift() -> None:
    ratio_ppm = 500.0
    fit = ClockFit(0.0, ratio_ppm)
    m = DeviceMerger([1, 1], [ClockFit(0.0, 0.0), fit])
    t_ref = np.arange(32000)
    t_dev = np.arange(32100)
    ref = np.sin(2 * np.pi * 200 * t_ref / 16000)[:, None].astype(np.float32)
    dev = np.sin(2 * np.pi * 200 * t_dev / (16000 * (1 + ratio_ppm * 1e-6)))[:, None].astype(
        np.float32
    )
    m.push(0, ref)
    m.push(1, dev)
    merged = m.pop()
    np.testing.assert_allclose(merged[:, 0], merged[:, 1], atol=2e-3)


def test_device_merger_survives_a_lost_device() -> None:
    seen: list[DeviceStatus] = []
    m = DeviceMerger([2, 1], stall_samples=800, on_status=seen.append)
    block = np.ones((320, 2), np.float32)
    m.push(0, block)
    m.push(1, block[:, :1])
    assert m.pop().shape == (320, 3)
    for _ in range(4):  # device 1 goes quiet
        m.push(0, block)
    out = m.pop()
    assert [s.kind for s in seen] == ["lost"] and seen[0].device == 1
    assert out.shape == (1280, 3)
    np.testing.assert_array_equal(out[:, 2], 0.0)
    np.testing.assert_array_equal(out[:, :2], 1.0)


class _FakeStream:
    """Stands in for sounddevice.InputStream: a thread feeding canned blocks to the callback."""

    def __init__(self, blocks: list[np.ndarray], overflow_at: int | None, **kw: Any) -> None:
        self.kw, self.blocks, self.overflow_at = kw, blocks, overflow_at
        self.closed = False

    def start(self) -> None:
        def run() -> None:
            for i, b in enumerate(self.blocks):
                status = type("S", (), {"input_overflow": i == self.overflow_at})()
                self.kw["callback"](b, b.shape[0], None, status)
            self.kw["finished_callback"]()

        threading.Thread(target=run, daemon=True).start()

    def stop(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True


def test_live_source_merges_devices_and_reports_problems() -> None:
    blocks = {
        "usb-a": [np.full((320, 2), 0.1 * (i + 1), np.float32) for i in range(10)],
        "usb-b": [np.full((320, 1), -0.5, np.float32) for _ in range(3)],  # unplugged early
    }
    streams: list[_FakeStream] = []

    def factory(**kw: Any) -> _FakeStream:
        s = _FakeStream(blocks[kw["device"]], 1 if kw["device"] == "usb-a" else None, **kw)
        streams.append(s)
        return s

    status: list[DeviceStatus] = []
    mics = [MicInput("usb-b", 0), MicInput("usb-a", 1), MicInput("usb-a", 0)]
    src = LiveSource(mics, stream_factory=factory, on_status=status.append)
    frames = list(src)
    assert all(f.channels == 3 and f.rate_hz == PIPELINE_RATE_HZ for f in frames)
    audio = np.concatenate([f.samples for f in frames])
    assert audio.shape[0] == 3200  # device a's whole stream came through
    np.testing.assert_array_equal(audio[:960, 0], -0.5)  # player 0 on usb-b
    np.testing.assert_array_equal(audio[960:, 0], 0.0)  # silence once it is gone
    np.testing.assert_allclose(audio[::320, 1], 0.1 * np.arange(1, 11), rtol=1e-6)
    assert src.overflows == 1
    assert {s.kind for s in status} == {"overflow", "lost"}
    assert all(s.closed for s in streams)
    assert [f.start_sample for f in frames] == list(
        np.cumsum([0] + [f.n_samples for f in frames[:-1]])
    )


def test_a_device_that_stops_first_still_delivers_all_it_sent() -> None:
    """Device 0 sends all its blocks and stops before device 1 sends any (threads race so at a
    live table); when device 1 stops too, the end of the stream holds all of device 0's audio."""
    merger = DeviceMerger([2, 1], on_status=lambda status: None)
    out = []
    for i in range(10):
        merger.push(0, np.full((320, 2), 0.1 * (i + 1), np.float32))
        out.append(merger.pop())
    merger.mark_lost(0, "stream stopped")
    for _ in range(3):
        merger.push(1, np.full((320, 1), -0.5, np.float32))
        out.append(merger.pop())
    merger.mark_lost(1, "stream stopped")
    out.append(merger.pop())
    audio = np.concatenate(out)
    assert audio.shape == (3200, 3)
    np.testing.assert_allclose(audio[::320, 0], 0.1 * np.arange(1, 11), rtol=1e-6)
    np.testing.assert_array_equal(audio[:960, 2], -0.5)
    np.testing.assert_array_equal(audio[960:, 2], 0.0)


def test_listen_refuses_more_players_than_channels(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from voice.cli.main import main

    write_wav(tmp_path / "two.wav", _tone(16000, 0.2, channels=2), 16000)
    assert main(["listen", str(tmp_path / "two.wav"), "--players", "Ann,Bob,Cat"]) == 2
    assert capsys.readouterr().err == (f"orderup listen: {tmp_path / 'two.wav'} has 2 channels "
                                       "for 3 players\n")


def test_a_consumer_busy_for_seconds_loses_no_sound_and_one_too_slow_is_told() -> None:
    """The table decodes each call between frames, so it falls behind the mics for a moment at
    every call: three seconds of blocks arrive before the first is read, and all come through.
    A queue too short for the wait drops the oldest blocks and says how much sound was lost
    (it used to hold one second, and dropped sound without a word)."""
    blocks = [np.full((320, 1), i, np.float32) for i in range(150)]  # 3 s

    class Burst(_FakeStream):
        def start(self) -> None:  # every block delivered before the consumer reads one
            for b in self.blocks:
                self.kw["callback"](b, b.shape[0], None, None)
            self.kw["finished_callback"]()

    def factory(**kw: Any) -> Burst:
        return Burst(blocks, None, **kw)

    src = LiveSource([MicInput("usb", 0)], stream_factory=factory)
    audio = np.concatenate([f.samples for f in src])
    np.testing.assert_array_equal(audio[::320, 0], np.arange(150))
    assert src.dropped == 0

    status: list[DeviceStatus] = []
    short = LiveSource([MicInput("usb", 0)], stream_factory=factory, queue_s=1.0,
                       on_status=status.append)
    audio = np.concatenate([f.samples for f in short])
    np.testing.assert_array_equal(audio[::320, 0], np.arange(101, 150))  # the newest second
    assert short.dropped == 101
    assert [s.kind for s in status] == ["behind", "lost"]  # lost: the stream's end
    assert "fell behind: 2.02 s of sound lost" in status[0].message
