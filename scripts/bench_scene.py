"""One benchmark scene through the voice pipeline and through the baselines (issue 7).

:func:`measure_scene` replays a scene's WAV exactly as ``orderup replay`` hears a recording
(the app's playback, when there is one, riding along as an extra channel so the app is not
taken for a player), runs onsets → recognition → arbitration, and scores everything against
the scene's truth. In the same pass it runs the baselines the benchmark compares with:

- :class:`NaiveDetector`: a per-mic fixed threshold (first 10 ms frame above −40 dBFS), no
  bleed handling;
- first-recognised-wins arbitration: the caller whose recognition finished first wins, with
  finishing times from the measured decode times;
- the free language model: PocketSphinx's default en-us n-gram model (default config), its
  text accepted only when it is exactly a phrase of the grammar;
- Vosk with the grammar, where an English Vosk model is installed;
- Whisper tiny.en held to the grammar (:mod:`voice.recognition.whisper`), where its model is
  installed (the set-up installs it), on the same segments: beside orderup's PocketSphinx,
  and on each race's calls decoded at once, one after another as the pipeline decodes them
  and in one encoder batch, against PocketSphinx decoding them one after another.

A worker process calls :func:`init_worker` once (the recognisers load there), then
:func:`measure_scene` per scene; the result is a JSON-ready dict (see :func:`measure_scene`).

One module, over 400 lines: orderup's pipeline, the baselines and the scoring against the
truth run over the same scene in one pass, so they cannot drift apart.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from voice.audio.files import WavSource, read_wav
from voice.audio.frames import PIPELINE_RATE_HZ
from voice.audio.live import MicInput
from voice.hearing.onsets import OnsetConfig
from voice.recognition.grammar import Grammar, game_grammar
from voice.recognition.intents import words
from voice.recognition.interface import Hypothesis, Recognizer, create_recognizer
from voice.recognition.sphinx import decode_afresh
from voice.table.arbiter import Utterance, rank
from voice.table.games import GAMES as GAME_BINDINGS
from voice.table.pipeline import Heard, Pipeline, recorded_frames
from voice.table.setup import SetupError, TableSetup, calibrate

RATE_HZ = PIPELINE_RATE_HZ
GAMES = tuple(GAME_BINDINGS)
"""The games whose grammars the scenes' phrases are decoded against."""
TIE_WINDOW_MS = 10.0
"""The tie window the first-speaker targets are stated for."""
PLAYERS = ("ann", "bob", "cara", "dev", "eve", "finn", "gus", "hana")
"""Seat names for the grammars' {player} slot and calibration's players: the names
scenes.SEAT_NAMES says in each scene's calibration take (not imported: the memory probe's
fresh process needs no room model)."""
NAIVE_FRAME_MS = 10.0
NAIVE_THRESHOLD_DBFS = -40.0
NAIVE_HANGOVER_MS = 300.0
"""The naive detector ends an utterance after this long below the threshold."""
MATCH_LEAD_MS = 50.0
"""A detected segment may start this much before the truth onset and still be that utterance."""
REVERB_TAIL_MS = 300.0
"""How long after a sound's dry end its reverberation can still trigger a detector."""
TRUTH_CUT_TAIL_MS = 150.0
"""Audio kept after a command's last sample when it is cut at the truth for the recogniser."""
MEMORY_SEGMENTS = 3
"""Segments the baseline decodes when its memory is measured."""
BASELINE_KINDS = ("commands", "chatter")
"""Scene kinds whose utterances the baseline recognisers decode too (the free model runs at
about real time: decoding every race call as well would not fit the benchmark's time)."""


# --------------------------------------------------------------------------- naive baseline


@dataclass(frozen=True)
class NaiveSegment:
    """An utterance the naive detector found: mic, onset and end in samples."""

    mic: int
    onset_sample: int
    end_sample: int


