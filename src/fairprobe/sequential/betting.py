"""Anytime-valid tolerance test by betting (beyond the paper).

Chugg, Cortes-Gomez, Wilder, Ramdas and Lee, *Auditing Fairness by Betting* (NeurIPS 2023), test
``mu_a = mu_b`` by letting a gambler bet on the difference of paired observations; under the null
its wealth is a non-negative (super)martingale and, by Ville's inequality, it ever reaches
``1 / alpha`` with probability at most ``alpha`` — whatever the stopping rule. Here the null is the
*tolerance* ``|Delta| <= delta`` (``Delta = mu_a - mu_b``), so four gamblers bet on each pair
``d = x_a - x_b`` (observations in [0, 1]):

==========  =====================  ==============================================
wealth      payoff ``y``           super-martingale when
==========  =====================  ==============================================
``V+``      ``d - delta``          ``Delta <= delta``
``V-``      ``-d - delta``         ``Delta >= -delta``
``C+``      ``delta - d``          ``Delta >= delta``
``C-``      ``delta + d``          ``Delta <= -delta``
==========  =====================  ==============================================

Each wealth is ``prod (1 + lambda_t y_t)`` with a predictable bet ``lambda_t in [0, 1/2] /
(1 + delta)`` from online Newton steps (ONS, as in Chugg et al., Algorithm 1), so it stays positive.

- **violation** when ``(V+ + V-) / 2 >= 1 / alpha``: under H0 both are super-martingales, hence
  their mean; ``P_H0(ever) <= alpha``.
- **compliant** once ``C+`` *and* ``C-`` have each reached ``1 / beta``: under a violation one of
  them is a super-martingale, so ``P_H1(declare compliant ever) <= beta``.
- **inconclusive** at the budget.

Both error rates hold at any stopping time and for any budget; the price is more queries than the
GLR test. Observations are paired in arrival order (the k-th query of group a with the k-th of
group b; a random order of an i.i.d. pool gives i.i.d. pairs), so the surplus of the larger group
is not used. Decisions and scores are used as they are; logits are mapped to ``sigmoid(z)`` (the
test needs bounded observations), which makes logit access equivalent to score access here.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np
import numpy.typing as npt

from fairprobe.sequential.base import (
    OrdersOutcome,
    SequentialTest,
    Stepper,
    check_budget,
    register_test,
)
from fairprobe.sequential.boundaries import Boundaries

__all__ = ["BettingTest"]

FloatArray = npt.NDArray[np.float64]
_ONS = 2.0 / (2.0 - math.log(3.0))
_LAM_MAX = 0.5
_LOG2 = math.log(2.0)


def _bounded(access: str, x: FloatArray) -> FloatArray:
    if access == "logits":
        out: FloatArray = 1.0 / (1.0 + np.exp(-x))
        return out
    return x


class _Gambler:
    """One ONS bettor: O(1) state (bet, curvature sum, log-wealth)."""

    __slots__ = ("lam", "acc", "logw", "best")

    def __init__(self) -> None:
        self.lam = 0.0
        self.acc = 1.0
        self.logw = 0.0
        self.best = 0.0

    def bet(self, z: float) -> None:
        self.logw += math.log1p(self.lam * z)
        if self.logw > self.best:
            self.best = self.logw
        grad = z / (1.0 + self.lam * z)
        self.acc += grad * grad
        self.lam = min(_LAM_MAX, max(0.0, self.lam + _ONS * grad / self.acc))


class _BettingStepper(Stepper):
    def __init__(self, test: BettingTest, budget: int) -> None:
        super().__init__(budget)
        self.t = test
        self.qa: deque[float] = deque()
        self.qb: deque[float] = deque()
        self.vp, self.vm, self.cp, self.cm = _Gambler(), _Gambler(), _Gambler(), _Gambler()
        self.log_inv_alpha = math.log(1.0 / test.alpha)
        self.log_inv_beta = math.log(1.0 / test.beta)
        self.pairs = 0

    @property
    def statistic_upper(self) -> float:
        hi = max(self.vp.logw, self.vm.logw)
        lo = min(self.vp.logw, self.vm.logw)
        return hi + math.log1p(math.exp(lo - hi)) - _LOG2

    @property
    def statistic_lower(self) -> float:
        return -min(self.cp.best, self.cm.best)

    def _observe(self, in_group_a: bool, value: float) -> str | None:
        x = 1.0 / (1.0 + math.exp(-value)) if self.t.access == "logits" else value
        if in_group_a:
            if not self.qb:
                self.qa.append(x)
                return None
            xa, xb = x, self.qb.popleft()
        else:
            if not self.qa:
                self.qb.append(x)
                return None
            xa, xb = self.qa.popleft(), x
        self.pairs += 1
        d = xa - xb
        delta = self.t.tolerance
        scale = 1.0 + delta
        self.vp.bet((d - delta) / scale)
        self.vm.bet((-d - delta) / scale)
        self.cp.bet((delta - d) / scale)
        self.cm.bet((delta + d) / scale)
        if self.statistic_upper >= self.log_inv_alpha:
            return "violation"
        if min(self.cp.best, self.cm.best) >= self.log_inv_beta:
            return "compliant"
        return None


@register_test("betting")
class BettingTest(SequentialTest):
    """Anytime-valid tolerance test by betting (see the module docstring).

    ``alpha`` bounds the probability of ever declaring a violation when ``|g| <= delta``, and
    ``beta`` that of ever declaring compliance when ``|g| > delta`` (strictly: ``>= delta``), at
    any stopping time. Statistics: ``statistic_upper = log((V+ + V-) / 2)`` against
    ``log(1 / alpha)``; ``statistic_lower = -min(max_t log C+, max_t log C-)`` against
    ``log(beta)``.
    """

    sigmoid_logits = True

    anytime_valid = True

    @property
    def boundaries(self) -> Boundaries:
        return Boundaries(math.log(1.0 / self.alpha), math.log(self.beta))

    def stepper(self, budget: int) -> Stepper:
        return _BettingStepper(self, check_budget(budget, "BettingTest.stepper"))

    def _run_orders(self, in_a: npt.NDArray[np.bool_], x: FloatArray) -> OrdersOutcome:
        r, t = x.shape
        v = _bounded(self.access, x)
        n_a = in_a.sum(axis=1)
        n_pairs = np.minimum(n_a, t - n_a)
        kmax = int(n_pairs.max()) if r else 0
        out = OrdersOutcome.undecided(r, t)
        if kmax == 0:
            return out
        pos_a = np.argsort(~in_a, axis=1, kind="stable")[:, :kmax]
        pos_b = np.argsort(in_a, axis=1, kind="stable")[:, :kmax]
        d_all = np.take_along_axis(v, pos_a, 1) - np.take_along_axis(v, pos_b, 1)
        when = np.maximum(pos_a, pos_b) + 1
        delta = self.tolerance
        scale = 1.0 + delta
        # the four gamblers stacked: rows V+, V-, C+, C-
        lam = np.zeros((4, r))
        acc = np.ones((4, r))
        logw = np.zeros((4, r))
        best = np.zeros((2, r))
        sgn = np.array([1.0, -1.0, -1.0, 1.0])[:, None]
        off = np.array([-delta, -delta, delta, delta])[:, None]
        la, lb = math.log(1.0 / self.alpha), math.log(1.0 / self.beta)
        active = np.ones(r, dtype=bool)
        for k in range(kmax):
            live = active & (k < n_pairs)
            if not live.any():
                break
            z = (sgn * d_all[:, k] + off) / scale
            step = np.log1p(lam * z)
            grad = z / (1.0 + lam * z)
            logw = np.where(live, logw + step, logw)
            acc_new = acc + grad * grad
            lam = np.where(live, np.clip(lam + _ONS * grad / acc_new, 0.0, _LAM_MAX), lam)
            acc = np.where(live, acc_new, acc)
            best = np.maximum(best, logw[2:])
            up = np.logaddexp(logw[0], logw[1]) - _LOG2
            viol = live & (up >= la)
            comp = live & ~viol & (best.min(axis=0) >= lb)
            stop = viol | comp
            if stop.any():
                out.settle(viol, comp, when[:, k])
                active &= ~stop
        return out
