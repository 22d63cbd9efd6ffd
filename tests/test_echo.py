"""Echo cancellation: the app's voice is removed from every mic, a player's is not (DESIGN 6)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.signal import butter, fftconvolve, sosfilt

from scripts.scenes import ESPEAK, mix_scene, spoken
from voice.audio.files import read_wav
from voice.audio.frames import PIPELINE_RATE_HZ, AudioFrame, AudioStreamError
from voice.hearing.echo import Cancelled, EchoCanceller, EchoConfig
from voice.hearing.onsets import OnsetDetector, SpeechEnd, SpeechStart

MS = PIPELINE_RATE_HZ // 1000


def loudspeaker_paths(n_mics: int, rt60_s: float, seed: int) -> np.ndarray:
    """(n_mics, taps) impulse responses from a laptop speaker 0.5-2 m away: a direct sound,
    then an exponentially decaying diffuse tail (-60 dB at `rt60_s`), about as strong."""
    rng = np.random.default_rng(seed)
    taps = int(0.6 * PIPELINE_RATE_HZ)
    t = np.arange(taps) / PIPELINE_RATE_HZ
    out = np.zeros((n_mics, taps))
    for m in range(n_mics):
        distance_m = rng.uniform(0.5, 2.0)
        delay = int(distance_m / 343 * PIPELINE_RATE_HZ)
        out[m, delay] = 0.5 / distance_m
        tail = rng.standard_normal(taps) * 10 ** (-3 * t / rt60_s) * (t > delay / 16000 + 0.002)
        out[m] += tail * 0.5 / distance_m * 0.04
    return out


def play(reference: np.ndarray, paths: np.ndarray, length: int) -> np.ndarray:
    """What the mics hear of `reference` through a bass-less speaker and `paths`: (length, mics)."""
    sos = butter(2, 300.0, "highpass", fs=PIPELINE_RATE_HZ, output="sos")
    speaker = sosfilt(sos, reference)
    return np.stack([fftconvolve(speaker, p)[:length] for p in paths], axis=1)


def cancel(mics: np.ndarray, reference: np.ndarray, block: int = 320) -> tuple[np.ndarray, list]:  # type: ignore[type-arg]
    """Stream through a canceller in `block`-sample frames; the output and the pieces."""
    ec = EchoCanceller(mics.shape[1])
    pieces: list[Cancelled] = []
    for i in range(0, mics.shape[0], block):
        frame = AudioFrame(mics[i : i + block].astype(np.float32), PIPELINE_RATE_HZ,
                           mics.shape[1], i, i / PIPELINE_RATE_HZ)
        pieces.append(ec.process(frame, reference[i : i + block]))
    pieces.append(ec.flush())
    return np.concatenate([p.frame.samples for p in pieces]), pieces


def erle_db(mics: np.ndarray, out: np.ndarray) -> np.ndarray:
    return 10 * np.log10(np.sum(mics**2, axis=0) / np.sum(out**2, axis=0))


def test_noise_reference_is_cancelled_and_the_stream_stays_aligned() -> None:
    rng = np.random.default_rng(0)
    n = 4 * PIPELINE_RATE_HZ
    reference = (0.1 * rng.standard_normal(n)).astype(np.float32)
    mics = play(reference, loudspeaker_paths(3, 0.3, 1), n)
    out, pieces = cancel(mics, reference, block=333)
    assert out.shape == mics.shape
    assert [p.frame.start_sample for p in pieces if p.frame.n_samples] == sorted(
        {p.frame.start_sample for p in pieces if p.frame.n_samples}
    )
    last_second = slice(3 * PIPELINE_RATE_HZ, n)
    assert np.all(erle_db(mics[last_second], out[last_second]) > 20.0)


@pytest.mark.skipif(ESPEAK is None, reason="espeak-ng is not installed")
def test_speech_echo_is_cancelled_but_a_player_talking_over_it_is_not() -> None:
    """The app talks for 4 s; a player says "got it" over it at 2.5 s, 6 dB above the echo."""
    n = 5 * PIPELINE_RATE_HZ
    app = spoken("next guest Rocky craves chocolate and frozen; favorite rocky road",
                voice="en-us", amplitude=0.5)
    reference = np.zeros(n, np.float32)
    reference[8000 : 8000 + app.size] = app[: n - 8000]
    echo = play(reference, loudspeaker_paths(2, 0.5, 2), n)
    player = np.zeros((n, 2))
    call = spoken("got it", voice="en-gb", amplitude=1.0)
    at = int(2.5 * PIPELINE_RATE_HZ)
    player[at : at + call.size, 0] = call
    talk = slice(at, at + call.size)
    player[:, 0] *= np.sqrt(4 * np.mean(echo[talk, 0] ** 2) / np.mean(player[talk, 0] ** 2))
    out, _ = cancel(echo + player, reference)
    alone, _ = cancel(echo, reference)
    # the player comes through whole: the canceller did not learn to remove them
    assert abs(erle_db(player[talk, :1], out[talk, :1])[0]) < 1.5
    # the double talk did not wreck what the filter had learned of the room
    after = slice(at + call.size, 8000 + app.size)
    assert np.all(erle_db(echo[after], out[after]) > erle_db(echo[after], alone[after]) - 2.0)
    assert np.all(erle_db(echo[after], out[after]) > 10.0)


@pytest.mark.slow
@pytest.mark.skipif(ESPEAK is None, reason="espeak-ng is not installed")
def test_the_app_saying_stop_is_not_heard_but_the_player_saying_got_it_is() -> None:
    """A reverberant room (RT60 0.5 s), 3 mics, babble-free: the app narrates, then says
    "stop!" while player 1 says "got it". Only the player's utterance is reported."""
    line = spoken("next guest Rocky craves chocolate and frozen; favorite rocky road",
                 voice="en-us", amplitude=0.5)
    stop = spoken("stop", voice="en-us", amplitude=0.5)
    got_it = spoken("got it", voice="en-gb-scotland", amplitude=0.5)
    stop_at = 8000 + line.size + 8000
    call_at = stop_at + 60 * MS
    scene = mix_scene([(1, got_it, call_at)], 3, noise_snr_db=40, seed=4,
                      length=stop_at + 2 * PIPELINE_RATE_HZ)
    n = scene.audio.shape[0]
    reference = np.zeros(n, np.float32)
    reference[8000 : 8000 + line.size] = line
    reference[stop_at : stop_at + stop.size] = stop
    echo = play(reference, loudspeaker_paths(3, 0.5, 3), n)
    mics = (scene.audio + 0.5 * echo).astype(np.float32)
    assert np.mean(echo[stop_at : stop_at + stop.size] ** 2) > 0.1 * np.mean(got_it**2)

    ec, det = EchoCanceller(3), OnsetDetector(3)
    heard: list[tuple[int, int]] = []
    started: list[int] = []
    for i in range(0, n + 320, 320):
        if i < n:
            frame = AudioFrame(mics[i : i + 320], PIPELINE_RATE_HZ, 3, i, i / PIPELINE_RATE_HZ)
            done = ec.process(frame, reference[i : i + 320])
        else:
            done = ec.flush()
        events = det.feed(done.frame, done.residual) + (det.flush() if i >= n else [])
        started += [e.onset_sample for e in events if isinstance(e, SpeechStart)]
        for e in events:
            if isinstance(e, SpeechEnd):
                seg = e.segment
                if ec.echo_share(seg.mic, seg.onset_sample, seg.end_sample) <= 0.5:
                    heard.append((seg.mic, seg.onset_sample))
    assert [mic for mic, _ in heard] == [1]
    assert abs(heard[0][1] - scene.truth[0].onset_sample) <= 10 * MS


