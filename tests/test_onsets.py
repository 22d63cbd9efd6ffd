"""Per-mic onsets and bleed rejection on synthesised multichannel scenes with known truth."""

from __future__ import annotations

import numpy as np
import pytest

from scripts.scenes import ESPEAK, BleedSpec, DryScene, TruthCall, mix_scene, spoken
from voice.audio.frames import PIPELINE_RATE_HZ, AudioFrame, AudioStreamError
from voice.hearing.follows import Follows
from voice.hearing.onsets import (
    Event,
    OnsetConfig,
    OnsetDetector,
    Segment,
    SpeechEnd,
    SpeechStart,
)
from voice.table.setup import levels_db

pytestmark = pytest.mark.skipif(ESPEAK is None, reason="espeak-ng is not installed")

MS = PIPELINE_RATE_HZ // 1000


def detect(audio: np.ndarray, block: int = 320) -> tuple[list[Event], list[tuple[int, int]]]:
    """Stream a scene through a detector; return its events and (settled, now) after each frame."""
    det = OnsetDetector(audio.shape[1])
    events: list[Event] = []
    settled: list[tuple[int, int]] = []
    for i in range(0, audio.shape[0], block):
        chunk = audio[i : i + block]
        events += det.feed(
            AudioFrame(chunk, PIPELINE_RATE_HZ, audio.shape[1], i, i / PIPELINE_RATE_HZ)
        )
        settled.append((det.settled_sample, i + chunk.shape[0]))
    return events + det.flush(), settled


def starts(events: list[Event]) -> list[SpeechStart]:
    return [e for e in events if isinstance(e, SpeechStart)]


def segments(events: list[Event]) -> list[Segment]:
    return [e.segment for e in events if isinstance(e, SpeechEnd)]


def onset_errors_ms(scene: DryScene, events: list[Event]) -> list[float]:
    """Signed onset error of each truth call against the nearest onset on its mic."""
    errors = []
    for t in scene.truth:
        mine = [s.onset_sample - t.onset_sample for s in starts(events) if s.mic == t.mic]
        assert mine, f"no utterance on mic {t.mic} for {t}"
        errors.append(min(mine, key=abs) / MS)
    return errors


# (phrase, voice, speed, pitch, peak amplitude, SNR dB, noise kind): one caller, 4 mics
SINGLE = [
    ("got it", "en-us", 170, 50, 0.6, 40, "white"),
    ("got it", "en-gb", 220, 80, 0.3, 30, "pink"),
    ("got it", "en-gb-scotland", 120, 20, 0.9, 25, "white"),
    ("stop", "en-us", 200, 40, 0.5, 40, "pink"),
    ("stop", "en-029", 150, 70, 0.7, 30, "white"),
    ("favorite", "en-us", 180, 30, 0.6, 40, "white"),
    ("favorite", "en-gb", 140, 60, 0.4, 30, "pink"),
    ("rocky road", "en-029", 190, 50, 0.8, 25, "pink"),
    ("chocolate", "en-gb-scotland", 160, 45, 0.5, 30, "white"),
    ("sold out", "en-us", 130, 75, 0.7, 40, "pink"),
    ("poutine", "en-gb", 175, 35, 0.6, 25, "white"),
    ("Maya", "en-029", 210, 65, 0.5, 30, "pink"),
]


def _single(case: tuple, seed: int) -> DryScene:  # type: ignore[type-arg]
    phrase, voice, speed, pitch, amp, snr, noise = case
    mic = seed % 4
    call = spoken(phrase, voice=voice, speed=speed, pitch=pitch, amplitude=amp)
    return mix_scene([(mic, call, 6000 + 37 * seed)], 4, noise_snr_db=snr, noise=noise, seed=seed)


@pytest.fixture(scope="module")
def single_results() -> list[tuple[DryScene, list[Event]]]:
    out = []
    for seed, case in enumerate(SINGLE):
        scene = _single(case, seed)
        out.append((scene, detect(scene.audio)[0]))
    return out


def test_one_caller_is_one_utterance_on_the_right_mic(single_results: list) -> None:  # type: ignore[type-arg]
    for scene, events in single_results:
        assert [s.mic for s in starts(events)] == [scene.truth[0].mic], scene.truth
        assert [s.mic for s in segments(events)] == [scene.truth[0].mic]


