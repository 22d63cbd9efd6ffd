"""First-speaker arbitration on onsets, not on recognition order (DESIGN principle 3).

The onset detector reports when each utterance started (:meth:`Arbiter.started`) and how far
its onsets are final (:meth:`Arbiter.settle`); the recogniser later reports what each one said
(:meth:`Arbiter.recognised`), in whatever order it finishes. :meth:`Arbiter.ready` releases
utterances in onset order, a whole *cluster* at a time (utterances chained by onset gaps under
the tie window), and only once every utterance of the cluster is recognised and no new onset
can still join it. So the released sequence — and every verdict computed from it with
:func:`rank` — is the same whatever order, or speed, recognition finishes in.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar, cast

from engine.core import DEFAULT_TIE_WINDOW_MS

R = TypeVar("R")
"""What the recogniser made of an utterance: the pipeline's record, or a phrase in tests."""


class ArbiterError(ValueError):
    """An utterance reported out of contract (recognised before started, started twice...)."""


@dataclass(frozen=True)
class Utterance(Generic[R]):
    """One attributed utterance: who (`mic`), when it started, and what was recognised.

    `result` is what the recogniser returned (None: not a call)."""

    mic: int
    onset_s: float
    result: R | None = None


@dataclass(frozen=True)
class Verdict:
    """Who said `phrase` first: `order` lists mics by onset (earliest first); `ties` groups the
    mics whose onsets fall within the tie window of their group's earliest one (only groups of
    two or more); `onsets_s` matches `order`."""

    phrase: Hashable
    order: tuple[int, ...]
    ties: tuple[tuple[int, ...], ...]
    onsets_s: tuple[float, ...]

    @property
    def first(self) -> tuple[int, ...]:
        """The mics that share first place: one, or several on a tie."""
        for group in self.ties:
            if group[0] == self.order[0]:
                return group
        return self.order[:1]


def _key(u: Utterance[R]) -> tuple[float, int]:
    return (u.onset_s, u.mic)


def _itself(result: object) -> Hashable:
    return cast(Hashable, result)


def rank(
    utterances: Iterable[Utterance[R]],
    tie_window_ms: float = DEFAULT_TIE_WINDOW_MS,
    phrase: Callable[[R], Hashable | None] = _itself,
) -> dict[Hashable, Verdict]:
    """Group utterances by `phrase(result)` (no result, or a phrase of None, is left out) and order
    each group's mics by onset; each mic counts once, at its earliest onset for that phrase.

    Tie groups are formed greedily from the earliest onset: a group holds every later onset
    within `tie_window_ms` of the group's first. Deterministic for a given set of utterances.
    """
    window_s = tie_window_ms / 1000
    by_phrase: dict[Hashable, dict[int, Utterance[R]]] = {}
    for u in sorted(utterances, key=_key):
        key = None if u.result is None else phrase(u.result)
        if key is not None:
            by_phrase.setdefault(key, {}).setdefault(u.mic, u)
    verdicts = {}
    for key, firsts in by_phrase.items():
        ordered = sorted(firsts.values(), key=_key)
        ties: list[tuple[int, ...]] = []
        i = 0
        while i < len(ordered):
            j = i + 1
            while j < len(ordered) and ordered[j].onset_s - ordered[i].onset_s < window_s:
                j += 1
            if j - i > 1:
                ties.append(tuple(u.mic for u in ordered[i:j]))
            i = j
        verdicts[key] = Verdict(
            key,
            tuple(u.mic for u in ordered),
            tuple(ties),
            tuple(u.onset_s for u in ordered),
        )
    return verdicts


class Arbiter(Generic[R]):
    """Holds utterances back until their verdict can no longer change, then releases them in
    onset order (see the module docstring).

    `started` and `recognised` identify an utterance by (mic, onset_s). `settle(t_s)` promises
    that no utterance with an onset before `t_s` is still to be reported (the onset detector's
    `settled_s`); `close()` promises no more at all.
    """

    def __init__(self, tie_window_ms: float = DEFAULT_TIE_WINDOW_MS) -> None:
        if tie_window_ms < 0:
            raise ArbiterError(f"tie_window_ms must be >= 0, got {tie_window_ms}")
        self.tie_window_ms = tie_window_ms
        self._window_s = tie_window_ms / 1000
        self._pending: dict[tuple[float, int], Utterance[R] | None] = {}
        self._settled_s = float("-inf")
        self._released_to: tuple[float, int] | None = None

    def __repr__(self) -> str:
        return (
            f"Arbiter(tie_window_ms={self.tie_window_ms}, pending={len(self._pending)}, "
            f"settled_s={self._settled_s})"
        )

    def started(self, mic: int, onset_s: float) -> None:
        """Speech began on `mic` at `onset_s`; its text is not known yet."""
        key = (onset_s, mic)
        if key in self._pending:
            raise ArbiterError(f"utterance on mic {mic} at {onset_s:.4f} s started twice")
        if self._released_to is not None and key <= self._released_to:
            raise ArbiterError(
                f"utterance on mic {mic} at {onset_s:.4f} s starts before utterances already "
                f"released (up to {self._released_to[0]:.4f} s): onsets must be settled in order"
            )
        self._pending[key] = None

    def recognised(self, mic: int, onset_s: float, result: R | None) -> None:
        """The utterance on `mic` that started at `onset_s` said `result` (None: nothing)."""
        key = (onset_s, mic)
        if key not in self._pending:
            raise ArbiterError(f"utterance on mic {mic} at {onset_s:.4f} s was never started")
        if self._pending[key] is not None:
            raise ArbiterError(f"utterance on mic {mic} at {onset_s:.4f} s recognised twice")
        self._pending[key] = Utterance(mic, onset_s, result)

    def settle(self, t_s: float) -> None:
        """No utterance with an onset before `t_s` remains to be started."""
        self._settled_s = max(self._settled_s, t_s)

    def close(self) -> None:
        """No more utterances will start."""
        self._settled_s = float("inf")

    def unresolved(self) -> list[tuple[float, int]]:
        """(onset_s, mic) of the utterances started but not yet recognised, in onset order."""
        return sorted(k for k, u in self._pending.items() if u is None)

    def unreleased(self) -> list[tuple[float, int]]:
        """(onset_s, mic) of the utterances started but not yet released, in onset order."""
        return sorted(self._pending)

    def ready(self) -> list[Utterance[R]]:
        """Release, in onset order, every cluster whose verdict can no longer change."""
        out: list[Utterance[R]] = []
        keys = sorted(self._pending)
        i = 0
        while i < len(keys):
            j = i + 1  # the cluster: onsets chained by gaps under the tie window
            while j < len(keys) and keys[j][0] - keys[j - 1][0] < self._window_s:
                j += 1
            cluster = keys[i:j]
            closed = keys[j - 1][0] + self._window_s <= self._settled_s  # nothing can join
            if not closed or any(self._pending[k] is None for k in cluster):
                break
            out.extend(cast(Utterance[R], self._pending.pop(k)) for k in cluster)
            self._released_to = cluster[-1]
            i = j
        return out
