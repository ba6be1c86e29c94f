"""Audits of predictions already made: a table of ``y_pred`` (and ``y_true``, scores, groups).

No model is asked and nothing is paid: the table's rows are the answers. The verdict path is the
every-group audit's (:class:`fairprobe.audit.GroupAudit`, an
:class:`~fairprobe.stats.frame.AuditFrame`): the same by-group rates, exact intervals,
simultaneous intervals, summaries and verdict as an audit of a live model, so point estimates
equal fairlearn's ``MetricFrame`` on the same columns.

>>> from fairprobe.audit import audit_predictions
>>> res = audit_predictions(df, y_pred_col="p", y_true_col="y", group_col="race",
...                         metrics=["dp", "eo"])                       # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from fairprobe import metrics as _metrics
from fairprobe._defaults import DEFAULT_MIN_GROUP_SIZE
from fairprobe.audit.job import two_groups
from fairprobe.audit.model_options import PredictionColumns, TimeWindows, prediction_options
from fairprobe.documents import Job
from fairprobe.errors import DataError
from fairprobe.options import AuditQuestion

__all__ = ["PredictionsJob", "audit_predictions", "predictions_identity", "predictions_job"]


def predictions_identity(source: str, sha256: str) -> str:
    """The ``backend`` string of a predictions audit: ``predictions:<file>#<sha256[:12]>``."""
    return f"predictions:{source}#{sha256[:12]}"


def _column(df: pd.DataFrame, col: str | None, flag: str) -> None:
    if col is not None and col not in df.columns:
        have = ", ".join(map(str, df.columns[:12]))
        raise DataError(f"{flag} {col!r} is not a column of the predictions (columns: {have}).")


def audit_predictions(
    df: Any,
    *,
    columns: PredictionColumns | None = None,
    question: AuditQuestion | None = None,
    windows: TimeWindows | None = None,
    budget: int | None = None,
    seed: int = 0,
    method: str = "exact",
    backend: str = "predictions",
    engine: str = "auto",
    scheduler: Any = None,
    **flags: Any,
) -> Any:
    """Audit a table of predictions: every group (or intersection) on every metric.

    Every row is counted in one pass by a counting engine (:mod:`fairprobe.scale`): the result
    is built from the per-group sums (``result.counts``), never from the rows in Python, and
    equals the in-memory audit of the same rows. A ``budget`` draws a sample of rows in memory
    (pandas) instead.

    The options objects say what to audit: ``columns`` the table's columns (all its fields),
    ``question`` the metrics, band, floor, level, reference and smallest group (all its
    fields), ``windows`` the time windows counted too (all its fields). ``flags`` are their
    fields as flat keywords (the compatibility form, :func:`~fairprobe.audit.model_options.
    prediction_options`; ``metrics`` defaults to ``("dp",)``): ``y_pred_col`` and
    ``group_col`` are required unless ``columns`` is given.

    Parameters
    ----------
    df : DataFrame, Arrow table, Polars frame, or path
        One row per decision: a frame, or a Parquet/CSV file, a directory of them or a glob.
    budget : int, optional
        Rows drawn uniformly without replacement (seeded, in memory); default every row,
        counted by the engine.
    engine : {"auto", "duckdb", "pandas", "dask"}
        The counting engine (``auto``: DuckDB when installed, else pandas).
    scheduler : str or distributed.Client, optional
        With ``engine="dask"``: the scheduler (default a local cluster on 127.0.0.1).

    Other Parameters
    ----------------
    y_pred_col : str
        The decisions: 0/1, booleans, or labels with ``pos_label``.
    group_col : str or sequence of str
        Sensitive column(s); several audit their intersections.
    y_true_col : str, optional
        True labels (needed by every metric but ``dp``/``di``/``score-gap``).
    score_col : str, optional
        Scores in [0, 1] (for ``score-gap``).
    sample_weight_col : str, optional
        Instance weights: every rate is weighted (fairlearn's ``sample_params``), its interval
        design-based (:func:`fairprobe.stats.dropin.design_rates`), the
        summaries ``bonferroni`` (an ``exact``
        ``method`` becomes ``bonferroni``; weighted counts are not integers).
    pos_label : scalar, optional
        The positive value of ``y_pred_col`` and ``y_true_col`` when they hold labels, as in
        fairlearn's metrics (``">50K"``).
    time_col, window : str, optional
        Count per time window too (``window`` such as ``"1D"``, ``"7D"``): the result's
        ``counts`` then hold one table per window (:func:`fairprobe.scale.timeseries.window_findings`).
    window_origin : str, optional
        Windows start at ``window_origin + k * width`` (default: midnight UTC of the data's
        first day).

    Returns
    -------
    fairprobe.audit.GroupAudit
        With ``paid = cached = 0``, ``backend`` naming the table, and ``counts`` the
        :class:`~fairprobe.scale.GroupCounts` it was built from (``None`` with a ``budget``).

    Notes
    -----
    The other parameters (``metrics``, ``min_group_size``, ``reference``, ``tolerance``,
    ``threshold``, ``confidence_level``, ``method``) are as in
    :func:`fairprobe.audit.run_group_audit`.
    """
    o = prediction_options(flags, columns=columns, question=question, windows=windows)
    c, q, w = o["columns"], o["question"], o["windows"]
    if budget is None:
        return _audit_counts(df, c, q, w, seed=seed, method=method, backend=backend,
                             engine=engine, scheduler=scheduler)  # fmt: skip
    if w.time_col is not None or w.window is not None:
        raise DataError("--time-col/--window count every row: drop --budget.")
    return _audit_sample(df, c, q, budget=budget, seed=seed, method=method, backend=backend)


