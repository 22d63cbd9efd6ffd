#!/usr/bin/env python3
"""Record the demo games: scripted players and the app's narration in a simulated room.

Each session is a list of steps — who says what, and when: a moment after the
app stops talking, or a moment after the previous call — played against the
real referee, so the app's narration falls where it would at a real table.
It writes, for each game:

  GAME.ogg        the table's microphones, one channel per player
  GAME.app.ogg    what the app played through its speaker
  GAME.txt        the truth as a transcript (players, seed, stacked decks, every line)
  GAME.table.json the table's set-up as 'orderup calibrate' saves it before a game: the
                  same room, mics and voices, each player saying their name in turn

The players speak with flite's voices, which are built from recordings of people (the
app speaks with espeak-ng, as it does at a table).

Run: .venv/bin/python scripts/make_demo.py [--game desserts] [--quiet] [--out voice/data/demo]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import groupby
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf
from scenes import APP_VOICE, Line, Room, Voice, calibration_take, render_session, synth

from engine.core import Event
from voice.audio.frames import PIPELINE_RATE_HZ
from voice.audio.live import MicInput
from voice.cli.options import command_line
from voice.table.games import lookup
from voice.table.journal import Setup
from voice.table.options import ChaosteriaOptions, Options
from voice.table.referee import Referee
from voice.table.setup import TableSetup, calibrate

NARRATION_GAP_S = 0.25
"""Silence the app leaves between two lines of narration."""

REACTION_S = 0.45
"""From the end of a call to the app's answer: end-of-speech silence plus recognition."""

VORBIS_COMPRESSION = 0.0
"""libsndfile's Vorbis compression level (0 best quality … 1 smallest). The best: the echo
canceller can remove no more of the app's voice than the codec's noise on the two tracks lets
it (about 10 dB at level 1, 20-30 dB at 0, against 25-35 dB uncompressed)."""


@dataclass(frozen=True)
class Step:
    """``player`` says ``text`` ``after_s`` seconds after the app stops talking, or (when
    ``after_call``) after the previous step's onset — for calls that race each other.
    A step with no player is a silence of ``after_s`` seconds (timeouts run out)."""

    after_s: float
    player: str
    text: str
    after_call: bool = False


@dataclass(frozen=True)
class Session:
    game: str
    players: tuple[tuple[str, Voice], ...]
    seed: int
    stacks: dict[str, tuple[str, ...]]
    steps: tuple[Step, ...]
    room: Room
    snr_db: float | None = 20.0
    noise: str | None = "babble"
    options: Any = None
    """The game's options, e.g. ``ChaosteriaOptions(orders="table")`` (None: its defaults)."""

    @property
    def flags(self) -> list[str]:
        return command_line(self.options) if self.options is not None else []


def s(after: float, player: str, text: str) -> Step:
    return Step(after, player, text)


def race(after: float, player: str, text: str) -> Step:
    return Step(after, player, text, after_call=True)


def quiet(seconds: float) -> Step:
    return Step(seconds, "", "")


DESSERTS = Session(
    game="desserts",
    players=(("Maya", Voice("flite:slt", 175, 60)), ("Leo", Voice("flite:rms", 165, 40)),
             ("Priya", Voice("flite:slt", 165, 42))),
    seed=11,
    stacks={"guests": (
        "Rocky", "Chocoholic Chuck", "Lemon Lucy", "Frosty", "Southern Belle", "Peanut Pete",
        "New York Nora", "Granny Smith", "Crumbs McGee", "Sandwich Steve", "Parisian Pierre",
        "Professor Hazel", "Split Decision Sam", "Birthday Ben", "Shortstop Shelly",
        "Nature Girl", "Forest Ranger Rita", "Sweet Tooth Tina",
    )},
    steps=(
        s(0.7, "Maya", "got it"), race(0.09, "Leo", "got it"), s(0.5, "Maya", "rocky road"),
        s(0.6, "Leo", "i got it"), race(0.15, "Priya", "got it"),
        s(0.5, "Leo", "chocolate bar and pound cake"), race(0.6, "Priya", "favorite"),
        s(0.5, "Priya", "brownie"),
        s(0.8, "Priya", "got it"), s(0.5, "Priya", "apple pie"),
        s(0.7, "Maya", "got it"), race(0.02, "Priya", "got it"),
        s(0.6, "Leo", "got it"), race(0.3, "Maya", "got it"),
        s(0.5, "Leo", "pecan pie and whipped cream"), s(0.5, "Maya", "pecan pie"),
        s(0.9, "Maya", "pass"), race(0.5, "Priya", "pass"), race(0.5, "Leo", "what a mess"),
        race(1.4, "Leo", "pass"),
        s(0.6, "Priya", "got it"), race(0.11, "Leo", "got it"), s(0.5, "Priya", "cheesecake"),
        s(0.8, "Maya", "got it"), s(0.5, "Maya", "sorbet"),
        quiet(21.0), s(0.7, "Leo", "got it"), s(0.5, "Leo", "ice cream sandwich"),
        s(0.6, "Maya", "got it"), race(0.09, "Leo", "got it"), s(0.5, "Maya", "eclair"),
        s(0.7, "Priya", "got it"), s(0.5, "Priya", "hazelnut torte"),
        s(0.9, "Leo", "got it"), s(0.5, "Leo", "fruit salad and vanilla ice cream"),
        s(0.8, "Maya", "got it"), s(0.5, "Maya", "strawberry shortcake"),
        s(0.9, "Priya", "pass"), race(0.4, "Leo", "pass"), race(0.5, "Maya", "pass"),
        s(0.7, "Leo", "got it"), s(0.5, "Leo", "banana split"),
        s(0.6, "Priya", "got it"), race(0.2, "Maya", "got it"),
        s(0.5, "Priya", "black forest cake"),
        s(0.7, "Maya", "got it"), s(0.5, "Maya", "banana split"),
        s(0.6, "Leo", "got it"), race(0.35, "Priya", "got it"),
        s(0.5, "Leo", "chocolate chip cookie"),
        s(0.6, "Priya", "got it"), race(0.025, "Leo", "got it"),
        s(0.7, "Maya", "got it"), s(0.5, "Maya", "peanut butter cookie"),
        s(0.6, "Leo", "got it"), race(0.5, "Maya", "got it"),
        s(0.5, "Leo", "vanilla ice cream"), race(0.6, "Maya", "favorite"),
        s(0.5, "Maya", "rocky road"),
        s(0.7, "Leo", "got it"), s(0.5, "Leo", "apple pie"),
    ),
    room=Room((6.0, 5.0, 2.7), 0.2),
    snr_db=None,
    noise=None,
)

