"""BlackBox: order, deduplication, cache, budgets, retries, concurrency, validation."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from fairprobe.access import (
    Answer,
    Backend,
    Backoff,
    BlackBox,
    RateLimitedError,
    ResponseCache,
    TransientAccessError,
)
from fairprobe.access.base import Record
from fairprobe.errors import (
    AccessError,
    AnswerParseError,
    BudgetError,
    EndpointUnreachableError,
    InvalidParameterError,
)

FAST = Backoff(base=0.001, cap=0.01)


class Counting(Backend):
    """decision = x > 0, score = sigmoid(x), logit = x; records every call."""

    kind = "counting"

    def __init__(self, max_batch: int = 8, fail_first: int = 0, sleep: float = 0.0,
                 exc: Exception | None = None) -> None:
        self.max_batch = max_batch
        self.calls: list[list[Any]] = []
        self.attempts = 0
        self.fail_first = fail_first
        self.sleep = sleep
        self.exc = exc or TransientAccessError("HTTP 503 (injected)")
        self.closed = False
        self._lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0

    @property
    def identity(self) -> str:
        return "counting:v1"

    def ask(self, records: Sequence[Record]) -> list[Answer]:
        with self._lock:
            self.attempts += 1
            if self.attempts <= self.fail_first:
                raise self.exc
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.sleep:
                time.sleep(self.sleep * (1 + (hash(str(records[0])) % 3)))
            with self._lock:
                self.calls.append([r["x"] for r in records])
            return [
                Answer(int(r["x"] > 0), 1 / (1 + np.exp(-r["x"])), float(r["x"])) for r in records
            ]
        finally:
            with self._lock:
                self.in_flight -= 1

    def close(self) -> None:
        self.closed = True

    @property
    def paid(self) -> int:
        return sum(len(c) for c in self.calls)


def recs(xs: Sequence[float]) -> list[dict[str, float]]:
    return [{"x": float(x)} for x in xs]


def test_answers_in_input_order_with_concurrency() -> None:
    xs = np.linspace(-3, 3, 101)
    be = Counting(max_batch=7, sleep=0.005)
    with BlackBox(be, concurrency=4) as bb:
        out = bb.query(recs(xs))
    np.testing.assert_array_equal(out.decisions, (xs > 0).astype(float))
    np.testing.assert_allclose(out.scores, 1 / (1 + np.exp(-xs)))
    np.testing.assert_allclose(out.logits, xs)
    assert len(be.calls) == 15  # ceil(101 / 7)
    assert max(len(c) for c in be.calls) == 7
    assert 1 < be.max_in_flight <= 4
    assert be.closed


def test_duplicates_are_paid_once_and_counted() -> None:
    be = Counting()
    bb = BlackBox(be)
    out = bb.query(recs([1, -1, 1, 2, -1]))
    assert (out.n_paid, out.n_cached) == (3, 2)
    assert bb.spent == 3 and bb.from_cache == 2 and be.paid == 3
    np.testing.assert_array_equal(out.decisions, [1, 0, 1, 1, 0])
    again = bb.query(recs([2, 3]))
    assert (again.n_paid, again.n_cached) == (1, 1) and bb.spent == 4


def test_dataframe_input() -> None:
    bb = BlackBox(Counting())
    out = bb.query(pd.DataFrame({"x": [0.5, -0.5]}))
    np.testing.assert_array_equal(out.decisions, [1, 0])


def test_persistent_cache_is_shared_across_objects(tmp_path: Path) -> None:
    path = tmp_path / "answers.sqlite"
    be1 = Counting()
    with BlackBox(be1, cache=path) as bb:
        first = bb.query(recs(range(-5, 5)))
    be2 = Counting()
    with BlackBox(be2, cache=path) as bb:
        second = bb.query(recs(range(-5, 5)))
        assert bb.spent == 0 and second.n_cached == 10
        # the backend reports no model identity: the cached records are asked again once to
        # check that the model did not change (outside the budget), and they agree
        assert bb.fingerprint_paid == 10 and bb.identity_check is not None
        assert bb.identity_check.source == "fingerprint"
        assert bb.identity_check.fingerprint_mismatched == 0
    assert be2.paid == 10
    np.testing.assert_array_equal(first.decisions, second.decisions)
    np.testing.assert_array_equal(first.scores, second.scores)


def test_passed_cache_is_not_closed(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    with BlackBox(Counting(), cache=cache) as bb:
        bb.query(recs([1]))
    assert cache.count() == 1  # still open
    cache.close()


def test_budget_checked_before_paying() -> None:
    be = Counting()
    bb = BlackBox(be, budget=10)
    assert bb.remaining == 10
    bb.query(recs(range(6)))
    assert (bb.spent, bb.remaining) == (6, 4)
    with pytest.raises(BudgetError, match="needs 5 new answers but only 4 of the budget of 10") as e:
        bb.query(recs(range(6, 11)))
    assert "\n" not in str(e.value)
    assert be.paid == 6 and bb.spent == 6  # nothing paid for the refused query
    # cached answers are free: the same six again, plus four new ones, fit exactly
    out = bb.query(recs(range(10)))
    assert (out.n_paid, out.n_cached, bb.remaining) == (4, 6, 0)
    bb.query(recs(range(10)))  # all cached: fine with nothing left
    with pytest.raises(BudgetError):
        bb.query(recs([99]))


def test_budget_zero_and_no_budget() -> None:
    with pytest.raises(BudgetError, match="budget of 0"):
        BlackBox(Counting(), budget=0).query(recs([1]))
    assert BlackBox(Counting()).remaining is None


def test_transient_failures_are_retried() -> None:
    be = Counting(max_batch=100, fail_first=3)
    bb = BlackBox(be, retries=3, backoff=FAST)
    out = bb.query(recs([1, -1]))
    np.testing.assert_array_equal(out.decisions, [1, 0])
    assert be.attempts == 4 and bb.retried == 3 and bb.spent == 2


def test_unreachable_after_retries_is_one_line_naming_the_endpoint() -> None:
    be = Counting(fail_first=10**6, exc=TransientAccessError("connection refused"))
    be.endpoint = "http://127.0.0.1:9/predict"  # type: ignore[attr-defined]
    bb = BlackBox(be, retries=2, backoff=FAST)
    with pytest.raises(EndpointUnreachableError) as e:
        bb.query(recs([1]))
    msg = str(e.value)
    assert "\n" not in msg
    assert "http://127.0.0.1:9/predict" in msg and "after 3 attempts" in msg
    assert "last error: connection refused" in msg
    assert be.attempts == 3 and bb.spent == 0


def test_backoff_waits_grow_geometrically() -> None:
    b = Backoff(base=0.5, factor=2.0, cap=3.0, jitter=0.5)
    assert [b.nominal(k) for k in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert b.delay(1, 0.0) == 1.0 and b.delay(1, 0.999999) == pytest.approx(0.5, abs=1e-5)
    assert b.delay(0, 0.0, retry_after=2.0) == 2.0
    assert b.delay(0, 0.0, retry_after=60.0) == 3.0  # capped
    with pytest.raises(InvalidParameterError, match="'factor' parameter of Backoff"):
        Backoff(factor=0.5)


def test_backoff_is_actually_waited() -> None:
    be = Counting(fail_first=2)
    bb = BlackBox(be, retries=2, backoff=Backoff(base=0.05, factor=2.0, jitter=0.0))
    t0 = time.monotonic()
    bb.query(recs([1]))
    assert time.monotonic() - t0 >= 0.15  # 0.05 + 0.10


def test_retry_after_is_honoured() -> None:
    be = Counting(fail_first=1, exc=RateLimitedError("HTTP 429", retry_after=0.3))
    bb = BlackBox(be, backoff=Backoff(base=0.001, cap=5.0))
    t0 = time.monotonic()
    bb.query(recs([1]))
    assert time.monotonic() - t0 >= 0.3


def test_permanent_errors_are_not_retried() -> None:
    be = Counting(fail_first=1, exc=AccessError("HTTP 400: bad instance"))
    with pytest.raises(AccessError, match="HTTP 400"):
        BlackBox(be, backoff=FAST).query(recs([1]))
    assert be.attempts == 1


def test_unexpected_backend_exception_becomes_access_error() -> None:
    be = Counting(fail_first=1, exc=ZeroDivisionError("boom"))
    with pytest.raises(AccessError, match="counting backend failed: ZeroDivisionError: boom"):
        BlackBox(be).query(recs([1]))


def test_failed_batch_keeps_the_answers_of_the_others(tmp_path: Path) -> None:
    class FailOn(Counting):
        def ask(self, records: Sequence[Record]) -> list[Answer]:
            if any(r["x"] == 13 for r in records):
                raise AccessError("poisoned batch")
            return super().ask(records)

    be = FailOn(max_batch=5, sleep=0.001)
    bb = BlackBox(be, cache=tmp_path / "c.sqlite", concurrency=2)
    with pytest.raises(AccessError, match="poisoned"):
        bb.query(recs(range(40)))
    # every batch that returned is in the cache: nothing it paid for is lost
    assert bb.cache.count() == be.paid == bb.spent
    assert be.paid >= 5


class Malformed(Counting):
    def __init__(self, answers: Any) -> None:
        super().__init__()
        self.answers = answers

    def ask(self, records: Sequence[Record]) -> list[Answer]:
        return self.answers  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    "answers, match",
    [
        ([Answer(1)], "returned 1 answers for a batch of 2"),
        ([Answer(1), Answer(float("nan"))], "answer 1 has a NaN decision"),  # type: ignore[arg-type]
        ([Answer(1), Answer(2)], "decision 2 .int.; expected 0 or 1"),
        ([Answer(1), Answer("1")], "decision '1' .str.; expected 0 or 1"),  # type: ignore[arg-type]
        ([Answer(1, 1.5), Answer(0)], "score 1.5 .float.; expected a number in \\[0, 1\\]"),
        ([Answer(1, None, float("inf")), Answer(0)], "logit inf"),
        ([Answer(1), {"decision": 1}], "answer 1 is a dict, not an Answer"),
        ("11", "returned a str"),
    ],
)
def test_malformed_answers_raise_answer_parse_error(answers: Any, match: str) -> None:
    with pytest.raises(AnswerParseError, match=match) as e:
        BlackBox(Malformed(answers)).query(recs([1, 2]))
    assert "\n" not in str(e.value)


def test_bool_and_float_decisions_are_normalised() -> None:
    out = BlackBox(Malformed([Answer(True), Answer(0.0)])).query(  # type: ignore[arg-type]
        recs([1, 2])
    )
    np.testing.assert_array_equal(out.decisions, [1, 0])


def test_unparsed_answers_are_dropped_counted_and_cached(tmp_path: Path) -> None:
    be = Malformed([Answer(None, raw="no idea"), Answer(1)])
    bb = BlackBox(be, cache=tmp_path / "c.sqlite")
    out = bb.query(recs([1, 2]))
    assert out.n_unparsed == 1 and bb.unparsed == 1
    assert np.isnan(out.decisions[0]) and out.decisions[1] == 1
    assert list(out.parsed) == [False, True]
    again = bb.query(recs([1, 2]))  # paid once: the unparsed answer is not asked again
    assert again.n_paid == 0 and bb.unparsed == 2 and bb.spent == 2


def test_empty_query() -> None:
    out = BlackBox(Counting()).query([])
    assert len(out) == 0 and out.n_paid == 0


def test_progress_bar_runs() -> None:
    bb = BlackBox(Counting(max_batch=3), progress=True, budget=50, concurrency=2)
    out = bb.query(recs(range(20)))
    assert len(out) == 20


def test_timeout_is_forwarded_to_network_backends() -> None:
    be = Counting()
    be.timeout = 30.0  # type: ignore[attr-defined]
    BlackBox(be, timeout=2.5)
    assert be.timeout == 2.5  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"retries": -1}, "'retries' parameter of BlackBox must be an int >= 0"),
        ({"concurrency": 0}, "'concurrency' parameter of BlackBox"),
        ({"budget": -1}, "'budget' parameter of BlackBox"),
        ({"budget": 1.5}, "'budget' parameter of BlackBox"),
        ({"timeout": 0}, "'timeout' parameter of BlackBox"),
        ({"backoff": -1.0}, "'backoff' parameter of BlackBox"),
        ({"cache": 3}, "'cache' parameter of BlackBox"),
    ],
)
def test_bad_parameters(kw: dict[str, Any], match: str) -> None:
    with pytest.raises(InvalidParameterError, match=match):
        BlackBox(Counting(), **kw)


def test_backend_must_be_a_backend() -> None:
    with pytest.raises(InvalidParameterError, match="'backend' parameter of BlackBox"):
        BlackBox(lambda df: df)  # type: ignore[arg-type]


def test_closed_blackbox_refuses_queries() -> None:
    bb = BlackBox(Counting())
    bb.close()
    bb.close()
    with pytest.raises(AccessError, match="closed"):
        bb.query(recs([1]))


def test_stats_and_repr() -> None:
    bb = BlackBox(Counting(), budget=5)
    bb.query(recs([1, 1]))
    assert bb.stats() == {
        "identity": "counting:v1", "spent": 1, "budget": 5, "remaining": 4,
        "from_cache": 1, "unparsed": 0, "retried": 0, "fingerprint_paid": 0,
        "resumed_in_flight": 0,
    }
    assert "spent=1" in repr(bb)


def test_concurrent_queries_cannot_overspend_the_budget() -> None:
    be = Counting(max_batch=5, sleep=0.002)
    bb = BlackBox(be, budget=50, concurrency=2)
    results: list[object] = []

    def worker(t: int) -> None:
        try:
            out = bb.query(recs(range(100 * t, 100 * t + 20)))
            results.append(out.n_paid)
        except BudgetError as exc:
            results.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert sorted(r for r in results if isinstance(r, int)) == [20, 20]
    assert sum(isinstance(r, BudgetError) for r in results) == 2
    assert bb.spent == be.paid == 40 and bb.remaining == 10


def test_answers_stored_meanwhile_by_another_process_are_not_paid(tmp_path: Path) -> None:
    """Before each batch is paid, the file cache is looked up again (one SELECT per batch)."""
    path = tmp_path / "shared.sqlite"
    other = ResponseCache(path)  # stands for another process auditing the same model

    class Racing(Counting):
        def ask(self, records: Sequence[Record]) -> list[Answer]:
            out = super().ask(records)
            if len(self.calls) == 1:  # meanwhile, the other process answers records 50..99
                from fairprobe.access.records import normalize_records, record_key

                _, canon = normalize_records(recs(range(50, 100)))
                other.put_many(self.identity, [(record_key(c), Answer(1, 0.5, 0.0)) for c in canon])
            return out

    be = Racing(max_batch=10)
    bb = BlackBox(be, cache=path, concurrency=1, budget=100)
    out = bb.query(recs(range(100)))
    assert be.paid == bb.spent == out.n_paid == 50 and out.n_cached == 50
    assert (out.scores[50:] == 0.5).all()  # the answers the other process stored
    assert bb.remaining == 50
    other.close()


def test_progress_bar_shows_queries_spent(capsys: pytest.CaptureFixture[str]) -> None:
    bb = BlackBox(Counting(max_batch=4), progress=True, budget=30)
    bb.query(recs(range(10)))
    err = capsys.readouterr().err
    assert "10/10" in err and "spent 10/30" in err


def test_a_query_in_progress_is_not_counted_twice_against_the_budget() -> None:
    """Queries paid by a call still running are spent, not also reserved: a second call that fits
    in what is really left must go through (it raised BudgetError when the first call's paid
    batches were counted both as spent and as reserved)."""
    go, blocked = threading.Event(), threading.Event()

    class Gated(Counting):
        def ask(self, records: Sequence[Record]) -> list[Answer]:
            if any(r["x"] == 15.0 for r in records):  # the first call's 4th batch waits
                blocked.set()
                assert go.wait(30)
            return super().ask(records)

    be = Gated(max_batch=5)
    bb = BlackBox(be, budget=50, concurrency=1)
    first: list[object] = []
    th = threading.Thread(target=lambda: first.append(bb.query(recs(range(20))).n_paid))
    th.start()
    try:
        assert blocked.wait(30)  # 15 of the first call's 20 queries are paid, 5 are in flight
        assert bb.spent == 15
        second = bb.query(recs(range(100, 120)))  # 50 - 15 spent - 5 in flight = 30 left
        assert second.n_paid == 20
        with pytest.raises(BudgetError, match="only 10 of"):
            bb.query(recs(range(200, 215)))
    finally:
        go.set()
        th.join()
    assert first == [20] and bb.spent == be.paid == 40 and bb.remaining == 10


def test_a_lost_ctrl_c_stops_the_next_paid_batch_and_keeps_what_was_paid() -> None:
    # the CLI's SIGINT handler sets the flag before raising; if a finaliser swallows the raise,
    # the next batch raises it again, after the answers already paid are kept
    from fairprobe import _interrupt

    class Flagging(Counting):
        def ask(self, records: Sequence[Record]) -> list[Answer]:
            out = super().ask(records)
            _interrupt.REQUESTED.set()  # Ctrl-C during the first batch, its exception lost
            return out

    bb = BlackBox(Flagging(max_batch=5))
    try:
        with pytest.raises(_interrupt.Interrupted):
            bb.query(recs(range(1, 21)))
        assert bb.spent == 5  # the first batch was paid and counted, nothing after it
    finally:
        _interrupt.REQUESTED.clear()
    again = BlackBox(Counting()).query(recs([1, 2]))  # cleared: library runs are unaffected
    assert again.n_paid == 2
