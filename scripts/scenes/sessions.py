"""The scene kinds (race, commands, chatter, narration: who says what, when) and a whole
scripted game in one recording (:func:`render_session`, the demo's)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from voice.table.setup import NOISE_S as CALIBRATION_NOISE_S
from voice.table.setup import TURN_S as CALIBRATION_TURN_S

from .conditions import Condition
from .phrases import CHATTER, RACE_CALLS, command_phrases, narration_lines
from .render import Scene, Talker, announce, draw_talkers, render, say, speaker_volume_db
from .rooms import Layout, Room, Sound, table_layout
from .speech import RATE_HZ, Voice

KINDS = ("race", "commands", "chatter", "narration")
LEAD_S = (1.0, 1.3)
"""Ambient lead-in before a scene's first sound (drawn in this range): a running session's
onset detector has heard the room for a while and knows its noise floor before anyone calls."""
TAIL_S = (0.5, 0.8)
"""Room sound after a scene's last sound ends: longer than the detector's end-of-speech
hangover (300 ms), so every utterance ends inside the scene as it would in a session."""
SEAT_NAMES = ("ann", "bob", "cara", "dev", "eve", "finn", "gus", "hana")
"""The players of a scene's table, seat by seat: the names they say when the table is
calibrated (:func:`calibration_take`)."""


@dataclass(frozen=True)
class Line:
    """One thing a player says in a scripted session: when they start (scene seconds,
    at the mouth), which seat, what, and whether they shout it."""

    onset_s: float
    player: int
    text: str
    shouted: bool = False


def _race(
    layout: Layout,
    condition: Condition,
    talkers: list[Talker],
    lead: int,
    rng: np.random.Generator,
) -> list[Sound]:
    """2–3 players shout the same call; arrival gaps on their own mics are exactly the drawn
    gaps (the source starts earlier by the direct-path delay)."""
    n_callers = 3 if condition.n_players >= 3 and rng.uniform() < 0.35 else 2
    players = [int(p) for p in rng.choice(condition.n_players, n_callers, replace=False)]
    text = str(rng.choice(RACE_CALLS))
    first_gap_ms = condition.gap_ms if condition.gap_ms is not None else rng.uniform(0, 300)
    gaps_ms = [0.0, first_gap_ms, *rng.uniform(0, 300, n_callers - 2)]
    arrivals = lead + np.cumsum(gaps_ms) * RATE_HZ / 1000
    return [
        say(
            layout,
            talkers[p],
            p,
            text,
            "call",
            round(arrival - layout.delays_samples(layout.mouths_m[p])[p]),
            condition.shouted,
            rng,
        )
        for p, arrival in zip(players, arrivals)
    ]


def _call(
    layout: Layout,
    condition: Condition,
    talkers: list[Talker],
    onset: int,
    rng: np.random.Generator,
) -> Sound:
    """A random player saying a random in-grammar phrase (calls 40 %, card names 60 %)."""
    phrases = command_phrases()
    calls = [p for p in phrases if p[0] == "call"]
    cards = [p for p in phrases if p[0] != "call"]
    grammar, text = (
        calls[rng.integers(len(calls))] if rng.uniform() < 0.4 else cards[rng.integers(len(cards))]
    )
    player = int(rng.integers(condition.n_players))
    sound = say(layout, talkers[player], player, text, "call", onset, condition.shouted, rng)
    return replace(sound, truth={**sound.truth, "grammar": grammar})


def _commands(
    layout: Layout,
    condition: Condition,
    talkers: list[Talker],
    lead: int,
    rng: np.random.Generator,
) -> list[Sound]:
    return [_call(layout, condition, talkers, lead, rng)]


def _chatter(
    layout: Layout,
    condition: Condition,
    talkers: list[Talker],
    lead: int,
    rng: np.random.Generator,
) -> list[Sound]:
    """One player's table talk, sometimes answered by another."""
    n_lines = 2 if rng.uniform() < 0.3 else 1
    players = [int(p) for p in rng.choice(condition.n_players, n_lines, replace=False)]
    sounds, onset = [], lead
    for p in players:
        sounds.append(
            say(
                layout,
                talkers[p],
                p,
                str(rng.choice(CHATTER)),
                "chatter",
                onset,
                condition.shouted,
                rng,
            )
        )
        onset += sounds[-1].signal.size + int(rng.uniform(0.1, 0.5) * RATE_HZ)
    return sounds


