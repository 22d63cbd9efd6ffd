"""Narration: text to speech with pyttsx3 over espeak-ng, and a non-blocking announcer.

The synthesiser renders text to samples; the announcer plays them on its own
thread through a sink (the speaker, or nothing), so listening never waits for
speech. It keeps what it said and when, which the listener uses so the app
never takes its own voice for a player's call.
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from engine.core import NARRATION_WPM
from voice.audio.files import read_wav
from voice.audio.frames import PIPELINE_RATE_HZ, AudioFileError
from voice.audio.resample import resample


class SpeechUnavailable(ValueError):
    """No speech engine could be started (the app falls back to text)."""


class UnknownVoice(SpeechUnavailable):
    """The voice asked for is not one the speech engine has: a mistake to say, not to paper
    over with text."""


class Synthesizer(Protocol):
    def render(self, text: str) -> np.ndarray:
        """``text`` spoken, as mono float32 samples at :data:`PIPELINE_RATE_HZ`."""
        ...


class Pyttsx3Synthesizer:
    """pyttsx3's espeak driver rendering to a temporary WAV file.

    ``rate_wpm`` is words per minute; ``voice`` an espeak-ng voice name or id
    fragment ("en-us", "en-gb-scotland"). One engine, used under a lock.
    """

    def __init__(self, rate_wpm: int = NARRATION_WPM, voice: str | None = None) -> None:
        try:
            import pyttsx3

            with contextlib.redirect_stdout(io.StringIO()):
                self._engine = pyttsx3.init("espeak")
        except Exception as exc:  # the driver raises assorted errors when espeak-ng is missing
            raise SpeechUnavailable(
                f"cannot start espeak-ng through pyttsx3 ({exc}); install it with "
                "'apt-get install espeak-ng'"
            ) from exc
        _repair_driver(self._engine)
        self._lock = threading.Lock()
        self._finished = threading.Event()
        self._engine.connect("finished-utterance", lambda **_: self._finished.set())
        self.rate_wpm = rate_wpm
        self._voice = self._voice_id(voice) if voice else None

    def _voice_id(self, name: str) -> str:
        voices = self._engine.getProperty("voices")
        for v in voices:
            if name.casefold() in (str(v.id).casefold(), str(v.name).casefold()):
                return str(v.id)
        for v in voices:
            if name.casefold() in str(v.id).casefold():
                return str(v.id)
        known = ", ".join(sorted(str(v.name) for v in voices)[:12])
        raise UnknownVoice(f"no voice {name!r} (some known voices: {known}, ...)")

    RENDER_TIMEOUT_S = 30.0
    """Longest wait for espeak-ng to finish a line (a long line renders in tens of ms)."""

    def render(self, text: str) -> np.ndarray:
        """``text`` rendered to a temporary WAV file and read back.

        pyttsx3's ``runAndWait`` (2.99, espeak driver) returns about 10 ms after it starts
        espeak-ng, which synthesises on a thread of its own: on a busy machine before the
        file is written. The file is read once the driver reports the line finished, which it
        does after writing it."""
        with self._lock, tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "say.wav")
            _set_voice_and_rate(self._voice, self.rate_wpm)
            self._finished.clear()
            self._engine.save_to_file(text, path)
            self._engine.runAndWait()
            if not self._finished.wait(self.RENDER_TIMEOUT_S):
                raise SpeechUnavailable(
                    f"espeak-ng did not finish {text!r} in {self.RENDER_TIMEOUT_S:.0f} s")
            try:
                # espeak-ng's own file, read on the announcer's thread: stderr is left as
                # it is, where the game may be saying how to resume a stopped game
                samples = read_wav(path, PIPELINE_RATE_HZ, mute_native=False)
            except AudioFileError as exc:
                raise SpeechUnavailable(
                    f"espeak-ng rendered no audio for {text!r} ({exc})") from None
            return np.ascontiguousarray(samples[:, 0], dtype=np.float32)


def _set_voice_and_rate(voice: str | None, rate_wpm: int) -> None:
    """Give espeak-ng ``voice`` (an id, or its own default) and ``rate_wpm`` for the next line,
    and wait until it has taken them.

    They are espeak-ng's, one setting for the whole process, so they are set before every
    line, not once per engine. pyttsx3 2.99 runs espeak-ng asynchronously, where a parameter
    waits in espeak-ng's command queue, and each ``runAndWait`` cancels whatever is still
    queued before it speaks (its end-of-loop command stops espeak-ng when busy): a rate set
    through the engine was now and then dropped, and a line came out at the driver's own
    initial 200 words per minute (5.69 s for a line of 6.65 s at 170), or, the cancel
    racing the line itself, empty."""
    from pyttsx3.drivers import _espeak

    if voice:
        _espeak.SetVoiceByName(voice.encode())
    _espeak.SetParameter(_espeak.RATE, rate_wpm, 0)
    deadline = time.monotonic() + 5.0
    while _espeak.IsPlaying():
        if time.monotonic() > deadline:
            raise SpeechUnavailable("espeak-ng stayed busy for 5 s")
        time.sleep(0.001)


def _repair_driver(engine: Any) -> None:
    """Repair pyttsx3's espeak driver (2.99) in two ways; a driver without these internals is
    left as it is.

    espeak-ng hands over the audio in buffers of up to a second, and the driver writes its
    file on the end-of-message event before it adds the samples of the buffer that event came
    with, so a render would now and then lose its last second, or everything. The callback
    registered here adds a buffer's samples first.

    The driver prints "Audio saved to …" from espeak-ng's thread after each file; silenced
    here, as catching it by redirecting ``sys.stdout`` would also swallow what the other
    threads print meanwhile (the table's display, the demo's lines)."""
    driver: Any = getattr(getattr(engine, "proxy", None), "_driver", None)
    if not all(hasattr(driver, name) for name in ("_onSynth", "_data_buffer", "_speaking")):
        return
    from pyttsx3.drivers import _espeak

    def on_synth(wav: Any, numsamples: int, events: Any) -> int:
        if numsamples > 0 and driver._speaking:
            driver._data_buffer += ctypes.string_at(wav, numsamples * ctypes.sizeof(ctypes.c_short))
        return int(driver._onSynth(wav, 0, events))

    _espeak.SetSynthCallback(on_synth)
    driver_module: Any = sys.modules[type(driver).__module__]
    driver_module.print = lambda *args, **kwargs: None


class EspeakSynthesizer:
    """The espeak-ng program with full control of voice, speed and pitch.

    Used where many different voices are needed (test scenes, benchmarks);
    ``voice`` is an espeak-ng voice ("en-us", "en-gb-scotland", "en-us+f3"),
    ``speed_wpm`` words per minute, ``pitch`` 0–99.
    """

    def __init__(self, voice: str = "en-us", speed_wpm: int = 170, pitch: int = 50) -> None:
        self.program = shutil.which("espeak-ng")
        if self.program is None:
            raise SpeechUnavailable("espeak-ng is not installed (apt-get install espeak-ng)")
        self.voice, self.speed_wpm, self.pitch = voice, speed_wpm, pitch

    def render(self, text: str) -> np.ndarray:
        samples, rate = self.native(text)
        return resample(samples, rate, PIPELINE_RATE_HZ).astype(np.float32)

    def native(self, text: str) -> tuple[np.ndarray, int]:
        """``text`` spoken, at espeak-ng's own sample rate: the samples and the rate."""
        import soundfile as sf

        args = [str(self.program), "-v", self.voice, "-s", str(self.speed_wpm), "-p", str(self.pitch),
                "--stdout", text]
        done = subprocess.run(args, capture_output=True, check=False)
        if done.returncode != 0 or not done.stdout:
            raise SpeechUnavailable(
                f"espeak-ng failed on {text!r} with voice {self.voice}: {done.stderr.decode().strip()}"
            )
        samples, rate = sf.read(io.BytesIO(done.stdout), dtype="float32")
        return samples, int(rate)


