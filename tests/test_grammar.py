"""Grammar building, expansion, matching, phrase files, game grammars and pronunciations."""

from __future__ import annotations

import pytest

from engine.decks import chaosteria, desserts, poutine
from voice.recognition.grammar import (
    Grammar,
    GrammarError,
    game_grammar,
    load_phrases,
    parse_phrases,
)
from voice.recognition.pronounce import ipa_to_arpabet, pronounce


def test_create_expand_size_and_repr() -> None:
    g = Grammar.create(["I serve {player} the {dish}!", "bell"], {"player": ["Ann", "Bob"],
                                                               "dish": ["Onion Soup", "tea"]})
    assert g.size == 5
    assert sorted(g.expand()) == sorted([
        "i serve ann the onion soup", "i serve ann the tea", "i serve bob the onion soup",
        "i serve bob the tea", "bell"])
    assert g.words == {"i", "serve", "the", "ann", "bob", "onion", "soup", "tea", "bell"}
    assert eval(repr(g), {"Grammar": Grammar}) == g
    # the longest phrase, in words and in letters, without expanding the grammar
    assert g.longest(len) == max(len(p.split()) for p in g.expand()) == 6
    letters = g.longest(lambda ws: sum(map(len, ws)))
    assert letters == max(len(p.replace(" ", "")) for p in g.expand()) == 21


def test_match_is_exact_or_costed() -> None:
    g = game_grammar("chaosteria", ["Ann", "Bob"])
    assert g.match(["i", "serve", "bob", "the", "onion", "soup"]).cost == 0
    near = g.match(["i", "serve", "bob", "the", "noodle", "soap"])
    assert (near.phrase, near.cost) == ("i serve bob the noodle soup", 1)
    assert g.match(["pass", "me", "the", "salt", "please"]).cost >= 3


def test_undefined_slot_and_bad_phrases_are_errors() -> None:
    with pytest.raises(GrammarError, match="undefined"):
        Grammar.create(["give {number} to bob"])
    with pytest.raises(GrammarError, match="no phrases"):
        Grammar.create([])


def test_phrase_file(tmp_path) -> None:
    path = tmp_path / "calls.txt"
    path.write_text("# calls\n@slot snack: pie | ice cream\nI want {snack}  # comment\n"
                    "{player} wins\n", encoding="utf-8")
    g = load_phrases(path, ["Maya", "Leo"])
    assert set(g.expand()) == {"i want pie", "i want ice cream", "maya wins", "leo wins"}
    with pytest.raises(GrammarError, match=r"calls\.txt:2"):
        parse_phrases("ok\n@slot broken\n", source="calls.txt")
    with pytest.raises(GrammarError, match="cannot read"):
        load_phrases(tmp_path / "missing.txt")


def test_game_grammars_hold_every_card_and_call() -> None:
    d = set(game_grammar("desserts", []).expand())
    assert {"got it", "i got it", "pass", "favorite", "apple pie and rocky road",
            "brownie eclair and sorbet"} <= d
    assert all(x.name.lower() in d for x in desserts().desserts)
    p = set(game_grammar("poutine", ["Ann", "Bob"]).expand())
    assert {"stop", "take it", "fries", "ann", "give two to bob"} <= p
    assert all(s in p for m in poutine().menu for s in m.spoken)
    c = game_grammar("chaosteria", ["Ann", "Bob"])  # orders of up to five: too many to expand

    def allowed(phrase: str) -> bool:
        return c.match(phrase.split()).cost == 0

    for dish in chaosteria().dishes:
        assert allowed(f"nobody ordered {dish.dish.lower()}")
        for v in dish.variants:
            assert allowed(f"i serve ann the {v.lower()}") and allowed(f"mine {v.lower()}")
    assert all(allowed(p) for p in ("bell", "return", "what did i order",
                                    "onion soup and rare steak and cola"))
    with pytest.raises(GrammarError, match="unknown game"):
        game_grammar("chess", [])
    with pytest.raises(GrammarError, match="player"):
        game_grammar("chaosteria", [])


def test_fsg_is_compact_and_ordered() -> None:
    g = game_grammar("desserts", [])
    assert g.size > 20_000 and len(g.fsg.transitions) < 600
    assert all(s < t for s, t, _ in g.fsg.transitions)


def test_pronunciations_map_to_arpabet() -> None:
    assert ipa_to_arpabet("pˈaʊtiːn") == ("P", "AW", "T", "IY", "N")
    got = pronounce(["priya", "bruschetta", "tiramisu"])
    assert got["priya"][:2] == ("P", "R") and "SH" in got["bruschetta"]
