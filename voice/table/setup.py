"""The table's set-up: which microphone is whose, and how well each one hears its player.

Calibration has each player say their name in turn after a moment of silence.
From that one recording it maps every player to the channel that hears their name
loudest (:func:`name_levels_db`: not a knock of cutlery in their turn), measures each mic's
noise floor and level, and warns about a mic that hears another player about as loud as
(or louder than) its own. The result is saved so ``orderup play`` uses it.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from voice.audio.frames import (
    LEVEL_FRAME,
    LOUD_PERCENTILE,
    MIN_SPEECH_MS,
    PIPELINE_RATE_HZ,
    SPEECH_FRAME,
    frame_power,
    frame_rms,
    speech_like_frames,
)
from voice.audio.live import MicInput

BLEED_MARGIN_DB = 3.0
MIN_SNR_DB = 15.0
NOISE_S = 1.5
"""Seconds of the room's silence calibration listens to first."""
TURN_S = 3.0
"""Seconds each player has to say their name."""
NAME_LEAD_S, NAME_TAIL_S = 0.1, 0.3
"""A name is measured from this long before its first speech-like sound (a plosive's burst)
to this long after its last (the room's reverberation of it)."""
HEARD_DB = 10.0
"""A player's turn is heard when some mic hears it this far above the room's noise."""
TRIES = 3
"""How many times calibration asks a player it did not hear."""


class SetupError(ValueError):
    """A set-up that cannot work (a player nobody hears, two players on one mic, a bad spec)."""


def default_path() -> Path:
    """Where the table set-up is saved: ``$XDG_CONFIG_HOME/orderup/table.json``."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(Path.home(), ".config")
    return Path(base) / "orderup" / "table.json"


def parse_mics(spec: str | None, count: int) -> list[MicInput]:
    """Microphones from a ``--mics`` spec, one per player.

    ``None``: channels 0..count-1 of the default input device. ``DEV``: channels
    0..count-1 of that device (index or name). ``DEV:CH,DEV:CH,...``: one device
    and channel per player, in seating order (several USB mics).
    """
    if spec is None or ":" not in spec:
        device: int | str | None = None if spec is None else _device(spec)
        return [MicInput(device, ch) for ch in range(count)]
    mics = []
    for item in spec.split(","):
        dev, _, ch = item.strip().rpartition(":")
        if not dev or not ch.strip().isdigit():
            raise SetupError(f"bad microphone {item.strip()!r} in --mics: expected DEVICE:CHANNEL")
        mics.append(MicInput(_device(dev), int(ch)))
    if len(mics) != count:
        raise SetupError(f"--mics names {len(mics)} microphones for {count} players")
    return mics


def _device(text: str) -> int | str:
    text = text.strip()
    return int(text) if text.isdigit() else text


def _frame_rms(audio: np.ndarray) -> np.ndarray:
    """[20 ms frame, channel]: each frame's RMS (:func:`~voice.audio.frames.frame_rms`)."""
    rms = frame_rms(audio)
    if len(rms) == 0:
        raise SetupError("the calibration recording is too short")
    return rms


def levels_db(audio: np.ndarray, percentile: float) -> np.ndarray:
    """Per channel, the ``percentile`` of 20 ms frame levels (dBFS).

    The median gives a noise floor; a high percentile the level of a short
    word inside a turn that is mostly silence.
    """
    return 20 * np.log10(np.percentile(_frame_rms(audio), percentile, axis=0))


