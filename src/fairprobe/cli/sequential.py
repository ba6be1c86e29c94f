"""``fairprobe sequential``: a sequential fairness audit that stops when the evidence decides.

Two modes, one command:

- **pool** (``--input FILE``): the answers of a held-out pool are already in a table; the audit is
  replayed over ``--repeats`` random query orders (vectorised). JSON keys: ``mean_queries``,
  ``queries`` (one per repeat), ``outcomes`` (shares of violation / compliant / inconclusive) and
  more (``docs/sequential.md``).
- **live** (``--url URL`` or ``--backend-config FILE``): one audit against a model, queried one
  record at a time from ``--queries FILE`` (default: the bundled Adult test split), showing the
  running statistic, the boundaries and the queries spent; the JSON holds the whole path.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from fairprobe import metrics as _metrics
from fairprobe.cli._common import build_backend, console, read_table, split_list
from fairprobe.cli.gate import FailOnOption, emit_job
from fairprobe.errors import ConfigError

DEFAULT_CACHE = Path(".fairprobe") / "cache.sqlite"  # = fairprobe.options.DEFAULT_CACHE


class TestChoice(StrEnum):
    """Registered sequential tests (``fairprobe.sequential.available_tests()``, tested)."""

    mixture = "mixture"
    glr_wald = "glr-wald"
    betting = "betting"
    fixed = "fixed"
    glr = "glr"  # former name of glr-wald


def _sequential_metric(metric: str) -> str:
    """``--metric`` by any registered name, as the sequential modules name it (``sp`` for
    statistical parity, the registry's ``dp``); one error line naming the paths that can
    compute any other metric."""
    m = _metrics.resolve(metric, path="sequential")
    return "sp" if m is _metrics.DP else m.short


class AccessChoice(StrEnum):
    decisions = "decisions"
    scores = "scores"
    logits = "logits"


def _summary_line(d: dict[str, Any]) -> str:
    sh = d["outcomes"]
    return (
        f"{d['test']} / {d['metric']} / {d['access']}: violation {sh['violation']:.3f}, "
        f"compliant {sh['compliant']:.3f}, inconclusive {sh['inconclusive']:.3f}; "
        f"mean queries {d['mean_queries']:.1f} over {d['repeats']} repeats "
        f"(budget {d['budget_effective']})"
    )


def _print_repeated(res: Any) -> None:
    from rich.table import Table

    d = res.to_dict()
    if not console.is_terminal:
        console.print(_summary_line(d), soft_wrap=True, highlight=False)
        return
    sh = d["outcomes"]
    wb = d["wald_lower_bound"]
    ratio = d["ratio_to_wald"]
    tab = Table(title=f"sequential audit: {d['test']} / {d['metric']} / {d['access']}")
    tab.add_column("quantity")
    tab.add_column("value", justify="right")
    rows = [
        ("tolerance delta", f"{d['tolerance']:g}"),
        ("pool gap |g|", f"{d['pool']['gap']:.4f}"),
        ("budget (effective)", f"{d['budget_effective']}"),
        ("repeats", f"{d['repeats']}"),
        ("mean queries (sd)", f"{d['mean_queries']:.1f} ({d['sd_queries']:.1f})"),
        ("median (q10 to q90)",
         f"{d['median_queries']:.0f} ({d['q10_queries']:.0f} to {d['q90_queries']:.0f})"),
        ("violation / compliant / inconclusive",
         f"{sh['violation']:.3f} / {sh['compliant']:.3f} / {sh['inconclusive']:.3f}"),
        ("Wald lower bound E[N]", "inf" if wb is None else f"{wb:.1f}"),
        ("mean queries / Wald bound", "-" if ratio is None else f"{ratio:.2f}"),
        ("guarantee", "anytime-valid: type-I <= alpha, type-II <= beta at any stop"
         if d["anytime_valid"] else "none exact (Wald's approximations; see docs)"),
    ]  # fmt: skip
    for k, v in rows:
        tab.add_row(k, v)
    console.print(tab)


def _print_single(res: Any) -> None:
    d = res.to_dict()
    b = d["boundaries"]
    low = "none" if b["lower"] is None else f"{b['lower']:.3f}"
    stat = d["path"]["statistic_upper"][-1] if d["path"]["statistic_upper"] else 0.0
    iv = d.get("gap_interval")
    if iv is not None:
        interval = (f"anytime-valid {iv['level']:.0%} confidence sequence "
                    f"[{iv['low']:+.4f}, {iv['high']:+.4f}]")  # fmt: skip
        ev = d["e_values"]
        evid = (f"; e-value against compliance {ev['against_compliance']:.3g}, "
                f"against violation {ev['against_violation']:.3g}")  # fmt: skip
    else:
        lo, hi = d["gap_interval_naive"]
        interval = f"naive 95% interval [{lo:+.4f}, {hi:+.4f}], not valid under early stopping"
        evid = ""
    console.print(
        f"[bold]{d['outcome']}[/bold] ({d['test']}) after {d['queries']} queries "
        f"(paid {d['queries_paid']}, cached {d['queries_cached']}, unparsed {d['unparsed']}); "
        f"statistic {stat:+.3f}, boundaries l={low} u={b['upper']:.3f}; "
        f"gap estimate {d['gap_estimate']:+.4f} ({interval}){evid}"
    )


def sequential(
    input_path: Annotated[str | None, typer.Option("--input", help="Pool mode: table (CSV/Parquet) of answers already collected.")] = None,
    url: Annotated[str | None, typer.Option(help="Live mode: base URL of an HTTP JSON model (platform shape).")] = None,
    backend_config: Annotated[str | None, typer.Option(help="Live mode: backend config file (TOML/JSON).")] = None,
    path: Annotated[str, typer.Option(help="Endpoint path used with --url.")] = "/audit/predict",
    queries: Annotated[str | None, typer.Option(help="Live mode: query pool (CSV/Parquet); default the bundled Adult test split.")] = None,
    feature_cols: Annotated[str | None, typer.Option(help="Live mode: comma-separated columns sent to the model.")] = None,
    group_col: Annotated[str, typer.Option(help="Sensitive attribute column.")] = "sex",
    group_a: Annotated[str | None, typer.Option(help="Value of group a (default: the first of the two values); with more than two groups, audits it against the rest.")] = None,
    pair: Annotated[str | None, typer.Option(help="Pool mode, more than two groups: audit only this pair 'G1,G2' (chosen before the data; default: every pair, Bonferroni over pairs).")] = None,
    decision_col: Annotated[str | None, typer.Option(help="Pool mode: 0/1 decision column.")] = None,
    score_col: Annotated[str | None, typer.Option(help="Pool mode: score column, in [0, 1].")] = None,
    logit_col: Annotated[str | None, typer.Option(help="Pool mode: logit column.")] = None,
    label_col: Annotated[str | None, typer.Option(help="True-label column (needed for --metric eo).")] = None,
    metric: Annotated[str, typer.Option(help=f"One of {_metrics.help_text('sequential')}; sp is statistical parity (dp).")] = "sp",
    tolerance: Annotated[float, typer.Option(help="delta in (0, 1): H0 |g| <= delta is compliance.")] = 0.1,
    access: Annotated[AccessChoice, typer.Option(case_sensitive=False, help="What the model reveals.")] = AccessChoice.decisions,
    test: Annotated[TestChoice | None, typer.Option(case_sensitive=False, help="Default mixture: anytime-valid (type-I <= alpha, type-II <= beta at any stop). glr-wald: the paper's GLR, fast but measured type-I 0.19 at gap = delta for alpha = 0.05 (docs/sequential.md).")] = None,
    logit_bound: Annotated[float | None, typer.Option(hidden=True, help="Removed: logit access audits sigmoid(logit), on the probability scale.")] = None,
    alpha: Annotated[float, typer.Option(help="Nominal type-I error (false violation).")] = 0.05,
    beta: Annotated[float, typer.Option(help="Nominal type-II error (false compliance).")] = 0.2,
    min_per_group: Annotated[int | None, typer.Option(help="GLR/fixed: answers per group before the statistic may move.")] = None,
    budget: Annotated[str, typer.Option(help="Most queries per audit: a number, or 'all' (every row of the pool).")] = "4000",
    repeats: Annotated[int, typer.Option(help="Pool mode: random query orders.")] = 200,
    seed: Annotated[int, typer.Option(help="Seed of the query orders.")] = 0,
    batch_size: Annotated[int, typer.Option(help="Live mode: records per request.")] = 1,
    cache: Annotated[Path, typer.Option(help="Live mode: persistent answer cache (SQLite).")] = DEFAULT_CACHE,
    retries: Annotated[int, typer.Option(help="Live mode: retries of a failed request.")] = 5,
    timeout: Annotated[float | None, typer.Option(help="Live mode: per-request timeout (s).")] = None,
    progress: Annotated[bool, typer.Option(help="Show progress.")] = True,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the result as JSON.")] = None,
    csv_path: Annotated[Path | None, typer.Option("--csv", help="Write the printed table (one row: the quantities) as CSV.")] = None,
    fail_on: FailOnOption = None,
) -> None:
    """Sequential audit of SP or EO: stop at violation, compliance, or the budget."""
    from fairprobe.cli._common import check_output_path
    from fairprobe.sequential.job import partial_job, sequential_job
    from fairprobe.sequential.options import sequential_options

    check_output_path(csv_path, "--csv")
    if logit_bound is not None:
        raise ConfigError(
            "--logit-bound is no longer needed: with --access logits the default test audits "
            "sigmoid(logit), the probability-scale gap, with --tolerance in its units; drop it.")
    live = url is not None or backend_config is not None
    if input_path is not None and live:
        raise ConfigError("Give --input (pool mode) or --url/--backend-config (live mode), not both.")
    backend = build_backend(url, backend_config, path) if live else None
    # the flags build sequential_job's options objects (by their Python names), each checked
    kw: dict[str, Any] = sequential_options(
        input=read_table(input_path) if input_path is not None else None, backend=backend,
        queries=read_table(queries) if queries is not None else None,
        feature_cols=split_list(feature_cols), group_col=group_col, group_a=group_a, pair=pair,
        decision_col=decision_col, score_col=score_col, logit_col=logit_col,
        label_col=label_col, metric=_sequential_metric(metric), access=access.value,
        test=test.value if test is not None else None, tolerance=tolerance, alpha=alpha,
        beta=beta, min_per_group=min_per_group, budget=budget, repeats=repeats, seed=seed,
        batch_size=batch_size, cache=cache, retries=retries, timeout=timeout,
    )  # fmt: skip
    kw["backend"] = backend
    show = progress and console.is_terminal
    if input_path is not None:
        partial: list[Any] = []
        try:
            if show:
                from rich.progress import Progress

                with Progress(console=console, transient=True) as bar:
                    task = bar.add_task("query orders", total=repeats)
                    job = sequential_job(**kw, partial=partial,
                                         progress=lambda k: bar.update(task, completed=k))
            else:
                job = sequential_job(**kw, partial=partial)
        except (KeyboardInterrupt, _interrupt_type()):
            _interrupted(partial, repeats, seed, json_path, partial_job)
        _print_repeated(job.result)
    else:
        if progress:
            from rich.live import Live
            from rich.text import Text

            with Live(Text("starting…"), console=console, transient=True,
                      refresh_per_second=8) as lv:
                job = sequential_job(**kw, on_step=lambda s, b: lv.update(_step_line(s, b)))
        else:
            job = sequential_job(**kw)
        _print_single(job.result)
    if csv_path is not None:
        from fairprobe.report.tables import findings_table, write_csv

        write_csv(csv_path, findings_table([job.result.to_dict()]))
    emit_job(json_path, job, fail_on)


def _interrupted(partial: list[Any], repeats: int, seed: int, json_path: Path | None,
                 partial_job: Any) -> None:
    """Ctrl-C in pool mode: write the orders done (if --json) and exit with one line."""
    from fairprobe.documents import write_json
    from fairprobe.errors import Interrupted

    done = partial[0] if partial else None
    n_done = 0 if done is None else done.repeats
    if json_path is not None and done is not None:
        write_json(json_path, partial_job(done, seed).to_dict())
        raise Interrupted(
            f"interrupted: {n_done} of {repeats} repeats done, "
            f"partial result written to {json_path}"
        ) from None
    raise Interrupted(
        f"interrupted: no result written ({n_done} of {repeats} repeats done)"
    ) from None


def _step_line(s: Any, bounds: tuple[float, float | None]) -> Any:
    from rich.text import Text

    up, low = bounds
    lows = "none" if low is None else f"{low:+.3f}"
    return Text(
        f"queries {s.queries}/{s.budget} (paid {s.paid})  statistic {s.statistic_upper:+.3f}"
        f" / {s.statistic_lower:+.3f}  boundaries l={lows} u={up:+.3f}"
    )


def register(app: typer.Typer) -> None:
    app.command("sequential")(sequential)


def _interrupt_type() -> type[BaseException]:
    """The exception the CLI's SIGINT handler raises (click would swallow a KeyboardInterrupt)."""
    from fairprobe.cli.main import _Interrupted

    return _Interrupted
