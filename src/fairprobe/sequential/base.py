"""Pluggable sequential tests: base class, per-step auditors and the registry.

A :class:`SequentialTest` is a deterministic strategy (all randomness lives in the
query order). It offers two views of the same procedure:

- :meth:`SequentialTest.stepper` returns a :class:`Stepper`, the per-step object of a live audit:
  ``update(in_group_a, value)`` costs O(1) (running sums) and says when to stop;
- :meth:`SequentialTest.run_orders` evaluates many query orders at once, vectorised with numpy,
  for experiments. Both give identical stopping times and outcomes (tested).

Observations are 0/1 decisions, scores in [0, 1] or logits, depending on the access regime.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, TypedDict, TypeVar

import numpy as np
import numpy.typing as npt

from fairprobe._registry import ClassRegistry
from fairprobe._validation import check_choice, check_int, check_real
from fairprobe.errors import DataError, InvalidParameterError
from fairprobe.sequential.boundaries import Boundaries, check_error_rates

__all__ = [
    "ACCESS_REGIMES",
    "ALIASES",
    "COMPLIANT",
    "DEFAULT_TEST",
    "INCONCLUSIVE",
    "OUTCOMES",
    "VIOLATION",
    "OrdersOutcome",
    "SequentialTest",
    "Stepper",
    "TestChoice",
    "TestSettings",
    "available_tests",
    "choose_test",
    "first_crossing",
    "get_test",
    "register_test",
]

ACCESS_REGIMES: tuple[str, ...] = ("decisions", "scores", "logits")
OUTCOMES: tuple[str, ...] = ("violation", "compliant", "inconclusive")
VIOLATION, COMPLIANT, INCONCLUSIVE = 0, 1, 2

BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class OrdersOutcome:
    """Stopping time (queries used) and outcome code per query order."""

    queries: IntArray
    codes: npt.NDArray[np.int8]

    @classmethod
    def undecided(cls, orders: int, budget: int) -> OrdersOutcome:
        """Every order inconclusive at the budget: the start of a test that settles orders."""
        return cls(np.full(orders, budget, dtype=np.int64), np.full(orders, INCONCLUSIVE, np.int8))

    def settle(self, violation: BoolArray, compliant: BoolArray, queries: IntArray) -> None:
        """Stop the orders in ``violation`` or ``compliant`` (disjoint masks) after ``queries``."""
        stop = violation | compliant
        self.queries[stop] = queries[stop]
        self.codes[violation] = VIOLATION
        self.codes[compliant] = COMPLIANT


def first_crossing(
    violation: BoolArray, compliant: BoolArray, budget: int, when: IntArray | None = None
) -> OrdersOutcome:
    """The outcome of each order (row) at the first step where a boundary is crossed.

    ``violation`` / ``compliant`` have shape (orders, steps): whether the violation or the
    compliance boundary is crossed at each step; a violation wins a step where both are.
    ``when[order, step]`` is the number of queries used by that step (default ``step + 1``);
    an order that crosses neither is inconclusive after ``budget`` queries.
    """
    stop = violation | compliant
    has = stop.any(axis=1)
    k = np.argmax(stop, axis=1)
    rows = np.arange(stop.shape[0])
    used = k + 1 if when is None else when[rows, k]
    queries = np.where(has, used, budget).astype(np.int64)
    codes = np.where(has, np.where(violation[rows, k], VIOLATION, COMPLIANT), INCONCLUSIVE)
    return OrdersOutcome(queries, codes.astype(np.int8))


class Stepper(ABC):
    """Per-step state of one audit. ``update`` costs O(1) and never looks at the history."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.n = 0
        self.outcome: str | None = None

    @property
    def done(self) -> bool:
        return self.outcome is not None

    @property
    @abstractmethod
    def statistic_upper(self) -> float:
        """Running evidence for a violation, compared with the upper boundary."""

    @property
    @abstractmethod
    def statistic_lower(self) -> float:
        """Running evidence for compliance, compared with the lower boundary."""

    @abstractmethod
    def _observe(self, in_group_a: bool, value: float) -> str | None:
        """Fold one observation in; return an outcome if the test stops here."""

    def update(self, in_group_a: bool, value: float) -> str | None:
        """Fold in one query answer; return the outcome once the audit stops, else ``None``."""
        if self.done:
            raise InvalidParameterError("This audit has already stopped; start a new stepper.")
        self.n += 1
        out = self._observe(bool(in_group_a), float(value))
        if out is None and self.n >= self.budget:
            out = self._at_budget()
        self.outcome = out
        return out

    def _at_budget(self) -> str:
        return "inconclusive"

    def finish(self) -> str:
        """Close an audit that ran out of answers before its budget (e.g. unparsed answers).

        The fixed-sample test decides on what it has; the sequential tests are inconclusive.
        """
        if self.outcome is None:
            self.outcome = self._at_budget()
        return self.outcome


