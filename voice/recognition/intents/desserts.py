"""Just Desserts utterances: "got it", "pass", "favorite", and serves of 1–3 desserts."""

from __future__ import annotations

from functools import cache

from engine import decks
from engine.core import Action
from engine.desserts import DessertsState, Favorite, GotIt, Pass, Serve
from voice.recognition.intents import (
    Phrases,
    UnparseableUtterance,
    Vocabulary,
    legal,
    lists,
    sayable,
    words,
)

GOT_IT = {("got", "it"), ("i", "got", "it"), ("i've", "got", "it"), ("got", "it", "got", "it")}
PASS = {("pass",), ("i", "pass")}
FILLERS = ("the", "a", "an", "and", "some", "with", "plus", "one", "i", "serve", "here's")


@cache
def dessert_names() -> Vocabulary:
    return Vocabulary({d.name: () for d in decks.desserts().desserts}, FILLERS)


def parse(text: str, player: str, t: float, state: DessertsState | None = None) -> Action:
    """The action ``player`` means by ``text`` at ``t`` seconds."""
    tokens = words(text)
    if tokens in GOT_IT:
        return GotIt(player, t)
    if tokens in PASS:
        return Pass(player, t)
    if tokens and tokens[0] in ("favorite", "favourite"):
        return Favorite(player, t, tuple(dessert_names().match(tokens[1:], text)))
    served = dessert_names().match(tokens, text)
    if not served:
        raise UnparseableUtterance(text)
    if len(served) > 3:
        raise UnparseableUtterance(text, "a serve is at most three desserts")
    return Serve(player, t, tuple(served))


def awaited(state: DessertsState) -> tuple[str, ...]:
    """Who must speak now: the caller whose serve is awaited, or the trumper who claimed the
    favorite and must name it."""
    if state.phase == "serving" and state.server is not None:
        return (state.server,)
    if state.phase == "trump window" and state.claim is not None and state.claim.trumper:
        return (state.claim.trumper,)
    return ()


def phrases(players: tuple[str, ...], state: DessertsState | None = None,
            player: str | None = None) -> Phrases:
    """What a player may say in Just Desserts: calls, and serves of one to three desserts;
    with a state and a player, only what the rules let that player say now (no serve before
    winning the call, no second "got it", "favorite" only from another caller in a trump
    window)."""
    serves = lists("dessert", 3)
    desserts = tuple(d.name for d in decks.desserts().desserts)
    templates = sayable(state, player, (
        (legal(GotIt), ("got it", "i got it")),
        (legal(Pass), ("pass", "i pass")),
        (legal(lambda p, t: Favorite(p, t, ())), ("favorite", *(f"favorite {s}" for s in serves))),
        (legal(lambda p, t: Serve(p, t, desserts[:1])), serves),
    ))
    return templates, {"dessert": desserts}