class NaiveDetector:
    """The baseline onset detector: per mic, an utterance starts at the first 10 ms frame whose
    level is above −40 dBFS and ends after 300 ms below it. Streaming, like the real one."""

    def __init__(self, channels: int) -> None:
        self.channels = channels
        self._frame = round(NAIVE_FRAME_MS * RATE_HZ / 1000)
        self._hangover = round(NAIVE_HANGOVER_MS * RATE_HZ / 1000)
        self._threshold = 10 ** (NAIVE_THRESHOLD_DBFS / 10)
        self._pending = np.zeros((0, channels), np.float32)
        self._done = 0  # samples analysed (whole frames)
        self._onset: list[int | None] = [None] * channels
        self._last_loud = [0] * channels

    def feed(self, samples: np.ndarray) -> list[NaiveSegment]:
        """Analyse (n, channels) samples; return the utterances that ended in them."""
        self._pending = np.concatenate([self._pending, samples])
        n = self._pending.shape[0] // self._frame
        frames = self._pending[: n * self._frame].reshape(n, self._frame, self.channels)
        self._pending = self._pending[n * self._frame :]
        loud = np.mean(frames.astype(np.float64) ** 2, axis=1) > self._threshold
        out = []
        for row in loud:
            start, self._done = self._done, self._done + self._frame
            for mic in range(self.channels):
                onset = self._onset[mic]
                if row[mic]:
                    if onset is None:
                        self._onset[mic] = start
                    self._last_loud[mic] = self._done
                elif onset is not None and self._done - self._last_loud[mic] >= self._hangover:
                    out.append(NaiveSegment(mic, onset, self._last_loud[mic]))
                    self._onset[mic] = None
        return out

    def flush(self) -> list[NaiveSegment]:
        """End of stream: end every open utterance."""
        out = [
            NaiveSegment(mic, onset, self._last_loud[mic])
            for mic, onset in enumerate(self._onset)
            if onset is not None
        ]
        self._onset = [None] * self.channels
        return out


# --------------------------------------------------------------------------- recognisers


class FreeLanguageModel:
    """The baseline recogniser: PocketSphinx's default en-us n-gram model, no grammar; its
    words are accepted only when they are exactly a phrase of the grammar of the moment."""

    def __init__(self) -> None:
        import pocketsphinx

        self._decoder = pocketsphinx.Decoder(loglevel="FATAL")

    def hear(self, samples: np.ndarray) -> list[str]:
        """The words the free model hears (no grammar involved)."""
        decode_afresh(self._decoder, samples)
        hyp = self._decoder.hyp()
        return list(words(hyp.hypstr)) if hyp is not None else []

    @staticmethod
    def judge(heard: list[str], grammar: Grammar) -> Hypothesis:
        """``heard`` as understood only when it is exactly a phrase of ``grammar``."""
        understood = bool(heard) and grammar.match(heard).cost == 0
        return Hypothesis(" ".join(heard), understood, 1.0 if understood else 0.0)

    def prepare(self, grammar: Grammar) -> None:
        """Nothing to prepare: the grammar is only used to judge what was heard."""

    def decode(self, samples: np.ndarray, grammar: Grammar) -> Hypothesis:
        """What the free model hears in ``samples``, judged against ``grammar``."""
        return self.judge(self.hear(samples), grammar)


@dataclass
class _Backends:
    sphinx: Recognizer
    free: FreeLanguageModel
    vosk: Recognizer | None
    whisper: Any
    """A :class:`voice.recognition.whisper.WhisperRecognizer`, or None."""


_WORKER: list[_Backends] = []


def english_vosk_model() -> str | None:
    """The first English Vosk model of the catalogue installed here, or None (the catalogue
    names a model's language only in its description)."""
    from voice.recognition import models

    return next(
        (
            e.name
            for e in models.CATALOGUE
            if e.backend == "vosk" and "English" in e.description and models.locate(e.name)
        ),
        None,
    )