class SequentialTest(ABC):
    """A tolerance test of H0 ``|g| <= delta`` (compliant) against H1 ``|g| > delta``.

    Parameters
    ----------
    tolerance : float in (0, 1)
        ``delta``, in the units of the audited observable (rates for decisions, mean scores for
        scores, mean logits for logits).
    access : {"decisions", "scores", "logits"}
    alpha, beta : float
        Nominal type-I (false violation) and type-II (false compliance) error rates.
    """

    name: ClassVar[str] = "base"
    #: Whether ``alpha`` holds at any stopping time (anytime-valid) or only operationally.
    anytime_valid: ClassVar[bool] = False
    #: Query order: ``"random"`` (a random order of the whole pool, the paper's protocol) or
    #: ``"alternate"`` (groups a and b alternately, each in random order).
    sampling: ClassVar[str] = "random"
    #: True when logit access audits ``sigmoid(logit)``: the probability-scale gap, the same
    #: metric (and tolerance units) as score access; False when it audits the logits themselves
    sigmoid_logits: ClassVar[bool] = False

    def __init__(
        self,
        tolerance: float,
        access: str = "decisions",
        alpha: float = 0.05,
        beta: float = 0.2,
    ) -> None:
        owner = f"{type(self).__name__}"
        self.tolerance = check_real(tolerance, "tolerance", owner, lo=0.0, hi=1.0, closed="neither")
        self.access = check_choice(access, "access", owner, ACCESS_REGIMES)
        self.alpha, self.beta = check_error_rates(alpha, beta, owner)

    # ----------------------------------------------------------------- strategy interface
    @property
    @abstractmethod
    def boundaries(self) -> Boundaries:
        """Thresholds of :attr:`Stepper.statistic_upper` / ``statistic_lower``."""

    @abstractmethod
    def stepper(self, budget: int) -> Stepper:
        """A fresh per-step auditor that stops at the latest after ``budget`` queries."""

    @abstractmethod
    def _run_orders(self, in_a: BoolArray, x: FloatArray) -> OrdersOutcome:
        """Vectorised evaluation; ``in_a`` and ``x`` have shape (orders, budget)."""

    def params(self) -> dict[str, Any]:
        return {
            "test": self.name,
            "tolerance": self.tolerance,
            "access": self.access,
            "alpha": self.alpha,
            "beta": self.beta,
            "anytime_valid": self.anytime_valid,
        }

    def for_pool(self, in_a: BoolArray, x: FloatArray) -> SequentialTest:
        """This test set up for a finite pool (group sizes, range); the default ignores it."""
        return self

    # ------------------------------------------------------------------------ shared code
    def check_values(self, x: npt.ArrayLike) -> FloatArray:
        """Check that observations fit the access regime; return them as floats."""
        arr = np.asarray(x, dtype=float)
        if np.isnan(arr).any() or np.isinf(arr).any():
            raise DataError(f"The {self.access} contain NaN or infinite values; drop those rows.")
        if self.access == "decisions" and not np.isin(arr, (0.0, 1.0)).all():
            raise DataError("Decisions must be 0 or 1; use access='scores' for probabilities.")
        if self.access == "scores" and ((arr < 0).any() or (arr > 1).any()):
            lo, hi = float(arr.min()), float(arr.max())
            raise DataError(
                f"Scores must lie in [0, 1]; got values in [{lo:g}, {hi:g}]. "
                "Pass logits with access='logits'."
            )
        return arr

    def run_orders(self, in_a: npt.ArrayLike, x: npt.ArrayLike) -> OrdersOutcome:
        """Run the test on each row of ``in_a`` / ``x`` (shape (orders, budget)), vectorised."""
        g = np.atleast_2d(np.asarray(in_a, dtype=bool))
        v = np.atleast_2d(self.check_values(x))
        if g.shape != v.shape:
            raise DataError(f"Group mask and values differ in shape: {g.shape} vs {v.shape}.")
        if g.shape[1] < 1:
            raise InvalidParameterError("The budget must allow at least one query.")
        return self._run_orders(g, v)

    def run_path(self, in_a: npt.ArrayLike, x: npt.ArrayLike) -> dict[str, Any]:
        """Run one order step by step and return the whole path (for display and JSON)."""
        g = np.asarray(in_a, dtype=bool).ravel()
        v = self.check_values(x).ravel()
        st = self.stepper(len(v))
        up: list[float] = []
        low: list[float] = []
        for gi, vi in zip(g.tolist(), v.tolist(), strict=True):
            st.update(gi, vi)
            up.append(st.statistic_upper)
            low.append(st.statistic_lower)
            if st.done:
                break
        return {
            "outcome": st.outcome,
            "queries": st.n,
            "statistic_upper": up,
            "statistic_lower": low,
        }


