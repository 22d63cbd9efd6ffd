"""The product's decks (docs/rules.md §4), loaded from the data files in ``engine/data``.

The data files are the source of truth; this module only gives them types.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any


def _load(name: str) -> dict[str, Any]:
    text = resources.files("engine").joinpath("data", f"{name}.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


# --- Just Desserts -----------------------------------------------------------


@dataclass(frozen=True)
class Dessert:
    """A dessert card type: its icons and how many copies the deck holds."""

    name: str
    icons: frozenset[str]
    copies: int


@dataclass(frozen=True)
class Guest:
    """A guest card: icons craved, icons disliked, and the favorite dessert (or None)."""

    name: str
    craves: tuple[str, ...]
    dislikes: tuple[str, ...]
    favorite: str | None


@dataclass(frozen=True)
class DessertsDeck:
    icons: tuple[str, ...]
    desserts: tuple[Dessert, ...]
    guests: tuple[Guest, ...]

    @property
    def dessert_cards(self) -> int:
        """Number of dessert cards in the deck (copies included)."""
        return sum(d.copies for d in self.desserts)

    def dessert(self, name: str) -> Dessert:
        return next(d for d in self.desserts if d.name == name)

    def guest(self, name: str) -> Guest:
        return next(g for g in self.guests if g.name == name)


@cache
def desserts() -> DessertsDeck:
    raw = _load("desserts")
    return DessertsDeck(
        icons=tuple(raw["icons"]),
        desserts=tuple(
            Dessert(d["name"], frozenset(d["icons"]), d["copies"]) for d in raw["desserts"]
        ),
        guests=tuple(
            Guest(g["name"], tuple(g["craves"]), tuple(g["dislikes"]), g["favorite"])
            for g in raw["guests"]
        ),
    )


# --- Miss Poutine ------------------------------------------------------------


@dataclass(frozen=True)
class MenuItem:
    """A menu item card type, its copies, and the spoken forms players may shout."""

    name: str
    copies: int
    spoken: tuple[str, ...]


@dataclass(frozen=True)
class OrderCard:
    """A waitress's order card, named by number; items may repeat ("Poutine, Poutine")."""

    number: int
    items: tuple[str, ...]


@dataclass(frozen=True)
class PoutineDeck:
    menu: tuple[MenuItem, ...]
    fries: MenuItem
    poutine: str
    poutine_needs: tuple[str, ...]
    orders: tuple[OrderCard, ...]

    @property
    def menu_cards(self) -> int:
        return sum(m.copies for m in self.menu)


@cache
def poutine() -> PoutineDeck:
    raw = _load("poutine")
    return PoutineDeck(
        menu=tuple(MenuItem(m["name"], m["copies"], tuple(m["spoken"])) for m in raw["menu"]),
        fries=MenuItem(raw["fries"]["name"], 0, tuple(raw["fries"]["spoken"])),
        poutine=raw["poutine"]["name"],
        poutine_needs=tuple(raw["poutine"]["needs"]),
        orders=tuple(OrderCard(o["number"], tuple(o["items"])) for o in raw["orders"]),
    )


# --- Chaosteria ----------------------------------------------------------------


@dataclass(frozen=True)
class Dish:
    """One row of the Chaosteria table: an order card (two variants) and its dish card."""

    category: str
    dish: str
    variants: tuple[str, str]


@dataclass(frozen=True)
class ChaosteriaDeck:
    categories: tuple[str, ...]
    dishes: tuple[Dish, ...]

    def dish(self, name: str) -> Dish:
        return next(d for d in self.dishes if d.dish == name)


@cache
def chaosteria() -> ChaosteriaDeck:
    raw = _load("chaosteria")
    return ChaosteriaDeck(
        categories=tuple(raw["categories"]),
        dishes=tuple(
            Dish(d["category"], d["dish"], (d["variants"][0], d["variants"][1]))
            for d in raw["dishes"]
        ),
    )
