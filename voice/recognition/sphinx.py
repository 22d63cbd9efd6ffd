"""PocketSphinx against the grammar of the moment: a finite-state grammar of exactly the
allowed phrases, its best path judged against a free phone loop (see :class:`SphinxTuning`).
"""

from __future__ import annotations

import json
import math
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from voice.audio.frames import (
    MIN_SPEECH_MS,
    SPEECH_FRAME,
    frame_power,
    loud_frames,
    speech_like_frames,
)
from voice.recognition.grammar import Fsg, Grammar, UnknownWord
from voice.recognition.interface import (
    RATE_HZ,
    Hypothesis,
    Stream,
    Word,
    decode_whole,
    judge,
    pcm16,
)


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
      in the voice's band, :func:`voice.audio.frames.speech_like_frames`) the path explains as
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
    """How much less likely a grammar's rivals (:attr:`voice.recognition.grammar.Grammar.rivals`) are
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
    decoder.process_raw(pcm16(samples), False, True)
    decoder.end_utt()


@dataclass(frozen=True)
class _Spoken:
    """One word of the best path: its timing, its acoustic cost and the phone loop's over the
    same frames (nats), its frames, and the share of them that are speech
    (:func:`voice.audio.frames.speech_like_frames`)."""

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
        return judge(self._grammar, [w for w, _, _ in words], words, confidence, ok)

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
            self._local.decoder, self._local.searches, self._local.spelled = decoder, {}, set()
            with self._lock:
                for word, phones in self._pronunciations.items():
                    decoder.add_word(word, phones, False)
        return decoder

    def _spell(self, decoder: Any, words: frozenset[str]) -> None:
        """Words this decoder has not met: those the dictionary lacks spelled by espeak-ng,
        and each one's accent variants (:func:`voice.recognition.pronounce.accent_variants`) as
        alternative pronunciations."""
        from voice.recognition.pronounce import accent_variants, pronounce

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
        self._search(grammar)

    def _search(self, grammar: Grammar) -> str:
        """Add ``grammar``'s search to this thread's decoder unless it has it; return its name.

        Searches are named by the order grammars are first met (a dict keyed by the grammar
        itself), so two grammars never share a name, whatever their hashes."""
        decoder = self._decoder()
        name = self._local.searches.get(grammar)
        if name is not None:
            return name
        name = f"g{len(self._local.searches)}"
        weight = self.tuning.rival_weight
        rivals = grammar.rivals if weight > 0 else None
        self._spell(decoder, grammar.words | (rivals.words if rivals else frozenset()))
        own = grammar.fsg
        arcs = _arcs(own, own.start, own.final)
        if rivals is not None:  # beside it, from the same start to the same final state
            arcs += _arcs(rivals.fsg, own.start, own.final, offset=own.n_states, weight=weight)
        decoder.add_fsg(name, decoder.create_fsg(name, own.start, own.final, arcs))
        self._local.searches[grammar] = name
        return name

    def stream(self, grammar: Grammar) -> Stream:
        name = self._search(grammar)
        return _SphinxStream(self, self._decoder(), name, grammar)

    def decode(self, samples: np.ndarray, grammar: Grammar) -> Hypothesis:
        return decode_whole(self, samples, grammar)