def whisper_model() -> str | None:
    """Whisper's default model when it is installed here, else None."""
    from voice.recognition import models
    from voice.recognition.whisper import DEFAULT_MODEL

    return DEFAULT_MODEL if models.locate(DEFAULT_MODEL) else None


def init_worker() -> None:
    """Load the recognisers once per worker process."""
    vosk_model = english_vosk_model()
    _WORKER.append(
        _Backends(
            create_recognizer("sphinx"),
            FreeLanguageModel(),
            create_recognizer("vosk", model=vosk_model) if vosk_model else None,
            create_recognizer("whisper") if whisper_model() else None,
        )
    )


@functools.cache
def grammar_for(game: str, n_players: int) -> Grammar:
    """The game's grammar for a table of ``n_players`` (built once per worker)."""
    return game_grammar(game, PLAYERS[:n_players])


@functools.cache
def game_of(text: str) -> str:
    """The game whose grammar holds the phrase ``text`` (the calls belong to one game each)."""
    heard = list(words(text))
    for game in GAMES:
        if grammar_for(game, len(PLAYERS)).match(heard).cost == 0:
            return game
    raise ValueError(f"phrase {text!r} is in no game's grammar")


def scene_game(truth: dict[str, Any]) -> str:
    """The game a scene's phrases are decoded against: its first call's, else one by its seed."""
    calls = [u for u in truth["utterances"] if u["role"] == "call"]
    return game_of(calls[0]["text"]) if calls else GAMES[truth["seed"] % len(GAMES)]


def _timed(decode: Any, *args: Any) -> tuple[Any, float]:
    """``decode(*args)`` and its wall time in ms."""
    start = time.perf_counter()
    result = decode(*args)
    return result, (time.perf_counter() - start) * 1000


def _recognise(
    backends: _Backends,
    heard: Heard,
    games: Sequence[str],
    mics: int,
    baselines: bool,
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, float]]:
    """Each recogniser's results on one of orderup's segments against each of ``games``'
    grammars (the first is the scene's own game, already decoded by the pipeline), and its
    decode time (ms) against that one. The baseline recognisers run only when ``baselines``
    (the free model decodes once: its words do not depend on the grammar)."""
    results: dict[str, list[dict[str, Any]]] = {"sphinx": []}
    decode_ms = {"sphinx": heard.decode_ms}
    if baselines:
        free_words, decode_ms["free"] = _timed(backends.free.hear, heard.samples)
    for g in games:
        grammar = grammar_for(g, mics)
        hyps = {"sphinx": heard.hypothesis if g == games[0]
                else backends.sphinx.decode(heard.samples, grammar)}
        if baselines:
            hyps["free"] = backends.free.judge(free_words, grammar)
            for name, other in (("vosk", backends.vosk), ("whisper", backends.whisper)):
                if other is not None:
                    other.prepare(grammar)  # ahead of the call, as the table loop does
                    hyps[name], ms = _timed(other.decode, heard.samples, grammar)
                    decode_ms.setdefault(name, ms)
        for name, hyp in hyps.items():
            results.setdefault(name, []).append(
                {"game": g, "text": hyp.text, "understood": hyp.understood}
            )
    return results, {k: round(v, 2) for k, v in decode_ms.items()}


# --------------------------------------------------------------------------- scoring


@dataclass(frozen=True)
class _Span:
    """Where a truth utterance is on one mic: [start, stop) in samples, and whose it is."""

    mic: int | None
    role: str
    start: int
    stop: int


def _spans(utterances: Sequence[dict[str, Any]], mic: int) -> list[_Span]:
    """Every truth utterance as heard on ``mic``: from its arrival to its end plus reverb."""
    tail = round(REVERB_TAIL_MS * RATE_HZ / 1000)
    out = []
    for u in utterances:
        arrival = round(u["arrival_samples"][mic])
        length = u["end_sample"] - u["onset_sample"]
        out.append(_Span(u["mic"], u["role"], arrival, arrival + length + tail))
    return out


