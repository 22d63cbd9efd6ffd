"""Narration: the real espeak-ng synthesiser, the announcer's queue, cutting and fallback."""

from __future__ import annotations

import contextlib
import ctypes
import io
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from engine.core import spoken_s
from voice.audio.files import read_wav
from voice.audio.frames import PIPELINE_RATE_HZ
from voice.table.narration import Announcer, FliteSynthesizer, Pyttsx3Synthesizer, SpeechUnavailable


class ClockSink:
    """Plays by sleeping for a tenth of the audio's length, in blocks, honouring stop."""

    def __init__(self) -> None:
        self.played: list[int] = []

    def play(self, samples: np.ndarray, stop: threading.Event) -> None:
        blocks = max(1, len(samples) // 1600)
        for _ in range(blocks):
            if stop.is_set():
                break
            time.sleep(0.01)
        self.played.append(len(samples))


@pytest.fixture(scope="module")
def synth() -> Pyttsx3Synthesizer:
    return Pyttsx3Synthesizer(rate_wpm=170, voice="en-us")


def test_synthesiser_renders_speech(synth: Pyttsx3Synthesizer) -> None:
    short = synth.render("Stop.")
    long = synth.render("Next guest: Rocky. Craves chocolate and frozen. Dislikes cream.")
    assert short.dtype == np.float32 and short.ndim == 1
    assert 0.2 < len(short) / PIPELINE_RATE_HZ < 1.5
    assert len(long) > 3 * len(short)
    assert float(np.sqrt(np.mean(long**2))) > 0.01


class LateEngine:
    """Stands in for pyttsx3's engine as its espeak driver behaves on a busy machine:
    ``runAndWait`` returns while espeak-ng is still synthesising on a thread of its own; the
    file is written, and "finished-utterance" sent, ``delay_s`` later (never, with None)."""

    def __init__(self, audio: np.ndarray, delay_s: float | None) -> None:
        self.audio, self.delay_s, self.path = audio, delay_s, ""
        self.finished: list[Callable[..., None]] = []

    def connect(self, topic: str, callback: Callable[..., None]) -> None:
        if topic == "finished-utterance":
            self.finished.append(callback)

    def save_to_file(self, text: str, path: str) -> None:
        self.path = path

    def runAndWait(self) -> None:
        def finish(path: str) -> None:
            sf.write(path, self.audio, 22050, subtype="PCM_16")
            for callback in self.finished:
                callback(name=None, completed=True)

        if self.delay_s is not None:
            threading.Timer(self.delay_s, finish, (self.path,)).start()


def late_synth(monkeypatch: pytest.MonkeyPatch, audio: np.ndarray,
               delay_s: float | None) -> Pyttsx3Synthesizer:
    import pyttsx3

    monkeypatch.setattr(pyttsx3, "init", lambda driver: LateEngine(audio, delay_s))
    return Pyttsx3Synthesizer()


def test_a_render_waits_until_the_line_is_written(monkeypatch: pytest.MonkeyPatch) -> None:
    tone = 0.3 * np.sin(np.arange(22050) * 2 * np.pi * 220 / 22050)
    samples = late_synth(monkeypatch, tone, delay_s=0.3).render("Maya first.")
    assert len(samples) == PIPELINE_RATE_HZ


def test_a_line_rendered_to_nothing_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SpeechUnavailable, match="rendered no audio for 'Maya first.'"):
        late_synth(monkeypatch, np.zeros(0), delay_s=0.0).render("Maya first.")
    synth = late_synth(monkeypatch, np.zeros(0), delay_s=None)
    monkeypatch.setattr(synth, "RENDER_TIMEOUT_S", 0.2)
    with pytest.raises(SpeechUnavailable, match="did not finish 'Maya first.'"):
        synth.render("Maya first.")


