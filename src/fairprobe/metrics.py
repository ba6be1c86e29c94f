"""The metric registry: every per-group rate and every fairness metric, one entry each.

A rate is a ratio of confusion-matrix cells (or the mean score); a fairness metric compares one
or more rates across groups by their difference or their ratio. Each consumer (the in-memory
:class:`~fairprobe.stats.frame.AuditFrame`, the counted frame of :mod:`fairprobe.scale`, the
monitor, the weighted rates, the CLI's ``--metric`` and the report's labels) reads these tables
rather than keeping its own, so adding a metric is adding entries here (see
``docs/architecture.md``, "How to add a metric").

The cells are named ``"<y_pred><y_true>"``: ``"11"`` true positives, ``"10"`` false positives,
``"01"`` false negatives, ``"00"`` true negatives (fairlearn's ``MetricFrame`` and Aequitas'
group metrics build every rate the same way, from these four counts).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # numpy is loaded where counts are: the CLI's --metric help must not load it
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "CELLS",
    "METRICS",
    "PATHS",
    "RATES",
    "Metric",
    "MetricPath",
    "Rate",
    "aliases",
    "choices",
    "help_text",
    "label_rate_counts",
    "metric_names",
    "register_metric",
    "register_rate",
    "resolve",
    "short_name",
    "unregister_metric",
]

#: The four cells of the confusion matrix, ``y_pred`` first.
CELLS = ("00", "01", "10", "11")


@dataclass(frozen=True)
class Rate:
    """A per-group rate ``sum(num cells) / sum(den cells)``.

    Attributes
    ----------
    name : str
        Canonical name (fairlearn's where it has one).
    needs : tuple of str
        Inputs it needs: ``("y_pred",)``, ``("y_pred", "y_true")`` or ``("scores",)``.
    num, den : tuple of str
        Numerator and denominator cells (empty for ``mean_score``).
    description : str
        The probability it estimates.
    short : str
        Column header of the terminal's by-group table.
    label : str
        Name in the report's prose.
    denominator : str
        What its denominator counts, for the reason a group is left out (empty: every row).
    """

    name: str
    needs: tuple[str, ...]
    num: tuple[str, ...]
    den: tuple[str, ...]
    description: str
    short: str
    label: str
    denominator: str = ""


@dataclass(frozen=True)
class Metric:
    """A fairness metric: ``rates`` compared across groups by ``kind``.

    Attributes
    ----------
    name : str
        Canonical name (the JSON key).
    rates : tuple of str
        The rates it compares (several: the largest of their gaps, as equalized odds).
    kind : {"difference", "ratio"}
        ``max - min`` with a simultaneous interval, or ``min / max`` with its log-scale interval.
    aliases : tuple of str
        Other accepted names (the CLI's short name first, then fairlearn's names).
    label : str
        Name in the report's prose (empty: the name with spaces).
    exclude : tuple of str
        Paths of :data:`PATHS` that cannot compute it although they have its inputs.
    """

    name: str
    rates: tuple[str, ...]
    kind: Literal["difference", "ratio"]
    aliases: tuple[str, ...] = field(default=())
    label: str = ""
    exclude: tuple[str, ...] = field(default=())

    @property
    def short(self) -> str:
        """The CLI's short name (the first alias; the name itself when it has none)."""
        return self.aliases[0] if self.aliases else self.name

    @property
    def needs(self) -> tuple[str, ...]:
        """Inputs it needs, the union of its rates' (``y_pred``, ``y_true``, ``scores``)."""
        return tuple(dict.fromkeys(n for r in self.rates for n in RATES[r].needs))

    @property
    def paths(self) -> tuple[str, ...]:
        """The paths of :data:`PATHS` that compute it: those given its inputs, rates and kind,
        less ``exclude``."""
        return tuple(p.name for p in PATHS.values() if p.accepts(self))


@dataclass(frozen=True)
class MetricPath:
    """One way fairprobe computes fairness metrics, and what it can compute.

    Attributes
    ----------
    name : str
        Its name in errors (``"audit --predictions"``, ``"sequential"``, ...).
    inputs : tuple of str
        The inputs it has: ``y_pred`` (decisions), ``y_true`` (labels), ``scores``.
    rates : tuple of str
        The only rates it can compare (empty: every rate).
    kinds : tuple of str
        The comparisons it makes (``difference``, ``ratio``).
    ratios : tuple of str, optional
        The only rates whose ratio it computes (``None``: those of ``rates``).
    """

    name: str
    inputs: tuple[str, ...]
    rates: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ("difference", "ratio")
    ratios: tuple[str, ...] | None = None

    def accepts(self, metric: Metric) -> bool:
        """Whether this path computes ``metric``."""
        rates = self.ratios if metric.kind == "ratio" and self.ratios is not None else self.rates
        return (set(metric.needs) <= set(self.inputs) and metric.kind in self.kinds
                and (not rates or set(metric.rates) <= set(rates))
                and self.name not in metric.exclude)


#: Every per-group rate, by canonical name.
RATES: dict[str, Rate] = {}
#: Every fairness metric, by canonical name.
METRICS: dict[str, Metric] = {}
#: Every path that computes fairness metrics, by name (:attr:`Metric.paths` reads it).
PATHS: dict[str, MetricPath] = {}

_ALL = CELLS
_LABELS = ("y_pred", "y_true")


def register_rate(rate: Rate) -> Rate:
    """Add ``rate`` to :data:`RATES` (every consumer reads it from there)."""
    RATES[rate.name] = rate
    return rate


def register_metric(metric: Metric) -> Metric:
    """Add ``metric`` to :data:`METRICS` after checking its rates are registered."""
    missing = [r for r in metric.rates if r not in RATES]
    if missing:
        raise ValueError(f"metric {metric.name!r} compares unregistered rate(s) {missing}")
    METRICS[metric.name] = metric
    return metric


def unregister_metric(name: str) -> None:
    """Remove a metric added by :func:`register_metric` (a test's toy metric)."""
    del METRICS[name]


def aliases() -> dict[str, str]:
    """Every accepted other name -> canonical metric name."""
    return {a: m.name for m in METRICS.values() for a in m.aliases}


def choices(path: str | None = None) -> list[str]:
    """Every accepted ``--metric`` value (short names first, then the other aliases and the
    canonical names), of every metric or of those ``path`` computes."""
    ms = [m for m in METRICS.values() if path is None or PATHS[path].accepts(m)]
    out = [m.short for m in ms]
    out += [a for m in ms for a in m.aliases[1:]]
    out += [m.name for m in ms]
    return list(dict.fromkeys(out))


def metric_names(path: str | None = None) -> list[str]:
    """Canonical names of every metric, or of those ``path`` computes."""
    return [m.name for m in METRICS.values() if path is None or PATHS[path].accepts(m)]


def help_text(path: str | None = None) -> str:
    """The ``--metric`` help's list: each metric's short name and what it compares."""
    return ", ".join(f"{m.short} ({m.label or m.name.replace('_', ' ')})" for m in METRICS.values()
                     if path is None or PATHS[path].accepts(m))


def short_name(name: str) -> str:
    """The short name of a metric given by any accepted name."""
    return resolve(name).short


def resolve(name: str, *, path: str | None = None, flag: str = "--metric") -> Metric:
    """The metric named ``name`` (canonical, alias or short name, case-insensitive).

    Raises
    ------
    InvalidParameterError
        An unknown name (the message lists every choice, in full), or a metric ``path`` cannot
        compute (the message names the paths that can).
    """
    from fairprobe.errors import InvalidParameterError

    key = str(name).strip().lower()
    canonical = key if key in METRICS else aliases().get(key)
    if canonical is None:
        raise InvalidParameterError(
            f"{flag} must be one of {', '.join(choices(path))}; got {name!r}.")
    metric = METRICS[canonical]
    if path is not None and not PATHS[path].accepts(metric):
        can = ", ".join(metric.paths) or "none"
        missing = [n for n in metric.needs if n not in PATHS[path].inputs]
        why = (f"it needs {'+'.join(missing)}" if missing else
               f"{path} does not compute the {metric.kind} of {'/'.join(metric.rates)}")
        raise InvalidParameterError(
            f"{flag} {name}: {path} cannot compute {metric.name} ({why}); the paths that can: "
            f"{can}. {path} takes {', '.join(choices(path))}.")
    return metric


def label_rate_counts(cells: Mapping[str, npt.NDArray[np.int64]]
                      ) -> dict[str, tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]]:
    """``(numerator, denominator)`` per group of every rate built from the four cells."""
    import numpy as np

    out = {}
    for r in RATES.values():
        if r.num and len(r.den) and set(r.den) <= set(CELLS) and "y_true" in r.needs:
            out[r.name] = (sum(cells[c] for c in r.num), sum(cells[c] for c in r.den))
    return {k: (np.asarray(n, dtype=np.int64), np.asarray(d, dtype=np.int64))
            for k, (n, d) in out.items()}


