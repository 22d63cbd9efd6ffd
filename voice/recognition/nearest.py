"""Free text held to a grammar: words to phones, and the nearest phrase of the grammar.

A recogniser that transcribes freely (Whisper, :mod:`voice.recognition.whisper`) is mapped
onto the grammar of the moment here: its text as the grammar's words (:func:`text_words`),
those words as phones (:class:`Lexicon`: CMU spellings, espeak-ng's for words the dictionary
lacks), and the nearest phrase of the grammar on phones, across word boundaries, with the
nearest *other* phrase beside it (:class:`PhraseMatcher`), so "rocky rode" is Rocky Road,
"pria" is Priya and "2" is "two".
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from voice.recognition.grammar import Grammar, UnknownWord
from voice.recognition.intents import words as normalise

# --- text to phones ------------------------------------------------------------------------

_ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
_TENS = ["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def _number_words(n: int) -> list[str]:
    if n < 20:
        return [_ONES[n]]
    if n < 100:
        return [_TENS[n // 10], *([_ONES[n % 10]] if n % 10 else [])]
    if n < 1000:
        return [_ONES[n // 100], "hundred", *(_number_words(n % 100) if n % 100 else [])]
    return [_ONES[int(d)] for d in str(n)]


def text_words(text: str) -> list[str]:
    """Whisper's text as the grammar's words: lower case, no punctuation, digits spelled
    ("Give 2 to Bob." → give two to bob)."""
    out: list[str] = []
    for w in normalise(text.replace("&", " and ").replace("-", " ")):
        if w.isdigit():
            out += _number_words(int(w))
        elif w[:-2].isdigit() and w[-2:] in ("st", "nd", "rd", "th"):
            out += _number_words(int(w[:-2]))
        else:
            out.append(w)
    return out


@cache
def _cmudict() -> dict[str, tuple[tuple[str, ...], ...]]:
    import pocketsphinx

    entries: dict[str, list[tuple[str, ...]]] = {}
    path = pocketsphinx.get_model_path("en-us/cmudict-en-us.dict")
    with open(path, encoding="utf-8") as f:
        for line in f:
            head, *phones = line.split()
            entries.setdefault(head.split("(", 1)[0], []).append(tuple(phones))
    return {w: tuple(p) for w, p in entries.items()}


class Lexicon:
    """Phone spellings of words: the CMU dictionary's, espeak-ng's for the rest (cached),
    and where espeak-ng cannot spell a word, its letters."""

    def __init__(self) -> None:
        self._made: dict[str, tuple[tuple[str, ...], ...]] = {}
        self._lock = threading.Lock()

    def spell(self, words: Sequence[str]) -> dict[str, tuple[tuple[str, ...], ...]]:
        cmu = _cmudict()
        with self._lock:
            missing = sorted({w for w in words if w not in cmu and w not in self._made})
            if missing:
                from voice.recognition.pronounce import pronounce

                try:
                    made = {w: (p,) for w, p in pronounce(missing).items()}
                except (UnknownWord, OSError, ValueError):
                    made = {}
                    for w in missing:
                        try:
                            made.update({w: (p,) for w, p in pronounce([w]).items()})
                        except (UnknownWord, OSError, ValueError):
                            made[w] = (tuple(c.upper() for c in w if c.isalpha()) or ("AH",),)
                self._made.update(made)
            return {w: cmu.get(w) or self._made[w] for w in words}


_VOWELS = ("AA", "AE", "AH", "AO", "AW", "AY", "EH", "ER", "EY", "IH", "IY", "OW", "OY", "UH",
           "UW")
_CONSONANTS = ("B", "CH", "D", "DH", "F", "G", "HH", "JH", "K", "L", "M", "N", "NG", "P", "R",
               "S", "SH", "T", "TH", "V", "W", "Y", "Z", "ZH")
PHONES = _VOWELS + _CONSONANTS
_NEAR = {  # pairs of phones that sound alike: substituting one for the other costs less
    0.3: ("AA AO", "AA AH", "AH AO", "AH UH", "AH ER", "IH IY", "IH EH", "EH AE", "UH UW",
          "OW AO", "EY EH", "AY AA", "AW AA"),
    0.4: ("P B", "T D", "K G", "F V", "S Z", "SH ZH", "CH JH", "TH DH", "M N", "N NG"),
    0.5: ("TH F", "DH V", "S SH", "CH SH", "JH ZH", "T CH", "D JH", "DH D", "TH T", "M B",
          "N D"),
    0.6: ("L R", "W V", "R ER", "Y IY", "W UW", "HH _"),
}


@cache
def substitution_costs() -> np.ndarray:
    """Phone-for-phone substitution costs (rows and columns in :data:`PHONES` order, the
    last row and column any other symbol): 0 same, 0.3-0.6 alike, 0.6 two vowels, else 1."""
    n = len(PHONES)
    cost = np.ones((n + 1, n + 1))
    v = len(_VOWELS)
    cost[:v, :v] = 0.6
    index = {p: i for i, p in enumerate(PHONES)}
    for c, pairs in _NEAR.items():
        for pair in pairs:
            a, b = pair.split()
            if b in index:
                cost[index[a], index[b]] = cost[index[b], index[a]] = c
    np.fill_diagonal(cost, 0.0)
    cost[n, n] = 1.0
    return cost


def _ids(phones: Sequence[str]) -> np.ndarray:
    index = {p: i for i, p in enumerate(PHONES)}
    return np.array([index.get(p, len(PHONES)) for p in phones], dtype=np.intp)


# --- nearest phrase ----------------------------------------------------------------------

_TENTHS = 10
"""Edit costs are counted in tenths of a phone inside the matcher: every cost (0.3-0.6 alike,
1 else) is then a whole number, sums are exact, and equal phrases tie exactly."""


@cache
def _substitution_tenths() -> np.ndarray:
    """:func:`substitution_costs` in tenths of a phone, whole numbers."""
    return np.rint(substitution_costs() * _TENTHS)


def _padded(prons: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Pronunciations (phone ids) as one zero-padded matrix, and their lengths."""
    ids = np.zeros((len(prons), max((p.size for p in prons), default=0)), np.intp)
    for r, p in enumerate(prons):
        ids[r, : p.size] = p
    return ids, np.array([p.size for p in prons], np.intp)


