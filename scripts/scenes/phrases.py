"""What is said at a scene's table: the calls, table talk, every in-grammar phrase of the three
games' decks, and the app's narration lines."""

from __future__ import annotations

from engine import decks

CALLS = ("got it", "pass", "stop", "bell", "favorite")
RACE_CALLS = ("got it", "got it", "got it", "stop", "bell")
CHATTER = (
    "pass me the salt please",
    "whose turn is it",
    "I love this game",
    "wait what did it say",
    "can you read that card again",
    "I think I had that one",
    "hang on a second",
    "who wants another drink",
    "that was so close",
    "no way you were first",
    "my phone is ringing",
    "let me see your cards",
    "this one is impossible",
    "how many points do I have",
    "you always win this",
    "okay okay I am ready",
    "did anyone hear that",
    "turn the music down a bit",
    "where did the cookies go",
    "I am starving",
    "we should order a pizza",
    "stop looking at my hand",
    "that is not fair at all",
    "can we play again after this",
    "the bell is over there",
    "is it my go now",
    "I got distracted sorry",
    "what time is it",
    "one more round then bed",
    "nice move",
    "I forgot the rules already",
    "you need to speak up",
)


def command_phrases() -> tuple[tuple[str, str], ...]:
    """Every in-grammar phrase a player may say, as (grammar, text): the calls, and the cards
    of the three games' decks as said in play (desserts by name, the poutine menu's spoken
    forms, chaosteria's variants claimed and dishes returned: "mine onion soup", "nobody
    ordered soup" — the game grammar has no bare dish names)."""
    phrases = [("call", c) for c in CALLS]
    phrases += [("desserts", d.name.lower()) for d in decks.desserts().desserts]
    menu = decks.poutine()
    phrases += [("poutine", s) for item in (*menu.menu, menu.fries) for s in item.spoken]
    for dish in decks.chaosteria().dishes:
        phrases += [("chaosteria", f"mine {v.lower()}") for v in dish.variants]
        phrases.append(("chaosteria", f"nobody ordered {dish.dish.lower()}"))
    return tuple(dict.fromkeys(phrases))


def narration_lines() -> tuple[str, ...]:
    """Things the app says: guest announcements from the desserts deck, and short verdicts
    that sound like calls (the hard case for "the app never hears itself")."""
    guests = [
        f"Next guest: {g.name}. Craves {' and '.join(g.craves)}."
        + (f" Favorite: {g.favorite}." if g.favorite else "")
        for g in decks.desserts().guests
    ]
    verdicts = [
        "Stop!",
        "Got it. Maya first.",
        "Leo passes.",
        "Pass.",
        "Bell!",
        "Time is up.",
        "Rocky Road is Rocky's favorite!",
        "Priya takes the guest and draws a card.",
        "Omar, that is not on the menu.",
    ]
    return (*guests, *verdicts)
