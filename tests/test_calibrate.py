"""Calibration on recorded names: mapping mics to players, levels and warnings."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from scripts.scenes import spoken
from voice.audio.files import write_wav
from voice.audio.frames import PIPELINE_RATE_HZ
from voice.audio.live import MicInput
from voice.table.setup import SetupError, TableSetup, calibrate, parse_mics, table_inputs

RATE = PIPELINE_RATE_HZ
PLAYERS = ["Maya", "Leo", "Priya"]


def names_recording(
    gains_db: np.ndarray, seed: int = 1, noise: float | np.ndarray = 0.002
) -> np.ndarray:
    """1.5 s of room noise (``noise``: its RMS, or each channel's), then each player's name
    (3 s turns); gains_db[player, channel]."""
    rng = np.random.default_rng(seed)
    turn = 3 * RATE
    audio = noise * rng.standard_normal((int(1.5 * RATE) + turn * len(PLAYERS), gains_db.shape[1]))
    for i, (name, voice) in enumerate(zip(PLAYERS, ("en-us", "en-gb", "en-029"), strict=True)):
        speech = spoken(name, voice=voice, amplitude=0.4)
        start = int(1.5 * RATE) + i * turn + RATE // 4
        for ch in range(gains_db.shape[1]):
            audio[start : start + len(speech), ch] += 10 ** (gains_db[i, ch] / 20) * speech
    return audio.astype(np.float32)


def test_maps_each_player_to_the_mic_that_hears_them_loudest() -> None:
    gains = np.full((3, 4), -18.0)
    gains[0, 2] = gains[1, 0] = gains[2, 3] = 0.0  # Maya on ch 2, Leo on ch 0, Priya on ch 3
    result = calibrate(names_recording(gains), PLAYERS)
    assert result.channels == (2, 0, 3)
    assert result.warnings == ()
    # each player is heard 18 dB lower on the others' mics than on their own
    np.testing.assert_allclose(result.crosstalk_db, np.where(np.eye(3), 0.0, -18.0), atol=0.5)
    assert all(level - result.noise_floor_db[ch] > 30 for ch, level in
               zip(result.channels, result.level_db, strict=True))


def test_a_knock_of_cutlery_during_a_turn_is_not_the_player() -> None:
    """Plates knocked beside Priya's mic in Leo's turn are louder there than Leo is on his own
    mic, and Priya's mic hears Leo 10 dB down: Leo is still Leo's mic, and the crosstalk is
    what Priya's mic hears of Leo, not the knocks."""
    from scripts.scenes import clatter_hit

    gains = np.full((3, 3), -10.0)
    np.fill_diagonal(gains, 0.0)
    audio = names_recording(gains)
    hit = clatter_hit(np.random.default_rng(3))
    for at in (1.0, 2.2):  # after the name (said from 0.25 s)
        start = int((1.5 + 3 + at) * RATE)
        audio[start : start + hit.size, 2] += (1.0 / np.abs(hit).max()) * hit
    old_peak = 20 * np.log10(np.abs(audio[int(4.5 * RATE) : int(7.5 * RATE)]).max(axis=0))
    assert old_peak[2] > old_peak[1] + 6  # the knock is the loudest thing in Leo's turn
    result = calibrate(audio, PLAYERS)
    assert result.channels == (0, 1, 2)
    np.testing.assert_allclose(result.crosstalk_db, np.where(np.eye(3), 0.0, -10.0), atol=1.0)


def test_warns_when_a_mic_hears_another_player_louder() -> None:
    gains = np.full((3, 3), -18.0)
    np.fill_diagonal(gains, 0.0)
    gains[2, 1] = 2.0  # Leo's mic hears Priya louder than Leo
    gains[2, 2] = 6.0
    result = calibrate(names_recording(gains), PLAYERS)
    assert result.channels == (0, 1, 2)
    assert result.warnings == ("Leo's mic (channel 1) hears Priya louder than Leo: move it closer to Leo",)


def test_a_player_nobody_hears_is_an_error() -> None:
    gains = np.full((3, 3), -18.0)
    np.fill_diagonal(gains, 0.0)
    gains[1, :] = -90.0
    with pytest.raises(SetupError, match="no microphone heard Leo"):
        calibrate(names_recording(gains), PLAYERS)


def test_too_short_a_recording_is_an_error() -> None:
    with pytest.raises(SetupError, match="10.5 s are needed"):
        calibrate(np.zeros((RATE, 3), np.float32), PLAYERS)


def test_mic_specs() -> None:
    assert parse_mics(None, 2) == [MicInput(None, 0), MicInput(None, 1)]
    assert parse_mics("Scarlett 4i4", 2) == [MicInput("Scarlett 4i4", 0), MicInput("Scarlett 4i4", 1)]
    assert parse_mics("3:0, 4:0", 2) == [MicInput(3, 0), MicInput(4, 0)]
    with pytest.raises(SetupError, match="2 microphones for 3 players"):
        parse_mics("3:0,4:0", 3)
    with pytest.raises(SetupError, match="expected DEVICE:CHANNEL"):
        parse_mics("3:x,4:0", 2)


def test_calibrate_command_saves_the_setup(tmp_path: Path) -> None:
    gains = np.full((3, 3), -20.0)
    gains[0, 1] = gains[1, 2] = gains[2, 0] = 0.0
    noise = np.array([0.002, 0.0025, 0.001])  # a floor per channel
    wav = tmp_path / "names.wav"
    write_wav(wav, names_recording(gains, noise=noise), RATE)
    out = tmp_path / "table.json"
    run = subprocess.run(
        [sys.executable, "-m", "voice.cli", "calibrate", "--players", ",".join(PLAYERS),
         "--from-wav", str(wav), "--out", str(out)],
        capture_output=True, text=True, check=False,
    )
    assert run.returncode == 0, run.stderr
    assert "saved the set-up" in run.stdout
    setup = TableSetup.load(out)
    assert setup.players == tuple(PLAYERS)
    assert setup.mics == (MicInput(None, 1), MicInput(None, 2), MicInput(None, 0))
    floors = calibrate(names_recording(gains, noise=noise), PLAYERS).noise_floor_db  # per channel
    assert setup.noise_floor_db == (floors[1], floors[2], floors[0])  # per player
    np.testing.assert_allclose(setup.crosstalk_db, np.where(np.eye(3), 0.0, -20.0), atol=0.5)
    assert table_inputs(setup, PLAYERS, None) == (list(setup.mics), setup)
    assert table_inputs(setup, ["Ann", "Bob"], "0,1") == (parse_mics("0,1", 2), None)


def test_each_prompt_is_said_before_it_is_shown_and_a_player_not_heard_is_asked_again(
        tmp_path: Path) -> None:
    from voice.audio.files import WavSource
    from voice.table.narration import Announcer
    from voice.table.setup import listen_to_turns

    gains = np.full((3, 3), -18.0)
    np.fill_diagonal(gains, 0.0)
    heard = names_recording(gains)
    turn = 3 * RATE
    silent_turn = 0.002 * np.random.default_rng(5).standard_normal((turn, 3)).astype(np.float32)
    # Maya says nothing in her first turn: the names come one turn late from her on
    audio = np.concatenate([heard[: int(1.5 * RATE)], silent_turn, heard[int(1.5 * RATE):],
                            silent_turn[:RATE]])  # and room for the prompts said meanwhile
    write_wav(tmp_path / "live.wav", audio, RATE, subtype="FLOAT")
    events: list[str] = []
    announcer = Announcer(None, None, echo=lambda line: events.append(f"said: {line}"))
    levels: list[float] = []
    frames = (f.samples for f in WavSource(tmp_path / "live.wav", realtime=True))
    recorded = listen_to_turns(PLAYERS, frames, announcer.say,
                               lambda line: events.append(f"shown: {line}"), meter=levels.append)
    announcer.close()
    maya = ["Maya, say your name now.", "Maya, I did not hear you: say your name again, now."]
    lines = ["Quiet please: listening to the room.", *maya, "Leo, say your name now.",
             "Priya, say your name now."]
    assert events == [f"{how}: {line}" for line in lines for how in ("said", "shown")]
    assert calibrate(recorded, PLAYERS).channels == (0, 1, 2)
    assert max(levels) > -30 > min(levels)  # the level shown live rises with each name
