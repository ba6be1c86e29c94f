"""Subgroup discovery as one call: what ``fairprobe discover`` does, on predictions or a model."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Unpack

import pandas as pd

from fairprobe._validation import split_names

if TYPE_CHECKING:
    from fairprobe.discover.proxy import ProxyOptions
    from fairprobe.discover.search import SearchOptions

__all__ = ["discover_job"]


def discover_job(
    data: Any = None,
    *,
    features: str | Sequence[str],
    y_pred: str | None = None,
    y_true: str | None = None,
    backend: Any = None,
    queries: str | os.PathLike[str] | pd.DataFrame | None = None,
    budget: int | None = None,
    seed: int = 0,
    cache: str | os.PathLike[str] | None = None,
    proxy: ProxyOptions | None = None,
    **options: Unpack[SearchOptions],
) -> Any:
    """Discover the unfair subgroups of predictions you have, or of a model's answers.

    With ``data`` (a frame, file, directory or glob) and ``y_pred``: the decisions are read from
    it. With ``backend`` and ``queries``: ``budget`` records (seeded) are drawn from the pool, the
    model is asked through a :class:`~fairprobe.access.BlackBox` (answers cached), and its
    decisions are searched; the features are never sent unless they are model inputs. The rest
    as :func:`~fairprobe.discover.discover_subgroups`, whose keyword options (``depth``,
    ``metric``, ``fdr``, ...: :class:`~fairprobe.discover.search.SearchOptions`) and defaults
    ``options`` passes through unchanged.

    With ``proxy`` (``--proxy bisg|bifsg``): race is not recorded; every slice's race gaps are
    bounded by the proxy (:func:`~fairprobe.discover.proxy.discover_by_proxy`), and a model is
    never sent the proxy's columns (names, places, recorded races).

    Returns
    -------
    Job
        ``kind="discover"``; ``.result`` is the :class:`~fairprobe.discover.DiscoveryResult`.
    """
    from fairprobe.discover.search import discover_subgroups
    from fairprobe.documents import Job
    from fairprobe.errors import InvalidParameterError
    from fairprobe.provenance import Provenance

    feats = split_names(features) or []
    search = discover_subgroups if proxy is None else _proxy_search(proxy, seed, options)
    if backend is None:
        if data is None or y_pred is None:
            raise InvalidParameterError(
                "Give --predictions FILE with --y-pred-col, or a model (--url / "
                "--backend-config) with --queries.")
        res = search(data, y_pred=y_pred, features=feats, y_true=y_true, **options)
        source = data if isinstance(data, str | os.PathLike) else type(data).__name__
        return Job("discover", res, Provenance.capture(seed=seed, extra={"input": str(source)}))
    if queries is None:
        raise InvalidParameterError("A model discovery needs the pool to ask: give --queries.")
    from fairprobe.access.draw import ask_pool, read_pool
    from fairprobe.access.identity import describe_backend
    from fairprobe.provenance import pool_digest

    pool = read_pool(queries)
    controls = list(options.get("control_cols") or ())
    missing = [f for f in feats + ([y_true] if y_true else []) + controls
               if f not in pool.columns]
    if missing:
        raise InvalidParameterError(f"--features/--y-true-col/--control-col name {missing[0]!r}, "
                                    "which the --queries pool does not have.")
    private = {} if proxy is None else proxy.private
    for c, flag in private.items():
        if c not in pool.columns:
            raise InvalidParameterError(f"{flag} {c!r} is not a column of the --queries pool.")
    # the proxy's names, places and recorded races are never sent
    sent = [c for c in pool.columns if c != y_true and c not in private]
    # discover's default is the whole pool (its --budget help says so)
    got = ask_pool(backend, pool, sent=sent,
                   budget="all" if budget is None else min(int(budget), len(pool)), seed=seed,
                   cache=cache)
    sample, answers = got.sample, got.answers
    prov = Provenance.capture(seed=seed, query_pool=pool_digest(pool, str(queries)),
                              backend=describe_backend(backend),
                              extra={"paid": got.paid, "cached": got.cached,
                                     **({"sent_columns": sent} if proxy is not None else {})})
    frame = sample.assign(fp_decision=answers.decisions).dropna(subset=["fp_decision"])
    frame["fp_decision"] = frame["fp_decision"].astype(int)
    res = search(frame, y_pred="fp_decision", features=feats, y_true=y_true, **options)
    return Job("discover", res, prov)


def _proxy_search(proxy: ProxyOptions, seed: int, options: Any) -> Any:
    """The search by proxied race with the options it takes; the others refused by flag."""
    from fairprobe import metrics as _metrics
    from fairprobe.discover.proxy import discover_by_proxy
    from fairprobe.errors import InvalidParameterError

    refused = {"control_cols": ("--control-col", ()), "metric": ("--metric", _metrics.DP.short),
               "method": ("--method", "holm"), "pvalue": ("--pvalue", "joint")}
    for key, (flag, default) in refused.items():
        if key in options and options[key] not in (default, None):  # type: ignore[literal-required]
            raise InvalidParameterError(
                f"{flag} does not apply to --proxy: the race gap in approval rate within each "
                "slice is decided on the proxy's bounds, Bonferroni over slices and races; "
                f"drop {flag}.")

    def search(data: Any, *, y_pred: str, features: Any, y_true: Any = None,
               **opts: Any) -> Any:
        if y_true is not None:
            raise InvalidParameterError("--y-true-col does not apply to --proxy (it compares "
                                        "approval rates): drop it.")
        keep = {k: opts[k] for k in ("depth", "fdr", "tolerance", "bins", "min_size",
                                     "pos_label") if k in opts}
        return discover_by_proxy(data, y_pred=y_pred, features=features, proxy=proxy,
                                 seed=seed, **keep)

    return search
