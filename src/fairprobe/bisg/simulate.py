r"""Populations drawn from the census tables, where the BISG proxy is exactly calibrated.

Each person gets a surname drawn uniformly from the census surname list, a race
:math:`R \sim P(r \mid s)` from that list and a ZCTA :math:`G \sim P(g \mid R)` from the census
ZCTA table, so that surname and place are independent given race: the assumption under which the
BISG posterior :math:`q_r(s, g) \propto P(r \mid s) P(g \mid r)` is the true
:math:`P(R = r \mid S = s, G = g)` (calibrated by construction).

Decisions: :math:`P(Y = 1 \mid R = r, G = g) = \sigma(\beta_0 + \beta_r + \beta_x x_g)`, with
:math:`x_g` a synthetic income index of the ZCTA (minus its standardised share of Black and
Hispanic residents plus fixed noise; seed 2010), so that with :math:`\beta_x \ne 0` decisions
depend on place beyond race, the usual case for credit. The true rate of race :math:`r` is exact:
:math:`\mu_r = \sum_g P(g \mid r)\, \sigma(\beta_0 + \beta_r + \beta_x x_g)`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import pandas as pd

from fairprobe.bisg.tables import RACES, geo_tables, race_given_surname

__all__ = ["Population", "draw_population", "income_index", "true_rates"]


def _sigmoid(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    return 1.0 / (1.0 + np.exp(-x))


def income_index() -> pd.Series:
    """The synthetic income index :math:`x_g` of every ZCTA (fixed: seed 2010)."""
    _, r_given_g = geo_tables("zcta")
    minority = (r_given_g["black"] + r_given_g["hispanic"]).to_numpy()
    z = (minority - minority.mean()) / minority.std()
    return pd.Series(-z + 0.5 * place_index().to_numpy(), index=r_given_g.index)


def place_index() -> pd.Series:
    """A standard normal index :math:`u_g` of every ZCTA drawn independently of its racial
    composition (seed 2010; the noise part of :func:`income_index`): decisions that depend on
    it depend on place, but make almost no gap between races."""
    _, r_given_g = geo_tables("zcta")
    return pd.Series(np.random.default_rng(2010).normal(0.0, 1.0, size=len(r_given_g)),
                     index=r_given_g.index)


@dataclass(frozen=True)
class Population:
    """A drawn population: the file an auditor would get (``frame``), plus the hidden race."""

    frame: pd.DataFrame
    race: npt.NDArray[np.str_]
    #: Each race's true approval rate (inside the planted slice, when one is planted).
    truth: dict[str, float]
    #: With a planted slice: each race's true rate outside it.
    truth_outside: dict[str, float] = field(default_factory=dict)


def true_rates(intercept: float, race_effect: Mapping[str, float], income_effect: float,
               place_effect: float = 0.0) -> dict[str, float]:
    r"""Exact :math:`\mu_r = \sum_g P(g \mid r)\, \sigma(\beta_0 + \beta_r + \beta_x x_g
    + \beta_u u_g)`."""
    g_given_r, _ = geo_tables("zcta")
    x = income_index().reindex(g_given_r.index).fillna(0.0).to_numpy()
    u = place_index().reindex(g_given_r.index).fillna(0.0).to_numpy()
    out = {}
    for r in RACES:
        p = g_given_r[r].to_numpy()
        lin = intercept + race_effect.get(r, 0.0) + income_effect * x + place_effect * u
        out[r] = float(np.sum(p * _sigmoid(lin)) / p.sum())
    return out


def draw_population(n: int, *, seed: int, intercept: float = 0.0,
                    race_effect: Mapping[str, float] | None = None,
                    income_effect: float = 0.8, place_effect: float = 0.0,
                    features: Mapping[str, Sequence[str]] | None = None,
                    planted: Mapping[str, str] | None = None) -> Population:
    """Draw ``n`` applicants (module docstring); ``frame`` has ``surname``, ``zip``, the place's
    income index ``zip_income`` (what an auditor could join from census income tables),
    ``approved`` (0/1), and the hidden ``race`` is returned beside it.

    ``place_effect`` adds :math:`\beta_u u_g` (:func:`place_index`) to every decision.
    ``features`` adds one column per name, its level drawn uniformly from the values given,
    independently of everything else (a second seeded stream: the other columns are those of
    the same seed without features); with ``planted`` (``{feature: level}``), ``race_effect``
    acts only inside that slice (rows with every planted level), and ``truth`` holds the rates
    inside it, ``truth_outside`` those outside. The features are independent of race given
    surname and place, so the proxy stays calibrated within every slice of them.
    """
    rng = np.random.default_rng(seed)
    eff = dict(race_effect or {})
    sur = race_given_surname()
    g_given_r, _ = geo_tables("zcta")
    s_idx = rng.integers(0, len(sur), size=n)
    p = sur.to_numpy()[s_idx]
    p = p / p.sum(axis=1, keepdims=True)
    race_i = (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
    race_i = np.minimum(race_i, len(RACES) - 1)
    zips = np.empty(n, dtype=object)
    gi = np.empty(n, dtype=np.int64)
    cum = np.cumsum(g_given_r.to_numpy(), axis=0)
    cum = cum / cum[-1]
    for r in range(len(RACES)):  # six inverse-CDF draws, each vectorised over its rows
        rows = np.flatnonzero(race_i == r)
        gi[rows] = np.minimum(np.searchsorted(cum[:, r], rng.random(rows.size), side="right"),
                              len(g_given_r) - 1)
    zips[:] = g_given_r.index.to_numpy()[gi]
    x = income_index().reindex(g_given_r.index).fillna(0.0).to_numpy()[gi]
    u = place_index().reindex(g_given_r.index).fillna(0.0).to_numpy()[gi]
    frng = np.random.default_rng([seed, 1])
    cols = {f: np.asarray(v, dtype=object)[frng.integers(0, len(v), size=n)]
            for f, v in (features or {}).items()}
    inside = np.ones(n, dtype=bool)
    for f, level in (planted or {}).items():
        inside &= cols[f] == level
    beta_r = np.where(inside, np.array([eff.get(r, 0.0) for r in RACES])[race_i], 0.0)
    y = (rng.random(n) < _sigmoid(intercept + beta_r + income_effect * x
                                  + place_effect * u)).astype(np.int64)
    frame = pd.DataFrame({"surname": sur.index.to_numpy()[s_idx], "zip": zips,
                          "zip_income": np.round(x, 3), **cols, "approved": y})
    return Population(frame=frame, race=np.asarray(RACES)[race_i],
                      truth=true_rates(intercept, eff, income_effect, place_effect),
                      truth_outside=(true_rates(intercept, {}, income_effect, place_effect)
                                     if planted else {}))


#: The designs of ``experiments/bisg/coverage.py`` and the tests: decisions that depend on
#: place beyond race (the usual case), on race only, a race-neutral rule whose gap comes from
#: place alone, and a gap large enough for the bounds to decide.
DESIGNS: dict[str, dict[str, object]] = {
    "place": {"intercept": 0.0, "race_effect": {"black": -0.5, "hispanic": -0.3},
              "income_effect": 0.8},
    "race-only": {"intercept": 0.0, "race_effect": {"black": -0.8, "hispanic": -0.5},
                  "income_effect": 0.0},
    "place-only": {"intercept": 0.0, "race_effect": {}, "income_effect": 0.8},
    "large-gap": {"intercept": 0.5, "race_effect": {"black": -2.5, "hispanic": -2.5},
                  "income_effect": 0.8},
}


def evaluate_seed(design: str, seed: int, n: int, *, groups: tuple[str, ...] = ("black",),
                  tolerance: float = 0.05, confidence_level: float = 0.95,
                  birdie: bool = True, strata: bool = False) -> list[dict[str, object]]:
    """One simulated audit: draw, compute BISG through the shipped path, audit, compare with the
    truth. One record per compared group (against ``white``). ``strata``: the bounds' cells
    are crossed with deciles of ``zip_income`` (``--proxy-strata zip_income``)."""
    from fairprobe.bisg.estimate import proxy_audit
    from fairprobe.bisg.job import strata_codes
    from fairprobe.bisg.tables import bisg_probabilities

    spec = DESIGNS[design]
    pop = draw_population(n, seed=seed, **spec)  # type: ignore[arg-type]
    pp = bisg_probabilities(pop.frame["surname"], pop.frame["zip"])
    y = pop.frame["approved"].to_numpy(dtype=np.float64)
    res = proxy_audit(y[pp.used], pp.q[pp.used], groups=groups, reference="white",
                      tolerance=tolerance, confidence_level=confidence_level, seed=seed,
                      birdie=birdie,
                      strata=(strata_codes(pop.frame, ["zip_income"])[pp.used] if strata
                              else None))
    out: list[dict[str, object]] = []
    for c in res.comparisons:
        truth = pop.truth[c.group] - pop.truth["white"]
        f, w = c.finding, c.weighted
        rec: dict[str, object] = {
            "design": design, "seed": seed, "n": n, "group": c.group, "truth": truth,
            "low": f.low, "high": f.high, "region": tuple(c.bounds["region"]),
            "verdict": f.verdict, "covered": bool(f.low <= truth <= f.high),
            "region_covers": bool(c.bounds["region"][0] - 1e-9 <= truth
                                  <= c.bounds["region"][1] + 1e-9),
            "weighted": w.estimate, "weighted_covered": bool(w.low <= truth <= w.high),
        }
        if c.birdie is not None:
            rec["birdie"] = c.birdie.estimate
            rec["birdie_covered"] = bool(c.birdie.low <= truth <= c.birdie.high)
        out.append(rec)
    return out
