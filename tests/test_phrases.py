"""What the recogniser may hear is what the referee understands: grammar and intents agree."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from engine import chaosteria, desserts, poutine
from engine.core import GameState
from voice.games import GAMES
from voice.intents import UnparseableUtterance

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
    templates, slots = game.phrases(PLAYERS, state)
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
    templates, slots = GAMES["chaosteria"].phrases(PLAYERS, state)
    assert set(slots["dish"]) == {*state.kitchen, *([state.plate] if state.plate else [])}
    assert not any("{order}" in t for t in templates)
