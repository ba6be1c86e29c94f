"""The options of a sequential audit (``fairprobe sequential``): what it asks and with which
test (:class:`SequentialOptions`), and :func:`sequential_options`, which sorts the command's
flags (by their Python names) into it and the shared objects of :mod:`fairprobe.options`.

:func:`~fairprobe.sequential.job.sequential_job` takes the objects, or the flags as flat
keywords (the compatibility form, sorted here). The one check made before the mode is known
runs in ``__post_init__`` (``--min-per-group`` needs a test that reads it); every other value is
checked by the test or the run that reads it, whose messages name the parameter.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from fairprobe.errors import ConfigError
from fairprobe.options import AccessOptions, DataSource, split_flat

__all__ = ["DEFAULT_BUDGET", "SequentialOptions", "sequential_options"]

#: The queries of an audit when ``--budget`` is not given.
DEFAULT_BUDGET = 4000


@dataclass(frozen=True)
class SequentialOptions:
    """What a sequential audit asks, of which columns, and with which test.

    Attributes
    ----------
    group_col, group_a : str
        The sensitive attribute (``--group-col``) and group a's value (``--group-a``; default:
        the first of two values; with more groups, audits it against the rest).
    pair : str or sequence of str, optional
        Pool mode, more than two groups: audit only this pair ``"G1,G2"`` (``--pair``).
    decision_col, score_col, logit_col : str, optional
        Pool mode: the answers' columns, one per access regime.
    label_col : str, optional
        True labels (``--label-col``; needed for ``metric="eo"``, never sent to the model).
    feature_cols : str or sequence of str, optional
        Live mode: the columns sent to the model (``--feature-cols``).
    metric : {"sp", "eo"}
        Statistical parity or equal opportunity.
    access : {"decisions", "scores", "logits"}
        What the model reveals (``--access``).
    test : str, optional
        A registered test (``--test``; default ``mixture``, anytime-valid; ``glr`` is
        ``glr-wald``'s former name).
    tolerance, alpha, beta : float
        The tolerance ``delta`` of compliance ``|g| <= delta``, and the nominal type-I (false
        violation) and type-II (false compliance) errors.
    min_per_group : int, optional
        ``glr-wald`` / ``fixed`` only: answers per group before the statistic may move.
    repeats : int
        Pool mode: the random query orders replayed (``--repeats``).
    batch_size : int
        Live mode: records per request (``--batch-size``).
    """

    group_col: str = "sex"
    group_a: str | None = None
    pair: str | Sequence[str] | None = None
    decision_col: str | None = None
    score_col: str | None = None
    logit_col: str | None = None
    label_col: str | None = None
    feature_cols: str | Sequence[str] | None = None
    metric: str = "sp"
    access: str = "decisions"
    test: str | None = None
    tolerance: float = 0.1
    alpha: float = 0.05
    beta: float = 0.2
    min_per_group: int | None = None
    repeats: int = 200
    batch_size: int = 1

    def __post_init__(self) -> None:
        if self.min_per_group is not None and self.test_name not in ("glr-wald", "fixed"):
            raise ConfigError("--min-per-group applies to --test glr-wald or fixed only.")

    @property
    def test_name(self) -> str:
        """The registered name of the test (a former name resolved, the default filled in)."""
        from fairprobe.sequential.base import ALIASES, DEFAULT_TEST

        return ALIASES.get(self.test, self.test) if self.test is not None else DEFAULT_TEST


#: The flat keywords of :func:`~fairprobe.sequential.job.sequential_job` (``fairprobe
#: sequential``'s flags): the options object and field each one sets.
_JOB_FLAGS: dict[str, tuple[str, str]] = {
    "input": ("answers", "table"),
    "queries": ("source", "table"),
    **{f: ("options", f) for f in SequentialOptions.__dataclass_fields__},
    "budget": ("access_options", "budget"),
    "seed": ("access_options", "seed"),
    "cache": ("access_options", "cache"),
    "retries": ("access_options", "retries"),
    "timeout": ("access_options", "timeout"),
}

#: The fields of :class:`~fairprobe.options.AccessOptions` only a live audit reads.
_LIVE_ONLY = ("cache", "retries", "timeout")


def sequential_options(
    *, backend: Any = None, answers: DataSource | None = None, **flags: Any
) -> dict[str, Any]:
    """The options objects of :func:`~fairprobe.sequential.job.sequential_job` from its flat
    keywords (``fairprobe sequential``'s flags by their Python names): keys ``answers`` (the
    pool mode's table, ``--input``), ``source`` (the live mode's query pool, ``--queries``),
    ``options`` (:class:`SequentialOptions`) and ``access_options``
    (:class:`~fairprobe.options.AccessOptions`: budget, default :data:`DEFAULT_BUDGET`, seed,
    cache, retries, timeout).

    The checks run in this order: ``--min-per-group``, the mode
    (``--input`` or a ``backend``, one of them), then the budget and the seed. In pool mode
    (``input`` given, no ``backend``) the live-only fields (cache, retries, timeout) are not
    read, and not checked. ``backend`` and ``answers`` (the objects the job was given, if
    any) say the mode.
    """
    parts = split_flat(flags, _JOB_FLAGS, "sequential_job")
    options = SequentialOptions(**parts.get("options", {}))
    table = parts.get("answers", {}).get("table")
    _check_mode(answers if answers is not None else table, backend)
    access = dict(parts.get("access_options", {}))
    if backend is None:
        access = {k: v for k, v in access.items() if k not in _LIVE_ONLY}
    access.setdefault("budget", DEFAULT_BUDGET)
    return {
        "answers": None if table is None else DataSource(table, flag="--input"),
        "source": DataSource(parts.get("source", {}).get("table"), flag="--queries"),
        "options": options,
        "access_options": AccessOptions(**access),
    }


def _check_mode(answers: str | os.PathLike[str] | pd.DataFrame | DataSource | None,
               backend: Any) -> None:
    """One of the two modes: a table of answers (pool) or a backend (live), not both."""
    if isinstance(answers, DataSource):
        answers = answers.table
    if answers is not None and backend is not None:
        raise ConfigError("Give --input (pool mode) or --url/--backend-config (live mode), not both.")
    if answers is None and backend is None:
        raise ConfigError("Give --input FILE (pool mode) or --url / --backend-config (live mode).")

