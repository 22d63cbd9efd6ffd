"""Measure the recogniser: command accuracy, chatter false accepts and latency, per voice.

Voices are split into a *tune* set (used to choose settings) and a *held-out* set (reported,
never tuned on), both espeak-ng, and a *flite* set (flite's voices, built from recordings of
people; reported, never tuned on). Each call is a synthesised utterance with a 50 ms pre-roll and a
150 ms tail of silence (the onset detector keeps 100 ms of the room on either side), clean
(a -45 dB noise floor), in babble at 10 dB SNR (other espeak talkers; with real-babble, real
people's recorded sentences, :func:`real_babble`), or with clatter: 400 ms
of the room on either side and one or two knocks of cutlery somewhere in it, each 3-15 dB
below the call's loudest 10 ms (the onset detector's segment starts at whichever came
first, so a knock just before a call lands in it); with clatter, 100 clips of knocks alone
are decoded against every game's grammar too. In a room, the clean call is heard on its
player's own mic at a table in one of the bench's rooms (scripts/scenes/rooms.py: 12 seats per
split, RT60 0.2-0.6 s for tune, 0.3-0.8 s for held-out and flite), its reverberation included.
Chatter is decoded
against all three game grammars; the tune split uses this script's chatter, the others the
scene generator's list.

With --moments, calls and chatter are decoded where one player may say less than the whole
game allows (Just Desserts before anyone calls, and for the winner who serves; a cook in Miss
Poutine) with that player's grammar of the moment, and again with the whole game's grammar:
chatter counts there only when it is taken for something the player may say.

With --real (or --split real), real people's recordings (``../shared/real_speech``, its
SOURCES.md) are decoded too, in each noise condition asked for: one-word calls (Speech
Commands and spoken digits) against Miss Poutine's grammar (where "stop" and "dog" are calls)
and against a grammar of one-word commands (:data:`COMMAND_PHRASES`: yes, no, stop, go, up,
down, left, right, on, off and the digits), every other word as a word that is not a call,
and the sentences against every grammar. The speakers are split once for all: within each
source, speakers ranked by the SHA-256 of their id, every third is *held out* (never tuned
on); the rest are *tune*. Both parts are always reported separately.

Several backends may be measured in one run (``--backend whisper,sphinx``), side by side on
the same audio; with --latency N, N races of four calls each are decoded one at a time and
four at once (Whisper: one encoder batch, :meth:`voice.recognition.whisper.WhisperRecognizer.decode_many`;
PocketSphinx: four threads), and each call's latency from the end of the race's audio to its
hypothesis is reported.

    .venv/bin/python scripts/measure_recognition.py [--split tune|heldout|flite|both|all|real]
        [--noise clean|babble|real-babble|clatter|room|all] [--per-game N] [--tuning JSON]
        [--whisper-tuning JSON] [--backend sphinx[,whisper]] [--moments] [--real]
        [--real-per-word N] [--latency N] [--dump FILE]

One script, over 400 lines: the voices, conditions, backends and the report of one
measurement run side by side, so a figure and how it was measured are read in one place.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import zlib
from collections import defaultdict
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
    BABBLE_TALKERS,
    CHATTER,
    REAL_PARTS,
    REAL_SPEECH,
    SPLITS,
    Clip,
    Room,
    Voice,
    clatter_hit,
    have_recordings,
    own_mic_response,
    part_of,
    read_clip,
    real_clips,
    sentences,
    synthesizer,
)
from voice.audio.frames import frame_power
from voice.recognition.grammar import Grammar, game_grammar, parse_phrases
from voice.recognition.interface import Recognizer, create_recognizer
from voice.recognition.interface import backends as recognition_backends
from voice.recognition.sphinx import SphinxTuning
from voice.recognition.whisper import WhisperTuning
from voice.table.games import lookup
from voice.table.options import TableOptions

RATE_HZ = 16_000
NOISES = ("clean", "babble", "real-babble", "clatter", "room")
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


def _mix(talkers: list[np.ndarray]) -> np.ndarray:
    """Talkers summed at equal power over their common length, at unit power."""
    n = min(t.size for t in talkers)
    mix = sum(t[:n] / t[:n].std() for t in talkers)
    return (mix / mix.std()).astype(np.float32)


@cache
def babble() -> np.ndarray:
    return _mix([np.concatenate([speech(BABBLE_TEXT, v)] * 3) for v in BABBLE_VOICES])


REAL_BABBLE_S = 60
"""Length of each talker of :func:`real_babble`."""


@cache
def real_babble(part: str) -> np.ndarray:
    """Babble of real people: :data:`BABBLE_TALKERS` talkers, each chaining the recorded
    sentences of `part`'s speakers (:func:`scripts.scenes.recorded.sentences`) in its own
    random order with 0.15-0.7 s pauses. Synthesised voices of the tune split hear the tune
    part's speakers; every other split the held-out part's."""
    part = part_of(part)
    said = [x for xs in sentences(part).values() for x in xs]
    rng = np.random.default_rng(zlib.crc32(part.encode()))
    talkers = []
    for _ in range(BABBLE_TALKERS):
        parts: list[np.ndarray] = []
        while sum(p.size for p in parts) < REAL_BABBLE_S * RATE_HZ:
            for k in rng.permutation(len(said)):
                parts += [said[k], np.zeros(int(rng.uniform(0.15, 0.7) * RATE_HZ))]
        talkers.append(np.concatenate(parts)[rng.integers(RATE_HZ * 5):])
    return _mix(talkers)


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
    if noise in ("babble", "real-babble"):
        b = babble() if noise == "babble" else real_babble(split)
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


def knocks_accepted(seed: int, backend: str | None = None) -> list[str]:
    """What each game's grammar accepts in :func:`knocks` (`seed`): nothing, rightly."""
    rec = _RECOGNIZERS[backend] if backend else _RECOGNIZER[0]
    y = knocks(seed)
    heard = [(g, rec.decode(y, grammar)) for g, grammar in grammars().items()]
    return [f"{g}: knocks -> {hyp.text!r}" for g, hyp in heard if hyp.understood]


