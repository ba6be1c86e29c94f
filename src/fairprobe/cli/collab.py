"""``fairprobe collab simulate`` and ``fairprobe collab sweep``: simulated collaborative audits.

The sub-app object is :data:`collab_app`, so other modules (e.g. the node CLI) can add commands
such as ``collab demo`` to it. See ``docs/collab.md``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from fairprobe.cli.gate import FAIL_ON_HELP, FailOn, gate_verdict

if TYPE_CHECKING:
    from fairprobe.collab.simulate import SimConfig

__all__ = ["collab_app", "register"]

collab_app = typer.Typer(
    help="Collaborative audits robust to fairwashing auditors (Auditopus): simulate and sweep.",
    no_args_is_help=True,
)

# Options shared by ``simulate`` and ``sweep`` (the protocol and set-up parameters of SimConfig).
Honest = Annotated[int, typer.Option("--honest", "-N", help="Number N of honest auditors.")]
Alpha = Annotated[float, typer.Option("--alpha", help="Dirichlet concentration (heterogeneity).")]
PerRound = Annotated[int, typer.Option("--n", help="Queries per auditor and round.")]
Rounds = Annotated[int, typer.Option("--rounds", "-T", help="Cap T on the number of rounds.")]
Tau = Annotated[float, typer.Option("--tau", help="Half-width of the fair band.")]
ZMax = Annotated[float, typer.Option("--z-max", help="Cap of the suspicion score.")]
Beta = Annotated[float, typer.Option("--beta", help="Trimming fraction of the trimmed mean.")]
Replacement = Annotated[
    bool,
    typer.Option("--replacement/--no-replacement", help="Draw queries with replacement (RQ4)."),
]
Degree = Annotated[float, typer.Option("--degree", help="Expected degree of the graph.")]
ATTACK_NAMES = ("adaptive", "consistent", "consistent-exact", "selective", "extreme", "neutral")
Attack = Annotated[
    str,
    typer.Option(
        "--attack",
        help="Attack strategy: " + ", ".join(ATTACK_NAMES) + " (or a registered one).",
    ),
]
RobustC = Annotated[
    float,
    typer.Option(
        "--robust-c",
        help="Screening threshold of 'robust' in MADs (4: recommended; 2: harder on "
        "self-consistent liars, less accurate).",
    ),
]
RobustCDecisive = Annotated[
    float,
    typer.Option(
        "--robust-c-decisive",
        help="Threshold of the decisive two-sided screening of 'robust' (rule 5: used only "
        "when it moves a fair verdict out of the band; 2: recommended; 0: off, the previous "
        "'robust').",
    ),
]
Betas = Annotated[
    str | None, typer.Option("--betas", help="Extra trimming fractions, e.g. 0.1,0.3")
]
MaxLiars = Annotated[
    int,
    typer.Option(
        "--max-liars",
        help="Declared liar bound K of the default 'bounded' verdict: it says fair/unfair only "
        "if that holds whichever <= K auditors lie (else undetermined).",
    ),
]


_CASES_HELP = (
    "civil-very-unfair, civil-moderate, civil-near-fair, bios-very-unfair, bios-moderate, "
    "bios-near-fair"
)


Verify = Annotated[bool, typer.Option(
    "--verify/--no-verify",
    help="Run the verification of answers (challenges of committed records, proofs of fraud).")]
VerifyRate = Annotated[float, typer.Option(
    "--verify-rate", help="Share c of each neighbour's new leaves a challenger opens (with --verify).")]

# The protocol and set-up options of ``simulate`` and ``sweep``, in help order, with their
# defaults: declared once here, added to each command by :func:`_protocol_options`.
_PROTOCOL_OPTIONS: tuple[tuple[str, Any, Any], ...] = (
    ("honest", Honest, 20),
    ("alpha", Alpha, 1.0),
    ("n", PerRound, 300),
    ("rounds", Rounds, 150),
    ("tau", Tau, 0.05),
    ("z_max", ZMax, 8.0),
    ("beta", Beta, 0.2),
    ("replacement", Replacement, False),
    ("degree", Degree, 4.0),
    ("attack", Attack, "adaptive"),
    ("betas", Betas, None),
    ("robust_c", RobustC, 4.0),
    ("robust_c_decisive", RobustCDecisive, 2.0),
    ("max_liars", MaxLiars, 0),
    ("verify", Verify, False),
    ("verify_rate", VerifyRate, 0.008),
)


def _protocol_options(command: Callable[..., None]) -> Callable[..., None]:
    """``command`` with the protocol options where its keyword-only ``protocol`` parameter
    stands; their parsed values reach it as one dict, ``protocol``.

    typer reads a command's options from its signature, so the options join the signature
    typer sees (``__signature__``) instead of being written out in each command.
    """
    sig = inspect.signature(command, eval_str=True)
    params = list(sig.parameters.values())
    at = [p.name for p in params].index("protocol")
    options = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=ann, default=default)
        for name, ann, default in _PROTOCOL_OPTIONS
    ]

    @functools.wraps(command)
    def run(**kwargs: Any) -> None:
        protocol = {name: kwargs.pop(name) for name, _, _ in _PROTOCOL_OPTIONS}
        command(**kwargs, protocol=protocol)

    run.__signature__ = sig.replace(  # type: ignore[attr-defined]
        parameters=[*params[:at], *options, *params[at + 1:]]
    )
    return run


def _config(
    case: str,
    attackers: int,
    seed: int,
    *,
    rounds: int,
    attack: str,
    betas: str | None,
    robust_c_decisive: float,
    verify: bool,
    verify_rate: float,
    **same: Any,
) -> SimConfig:
    """The :class:`~fairprobe.collab.simulate.SimConfig` of the parsed options; ``same`` are
    the options named like their field (``honest``, ``alpha``, ``n``, ``tau``, ...)."""
    from fairprobe.collab.simulate import SimConfig
    from fairprobe.errors import InvalidParameterError

    extra: tuple[float, ...] = ()
    if betas:
        try:
            extra = tuple(float(b) for b in betas.split(",") if b.strip())
        except ValueError:
            raise InvalidParameterError(
                f"The 'betas' parameter must be a comma-separated list of floats. Got {betas!r}."
            ) from None
    return SimConfig(
        case=case.lower(),
        attackers=attackers,
        seed=seed,
        max_rounds=rounds,
        attack=attack.lower(),
        extra_betas=extra,
        robust_c_decisive=None if robust_c_decisive == 0 else robust_c_decisive,
        verify_rate=verify_rate if verify else None,
        **same,
    )


@collab_app.command("simulate")
@_protocol_options
def simulate_cmd(
    case: str = typer.Option(..., "--case", help=f"Table I population: {_CASES_HELP}."),
    attackers: int = typer.Option(0, "--attackers", help="Number K of attackers (>= 0)."),
    seed: int = typer.Option(0, "--seed", help="Fixes the partition, graph and query order."),
    *,
    protocol: dict[str, Any],  # the options of _PROTOCOL_OPTIONS (@_protocol_options)
    partial: str = typer.Option(
        "sampling", "--partial",
        help="Interval when --rounds stops before the query sets are exhausted: sampling (a "
        "stratified sample hull at level 0.95) or worst-case (the records not queried of any "
        "group and answer)."),
    json_path: Path | None = typer.Option(None, "--json", help="Write the result here (JSON)."),
    csv_path: Path | None = typer.Option(None, "--csv", help="Write the printed table (one row per method) as CSV."),
    fail_on: FailOn | None = typer.Option(None, "--fail-on", case_sensitive=False, help=FAIL_ON_HELP + " (here: the default method's verdict on the simulated model)"),
) -> None:
    """Simulate one audit; print every method's estimate and verdict."""
    from fairprobe.cli._common import check_output_path

    check_output_path(csv_path, "--csv")
    from rich.console import Console
    from rich.table import Table

    from fairprobe.collab.job import simulate_job

    job = simulate_job(_config(case, attackers, seed, partial=partial.lower(), **protocol))
    res = job.result
    table = Table(
        title=f"{case}: N={protocol['honest']}, K={attackers}, seed={seed}, {res.rounds} rounds, "
        f"true DP {res.true_dp:+.4f}"
    )
    for col in ("method", "estimate", "interval", "verdict", "certified_k"):
        table.add_column(col)
    for row in res.rows():
        est = row["estimate"]
        k = row.get("certified_k")
        iv = row.get("interval")
        table.add_row(
            row["method"] + (" (default)" if row["method"] == res.default_method else ""),
            "n/a" if est is None else f"{est:+.4f}",
            _interval(iv) if iv else "point",
            str(row["verdict"]) + (" (wrong)" if row["wrong"] else ""),
            "-" if k is None or k < 0 else str(k),
        )
    Console().print(table)
    Console().print(_certificate_line(res.bounded, protocol["max_liars"]), soft_wrap=True)
    if csv_path is not None:
        from fairprobe.report.tables import findings_table, write_csv

        write_csv(csv_path, findings_table(res.rows()))
    if json_path is not None:
        from fairprobe.documents import write_json

        write_json(json_path, job.to_dict())
    gate_verdict(str(res.verdicts[res.default_method]), fail_on)


