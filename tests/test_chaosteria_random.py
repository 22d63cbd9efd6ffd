"""Random play: Chaosteria games driven by random utterances through the real parser.

Hypothesis picks, at every step, a speaker, a delay and either a sensible call
(the asked order, a serve of a kitchen dish, a return, a bell and a
correction) or a random one (any client, any dish, garbage). Invariants are
checked after every utterance; then a plain waiter finishes the game.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import decks
from engine.chaosteria import ChaosteriaConfig, ChaosteriaState, dish_named, new_game
from engine.core import Event
from voice.table.games import lookup
from voice.table.referee import Referee

pytestmark = pytest.mark.slow

NAMES = ("Andy", "Johnny", "Sophie", "Candy", "Ann", "Bob", "Cat", "Dan", "Eve", "Fay")
DECK = decks.chaosteria()
VARIANTS = [v for d in DECK.dishes for v in d.variants]
CARDS = len(DECK.dishes)
DELAYS = [0.0, 0.01, 0.03, 0.3, 1.0, 2.5]
GARBAGE = ["the moon", "uh", "bell bell", "what", "return return"]


def check_invariants(state: ChaosteriaState, events: list[Event]) -> None:
    orders = sum(len(o) for o in state.orders.values())
    order_cards = (
        sum(len(pile) for pile in state.order_piles.values())
        + sum(len(hand) for hand in state.hands.values())
        + orders
        + sum(len(won) for won in state.won.values())
        + len(state.order_discard)
    )
    assert order_cards == CARDS
    dish_cards = (
        len(state.dish_deck)
        + len(state.kitchen)
        + (state.plate is not None)
        + len(state.table)
        + sum(len(kept) for kept in state.kept.values())
        + len(state.dish_discard)
    )
    assert dish_cards == CARDS
    assert min(state.complaints.values()) >= 0
    assert len(state.kitchen) <= state.config.kitchen
    for player, won in state.won.items():
        assert all(card.owner != player or card.by_bell for card in won)
    for event in events:
        if event.kind == "served" and event.players[0] == event.players[1]:
            assert event.data["by_bell"] is True
    ordered = [d for o in state.orders.values() for d in o]
    assert len(ordered) == len(set(ordered))
    for mine in state.orders.values():
        categories = [dish_named(d).category for d in mine]
        assert len(categories) == len(set(categories))
    assert state.phase != "ordering" or not state.kitchen


def sensible(state: ChaosteriaState, rnd: st.DataObject) -> tuple[str, str]:
    """A plausible utterance for the moment (still often wrong: the variant is a guess)."""
    draw = rnd.draw
    players = state.players
    if state.phase == "ordering":
        if state.config.orders == "house":
            asked = next(p for p in players if state.hands[p])
            return asked, draw(st.sampled_from(dish_named(state.hands[asked][0]).variants))
        player = draw(
            st.sampled_from([p for p in players if len(state.orders[p]) < len(DECK.categories)])
        )
        mine = {dish_named(d).category for d in state.orders[player]}
        free = [d for c, pile in state.order_piles.items() if c not in mine for d in pile]
        picks = draw(st.lists(st.sampled_from(free), min_size=1, max_size=3, unique=True))
        by_category = {dish_named(d).category: d for d in picks}
        return player, ", ".join(
            draw(st.sampled_from(dish_named(d).variants)) for d in by_category.values()
        )
    if state.floor is not None:
        client = draw(st.sampled_from([*players, "nobody", "mine"]))
        dish = dish_named(str(state.plate))
        return state.floor, f"{client} ordered it, {draw(st.sampled_from(dish.variants))}"
    if state.plate is not None and draw(st.booleans()):
        return draw(st.sampled_from(players)), "bell"
    waiter = state.waiter
    if not state.kitchen:
        return waiter, "uh"
    if state.returning:
        return waiter, f"nobody ordered the {draw(st.sampled_from(state.kitchen))}"
    if draw(st.integers(0, 4)) == 0:
        return waiter, "return"
    dish = dish_named(draw(st.sampled_from(state.kitchen)))
    owner = state.owner(dish.dish)
    client = (
        owner
        if owner not in (None, waiter) and draw(st.booleans())
        else draw(st.sampled_from(players))
    )
    return waiter, f"{client}, {draw(st.sampled_from(dish.variants))}"


def wild(state: ChaosteriaState, rnd: st.DataObject) -> tuple[str, str]:
    """Any speaker saying anything of the game's words, or garbage."""
    draw = rnd.draw
    player = draw(st.sampled_from(state.players))
    client = draw(st.sampled_from([*state.players, "mine", "nobody"]))
    food = draw(st.sampled_from(VARIANTS + [d.dish for d in DECK.dishes]))
    text = draw(
        st.sampled_from(
            [
                f"{client}, {food}",
                f"{food} for {client}",
                food,
                "bell",
                "return",
                "what did I order?",
                f"{client} ordered it",
                *GARBAGE,
            ]
        )
    )
    return player, text


