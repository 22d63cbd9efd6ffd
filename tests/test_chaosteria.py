"""Chaosteria rules (docs/rules.md §3), each branch of a serve or a return as a short transcript.

Unless a test says otherwise: table orders, four players, and Andy, the first
listed, is the first waiter once every order is in (at 4.0 s). The bell window
is 2 s from each claim; a late line ("40.0 Candy: hmm") lets the windows close.
"""

from __future__ import annotations

import io
import textwrap
from pathlib import Path
from typing import Any

import pytest
from referee_helpers import kinds, referee

from engine import decks
from engine.chaosteria import (
    ChaosteriaConfig,
    ChaosteriaState,
    Correct,
    PeekOrders,
    ReturnDish,
    ReturnDishes,
    RingBell,
    ServeDish,
    dish_named,
    dishes_to_return,
    new_game,
)
from engine.core import Action, ConfigError, action_from_json, replay
from voice.cli.main import build_parser
from voice.cli.referee import referee_transcript
from voice.recognition.intents import UnparseableUtterance
from voice.recognition.intents import chaosteria as chaosteria_intents
from voice.table.games import lookup
from voice.table.referee import Referee
from voice.table.transcript import parse_transcript

PLAYERS = ("Andy", "Johnny", "Sophie", "Candy")
ORDERS = """\
@players Andy, Johnny, Sophie, Candy
@seed 3
@stack dishes: {dishes}
1.0 Andy: onion soup, rare steak, french fries, cola, apple pie
2.0 Johnny: spicy guacamole, beef burger, white rice, green tea, chocolate cake
3.0 Sophie: caesar salad, miso ramen, garlic bread, hot coffee, rice pudding
4.0 Candy: cheese nachos, fish tacos, dill pickles, lager, fudge brownie
"""
# Salmon, Pizza and Corn are ordered by nobody.
DISHES = "Guacamole, Salmon, Pizza, Corn, Soup, Steak"
RETURNS = "Salmon, Pizza, Corn, Guacamole, Soup, Steak"
LATER = "40.0 Candy: hmm\n"


def transcript(body: str, dishes: str) -> str:
    return ORDERS.format(dishes=dishes) + textwrap.dedent(body)