@collab_app.command("sweep")
@_protocol_options
def sweep_cmd(
    cases: str = typer.Option(..., "--cases", help=f"Comma-separated cases: {_CASES_HELP}."),
    attackers: str = typer.Option("1-19", "--attackers", help="Attacker counts, e.g. 1-19 or 0,5."),
    seeds: int = typer.Option(20, "--seeds", help="Seeds 0..S-1 per configuration."),
    json_path: Path = typer.Option(..., "--json", help="Results (rewritten as runs arrive)."),
    scheduler: str | None = typer.Option(
        None, "--scheduler", help="Address of an existing Dask scheduler (default: local cluster)."
    ),
    workers: int | None = typer.Option(None, "--workers", help="Local cluster worker processes."),
    dashboard: bool = typer.Option(
        False, "--dashboard/--no-dashboard", help="Dask dashboard on 127.0.0.1 (off by default)."
    ),
    *,
    protocol: dict[str, Any],  # the options of _PROTOCOL_OPTIONS (@_protocol_options)
) -> None:
    """Run cases x attackers x seeds on Dask; resumable (rerun to finish an interrupted sweep)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from fairprobe._validation import check_int
    from fairprobe.collab.sweep import check_feasible, parse_int_range, sweep
    from fairprobe.errors import InvalidParameterError

    case_list = [c.strip() for c in cases.split(",") if c.strip()]
    if not case_list:
        raise InvalidParameterError("The 'cases' parameter must name at least one case.")
    from fairprobe._validation import check_choice
    from fairprobe.datasets.populations import POPULATIONS

    case_list = [check_choice(c.lower(), "cases", "collab sweep", list(POPULATIONS))
                 for c in case_list]
    ks = parse_int_range(attackers)
    check_int(seeds, "seeds", "collab sweep", lo=1)
    if workers is not None:
        check_int(workers, "workers", "collab sweep", lo=1)
    cfg = _config(case_list[0], 0, 0, **protocol)
    import os

    check_feasible(cfg, ks, 1 if scheduler else (workers or max(1, os.cpu_count() or 1)))
    console = Console(stderr=True)
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    ) as prog:
        task = prog.add_task("runs", total=None)

        def on_progress(done: int, total: int) -> None:
            prog.update(task, completed=done, total=total)

        res = sweep(
            cfg,
            case_list,
            ks,
            list(range(seeds)),
            json_path=json_path,
            scheduler=scheduler,
            n_workers=workers,
            on_progress=on_progress,
            dashboard=dashboard,
        )
    n_runs = len({(r["case"], r["attackers"], r["seed"]) for r in res["runs"]})
    out = Console()
    if out.is_terminal:
        out.print(_summary_table(res["summary"], ks, seeds, protocol["attack"]))
    else:
        best = {d["method"]: d for d in res["summary"] if d["case"] == "all"}
        parts = [
            f"{m} ASR {best[m]['asr']:.1f}% MAE {best[m]['mae']:.3f}"
            for m in ("none", "median", "auditopus", "robust")
            if m in best and best[m]["mae"] is not None
        ]
        if "bounded" in best:
            d = best["bounded"]
            parts.append(f"bounded (K={cfg.max_liars}) wrong {d['wrong']:.1f}% undetermined "
                         f"{d['undetermined']:.1f}%")
        out.print("; ".join(parts), soft_wrap=True)
    out.print(f"{n_runs} runs, {len(res['runs'])} rows -> {json_path}", soft_wrap=True)


def _summary_table(
    summary: list[dict[str, Any]], ks: list[int], seeds: int, attack: str
) -> Any:
    """Table II layout: one row per case (and all cases), "ASR % / MAE" per method."""
    from rich.table import Table

    methods = [
        m
        for m in ("none", "median", "trimmed-mean", "auditopus", "robust")
        if any(d["method"] == m for d in summary)
    ]
    cases = list(dict.fromkeys(str(d["case"]) for d in summary))
    prefixes = {c.split("-", 1)[0] for c in cases if c != "all"}
    strip = len(prefixes) == 1
    by = {(d["case"], d["method"]): d for d in summary}
    krange = f"{ks[0]}-{ks[-1]}" if len(ks) > 1 else str(ks[0])
    t = Table(
        title=f"attack {attack}, K = {krange}, {seeds} seeds: attack success % / mean abs error",
        caption="bounded is the default verdict (interval; never wrong with <= --max-liars "
        "liars); certified_k: mean over runs (robust)",
    )
    t.add_column("case")
    for m in methods:
        t.add_column(m, justify="right")
    t.add_column("cert. k", justify="right")
    t.add_column("bounded: wrong / undet. %", justify="right")
    for c in cases:
        cells = []
        for m in methods:
            d = by.get((c, m))
            if d is None or d["mae"] is None:
                cells.append("")
            else:
                cells.append(f"{d['asr']:.1f} / {d['mae']:.3f}")
        rk = by.get((c, "robust"), {}).get("certified_k")
        b = by.get((c, "bounded"))
        name = c.split("-", 1)[1] if strip and c != "all" else c
        t.add_row(name, *cells, "" if rk is None else f"{rk:.2f}",
                  "" if b is None else f"{b['wrong']:.1f} / {b['undetermined']:.1f}")
    return t


def _interval(iv: dict[str, Any]) -> str:
    lo, hi = iv.get("low"), iv.get("high")
    return "[" + ("-inf" if lo is None else f"{lo:+.4f}") + ", " + (
        "inf" if hi is None else f"{hi:+.4f}") + "]"


def _certificate_line(b: dict[str, Any], max_liars: int) -> str:
    """The certificate of the default verdict, in one line."""
    if not b:
        return ""
    k = b.get("certified_k")
    fm = b.get("flip_mass")
    eb = b.get("escape_bound")
    out = (f"certificate (bounded): verdict {b['verdict']} {_interval(b['interval'])}, declared "
           f"liars K={max_liars}, certified_k="
           f"{'-' if k is None or k < 0 else k}")
    if fm is not None:
        out += f", a verdict other than the true answers' needs >= {fm:.0f} falsified answers"
        if eb is not None:
            out += (f", which challenges at rate {b['verification_rate']:g} all miss with "
                    f"probability <= {eb:.3g}")
        else:
            out += " (no verification: --verify bounds the chance they escape)"
    a4 = b.get("a4")
    if isinstance(a4, dict) and not a4.get("holds"):
        out += ("; A4 fails on this network: auditor(s) " + ", ".join(
            str(j) for j in a4["without_challenger"]) + " lie with no honest neighbour, so "
            f"the escape bound of K={max_liars} does not hold; the verdict and its bound are "
            f"those of K={a4['max_liars']} (the unchallenged liars counted among the liars)")
    if b.get("census") is False:
        out += ("; the rounds stopped before the query sets were exhausted: the verdict is "
                "about the population, " + (
                    f"the interval a stratified sample hull at level {b['level']:g}"
                    if str(b.get("construction", "")).endswith("stratified-sample")
                    else "the records not queried counted as unseen (worst case)"))
    return out


def register(app: typer.Typer) -> None:
    app.add_typer(collab_app, name="collab")