def test_the_buffer_that_ends_a_line_is_kept(synth: Pyttsx3Synthesizer, tmp_path: Path) -> None:
    """espeak-ng may hand over a line's last second of audio together with its end-of-message
    event; pyttsx3's driver wrote its file before adding those samples, and a render lost its
    end now and then (or everything: the empty renders). Here espeak-ng's callback is called
    as espeak-ng would: the file holds the samples."""
    from pyttsx3.drivers import _espeak

    driver = synth._engine.proxy._driver  # type: ignore[attr-defined]
    path = tmp_path / "last.wav"
    driver._save_file, driver._speaking, driver._data_buffer = str(path), True, b""
    samples = (ctypes.c_short * 22050)(*([1000] * 22050))
    events = (_espeak.EVENT * 2)()
    events[0].type, events[1].type = _espeak.EVENT_MSG_TERMINATED, _espeak.EVENT_LIST_TERMINATED
    with contextlib.redirect_stdout(io.StringIO()):
        _espeak.SynthCallback(samples, 22050, events)
    assert sf.info(str(path)).frames == 22050
    assert len(synth.render("Maya first.")) > PIPELINE_RATE_HZ // 4  # and it renders on

@pytest.mark.parametrize("line", [
    "Dealing 5 desserts to each of Maya, Leo and Priya.",
    "Next guest: Shortstop Shelly. Craves fruit and cake. Dislikes nuts. Favorite: Strawberry Shortcake.",
    "Maya first.",
    "Waitress 2 shows Order 11: Burger, Burger and Fries; Order 2: Burger, Fries and Soft Drink.",
    "Andy orders Classic Guacamole, Rare Steak, French Fries, Cola and Apple Pie.",
])
def test_the_engine_knows_about_how_long_the_narrator_takes(synth: Pyttsx3Synthesizer, line: str) -> None:
    said_s = len(synth.render(line)) / PIPELINE_RATE_HZ
    assert spoken_s(line, 170) == pytest.approx(said_s, abs=1.0)


def test_each_synthesiser_speaks_at_its_own_rate() -> None:
    """espeak-ng's rate is one for the whole process: each line is spoken at its own
    synthesiser's, whatever another one set last."""
    slow, fast = Pyttsx3Synthesizer(rate_wpm=120), Pyttsx3Synthesizer(rate_wpm=220)
    line = "Maya first. Leo takes Rocky and draws a card."
    first, quick, again = (len(s.render(line)) for s in (slow, fast, slow))
    assert again == pytest.approx(first, rel=0.05) and first > 1.5 * quick


def test_unknown_voice_is_a_clear_error() -> None:
    with pytest.raises(SpeechUnavailable, match="no voice 'zz-nowhere'"):
        Pyttsx3Synthesizer(voice="zz-nowhere")