def _knocks_job(job: tuple[str, int]) -> tuple[str, list[str]]:
    return job[0], knocks_accepted(job[1], job[0])


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
        return game.new_game(game.make_config(PLAYERS, {}, game.options(), TableOptions()), 1)

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
"""The first backend's recogniser in this worker (:data:`_RECOGNIZERS` has them all)."""
_RECOGNIZERS: dict[str, Recognizer] = {}


def make_recognizer_tuning(tuning: str, whisper_tuning: str) -> tuple[SphinxTuning, WhisperTuning]:
    """PocketSphinx's and Whisper's tunings from their JSON (ValueError, TypeError if bad)."""
    if not isinstance(json.loads(tuning), dict):
        raise TypeError(f"not a JSON object: {tuning}")
    fields = json.loads(whisper_tuning)
    if not isinstance(fields, dict):
        raise TypeError(f"not a JSON object: {whisper_tuning}")
    return SphinxTuning.from_json(tuning), WhisperTuning(**fields)


def make_recognizer(backend: str, tuning: str = "{}", whisper_tuning: str = "{}") -> Recognizer:
    """A recogniser of `backend` with its tuning given as JSON."""
    sphinx, whisper = make_recognizer_tuning(tuning, whisper_tuning)
    if backend == "sphinx":
        return create_recognizer(backend, tuning=sphinx)
    if backend == "whisper":
        return create_recognizer(backend, tuning=whisper)
    if backend == "free":
        from scripts.bench_scene import FreeLanguageModel

        return FreeLanguageModel()  # type: ignore[return-value]
    return create_recognizer(backend)


