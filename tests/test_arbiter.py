"""First-speaker arbitration: ordering, ties, and independence from recognition order."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from voice.table.arbiter import Arbiter, ArbiterError, Utterance, Verdict, rank


def test_rank_orders_by_onset_and_groups_by_phrase() -> None:
    verdicts = rank(
        [
            Utterance(2, 1.050, "got it"),
            Utterance(0, 1.000, "got it"),
            Utterance(1, 1.020, "stop"),
            Utterance(3, 0.500, None),
        ],
        tie_window_ms=10,
    )
    assert set(verdicts) == {"got it", "stop"}
    assert verdicts["got it"] == Verdict("got it", (0, 2), (), (1.000, 1.050))
    assert verdicts["got it"].first == (0,)
    assert verdicts["stop"].order == (1,)


def test_rank_ties_are_greedy_from_the_earliest_onset() -> None:
    us = [Utterance(m, t, "got it") for m, t in [(0, 0.000), (1, 0.008), (2, 0.016), (3, 0.019)]]
    v = rank(us, tie_window_ms=10)["got it"]
    assert v.order == (0, 1, 2, 3)
    assert v.ties == ((0, 1), (2, 3))
    assert v.first == (0, 1)


def test_rank_counts_each_mic_once_at_its_earliest_onset() -> None:
    us = [Utterance(0, 2.0, "got it"), Utterance(1, 1.5, "got it"), Utterance(0, 1.0, "got it")]
    assert rank(us)["got it"].order == (0, 1)


def test_rank_uses_phrase_key() -> None:
    us = [Utterance(0, 1.0, ("call", "got it")), Utterance(1, 0.9, ("name", "Leo"))]
    v = rank(us, phrase=lambda r: r[0])  # type: ignore[index]
    assert v["call"].order == (0,) and v["name"].order == (1,)


def test_later_speaker_recognised_first_waits_for_the_earlier() -> None:
    a = Arbiter(tie_window_ms=10)
    a.started(0, 1.000)
    a.started(1, 1.030)
    a.recognised(1, 1.030, "got it")  # the later speaker's recogniser is faster
    a.settle(2.0)
    assert a.ready() == []
    a.recognised(0, 1.000, "got it")
    released = a.ready()
    assert [u.mic for u in released] == [0, 1]
    assert rank(released, 10)["got it"].first == (0,)


def test_cluster_waits_for_onsets_to_settle() -> None:
    a = Arbiter(tie_window_ms=10)
    a.started(0, 1.000)
    a.recognised(0, 1.000, "got it")
    a.settle(1.005)  # someone could still start at 1.008 and tie
    assert a.ready() == []
    a.started(1, 1.008)
    a.recognised(1, 1.008, "got it")
    a.settle(1.020)
    released = a.ready()
    assert rank(released, 10)["got it"].first == (0, 1)


def test_close_releases_everything_recognised() -> None:
    a = Arbiter()
    a.started(3, 0.5)
    a.recognised(3, 0.5, None)
    a.close()
    assert a.ready() == [Utterance(3, 0.5, None)]
    assert a.ready() == []


def test_contract_errors_are_value_errors() -> None:
    a = Arbiter()
    with pytest.raises(ArbiterError, match="never started"):
        a.recognised(0, 1.0, "x")
    a.started(0, 1.0)
    with pytest.raises(ArbiterError, match="started twice"):
        a.started(0, 1.0)
    a.recognised(0, 1.0, "x")
    with pytest.raises(ValueError, match="recognised twice"):
        a.recognised(0, 1.0, "x")
    a.close()
    a.ready()
    with pytest.raises(ArbiterError, match="before utterances already released"):
        a.started(1, 0.5)
    with pytest.raises(ArbiterError):
        Arbiter(tie_window_ms=-1)


PHRASES = ["got it", "stop", None]


@st.composite
def sessions(draw: st.DrawFn) -> tuple[list[Utterance], list[int], list[int]]:
    """Utterances on distinct (onset, mic), a recognition completion order, and for each
    recognition how many starts have happened before it (the interleaving)."""
    n = draw(st.integers(1, 8))
    onsets_ms = draw(st.lists(st.integers(0, 200), min_size=n, max_size=n))
    mics = draw(st.lists(st.integers(0, 5), min_size=n, max_size=n))
    keyed = {(t / 1000, m): draw(st.sampled_from(PHRASES)) for t, m in zip(onsets_ms, mics)}
    utts = sorted(
        (Utterance(m, t, r) for (t, m), r in keyed.items()), key=lambda u: (u.onset_s, u.mic)
    )
    order = draw(st.permutations(range(len(utts))))
    return utts, list(order), [draw(st.integers(i + 1, len(utts))) for i in order]


def _play(
    utts: list[Utterance], order: list[int], starts_before: list[int], window_ms: float
) -> list[list[Utterance]]:
    """Run a session: starts in onset order (settling as they go), recognitions in `order`."""
    a = Arbiter(window_ms)
    batches: list[list[Utterance]] = []
    started = 0

    def start_up_to(k: int) -> None:
        nonlocal started
        while started < k:
            u = utts[started]
            a.started(u.mic, u.onset_s)
            a.settle(u.onset_s)  # onsets are reported in order: all earlier ones are known
            started += 1
            batches.append(a.ready())

    for i, before in zip(order, starts_before):
        start_up_to(max(before, i + 1))
        u = utts[i]
        a.recognised(u.mic, u.onset_s, u.result)
        batches.append(a.ready())
    start_up_to(len(utts))
    a.close()
    batches.append(a.ready())
    return [b for b in batches if b]


@settings(max_examples=300, deadline=None)
@given(sessions(), st.sampled_from([0.0, 10.0, 40.0]))
def test_verdict_does_not_depend_on_recognition_order(
    session: tuple[list[Utterance], list[int], list[int]], window_ms: float
) -> None:
    utts, order, starts_before = session
    batches = _play(utts, order, starts_before, window_ms)
    released = [u for b in batches for u in b]
    # everything comes out once, in onset order, whatever order recognition finished in
    assert released == utts
    final = rank(utts, window_ms)
    # and the verdict on who was first, taken the moment a phrase first appears, is final
    seen: list[Utterance] = []
    for batch in batches:
        seen += batch
        now = rank(seen, window_ms)
        for phrase, verdict in now.items():
            assert verdict.first == final[phrase].first
            assert final[phrase].order[: len(verdict.order)] == verdict.order


@settings(max_examples=100, deadline=None)
@given(sessions())
def test_same_input_same_release_batches(
    session: tuple[list[Utterance], list[int], list[int]],
) -> None:
    utts, order, starts_before = session
    assert _play(utts, order, starts_before, 10.0) == _play(utts, order, starts_before, 10.0)
