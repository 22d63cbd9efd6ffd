"""``orderup play`` for real, through an audio server: PulseAudio with a null sink as the
speaker (the app narrates into it) and a three-channel null sink whose monitor is the table's
microphones, reached through ALSA's pulse plugin as a laptop's sound card is. The demo
table's calls are played into the mics while the game runs; the game is SIGKILLed mid-way,
resumed with ``--play``, and played on to the right scores.

The demo's recording holds the app's narration of the game it was made from, which this
game's app does not say at the same moments; it is cut out (where the demo's app was playing
or its room still ringing, the mics hear the room's quiet), so they hear the players only."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from referee_helpers import orderup_argv

from voice.table.journal import restore

pytestmark = pytest.mark.slow

DEMO = resources.files("voice").joinpath("data", "demo")
PLAYERS = "Maya,Leo,Priya"
KILL_AT_S = 18.0
"""Into the demo: Maya has taken Rocky (13.8 s); Leo has not called for Chocoholic Chuck yet."""
END_S = 40.0
"""Where the calls played stop: Leo has served Chocoholic Chuck (28.5 s), Priya has trumped him
with the favorite (36.9 s)."""
MAP = "front-left,front-right,aux0"
"""A three-channel map PulseAudio keeps apart (its default three-channel map mixes them)."""
APP_LOUD = 10 ** (-50 / 20)
RING_S = 0.35
"""How long the demo's room rings after its app's voice: cut with it."""
QUIET_S = (10.7, 11.1)
"""A stretch of the demo where neither the app nor a player makes a sound: the room's quiet."""


def pactl(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(["pactl", *args], env=env, check=True, capture_output=True,
                          text=True, timeout=30)
    return done.stdout


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A private PulseAudio server with the speaker and the table's mics: the environment
    that reaches it."""
    if shutil.which("pulseaudio") is None or shutil.which("paplay") is None:
        pytest.skip("PulseAudio is not installed (make test installs it: pulseaudio, "
                    "pulseaudio-utils, libasound2-plugins)")
    runtime = tmp_path_factory.mktemp("pulse")
    runtime.chmod(0o700)
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime), "PULSE_RUNTIME_PATH": str(runtime)}
    started = subprocess.run(
        ["pulseaudio", "--daemonize=yes", "--exit-idle-time=-1", "-n",
         "--load=module-native-protocol-unix", f"--log-target=file:{runtime / 'log'}"],
        env=env, capture_output=True, text=True, timeout=30, check=False)
    if started.returncode != 0:
        pytest.skip(f"the audio server cannot start here: {started.stderr.strip()}")
    try:
        pactl(env, "load-module", "module-null-sink", "sink_name=speaker", "rate=16000")
        pactl(env, "load-module", "module-null-sink", "sink_name=table", "channels=3",
              f"channel_map={MAP}", "rate=16000")
        pactl(env, "set-default-sink", "speaker")
        pactl(env, "set-default-source", "table.monitor")
        yield env
    finally:
        subprocess.run(["pulseaudio", "--kill"], env=env, capture_output=True, timeout=30,
                       check=False)


def players_only(start_s: float, end_s: float, path: Path) -> None:
    """The demo's mics from ``start_s`` to ``end_s``, with the room's quiet wherever its app
    was playing or had just played, written to ``path``."""
    mics, rate = sf.read(str(DEMO.joinpath("desserts.ogg")), dtype="float32")
    app, _ = sf.read(str(DEMO.joinpath("desserts.app.ogg")), dtype="float32")
    loud = np.concatenate([[0], np.cumsum(np.abs(app) > APP_LOUD)])
    at = np.arange(len(mics))
    playing = loud[np.minimum(at + 1, len(app))] > loud[np.maximum(at - int(RING_S * rate), 0)]
    quiet = mics[int(QUIET_S[0] * rate): int(QUIET_S[1] * rate)]
    mics[playing] = np.resize(quiet, (int(playing.sum()), mics.shape[1]))
    sf.write(path, mics[int(start_s * rate): int(end_s * rate)], rate)


SPAWNED: list[subprocess.Popen[str]] = []


@pytest.fixture(autouse=True)
def no_game_left_running() -> Iterator[None]:
    """A test that fails half-way leaves no orderup behind."""
    yield
    for game in SPAWNED:
        if game.poll() is None:
            game.kill()
            game.communicate(timeout=30)
    SPAWNED.clear()


def orderup(env: dict[str, str], *argv: str) -> subprocess.Popen[str]:
    game = subprocess.Popen(orderup_argv(*argv), env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    SPAWNED.append(game)
    return game


def recording(env: dict[str, str], pid: int) -> set[str]:
    """The streams from the table's mics (PulseAudio's source outputs) process ``pid`` has
    open, by number."""
    streams = pactl(env, "list", "source-outputs").split("Source Output #")[1:]
    return {s.split()[0] for s in streams if f'application.process.id = "{pid}"' in s}


def listening(env: dict[str, str], game: subprocess.Popen[str]) -> None:
    """Wait until ``game`` records from the table's mics: the same stream open a second apart
    (a stream opened only to look at the device is gone by then; the table's stays open from
    when its recogniser is loaded)."""
    deadline = time.monotonic() + 120
    before: set[str] = set()
    while not (now := recording(env, game.pid)) & before:
        assert game.poll() is None, game.communicate()
        assert time.monotonic() < deadline, "orderup never opened the microphones"
        before = now
        time.sleep(1.0)


def into_the_mics(env: dict[str, str], wav: Path) -> None:
    """Play ``wav`` (a channel a player) into the table's mics, in real time."""
    subprocess.run(["paplay", "--device=table", f"--channel-map={MAP}", str(wav)], env=env,
                   check=True, timeout=120)


