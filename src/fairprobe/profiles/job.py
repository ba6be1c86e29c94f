"""``profile_job``: read a predictions file, compute one profile, and wrap it as a ``Job``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from fairprobe.documents import Job
from fairprobe.errors import DataError, InvalidParameterError

__all__ = ["PROFILES", "profile_job", "profile_model_job"]

#: ``--profile`` choices.
PROFILES = ("nyc-ll144", "ugesp", "cfpb-air")


def profile_job(
    predictions: Any, *, profile: str, group_cols: Sequence[str], y_pred_col: str | None,
    score_col: str | None = None, reference: str | None = None, pos_label: Any = None,
    exclude_small: bool = False, air_threshold: float = 0.8, smd_threshold: float = 0.3,
    confidence_level: float = 0.95, interval: str = "exact", data_source: str | None = None,
    audit_dates: str | None = None, distribution_date: str | None = None,
    name: str | None = None, sha256: str | None = None,
) -> Job:
    """One profile of a predictions file (a path or a DataFrame) as a ``profile`` document."""
    from fairprobe.provenance import Provenance, pool_digest, redact_text

    if profile not in PROFILES:
        raise InvalidParameterError(f"--profile must be one of {', '.join(PROFILES)}; got "
                                    f"{str(profile)[:40]!r}.")
    if isinstance(predictions, pd.DataFrame):
        df, label = predictions, (name or "dataframe")
        sha = sha256 or pool_digest(df)["sha256"]
    else:
        from fairprobe._io import read_table
        from fairprobe.access.local import file_sha256

        df, label = read_table(predictions, "--predictions file"), str(predictions)
        sha = file_sha256(predictions)
    if len(df) == 0:
        raise DataError(f"{label} has no rows.")
    result: Any
    if profile == "nyc-ll144":
        if len(group_cols) != 2:
            raise InvalidParameterError(
                "--profile nyc-ll144 needs --group-col SEX,RACE: the sex column and the "
                "race/ethnicity column, in that order (the intersections are made from them).")
        from fairprobe.profiles.nyc_ll144 import ll144_profile

        result = ll144_profile(
            df, sex_col=group_cols[0], race_col=group_cols[1],
            y_pred_col=None if score_col is not None else y_pred_col, score_col=score_col,
            pos_label=pos_label, exclude_small=exclude_small, threshold=air_threshold,
            confidence_level=confidence_level, interval=interval, data_source=data_source,
            audit_dates=audit_dates, distribution_date=distribution_date)
    else:
        if y_pred_col is None:
            raise InvalidParameterError(f"--profile {profile} needs --y-pred-col, the column "
                                        "of decisions.")
        if profile == "ugesp":
            from fairprobe.profiles.ugesp import ugesp_profile

            result = ugesp_profile(df, group_cols=group_cols, y_pred_col=y_pred_col,
                                   pos_label=pos_label, threshold=air_threshold,
                                   exclude_small=exclude_small,
                                   confidence_level=confidence_level, interval=interval)
        else:
            from fairprobe.profiles.cfpb_air import cfpb_air_profile

            result = cfpb_air_profile(
                df, group_cols=group_cols, y_pred_col=y_pred_col, reference=reference,
                score_col=score_col, pos_label=pos_label, air_threshold=air_threshold,
                smd_threshold=smd_threshold, confidence_level=confidence_level,
                interval=interval)
    used = [c for c in (*group_cols, y_pred_col, score_col) if c]
    prov = Provenance.capture(
        query_pool={"sha256": sha, "rows": int(len(df)), "columns": used,
                    "source": redact_text(label), "file_sha256": sha},
        backend={"kind": "predictions", "identity": f"predictions:{sha[:16]}", "file": label,
                 "file_sha256": sha})
    return Job("profile", result, prov)


def profile_model_job(
    backend: Any, queries: Any, *, profile: str, group_cols: Sequence[str],
    budget: int | str | None = None, seed: int = 0, cache: Any = None,
    feature_cols: Sequence[str] | None = None, send_group: bool = False,
    label_col: str | None = None, model_scores: bool = False, **options: Any,
) -> Job:
    """One profile of a black-box model's answers: ``budget`` records (seeded) drawn from the
    ``queries`` pool are asked of ``backend`` through a :class:`~fairprobe.access.BlackBox`
    (answers cached) and the rule's tables are computed on its decisions, or with
    ``model_scores`` on its scores (the LL144 scoring rate, the CFPB profile's SMD), exactly as
    :func:`profile_job` computes them on a file. The group columns (and ``label_col``) are not
    sent unless ``send_group``; ``options`` are :func:`profile_job`'s.
    """
    from fairprobe.access.draw import ask_pool, read_pool
    from fairprobe.access.identity import describe_backend
    from fairprobe.provenance import Provenance, pool_digest

    pool = read_pool(queries)
    for c in group_cols:
        if c not in pool.columns:
            raise DataError(f"--group-col {c!r} is not a column of the --queries pool (columns: "
                            f"{', '.join(map(str, pool.columns[:12]))}).")
    hidden = set() if send_group else set(group_cols)
    if label_col:
        hidden.add(label_col)
    sent = list(feature_cols) if feature_cols else [c for c in pool.columns if c not in hidden]
    got = ask_pool(backend, pool, sent=sent, budget=budget, seed=seed, cache=cache)
    n, sample, answers = len(got.sample), got.sample, got.answers
    frame = sample.assign(fp_decision=answers.decisions, fp_score=answers.scores)
    frame = frame.dropna(subset=["fp_score" if model_scores else "fp_decision"])
    if frame.empty:
        raise DataError("the model gave no usable " + ("score" if model_scores else "decision")
                        + " on the records asked: " + ("its backend returns no scores; drop "
                        "--score-col model." if model_scores else "check --url/--backend-config."))
    frame["fp_decision"] = frame["fp_decision"].astype(int)
    job = profile_job(frame, profile=profile, group_cols=group_cols, y_pred_col="fp_decision",
                      score_col="fp_score" if model_scores else None, name=str(queries),
                      **options)
    prov = Provenance.capture(seed=seed, query_pool=pool_digest(pool, str(queries)),
                              backend=describe_backend(backend),
                              extra={"paid": got.paid, "cached": got.cached,
                                     "sent_columns": sent, "unusable": int(n - len(frame))})
    import dataclasses

    return dataclasses.replace(job, provenance=prov)
