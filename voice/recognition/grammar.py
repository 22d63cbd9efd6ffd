"""The grammar of the moment: the phrases a player may say now (DESIGN principle 5).

A :class:`Grammar` is a set of phrase templates such as ``i serve {player} the {variant}``
plus slot definitions (``variant`` → "onion soup", "noodle soup", …). It is model-agnostic:
recognisers turn it into what their engine wants (a finite-state grammar for PocketSphinx,
a phrase list for Vosk) and check its words against their dictionary when they load it.

Phrase files (``orderup listen --phrases FILE``) hold one template per line, ``@slot name:
a | b | c`` definitions and ``#`` comments; ``{player}`` is filled from the players list.

One module, over 400 lines: templates, slots, phrase files, the word graph and the
matching a recogniser checks its text with are one value's parts, built and read together.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from itertools import product
from pathlib import Path
from typing import Any

from voice.recognition.intents import words as normalise

_SLOT = re.compile(r"^\{([a-z_][a-z0-9_]*)\}$")
_TOKEN = re.compile(r"\{[^}]*\}|[^\s{}]+")
_SLOT_DEF = re.compile(r"^@slot\s+([a-z_][a-z0-9_]*)\s*:(.*)$")


class GrammarError(ValueError):
    """A grammar or phrase file is malformed (names the input and the problem)."""


class UnknownWord(GrammarError):
    """A grammar word is missing from a model's dictionary and no pronunciation was found."""

    def __init__(self, word: str, model: str, reason: str = "not in the dictionary") -> None:
        super().__init__(f"word {word!r}: {reason} of model {model}")
        self.word = word
        self.model = model


Transition = tuple[int, int, str | None]
"""An FSG arc ``(from_state, to_state, word)``; ``word`` None is an epsilon arc."""


@dataclass(frozen=True)
class Fsg:
    """A word graph accepting exactly the grammar's phrases; states ascend along every arc."""

    start: int
    final: int
    n_states: int
    transitions: tuple[Transition, ...]


@dataclass(frozen=True)
class Match:
    """The allowed phrase nearest to some words, and the word edit cost of getting there."""

    phrase: str
    cost: int


