"""Vosk (Kaldi) against the grammar of the moment: the phrase list plus ``[unk]``.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from voice.recognition.grammar import Grammar, UnknownWord
from voice.recognition.interface import (
    RATE_HZ,
    Hypothesis,
    Stream,
    decode_whole,
    edit_distance,
    judge,
    pcm16,
)


class _VoskStream:
    def __init__(self, recognizer: Any, grammar: Grammar, aliases: dict[str, str]) -> None:
        self._rec, self._grammar, self._aliases = recognizer, grammar, aliases

    def feed(self, samples: np.ndarray) -> None:
        self._rec.AcceptWaveform(pcm16(samples))

    def finish(self) -> Hypothesis:
        result = json.loads(self._rec.FinalResult())
        entries = result.get("result", [])
        words = tuple(
            (self._aliases.get(e["word"], e["word"]), float(e["start"]), float(e["end"]))
            for e in entries
        )
        heard = [w for w, _, _ in words]
        confidence = float(np.mean([e.get("conf", 1.0) for e in entries])) if entries else 0.0
        return judge(self._grammar, heard, words, confidence, "[unk]" not in heard)


class VoskRecognizer:
    """Vosk (Kaldi) with a runtime grammar; the model is loaded once, a KaldiRecognizer is
    made per utterance. A grammar word missing from the model's vocabulary is replaced by an
    in-vocabulary sound-alike (mapped back to the card's word in results), else UnknownWord."""

    name = "vosk"
    _models: ClassVar[dict[Path, Any]] = {}
    _models_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, model: str | Path | None = None) -> None:
        from voice.recognition import models

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

        from voice.recognition.pronounce import pronounce

        target = pronounce([word])[word]
        best: tuple[int, str] | None = None
        path = pocketsphinx.get_model_path("en-us/cmudict-en-us.dict")
        with open(path, encoding="utf-8") as f:
            for line in f:
                head, *phones = line.split()
                if "(" in head or abs(len(phones) - len(target)) > 1:
                    continue
                cost = edit_distance(target, phones)
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
        return decode_whole(self, samples, grammar)
