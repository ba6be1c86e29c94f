"""A sequential audit as one call: what ``fairprobe sequential`` does, pool or live.

The command parses its flags, calls :func:`sequential_job` and prints and writes what it returns;
a Python user gets the same document. Progress is reported through callbacks, so the library
draws nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from fairprobe._validation import split_names
from fairprobe.documents import Job
from fairprobe.errors import ConfigError

__all__ = ["DEFAULT_CACHE", "partial_job", "sequential_job"]

DEFAULT_CACHE = Path(".fairprobe") / "cache.sqlite"

#: Live-mode step callback: the step and the test's (upper, lower) boundaries.
StepCallback = Callable[[Any, tuple[float, float | None]], None]


def _table(data: str | os.PathLike[str] | pd.DataFrame, what: str) -> pd.DataFrame:
    from fairprobe._io import read_table

    return data if isinstance(data, pd.DataFrame) else read_table(data, what)


def sequential_job(
    *,
    input: str | os.PathLike[str] | pd.DataFrame | None = None,
    backend: Any = None,
    queries: str | os.PathLike[str] | pd.DataFrame | None = None,
    feature_cols: str | list[str] | None = None,
    group_col: str = "sex",
    group_a: str | None = None,
    pair: str | list[str] | None = None,
    decision_col: str | None = None,
    score_col: str | None = None,
    logit_col: str | None = None,
    label_col: str | None = None,
    metric: str = "sp",
    access: str = "decisions",
    test: str | None = None,
    tolerance: float = 0.1,
    alpha: float = 0.05,
    beta: float = 0.2,
    min_per_group: int | None = None,
    budget: int | str = 4000,
    repeats: int = 200,
    seed: int = 0,
    batch_size: int = 1,
    cache: str | os.PathLike[str] | None = DEFAULT_CACHE,
    retries: int = 5,
    timeout: float | None = None,
    progress: Callable[[int], None] | None = None,
    on_step: StepCallback | None = None,
    partial: list[Any] | None = None,
) -> Job:
    """Run a sequential audit of SP or EO that stops at violation, compliance or the budget.

    Two modes (``docs/sequential.md``):

    - **pool** (``input``: a table or its path): the answers are already in the table
      (``decision_col`` / ``score_col`` / ``logit_col``); the audit is replayed over ``repeats``
      random query orders. With more than two groups (or ``pair``), every pair is audited with
      the default test (Bonferroni over pairs), or only ``pair``.
    - **live** (``backend``: a :class:`~fairprobe.access.Backend`): one audit against the model,
      on ``queries`` (default: the bundled Adult test split with its audit features), through a
      :class:`~fairprobe.access.BlackBox` with the answer ``cache`` (``None``: memory only).

    ``test`` is a registered test name (default ``mixture``, anytime-valid; ``glr-wald`` is the
    paper's). ``budget`` is a number or ``"all"`` (every row of the pool). ``progress`` is called
    with the number of orders done (pool mode), ``on_step`` with each step and the boundaries
    (live mode). With ``partial`` (a list), the orders done so far are appended to it before an
    interrupt propagates; :func:`partial_job` turns them into a document.

    Returns
    -------
    Job
        ``kind="sequential"``; ``.result`` is a :class:`~fairprobe.sequential.RepeatedAudit`
        (pool mode, two groups), a several-groups result, or a
        :class:`~fairprobe.sequential.SequentialResult` (live mode).
    """
    from fairprobe.provenance import Provenance
    from fairprobe.sequential.base import ALIASES, DEFAULT_TEST

    name = ALIASES.get(test, test) if test is not None else DEFAULT_TEST
    opts: dict[str, Any] = {}
    if min_per_group is not None:
        if name not in ("glr-wald", "fixed"):
            raise ConfigError("--min-per-group applies to --test glr-wald or fixed only.")
        opts["min_per_group"] = min_per_group
    if input is not None and backend is not None:
        raise ConfigError("Give --input (pool mode) or --url/--backend-config (live mode), not both.")
    if input is None and backend is None:
        raise ConfigError("Give --input FILE (pool mode) or --url / --backend-config (live mode).")
    from fairprobe._validation import parse_budget  # the one budget rule of every command

    common: dict[str, Any] = dict(
        metric=metric, access=access, test=name, tolerance=tolerance,
        budget=parse_budget(budget), seed=seed, alpha=alpha, beta=beta, test_options=opts,
    )  # fmt: skip
    if input is not None:
        cols = _PoolColumns(group_col, group_a, decision_col, score_col, logit_col, label_col)
        result = _pool_mode(_PoolRun(_table(input, "--input file"), cols, repeats, common,
                                     progress, partial if partial is not None else [],
                                     split_names(pair)))
    else:
        result = _live_mode(backend, queries, split_names(feature_cols), group_col, group_a,
                            label_col, batch_size, cache, retries, timeout, common, on_step)
    return Job("sequential", result, Provenance.capture(seed=seed))


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
    queries: str | os.PathLike[str] | pd.DataFrame | None,
    feature_cols: list[str] | None,
    group_col: str,
    group_a: str | None,
    label_col: str | None,
    batch_size: int,
    cache: str | os.PathLike[str] | None,
    retries: int,
    timeout: float | None,
    common: dict[str, Any],
    on_step: StepCallback | None,
) -> Any:
    from fairprobe.access.blackbox import BlackBox
    from fairprobe.sequential.base import get_test
    from fairprobe.sequential.runner import audit_live

    if queries is None:
        from fairprobe.datasets import load_adult
        from fairprobe.datasets.adult import AUDIT_FEATURES

        pool = load_adult("test", names_seed=None)[[*AUDIT_FEATURES, "income"]]
        feats: list[str] | None = feature_cols or list(AUDIT_FEATURES)
        label = label_col or "income"
    else:
        pool = _table(queries, "--queries file")
        feats = feature_cols
        label = label_col  # type: ignore[assignment]
    if common["budget"] == "all":
        common["budget"] = len(pool)
    cache_path = None if cache is None else Path(cache)
    if cache_path is not None:
        cache_path.parent.mkdir(parents=True, exist_ok=True)
    t = get_test(
        common["test"], tolerance=common["tolerance"], access=common["access"],
        alpha=common["alpha"], beta=common["beta"], **common["test_options"],
    )  # fmt: skip
    bounds = (t.boundaries.upper, t.boundaries.lower)
    kw = {k: v for k, v in common.items() if k not in ("test", "test_options")}
    step = None if on_step is None else (lambda s: on_step(s, bounds))
    with BlackBox(backend, cache=cache_path, retries=retries, timeout=timeout) as bb:
        return audit_live(
            bb, pool, group_col=group_col, group_a=group_a, label_col=label,
            feature_cols=feats, batch_size=batch_size, test=t, on_step=step, **kw,
        )  # fmt: skip
