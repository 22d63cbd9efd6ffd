"""Just Desserts (docs/rules.md §1): the app is the Maître D' and referee.

Players' hands stay physical cards; the engine tracks their sizes, the dirty
dishes, the guests collected, the piles and the kitchen. A turned-up guest
ends in exactly one of: all pass (or the guest timeout), a first caller's
serve (with the favorite bonus and the favorite trump), simultaneous calls,
or erroneous calls with a penalty for every caller.

One module for the whole game, as for the other two: its rules are one state machine whose
phases share every check, and a reader follows a rule of docs/rules.md §1 in one file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine import decks
from engine.core import (
    DEFAULT_TIE_WINDOW_MS,
    NARRATION_WPM,
    Action,
    ConfigError,
    Event,
    GameState,
    IllegalAction,
    Outcome,
    PlayerAction,
    build_deck,
    join_names,
    rank,
    spoken_s,
    started,
)
from engine.players import check_players

DECKS = ("guests",)


@dataclass(frozen=True)
class DessertsConfig:
    """Players in seating order and the timing decisions of docs/rules.md §1."""

    players: tuple[str, ...]
    tie_window_ms: float = DEFAULT_TIE_WINDOW_MS
    trump_window_s: float = 1.5
    guest_timeout_s: float = 20.0
    """Counted from the end of the guest's announcement, as the narrator says it at
    ``narration_wpm`` (:func:`engine.core.spoken_s`, after the lines said before it)."""
    serve_timeout_s: float = 10.0
    hand_size: int = 5
    stacks: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    narration_wpm: float = NARRATION_WPM


# --- actions ------------------------------------------------------------------------


@dataclass(frozen=True)
class GotIt(PlayerAction):
    """"Got it!": the player claims they can satisfy the guest."""


@dataclass(frozen=True)
class Pass(PlayerAction):
    """"Pass": the player will not serve this guest."""


@dataclass(frozen=True)
class Serve(PlayerAction):
    """The player names the one to three desserts they serve."""

    desserts: tuple[str, ...]


@dataclass(frozen=True)
class Favorite(PlayerAction):
    """"Favorite": another caller trumps a serve; ``desserts`` may follow in a later Serve."""

    desserts: tuple[str, ...] = ()


# --- helpers ------------------------------------------------------------------------------


def satisfies(guest: decks.Guest, served: Sequence[str]) -> bool:
    """Whether the served desserts together give every craved icon and no disliked one."""
    deck = decks.desserts()
    icons = [deck.dessert(name).icons for name in served]
    union = frozenset().union(*icons)
    return union.issuperset(guest.craves) and union.isdisjoint(guest.dislikes)


def describe_guest(guest: decks.Guest) -> str:
    say = f"Next guest: {guest.name}. Craves {join_names(guest.craves)}."
    if guest.dislikes:
        say += f" Dislikes {join_names(guest.dislikes)}."
    if guest.favorite:
        say += f" Favorite: {guest.favorite}."
    return say


@dataclass
class _Claim:
    """A serve waiting out the trump window, and who may still trump it."""

    server: str
    desserts: tuple[str, ...]
    named_t: float
    trumper: str | None = None
    trumper_deadline: float = 0.0
    refused: set[str] = field(default_factory=set)


class DessertsState(GameState[DessertsConfig]):
    """A game of Just Desserts in progress."""

    name = "desserts"

    def __init__(self, config: DessertsConfig, seed: int) -> None:
        super().__init__(config, seed)
        self.players = check_players(config.players)
        unknown = set(config.stacks) - set(DECKS)
        if unknown:
            raise ConfigError(f"Just Desserts has no deck {sorted(unknown)}; stackable: guests")
        deck = decks.desserts()
        if config.hand_size * len(self.players) > deck.dessert_cards:
            raise ConfigError(f"{len(self.players)} players cannot each be dealt {config.hand_size}")
        self.hands = {p: config.hand_size for p in self.players}
        self.dirty = {p: 0 for p in self.players}
        self.collected: dict[str, list[str]] = {p: [] for p in self.players}
        self.dessert_pile = deck.dessert_cards - config.hand_size * len(self.players)
        self.set_aside = 0
        self.kitchen_open = True
        self.guest_pile = build_deck(
            [g.name for g in deck.guests], self.rng, config.stacks.get("guests", ()), "guests"
        )
        self.guest_discard: list[str] = []
        self.reshuffled = False
        self.guest: decks.Guest | None = None
        self._reset_turn(0.0)

    def _reset_turn(self, t: float) -> None:
        self.announced_t = t  # when the players have heard the guest (see _announced)
        self.callers: list[tuple[str, float]] = []
        self.passed: set[str] = set()
        self.failed: set[str] = set()
        self.server: str | None = None
        self.serve_deadline = 0.0
        self.claim: _Claim | None = None

    # --- opening and timers ---------------------------------------------------------

    def start(self) -> list[Event]:
        return self._announced([
            Event(
                "deal",
                0.0,
                f"Dealing {self.config.hand_size} desserts to each of "
                f"{join_names(self.players)}.",
                self.players,
                {"hand": self.config.hand_size, "dessert_pile": self.dessert_pile},
            ),
            *self._next_guest(0.0),
        ])

    def _announced(self, events: list[Event]) -> list[Event]:
        """Note when a new guest's announcement ends: the moment's lines are said in order
        ("Maya takes Rocky. Maya draws. Next guest: ..."), the guest's last."""
        for i, event in enumerate(events):
            if event.kind == "guest":
                said = " ".join(e.say for e in events[: i + 1] if e.say)
                self.announced_t = event.t + spoken_s(said, self.config.narration_wpm)
        return events

    @property
    def phase(self) -> str:
        """'calling', 'verdict pending', 'serving', 'trump window' or 'over'."""
        if self.outcome is not None:
            return "over"
        if self.claim is not None:
            return "trump window"
        if self.server is not None:
            return "serving"
        return "verdict pending" if self.callers else "calling"

    def _next_deadline(self) -> float | None:
        phase = self.phase
        if phase == "calling":
            return self.announced_t + self.config.guest_timeout_s
        if phase == "verdict pending":
            return self.callers[0][1] + self.config.tie_window_ms / 1000.0
        if phase == "serving":
            return self.serve_deadline
        if phase == "trump window":
            assert self.claim is not None
            if self.claim.trumper is not None:
                return self.claim.trumper_deadline
            return self.claim.named_t + self.config.trump_window_s
        return None

    def _fire(self, due: float) -> list[Event]:
        return self._announced(self._expire(due))

    def _expire(self, due: float) -> list[Event]:
        phase = self.phase
        if phase == "calling":
            return [
                Event("timeout", due, f"Time's up for {self.guest_name}.", (), {}),
                *self._hungry(due, "timeout"),
            ]
        if phase == "verdict pending":
            return self._verdict(due)
        if phase == "serving":
            assert self.server is not None
            return self._erroneous(due, self.server, f"{self.server} named nothing in time.")
        assert self.claim is not None
        claim = self.claim
        events: list[Event] = []
        if claim.trumper is not None:
            events.append(
                Event(
                    "trump_refused",
                    due,
                    f"{claim.trumper} named no favorite serve in time.",
                    (claim.trumper,),
                )
            )
        return events + self._collect(due, claim.server, claim.desserts)

    @property
    def guest_name(self) -> str:
        return self.guest.name if self.guest else "nobody"

    # --- checking actions -------------------------------------------------------------

    def _check(self, action: Action) -> None:
        if action.player not in self.players:
            raise IllegalAction(action, f"{action.player!r} is not playing ({', '.join(self.players)})")
        player = action.player
        called = any(p == player for p, _ in self.callers)
        phase = self.phase
        if isinstance(action, GotIt):
            if called:
                raise IllegalAction(action, f"{player} already called for {self.guest_name}")
            if player in self.passed:
                raise IllegalAction(action, f"{player} passed on {self.guest_name}")
        elif isinstance(action, Pass):
            if called:
                raise IllegalAction(action, f"{player} called got it for {self.guest_name}")
            if player in self.passed:
                raise IllegalAction(action, f"{player} already passed")
        elif isinstance(action, Favorite):
            self._check_trump(action, called)
        elif isinstance(action, Serve):
            claim = self.claim
            if claim is not None and claim.trumper == player:
                self._check_serve_size(action)
                return
            if phase not in ("serving",) or self.server != player:
                who = self.server or (claim.server if claim else None)
                reason = f"it is {who}'s serve" if who else "nobody has won the call yet"
                raise IllegalAction(action, reason)
            self._check_serve_size(action)
        else:
            raise IllegalAction(action, "not a Just Desserts action")

    def _check_trump(self, action: Favorite, called: bool) -> None:
        claim = self.claim
        if claim is None:
            raise IllegalAction(action, "no serve is waiting to be trumped")
        if not called or action.player in self.failed or action.player == claim.server:
            raise IllegalAction(action, f"only another caller of {self.guest_name} may trump")
        if claim.trumper is not None:
            raise IllegalAction(action, f"{claim.trumper} is already trumping")
        if action.player in claim.refused:
            raise IllegalAction(action, f"{action.player} already tried to trump")
        if action.desserts:
            self._check_serve_size(action)

    @staticmethod
    def _check_serve_size(action: Serve | Favorite) -> None:
        if not 1 <= len(action.desserts) <= 3:
            raise IllegalAction(action, "a serve is one, two or three desserts")
        known = {d.name for d in decks.desserts().desserts}
        unknown = [d for d in action.desserts if d not in known]
        if unknown:
            raise IllegalAction(action, f"no such dessert: {', '.join(unknown)}")

    # --- carrying out actions --------------------------------------------------------------

    def _do(self, action: Action) -> list[Event]:
        return self._announced(self._act(action))

    def _act(self, action: Action) -> list[Event]:
        t = action.t
        assert action.player is not None
        player = action.player
        if isinstance(action, GotIt):
            self.callers.append((player, t))
            return []
        if isinstance(action, Pass):
            self.passed.add(player)
            if not self.callers and self.passed == set(self.players):
                return [Event("all_pass", t, "Everybody passes.", self.players), *self._hungry(t, "all pass")]
            return []
        if isinstance(action, Favorite):
            assert self.claim is not None
            if not action.desserts:
                self.claim.trumper = player
                self.claim.trumper_deadline = t + self.config.serve_timeout_s
                return [Event("trump_claim", t, f"{player} claims the favorite. Name it!", (player,))]
            return self._trump(t, player, action.desserts)
        assert isinstance(action, Serve)
        if self.claim is not None:
            return self._trump(t, player, action.desserts)
        return self._serve(t, player, action.desserts)

    def _verdict(self, t: float) -> list[Event]:
        (first, onset), *rest = self.callers
        gap_ms = round((rest[0][1] - onset) * 1000.0, 3) if rest else None
        if gap_ms is not None and gap_ms < self.config.tie_window_ms:
            tied = tuple(
                p for p, o in self.callers if round((o - onset) * 1000.0, 3) < self.config.tie_window_ms
            )
            return [
                Event("tie", t, f"{join_names(tied)} called together.", tied, {"gap_ms": gap_ms}),
                *self._hungry(t, "tie"),
            ]
        self.server = first
        self.serve_deadline = t + self.config.serve_timeout_s
        callers = [{"player": p, "onset_s": round(o, 3)} for p, o in self.callers]
        return [
            Event(
                "first",
                t,
                f"{first} first.",
                (first,),
                {"gap_ms": gap_ms, "guest": self.guest_name, "callers": callers},
            )
        ]

    def _serve(self, t: float, player: str, served: tuple[str, ...]) -> list[Event]:
        assert self.guest is not None
        problem = self._serve_problem(player, served)
        if problem:
            return self._erroneous(t, player, problem)
        others = [p for p, _ in self.callers if p != player and p not in self.failed]
        favorite = self.guest.favorite
        if favorite is None or favorite in served or not others:
            return self._collect(t, player, served)
        self.server = None
        self.claim = _Claim(player, served, t)
        return [
            Event(
                "serve_named",
                t,
                f"{player} serves {join_names(served)}.",
                (player,),
                {"desserts": list(served), "trump_until": round(t + self.config.trump_window_s, 3)},
            )
        ]

    def _serve_problem(self, player: str, served: Sequence[str]) -> str | None:
        assert self.guest is not None
        if self.hands[player] < len(served):
            return f"{player} holds only {self.hands[player]} desserts."
        if not satisfies(self.guest, served):
            return f"{join_names(served)} won't satisfy {self.guest.name}."
        return None

    def _trump(self, t: float, player: str, served: tuple[str, ...]) -> list[Event]:
        claim = self.claim
        assert claim is not None and self.guest is not None
        favorite = self.guest.favorite
        problem = self._serve_problem(player, served)
        if favorite not in served:
            problem = f"{join_names(served)} is not {self.guest.name}'s favorite."
        if problem:
            claim.refused.add(player)
            claim.trumper = None
            refused = [Event("trump_refused", t, f"No trump. {problem}", (player,))]
            if t >= claim.named_t + self.config.trump_window_s:
                return refused + self._collect(t, claim.server, claim.desserts)
            return refused
        return [
            Event(
                "trump",
                t,
                f"{player} trumps {claim.server} with the favorite!",
                (player, claim.server),
            ),
            *self._collect(t, player, served),
        ]

    def _collect(self, t: float, player: str, served: Sequence[str]) -> list[Event]:
        guest = self.guest
        assert guest is not None
        self.hands[player] -= len(served)
        self.dirty[player] += len(served)
        self.collected[player].append(guest.name)
        events = [
            Event(
                "served",
                t,
                f"{player} takes {guest.name}.",
                (player,),
                {"guest": guest.name, "desserts": list(served)},
            )
        ]
        if guest.favorite in served:
            events.append(Event("favorite", t, "Favorite!", (player,), {"dessert": guest.favorite}))
            events += self._draw(t, (player,), "favorite bonus")
        return events + self._next_guest(t)

    def _erroneous(self, t: float, player: str, problem: str) -> list[Event]:
        self.failed.add(player)
        self.server = None
        events = [Event("erroneous", t, problem, (player,), {"guest": self.guest_name})]
        waiting = [p for p, _ in self.callers if p not in self.failed]
        if waiting:
            nxt = waiting[0]
            self.server = nxt
            self.serve_deadline = t + self.config.serve_timeout_s
            return events + [Event("next_server", t, f"{nxt}, your serve.", (nxt,))]
        callers = tuple(p for p, _ in self.callers)
        penalised = tuple(p for p in callers if self.hands[p] > 0)
        for p in penalised:
            self.hands[p] -= 1
            self.dirty[p] += 1
        if penalised:
            events.append(
                Event(
                    "penalty",
                    t,
                    f"{join_names(penalised)}: discard one dessert to your dirty dishes.",
                    penalised,
                )
            )
        return events + self._hungry(t, "erroneous")

    def _hungry(self, t: float, why: str) -> list[Event]:
        """The guest leaves hungry: discard it, everyone draws, next guest."""
        assert self.guest is not None
        self.guest_discard.append(self.guest.name)
        events = [Event("guest_leaves", t, f"{self.guest.name} leaves hungry.", (), {"why": why})]
        return events + self._draw(t, self.players, "everyone draws") + self._next_guest(t)

    def _draw(self, t: float, who: Sequence[str], why: str) -> list[Event]:
        if not self.kitchen_open:
            return []
        if self.dessert_pile < len(who):
            self.kitchen_open = False
            self.set_aside += self.dessert_pile
            self.dessert_pile = 0
            return [Event("kitchen_closed", t, "The kitchen is closed: no more desserts.", ())]
        for p in who:
            self.hands[p] += 1
        self.dessert_pile -= len(who)
        say = f"{join_names(list(who))} draws." if len(who) == 1 else "Everyone draws."
        return [Event("draw", t, say, tuple(who), {"why": why, "dessert_pile": self.dessert_pile})]

    def _next_guest(self, t: float) -> list[Event]:
        events: list[Event] = []
        self.guest = None
        if not self.guest_pile and not self.reshuffled and self.guest_discard:
            self.reshuffled = True
            self.guest_pile = self.guest_discard
            self.guest_discard = []
            self.rng.shuffle(self.guest_pile)
            events.append(Event("reshuffle", t, "Shuffling the hungry guests back in.", ()))
        if not self.guest_pile:
            return events + self._end(t)
        deck = decks.desserts()
        self.guest = deck.guest(self.guest_pile.pop())
        self._reset_turn(t)
        events.append(
            Event(
                "guest",
                t,
                describe_guest(self.guest),
                (),
                {
                    "guest": self.guest.name,
                    "craves": list(self.guest.craves),
                    "dislikes": list(self.guest.dislikes),
                    "favorite": self.guest.favorite,
                },
            )
        )
        return events

    def _end(self, t: float) -> list[Event]:
        self._reset_turn(t)
        groups = self.ranking()
        winners = tuple(groups[0])
        self.outcome = Outcome("guests exhausted", winners)
        if len(winners) == 1:
            say = f"Game over. {winners[0]} wins with {len(self.collected[winners[0]])} guests."
        else:
            say = f"Game over. {join_names(list(winners))} tie. Rematch?"
        return [Event("game_over", t, say, winners, {"termination": "guests exhausted"})]

    # --- results -----------------------------------------------------------------------------

    def ranking(self) -> list[list[str]]:
        """Most guests; then most desserts in hand; then fewest dirty dishes."""
        key = {p: (len(self.collected[p]), self.hands[p], -self.dirty[p]) for p in self.players}
        return rank(self.players, key)

    def summary(self) -> dict[str, Any]:
        groups = self.ranking()
        return {
            "players": {
                p: {"guests": len(self.collected[p]), "hand": self.hands[p], "dirty_dishes": self.dirty[p]}
                for p in self.players
            },
            "ranking": [p for group in groups for p in group],
            "winners": list(self.outcome.winners) if self.outcome else [],
        }


def new_game(config: DessertsConfig, seed: int) -> DessertsState:
    """A dealt game with its first guest up; the opening events are in ``opening``."""
    return started(DessertsState(config, seed))