def test_onset_accuracy_single_callers(single_results: list) -> None:  # type: ignore[type-arg]
    errors = np.array(
        [e for scene, events in single_results for e in onset_errors_ms(scene, events)]
    )
    assert np.median(np.abs(errors)) <= 2.0
    assert np.percentile(np.abs(errors), 95) <= 10.0
    assert np.max(np.abs(errors)) <= 15.0


def test_utterance_spans_the_call(single_results: list) -> None:  # type: ignore[type-arg]
    for scene, events in single_results:
        (seg,) = segments(events)
        truth = scene.truth[0]
        assert abs(seg.end_sample - truth.end_sample) <= 100 * MS
        assert seg.samples_start_sample == seg.onset_sample - 100 * MS
        assert seg.samples.size == seg.end_sample - seg.samples_start_sample + 100 * MS
        # the room around the call is no one's own sound (every mic hears it alike): it is
        # turned down from 30 ms before the call's first own sound and after its last; the
        # call itself is the mic's audio
        call = slice(truth.onset_sample, truth.end_sample)
        np.testing.assert_array_equal(
            seg.samples[call.start - seg.samples_start_sample : call.stop - seg.samples_start_sample],
            scene.audio[call, seg.mic],
        )
        assert not seg.not_own and seg.own_s > 0.1
        assert seg.onset_s == seg.onset_sample / PIPELINE_RATE_HZ
        assert -40 < seg.level_db < 0


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
def test_bleed_is_never_an_utterance(seed: int) -> None:
    """Loud and quiet callers, every bleed level and delay, 3 to 8 mics, calls far apart."""
    rng = np.random.default_rng(100 + seed)
    n_mics = 3 + seed
    calls = []
    for k, phrase in enumerate(["got it", "stop", "favorite", "rocky road"]):
        amp = float(rng.uniform(0.2, 0.9))
        calls.append((k % n_mics, spoken(phrase, voice="en-gb", amplitude=amp), 4000 + k * 20000))
    scene = mix_scene(
        calls, n_mics, bleed=BleedSpec((1.0, 6.0), (-8.0, -6.0)), noise_snr_db=35, seed=seed
    )
    events, _ = detect(scene.audio)
    assert [s.mic for s in starts(events)] == [t.mic for t in scene.truth]
    # onsets: accurate, though a quiet caller's faint "f" may be lost in the noise
    errors = np.abs(onset_errors_ms(scene, events))
    assert np.median(errors) <= 2.0 and np.max(errors) <= 40.0


def test_shouted_clipped_call() -> None:
    call = spoken("got it", voice="en-us", speed=200, pitch=70, amplitude=4.0)  # clips hard
    scene = mix_scene([(1, call, 8000)], 3, bleed=BleedSpec((2.0, 3.0), (-7.0, -6.0)), seed=3)
    assert np.mean(np.abs(scene.audio[:, 1]) >= 0.999) > 0.01
    events, _ = detect(scene.audio)
    assert [s.mic for s in starts(events)] == [1]
    assert abs(onset_errors_ms(scene, events)[0]) <= 3.0


def _pair(gap_ms: float, seed: int, phrases: tuple[str, str] = ("got it", "got it")) -> DryScene:
    a = spoken(phrases[0], voice="en-us", speed=180, pitch=40, amplitude=0.7)
    b = spoken(phrases[1], voice="en-gb-scotland", speed=160, pitch=70, amplitude=0.6)
    return mix_scene(
        [(0, a, 8000), (2, b, 8000 + round(gap_ms * MS))], 4, noise_snr_db=35, seed=seed
    )


@pytest.mark.parametrize(
    ("gap_ms", "seed"), [(0, 1), (5, 2), (15, 3), (20, 4), (30, 5), (60, 6), (100, 7)]
)
def test_two_callers_on_their_own_mics_are_both_heard(gap_ms: float, seed: int) -> None:
    scene = _pair(gap_ms, seed)
    events, _ = detect(scene.audio)
    assert sorted(s.mic for s in starts(events)) == [0, 2]
    first, second = onset_errors_ms(scene, events)
    assert abs(first) <= 5.0
    # the second caller starts under the first one's bleed: a weak start can be heard late
    assert abs(second) <= 20.0