@dataclass(frozen=True)
class Grammar:
    """Phrase templates (words and ``{slot}`` references) and the slots' alternatives.

    Build one with :meth:`create`, :func:`parse_phrases` or :func:`game_grammar`; the
    constructor expects already normalised, validated data.
    """

    templates: tuple[tuple[str, ...], ...]
    slots: tuple[tuple[str, tuple[tuple[str, ...], ...]], ...] = ()
    rivals: Grammar | None = None
    """Phrases that are not this grammar's but may be heard instead: what other players may
    say at this moment. A recogniser that can weigh phrases listens for them too, far below
    the grammar's own, so speech that is neither has somewhere to go; a rival heard is not
    understood (:meth:`match` knows only the grammar's own phrases)."""

    @classmethod
    def create(
        cls, phrases: Iterable[str], slots: Mapping[str, Iterable[str]] | None = None
    ) -> Grammar:
        """A grammar from template strings and slot alternatives (text, any case/punctuation)."""
        slot_defs: dict[str, tuple[tuple[str, ...], ...]] = {}
        for name, alternatives in (slots or {}).items():
            alts = tuple(dict.fromkeys(normalise(a) for a in alternatives))
            if not all(alts):
                raise GrammarError(f"slot {name!r}: an alternative is empty")
            if not alts:
                raise GrammarError(f"slot {name!r}: no alternatives")
            slot_defs[name] = alts
        templates = tuple(dict.fromkeys(_template(p) for p in phrases))
        if not templates:
            raise GrammarError("grammar has no phrases")
        for template in templates:
            for token in template:
                ref = _slot_name(token)
                if ref is not None and ref not in slot_defs:
                    raise GrammarError(f"phrase {' '.join(template)!r}: slot {{{ref}}} undefined")
        used = {_slot_name(t) for tpl in templates for t in tpl}
        return cls(templates, tuple(sorted((n, a) for n, a in slot_defs.items() if n in used)))

    def __repr__(self) -> str:
        rivals = "" if self.rivals is None else f".with_rivals({self.rivals!r})"
        return f"Grammar.create({self.phrase_templates!r}, {dict(self.slot_map)!r}){rivals}"

    def with_rivals(self, rivals: Grammar) -> Grammar:
        return replace(self, rivals=rivals)

    @property
    def phrase_templates(self) -> tuple[str, ...]:
        return tuple(" ".join(t) for t in self.templates)

    @property
    def slot_map(self) -> dict[str, tuple[str, ...]]:
        """Slot name → its alternatives as text."""
        return {name: tuple(" ".join(a) for a in alts) for name, alts in self.slots}

    @cached_property
    def _slots(self) -> dict[str, tuple[tuple[str, ...], ...]]:
        return dict(self.slots)

    @cached_property
    def words(self) -> frozenset[str]:
        """Every word some phrase may contain."""
        out = {t for tpl in self.templates for t in tpl if _slot_name(t) is None}
        out.update(w for _, alts in self.slots for alt in alts for w in alt)
        return frozenset(out)

    @cached_property
    def size(self) -> int:
        """How many word sequences the grammar allows, counted without expanding it."""
        total = 0
        for template in self.templates:
            n = 1
            for token in template:
                name = _slot_name(token)
                n *= len(self._slots[name]) if name else 1
            total += n
        return total

    def longest(self, cost: Callable[[tuple[str, ...]], int]) -> int:
        """The most any phrase adds up to, counting `cost` of each literal word and of the
        costliest alternative of each slot (a bound, found without expanding the grammar)."""
        return max(sum(max(map(cost, self._slots[n])) if (n := _slot_name(t)) else cost((t,))
                       for t in template) for template in self.templates)

    def expand(self) -> Iterator[str]:
        """Every allowed phrase as text (may be large: check :attr:`size` first)."""
        seen: set[str] = set()
        for template in self.templates:
            parts = [self._slots[n] if (n := _slot_name(t)) else ((t,),) for t in template]
            for choice in product(*parts):
                text = " ".join(w for alt in choice for w in alt)
                if text not in seen:
                    seen.add(text)
                    yield text

    def chunks(self) -> tuple[str, ...]:
        """The literal runs and slot alternatives the phrases are made of (a compact phrase
        list for recognisers that accept any sequence of listed phrases)."""
        out: dict[str, None] = {}
        for template in self.templates:
            run: list[str] = []
            for token in (*template, "{}"):
                if _slot_name(token) is None and token != "{}":
                    run.append(token)
                    continue
                if run:
                    out[" ".join(run)] = None
                run = []
        for _, alts in self.slots:
            out.update((" ".join(a), None) for a in alts)
        return tuple(out)

    @cached_property
    def fsg(self) -> Fsg:
        """The minimal deterministic word graph of the phrases: every phrase has exactly one
        path, and the search carries no equivalent paths side by side."""
        arcs: list[Transition] = []
        count = 2  # state 0 is the start, state 1 the final state

        def new() -> int:
            nonlocal count
            count += 1
            return count - 1

        for template in self.templates:
            state = 0
            for token in template:
                name = _slot_name(token)
                nxt = new()
                for alt in self._slots[name] if name else ((token,),):
                    s = state
                    for word in alt[:-1]:
                        t = new()
                        arcs.append((s, t, word))
                        s = t
                    arcs.append((s, nxt, alt[-1]))
                state = nxt
            arcs.append((state, 1, None))
        return _minimal_fsg(count, arcs)

    def unfinished(self, words: Sequence[str]) -> bool:
        """Whether ``words`` begin an allowed phrase without being one ("brownie and"): a
        pause after them is a pause inside a phrase, not its end."""
        fsg = self.fsg
        arcs: dict[int, list[tuple[int, str | None]]] = {}
        for s, t, w in fsg.transitions:
            arcs.setdefault(s, []).append((t, w))

        def closure(states: set[int]) -> set[int]:
            todo, seen = list(states), set(states)
            while todo:
                for t, w in arcs.get(todo.pop(), ()):
                    if w is None and t not in seen:
                        seen.add(t)
                        todo.append(t)
            return seen

        states = closure({fsg.start})
        for word in words:
            states = closure({t for s in states for t, w in arcs.get(s, ()) if w == word})
            if not states:
                return False
        return bool(words) and fsg.final not in states

    def match(self, words: Sequence[str]) -> Match:
        """The allowed phrase nearest to `words` by word edit distance (over the FSG, never
        expanding it), with the cost; cost 0 means `words` is exactly an allowed phrase."""
        fsg = self.fsg
        n = len(words)
        inf = n + 10_000
        cost = [[inf] * (n + 1) for _ in range(fsg.n_states)]
        back: list[list[tuple[int, int, str | None] | None]] = [
            [None] * (n + 1) for _ in range(fsg.n_states)
        ]
        cost[fsg.start] = list(range(n + 1))
        incoming: dict[int, list[Transition]] = {}
        for arc in fsg.transitions:
            incoming.setdefault(arc[1], []).append(arc)
        for state in range(fsg.n_states):
            row, brow = cost[state], back[state]
            for src, _, word in incoming.get(state, ()):
                srow = cost[src]
                for j in range(n + 1):
                    options: list[tuple[int, int, int, str | None]]
                    if word is None:
                        options = [(srow[j], src, j, None)]
                    else:
                        options = [(srow[j] + 1, src, j, word)]  # phrase word not heard
                        if j:
                            options.append((srow[j - 1] + (words[j - 1] != word), src, j - 1, word))
                    for c, s, sj, w in options:
                        if c < row[j]:
                            row[j], brow[j] = c, (s, sj, w)
            for j in range(1, n + 1):  # a heard word not in the phrase
                if row[j - 1] + 1 < row[j]:
                    row[j], brow[j] = row[j - 1] + 1, (state, j - 1, None)
        phrase: list[str] = []
        state, j = fsg.final, n
        while (step := back[state][j]) is not None:
            state, j, word = step
            if word is not None:
                phrase.append(word)
        return Match(" ".join(reversed(phrase)), cost[fsg.final][n])