def _audit_sample(df: Any, c: PredictionColumns, q: AuditQuestion, *, budget: int, seed: int,
                  method: str, backend: str) -> Any:
    """A sample of ``budget`` rows drawn in memory (seeded), audited from its rows."""
    from fairprobe.audit.run import GroupAudit, check_group_audit, draw_queries

    if not isinstance(df, pd.DataFrame):
        from fairprobe.scale.engine import _to_pandas, resolve_source

        df = _to_pandas(resolve_source(df))
    for col, flag in ((c.y_pred_col, "--y-pred-col"), (c.y_true_col, "--y-true-col"),
                      (c.score_col, "--score-col"), (c.sample_weight_col, "--sample-weight-col")):
        _column(df, col, flag)
    n = len(df)
    if budget > n:
        raise DataError(f"--budget {budget} is larger than the predictions table ({n} rows); "
                        "lower it or use --budget all.")
    if n < 2:
        raise DataError(f"The predictions table has {n} row(s); an audit needs at least 2.")
    cols, names, _ = check_group_audit(
        df, group_col=c.group_col, metrics=q.metrics, label_col=c.y_true_col,
        feature_cols=[c.y_pred_col], budget=budget, seed=seed, min_group_size=q.min_group_size,
        confidence_level=q.confidence_level, method=method, tolerance=q.tolerance,
        threshold=q.threshold)
    sample = df if budget >= n else draw_queries(df, budget, seed)
    sample = sample.reset_index(drop=True)
    y_pred, y_true, scores, weights = _sample_columns(sample, c, names)
    if weights is not None:
        method = "bonferroni" if method == "exact" else method
    if q.reference is not None:
        from fairprobe.stats.groups import group_labels

        group_labels(sample[cols]).position(q.reference)
    result = GroupAudit(
        metrics=names, budget=budget, queried=len(sample), paid=0, cached=0, unparsed=0,
        seed=seed, backend=backend, group_cols=cols, unparsed_by_group={},
        y_pred=y_pred, y_true=y_true, sensitive_features=sample[cols], scores=scores,
        sample_weight=weights,
        min_group_size=q.min_group_size, confidence_level=q.confidence_level, method=method,
        reference=q.reference, tolerance=0.05 if q.tolerance is None else q.tolerance,
        threshold=0.8 if q.threshold is None else q.threshold,
    )
    result.counts = None  # type: ignore[attr-defined]
    return result


def _sample_columns(sample: pd.DataFrame, c: PredictionColumns, names: Sequence[str]
                    ) -> tuple[Any, Any, Any, Any]:  # fmt: skip
    """The sample's decisions, labels, scores and weights as arrays, each checked."""
    from fairprobe.stats.frame import _binary_labels

    y_pred = _binary_labels(sample[c.y_pred_col], f"The prediction column {c.y_pred_col!r} "
                            "(--y-pred-col)", c.pos_label).astype(np.int64)
    y_true = None if c.y_true_col is None else _binary_labels(
        sample[c.y_true_col], f"The label column {c.y_true_col!r} (--y-true-col)",
        c.pos_label).astype(np.int64)
    scores = None
    if c.score_col is not None:
        scores = pd.to_numeric(sample[c.score_col], errors="coerce").to_numpy(dtype=float)
        if np.isnan(scores).any() or (scores < 0).any() or (scores > 1).any():
            raise DataError(f"The score column {c.score_col!r} (--score-col) must hold numbers "
                            "in [0, 1] on every row.")
    elif _metrics.SCORE_GAP.name in names:
        raise DataError("score-gap needs scores: give --score-col.")
    weights = None
    if c.sample_weight_col is not None:
        weights = pd.to_numeric(sample[c.sample_weight_col],
                                errors="coerce").to_numpy(dtype=float)
        if not np.isfinite(weights).all() or (weights < 0).any():
            raise DataError(f"The weight column {c.sample_weight_col!r} (--sample-weight-col) "
                            "must hold finite numbers >= 0 on every row.")
    return y_pred, y_true, scores, weights