@pytest.mark.parametrize("silent_s", [(2.0, 2.0, 2.0, 2.0), (0.0, 1.0, 3.0, 0.5)])
def test_digital_silence_before_the_room_is_not_its_floor(silent_s: tuple[float, ...]) -> None:
    """Mics that deliver exact zeros before their first sound (an audio server's source before
    anything plays into it, a mic unmuted late): each mic's background is learned from its
    room, and two callers are heard as in a room that was there from the start. A floor
    learned from the zeros was never raised again: every sound after was one endless
    utterance on each mic."""
    scene = _pair(30, 5)
    lead = round(max(silent_s) * PIPELINE_RATE_HZ)
    room = scene.audio[: 6000]  # before anyone calls
    audio = np.vstack([np.resize(room, (lead, 4)), scene.audio])
    for mic, s in enumerate(silent_s):
        audio[: round(s * PIPELINE_RATE_HZ), mic] = 0.0
    events, _ = detect(audio)
    assert sorted(s.mic for s in starts(events)) == [0, 2]
    shifted = [s.onset_sample - lead for s in starts(events)]
    truth = sorted(t.onset_sample for t in scene.truth)
    assert np.max(np.abs(np.array(sorted(shifted)) - truth)) <= 20 * MS
    assert all(seg.end_sample - seg.onset_sample < PIPELINE_RATE_HZ for seg in segments(events))


@pytest.mark.parametrize("seed", range(4))
def test_second_caller_starting_20ms_into_a_shout(seed: int) -> None:
    """Player B starts 20 ms after A, while A's bleed is already on B's mic."""
    shout = spoken("rocky road", voice="en-us", speed=170, pitch=50, amplitude=0.9)
    other = spoken("got it", voice="en-029", speed=190, pitch=60, amplitude=0.8)
    scene = mix_scene(
        [(1, shout, 8000), (3, other, 8000 + 20 * MS)],
        5,
        bleed=BleedSpec((1.0, 3.0), (-10.0, -6.0)),
        noise_snr_db=35,
        seed=seed,
    )
    events, _ = detect(scene.audio)
    assert sorted(s.mic for s in starts(events)) == [1, 3]
    first, second = sorted(starts(events), key=lambda s: s.onset_sample)
    assert (first.mic, second.mic) == (1, 3)
    assert (second.onset_sample - first.onset_sample) / MS >= 15.0


@pytest.mark.slow
def test_block_size_does_not_change_the_events() -> None:
    scene = _pair(40, 11, ("stop", "favorite"))
    reference = [(type(e), getattr(e, "onset_sample", None)) for e in detect(scene.audio, 320)[0]]
    for block in (80, 441, 1000):
        got = [(type(e), getattr(e, "onset_sample", None)) for e in detect(scene.audio, block)[0]]
        assert sorted(got, key=str) == sorted(reference, key=str)


def test_settled_sample_is_a_true_watermark() -> None:
    scene = _pair(25, 12, ("sold out", "got it"))
    det = OnsetDetector(4)
    marks: list[int] = []
    for i in range(0, scene.audio.shape[0], 320):
        frame = AudioFrame(scene.audio[i : i + 320], PIPELINE_RATE_HZ, 4, i, i / PIPELINE_RATE_HZ)
        for e in det.feed(frame):
            if isinstance(e, SpeechStart):
                assert all(e.onset_sample >= m for m in marks)
                assert e.decided_sample <= i + 320
        marks.append(det.settled_sample)
        assert det.settled_sample <= i + 320
    assert marks == sorted(marks)
    assert det.settled_s == marks[-1] / PIPELINE_RATE_HZ


def test_noise_and_clicks_are_not_speech() -> None:
    rng = np.random.default_rng(5)
    audio = (0.01 * rng.standard_normal((3 * PIPELINE_RATE_HZ, 3))).astype(np.float32)
    audio[20000:20003, 1] = 0.9  # a click
    audio[30000, 2] = -1.0
    events, _ = detect(audio)
    assert events == []


def test_wrong_rate_or_gap_is_refused() -> None:
    det = OnsetDetector(2)
    with pytest.raises(AudioStreamError, match="resample first"):
        det.feed(AudioFrame(np.zeros((441, 2), np.float32), 44100, 2, 0, 0.0))
    with pytest.raises(AudioStreamError, match="gap"):
        det.feed(AudioFrame(np.zeros((320, 2), np.float32), PIPELINE_RATE_HZ, 2, 320, 0.02))


