"""Chaosteria (docs/rules.md §3): the memory game, refereed by the one who never forgets.

Ordering: with *house orders* the app deals one order card of each category to
every player and reads each card's two variants aloud, one card at a time in
seating order; the asked player says the one they choose. With *table orders*
players hold physical cards and say their choices in any order and grouping;
the app checks one dish per category per player and no card claimed twice.
Either way the app records every chosen variant.

Serving: the waiter serves one kitchen dish to another player, or says
"return" and names, one at a time, the dishes nobody ordered. Every claim
(the waiter's, or a correction) opens a bell window; bells whose onsets are
less than the tie window apart ring together, the earliest onset getting the
floor. The ringer must then name who ordered the dish (or nobody). When a
window closes with no further bell, the app answers for the client, settles
the whole chain of corrections and ends the turn (or lets a return go on).

One module for the whole game, as for the other two: its rules are one state machine whose
phases share every check, and a reader follows a rule of docs/rules.md §3 in one file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from functools import cache
from typing import Any

from engine import decks
from engine.core import (
    DEFAULT_TIE_WINDOW_MS,
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
    started,
)
from engine.players import check_players, to_the_right

DECKS = ("orders", "dishes")
HOUSE = "house"
TABLE = "table"
ORDER_CARD_POINTS = 3
DISH_CARD_POINTS = 1
COMPLAINT_POINTS = -2


@dataclass(frozen=True)
class ChaosteriaConfig:
    """Players in seating order, how orders are taken, and the timings of docs/rules.md §3."""

    players: tuple[str, ...]
    orders: str = HOUSE
    kitchen: int = 3
    bell_window_s: float = 2.0
    tie_window_ms: float = DEFAULT_TIE_WINDOW_MS
    stacks: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def dishes_to_return(n_players: int) -> int:
    """How many dishes a return must name with ``n_players`` (0: no return allowed)."""
    if n_players <= 4:
        return 3
    if n_players <= 7:
        return 2
    return 1 if n_players <= 9 else 0


@cache
def dish_named(name: str) -> decks.Dish:
    """The deck row of a dish name or a variant name (canonical spelling)."""
    for dish in decks.chaosteria().dishes:
        if name == dish.dish or name in dish.variants:
            return dish
    raise KeyError(name)


# --- actions -------------------------------------------------------------------------


@dataclass(frozen=True)
class PlaceOrder(PlayerAction):
    """A player orders: the chosen variant(s) (house orders: exactly one, the card asked)."""

    variants: tuple[str, ...]


@dataclass(frozen=True)
class ServeDish(PlayerAction):
    """The waiter serves ``dish`` to ``client`` as ``variant`` (None: not said; the app asks)."""

    client: str
    dish: str
    variant: str | None = None


@dataclass(frozen=True)
class ReturnDishes(PlayerAction):
    """The waiter says "return": he will return dishes nobody ordered."""


@dataclass(frozen=True)
class ReturnDish(PlayerAction):
    """One dish of a return: "nobody ordered the guacamole"."""

    dish: str


@dataclass(frozen=True)
class RingBell(PlayerAction):
    """The player rings the bell to correct the claim on the dish on the plate."""


@dataclass(frozen=True)
class Correct(PlayerAction):
    """The ringer's correction: ``client`` ordered the dish as ``variant``; client None: nobody.

    ``dish`` is the dish the ringer named (None: "it"); ``variant`` None with a
    client gets one "which one?".
    """

    client: str | None
    dish: str | None = None
    variant: str | None = None


@dataclass(frozen=True)
class PeekOrders(PlayerAction):
    """A player asks "what did I order?": a foul; the app answers aloud and charges a complaint."""


# --- state pieces --------------------------------------------------------------------


@dataclass(frozen=True)
class Claim:
    """What a player says about the dish on the plate: its client and variant, or nobody."""

    player: str
    client: str | None
    variant: str | None


@dataclass(frozen=True)
class OrderCard:
    """An order card won by a serve: whose order, which variant, and whether a bell won it."""

    owner: str
    dish: str
    variant: str
    by_bell: bool


class Verdict(Enum):
    """How a claim matches the hidden orders."""

    RIGHT = "right"
    WRONG_VARIANT = "wrong variant"
    WRONG_CLIENT = "wrong client"


class ChaosteriaState(GameState[ChaosteriaConfig]):
    """A game of Chaosteria in progress."""

    name = "chaosteria"

    def __init__(self, config: ChaosteriaConfig, seed: int) -> None:
        super().__init__(config, seed)
        self.players = check_players(config.players, minimum=2, maximum=10)
        self._check_config(config)
        deck = decks.chaosteria()
        stacked = [self._stacked_order(name) for name in config.stacks.get("orders", ())]
        # Order cards not (yet) placed, by category: the undealt deck with house
        # orders, the cards nobody has claimed with table orders.
        self.order_piles: dict[str, list[str]] = {}
        for category in deck.categories:
            cards = [d.dish for d in deck.dishes if d.category == category]
            if config.orders == HOUSE:
                top = [d.dish for d in stacked if d.category == category]
                cards = build_deck(cards, self.rng, top, "orders")
            self.order_piles[category] = cards
        # Dealt cards awaiting a choice (house orders), then face-down orders: dish → variant.
        self.hands: dict[str, list[str]] = {p: [] for p in self.players}
        if config.orders == HOUSE:
            for p in self.players:
                self.hands[p] = [self.order_piles[c].pop() for c in deck.categories]
        self.orders: dict[str, dict[str, str]] = {p: {} for p in self.players}
        self.dish_deck = build_deck(
            [d.dish for d in deck.dishes], self.rng, config.stacks.get("dishes", ()), "dishes"
        )
        self.kitchen: list[str] = []
        self.plate: str | None = None
        self.table: list[str] = []
        self.dish_discard: list[str] = []
        self.order_discard: list[str] = []
        self.won: dict[str, list[OrderCard]] = {p: [] for p in self.players}
        self.kept: dict[str, list[str]] = {p: [] for p in self.players}
        self.complaints = {p: 0 for p in self.players}
        self.serving = False
        self.waiter = self.players[0]
        self.returning = False
        self.to_return = 0
        self.claims: list[Claim] = []
        self.window_until = 0.0
        self.ringers: list[tuple[str, float]] = []
        self.floor: str | None = None
        self.floor_until = 0.0
        self.question: ServeDish | Correct | None = None
        self.obvious = False

    def _check_config(self, config: ChaosteriaConfig) -> None:
        unknown = set(config.stacks) - set(DECKS)
        if unknown:
            raise ConfigError(
                f"Chaosteria has no deck {sorted(unknown)}; stackable: {', '.join(DECKS)}"
            )
        if config.orders not in (HOUSE, TABLE):
            raise ConfigError(f"orders are taken 'house' or 'table', not {config.orders!r}")
        if config.orders == TABLE and config.stacks.get("orders"):
            raise ConfigError("table orders are physical cards: the orders deck cannot be stacked")
        if config.kitchen < 1:
            raise ConfigError(f"the kitchen shows at least one dish, not {config.kitchen}")
        if config.bell_window_s <= 0:
            raise ConfigError(f"the bell window must be positive, not {config.bell_window_s} s")

    @staticmethod
    def _stacked_order(name: str) -> decks.Dish:
        folded = name.strip().casefold()
        for dish in decks.chaosteria().dishes:
            if dish.dish.casefold() == folded:
                return dish
        raise ConfigError(
            f"cannot stack {name!r} on the orders deck: not a dish (order cards are named by dish)"
        )

    # --- phases and timers -------------------------------------------------------------

    @property
    def phase(self) -> str:
        """'ordering', 'serving' or 'over'."""
        if self.outcome is not None:
            return "over"
        return "serving" if self.serving else "ordering"

    def start(self) -> list[Event]:
        if self.config.orders == TABLE:
            categories = join_names(decks.chaosteria().categories)
            return [
                Event(
                    "take_orders",
                    0.0,
                    f"Table orders: each of you, order one dish of each category: {categories}.",
                    self.players,
                )
            ]
        deal = Event(
            "deal",
            0.0,
            f"Dealing one order card of each category to {join_names(self.players)}.",
            self.players,
        )
        return [deal, self._prompt(0.0)]

    def _next_deadline(self) -> float | None:
        if self.ringers:
            return self.ringers[0][1] + self.config.tie_window_ms / 1000.0
        if self.floor is not None:
            return self.floor_until
        if self.claims:
            return self.window_until
        return None

    def _fire(self, due: float) -> list[Event]:
        if self.ringers:
            return self._give_floor(due)
        if self.floor is not None:
            return self._silent_ringer(due)
        return self._settle(due)

    # --- checking actions ----------------------------------------------------------------

    def _check(self, action: Action) -> None:
        if action.player not in self.players:
            raise IllegalAction(
                action, f"{action.player!r} is not playing ({', '.join(self.players)})"
            )
        if isinstance(action, PlaceOrder):
            if self.serving:
                raise IllegalAction(action, "every order is placed; the serving has begun")
            if self.config.orders == HOUSE:
                self._check_house_order(action)
            else:
                self._check_table_order(action)
            return
        if not self.serving:
            raise IllegalAction(action, "orders are still being placed")
        if isinstance(action, PeekOrders):
            return
        if isinstance(action, RingBell):
            self._check_bell(action)
        elif isinstance(action, Correct):
            self._check_correction(action)
        elif isinstance(action, (ServeDish, ReturnDishes, ReturnDish)):
            self._check_waiter(action)
        else:
            raise IllegalAction(action, "not a Chaosteria action")

    def _check_house_order(self, action: PlaceOrder) -> None:
        asked, dish = self._asked()
        if action.player != asked:
            raise IllegalAction(action, f"it is {asked}'s turn to order")
        options = " or ".join(dish.variants)
        if len(action.variants) != 1:
            raise IllegalAction(action, f"one choice at a time: {options}?")
        if action.variants[0] not in dish.variants:
            raise IllegalAction(action, f"{action.variants[0]} is not on the card: {options}?")

    def _check_table_order(self, action: PlaceOrder) -> None:
        if not action.variants:
            raise IllegalAction(action, "no dish named")
        chosen = [dish_named(v) for v in action.variants]
        categories = [d.category for d in chosen]
        mine = {dish_named(d).category: v for d, v in self.orders[action.player].items()}
        for dish, category in zip(chosen, categories, strict=True):
            if categories.count(category) > 1:
                raise IllegalAction(action, f"one dish per category: two {category}s named")
            if category in mine:
                raise IllegalAction(
                    action, f"{action.player} already ordered the {category} ({mine[category]})"
                )
            if dish.dish not in self.order_piles[category]:
                owner = next(p for p in self.players if dish.dish in self.orders[p])
                raise IllegalAction(action, f"the {dish.dish} order card is already {owner}'s")

    def _check_waiter(self, action: ServeDish | ReturnDishes | ReturnDish) -> None:
        player = action.player
        if player != self.waiter:
            reason = f"{self.floor} has the bell" if self.floor else f"it is {self.waiter}'s turn"
            raise IllegalAction(action, reason)
        if isinstance(action, ReturnDish):
            self._check_return_dish(action)
            return
        if self.returning:
            left = f"{self.to_return} more to name" if self.to_return else "the last one is named"
            raise IllegalAction(action, f"{player} is returning dishes: {left}")
        if self.plate is not None:
            raise IllegalAction(action, f"only one dish per turn: the {self.plate} is being served")
        if isinstance(action, ReturnDishes):
            n = dishes_to_return(len(self.players))
            if n == 0:
                raise IllegalAction(
                    action, f"with {len(self.players)} players no dish may be returned"
                )
            if len(self.kitchen) < n:
                raise IllegalAction(
                    action, f"a return is {n} dishes; the kitchen holds {len(self.kitchen)}"
                )
            return
        if action.client not in self.players:
            raise IllegalAction(action, f"{action.client!r} is not playing")
        if action.client == player:
            raise IllegalAction(
                action, f"{player} is the waiter, not a client (only a bell serves oneself)"
            )
        self._check_in_kitchen(action, action.dish)
        self._check_variant(action, action.dish, action.variant)

    def _check_return_dish(self, action: ReturnDish) -> None:
        if not self.returning:
            raise IllegalAction(action, f"{action.player} has not said 'return'")
        if self.to_return == 0:
            raise IllegalAction(
                action, f"{action.player} is returning dishes: the last one is named"
            )
        if self.plate is not None and (len(self.claims) > 1 or self.ringers or self.floor):
            raise IllegalAction(action, f"the bell rang for the {self.plate}: wait for the answer")
        self._check_in_kitchen(action, action.dish)

    def _check_in_kitchen(self, action: Action, dish: str) -> None:
        if dish not in self.kitchen:
            raise IllegalAction(action, f"no {dish} in the kitchen ({join_names(self.kitchen)})")

    def _check_variant(self, action: ServeDish | Correct, dish: str, variant: str | None) -> None:
        options = dish_named(dish).variants
        if variant is None:
            q = self.question
            if q is not None and q.player == action.player:
                raise IllegalAction(action, f"asked once already: {' or '.join(options)}?")
        elif variant not in options:
            raise IllegalAction(action, f"{variant} is not a {dish}")

    def _check_bell(self, action: RingBell) -> None:
        if self.plate is None:
            if self.obvious:
                raise IllegalAction(action, "the client has answered: the right variant is obvious")
            raise IllegalAction(action, "no serve or return to correct now")
        if action.player == self.claims[-1].player:
            raise IllegalAction(action, f"{action.player} made the claim and cannot correct it")
        if self.floor is not None:
            raise IllegalAction(action, f"{self.floor} has the bell")
        if any(p == action.player for p, _ in self.ringers):
            raise IllegalAction(action, f"{action.player} already rang")

    def _check_correction(self, action: Correct) -> None:
        if self.floor != action.player:
            reason = (
                f"{self.floor} has the bell"
                if self.floor
                else "only the one who rang the bell corrects"
            )
            raise IllegalAction(action, reason)
        assert self.plate is not None
        if action.dish is not None and action.dish != self.plate:
            raise IllegalAction(
                action, f"the dish on the plate is the {self.plate}, not the {action.dish}"
            )
        if action.client is not None:
            self._check_variant(action, self.plate, action.variant)

    # --- carrying out actions --------------------------------------------------------------

    def _do(self, action: Action) -> list[Event]:
        t = action.t
        player = action.player
        assert player is not None
        if self.question is not None and self.question.player == player:
            self.question = None
        if isinstance(action, PlaceOrder):
            return self._place(t, player, action.variants)
        if isinstance(action, PeekOrders):
            return self._peek(t, player)
        if isinstance(action, RingBell):
            self.ringers.append((player, t))
            return []
        if isinstance(action, ReturnDishes):
            self.returning = True
            self.to_return = dishes_to_return(len(self.players))
            say = (
                f"{player} returns {self.to_return} dishes nobody ordered. Name them one at a time."
            )
            return [Event("return", t, say, (player,), {"dishes": self.to_return})]
        if isinstance(action, ReturnDish):
            return self._return_dish(t, player, action.dish)
        if isinstance(action, ServeDish):
            if action.variant is None:
                self.question = action
                return [self._which_one(t, player, action.dish)]
            return self._serve(t, action)
        assert isinstance(action, Correct)
        return self._correct(t, action)

    def _place(self, t: float, player: str, variants: Sequence[str]) -> list[Event]:
        for variant in variants:
            dish = dish_named(variant)
            if self.config.orders == HOUSE:
                self.hands[player].remove(dish.dish)
            else:
                self.order_piles[dish.category].remove(dish.dish)
            self.orders[player][dish.dish] = variant
        events = [
            Event(
                "ordered",
                t,
                f"{player} orders {join_names(variants)}.",
                (player,),
                {"variants": list(variants)},
            )
        ]
        categories = len(decks.chaosteria().categories)
        if any(len(self.orders[p]) < categories for p in self.players):
            return events + ([self._prompt(t)] if self.config.orders == HOUSE else [])
        self.serving = True
        self._refill()
        return events + [
            Event("orders_in", t, "Every order is in. Let's serve!", self.players),
            self._turn(t),
        ]

    def _asked(self) -> tuple[str, decks.Dish]:
        """The player asked to order now and the card asked about (house orders)."""
        player = next(p for p in self.players if self.hands[p])
        return player, dish_named(self.hands[player][0])

    def _prompt(self, t: float) -> Event:
        player, dish = self._asked()
        a, b = dish.variants
        return Event(
            "order_prompt",
            t,
            f"{player}, your {dish.category}: {a} or {b}?",
            (player,),
            {"category": dish.category, "dish": dish.dish, "options": [a, b]},
        )

    def _which_one(self, t: float, player: str, dish: str) -> Event:
        a, b = dish_named(dish).variants
        return Event(
            "which_one", t, f"Which one, {player}: {a} or {b}?", (player,), {"options": [a, b]}
        )

    def _peek(self, t: float, player: str) -> list[Event]:
        mine = list(self.orders[player].values())
        say = (
            f"{player}, you ordered {join_names(mine)}."
            if mine
            else f"{player}, no order of yours is left."
        )
        return [
            Event("peek", t, say, (player,), {"orders": mine}),
            self._complain(t, player, "peeking"),
        ]

    def _serve(self, t: float, action: ServeDish) -> list[Event]:
        self._put_on_plate(t, action.dish, Claim(action.player, action.client, action.variant))
        return [
            Event(
                "serve",
                t,
                f"{action.player} serves {action.client} the {action.variant}.",
                (action.player, action.client),
                {
                    "dish": action.dish,
                    "variant": action.variant,
                    "bell_until": round(self.window_until, 3),
                },
            )
        ]

    def _return_dish(self, t: float, player: str, dish: str) -> list[Event]:
        # Naming the next dish closes the bell window on the previous one.
        events = self._settle(t) if self.plate is not None else []
        self.to_return -= 1
        self._put_on_plate(t, dish, Claim(player, None, None))
        say = f"{player}: nobody ordered the {dish}."
        data = {"dish": dish, "left": self.to_return, "bell_until": round(self.window_until, 3)}
        return events + [Event("return_dish", t, say, (player,), data)]

    def _put_on_plate(self, t: float, dish: str, claim: Claim) -> None:
        self.kitchen.remove(dish)
        self.plate = dish
        self.claims = [claim]
        self.window_until = t + self.config.bell_window_s
        self.obvious = False

    def _give_floor(self, t: float) -> list[Event]:
        first_onset = self.ringers[0][1]
        tied = [p for p, onset in self.ringers if round(onset * 1000) == round(first_onset * 1000)]
        # A true tie (same onset to the millisecond) goes to the tied ringer seated
        # nearest the waiter's right.
        seats = [
            to_the_right(self.players, self.waiter, k) for k in range(1, len(self.players) + 1)
        ]
        ringer = min(tied, key=seats.index)
        ringers = [{"player": p, "onset_s": round(onset, 3)} for p, onset in self.ringers]
        self.ringers = []
        self.floor = ringer
        self.floor_until = t + self.config.bell_window_s
        if len(tied) > 1:
            say = f"{join_names(tied)} rang together; {ringer}, nearest the waiter's right, speaks."
        elif len(ringers) > 1:
            say = f"{ringer} rang first."
        else:
            say = f"{ringer} rings the bell."
        say += f" Who ordered the {self.plate}?"
        return [Event("bell", t, say, (ringer,), {"ringers": ringers, "tie": len(tied) > 1})]

    def _silent_ringer(self, t: float) -> list[Event]:
        ringer = self.floor
        assert ringer is not None
        self.floor = None
        if self.question is not None and self.question.player == ringer:
            self.question = None
        self.window_until = t + self.config.bell_window_s
        return [
            Event("silent_bell", t, f"{ringer} rang and said nothing.", (ringer,)),
            self._complain(t, ringer, "ringing and saying nothing"),
        ]

    def _correct(self, t: float, action: Correct) -> list[Event]:
        assert self.plate is not None
        player = action.player
        if action.client is not None and action.variant is None:
            self.question = action
            self.floor_until = t + self.config.bell_window_s
            return [self._which_one(t, player, self.plate)]
        self.claims.append(Claim(player, action.client, action.variant))
        self.floor = None
        self.window_until = t + self.config.bell_window_s
        if action.client is None:
            say = f"{player}: nobody ordered the {self.plate}."
        else:
            who = "I" if action.client == player else action.client
            say = f"{player}: {who} ordered the {action.variant}."
        data = {
            "client": action.client,
            "variant": action.variant,
            "bell_until": round(self.window_until, 3),
        }
        return [Event("correction", t, say, (player,), data)]

    # --- settling a dish -------------------------------------------------------------------

    def owner(self, dish: str) -> str | None:
        """Who has ``dish`` among their face-down orders, if anyone."""
        return next((p for p in self.players if dish in self.orders[p]), None)

    def judge(self, claim: Claim, dish: str) -> Verdict:
        """How ``claim`` about ``dish`` matches the hidden orders."""
        owner = self.owner(dish)
        if claim.client != owner:
            return Verdict.WRONG_CLIENT
        if owner is None or self.orders[owner][dish] == claim.variant:
            return Verdict.RIGHT
        return Verdict.WRONG_VARIANT

    def _improves(self, correction: Claim, standing: Claim, dish: str) -> bool:
        """Whether ``correction`` rightly corrects ``standing`` (else the ringer is wrong).

        A claim naming the wrong client is corrected by naming the right one
        (the new claim is then judged as a serve); a right client with the
        wrong variant only by the exact order; a right claim by nothing.
        """
        standing_verdict = self.judge(standing, dish)
        verdict = self.judge(correction, dish)
        if standing_verdict is Verdict.WRONG_CLIENT:
            return verdict is not Verdict.WRONG_CLIENT
        return standing_verdict is Verdict.WRONG_VARIANT and verdict is Verdict.RIGHT

    def _settle(self, t: float) -> list[Event]:
        """The bell window closed: fold the corrections, answer for the client, move on."""
        dish = self.plate
        assert dish is not None
        first, *corrections = self.claims
        standing = first
        mistaken: list[tuple[str, str]] = []
        for correction in corrections:
            if self._improves(correction, standing, dish):
                mistaken.append((standing.player, f"corrected by {correction.player}"))
                standing = correction
            else:
                mistaken.append((correction.player, "a wrong correction"))
        self.plate = None
        self.claims = []
        kept = standing is first and first.client is None
        if kept:
            # The waiter's return stands: nobody checks a returned dish.
            self.kept[first.player].append(dish)
            say = f"{first.player} keeps the {dish}."
            data = {"dish": dish, "left": self.to_return}
            events = [Event("returned", t, say, (first.player,), data)]
        else:
            events = self._deliver(t, standing, dish, by_bell=standing is not first)
        events += [self._complain(t, player, why) for player, why in mistaken]
        if kept and self.to_return > 0:
            return events
        return events + self._end_turn(t)

    def _deliver(self, t: float, claim: Claim, dish: str, by_bell: bool) -> list[Event]:
        """The client's answer to the claim that stands, and where the cards go."""
        player, client = claim.player, claim.client
        if client is None:  # a right "nobody ordered it" correction
            self.kept[player].append(dish)
            say = f"Nobody ordered the {dish}: {player} keeps it."
            return [Event("returned", t, say, (player,), {"dish": dish, "left": 0})]
        verdict = self.judge(claim, dish)
        data: dict[str, Any] = {"dish": dish, "variant": claim.variant, "by_bell": by_bell}
        if verdict is Verdict.WRONG_CLIENT:
            self.dish_discard.append(dish)
            say = f"{client}: I didn't order that. The {dish} is discarded."
            return [
                Event("wrong_client", t, say, (player, client), data),
                self._complain(t, player, "wrong client"),
            ]
        self.table.append(dish)
        ordered = self.orders[client].pop(dish)
        if verdict is Verdict.WRONG_VARIANT:
            self.order_discard.append(dish)
            self.obvious = True
            say = f"{client}: no, I ordered the {ordered}. The order card is discarded."
            return [
                Event("wrong_variant", t, say, (player, client), data),
                self._complain(t, player, "wrong variant"),
            ]
        self.won[player].append(OrderCard(client, dish, ordered, by_bell))
        say = f"{client}: yes, the {ordered}! {player} takes the order card."
        return [Event("served", t, say, (player, client), data)]

    def _complain(self, t: float, player: str, why: str) -> Event:
        self.complaints[player] += 1
        data = {"reason": why, "complaints": self.complaints[player]}
        return Event("complaint", t, f"A complaint for {player}.", (player,), data)

    # --- turns and the end ------------------------------------------------------------------

    def _refill(self) -> None:
        while len(self.kitchen) < self.config.kitchen and self.dish_deck:
            self.kitchen.append(self.dish_deck.pop())

    def _turn(self, t: float) -> Event:
        say = f"{self.waiter}, your turn. Kitchen: {join_names(self.kitchen)}."
        data = {
            "waiter": self.waiter,
            "kitchen": list(self.kitchen),
            "dish_deck": len(self.dish_deck),
        }
        return Event("turn", t, say, (self.waiter,), data)

    def _end_turn(self, t: float) -> list[Event]:
        self.returning = False
        self.to_return = 0
        self._refill()
        if not any(self.orders.values()):
            return self._end(t, "every order served")
        if not self.kitchen:
            return self._end(t, "kitchen empty")
        self.waiter = to_the_right(self.players, self.waiter)
        return [self._turn(t)]

    def _end(self, t: float, termination: str) -> list[Event]:
        events: list[Event] = []
        unserved = {p: len(self.orders[p]) for p in self.players if self.orders[p]}
        for p, n in unserved.items():
            self.complaints[p] += n
        if unserved:
            counts = join_names([f"{p} {n}" for p, n in unserved.items()])
            say = f"Orders never served: {counts}. A complaint for each."
            events.append(Event("unserved", t, say, tuple(unserved), {"unserved": unserved}))
        winners = tuple(self.ranking()[0])
        self.outcome = Outcome(termination, winners)
        best = self.score(winners[0])
        if len(winners) == 1:
            say = f"Game over: {termination}. {winners[0]} wins with {best} points."
        else:
            say = f"Game over: {termination}. {join_names(winners)} tie with {best} points."
        return events + [Event("game_over", t, say, winners, {"termination": termination})]

    # --- results ---------------------------------------------------------------------------

    def score(self, player: str) -> int:
        """Order cards +3, dish cards +1, complaints −2."""
        return (
            ORDER_CARD_POINTS * len(self.won[player])
            + DISH_CARD_POINTS * len(self.kept[player])
            + COMPLAINT_POINTS * self.complaints[player]
        )

    def ranking(self) -> list[list[str]]:
        """Highest score first; equal scores share a place."""
        return rank(self.players, {p: (self.score(p),) for p in self.players})

    def summary(self) -> dict[str, Any]:
        return {
            "players": {
                p: {
                    "order_cards": len(self.won[p]),
                    "dish_cards": len(self.kept[p]),
                    "complaints": self.complaints[p],
                    "score": self.score(p),
                }
                for p in self.players
            },
            "ranking": [p for group in self.ranking() for p in group],
            "winners": list(self.outcome.winners) if self.outcome else [],
        }


def new_game(config: ChaosteriaConfig, seed: int) -> ChaosteriaState:
    """A game with its orders dealt (house orders) or awaited (table orders); see ``opening``."""
    return started(ChaosteriaState(config, seed))
