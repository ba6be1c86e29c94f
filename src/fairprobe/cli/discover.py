"""``fairprobe discover``: the subgroups a model treats worst, at a false-discovery rate."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from fairprobe import metrics as _metrics
from fairprobe.cli.gate import FailOnOption

#: ``--metric`` choices: the registry's metrics the subgroup search computes.
Metric = StrEnum("Metric", {m.short: m.short for m in _metrics.METRICS.values()  # type: ignore[misc]
                            if _metrics.PATHS["discover"].accepts(m)})


class Method(StrEnum):
    holm = "holm"
    reshaped = "reshaped"
    by = "by"
    bh = "bh"


class PValue(StrEnum):
    joint = "joint"
    split_ = "split"  # a member named "split" would shadow str.split
    box = "box"


def discover(
    features: Annotated[str, typer.Option("--features", help="Comma-separated columns whose values define subgroups (numeric ones are cut into --bins quantile bins).")],
    predictions: Annotated[str | None, typer.Option("--predictions", help="CSV/Parquet file, directory or glob of predictions you have.")] = None,
    y_pred_col: Annotated[str | None, typer.Option("--y-pred-col", help="The decision column of --predictions.")] = None,
    y_true_col: Annotated[str | None, typer.Option("--y-true-col", "--label-col", help="True labels (needed for --metric eo, fpr).")] = None,
    url: Annotated[str | None, typer.Option("--url", help="A model to ask instead (platform HTTP shape).")] = None,
    backend_config: Annotated[str | None, typer.Option("--backend-config", help="A model to ask instead: backend config file.")] = None,
    queries: Annotated[str | None, typer.Option("--queries", help="With a model: the pool of records to ask (CSV/Parquet).")] = None,
    budget: Annotated[int | None, typer.Option("--budget", help="With a model: records asked (default: the whole pool).")] = None,
    depth: Annotated[int, typer.Option("--depth", help="Most conditions per subgroup (1-3).")] = 2,
    metric: Annotated[Metric, typer.Option("--metric", case_sensitive=False, help="Rate compared with the rest.")] = Metric(_metrics.DP.short),
    fdr: Annotated[float, typer.Option("--fdr", help="False-discovery rate of the reported list.")] = 0.1,
    tolerance: Annotated[float, typer.Option("--tolerance", help="A subgroup is unfair when its rate differs from the rest's by more (0: at all).")] = 0.05,
    method: Annotated[Method, typer.Option("--method", case_sensitive=False, help="holm (default), reshaped, by: valid under any dependence; bh: needs PRDS.")] = Method.holm,
    pvalue: Annotated[PValue, typer.Option("--pvalue", case_sensitive=False, help="p-value construction, all exact: joint (default, sharpest), split, box.")] = PValue.joint,
    bins: Annotated[int, typer.Option("--bins", help="Quantile bins of a numeric feature.")] = 4,
    min_size: Annotated[int, typer.Option("--min-size", help="Smallest subgroup tested (rows in the rate's denominator).")] = 30,
    pos_label: Annotated[str | None, typer.Option("--pos-label", help="The positive label of string decisions/labels.")] = None,
    engine: Annotated[str, typer.Option("--engine", help="Counting engine: auto, duckdb or pandas.")] = "auto",
    control_col: Annotated[str | None, typer.Option("--control-col", help="Comma-separated legitimate factors (e.g. income): subgroups are compared with the rest within their strata, so a gap they explain is not a finding.")] = None,
    control_bins: Annotated[int, typer.Option("--control-bins", help="Quantile bins of a numeric --control-col.")] = 4,
    proxy: Annotated[str | None, typer.Option("--proxy", help="When race is not recorded: estimate it by bisg (surname + place) or bifsg (+ first name) and search every slice for race gaps in approval rate (each of --group-a vs --group-b), decided on bounds that assume only the proxy's calibration within the slices; Bonferroni over slices x races at --fdr (docs/discover.md).")] = None,
    surname_col: Annotated[str | None, typer.Option("--surname-col", help="With --proxy: the column of family names (never searched, never sent to a model).")] = None,
    zip_col: Annotated[str | None, typer.Option("--zip-col", help="With --proxy: the column of 5-digit ZIP codes (used as ZCTAs).")] = None,
    tract_col: Annotated[str | None, typer.Option("--tract-col", help="With --proxy: the column of 11-digit census tract GEOIDs (instead of --zip-col).")] = None,
    first_name_col: Annotated[str | None, typer.Option("--first-name-col", help="With --proxy bifsg: the column of first names.")] = None,
    race_col: Annotated[str | None, typer.Option("--race-col", help="With --proxy: recorded race where known (empty elsewhere): the proxy's calibration is checked on those rows; never sent to a model.")] = None,
    race_in_bounds: Annotated[bool, typer.Option("--race-in-bounds", help="With --proxy and --race-col: the rows with recorded race enter every slice's bounds as known races, which tightens them if recording depends on surname and place only (stated in the output).")] = False,
    proxy_strata: Annotated[str | None, typer.Option("--proxy-strata", help="With --proxy: comma-separated columns the decisions may depend on (a score, an income measure of the place): every slice's bounds are computed within their cells (numeric: 10 quantile bins), which keeps them valid and tightens them.")] = None,
    group_a: Annotated[str | None, typer.Option("--group-a", help="With --proxy: comma-separated races compared (default black,hispanic,api).")] = None,
    group_b: Annotated[str | None, typer.Option("--group-b", help="With --proxy: the reference race (default white).")] = None,
    seed: Annotated[int, typer.Option("--seed", help="With a model: seed of the records drawn; with --proxy also of the bounds' cross-fitting split.")] = 0,
    cache: Annotated[Path, typer.Option("--cache", help="With a model: answer cache (SQLite).")] = Path(".fairprobe") / "cache.sqlite",
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the result as JSON.")] = None,
    fail_on: FailOnOption = None,
) -> None:
    """Search subgroups of up to --depth conditions; report those unfair at FDR --fdr."""
    from fairprobe._validation import split_names
    from fairprobe.cli._common import build_backend, console
    from fairprobe.cli.gate import emit_job
    from fairprobe.discover.job import discover_job
    from fairprobe.errors import ConfigError

    model = url is not None or backend_config is not None
    if model and predictions is not None:
        raise ConfigError("Give --predictions (predictions you have) or a model (--url / "
                          "--backend-config with --queries), not both.")
    if not model and predictions is None:
        raise ConfigError("Give --predictions FILE --y-pred-col COL, or a model with --queries.")
    if predictions is not None and y_pred_col is None:
        raise ConfigError("--predictions needs --y-pred-col (the decision column).")
    proxy_options = _proxy_options(proxy, (surname_col, zip_col, tract_col, first_name_col,
                                           race_col), (group_a, group_b),
                                   (proxy_strata, race_in_bounds))
    job = discover_job(
        predictions, features=features, y_pred=y_pred_col, y_true=y_true_col,
        backend=build_backend(url, backend_config) if model else None, queries=queries,
        budget=budget, seed=seed, cache=cache if model else None, depth=depth,
        metric=metric.value, fdr=fdr, tolerance=tolerance, method=method.value, bins=bins,
        min_size=min_size, pos_label=pos_label, engine=engine, pvalue=pvalue.value,
        control_cols=split_names(control_col) or (), control_bins=control_bins,
        proxy=proxy_options,
    )  # fmt: skip
    console.print(str(job.result), markup=False, soft_wrap=True)
    if proxy_options is not None:
        from fairprobe.report.kinds.proxy import match_sentence

        console.print(f"proxy {proxy_options.method.upper()}: "
                      + match_sentence(job.result.proxy["match"]), markup=False, soft_wrap=True)
    emit_job(json_path, job, fail_on)


def _proxy_options(proxy: str | None, cols: tuple[str | None, ...],
                   races: tuple[str | None, str | None],
                   tighten: tuple[str | None, bool]) -> Any:
    """The proxy's options from the flags (checked once, by flag): its columns (surname, ZIP,
    tract, first name, recorded race), the races compared (``--group-a``, ``--group-b``) and
    the bounds' tightenings (``--proxy-strata``, ``--race-in-bounds``); its flags without
    ``--proxy`` are refused."""
    from fairprobe._validation import split_names
    from fairprobe.errors import ConfigError

    surname_col, zip_col, tract_col, first_name_col, race_col = cols
    group_a, group_b = races
    strata, race_in_bounds = tighten
    if proxy is None:
        given = [f for f, v in (("--surname-col", surname_col), ("--zip-col", zip_col),
                                ("--tract-col", tract_col), ("--first-name-col", first_name_col),
                                ("--race-col", race_col), ("--group-a", group_a),
                                ("--group-b", group_b), ("--proxy-strata", strata),
                                ("--race-in-bounds", race_in_bounds or None)) if v is not None]
        if given:
            raise ConfigError(f"{given[0]} goes with --proxy bisg|bifsg (race estimated from "
                              "names and places): add --proxy or drop it.")
        return None
    from fairprobe.bisg.job import check_place
    from fairprobe.discover.proxy import ProxyOptions

    check_place(zip_col, tract_col)
    groups = tuple(g.strip().lower() for g in (split_names(group_a) or
                                               ["black", "hispanic", "api"]))
    return ProxyOptions(proxy.strip().lower(), surname_col, zip_col=zip_col,
                        tract_col=tract_col, first_name_col=first_name_col, race_col=race_col,
                        groups=groups, reference=(group_b or "white").strip().lower(),
                        strata_cols=tuple(split_names(strata) or ()),
                        race_in_bounds=race_in_bounds)


def register(app: typer.Typer) -> None:
    app.command("discover")(discover)
