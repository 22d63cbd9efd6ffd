"""Speech recognition against the grammar of the moment, behind one small interface.

Backends are chosen by name (:func:`create_recognizer`); tests and tools may register fakes
with :func:`register_backend`. Heavy imports (pocketsphinx, vosk) happen inside backends.

Out-of-grammar speech must come back *not understood* (DESIGN principle 5):

* ``sphinx`` decodes with a finite-state grammar of exactly the allowed phrases (the minimal
  word graph, one path per phrase), with the grammar's rivals beside it, far less likely
  (:attr:`SphinxTuning.rival_weight`), takes the search's best path through that graph
  (Viterbi), and judges it by how much worse its words fit the audio than any sequence of
  phones does, and how much speech it leaves unexplained (see :class:`SphinxTuning`).
* ``vosk`` decodes with the phrase list plus ``[unk]`` where the model has it (its rival for
  everything else: a phrase list cannot weigh rivals); a result containing ``[unk]`` or not
  exactly an allowed phrase is not understood.

In both, the words heard are matched against the grammar with a word edit cost; only an exact
match (cost 0) counts as understood.
"""

from __future__ import annotations

import json
import math
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

import numpy as np

from voice.audio import MIN_SPEECH_MS, SPEECH_FRAME, frame_power, loud_frames, speech_like_frames
from voice.grammar import Fsg, Grammar, UnknownWord

RATE_HZ = 16_000
Word = tuple[str, float, float]

class RecognizerError(ValueError):
    """A recogniser could not be created or given this input (names backend and input)."""


@dataclass(frozen=True)
class Hypothesis:
    """What was heard: the text (the allowed phrase when understood), whether it is an allowed
    phrase, a confidence in [0, 1] (0 when not understood), and word timings in seconds from
    the start of the audio."""

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
    """When a grammar result counts as understood, and raw PocketSphinx options.

    The result is the search's Viterbi path, not the best path through its word lattice
    (PocketSphinx's ``bestpath``): the lattice's best path ignores the grammar's arc weights,
    so a rival phrase weighs as much as the player's own, and it need not reach the grammar's
    final state, so a long order could come out cut short ("… and chocolate" for "… and
    chocolate cake"), while it charges silence between words, so a call followed by quiet
    could lose to a rival word stretched over both ("pass" heard as "custard").
    Out-of-grammar speech still comes out as *some* phrase of a grammar-only search, so a
    result must also pass two scores computed from that path, and hold some speech at all:

    * `max_gap`: how much more the path's words cost per frame (acoustic log-likelihood,
      nats) than the best sequence of any phones over the same frames (a free phone loop,
      decoded from the same audio): chatter forced into a phrase fits it far worse than
      its own sounds; a call fits about as well. Unlike a cost against the best senone of
      each frame, it does not grow with what any speech pays in that model (a voice unlike
      its training, noise, a neighbour turned down), only with what the phrase adds. The
      hypothesis's confidence is the logistic of the margin, ``1 / (1 + e^(gap - max_gap))``
      (0.5 at the gate);
    * `max_speech_as_silence`: the share of the speech's energy (its speech-like frames, loud
      in the voice's band, :func:`voice.audio.speech_like_frames`) the path explains as
      silence or filler: chatter partly matched leaves loud words as "silence"; a knock around
      a call is not speech left over. Weighed by energy, not counted in frames: in a room a
      call dies away over tens of frames, still speech-like but 15-25 dB down, that the path
      rightly leaves out of the word;
    * `min_speech_ms`: how much of the audio must be speech-like: a knock of cutlery alone
      decodes as "pie" or "ann" as readily as chatter does.

    Chosen on synthesised *tune* voices only (scripts/measure_recognition.py).
    """

    max_gap: float = 3.0
    max_speech_as_silence: float = 0.05
    min_speech_ms: float = MIN_SPEECH_MS
    rival_weight: float = 1e-6
    """How much less likely a grammar's rivals (:attr:`voice.grammar.Grammar.rivals`) are
    than its own phrases; 0 leaves them out."""
    config: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def from_json(cls, text: str) -> SphinxTuning:
        """Tuning from a JSON object of field values (``config`` as an object)."""
        fields = json.loads(text)
        fields["config"] = tuple(sorted(fields.get("config", {}).items()))
        return cls(**fields)


