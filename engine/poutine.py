"""Miss Poutine (docs/rules.md §2): the app waits tables, or referees player waitresses.

The cooks' menu cards stay physical; the engine knows each cook's count
(dealt, plus or minus mop gifts, minus accepted items). The app owns the
order deck: it deals the orders to the waitresses, reveals and announces
them, fills their slots with accepted items and ends a round when a cook is
out of cards or a waitress has completed every order. Mop points go to the
slowest cook(s) and, with player waitresses, the slowest waitress(es); a
third mop point loses the game.

Decisions beyond the rule sheet (docs/rules.md §2):

- House waitresses are "Waitress 1", "Waitress 2"...: two for up to 6 cooks,
  one per 3 cooks beyond; they count as staff for the deck copies.
- An accepted item goes to the open order with the fewest empty slots
  (ties: the order revealed first); a waitress reveals her orders in the
  order they were dealt to her. A stacked order deck is stacked every round.
- The app stops the round itself the moment a cook is out of cards or any
  waitress has completed every order, so a "Stop!" heard during play is
  early and refused aloud; the "Stop!" of the cook who ran out, heard in the
  5 s break that follows, is acknowledged.
- Mop gifts: the asked players answer within 20 s ("keep" declines); the
  orders are revealed once every gift is settled.

One module for the whole game, as for the other two: its rules are one state machine whose
phases share every check, and a reader follows a rule of docs/rules.md §2 in one file.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
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
    started,
)
from engine.players import check_players, to_the_right

DECKS = ("orders",)
VARIANTS = ("gifts", "live")
PLAYERS_PER_COPY = 8
MAX_PLAYERS = 24
LOSING_MOP_POINTS = 3


@dataclass(frozen=True)
class PoutineConfig:
    """Players in seating order, the waitress mode, the variants and the timing decisions.

    ``waitresses`` empty means house waitresses (the app plays them);
    ``orders_shown`` None means 3, or 2 with bigger staff.
    """

    players: tuple[str, ...]
    waitresses: tuple[str, ...] = ()
    orders_shown: int | None = None
    variants: tuple[str, ...] = ()
    tie_window_ms: float = DEFAULT_TIE_WINDOW_MS
    take_window_s: float = 3.0
    live_window_s: float = 1.5
    gift_timeout_s: float = 20.0
    round_break_s: float = 5.0
    stacks: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


# --- actions ------------------------------------------------------------------------


@dataclass(frozen=True)
class OfferItem(PlayerAction):
    """A cook shouts a menu item (or "fries") to sell it."""

    item: str


@dataclass(frozen=True)
class TakeOffer(PlayerAction):
    """A player waitress takes an offer: "take it" (``cook`` None) or the cook's name."""

    cook: str | None = None


@dataclass(frozen=True)
class CallStop(PlayerAction):
    """The caller shouts "Stop!", claiming to have disposed of every card."""


@dataclass(frozen=True)
class GiveCards(PlayerAction):
    """Mop gifts: one recipient per card given ("give two to Ann" → Ann, Ann); empty keeps."""

    to: tuple[str, ...] = ()


# --- table layout and narration helpers ------------------------------------------------