def _narration(
    layout: Layout,
    condition: Condition,
    talkers: list[Talker],
    lead: int,
    rng: np.random.Generator,
) -> list[Sound]:
    """The app speaks; usually a player calls over it (or just after it), sometimes nobody.
    Half the time the app has already said a line before (as it has at a table in play, where
    its echo canceller has learned the room); otherwise the call comes in its first line."""
    lines = narration_lines()
    volume_db = speaker_volume_db(rng)
    before: list[Sound] = []
    if rng.uniform() < 0.5:
        before = [announce(layout, lines[rng.integers(len(lines))], lead, volume_db)]
        lead += before[0].signal.size + int(rng.uniform(0.3, 1.0) * RATE_HZ)
    app = announce(layout, lines[rng.integers(len(lines))], lead, volume_db)
    length = app.signal.size
    draw = rng.uniform()
    if draw < 0.2:
        return [*before, app]
    if draw < 0.4:  # right after the app stops: its reverberation is still decaying
        at = lead + length + int(rng.uniform(0.0, 0.3) * RATE_HZ)
    else:
        at = lead + int(rng.uniform(0.2, max(0.25, length / RATE_HZ - 0.2)) * RATE_HZ)
    return [*before, app, _call(layout, condition, talkers, at, rng)]


_SCRIPTS = {"race": _race, "commands": _commands, "chatter": _chatter, "narration": _narration}


def make_scene(kind: str, condition: Condition, seed: int) -> Scene:
    """One scene of ``kind`` (one of KINDS) under ``condition``; the table layout, who speaks,
    what, when, levels, noise and reverberation tails all come from ``seed``."""
    if kind not in _SCRIPTS:
        raise ValueError(f"scene kind {kind!r} is not one of {KINDS}")
    rng = np.random.default_rng(seed)
    layout = table_layout(condition.room, condition.n_players, rng)
    talkers = draw_talkers(condition, rng)
    lead = int(rng.uniform(*LEAD_S) * RATE_HZ)
    speech = _SCRIPTS[kind](layout, condition, talkers, lead, rng)
    return render(kind, seed, layout, condition, speech, rng.uniform(*TAIL_S), rng)


def render_session(
    room: Room,
    players: Sequence[Voice],
    lines: Sequence[Line],
    narration: Sequence[tuple[float, str]],
    seed: int,
    *,
    snr_db: float | None = None,
    noise: str | None = None,
    clip: str = "none",
    length_s: float = 0.0,
) -> Scene:
    """A whole scripted game in one room recording (the demo): ``players`` are the seats'
    voices, ``lines`` what they say and when, ``narration`` the app's (onset_s, text) lines.
    Onsets are when the sound leaves the mouth or speaker; the truth gives the arrivals.
    Every player line is an expected call (``kind: "session"``). The recording runs a second
    past the last sound, and at least ``length_s``."""
    if not lines and not narration:
        raise ValueError("a session needs at least one player line or narration line")
    condition = Condition(
        room,
        tuple(players),
        split=None,
        shouted=any(line.shouted for line in lines),
        clip=clip,
        snr_db=snr_db,
        noise=noise,
    )
    rng = np.random.default_rng(seed)
    layout = table_layout(room, condition.n_players, rng)
    talkers = draw_talkers(condition, rng)
    speech = [
        say(
            layout,
            talkers[line.player],
            line.player,
            line.text,
            "call",
            round(line.onset_s * RATE_HZ),
            line.shouted,
            rng,
        )
        for line in lines
    ]
    volume_db = speaker_volume_db(rng)
    speech += [
        announce(layout, text, round(onset_s * RATE_HZ), volume_db) for onset_s, text in narration
    ]
    end_s = max(s.onset_sample + s.signal.size for s in speech) / RATE_HZ
    return render("session", seed, layout, condition, speech, max(1.0, length_s - end_s), rng)


def calibration_take(
    room: Room,
    players: Sequence[Voice],
    names: Sequence[str],
    seed: int,
    *,
    snr_db: float | None = None,
    noise: str | None = None,
    clip: str = "none",
) -> np.ndarray:
    """What ``orderup calibrate`` records before a game at the table ``seed`` draws (the same
    room, seats, mics and voices as :func:`make_scene` and :func:`render_session` with that
    seed), in the same noise: the room, then each player saying their name half a second
    into their turn (its default lengths). (n, mics) float32."""
    turns = [Line(CALIBRATION_NOISE_S + i * CALIBRATION_TURN_S + 0.5, i, name.lower())
             for i, name in enumerate(names)]
    length_s = CALIBRATION_NOISE_S + CALIBRATION_TURN_S * len(names)
    return render_session(room, players, turns, [], seed, snr_db=snr_db, noise=noise,
                          clip=clip, length_s=length_s).audio
