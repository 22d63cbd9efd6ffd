"""Random play: whole games of Just Desserts driven by random utterances, invariants after each."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import decks
from engine.desserts import DessertsConfig, DessertsState, new_game
from voice.table.games import lookup
from voice.table.referee import Referee

PLAYERS = ("Ann", "Bob", "Cat", "Dan")
DESSERTS = [d.name.lower() for d in decks.desserts().desserts]
PHRASES = st.one_of(
    st.sampled_from(["got it", "I got it", "pass", "favorite", "what?", "the moon", "got"]),
    st.lists(st.sampled_from(DESSERTS), min_size=1, max_size=4).map(" and ".join),
    st.lists(st.sampled_from(DESSERTS), min_size=1, max_size=3).map(lambda d: "favorite " + ", ".join(d)),
)
STEP = st.tuples(
    st.sampled_from(PLAYERS),
    PHRASES,
    st.sampled_from([0.0, 0.005, 0.02, 0.039, 0.2, 0.8, 1.6, 4.0, 11.0, 25.0]),
)


def check_invariants(state: DessertsState) -> None:
    deck = decks.desserts()
    in_play = state.dessert_pile + sum(state.hands.values()) + sum(state.dirty.values())
    assert in_play + state.set_aside == deck.dessert_cards
    guests = len(state.guest_pile) + len(state.guest_discard) + sum(len(c) for c in state.collected.values())
    assert guests + (state.guest is not None) == len(deck.guests)
    assert min(state.hands.values()) >= 0 and min(state.dirty.values()) >= 0
    assert state.dessert_pile >= 0 and state.set_aside >= 0
    assert state.kitchen_open or state.dessert_pile == 0
    assert state.finished == (state.guest is None)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n_players=st.integers(2, 4),
    seed=st.integers(0, 2**16),
    steps=st.lists(STEP, max_size=120),
)
def test_random_games_keep_every_card(n_players: int, seed: int, steps: list[tuple[str, str, float]]) -> None:
    players = PLAYERS[:n_players]
    state = new_game(DessertsConfig(players), seed)
    referee = Referee(lookup("desserts"), state)
    check_invariants(state)
    t = 0.0
    for player, text, dt in steps:
        t += dt
        if player in players:
            referee.hear(t, player, text)
            check_invariants(state)
    referee.tick(t + 10_000.0)
    check_invariants(state)
    assert state.finished
