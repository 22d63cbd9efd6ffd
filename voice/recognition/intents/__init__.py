"""Text to game actions: the shared tools every game's intent parser uses.

An utterance is normalised (case, punctuation, spacing), then matched against
the phrases the game allows. Anything else raises :class:`UnparseableUtterance`,
which changes nothing in the game.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from engine.core import Action, GameState

_NON_WORD = re.compile(r"[^\w']+")


class UnparseableUtterance(ValueError):
    """The words are not a phrase the game allows now."""

    def __init__(self, text: str, reason: str = "not a phrase of this game") -> None:
        super().__init__(f"cannot understand {text!r}: {reason}")
        self.text = text
        self.reason = reason


class AmbiguousUtterance(UnparseableUtterance):
    """The words fit several phrases equally well (e.g. a dish named without its variant)."""

    def __init__(self, text: str, candidates: Sequence[str]) -> None:
        super().__init__(text, f"could be {' or '.join(candidates)}")
        self.candidates = tuple(candidates)


def words(text: str) -> tuple[str, ...]:
    """Lower-case words of ``text``, punctuation dropped ("Got it!" → ("got", "it"))."""
    return tuple(w.strip("'") for w in _NON_WORD.split(text.casefold()) if w.strip("'"))


class Vocabulary:
    """Spoken forms of names (several forms may name one thing), matched greedily.

    ``match`` reads a word sequence as a list of names, longest spoken form
    first, skipping filler words; any word left over makes it unparseable.
    """

    def __init__(self, forms: Mapping[str, Iterable[str]], fillers: Iterable[str] = ()) -> None:
        self._forms: dict[tuple[str, ...], str] = {}
        for name, spoken in forms.items():
            for form in (name, *spoken):
                self._forms[words(form)] = name
        self._longest = max(len(f) for f in self._forms)
        self.fillers = frozenset(fillers)

    def match(self, tokens: Sequence[str], text: str) -> list[str]:
        names: list[str] = []
        i = 0
        while i < len(tokens):
            for n in range(min(self._longest, len(tokens) - i), 0, -1):
                name = self._forms.get(tuple(tokens[i : i + n]))
                if name is not None:
                    names.append(name)
                    i += n
                    break
            else:
                if tokens[i] not in self.fillers:
                    raise UnparseableUtterance(text, f"{tokens[i]!r} is not a name I know here")
                i += 1
        return names


Phrases = tuple[tuple[str, ...], dict[str, tuple[str, ...]]]
"""Phrase templates with ``{slot}`` references, and each slot's alternatives."""


Sayable = Callable[[Any, str], bool]
"""Whether a player may say a group of phrases in a game state."""


def legal(make: Callable[[str, float], Action]) -> Sayable:
    """A group the player may say when the rules would accept the action ``make`` builds
    for them now."""
    return lambda state, player: bool(state.is_legal(make(player, state.t)))


def sayable(state: GameState[Any] | None, player: str | None,
            groups: Iterable[tuple[Sayable, tuple[str, ...]]]) -> tuple[str, ...]:
    """The templates of the groups ``player`` may say in ``state``: the grammar of the
    moment for one player's mic. Every group without a state or a player."""
    return tuple(
        template for may, templates in groups
        if state is None or player is None or may(state, player)
        for template in templates
    )


def lists(slot: str, most: int) -> tuple[str, ...]:
    """'{slot}', '{slot} and {slot}', '{slot} {slot} and {slot}', … up to ``most`` items."""
    out = [f"{{{slot}}}"]
    for n in range(2, most + 1):
        out.append(" ".join([f"{{{slot}}}"] * (n - 1)) + f" and {{{slot}}}")
        out.append(" and ".join([f"{{{slot}}}"] * n))
    return tuple(dict.fromkeys(out))
