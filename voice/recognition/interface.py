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

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from voice.recognition.grammar import Grammar

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


def pcm16(samples: np.ndarray) -> bytes:
    mono = np.asarray(samples, dtype=np.float32).reshape(-1)
    return (np.clip(mono, -1.0, 1.0) * 32767.0).astype("<i2").tobytes()


def judge(grammar: Grammar, heard: list[str], words: tuple[Word, ...], confidence: float,
           ok: bool) -> Hypothesis:
    """Match the heard words against the grammar; understood only on an exact, clean match."""
    match = grammar.match(heard)
    understood = ok and match.cost == 0 and bool(heard)
    return Hypothesis(match.phrase if understood else " ".join(heard), understood,
                      confidence if understood else 0.0, words)


def decode_whole(recognizer: Recognizer, samples: np.ndarray, grammar: Grammar) -> Hypothesis:
    stream = recognizer.stream(grammar)
    stream.feed(samples)
    return stream.finish()



def edit_distance(a: list[str] | tuple[str, ...], b: list[str] | tuple[str, ...]) -> int:
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (x != y))
    return row[-1]


# --- factory -----------------------------------------------------------------------------------

_BUILT_IN = {
    "sphinx": ("voice.recognition.sphinx", "SphinxRecognizer"),
    "vosk": ("voice.recognition.vosk", "VoskRecognizer"),
    "whisper": ("voice.recognition.whisper", "WhisperRecognizer"),
}
"""The built-in backends, imported only when asked for (each pulls in its engine)."""
_BACKENDS: dict[str, Callable[..., Recognizer]] = {}
DEFAULT_BACKEND = "whisper"
"""The backend a table is heard with unless another is chosen: on real people's voices it
gets the most calls right and takes the fewest other words for a call (README, "Which to
use")."""
SYNTHESISED_BACKEND = "sphinx"
"""The backend that hears synthesised (espeak-ng) voices best, such as the bundled demo's
players: with it the demo replays to its true scores, while Whisper writes Leo's "got it"
as "barted" and misses some dish names."""


def register_backend(name: str, factory: Callable[..., Recognizer]) -> None:
    """Make `factory` available as backend `name` (a fake for tests, another engine)."""
    _BACKENDS[name] = factory


def backends() -> tuple[str, ...]:
    return tuple(dict.fromkeys([*_BUILT_IN, *_BACKENDS]))


def create_recognizer(name: str = DEFAULT_BACKEND, **options: Any) -> Recognizer:
    """A recogniser by backend name; unknown names raise RecognizerError listing the known."""
    factory = _BACKENDS.get(name)
    if factory is None and name in _BUILT_IN:
        module, attr = _BUILT_IN[name]
        factory = getattr(importlib.import_module(module), attr)
    if factory is None:
        raise RecognizerError(f"unknown recogniser backend {name!r} (choose from {', '.join(backends())})")
    return factory(**options)
