"""A sequential audit as one call: what ``fairprobe sequential`` does, pool or live.

The command parses its flags, calls :func:`sequential_job` and prints and writes what it returns;
a Python user gets the same document. Progress is reported through callbacks, so the library
draws nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import pandas as pd

from fairprobe._validation import split_names
from fairprobe.documents import Job
from fairprobe.errors import ConfigError
from fairprobe.options import DEFAULT_CACHE, AccessOptions, DataSource

if TYPE_CHECKING:
    from fairprobe.sequential.options import SequentialOptions

__all__ = ["DEFAULT_CACHE", "partial_job", "sequential_job"]

#: Live-mode step callback: the step and the test's (upper, lower) boundaries.
StepCallback = Callable[[Any, tuple[float, float | None]], None]


def sequential_job(
    *,
    backend: Any = None,
    answers: DataSource | None = None,
    source: DataSource | None = None,
    options: SequentialOptions | None = None,
    access_options: AccessOptions | None = None,
    progress: Callable[[int], None] | None = None,
    on_step: StepCallback | None = None,
    partial: list[Any] | None = None,
    **flags: Any,
) -> Job:
    """Run a sequential audit of SP or EO that stops at violation, compliance or the budget.

    Two modes (``docs/sequential.md``):

    - **pool** (``answers``: the table of answers, ``--input``): the answers are already in the
      table (``decision_col`` / ``score_col`` / ``logit_col``); the audit is replayed over
      ``repeats`` random query orders. With more than two groups (or ``pair``), every pair is
      audited with the default test (Bonferroni over pairs), or only ``pair``.
    - **live** (``backend``: a :class:`~fairprobe.access.Backend`): one audit against the model,
      on ``source`` (the query pool, ``--queries``; default: the bundled Adult test split with
      its audit features), through a :class:`~fairprobe.access.BlackBox` with the answer cache.

    The options objects say what to audit: ``answers`` and ``source``
    (:class:`~fairprobe.options.DataSource`), ``options`` the columns, the metric and the test
    (:class:`~fairprobe.sequential.options.SequentialOptions`: ``test`` a registered name,
    default ``mixture``, anytime-valid; ``glr-wald`` is the paper's), ``access_options`` the
    budget (a number or ``"all"``, every row of the pool; default 4000) and the seed, and in
    live mode the ``cache`` (``None``: memory only), ``retries`` and ``timeout``
    (:class:`~fairprobe.options.AccessOptions`; its ``progress`` is not read). ``flags`` are
    ``fairprobe sequential``'s flags by their Python names (``input``, ``queries`` and every
    field; the compatibility form, sorted into the objects by
    :func:`~fairprobe.sequential.options.sequential_options`); they build the objects not
    given.

    ``progress`` is called with the number of orders done (pool mode), ``on_step`` with each
    step and the boundaries (live mode). With ``partial`` (a list), the orders done so far are
    appended to it before an interrupt propagates; :func:`partial_job` turns them into a
    document.

    Returns
    -------
    Job
        ``kind="sequential"``; ``.result`` is a :class:`~fairprobe.sequential.RepeatedAudit`
        (pool mode, two groups), a several-groups result, or a
        :class:`~fairprobe.sequential.SequentialResult` (live mode).
    """
    from fairprobe.provenance import Provenance
    from fairprobe.sequential.options import DEFAULT_BUDGET, sequential_options

    built = sequential_options(backend=backend, answers=answers, **flags)
    o: SequentialOptions = options or built["options"]
    acc: AccessOptions = access_options or built["access_options"]
    table: DataSource | None = answers or built["answers"]
    opts: dict[str, Any] = {}
    if o.min_per_group is not None:
        opts["min_per_group"] = o.min_per_group
    common: dict[str, Any] = dict(
        metric=o.metric, access=o.access, test=o.test_name, tolerance=o.tolerance,
        budget=DEFAULT_BUDGET if acc.budget is None else acc.budget, seed=acc.seed,
        alpha=o.alpha, beta=o.beta, test_options=opts,
    )  # fmt: skip
    if table is not None:
        cols = _PoolColumns(o.group_col, o.group_a, o.decision_col, o.score_col, o.logit_col,
                            o.label_col)  # fmt: skip
        result = _pool_mode(_PoolRun(table.load(_no_default), cols, o.repeats, common,
                                     progress, partial if partial is not None else [],
                                     split_names(o.pair)))  # fmt: skip
    else:
        result = _live_mode(backend, source or built["source"], o, acc, common, on_step)
    return Job("sequential", result, Provenance.capture(seed=acc.seed))


def _no_default() -> pd.DataFrame:
    # the mode check guarantees a pool-mode table: the answers have no bundled default
    raise ConfigError("Give --input FILE (pool mode) or --url / --backend-config (live mode).")


def partial_job(done: Any, seed: int) -> Job:
    """The document of an interrupted pool-mode audit: the orders done, marked ``interrupted``."""
    from fairprobe.provenance import Provenance

    return Job("sequential", done, Provenance.capture(seed=seed), {"interrupted": True})


class _PoolColumns(NamedTuple):
    """The pool table's columns: the group (and group a), the answers and the labels."""

    group: str
    group_a: str | None
    decision: str | None
    score: str | None
    logit: str | None
    label: str | None


