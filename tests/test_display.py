"""The live table's screen and its driver, on recorded frames (no microphone here)."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path
from typing import Any

import numpy as np
import pyte
import pytest
from rich.console import Console

from scripts.scenes import mix_scene, spoken
from voice.audio.files import WavSource, write_wav
from voice.audio.frames import PIPELINE_RATE_HZ
from voice.cli.play import Keys, drive, narrate
from voice.recognition.interface import Hypothesis, create_recognizer
from voice.table.journal import Journal, Setup
from voice.table.loop import TableLoop
from voice.table.narration import Announcer
from voice.table.options import DessertsOptions, Options
from voice.table.pipeline import Heard
from voice.table.referee import Referee
from voice.table.screen import TableView, render

RATE = PIPELINE_RATE_HZ


def test_the_screen_shows_scores_meters_and_calls() -> None:
    view = TableView("desserts", ("Ann", "Bob"))
    view.meter(np.full((320, 2), [0.1, 0.001], np.float32))
    silence = np.zeros(RATE, np.float32)
    view.take([Heard(0, "Ann", 1.0, 1.4, Hypothesis("got it", True, 0.97), RATE, 2 * RATE,
                     silence, 1.7, 80.0),
               Heard(1, "Bob", 1.1, 1.5, Hypothesis("pass me the salt", False, 0.0), RATE,
                     2 * RATE, silence, 1.8, 90.0)])
    view.summary = {"players": {"Ann": {"guests": 1, "hand": 5}, "Bob": {"guests": 0, "hand": 6}}}
    console = Console(file=io.StringIO(), width=100, color_system=None)
    console.print(render(view))
    screen = console.file.getvalue()  # type: ignore[attr-defined]
    assert "got it" in screen and "not understood" in screen
    assert "guests" in screen and "-20 dB" in screen and "-60 dB" in screen
    assert "[u] undo" in screen


def test_drive_referees_recorded_frames_and_narrates(tmp_path: Path) -> None:
    calls = [(0, spoken("got it", voice="en-us", amplitude=0.6), int(1.5 * RATE)),
             (0, spoken("rocky road", voice="en-us", amplitude=0.6), int(3.0 * RATE))]
    scene = mix_scene(calls, 2, noise_snr_db=35.0, seed=2, length=int(4.5 * RATE))
    wav = tmp_path / "game.wav"
    write_wav(wav, scene.audio, RATE)
    setup = Setup("desserts", ("Ann", "Bob"), {"guests": ("Rocky",)}, Options(DessertsOptions()), 1)
    game, state = setup.new_state()
    loop = TableLoop(Referee(game, state, Journal(str(tmp_path / "j.jsonl"), setup)),
                     create_recognizer("sphinx"), ("Ann", "Bob"))
    said: list[str] = []
    announcer = Announcer(None, None, echo=said.append)
    narrate(announcer, state.opening)
    with Keys() as keys:
        drive(loop, WavSource(wav), announcer, keys, [], [], "desserts")
    announcer.close()
    assert said[0].startswith("Dealing 5 desserts")
    assert any("Ann first." in line for line in said)
    assert any("Ann takes Rocky." in line for line in said)
    assert loop.referee.state.summary()["players"]["Ann"]["guests"] == 1


def in_terminal(argv: list[str], columns: int, rows: int) -> tuple[int, Any, bytes]:
    """Run ``argv`` in a pseudo-terminal of ``columns`` × ``rows``: its exit status, the screen
    it leaves (a pyte HistoryScreen: what scrolled off is its history) and all it wrote."""
    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(columns), "LINES": str(rows)}
    proc = subprocess.Popen(argv, stdin=child, stdout=child, stderr=child, env=env, close_fds=True)
    os.close(child)
    screen = pyte.HistoryScreen(columns, rows, history=1000)
    stream = pyte.ByteStream(screen)
    written = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the child has closed the terminal
            break
        if not chunk:
            break
        written += chunk
        stream.feed(chunk)
    code = proc.wait(timeout=60)
    os.close(main)
    return code, screen, written


DRIVEN = """
import sys
from pathlib import Path
from voice.audio.files import WavSource
from voice.cli.play import Keys, drive, narrate
from voice.recognition.interface import create_recognizer
from voice.table.journal import Journal, Setup
from voice.table.loop import TableLoop
from voice.table.narration import Announcer
from voice.table.options import DessertsOptions, Options
from voice.table.referee import Referee