def test_truth_helper_finds_the_first_non_silent_sample() -> None:
    call = np.zeros(1000, np.float32)
    call[100:] = 0.5
    call[90] = 1e-4  # below the threshold: still silence
    scene = mix_scene([(0, call, 500)], 2, bleed=None, noise_snr_db=None)
    assert scene.truth == (TruthCall(0, 600, 1500),)
    np.testing.assert_array_equal(scene.audio[:, 1], 0.0)


def _room_bleed_scene(seed: int, rt60_s: float) -> DryScene:
    """One caller on 4 mics in a reverberant room. Each mic hears a direct sound and a diffuse
    tail decaying to -60 dB at `rt60_s` (what a short FIR cannot model): the caller's own mic
    up close (tail 10 dB under the direct sound), the others 1.5-5 ms later, 8-14 dB down,
    with as much tail as direct sound."""
    rng = np.random.default_rng(seed)
    call = spoken(["got it", "stop", "favorite", "rocky road"][seed % 4], voice="en-gb",
                 amplitude=float(rng.uniform(0.3, 0.8)))
    mic = seed % 4
    scene = mix_scene([(mic, call, 12000)], 4, bleed=None, noise_snr_db=35, seed=seed)
    taps = int(rt60_s * PIPELINE_RATE_HZ)
    t = np.arange(taps) / PIPELINE_RATE_HZ
    tail = 10 ** (-3 * t / rt60_s) * (t > 0.003)
    tail_energy = float(np.sum(tail**2))
    audio = scene.audio.astype(np.float64)
    placed = np.zeros(audio.shape[0])
    placed[12000 : 12000 + call.size] = call
    for m in range(4):
        own = m == mic
        h = rng.standard_normal(taps) * tail * np.sqrt((0.1 if own else 1.0) / tail_energy)
        h[0] = 1.0
        gain = 1.0 if own else 10 ** (-rng.uniform(8, 14) / 20)
        delay = 0 if own else int(rng.uniform(1.5, 5.0) * MS)
        wet = gain * np.convolve(placed, h)[: audio.shape[0]]
        audio[:, m] += np.roll(wet, delay) - (placed if own else 0.0)
    return DryScene(np.clip(audio, -1, 1).astype(np.float32), scene.truth, scene.bleed_delay_ms,
                 scene.bleed_gain_db)


@pytest.mark.xfail(
    reason="known: late in a reverberant call, its copies on other mics are still reported "
    "(neither the FIR fit nor the rise test explains a diffuse tail)",
    strict=True,
)
@pytest.mark.parametrize(("seed", "rt60_s"), [(0, 0.2), (1, 0.5)])
def test_reverberant_bleed_is_never_an_utterance(seed: int, rt60_s: float) -> None:
    scene = _room_bleed_scene(seed, rt60_s)
    events, _ = detect(scene.audio)
    assert [s.mic for s in starts(events)] == [scene.truth[0].mic]
    assert abs(onset_errors_ms(scene, events)[0]) <= 5.0


def test_fluctuating_background_from_the_first_sample_is_not_speech() -> None:
    """A running session hears the room from the start: babble-like noise (pink, its level
    swinging 12 dB a few times a second) on every mic is no onset, early or late."""
    rng = np.random.default_rng(8)
    n = 3 * PIPELINE_RATE_HZ
    t = np.arange(n) / PIPELINE_RATE_HZ
    swing = 10 ** (6 * np.sin(2 * np.pi * 3.0 * t + rng.uniform(0, 6, (3, 1))) / 20)
    spec = np.fft.rfft(rng.standard_normal((3, n)), axis=1)
    pink = np.fft.irfft(spec / np.sqrt(np.maximum(np.fft.rfftfreq(n, 1 / 16000), 50.0)), n)
    audio = (0.02 * pink / pink.std() * swing).T.astype(np.float32)
    events, _ = detect(audio)
    assert events == []


def test_an_empty_frame_is_nothing_to_analyse() -> None:
    """An echo canceller filling its block passes on empty frames; they change nothing."""
    import numpy as np

    from voice.audio.frames import AudioFrame
    from voice.hearing.onsets import OnsetDetector

    detector = OnsetDetector(2)
    assert detector.feed(AudioFrame(np.zeros((0, 2), np.float32), 16000, 2, 0, 0.0)) == []
    assert detector.feed(AudioFrame(np.zeros((320, 2), np.float32), 16000, 2, 0, 0.0)) == []