_FRAME = SPEECH_FRAME
"""PocketSphinx's frame: 10 ms (its default frame rate, which the model was trained at)."""
_MARGIN_BEFORE, _MARGIN_AFTER = 5 * _FRAME, 10 * _FRAME
"""Audio kept before the first and after the last loud frame (a short pre-roll and tail)."""
_ROOM_AFTER = (np.random.default_rng(0).standard_normal(20 * _FRAME) * 1e-3).astype(np.float32)
"""200 ms of a quiet room (white noise at -60 dBFS) put after every call before it is decoded:
room for the path to close the phrase in silence, when the audio stops soon after the last
word."""


def _trim(samples: np.ndarray) -> tuple[np.ndarray, int]:
    """`samples` cut to its loud part plus a fixed pre-roll and tail, and where the cut
    starts: the decoder then sees the same context whatever silence the caller left around a
    call, and its per-utterance normalisation is not diluted by long pauses."""
    loud = np.flatnonzero(loud_frames(samples))
    if loud.size == 0:
        return samples, 0
    start = max(0, int(loud[0]) * _FRAME - _MARGIN_BEFORE)
    return samples[start : (int(loud[-1]) + 1) * _FRAME + _MARGIN_AFTER], start


def decode_afresh(decoder: Any, samples: np.ndarray) -> None:
    """One utterance through a PocketSphinx decoder, as if it were the decoder's first.

    Otherwise the front end carries its noise estimate over from the utterance before —
    another player's, from another mic, at a table — and equal audio gets unequal results.
    ``start_stream`` resets it; PocketSphinx 5 calls it deprecated and unnecessary, and
    without it results still depend on what came before (tests/test_recognize.py)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        decoder.start_stream()
    decoder.start_utt()
    decoder.process_raw(_pcm16(samples), False, True)
    decoder.end_utt()


@dataclass(frozen=True)
class _Spoken:
    """One word of the best path: its timing, its acoustic cost and the phone loop's over the
    same frames (nats), its frames, and the share of them that are speech
    (:func:`voice.audio.speech_like_frames`)."""

    word: Word
    cost: float
    loop_cost: float
    frames: int
    speech_share: float


_SCORE_SCALE = 1 << 10
"""PocketSphinx's search keeps its scores shifted right by 10 bits (SENSCR_SHIFT), and a
Viterbi path's word scores come out in those units: times this, natural log units."""

_PHONE_LOOP = "phones"
"""The search name of the free phone loop (every phone after any, no phone language model)."""


def _cost(seg: Any) -> float:
    """A Viterbi path segment's acoustic cost in nats (inf where its score underflowed)."""
    return -math.log(seg.ascore) * _SCORE_SCALE if seg.ascore > 0 else math.inf


def _spans_cost(spans: list[tuple[int, int, float]], first: int, last: int) -> float:
    """The cost of ``spans`` (first frame, last frame, cost) over frames ``first..last``, a
    span cut by that range counted by its share of frames inside."""
    return sum(c * (min(b, last) - max(a, first) + 1) / (b - a + 1)
               for a, b, c in spans if min(b, last) >= max(a, first))


_FADING_SPEECH_SHARE = 0.5
"""A last word with fewer of its frames speech than this is the call fading (`_fading_tail`)."""


