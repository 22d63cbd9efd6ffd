"""Miss Poutine rules (docs/rules.md §2), each a short transcript through ``orderup referee``."""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from referee_helpers import kinds, referee, said

from engine.core import ConfigError, action_from_json, replay
from engine.poutine import CallStop, GiveCards, OfferItem, PoutineConfig, TakeOffer, new_game
from voice.cli.main import build_parser
from voice.cli.referee import referee_transcript
from voice.recognition.intents import UnparseableUtterance
from voice.recognition.intents.poutine import parse
from voice.table.games import lookup
from voice.table.referee import Referee
from voice.table.transcript import parse_transcript

FOUR = ("Ann", "Bob", "Cat", "Dan")
EIGHT = ("Ann", "Bob", "Cat", "Dan", "Eve", "Fay", "Gus", "Hal")
# Dealt alternately: Waitress 1 (or Ann) shows orders 7, 3, 17 then gets 9; Waitress 2 (or
# Eve) shows 11, 2, 8 then gets 6. Needs: 4 hot dogs, 3 burgers, 6 fries, 3 gravy, 2 soft
# drinks, 1 coleslaw.
STACK = "Order 7, Order 11, Order 3, Order 2, Order 17, Order 8, Order 9, Order 6"
# Bob sells the coleslaw, then Ann sells twelve cards that are certainly needed.
ROUND = [(0.5, "Bob", "coleslaw")] + [
    (1.0 + 0.5 * i, "Ann", item)
    for i, item in enumerate(["dog"] * 4 + ["burger"] * 3 + ["fries"] * 5)
]
ROUND_ENDS_AFTER = 6.5 + 0.04
BREAK_S = 5.0
Line = tuple[float, str, str]


def transcript(lines: Sequence[Line], players: Sequence[str] = FOUR) -> str:
    head = f"@players {', '.join(players)}\n@seed 5\n@stack orders: {STACK}\n"
    return head + "".join(f"{t:.3f} {who}: {text}\n" for t, who, text in lines)