def prediction_spec(*, y_pred_col: str, group_col: str | Sequence[str],
                    y_true_col: str | None = None, score_col: str | None = None,
                    sample_weight_col: str | None = None, pos_label: Any = None,
                    time_col: str | None = None, window: str | None = None,
                    window_origin: str | None = None) -> Any:
    """The :class:`~fairprobe.scale.CountSpec` of a predictions audit's columns
    (:meth:`~fairprobe.audit.model_options.PredictionColumns.spec`)."""
    return PredictionColumns(
        y_pred_col, group_col, y_true_col=y_true_col, score_col=score_col,
        sample_weight_col=sample_weight_col, pos_label=pos_label,
    ).spec(TimeWindows(time_col, window, window_origin))


def _audit_counts(source: Any, c: PredictionColumns, q: AuditQuestion, w: TimeWindows, *,
                  seed: int, method: str, backend: str, engine: str, scheduler: Any) -> Any:
    """Every row counted by the engine; the audit built from the counts."""
    from fairprobe.audit.run import GroupAudit, check_group_audit
    from fairprobe.scale import count

    spec = c.spec(w)
    # the parameters are checked before the (possibly long) pass over the rows
    cols, names, _ = check_group_audit(
        pd.DataFrame(columns=[*spec.group_cols, c.y_pred_col,
                              *([c.y_true_col] if c.y_true_col else [])]),
        group_col=c.group_col,
        metrics=q.metrics, label_col=c.y_true_col, feature_cols=[c.y_pred_col], budget=2,
        seed=seed, min_group_size=q.min_group_size, confidence_level=q.confidence_level,
        method=method, tolerance=q.tolerance, threshold=q.threshold)
    if c.score_col is None and _metrics.SCORE_GAP.name in names:
        raise DataError("score-gap needs scores: give --score-col.")
    counts = count(source, spec, engine=engine, scheduler=scheduler)
    n = counts.n_rows
    if n < 2:
        raise DataError(f"The predictions table has {n} row(s); an audit needs at least 2.")
    if c.sample_weight_col is not None:
        method = "bonferroni" if method == "exact" else method
    result = GroupAudit.from_counts(
        counts, accounting={"metrics": names, "budget": n, "queried": n, "paid": 0,
                            "cached": 0, "unparsed": 0, "seed": seed, "backend": backend,
                            "group_cols": cols, "unparsed_by_group": {}},
        min_group_size=q.min_group_size, confidence_level=q.confidence_level, method=method,
        reference=q.reference, tolerance=0.05 if q.tolerance is None else q.tolerance,
        threshold=0.8 if q.threshold is None else q.threshold)
    result.counts = counts  # type: ignore[attr-defined]
    return result


def per_instance_records(source: Any, spec: Any, engine: str = "auto") -> list[dict[str, Any]]:
    """``{value, group[, y_true]}`` per row, in file order: the opt-in ``per_instance`` list
    (``--per-instance``; ``fairprobe radius`` reads it). Its size grows with the rows."""
    from fairprobe.scale.engine import per_instance_rows

    p, keys, t = per_instance_rows(source, spec, engine)
    labels = keys.iloc[:, 0].astype(str)
    for c in keys.columns[1:]:
        labels = labels + ", " + keys[c].astype(str)
    vals = p.astype(float).tolist()
    labs = labels.tolist()
    if t is None:
        return [{"value": v, "group": g} for v, g in zip(vals, labs, strict=True)]
    return [{"value": v, "group": g, "y_true": y}
            for v, g, y in zip(vals, labs, t.astype(float).tolist(), strict=True)]


