"""Miss Poutine utterances: shouted items, "take it" or a cook's name, "stop", mop gifts.

An offer names exactly one menu item, by any spoken form docs/rules.md §4 lists
("gravy", "dog", "pop", "rings", "pie"...) or "fries". A player waitress
takes an offer with "take it" or the cook's name. Mop gifts are "give two to
Ann", "one to Ann and one to Bob", or "keep" to give nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from engine import decks
from engine.core import Action
from engine.poutine import CallStop, GiveCards, OfferItem, PoutineState, TakeOffer
from voice.recognition.intents import (
    Phrases,
    UnparseableUtterance,
    Vocabulary,
    legal,
    sayable,
    words,
)

STOP = {("stop",), ("stop", "stop")}
TAKE = {("take", "it"), ("i'll", "take", "it"), ("i", "take", "it"), ("taken",)}
KEEP = {
    ("keep",),
    ("keep", "them"),
    ("keep", "it"),
    ("no", "gift"),
    ("no", "gifts"),
    ("none",),
    ("nothing",),
}
FILLERS = ("a", "an", "the", "one", "here's", "here", "is", "it's", "got", "i've", "order", "up")
NUMBERS = {
    "a": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
}
GIFT_NOUNS = {"card", "cards", "order", "orders"}


@cache
def menu_items() -> Vocabulary:
    deck = decks.poutine()
    forms = {m.name: m.spoken for m in deck.menu}
    forms[deck.fries.name] = deck.fries.spoken
    return Vocabulary(forms, FILLERS)


def parse(text: str, player: str, t: float, state: PoutineState | None = None) -> Action:
    """The action ``player`` means by ``text`` at ``t`` seconds (``state`` gives player names)."""
    tokens = words(text)
    names = {words(p): p for p in (state.config.players if state else ())}
    if tokens in STOP:
        return CallStop(player, t)
    if tokens in TAKE:
        return TakeOffer(player, t)
    if tokens in names:
        return TakeOffer(player, t, names[tokens])
    if tokens in KEEP:
        return GiveCards(player, t)
    if tokens[:1] == ("give",) or "to" in tokens:
        return GiveCards(player, t, gift(tokens[tokens[:1] == ("give",) :], names, text))
    if "poutine" in tokens:
        raise UnparseableUtterance(text, "poutine is gravy plus fries: offer them one at a time")
    items = menu_items().match(tokens, text)
    if len(items) != 1:
        raise UnparseableUtterance(text, "offer exactly one item at a time")
    return OfferItem(player, t, items[0])


def gift(tokens: Sequence[str], names: dict[tuple[str, ...], str], text: str) -> tuple[str, ...]:
    """'two to Ann and one to Bob' → ('Ann', 'Ann', 'Bob'): one recipient per card."""
    to: list[str] = []
    parts: list[list[str]] = [[]]
    for token in tokens:
        if token == "and":
            parts.append([])
        else:
            parts[-1].append(token)
    for part in parts:
        if "to" not in part:
            raise UnparseableUtterance(text, "say how many to whom: 'give two to Ann'")
        cut = part.index("to")
        count = [w for w in part[:cut] if w not in GIFT_NOUNS]
        name = names.get(tuple(part[cut + 1 :]))
        if len(count) != 1 or not (count[0] in NUMBERS or count[0].isdigit()):
            raise UnparseableUtterance(
                text, f"{' '.join(part[:cut]) or 'nothing'!r} is not a number of cards"
            )
        if name is None:
            raise UnparseableUtterance(
                text, f"{' '.join(part[cut + 1 :]) or 'nobody'!r} is not a player"
            )
        to += [name] * (NUMBERS.get(count[0]) or int(count[0]))
    return tuple(to)


def awaited(state: PoutineState) -> tuple[str, ...]:
    """Who must speak now: the players asked for their mop gifts. In play everyone shouts
    at once and an item not heard is simply not sold yet."""
    return tuple(state.givers) if state.phase == "gifts" else ()


def phrases(players: tuple[str, ...], state: PoutineState | None = None,
            player: str | None = None) -> Phrases:
    """What a player may say in Miss Poutine: an item, "stop", a waitress's take, a mop gift;
    with a state and a player, only what their role lets them say now (a cook offers items,
    a player waitress takes offers, givers give at the start of a round)."""
    deck = decks.poutine()
    items = tuple(form for m in (*deck.menu, deck.fries) for form in m.spoken)
    gift = "give {number} to {player}"
    templates = sayable(state, player, (
        (legal(lambda p, t: OfferItem(p, t, deck.fries.name)), ("{item}",)),
        (legal(CallStop), ("stop",)),
        (_waits_tables, ("take it", "{player}")),
        (legal(GiveCards), ("keep", gift, f"{gift} and {{number}} to {{player}}")),
    ))
    return templates, {"item": items, "player": players, "number": ("one", "two", "three")}


def _waits_tables(state: PoutineState, player: str) -> bool:
    """A player waitress in play takes offers (whether one is open now depends on a cook's
    call that may not be refereed yet)."""
    return not state.house and player in state.waitresses and state.phase == "play"