ROOMS = [(0, 0.2), (1, 0.5), (2, 0.8), (3, 0.5)]


def _own_calls(scene: DryScene, crosstalk_db: np.ndarray | None) -> list[Segment]:
    det = OnsetDetector(scene.audio.shape[1], crosstalk_db=crosstalk_db)
    events: list[Event] = []
    for i in range(0, scene.audio.shape[0], 1600):
        chunk = scene.audio[i : i + 1600]
        events += det.feed(AudioFrame(chunk, PIPELINE_RATE_HZ, chunk.shape[1], i, i / MS / 1000))
    return [s for s in segments(events + det.flush()) if not s.not_own]


@pytest.mark.parametrize(("seed", "rt60_s"), ROOMS)
def test_reverberant_copies_end_as_not_the_mics_own(seed: int, rt60_s: float) -> None:
    """The copies the onset tests let through are told apart by the end of the utterance:
    their sound never beat the crosstalk expected from the caller's mic, or, where a diffuse
    tail as loud as the direct sound (RT60 0.8 s) makes a copy only 5-7 dB under its source,
    above the -10 dB crosstalk guessed until calibration, it follows the caller's sound
    (voice.hearing.follows)."""
    scene = _room_bleed_scene(seed, rt60_s)
    calls = _own_calls(scene, None)
    assert [s.mic for s in calls] == [scene.truth[0].mic]
    assert calls[0].own_s > 0.15