_REGISTRY: ClassRegistry[SequentialTest] = ClassRegistry("test", "get_test")
T = TypeVar("T", bound=type[SequentialTest])


def register_test(name: str) -> Callable[[T], T]:
    """Class decorator adding a test to the registry under ``name``."""

    def deco(cls: T) -> T:
        cls.name = name
        _REGISTRY.register(cls, name)
        return cls

    return deco


#: The test run when none is named: anytime-valid, see :mod:`fairprobe.sequential.mixture`.
DEFAULT_TEST = "mixture"
#: Former names still accepted: ``glr`` is the paper's GLR with Wald boundaries.
ALIASES: dict[str, str] = {"glr": "glr-wald", "default": DEFAULT_TEST}


def available_tests() -> tuple[str, ...]:
    """Names of the registered tests (the default first)."""
    names = list(_REGISTRY)
    return tuple(sorted(names, key=lambda n: n != DEFAULT_TEST))


def get_test(name: str | None = None, **kwargs: Any) -> SequentialTest:
    """Instantiate the registered test ``name`` (case-insensitive; default: the default test)."""
    key = DEFAULT_TEST if name is None else str(name).strip().lower()
    key = ALIASES.get(key, key)
    return _REGISTRY.make(key, **kwargs)


class TestSettings(TypedDict, total=False):
    """A test's settings, as keywords passed on to :func:`choose_test` (which holds the defaults).

    Attributes
    ----------
    tolerance : float
        ``delta``, in the units of the audited observable (default 0.1).
    access : {"decisions", "scores", "logits"}
        The audited observable (default ``"decisions"``).
    alpha, beta : float
        Nominal type-I and type-II error rates (default 0.05 and 0.2).
    """

    tolerance: float
    access: str
    alpha: float
    beta: float


class TestChoice(TestSettings, total=False):
    """The test an audit runs and its settings, as keywords: what
    :func:`~fairprobe.sequential.pool.run_pool` and :func:`~fairprobe.sequential.runner.audit_live`
    pass on to :func:`choose_test`.

    Attributes
    ----------
    test : str or SequentialTest, optional
        A registered name (default: the default test, ``mixture``) or a ready test, which is
        used as it is (the settings are then ignored).
    test_options : dict, optional
        Further keywords of the test's constructor (e.g. ``min_per_group`` of ``glr-wald``).
    """

    test: str | SequentialTest | None
    test_options: dict[str, Any] | None


def choose_test(
    test: str | SequentialTest | None = None,
    *,
    tolerance: float = 0.1,
    access: str = "decisions",
    alpha: float = 0.05,
    beta: float = 0.2,
    test_options: dict[str, Any] | None = None,
) -> SequentialTest:
    """``test`` itself when it is a :class:`SequentialTest`, else the registered test ``test``
    built with these settings (see :class:`TestChoice`)."""
    if isinstance(test, SequentialTest):
        return test
    return get_test(
        test, tolerance=tolerance, access=access, alpha=alpha, beta=beta, **(test_options or {})
    )


def check_budget(budget: Any, owner: str) -> int:
    """A query budget is an int >= 1."""
    return check_int(budget, "budget", owner, lo=1)