def _init(backends: tuple[str, ...], tuning: str, whisper_tuning: str = "{}") -> None:
    for backend in backends:
        rec = make_recognizer(backend, tuning, whisper_tuning)
        _RECOGNIZERS[backend] = rec
        for g in grammars().values():
            rec.prepare(g)
        for _, g in moments().values():
            rec.prepare(g)
    _RECOGNIZER.append(_RECOGNIZERS[backends[0]])


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
    backend: str = ""
    records: tuple[dict[str, Any], ...] = ()


def _record(rec: Recognizer, audio: np.ndarray, grammar: Grammar) -> dict[str, Any]:
    """What a Whisper recogniser heard and how near it came to the grammar (for --dump)."""
    heard = rec.hear_many([audio], grammar)[0]  # type: ignore[attr-defined]
    return {"whisper": heard.text, "nearest": heard.nearest.phrase if heard.nearest else "",
            "runner_up": heard.runner_up, "rival": heard.rival, "distance": heard.distance,
            "runner_distance": heard.runner_distance, "margin": heard.margin,
            "no_speech": heard.no_speech, "weighed": heard.weighed}


def run_voice(job: tuple[tuple[str, int, int], str, str, int, bool, str, bool]) -> list[Result]:
    """Decode one voice's calls and chatter in one noise condition, streaming in 20 ms
    blocks; latency is from the last block fed to the finished hypothesis."""
    voice, noise, split, per_game, by_moment, backend, dump = job
    rec = _RECOGNIZERS[backend]
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
        errors, accepts, latency, records = [], [], [], []
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
            if dump and hasattr(rec, "hear_many"):
                records.append({"split": split, "noise": noise, "voice": "/".join(map(str, voice)),
                                "grammar": label, "text": text, "call": in_grammar,
                                "heard": hyp.text if said else "", **_record(rec, audio, grammar)})
        results.append(Result("/".join(map(str, voice)), noise, split, kind, n_calls,
                              tuple(errors), len(items) - n_calls, tuple(accepts), tuple(latency),
                              backend, tuple(records)))
    return results


# --- real speech ---------------------------------------------------------------------------

COMMAND_PHRASES = """# one-word commands: the calls of a yes/no vote, a pointer game and a count
yes
no
stop
go
up
down
left
right
on
off
@slot digit: zero | one | two | three | four | five | six | seven | eight | nine
{digit}
"""


@cache
def real_grammars() -> dict[str, Grammar]:
    """The grammars real words are decoded with: Miss Poutine's, and one-word commands."""
    return {"poutine": grammars()["poutine"],
            "commands": parse_phrases(COMMAND_PHRASES, source="COMMAND_PHRASES")}


def per_word(clips: list[Clip], most: int) -> list[Clip]:
    """At most `most` clips of each word in each part (0: all), the manifest's first; every
    sentence."""
    if most <= 0:
        return clips
    kept: dict[tuple[str, str, str], int] = defaultdict(int)
    chosen = []
    for c in clips:
        key = (c.part, c.kind, c.text)
        if c.kind == "sentence" or kept[key] < most:
            kept[key] += 1
            chosen.append(c)
    return chosen


@dataclass(frozen=True)
class RealResult:
    """One real clip in one noise condition decoded with one grammar by one backend."""

    backend: str
    part: str
    noise: str
    grammar: str
    kind: str  # "call", "word" (a word that is not a call) or "sentence"
    text: str
    heard: str
    right: bool
    accepted: bool
    latency_s: float
    record: tuple[tuple[str, Any], ...] = ()


