"""Measure the recogniser: command accuracy, chatter false accepts and latency, per voice.

Voices are split into a *tune* set (used to choose settings) and a *held-out* set (reported,
never tuned on), both espeak-ng, and a *flite* set (flite's voices, built from recordings of
people; reported, never tuned on). Each call is a synthesised utterance with a 50 ms pre-roll and a
150 ms tail of silence (the onset detector keeps 100 ms of the room on either side), clean
(a -45 dB noise floor), in babble (other espeak talkers) at 10 dB SNR, or with clatter: 400 ms
of the room on either side and one or two knocks of cutlery somewhere in it, each 3-15 dB
below the call's loudest 10 ms (the onset detector's segment starts at whichever came
first, so a knock just before a call lands in it); with clatter, 100 clips of knocks alone
are decoded against every game's grammar too. In a room, the clean call is heard on its
player's own mic at a table in one of the bench's rooms (scripts/scenes.py: 12 seats per
split, RT60 0.2-0.6 s for tune, 0.3-0.8 s for held-out and flite), its reverberation included.
Chatter is decoded
against all three game grammars; the tune split uses this script's chatter, the others the
scene generator's list.

With --moments, calls and chatter are decoded where one player may say less than the whole
game allows (Just Desserts before anyone calls, and for the winner who serves; a cook in Miss
Poutine) with that player's grammar of the moment, and again with the whole game's grammar:
chatter counts there only when it is taken for something the player may say.

    .venv/bin/python scripts/measure_recognition.py [--split tune|heldout|flite|both|all]
        [--noise clean|babble|clatter|room|all] [--per-game N] [--tuning JSON] [--backend sphinx]
        [--moments]
"""

from __future__ import annotations

import argparse
import sys
import time
import zlib
from dataclasses import dataclass
from functools import cache
from multiprocessing import Pool
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.core import GameState
from engine.decks import chaosteria, desserts, poutine
from engine.desserts import GotIt
from scripts.scenes import (
    CHATTER,
    SPLITS,
    Room,
    Voice,
    clatter_hit,
    own_mic_response,
    synthesizer,
)
from voice.audio.frames import frame_power
from voice.recognition.grammar import Grammar, game_grammar
from voice.recognition.interface import Recognizer, create_recognizer
from voice.recognition.sphinx import SphinxTuning
from voice.table.games import lookup

RATE_HZ = 16_000
NOISES = ("clean", "babble", "clatter", "room")
ROOMS = 12
"""Seats drawn per split for the room condition (their impulse responses are cached)."""
KNOCK_CLIPS = 100
PLAYERS = ("Ann", "Bob", "Priya")
TUNE = tuple((v, s, p) for v in ("en-us", "en-gb", "en-us+f3", "en+m3")
             for s, p in ((140, 30), (170, 50), (200, 70)))
HELD_OUT = tuple((v, s, 50) for v in ("en-029", "en-gb-scotland", "en-gb-x-rp", "en+f2")
                 for s in (120, 220))
FLITE = tuple((f"flite:{v}", s, p) for v in ("awb", "slt", "rms", "kal16")
              for s, p in ((150, 35), (190, 65)))
VOICES = {"tune": TUNE, "heldout": HELD_OUT, "flite": FLITE}
BABBLE_VOICES = (("en-gb-x-gbclan", 160, 40), ("en-us-nyc", 180, 60), ("en+f4", 150, 55),
                 ("en-gb-x-gbcwmd", 170, 45))
BABBLE_TEXT = ("so then we drove all the way to the coast and it rained the entire weekend "
               "but honestly the food was amazing and nobody complained about anything at all")
TUNE_CHATTER = (
    "i love this game", "got to go soon", "is it my turn", "i forgot it", "pass the bread",
    "who ordered the pizza", "give me a minute", "what did you say", "that is my favorite song",
    "not it", "i want some ice cream", "read the card again", "you got lucky", "stop it",
    "the pie was good", "hello everyone", "can you hear me", "i am so tired", "rocky road trip",
    "what a mess", "no no no", "yes please", "my turn now", "i think so",
)


@cache
def speech(text: str, voice: tuple[str, int, int]) -> np.ndarray:
    x = synthesizer(Voice(*voice)).render(text).astype(np.float32)
    loud = np.flatnonzero(np.abs(x) > 1e-3 * np.abs(x).max())
    return x[loud[0] : loud[-1] + 1]