class _SphinxStream:
    """Buffers the utterance, then decodes it whole at :meth:`finish`: batch cepstral mean
    normalisation over the call itself is exact for short calls (live CMN starts from a fixed
    guess and misleads the first frames), and the result cannot depend on how the caller
    split the audio. A 2 s call decodes in tens of ms, well within the latency budget."""

    def __init__(self, owner: SphinxRecognizer, decoder: Any, search: str, grammar: Grammar):
        self._owner, self._decoder, self._search, self._grammar = owner, decoder, search, grammar
        self._blocks: list[np.ndarray] = []

    def feed(self, samples: np.ndarray) -> None:
        self._blocks.append(np.asarray(samples, np.float32).reshape(-1))

    def finish(self) -> Hypothesis:
        d, tuning = self._decoder, self._owner.tuning
        audio, start = _trim(np.concatenate(self._blocks) if self._blocks else np.zeros(0, np.float32))
        audio = np.concatenate([audio, _ROOM_AFTER])
        d.activate_search(self._search)
        decode_afresh(d, audio)
        if d.hyp() is None:
            return Hypothesis.nothing()
        # a null transition of the grammar is no word and holds no frames
        path = [(seg.word, seg.start_frame, seg.end_frame, _cost(seg))
                for seg in d.seg() if seg.word != "(NULL)"]
        d.activate_search(_PHONE_LOOP)
        decode_afresh(d, audio)
        phones = [(seg.start_frame, seg.end_frame, _cost(seg)) for seg in d.seg() or ()]
        speech = speech_like_frames(audio)
        power = np.where(speech, frame_power(audio), 0.0)
        spoken: list[_Spoken] = []
        silent_power = 0.0
        for word, first, last, cost in path:
            span = slice(first, last + 1)
            if word.startswith(("<", "[")):
                silent_power += float(power[span].sum()) if word not in ("<s>", "</s>") else 0.0
                continue
            t0 = (start + first * _FRAME) / RATE_HZ
            t1 = t0 + (last + 1 - first) * _FRAME / RATE_HZ
            spoken.append(_Spoken((word.split("(", 1)[0], t0, t1), cost,
                                  _spans_cost(phones, first, last), last - first + 1,
                                  float(speech[span].mean())))
        if self._fading_tail(spoken):
            spoken.pop()
        frames = sum(w.frames for w in spoken)
        gap = sum(w.cost - w.loop_cost for w in spoken) / frames if frames else math.inf
        speech_frames = int(speech.sum())
        speech_as_silence = silent_power / max(float(power.sum()), 1e-12)
        ok = (gap <= tuning.max_gap and speech_as_silence <= tuning.max_speech_as_silence
              and speech_frames * _FRAME >= tuning.min_speech_ms * RATE_HZ / 1000)
        words = tuple(w.word for w in spoken)
        confidence = 1.0 / (1.0 + math.exp(min(gap - tuning.max_gap, 700.0)))
        return _judge(self._grammar, [w for w, _, _ in words], words, confidence, ok)

    def _fading_tail(self, spoken: list[_Spoken]) -> bool:
        """Whether the last word only leaves a whole phrase unfinished ("eclair and") and is
        mostly the call's fading end (less than half its frames speech): a word the decoder
        hung on the reverberation, a breath or the tail of a diphthong, not one said."""
        if len(spoken) < 2 or spoken[-1].speech_share >= _FADING_SPEECH_SHARE:
            return False
        heard = [w.word[0] for w in spoken]
        return self._grammar.match(heard).cost > 0 and self._grammar.match(heard[:-1]).cost == 0


def _arcs(fsg: Fsg, start: int, final: int, offset: int = 0,
          weight: float = 1.0) -> list[tuple[Any, ...]]:
    """A word graph's arcs as PocketSphinx's ``create_fsg`` takes them: its start and final
    states renamed ``start`` and ``final``, the others shifted by ``offset``, and the arcs
    out of its start at probability ``weight``."""

    def state(s: int) -> int:
        return start if s == fsg.start else final if s == fsg.final else s + offset

    return [(state(s), state(t), weight if s == fsg.start else 1.0, *(() if w is None else (w,)))
            for s, t, w in fsg.transitions]