def run_real(job: tuple[tuple[Clip, ...], str, str, str, bool]) -> list[RealResult]:
    """Decode real clips: words against :func:`real_grammars`, sentences against those and
    every game's grammar."""
    clips, noise, backend, root, dump = job
    rec = _RECOGNIZERS[backend]
    out: list[RealResult] = []
    for k, clip in enumerate(clips):
        x = read_clip(Path(root) / clip.path)
        seed = zlib.crc32(clip.path.encode())
        audio = x if noise == "clean" else scene(x, noise, seed, clip.part)
        targets_ = dict(real_grammars())
        if clip.kind == "sentence":
            targets_.update(grammars())
        for name, grammar in targets_.items():
            text = " ".join(clip.text.lower().split())
            call = clip.kind == "word" and grammar.match(text.split()).cost == 0
            kind = "call" if call else clip.kind
            t0 = time.perf_counter()
            hyp = rec.decode(audio, grammar)
            latency = time.perf_counter() - t0
            record: dict[str, Any] = {}
            if dump and hasattr(rec, "hear_many"):
                record = _record(rec, audio, grammar)
            out.append(RealResult(backend, clip.part, noise, name, kind, text,
                                  hyp.text if hyp.understood else "",
                                  call and hyp.understood and hyp.text == text,
                                  hyp.understood, latency, tuple(record.items())))
    return out


def report_real(results: list[RealResult], verbose: bool) -> None:
    print("real speech: calls right | words that are not calls accepted | sentences accepted")
    print(f"{'backend':9s}{'part':9s}{'noise':12s}{'grammar':12s}{'calls right':>16s}"
          f"{'non-calls acc':>16s}{'sentences acc':>16s}{'latency mean/p95':>20s}")
    keys = sorted({(r.backend, r.part, r.noise, r.grammar) for r in results},
                  key=lambda k: (REAL_PARTS.index(k[1]), k[2], k[3], k[0]))
    for key in keys:
        rs = [r for r in results if (r.backend, r.part, r.noise, r.grammar) == key]
        calls = [r for r in rs if r.kind == "call"]
        words = [r for r in rs if r.kind == "word"]
        sentences = [r for r in rs if r.kind == "sentence"]

        def share(hit: int, n: int) -> str:
            return f"{hit}/{n} {100 * hit / n:3.0f}%" if n else "-"

        lat = np.array([r.latency_s for r in rs]) * 1000
        print(f"{key[0]:9s}{key[1]:9s}{key[2]:12s}{key[3]:12s}"
              f"{share(sum(r.right for r in calls), len(calls)):>16s}"
              f"{share(sum(r.accepted for r in words), len(words)):>16s}"
              f"{share(sum(r.accepted for r in sentences), len(sentences)):>16s}"
              f"{lat.mean():10.0f} /{np.percentile(lat, 95):5.0f} ms")
        if verbose:
            for r in calls:
                if not r.right:
                    print(f"    call {r.text} -> {r.heard!r}{'' if r.accepted else ' (rejected)'}")
            for r in words + sentences:
                if r.accepted:
                    print(f"    {r.kind} {r.text} -> {r.heard!r}")


# --- latency of races ----------------------------------------------------------------------


def race_latency(backend: str, races: int) -> dict[str, list[float]]:
    """Per-call latency (s) decoding `races` races of four calls (tune voices, random calls of
    every game), one call at a time and the four at once (Whisper: one batch; others: four
    threads), from the moment the four calls' audio is complete."""
    rec = _RECOGNIZERS[backend]
    rng = np.random.default_rng(7)
    games = list(grammars())
    single: list[float] = []
    four: list[float] = []
    for r in range(races):
        game = games[r % len(games)]
        grammar = grammars()[game]
        calls = rng.choice([p for p in commands()[game] if grammar.match(p.split()).cost == 0], 4)
        voices = [TUNE[int(i)] for i in rng.choice(len(TUNE), 4, replace=False)]
        audio = [scene(speech(str(c), v), "clean", r * 4 + i) for i, (c, v) in
                 enumerate(zip(calls, voices))]
        for a in audio:
            t0 = time.perf_counter()
            rec.decode(a, grammar)
            single.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        if hasattr(rec, "decode_many"):
            rec.decode_many(audio, grammar)
            four += [time.perf_counter() - t0] * 4
        else:
            four += _threads(rec).decode(audio, grammar, t0)
    return {"1 call": single, "4 at once": four}