def test_contract_errors() -> None:
    ec = EchoCanceller(2)
    with pytest.raises(AudioStreamError, match="expects 16000 Hz x2"):
        ec.process(AudioFrame(np.zeros((10, 3), np.float32), PIPELINE_RATE_HZ, 3, 0, 0.0),
                   np.zeros(10))
    with pytest.raises(AudioStreamError, match="reference has 5 samples"):
        ec.process(AudioFrame(np.zeros((10, 2), np.float32), PIPELINE_RATE_HZ, 2, 0, 0.0),
                   np.zeros(5))
    with pytest.raises(AudioStreamError, match="gap"):
        ec.process(AudioFrame(np.zeros((10, 2), np.float32), PIPELINE_RATE_HZ, 2, 10, 0.0),
                   np.zeros(10))
    with pytest.raises(ValueError, match="power of two"):
        EchoConfig(block_samples=100)
    with pytest.raises(ValueError, match="channels"):
        EchoCanceller(0)


def players_heard(mics: np.ndarray, reference: np.ndarray) -> list[tuple[int, int]]:
    """(mic, onset) of the utterances heard as players' calls: echo cancelled, onsets
    detected, neither another's voice nor mostly the app's echo (as the table loop drops)."""
    n = mics.shape[0]
    ec, det = EchoCanceller(mics.shape[1]), OnsetDetector(mics.shape[1])
    heard: list[tuple[int, int]] = []
    for i in range(0, n + 320, 320):
        if i < n:
            frame = AudioFrame(mics[i : i + 320], PIPELINE_RATE_HZ, mics.shape[1], i,
                               i / PIPELINE_RATE_HZ)
            done = ec.process(frame, reference[i : i + 320])
        else:
            done = ec.flush()
        for e in det.feed(done.frame, done.residual) + (det.flush() if i >= n else []):
            if isinstance(e, SpeechEnd) and not e.segment.not_own and ec.echo_share(
                    e.segment.mic, e.segment.onset_sample, e.segment.end_sample) <= 0.5:
                heard.append((e.segment.mic, e.segment.onset_sample))
    return heard


