"""Just Desserts rules (docs/rules.md §1), each outcome as a short transcript."""

from __future__ import annotations

from typing import Any

import pytest
from referee_helpers import kinds, referee

from engine import decks
from engine.core import ConfigError, IllegalAction, Tick, action_from_json, spoken_s
from engine.desserts import DessertsConfig, GotIt, Serve, new_game, satisfies

HEAD = "@players Ann, Bob, Cat\n@seed 7\n"


def play(body: str, *argv: str, stack: str = "Rocky, Frosty, Lemon Lucy") -> tuple[list[dict[str, Any]], dict[str, Any]]:
    events, final, code = referee("desserts", HEAD + f"@stack guests: {stack}\n" + body, *argv)
    assert code == 0, events
    return events, final


def scores(final: dict[str, Any], field: str) -> dict[str, int]:
    return {p: v[field] for p, v in final["players"].items()}


def first_of(events: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    return next(e for e in events if e["type"] == kind)


def test_opening_deals_five_and_announces_the_stacked_guest() -> None:
    events, final = play("")
    assert kinds(events) == ["deal", "guest"]
    assert events[1]["say"] == (
        "Next guest: Rocky. Craves chocolate and frozen. Dislikes cream. Favorite: Rocky Road."
    )
    assert scores(final, "hand") == {"Ann": 5, "Bob": 5, "Cat": 5}
    assert final["finished"] is False


def test_all_pass_discards_the_guest_and_everyone_draws() -> None:
    events, final = play("1.0 Ann: pass\n1.5 Bob: I pass\n2.0 Cat: pass.\n")
    assert kinds(events)[2:] == ["all_pass", "guest_leaves", "draw", "guest"]
    assert events[-1]["guest"] == "Frosty"
    assert scores(final, "hand") == {"Ann": 6, "Bob": 6, "Cat": 6}


def test_two_passes_are_not_all_pass() -> None:
    events, _ = play("1.0 Ann: pass\n1.5 Bob: pass\n")
    assert "all_pass" not in kinds(events)


def test_guest_timeout_counts_as_all_pass() -> None:
    events, final = play("1.0 Ann: pass\n40.0 Ann: got it\n")
    assert kinds(events)[2:6] == ["timeout", "guest_leaves", "draw", "guest"]
    assert first_of(events, "guest")["guest"] == "Rocky" and events[5]["guest"] == "Frosty"
    assert scores(final, "hand") == {"Ann": 6, "Bob": 6, "Cat": 6}


def test_guest_timeout_runs_from_the_end_of_the_announcement() -> None:
    events, _ = play("70.0 Ann: got it\n")
    deal, rocky, timeout, leaves, draw, frosty, timeout2 = events[:7]
    # The players hear Rocky once the deal and Rocky's line are said: some seconds in.
    heard = spoken_s(f"{deal['say']} {rocky['say']}")
    assert 8.0 < heard < 12.0
    assert timeout["t"] == pytest.approx(heard + 20.0)
    # Frosty is heard after the lines said at the timeout, Frosty's last.
    said = " ".join(e["say"] for e in (timeout, leaves, draw, frosty))
    assert timeout2["type"] == "timeout"
    assert timeout2["t"] == pytest.approx(timeout["t"] + spoken_s(said) + 20.0)


def test_a_slower_narrator_leaves_the_guest_up_longer() -> None:
    def timeout_t(wpm: float) -> float:
        state = new_game(DessertsConfig(players=("Ann", "Bob", "Cat"), narration_wpm=wpm), 7)
        return next(e.t for e in state.tick(60.0) if e.kind == "timeout")

    assert timeout_t(120) - 20.0 == pytest.approx((timeout_t(170) - 20.0) * 170 / 120)


def test_clear_first_call_serves_and_collects() -> None:
    events, final = play(
        "1.000 Bob: got it\n1.100 Ann: got it\n2.5 Bob: chocolate bar and vanilla ice cream\n"
    )
    first = first_of(events, "first")
    # The verdict is given 40 ms after Bob's onset, before Ann called.
    assert first["players"] == ["Bob"] and first["t"] == pytest.approx(1.04)
    # Ann also called, so a serve without the favorite waits out the trump window.
    assert "served" not in kinds(events)
    events, final = play(
        "1.000 Bob: got it\n1.100 Ann: got it\n2.5 Bob: chocolate bar and vanilla ice cream\n"
        "4.5 Cat: pass\n"
    )
    served = first_of(events, "served")
    assert served["players"] == ["Bob"] and served["t"] == pytest.approx(4.0)
    assert scores(final, "guests") == {"Ann": 0, "Bob": 1, "Cat": 0}
    assert scores(final, "hand") == {"Ann": 5, "Bob": 3, "Cat": 5}
    assert scores(final, "dirty_dishes") == {"Ann": 0, "Bob": 2, "Cat": 0}


def test_lone_caller_without_favorite_is_confirmed_at_once() -> None:
    events, final = play("1.0 Cat: got it\n2.0 Cat: Ice cream sandwich\n")
    served = first_of(events, "served")
    assert served["t"] == pytest.approx(2.0)
    assert "favorite" not in kinds(events)
    assert scores(final, "hand")["Cat"] == 4


def test_favorite_serve_draws_a_bonus_card() -> None:
    events, final = play("1.0 Ann: got it\n1.2 Bob: got it\n2.0 Ann: rocky road\n")
    assert kinds(events)[3:6] == ["served", "favorite", "draw"]
    assert scores(final, "hand") == {"Ann": 5, "Bob": 5, "Cat": 5}
    assert scores(final, "dirty_dishes")["Ann"] == 1


def test_trump_with_the_favorite_inside_the_window() -> None:
    events, final = play(
        "1.0 Ann: got it\n1.3 Bob: got it\n2.0 Ann: vanilla ice cream and chocolate bar\n"
        "2.8 Bob: favorite, rocky road\n"
    )
    trump = first_of(events, "trump")
    assert trump["players"] == ["Bob", "Ann"]
    assert scores(final, "guests") == {"Ann": 0, "Bob": 1, "Cat": 0}
    assert scores(final, "hand") == {"Ann": 5, "Bob": 5, "Cat": 5}  # Bob served 1, drew 1


def test_trump_claim_then_naming_the_favorite() -> None:
    events, final = play(
        "1.0 Ann: got it\n1.3 Bob: got it\n2.0 Ann: vanilla ice cream and chocolate bar\n"
        "2.8 Bob: favorite\n5.0 Bob: rocky road\n"
    )
    assert "trump_claim" in kinds(events) and "trump" in kinds(events)
    assert scores(final, "guests")["Bob"] == 1


def test_trump_after_the_window_is_too_late() -> None:
    events, final = play(
        "1.0 Ann: got it\n1.3 Bob: got it\n2.0 Ann: vanilla ice cream and chocolate bar\n"
        "3.6 Bob: favorite, rocky road\n"
    )
    assert first_of(events, "served")["players"] == ["Ann"]
    assert first_of(events, "refused")["players"] == ["Bob"]
    assert scores(final, "guests") == {"Ann": 1, "Bob": 0, "Cat": 0}


def test_trump_without_the_favorite_is_refused_and_the_serve_stands() -> None:
    events, _ = play(
        "1.0 Ann: got it\n1.3 Bob: got it\n2.0 Ann: vanilla ice cream and chocolate bar\n"
        "2.5 Bob: favorite, ice cream sandwich\n4.0 Cat: pass\n"
    )
    assert first_of(events, "trump_refused")["players"] == ["Bob"]
    assert first_of(events, "served")["players"] == ["Ann"]


def test_trump_by_a_non_caller_is_refused() -> None:
    events, _ = play(
        "1.0 Ann: got it\n1.3 Bob: got it\n2.0 Ann: vanilla ice cream and chocolate bar\n"
        "2.5 Cat: favorite rocky road\n"
    )
    assert first_of(events, "refused")["players"] == ["Cat"]


def test_guest_without_favorite_is_served_at_once() -> None:
    events, _ = play(
        "1.0 Ann: got it\n1.3 Bob: got it\n2.0 Ann: roasted almonds and fruit salad\n",
        stack="Nature Girl",
    )
    assert first_of(events, "served")["t"] == pytest.approx(2.0)


def test_simultaneous_calls_inside_the_tie_window() -> None:
    events, final = play("1.000 Ann: got it\n1.039 Bob: got it\n3.0 Cat: what\n")
    tie = first_of(events, "tie")
    assert tie["players"] == ["Ann", "Bob"] and tie["gap_ms"] == pytest.approx(39.0)
    assert scores(final, "hand") == {"Ann": 6, "Bob": 6, "Cat": 6}


def test_calls_at_the_tie_window_are_not_simultaneous() -> None:
    events, _ = play("1.000 Ann: got it\n1.040 Bob: got it\n3.0 Cat: what\n")
    first = first_of(events, "first")
    assert first["players"] == ["Ann"] and first["gap_ms"] is None


def test_tie_window_is_configurable() -> None:
    events, _ = play("1.000 Ann: got it\n1.009 Bob: got it\n1.039 Cat: got it\n2.0 Ann: hm\n",
                         "--tie-window-ms", "10")
    tie = first_of(events, "tie")
    assert tie["players"] == ["Ann", "Bob"] and tie["gap_ms"] == pytest.approx(9.0)


def test_erroneous_first_caller_passes_the_serve_to_the_next_in_onset_order() -> None:
    events, final = play(
        "1.0 Ann: got it\n1.2 Cat: got it\n1.4 Bob: got it\n"
        "2.0 Ann: eclair\n3.0 Cat: sorbet\n4.0 Bob: ice cream sandwich\n"
    )
    assert [e["players"][0] for e in events if e["type"] == "erroneous"] == ["Ann", "Cat"]
    assert [e["players"][0] for e in events if e["type"] == "next_server"] == ["Cat", "Bob"]
    assert scores(final, "guests") == {"Ann": 0, "Bob": 1, "Cat": 0}
    assert scores(final, "hand") == {"Ann": 5, "Bob": 4, "Cat": 5}


def test_nobody_delivers_every_caller_discards_and_everyone_draws() -> None:
    events, final = play(
        "1.0 Ann: got it\n1.2 Cat: got it\n2.0 Ann: eclair\n3.0 Cat: sorbet\n"
    )
    penalty = first_of(events, "penalty")
    assert penalty["players"] == ["Ann", "Cat"]
    assert scores(final, "hand") == {"Ann": 5, "Bob": 6, "Cat": 5}
    assert scores(final, "dirty_dishes") == {"Ann": 1, "Bob": 0, "Cat": 1}


def test_a_caller_who_names_nothing_in_ten_seconds_is_erroneous() -> None:
    events, _ = play("1.0 Ann: got it\n20.0 Bob: pass\n")
    erroneous = first_of(events, "erroneous")
    assert erroneous["players"] == ["Ann"] and erroneous["t"] == pytest.approx(11.04)
    assert first_of(events, "penalty")["players"] == ["Ann"]


def test_serve_bigger_than_the_hand_is_erroneous() -> None:
    # Ann empties her hand on three single-card guests... simpler: a 4-card serve is refused,
    # and a 3-card serve from a 2-card hand is erroneous.
    state = new_game(DessertsConfig(("Ann", "Bob"), hand_size=2, stacks={"guests": ("Rocky",)}), 1)
    state.apply(GotIt("Ann", 1.0))
    events = state.apply(Serve("Ann", 2.0, ("Chocolate Bar", "Vanilla Ice Cream", "Sorbet")))
    assert [e.kind for e in events][:2] == ["first", "erroneous"]
    assert "holds only 2" in events[1].say


def test_unknown_words_change_nothing() -> None:
    events, final = play("1.0 Ann: what a lovely cake\n1.5 Bob: brownie and the moon\n")
    assert kinds(events)[2:] == ["not_understood", "not_understood"]
    assert scores(final, "hand") == {"Ann": 5, "Bob": 5, "Cat": 5}


def test_the_caller_whose_serve_is_awaited_is_asked_to_say_it_again() -> None:
    events, final = play("1.0 Ann: got it\n2.0 Bob: what a lovely cake\n2.5 Ann: what a lovely cake\n"
                         "3.0 Ann: rocky road\n")
    missed = [(e["players"], e["say"]) for e in events if e["type"] == "not_understood"]
    assert missed == [(["Bob"], ""), (["Ann"], "Ann, say that again?")]
    assert scores(final, "guests") == {"Ann": 1, "Bob": 0, "Cat": 0}


def test_serve_out_of_turn_is_refused() -> None:
    events, _ = play("1.0 Ann: got it\n2.0 Bob: rocky road\n3.0 Ann: rocky road\n")
    assert first_of(events, "refused")["players"] == ["Bob"]
    assert first_of(events, "served")["players"] == ["Ann"]


def test_guest_pile_reshuffled_once_then_game_ends() -> None:
    all_guests = [g.name for g in decks.desserts().guests]
    state = new_game(DessertsConfig(("Ann", "Bob")), 3)
    t = 0.0
    events = []
    while not state.finished:
        t += 21.0
        events += state.tick(t)
    assert [e.kind for e in events].count("reshuffle") == 1
    assert [e.kind for e in events].count("guest") == 2 * len(all_guests) - 1
    assert state.outcome is not None and state.outcome.winners == ("Ann", "Bob")
    assert events[-1].kind == "game_over" and "tie" in events[-1].say


def test_kitchen_closes_when_the_pile_cannot_serve_everyone() -> None:
    # 8 players: 70 - 40 = 30 desserts; each all-pass takes 8; the 4th cannot be served.
    players = tuple(f"P{i}" for i in range(8))
    state = new_game(DessertsConfig(players), 5)
    timeouts, t = 0, 0.0
    while timeouts < 4:  # four guests time out
        t += 1.0
        timeouts += sum(e.kind == "timeout" for e in state.tick(t))
    assert state.kitchen_open is False
    assert state.dessert_pile == 0 and state.set_aside == 6
    assert all(hand == 8 for hand in state.hands.values())


def test_ranking_tie_breaks_on_hand_then_dirty_dishes() -> None:
    state = new_game(DessertsConfig(("Ann", "Bob")), 1)
    state.collected.update(Ann=["Rocky"], Bob=["Frosty"])
    state.hands.update(Ann=3, Bob=4)
    assert state.ranking() == [["Bob"], ["Ann"]]
    state.hands.update(Bob=3)
    state.dirty.update(Ann=2, Bob=1)
    assert state.ranking() == [["Bob"], ["Ann"]]
    state.dirty.update(Ann=1)
    assert state.ranking() == [["Ann", "Bob"]]


def test_replay_reproduces_state_and_events() -> None:
    config = DessertsConfig(("Ann", "Bob", "Cat"))
    state = new_game(config, 42)
    log = list(state.opening)
    for action in (GotIt("Bob", 1.0), GotIt("Ann", 1.5), Serve("Bob", 3.0, ("Brownie",))):
        log += state.apply(action)
    log += state.tick(60.0)
    again = new_game(config, 42)
    relog = list(again.opening)
    for record in state.history:
        relog += again.apply(action_from_json(record.action.to_json()))
    assert relog == log
    assert again.summary() == state.summary()
    assert again.guest_pile == state.guest_pile and again.t == state.t


def test_illegal_action_names_the_action_and_reason() -> None:
    state = new_game(DessertsConfig(("Ann", "Bob")), 1)
    with pytest.raises(IllegalAction, match=r"Serve\(player='Ann'.*nobody has won the call"):
        state.apply(Serve("Ann", 1.0, ("Brownie",)))
    with pytest.raises(IllegalAction, match="before the game clock"):
        state.apply(Tick(t=0.5))
        state.apply(GotIt("Ann", 0.1))


def test_bad_configs_are_refused() -> None:
    with pytest.raises(ConfigError, match="given twice"):
        new_game(DessertsConfig(("Ann", "ann")), 1)
    with pytest.raises(ConfigError, match="not a card"):
        new_game(DessertsConfig(("Ann", "Bob"), stacks={"guests": ("Nobody",)}), 1)
    with pytest.raises(ConfigError, match="no copy"):
        new_game(DessertsConfig(("Ann", "Bob"), stacks={"guests": ("Rocky", "rocky")}), 1)


def test_satisfies_needs_every_craving_and_no_dislike() -> None:
    rocky = decks.desserts().guest("Rocky")
    assert satisfies(rocky, ["Rocky Road"])
    assert satisfies(rocky, ["Chocolate Bar", "Vanilla Ice Cream"])
    assert not satisfies(rocky, ["Chocolate Bar"])
    assert not satisfies(rocky, ["Eclair", "Vanilla Ice Cream"])


def test_is_legal_judges_the_game_as_apply_will_find_it() -> None:
    # After Ann's "got it", the tie window's timer makes her the caller whose serve is awaited:
    # a serve after it is legal, as apply agrees, and asking changes nothing.
    state = new_game(DessertsConfig(("Ann", "Bob"), stacks={"guests": ("Rocky",)}), 1)
    state.apply(GotIt("Ann", 1.0))
    serve = Serve("Ann", 1.5, ("Brownie",))
    before = state.summary()
    assert state.is_legal(serve)
    assert state.summary() == before and state.t == 1.0
    assert not state.is_legal(Serve("Bob", 1.5, ("Brownie",)))
    assert not state.is_legal(GotIt("Bob", 0.5))  # before the game clock
    state.apply(serve)
