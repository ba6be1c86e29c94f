"""``fairprobe audit``: a fixed-budget black-box audit of one fairness metric.

Every flag is checked before the first backend call (:func:`check_audit_flags` and
:func:`plan_audit`), so a typo never costs a paid query; the messages name the flag. The result
JSON carries the provenance block (:mod:`fairprobe.provenance`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from fairprobe.cli._common import (
    build_backend,
    cache_policy,
    check_flag_choice,
    check_flag_int,
    check_flag_real,
    check_output_path,
    console,
    open_blackbox,
    read_table,
    split_list,
)

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_CACHE = Path(".fairprobe") / "cache.sqlite"

#: ``--metric`` values (case-insensitive) -> metric names.
METRIC_CHOICES = {
    "di": "disparate_impact_ratio",
    "dp": "demographic_parity_difference",
    "sp": "demographic_parity_difference",
    "eo": "equal_opportunity_difference",
    "accuracy-gap": "performance_gap",
    "gap": "performance_gap",
    "disparate_impact_ratio": "disparate_impact_ratio",
    "demographic_parity_difference": "demographic_parity_difference",
    "equal_opportunity_difference": "equal_opportunity_difference",
    "performance_gap": "performance_gap",
}
_NEEDS_LABEL = ("equal_opportunity_difference", "performance_gap")
#: Group defaults that follow ``--group-col`` (only for a column of that name).
DEFAULT_GROUPS = {"sex": ("Female", "Male")}
#: ``--group-b`` values meaning "every other value".
REST_WORDS = ("*", "rest")


def check_audit_flags(
    *,
    metric: str,
    budget: int | None,
    seed: int,
    tolerance: float | None,
    threshold: float | None,
    confidence_level: float,
    concurrency: int,
    retries: int,
    timeout: float | None,
    no_cache: bool,
    refresh: bool,
    json_path: Path | None,
    cache: Path,
) -> str:
    """Check every flag that needs no data; return the metric's full name."""
    from fairprobe.errors import InvalidParameterError

    name = check_flag_choice(metric, "--metric", METRIC_CHOICES)
    if budget is not None:
        check_flag_int(budget, "--budget", lo=2, hint=" (at least one query per group)")
    check_flag_int(seed, "--seed", lo=0)
    if name == "disparate_impact_ratio":
        if tolerance is not None:
            raise InvalidParameterError(
                "--tolerance applies to difference metrics (dp, eo, accuracy-gap); the ratio "
                "di is judged with --threshold."
            )
        if threshold is not None:
            check_flag_real(threshold, "--threshold", lo=0.0, hi=1.0, closed="right")
    else:
        if threshold is not None:
            raise InvalidParameterError(
                "--threshold applies to the ratio di; difference metrics are judged with "
                "--tolerance."
            )
        if tolerance is not None:
            check_flag_real(tolerance, "--tolerance", lo=0.0, hi=1.0)
    hint = f" (a share: {confidence_level / 100:g} for {confidence_level:g}%)" if (
        1.0 < confidence_level < 100.0) else ""
    check_flag_real(confidence_level, "--confidence-level", lo=0.0, hi=1.0, hint=hint)
    check_flag_int(concurrency, "--concurrency", lo=1)
    check_flag_int(retries, "--retries", lo=0)
    if timeout is not None:
        check_flag_real(timeout, "--timeout", lo=0.0)
    if no_cache and refresh:
        raise InvalidParameterError("--no-cache and --refresh exclude each other; give one.")
    check_output_path(json_path, "--json")
    if not no_cache:
        check_output_path(cache, "--cache")
    return name


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


def _platform_fields(url: str | None, path: str) -> list[str] | None:
    """The input fields of the platform shape behind ``--url`` (``None`` for other shapes)."""
    if url is None:
        return None
    from fairprobe.platform.core import USER_FEATURES
    from fairprobe.platform.model import AUDIT_FEATURES

    if path.rstrip("/") == "/audit/predict":
        return list(AUDIT_FEATURES)
    if path.rstrip("/") == "/user/predict":
        return list(USER_FEATURES)
    return None


