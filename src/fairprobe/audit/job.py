"""The audit job: a backend and a query pool in, the result document the CLI writes out.

``fairprobe audit`` is a thin wrapper over this module: the column plan, every check that can be
made before a query is paid, the draw, the run and the provenance block live here, so a Python
user gets the same checks and the same document as the command line::

    from fairprobe.access.config import load_backend
    from fairprobe.audit import audit_model

    job = audit_model(load_backend("backend.toml"), queries="applicants.csv",
                      group_col="race", metric=["dp", "eo"], label_col="income")
    job.verdict              # fair / unfair / undetermined (the verdict engine's)
    job.to_dict()            # the document ``fairprobe audit --json`` writes

The check messages name the command-line flag of each parameter (``--group-col`` for
``group_col``), so one message serves both ways in.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fairprobe import metrics as _metrics
from fairprobe._validation import split_names
from fairprobe.audit.model_options import (
    GROUP_PLAN_FLAGS,
    MODEL_FLAGS,
    PLAN_FLAGS,
    ModelAuditOptions,
    ModelColumns,
    audit_model_options,
)
from fairprobe.documents import Job
from fairprobe.options import AccessOptions, AuditQuestion, DataSource

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "DEFAULT_CACHE",
    "AuditJob",
    "audit_model",
    "audit_prompt_variants",
    "audit_provenance",
    "plan_audit",
    "plan_group_audit",
    "resolve_groups",
]

DEFAULT_CACHE = Path(".fairprobe") / "cache.sqlite"

#: ``--metric`` values (case-insensitive) -> metric names: every registered metric, by any of
#: its names (:mod:`fairprobe.metrics`), and ``performance_gap`` (Welch, two groups only).
METRIC_CHOICES = {**{c: _metrics.resolve(c).name for c in _metrics.choices()},
                  "gap": "performance_gap", "performance_gap": "performance_gap"}
#: Group defaults that follow ``--group-col`` (only for a column of that name).
DEFAULT_GROUPS = {"sex": ("Female", "Male")}
#: ``--group-b`` values meaning "every other value".
REST_WORDS = ("*", "rest")


def _needs_label(name: str) -> bool:
    """Whether the metric (a :data:`METRIC_CHOICES` value) needs true labels."""
    return name == "performance_gap" or "y_true" in _metrics.resolve(name).needs


def _resolve_budget(budget: int | str | None, n: int) -> int:
    """``--budget``: a number (at most the pool's ``n`` rows), ``"all"``, or the default
    (2,000, or the whole pool if smaller)."""
    from fairprobe.errors import DataError

    if budget is None:
        return min(2000, n)
    if not isinstance(budget, int):  # "all"
        return n
    if budget > n:
        raise DataError(f"--budget {budget} is larger than the query pool ({n} rows); lower it "
                        "or give a larger --queries file.")
    return budget


def _read_pool(queries: str | os.PathLike[str] | pd.DataFrame) -> tuple[pd.DataFrame, str]:
    import pandas as pd

    if isinstance(queries, pd.DataFrame):
        return queries, "DataFrame"
    from fairprobe._io import read_table

    return read_table(queries, "File"), str(queries)


def _group_value(pool: pd.DataFrame, col: str, value: str, flag: str) -> Any:
    """The pool's value of ``col`` that ``value`` (a CLI string) names; DataError if absent."""
    from fairprobe.errors import DataError

    values = pool[col].dropna().unique().tolist()
    for v in values:
        if v == value or str(v) == value:
            return v
    shown = ", ".join(map(str, sorted(values, key=str)[:12]))
    more = f" and {len(values) - 12} more" if len(values) > 12 else ""
    raise DataError(f"{flag} {value!r} is not a value of {col!r} in the pool (values: {shown}{more}).")


def two_groups(df: Any, cols: Sequence[str], group_a: str, group_b: str | None) -> Any:
    """The rows of ``group_a`` and ``group_b`` (``rest`` or none: every other row, relabelled
    ``rest``), so that the every-group audit compares exactly these two groups."""
    from fairprobe.errors import InvalidParameterError

    if len(cols) != 1:
        raise InvalidParameterError("--group-a/--group-b compare two values of one --group-col; "
                                    "drop them to audit every intersection.")
    col = cols[0]
    if col not in df.columns:
        return df  # the audit names the missing column
    a = _group_value(df, col, group_a, "--group-a")
    if group_b is None or group_b.strip().lower() in REST_WORDS:
        out = df.copy()
        out[col] = out[col].where(out[col] == a, "rest")
        return out
    b = _group_value(df, col, group_b, "--group-b")
    if a == b:
        raise InvalidParameterError("--group-a and --group-b name the same group; give two.")
    return df[df[col].isin([a, b])].reset_index(drop=True)


def resolve_groups(
    pool: pd.DataFrame, group_col: str, group_a: str | None, group_b: str | None
) -> tuple[Any, Any]:
    """Group A and group B (``None``: every other value), checked against the pool.

    Defaults follow ``--group-col``: ``sex`` defaults to Female vs Male; any other column needs
    ``--group-a`` (the message lists its values). ``--group-b rest`` (or ``*``) means every
    other value, as does omitting it when ``--group-a`` is given.
    """
    from fairprobe.errors import DataError

    if pool[group_col].isna().any():
        raise DataError(f"The group column {group_col!r} has missing values; drop those rows.")
    values = set(map(str, pool[group_col].unique().tolist()))
    if group_a is None and group_b is None and group_col in DEFAULT_GROUPS:
        da, db = DEFAULT_GROUPS[group_col]
        if {da, db} <= values:
            group_a, group_b = da, db
    if group_a is None:
        shown = ", ".join(sorted(values)[:12])
        raise DataError(
            f"--group-a is required with --group-col {group_col} (values: {shown}); "
            "--group-b defaults to every other value."
        )
    a = _group_value(pool, group_col, group_a, "--group-a")
    b = None
    if group_b is not None and not (group_b in REST_WORDS and group_b not in values):
        b = _group_value(pool, group_col, group_b, "--group-b")
        if b == a:
            raise DataError("--group-a and --group-b name the same group; give two groups.")
    return a, b


def _platform_fields(url: str | None, path: str,
                     feature_cols: str | Sequence[str] | None = None) -> list[str] | None:
    """The input fields the endpoint behind ``--url`` declares (``GET {url}/schema``, the
    platform's shape); ``None`` (send every column but the label and the sensitive one) when it
    declares none or ``--feature-cols`` says what to send. Never assumes the platform."""
    if url is None or feature_cols is not None:
        return None
    from fairprobe.access.http import HttpJsonBackend

    backend = HttpJsonBackend(url=url, path=path)
    try:
        return backend.declared_inputs()
    finally:
        backend.close()



def plan_audit(
    *,
    source: DataSource | None = None,
    columns: ModelColumns | None = None,
    access: AccessOptions | None = None,
    options: ModelAuditOptions | None = None,
    metric: str = _metrics.DI.name,
    answer_cols: Sequence[str] = (),
    **flags: Any,
) -> dict[str, Any]:
    """Read the pool and check everything that depends on it, before any backend call.

    Returns the pool, its source, the column plan, the groups, the label and the budget.
    ``source`` is the pool (its ``table``; ``None``: the bundled Adult test split),
    ``columns`` its columns (all the fields of :class:`~fairprobe.audit.run_options.
    ModelColumns`, ``group`` one column), ``access`` the ``budget`` and ``seed`` of the
    draw, ``options`` the endpoint (``url``, ``path``) and ``name_swap``; ``metric`` is a
    two-group metric (a :data:`METRIC_CHOICES` value). ``flags`` are those fields as flat
    keywords (``queries``, ``group_col``, ``budget``, ``url``, ...: the compatibility form).
    ``answer_cols``: recorded-answer columns (a replay table used as the pool), never sent.
    """
    o = audit_model_options(flags, targets=PLAN_FLAGS, owner="plan_audit", source=source,
                            columns=columns, access=access, options=options)  # fmt: skip
    from fairprobe.audit.run import draw_queries, plan_columns
    from fairprobe.errors import DataError

    c, opt, seed = o["columns"], o["options"], o["access"].seed
    group_col, name_swap = c.group, opt.name_swap
    pool, pool_source, label = _model_pool(o["source"].table, c, metric, name_swap, seed)
    if group_col not in pool.columns:
        have = ", ".join(map(str, pool.columns[:12]))
        raise DataError(f"--group-col {group_col!r} is not a column of the pool (columns: {have}).")
    if _needs_label(metric) and label is None:
        raise DataError(f"--metric {metric} needs true labels: give --label-col.")
    required = _platform_fields(opt.url, opt.path, c.features)
    plan_cols = plan_columns(
        pool, group_cols=[group_col], label_col=label, feature_cols=split_names(c.features),
        send_group=c.send_group, required=required, answer_cols=answer_cols,
    )
    if not _needs_label(metric) and c.label is None:
        label = None  # a column withheld as label-like is not needed by DP/DI
    if label is not None and _needs_label(metric):
        _check_binary_labels(pool[label], label, c.pos_label)
    if name_swap is not None and name_swap not in plan_cols.sent:
        raise DataError(
            f"--name-swap {name_swap!r} is not a column sent to the model (sent: "
            f"{', '.join(plan_cols.sent)})."
        )
    a, b = resolve_groups(pool, group_col, c.group_a, c.group_b)
    n = len(pool)
    budget = _resolve_budget(o["access"].budget, n)
    if budget < 2:
        raise DataError(f"The query pool has {n} row(s); an audit needs at least 2.")
    sample = draw_queries(pool, budget, seed)
    _check_drawn(pool, sample, group_col, (a, b), budget, seed)
    return {
        "pool": pool, "source": pool_source, "columns": plan_cols, "group_a": a, "group_b": b,
        "label": label, "budget": budget, "sample_groups": sample[group_col].to_numpy(),
        "group_col": group_col, "pos_label": c.pos_label,
    }


def _model_pool(queries: Any, c: ModelColumns, metric: str, name_swap: str | None,
                seed: int) -> tuple[pd.DataFrame, str, str | None]:  # fmt: skip
    """The two-group audit's pool, its source and its label column: the table given, or the
    bundled Adult test split (with first names for a name swap; ``income`` the label of a
    metric that needs one)."""
    if queries is not None:
        pool, pool_source = _read_pool(queries)
        return pool, pool_source, c.label
    from fairprobe.datasets import load_adult
    from fairprobe.platform.model import AUDIT_FEATURES

    if name_swap is None:
        pool = load_adult("test", names_seed=None)[[*AUDIT_FEATURES, "income"]]
        pool_source = "bundled Adult test split"
    else:  # records with first names, for the name swap (the sex column is not sent)
        from fairprobe.platform.core import USER_FEATURES

        cols = list(dict.fromkeys([*USER_FEATURES, c.group, "income"]))
        pool = load_adult("test", names_seed=seed)[cols]
        pool_source = f"bundled Adult test split with first names (names seed {seed})"
    return pool, pool_source, c.label or ("income" if _needs_label(metric) else None)


def _check_drawn(pool: pd.DataFrame, sample: pd.DataFrame, group_col: str,
                 groups: tuple[Any, Any], budget: int, seed: int) -> None:  # fmt: skip
    """Each group (``None``: every other value) has a member among the queries drawn."""
    from fairprobe.errors import DataError

    a, b = groups
    n = len(pool)
    for flag, g in (("--group-a", a), ("--group-b", b)):
        if g is None:
            in_g = int((sample[group_col] != a).sum())
        else:
            in_g = int((sample[group_col] == g).sum())
        if in_g == 0:
            total = int((pool[group_col] == g).sum()) if g is not None else n - int(
                (pool[group_col] == a).sum())
            raise DataError(
                f"The {budget} queries drawn (seed {seed}) hold no member of {flag} "
                f"{'rest' if g is None else g!r} ({total} of the {n} rows of the pool): raise "
                "--budget or change --seed."
            )


def _check_binary_labels(labels: pd.Series, col: str, pos_label: Any = None) -> None:
    from fairprobe.errors import DataError

    if pos_label is not None:  # labels such as '>50K': the library's check names --pos-label
        from fairprobe.audit.run import _check_labels

        _check_labels(labels, col, pos_label)
        return
    if labels.isna().any():
        raise DataError(f"The label column {col!r} has missing values; drop those rows.")
    vals = set(labels.unique().tolist())
    if not vals <= {0, 1}:  # also True/False and 0.0/1.0
        shown = ", ".join(map(str, sorted(vals, key=str)[:6]))
        raise DataError(f"The label column {col!r} must hold 0/1 labels; found {shown}: name "
                        "the positive label with --pos-label.")


def audit_provenance(bb: Any, plan: dict[str, Any], *, seed: int, cache: Path | None,
                     no_cache: bool, refresh: bool) -> Any:
    """The provenance block of an audit: pool hash, backend identity, answers per group."""
    from fairprobe.access.identity import describe_backend
    from fairprobe.provenance import Provenance, answer_counts_by_group, pool_digest

    check = bb.identity_check
    columns = plan["columns"].to_dict()
    reached = getattr(bb.backend, "sent_columns", None)
    if isinstance(reached, list):  # what the backend sent (e.g. only a model's declared inputs)
        for c in columns["sent"]:
            if c not in reached:
                columns["withheld"][c] = "not sent: not an input the model declares"
        columns["sent"] = list(reached)
    prov = Provenance.capture(
        seed=seed,
        query_pool=pool_digest(plan["pool"], plan["source"]),
        backend=describe_backend(bb.backend, check),
        retries=bb.retried,
        notes=[check.note] if check is not None and check.note else [],
        extra={
            "columns": columns,
            "cache": {
                "path": None if no_cache else str(cache),
                "policy": "off" if no_cache else "refresh" if refresh else "reuse",
                "fingerprint_paid": bb.fingerprint_paid,
                "resumed_in_flight": bb.resumed_in_flight,
            },
        },
    )
    outcomes, cached = bb.answer_log()
    groups = plan["sample_groups"]
    if len(outcomes) == len(groups):
        prov = prov.with_answers(answer_counts_by_group(groups, outcomes, cached))
    return prov




def plan_group_audit(
    *,
    source: DataSource | None = None,
    columns: ModelColumns | None = None,
    access: AccessOptions | None = None,
    question: AuditQuestion | None = None,
    options: ModelAuditOptions | None = None,
    method: str = "exact",
    answer_cols: Sequence[str] = (),
    **flags: Any,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The every-group audit's plan (pool, columns, label, budget, draw) and the keyword
    arguments of :func:`fairprobe.audit.run_group_audit`, every check made before any query.

    ``source`` is the pool (``None``: the bundled Adult test split), ``columns`` its columns
    (:class:`~fairprobe.audit.run_options.ModelColumns`: ``group`` one column or several,
    ``group_a``, ``group_b``, ``label``, ``features``, ``send_group``), ``access`` the
    ``budget`` and ``seed`` of the draw, ``question`` the full metric names,
    ``min_group_size``, ``confidence_level``, ``tolerance`` and ``threshold``,
    ``options`` the endpoint (``url``, ``path``) and the ``allocation``; ``method`` is the
    simultaneous intervals' construction. ``flags`` are those fields as flat keywords
    (``queries``, ``group_cols``, ``metrics``, ``budget``, ...: the compatibility form).
    ``group_a``/``group_b``: the pool keeps the rows of these two groups (:func:`two_groups`),
    so that the audit compares exactly them, as ``audit --predictions --group-a`` does."""
    o = audit_model_options(flags, targets=GROUP_PLAN_FLAGS, owner="plan_group_audit",
                            source=source, columns=columns, access=access, question=question,
                            options=options)  # fmt: skip
    from fairprobe.audit.run import check_group_audit, draw_queries, plan_columns
    from fairprobe.stats.frame import FAIRNESS_METRICS, RATES

    c, q, opt, acc = o["columns"], o["question"], o["options"], o["access"]
    cols = (split_names(c.group) or []) if isinstance(c.group, str) else list(c.group or [])
    names = list(q.metrics)
    needs_label = any("y_true" in RATES[r][0] for n in names for r in FAIRNESS_METRICS[n][0])
    pool, source_name, label = _group_pool(o["source"].table, c, cols, names, needs_label)
    plan_cols = plan_columns(pool, group_cols=cols, label_col=label,
                             feature_cols=split_names(c.features), send_group=c.send_group,
                             required=_platform_fields(opt.url, opt.path, c.features),
                             answer_cols=answer_cols)  # fmt: skip
    if not needs_label and c.label is None:
        label = None
    n = len(pool)
    budget = _resolve_budget(acc.budget, n)
    kwargs: dict[str, Any] = dict(
        group_col=cols, metrics=names, label_col=label, feature_cols=plan_cols.sent,
        budget=budget, seed=acc.seed, min_group_size=q.min_group_size,
        confidence_level=q.confidence_level, method=method, tolerance=q.tolerance,
        threshold=q.threshold, allocation=opt.allocation)
    check_group_audit(pool, **kwargs)
    sample = draw_queries(pool, budget, acc.seed, group_cols=cols, allocation=opt.allocation)
    plan = {"pool": pool, "source": source_name, "columns": plan_cols, "label": label,
            "budget": budget, "group_col": ", ".join(cols),
            "sample_groups": sample[cols].astype(str).agg(", ".join, axis=1).to_numpy()}
    return plan, kwargs


def _group_pool(queries: Any, c: ModelColumns, cols: list[str], names: list[str],
                needs_label: bool) -> tuple[pd.DataFrame, str, str | None]:  # fmt: skip
    """The every-group audit's pool (only the rows of ``group_a``/``group_b`` when given), its
    source and its label column, the columns checked against it."""
    from fairprobe.errors import DataError

    if queries is None:
        from fairprobe.datasets import load_adult
        from fairprobe.platform.model import AUDIT_FEATURES

        pool = load_adult("test", names_seed=None)[[*AUDIT_FEATURES, "income"]]
        source = "bundled Adult test split"
        label = c.label or ("income" if needs_label else None)
    else:
        pool, source = _read_pool(queries)
        label = c.label
    for col in cols:
        if col not in pool.columns:
            have = ", ".join(map(str, pool.columns[:12]))
            raise DataError(f"--group-col {col!r} is not a column of the pool (columns: {have}).")
    if needs_label and label is None:
        raise DataError(f"--metric {names[0]} needs true labels: give --label-col.")
    group_a, group_b = c.group_a, c.group_b
    if group_a is not None or group_b is not None:
        if group_a is None and len(cols) == 1 and cols[0] in DEFAULT_GROUPS:
            group_a, group_b = DEFAULT_GROUPS[cols[0]]
        if group_a is None:
            from fairprobe.errors import InvalidParameterError

            raise InvalidParameterError("--group-b needs --group-a (the two groups compared).")
        pool = two_groups(pool, cols, group_a, group_b)
    return pool, source, label


@dataclass(frozen=True)
class AuditJob(Job):
    """A finished audit: a :class:`~fairprobe.documents.Job` of ``kind="audit"`` with the plan
    it ran and the answers it paid for.

    Attributes
    ----------
    result : AuditResult or GroupAudit
        The two-group or every-group result (its findings carry the verdicts).
    provenance : Provenance
        Pool hash, backend identity, answers per group, cache policy, columns sent.
    extra : dict
        Fields the command adds to the document (e.g. LLM usage, name swaps).
    plan : dict
        The pool, its source, the column plan, the groups and the budget.
    requests : dict
        Answers this run paid for and replayed from the cache (name swaps included).
    """

    plan: dict[str, Any] = field(default_factory=dict, repr=False)
    requests: dict[str, int] = field(default_factory=dict)


@contextlib.contextmanager
def _resumable(bb: Any, cache: Path | None) -> Iterator[None]:
    """An access failure mid-audit says what was kept and that the rerun resumes."""
    from fairprobe.errors import AccessError

    try:
        yield
    except AccessError as exc:
        if exc.args and isinstance(exc.args[0], str):
            if bb.spent == 0:
                tail = " Nothing was paid in this run."
            elif cache is None:
                tail = (f" The {bb.spent} answer(s) paid for were not kept (--no-cache): a "
                        "rerun asks every record again.")
            else:
                tail = (f" The {bb.spent} answer(s) paid for in this run are in the cache "
                        f"{cache}: rerun the same command to resume (cached answers are not "
                        "paid again).")
            exc.args = (exc.args[0].rstrip().rstrip(".") + "." + tail, *exc.args[1:])
        raise


def as_backend(model: Any) -> Any:
    """What :func:`audit_model` audits: a :class:`fairprobe.access.Backend` as is; a fitted
    scikit-learn-style estimator (``predict``, ``classes_``), or its bound ``predict``, as a
    local model with its scores; any callable ``f(DataFrame) -> decisions`` as a local model."""
    from fairprobe.access.base import Backend

    if isinstance(model, Backend):
        return model
    from fairprobe.access.local import LocalModelBackend
    from fairprobe.errors import InvalidParameterError

    owner = getattr(model, "__self__", None)
    if getattr(model, "__name__", "") == "predict" and hasattr(owner, "classes_"):
        model = owner  # estimator.predict: the estimator itself also gives the scores
    if hasattr(model, "predict") or callable(model):
        return LocalModelBackend(model)
    raise InvalidParameterError(
        f"audit_model takes a fitted estimator (with predict), a callable f(DataFrame) -> 0/1 "
        f"decisions such as model.predict, or a fairprobe.access backend (e.g. "
        f"load_backend('model.toml')); got a {type(model).__name__}.")


def _metric_names(metric: str | Sequence[str]) -> list[str]:
    from fairprobe.errors import InvalidParameterError

    out = [_metrics.resolve(m, path="audit").name for m in split_names(metric) or []]
    if not out:
        raise InvalidParameterError("--metric names no metric; give e.g. --metric dp,eo.")
    return list(dict.fromkeys(out))


def _two_group_metric(metric: str) -> bool:
    """Whether ``metric`` is one :func:`fairprobe.audit.run_audit` computes (else the two
    groups are audited by the group audit, the estimator of every other path)."""
    from fairprobe.audit.run import TWO_GROUP_METRICS

    return METRIC_CHOICES.get(metric.strip().lower()) in TWO_GROUP_METRICS


def audit_model(
    backend: Any,
    *,
    source: DataSource | None = None,
    access: AccessOptions | None = None,
    question: AuditQuestion | None = None,
    columns: ModelColumns | None = None,
    options: ModelAuditOptions | None = None,
    **flags: Any,
) -> AuditJob:
    """Audit ``backend`` on a query pool: what ``fairprobe audit`` does, as one call.

    ``backend`` is a :class:`fairprobe.access.Backend` (``load_backend("model.toml")``), a
    fitted estimator, or a callable ``f(DataFrame) -> decisions`` such as ``model.predict``
    (:func:`as_backend`).

    The options objects say what to audit (every field is read):

    - ``source`` (:class:`~fairprobe.options.DataSource`): the query pool, ``table`` a path or
      a DataFrame (``None``: the bundled Adult test split);
    - ``access`` (:class:`~fairprobe.options.AccessOptions`): ``budget``, ``seed``, ``cache``
      (``None`` keeps answers in memory only, ``--no-cache``), ``retries``, ``timeout``,
      ``progress``;
    - ``question`` (:class:`~fairprobe.options.AuditQuestion`): ``metrics``, ``tolerance``,
      ``threshold``, ``confidence_level``, ``reference``, ``min_group_size``;
    - ``columns`` (:class:`~fairprobe.audit.run_options.ModelColumns`, the object
      :func:`~fairprobe.audit.run_group_audit` reads too): ``group`` (required with a pool of
      your own; default ``sex`` only on the bundled Adult pool), ``group_a``, ``group_b``,
      ``label``, ``features``, ``send_group``, ``pos_label``;
    - ``options`` (:class:`~fairprobe.audit.model_options.ModelAuditOptions`): the form
      ``every_group``, the ``interval``, the ``allocation``, ``max_unusable_share``,
      ``refresh``, ``concurrency``, ``name_swap``, ``run_name_swap``, ``url`` and ``path``.

    ``flags`` are their fields as flat keywords, the compatibility form (``queries`` the
    pool's table, ``metric`` the metrics, default ``"di"``, ``group_col``, ``label_col`` and
    ``feature_cols`` the columns' ``group``, ``label`` and ``features``; the others by their
    field names; :func:`~fairprobe.audit.model_options.audit_model_options`); they mirror the
    command's flags (``docs/audit.md``) and override the fields of an object given too.

    ``every_group=None`` (default) audits two groups when ``group_a``/``group_b`` are given or
    for the ``sex`` column with one two-group metric, every group otherwise. ``allocation``
    (every-group form): ``balanced`` (equal per group, a smaller group taken whole),
    ``uniform`` (over rows), ``neyman`` (a pilot, then Neyman's split) or ``adaptive``
    (batches until decided). ``interval``: ``exact`` (default), ``score``, ``newcombe`` or
    ``katz`` (two-group DI only). ``url`` (with ``path``) lets the plan read the endpoint's
    declared inputs, as ``--url`` does. ``name_swap`` (two-group form): the field holding a
    first name; each record is also asked with the name swapped to the other sex and the flip
    rate goes to ``extra["name_swap"]`` (``run_name_swap=False``: the records carry the names,
    e.g. for a prompt variant, but are not asked again swapped).

    Returns
    -------
    AuditJob
        ``.result``, ``.provenance``, ``.verdict`` and ``.to_dict()``, the document the command
        writes with ``--json`` for the same inputs (its provenance times aside).
    """
    o = audit_model_options(flags, targets=MODEL_FLAGS, source=source, access=access,
                            question=question, columns=columns, options=options)  # fmt: skip
    backend = as_backend(backend)
    c, opt = o["columns"], o["options"]
    cols = _audit_group_columns(c.group, o["source"].table)
    names = split_names(list(o["question"].metrics)) or []
    pair = c.group_a is not None or c.group_b is not None
    every_group = opt.every_group
    if every_group is None:
        every_group = not pair and (
            len(cols) != 1 or cols[0] not in DEFAULT_GROUPS or len(names) != 1
            or names[0].strip().lower() not in METRIC_CHOICES)
    # two groups on a metric run_audit does not compute: the group audit of those two groups
    restrict = not every_group and not (len(names) == 1 and _two_group_metric(names[0]))
    if restrict and not pair:
        group_a, group_b = DEFAULT_GROUPS.get(cols[0] if len(cols) == 1 else "", (None, None))
        c = replace(c, group_a=group_a, group_b=group_b)
    if every_group or restrict:
        return _audit_every_group(backend, {**o, "columns": replace(c, group=cols)}, names)
    return _audit_two_groups(backend, o, cols, names)


def _audit_group_columns(group_col: str | Sequence[str] | None, queries: Any) -> list[str]:
    """``group_col`` as a list of columns; ``sex`` on the bundled Adult pool, required (the
    message lists the pool's columns) with a pool of your own."""
    if group_col is None:
        if queries is not None:
            from fairprobe.errors import InvalidParameterError

            have = ""
            if hasattr(queries, "columns"):
                have = f" (its columns: {', '.join(map(str, queries.columns[:30]))})"
            raise InvalidParameterError(
                f"group_col (--group-col) is required with a query pool: name its sensitive "
                f"column(s){have}.")
        group_col = "sex"  # the bundled Adult pool
    return split_names(group_col) or []


def _blackbox(backend: Any, access: AccessOptions, opt: ModelAuditOptions, budget: int) -> Any:
    """The audit's budgeted, cached, retried access to ``backend``."""
    from fairprobe.access.blackbox import BlackBox

    return BlackBox(backend, cache=access.cache, refresh=opt.refresh, budget=budget,
                    retries=access.retries, timeout=access.timeout,
                    concurrency=opt.concurrency, progress=access.progress, seed=access.seed)


def _audit_every_group(backend: Any, o: dict[str, Any], names: list[str]) -> AuditJob:
    """Every group (or intersection) on every metric, or two groups' rows on a metric
    :func:`~fairprobe.audit.run_audit` does not compute."""
    from fairprobe.audit.run import run_group_audit

    acc, q, opt, c = o["access"], o["question"], o["options"], o["columns"]
    method = "exact" if opt.interval == "exact" else "bonferroni"
    plan, kwargs = plan_group_audit(
        source=o["source"], columns=c, access=acc, options=opt, method=method,
        question=replace(q, metrics=tuple(_metric_names(names))),
        answer_cols=getattr(backend, "answer_columns", ()))
    with _blackbox(backend, acc, opt, plan["budget"]) as bb, _resumable(bb, acc.cache):
        result = run_group_audit(bb, plan["pool"], reference=q.reference, pos_label=c.pos_label,
                                 max_unusable_share=opt.max_unusable_share, **kwargs)
        if opt.allocation in ("neyman", "adaptive"):  # the rows asked depended on the answers
            plan["sample_groups"] = result.queried_groups
        prov = audit_provenance(bb, plan, seed=acc.seed, cache=acc.cache,
                                no_cache=acc.cache is None, refresh=opt.refresh)
        requests = {"paid": bb.spent, "cached": bb.from_cache}
    return AuditJob("audit", result, prov, plan=plan, requests=requests)


def _audit_two_groups(backend: Any, o: dict[str, Any], cols: list[str],
                      names: list[str]) -> AuditJob:  # fmt: skip
    """One two-group metric between ``group_a`` and ``group_b`` (:func:`run_audit`), with
    the name swap when asked."""
    from fairprobe.audit.run import run_audit
    from fairprobe.errors import InvalidParameterError

    acc, q, opt, c = o["access"], o["question"], o["options"], o["columns"]
    if len(cols) != 1 or len(names) != 1:
        raise InvalidParameterError(
            "A two-group audit (--group-a/--group-b) takes one metric and one --group-col; "
            "drop --group-a/--group-b to audit every group.")
    key = names[0].strip().lower()
    if key not in METRIC_CHOICES:
        raise InvalidParameterError(
            f"--metric must be one of {', '.join(sorted(METRIC_CHOICES))} in a two-group audit; "
            f"got {names[0]!r}.")
    name = METRIC_CHOICES[key]
    plan = plan_audit(source=o["source"], columns=replace(c, group=cols[0]), access=acc,
                      options=opt, metric=name, answer_cols=getattr(backend, "answer_columns", ()))
    swap = opt.name_swap if opt.run_name_swap else None
    extra: dict[str, Any] = {}
    n_budget = plan["budget"] * (2 if swap is not None else 1)
    with _blackbox(backend, acc, opt, n_budget) as bb, _resumable(bb, acc.cache):
        res = run_audit(bb, plan["pool"], group_col=cols[0], metric=name,
                        group_a=plan["group_a"], group_b=plan["group_b"],
                        label_col=plan["label"], feature_cols=plan["columns"].sent,
                        budget=plan["budget"], seed=acc.seed, tolerance=q.tolerance,
                        threshold=q.threshold, confidence_level=q.confidence_level,
                        max_unusable_share=opt.max_unusable_share, interval=opt.interval,
                        min_group_size=q.min_group_size, pos_label=plan.get("pos_label"))
        prov = audit_provenance(bb, plan, seed=acc.seed, cache=acc.cache,
                                no_cache=acc.cache is None, refresh=opt.refresh)
        if swap is not None:
            from fairprobe.access.variation import name_swap_audit
            from fairprobe.audit.run import draw_queries

            sample = draw_queries(plan["pool"], plan["budget"], acc.seed)[plan["columns"].sent]
            extra["name_swap"] = name_swap_audit(
                bb, sample, swap, seed=acc.seed, confidence_level=q.confidence_level).to_dict()
        requests = {"paid": bb.spent, "cached": bb.from_cache}
    return AuditJob("audit", res, prov, extra, plan=plan, requests=requests)


def audit_prompt_variants(
    backend: Any,
    *,
    prompt_templates: dict[str, str] | None = None,
    **kwargs: Any,
) -> AuditJob:
    """A two-group audit (:func:`audit_model`), re-run once per prompt template: what
    ``fairprobe audit --prompt-variants`` does.

    ``backend`` is an :class:`~fairprobe.access.openai_chat.OpenAIChatBackend` when
    ``prompt_templates`` (``{name: template}``, at least two) are given; each template is
    checked before anything is paid. The first run's result and provenance are the job's;
    ``extra["prompt_variation"]`` holds every template's estimate and verdict and their spread
    (:func:`fairprobe.access.variation.prompt_sensitivity`), ``extra["usage"]`` the tokens the
    server reported summed over every run, and ``extra["requests"]`` the answers paid and cached
    over every run (with several runs or a ``name_swap``). Other parameters are
    :func:`audit_model`'s.
    """
    variants: list[Any] = []
    if prompt_templates is not None:
        from fairprobe.access.openai_chat import OpenAIChatBackend
        from fairprobe.errors import ConfigError

        if not isinstance(backend, OpenAIChatBackend):
            raise ConfigError("--prompt-variants needs an openai-chat backend config.")
        # every template is checked before anything is paid
        variants = [OpenAIChatBackend(backend.config, prompt_template=t)
                    for t in prompt_templates.values()]
    extra: dict[str, Any] = {}
    requests = {"paid": 0, "cached": 0, "runs": 0}  # every run's BlackBox: one source of truth

    def one(be: Any, swap: bool = False) -> AuditJob:
        job = audit_model(be, run_name_swap=swap, **kwargs)
        extra.update(job.extra)
        requests["paid"] += job.requests["paid"]
        requests["cached"] += job.requests["cached"]
        requests["runs"] += 1
        usage = getattr(be, "usage", None)
        if isinstance(usage, dict):  # tokens the server reported, summed over every run
            total = extra.setdefault("usage", dict.fromkeys(usage, 0))
            for k, v in usage.items():
                total[k] = total.get(k, 0) + v
        return job

    first = one(backend, swap=True)
    if prompt_templates is not None:
        from fairprobe.access.variation import prompt_sensitivity

        by_template = dict(zip(prompt_templates.values(), variants, strict=True))
        extra["prompt_variation"] = prompt_sensitivity(
            prompt_templates, lambda _name, t: one(by_template[t]).result).to_dict()
    swap = kwargs.get("name_swap", getattr(kwargs.get("options"), "name_swap", None))
    if requests["runs"] > 1 or swap is not None:
        extra["requests"] = dict(requests)
    return AuditJob("audit", first.result, first.provenance, extra, plan=first.plan,
                    requests=dict(requests))
