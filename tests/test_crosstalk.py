"""Crosstalk suppression: another player's voice taken out of a call, the call itself kept."""

from __future__ import annotations

import numpy as np
import pytest

from scripts.scenes import ESPEAK, BleedSpec, mix_scene, spoken
from voice.audio.frames import PIPELINE_RATE_HZ, AudioFrame
from voice.hearing.crosstalk import suppress
from voice.hearing.onsets import OnsetConfig, OnsetDetector, SpeechEnd
from voice.recognition.grammar import game_grammar
from voice.recognition.interface import create_recognizer

pytestmark = pytest.mark.skipif(ESPEAK is None, reason="espeak-ng is not installed")

MS = PIPELINE_RATE_HZ // 1000
CONFIG = OnsetConfig()
SETTINGS = {"oversubtract": CONFIG.crosstalk_oversubtract, "floor_db": CONFIG.crosstalk_floor_db,
            "decay_db_per_s": CONFIG.crosstalk_decay_db_per_s}


def power_db(x: np.ndarray) -> float:
    return float(10 * np.log10(np.mean(np.square(x, dtype=np.float64)) + 1e-12))


def two_voices(gap_ms: int, coupling_db: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A's "got it" and, `gap_ms` later, B's "what a mess"; both padded to the same length.
    Returns A alone, B alone (as their own mics hear them) and a delayed copy of B as A's mic
    hears it, `coupling_db` down."""
    a = spoken("got it", voice="en-us", speed=170, amplitude=0.6)
    b = spoken("what a mess", voice="en-gb", speed=180, amplitude=0.6)
    n = 4000 + gap_ms * MS + b.size + 4000
    mine, theirs = np.zeros(n), np.zeros(n)
    mine[2000 : 2000 + a.size] = a
    theirs[2000 + gap_ms * MS : 2000 + gap_ms * MS + b.size] = b
    leaked = np.roll(theirs, 3 * MS) * 10 ** (coupling_db / 20)
    return mine, theirs, leaked


def test_nobody_else_talking_leaves_the_call_bit_for_bit() -> None:
    mine, theirs, leaked = two_voices(100, -6.0)
    own = (mine + leaked).astype(np.float32)
    out = suppress(own, theirs[:, None], np.array([0.25]), np.zeros((own.size, 1), bool),
                   **SETTINGS)
    np.testing.assert_array_equal(out, own)


def test_the_other_voice_is_turned_down_and_the_call_kept() -> None:
    """B's voice leaks into A's mic 6 dB down, over the end of A's call: after suppression
    what is left of it is at least 8 dB lower, and A's call is changed far less than that."""
    mine, theirs, leaked = two_voices(150, -6.0)
    own = mine + leaked
    talking = (np.abs(theirs) > 0)[:, None]
    talking[:] = np.maximum.accumulate(talking) & np.maximum.accumulate(talking[::-1])[::-1]
    out = suppress(own.astype(np.float32), (theirs + 0.25 * np.roll(mine, 3 * MS))[:, None],
                   np.array([0.25]), talking, **SETTINGS)
    only_b = slice(np.flatnonzero(np.abs(mine) > 0)[-1] + 40 * MS, own.size)
    assert power_db(out[only_b]) <= power_db(leaked[only_b]) - 8.0
    only_a = slice(0, 2000 + 150 * MS - 40 * MS)
    assert power_db(out[only_a] - mine[only_a]) <= power_db(mine[only_a]) - 30.0


def test_a_neighbours_mic_that_only_heard_this_call_takes_nothing_out() -> None:
    """Taken for speech, a neighbour's mic that only picked up this call (quieter than here
    in every band) is no other voice: the call comes back all but unchanged."""
    mine, _, _ = two_voices(100, -6.0)
    own = mine.astype(np.float32)
    copy = 0.5 * np.roll(mine, 3 * MS)
    out = suppress(own, copy[:, None], np.array([0.5]), np.ones((own.size, 1), bool), **SETTINGS)
    assert power_db(out - own) <= power_db(own) - 30.0


CLOSE_NEIGHBOUR = pytest.mark.xfail(
    strict=True, reason="known: A's words are heard, but refused: with B's voice 2-4 dB under "
    "A's on A's mic, turned down by at most 10 dB, they fit 3.1-3.5 nats a frame worse than the "
    "phones do (3.7-4.0 with no turning down), over the 3.0 chosen on tune voices")


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=CLOSE_NEIGHBOUR), 2])
def test_a_call_with_a_close_neighbour_talking_over_it_is_understood(seed: int) -> None:
    """A says "got it"; 150 ms later B, sitting close, says "pass", which reaches A's mic only
    2-4 dB down. A's segment holds much of B's voice; with it turned down the recogniser
    should hear A's call."""
    a = spoken("got it", voice="en", speed=180, pitch=50, amplitude=0.7)
    b = spoken("pass", voice="en-gb-scotland", speed=170, pitch=50, amplitude=0.7)
    scene = mix_scene([(0, a, 8000), (1, b, 8000 + 150 * MS)], 3,
                      bleed=BleedSpec((1.0, 4.0), (-4.0, -2.0)), noise_snr_db=35, seed=seed)
    detector = OnsetDetector(3)
    events = []
    for i in range(0, scene.audio.shape[0], 320):
        chunk = scene.audio[i : i + 320]
        events += detector.feed(AudioFrame(chunk, PIPELINE_RATE_HZ, 3, i, i / PIPELINE_RATE_HZ))
    calls = [e.segment for e in events + detector.flush() if isinstance(e, SpeechEnd)]
    mine = next(s for s in calls if s.mic == 0)
    hyp = create_recognizer("sphinx").decode(mine.samples, game_grammar("desserts", ["Ann", "Bob", "Cat"]))
    assert (hyp.text, hyp.understood) == ("got it", True)