def play(
    body: str, *argv: str, dishes: str = DISHES
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    events, final, code = referee(
        "chaosteria", transcript(body, dishes), "--orders", "table", *argv
    )
    assert code == 0, events
    return events, final


def state_after(body: str, dishes: str = DISHES) -> ChaosteriaState:
    """The game state once ``body`` is heard (same parser and engine as the CLI)."""
    parsed = parse_transcript(transcript(body, dishes).splitlines())
    game = lookup("chaosteria")
    state = new_game(ChaosteriaConfig(PLAYERS, orders="table", stacks=parsed.stacks), 3)
    ref = Referee(game, state)
    for u in parsed.utterances:
        ref.hear(u.onset_s, u.speaker, u.text)
    return state


def of(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


def stat(final: dict[str, Any], field: str) -> dict[str, int]:
    return {p: v[field] for p, v in final["players"].items()}


def row(order_cards: int, dish_cards: int, complaints: int, score: int) -> dict[str, int]:
    """A player's line of the final summary."""
    return {
        "order_cards": order_cards,
        "dish_cards": dish_cards,
        "complaints": complaints,
        "score": score,
    }


def complained(events: list[dict[str, Any]]) -> list[str]:
    return [e["players"][0] for e in of(events, "complaint")]


# --- ordering --------------------------------------------------------------------------

HOUSE = """\
@players Andy, Johnny
@stack orders: Soup, Guacamole, Steak, Burger, Fries, Rice, Coffee, Tea, Cake, Pie
"""


def test_house_orders_are_read_card_by_card_in_seating_order() -> None:
    events, _, code = referee(
        "chaosteria",
        HOUSE + "1.0 Johnny: spicy guacamole\n1.5 Andy: soup\n2.0 Andy: classic guacamole\n"
        "2.5 Andy: noodle soup\n3.0 Andy: what did I order?\n",
    )
    assert code == 0
    assert kinds(events) == [
        "deal",
        "order_prompt",
        "refused",
        "not_understood",
        "refused",
        "ordered",
        "order_prompt",
        "refused",
    ]
    assert events[1]["say"] == "Andy, your appetizer: Onion Soup or Noodle Soup?"
    assert "Andy's turn to order" in events[2]["reason"]
    assert events[3]["reason"] == "could be Onion Soup or Noodle Soup"
    assert events[3]["say"] == "Andy, Onion Soup or Noodle Soup?"  # Andy is asked: he must answer
    assert "not on the card" in events[4]["reason"]
    assert events[6]["say"] == "Andy, your main: Rare Steak or Well Done Steak?"
    assert events[7]["reason"] == "orders are still being placed"


def test_house_orders_complete_then_serving_begins() -> None:
    answers = [
        "Andy: noodle soup",
        "Andy: rare steak",
        "Andy: french fries",
        "Andy: hot coffee",
        "Andy: chocolate cake",
        "Johnny: spicy guacamole",
        "Johnny: beef burger",
        "Johnny: white rice",
        "Johnny: green tea",
        "Johnny: apple pie",
    ]
    body = "".join(f"{i + 1}.0 {a}\n" for i, a in enumerate(answers))
    events, _, code = referee("chaosteria", HOUSE + body, "--kitchen", "2")
    assert code == 0
    prompts = [e["players"][0] + " " + e["category"] for e in of(events, "order_prompt")]
    assert prompts[:6] == [
        "Andy appetizer",
        "Andy main",
        "Andy side",
        "Andy drink",
        "Andy dessert",
        "Johnny appetizer",
    ]
    assert kinds(events)[-2:] == ["orders_in", "turn"]
    assert events[-1]["waiter"] == "Andy" and len(events[-1]["kitchen"]) == 2


def test_table_orders_one_dish_per_category_and_no_card_twice() -> None:
    events, _, code = referee(
        "chaosteria",
        "@players Andy, Johnny\n"
        "1.0 Andy: onion soup, noodle soup\n"
        "1.5 Andy: onion soup, rare steak\n"
        "2.0 Johnny: onion soup\n"
        "2.5 Andy: classic guacamole\n3.0 Andy: bell\n3.5 Andy: french fries, cola, apple pie\n"
        "4.0 Johnny: noodle soup\n",
        "--orders",
        "table",
    )
    assert code == 0
    assert kinds(events) == [
        "take_orders",
        "refused",
        "ordered",
        "refused",
        "refused",
        "refused",
        "ordered",
        "refused",
    ]
    assert events[1]["reason"] == "one dish per category: two appetizers named"
    assert events[3]["reason"] == "the Soup order card is already Andy's"
    assert events[4]["reason"] == "Andy already ordered the appetizer (Onion Soup)"
    assert events[5]["reason"] == "orders are still being placed"


def test_serving_waits_for_every_order() -> None:
    events, _ = play("")
    assert kinds(events)[-2:] == ["orders_in", "turn"]
    assert events[-1]["say"] == "Andy, your turn. Kitchen: Guacamole, Salmon and Pizza."


# --- (A) serve: the branches of the seed's summary table ---------------------------------------


def test_right_client_right_variant_no_bell() -> None:
    events, final = play("10.0 Andy: I serve Johnny the spicy guacamole\n" + LATER)
    (served,) = of(events, "served")
    assert served["players"] == ["Andy", "Johnny"] and served["t"] == pytest.approx(12.0)
    assert served["by_bell"] is False
    assert of(events, "turn")[-1]["say"] == "Johnny, your turn. Kitchen: Salmon, Pizza and Corn."
    assert final["players"]["Andy"] == row(1, 0, 0, 3)


def test_right_serve_rung_wrongly_costs_the_ringer() -> None:
    events, final = play(
        "10.0 Andy: Johnny, spicy guacamole\n"
        "11.0 Sophie: bell\n"
        "11.5 Sophie: Candy ordered it, classic guacamole\n" + LATER
    )
    assert complained(events) == ["Sophie"]
    assert of(events, "served")[0]["players"] == ["Andy", "Johnny"]
    assert stat(final, "order_cards")["Andy"] == 1


def test_right_client_wrong_variant_no_bell() -> None:
    body = "10.0 Andy: classic guacamole for Johnny\n" + LATER
    events, final = play(body)
    (wrong,) = of(events, "wrong_variant")
    assert wrong["say"] == "Johnny: no, I ordered the Spicy Guacamole. The order card is discarded."
    assert complained(events) == ["Andy"]
    assert stat(final, "order_cards")["Andy"] == 0
    state = state_after(body)
    assert state.order_discard == ["Guacamole"] and state.table == ["Guacamole"]
    assert "Guacamole" not in state.orders["Johnny"]


def test_wrong_variant_corrected_by_a_bell_before_the_answer() -> None:
    events, final = play(
        "10.0 Andy: Johnny, classic guacamole\n11.0 Sophie: bell\n"
        "11.5 Sophie: Johnny ordered it, spicy guacamole\n" + LATER
    )
    assert of(events, "correction")[0]["say"] == "Sophie: Johnny ordered the Spicy Guacamole."
    assert complained(events) == ["Andy"]
    (served,) = of(events, "served")
    assert served["players"] == ["Sophie", "Johnny"] and served["by_bell"] is True
    assert stat(final, "order_cards") == {"Andy": 0, "Johnny": 0, "Sophie": 1, "Candy": 0}


def test_wrong_variant_with_a_wrong_correction() -> None:
    events, final = play(
        "10.0 Andy: Johnny, classic guacamole\n"
        "11.0 Sophie: bell\n"
        "11.5 Sophie: Candy, spicy guacamole\n" + LATER
    )
    assert complained(events) == ["Andy", "Sophie"]
    assert of(events, "wrong_variant")[0]["players"] == ["Andy", "Johnny"]
    assert stat(final, "order_cards") == {"Andy": 0, "Johnny": 0, "Sophie": 0, "Candy": 0}


def test_nobody_may_ring_once_the_client_said_wrong_variant() -> None:
    events, final = play("10.0 Andy: Johnny, classic guacamole\n12.5 Sophie: bell\n" + LATER)
    assert kinds(events)[-5:-1] == ["wrong_variant", "complaint", "turn", "refused"]
    refused = of(events, "refused")[0]
    assert refused["players"] == ["Sophie"] and "obvious" in refused["reason"]
    assert stat(final, "complaints")["Sophie"] == 0


def test_wrong_client_no_bell_discards_the_dish_and_keeps_the_order_hidden() -> None:
    body = "10.0 Andy: Candy, spicy guacamole\n" + LATER
    events, _ = play(body)
    (wrong,) = of(events, "wrong_client")
    assert wrong["say"] == "Candy: I didn't order that. The Guacamole is discarded."
    assert complained(events) == ["Andy"]
    state = state_after(body)
    assert state.dish_discard == ["Guacamole"]
    assert state.orders["Johnny"]["Guacamole"] == "Spicy Guacamole"


def test_wrong_client_corrected_by_a_bell() -> None:
    events, final = play(
        "10.0 Andy: Candy, spicy guacamole\n"
        "11.0 Sophie: bell\n"
        "11.5 Sophie: Johnny ordered it, spicy guacamole\n" + LATER
    )
    assert complained(events) == ["Andy"]
    assert of(events, "served")[0]["players"] == ["Sophie", "Johnny"]
    assert stat(final, "score") == {"Andy": -2, "Johnny": 0, "Sophie": 3, "Candy": 0}


def test_wrong_client_corrected_to_the_right_client_but_wrong_variant() -> None:
    # Back to (A): the ringer's serve is the right client with the wrong variant.
    events, final = play(
        "10.0 Andy: Candy, spicy guacamole\n"
        "11.0 Sophie: bell\n"
        "11.5 Sophie: Johnny, classic guacamole\n" + LATER
    )
    assert complained(events) == ["Sophie", "Andy"]
    assert of(events, "wrong_variant")[0]["players"] == ["Sophie", "Johnny"]
    assert stat(final, "order_cards") == {"Andy": 0, "Johnny": 0, "Sophie": 0, "Candy": 0}


def test_wrong_client_with_a_wrong_correction() -> None:
    events, _ = play(
        "10.0 Andy: Candy, spicy guacamole\n"
        "11.0 Sophie: bell\n"
        "11.5 Sophie: Andy ordered it, spicy guacamole\n" + LATER
    )
    assert complained(events) == ["Andy", "Sophie"]
    assert of(events, "wrong_client")[0]["players"] == ["Andy", "Candy"]


def test_the_orderer_may_ring_and_serve_himself() -> None:
    events, final = play(
        "10.0 Andy: Candy, spicy guacamole\n11.0 Johnny: bell\n11.5 Johnny: mine, spicy guacamole\n"
        + LATER
    )
    assert of(events, "correction")[0]["say"] == "Johnny: I ordered the Spicy Guacamole."
    (served,) = of(events, "served")
    assert served["players"] == ["Johnny", "Johnny"] and served["by_bell"] is True
    assert stat(final, "order_cards")["Johnny"] == 1


def test_a_wrong_ringer_corrected_in_turn() -> None:
    events, _ = play(
        "10.0 Andy: Candy, spicy guacamole\n"
        "11.0 Sophie: bell\n"
        "11.5 Sophie: Andy ordered it, spicy guacamole\n"
        "12.0 Candy: bell\n12.5 Candy: Johnny ordered it, spicy guacamole\n" + LATER
    )
    assert complained(events) == ["Sophie", "Andy"]
    assert of(events, "served")[0]["players"] == ["Candy", "Johnny"]
    assert of(events, "served")[0]["t"] == pytest.approx(14.5)


def test_a_right_ringer_wrongly_corrected_keeps_the_card() -> None:
    events, _ = play(
        "10.0 Andy: Candy, spicy guacamole\n"
        "11.0 Sophie: bell\n"
        "11.5 Sophie: Johnny, spicy guacamole\n"
        "12.0 Candy: bell\n12.5 Candy: mine, spicy guacamole\n" + LATER
    )
    assert complained(events) == ["Andy", "Candy"]
    assert of(events, "served")[0]["players"] == ["Sophie", "Johnny"]


def test_a_bell_correcting_an_unordered_dish_returns_it() -> None:
    events, final = play(
        "10.0 Andy: Johnny, grilled salmon\n11.0 Sophie: bell\n11.5 Sophie: nobody ordered it\n"
        + LATER
    )
    assert complained(events) == ["Andy"]
    assert of(events, "returned")[0]["say"] == "Nobody ordered the Salmon: Sophie keeps it."
    assert stat(final, "dish_cards") == {"Andy": 0, "Johnny": 0, "Sophie": 1, "Candy": 0}


# --- the bell: windows, ties, fouls ------------------------------------------------------------


def test_bell_after_the_window_is_refused() -> None:
    events, _ = play("10.0 Andy: Johnny, spicy guacamole\n12.0 Sophie: bell\n" + LATER)
    assert of(events, "served")[0]["t"] == pytest.approx(12.0)
    assert of(events, "refused")[0]["reason"] == "no serve or return to correct now"


def test_a_claimant_cannot_ring_on_his_own_claim() -> None:
    events, _ = play("10.0 Andy: Johnny, spicy guacamole\n10.5 Andy: bell\n" + LATER)
    assert of(events, "refused")[0]["reason"] == "Andy made the claim and cannot correct it"


def test_earliest_bell_within_the_tie_window_rings() -> None:
    events, _ = play(
        "10.0 Andy: Johnny, spicy guacamole\n"
        "11.000 Candy: bell\n"
        "11.020 Sophie: bell\n"
        "11.5 Sophie: Candy, cola\n" + LATER
    )
    (bell,) = of(events, "bell")
    assert bell["players"] == ["Candy"] and bell["tie"] is False
    assert [r["player"] for r in bell["ringers"]] == ["Candy", "Sophie"]
    assert of(events, "refused")[0]["reason"] == "Candy has the bell"  # Sophie speaking out of turn


def test_a_true_tie_goes_to_the_ringer_nearest_the_waiters_right() -> None:
    events, _ = play(
        "10.0 Andy: Candy, spicy guacamole\n11.0 Candy: bell\n11.0 Sophie: bell\n"
        "11.5 Candy: Johnny, spicy guacamole\n11.6 Sophie: Johnny, spicy guacamole\n" + LATER
    )
    (bell,) = of(events, "bell")
    # Seats to Andy's right: Johnny, Sophie, Candy.
    assert bell["players"] == ["Sophie"] and bell["tie"] is True
    assert of(events, "refused")[0]["players"] == ["Candy"]
    assert of(events, "served")[0]["players"] == ["Sophie", "Johnny"]


def test_bells_a_tie_window_apart_are_not_simultaneous() -> None:
    events, _ = play(
        "10.0 Andy: Johnny, spicy guacamole\n11.000 Candy: bell\n11.040 Sophie: bell\n" + LATER
    )
    assert of(events, "bell")[0]["players"] == ["Candy"]
    assert of(events, "refused")[0]["reason"] == "Candy has the bell"


def test_ringing_and_saying_nothing_costs_a_complaint() -> None:
    events, final = play("10.0 Andy: Johnny, spicy guacamole\n11.0 Sophie: bell\n" + LATER)
    assert kinds(events)[-6:-1] == ["bell", "silent_bell", "complaint", "served", "turn"]
    assert of(events, "silent_bell")[0]["t"] == pytest.approx(13.04)
    assert of(events, "served")[0]["t"] == pytest.approx(15.04)
    assert stat(final, "complaints") == {"Andy": 0, "Johnny": 0, "Sophie": 1, "Candy": 0}


def test_peeking_is_answered_aloud_and_costs_a_complaint() -> None:
    events, final = play("10.0 Johnny: what did I order?\n")
    (peek,) = of(events, "peek")
    assert (
        peek["say"] == "Johnny, you ordered Spicy Guacamole, Beef Burger, White Rice, Green Tea"
        " and Chocolate Cake."
    )
    assert stat(final, "score")["Johnny"] == -2


def test_a_dish_named_without_its_variant_gets_one_which_one() -> None:
    events, _ = play(
        "10.0 Andy: Johnny, the guacamole\n10.5 Andy: the guacamole\n11.0 Andy: spicy guacamole\n"
        + LATER
    )
    assert kinds(events)[-6:-3] == ["which_one", "refused", "serve"]
    assert (
        of(events, "which_one")[0]["say"]
        == "Which one, Andy: Classic Guacamole or Spicy Guacamole?"
    )
    assert (
        of(events, "refused")[0]["reason"]
        == "asked once already: Classic Guacamole or Spicy Guacamole?"
    )
    assert of(events, "served")[0]["players"] == ["Andy", "Johnny"]


def test_a_correction_without_variant_gets_which_one() -> None:
    events, _ = play(
        "10.0 Andy: Candy, spicy guacamole\n11.0 Sophie: bell\n11.5 Sophie: Johnny ordered it\n"
        "12.0 Sophie: spicy guacamole\n" + LATER
    )
    assert "which_one" in kinds(events)
    assert of(events, "served")[0]["players"] == ["Sophie", "Johnny"]


def test_serve_refusals_and_words_out_of_the_game() -> None:
    events, final = play(
        "10.0 Andy: mine, spicy guacamole\n"
        "10.2 Andy: Johnny, beef burger\n"
        "10.4 Sophie: Johnny, spicy guacamole\n"
        "10.6 Andy: the moon\n10.8 Andy: Johnny Candy spicy guacamole\n"
    )
    assert [e.get("reason") for e in events[-5:]] == [
        "Andy is the waiter, not a client (only a bell serves oneself)",
        "no Burger in the kitchen (Guacamole, Salmon and Pizza)",
        "it is Andy's turn",
        "'moon' is not a name I know here",
        "name one client and one dish",
    ]
    assert stat(final, "complaints") == {"Andy": 0, "Johnny": 0, "Sophie": 0, "Candy": 0}


def test_only_one_dish_per_turn() -> None:
    events, _ = play("10.0 Andy: Johnny, spicy guacamole\n10.5 Andy: Candy, grilled salmon\n")
    assert (
        of(events, "refused")[0]["reason"]
        == "only one dish per turn: the Guacamole is being served"
    )


# --- (B) return ---------------------------------------------------------------------------------


def test_return_with_no_bell_keeps_every_dish() -> None:
    events, final = play(
        "10.0 Andy: return\n"
        "10.5 Andy: nobody ordered the salmon\n"
        "11.0 Andy: pizza\n"
        "11.5 Andy: no one ordered corn\n" + LATER,
        dishes=RETURNS,
    )
    assert of(events, "return")[0]["dishes"] == 3
    assert [e["t"] for e in of(events, "returned")] == pytest.approx([11.0, 11.5, 13.5])
    assert of(events, "turn")[-1]["say"] == "Johnny, your turn. Kitchen: Guacamole, Soup and Steak."
    assert final["players"]["Andy"] == row(0, 3, 0, 3)


def test_return_corrected_by_a_right_bell_ends_the_turn() -> None:
    events, final = play(
        "10.0 Andy: return\n10.5 Andy: salmon\n11.0 Andy: guacamole\n11.5 Johnny: bell\n"
        "12.0 Johnny: mine, spicy guacamole\n" + LATER,
        dishes="Salmon, Guacamole, Pizza, Corn, Soup",
    )
    assert complained(events) == ["Andy"]
    assert of(events, "served")[0]["players"] == ["Johnny", "Johnny"]
    assert of(events, "turn")[-1]["say"] == "Johnny, your turn. Kitchen: Pizza, Corn and Soup."
    assert final["players"]["Andy"] == row(0, 1, 1, -1)


def test_return_with_a_wrong_bell_goes_on() -> None:
    events, final = play(
        "10.0 Andy: return\n"
        "10.5 Andy: salmon\n"
        "11.0 Sophie: bell\n"
        "11.5 Sophie: Candy ordered it, grilled salmon\n"
        "12.0 Andy: pizza\n16.0 Andy: pizza\n16.5 Andy: corn\n" + LATER,
        dishes=RETURNS,
    )
    assert of(events, "refused")[0]["reason"] == "the bell rang for the Salmon: wait for the answer"
    assert complained(events) == ["Sophie"]
    assert stat(final, "dish_cards")["Andy"] == 3


def test_an_unnoticed_wrong_return_keeps_the_dish_and_the_order_unserved() -> None:
    body = "10.0 Andy: return\n10.5 Andy: guacamole\n11.0 Andy: salmon\n11.5 Andy: pizza\n" + LATER
    state = state_after(body, dishes="Guacamole, Salmon, Pizza, Corn")
    assert state.kept["Andy"] == ["Guacamole", "Salmon", "Pizza"]
    assert state.orders["Johnny"]["Guacamole"] == "Spicy Guacamole"
    assert state.complaints["Andy"] == 0


def test_return_refusals() -> None:
    events, _ = play(
        "10.0 Andy: nobody ordered the salmon\n"
        "10.2 Andy: return\n"
        "10.4 Andy: Johnny, spicy guacamole\n"
        "10.6 Andy: return\n",
    )
    assert [e["reason"] for e in of(events, "refused")] == [
        "Andy has not said 'return'",
        "Andy is returning dishes: 3 more to name",
        "Andy is returning dishes: 3 more to name",
    ]
    events, _ = play("10.0 Andy: return\n", "--kitchen", "2")
    assert of(events, "refused")[0]["reason"] == "a return is 3 dishes; the kitchen holds 2"


@pytest.mark.parametrize(
    ("n", "returned"), [(2, 3), (3, 3), (4, 3), (5, 2), (6, 2), (7, 2), (8, 1), (9, 1), (10, 0)]
)
def test_dishes_returned_by_player_count(n: int, returned: int) -> None:
    assert dishes_to_return(n) == returned
    players = [f"P{i}" for i in range(n)]
    orders = "".join(
        f"1.{i:02d} {p}: {', '.join(row_variants(i))}\n" for i, p in enumerate(players)
    )
    events, _, code = referee(
        "chaosteria",
        orders + "5.0 P0: return\n",
        "--players",
        ",".join(players),
        "--orders",
        "table",
    )
    assert code == 0
    if returned:
        assert of(events, "return")[0]["dishes"] == returned
    else:
        assert of(events, "refused")[0]["reason"] == "with 10 players no dish may be returned"


def row_variants(i: int) -> list[str]:
    """Variant A of the i-th dish of every category: a full, distinct set of orders per player."""
    deck = decks.chaosteria()
    return [[d for d in deck.dishes if d.category == c][i].variants[0] for c in deck.categories]


# --- the end ------------------------------------------------------------------------------------


def test_game_ends_when_every_order_is_served() -> None:
    andy, johnny = row_variants(0), row_variants(1)
    # A kitchen of one: each turn's dish is the other player's next order.
    stack = [v for pair in zip(row_dishes(1), row_dishes(0), strict=True) for v in pair]
    lines = [
        f"@stack dishes: {', '.join(stack)}",
        f"1.0 Andy: {', '.join(andy)}",
        f"2.0 Johnny: {', '.join(johnny)}",
    ]
    for k in range(10):
        waiter, client, variant = (
            ("Andy", "Johnny", johnny[k // 2]) if k % 2 == 0 else ("Johnny", "Andy", andy[k // 2])
        )
        if k == 9:
            variant = "Carrot Cake"  # Andy ordered the Chocolate Cake
        lines.append(f"{10 + 5 * k}.0 {waiter}: {client}, {variant}")
    lines.append("200.0 Andy: bell")
    events, final, code = referee(
        "chaosteria",
        "\n".join(lines),
        "--players",
        "Andy,Johnny",
        "--orders",
        "table",
        "--kitchen",
        "1",
    )
    assert code == 0
    over = of(events, "game_over")[0]
    assert over["termination"] == "every order served"
    assert "unserved" not in kinds(events)
    assert final["finished"] is True and final["winners"] == ["Andy"]
    assert final["players"]["Andy"] == row(5, 0, 0, 15)
    assert final["players"]["Johnny"] == row(4, 0, 1, 10)
    assert events[-1]["type"] == "game_over"  # the late bell is not even heard


def row_dishes(i: int) -> list[str]:
    return [dish_named(v).dish for v in row_variants(i)]


def test_game_ends_when_the_kitchen_is_empty_and_unserved_orders_are_charged() -> None:
    game = lookup("chaosteria")
    state = new_game(ChaosteriaConfig(("Andy", "Johnny"), orders="table"), 5)
    ref = Referee(game, state)
    ref.hear(1.0, "Andy", ", ".join(row_variants(0)))
    ref.hear(2.0, "Johnny", ", ".join(row_variants(1)))
    t = 10.0
    events = []
    while not state.finished:
        waiter = state.waiter
        unordered = [d for d in state.kitchen if state.owner(d) is None]
        if len(unordered) >= 3:
            lines = ["return"] + [f"nobody ordered the {d}" for d in unordered[:3]]
        else:
            other = "Johnny" if waiter == "Andy" else "Andy"
            lines = [f"{other}, {dish_named(state.kitchen[0]).variants[0]}"]
        for line in lines:
            events += ref.hear(t, waiter, line)
            t += 0.5
        t += 3.0
        events += ref.tick(t)
    assert state.outcome is not None and state.outcome.termination == "kitchen empty"
    assert not state.kitchen and not state.dish_deck
    (unserved,) = [e for e in events if e.kind == "unserved"]
    assert unserved.data["unserved"] == {p: len(o) for p, o in state.orders.items() if o}
    mistakes = sum(1 for e in events if e.kind == "complaint")
    assert sum(state.complaints.values()) == mistakes + sum(unserved.data["unserved"].values())


# --- config, replay -----------------------------------------------------------------------------


def test_config_errors() -> None:
    with pytest.raises(ConfigError, match="this game takes 2 to 10"):
        new_game(ChaosteriaConfig(tuple(f"P{i}" for i in range(11))), 0)
    with pytest.raises(ConfigError, match="cannot be stacked"):
        new_game(ChaosteriaConfig(PLAYERS, orders="table", stacks={"orders": ("Soup",)}), 0)
    with pytest.raises(ConfigError, match="not a dish"):
        new_game(ChaosteriaConfig(PLAYERS, stacks={"orders": ("Onion Soup",)}), 0)
    with pytest.raises(ConfigError, match="at least one dish"):
        new_game(ChaosteriaConfig(PLAYERS, kitchen=0), 0)
    events, _, code = referee(
        "chaosteria", "@players A, B\n@stack orders: Soup\n", "--orders", "table"
    )
    assert code == 2 and events == []


def test_replay_rebuilds_the_same_game() -> None:
    body = (
        "10.0 Andy: Candy, spicy guacamole\n"
        "11.0 Sophie: bell\n"
        "11.5 Sophie: Andy ordered it, spicy guacamole\n"
        "12.0 Candy: bell\n12.5 Candy: Johnny ordered it\n12.8 Candy: spicy guacamole\n"
        "20.0 Johnny: return\n"
        "20.5 Johnny: salmon\n"
        "21.0 Johnny: pizza\n"
        "21.2 Andy: what did I order?\n" + LATER
    )
    state = state_after(body)
    history = [action_from_json(r.action.to_json()) for r in state.history]
    assert history == [r.action for r in state.history]
    again = replay(new_game(state.config, state.seed), state.history)
    assert again.summary() == state.summary()
    assert (again.orders, again.kitchen, again.kept, again.won) == (
        state.orders,
        state.kitchen,
        state.kept,
        state.won,
    )


# --- utterances ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["I serve Johnny the spicy guacamole", "Johnny, spicy guacamole", "spicy guacamole for Johnny"],
)
def test_serve_phrasings(text: str) -> None:
    action = chaosteria_intents.parse(text, "Andy", 9.0, state_after(""))
    assert action == ServeDish("Andy", 9.0, "Johnny", "Guacamole", "Spicy Guacamole")


@pytest.mark.parametrize(
    ("text", "action"),
    [
        ("Johnny, the guacamole", ServeDish("Andy", 9.0, "Johnny", "Guacamole", None)),
        ("return", ReturnDishes("Andy", 9.0)),
        ("nobody ordered guacamole", ReturnDish("Andy", 9.0, "Guacamole")),
        ("guacamole", ReturnDish("Andy", 9.0, "Guacamole")),
        ("bell!", RingBell("Andy", 9.0)),
        ("What did I order?", PeekOrders("Andy", 9.0)),
    ],
)
def test_other_calls(text: str, action: Action) -> None:
    assert chaosteria_intents.parse(text, "Andy", 9.0, state_after("")) == action


@pytest.mark.parametrize(
    ("text", "client", "variant"),
    [
        ("Johnny ordered it, spicy guacamole", "Johnny", "Spicy Guacamole"),
        ("Johnny, spicy guacamole", "Johnny", "Spicy Guacamole"),
        ("mine, classic guacamole", "Sophie", "Classic Guacamole"),
        ("I ordered it, classic guacamole", "Sophie", "Classic Guacamole"),
        ("Johnny ordered it", "Johnny", None),
        ("nobody ordered it", None, None),
    ],
)
def test_corrections_from_the_ringer(text: str, client: str | None, variant: str | None) -> None:
    state = state_after("10.0 Andy: Candy, spicy guacamole\n11.0 Sophie: bell\n11.1 Sophie: uh\n")
    assert state.floor == "Sophie"
    action = chaosteria_intents.parse(text, "Sophie", 11.2, state)
    dish = "Guacamole" if variant else None
    assert action == Correct("Sophie", 11.2, client, dish, variant)


def test_who_the_table_waits_for_to_speak() -> None:
    """The waiter on their turn; after the bell, the ringer (who is asked to say it again if
    not understood)."""
    state = state_after("")
    assert chaosteria_intents.awaited(state) == (state.waiter,)
    state = state_after("10.0 Andy: Candy, spicy guacamole\n11.0 Sophie: bell\n11.1 Sophie: uh\n")
    assert chaosteria_intents.awaited(state) == ("Sophie",)


@pytest.mark.parametrize(
    "text", ["the moon", "Johnny Candy spicy guacamole", "Johnny", "soup steak"]
)
def test_not_understood(text: str) -> None:
    with pytest.raises(UnparseableUtterance):
        chaosteria_intents.parse(text, "Andy", 9.0, state_after(""))


def test_the_rules_example_is_what_the_app_says() -> None:
    rules = (Path(__file__).resolve().parent.parent / "docs" / "rules.md").read_text("utf-8")
    section = rules[rules.index("## 3. Chaosteria") :]
    section = section[section.index("### An example, refereed") :]
    game, output = section.split("```")[1:4:2]
    args = build_parser().parse_args(
        ["referee", "chaosteria", "--orders", "table", "--transcript", "game.txt"]
    )
    out = io.StringIO()
    assert referee_transcript(args, parse_transcript(game.strip().splitlines()), out) == 0
    assert out.getvalue().strip("\n") == output.strip("\n")