def score_segments(
    utterances: Sequence[dict[str, Any]], segments: Sequence[tuple[int, int, int]]
) -> tuple[dict[int, int], list[str]]:
    """Match detected (mic, onset, end) segments to the players' truth utterances.

    An utterance's match is the segment on its own mic overlapping [onset − 50 ms, end] with
    the onset nearest the truth. Returns {utterance index: segment index} and, per segment,
    its class: "match", "bleed" (it starts while another player's sound is on that mic),
    "app" (while the app's narration is) or "other" (noise, or a piece of a split utterance).
    """
    lead = round(MATCH_LEAD_MS * RATE_HZ / 1000)
    matches: dict[int, int] = {}
    for i, u in enumerate(utterances):
        if u["mic"] is None:
            continue
        near = [
            (abs(onset - u["onset_sample"]), k)
            for k, (mic, onset, end) in enumerate(segments)
            if mic == u["mic"] and onset <= u["end_sample"] and end >= u["onset_sample"] - lead
        ]
        if near:
            matches[i] = min(near)[1]
    matched = set(matches.values())
    classes = []
    for k, (mic, onset, _) in enumerate(segments):
        if k in matched:
            classes.append("match")
            continue
        during = [s for s in _spans(utterances, mic) if s.start <= onset < s.stop and s.mic != mic]
        if any(s.role != "app" for s in during):
            classes.append("bleed")
        elif during:
            classes.append("app")
        else:
            classes.append("other")
    return matches, classes


# --------------------------------------------------------------------------- one scene


def _run_pipeline(
    wav: Path, players: int, grammar: Grammar, sphinx: Recognizer,
    calibration: TableSetup | None = None, onsets: OnsetConfig | None = None,
) -> tuple[list[Heard], int]:
    """The table's pipeline (:class:`voice.table.pipeline.Pipeline`) over the scene, every
    utterance decoded with the scene's game grammar, uncalibrated or with `calibration`, its
    onset detector tuned by `onsets`; returns the utterances it released (in onset order)
    and the onsets it rejected as bleed."""
    playback = wav.with_suffix(".app.wav")
    app = str(playback) if playback.exists() else None
    sphinx.prepare(grammar)  # ahead of the calls, as the table loop does
    pipeline = Pipeline(PLAYERS[:players], sphinx, lambda mic, onset_s: grammar,
                        app_channel=app is not None, tie_window_ms=TIE_WINDOW_MS,
                        calibration=calibration, onsets=onsets)
    heard = list(pipeline.run(recorded_frames(WavSource(wav), app)))
    return heard, pipeline.ears.detector.rejected_bleed


def table_setup(wav: Path, players: int) -> TableSetup | None:
    """The set-up ``orderup calibrate`` saves at the scene's table, from its calibration take
    (NAME.calibration.wav), as the README's steps have players calibrate before a game; None
    (an uncalibrated table) when calibration refuses the table or maps a player to another
    mic than their own, as a table would then play."""
    take = wav.with_name(f"{wav.stem}.calibration.wav")
    try:
        found = calibrate(read_wav(take), PLAYERS[:players])
    except SetupError:
        return None
    if found.channels != tuple(range(players)):
        return None
    return found.table_setup([MicInput(None, ch) for ch in range(players)])


def _run_naive(wav: Path) -> list[NaiveSegment]:
    """The naive detector's utterances over the scene (the players' mics only)."""
    source = WavSource(wav)
    detector = NaiveDetector(source.channels)
    segments = [s for frame in source for s in detector.feed(frame.samples)]
    return segments + detector.flush()


