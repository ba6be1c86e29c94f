"""``fairprobe audit``: a fixed-budget black-box audit of one fairness metric."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from fairprobe.cli._common import build_backend, console, read_table, split_list

DEFAULT_CACHE = Path(".fairprobe") / "cache.sqlite"


def audit(
    url: Annotated[str | None, typer.Option(help="Base URL of an HTTP JSON model (platform shape).")] = None,
    backend_config: Annotated[str | None, typer.Option(help="Backend config file (TOML/JSON).")] = None,
    path: Annotated[str, typer.Option(help="Endpoint path used with --url.")] = "/audit/predict",
    queries: Annotated[str | None, typer.Option(help="Query pool (CSV/Parquet); default: bundled Adult test split.")] = None,
    group_col: Annotated[str, typer.Option(help="Sensitive attribute column.")] = "sex",
    group_a: Annotated[str | None, typer.Option(help="Group A value (the numerator of DI).")] = "Female",
    group_b: Annotated[str | None, typer.Option(help="Group B value; omit for 'every other value'.")] = "Male",
    label_col: Annotated[str | None, typer.Option(help="True-label column (eo, accuracy-gap).")] = None,
    feature_cols: Annotated[str | None, typer.Option(help="Comma-separated columns sent to the model.")] = None,
    metric: Annotated[str, typer.Option(help="di | dp | eo | accuracy-gap")] = "di",
    budget: Annotated[int, typer.Option(help="Queries drawn from the pool.")] = 2000,
    seed: Annotated[int, typer.Option(help="Seed of the query draw.")] = 0,
    tolerance: Annotated[float | None, typer.Option(help="Fair band half-width of differences.")] = None,
    threshold: Annotated[float | None, typer.Option(help="Minimum ratio of DI (80% rule).")] = None,
    confidence_level: Annotated[float, typer.Option(help="Confidence level of the interval.")] = 0.95,
    cache: Annotated[Path, typer.Option(help="Persistent answer cache (SQLite).")] = DEFAULT_CACHE,
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
    from fairprobe.access.blackbox import BlackBox
    from fairprobe.audit import AuditResult, run_audit
    from fairprobe.report import write_result
    from fairprobe.report.text import print_audit

    if queries is None:
        from fairprobe.datasets import load_adult
        from fairprobe.platform.model import AUDIT_FEATURES

        if name_swap is None:
            pool = load_adult("test", names_seed=None)[[*AUDIT_FEATURES, "income"]]
            feats: list[str] | None = split_list(feature_cols) or list(AUDIT_FEATURES)
        else:  # records with first names (and no sex: the model must infer it from the name)
            from fairprobe.platform.core import USER_FEATURES

            pool = load_adult("test", names_seed=seed)[
                list(dict.fromkeys([*USER_FEATURES, group_col, "income"]))
            ]
            feats = split_list(feature_cols) or list(USER_FEATURES)
        label = label_col or ("income" if metric in ("eo", "accuracy-gap") else None)
    else:
        pool = read_table(queries)
        feats = split_list(feature_cols)
        label = label_col
    from fairprobe._validation import check_real

    limit = None
    if strict:
        limit = check_real(max_unusable, "max_unusable", "audit", lo=0.0, hi=1.0, closed="left")
    templates = None
    if prompt_variants is not None:
        from fairprobe.access.variation import read_templates

        templates = read_templates(str(prompt_variants))
    backend = build_backend(url, backend_config, path)
    if templates is not None:
        from fairprobe.access.openai_chat import OpenAIChatBackend

        if not isinstance(backend, OpenAIChatBackend):
            from fairprobe.errors import ConfigError

            raise ConfigError("--prompt-variants needs an openai-chat backend config.")
        for t in templates.values():  # every template is checked before anything is paid
            OpenAIChatBackend(backend.config, prompt_template=t)
    cache.parent.mkdir(parents=True, exist_ok=True)

    def one(be: object, q_budget: int, swap: bool = False) -> AuditResult:
        with BlackBox(
            be, cache=cache, budget=q_budget, retries=retries, timeout=timeout,  # type: ignore[arg-type]
            concurrency=concurrency, progress=progress, seed=seed,
        ) as bb:
            res = run_audit(
                bb, pool, group_col=group_col, metric=metric, group_a=group_a, group_b=group_b,
                label_col=label, feature_cols=feats, budget=budget, seed=seed,
                tolerance=tolerance, threshold=threshold, confidence_level=confidence_level,
                max_unusable_share=limit,
            )
            if swap and name_swap is not None:
                from fairprobe.access.variation import name_swap_audit
                from fairprobe.audit import draw_queries

                cols = feats if feats is not None else [c for c in pool.columns if c != label]
                sample = draw_queries(pool, budget, seed)[cols]
                extra["name_swap"] = name_swap_audit(
                    bb, sample, name_swap, seed=seed, confidence_level=confidence_level
                ).to_dict()
        usage = getattr(be, "usage", None)
        if isinstance(usage, dict):  # tokens the server reported, summed over every backend run
            total = extra.setdefault("usage", dict.fromkeys(usage, 0))
            assert isinstance(total, dict)
            for k, v in usage.items():
                total[k] = total.get(k, 0) + v
        return res

    extra: dict[str, object] = {}
    result = one(backend, budget * (2 if name_swap else 1), swap=True)
    if templates is not None:
        from fairprobe.access.openai_chat import OpenAIChatBackend
        from fairprobe.access.variation import prompt_sensitivity

        def run_variant(name: str, template: str) -> AuditResult:
            assert isinstance(backend, OpenAIChatBackend)
            return one(OpenAIChatBackend(backend.config, prompt_template=template), budget)

        extra["prompt_variation"] = prompt_sensitivity(templates, run_variant).to_dict()
    print_audit(result, console)
    if "name_swap" in extra:
        ns = extra["name_swap"]
        assert isinstance(ns, dict)
        console.print(
            f"name swap ({ns['field']}): {ns['n_flips']} of {ns['n_usable']} usable pairs flip, "
            f"rate {ns['flip_rate']:.4f} [{ns['interval']['low']:.4f}, "
            f"{ns['interval']['high']:.4f}]"
        )
    if "prompt_variation" in extra:
        pv = extra["prompt_variation"]
        assert isinstance(pv, dict)
        for v in pv["variants"]:
            console.print(f"prompt {v['name']}: estimate {v['estimate']:.4f}, {v['verdict']}")
        console.print(
            f"prompt sensitivity: spread {pv['spread']:.4f}, verdicts "
            f"{'agree' if pv['verdicts_agree'] else 'DISAGREE'}"
        )
    if json_path is not None:
        body = result.to_dict()
        body.update(extra)
        write_result(json_path, "audit", body)


def register(app: typer.Typer) -> None:
    app.command("audit")(audit)
