"""``fairprobe audit --predictions FILE --proxy bisg|bifsg``: audits when race is not recorded.

The command checks its flags and calls :func:`fairprobe.bisg.job.proxy_job`; the terminal shows
the match rates, one row per comparison (the bounds that decide, the weighted and BIRDiE
estimates with their assumptions), the proxy's calibration where race is recorded, and closes
with the verdict line; ``--json`` writes the document the report reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fairprobe.cli._common import check_flag_int, check_flag_real, check_output_path, console

__all__ = ["proxy_audit_command"]




def proxy_audit_command(
    *, proxy: str, predictions: str | None, y_pred_col: str | None, surname_col: str | None,
    zip_col: str | None, tract_col: str | None, first_name_col: str | None,
    race_col: str | None, group_a: str | None, group_b: str | None, reference: str | None,
    pos_label: Any, tolerance: float | None, threshold: float | None, confidence_level: float,
    seed: int, json_path: Path | None, fail_on: Any, given: dict[str, Any],
    strata: str | None = None, race_in_bounds: bool = False,
    model: dict[str, Any] | None = None,
) -> None:
    from fairprobe.errors import InvalidParameterError

    if proxy not in ("bisg", "bifsg"):
        raise InvalidParameterError(f"--proxy must be bisg or bifsg; got {proxy!r}.")
    for flag, value in given.items():
        if value:
            raise InvalidParameterError(
                f"{flag} does not apply to --proxy (it audits one decision column by races "
                f"estimated from --surname-col and --zip-col): drop {flag}.")
    from fairprobe.cli._common import check_file_or_model

    check_file_or_model("--proxy", predictions, model, y_pred_col,
                        "whose rows carry the names and places")
    if model is None and y_pred_col is None:
        raise InvalidParameterError("--proxy needs --y-pred-col, the column of decisions.")
    if surname_col is None:
        raise InvalidParameterError("--proxy needs --surname-col, the column of family names.")
    if proxy == "bifsg" and first_name_col is None:
        raise InvalidParameterError("--proxy bifsg needs --first-name-col (or use --proxy bisg).")
    if proxy == "bisg" and first_name_col is not None:
        raise InvalidParameterError("--first-name-col is used by --proxy bifsg: give that.")
    if group_b is not None and reference is not None and group_b != reference:
        raise InvalidParameterError("--group-b and --reference both name the reference race: "
                                    "give one.")
    check_flag_int(seed, "--seed", lo=0, hi=2**63 - 1)
    check_flag_real(confidence_level, "--confidence-level", lo=0.0, hi=1.0)
    check_output_path(json_path, "--json")
    from fairprobe.bisg.job import proxy_job
    from fairprobe.cli._common import split_list
    from fairprobe.stats.metrics import DEFAULT_TOLERANCE

    groups = split_list(group_a) or ["black", "hispanic", "api"]
    ref = group_b or reference or "white"
    from fairprobe.cli.audit import _label_value

    common: dict[str, Any] = dict(
        surname_col=surname_col, zip_col=zip_col, tract_col=tract_col,
        first_name_col=first_name_col, race_col=race_col,
        groups=[g.strip().lower() for g in groups], reference=ref.strip().lower(),
        tolerance=DEFAULT_TOLERANCE if tolerance is None else tolerance,
        threshold=0.8 if threshold is None else threshold, confidence_level=confidence_level,
        seed=seed, strata_cols=split_list(strata) or [], race_in_bounds=race_in_bounds)
    if model is not None:
        from fairprobe.bisg.job import proxy_model_job
        from fairprobe.cli._common import build_backend, parse_budget

        job = proxy_model_job(
            build_backend(model["url"], model["backend_config"], model["path"]),
            model["queries"], budget=parse_budget(model["budget"]), cache=model["cache"],
            feature_cols=split_list(model["feature_cols"]), **common)
    else:
        assert predictions is not None and y_pred_col is not None
        job = proxy_job(predictions, y_pred_col=y_pred_col, pos_label=_label_value(pos_label),
                        name=None, **common)
    print_proxy_audit(job.to_dict())
    from fairprobe.cli.gate import emit_job

    emit_job(json_path, job, fail_on)


def print_proxy_audit(doc: dict[str, Any], out: Any = None) -> None:
    """The terminal view of a proxy-audit document (the same rows the report shows)."""
    from rich.table import Table

    from fairprobe.report.kinds.proxy import comparison_rows, match_sentence

    out = console if out is None else out
    out.print(f"proxy {str(doc['method']).upper()}: " + match_sentence(doc["match"]),
              soft_wrap=True)
    rows = comparison_rows(doc)
    table = Table(title="approval-rate gaps by proxied race: the bounds decide")
    for c in ("gap", "region (estimated)", "bounds interval", "verdict"):
        table.add_column(c, no_wrap=True)
    for row in rows:
        table.add_row(row[0], row[1], row[2], row[5])
    out.print(table)
    other = Table(title="other estimates (shown, not counted: assumptions below)")
    for c in ("gap", "weighted", "BIRDiE"):
        other.add_column(c, no_wrap=True)
    for row in rows:
        other.add_row(row[0], row[3], row[4])
    out.print(other)
    a = doc["assumptions"]
    out.print(f"bounds: hold if {a['bounds']}", soft_wrap=True)
    out.print(f"weighted: {a['weighted']}", soft_wrap=True)
    out.print(f"BIRDiE: {a['birdie']}", soft_wrap=True)
    val = doc.get("validation")
    if val:
        cal = val["calibration"]
        gaps = ", ".join(f"{k} {v:.3f}" for k, v in cal["max_gap"].items() if v is not None)
        out.print(f"calibration on {val['recorded']} rows with recorded race: Brier "
                  f"{cal['brier']:.3f}; largest predicted-observed gap by bin: {gaps}",
                  soft_wrap=True)
        inb = val.get("in_bounds")
        if inb:
            out.print(f"bounds: the {inb['rows']} rows with recorded race enter them as known, "
                      f"which holds if {inb['assumption']}", soft_wrap=True)
        for d in val.get("direct") or []:
            if "low" in d:
                out.print(f"by recorded race: {d['group']} - {d['reference']} "
                          f"{d['estimate']:.3f} [{d['low']:.3f}, {d['high']:.3f}]: "
                          f"{d['verdict']}", soft_wrap=True)
    f = doc["finding"]
    iv = f["interval"]
    groups = " - ".join(f["question"]["groups"])
    line = (f"verdict: {doc['verdict']} ({groups}: bounds [{iv['low']:.3f}, {iv['high']:.3f}] "
            f"at level {iv['level']:.4g}, if the proxy is calibrated)")
    if f.get("reason"):
        line += f"; {f['reason']}"
    out.print(line, soft_wrap=True)