def _first_speaker(truth: dict[str, Any], heard: list[Heard]) -> dict[str, Any]:
    """Who each arbitration names first in a race, beside the truth (tie window 10 ms)."""
    import scenes  # here, not at the top: the memory probe's fresh process needs no room model

    text = " ".join(words(truth["expected"]["calls"][0]["text"]))

    def said(h: Heard) -> str | None:
        return h.text if h.understood else None

    released = [Utterance(h.mic, h.onset_s, h) for h in heard]
    by_onset = rank(released, TIE_WINDOW_MS, lambda _: "call").get("call")
    by_text = rank(released, TIE_WINDOW_MS, said).get(text)

    def first_recognised(candidates: list[Heard]) -> list[int]:
        done = [(h.delivered_s + h.decode_ms / 1000, h.mic) for h in candidates]
        return [min(done)[1]] if done else []

    calls = truth["expected"]["calls"]
    return {
        "gap_ms": calls[1]["gap_ms"],  # a race has two callers or three
        "expected": sorted(scenes.first_callers(truth, TIE_WINDOW_MS)),
        "onsets": sorted(by_onset.first) if by_onset else [],
        "text": sorted(by_text.first) if by_text else [],
        "first_recognised": first_recognised(heard),
        "first_recognised_text": first_recognised([h for h in heard if said(h) == text]),
    }


def _truth_cut(
    wav: Path, utterance: dict[str, Any], grammar: Grammar, recognizer: Recognizer
) -> dict[str, Any]:
    """The recogniser alone: its result on the utterance cut from its own mic at the truth
    (the detector's pre-roll before, TRUTH_CUT_TAIL_MS after), whatever the detector did."""
    pre_roll = round(OnsetConfig().pre_roll_ms * RATE_HZ / 1000)
    tail = round(TRUTH_CUT_TAIL_MS * RATE_HZ / 1000)
    audio = read_wav(wav)[:, utterance["mic"]]
    start = max(0, utterance["onset_sample"] - pre_roll)
    hyp = recognizer.decode(audio[start : utterance["end_sample"] + tail], grammar)
    return {"game": None, "text": hyp.text, "understood": hyp.understood}


def _race_at_once(backends: _Backends, heard: list[Heard], grammar: Grammar) -> dict[str, Any]:
    """A race's utterances decoded at once, ms from the moment all are heard to the last
    text: one after another, as the pipeline decodes them (PocketSphinx's measured decode
    times summed; Whisper's, each decoded in turn), and Whisper's in one batch
    (``whisper_batch``, :meth:`~voice.recognition.whisper.WhisperRecognizer.decode_many`)."""
    out: dict[str, Any] = {"n": len(heard), "sphinx": round(sum(h.decode_ms for h in heard), 2)}
    if backends.whisper is not None and heard:
        backends.whisper.prepare(grammar)  # ahead of the calls, as the table loop does
        each = [_timed(backends.whisper.decode, h.samples, grammar)[1] for h in heard]
        _, batch = _timed(backends.whisper.decode_many, [h.samples for h in heard], grammar)
        out["whisper"], out["whisper_batch"] = round(sum(each), 2), round(batch, 2)
    return out


def _or_fail(measure: Callable[[str], dict[str, Any]], wav_path: str) -> dict[str, Any]:
    """``measure(wav_path)``, or {"name", "error"} when the pipeline raises on the scene: the
    benchmark reports such scenes (DESIGN: bad audio is survived, never a traceback) and
    still measures the others."""
    try:
        return measure(wav_path)
    except Exception as exc:  # noqa: BLE001 - any failure of the code under test is a result
        return {"name": Path(wav_path).stem, "error": f"{type(exc).__name__}: {exc}"}


def measure_or_fail(wav_path: str) -> dict[str, Any]:
    """:func:`measure_scene`, or the error it raised (:func:`_or_fail`)."""
    return _or_fail(measure_scene, wav_path)