for _r in (
    Rate("selection_rate", ("y_pred",), ("10", "11"), _ALL, "P(pred=1)", "sel. rate",
         "positive-decision rate"),
    Rate("true_positive_rate", _LABELS, ("11",), ("01", "11"), "P(pred=1 | true=1)", "TPR",
         "true positive rate", "with y_true = 1"),
    Rate("false_positive_rate", _LABELS, ("10",), ("00", "10"), "P(pred=1 | true=0)", "FPR",
         "false positive rate", "with y_true = 0"),
    Rate("positive_predictive_value", _LABELS, ("11",), ("10", "11"), "P(true=1 | pred=1)",
         "PPV", "positive predictive value", "with y_pred = 1"),
    Rate("accuracy", _LABELS, ("00", "11"), _ALL, "P(pred=true)", "accuracy", "accuracy"),
    Rate("error_rate", _LABELS, ("01", "10"), _ALL, "P(pred!=true)", "error", "error rate"),
    Rate("false_negative_rate", _LABELS, ("01",), ("01", "11"), "P(pred=0 | true=1)", "FNR",
         "false negative rate", "with y_true = 1"),
    Rate("true_negative_rate", _LABELS, ("00",), ("00", "10"), "P(pred=0 | true=0)", "TNR",
         "true negative rate", "with y_true = 0"),
    Rate("negative_predictive_value", _LABELS, ("00",), ("00", "01"), "P(true=0 | pred=0)",
         "NPV", "negative predictive value", "with y_pred = 0"),
    Rate("false_omission_rate", _LABELS, ("01",), ("00", "01"), "P(true=1 | pred=0)", "FOR",
         "false omission rate", "with y_pred = 0"),
    Rate("mean_score", ("scores",), (), (), "E[score]", "mean score", "mean score"),
):
    register_rate(_r)