POUTINE = Session(
    game="poutine",
    players=(("Ann", Voice("flite:slt", 180, 45)), ("Bob", Voice("flite:awb", 165, 50)),
             ("Cat", Voice("flite:slt", 170, 65))),
    seed=5,
    stacks={"orders": ("Order 7", "Order 11", "Order 3", "Order 2", "Order 17", "Order 8")},
    steps=(
        s(0.6, "Ann", "gravy"), race(0.35, "Bob", "fries"),
        s(0.5, "Cat", "burger"), race(0.06, "Ann", "burger"),
        s(0.5, "Bob", "hot dog"), race(0.4, "Cat", "coleslaw"),
        s(0.5, "Ann", "soda"), race(0.5, "Cat", "rings"),
        s(0.5, "Bob", "stop"),
        s(0.5, "Cat", "hot dog"), race(0.3, "Ann", "fries"),
        s(0.5, "Bob", "gravy"), race(0.7, "Cat", "dog"),
    ),
    room=Room((5.0, 4.0, 2.6), 0.3),
    snr_db=20.0,
    noise="clatter",
)

CHAOSTERIA = Session(
    game="chaosteria",
    players=(("Andy", Voice("flite:kal16", 170, 40)), ("Johnny", Voice("flite:awb", 175, 55)),
             ("Sophie", Voice("flite:slt", 165, 60))),
    seed=3,
    stacks={"dishes": ("Soup", "Salmon", "Steak", "Pizza", "Corn", "Tea", "Wine")},
    steps=(
        s(0.6, "Andy", "classic guacamole and rare steak and french fries and cola and apple pie"),
        s(0.6, "Johnny", "onion soup and beef burger and white rice and green tea and chocolate cake"),
        s(0.6, "Sophie",
          "caesar salad and miso ramen and garlic bread and hot coffee and rice pudding"),
        s(0.6, "Andy", "i serve sophie the onion soup"), race(1.0, "Johnny", "bell"),
        race(0.8, "Johnny", "mine onion soup"),
        s(0.6, "Johnny", "return"), s(0.4, "Johnny", "nobody ordered salmon"),
        s(0.4, "Johnny", "pizza"), s(0.4, "Johnny", "steak"), race(0.9, "Andy", "bell"),
        race(0.8, "Andy", "mine rare steak"),
        s(0.6, "Sophie", "johnny green tea"),
        s(0.6, "Andy", "what did i order"),
    ),
    room=Room((5.5, 4.5, 2.7), 0.35),
    snr_db=20.0,
    noise="babble",
    options=ChaosteriaOptions(orders="table"),
)

SESSIONS = {session.game: session for session in (DESSERTS, POUTINE, CHAOSTERIA)}


def duration_s(text: str) -> float:
    return len(synth(text, APP_VOICE)) / PIPELINE_RATE_HZ