def _pitch_hz(samples: np.ndarray) -> float:
    """Median pitch of the loud 40 ms frames, from each one's autocorrelation peak (60-400 Hz)."""
    n = 640
    frames = samples[: samples.size // n * n].reshape(-1, n)
    loud = frames[np.sum(frames**2, axis=1) > np.median(np.sum(frames**2, axis=1))]
    lo, hi = PIPELINE_RATE_HZ // 400, PIPELINE_RATE_HZ // 60
    lags = [lo + int(np.argmax(np.correlate(f, f, "full")[n - 1 + lo : n - 1 + hi])) for f in loud]
    return PIPELINE_RATE_HZ / float(np.median(lags))


@pytest.mark.skipif(shutil.which("flite") is None, reason="flite is not installed")
def test_flite_speaks_at_the_speed_and_pitch_asked() -> None:
    text = "next guest rocky craves chocolate"
    plain = FliteSynthesizer("awb", 170, 50).render(text)
    slow = FliteSynthesizer("awb", 120, 50).render(text)
    high = FliteSynthesizer("awb", 170, 90).render(text)
    assert plain.dtype == np.float32 and 1.0 < plain.size / PIPELINE_RATE_HZ < 3.0
    assert slow.size > 1.3 * plain.size
    assert _pitch_hz(high) > 1.2 * _pitch_hz(plain)  # asked: 2 ** 0.4 = 1.32 times
    with pytest.raises(SpeechUnavailable, match="no voice 'nobody'"):
        FliteSynthesizer("nobody")


def test_rendering_a_line_leaves_stderr_alone(synth: Pyttsx3Synthesizer,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The announcer renders on a thread of its own: muting the process's stderr there (as
    reading a file that may not be audio does) would swallow what the game says meanwhile on
    the main thread, such as how to resume a game stopped with Ctrl-C."""
    pointed: list[int] = []
    dup2 = os.dup2

    def recorded(fd: int, fd2: int, inheritable: bool = True) -> int:
        pointed.append(fd2)
        return dup2(fd, fd2, inheritable)

    monkeypatch.setattr(os, "dup2", recorded)
    assert synth.render("Maya first.").size > 0
    assert 2 not in pointed


def test_portaudio_starts_before_the_announcers_thread_speaks() -> None:
    """Starting, sounddevice mutes the process's stderr: it starts where the announcer is
    made, not on the announcer's thread at its first line, while the game may be saying
    something on stderr."""
    made = ("import sys; from voice.table.narration import start_announcer; "
            "announcer = start_announcer(); print('sounddevice' in sys.modules); announcer.close()")
    started = subprocess.run([sys.executable, "-c", made], capture_output=True, text=True,
                             check=True, timeout=60)
    assert started.stdout.split() == ["True"], started.stderr


def test_announcer_speaks_in_order_without_blocking(synth: Pyttsx3Synthesizer) -> None:
    heard: list[str] = []
    announcer = Announcer(synth, ClockSink(), echo=heard.append)
    started = time.monotonic()
    announcer.say("Next guest: Rocky.")
    done = announcer.say("Maya first.")
    assert time.monotonic() - started < 0.05  # say() only queues
    assert done.wait(10)
    announcer.close()
    assert heard == ["Next guest: Rocky.", "Maya first."]
    assert [s.text for s in announcer.spoken] == heard
    first, second = announcer.spoken
    assert first.end_s <= second.start_s
    assert announcer.speaking(second.start_s) and not announcer.speaking(second.end_s + 1.0)


class HeldSink:
    """Plays until told to stop: lets a test cut a line while it is surely being spoken."""

    def __init__(self) -> None:
        self.playing = threading.Event()
        self.release = threading.Event()

    def play(self, samples: np.ndarray, stop: threading.Event) -> None:
        self.playing.set()
        while not (stop.is_set() or self.release.is_set()):
            time.sleep(0.001)


LONG_LINE = "Next guest: Professor Hazel. Craves nuts and cake. Dislikes frozen."


def mid_announcement(synth: Pyttsx3Synthesizer
                     ) -> tuple[Announcer, HeldSink, list[str], threading.Event]:
    """An announcer saying a long line on a held sink, another line queued behind it: the
    announcer, its sink, what it has echoed, and the queued line's done event."""
    heard: list[str] = []
    sink = HeldSink()
    announcer = Announcer(synth, sink, echo=heard.append)
    announcer.say(LONG_LINE)
    skipped = announcer.say("Favorite: Hazelnut Torte.")
    assert sink.playing.wait(10)
    return announcer, sink, heard, skipped


def test_urgent_verdict_cuts_a_long_announcement(synth: Pyttsx3Synthesizer) -> None:
    announcer, sink, heard, skipped = mid_announcement(synth)
    sink.playing.clear()
    announcer.say("Stop!", urgent=True)
    assert sink.playing.wait(10)  # the verdict is being spoken now
    sink.release.set()
    announcer.close()
    assert skipped.is_set()
    assert heard == [LONG_LINE, "Stop!"]
    assert announcer.spoken[0].cut


def test_hushed_announcer_closes_at_once(synth: Pyttsx3Synthesizer) -> None:
    """Ctrl-C: what is being said is cut and what is queued is dropped, so closing does not
    wait for the rest of the narration (the held sink would hold it until released)."""
    announcer, sink, heard, skipped = mid_announcement(synth)
    announcer.hush()
    closing = threading.Thread(target=announcer.close)
    closing.start()
    closing.join(10)
    sink.release.set()  # lets a failed test's announcer end
    assert not closing.is_alive()
    assert skipped.is_set()
    assert heard == [LONG_LINE]
    assert announcer.spoken[0].cut


def test_text_only_announcer_just_prints() -> None:
    heard: list[str] = []
    announcer = Announcer(None, None, echo=heard.append)
    announcer.say("Maya first.").wait(5)
    announcer.close()
    assert heard == ["Maya first."] and announcer.spoken == []


def test_say_renders_a_wav(tmp_path: Path) -> None:
    out = tmp_path / "verdict.wav"
    run = subprocess.run([sys.executable, "-m", "voice.cli", "say", "Maya first.", "--out", str(out)],
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    samples = read_wav(out)
    assert samples.shape[1] == 1 and len(samples) > PIPELINE_RATE_HZ // 4
