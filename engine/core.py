"""The engine core shared by every game: actions, events, outcomes, errors, decks.

A game is static metadata plus a :class:`GameState`. Every change goes through
:meth:`GameState.apply`, which first lets time run to the action's timestamp
(timers fire at their own deadlines, never at the caller's clock), then
validates the action, records it and returns the events it caused. Randomness
comes only from the seeded generator kept in the state, so config + seed +
history reproduce a game exactly (:func:`replay`).
"""

from __future__ import annotations

import copy
import random
import re
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar, Generic, Self, TypeVar

# --- errors --------------------------------------------------------------------


class IllegalAction(ValueError):
    """An action the rules do not allow now; the state is left unchanged.

    The message names the action and the state that refused it.
    """

    def __init__(self, action: Action, reason: str) -> None:
        super().__init__(f"{action!r} refused: {reason}")
        self.action = action
        self.reason = reason


class ConfigError(ValueError):
    """A game configuration (players, options, stacked deck) that cannot be played."""


# --- actions ---------------------------------------------------------------------

ACTIONS: dict[str, type[Action]] = {}


@dataclass(frozen=True)
class Action:
    """Something a player (or the clock) does at time ``t`` seconds since the start.

    Subclasses register themselves by class name so a history can be written
    as JSON and read back (:func:`action_from_json`).
    """

    player: str | None
    t: float

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__name__ in ACTIONS:
            raise TypeError(f"two actions are called {cls.__name__}: journals could not tell them apart")
        ACTIONS[cls.__name__] = cls

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["action"] = type(self).__name__
        return data


@dataclass(frozen=True)
class PlayerAction(Action):
    """An action some player takes (``player`` is never None)."""

    player: str
    t: float


@dataclass(frozen=True)
class Tick(Action):
    """Time passing with nobody speaking; lets timers (timeouts, windows) fire."""

    player: str | None = None
    t: float = 0.0


def action_from_json(data: Mapping[str, Any]) -> Action:
    """Rebuild an action written by :meth:`Action.to_json`."""
    name = data.get("action")
    cls = ACTIONS.get(str(name))
    if cls is None:
        raise ValueError(f"unknown action {name!r} in {dict(data)!r}")
    kwargs: dict[str, Any] = {}
    for f in fields(cls):
        value = data[f.name]
        kwargs[f.name] = tuple(value) if isinstance(value, list) else value
    return cls(**kwargs)


@dataclass(frozen=True)
class Record:
    """One entry of a game's history: who did what, when."""

    player: str | None
    action: Action
    t: float


# --- events and outcomes -----------------------------------------------------------


@dataclass(frozen=True)
class Event:
    """Something the table should learn: ``kind`` names it, ``say`` is the narration.

    ``players`` are the players it concerns (in the order that matters, e.g.
    callers by onset); ``data`` carries the details a display or a test needs.
    """

    kind: str
    t: float
    say: str
    players: tuple[str, ...] = ()
    data: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.kind, "t": round(self.t, 3), "say": self.say}
        if self.players:
            out["players"] = list(self.players)
        out.update(self.data)
        return out


NARRATION_WPM = 170
"""The narrator's default speaking rate, in words per minute."""

DEFAULT_TIE_WINDOW_MS = 40.0
"""Calls whose onsets are less than this apart are simultaneous (``--tie-window-ms``)."""


def spoken_s(text: str, wpm: float = NARRATION_WPM) -> float:
    """About how long the narrator takes to say ``text`` at ``wpm``: 0.2 s a syllable, 0.45 s
    at each full stop, colon, semicolon, ! or ?, 0.2 s at each comma, all scaled by 170/wpm:
    fitted to the app's espeak-ng narrator on the three games' lines at 140 to 200 wpm
    (tests/test_tts.py holds it to within 1 s of the real narrator)."""
    syllables = sum(_syllables(word) for word in re.findall(r"[A-Za-z']+|\d+", text))
    pauses = 0.45 * len(re.findall(r"[.!?:;]", text)) + 0.2 * text.count(",")
    return (0.2 * syllables + pauses) * NARRATION_WPM / wpm


def _syllables(word: str) -> int:
    """Vowel groups, less a silent final e; a number's digits each, plus one ("eleven")."""
    if word.isdigit():
        return len(word) + (len(word) > 1)
    w = word.lower()
    n = len(re.findall(r"[aeiouy]+", w))
    if n > 1 and w.endswith("e") and not w.endswith(("le", "ee")):
        n -= 1
    return max(1, n)


@dataclass(frozen=True)
class Outcome:
    """How a game ended: the reason and the winners (several on a tie)."""

    termination: str
    winners: tuple[str, ...]


# --- decks -----------------------------------------------------------------------------


