"""The options of a two-source audit, checked once: what the audit asks and how it splits the
budget (:class:`TwoSourceOptions`), and the large regime's extras (:class:`LargeRegimeOptions`).

:func:`~fairprobe.twosource.run_two_source_audit`, :func:`~fairprobe.twosource.run_large_regime_audit`,
:func:`~fairprobe.twosource.run_budgeted_audit` and ``fairprobe twosource`` share them; the
functions also take their fields as flat keywords (the compatibility form), which build the
objects. Every check runs in ``__post_init__``, before the pool is read or a query is paid.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from fairprobe._validation import check_choice, check_int, check_real
from fairprobe.errors import InvalidParameterError
from fairprobe.options import with_fields

__all__ = ["DEFAULT_DETECTORS", "LargeRegimeOptions", "TwoSourceOptions", "audit_options"]

#: The detectors an audit decides with unless told otherwise.
DEFAULT_DETECTORS = ("conditional", "consistency", "di")


def _names(value: Sequence[str] | None) -> tuple[str, ...] | None:
    return None if value is None else tuple(value)


@dataclass(frozen=True)
class TwoSourceOptions:
    r"""What a two-source audit asks, and how it spends the budget between A and the checks.

    Attributes
    ----------
    group_column, privileged : str
        The protected attribute (sent to A, ``--group-col``) and its privileged value (the DI's
        denominator group, ``--privileged``).
    api_columns, ui_columns : sequence of str, optional
        Fields sent to A and to B (``--api-cols``, ``--ui-cols``; default: the platform
        server's features).
    alpha : float in (0, 1)
        Family-wise false-alarm level of the detectors (Bonferroni over ``detectors``).
    threshold : float > 0
        The 80% rule's threshold on the DI through A.
    null : {"agree", "accuracy"}
        Which measured proxy accuracy sets the honest inconsistency rate ``1 - p`` of Lemma 2
        (see :func:`~fairprobe.twosource.run_two_source_audit`).
    detectors : sequence of {"consistency", "conditional", "di"}
        Which fairwashing detectors decide; at least one, none twice.
    seed : int >= 0
        Seeds the query sample and the proxy's draws.
    inference : Proxy, optional
        The rule B uses to infer the group (default: the proxy itself).
    proxy_accuracy : ProxyAccuracy, optional
        The proxy's accuracy measured beforehand (skips measuring it on the pool again).
    beta : float in [0, 1]
        Share of the budget spent on A only (ignored when ``t_fraud`` is given).
    t_fraud : int >= 0, optional
        Number of checks directly (``--checks``; at most half the budget, checked by the audit).
    p_phi : float in [0, 1], optional
        The honest consistency rate of the test, overriding ``null``.
    batch_size : int >= 1
        Checks per batch between two looks of the early stop.
    early_stop : bool
        Stop once the consistency test is decided.
    progress : bool
        Show a progress bar over the checks.
    owner : str
        The function named in an error message.
    """

    group_column: str = "sex"
    privileged: str = "Male"
    api_columns: Sequence[str] | None = None
    ui_columns: Sequence[str] | None = None
    alpha: float = 0.05
    threshold: float = 0.8
    null: str = "agree"
    detectors: Sequence[str] = DEFAULT_DETECTORS
    seed: int = 0
    inference: Any = None
    proxy_accuracy: Any = None
    beta: float = 0.5
    t_fraud: int | None = None
    p_phi: float | None = None
    batch_size: int = 25
    early_stop: bool = True
    progress: bool = False
    owner: str = field(default="run_two_source_audit", compare=False, repr=False)

    def __post_init__(self) -> None:
        from fairprobe.twosource.detectors import DETECTORS

        owner = self.owner
        set_ = object.__setattr__
        set_(
            self, "alpha", check_real(self.alpha, "alpha", owner, lo=0.0, hi=1.0, closed="neither")
        )
        set_(
            self,
            "threshold",
            check_real(self.threshold, "threshold", owner, lo=0.0, closed="neither"),
        )
        set_(self, "batch_size", check_int(self.batch_size, "batch_size", owner, lo=1))
        set_(self, "seed", check_int(self.seed, "seed", owner, lo=0))
        dets = tuple(self.detectors)
        if not dets:
            raise InvalidParameterError(
                f"The 'detectors' parameter of {owner} names no detector: an audit without one "
                f"cannot see fairwashing (it would report a fairwashed platform as fair). Give at "
                f"least one of {', '.join(DETECTORS)}."
            )
        for d in dets:
            check_choice(d, "detectors", owner, list(DETECTORS))
        if len(set(dets)) != len(dets):
            raise InvalidParameterError(f"The 'detectors' parameter of {owner} lists one twice.")
        set_(self, "detectors", dets)
        check_choice(self.null, "null", owner, ("agree", "accuracy"))
        set_(self, "beta", check_real(self.beta, "beta", owner, lo=0.0, hi=1.0))
        if self.t_fraud is not None:
            set_(self, "t_fraud", check_int(self.t_fraud, "t_fraud", owner, lo=0))
        if self.p_phi is not None:
            set_(self, "p_phi", check_real(self.p_phi, "p_phi", owner, lo=0.0, hi=1.0))
        set_(self, "api_columns", _names(self.api_columns))
        set_(self, "ui_columns", _names(self.ui_columns))

    @property
    def alpha_each(self) -> float:
        """The level of each detector: ``alpha`` over the number of detectors (Bonferroni)."""
        return self.alpha / len(self.detectors)


@dataclass(frozen=True)
class LargeRegimeOptions:
    r"""The large regime's extras (:func:`~fairprobe.twosource.run_large_regime_audit`).

    Attributes
    ----------
    n_checks : int, optional
        Checks of the fixed split (default ``budget // 2``); ignored when ``policy`` is given.
    policy : BudgetPolicy, optional
        :class:`~fairprobe.twosource.bandit.FixedSplit` (default) or
        :class:`~fairprobe.twosource.bandit.ThompsonSplit`.
    b_groups : {"checks", "known"}
        Which B records the correction treats as validated (``--b-groups``).
    confusion : (float, float), optional
        Given per-group accuracies :math:`P(\hat g = g \mid g)` (unprivileged, privileged).
    confusion_sizes : (int, int), optional
        Records each of ``confusion`` was measured on.
    """

    n_checks: int | None = None
    policy: Any = None
    b_groups: str = "checks"
    confusion: tuple[float, float] | None = None
    confusion_sizes: tuple[int, int] | None = None
    owner: str = field(default="run_large_regime_audit", compare=False, repr=False)

    def __post_init__(self) -> None:
        from fairprobe.twosource.large import B_GROUPS

        check_choice(self.b_groups, "b_groups", self.owner, list(B_GROUPS))
        if self.n_checks is not None:
            object.__setattr__(
                self, "n_checks", check_int(self.n_checks, "n_checks", self.owner, lo=1)
            )


_AUDIT_FIELDS = frozenset(f.name for f in fields(TwoSourceOptions)) - {"owner"}
_LARGE_FIELDS = frozenset(f.name for f in fields(LargeRegimeOptions)) - {"owner"}


def audit_options(
    options: TwoSourceOptions | None,
    flat: Mapping[str, Any],
    owner: str,
    large: LargeRegimeOptions | None = None,
    *,
    with_large: bool = False,
) -> tuple[TwoSourceOptions, LargeRegimeOptions]:
    """The options objects of a call: ``options`` / ``large`` (or the defaults) with the flat
    keywords of the compatibility form put in; an unknown keyword is a :class:`TypeError`."""
    allowed = _AUDIT_FIELDS | (_LARGE_FIELDS if with_large else frozenset())
    unknown = sorted(set(flat) - allowed)
    if unknown:
        raise TypeError(f"{owner}() got an unexpected keyword argument {unknown[0]!r}")
    a = {k: v for k, v in flat.items() if k in _AUDIT_FIELDS}
    b = {k: v for k, v in flat.items() if k in _LARGE_FIELDS and with_large}
    if options is None:
        a.setdefault("owner", owner)
    opts = with_fields(options, TwoSourceOptions, a)
    if large is None:
        b.setdefault("owner", owner)
    return opts, with_fields(large, LargeRegimeOptions, b)