class FliteSynthesizer:
    """The flite program (CMU Flite) with voice, speed and pitch, as :class:`EspeakSynthesizer`.

    Its voices are built from recordings of people (diphones, or statistical models trained
    on one speaker), so they sound closer to a real talker than espeak-ng's formant
    synthesis, whose "bell" PocketSphinx's model hears as "you" even with its free language
    model. Test scenes mix both. ``voice`` is one of :data:`FLITE_VOICES`; ``speed_wpm``
    sets the duration stretch (flite's own rate is about 170 words per minute); ``pitch``
    0-99 moves the voice's mean pitch by up to half an octave either way (50: its own).
    """

    def __init__(self, voice: str = "slt", speed_wpm: int = 170, pitch: int = 50) -> None:
        self.program = shutil.which("flite")
        if self.program is None:
            raise SpeechUnavailable("flite is not installed (apt-get install flite)")
        if voice not in FLITE_VOICES:
            raise SpeechUnavailable(f"flite has no voice {voice!r} here; it has {', '.join(FLITE_VOICES)}")
        self.voice, self.speed_wpm, self.pitch = voice, speed_wpm, pitch

    def render(self, text: str) -> np.ndarray:
        import soundfile as sf

        f0_hz = FLITE_VOICES[self.voice] * 2 ** ((self.pitch - 50) / 100)
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "speech.wav"
            args = [str(self.program), "-voice", self.voice,
                    "--setf", f"duration_stretch={170 / self.speed_wpm:.4f}",
                    "--setf", f"int_f0_target_mean={f0_hz:.1f}", "-t", text, "-o", str(out)]
            done = subprocess.run(args, capture_output=True, check=False)
            if done.returncode != 0 or not out.exists():
                raise SpeechUnavailable(
                    f"flite failed on {text!r} with voice {self.voice}: {done.stderr.decode().strip()}"
                )
            samples, rate = sf.read(out, dtype="float32")
        # flite pads a line with a quarter second of noise up to 1 % of its peak: cut, so its
        # speech starts and stops as espeak-ng's does, out of digital silence
        loud = np.flatnonzero(np.abs(samples) > FLITE_PAD * np.abs(samples).max())
        samples = samples[loud[0] : loud[-1] + 1] if loud.size else samples
        return resample(samples, int(rate), PIPELINE_RATE_HZ).astype(np.float32)