def files_sha256(files: Sequence[Any]) -> str:
    """One SHA-256 over several files: of each file's name and SHA-256, in path order."""
    import hashlib
    from pathlib import Path

    from fairprobe.access.local import file_sha256

    h = hashlib.sha256()
    for f in files:
        h.update(f"{Path(f).name}\x1f{file_sha256(f)}\n".encode())
    return h.hexdigest()


@dataclass(frozen=True)
class PredictionsJob(Job):
    """A finished audit of a predictions file: :class:`~fairprobe.documents.Job` with what was
    read (``rows``, ``files``, ``sha256``) for the command's summary line.

    The document holds the result without one entry per row unless ``per_instance`` was asked
    for (:func:`predictions_job`).
    """

    rows: int = 0
    files: int = 0
    sha256: str = ""
    per_instance_rows: bool = False

    def result_dict(self) -> Any:
        return self.result.to_dict(per_instance=self.per_instance_rows)


def predictions_job(
    predictions: Any,
    *,
    y_pred_col: str,
    group_col: str | Sequence[str],
    group_a: str | None = None,
    group_b: str | None = None,
    per_instance: bool = False,
    name: str | None = None,
    sha256: str | None = None,
    control_cols: Sequence[str] | None = None,
    control_bins: int = 4,
    label_proxy_col: str | None = None,
    **options: Any,
) -> PredictionsJob:
    """Audit a predictions file as one call: what ``fairprobe audit --predictions`` does.

    ``options`` are the parameters of :func:`audit_predictions` (``metrics``, ``y_true_col``,
    ``score_col``, ``sample_weight_col``, ``pos_label``, ``budget``, ``seed``, ``engine``,
    ``time_col``, ``window``, ...), with its defaults.

    The file (or directory, or glob) is hashed, its rows counted (or, with ``budget``, a sample
    drawn in memory) and audited by :func:`audit_predictions`; the provenance names the file,
    its SHA-256 and the columns used. ``group_a``/``group_b`` keep the rows of two groups of one
    column (``group_b`` ``rest`` or ``None``: every other row). With ``time_col`` and
    ``window`` the document also holds the findings of every window (``windows``); with
    ``per_instance``, one entry per row (``per_instance``; ``fairprobe radius`` reads it).
    With ``label_proxy_col`` (a 0/1 guess of the true label on every row, ``y_true_col``
    filled on a random subset only), the label metrics' gaps by PPI++ from every row
    (``ppi``: :func:`fairprobe.stats.ppi.ppi_gap_findings`), while the audit itself uses the
    labelled rows only. With ``control_cols``, the gap within strata of those columns (numeric ones cut into
    ``control_bins`` quantile bins) beside the unconditional one, for every metric of
    :data:`fairprobe.stats.stratified.CONTROL_RATES` asked for (``control``:
    :func:`fairprobe.stats.stratified.stratified_gaps`).

    ``predictions`` may be a frame already read (e.g. standard input): ``name`` is then what
    the provenance calls it and ``sha256`` the hash of its bytes (default: the frame's content
    hash, :func:`fairprobe.provenance.pool_digest`).

    Returns
    -------
    PredictionsJob
        ``kind="audit"``; ``.result`` is the :class:`~fairprobe.audit.GroupAudit`.
    """
    from pathlib import Path

    from fairprobe.access.local import file_sha256
    from fairprobe.provenance import Provenance, pool_digest, redact_text
    from fairprobe.scale.engine import engine_name, list_files

    budget, engine = options.get("budget"), options.get("engine", "auto")
    time_col = options.get("time_col")
    files: list[Any] = []
    source: Any = predictions
    if isinstance(predictions, pd.DataFrame):
        label = "dataframe" if name is None else name
        sha = sha256 if sha256 is not None else pool_digest(predictions)["sha256"]
    else:
        label = str(predictions) if name is None else name
        files = list_files(predictions)
        sha = file_sha256(files[0]) if len(files) == 1 else files_sha256(files)
        if budget is not None:  # a sample of rows, drawn in memory
            from fairprobe._io import read_table

            source = read_table(predictions, "File") if len(files) == 1 else None
    cols = list(_group_names(group_col))
    source, ppi_block = _rows_in_memory(predictions, source, cols, (group_a, group_b),
                                        label_proxy_col, y_pred_col, options)
    result = audit_predictions(
        source if source is not None else predictions, y_pred_col=y_pred_col, group_col=cols,
        backend=predictions_identity(Path(label).name, sha), **options)
    named = {k: options.get(f"{k}_col") for k in ("y_true", "score", "sample_weight", "time")}
    used = [c for c in (y_pred_col, *named.values(), *cols) if c is not None]
    in_memory = isinstance(source, pd.DataFrame)
    pool = (pool_digest(source, label) if in_memory else
            {"sha256": sha, "rows": result.queried, "columns": used,
             "source": redact_text(label), "files": len(files)})
    columns = {"y_pred": y_pred_col, "y_true": named["y_true"], "score": named["score"],
               "sample_weight": named["sample_weight"], "groups": cols, "used": used,
               "time": time_col}
    prov = Provenance.capture(
        seed=result.seed,
        query_pool={**pool, "file_sha256": sha},
        backend={"kind": "predictions", "identity": result.backend, "file": label,
                 "file_sha256": sha},
        extra={"columns": columns,
               "engine": engine_name(engine) if budget is None else "pandas (sample)"},
    )
    extra: dict[str, Any] = {}
    if ppi_block is not None:
        extra["ppi"] = ppi_block
    if per_instance and result.counts is not None:  # counted: the rows are read back in order
        extra["per_instance"] = per_instance_records(
            source if in_memory else predictions,
            prediction_spec(y_pred_col=y_pred_col, group_col=cols, y_true_col=named["y_true"],
                            pos_label=options.get("pos_label")), engine)
    if time_col is not None:
        from fairprobe.scale.timeseries import window_findings

        extra["windows"] = window_findings(
            result.counts, result.metrics,
            min_group_size=options.get("min_group_size", DEFAULT_MIN_GROUP_SIZE),
            confidence_level=result.confidence_level, method=result.method,
            reference=options.get("reference"), tolerance=result.tolerance,
            threshold=result.threshold)
    if control_cols:
        extra["control"] = control_analyses(
            source if in_memory else predictions, result, y_pred_col=y_pred_col, group_cols=cols,
            control_cols=list(control_cols), bins=control_bins,
            y_true_col=named["y_true"], pos_label=options.get("pos_label"),
            min_group_size=options.get("min_group_size", DEFAULT_MIN_GROUP_SIZE))
    return PredictionsJob(
        "audit", result, prov, extra, rows=len(source) if in_memory else result.queried,
        files=len(files), sha256=sha,
        per_instance_rows=per_instance and result.counts is None)