class _PoolRun(NamedTuple):
    """A pool-mode audit's inputs: the table and its columns, the orders, the test's settings,
    the callbacks and the pair asked for."""

    df: pd.DataFrame
    cols: _PoolColumns
    repeats: int
    common: dict[str, Any]
    progress: Callable[[int], None] | None
    partial: list[Any]
    pair: list[str] | None


def _pool_mode(run: _PoolRun) -> Any:
    from fairprobe.sequential.pool import AuditPool, run_pool

    df, cols, repeats, common, progress, partial, pair = run

    if common["budget"] == "all":
        common["budget"] = len(df)
    if cols.group not in df.columns:
        raise ConfigError(f"Group column {cols.group!r} (--group-col) is not in the --input file.")
    n_groups = df[cols.group].dropna().nunique()
    if pair is not None or (n_groups > 2 and cols.group_a is None):
        return _groups_mode(run)
    pool = AuditPool.from_frame(
        df, cols.group, decision_col=cols.decision, score_col=cols.score, logit_col=cols.logit,
        label_col=cols.label, group_a=cols.group_a,
    )  # fmt: skip
    return run_pool(pool, repeats=repeats, progress=progress, partial=partial, **common)


def _groups_mode(run: _PoolRun) -> Any:
    from fairprobe.sequential.multigroup import run_groups

    df, cols, repeats, common, progress, partial, pair = run

    if common["test"] != "mixture":
        raise ConfigError(
            "More than two groups (or --pair) run the default test only; drop --test "
            "or name the audited group with --group-a to compare it with the rest."
        )
    access = common["access"]
    col = {"decisions": cols.decision, "scores": cols.score, "logits": cols.logit}[access]
    if col is None:
        flag = {"decisions": "decision", "scores": "score", "logits": "logit"}[access]
        raise ConfigError(f"--access {access} needs the pool's {access}: pass --{flag}-col.")
    chosen = None
    if pair is not None:
        if len(pair) != 2:
            raise ConfigError(f"--pair takes two groups 'G1,G2'; got {','.join(pair)!r}.")
        chosen = (pair[0], pair[1])
    return run_groups(
        df, cols.group, col, access=access, metric=common["metric"], label_col=cols.label,
        pair=chosen, tolerance=common["tolerance"], budget=common["budget"], repeats=repeats,
        seed=common["seed"], alpha=common["alpha"], beta=common["beta"], partial=partial,
        progress=progress,
    )  # fmt: skip


def _live_mode(
    backend: Any,
    source: DataSource,
    o: SequentialOptions,
    access: AccessOptions,
    common: dict[str, Any],
    on_step: StepCallback | None,
) -> Any:
    from fairprobe.sequential.base import get_test
    from fairprobe.sequential.runner import audit_live

    feature_cols = split_names(o.feature_cols)
    if source.table is None:
        from fairprobe.datasets import load_adult
        from fairprobe.datasets.adult import AUDIT_FEATURES

        pool = load_adult("test", names_seed=None)[[*AUDIT_FEATURES, "income"]]
        feats: list[str] | None = feature_cols or list(AUDIT_FEATURES)
        label = o.label_col or "income"
    else:
        pool = source.load(_no_default)
        feats = feature_cols
        label = o.label_col  # type: ignore[assignment]
    if common["budget"] == "all":
        common["budget"] = len(pool)
    t = get_test(
        common["test"], tolerance=common["tolerance"], access=common["access"],
        alpha=common["alpha"], beta=common["beta"], **common["test_options"],
    )  # fmt: skip
    bounds = (t.boundaries.upper, t.boundaries.lower)
    kw = {k: v for k, v in common.items() if k not in ("test", "test_options")}
    step = None if on_step is None else (lambda s: on_step(s, bounds))
    with access.open(backend, seeded=False) as bb:
        return audit_live(
            bb, pool, group_col=o.group_col, group_a=o.group_a, label_col=label,
            feature_cols=feats, batch_size=o.batch_size, test=t, on_step=step, **kw,
        )  # fmt: skip