def finish(state: ChaosteriaState, referee: Referee, t: float) -> None:
    """A plain waiter serving the first kitchen dish (or returning) until the game ends."""
    for _ in range(200):
        t += 5.0
        events = referee.tick(t)
        check_invariants(state, events)
        if state.finished:
            return
        if state.phase == "ordering" or state.returning:
            speaker, text = _plain(state)
        else:
            speaker, text = state.waiter, _serve_first(state)
        check_invariants(state, referee.hear(t, speaker, text))
    raise AssertionError("the game did not end")


def _serve_first(state: ChaosteriaState) -> str:
    """A dish another player ordered, served as ordered; else the first dish to the next player."""
    for dish in state.kitchen:
        owner = state.owner(dish)
        if owner is not None and owner != state.waiter:
            return f"{owner}, {state.orders[owner][dish]}"
    dish = state.kitchen[0]
    client = state.players[(state.players.index(state.waiter) + 1) % len(state.players)]
    return f"{client}, {dish_named(dish).variants[0]}"


def _plain(state: ChaosteriaState) -> tuple[str, str]:
    if state.returning:
        return state.waiter, state.kitchen[0]
    if state.config.orders == "house":
        asked = next(p for p in state.players if state.hands[p])
        return asked, dish_named(state.hands[asked][0]).variants[0]
    player = next(p for p in state.players if len(state.orders[p]) < len(DECK.categories))
    mine = {dish_named(d).category for d in state.orders[player]}
    free = next(pile[0] for c, pile in state.order_piles.items() if c not in mine)
    return player, dish_named(free).variants[0]


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    n_players=st.integers(2, 10),
    orders=st.sampled_from(["house", "table"]),
    kitchen=st.integers(1, 4),
    seed=st.integers(0, 2**16),
    steps=st.integers(0, 150),
    rnd=st.data(),
)
def test_random_games_keep_every_card(
    n_players: int, orders: str, kitchen: int, seed: int, steps: int, rnd: st.DataObject
) -> None:
    config = ChaosteriaConfig(NAMES[:n_players], orders=orders, kitchen=kitchen)
    state = new_game(config, seed)
    referee = Referee(lookup("chaosteria"), state)
    check_invariants(state, state.opening)
    t = 0.0
    for _ in range(steps):
        if state.finished:
            break
        t += rnd.draw(st.sampled_from(DELAYS))
        speaker, text = (sensible if rnd.draw(st.integers(0, 3)) else wild)(state, rnd)
        check_invariants(state, referee.hear(t, speaker, text))
    finish(state, referee, t)
    assert state.outcome is not None
    assert not any(state.orders.values()) or not state.kitchen
    final = state.summary()
    for row in final["players"].values():
        assert row["score"] == 3 * row["order_cards"] + row["dish_cards"] - 2 * row["complaints"]