def _rows_in_memory(predictions: Any, source: Any, cols: list[str],
                    pair: tuple[str | None, str | None], label_proxy_col: str | None,
                    y_pred_col: str, options: dict[str, Any]) -> tuple[Any, Any]:
    """The rows the audit needs in memory, and the PPI++ block: two groups of one column keep
    their rows (``pair``); with ``label_proxy_col`` PPI++ runs on every row and the audit on the
    labelled ones. Otherwise ``source`` is returned as is (the engine counts the file)."""
    group_a, group_b = pair
    if group_a is None and group_b is not None:
        from fairprobe.errors import InvalidParameterError

        raise InvalidParameterError("--group-b needs --group-a (the two groups compared).")
    if (group_a is not None or label_proxy_col is not None) and \
            not isinstance(source, pd.DataFrame):
        from fairprobe.scale.engine import _to_pandas, resolve_source

        source = _to_pandas(resolve_source(predictions))
    if group_a is not None:
        source = two_groups(source, cols, group_a, group_b)
    ppi_block = None
    if label_proxy_col is not None:
        ppi_block, source = proxy_analysis(source, y_pred_col=y_pred_col, group_cols=cols,
                                           proxy_col=label_proxy_col, options=options)
    return source, ppi_block


def proxy_analysis(source: pd.DataFrame, *, y_pred_col: str, group_cols: Sequence[str],
                   proxy_col: str, options: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """The PPI++ block of ``--label-proxy-col`` from every row, and the labelled rows (those
    with a ``--y-true-col`` value) the audit itself is then run on."""
    from fairprobe.errors import InvalidParameterError
    from fairprobe.stats.frame import _binary_labels, fairness_metric_name
    from fairprobe.stats.groups import group_labels
    from fairprobe.stats.ppi import ppi_gap_findings

    y_true_col = options.get("y_true_col")
    pos_label = options.get("pos_label")
    for col, flag in ((y_pred_col, "--y-pred-col"), (y_true_col, "--y-true-col"),
                      (proxy_col, "--label-proxy-col"), *((c, "--group-col") for c in group_cols)):
        _column(source, col, flag)
    names = [fairness_metric_name(m) for m in options.get("metrics", ("dp",))]
    from fairprobe.metrics import METRICS, RATES

    usable = [m for m in names if METRICS[m].kind == "difference" and len(METRICS[m].rates) == 1
              and "y_true" in RATES[METRICS[m].rates[0]].needs]
    if not usable:
        raise InvalidParameterError("--label-proxy-col estimates label metrics' gaps (eo, fpr, "
                                    "ppv, ...): add one to --metric.")
    raw = source[y_true_col]
    labelled = raw.notna() & (raw.astype(str).str.strip() != "")
    if not labelled.any():
        raise DataError(f"--y-true-col {y_true_col!r} is empty on every row: PPI++ "
                        "(--label-proxy-col) needs the true label on a random subset.")
    if source[proxy_col].isna().any():
        raise DataError(f"--label-proxy-col {proxy_col!r} is empty on some rows: it must hold "
                        "a 0/1 guess of the true label on every row.")
    proxy = _binary_labels(source[proxy_col], f"The label proxy column {proxy_col!r} "
                           "(--label-proxy-col)", pos_label).astype(np.float64)
    y_pred = _binary_labels(source[y_pred_col], f"The prediction column {y_pred_col!r} "
                            "(--y-pred-col)", pos_label).astype(np.float64)
    y_true = np.full(len(source), np.nan)
    y_true[labelled.to_numpy()] = _binary_labels(
        raw[labelled], f"The label column {y_true_col!r} (--y-true-col)", pos_label)
    gl = group_labels(source[list(group_cols)])
    groups = np.asarray(gl.labels, dtype=object)[gl.codes]
    tol = options.get("tolerance")
    block = ppi_gap_findings(y_pred, y_true, proxy, groups, usable,
                             tolerance=0.05 if tol is None else tol,
                             confidence_level=options.get("confidence_level", 0.95),
                             proxy_col=proxy_col)
    return block, source[labelled.to_numpy()].reset_index(drop=True)


def control_analyses(source: Any, result: Any, *, y_pred_col: str, group_cols: Sequence[str],
                     control_cols: Sequence[str], bins: int, y_true_col: str | None,
                     pos_label: Any, min_group_size: int) -> list[dict[str, Any]]:
    """The within-strata comparison of every metric that supports one, beside the audit's own
    finding on it. The named columns are read into memory (the strata's counts are few, but the
    quantile bins of a numeric control need its values)."""
    from fairprobe.errors import InvalidParameterError
    from fairprobe.stats.frame import _binary_labels
    from fairprobe.stats.groups import group_labels
    from fairprobe.stats.stratified import CONTROL_RATES, stratified_gaps

    overlap = [c for c in control_cols if c in group_cols or c in (y_pred_col, y_true_col)]
    if overlap:
        raise InvalidParameterError(f"--control-col {overlap[0]} is also the group, decision or "
                                    "label column: name legitimate factors only.")
    names = [m for m in result.metrics if m in CONTROL_RATES]
    if not names:
        raise InvalidParameterError("--control-col compares rates within strata: add --metric "
                                    "dp (or eo, fpr) to the metrics.")
    if not isinstance(source, pd.DataFrame):
        from fairprobe.scale.engine import _to_pandas, resolve_source

        source = _to_pandas(resolve_source(source))
    for col in control_cols:
        _column(source, col, "--control-col")
    y_pred = _binary_labels(source[y_pred_col], f"The prediction column {y_pred_col!r} "
                            "(--y-pred-col)", pos_label).astype(np.int64)
    y_true = None if y_true_col is None else _binary_labels(
        source[y_true_col], f"The label column {y_true_col!r} (--y-true-col)",
        pos_label).astype(np.int64)
    gl = group_labels(source[list(group_cols)])
    groups = pd.Series(np.asarray(gl.labels, dtype=object)[gl.codes], index=source.index)
    summaries = result.summaries()
    out = []
    for m in names:
        s = summaries.get(m)
        out.append(stratified_gaps(
            source, y_pred=y_pred, y_true=y_true, groups=groups, controls=control_cols,
            metric=m, bins=bins, tolerance=result.threshold if m == _metrics.DI.name
            else result.tolerance,
            confidence_level=result.confidence_level, min_group_size=min_group_size,
            unconditional=None if s is None else s.finding).to_dict())
    return out


def _group_names(group_col: str | Sequence[str]) -> list[str]:
    from fairprobe._validation import split_names

    return (split_names(group_col) or []) if isinstance(group_col, str) else list(group_col)