@pytest.mark.slow
@pytest.mark.skipif(ESPEAK is None, reason="espeak-ng is not installed")
def test_a_player_calling_over_the_app_at_a_noisy_table_is_heard() -> None:
    """The app has talked for a while at a table with background noise, which the canceller
    must not take for echo it misses (the app's path would never count as learned, and all a
    mic hears while the app talks would be the app's); a player calls "got it" over its second
    line, 15 dB above the app's echo on their mic, the noise as loud as the echo: heard (its
    onset within 50 ms: its first sound is under the app's and the noise)."""
    first = spoken("next guest Rocky craves chocolate and frozen; favorite rocky road",
                  voice="en-us", amplitude=0.5)
    second = spoken("next guest Lemon Lucy craves fruit and cake; favorite lemon tart",
                   voice="en-us", amplitude=0.5)
    got_it = spoken("got it", voice="en-gb-scotland", amplitude=0.5)
    second_at = PIPELINE_RATE_HZ + first.size + 8000
    call_at = second_at + second.size // 2
    n = second_at + second.size + PIPELINE_RATE_HZ
    reference = np.zeros(n, np.float32)
    reference[PIPELINE_RATE_HZ : PIPELINE_RATE_HZ + first.size] = first
    reference[second_at : second_at + second.size] = second
    echo = play(reference, loudspeaker_paths(3, 0.4, 5), n)
    scene = mix_scene([(1, got_it, call_at)], 3, noise_snr_db=None, seed=5, length=n)
    talk = slice(call_at, call_at + got_it.size)
    player = scene.audio * np.sqrt(10 ** 1.5 * np.mean(echo[talk, 1] ** 2) / np.mean(scene.audio[talk, 1] ** 2))
    noise = np.random.default_rng(5).standard_normal((n, 3)) * np.sqrt(np.mean(echo[talk] ** 2))
    mics = (player + echo + noise).astype(np.float32)

    heard = players_heard(mics, reference)
    assert [onset for mic, onset in heard if mic == 1 and 0 <= onset - call_at <= 50 * MS]


@pytest.mark.slow
@pytest.mark.skipif(ESPEAK is None, reason="espeak-ng is not installed")
@pytest.mark.parametrize("seed", [6, 7, 8])
def test_a_player_calling_as_the_app_starts_a_line_is_heard(seed: int) -> None:
    """The app has talked for a while and the canceller knows the room; a player calls
    "bell" the moment the app starts its next line, only 3 dB above the app's echo on their
    mic. Blocks where the player is no louder than the echo must not be taken for echo the
    canceller missed (the player would then be judged against the app's whole echo): heard,
    with its onset."""
    first = spoken("next guest Rocky craves chocolate and frozen; favorite rocky road",
                  voice="en-us", amplitude=0.5)
    second = spoken("Johnny: nobody ordered the steak", voice="en-us", amplitude=0.5)
    bell = spoken("bell", voice="en-gb-scotland", amplitude=0.5)
    second_at = PIPELINE_RATE_HZ + first.size + 8000
    n = second_at + second.size + PIPELINE_RATE_HZ
    reference = np.zeros(n, np.float32)
    reference[PIPELINE_RATE_HZ : PIPELINE_RATE_HZ + first.size] = first
    reference[second_at : second_at + second.size] = second
    echo = play(reference, loudspeaker_paths(3, 0.4, seed), n)
    scene = mix_scene([(0, bell, second_at)], 3, noise_snr_db=40, seed=seed, length=n)
    talk = slice(second_at, second_at + bell.size)
    player = scene.audio * np.sqrt(10 ** 0.3 * np.mean(echo[talk, 0] ** 2)
                                   / np.mean(scene.audio[talk, 0] ** 2))
    mics = (player + echo).astype(np.float32)

    heard = players_heard(mics, reference)
    truth = scene.truth[0].onset_sample
    assert [onset for mic, onset in heard if mic == 0 and abs(onset - truth) <= 20 * MS]



def test_a_speaker_the_mics_do_not_hear_puts_nothing_into_them() -> None:
    """A live take through a virtual audio server (tests/fixtures/live/): the app played into
    a sink its mics do not hear, like a speaker turned right down, while players called over
    it. The canceller must leave the mics as they are: a filter learned from a player's voice
    used to give the app's next line back into the mic, up to 22 dB louder than what the mic
    heard, and that was heard as the player's call. No quarter second comes out louder."""
    take = read_wav(str(Path(__file__).parent / "fixtures" / "live" / "take.flac"))
    mics, reference = take[:, :3], take[:, 3]
    out, _ = cancel(mics, reference)
    window = PIPELINE_RATE_HZ // 4
    n = mics.shape[0] // window * window
    heard, given = ((a[:n].reshape(-1, window, 3).astype(np.float64) ** 2).mean(axis=1)
                    for a in (mics, out))
    assert 10 * np.log10(given / heard).max() < 0.5