folder = Path(sys.argv[1])
players = tuple(sys.argv[2].split(","))
setup = Setup("desserts", players, {"guests": ("Rocky",)}, Options(DessertsOptions()), 1)
game, state = setup.new_state()
loop = TableLoop(Referee(game, state, Journal(str(folder / "j.jsonl"), setup)),
                 create_recognizer("sphinx"), players)
narration = []
announcer = Announcer(None, None, echo=narration.append)
narrate(announcer, state.opening)
with Keys() as keys:
    drive(loop, WavSource(folder / "game.wav", realtime=True), announcer, keys, [], narration,
          "desserts")
announcer.close()
"""


@pytest.mark.slow
@pytest.mark.parametrize("columns, rows", [(80, 24), (110, 40)])
def test_the_live_screen_fits_its_terminal_and_says_each_line_once(
        tmp_path: Path, columns: int, rows: int) -> None:
    players = ("Ann", "Bob", "Cat", "Dan", "Eve", "Fay", "Gus", "Hal")  # the tallest table
    calls = [(0, spoken("got it", voice="en-us", amplitude=0.6), int(1.5 * RATE)),
             (0, spoken("rocky road", voice="en-us", amplitude=0.6), int(3.0 * RATE))]
    scene = mix_scene(calls, len(players), noise_snr_db=35.0, seed=2, length=int(4.5 * RATE))
    write_wav(tmp_path / "game.wav", scene.audio, RATE)
    code, screen, _ = in_terminal([sys.executable, "-c", DRIVEN, str(tmp_path), ",".join(players)],
                                  columns, rows)
    assert code == 0
    shown = [line.rstrip() for line in screen.display]
    scrolled = ["".join(c.data for c in row.values()).rstrip() for row in screen.history.top]
    assert not [line for line in scrolled if "╭" in line], scrolled  # no border piled up above
    text = "\n".join(shown)
    assert text.count("Ann first.") == 1 and text.count("Ann takes Rocky.") == 1, text
    assert "scores and microphones" in text and "[q] quit" in text


@pytest.mark.slow
def test_a_replay_in_a_terminal_shows_how_far_it_has_got(tmp_path: Path) -> None:
    wav = tmp_path / "short.wav"
    write_wav(wav, 0.002 * np.random.default_rng(0).standard_normal((3 * RATE, 2)), RATE)
    argv = [sys.executable, "-m", "voice.cli", "replay", str(wav), "--game", "desserts",
            "--players", "Ann,Bob", "--realtime"]
    code, screen, written = in_terminal(argv, 80, 24)
    assert code == 0
    assert b"Loading the whisper recogniser" in written
    assert b"0:01 / 0:03 of the recording" in written  # the bar, as the recording goes on
    left = "\n".join(screen.display)
    assert "Dealing 5 desserts" in left and "Final scores" in left
    assert "of the recording" not in left and "Loading" not in left  # and gone once done
    code, _, written = in_terminal([*argv, "--json"], 80, 24)
    assert code == 0 and b"of the recording" not in written and b"Loading" not in written


@pytest.mark.slow
def test_a_live_game_in_a_terminal_says_while_its_recogniser_loads(tmp_path: Path) -> None:
    """Whisper takes seconds to load on a slow laptop: a spinner says so meanwhile, gone once
    it has loaded (here the game then stops: this machine has no microphone to open)."""
    argv = [sys.executable, "-m", "voice.cli", "play", "desserts", "--players", "Ann,Bob",
            "--no-speech", "--journal", str(tmp_path / "game.jsonl")]
    code, screen, written = in_terminal(argv, 100, 24)
    assert code == 2
    assert b"Loading the whisper recogniser" in written
    left = "\n".join(screen.display)
    assert "Loading the" not in left and "orderup play: cannot open" in left, left

