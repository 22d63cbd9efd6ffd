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


def segment_costs(prons: Sequence[Sequence[str]], heard: Sequence[str]) -> np.ndarray:
    """For each pronunciation, the edit cost of it against every span of the heard phones:
    ``out[k, j, j2]`` = cost of pronunciation k for heard phones j..j2-1 (inf for j2 < j).
    Each heard phone left out costs 1, each pronunciation phone not heard 1, a substitution
    :func:`substitution_costs`."""
    n = len(heard)
    sub = substitution_costs()
    h = _ids(heard)
    k = len(prons)
    longest = max((len(p) for p in prons), default=0)
    pid = np.full((k, longest), len(PHONES), dtype=np.intp)
    lengths = np.array([len(p) for p in prons], dtype=np.intp)
    for i, p in enumerate(prons):
        pid[i, : len(p)] = _ids(p)
    idx = np.arange(n + 1, dtype=np.float64)
    start = idx[:, None]
    end = idx[None, :]
    d = np.where(end >= start, end - start, np.inf)  # only heard phones, all left out
    d = np.broadcast_to(d, (k, n + 1, n + 1)).copy()
    out = np.full((k, n + 1, n + 1), np.inf)
    out[lengths == 0] = d[lengths == 0]
    for i in range(longest):
        s = sub[pid[:, i]][:, h]  # (k, n): substituting phone i for each heard phone
        base = d + 1.0  # phone i not heard
        base[:, :, 1:] = np.minimum(base[:, :, 1:], d[:, :, :-1] + s[:, None, :])
        # then heard phones left out after it: d[j2] = min over j1<=j2 of base[j1] + (j2-j1)
        d = np.minimum.accumulate(base - idx, axis=2) + idx
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