class _FourThreads:
    """Four long-lived decoding threads (a recogniser may keep a decoder per thread), each
    with every grammar prepared before any race."""

    def __init__(self, rec: Recognizer) -> None:
        import queue

        self._rec = rec
        self._jobs = [queue.Queue() for _ in range(4)]  # type: ignore[var-annotated]
        self._done: queue.Queue[float] = queue.Queue()
        for q in self._jobs:
            threading.Thread(target=self._work, args=(q,), daemon=True).start()
        for q in self._jobs:
            q.put(None)
        for _ in self._jobs:
            self._done.get()

    def _work(self, q: Any) -> None:
        while True:
            job = q.get()
            if job is None:
                for g in grammars().values():
                    self._rec.prepare(g)
                self._done.put(0.0)
                continue
            audio, grammar, t0 = job
            self._rec.decode(audio, grammar)
            self._done.put(time.perf_counter() - t0)

    def decode(self, audio: list[np.ndarray], grammar: Grammar, t0: float) -> list[float]:
        for q, a in zip(self._jobs, audio):
            q.put((a, grammar, t0))
        return [self._done.get() for _ in audio]


_THREADS: dict[int, _FourThreads] = {}


def _threads(rec: Recognizer) -> _FourThreads:
    if id(rec) not in _THREADS:
        _THREADS[id(rec)] = _FourThreads(rec)
    return _THREADS[id(rec)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", choices=(*VOICES, "both", "all", "real"), default="both",
                        help="both: tune and heldout; all: every voice set; real: real speech only")
    parser.add_argument("--noise", choices=(*NOISES, "all"), default="all")
    parser.add_argument("--per-game", type=int, default=0, help="calls per game (0: all)")
    parser.add_argument("--backend", default="sphinx",
                        help="a backend, or several comma-separated (measured side by side); "
                        "free: the bench's baseline, PocketSphinx's free language model")
    parser.add_argument("--tuning", default="{}", help="SphinxTuning fields as JSON")
    parser.add_argument("--whisper-tuning", default="{}", help="WhisperTuning fields as JSON")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--verbose", action="store_true", help="list every error")
    parser.add_argument(
        "--moments", action="store_true",
        help="decode with one player's grammar of the moment (the others' phrases as rivals) "
        "where it is narrower than the game's, and beside it with the whole game's grammar; "
        "chatter counts only when taken for something the player may say then")
    parser.add_argument("--real", action="store_true", help="real speech too (../shared/real_speech)")
    parser.add_argument("--real-dir", type=Path, default=REAL_SPEECH)
    parser.add_argument("--real-per-word", type=int, default=0,
                        help="real clips per word and part (0: all)")
    parser.add_argument("--latency", type=int, default=0, metavar="N",
                        help="N races of four calls: latency one at a time and four at once")
    parser.add_argument("--dump", type=Path, help="write every Whisper decode as JSON lines")
    args = parser.parse_args(argv)
    backends = tuple(b.strip() for b in args.backend.split(",") if b.strip())
    known = (*recognition_backends(), "free")
    unknown = [b for b in backends if b not in known]
    if unknown or not backends:
        parser.error(f"--backend: {', '.join(unknown) or 'none given'}; choose from "
                     f"{', '.join(known)}")
    try:  # checked here: a worker that cannot start would be started again and again
        make_recognizer_tuning(args.tuning, args.whisper_tuning)
    except (ValueError, TypeError) as e:
        parser.error(f"--tuning / --whisper-tuning: {e}")
    splits = {"both": ("tune", "heldout"), "all": tuple(VOICES), "real": ()}.get(
        args.split, (args.split,))
    have_real = have_recordings()
    if args.noise == "real-babble" and not have_real:
        parser.error(f"real-babble needs the real recordings: no {REAL_SPEECH / 'manifest.tsv'}")
    noises = (tuple(n for n in NOISES if have_real or n != "real-babble")
              if args.noise == "all" else (args.noise,))
    dump = args.dump is not None
    jobs = [(v, n, s, args.per_game, args.moments, b, dump) for s in splits for n in noises
            for v in VOICES[s] for b in backends]
    real_jobs = []
    if args.real or args.split == "real":
        clips = per_word(real_clips(args.real_dir), args.real_per_word)
        chunks = [tuple(clips[i::8]) for i in range(8)]
        real_jobs = [(chunk, n, b, str(args.real_dir), dump) for n in noises for b in backends
                     for chunk in chunks]
    with Pool(args.jobs, _init, (backends, args.tuning, args.whisper_tuning)) as pool:
        results = [r for rs in pool.map(run_voice, jobs) for r in rs] if jobs else []
        real = [r for rs in pool.map(run_real, real_jobs) for r in rs] if real_jobs else []
        knocked = (pool.map(_knocks_job, [(b, i) for b in backends for i in range(KNOCK_CLIPS)])
                   if "clatter" in noises and jobs else [])
    if dump:
        with args.dump.open("w", encoding="utf-8") as f:
            for r in results:
                for line in r.records:
                    f.write(json.dumps({"backend": r.backend, **line}) + "\n")
            for rr in real:
                if rr.record:
                    f.write(json.dumps({"backend": rr.backend, "split": f"real-{rr.part}",
                                        "noise": rr.noise, "grammar": rr.grammar,
                                        "text": rr.text, "call": rr.kind == "call",
                                        "kind": rr.kind, "heard": rr.heard,
                                        **dict(rr.record)}) + "\n")
    kinds = tuple(dict.fromkeys(r.grammar for r in results))
    if results:
        print(f"{'backend':9s}{'split':8s}{'noise':12s}{'grammar':12s}{'voice':24s}"
              f"{'calls ok':>12s}{'chatter acc':>14s}")
    for r in results:
        print(f"{r.backend:9s}{r.split:8s}{r.noise:12s}{r.grammar:12s}{r.voice:24s}"
              f"{r.calls - len(r.errors):6d}/{r.calls:<5d}{len(r.accepts):8d}/{r.chatter:<5d}")
        if args.verbose:
            for line in r.errors + r.accepts:
                print("    " + line)
    print()
    for s in splits:
        for n in noises:
            for kind in kinds:
                for b in backends:
                    rs = [r for r in results
                          if r.split == s and r.noise == n and r.grammar == kind and r.backend == b]
                    calls = sum(r.calls for r in rs)
                    ok = calls - sum(len(r.errors) for r in rs)
                    chat = sum(r.chatter for r in rs)
                    acc = sum(len(r.accepts) for r in rs)
                    lat = np.concatenate([r.latency_s for r in rs]) * 1000
                    label = "" if kind == GAME else f"{kind:12s}"
                    print(f"{b:8s} {s:8s}{n:12s}{label} command accuracy {100 * ok / calls:5.1f}% "
                          f"({ok}/{calls})  chatter accepted {100 * acc / chat:4.1f}% "
                          f"({acc}/{chat})  finish latency mean {lat.mean():.0f} ms "
                          f"p95 {np.percentile(lat, 95):.0f} ms")
    for b in backends:
        accepted = [line for name, clip in knocked if name == b for line in clip]
        if not knocked:
            break
        n = KNOCK_CLIPS * len(grammars())
        print(f"{b:8s} knocks of cutlery alone accepted as a call "
              f"{100 * len(accepted) / n:4.1f}% ({len(accepted)}/{n})")
        if args.verbose:
            for line in accepted:
                print("    " + line)
    if real:
        print()
        report_real(real, args.verbose)
    if args.latency > 0:
        print()
        _init(backends, args.tuning, args.whisper_tuning)
        print(f"latency of {args.latency} races of four calls (this process, while nothing "
              "else of this script runs)")
        for b in backends:
            for label, values in race_latency(b, args.latency).items():
                ms = np.array(values) * 1000
                print(f"{b:8s} {label:10s} per call mean {ms.mean():4.0f} ms  "
                      f"p95 {np.percentile(ms, 95):4.0f} ms  max {ms.max():4.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