for _m in (
    Metric("demographic_parity_difference", ("selection_rate",), "difference",
           ("dp", "sp", "selection_rate_difference"), "demographic parity difference"),
    Metric("disparate_impact_ratio", ("selection_rate",), "ratio",
           ("di", "demographic_parity_ratio", "selection_rate_ratio"),
           "disparate impact (ratio of positive rates)"),
    Metric("equal_opportunity_difference", ("true_positive_rate",), "difference",
           ("eo", "tpr", "true_positive_rate_difference"), "equal opportunity difference"),
    Metric("equal_opportunity_ratio", ("true_positive_rate",), "ratio",
           ("eo-ratio", "true_positive_rate_ratio"), exclude=("plan",)),  # not modelled
    Metric("false_positive_rate_difference", ("false_positive_rate",), "difference", ("fpr",)),
    Metric("false_positive_rate_ratio", ("false_positive_rate",), "ratio", ("fpr-ratio",)),
    Metric("equalized_odds_difference", ("true_positive_rate", "false_positive_rate"),
           "difference", ("eodds", "equalized-odds"), "equalized odds difference",
           exclude=("discover",)),  # the subgroup search scans one rate
    Metric("equalized_odds_ratio", ("true_positive_rate", "false_positive_rate"), "ratio",
           ("eodds-ratio",)),
    Metric("predictive_parity_difference", ("positive_predictive_value",), "difference",
           ("ppv", "pp")),
    Metric("accuracy_difference", ("accuracy",), "difference",
           ("accuracy-gap", "acc", "accuracy_score_difference"), "accuracy difference"),
    Metric("error_rate_difference", ("error_rate",), "difference",
           ("error-rate", "zero_one_loss_difference")),
    Metric("false_negative_rate_difference", ("false_negative_rate",), "difference", ("fnr",)),
    Metric("true_negative_rate_difference", ("true_negative_rate",), "difference", ("tnr",)),
    Metric("negative_predictive_value_difference", ("negative_predictive_value",),
           "difference", ("npv",)),
    Metric("false_omission_rate_difference", ("false_omission_rate",), "difference", ("for",)),
    Metric("mean_score_difference", ("mean_score",), "difference", ("score-gap",)),
):
    register_metric(_m)

_SCORES = ("y_pred", "y_true", "scores")
for _p in (
    MetricPath("library", _SCORES),
    MetricPath("audit --predictions", _SCORES),
    MetricPath("audit", _LABELS),
    MetricPath("monitor", _SCORES, ratios=("selection_rate",)),
    MetricPath("sequential", _LABELS, ("selection_rate", "true_positive_rate"), ("difference",)),
    MetricPath("sequential (decision access)", ("y_pred",), ("selection_rate",),
               ("difference",)),
    MetricPath("discover", _LABELS,
               ("selection_rate", "true_positive_rate", "false_positive_rate"), ("difference",)),
    MetricPath("plan", _LABELS, ("selection_rate", "true_positive_rate")),
):
    PATHS[_p.name] = _p

# Each metric by a Python name, so that a module names a metric without spelling its string:
# ``_metrics.DP.name`` is the JSON key, ``_metrics.DP.short`` the ``--metric`` short name.
DP = METRICS["demographic_parity_difference"]
DI = METRICS["disparate_impact_ratio"]
EO = METRICS["equal_opportunity_difference"]
EO_RATIO = METRICS["equal_opportunity_ratio"]
FPR = METRICS["false_positive_rate_difference"]
FPR_RATIO = METRICS["false_positive_rate_ratio"]
EODDS = METRICS["equalized_odds_difference"]
EODDS_RATIO = METRICS["equalized_odds_ratio"]
PPV = METRICS["predictive_parity_difference"]
ACCURACY = METRICS["accuracy_difference"]
ERROR_RATE = METRICS["error_rate_difference"]
FNR = METRICS["false_negative_rate_difference"]
TNR = METRICS["true_negative_rate_difference"]
NPV = METRICS["negative_predictive_value_difference"]
FOR = METRICS["false_omission_rate_difference"]
SCORE_GAP = METRICS["mean_score_difference"]