class PhraseMatcher:
    """The nearest phrase of a grammar to heard words, on phones, over the grammar's word
    graph (never expanding it), and the nearest other phrase beside it.

    A forward pass gives each state the cheapest cost of reaching it having consumed each
    prefix of the heard phones; a backward pass the cheapest cost of going on to the end.
    The graph is deterministic, so another phrase is a path through at least one arc off
    the best path: the runner-up is the cheapest path through such an arc."""

    def __init__(self, grammar: Grammar, lexicon: Lexicon) -> None:
        fsg = grammar.fsg
        self.fsg = fsg
        words = sorted(grammar.words)
        spelled = lexicon.spell(words)
        self.words = words
        self._word_index = {w: i for i, w in enumerate(words)}
        self.prons: list[tuple[str, ...]] = []
        self.pron_word: list[int] = []
        for i, w in enumerate(words):
            for p in dict.fromkeys(spelled[w]):
                self.prons.append(p)
                self.pron_word.append(i)
        self.shortest = {w: min(len(p) for p in spelled[w]) for w in words}
        self.arcs = [(s, t, None if w is None else self._word_index[w])
                     for s, t, w in fsg.transitions]
        self.incoming: dict[int, list[int]] = {}
        self.outgoing: dict[int, list[int]] = {}
        for a, (s, t, _) in enumerate(self.arcs):
            self.incoming.setdefault(t, []).append(a)
            self.outgoing.setdefault(s, []).append(a)

    def nearest(self, heard: Sequence[str]) -> Nearest | None:
        """The nearest phrase to the heard phones (None when nothing was heard)."""
        n = len(heard)
        if n == 0:
            return None
        per_pron = segment_costs(self.prons, heard)
        cost = np.full((len(self.words), n + 1, n + 1), np.inf)
        np.minimum.at(cost, np.array(self.pron_word), per_pron)
        inf = np.full(n + 1, np.inf)
        eye = np.where(np.eye(n + 1, dtype=bool), 0.0, np.inf)  # an epsilon arc
        fsg = self.fsg

        def span(w: int | None) -> np.ndarray:
            return eye if w is None else cost[w]

        forward = [inf] * fsg.n_states
        forward[fsg.start] = np.where(np.arange(n + 1) == 0, 0.0, np.inf)
        best_in: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # state -> (arc, from j)
        for state in range(fsg.n_states):
            arcs = self.incoming.get(state)
            if not arcs:
                continue
            totals = np.stack([forward[self.arcs[a][0]][:, None] + span(self.arcs[a][2])
                               for a in arcs])  # (arcs, j, j2)
            flat = totals.reshape(-1, n + 1)  # (arcs * j, j2)
            pick = flat.argmin(axis=0)
            forward[state] = flat[pick, np.arange(n + 1)]
            best_in[state] = (np.array(arcs)[pick // (n + 1)], pick % (n + 1))
        total = float(forward[fsg.final][n])
        if not math.isfinite(total):
            return None
        path: list[int] = []
        state, j = fsg.final, n
        while state != fsg.start or j != 0:
            arcs_at, j_from = best_in[state]
            a = int(arcs_at[j])
            path.append(a)
            state, j = self.arcs[a][0], int(j_from[j])
        on_path = set(path)
        words = [self.words[self.arcs[a][2]] for a in reversed(path)  # type: ignore[index]
                 if self.arcs[a][2] is not None]
        backward = [inf] * fsg.n_states
        backward[fsg.final] = np.where(np.arange(n + 1) == n, 0.0, np.inf)
        runner_cost, runner_arc = math.inf, -1
        for state in range(fsg.n_states - 1, -1, -1):
            arcs = self.outgoing.get(state)
            if not arcs:
                continue
            ahead = np.stack([(span(self.arcs[a][2]) + backward[self.arcs[a][1]][None, :])
                              .min(axis=1) for a in arcs])  # (arcs, j)
            backward[state] = ahead.min(axis=0)
            through = (ahead + forward[state][None, :]).min(axis=1)
            for a, c in zip(arcs, through):
                if a not in on_path and c < runner_cost:
                    runner_cost, runner_arc = float(c), a
        runner = self._through(runner_arc, forward, backward, cost, eye) if runner_arc >= 0 else ""
        return Nearest(" ".join(words), total, runner, runner_cost,
                       sum(self.shortest[w] for w in words))

    def _through(self, arc: int, forward: list[np.ndarray], backward: list[np.ndarray],
                 cost: np.ndarray, eye: np.ndarray) -> str:
        """The words of the cheapest path through `arc` (for reports: greedy, from both
        passes' costs)."""
        s, t, w = self.arcs[arc]
        span = eye if w is None else cost[w]
        grid = forward[s][:, None] + span + backward[t][None, :]
        j, j2 = np.unravel_index(int(grid.argmin()), grid.shape)
        before = self._walk(s, int(j), forward, cost, eye, ahead=False)
        after = self._walk(t, int(j2), backward, cost, eye, ahead=True)
        middle = [] if w is None else [self.words[w]]
        return " ".join(before + middle + after)

    def _walk(self, state: int, j: int, costs: list[np.ndarray], cost: np.ndarray,
              eye: np.ndarray, ahead: bool) -> list[str]:
        """The cheapest words from ``state``, having consumed ``j`` heard phones, back to the
        start (by the forward pass's ``costs``) or, ``ahead``, on to the final state (by the
        backward pass's)."""
        end, arcs_at = (self.fsg.final, self.outgoing) if ahead else (self.fsg.start, self.incoming)
        out: list[str] = []
        while state != end:
            best = (math.inf, -1, -1)
            for a in arcs_at.get(state, ()):
                s, t, w = self.arcs[a]
                span = eye if w is None else cost[w]
                line = span[j, :] + costs[t] if ahead else costs[s] + span[:, j]
                k = int(line.argmin())
                if line[k] < best[0]:
                    best = (float(line[k]), a, k)
            _, a, j = best
            s, t, w = self.arcs[a]
            if w is not None:
                out.append(self.words[w])
            state = t if ahead else s
        return out if ahead else out[::-1]