def name_levels_db(turn: np.ndarray, room: np.ndarray) -> np.ndarray:
    """Per channel, how loud a turn's name is (dBFS): as :func:`levels_db` at
    :data:`~voice.audio.frames.LOUD_PERCENTILE` (98) of the turn's 20 ms frames, with the
    frames outside the name heard as the room (``room``: the silence's levels,
    :func:`levels_db` at 50).

    The name is the span of speech-like 10 ms frames
    (:func:`~voice.audio.frames.speech_like_frames`) on the mic that hears the loudest
    speech, from :data:`NAME_LEAD_S` before its first to :data:`NAME_TAIL_S` after its last.
    A knock of cutlery before or after the name is loud on the mic nearest the plate, not
    the player's, and is not speech; a turn with no speech at all is the room's level."""
    rms = _frame_rms(turn)
    like = np.stack([speech_like_frames(c) for c in turn.T], axis=1)  # 10 ms frames
    power = np.stack([frame_power(c) for c in turn.T], axis=1)
    enough = like.sum(axis=0) * SPEECH_FRAME >= MIN_SPEECH_MS * PIPELINE_RATE_HZ / 1000
    name = np.zeros(len(rms), bool)
    if enough.any():
        loudest = [np.percentile(power[like[:, c], c], 98) if enough[c] else 0.0
                   for c in range(turn.shape[1])]
        spoken = np.flatnonzero(like[:, int(np.argmax(loudest))]) * SPEECH_FRAME
        first = max(0, int(spoken[0] - NAME_LEAD_S * PIPELINE_RATE_HZ)) // LEVEL_FRAME
        last = int(spoken[-1] + SPEECH_FRAME + NAME_TAIL_S * PIPELINE_RATE_HZ) // LEVEL_FRAME
        name[first : last + 1] = True
    heard = np.where(name[:, None], rms, 10 ** (room / 20))
    return 20 * np.log10(np.percentile(heard, LOUD_PERCENTILE, axis=0))


@dataclass(frozen=True)
class Calibration:
    """What calibration learned: whose mic is which channel, levels, and warnings."""

    players: tuple[str, ...]
    channels: tuple[int, ...]
    noise_floor_db: tuple[float, ...]
    level_db: tuple[float, ...]
    warnings: tuple[str, ...]
    crosstalk_db: tuple[tuple[float, ...], ...] = ()
    """[i][j]: how much lower player i is heard on player j's mic than on their own (dB)."""

    def table_setup(self, mics: Sequence[MicInput]) -> TableSetup:
        """The set-up to save, with ``mics[c]`` the input behind channel c: everything in
        seating order (the noise floors are measured per channel)."""
        return TableSetup(
            self.players, tuple(mics[ch] for ch in self.channels),
            tuple(self.noise_floor_db[ch] for ch in self.channels), self.level_db,
            self.crosstalk_db,
        )


def listen_to_turns(
    players: Sequence[str], frames: Iterator[np.ndarray], say: Callable[[str], threading.Event],
    show: Callable[[str], None], noise_s: float = NOISE_S, turn_s: float = TURN_S,
    meter: Callable[[float], None] | None = None,
) -> np.ndarray:
    """Record a calibration from live ``frames`` (16 kHz blocks, a column per mic): the room,
    then each player's name in turn, as :func:`calibrate` reads it.

    Each prompt is spoken (``say``: done once it has been said) before it is shown and the
    turn begins, so a name said on seeing the prompt is heard; ``meter`` sees the loudest mic's
    level (dBFS) on every block; a player no mic heard is asked again, up to :data:`TRIES` times.
    """
    rate = PIPELINE_RATE_HZ

    def record(seconds: float) -> np.ndarray:
        need, got, have = int(seconds * rate), [], 0
        while have < need:
            block = next(frames)
            got.append(block)
            have += len(block)
            if meter is not None:
                meter(float(np.max(levels_db(block, 100))))
        return np.concatenate(got)[:need]

    def prompt(line: str) -> None:
        done = say(line)
        while not done.is_set():
            next(frames)  # what is heard while the app speaks is not the room or a name
        show(line)

    prompt("Quiet please: listening to the room.")
    room = record(noise_s)
    floor = levels_db(room, 50)
    parts = [room]
    for player in players:
        prompt(f"{player}, say your name now.")
        for _ in range(TRIES - 1):
            turn = record(turn_s)
            if float(np.max(name_levels_db(turn, floor) - floor)) >= HEARD_DB:
                break
            prompt(f"{player}, I did not hear you: say your name again, now.")
        else:
            turn = record(turn_s)
        parts.append(turn)
    return np.concatenate(parts)