def _pronunciations(decoder: Any, word: str) -> list[str]:
    """Every pronunciation the decoder's dictionary has for `word` ("word", "word(2)", …)."""
    found: list[str] = []
    while (phones := decoder.lookup_word(word if not found else f"{word}({len(found) + 1})")):
        found.append(phones)
    return found


class SphinxRecognizer:
    """PocketSphinx 5 with its bundled en-us model; one shared config, one decoder per thread
    (a decoder is never used from two threads), one FSG search per grammar per decoder."""

    name = "sphinx"

    def __init__(self, tuning: SphinxTuning | None = None, model_dir: Path | None = None) -> None:
        import pocketsphinx

        self.tuning = tuning or SphinxTuning()
        kwargs: dict[str, Any] = {"lm": None, "loglevel": "FATAL", **dict(self.tuning.config),
                                  "bestpath": False}
        if model_dir is not None:
            kwargs.update(hmm=str(model_dir / "en-us" / "en-us"),
                          dict=str(model_dir / "en-us" / "cmudict-en-us.dict"))
        self._config = pocketsphinx.Config(**kwargs)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._pronunciations: dict[str, str] = {}

    def _decoder(self) -> Any:
        decoder = getattr(self._local, "decoder", None)
        if decoder is None:
            import pocketsphinx

            decoder = pocketsphinx.Decoder(self._config)
            decoder.add_allphone_file(_PHONE_LOOP, None)
            self._local.decoder, self._local.searches, self._local.spelled = decoder, set(), set()
            with self._lock:
                for word, phones in self._pronunciations.items():
                    decoder.add_word(word, phones, False)
        return decoder

    @staticmethod
    def _search_name(grammar: Grammar) -> str:
        return f"g{hash(grammar) & 0xFFFFFFFF:08x}"

    def _spell(self, decoder: Any, words: frozenset[str]) -> None:
        """Words this decoder has not met: those the dictionary lacks spelled by espeak-ng,
        and each one's accent variants (:func:`voice.pronounce.accent_variants`) as
        alternative pronunciations."""
        from voice.pronounce import accent_variants, pronounce

        new = sorted(words - self._local.spelled)
        missing = [w for w in new if decoder.lookup_word(w) is None]
        generated = {w: " ".join(p) for w, p in pronounce(missing).items()}
        for word in new:
            known = _pronunciations(decoder, word) or [generated[word]]
            variants = [" ".join(v) for k in known for v in accent_variants(k.split())]
            for phones in dict.fromkeys(v for v in variants if v not in known):
                known.append(phones)
                generated[f"{word}({len(known)})"] = phones
        for word, phones in generated.items():
            try:
                decoder.add_word(word, phones, True)
            except RuntimeError:
                raise UnknownWord(word, "pocketsphinx en-us", f"cannot add phones {phones!r}") from None
        self._local.spelled.update(new)
        with self._lock:
            self._pronunciations.update(generated)

    def prepare(self, grammar: Grammar) -> None:
        decoder = self._decoder()
        name = self._search_name(grammar)
        if name in self._local.searches:
            return
        weight = self.tuning.rival_weight
        rivals = grammar.rivals if weight > 0 else None
        self._spell(decoder, grammar.words | (rivals.words if rivals else frozenset()))
        own = grammar.fsg
        arcs = _arcs(own, own.start, own.final)
        if rivals is not None:  # beside it, from the same start to the same final state
            arcs += _arcs(rivals.fsg, own.start, own.final, offset=own.n_states, weight=weight)
        decoder.add_fsg(name, decoder.create_fsg(name, own.start, own.final, arcs))
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
    _models: ClassVar[dict[Path, Any]] = {}
    _models_lock: ClassVar[threading.Lock] = threading.Lock()

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
        unk = ["[unk]"] if self._model.vosk_model_find_word("[unk]") >= 0 else []
        text = json.dumps([*spoken, *unk], ensure_ascii=False)
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
