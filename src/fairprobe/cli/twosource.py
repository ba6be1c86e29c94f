"""``fairprobe twosource``: a two-source audit (A and B of a platform) and ``twosource plan``.

Without a subcommand it runs :func:`fairprobe.twosource.run_two_source_audit`; ``plan`` prints the
Lemma 2 test (``n_max``, ``p_manip``) and, given ``--budget``, the Pareto-optimal allocations.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from fairprobe._defaults import PLATFORM_RATE_FEMALE, PLATFORM_RATE_MALE, PLATFORM_SHARE_FEMALE
from fairprobe.cli._common import console, read_table
from fairprobe.cli.gate import FailOnOption, emit_job

DEFAULT_CACHE = Path(".fairprobe") / "cache.sqlite"  # = fairprobe.twosource.job.DEFAULT_CACHE

#: Honest consistency rates of the consistency test (``run_two_source_audit(null=...)``).
Null = Enum("Null", {n: n for n in ("agree", "accuracy")}, type=str)  # type: ignore[misc]

twosource_app = typer.Typer(
    name="twosource",
    help="Two-source audit: audit API A cross-checked against the user interface B.",
    no_args_is_help=False,
    invoke_without_command=True,
)


@twosource_app.callback()
def twosource(
    ctx: typer.Context,
    url: Annotated[
        str | None, typer.Option(help="Platform server: A at /audit/predict, B at /user/predict.")
    ] = None,
    api_config: Annotated[str | None, typer.Option(help="Backend config file of source A.")] = None,
    ui_config: Annotated[str | None, typer.Option(help="Backend config file of source B.")] = None,
    queries: Annotated[
        str | None,
        typer.Option(
            help="Query pool with both sides (CSV/Parquet); default: bundled Adult test split with first names."
        ),
    ] = None,
    proxy: Annotated[
        str, typer.Option(help="name | identity | random | learned | mapping:PATH.json")
    ] = "name",
    proxy_features: Annotated[
        str, typer.Option(help="learned proxy: comma-separated B-side columns.")
    ] = "first_name",
    inference: Annotated[
        str,
        typer.Option(
            help="Rule B infers the group with (the detectors' null rests on it): auto (the "
            "proxy; the name rule for learned) | proxy | name | identity | mapping:PATH.json."
        ),
    ] = "auto",
    group_col: Annotated[str, typer.Option(help="Protected attribute (sent to A).")] = "sex",
    privileged: Annotated[str, typer.Option(help="Privileged value (DI denominator).")] = "Male",
    api_cols: Annotated[
        str | None, typer.Option(help="Columns sent to A (default: platform features).")
    ] = None,
    ui_cols: Annotated[
        str | None, typer.Option(help="Columns sent to B (default: platform user features).")
    ] = None,
    budget: Annotated[int, typer.Option(help="Total queries t over A and B.")] = 1000,
    beta: Annotated[
        float, typer.Option(help="Share of t on A only; the rest buys t(1-beta)/2 checks.")
    ] = 0.5,
    checks: Annotated[
        int | None, typer.Option(help="Number of checks t_fraud (overrides --beta).")
    ] = None,
    alpha: Annotated[
        float, typer.Option(help="False-alarm level (split over the detectors).")
    ] = 0.05,
    threshold: Annotated[float, typer.Option(help="80% rule threshold on DI through A.")] = 0.8,
    p_phi: Annotated[
        float | None, typer.Option(help="Proxy accuracy (default: measured on the pool).")
    ] = None,
    null: Annotated[
        Null,
        typer.Option(
            help="Honest consistency rate: agree (valid for randomised proxies) or accuracy (the paper's p_phi).",
            case_sensitive=False,
        ),
    ] = Null["agree"],
    detectors: Annotated[
        str, typer.Option(help="Comma-separated, at least one of: conditional, consistency, di.")
    ] = "conditional,consistency,di",
    batch_size: Annotated[
        int, typer.Option(help="Checks between two looks of the early stop.")
    ] = 25,
    seed: Annotated[int, typer.Option(help="Seed of the query sample and the proxy draws.")] = 0,
    cache: Annotated[Path, typer.Option(help="Persistent answer cache (SQLite).")] = DEFAULT_CACHE,
    retries: Annotated[int, typer.Option(help="Retries of a failed batch.")] = 5,
    timeout: Annotated[float | None, typer.Option(help="Per-request timeout (s).")] = None,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
    json_path: Annotated[
        Path | None, typer.Option("--json", help="Write the result as JSON.")
    ] = None,
    epsilon: Annotated[
        float | None,
        typer.Option(
            help="DI margin of error: follow the budget's regime (Appendix B): below t_A refuse, "
            "t_A..t_B the paper's split, above t_B the verdict from the corrected DI through B."
        ),
    ] = None,
    policy: Annotated[
        str, typer.Option(help="Large regime: fixed (the plan's split) or thompson (bandit).")
    ] = "fixed",
    b_groups: Annotated[
        str,
        typer.Option(
            help="Large regime: B records with a known group: checks (the checked ones) or known (all)."
        ),
    ] = "checks",
    rate_unprivileged: Annotated[
        float, typer.Option(help="With --epsilon: planning positive rate, unprivileged.")
    ] = PLATFORM_RATE_FEMALE,
    rate_privileged: Annotated[
        float, typer.Option(help="With --epsilon: planning positive rate, privileged.")
    ] = PLATFORM_RATE_MALE,
    csv_path: Annotated[
        Path | None, typer.Option("--csv", help="Write the findings (DI through A and B, each detector) as CSV.")
    ] = None,
    fail_on: FailOnOption = None,
) -> None:
    """Two-source audit: conclude fair / unfair / undetermined / manipulated with the evidence."""
    if ctx.invoked_subcommand is not None:
        return
    from fairprobe.access.config import load_backend
    from fairprobe.cli._common import check_output_path
    from fairprobe.twosource.job import platform_sources, twosource_job, twosource_options

    check_output_path(csv_path, "--csv")
    a_backend, b_backend = platform_sources(
        url, None if api_config is None else load_backend(api_config),
        None if ui_config is None else load_backend(ui_config))
    # the remaining flags build twosource_job's options objects (by their Python names), each
    # value checked before a query is paid
    flags = {k: v for k, v in ctx.params.items()
             if k not in ("url", "api_config", "ui_config", "json_path", "csv_path", "fail_on")}
    flags.update(queries=None if queries is None else read_table(queries), null=null.value)
    job = twosource_job(a_backend, b_backend, **twosource_options(**flags))
    result = job.result
    console.print(str(result), markup=False)
    if csv_path is not None:
        from fairprobe.report.tables import findings_table, write_csv

        d = result.to_dict()
        rows = [{"row": "DI through A", **d["di_a"]}]
        if d["di_b_proxy"] is not None:
            rows.append({"row": "DI through B + proxy", **d["di_b_proxy"]})
        if d.get("di_b_corrected") is not None:  # the large regime's estimate and its finding
            rows.append({"row": "DI through B, corrected", **d["di_b_corrected"],
                         "verdict": d["finding"]["verdict"]})  # fmt: skip
        rows += [{"row": f"detector {o['detector']}", **o} for o in d["detectors"]]
        write_csv(csv_path, findings_table(rows))
    emit_job(json_path, job, fail_on)


@twosource_app.command("plan")
def plan(
    ctx: typer.Context,
    proxy_accuracy: Annotated[float, typer.Option(help="Proxy accuracy p_phi.")],
    checks: Annotated[
        int | None,
        typer.Option(help="Consistency checks t_fraud: print Lemma 2's n_max and p_manip."),
    ] = None,
    alpha: Annotated[float, typer.Option(help="Level of the test.")] = 0.05,
    gamma: Annotated[float, typer.Option(help="Share of checked answers flipped.")] = 0.10,
    budget: Annotated[
        int | None,
        typer.Option(help="Total budget t: its regime (Appendix B) and the allocations."),
    ] = None,
    epsilon: Annotated[
        float | None,
        typer.Option(
            help="Requested margin of error on DI: gives t_A, t_B and the regime of --budget."
        ),
    ] = None,
    sigma_a: Annotated[
        float | None,
        typer.Option(help="Per-query sd of the DI estimate via A (default: from the rates)."),
    ] = None,
    sigma_b: Annotated[
        float | None,
        typer.Option(
            help="Per-query sd of the DI estimate via B (default: from the rates and p_phi)."
        ),
    ] = None,
    rate_unprivileged: Annotated[
        float, typer.Option(help="Expected positive rate, unprivileged.")
    ] = PLATFORM_RATE_FEMALE,
    rate_privileged: Annotated[
        float, typer.Option(help="Expected positive rate, privileged.")
    ] = PLATFORM_RATE_MALE,
    share_unprivileged: Annotated[
        float, typer.Option(help="Share of unprivileged queries.")
    ] = PLATFORM_SHARE_FEMALE,
    theorem3: Annotated[
        bool,
        typer.Option(
            "--theorem3",
            help="Frontier at Theorem 3's cheapest successful fairwashing instead of --gamma.",
        ),
    ] = False,
    json_path: Annotated[
        Path | None, typer.Option("--json", help="Write the plan as JSON.")
    ] = None,
    accuracy_unprivileged: Annotated[
        float | None,
        typer.Option(help="Proxy accuracy in the unprivileged group (default: p_phi)."),
    ] = None,
    accuracy_privileged: Annotated[
        float | None, typer.Option(help="Proxy accuracy in the privileged group (default: p_phi).")
    ] = None,
    b_estimator: Annotated[
        str,
        typer.Option(
            help="Large regime's DI through B: double-sampling (checks validate) or matrix (B alone)."
        ),
    ] = "double-sampling",
) -> None:
    """Lemma 2's n_max and p_manip; with --budget, its regime and the allocations (Figure 4).

    Regimes (Appendix B), for the margin --epsilon: t < t_A is refused (A alone cannot reach
    it); t_A <= t <= t_B gives the Pareto frontier of Section 5.3; t > t_B estimates DI from
    B alone and spends the rest on checks.
    """
    from fairprobe.documents import write_json
    from fairprobe.twosource.job import TwoSourcePlanOptions, twosource_plan_job
    from fairprobe.twosource.theory import MAX_BUDGET

    # every flag but --json and --proxy-accuracy is a TwoSourcePlanOptions field of that name
    flags = {k: v for k, v in ctx.params.items() if k not in ("json_path", "proxy_accuracy")}
    job = twosource_plan_job(proxy_accuracy, options=TwoSourcePlanOptions(**flags))
    res = job.result
    test, bp = res.test, res.budget_plan
    if test is not None:
        console.print(
            f"consistency test: {checks} checks, p_phi {proxy_accuracy:g}, alpha {alpha:g}\n"
            f"  n_max   = {test.n_max}  (manipulation if more inconsistencies; exact size "
            f"{test.size:.4f})\n"
            f"  p_manip = {test.p_manip:.4f}  at gamma = {gamma:g}",
            markup=False,
        )
    if bp is not None:
        t_b = "unreachable" if bp.t_b > MAX_BUDGET else str(bp.t_b)
        console.print(
            f"budget t = {budget}: regime {bp.regime!r}  (t_A = {bp.t_a}, t_B = {t_b} for a "
            f"DI margin {epsilon:g} at alpha {alpha:g}; sigma_A {bp.sigma_a:.3f}, "
            f"sigma_B {bp.sigma_b:.3f})",
            markup=False,
        )
        rec = bp.recommended
        if bp.regime == "large":
            console.print(
                f"  t > t_B: estimate DI from B alone with {rec['n_b']} queries, corrected "
                f"for the proxy ({rec['b_estimator']}; margin {rec['epsilon_b']:.4f}); A is "
                f"used only for {rec['t_fraud']} consistency checks (n_max {rec['n_max']}, "
                f"p_manip {rec['p_manip']:.4f} at gamma {rec['gamma']:g})",
                markup=False,
            )
        else:
            console.print(
                f"  t_A <= t <= t_B: recommended t_fair {rec['t_fair']}, t_fraud "
                f"{rec['t_fraud']} (epsilon_A {rec['epsilon_a']:.4f} <= {epsilon:g}, "
                f"p_manip {rec['p_manip']:.4f})",
                markup=False,
            )
    elif budget is not None:
        console.print(
            "regime: not classified; give --epsilon (the DI margin of error you need) to get "
            "t_A, t_B and the regime of this budget (Appendix B).",
            markup=False,
        )
    if res.frontier is not None:
        _print_frontier(res.frontier, res.body["pareto"])
    if json_path is not None:
        write_json(json_path, job.to_dict())


def _print_frontier(front: Any, rows: list[dict[str, Any]]) -> None:
    shown = rows
    if len(rows) > 25:  # the terminal gets an even sample; the JSON keeps every row
        idx = sorted({round(i * (len(rows) - 1) / 24) for i in range(25)})
        shown = [rows[i] for i in idx]
    console.print(
        f"Pareto-optimal allocations of t = {front.t} (sigma_A {front.sigma_a:.3f}"
        + (f"; {len(shown)} of {len(rows)} shown" if shown is not rows else "")
        + "):",
        markup=False,
    )
    console.print("  t_fair  t_fraud   beta  epsilon_A  gamma  n_max  p_manip", markup=False)
    for r in shown:
        console.print(
            f"  {r['t_fair']:>6}  {r['t_fraud']:>7}  {r['beta']:5.2f}  {r['epsilon_a']:9.4f}"
            f"  {r['gamma']:5.3f}  {r['n_max']:>5}  {r['p_manip']:7.4f}",
            markup=False,
        )


def register(app: typer.Typer) -> None:
    app.add_typer(twosource_app, name="twosource")