def measure_scene(wav_path: str) -> dict[str, Any]:
    """Run the pipeline and the baselines over one scene; score them against its truth.

    Returns: name, kind, split, snr_db, noise, mics, duration_s; ``utterances`` (one per
    player utterance: role, text, onset error of orderup and of the naive detector in ms or
    None when missed; on orderup's segment: each recogniser's results and decode time, and
    the time from the truth end of speech to the segment's delivery);
    ``false`` (orderup's and the naive detector's unmatched segments by class);
    ``decode_ms`` per recogniser; ``rejected_bleed``; for races ``first`` (see
    :func:`_first_speaker`).
    """
    backends = _WORKER[0]
    wav = Path(wav_path)
    truth = json.loads(wav.with_suffix(".json").read_text(encoding="utf-8"))
    mics = len(truth["mics_m"])
    game = scene_game(truth)
    grammar = grammar_for(game, mics)
    heard, rejected = _run_pipeline(wav, mics, grammar, backends.sphinx)
    naive = _run_naive(wav)

    utterances = truth["utterances"]
    ours, our_classes = score_segments(
        utterances, [(h.mic, h.onset_sample, h.end_sample) for h in heard]
    )
    theirs, naive_classes = score_segments(
        utterances, [(s.mic, s.onset_sample, s.end_sample) for s in naive]
    )
    decode_ms: dict[str, list[float]] = {"sphinx": [h.decode_ms for h in heard], "free": []}
    for name in ("vosk", "whisper"):
        if getattr(backends, name) is not None:
            decode_ms[name] = []
    records = []
    for i, u in enumerate(utterances):
        if u["mic"] is None:
            continue
        record: dict[str, Any] = {
            "role": u["role"],
            "text": " ".join(words(u["text"])),
            "onset_error_ms": None,
            "naive_onset_error_ms": None,
            "results": {},
        }
        if i in theirs:
            error = naive[theirs[i]].onset_sample - u["onset_sample"]
            record["naive_onset_error_ms"] = round(error * 1000 / RATE_HZ, 3)
        if i in ours:
            h = heard[ours[i]]
            record["onset_error_ms"] = _onset_error_ms(h, u)
            record["end_to_delivery_ms"] = round(
                h.delivered_s * 1000 - u["end_sample"] * 1000 / RATE_HZ, 1
            )
            games = (game,) if u["role"] == "call" else (game, *(g for g in GAMES if g != game))
            record["results"], record["decode_ms"] = _recognise(
                backends, h, games, mics, truth["kind"] in BASELINE_KINDS
            )
            for name, ms in record["decode_ms"].items():
                if name != "sphinx":
                    decode_ms[name].append(ms)
        if truth["kind"] == "commands":
            record["results"]["truth_cut"] = [_truth_cut(wav, u, grammar, backends.sphinx)]
            if backends.whisper is not None:
                record["results"]["whisper_truth_cut"] = [
                    _truth_cut(wav, u, grammar, backends.whisper)]
        records.append(record)

    out: dict[str, Any] = {
        "name": truth["name"],
        "kind": truth["kind"],
        "split": truth["split"],
        "snr_db": truth["condition"]["snr_db"],
        "noise": truth["condition"]["noise"],
        "mics": mics,
        "duration_s": truth["duration_s"],
        "utterances": records,
        "false": {"orderup": _by_class(our_classes), "naive": _by_class(naive_classes)},
        "decode_ms": {k: [round(v, 2) for v in vs] for k, vs in decode_ms.items()},
        "rejected_bleed": rejected,
    }
    if truth["kind"] == "race":
        out["first"] = _first_speaker(truth, heard)
        out["at_once_ms"] = _race_at_once(backends, heard, grammar)
    calibrated = heard_calibrated(wav, truth, grammar, backends.sphinx)
    if calibrated is not None:
        out["calibrated"] = calibrated
    return out


def _onset_error_ms(heard: Heard, utterance: dict[str, Any]) -> float:
    """How far (ms) a heard utterance's onset is from its truth's, on its own mic."""
    return round((heard.onset_sample - utterance["onset_sample"]) * 1000 / RATE_HZ, 3)


def _by_class(classes: list[str]) -> dict[str, int]:
    """How many false utterances of each class (:func:`score_segments`)."""
    return {c: classes.count(c) for c in ("bleed", "app", "other")}