def refereed(journal: Path, game: subprocess.Popen[str], guests: dict[str, int]) -> None:
    """Wait until ``journal`` shows the players with these ``guests`` (the calls played decoded
    and refereed, however slowly this machine hears them), and a moment for the game to print
    what it journaled."""
    deadline = time.monotonic() + 120
    while True:
        assert game.poll() is None, game.communicate()
        if journal.exists():
            players = restore(str(journal))[1].summary()["players"]
            if all(players[name]["guests"] == n for name, n in guests.items()):
                break
        assert time.monotonic() < deadline, f"{journal} never showed {guests}"
        time.sleep(0.2)
    time.sleep(1)


def test_a_live_game_through_the_audio_server_survives_a_kill(
        server: dict[str, str], tmp_path: Path) -> None:
    before, after = tmp_path / "before.wav", tmp_path / "after.wav"
    players_only(0.0, KILL_AT_S, before)
    players_only(KILL_AT_S, END_S, after)
    stack = tmp_path / "stack.txt"
    stack.write_text("".join(line.removeprefix("@stack ") + "\n" for line in
                             DEMO.joinpath("desserts.txt").read_text("utf-8").splitlines()
                             if line.startswith("@stack")), "utf-8")
    journal = tmp_path / "game.jsonl"

    game = orderup(server, "play", "desserts", "--players", PLAYERS, "--seed", "11", "--stack",
                   str(stack), "--mics", "pulse", "--journal", str(journal))
    listening(server, game)
    into_the_mics(server, before)
    refereed(journal, game, {"Maya": 1})
    game.send_signal(signal.SIGKILL)
    first, err = game.communicate(timeout=30)
    assert "Maya first." in first and "Maya takes Rocky." in first, first + err
    _, state, _ = restore(str(journal))
    assert state.summary()["players"]["Maya"]["guests"] == 1

    resumed = orderup(server, "resume", str(journal), "--play", "--mics", "pulse")
    listening(server, resumed)
    into_the_mics(server, after)
    refereed(journal, resumed, {"Priya": 1})
    resumed.send_signal(signal.SIGINT)
    out, err = resumed.communicate(timeout=60)
    assert resumed.returncode == 130, err
    assert f"orderup resume {journal} --play" in err  # how to go on, once more
    assert "Resuming Just Desserts" in out, out
    resumed_at = float(out.split("Resuming Just Desserts at ")[1].split(" s")[0])
    heard_at = [float(line.split()[0]) for line in out.splitlines() if "  heard " in line]
    assert heard_at and min(heard_at) > resumed_at  # calls on the game's clock, not the mics'
    for verdict in ("Leo first.", "Leo serves Chocolate Bar and Pound Cake.",
                    "Priya trumps Leo with the favorite!", "Priya takes Chocoholic Chuck."):
        assert verdict in out, first + out
    _, state, _ = restore(str(journal))
    guests = {name: p["guests"] for name, p in state.summary()["players"].items()}
    assert guests == {"Maya": 1, "Leo": 0, "Priya": 1}