def build_deck(
    cards: Sequence[str], rng: random.Random, stack: Sequence[str] = (), deck: str = "deck"
) -> list[str]:
    """Shuffle ``cards`` with ``rng``, then fix the first cards to ``stack`` (top first).

    Returns the pile with the top card last (``pile.pop()`` draws). Stacked
    names match case-insensitively; a stacked card must be in the deck as many
    times as it is stacked.
    """
    remaining = Counter(cards)
    canonical = {card.casefold(): card for card in cards}
    top: list[str] = []
    for name in stack:
        card = canonical.get(name.strip().casefold())
        if card is None or remaining[card] <= 0:
            known = ", ".join(sorted(set(cards)))
            why = "not a card of it" if card is None else "no copy of it left"
            raise ConfigError(f"cannot stack {name!r} on the {deck} deck: {why} (cards: {known})")
        remaining[card] -= 1
        top.append(card)
    rest = list(remaining.elements())
    rng.shuffle(rest)
    return rest + top[::-1]


# --- the game state -------------------------------------------------------------------

C = TypeVar("C")


class GameState(ABC, Generic[C]):
    """A game in progress: config, seeded generator, clock, history and outcome."""

    name: ClassVar[str]

    def __init__(self, config: C, seed: int) -> None:
        self.config = config
        self.seed = seed
        self.rng = random.Random(seed)
        self.t = 0.0
        self.history: list[Record] = []
        self.outcome: Outcome | None = None
        self.opening: list[Event] = []

    # the single path of change ------------------------------------------------------

    def apply(self, action: Action) -> list[Event]:
        """Let time run to ``action.t``, then validate and carry out the action.

        Raises :class:`IllegalAction` (state unchanged apart from timers that
        were due anyway, which are recorded as a :class:`Tick`).
        """
        if action.t < self.t:
            raise IllegalAction(action, f"it is before the game clock ({self.t:.3f} s)")
        events = self._advance(action.t)
        if isinstance(action, Tick):
            return events
        if self.outcome is not None:
            raise IllegalAction(action, f"the game is over ({self.outcome.termination})")
        self._check(action)
        self.history.append(Record(action.player, action, action.t))
        return events + self._do(action)

    def tick(self, t: float) -> list[Event]:
        """Let time run to ``t``: shorthand for ``apply(Tick(t=t))``."""
        return self.apply(Tick(t=t))

    def _advance(self, t: float) -> list[Event]:
        events: list[Event] = []
        while self.outcome is None:
            due = self._next_deadline()
            if due is None or due > t:
                break
            self.t = max(self.t, due)
            events += self._fire(due)
        self.t = t
        if events:
            self.history.append(Record(None, Tick(t=t), t))
        return events

    # what each game provides ---------------------------------------------------------

    @abstractmethod
    def start(self) -> list[Event]:
        """Deal and open the game at t = 0; called once, right after construction."""

    @abstractmethod
    def _check(self, action: Action) -> None:
        """Raise :class:`IllegalAction` if ``action`` is not allowed now."""

    @abstractmethod
    def _do(self, action: Action) -> list[Event]:
        """Carry out a checked action."""

    def _next_deadline(self) -> float | None:
        """The earliest pending timer, if any."""
        return None

    def _fire(self, due: float) -> list[Event]:
        """Fire the timer due at ``due``."""
        return []

    @abstractmethod
    def summary(self) -> dict[str, Any]:
        """The final-line summary: ``players`` and the game's own fields."""

    # public contract ----------------------------------------------------------------------

    def is_legal(self, action: Action) -> bool:
        """Whether ``action`` would be accepted now (timers due before it included): judged on
        the game as :meth:`apply` would find it at ``action.t``, this state unchanged."""
        if action.t < self.t:
            return False
        ahead = self.at(action.t)
        if isinstance(action, Tick):
            return True
        if ahead.outcome is not None:
            return False
        try:
            ahead._check(action)
        except IllegalAction:
            return False
        return True

    def at(self, t: float) -> Self:
        """The game as it will be at ``t`` if nobody acts before: this state when no timer is
        due by then, else a copy with time run on (this one unchanged)."""
        due = self._next_deadline()
        if due is None or due > t or t < self.t:
            return self
        ahead = copy.deepcopy(self)
        ahead.tick(t)
        return ahead

    @property
    def finished(self) -> bool:
        return self.outcome is not None


S = TypeVar("S", bound=GameState[Any])


def started(state: S) -> S:
    """Open a freshly built game (deal, first announcements into ``opening``)."""
    state.opening = state.start()
    return state


def replay(state: S, history: Iterable[Record]) -> S:
    """Apply a recorded history to a freshly started state and return it."""
    for record in history:
        state.apply(record.action)
    return state


def join_names(names: Sequence[str]) -> str:
    """'A', 'A and B', 'A, B and C': names as narration says them."""
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def rank(players: Sequence[str], key: Mapping[str, tuple[Any, ...]]) -> list[list[str]]:
    """Players grouped by ``key`` (best first); equal keys share a place."""
    ordered = sorted(players, key=lambda p: key[p], reverse=True)
    groups: list[list[str]] = []
    for p in ordered:
        if groups and key[groups[-1][0]] == key[p]:
            groups[-1].append(p)
        else:
            groups.append([p])
    return groups