@cache
def babble() -> np.ndarray:
    parts = [np.concatenate([speech(BABBLE_TEXT, v)] * 3) for v in BABBLE_VOICES]
    n = min(p.size for p in parts)
    mix = sum(p[:n] / p[:n].std() for p in parts)
    return (mix / mix.std()).astype(np.float32)


def frame_peak(x: np.ndarray) -> float:
    """The power of the loudest 10 ms of `x`."""
    return float(frame_power(x).max())


@cache
def room_response(split: str, seat: int) -> np.ndarray:
    """The impulse response from a player's mouth to their own mic, seated at a table in one
    of the scene library's rooms for `split` (the bench's rooms, RT60s and seating; held-out
    and flite voices sit in the bench's holdout rooms)."""
    pool = SPLITS["tune" if split == "tune" else "holdout"]
    rng = np.random.default_rng(seat)
    room = Room(pool.rooms_m[rng.integers(len(pool.rooms_m))],
                pool.rt60s_s[rng.integers(len(pool.rt60s_s))])
    return own_mic_response(room, rng)


def scene(x: np.ndarray, noise: str, seed: int, split: str = "tune") -> np.ndarray:
    """`x` with 50 ms before and 150 ms after (400 ms each with clatter), plus noise relative
    to its voiced power; in a room, `x` is heard on its player's mic with the room's
    reverberation (its whole decay before the 150 ms) over the clean condition's floor."""
    rng = np.random.default_rng(seed)
    if noise == "room":
        x = np.convolve(x, room_response(split, seed % ROOMS)).astype(np.float32)
    x = x / np.abs(x).max() * 0.3
    before, after = (6400, 6400) if noise == "clatter" else (800, 2400)
    y = np.concatenate([np.zeros(before, np.float32), x, np.zeros(after, np.float32)])
    voiced = x[np.abs(x) > 0.05 * np.abs(x).max()]
    power = float(np.mean(voiced.astype(np.float64) ** 2))
    if noise == "babble":
        b = babble()
        start = int(rng.integers(0, b.size - y.size))
        return (y + b[start : start + y.size] * np.sqrt(power / 10)).astype(np.float32)
    if noise == "clatter":
        for at in rng.integers(0, y.size - 1600, int(rng.integers(1, 3))):
            hit = clatter_hit(rng)[: y.size - at]
            y[at : at + hit.size] += hit * np.sqrt(
                frame_peak(x) / frame_peak(hit) * 10 ** (rng.uniform(-15, -3) / 10))
    return (y + rng.normal(0, np.sqrt(power / 10**4.5), y.size)).astype(np.float32)


