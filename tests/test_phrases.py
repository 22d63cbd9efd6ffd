"""What the recogniser may hear is what the referee understands: grammar and intents agree."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from engine import chaosteria, desserts, poutine
from engine.core import GameState
from voice.recognition.grammar import NothingToSay, game_grammar
from voice.recognition.intents import UnparseableUtterance
from voice.table.games import GAMES

PLAYERS = ("Ann", "Bob", "Cat")
SLOT = re.compile(r"\{(\w+)\}")


def fill(template: str, slots: dict[str, tuple[str, ...]], rng: random.Random) -> str:
    return SLOT.sub(lambda m: rng.choice(slots[m.group(1)]), template)


def chaosteria_serving() -> GameState[Any]:
    """A table-orders game of Chaosteria with every order placed: serving has begun."""
    state = chaosteria.new_game(chaosteria.ChaosteriaConfig(PLAYERS, orders="table"), 1)
    deck = chaosteria.decks.chaosteria()
    by_category = {c: [d for d in deck.dishes if d.category == c] for c in deck.categories}
    for i, player in enumerate(PLAYERS):
        picks = tuple(by_category[c][i].variants[0] for c in deck.categories)
        state.apply(chaosteria.PlaceOrder(player, 1.0 + i, picks))
    assert state.phase == "serving"
    return state


STATES = {
    "desserts": lambda: desserts.new_game(desserts.DessertsConfig(PLAYERS), 1),
    "poutine": lambda: poutine.new_game(poutine.PoutineConfig(PLAYERS), 1),
    "chaosteria-ordering": lambda: chaosteria.new_game(
        chaosteria.ChaosteriaConfig(PLAYERS, orders="table"), 1),
    "chaosteria-serving": chaosteria_serving,
}


@pytest.mark.parametrize("moment", sorted(STATES))
def test_every_phrase_the_grammar_allows_is_understood(moment: str) -> None:
    game = GAMES[moment.split("-")[0]]
    state = STATES[moment]()
    templates, slots = game.phrases(PLAYERS, state, None)
    rng = random.Random(7)
    for template in templates:
        for _ in range(25):
            text = fill(template, slots, rng)
            try:
                game.parse(text, "Ann", state.t, state)
            except UnparseableUtterance as exc:
                pytest.fail(f"{moment}: the grammar allows {text!r} but the referee says: {exc}")


def test_the_kitchen_narrows_what_can_be_named() -> None:
    state = chaosteria_serving()
    templates, slots = GAMES["chaosteria"].phrases(PLAYERS, state, None)
    assert set(slots["dish"]) == {*state.kitchen, *([state.plate] if state.plate else [])}
    assert not any("{order}" in t for t in templates)


def test_each_player_may_say_only_what_the_rules_let_them_now() -> None:
    """Just Desserts: before anyone calls, calls only; once Ann has won the call she serves,
    Bob (who called too) waits, and Cat may still call. Each player's grammar keeps what the
    others may say as its rivals."""
    state = desserts.new_game(desserts.DessertsConfig(PLAYERS), 1)
    t = state.announced_t + 1.0
    calls = ("got it", "i got it", "pass", "i pass")
    assert GAMES["desserts"].phrases(PLAYERS, state, "Ann")[0] == calls
    state.apply(desserts.GotIt("Ann", t))
    later = state.at(t + 0.1)  # the verdict is due: Ann serves
    assert state.phase == "verdict pending" and later.phase == "serving"
    later.apply(desserts.GotIt("Bob", t + 0.2))
    ann = game_grammar("desserts", PLAYERS, later, "Ann")
    assert ann.match(["brownie", "and", "sorbet"]).cost == 0
    assert ann.match(["got", "it"]).cost > 0
    assert ann.rivals is not None and ann.rivals.match(["got", "it"]).cost == 0
    with pytest.raises(NothingToSay):
        game_grammar("desserts", PLAYERS, later, "Bob")
    assert GAMES["desserts"].phrases(PLAYERS, later, "Cat")[0] == calls
    assert game_grammar("desserts", PLAYERS, later).rivals is None  # everyone's: no rivals


def test_a_cook_offers_items_and_a_waitress_takes_them() -> None:
    """Miss Poutine: with the app's waitresses every player cooks; a player waitress takes
    offers by "take it" or the cook's name, and offers nothing."""
    house = poutine.new_game(poutine.PoutineConfig(PLAYERS), 1)
    assert GAMES["poutine"].phrases(PLAYERS, house, "Ann")[0] == ("{item}", "stop")
    four = (*PLAYERS, "Dan")
    tables = poutine.new_game(poutine.PoutineConfig(four, waitresses=("Cat", "Dan")), 1)
    assert GAMES["poutine"].phrases(four, tables, "Cat")[0] == ("stop", "take it", "{player}")
    assert GAMES["poutine"].phrases(four, tables, "Ann")[0] == ("{item}", "stop")


def test_with_house_orders_only_the_player_asked_orders_and_from_their_card() -> None:
    """Chaosteria: the app asks each player in turn to choose between the two variants of a
    card; the others have nothing to order then, and every order stays a rival."""
    state = chaosteria.new_game(chaosteria.ChaosteriaConfig(PLAYERS), 1)
    asked = state.players[0]
    card = chaosteria.dish_named(state.hands[asked][0])
    grammar = game_grammar("chaosteria", PLAYERS, state, asked)
    assert grammar.phrase_templates == ("{order}",)
    assert set(grammar.slot_map["order"]) == {v.lower() for v in card.variants}
    other = next(v for d in chaosteria.decks.chaosteria().dishes for v in d.variants
                 if v not in card.variants)
    assert grammar.rivals is not None and grammar.rivals.match(other.lower().split()).cost == 0
    with pytest.raises(NothingToSay):
        game_grammar("chaosteria", PLAYERS, state, PLAYERS[1])
    game = GAMES["chaosteria"]
    for variant in card.variants:
        assert isinstance(game.parse(variant, asked, state.t, state), chaosteria.PlaceOrder)