def heard_at_table(
    wav: Path, truth: dict[str, Any], grammar: Grammar, sphinx: Recognizer,
    setup: TableSetup | None = None, onsets: OnsetConfig | None = None,
) -> dict[str, Any]:
    """The scene heard at its table, uncalibrated or as ``orderup calibrate`` set it up
    (`setup`), its onset detector tuned by `onsets`: each player utterance's onset error (ms,
    None when missed; in the order of ``utterances``), the false utterances by class and, for
    races, who was first."""
    heard, _ = _run_pipeline(wav, len(truth["mics_m"]), grammar, sphinx, setup, onsets)
    utterances = truth["utterances"]
    found, classes = score_segments(
        utterances, [(h.mic, h.onset_sample, h.end_sample) for h in heard]
    )
    out: dict[str, Any] = {
        "onset_error_ms": [
            _onset_error_ms(heard[found[i]], u) if i in found else None
            for i, u in enumerate(utterances) if u["mic"] is not None
        ],
        "false": _by_class(classes),
    }
    if truth["kind"] == "race":
        out["first"] = _first_speaker(truth, heard)
    return out


def heard_calibrated(wav: Path, truth: dict[str, Any], grammar: Grammar, sphinx: Recognizer,
                     onsets: OnsetConfig | None = None) -> dict[str, Any] | None:
    """The scene heard at its table as ``orderup calibrate`` sets it up
    (:func:`heard_at_table`), or None where calibration refuses the table."""
    setup = table_setup(wav, len(truth["mics_m"]))
    return None if setup is None else heard_at_table(wav, truth, grammar, sphinx, setup, onsets)


def heard_both_ways(wav_path: str, sphinx: Recognizer,
                    onsets: OnsetConfig | None = None) -> dict[str, Any]:
    """One scene's name and split, heard at its table uncalibrated and, where calibration
    sets the table up, calibrated (:func:`heard_at_table`): onset detection alone, as
    scripts/measure_detection.py and the bench's recorded babble measure it."""
    wav = Path(wav_path)
    truth = json.loads(wav.with_suffix(".json").read_text(encoding="utf-8"))
    mics = len(truth["mics_m"])
    grammar = grammar_for(scene_game(truth), mics)
    out = {"name": truth["name"], "split": truth["split"],
           "uncalibrated": heard_at_table(wav, truth, grammar, sphinx, onsets=onsets)}
    calibrated = heard_calibrated(wav, truth, grammar, sphinx, onsets)
    if calibrated is not None:
        out["calibrated"] = calibrated
    return out


def detection_or_fail(wav_path: str) -> dict[str, Any]:
    """:func:`heard_both_ways` with this worker's PocketSphinx, or the error it raised
    (:func:`_or_fail`)."""
    return _or_fail(lambda path: heard_both_ways(path, _WORKER[0].sphinx), wav_path)


def peak_rss_mb(pipeline: str, wav_path: str) -> float:
    """Peak resident memory (MB) of this process after running ``pipeline`` over one scene:
    "orderup" (the onset detector, the grammar recogniser, the arbiter) or "baseline" (the
    naive detector and the free language model on its first few segments: the models are
    loaded and in use by then). Meant for a fresh process, one pipeline each: on Linux the
    process's own high-water mark (VmHWM; ru_maxrss would include its parent's, as it survives
    exec), elsewhere ru_maxrss."""
    import resource

    wav = Path(wav_path)
    mics = len(json.loads(wav.with_suffix(".json").read_text(encoding="utf-8"))["mics_m"])
    if pipeline == "orderup":
        _run_pipeline(wav, mics, grammar_for("desserts", mics), create_recognizer("sphinx"))
    else:
        free, audio = FreeLanguageModel(), read_wav(wav)
        for s in _run_naive(wav)[:MEMORY_SEGMENTS]:
            free.hear(audio[s.onset_sample : s.end_sample, s.mic])
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