FLITE_PAD = 0.02
"""Above the noise flite pads a line with (at most 1 % of the line's peak)."""
FLITE_VOICES = {"slt": 170.0, "awb": 115.0, "rms": 110.0, "kal16": 105.0}
"""Debian's flite voices at 16 kHz and each one's mean pitch (Hz)."""


class Sink(Protocol):
    def play(self, samples: np.ndarray, stop: threading.Event) -> None:
        """Play ``samples`` (16 kHz mono), returning early once ``stop`` is set."""
        ...


class ReferenceTap:
    """What the app played, placed on the microphones' sample clock.

    The speaker writes each block with the moment it leaves the speaker; the
    table loop reads it back by input sample index as the app's reference
    channel, so the app's own voice can be told from the players'. Alignment is
    by the monotonic clock and the output latency PortAudio reports.
    """

    def __init__(self, rate_hz: int = PIPELINE_RATE_HZ, keep_s: float = 5.0) -> None:
        self.rate_hz = rate_hz
        self.keep = int(keep_s * rate_hz)
        self.t0: float | None = None
        self._lock = threading.Lock()
        self._blocks: list[tuple[int, np.ndarray]] = []

    def start(self, t0: float) -> None:
        """The moment input sample 0 was captured (monotonic seconds)."""
        self.t0 = t0

    def write(self, samples: np.ndarray, at_s: float) -> None:
        if self.t0 is None:
            return
        with self._lock:
            self._blocks.append((round((at_s - self.t0) * self.rate_hz), samples.reshape(-1).copy()))

    def read(self, start: int, n: int) -> np.ndarray:
        """The reference for input samples ``start`` to ``start + n`` (zeros where silent)."""
        out = np.zeros(n, np.float32)
        with self._lock:
            self._blocks = [(i, b) for i, b in self._blocks if i + len(b) > start - self.keep]
            for i, b in self._blocks:
                lo, hi = max(i, start), min(i + len(b), start + n)
                if lo < hi:
                    out[lo - start : hi - start] = b[lo - i : hi - i]
        return out