def _determinize(
    starts: Iterable[int], finals: set[int], arcs: Iterable[Transition]
) -> tuple[int, set[int], list[tuple[int, int, str]]]:
    """Subset construction over word arcs with epsilon closure: (states, finals, arcs) of a
    deterministic automaton whose start is state 0."""
    eps: dict[int, list[int]] = {}
    out: dict[int, list[tuple[str, int]]] = {}
    for s, t, w in arcs:
        if w is None:
            eps.setdefault(s, []).append(t)
        else:
            out.setdefault(s, []).append((w, t))

    def closure(states: Iterable[int]) -> frozenset[int]:
        seen, todo = set(states), list(states)
        while todo:
            for t in eps.get(todo.pop(), ()):
                if t not in seen:
                    seen.add(t)
                    todo.append(t)
        return frozenset(seen)

    first = closure(starts)
    ids, todo = {first: 0}, [first]
    dfa_arcs: list[tuple[int, int, str]] = []
    dfa_finals: set[int] = set()
    while todo:
        subset = todo.pop()
        if subset & finals:
            dfa_finals.add(ids[subset])
        moves: dict[str, set[int]] = {}
        for s in subset:
            for w, t in out.get(s, ()):
                moves.setdefault(w, set()).add(t)
        for w in sorted(moves):
            target = closure(moves[w])
            if target not in ids:
                ids[target] = len(ids)
                todo.append(target)
            dfa_arcs.append((ids[subset], ids[target], w))
    return len(ids), dfa_finals, dfa_arcs


def _minimal_fsg(n_states: int, arcs: list[Transition]) -> Fsg:
    """Brzozowski's minimisation (determinise the reverse, twice) of an acyclic automaton from
    state 0 to state 1, renumbered so states ascend along arcs, with one final state."""
    _, finals, rev = _determinize([1], {0}, [(t, s, w) for s, t, w in arcs])
    n, finals, fwd = _determinize(finals, {0}, [(t, s, w) for s, t, w in rev])
    indegree = [0] * n
    for _, t, _ in fwd:
        indegree[t] += 1
    order, ready = [], [0]
    while ready:
        s = ready.pop()
        order.append(s)
        for _, t, _ in (a for a in fwd if a[0] == s):
            indegree[t] -= 1
            if not indegree[t]:
                ready.append(t)
    rank = {s: i for i, s in enumerate(order)}
    final = n
    out: list[Transition] = sorted((rank[s], rank[t], w) for s, t, w in fwd)
    out.extend((rank[s], final, None) for s in sorted(finals))
    return Fsg(0, final, n + 1, tuple(sorted(out, key=lambda a: (a[0], a[1], a[2] or ""))))