@pytest.mark.parametrize("gain_db", [-14.0, -9.0, -6.0])
def test_a_copy_follows_its_source_a_second_caller_of_the_same_word_does_not(
    gain_db: float,
) -> None:
    """Over a whole utterance, a copy's power follows the louder mic's in every band, 3 ms
    later and smeared by a room's diffuse tail (RT60 0.5 s); a second player calling the same
    words at the same moment, under that copy on their own mic, does not follow the first."""
    a = spoken("rocky road", voice="en-us", speed=180, pitch=40, amplitude=0.7)
    b = spoken("rocky road", voice="en-gb-scotland", speed=160, pitch=70, amplitude=0.6)
    rng = np.random.default_rng(0)
    n, onset = 2 * PIPELINE_RATE_HZ, 100 * MS
    t = np.arange(PIPELINE_RATE_HZ // 2) / PIPELINE_RATE_HZ
    tail = rng.standard_normal(t.size) * 10 ** (-3 * t / 0.5) * (t > 0.003)
    room = tail / np.sqrt(np.sum(tail**2))
    room[0] = 1.0

    def placed(x: np.ndarray) -> np.ndarray:
        return np.pad(x, (onset, n - onset - x.size))

    def bleed(x: np.ndarray) -> np.ndarray:
        return 10 ** (gain_db / 20) * np.roll(np.convolve(placed(x), room)[:n], 3 * MS)

    def mics(*channels: np.ndarray) -> np.ndarray:
        return np.stack(channels, axis=1) + 1e-3 * rng.standard_normal((n, len(channels)))

    follows = Follows(OnsetConfig())
    limit = OnsetConfig().follow_explained
    assert follows.explained(mics(placed(a), bleed(a)), 1, onset) >= limit
    race = mics(placed(a) + bleed(b), placed(b) + bleed(a))
    assert follows.explained(race, 1, onset) < limit
    assert follows.explained(race, 0, onset) < limit


@pytest.mark.slow
@pytest.mark.parametrize(("seed", "rt60_s"), ROOMS)
def test_calibrated_crosstalk_tells_every_copy_apart(seed: int, rt60_s: float) -> None:
    """Seeded with the crosstalk calibration measures (the caller's level on each mic against
    their own: voice.table.setup.calibrate), even a diffuse tail's copies are not calls."""
    scene = _room_bleed_scene(seed, rt60_s)
    mic = scene.truth[0].mic
    heard = levels_db(scene.audio, 98)
    crosstalk = np.full((4, 4), -10.0)
    crosstalk[mic] = heard - heard[mic]
    calls = _own_calls(scene, crosstalk)
    assert [s.mic for s in calls] == [mic]
    assert calls[0].own_s > 0.15


@pytest.mark.parametrize("seed", range(3))
def test_a_neighbour_talking_after_a_call_is_turned_down_in_its_segment(seed: int) -> None:
    """B says "what a mess" 10 ms after A's "pass": A's segment keeps A's call as it was (but
    for B's first words taken out of its last frames) and turns B's words in its tail down by
    30 dB, so a recogniser does not try to fit them."""
    call = spoken("pass", voice="en", speed=170, amplitude=0.8)
    chatter = spoken("what a mess", voice="en-us", speed=170, amplitude=0.8)
    loud = np.flatnonzero(np.abs(call) > 0.01 * np.abs(call).max())
    call = call[: loud[-1] + 1]
    start = 8000
    scene = mix_scene([(0, call, start), (1, chatter, start + call.size + 10 * MS)], 2,
                      bleed=BleedSpec((1.0, 3.0), (-10.0, -6.0)), noise_snr_db=40, seed=seed)
    events, _ = detect(scene.audio)
    seg = next(s for s in segments(events) if s.mic == 0)
    raw = scene.audio[seg.samples_start_sample : seg.samples_start_sample + seg.samples.size, 0]
    end = scene.truth[0].end_sample - seg.samples_start_sample
    call = slice(0, end - 10 * MS)
    assert power_db(seg.samples[call] - raw[call]) <= power_db(raw[call]) - 40.0
    tail = slice(scene.truth[1].onset_sample - seg.samples_start_sample + 40 * MS, seg.samples.size)
    assert seg.samples[tail].size >= 30 * MS  # the neighbour is in this segment's tail...
    assert power_db(raw[tail]) > -60.0
    # ...but turned down by the full 30 dB
    assert power_db(seg.samples[tail]) <= power_db(raw[tail]) - 29.0


def power_db(x: np.ndarray) -> float:
    return float(10 * np.log10(np.mean(np.square(x, dtype=np.float64)) + 1e-12))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_call_right_after_a_knock_has_its_own_onset(seed: int) -> None:
    """A knock of cutlery 250 ms before a call, in a room's -40 dBFS background: the call's
    onset is its own, not the knock's (which would win it every race); the knock ends on its
    own after 80 ms of quiet."""
    from scripts.scenes import clatter_hit

    rng = np.random.default_rng(seed)
    audio = (0.01 * rng.standard_normal((2 * PIPELINE_RATE_HZ, 1))).astype(np.float32)
    knock = clatter_hit(rng)
    audio[9600 : 9600 + knock.size, 0] += (0.1 * knock / np.abs(knock).max()).astype(np.float32)
    call = spoken("got it")
    audio[13600 : 13600 + call.size, 0] += call
    events, _ = detect(audio)
    onsets_ms = [e.onset_s * 1000 for e in starts(events)]
    assert any(abs(t - 850) <= 15 for t in onsets_ms), onsets_ms


@pytest.mark.parametrize("seed", range(1, 5))
def test_a_call_rising_out_of_a_knocks_ring_has_its_own_onset(seed: int) -> None:
    """A loud knock 200 ms before a call in a reverberant room: its ring is still well over
    the background when the call starts, so the utterance runs on from the knock into the
    call. The call rising out of the ring has its own onset, not the knock's."""
    from scipy.signal import fftconvolve

    from scripts.scenes import clatter_hit

    rng = np.random.default_rng(seed)
    audio = 0.003 * rng.standard_normal(2 * PIPELINE_RATE_HZ)
    t = np.arange(int(0.6 * PIPELINE_RATE_HZ)) / PIPELINE_RATE_HZ
    room = 0.02 * rng.standard_normal(t.size) * 10 ** (-3 * t / 0.6)  # RT60 0.6 s
    room[0] = 1.0
    knock = fftconvolve(clatter_hit(rng), room)[:PIPELINE_RATE_HZ]
    audio[9600 : 9600 + knock.size] += 0.3 * knock / np.abs(knock).max()
    call = spoken("got it")
    audio[12800 : 12800 + call.size] += call
    events, _ = detect(audio.astype(np.float32)[:, None])
    onsets_ms = [e.onset_s * 1000 for e in starts(events)]
    assert any(abs(t - 800) <= 10 for t in onsets_ms), onsets_ms


@pytest.mark.parametrize("seed", range(1, 5))
def test_a_call_after_clatter_that_kept_an_utterance_going_has_its_own_onset(seed: int) -> None:
    """Five knocks 100 ms apart in a reverberant room, then a call: each knock rings on into
    the next, and the last one's ring into the call, so one utterance runs from a knock into
    the call. Its first 300 ms held no speech-like sound: the call is an utterance of its
    own, with its own onset, and what came before it is a knock, no call."""
    from scipy.signal import fftconvolve

    from scripts.scenes import clatter_hit
    from voice.table.pipeline import Ears

    rng = np.random.default_rng(seed)
    scene = mix_scene([(0, spoken("got it"), 19200)], 1, bleed=None, noise_snr_db=None,
                      length=3 * PIPELINE_RATE_HZ)
    audio = scene.audio[:, 0] + 0.003 * rng.standard_normal(scene.audio.shape[0])
    t = np.arange(int(0.6 * PIPELINE_RATE_HZ)) / PIPELINE_RATE_HZ
    room = 0.02 * rng.standard_normal(t.size) * 10 ** (-3 * t / 0.6)  # RT60 0.6 s
    room[0] = 1.0
    for at in range(9600, 17600, 1600):
        knock = fftconvolve(clatter_hit(rng), room)[:PIPELINE_RATE_HZ]
        audio[at : at + knock.size] += 0.3 * knock / np.abs(knock).max()
    events, _ = detect(audio.astype(np.float32)[:, None])
    call = scene.truth[0].onset_sample
    heard = segments(events)
    assert [abs(s.onset_sample - call) <= 20 * MS for s in heard].count(True) == 1, heard
    assert all(Ears.is_knock(s) for s in heard if s.onset_sample < call - 20 * MS), heard


@pytest.mark.parametrize("text", ["stop", "sorbet", "strawberry shortcake", "fish tacos"])
def test_a_call_that_opens_on_a_hiss_is_not_taken_for_a_knock(text: str) -> None:
    """"s", "st", "f": no voice in them and a closure after, like a knock; the vowel behind
    keeps the utterance whole, with its onset at the hiss."""
    room = 1e-3 * np.random.default_rng(0).standard_normal((2 * PIPELINE_RATE_HZ, 1))
    for voice in ("en-us", "en-gb", "en-us+f3"):
        call = spoken(text, voice)
        audio = room.astype(np.float32)
        audio[8000 : 8000 + call.size, 0] += call[: audio.shape[0] - 8000]
        events, _ = detect(audio)
        assert [round(e.onset_s, 2) for e in starts(events)] == [0.5], (voice, starts(events))


@pytest.mark.parametrize("seed", range(4))
def test_a_second_caller_under_bleed_at_a_calibrated_table_has_their_own_onset(seed: int) -> None:
    """Bob calls "got it" 25 ms after Ann, whose voice reaches his mic 14-16 dB down; the table
    was calibrated (crosstalk -15 dB). Bob's first sounds rise only some 11-12 dB less than
    Ann's did on hers: a copy by the fixed rise test (-8 dB), but 3 dB more than a copy at
    this table, so his onset is his own, not the 5-14 ms later one where his rise has grown.
    Ann's copy on Bob's mic is still no onset."""
    ann = spoken("got it", voice="en-us", speed=170, pitch=50)
    bob = spoken("got it", voice="en-gb", speed=150, pitch=40)
    scene = mix_scene([(0, ann, 8000), (1, bob, 8000 + 25 * MS)], 2,
                      bleed=BleedSpec((1.0, 4.0), (-16.0, -14.0)), noise_snr_db=30.0, seed=seed)
    det = OnsetDetector(2, crosstalk_db=np.array([[0.0, -15.0], [-15.0, 0.0]]))
    events: list[Event] = []
    for i in range(0, scene.audio.shape[0], 320):
        events += det.feed(AudioFrame(scene.audio[i : i + 320], PIPELINE_RATE_HZ, 2, i,
                                      i / PIPELINE_RATE_HZ))
    events += det.flush()
    assert [s.mic for s in starts(events)] == [0, 1]
    assert all(abs(e) <= 3.0 for e in onset_errors_ms(scene, events))



def _own_hops(audio: np.ndarray, mic: int, span: tuple[int, int],
              talking: tuple[bool, ...] = (), matrix: np.ndarray | None = None) -> float:
    """Share of the hops in `span` (samples) in which `mic`'s sound is its own
    (:meth:`voice.hearing.coupling.Coupling.own`), with the `talking` players (none unless
    given) and the couplings `matrix` (else the uncalibrated start), the band floors learned
    from the first half second."""
    from voice.hearing.coupling import Coupling
    from voice.hearing.history import History

    config = OnsetConfig()
    hop, channels = config.hop_samples, audio.shape[1]
    coupling, band = Coupling(channels, config), History(channels)
    if matrix is not None:
        coupling.matrix = matrix.copy()
    band.append(audio)
    talk = np.array(talking or (False,) * channels)
    own = []
    for e in range(hop * 8, audio.shape[0] + 1, hop):
        mine, _, power = coupling.own(band, e, talk, [False] * channels)
        if e <= PIPELINE_RATE_HZ // 2:
            coupling.learn_floor(np.ones(channels, bool), power, 0.1)
        if span[0] <= e <= span[1]:
            own.append(bool(mine[mic]))
    return float(np.mean(own))


def test_what_every_mic_hears_alike_is_no_ones_own_a_call_over_it_is() -> None:
    """The next table's babble reaches every mic alike (±1 dB): when it swells 10 dB, no mic
    hears its own sound, though no player is talking whose crosstalk could explain it; a call
    10 dB over it on one mic, 10 dB down on the others, is that mic's own sound."""
    rng = np.random.default_rng(3)
    n = 2 * PIPELINE_RATE_HZ
    swell = np.where(np.arange(n) >= PIPELINE_RATE_HZ * 3 // 4, 10 ** (10 / 20), 1.0)
    source = 0.01 * rng.standard_normal(n) * swell
    gains = 10 ** (rng.uniform(-1, 1, 4) / 20)
    audio = source[:, None] * gains + 0.001 * rng.standard_normal((n, 4))
    assert _own_hops(audio, 2, (PIPELINE_RATE_HZ, n)) <= 0.05
    call = 10 ** (10 / 20) * 0.1 * rng.standard_normal(n) * (np.arange(n) >= 3 * n // 4)
    audio[:, 0] += call
    audio[:, 1:] += 10 ** (-10 / 20) * call[:, None]
    assert _own_hops(audio, 0, (3 * n // 4 + 400, n)) >= 0.95


def test_a_second_caller_under_the_first_ones_bleed_is_not_heard_alike() -> None:
    """The first caller's bleed reaches every mic (here louder on the idle mics, −6 dB, than
    on the second caller's, −12 dB); the second caller, 7 dB over it on their own mic, is
    their mic's own sound, though every other mic's level rose with theirs."""
    rng = np.random.default_rng(5)
    n = 2 * PIPELINE_RATE_HZ
    db = np.array([[0, -12, -6, -6], [-10, 0, -10, -10], [-10, -10, 0, -10], [-10, -10, -10, 0]])
    first = 0.1 * rng.standard_normal(n) * (np.arange(n) >= n // 4)
    second = 10 ** ((7 - 12) / 20) * 0.1 * rng.standard_normal(n) * (np.arange(n) >= n // 2)
    gains = 10 ** (db / 20)
    audio = first[:, None] * gains[0] + second[:, None] * gains[1]
    audio += 0.001 * rng.standard_normal((n, 4))
    talking = (True, False, False, False)
    assert _own_hops(audio, 1, (n // 2 + 400, n), talking, 10 ** (db / 10)) >= 0.95


def test_a_call_10db_over_babble_is_its_players_own() -> None:
    """The bench's scene commands-tune-021 (seed 0): "stop" 10 dB over the next tables'
    babble is an utterance of its mic, with its onset, and carries 80 ms or more of its own
    sound: its vowels, flattened by the filter that whitens the babble (speech too), count
    by their plain band power over the band floor."""
    from scripts.scenes import make_scene, scene_set

    spec = next(s for s in scene_set("full", 0) if s.name == "commands-tune-021")
    scene = make_scene(spec.kind, spec.condition, spec.seed)
    (call,) = [u for u in scene.truth["utterances"] if u["role"] == "call"]
    events, _ = detect(scene.audio)
    heard = [s for s in segments(events) if s.mic == call["mic"]
             and abs(s.onset_sample - call["onset_sample"]) <= 30 * MS]
    assert [s.not_own for s in heard] == [False]