def audit(
    url: Annotated[str | None, typer.Option(help="Base URL of an HTTP JSON model (platform shape).")] = None,
    backend_config: Annotated[str | None, typer.Option(help="Backend config file (TOML/JSON).")] = None,
    path: Annotated[str, typer.Option(help="Endpoint path used with --url.")] = "/audit/predict",
    queries: Annotated[str | None, typer.Option(help="Query pool (CSV/Parquet); default: bundled Adult test split.")] = None,
    group_col: Annotated[str, typer.Option(help="Sensitive attribute column.")] = "sex",
    group_a: Annotated[str | None, typer.Option(help="Group A value (the numerator of DI); default Female for --group-col sex, else required.")] = None,
    group_b: Annotated[str | None, typer.Option(help="Group B value; 'rest' (or omit with --group-a) for every other value.")] = None,
    label_col: Annotated[str | None, typer.Option(help="True-label column (never sent; needed by eo, accuracy-gap).")] = None,
    feature_cols: Annotated[str | None, typer.Option(help="Comma-separated columns sent to the model (default: all but the label and the sensitive column).")] = None,
    send_group: Annotated[bool, typer.Option(help="Also send the sensitive column to the model.")] = False,
    metric: Annotated[str, typer.Option(help="di | dp | eo | accuracy-gap (case-insensitive).")] = "di",
    budget: Annotated[int | None, typer.Option(help="Queries drawn from the pool [default: 2000, or the whole pool if smaller].")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the query draw.")] = 0,
    tolerance: Annotated[float | None, typer.Option(help="Fair band half-width of differences, in (0, 1).")] = None,
    threshold: Annotated[float | None, typer.Option(help="Minimum ratio of DI (80% rule), in (0, 1].")] = None,
    confidence_level: Annotated[float, typer.Option(help="Confidence level of the interval, in (0, 1).")] = 0.95,
    cache: Annotated[Path, typer.Option(help="Persistent answer cache (SQLite).")] = DEFAULT_CACHE,
    no_cache: Annotated[bool, typer.Option(help="Neither read nor write the answer cache.")] = False,
    refresh: Annotated[bool, typer.Option(help="Ask the model again and overwrite cached answers.")] = False,
    concurrency: Annotated[int, typer.Option(help="Batches in flight.")] = 4,
    retries: Annotated[int, typer.Option(help="Retries of a failed batch.")] = 5,
    timeout: Annotated[float | None, typer.Option(help="Per-request timeout (s).")] = None,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the result as JSON.")] = None,
    strict: Annotated[bool, typer.Option(help="Stop when a group's share of unusable answers (unparsed, refused, truncated) exceeds --max-unusable.")] = False,
    max_unusable: Annotated[float, typer.Option(help="Threshold of --strict (share in [0, 1)).")] = 0.05,
    prompt_variants: Annotated[Path | None, typer.Option(help="TOML [templates] name = \"template\": rerun the audit per prompt (openai-chat backends) and report the verdict's sensitivity.")] = None,
    name_swap: Annotated[str | None, typer.Option(help="Field holding a first name: also ask each record with the name swapped to the other sex and report the flip rate.")] = None,
) -> None:
    """Audit a black-box model with a fixed budget: metric, confidence interval, verdict."""
    name = check_audit_flags(
        metric=metric, budget=budget, seed=seed, tolerance=tolerance, threshold=threshold,
        confidence_level=confidence_level, concurrency=concurrency, retries=retries,
        timeout=timeout, no_cache=no_cache, refresh=refresh, json_path=json_path, cache=cache,
    )
    limit = None
    if strict:
        limit = check_flag_real(max_unusable, "--max-unusable", lo=0.0, hi=1.0, closed="left")
    templates = None
    if prompt_variants is not None:
        from fairprobe.access.variation import read_templates

        templates = read_templates(str(prompt_variants))
    plan = plan_audit(
        url=url, path=path, queries=queries, group_col=group_col, group_a=group_a,
        group_b=group_b, label_col=label_col, feature_cols=feature_cols, send_group=send_group,
        metric=name, budget=budget, seed=seed, name_swap=name_swap,
    )
    backend = build_backend(url, backend_config, path)  # no network yet
    if templates is not None:
        from fairprobe.access.openai_chat import OpenAIChatBackend
        from fairprobe.errors import ConfigError

        if not isinstance(backend, OpenAIChatBackend):
            raise ConfigError("--prompt-variants needs an openai-chat backend config.")
        for t in templates.values():  # every template is checked before anything is paid
            OpenAIChatBackend(backend.config, prompt_template=t)
    if no_cache:
        from fairprobe.cli import main as cli_main

        cli_main.INTERRUPT_MESSAGE = "interrupted; nothing was cached (--no-cache)."
    from fairprobe.audit import run_audit
    from fairprobe.report import write_result
    from fairprobe.report.text import print_audit

    extra: dict[str, Any] = {}

    def one(be: Any, swap: bool = False) -> tuple[Any, Any]:
        n_budget = plan["budget"] * (2 if swap and name_swap is not None else 1)
        with open_blackbox(
            be, cache=cache, no_cache=no_cache, refresh=refresh, budget=n_budget,
            retries=retries, timeout=timeout, concurrency=concurrency, progress=progress,
            seed=seed,
        ) as bb:
            res = run_audit(
                bb, plan["pool"], group_col=group_col, metric=name, group_a=plan["group_a"],
                group_b=plan["group_b"], label_col=plan["label"],
                feature_cols=plan["columns"].sent, budget=plan["budget"], seed=seed,
                tolerance=tolerance, threshold=threshold, confidence_level=confidence_level,
                max_unusable_share=limit,
            )
            prov = audit_provenance(bb, plan, seed=seed, cache=cache, no_cache=no_cache,
                                    refresh=refresh)
            if swap and name_swap is not None:
                from fairprobe.access.variation import name_swap_audit
                from fairprobe.audit import draw_queries

                sample = draw_queries(plan["pool"], plan["budget"], seed)[plan["columns"].sent]
                extra["name_swap"] = name_swap_audit(
                    bb, sample, name_swap, seed=seed, confidence_level=confidence_level
                ).to_dict()
        usage = getattr(be, "usage", None)
        if isinstance(usage, dict):  # tokens the server reported, summed over every run
            total = extra.setdefault("usage", dict.fromkeys(usage, 0))
            for k, v in usage.items():
                total[k] = total.get(k, 0) + v
        return res, prov

    result, prov = one(backend, swap=True)
    if templates is not None:
        from fairprobe.access.openai_chat import OpenAIChatBackend
        from fairprobe.access.variation import prompt_sensitivity

        def run_variant(_name: str, template: str) -> Any:
            assert isinstance(backend, OpenAIChatBackend)
            return one(OpenAIChatBackend(backend.config, prompt_template=template))[0]

        extra["prompt_variation"] = prompt_sensitivity(templates, run_variant).to_dict()
    print_audit(result, console)
    print_trust_summary(prov, plan, console)
    print_llm_dimensions(extra, console)
    if json_path is not None:
        body = result.to_dict()
        body.update(extra)
        write_result(json_path, "audit", body, prov)


def print_llm_dimensions(extra: dict[str, Any], out: Any) -> None:
    """The name-swap flip rate and the prompt sensitivity, when they were asked for."""
    ns = extra.get("name_swap")
    if ns is not None:
        out.print(
            f"name swap ({ns['field']}): {ns['n_flips']} of {ns['n_usable']} usable pairs flip, "
            f"rate {ns['flip_rate']:.4f} [{ns['interval']['low']:.4f}, "
            f"{ns['interval']['high']:.4f}]"
        )
    pv = extra.get("prompt_variation")
    if pv is not None:
        for v in pv["variants"]:
            out.print(f"prompt {v['name']}: estimate {v['estimate']:.4f}, {v['verdict']}")
        out.print(
            f"prompt sensitivity: spread {pv['spread']:.4f}, verdicts "
            f"{'agree' if pv['verdicts_agree'] else 'DISAGREE'}"
        )


def plan_audit(
    *,
    url: str | None,
    path: str,
    queries: str | None,
    group_col: str,
    group_a: str | None,
    group_b: str | None,
    label_col: str | None,
    feature_cols: str | None,
    send_group: bool,
    metric: str,
    budget: int | None,
    seed: int,
    name_swap: str | None = None,
) -> dict[str, Any]:
    """Read the pool and check everything that depends on it, before any backend call.

    Returns the pool, its source, the column plan, the groups, the label and the budget.
    """
    from fairprobe.audit import draw_queries, plan_columns
    from fairprobe.errors import DataError

    if queries is None:
        from fairprobe.datasets import load_adult
        from fairprobe.platform.model import AUDIT_FEATURES

        if name_swap is None:
            pool = load_adult("test", names_seed=None)[[*AUDIT_FEATURES, "income"]]
            source = "bundled Adult test split"
        else:  # records with first names, for the name swap (the sex column is not sent)
            from fairprobe.platform.core import USER_FEATURES

            cols = list(dict.fromkeys([*USER_FEATURES, group_col, "income"]))
            pool = load_adult("test", names_seed=seed)[cols]
            source = f"bundled Adult test split with first names (names seed {seed})"
        label = label_col or ("income" if metric in _NEEDS_LABEL else None)
    else:
        pool = read_table(queries)
        source = queries
        label = label_col
    if group_col not in pool.columns:
        have = ", ".join(map(str, pool.columns[:12]))
        raise DataError(f"--group-col {group_col!r} is not a column of the pool (columns: {have}).")
    if metric in _NEEDS_LABEL and label is None:
        raise DataError(f"--metric {metric} needs true labels: give --label-col.")
    required = _platform_fields(url, path)
    columns = plan_columns(
        pool, group_cols=[group_col], label_col=label, feature_cols=split_list(feature_cols),
        send_group=send_group, required=required,
    )
    if metric not in _NEEDS_LABEL and label_col is None:
        label = None  # a column withheld as label-like is not needed by DP/DI
    if label is not None and metric in _NEEDS_LABEL:
        _check_binary_labels(pool[label], label)
    if name_swap is not None and name_swap not in columns.sent:
        raise DataError(
            f"--name-swap {name_swap!r} is not a column sent to the model (sent: "
            f"{', '.join(columns.sent)})."
        )
    a, b = resolve_groups(pool, group_col, group_a, group_b)
    n = len(pool)
    if budget is None:
        budget = min(2000, n)
    elif budget > n:
        raise DataError(
            f"--budget {budget} is larger than the query pool ({n} rows); lower it or give a "
            "larger --queries file."
        )
    if budget < 2:
        raise DataError(f"The query pool has {n} row(s); an audit needs at least 2.")
    sample = draw_queries(pool, budget, seed)
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
    return {
        "pool": pool, "source": source, "columns": columns, "group_a": a, "group_b": b,
        "label": label, "budget": budget, "sample_groups": sample[group_col].to_numpy(),
        "group_col": group_col,
    }


def _check_binary_labels(labels: pd.Series, col: str) -> None:
    from fairprobe.errors import DataError

    if labels.isna().any():
        raise DataError(f"The label column {col!r} has missing values; drop those rows.")
    vals = set(labels.unique().tolist())
    if not vals <= {0, 1}:  # also True/False and 0.0/1.0
        shown = ", ".join(map(str, sorted(vals, key=str)[:6]))
        raise DataError(f"The label column {col!r} must hold 0/1 labels; found {shown}.")


def audit_provenance(bb: Any, plan: dict[str, Any], *, seed: int, cache: Path, no_cache: bool,
                     refresh: bool) -> Any:
    """The provenance block of an audit: pool hash, backend identity, answers per group."""
    from fairprobe.access.identity import describe_backend
    from fairprobe.provenance import Provenance, answer_counts_by_group, pool_digest

    check = bb.identity_check
    prov = Provenance.capture(
        seed=seed,
        query_pool=pool_digest(plan["pool"], plan["source"]),
        backend=describe_backend(bb.backend, check),
        retries=bb.retried,
        notes=[check.note] if check is not None and check.note else [],
        extra={
            "columns": plan["columns"].to_dict(),
            "cache": {
                "path": None if no_cache else str(cache),
                "policy": cache_policy(no_cache, refresh),
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


def print_trust_summary(prov: Any, plan: dict[str, Any], out: Any) -> None:
    """Where the answers came from (paid / cached, of which model), what was sent, the notes."""
    answers = prov.answers or {}
    total = answers.get("total", {})
    backend = prov.backend or {}
    who = backend.get("model_id") or backend.get("identity", "?")
    how = backend.get("identity_source", "?")
    out.print(
        f"answers: {total.get('paid', '?')} paid, {total.get('cached', '?')} from the cache, "
        f"of model {who} (identity {how})"
    )
    for g, c in answers.get("by_group", {}).items():
        out.print(
            f"  {plan['group_col']}={g}: {c['asked']} asked, {c['paid']} paid, "
            f"{c['cached']} cached, {c['unparsed']} unparsed, {c['refused']} refused"
        )
    out.print(f"columns {plan['columns'].summary()}")
    for note in prov.notes:
        out.print(f"[bold yellow]note:[/] {note}")


def register(app: typer.Typer) -> None:
    app.command("audit")(audit)