def _template(text: str) -> tuple[str, ...]:
    tokens: list[str] = []
    for raw in _TOKEN.findall(text):
        if raw.startswith("{"):
            if not _SLOT.match(raw.lower()):
                raise GrammarError(f"phrase {text!r}: bad slot reference {raw!r}")
            tokens.append(raw.lower())
        else:
            tokens.extend(normalise(raw))
    if not tokens:
        raise GrammarError(f"phrase {text!r} has no words")
    return tuple(tokens)


def _slot_name(token: str) -> str | None:
    m = _SLOT.match(token)
    return m.group(1) if m else None


def parse_phrases(text: str, players: Sequence[str] = (), source: str = "<phrases>") -> Grammar:
    """A grammar from phrase-file text; `{player}` is defined from `players` unless the file
    defines it. Errors name `source` and the line."""
    phrases: list[str] = []
    slots: dict[str, list[str]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            if line.startswith("@"):
                m = _SLOT_DEF.match(line)
                if not m:
                    raise GrammarError("expected '@slot name: a | b | c'")
                slots.setdefault(m.group(1), []).extend(
                    a.strip() for a in m.group(2).split("|") if a.strip()
                )
            else:
                _template(line)
                phrases.append(line)
        except GrammarError as exc:
            raise GrammarError(f"{source}:{number}: {exc}") from None
    if players and "player" not in slots:
        slots["player"] = list(players)
    try:
        return Grammar.create(phrases, slots)
    except GrammarError as exc:
        raise GrammarError(f"{source}: {exc}") from None


def load_phrases(path: str | Path, players: Sequence[str] = ()) -> Grammar:
    """:func:`parse_phrases` on a file; a missing or unreadable file is a GrammarError."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise GrammarError(f"{path}: cannot read phrase file ({exc.__class__.__name__})") from None
    return parse_phrases(text, players, source=str(path))


class NothingToSay(GrammarError):
    """The rules let the player say nothing at this moment."""


def game_grammar(game: str, players: Sequence[str], state: Any = None,
                 player: str | None = None) -> Grammar:
    """What can be said in ``game`` now: the phrases its intents allow (the grammar of the
    moment when ``state`` is given), with ``players`` as ``{player}``. With ``player`` too,
    only what they may say, and what the others may say as its rivals. Raises
    :class:`NothingToSay` when that is nothing."""
    from voice.table.games import UnknownGame, lookup

    try:
        phrases = lookup(game).phrases
    except UnknownGame as exc:
        raise GrammarError(str(exc)) from None
    templates, slots = phrases(tuple(players), state, player)
    if not templates:
        raise NothingToSay(f"{player} may say nothing in {game} now")
    if player is None:
        return _cached_grammar(templates, _ordered(slots))
    # Everyone's phrases but the player's own; all of them where the player's slots are
    # narrower (an order from the two variants of the card asked about).
    everyone, all_slots = phrases(tuple(players), state, None)
    rivals = tuple(t for t in everyone if t not in templates or all_slots != slots)
    return _cached_grammar(templates, _ordered(slots), rivals, _ordered(all_slots))


Slots = tuple[tuple[str, tuple[str, ...]], ...]


def _ordered(slots: Mapping[str, Sequence[str]]) -> Slots:
    return tuple((k, tuple(v)) for k, v in sorted(slots.items()))


@lru_cache(maxsize=256)
def _cached_grammar(templates: tuple[str, ...], slots: Slots, rivals: tuple[str, ...] = (),
                    rival_slots: Slots = ()) -> Grammar:
    """Grammars are built again and again as a game moves between a few moments."""
    grammar = Grammar.create(templates, dict(slots))
    return grammar.with_rivals(Grammar.create(rivals, dict(rival_slots))) if rivals else grammar