def play_session(session: Session) -> tuple[list[Line], list[tuple[float, str]], list[str]]:
    """Run the steps against the referee: player lines, narration and the truth transcript."""
    names = [name for name, _ in session.players]
    options = Options(session.options or lookup(session.game).options())
    setup = Setup(session.game, tuple(names), session.stacks, options, session.seed)
    game, state = setup.new_state()
    referee = Referee(game, state)
    narration: list[tuple[float, str]] = []
    free_s = 0.0  # when the app stops talking

    def narrate(events: Sequence[Event], not_before_s: float = 0.0) -> None:
        """Speak each batch of events that happen at one moment as one line, once the app
        has heard (``not_before_s``: the call that caused them has ended)."""
        nonlocal free_s
        for t, batch in groupby(events, key=lambda e: e.t):
            line = " ".join(e.say for e in batch if e.say)
            if line:
                start = max(t + 0.1, free_s, not_before_s)
                narration.append((round(start, 3), line))
                free_s = start + duration_s(line) + NARRATION_GAP_S

    narrate(state.opening)
    lines: list[Line] = []
    transcript: list[str] = []
    onset = 0.0
    heard_s = 0.0  # when the app has heard every call so far: it cannot answer one earlier
    for step in session.steps:
        if not step.player:
            onset = max(onset, free_s) + step.after_s
            narrate(referee.tick(onset))
            continue
        if step.after_call:
            onset = onset + step.after_s
        else:
            onset += 0.05
            narrate(referee.tick(onset), heard_s)  # the verdict on the calls so far
            while True:  # timers may fire (and the app talk) before the player speaks
                onset = max(onset, free_s + step.after_s)
                before = free_s
                narrate(referee.tick(onset))
                if free_s == before:
                    break
        voice = dict(session.players)[step.player]
        heard_s = max(heard_s, onset + len(synth(step.text, voice)) / PIPELINE_RATE_HZ + REACTION_S)
        narrate(referee.hear(onset, step.player, step.text), heard_s)
        lines.append(Line(onset, names.index(step.player), step.text))
        transcript.append(f"{onset:.3f} {step.player}: {step.text}")
    return lines, narration, transcript


def write_ogg(path: Path, audio: np.ndarray) -> None:
    """Ogg Vorbis at 16 kHz, written in blocks (libsndfile's encoder fails on one huge write)."""
    with sf.SoundFile(path, "w", PIPELINE_RATE_HZ, audio.shape[1], format="OGG", subtype="VORBIS",
                      compression_level=VORBIS_COMPRESSION) as f:
        for start in range(0, len(audio), 8192):
            f.write(audio[start : start + 8192])


def calibration(session: Session) -> TableSetup:
    """What 'orderup calibrate' saves at this table: the session's room, mics and voices
    (the same seed draws the same layout), each player saying their name in their turn."""
    names = [name for name, _ in session.players]
    take = calibration_take(session.room, [voice for _, voice in session.players], names,
                            session.seed, snr_db=session.snr_db, noise=session.noise)
    found = calibrate(take, names)
    for warning in found.warnings:
        print(f"{session.game} calibration: {warning}")
    return found.table_setup([MicInput(None, ch) for ch in range(len(names))])


def write(session: Session, out: Path) -> None:
    lines, narration, transcript = play_session(session)
    scene = render_session(
        session.room, [voice for _, voice in session.players], lines, narration, session.seed,
        snr_db=session.snr_db, noise=session.noise,
    )
    out.mkdir(parents=True, exist_ok=True)
    assert scene.playback is not None
    write_ogg(out / f"{session.game}.ogg", scene.audio)
    write_ogg(out / f"{session.game}.app.ogg", scene.playback[:, None])
    head = [
        *([f"# options: {' '.join(session.flags)}"] if session.flags else []),
        f"# A game of {lookup(session.game).title}, as recorded by scripts/make_demo.py.",
        f"@players {', '.join(name for name, _ in session.players)}",
        f"@seed {session.seed}",
        *(f"@stack {deck}: {', '.join(cards)}" for deck, cards in session.stacks.items()),
        f"@end {len(scene.audio) / PIPELINE_RATE_HZ:.3f}",
    ]
    (out / f"{session.game}.txt").write_text("\n".join(head + transcript) + "\n", "utf-8")
    calibration(session).save(out / f"{session.game}.table.json")
    seconds = len(scene.audio) / PIPELINE_RATE_HZ
    size = sum((out / f"{session.game}{ext}").stat().st_size for ext in (".ogg", ".app.ogg"))
    print(f"{session.game}: {seconds:.1f} s, {len(lines)} calls, {len(narration)} narration lines, "
          f"{size / 1e6:.2f} MB in {out}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", choices=sorted(SESSIONS), action="append",
                        help="which game to record (default: desserts, the bundled demo)")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent.parent / "voice" / "data" / "demo"))
    parser.add_argument("--quiet", action="store_true",
                        help="leave out the session's background noise: the room, its "
                        "reverberation, the players' bleed and the app's voice only, as in the "
                        "bundled demo")
    args = parser.parse_args(argv)
    for game in args.game or ["desserts"]:
        session = SESSIONS[game]
        write(replace(session, snr_db=None, noise=None) if args.quiet else session, Path(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
