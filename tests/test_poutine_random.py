"""Random play: Miss Poutine driven by random utterances through the real parser and engine.

Every menu card dealt is accepted or still held (per cook and in total), no
order slot is filled twice, no order card is lost, and the recorded history
replays to the same events and state.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import decks
from engine.core import Event, action_from_json
from engine.poutine import PoutineConfig, PoutineState, new_game
from voice.table.games import lookup
from voice.table.referee import Referee

pytestmark = pytest.mark.slow

PLAYERS = ("Ann", "Bob", "Cat", "Dan", "Eve", "Fay", "Gus", "Hal")
DECK = decks.poutine()
SPOKEN = {m.name: (m.name, *m.spoken) for m in (*DECK.menu, DECK.fries)}
NOISE = [
    "stop",
    "take it",
    "keep",
    "poutine",
    "burger and fries",
    "hmm",
    "Bob",
    "Zed",
    "give one to Bob",
    "give two to Ann and one to Cat",
    *(f for forms in SPOKEN.values() for f in forms),
]
TABLES = [(4, ()), (2, ()), (6, ()), (7, ()), (4, ("Ann", "Cat")), (8, ("Ann", "Eve"))]
VARIANTS = [(), ("gifts",), ("live",), ("gifts", "live")]
GAPS = [0.0, 0.01, 0.03, 0.05, 0.3, 0.5, 1.0, 1.0, 1.6, 3.5, 6.0, 25.0]


def components(card: decks.OrderCard) -> Counter[str]:
    return Counter(
        part
        for item in card.items
        for part in (DECK.poutine_needs if item == DECK.poutine else (item,))
    )


def check_invariants(state: PoutineState) -> None:
    total = DECK.menu_cards * state.copies
    orders = [o for w in state.waitresses for o in state.shown[w] + state.done[w]]
    accepted = Counter(s.cook for o in orders for s in o.slots if s.cook is not None)
    assert sum(state.dealt.values()) == total
    assert sum(state.gifted.values()) == 0
    for cook in state.cooks:
        assert state.dealt[cook] + state.gifted[cook] == accepted[cook] + state.left[cook]
        assert state.left[cook] >= 0 and (state.left[cook] > 0 or state.phase != "play")
    assert sum(accepted.values()) + sum(state.left.values()) == total
    assert set(accepted) <= set(state.cooks)
    for order in orders:
        assert Counter(s.item for s in order.slots) == components(order.card)
    for w in state.waitresses:
        assert all(o.empty_slots for o in state.shown[w]) and not any(
            o.empty_slots for o in state.done[w]
        )
        assert len(state.shown[w]) <= state.orders_shown
    dealt_orders = sum(
        len(state.piles[w]) + len(state.shown[w]) + len(state.done[w]) for w in state.waitresses
    )
    assert dealt_orders == len(DECK.orders) * state.copies
    assert max(state.mop.values()) <= 3
    assert state.finished == bool(state.losers) == (state.phase == "over")


def useful(state: PoutineState, data: st.DataObject) -> tuple[str, str]:
    """An utterance likely to move the game on: a gift, a take, or an item some order needs."""
    if state.phase == "gifts":
        giver = data.draw(st.sampled_from(sorted(state.givers)))
        mates = [
            p for p in (state.cooks if giver in state.cooks else state.waitresses) if p != giver
        ]
        return giver, data.draw(st.sampled_from(["keep", *(f"give one to {m}" for m in mates)]))
    if state.phase == "play" and not state.house and state.offers and data.draw(st.integers(0, 2)):
        takes = ["take it", *(o.cook for o in state.offers)]
        return data.draw(st.sampled_from(state.waitresses)), data.draw(st.sampled_from(takes))
    needed = sorted(
        {
            s.item
            for w in state.waitresses
            for o in state.shown[w]
            for s in o.slots
            if s.cook is None
        }
    )
    if state.phase != "play" or not needed:
        return data.draw(st.sampled_from(state.players)), "stop"
    item = data.draw(st.sampled_from(needed))
    leader = min(state.cooks, key=state.left.__getitem__)  # favoured, so that rounds end
    return data.draw(st.sampled_from((leader, leader, *state.cooks))), data.draw(
        st.sampled_from(SPOKEN[item])
    )


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    table=st.sampled_from(TABLES),
    variants=st.sampled_from(VARIANTS),
    seed=st.integers(0, 2**16),
    data=st.data(),
)
def test_random_play_keeps_every_card_and_replays(
    table: tuple[int, tuple[str, ...]], variants: tuple[str, ...], seed: int, data: st.DataObject
) -> None:
    n_players, waitresses = table
    config = PoutineConfig(PLAYERS[:n_players], waitresses, variants=variants)
    state = new_game(config, seed)
    referee = Referee(lookup("poutine"), state)
    events: list[Event] = list(state.opening)
    check_invariants(state)
    t = 0.0
    for _ in range(data.draw(st.integers(100, 400))):
        t += data.draw(st.sampled_from(GAPS))
        if data.draw(st.integers(0, 3)):
            player, text = useful(state, data)
        else:
            player, text = (
                data.draw(st.sampled_from(state.players)),
                data.draw(st.sampled_from(NOISE)),
            )
        events += referee.hear(t, player, text)
        check_invariants(state)
        if state.finished:
            break
    events += referee.tick(t + 60.0)
    check_invariants(state)

    fresh = new_game(config, seed)
    replayed = list(fresh.opening)
    for record in state.history:
        assert action_from_json(record.action.to_json()) == record.action
        replayed += fresh.apply(record.action)
    own = [e for e in events if e.kind not in ("refused", "not_understood")]
    assert replayed == own
    assert fresh.summary() == state.summary()
