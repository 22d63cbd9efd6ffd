"""Chaosteria utterances: orders, serves, returns, the bell and its corrections, peeking.

A claim names one client (a player, "mine" for the speaker, or "nobody") and
one dish, by variant ("onion soup") or by dish alone ("the soup": the app then
asks which one). What a claim means depends on the moment: while orders are
taken, variants are orders; from the player holding the bell it is a
correction; from anyone else a serve, or with nobody (or no client) named, a
dish of a return. A bare variant answers a pending "which one?".
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache

from engine import decks
from engine.chaosteria import (
    ChaosteriaState,
    Correct,
    PeekOrders,
    PlaceOrder,
    ReturnDish,
    ReturnDishes,
    RingBell,
    ServeDish,
    dish_named,
)
from engine.core import Action
from voice.recognition.intents import (
    AmbiguousUtterance,
    Phrases,
    UnparseableUtterance,
    Vocabulary,
    lists,
    words,
)

BELL = {("bell",), ("ding",), ("ring",), ("ring", "the", "bell"), ("i", "ring", "the", "bell")}
RETURN = {
    ("return",),
    ("i", "return"),
    ("return", "dishes"),
    ("i", "return", "dishes"),
    ("i'll", "return", "dishes"),
    ("i", "will", "return", "dishes"),
    ("i", "return", "the", "dishes"),
}
PEEK = {("what", "did", "i", "order"), ("what's", "my", "order"), ("what", "is", "my", "order")}
FILLERS = (
    "and",
    "the",
    "a",
    "an",
    "i",
    "serve",
    "serving",
    "here's",
    "here",
    "is",
    "for",
    "to",
    "ordered",
    "it",
    "that",
)
SELF = "mine"
NOBODY = "nobody"
SELF_FORMS = ("me", "myself", "i ordered it", "i did")
NOBODY_FORMS = ("no one", "no body", "nobody ordered")


@cache
def food_names() -> frozenset[str]:
    """Every dish name and every variant name."""
    return frozenset(n for d in decks.chaosteria().dishes for n in (d.dish, *d.variants))


@cache
def vocabulary(players: tuple[str, ...]) -> Vocabulary:
    """Players, "mine", "nobody", every variant and every dish name."""
    forms: dict[str, tuple[str, ...]] = {name: () for name in food_names()}
    forms[SELF] = SELF_FORMS
    forms[NOBODY] = NOBODY_FORMS
    for player in players:
        forms[player] = ()
    return Vocabulary(forms, FILLERS)


def parse(text: str, player: str, t: float, state: ChaosteriaState) -> Action:
    """The action ``player`` means by ``text`` at ``t`` seconds, in ``state``'s moment."""
    tokens = words(text)
    if tokens in BELL:
        return RingBell(player, t)
    if tokens in RETURN:
        return ReturnDishes(player, t)
    if tokens in PEEK:
        return PeekOrders(player, t)
    names = vocabulary(state.players).match(tokens, text)
    if not names:
        raise UnparseableUtterance(text)
    if state.phase == "ordering":
        return _order(text, player, t, names)
    answer = _answer(names, player, t, state)
    if answer is not None:
        return answer
    return _claim(text, player, t, names, state)


def _order(text: str, player: str, t: float, names: list[str]) -> PlaceOrder:
    for name in names:
        if name not in food_names():
            raise UnparseableUtterance(text, "say the dishes you order")
        dish = dish_named(name)
        if name == dish.dish:
            raise AmbiguousUtterance(text, dish.variants)
    return PlaceOrder(player, t, tuple(names))


def _answer(names: list[str], player: str, t: float, state: ChaosteriaState) -> Action | None:
    """A bare variant (or the dish again) answering the "which one?" asked of ``player``."""
    question = state.question
    if (
        question is None
        or question.player != player
        or len(names) != 1
        or names[0] not in food_names()
    ):
        return None
    dish = question.dish if isinstance(question, ServeDish) else state.plate
    if dish is None or dish_named(names[0]).dish != dish:
        return None
    return replace(question, t=t, variant=None if names[0] == dish else names[0])


def _claim(text: str, player: str, t: float, names: list[str], state: ChaosteriaState) -> Action:
    foods = [n for n in names if n in food_names()]
    clients = [n for n in names if n not in foods]
    if len(clients) > 1 or len(foods) > 1:
        raise UnparseableUtterance(text, "name one client and one dish")
    client = {SELF: player, NOBODY: None}.get(clients[0], clients[0]) if clients else None
    dish = dish_named(foods[0]).dish if foods else None
    variant = foods[0] if foods and foods[0] != dish else None
    if state.floor == player:
        if not clients:
            raise UnparseableUtterance(text, "say who ordered it, or nobody")
        return Correct(player, t, client, dish, variant if client is not None else None)
    if dish is None:
        raise UnparseableUtterance(text, "name the dish")
    if client is None:
        return ReturnDish(player, t, dish)
    return ServeDish(player, t, client, dish, variant)


def awaited(state: ChaosteriaState) -> tuple[str, ...]:
    """Who must speak now: while orders are taken, the player asked (house orders) or those
    who have not ordered every category (table orders); then the player asked "which one?",
    the one who rang the bell, else the waiter."""
    if state.phase == "ordering":
        dealt = [p for p in state.players if state.hands[p]]  # house orders, asked in turn
        if dealt:
            return (dealt[0],)
        categories = len(decks.chaosteria().categories)
        return tuple(p for p in state.players if len(state.orders[p]) < categories)
    if state.question is not None:
        return (state.question.player,)
    return (state.floor or state.waiter,)


def phrases(players: tuple[str, ...], state: ChaosteriaState | None = None,
            player: str | None = None) -> Phrases:
    """What a player may say in Chaosteria now: the grammar of the moment.

    While orders are taken: one to five variants (house orders: the variants of
    the cards dealt). Once serving has begun: serves, returns, the bell and
    corrections, naming only the dishes in the kitchen and on the plate. With a ``player``,
    orders only from those the game waits for: with house orders the player asked, and
    only the two variants of the card asked about (the next player is asked once the
    answer is refereed). Serving is the same for every player: who may serve passes with
    the bell, and the ringer's "mine …" follows it closer than the bell is refereed.
    """
    deck = decks.chaosteria()
    dishes = deck.dishes
    ordering = state is None or state.phase == "ordering"
    serving = state is None or state.phase != "ordering"
    orders = tuple(v for d in deck.dishes for v in d.variants)
    order_lists = lists("order", 5)
    if state is not None and player is not None and ordering:
        ordering = player in awaited(state)
        if ordering and state.hands[player]:  # house orders: one of the card's two variants
            orders, order_lists = dish_named(state.hands[player][0]).variants, ("{order}",)
    if state is not None and serving:
        shown = {*state.kitchen, *([state.plate] if state.plate else [])}
        dishes = tuple(d for d in deck.dishes if d.dish in shown) or deck.dishes
    templates = (
        *(order_lists if ordering else ()),
        *(("what did i order",) if serving or player is None else ()),
        *(() if not serving else (
            "i serve {player} the {variant}", "i serve {player} the {dish}", "{player} {variant}",
            "{player} the {dish}", "{variant} for {player}", "the {dish} for {player}",
            "{variant}", "return", "nobody ordered {dish}", "nobody ordered the {dish}", "{dish}",
            "the {dish}", "bell", "{player} ordered it {variant}", "mine {variant}",
        )),
    )
    return (
        templates,
        {
            "order": orders,
            "player": players,
            "variant": tuple(v for d in dishes for v in d.variants),
            "dish": tuple(d.dish for d in dishes),
        },
    )