def _closure(d: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Heard phones left out after each position: ``out[.., j2] = min over j <= j2 of
    d[.., j] + (j2 - j)`` (each a whole phone)."""
    return np.minimum.accumulate(d - idx, axis=-1) + idx


def seeded_costs(seed: np.ndarray, prons: np.ndarray, lengths: np.ndarray,
                 heard: np.ndarray) -> np.ndarray:
    """For each row r, a pronunciation (phone ids ``prons[r, :lengths[r]]``; length 0: an
    empty arc) read after ``seed[r]``: ``out[r, j2] = min over j <= j2 of seed[r, j] +
    cost(pronunciation, heard[j:j2])``, in tenths. A heard phone left out costs a whole phone,
    a pronunciation phone not heard a whole phone, a substitution
    :func:`substitution_costs`. An empty arc reads nothing: its row is its seed. One
    vectorised step per phone of the longest pronunciation, whatever the rows."""
    sub = _substitution_tenths()
    idx = np.arange(heard.size + 1, dtype=np.float64) * _TENTHS
    out = seed.copy()
    d = _closure(seed, idx)
    for i in range(int(lengths.max(initial=0))):
        base = d + _TENTHS  # phone i not heard
        base[:, 1:] = np.minimum(base[:, 1:], d[:, :-1] + sub[prons[:, i]][:, heard])
        d = _closure(base, idx)
        done = lengths == i + 1
        out[done] = d[done]
    return out


@dataclass(frozen=True)
class Nearest:
    """The grammar's phrase nearest to some heard phones, its cost, the runner-up's (another
    phrase's) cost and phrase, and the nearest phrase's phone count."""

    phrase: str
    cost: float
    runner_up: str
    runner_up_cost: float
    phones: int


@dataclass(frozen=True)
class _Step:
    """What a pass reads at one depth: one row per pronunciation of each arc's word (the
    state its seed comes from, the pronunciation, reversed backwards), where each arc's rows
    begin (its arcs in order), the states, and the arcs into (out of) each state, padded
    with the arc past the last (never read: inf)."""

    seeds: np.ndarray
    prons: np.ndarray
    lengths: np.ndarray
    arcs: np.ndarray
    first_rows: np.ndarray
    states: np.ndarray
    state_arcs: np.ndarray


class PhraseMatcher:
    """The nearest phrase of a grammar to heard words, on phones, over the grammar's word
    graph (never expanding it), and the nearest other phrase beside it.

    A forward pass gives each state the cheapest cost of reaching it having consumed each
    prefix of the heard phones; a backward pass the cheapest cost of going on to the end.
    Each arc's word is read after its state's costs as one edit-distance table (heard
    phones by the word's phones), every arc into states of one depth at once, so a pass
    costs a few array steps per word of the longest phrase, and time grows with the heard
    phones, not with their square. The graph is deterministic, so another phrase is a path
    through at least one arc off the best path: the runner-up is the cheapest path through
    such an arc."""

    def __init__(self, grammar: Grammar, lexicon: Lexicon) -> None:
        fsg = grammar.fsg
        self.fsg = fsg
        words = sorted(grammar.words)
        spelled = lexicon.spell(words)
        self.words = words
        self._word_index = {w: i for i, w in enumerate(words)}
        self.prons: list[list[np.ndarray]] = [
            [_ids(p) for p in dict.fromkeys(spelled[w])] for w in words]
        self.shortest = {w: min(len(p) for p in spelled[w]) for w in words}
        self.arcs = [(s, t, None if w is None else self._word_index[w])
                     for s, t, w in fsg.transitions]
        self.incoming: dict[int, list[int]] = {}
        self.outgoing: dict[int, list[int]] = {}
        for a, (s, t, _) in enumerate(self.arcs):
            self.incoming.setdefault(t, []).append(a)
            self.outgoing.setdefault(s, []).append(a)
        # states ascend along every arc: a state's depth from the start (and from the end)
        # is known once every state before (after) it is
        ahead = [0] * fsg.n_states
        for s, t, _ in sorted(self.arcs):
            ahead[t] = max(ahead[t], ahead[s] + 1)
        behind = [0] * fsg.n_states
        for s, t, _ in sorted(self.arcs, key=lambda arc: -arc[1]):
            behind[s] = max(behind[s], behind[t] + 1)
        self._sources = np.array([s for s, _, _ in self.arcs], np.intp)
        self._runner_order = np.array(
            [a for q in range(fsg.n_states - 1, -1, -1) for a in self.outgoing.get(q, ())],
            np.intp)
        """The arcs, last state's first: the runner-up is the first of the cheapest."""
        self._forward = self._steps(ahead, into=True)
        self._backward = self._steps(behind, into=False)

    def _steps(self, depth: list[int], into: bool) -> list[_Step]:
        """For each depth in turn, what a pass reads there: the arcs into (`into`) or out of
        its states."""
        steps = []
        by_state = self.incoming if into else self.outgoing
        at_depth: dict[int, list[int]] = {}
        for q in range(self.fsg.n_states):
            at_depth.setdefault(depth[q], []).append(q)
        for level in range(1, max(depth, default=0) + 1):
            states = at_depth.get(level, [])
            arcs = [a for q in states for a in by_state.get(q, ())]
            per_arc = [self._arc_prons(a) for a in arcs]
            counts = [len(ps) for ps in per_arc]
            prons, lengths = _padded([p if into else p[::-1] for ps in per_arc for p in ps])
            widest = max(len(by_state.get(q, ())) for q in states)
            state_arcs = np.full((len(states), widest), len(self.arcs), np.intp)
            for i, q in enumerate(states):
                state_arcs[i, : len(by_state.get(q, ()))] = by_state.get(q, ())
            seeds = [self.arcs[a][0 if into else 1] for a in arcs]
            steps.append(_Step(
                np.repeat(np.array(seeds, np.intp), counts), prons, lengths,
                np.array(arcs, np.intp), np.cumsum([0, *counts[:-1]], dtype=np.intp),
                np.array(states, np.intp), state_arcs))
        return steps

    def _arc_prons(self, arc: int) -> list[np.ndarray]:
        w = self.arcs[arc][2]
        return [np.zeros(0, np.intp)] if w is None else self.prons[w]

    def nearest(self, heard: Sequence[str]) -> Nearest | None:
        """The nearest phrase to the heard phones (None when nothing was heard)."""
        n = len(heard)
        if n == 0:
            return None
        h = _ids(heard)
        fsg, inf = self.fsg, np.inf
        # through[a, j2]: the cheapest cost of reading arc a having consumed j2 heard phones
        through = np.full((len(self.arcs) + 1, n + 1), inf)
        forward = np.full((fsg.n_states, n + 1), inf)
        forward[fsg.start, 0] = 0.0
        best_in = np.zeros((fsg.n_states, n + 1), np.intp)  # the arc into a state, by j2
        for step in self._forward:
            read = seeded_costs(forward[step.seeds], step.prons, step.lengths, h)
            through[step.arcs] = np.minimum.reduceat(read, step.first_rows, axis=0)
            into = through[step.state_arcs]  # (states, arcs, j2)
            pick = into.argmin(axis=1)
            forward[step.states] = np.take_along_axis(into, pick[:, None], axis=1)[:, 0]
            best_in[step.states] = np.take_along_axis(step.state_arcs, pick, axis=1)
        total = float(forward[fsg.final, n])
        if not math.isfinite(total):
            return None
        path: list[int] = []
        state, j = fsg.final, n
        while state != fsg.start or j != 0:
            a = int(best_in[state][j])
            path.append(a)
            s = self.arcs[a][0]
            j = int((forward[s] + self._span_to(a, j, h)).argmin())
            state = s
        words = [self.words[self.arcs[a][2]] for a in reversed(path)  # type: ignore[index]
                 if self.arcs[a][2] is not None]
        # ahead[a, j]: the cheapest cost of reading arc a from j heard phones to the end
        ahead = np.full((len(self.arcs) + 1, n + 1), inf)
        backward = np.full((fsg.n_states, n + 1), inf)
        backward[fsg.final, n] = 0.0
        for step in self._backward:
            read = seeded_costs(backward[step.seeds][:, ::-1], step.prons, step.lengths, h[::-1])
            ahead[step.arcs] = np.minimum.reduceat(read[:, ::-1], step.first_rows, axis=0)
            backward[step.states] = ahead[step.state_arcs].min(axis=1)
        order = self._runner_order
        off = (ahead[order] + forward[self._sources[order]]).min(axis=1)
        off[np.isin(order, path)] = inf
        pick = int(off.argmin())
        runner_cost, runner_arc = float(off[pick]), int(order[pick])
        runner = (self._through(runner_arc, forward, backward, ahead, through, h)
                  if math.isfinite(runner_cost) else "")
        return Nearest(" ".join(words), total / _TENTHS, runner, runner_cost / _TENTHS,
                       sum(self.shortest[w] for w in words))

    def _span_from(self, arc: int, j: int, h: np.ndarray) -> np.ndarray:
        """The cost of reading `arc` from heard phone j to each j2 (inf before j)."""
        prons = self._arc_prons(arc)
        seed = np.full((len(prons), h.size + 1), np.inf)
        seed[:, j] = 0.0
        return self._read(seed, prons, h).min(axis=0)

    def _span_to(self, arc: int, j2: int, h: np.ndarray) -> np.ndarray:
        """The cost of reading `arc` from each j to heard phone j2 (inf after j2)."""
        prons = [p[::-1] for p in self._arc_prons(arc)]
        seed = np.full((len(prons), h.size + 1), np.inf)
        seed[:, h.size - j2] = 0.0
        return self._read(seed, prons, h[::-1]).min(axis=0)[::-1]

    @staticmethod
    def _read(seed: np.ndarray, prons: list[np.ndarray], h: np.ndarray) -> np.ndarray:
        return seeded_costs(seed, *_padded(prons), h)

    def _through(self, arc: int, forward: np.ndarray, backward: np.ndarray, ahead: np.ndarray,
                 through: np.ndarray, h: np.ndarray) -> str:
        """The words of the cheapest path through `arc` (for reports: greedy, from both
        passes' costs)."""
        s, t, w = self.arcs[arc]
        j = int((forward[s] + ahead[arc]).argmin())
        j2 = int((self._span_from(arc, j, h) + backward[t]).argmin())
        before = self._walk(s, j, forward, through, h, ahead=False)
        after = self._walk(t, j2, backward, ahead, h, ahead=True)
        middle = [] if w is None else [self.words[w]]
        return " ".join(before + middle + after)

    def _walk(self, state: int, j: int, costs: np.ndarray, reads: np.ndarray, h: np.ndarray,
              ahead: bool) -> list[str]:
        """The cheapest words from ``state``, having consumed ``j`` heard phones, back to the
        start (by the forward pass's ``costs`` and each arc's ``reads`` into it) or, ``ahead``,
        on to the final state (by the backward pass's, and each arc's reads on from it)."""
        end, arcs_at = (self.fsg.final, self.outgoing) if ahead else (self.fsg.start, self.incoming)
        out: list[str] = []
        while state != end:
            arcs = arcs_at[state]
            a = arcs[int(reads[arcs, j].argmin())]
            s, t, w = self.arcs[a]
            if ahead:
                j = int((self._span_from(a, j, h) + costs[t]).argmin())
            else:
                j = int((costs[s] + self._span_to(a, j, h)).argmin())
            if w is not None:
                out.append(self.words[w])
            state = t if ahead else s
        return out if ahead else out[::-1]
