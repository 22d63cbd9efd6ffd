"""The deck data files hold exactly the cards of docs/rules.md §4."""

from collections import Counter

from engine import decks


def test_desserts_counts() -> None:
    deck = decks.desserts()
    assert len(deck.icons) == 8
    assert len(deck.desserts) == 23
    assert deck.dessert_cards == 70
    assert len(deck.guests) == 18
    assert all(set(d.icons) <= set(deck.icons) and 1 <= len(d.icons) <= 4 for d in deck.desserts)
    assert all(set(g.craves) | set(g.dislikes) <= set(deck.icons) for g in deck.guests)


def test_favorites_follow_the_deck_invariants() -> None:
    deck = decks.desserts()
    favorites = {g.favorite for g in deck.guests if g.favorite}
    assert favorites <= {d.name for d in deck.desserts}
    assert [g.name for g in deck.guests if g.favorite is None] == ["Nature Girl"]
    assert all(d.name in favorites for d in deck.desserts if len(d.icons) >= 3)
    assert not any(d.name in favorites for d in deck.desserts if len(d.icons) == 1)
    two_icon = [d.name for d in deck.desserts if len(d.icons) == 2]
    assert any(name not in favorites for name in two_icon)
    assert any(name in favorites for name in two_icon)


def test_poutine_counts() -> None:
    deck = decks.poutine()
    assert deck.menu_cards == 48
    assert len(deck.menu) == 9
    assert [o.number for o in deck.orders] == list(range(1, 19))
    items = {m.name for m in deck.menu} | {deck.fries.name, deck.poutine}
    assert all(set(o.items) <= items for o in deck.orders)
    assert Counter(deck.poutine_needs) == Counter(["Gravy and Cheese Curds", "Fries"])


def test_chaosteria_counts() -> None:
    deck = decks.chaosteria()
    assert len(deck.dishes) == 50
    per_category = Counter(d.category for d in deck.dishes)
    assert per_category == {c: 10 for c in deck.categories}
    variants = [v for d in deck.dishes for v in d.variants]
    assert len(set(variants)) == 100
