"""Speech recognition against the grammar of the moment, behind one small interface.

Backends are chosen by name (:func:`create_recognizer`); tests and tools may register fakes
with :func:`register_backend`. Heavy imports (pocketsphinx, vosk) happen inside backends.

Out-of-grammar speech must come back *not understood* (DESIGN principle 5):

* ``sphinx`` decodes with a finite-state grammar in which the allowed phrases compete with a
  garbage path (a loop over common English decoy words that are not grammar words). A result
  containing decoys, or whose lattice posterior is below `min_posterior`, is not understood.
* ``vosk`` decodes with the phrase list plus ``[unk]``; a result containing ``[unk]`` or
  not exactly an allowed phrase is not understood.

In both, the words heard are matched against the grammar with a word edit cost; only an exact
match (cost 0) counts as understood.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from voice.grammar import Grammar, UnknownWord

RATE_HZ = 16_000
Word = tuple[str, float, float]

DECOYS = (
    "the of and to a in is it you that he was for on are with as i his they be at one have "
    "this from or had by word but what some we can out other were all there when up use your "
    "how said an each she which do their time if will way about many then them would like so "
    "these her make see him has look more day could go come did no my over know than who may "
    "down now find any new work take get place made where after back only man year give our "
    "name very just think say help much mean before move right too same tell does want well "
    "also play here why ask need house try again point still never last let such please salt "
    "love game hey okay yeah wow sorry thanks fair turn wait good nice"
).split()


class RecognizerError(ValueError):
    """A recogniser could not be created or given this input (names backend and input)."""


@dataclass(frozen=True)
class Hypothesis:
    """What was heard: the text (the allowed phrase when understood), whether it is an allowed
    phrase, a confidence in [0, 1], and word timings in seconds from the start of the audio."""

    text: str
    understood: bool
    confidence: float
    words: tuple[Word, ...] = ()

    @classmethod
    def nothing(cls) -> Hypothesis:
        return cls("", False, 0.0)


class Stream(Protocol):
    """One utterance being decoded as its audio arrives; used from one thread only."""

    def feed(self, samples: np.ndarray) -> None: ...

    def finish(self) -> Hypothesis: ...


class Recognizer(Protocol):
    """Decodes 16 kHz mono float32 audio against a grammar."""

    name: str

    def prepare(self, grammar: Grammar) -> None:
        """Load `grammar` now (checking every word against the model) so decoding is fast."""

    def stream(self, grammar: Grammar) -> Stream: ...

    def decode(self, samples: np.ndarray, grammar: Grammar) -> Hypothesis: ...


def _pcm16(samples: np.ndarray) -> bytes:
    mono = np.asarray(samples, dtype=np.float32).reshape(-1)
    return (np.clip(mono, -1.0, 1.0) * 32767.0).astype("<i2").tobytes()


def _judge(grammar: Grammar, heard: list[str], words: tuple[Word, ...], confidence: float,
           ok: bool) -> Hypothesis:
    """Match the heard words against the grammar; understood only on an exact, clean match."""
    match = grammar.match(heard)
    understood = ok and match.cost == 0 and bool(heard)
    return Hypothesis(match.phrase if understood else " ".join(heard), understood,
                      confidence if understood else 0.0, words)


def _decode_whole(recognizer: Recognizer, samples: np.ndarray, grammar: Grammar) -> Hypothesis:
    stream = recognizer.stream(grammar)
    stream.feed(samples)
    return stream.finish()


# --- PocketSphinx ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SphinxTuning:
    """Garbage-model weights (entering the decoy loop, each decoy word), the least lattice
    posterior every word of an in-grammar result needs, how cepstral mean normalisation is
    done, and raw PocketSphinx options (``{"beam": 1e-40}``)."""

    garbage_prob: float = 1e-30
    decoy_prob: float = 1e-6
    min_posterior: float = 0.5
    cmn: str = "batch"
    config: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def from_json(cls, text: str) -> SphinxTuning:
        """Tuning from a JSON object of field values (``config`` as an object)."""
        fields = json.loads(text)
        fields["config"] = tuple(sorted(fields.get("config", {}).items()))
        return cls(**fields)


_CHUNK = 1600
"""Samples handed to PocketSphinx at a time (100 ms): how callers block the audio never
changes the result, so a streamed decode equals a whole one."""


class _SphinxStream:
    def __init__(self, owner: SphinxRecognizer, decoder: Any, search: str, grammar: Grammar):
        self._owner, self._decoder, self._grammar = owner, decoder, grammar
        self._pending = np.zeros(0, np.float32)
        self._live = owner.tuning.cmn == "live"
        decoder.activate_search(search)
        if self._live:
            decoder.set_cmn(owner.cmninit)
            decoder.start_utt()

    def feed(self, samples: np.ndarray) -> None:
        self._pending = np.concatenate([self._pending, np.asarray(samples, np.float32).reshape(-1)])
        if self._live and self._pending.size >= _CHUNK:
            n = self._pending.size - self._pending.size % _CHUNK
            self._decoder.process_raw(_pcm16(self._pending[:n]), False, False)
            self._pending = self._pending[n:]

    def finish(self) -> Hypothesis:
        d = self._decoder
        if not self._live:
            d.start_utt()
        d.process_raw(_pcm16(self._pending), False, not self._live)
        d.end_utt()
        hyp = d.hyp()
        if hyp is None:
            return Hypothesis.nothing()
        frame_s = 1.0 / d.config["frate"]
        words: list[Word] = []
        posterior = 1.0
        for seg in d.seg():
            if seg.word.startswith(("<", "[")):
                continue
            word = seg.word.split("(", 1)[0]
            words.append((word, seg.start_frame * frame_s, (seg.end_frame + 1) * frame_s))
            posterior = min(posterior, float(seg.prob))
        heard = [w for w, _, _ in words]
        return _judge(self._grammar, heard, tuple(words), posterior,
                      posterior >= self._owner.tuning.min_posterior)


class SphinxRecognizer:
    """PocketSphinx 5 with its bundled en-us model; one shared config, one decoder per thread
    (a decoder is never used from two threads), one FSG search per grammar per decoder."""

    name = "sphinx"

    def __init__(self, tuning: SphinxTuning | None = None, model_dir: Path | None = None) -> None:
        import pocketsphinx

        self.tuning = tuning or SphinxTuning()
        kwargs: dict[str, Any] = {"lm": None, "loglevel": "FATAL", **dict(self.tuning.config)}
        if model_dir is not None:
            kwargs.update(hmm=str(model_dir / "en-us" / "en-us"),
                          dict=str(model_dir / "en-us" / "cmudict-en-us.dict"))
        self._config = pocketsphinx.Config(**kwargs)
        self.cmninit = self._config["cmninit"]
        self._local = threading.local()
        self._lock = threading.Lock()
        self._pronunciations: dict[str, str] = {}

    def _decoder(self) -> Any:
        decoder = getattr(self._local, "decoder", None)
        if decoder is None:
            import pocketsphinx

            decoder = pocketsphinx.Decoder(self._config)
            self._local.decoder, self._local.searches = decoder, set()
            with self._lock:
                for word, phones in self._pronunciations.items():
                    decoder.add_word(word, phones, False)
        return decoder

    @staticmethod
    def _search_name(grammar: Grammar) -> str:
        return f"g{hash(grammar) & 0xFFFFFFFF:08x}"

    def _add_missing_words(self, decoder: Any, grammar: Grammar) -> None:
        from voice.pronounce import pronounce

        missing = sorted(w for w in grammar.words if decoder.lookup_word(w) is None)
        if not missing:
            return
        generated = {w: " ".join(p) for w, p in pronounce(missing).items()}
        for word, phones in generated.items():
            try:
                decoder.add_word(word, phones, True)
            except RuntimeError:
                raise UnknownWord(word, "pocketsphinx en-us", f"cannot add phones {phones!r}") from None
        with self._lock:
            self._pronunciations.update(generated)

    def prepare(self, grammar: Grammar) -> None:
        decoder = self._decoder()
        name = self._search_name(grammar)
        if name in self._local.searches:
            return
        self._add_missing_words(decoder, grammar)
        fsg = grammar.fsg
        arcs: list[tuple[Any, ...]] = [
            (s, t, 1.0, w) if w is not None else (s, t, 1.0) for s, t, w in fsg.transitions
        ]
        loop = fsg.n_states
        arcs.append((fsg.start, loop, self.tuning.garbage_prob))
        decoys = sorted(w for w in DECOYS if w not in grammar.words and decoder.lookup_word(w))
        arcs.extend((loop, loop, self.tuning.decoy_prob, w) for w in decoys)
        arcs.append((loop, fsg.final, 1.0))
        decoder.add_fsg(name, decoder.create_fsg(name, fsg.start, fsg.final, arcs))
        self._local.searches.add(name)

    def stream(self, grammar: Grammar) -> Stream:
        self.prepare(grammar)
        return _SphinxStream(self, self._decoder(), self._search_name(grammar), grammar)

    def decode(self, samples: np.ndarray, grammar: Grammar) -> Hypothesis:
        return _decode_whole(self, samples, grammar)


# --- Vosk ----------------------------------------------------------------------------------------


class _VoskStream:
    def __init__(self, recognizer: Any, grammar: Grammar, aliases: dict[str, str]) -> None:
        self._rec, self._grammar, self._aliases = recognizer, grammar, aliases

    def feed(self, samples: np.ndarray) -> None:
        self._rec.AcceptWaveform(_pcm16(samples))

    def finish(self) -> Hypothesis:
        result = json.loads(self._rec.FinalResult())
        entries = result.get("result", [])
        words = tuple(
            (self._aliases.get(e["word"], e["word"]), float(e["start"]), float(e["end"]))
            for e in entries
        )
        heard = [w for w, _, _ in words]
        confidence = float(np.mean([e.get("conf", 1.0) for e in entries])) if entries else 0.0
        return _judge(self._grammar, heard, words, confidence, "[unk]" not in heard)


class VoskRecognizer:
    """Vosk (Kaldi) with a runtime grammar; the model is loaded once, a KaldiRecognizer is
    made per utterance. A grammar word missing from the model's vocabulary is replaced by an
    in-vocabulary sound-alike (mapped back to the card's word in results), else UnknownWord."""

    name = "vosk"
    _models: dict[Path, Any] = {}
    _models_lock = threading.Lock()

    def __init__(self, model: str | Path | None = None) -> None:
        from voice import models

        if model is None:
            model = models.default_vosk_model()
            if model is None:
                raise models.ModelNotFound("no Vosk model installed (see 'orderup models')")
        path = Path(model)
        self.model_dir = path if path.is_dir() else models.require(str(model))
        import vosk

        vosk.SetLogLevel(-1)
        with self._models_lock:
            if self.model_dir not in self._models:
                self._models[self.model_dir] = vosk.Model(str(self.model_dir))
        self._model = self._models[self.model_dir]
        self._prepared: dict[Grammar, tuple[str, dict[str, str]]] = {}

    def _sound_alike(self, word: str) -> str:
        """The in-vocabulary English word whose CMU pronunciation is nearest to `word`'s."""
        import pocketsphinx

        from voice.pronounce import pronounce

        target = pronounce([word])[word]
        best: tuple[int, str] | None = None
        path = pocketsphinx.get_model_path("en-us/cmudict-en-us.dict")
        with open(path, encoding="utf-8") as f:
            for line in f:
                head, *phones = line.split()
                if "(" in head or abs(len(phones) - len(target)) > 1:
                    continue
                cost = _edit_distance(target, phones)
                if (best is None or cost < best[0]) and self._model.vosk_model_find_word(head) >= 0:
                    best = (cost, head)
        if best is None or best[0] > max(1, len(target) // 3):
            raise UnknownWord(word, f"vosk {self.model_dir.name}", "no sound-alike in the vocabulary")
        return best[1]

    def prepare(self, grammar: Grammar) -> None:
        if grammar in self._prepared:
            return
        replace = {w: self._sound_alike(w) for w in sorted(grammar.words)
                   if self._model.vosk_model_find_word(w) < 0}
        phrases = list(grammar.expand()) if grammar.size <= 2000 else list(grammar.chunks())
        spoken = [" ".join(replace.get(w, w) for w in p.split()) for p in phrases]
        text = json.dumps([*spoken, "[unk]"], ensure_ascii=False)
        self._prepared[grammar] = (text, {v: k for k, v in replace.items()})

    def stream(self, grammar: Grammar) -> Stream:
        import vosk

        self.prepare(grammar)
        text, aliases = self._prepared[grammar]
        rec = vosk.KaldiRecognizer(self._model, RATE_HZ, text)
        rec.SetWords(True)
        return _VoskStream(rec, grammar, aliases)

    def decode(self, samples: np.ndarray, grammar: Grammar) -> Hypothesis:
        return _decode_whole(self, samples, grammar)


def _edit_distance(a: list[str] | tuple[str, ...], b: list[str] | tuple[str, ...]) -> int:
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (x != y))
    return row[-1]


# --- factory -----------------------------------------------------------------------------------

_BACKENDS: dict[str, Callable[..., Recognizer]] = {
    "sphinx": SphinxRecognizer,
    "vosk": VoskRecognizer,
}


def register_backend(name: str, factory: Callable[..., Recognizer]) -> None:
    """Make `factory` available as backend `name` (a fake for tests, another engine)."""
    _BACKENDS[name] = factory


def backends() -> tuple[str, ...]:
    return tuple(_BACKENDS)


def create_recognizer(name: str = "sphinx", **options: Any) -> Recognizer:
    """A recogniser by backend name; unknown names raise RecognizerError listing the known."""
    factory = _BACKENDS.get(name)
    if factory is None:
        raise RecognizerError(f"unknown recogniser backend {name!r} (choose from {', '.join(_BACKENDS)})")
    return factory(**options)