class SpeakerSink:
    """The laptop's speaker through sounddevice, in 20 ms blocks so speech can be cut.

    With a ``tap``, every block played is also written to it (see ReferenceTap).
    """

    def __init__(self, device: int | str | None = None, tap: ReferenceTap | None = None) -> None:
        """PortAudio is started here, on the caller's thread, not on the announcer's: starting,
        sounddevice mutes the process's stderr, and what the game said meanwhile would be
        lost. Without PortAudio, :class:`SpeechUnavailable`."""
        try:
            import sounddevice  # noqa: F401
        except OSError as exc:
            raise SpeechUnavailable(f"no speaker to play on ({exc})") from exc
        self.device = device
        self.tap = tap

    def play(self, samples: np.ndarray, stop: threading.Event) -> None:
        import sounddevice as sd  # loaded by the constructor

        try:
            out = sd.OutputStream(samplerate=PIPELINE_RATE_HZ, channels=1, device=self.device,
                                  dtype="float32")
        except (OSError, sd.PortAudioError) as exc:
            raise SpeechUnavailable(f"no speaker to play on ({exc})") from exc
        block = PIPELINE_RATE_HZ // 50
        with out:
            for i in range(0, len(samples), block):
                if stop.is_set():
                    return
                chunk = samples[i : i + block]
                if self.tap is not None:
                    self.tap.write(chunk, time.monotonic() + float(out.latency))
                out.write(chunk.reshape(-1, 1))


@dataclass(frozen=True)
class Spoken:
    """One narration line and when it was played (announcer clock, seconds)."""

    text: str
    start_s: float
    end_s: float
    cut: bool = False


@dataclass
class _Line:
    text: str
    urgent: bool
    sounds: tuple[np.ndarray, ...] = ()
    done: threading.Event = field(default_factory=threading.Event)


class Announcer:
    """Speaks lines in order on its own thread; ``say`` never blocks.

    An urgent line (a short verdict) cuts the line being spoken and skips the
    ones still waiting. Without a synthesiser or a sink it only prints, after a
    one-line notice saying why.
    """

    def __init__(
        self,
        synth: Synthesizer | None,
        sink: Sink | None,
        *,
        echo: Callable[[str], None] = print,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.synth = synth
        self.sink = sink
        self.echo = echo
        self.clock = clock
        self.spoken: list[Spoken] = []
        self._queue: queue.Queue[_Line | None] = queue.Queue()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="announcer", daemon=True)
        self._thread.start()

    def say(self, text: str, urgent: bool = False,
            then: Sequence[np.ndarray] = ()) -> threading.Event:
        """Queue ``text``, and sounds to play after it (16 kHz mono: calls played back);
        returns an event set once it has been spoken (or skipped)."""
        line = _Line(text, urgent, tuple(then))
        if urgent:
            self.hush()
        self._queue.put(line)
        return line.done

    def hush(self) -> None:
        """Cut what is being said and drop what is queued (until an urgent line lifts the cut)."""
        self._stop.set()
        with self._queue.mutex:
            skipped = [item for item in self._queue.queue if item is not None]
            self._queue.queue.clear()
        for item in skipped:
            item.done.set()

    def speaking(self, t: float, tail_s: float = 0.3) -> bool:
        """Whether the app was speaking at ``t`` (or within ``tail_s`` after)."""
        return any(s.start_s <= t <= s.end_s + tail_s for s in self.spoken[-8:])

    def close(self) -> None:
        """Finish what is queued, then stop the thread."""
        self._queue.put(None)
        self._thread.join()

    def _run(self) -> None:
        while (line := self._queue.get()) is not None:
            if line.urgent:
                self._stop.clear()
            self.echo(line.text)
            if self.synth is not None and self.sink is not None:
                try:
                    self._play(self.synth, self.sink, line)
                except SpeechUnavailable as exc:
                    self.echo(f"(narration is text only from now on: {exc})")
                    self.sink = None
            line.done.set()

    def _play(self, synth: Synthesizer, sink: Sink, line: _Line) -> None:
        samples = synth.render(line.text)
        start = self.clock()
        sink.play(samples, self._stop)
        for sound in line.sounds:
            if not self._stop.is_set():
                sink.play(sound, self._stop)
        self.spoken.append(Spoken(line.text, start, self.clock(), cut=self._stop.is_set()))


def start_announcer(
    rate_wpm: int = NARRATION_WPM, voice: str | None = None, speaker: bool = True,
    echo: Callable[[str], None] = print, tap: ReferenceTap | None = None,
) -> Announcer:
    """An announcer on the speaker, or a text-only one with a notice when speech is unavailable
    (an :class:`UnknownVoice` is raised)."""
    synth: Synthesizer | None = None
    sink: Sink | None = None
    try:
        synth = Pyttsx3Synthesizer(rate_wpm, voice)
        sink = SpeakerSink(tap=tap) if speaker else None
    except UnknownVoice:
        raise
    except SpeechUnavailable as exc:
        echo(f"(narration is text only: {exc})")
    return Announcer(synth, sink, echo=echo)
