"""``fairprobe node keygen``, ``fairprobe node run`` and ``fairprobe collab demo``.

See ``docs/collab-network.md``.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from fairprobe.cli.gate import FAIL_ON_HELP, FailOn, gate_verdict

__all__ = ["register"]

node_app = typer.Typer(
    help="Run an auditor node of a collaborative audit (signed gossip over HTTP).",
    no_args_is_help=True,
)


@node_app.command("keygen")
def keygen_cmd(
    out: Path = typer.Option(..., "--out", help="Directory for node.key (0600) and node.pub."),
    force: bool = typer.Option(False, help="Replace an existing key."),
) -> None:
    """Create an Ed25519 key pair; print the public key for the roster."""
    from fairprobe.collab.net.keys import generate_keypair

    kp = generate_keypair(out, force=force)
    typer.echo(json.dumps(kp.to_dict()))


@node_app.command("run")
def run_cmd(
    config: Path = typer.Option(..., "--config", help="The node's node.toml."),
    role: str | None = typer.Option(None, help="Override the role: honest | attacker."),
    json_path: Path | None = typer.Option(None, "--json", help="Write the result here (JSON)."),
) -> None:
    """Run this node until the last round; print its estimate and verdict (one JSON line)."""
    import dataclasses
    import logging
    import os

    from fairprobe.collab.net.config import load_node_config
    from fairprobe.collab.net.node import NodeStopped, run_node
    from fairprobe.report.jsonio import write_json

    if os.environ.get("FAIRPROBE_NODE_LOG"):
        logging.basicConfig(
            level=os.environ["FAIRPROBE_NODE_LOG"].upper(),
            format="%(asctime)s %(name)s %(message)s",
        )
    cfg = load_node_config(config)
    if role is not None:
        cfg = dataclasses.replace(cfg, role=role, source=cfg.source)
    try:
        result = run_node(cfg)
    except NodeStopped as exc:  # SIGTERM / SIGINT: a clean stop, resumable
        typer.echo(str(exc), err=True)
        raise typer.Exit(0) from None
    typer.echo(json.dumps(result.model_dump()))
    if json_path is not None:
        write_json(json_path, result.model_dump())


def demo_cmd(
    honest: int = typer.Option(12, "--honest", help="Honest nodes N."),
    attackers: int = typer.Option(2, "--attackers", help="Attacker nodes K."),
    seed: int = typer.Option(0, "--seed", help="Seed of partition, graph and query order."),
    case: str = typer.Option("bios-moderate", help="Table I population replayed."),
    n: int = typer.Option(300, "--n", help="Queries per round."),
    rounds: int | None = typer.Option(
        None, help="Rounds (default: until the query sets are used up, at most --max-rounds)."
    ),
    max_rounds: int = typer.Option(150, help="Cap T on the number of rounds."),
    alpha: float = typer.Option(1.0, help="Dirichlet concentration of the partition."),
    round_timeout: float = typer.Option(30.0, help="Seconds a node waits for a round's tables."),
    platform: str | None = typer.Option(
        None, help="Audit the platform server at this URL over Adult records instead."
    ),
    serve_platform: bool = typer.Option(
        False, help="Start a platform server (fairprobe platform serve) for this demo."
    ),
    attack: str = typer.Option(
        "adaptive", "--attack",
        help="Attack of the attacker nodes: adaptive, extreme, neutral, consistent, "
        "consistent-exact, selective.",
    ),
    method: str = typer.Option(
        "bounded", "--method",
        help="Aggregation run by honest nodes: bounded (default: an interval verdict that holds "
        "whichever --max-liars auditors lie), robust, auditopus, none, median, trimmed-mean, "
        "median-local-dp, trimmed-mean-local-dp.",
    ),
    max_liars: int = typer.Option(
        1, "--max-liars",
        help="Declared liar bound K of the bounded verdict: fair/unfair only if that holds "
        "whichever <= K auditors lie besides those proven by verification (else undetermined).",
    ),
    verify: bool | None = typer.Option(
        None, "--verify/--no-verify",
        help="Verification of answers: commit records, challenge neighbours, exclude on fraud "
        "(default: on; without it a fabricating node can fool every honest one; with "
        "--platform/--serve-platform the attackers commit Adult records and challengers "
        "re-ask the platform).",
    ),
    verify_rate: float = typer.Option(
        0.008, "--verify-rate",
        help="Share of each neighbour's new leaves opened per challenge (extra queries about "
        "rate x degree).",
    ),
    verify_records: str = typer.Option(
        "random", "--verify-records",
        help="How attackers back their counts: random (falsified answers) | chosen (truthful).",
    ),
    workdir: Path | None = typer.Option(None, help="Keep keys, roster, configs and state here."),
    json_path: Path | None = typer.Option(None, "--json", help="Write nodes and median (JSON)."),
    fail_on: FailOn | None = typer.Option(
        None, "--fail-on", case_sensitive=False,
        help=FAIL_ON_HELP + " (here: the regulator's verdict over the honest nodes)"),
) -> None:
    """Start N honest and K attacker nodes on 127.0.0.1 and run the audit to the end."""

    import contextlib

    plat_ctx: contextlib.AbstractContextManager[object] = contextlib.nullcontext()
    if serve_platform:
        if platform is not None:
            raise typer.BadParameter("give --platform URL or --serve-platform, not both")
        from fairprobe.platform import PlatformProcess

        plat_ctx = PlatformProcess()
    if verify is None:
        verify = True
    with plat_ctx as plat:
        url = plat.url if serve_platform else platform  # type: ignore[attr-defined]
        _demo(honest, attackers, seed, case, n, rounds, max_rounds, alpha, round_timeout,
              url, workdir, json_path, attack=attack.lower(), method=method.lower(),
              verify=verify, verify_rate=verify_rate, verify_records=verify_records.lower(),
              max_liars=max_liars, fail_on=fail_on)


def _demo(
    honest: int, attackers: int, seed: int, case: str, n: int, rounds: int | None,
    max_rounds: int, alpha: float, round_timeout: float, platform: str | None,
    workdir: Path | None, json_path: Path | None, fail_on: FailOn | None = None,
    **extra: object,
) -> None:
    from fairprobe.collab.job import nodes_job
    from fairprobe.collab.net.launcher import DemoSpec

    spec = DemoSpec(
        **extra,  # type: ignore[arg-type]
        platform_url=platform,
        honest=honest,
        attackers=attackers,
        seed=seed,
        case=case,
        n=n,
        rounds=rounds,
        max_rounds=max_rounds,
        alpha=alpha,
        round_timeout=round_timeout,
    )
    job = nodes_job(spec, workdir=workdir, progress=True)
    out = job.result
    for node in out["nodes"]:
        ck = node.get("certified_k")
        extra_cols = "" if ck is None else f"  certified_k {ck}"
        f = node.get("finding")
        if node["role"] == "honest" and f is not None:
            iv = f["interval"]
            extra_cols = f"  {f['verdict']:<12}" + (
                f"  [{_num(iv['low'])}, {_num(iv['high'])}]" if spec.method == "bounded" else ""
            ) + extra_cols
        if node["excluded"]:
            extra_cols += "  excluded " + ", ".join(
                f"{a}@{r}" for a, r in sorted(node["excluded"].items()))
        typer.echo(f"{node['id']:>6}  {node['role']:<8}  {node['estimate']:+.6f}{extra_cols}")
    for a, ex in out["exclusions"].items():
        if ex["excluded_by"]:
            typer.echo(f"{a} excluded on a proof of fraud by {ex['excluded_by']} of "
                       f"{ex['of_honest']} honest nodes (the last at round {ex['last_round']})")
        elif spec.verify:
            typer.echo(f"{a} was not excluded")
    truth = (
        f"; DP of the honest auditors' data {out['honest_dp']:+.6f}"
        if out["honest_dp"] is not None else ""
    )
    if out.get("default_method") == "bounded":
        iv = out["interval"]
        typer.echo(
            f"verdict (bounded, declared liars K = {out['max_liars']}): {out['verdict']}, "
            f"interval [{_num(iv['low'])}, {_num(iv['high'])}] (tau = {out['tau']}{truth})"
        )
        typer.echo(_certificate(out, spec.n))
    else:
        typer.echo(
            f"median estimate {out['median']:+.6f} -> {out['verdict']} (tau = {out['tau']}"
            f"{truth})"
        )
    if out.get("certified_k") is not None and out.get("default_method") != "bounded":
        typer.echo(
            f"{out['verdict']}, holds against up to {out['certified_k']} fabricating auditors "
            f"({spec.n} queries per round each; method {spec.method})"
        )
    if json_path is not None:
        from fairprobe.documents import write_json

        write_json(json_path, job.to_dict())
    gate_verdict(str(out["verdict"]), fail_on)


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.6f}"


def _certificate(out: dict[str, object], n: int) -> str:
    """The certificate of the bounded verdict (K, certified_k, verification bound), one line."""
    k, fm, eb = out.get("certified_k"), out.get("flip_mass"), out.get("escape_bound")
    line = (f"certificate: declared K = {out['max_liars']}, certified_k = "
            f"{'-' if k is None else k} (the verdict stands whichever that many auditors lie)")
    if isinstance(fm, (int, float)):
        line += (f"; a verdict other than the true answers' needs >= {fm:.0f} falsified "
                 "answers")
        if isinstance(eb, (int, float)):
            line += (f", which challenges at rate {out['verification_rate']} (each new answer "
                     f"opened with probability >= that) all miss with probability <= {eb:.3g} "
                     "(not covered: truthful answers on chosen records, which only K covers)")
        else:
            line += " (no verification: --verify bounds the chance such a fabricator escapes)"
    a4 = out.get("a4")
    if isinstance(a4, dict) and isinstance(eb, (int, float)) and not a4.get("holds"):
        line += f"; the escape bound's assumption A4 (an honest challenger per source): {a4['condition']}"
    return line


def register(app: typer.Typer) -> None:
    app.add_typer(node_app, name="node")
    try:
        from fairprobe.cli.collab import collab_app  # type: ignore[attr-defined]
    except ImportError:
        collab_app = typer.Typer(help="Collaborative audits.", no_args_is_help=True)
        app.add_typer(collab_app, name="collab")
    collab_app.command("demo")(demo_cmd)