def calibrate(
    audio: np.ndarray, players: Sequence[str], noise_s: float = NOISE_S, turn_s: float = TURN_S
) -> Calibration:
    """Analyse a calibration recording: ``noise_s`` of silence, then each player's turn.

    ``audio`` is (n, channels) at 16 kHz; turns follow each other, ``turn_s`` each.
    """
    rate = PIPELINE_RATE_HZ
    noise_end = int(noise_s * rate)
    need = noise_end + int(turn_s * rate) * len(players)
    if audio.ndim != 2 or len(audio) < need:
        raise SetupError(
            f"the calibration recording holds {len(audio) / rate:.1f} s; "
            f"{need / rate:.1f} s are needed ({noise_s} s of silence, {turn_s} s per player)"
        )
    floor = levels_db(audio[:noise_end], 50)
    turn = int(turn_s * rate)
    turns = [audio[noise_end + i * turn : noise_end + (i + 1) * turn] for i in range(len(players))]
    heard = np.array([name_levels_db(t, floor) for t in turns])  # heard[player's turn, channel]
    channels = [int(np.argmax(row)) for row in heard]
    warnings: list[str] = []
    for i, p in enumerate(players):
        own = heard[i, channels[i]]
        if own - floor[channels[i]] < HEARD_DB:
            raise SetupError(f"no microphone heard {p} (loudest {own - floor[channels[i]]:.0f} dB above noise)")
        if own - floor[channels[i]] < MIN_SNR_DB:
            warnings.append(
                f"{p}'s mic (channel {channels[i]}) hears {p} only {own - floor[channels[i]]:.0f} dB "
                f"above the room noise: move it closer or turn its gain up"
            )
        if float(np.max(np.abs(turns[i][:, channels[i]]))) >= 0.99:
            warnings.append(f"{p}'s mic (channel {channels[i]}) clips: turn its gain down")
    for i, p in enumerate(players):
        for j, q in enumerate(players):
            if j != i and channels[j] == channels[i]:
                raise SetupError(f"{p} and {q} are loudest on the same channel {channels[i]}: "
                                 f"give each player their own mic")
            if j != i and heard[j, channels[i]] >= heard[i, channels[i]] - BLEED_MARGIN_DB:
                louder = "louder than" if heard[j, channels[i]] > heard[i, channels[i]] else "as loud as"
                warnings.append(f"{p}'s mic (channel {channels[i]}) hears {q} {louder} {p}: "
                                f"move it closer to {p}")
    own = heard[np.arange(len(players)), channels]  # each player on their own mic
    return Calibration(
        tuple(players), tuple(channels), tuple(round(float(f), 1) for f in floor),
        tuple(round(float(level), 1) for level in own), tuple(warnings),
        tuple(tuple(round(float(x), 1) for x in row) for row in heard[:, channels] - own[:, None]),
    )


@dataclass(frozen=True)
class TableSetup:
    """A saved set-up: the players in seating order and each one's microphone."""

    players: tuple[str, ...]
    mics: tuple[MicInput, ...]
    noise_floor_db: tuple[float, ...] = ()
    """Each player's mic's noise floor (dBFS), in seating order."""
    level_db: tuple[float, ...] = ()
    crosstalk_db: tuple[tuple[float, ...], ...] = ()
    """As :attr:`Calibration.crosstalk_db`, in seating order: the onset detector starts from it."""

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=1), "utf-8")
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> TableSetup:
        try:
            data = json.loads(path.read_text("utf-8"))
            return cls(
                tuple(data["players"]), tuple(MicInput(m["device"], m["channel"]) for m in data["mics"]),
                tuple(data["noise_floor_db"]), tuple(data["level_db"]),
                tuple(tuple(row) for row in data.get("crosstalk_db", ())),
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise SetupError(f"cannot read the table set-up {path}: {exc}") from exc


def table_inputs(
    saved: TableSetup | None, players: Sequence[str], spec: str | None
) -> tuple[list[MicInput], TableSetup | None]:
    """The mics for ``players`` and the calibration that goes with them: the saved set-up
    when it is for these players, else the ``--mics`` spec (and no calibration)."""
    if saved is not None and saved.players == tuple(players):
        return list(saved.mics), saved
    return parse_mics(spec, len(players)), None