def knocks(seed: int) -> np.ndarray:
    """A second of a quiet room (-70 dBFS) with one to three knocks of cutlery and no call,
    each knock's peak that of a call (0.3)."""
    rng = np.random.default_rng(seed)
    y = rng.normal(0, 3e-4, RATE_HZ).astype(np.float32)
    for at in rng.integers(RATE_HZ // 10, RATE_HZ * 3 // 4, int(rng.integers(1, 4))):
        hit = clatter_hit(rng)[: y.size - at]
        y[at : at + hit.size] += 0.3 * hit / np.abs(hit).max()
    return y


def knocks_accepted(seed: int) -> list[str]:
    """What each game's grammar accepts in :func:`knocks` (`seed`): nothing, rightly."""
    rec, y = _RECOGNIZER[0], knocks(seed)
    heard = [(g, rec.decode(y, grammar)) for g, grammar in grammars().items()]
    return [f"{g}: knocks -> {hyp.text!r}" for g, hyp in heard if hyp.understood]


def commands() -> dict[str, list[str]]:
    """In-grammar phrases per game: every card name and the calls around them."""
    d = [x.name.lower() for x in desserts().desserts]
    menu = poutine()
    items = sorted({s for m in (*menu.menu, menu.fries) for s in m.spoken})
    dishes = chaosteria().dishes
    variants = [v.lower() for x in dishes for v in x.variants]
    return {
        "desserts": [*d, "got it", "i got it", "pass", "favorite", f"{d[0]} and {d[5]}",
                     f"{d[3]} {d[7]} and {d[11]}", f"{d[2]} and {d[9]} and {d[14]}"],
        "poutine": [*items, "stop", "take it", "ann", "priya", "give two to bob",
                    "give three to priya"],
        "chaosteria": [*(f"mine {v}" for v in variants[::2]),
                       *(f"i serve priya the {v}" for v in variants[1::4]),
                       *(f"{v} for bob" for v in variants[3::4]),
                       *(f"nobody ordered {x.dish.lower()}" for x in dishes[::3]),
                       "bell", "return", "what did i order"],
    }


@cache
def grammars() -> dict[str, Grammar]:
    return {g: game_grammar(g, PLAYERS) for g in ("desserts", "poutine", "chaosteria")}


@cache
def moments() -> dict[str, tuple[str, Grammar]]:
    """Moments at which one player (Ann) may say less than the game's whole grammar: her
    grammar of the moment, the other players' phrases as its rivals, by moment name, with
    the game it is of."""
    def opened(name: str) -> GameState[Any]:
        game = lookup(name)
        return game.new_game(game.make_config(PLAYERS, {}, {}), 1)

    calling = opened("desserts")
    t = calling.announced_t + 1.0  # type: ignore[attr-defined]
    serving = opened("desserts")
    serving.apply(GotIt("Ann", t))
    states = {"desserts, calling": ("desserts", calling),
              "desserts, serving": ("desserts", serving.at(t + 1.0)),
              "poutine, cooking": ("poutine", opened("poutine"))}
    return {m: (g, game_grammar(g, PLAYERS, state, "Ann")) for m, (g, state) in states.items()}


GAME, MOMENT, WHOLE = "game", "moment", "whole game"
"""Kinds of grammar: a game's whole grammar; one player's grammar of a moment; the whole
game's grammar used where a moment's would be (`--moments`)."""


def targets(by_moment: bool) -> dict[str, dict[str, tuple[Grammar, Grammar]]]:
    """By game or moment name, by kind of grammar: what calls and chatter are decoded with,
    and what the player may say there (each moment's grammar and, beside it on the same
    audio, the whole game's, both judged by what the moment allows)."""
    if not by_moment:
        return {g: {GAME: (grammar, grammar)} for g, grammar in grammars().items()}
    return {m: {MOMENT: (grammar, grammar), WHOLE: (grammars()[game], grammar)}
            for m, (game, grammar) in moments().items()}


_RECOGNIZER: list[Recognizer] = []


def _init(backend: str, tuning: str) -> None:
    options = {"tuning": SphinxTuning.from_json(tuning)} if backend == "sphinx" else {}
    _RECOGNIZER.append(create_recognizer(backend, **options))
    for g in grammars().values():
        _RECOGNIZER[0].prepare(g)
    for _, g in moments().values():
        _RECOGNIZER[0].prepare(g)


@dataclass(frozen=True)
class Result:
    """One voice in one noise condition with one kind of grammar: its misheard or rejected
    calls, its chatter taken for something the player may say, and each decode's finish
    latency in seconds."""

    voice: str
    noise: str
    split: str
    grammar: str
    calls: int
    errors: tuple[str, ...]
    chatter: int
    accepts: tuple[str, ...]
    latency_s: tuple[float, ...]


def run_voice(job: tuple[tuple[str, int, int], str, str, int, bool]) -> list[Result]:
    """Decode one voice's calls and chatter in one noise condition, streaming in 20 ms
    blocks; latency is from the last block fed to the finished hypothesis."""
    voice, noise, split, per_game, by_moment = job
    rec = _RECOGNIZER[0]
    rng = np.random.default_rng(zlib.crc32(repr(voice).encode()))  # the same calls every run
    chatter = TUNE_CHATTER if split == "tune" else CHATTER
    decoded = targets(by_moment)
    kinds = (MOMENT, WHOLE) if by_moment else (GAME,)
    items: list[tuple[str, str, bool]] = []
    for name, by_kind in decoded.items():
        allowed = by_kind[kinds[0]][1]
        ps = [p for p in commands()[name.split(",")[0]] if allowed.match(p.split()).cost == 0]
        picked = ps if per_game <= 0 else rng.choice(ps, min(per_game, len(ps)), False)
        items += [(name, p, True) for p in picked]
    items += [(name, c.lower(), False) for c in chatter for name in decoded]
    n_calls = sum(1 for *_, g in items if g)
    results = []
    for kind in kinds:
        errors, accepts, latency = [], [], []
        for i, (name, text, in_grammar) in enumerate(items):
            grammar, allowed = decoded[name][kind]
            label = f"{name} ({WHOLE})" if kind == WHOLE else name
            audio = scene(speech(text, voice), noise, i, split)
            stream = rec.stream(grammar)
            for block in np.array_split(audio, max(1, audio.size // 320)):
                stream.feed(block)
            t0 = time.perf_counter()
            hyp = stream.finish()
            latency.append(time.perf_counter() - t0)
            said = hyp.understood and allowed.match(hyp.text.split()).cost == 0
            if in_grammar and not (said and hyp.text == text):
                errors.append(f"{label}: {text} -> {hyp.text!r}{'' if said else ' (rejected)'}")
            if not in_grammar and said:
                accepts.append(f"{label}: {text} -> {hyp.text!r}")
        results.append(Result("/".join(map(str, voice)), noise, split, kind, n_calls,
                              tuple(errors), len(items) - n_calls, tuple(accepts), tuple(latency)))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", choices=(*VOICES, "both", "all"), default="both",
                        help="both: tune and heldout; all: every voice set")
    parser.add_argument("--noise", choices=(*NOISES, "all"), default="all")
    parser.add_argument("--per-game", type=int, default=0, help="calls per game (0: all)")
    parser.add_argument("--backend", default="sphinx")
    parser.add_argument("--tuning", default="{}", help="SphinxTuning fields as JSON")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--verbose", action="store_true", help="list every error")
    parser.add_argument(
        "--moments", action="store_true",
        help="decode with one player's grammar of the moment (the others' phrases as rivals) "
        "where it is narrower than the game's, and beside it with the whole game's grammar; "
        "chatter counts only when taken for something the player may say then")
    args = parser.parse_args(argv)
    splits = {"both": ("tune", "heldout"), "all": tuple(VOICES)}.get(args.split, (args.split,))
    noises = NOISES if args.noise == "all" else (args.noise,)
    jobs = [(v, n, s, args.per_game, args.moments) for s in splits for n in noises
            for v in VOICES[s]]
    with Pool(args.jobs, _init, (args.backend, args.tuning)) as pool:
        results = [r for rs in pool.map(run_voice, jobs) for r in rs]
        knocked = pool.map(knocks_accepted, range(KNOCK_CLIPS)) if "clatter" in noises else []
    kinds = tuple(dict.fromkeys(r.grammar for r in results))
    print(f"{'split':8s}{'noise':8s}{'grammar':12s}{'voice':24s}{'calls ok':>12s}"
          f"{'chatter acc':>14s}")
    for r in results:
        print(f"{r.split:8s}{r.noise:8s}{r.grammar:12s}{r.voice:24s}"
              f"{r.calls - len(r.errors):6d}/{r.calls:<5d}{len(r.accepts):8d}/{r.chatter:<5d}")
        if args.verbose:
            for line in r.errors + r.accepts:
                print("    " + line)
    print()
    for s in splits:
        for n in noises:
            for kind in kinds:
                rs = [r for r in results if r.split == s and r.noise == n and r.grammar == kind]
                calls = sum(r.calls for r in rs)
                ok = calls - sum(len(r.errors) for r in rs)
                chat = sum(r.chatter for r in rs)
                acc = sum(len(r.accepts) for r in rs)
                lat = np.concatenate([r.latency_s for r in rs]) * 1000
                label = "" if kind == GAME else f"{kind:12s}"
                print(f"{s:8s}{n:8s}{label} command accuracy {100 * ok / calls:5.1f}% "
                      f"({ok}/{calls})  chatter accepted {100 * acc / chat:4.1f}% ({acc}/{chat})  "
                      f"finish latency mean {lat.mean():.0f} ms "
                      f"p95 {np.percentile(lat, 95):.0f} ms")
    if knocked:
        accepted = [line for clip in knocked for line in clip]
        n = KNOCK_CLIPS * len(grammars())
        print(f"knocks of cutlery alone accepted as a call {100 * len(accepted) / n:4.1f}% "
              f"({len(accepted)}/{n})")
        if args.verbose:
            for line in accepted:
                print("    " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