def play(
    lines: Sequence[Line], *argv: str, players: Sequence[str] = FOUR
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Referee ``lines``, then let half a second pass so the last offers are resolved.

    The referee's clock only runs to the last utterance, so an unrecognised
    closing line moves it on; its "not understood" event is dropped (after the game
    is over the referee says nothing more).
    """
    end = (lines[-1][0] if lines else 0.0) + 0.5
    events, final, code = referee(
        "poutine", transcript([*lines, (end, players[0], "(end)")], players), *argv
    )
    assert code == 0, events
    return (events[:-1] if events and events[-1]["type"] == "not_understood" else events), final


def rounds(n: int) -> list[Line]:
    """``n`` rounds of ROUND back to back, each after the break."""
    start = ROUND_ENDS_AFTER + BREAK_S + 0.5
    return [(t + k * start, who, text) for k in range(n) for t, who, text in ROUND]


def field(final: dict[str, Any], name: str) -> dict[str, Any]:
    return {p: v.get(name) for p, v in final["players"].items()}


def only(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


# --- opening ---------------------------------------------------------------------------


def test_house_waitresses_deal_and_announce_three_orders_each() -> None:
    events, final = play([])
    assert kinds(events) == ["round", "orders", "orders"]
    assert said(events) == [
        "Round 1. Dealing 12 menu cards to each of Ann, Bob, Cat and Dan.",
        (
            "Waitress 1 shows Order 7: Poutine and Poutine; "
            "Order 3: Hot Dog, Hot Dog and Coleslaw; Order 17: Poutine and Hot Dog."
        ),
        (
            "Waitress 2 shows Order 11: Burger, Burger and Fries; "
            "Order 2: Burger, Fries and Soft Drink; Order 8: Hot Dog, Fries and Soft Drink."
        ),
    ]
    assert final == {
        "type": "final",
        "finished": False,
        "round": 1,
        "players": {p: {"role": "cook", "cards_left": 12, "mop_points": 0} for p in FOUR},
        "losers": [],
    }


def test_menu_cards_are_dealt_as_evenly_as_possible() -> None:
    events, final = play([], players=("Ann", "Bob", "Cat", "Dan", "Eve"))
    assert events[0]["say"] == "Round 1. Dealing Ann 10, Bob 10, Cat 10, Dan 9, Eve 9 menu cards."
    assert sum(field(final, "cards_left").values()) == 48


def test_orders_shown_can_be_two() -> None:
    events, _ = play([], "--orders-shown", "2")
    assert [len(e["orders"]) for e in only(events, "orders")] == [2, 2]


def test_six_cooks_are_reminded_that_grills_hold_two_items() -> None:
    events, _ = play([], players=FOUR + ("Eve", "Fay"))
    assert kinds(events)[:2] == ["round", "reminder"]
    assert "2 items" in events[1]["say"]


# --- offers -----------------------------------------------------------------------------


def test_a_needed_item_is_accepted_and_leaves_the_cooks_count() -> None:
    events, final = play([(1.0, "Ann", "burger!"), (2.0, "Bob", "Hot dog")])
    accepted = only(events, "accepted")
    assert [(e["players"], e["item"], e["order"], e["cards_left"]) for e in accepted] == [
        (["Ann"], "Burger", 11, 11),
        (["Bob"], "Hot Dog", 3, 11),
    ]
    assert accepted[0]["t"] == pytest.approx(1.04)
    assert accepted[0]["say"] == "Ann's burger for order 11."
    assert field(final, "cards_left") == {"Ann": 11, "Bob": 11, "Cat": 12, "Dan": 12}


def test_an_unneeded_item_is_declined_aloud_without_penalty() -> None:
    events, final = play([(1.0, "Ann", "pogo")])
    assert said(events)[-1] == "No pogo needed, Ann."
    assert field(final, "cards_left")["Ann"] == 12


@pytest.mark.parametrize(
    ("spoken", "item"),
    [
        ("gravy", "Gravy and Cheese Curds"),
        ("curds", "Gravy and Cheese Curds"),
        ("cheese curds!", "Gravy and Cheese Curds"),
        ("dog", "Hot Dog"),
        ("a hot dog", "Hot Dog"),
        ("drink", "Soft Drink"),
        ("soda", "Soft Drink"),
        ("pop", "Soft Drink"),
        ("fries", "Fries"),
    ],
)
def test_short_forms_are_offers_of_the_item(spoken: str, item: str) -> None:
    events, _ = play([(1.0, "Cat", spoken)])
    assert only(events, "accepted")[0]["item"] == item


@pytest.mark.parametrize(("spoken", "item"), [("rings", "Onion Rings"), ("pie", "Sugar Pie")])
def test_short_forms_of_items_nobody_needs_yet(spoken: str, item: str) -> None:
    assert parse(spoken, "Cat", 1.0) == OfferItem("Cat", 1.0, item)
    events, _ = play([(1.0, "Cat", spoken)])
    assert only(events, "declined")[0]["item"] == item


def test_simultaneous_offers_earliest_onset_wins_the_only_slot() -> None:
    events, final = play([(1.0, "Bob", "coleslaw"), (1.02, "Ann", "coleslaw")])
    assert said(events)[-2:] == ["Bob's coleslaw for order 3.", "No coleslaw needed, Ann."]
    assert field(final, "cards_left") == {"Ann": 12, "Bob": 11, "Cat": 12, "Dan": 12}


def test_simultaneous_offers_with_equal_onsets_go_in_seating_order() -> None:
    events, _ = play([(1.0, "Dan", "coleslaw"), (1.0, "Cat", "coleslaw")])
    assert said(events)[-2:] == ["Cat's coleslaw for order 3.", "No coleslaw needed, Dan."]


def test_a_second_copy_is_accepted_only_while_another_slot_needs_it() -> None:
    events, final = play([(1.0, "Cat", "soda"), (1.01, "Ann", "pop"), (1.03, "Bob", "drink")])
    assert [(e["players"][0], e["order"]) for e in only(events, "accepted")] == [
        ("Cat", 2),
        ("Ann", 8),
    ]
    assert [e["players"] for e in only(events, "declined")] == [["Bob"]]
    assert field(final, "cards_left") == {"Ann": 11, "Bob": 12, "Cat": 11, "Dan": 12}


def test_poutine_from_two_cooks_in_either_order() -> None:
    for first, second in (("Ann", "Bob"), ("Bob", "Ann")):
        lines = [
            (1.0, first, "gravy" if first == "Ann" else "fries"),
            (2.0, second, "gravy" if second == "Ann" else "fries"),
        ]
        events, _ = play(lines)
        accepted = only(events, "accepted")
        assert {e["order"] for e in accepted} == {17}
        assert accepted[-1]["say"].endswith("Poutine ready!")
        assert not accepted[0]["say"].endswith("Poutine ready!")


def test_poutine_itself_is_not_an_offer() -> None:
    with pytest.raises(UnparseableUtterance, match="gravy plus fries"):
        parse("poutine!", "Ann", 1.0)
    events, _ = play([(1.0, "Ann", "poutine")])
    assert kinds(events)[-1] == "not_understood"


def test_a_completed_order_is_set_aside_and_replaced() -> None:
    events, _ = play([(1.0, "Ann", "gravy"), (2.0, "Bob", "fries"), (3.0, "Cat", "dog")])
    done = only(events, "order_complete")
    assert (
        done[0]["say"]
        == "Order 17 complete for Waitress 1. Next, Order 9: Smoked Meat and Sugar Pie."
    )
    assert done[0]["next"] == {"number": 9, "items": ["Smoked Meat", "Sugar Pie"]}
    events, _ = play(
        [(1.0, "Ann", "gravy"), (2.0, "Bob", "fries"), (3.0, "Cat", "dog"), (4.0, "Dan", "pie")]
    )
    assert only(events, "accepted")[-1]["order"] == 9


def test_live_variant_ignores_a_second_offer_within_one_and_a_half_seconds() -> None:
    lines = [(1.0, "Ann", "burger"), (1.2, "Ann", "dog"), (2.6, "Ann", "dog")]
    events, final = play(lines, "--variant", "live")
    assert kinds(events)[3:] == ["accepted", "refused", "accepted"]
    assert "still carries" in events[4]["reason"]
    assert field(final, "cards_left")["Ann"] == 10
    _, final = play(lines)
    assert field(final, "cards_left")["Ann"] == 9


# --- the end of a round --------------------------------------------------------------------


def test_a_false_stop_is_refused_aloud_and_play_goes_on() -> None:
    events, final = play([(1.0, "Ann", "Stop!"), (2.0, "Ann", "burger")])
    assert events[3]["type"] == "false_stop"
    assert events[3]["say"] == "Not so fast, Ann: 12 cards left. Play on!"
    assert field(final, "cards_left")["Ann"] == 11


def test_a_cook_at_zero_ends_the_round_and_the_tied_slowest_cooks_get_mop_points() -> None:
    events, final = play(ROUND)
    end = only(events, "round_end")[0]
    assert end["say"] == "Stop! Ann is out of cards."
    assert end["t"] == pytest.approx(ROUND_ENDS_AFTER)
    assert only(events, "mop")[0]["say"] == "Mop points for Cat and Dan: 12 cards left each."
    assert field(final, "cards_left") == {"Ann": 0, "Bob": 11, "Cat": 12, "Dan": 12}
    assert field(final, "mop_points") == {"Ann": 0, "Bob": 0, "Cat": 1, "Dan": 1}
    assert final["round"] == 1 and final["finished"] is False


def test_nothing_counts_during_the_break_and_the_next_round_is_announced() -> None:
    extra = [
        (ROUND_ENDS_AFTER + 1.0, "Ann", "stop"),
        (ROUND_ENDS_AFTER + 2.0, "Bob", "burger"),
        (ROUND_ENDS_AFTER + 6.0, "Bob", "burger"),
        (ROUND_ENDS_AFTER + 7.0, "Cat", "hmm"),
    ]
    events, final = play(ROUND + extra)
    assert [e["say"] for e in only(events, "stop")] == ["Yes, Ann is out of cards."]
    refused = only(events, "refused")
    assert [r["players"] for r in refused] == [["Bob"]]
    assert all("round 1 is over" in r["reason"] for r in refused)
    new_round = only(events, "round")[1]
    assert new_round["t"] == pytest.approx(ROUND_ENDS_AFTER + BREAK_S)
    assert new_round["say"] == "Round 2. Dealing 12 menu cards to each of Ann, Bob, Cat and Dan."
    assert final["round"] == 2
    assert field(final, "cards_left") == {"Ann": 12, "Bob": 11, "Cat": 12, "Dan": 12}
    assert field(final, "mop_points") == {"Ann": 0, "Bob": 0, "Cat": 1, "Dan": 1}


def test_a_shared_third_mop_point_ends_the_game_with_both_losers() -> None:
    events, final = play(rounds(3))
    assert kinds(events).count("round") == 3
    assert events[-1]["type"] == "game_over"
    assert (
        events[-1]["say"]
        == "Game over! Cat and Dan share the third mop point, the loss and the mop."
    )
    assert final["finished"] is True and final["round"] == 3
    assert final["losers"] == ["Cat", "Dan"]
    assert field(final, "mop_points") == {"Ann": 0, "Bob": 0, "Cat": 3, "Dan": 3}


def test_a_house_waitress_completing_every_order_ends_the_round() -> None:
    state = new_game(PoutineConfig(("Ann", "Bob")), seed=3)
    referee = Referee(lookup("poutine"), state)
    events = []
    t = 0.0
    while state.phase == "play":
        t += 0.5
        wanted = next(s.item for o in state.shown["Waitress 1"] for s in o.slots if s.cook is None)
        cook = max(state.cooks, key=state.left.__getitem__)
        events += referee.hear(t, cook, wanted) + referee.tick(t + 0.1)
    ends = [e for e in events if e.kind == "round_end"]
    assert [e.say for e in ends] == ["Stop! Waitress 1 has completed every order."]
    assert state.completed()["Waitress 1"] == 9 and min(state.left.values()) > 0
    assert [e.kind for e in events[-2:]] == ["round_end", "mop"]


# --- player waitresses ----------------------------------------------------------------------


def test_a_player_waitress_takes_an_offer_with_take_it_or_the_cooks_name() -> None:
    lines = [
        (1.0, "Bob", "burger"),
        (1.5, "Cat", "take it"),
        (2.0, "Bob", "dog"),
        (2.1, "Dan", "dog"),
        (2.5, "Ann", "Dan"),
        (3.0, "Ann", "take it"),
    ]
    events, final = play(lines, "--waitresses", "Ann,Cat")
    assert (
        events[0]["say"]
        == "Round 1. Waitresses: Ann and Cat. Dealing 24 menu cards to each of Bob and Dan."
    )
    assert [(e["players"][0], e["order"], e["waitress"]) for e in only(events, "accepted")] == [
        ("Bob", 11, "Cat"),
        ("Dan", 3, "Ann"),
        ("Bob", 3, "Ann"),
    ]
    assert final["players"]["Ann"] == {"role": "waitress", "orders_completed": 0, "mop_points": 0}
    assert field(final, "cards_left") == {"Ann": None, "Bob": 22, "Cat": None, "Dan": 23}


def test_silence_refuses_an_offer_after_three_seconds() -> None:
    lines = [(1.0, "Bob", "dog"), (4.5, "Ann", "take it")]
    events, final = play(lines, "--waitresses", "Ann,Cat")
    assert kinds(events)[-2:] == ["not_taken", "refused"]
    assert events[-2]["t"] == pytest.approx(4.0)
    assert events[-2]["say"] == "Bob's hot dog not taken."
    assert field(final, "cards_left")["Bob"] == 24


def test_a_waitress_cannot_take_what_her_orders_do_not_need() -> None:
    events, _ = play([(1.0, "Bob", "burger"), (1.5, "Ann", "take it")], "--waitresses", "Ann,Cat")
    assert kinds(events)[-1] == "refused"
    events, _ = play([(1.0, "Bob", "pogo")], "--waitresses", "Ann,Cat")
    assert said(events)[-1] == "No pogo needed, Bob."
    events, _ = play([(1.0, "Ann", "burger"), (1.5, "Bob", "take it")], "--waitresses", "Ann,Cat")
    assert [e["reason"] for e in only(events, "refused")] == [
        "Ann is a waitress this round",
        "Bob is not a waitress this round",
    ]


def test_player_waitresses_score_a_mop_point_and_rotate_to_the_left() -> None:
    sales = [("Eve", "burger"), ("Eve", "burger"), ("Eve", "fries")] + [
        ("Ann", item) for item in ("gravy", "gravy", "gravy", "fries", "coleslaw")
    ]
    lines: list[Line] = []
    for i, (waitress, item) in enumerate(sales):
        lines += [(1.0 + i, "Bob", item), (1.5 + i, waitress, "take it")]
    lines.append((20.0, "Cat", "pop"))
    events, final = play(lines, "--waitresses", "Ann,Eve", players=EIGHT)
    assert only(events, "round_end")[0]["say"] == "Stop! Bob is out of cards."
    assert [e["players"] for e in only(events, "mop")] == [
        ["Cat", "Dan", "Fay", "Gus", "Hal"],
        ["Ann"],
    ]
    assert only(events, "mop")[1]["say"] == "Mop point for Ann: 0 orders completed."
    second = only(events, "round")[1]
    assert second["waitresses"] == ["Dan", "Hal"]
    assert list(second["cooks"]) == ["Ann", "Bob", "Cat", "Eve", "Fay", "Gus"]
    assert final["players"]["Hal"] == {"role": "waitress", "orders_completed": 0, "mop_points": 1}
    assert final["players"]["Ann"] == {"role": "cook", "cards_left": 8, "mop_points": 1}


# --- mop gifts --------------------------------------------------------------------------------


def test_mop_gifts_are_asked_for_and_move_cards_before_the_orders() -> None:
    t = ROUND_ENDS_AFTER + BREAK_S
    extra = [
        (t + 0.5, "Dan", "burger"),
        (t + 0.7, "Dan", "umm"),
        (t + 1.0, "Cat", "give one to Ann"),
        (t + 1.5, "Dan", "keep"),
        (t + 3.0, "Dan", "burger"),
        (t + 4.0, "Cat", "hmm"),
    ]
    events, final = play(ROUND + extra, "--variant", "gifts")
    asked = only(events, "gift_ask")
    assert [e["say"] for e in asked] == [
        "Cat, you have 1 mop point: give up to 1 card to other cooks.",
        "Dan, you have 1 mop point: give up to 1 card to other cooks.",
    ]
    tail = events[events.index(asked[-1]) + 1 :]
    assert kinds(tail) == ["refused", "not_understood", "gift", "orders", "orders", "accepted",
                           "not_understood"]
    assert "mop gifts" in tail[0]["reason"]
    assert tail[1]["say"] == "Dan, say that again?"  # asked for his gift, not yet answered
    assert tail[2]["say"] == "Cat gives 1 card to Ann."
    assert tail[-1]["say"] == ""  # in play nobody in particular is waited for
    assert field(final, "cards_left") == {"Ann": 13, "Bob": 12, "Cat": 11, "Dan": 11}


def test_unanswered_mop_gifts_lapse_after_twenty_seconds() -> None:
    t = ROUND_ENDS_AFTER + BREAK_S
    extra = [(t + 1.0, "Cat", "give one to Ann"), (t + 30.0, "Dan", "burger")]
    events, final = play(ROUND + extra, "--variant", "gifts")
    lapsed = only(events, "gift_lapsed")
    assert [(e["say"], round(e["t"], 2)) for e in lapsed] == [
        ("Dan keeps 1 card.", round(t + 20.0, 2))
    ]
    assert field(final, "cards_left") == {"Ann": 13, "Bob": 12, "Cat": 11, "Dan": 11}


def test_mop_gifts_go_only_to_other_cooks_and_only_as_many_as_points() -> None:
    t = ROUND_ENDS_AFTER + BREAK_S
    extra = [
        (t + 1.0, "Cat", "give two to Ann"),
        (t + 1.5, "Cat", "give one to Cat"),
        (t + 2.0, "Ann", "keep"),
    ]
    events, final = play(ROUND + extra, "--variant", "gifts")
    assert [e["reason"] for e in only(events, "refused")] == [
        "Cat may give only 1 more card",
        "Cat can give only to another cook, not Cat",
        "Ann has no mop gift to give now",
    ]
    assert field(final, "cards_left") == {"Ann": 12, "Bob": 12, "Cat": 12, "Dan": 12}


# --- set-up ------------------------------------------------------------------------------------


def test_bigger_staff_uses_more_copies_more_waitresses_and_two_orders_each() -> None:
    seven = EIGHT[:7]
    events, final = play([], players=seven)
    assert events[0]["copies"] == 2
    assert [e["waitress"] for e in only(events, "orders")] == [
        "Waitress 1",
        "Waitress 2",
        "Waitress 3",
    ]
    assert [len(e["orders"]) for e in only(events, "orders")] == [2, 2, 2]
    assert sum(field(final, "cards_left").values()) == 96
    ten = EIGHT + ("Ida", "Jim")
    events, _ = play([], "--waitresses", "Ann,Dan,Gus", players=ten)
    assert events[0]["waitresses"] == ["Ann", "Dan", "Gus"] and len(events[0]["cooks"]) == 7


@pytest.mark.parametrize(
    ("argv", "players", "message"),
    [
        (("--variant", "speedy"), FOUR, "unknown variant speedy"),
        (("--waitresses", "Ann,Zed"), FOUR, "Zed are not among the players"),
        (("--waitresses", "Ann"), FOUR, "exactly 2 waitresses"),
        (("--waitresses", "Ann,Bob,Cat"), FOUR, "exactly 2 waitresses"),
        (("--waitresses", "Ann,Bob"), EIGHT + ("Ida", "Jim"), "one waitress per 2 to 3 cooks"),
    ],
)
def test_tables_that_cannot_be_played_are_refused(
    argv: tuple[str, ...], players: Sequence[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    events, final, code = referee("poutine", transcript([], players), *argv)
    assert (events, final, code) == ([], {}, 2)
    assert message in capsys.readouterr().err


def test_a_stacked_order_must_exist() -> None:
    with pytest.raises(ConfigError, match="Order 99"):
        new_game(PoutineConfig(FOUR, stacks={"orders": ("Order 99",)}), 0)


# --- parsing and replay ---------------------------------------------------------------------


def test_parse_calls_names_and_gifts() -> None:
    state = new_game(PoutineConfig(FOUR), 0)
    assert parse("Stop!", "Ann", 1.0, state) == CallStop("Ann", 1.0)
    assert parse("take it", "Ann", 1.0, state) == TakeOffer("Ann", 1.0)
    assert parse("Bob!", "Ann", 1.0, state) == TakeOffer("Ann", 1.0, "Bob")
    assert parse("give two to Bob", "Ann", 1.0, state) == GiveCards("Ann", 1.0, ("Bob", "Bob"))
    assert parse("one card to Bob and 1 to Cat", "Ann", 1.0, state) == GiveCards(
        "Ann", 1.0, ("Bob", "Cat")
    )
    assert parse("keep them", "Ann", 1.0, state) == GiveCards("Ann", 1.0)
    for text in ("burger and fries", "give two to Zed", "give lots to Bob", "hello", ""):
        with pytest.raises(UnparseableUtterance):
            parse(text, "Ann", 1.0, state)


def test_actions_round_trip_through_json() -> None:
    for action in (
        OfferItem("Ann", 1.0, "Fries"),
        TakeOffer("Ann", 2.0, "Bob"),
        CallStop("Ann", 3.0),
        GiveCards("Ann", 4.0, ("Bob", "Bob")),
    ):
        assert action_from_json(action.to_json()) == action


def test_a_transcript_game_replays_to_the_same_state() -> None:
    config = PoutineConfig(FOUR, variants=("gifts",), stacks={"orders": tuple(STACK.split(", "))})
    state = new_game(config, 5)
    referee = Referee(lookup("poutine"), state)
    t = ROUND_ENDS_AFTER + BREAK_S
    for onset, who, text in ROUND + [
        (t + 1.0, "Cat", "give one to Bob"),
        (t + 2.0, "Dan", "keep"),
        (t + 3.0, "Bob", "fries"),
        (t + 4.0, "Ann", "stop"),
    ]:
        referee.hear(onset, who, text)
    assert state.summary()["round"] == 2 and state.left["Bob"] == 12
    again = replay(new_game(config, 5), state.history)
    assert again.summary() == state.summary()
    assert again.history == state.history


def test_the_rules_example_prints_what_the_rules_show() -> None:
    rules = (Path(__file__).resolve().parent.parent / "docs" / "rules.md").read_text("utf-8")
    section = rules[rules.index("## 2. Miss Poutine") :]
    section = section[section.index("### An example, refereed") :]
    game, shown = re.findall(r"```\n(.*?)```", section, re.DOTALL)[:2]
    out = io.StringIO()
    args = build_parser().parse_args(["referee", "poutine", "--transcript", "game.txt"])
    assert referee_transcript(args, parse_transcript(game.splitlines(), "game.txt"), out) == 0
    assert out.getvalue() == shown