def plural(n: int, word: str) -> str:
    """'1 card', '2 cards'."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def describe_order(card: decks.OrderCard) -> str:
    return f"Order {card.number}: {join_names(list(card.items))}"


def staffing(config: PoutineConfig) -> tuple[tuple[str, ...], int]:
    """The first round's waitresses and the number of deck copies; raises ConfigError.

    One copy per 8 staff (house waitresses count as staff); with one copy
    there are 2 waitresses, with more one waitress per 2 to 3 cooks.
    """
    players = config.players
    if not config.waitresses:
        cooks = len(players)
        house = 2 if cooks <= 6 else math.ceil(cooks / 3)
        copies = math.ceil((cooks + house) / PLAYERS_PER_COPY)
        return tuple(f"Waitress {i + 1}" for i in range(house)), copies
    seats = {p.casefold(): p for p in players}
    given = check_players(config.waitresses, minimum=1, maximum=len(players))
    strangers = [w for w in given if w.casefold() not in seats]
    if strangers:
        raise ConfigError(f"waitresses {', '.join(strangers)} are not among the players")
    waitresses = {seats[w.casefold()] for w in given}
    w, cooks = len(waitresses), len(players) - len(waitresses)
    copies = math.ceil(len(players) / PLAYERS_PER_COPY)
    if copies == 1 and (w != 2 or cooks < 2):
        raise ConfigError(
            f"up to {PLAYERS_PER_COPY} players need exactly 2 waitresses and at least 2 cooks "
            f"({w} waitresses and {cooks} cooks given)"
        )
    if copies > 1 and not 2 * w <= cooks <= 3 * w:
        raise ConfigError(
            f"bigger staff needs one waitress per 2 to 3 cooks ({w} for {cooks} cooks)"
        )
    return tuple(p for p in players if p in waitresses), copies


@dataclass
class _Slot:
    """One card an order still wants; both halves of a poutine share ``dish``."""

    dish: int
    item: str
    cook: str | None = None


@dataclass
class _Order:
    """A revealed order card and the items placed on it."""

    card: decks.OrderCard
    waitress: str
    seq: int
    slots: list[_Slot]

    def needs(self, item: str) -> int:
        return sum(1 for s in self.slots if s.cook is None and s.item == item)

    @property
    def empty_slots(self) -> int:
        return sum(1 for s in self.slots if s.cook is None)


@dataclass(frozen=True)
class _Offer:
    cook: str
    item: str
    onset: float


def _slots(card: decks.OrderCard) -> list[_Slot]:
    deck = decks.poutine()
    slots: list[_Slot] = []
    for dish, item in enumerate(card.items):
        parts = deck.poutine_needs if item == deck.poutine else (item,)
        slots += [_Slot(dish, part) for part in parts]
    return slots


class PoutineState(GameState[PoutineConfig]):
    """A game of Miss Poutine in progress, over as many rounds as it takes.

    ``phase`` is 'gifts' (mop gifts asked), 'play', 'break' (between rounds)
    or 'over'; ``deadline`` ends the gift and break phases.
    """

    name = "poutine"

    def __init__(self, config: PoutineConfig, seed: int) -> None:
        super().__init__(config, seed)
        self.players = check_players(config.players, minimum=2, maximum=MAX_PLAYERS)
        unknown = set(config.stacks) - set(DECKS)
        if unknown:
            raise ConfigError(f"Miss Poutine has no deck {sorted(unknown)}; stackable: orders")
        bad = [v for v in config.variants if v not in VARIANTS]
        if bad:
            raise ConfigError(f"unknown variant {', '.join(bad)}; known: {', '.join(VARIANTS)}")
        if config.orders_shown not in (None, 2, 3):
            raise ConfigError(f"each waitress shows 2 or 3 orders, not {config.orders_shown}")
        self.house = not config.waitresses
        self.first_waitresses, self.copies = staffing(config)
        self.orders_shown = config.orders_shown or (2 if self.copies > 1 else 3)
        deck = decks.poutine()
        self.items = tuple(m.name for m in deck.menu) + (deck.fries.name,)
        self.order_cards = {f"Order {o.number}": o for o in deck.orders}
        self.mop = dict.fromkeys(self.players, 0)
        self.round = 0
        self.phase = "play"
        self.deadline = 0.0

    # --- rounds ---------------------------------------------------------------------

    def start(self) -> list[Event]:
        return self._start_round(0.0)

    def _start_round(self, t: float) -> list[Event]:
        """Rotate the waitresses, deal menu counts and orders, then ask for gifts or open."""
        self.round += 1
        if self.house:
            self.waitresses = self.first_waitresses
        else:
            moved = {to_the_right(self.players, w, 1 - self.round) for w in self.first_waitresses}
            self.waitresses = tuple(p for p in self.players if p in moved)
        self.cooks = tuple(p for p in self.players if p not in self.waitresses)
        self.dealt = self._deal_menu()
        self.left = dict(self.dealt)
        self.gifted = dict.fromkeys(self.cooks, 0)
        self.piles = self._deal_orders()
        self.shown: dict[str, list[_Order]] = {w: [] for w in self.waitresses}
        self.done: dict[str, list[_Order]] = {w: [] for w in self.waitresses}
        self.offers: list[_Offer] = []
        self.last_offer: dict[str, float] = {}
        self.reveals = 0
        events = [self._announce_round(t)]
        if len(self.cooks) == 6:
            events.append(
                Event("reminder", t, "Six cooks: each grill holds only 2 items.", self.cooks)
            )
        self.givers = {
            p: self.mop[p]
            for p in self.players
            if "gifts" in self.config.variants and self.mop[p] > 0
        }
        if not self.givers:
            return events + self._open(t)
        self.phase = "gifts"
        self.deadline = t + self.config.gift_timeout_s
        for p, n in self.givers.items():
            what = (
                plural(n, "card") + " to other cooks"
                if p in self.cooks
                else plural(n, "order") + " to another waitress"
            )
            events.append(
                Event(
                    "gift_ask",
                    t,
                    f"{p}, you have {plural(n, 'mop point')}: give up to {what}.",
                    (p,),
                    {"gifts": n},
                )
            )
        return events

    def _deal_menu(self) -> dict[str, int]:
        """Menu cards dealt as evenly as possible; the extras start one seat later each round."""
        total = decks.poutine().menu_cards * self.copies
        base, extra = divmod(total, len(self.cooks))
        first = (self.round - 1) % len(self.cooks)
        order = self.cooks[first:] + self.cooks[:first]
        return {c: base + (1 if order.index(c) < extra else 0) for c in self.cooks}

    def _deal_orders(self) -> dict[str, list[decks.OrderCard]]:
        """Orders dealt one at a time, alternating; each waitress reveals them in dealt order."""
        pile = build_deck(
            list(self.order_cards) * self.copies,
            self.rng,
            self.config.stacks.get("orders", ()),
            "orders",
        )
        piles: dict[str, list[decks.OrderCard]] = {w: [] for w in self.waitresses}
        for i in range(len(pile)):
            piles[self.waitresses[i % len(self.waitresses)]].append(self.order_cards[pile.pop()])
        return piles

    def _announce_round(self, t: float) -> Event:
        counts = set(self.dealt.values())
        if len(counts) == 1:
            deal = f"{plural(counts.pop(), 'menu card')} to each of {join_names(self.cooks)}"
        else:
            deal = ", ".join(f"{c} {self.dealt[c]}" for c in self.cooks) + " menu cards"
        who = "" if self.house else f" Waitresses: {join_names(self.waitresses)}."
        return Event(
            "round",
            t,
            f"Round {self.round}.{who} Dealing {deal}.",
            self.players,
            {
                "round": self.round,
                "waitresses": list(self.waitresses),
                "cooks": dict(self.dealt),
                "copies": self.copies,
            },
        )

    def _open(self, t: float) -> list[Event]:
        """The waitresses reveal their first orders; play begins."""
        self.phase = "play"
        events = []
        for w in self.waitresses:
            new = [self._reveal(w) for _ in range(min(self.orders_shown, len(self.piles[w])))]
            events.append(
                Event(
                    "orders",
                    t,
                    f"{w} shows " + "; ".join(describe_order(o.card) for o in new) + ".",
                    () if self.house else (w,),
                    {
                        "waitress": w,
                        "orders": [
                            {"number": o.card.number, "items": list(o.card.items)} for o in new
                        ],
                    },
                )
            )
        return events

    def _reveal(self, waitress: str) -> _Order:
        card = self.piles[waitress].pop(0)
        self.reveals += 1
        order = _Order(card, waitress, self.reveals, _slots(card))
        self.shown[waitress].append(order)
        return order

    # --- timers -----------------------------------------------------------------------

    def _next_deadline(self) -> float | None:
        if self.phase in ("gifts", "break"):
            return self.deadline
        if self.phase == "play" and self.offers:
            window = self.config.tie_window_ms / 1000.0 if self.house else self.config.take_window_s
            return min(o.onset for o in self.offers) + window
        return None

    def _fire(self, due: float) -> list[Event]:
        if self.phase == "break":
            return self._start_round(due)
        if self.phase == "gifts":
            events = [
                Event("gift_lapsed", due, f"{p} keeps {plural(n, 'card')}.", (p,), {"gifts": n})
                for p, n in self.givers.items()
            ]
            self.givers = {}
            return events + self._open(due)
        if self.house:
            return self._resolve(due)
        return self._expire(due)

    def _resolve(self, due: float) -> list[Event]:
        """House waitresses: the offers of one item that came together, earliest onset first."""
        first = min(self.offers, key=self._offer_key)
        group = sorted((o for o in self.offers if o.item == first.item), key=self._offer_key)
        self.offers = [o for o in self.offers if o.item != first.item]
        events: list[Event] = []
        for offer in group:
            if self.phase != "play":
                break
            order = self._order_for(offer.item, self.waitresses)
            events += (
                self._decline(due, offer) if order is None else self._accept(due, offer, order)
            )
        return events

    def _expire(self, due: float) -> list[Event]:
        """Player waitresses: offers nobody took within the take window lapse."""
        window = self.config.take_window_s
        lapsed = sorted((o for o in self.offers if o.onset + window <= due), key=self._offer_key)
        self.offers = [o for o in self.offers if o.onset + window > due]
        return [
            Event(
                "not_taken",
                due,
                f"{o.cook}'s {o.item.lower()} not taken.",
                (o.cook,),
                {"item": o.item},
            )
            for o in lapsed
        ]

    def _offer_key(self, offer: _Offer) -> tuple[float, int]:
        return offer.onset, self.players.index(offer.cook)

    # --- checking actions -----------------------------------------------------------------

    def _check(self, action: Action) -> None:
        player = action.player
        if player not in self.players:
            raise IllegalAction(action, f"{player!r} is not playing ({', '.join(self.players)})")
        if isinstance(action, GiveCards):
            self._check_gift(action)
            return
        if not isinstance(action, OfferItem | TakeOffer | CallStop):
            raise IllegalAction(action, "not a Miss Poutine action")
        if self.phase == "gifts":
            raise IllegalAction(action, f"round {self.round} starts once the mop gifts are given")
        if self.phase == "break" and isinstance(action, CallStop) and self.left.get(player) == 0:
            return  # the cook who ran out confirms the stop the app already called
        if self.phase == "break":
            raise IllegalAction(
                action,
                f"round {self.round} is over; the next starts at {self.deadline:.2f} s",
            )
        if isinstance(action, OfferItem):
            self._check_offer(action)
        elif isinstance(action, TakeOffer):
            if self.house or player not in self.waitresses:
                raise IllegalAction(action, f"{player} is not a waitress this round")
            if self._offer_for(action) is None:
                named = f"{action.cook}'s offers" if action.cook else "the open offers"
                raise IllegalAction(action, f"none of {named} is needed by {player}'s orders")

    def _check_offer(self, action: OfferItem) -> None:
        cook = action.player
        if cook not in self.cooks:
            raise IllegalAction(action, f"{cook} is a waitress this round")
        if action.item not in self.items:
            raise IllegalAction(action, f"{action.item!r} is not a menu item")
        if self.left[cook] <= sum(1 for o in self.offers if o.cook == cook):
            raise IllegalAction(action, f"{cook} has no card left to offer")
        last = self.last_offer.get(cook)
        if (
            "live" in self.config.variants
            and last is not None
            and action.t - last < self.config.live_window_s
        ):
            raise IllegalAction(action, f"{cook} still carries the item offered at {last:.2f} s")

    def _check_gift(self, action: GiveCards) -> None:
        giver = action.player
        if self.phase != "gifts" or giver not in self.givers:
            raise IllegalAction(action, f"{giver} has no mop gift to give now")
        if len(action.to) > self.givers[giver]:
            raise IllegalAction(
                action, f"{giver} may give only {plural(self.givers[giver], 'more card')}"
            )
        mates = self.cooks if giver in self.cooks else self.waitresses
        strangers = sorted({p for p in action.to if p not in mates or p == giver})
        if strangers:
            role = "cook" if giver in self.cooks else "waitress"
            raise IllegalAction(
                action, f"{giver} can give only to another {role}, not {join_names(strangers)}"
            )
        held = self.left[giver] if giver in self.cooks else len(self.piles[giver])
        if len(action.to) >= held:
            raise IllegalAction(action, f"{giver} must keep at least one card")

    # --- carrying out actions ------------------------------------------------------------------

    def _do(self, action: Action) -> list[Event]:
        t = action.t
        if isinstance(action, GiveCards):
            return self._give(t, action.player, action.to)
        if isinstance(action, CallStop):
            if self.phase == "break":
                say = f"Yes, {action.player} is out of cards."
                return [Event("stop", t, say, (action.player,), {"round": self.round})]
            return [self._false_stop(t, action.player)]
        if isinstance(action, TakeOffer):
            offer = self._offer_for(action)
            assert offer is not None
            self.offers.remove(offer)
            order = self._order_for(offer.item, (action.player,))
            assert order is not None
            return self._accept(t, offer, order)
        assert isinstance(action, OfferItem)
        offer = _Offer(action.player, action.item, t)
        self.last_offer[offer.cook] = t
        if not self.house and self._order_for(offer.item, self.waitresses) is None:
            return self._decline(t, offer)
        self.offers.append(offer)
        return []

    def _order_for(self, item: str, waitresses: Sequence[str]) -> _Order | None:
        """The open order an ``item`` goes to: fewest empty slots, then revealed first."""
        wanting = [o for w in waitresses for o in self.shown[w] if o.needs(item)]
        return min(wanting, key=lambda o: (o.empty_slots, o.seq), default=None)

    def _offer_for(self, action: TakeOffer) -> _Offer | None:
        """The earliest open offer (of the named cook) that the waitress's orders need."""
        usable = [
            o
            for o in self.offers
            if action.cook in (None, o.cook)
            and self._order_for(o.item, (action.player,)) is not None
        ]
        return min(usable, key=self._offer_key, default=None)

    def _decline(self, t: float, offer: _Offer) -> list[Event]:
        item = offer.item.lower()
        return [
            Event(
                "declined",
                t,
                f"No {item} needed, {offer.cook}.",
                (offer.cook,),
                {"item": offer.item},
            )
        ]

    def _accept(self, t: float, offer: _Offer, order: _Order) -> list[Event]:
        """Place the item on the order; complete and replace the order; maybe end the round."""
        cook, item = offer.cook, offer.item
        slot = next(s for s in order.slots if s.cook is None and s.item == item)
        slot.cook = cook
        self.left[cook] -= 1
        number = order.card.number
        say = f"{cook}'s {item.lower()} for order {number}."
        if len([s for s in order.slots if s.dish == slot.dish and s.cook is not None]) == 2:
            say += " Poutine ready!"
        events = [
            Event(
                "accepted",
                t,
                say,
                (cook,),
                {
                    "item": item,
                    "order": number,
                    "waitress": order.waitress,
                    "cards_left": self.left[cook],
                },
            )
        ]
        waitress = order.waitress
        if not order.empty_slots:
            self.shown[waitress].remove(order)
            self.done[waitress].append(order)
            say = f"Order {number} complete for {waitress}."
            data: dict[str, Any] = {"order": number, "waitress": waitress}
            if self.piles[waitress]:
                new = self._reveal(waitress)
                say += f" Next, {describe_order(new.card)}."
                data["next"] = {"number": new.card.number, "items": list(new.card.items)}
            events.append(Event("order_complete", t, say, (), data))
        reasons = []
        if self.left[cook] == 0:
            reasons.append(f"{cook} is out of cards")
        if not self.shown[waitress] and not self.piles[waitress]:
            reasons.append(f"{waitress} has completed every order")
        return events + (self._end_round(t, reasons) if reasons else [])

    def _false_stop(self, t: float, player: str) -> Event:
        if player in self.cooks:
            left = f"{plural(self.left[player], 'card')} left"
        else:
            left = f"{plural(len(self.shown[player]) + len(self.piles[player]), 'order')} to go"
        return Event("false_stop", t, f"Not so fast, {player}: {left}. Play on!", (player,))

    def _give(self, t: float, giver: str, to: tuple[str, ...]) -> list[Event]:
        events = []
        if to:
            for mate in dict.fromkeys(to):
                n = to.count(mate)
                if giver in self.cooks:
                    self.left[giver] -= n
                    self.left[mate] += n
                    self.gifted[giver] -= n
                    self.gifted[mate] += n
                    what = plural(n, "card")
                else:
                    moved, self.piles[giver] = self.piles[giver][:n], self.piles[giver][n:]
                    self.piles[mate] += moved
                    what = plural(n, "order")
                events.append(
                    Event("gift", t, f"{giver} gives {what} to {mate}.", (giver, mate), {"n": n})
                )
            self.givers[giver] -= len(to)
        if not to or not self.givers[giver]:
            del self.givers[giver]
        if not self.givers:
            events += self._open(t)
        return events

    def _end_round(self, t: float, reasons: Sequence[str]) -> list[Event]:
        """Stop the round, hand out mop points, and end the game or take a break."""
        self.offers = []
        events = [
            Event(
                "round_end",
                t,
                f"Stop! {join_names(list(reasons))}.",
                (),
                {
                    "round": self.round,
                    "cards_left": dict(self.left),
                    "orders_completed": self.completed(),
                },
            )
        ]
        most = max(self.left.values())
        slowest = [c for c in self.cooks if self.left[c] == most]
        events.append(self._mop(t, slowest, f"{plural(most, 'card')} left"))
        if not self.house:
            completed = self.completed()
            fewest = min(completed.values())
            slowest = [w for w in self.waitresses if completed[w] == fewest]
            events.append(self._mop(t, slowest, f"{plural(fewest, 'order')} completed"))
        losers = self.losers
        if not losers:
            self.phase = "break"
            self.deadline = t + self.config.round_break_s
            return events
        self.phase = "over"
        self.outcome = Outcome("third mop point", tuple(p for p in self.players if p not in losers))
        if len(losers) == 1:
            say = f"Game over! {losers[0]} has a third mop point and mops the floor."
        else:
            say = (
                f"Game over! {join_names(losers)} share the third mop point, the loss and the mop."
            )
        return events + [Event("game_over", t, say, losers, {"losers": list(losers)})]

    def _mop(self, t: float, slowest: Sequence[str], why: str) -> Event:
        for p in slowest:
            self.mop[p] += 1
        each = " each" if len(slowest) > 1 else ""
        point = "Mop points" if len(slowest) > 1 else "Mop point"
        return Event(
            "mop",
            t,
            f"{point} for {join_names(slowest)}: {why}{each}.",
            tuple(slowest),
            {"mop_points": {p: self.mop[p] for p in slowest}},
        )

    # --- results ------------------------------------------------------------------------

    def completed(self) -> dict[str, int]:
        """Orders completed this round, per waitress."""
        return {w: len(self.done[w]) for w in self.waitresses}

    @property
    def losers(self) -> tuple[str, ...]:
        """Players with a third mop point (the game is over once there are any)."""
        return tuple(p for p in self.players if self.mop[p] >= LOSING_MOP_POINTS)

    def summary(self) -> dict[str, Any]:
        players: dict[str, dict[str, Any]] = {}
        completed = self.completed()
        for p in self.players:
            if p in self.cooks:
                players[p] = {"role": "cook", "cards_left": self.left[p], "mop_points": self.mop[p]}
            else:
                players[p] = {
                    "role": "waitress",
                    "orders_completed": completed[p],
                    "mop_points": self.mop[p],
                }
        return {"round": self.round, "players": players, "losers": list(self.losers)}


def new_game(config: PoutineConfig, seed: int) -> PoutineState:
    """Round 1 dealt and its orders announced (or its mop gifts asked); events in ``opening``."""
    return started(PoutineState(config, seed))
