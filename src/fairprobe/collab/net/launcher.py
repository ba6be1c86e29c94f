"""Start a whole auditor network as separate processes on 127.0.0.1 (demo, tests, benchmark).

:class:`LocalNetwork` writes everything a real deployment would have -- one Ed25519 key pair per
auditor (``fairprobe node keygen``), the roster, one ``node.toml`` per auditor, the replay file of
the audited model's answers -- then runs ``fairprobe node run --config ...`` once per auditor and
collects the results. The partition of the population, the graph and the attackers' positions
come from the simulator's own set-up functions (:mod:`fairprobe.collab.net.plan`), so that a run
of the network can be compared, digit for digit, with a simulated run of the same seed.

Every process started is terminated on exit, also when the caller fails (context manager).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import signal
import socket
import stat
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from fairprobe._io import write_file
from fairprobe._proc import die_with_parent
from fairprobe._validation import check_int, check_real
from fairprobe.collab.net.config import (
    AuditConfig,
    NodeConfig,
    TimeoutConfig,
    VerifyNodeConfig,
)
from fairprobe.collab.net.keys import generate_keypair
from fairprobe.collab.net.roster import Member, Roster
from fairprobe.collab.simulate import SimConfig
from fairprobe.collab.verify import DEFAULT_MAX_LIARS, DEFAULT_RATE
from fairprobe.errors import ConfigError, FairprobeError, ProtocolError

__all__ = ["DemoSpec", "LocalNetwork", "free_loopback_port", "run_demo"]


def free_loopback_port() -> int:
    return free_loopback_ports(1)[0]


def free_loopback_ports(k: int) -> list[int]:
    """``k`` distinct free ports of 127.0.0.1. The sockets stay bound until all ``k`` are
    drawn: one socket at a time, closed before the next, can be given the same port again."""
    with contextlib.ExitStack() as stack:
        ports = []
        for _ in range(k):
            s = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            s.bind(("127.0.0.1", 0))
            ports.append(int(s.getsockname()[1]))
        return ports


@dataclass(frozen=True)
class DemoSpec:
    """What to run: N honest and K attacker auditors on one Table I population."""

    honest: int
    attackers: int = 0
    seed: int = 0
    case: str = "bios-moderate"
    # the simulator's parameters with its defaults: a demo is the simulator's run of the same
    # seed as processes (plan_network), digit for digit
    n: int = SimConfig.n
    rounds: int | None = None
    max_rounds: int = SimConfig.max_rounds
    alpha: float = SimConfig.alpha
    tau: float = SimConfig.tau
    z_max: float = SimConfig.z_max
    replacement: bool = SimConfig.replacement
    min_per_group: int = SimConfig.min_per_group
    round_timeout: float = 30.0
    request_timeout: float = 2.0
    finish_timeout: float = 10.0
    collector_url: str | None = None
    #: Audit the platform server at this URL (``fairprobe platform serve``) over the bundled
    #: Adult records of ``adult_split`` instead of replaying a Table I population.
    platform_url: str | None = None
    adult_split: str = "test"
    #: Attack strategy of the attacker nodes.
    attack: str = "adaptive"
    #: Aggregation method of the honest nodes (``bounded``, the interval verdict, by default).
    method: str = "bounded"
    #: Declared liar bound of the ``bounded`` verdict.
    max_liars: int = DEFAULT_MAX_LIARS
    #: Verification of answers (fairprobe.collab.verify): on/off, challenge rate, and how the
    #: attackers back their counts with records (``random`` or ``chosen``).
    verify: bool = False
    verify_rate: float = DEFAULT_RATE
    verify_records: str = "random"

    def __post_init__(self) -> None:
        owner = "DemoSpec"
        check_int(self.honest, "honest", owner, lo=1)
        check_int(self.attackers, "attackers", owner, lo=0)
        check_int(self.seed, "seed", owner, lo=0)
        check_int(self.n, "n", owner, lo=1)
        check_int(self.max_rounds, "max_rounds", owner, lo=1)
        if self.rounds is not None:
            check_int(self.rounds, "rounds", owner, lo=1)
        check_real(self.alpha, "alpha", owner, lo=0.0, closed="neither")
        check_real(self.round_timeout, "round_timeout", owner, lo=0.0, closed="neither")
        check_real(self.verify_rate, "verify_rate", owner, lo=0.0, hi=1.0)
        from fairprobe._validation import check_choice
        from fairprobe.collab.attacker import ATTACKS
        from fairprobe.collab.baselines import AGGREGATORS

        check_choice(self.attack, "attack", owner, list(ATTACKS))
        check_choice(self.method, "method", owner,
                     ["bounded", "auditopus", "robust", *AGGREGATORS])
        check_int(self.max_liars, "max_liars", owner, lo=0)
        check_choice(self.verify_records, "verify_records", owner, ["random", "chosen"])
        if self.platform_url is not None and self.attackers and self.attack != "adaptive":
            from fairprobe.errors import InvalidParameterError

            raise InvalidParameterError(
                f"The {self.attack!r} attack is calibrated on a Table I population; against the "
                "platform server use --attack adaptive (or drop --platform)."
            )


@dataclass
class _Proc:
    id: str
    role: str
    config: Path
    result: Path
    log: Path
    popen: subprocess.Popen[bytes] | None = None
    log_fh: Any = None


@dataclass
class LocalNetwork:
    """N + K node processes on 127.0.0.1, planned like the simulator plans a run.

    Parameters
    ----------
    spec : DemoSpec
    workdir : Path
        Where keys, roster, configs, state databases, logs and results go.
    listen_override : dict, optional
        ``{id: port}``: nodes that listen on another port than their roster address (a test puts
        a recording proxy on the roster address).
    roster_override : dict, optional
        ``{id: Roster}``: nodes that read another roster (e.g. with neighbours behind proxies).
    """

    spec: DemoSpec
    workdir: Path
    listen_override: dict[str, int] = field(default_factory=dict)
    python: str = sys.executable
    procs: dict[str, _Proc] = field(default_factory=dict)
    roster: Roster | None = None
    plan: Any = None

    # -- planning -----------------------------------------------------------------------------
    def audit_id(self) -> bytes:
        """The audit id every node of this network binds into its signatures (to check the
        results a collector got, or tables seen on the wire), after :meth:`write`."""
        from fairprobe.collab.net.config import load_node_config
        from fairprobe.collab.net.node import audit_id

        if self.roster is None or not self.procs:
            raise ConfigError("write() the network first.")
        return audit_id(load_node_config(self.procs[sorted(self.procs)[0]].config), self.roster)

    def audit_label(self) -> str:
        """The demo's ``[audit] label``: a digest of its whole spec, so that two demos that
        differ in anything (liars, attack, seed, ...) are two audits whose signatures never
        verify in each other, and a rerun of one demo reproduces it."""
        # not the addresses or timeouts: they change between reruns of the same audit
        d = {k: v for k, v in asdict(self.spec).items()
             if k not in ("collector_url", "platform_url") and not k.endswith("_timeout")}
        raw = json.dumps(d, sort_keys=True, default=str).encode()
        return "demo-" + hashlib.sha256(raw).hexdigest()[:32]

    def write(self) -> LocalNetwork:
        from fairprobe.collab.net.plan import plan_network, plan_platform_network

        s = self.spec
        if not self.workdir.exists():
            self.workdir.mkdir(parents=True)
            os.chmod(self.workdir, 0o700)
        for sub in ("keys", "nodes", "state", "results", "logs", "pids"):
            _private_dir(self.workdir / sub)
        if s.platform_url is None:
            plan = plan_network(
                case=s.case, honest=s.honest, attackers=s.attackers, seed=s.seed, n=s.n,
                alpha=s.alpha, max_rounds=s.max_rounds, rounds=s.rounds,
                min_per_group=s.min_per_group,
            )
        else:
            plan = plan_platform_network(
                split=s.adult_split, honest=s.honest, attackers=s.attackers, seed=s.seed,
                n=s.n, alpha=s.alpha, max_rounds=s.max_rounds, rounds=s.rounds,
                min_per_group=s.min_per_group,
            )
        self.plan = plan
        members = []
        ports = free_loopback_ports(len(plan.ids))
        for i, nid in enumerate(plan.ids):
            # demo keys derive from the seed, so that a demo (its challenges included) is
            # reproducible; a real deployment draws its keys (`fairprobe node keygen`)
            secret = hashlib.sha256(f"fairprobe-demo-key/{s.seed}/{s.case}/{nid}".encode()).digest()
            kp = generate_keypair(self.workdir / "keys" / nid, force=True, secret=secret)
            nb = tuple(plan.ids[j] for j in plan.neighbours[i])
            members.append(Member(nid, kp.public_key_b64, "127.0.0.1", ports[i], nb))
        self.roster = Roster(tuple(members), name=f"demo-{s.case}-{s.seed}")
        roster_path = self.roster.write(self.workdir / "roster.toml", private=True)
        # bounded: closing rounds until every honest node holds every source's final counts
        closing = closing_rounds(plan.neighbours) if s.method == "bounded" else 0
        for i, nid in enumerate(plan.ids):
            role = "attacker" if plan.is_attacker[i] else "honest"
            qs: dict[str, Any] = {}
            be: dict[str, Any] = {}
            cache = str(self.workdir / "state" / f"{nid}.answers.sqlite")
            if role == "honest":
                share = {"honest": s.honest, "alpha": s.alpha, "seed": s.seed,
                         "min_per_group": s.min_per_group, "index": int(plan.honest_index[i])}
                qs = {"kind": "population", "case": s.case, **share}
                be = {"kind": "population", "case": s.case, "cache": cache}
                if s.platform_url is not None:
                    qs = {"kind": "adult", "split": s.adult_split, **share}
                    be = {"kind": "http-json", "url": s.platform_url, "path": "/audit/predict",
                          "cache": cache}  # fmt: skip
            if role == "attacker" and s.verify:
                qs = {"kind": "population-pool", "case": s.case, "seed": s.seed * 1000 + i}
                if s.platform_url is not None:
                    # Adult records, answers asked of the platform it colludes with
                    qs = {"kind": "adult-pool", "split": s.adult_split,
                          "seed": s.seed * 1000 + i}
                    be = {"kind": "http-json", "url": s.platform_url, "path": "/audit/predict",
                          "cache": cache}
            ctx: dict[str, Any] = {}
            if role == "attacker" and s.platform_url is None:
                from fairprobe.collab.attacker import get_attack

                if get_attack(s.attack).needs_context:
                    from fairprobe.collab.net.plan import sim_config
                    from fairprobe.collab.simulate import attack_strategy

                    scfg = sim_config(
                        case=s.case, honest=s.honest, attackers=s.attackers, seed=s.seed,
                        n=s.n, alpha=s.alpha, max_rounds=s.max_rounds, tau=s.tau,
                        min_per_group=s.min_per_group, attack=s.attack,
                    )
                    strat = attack_strategy(scfg, plan.rounds, (i,))
                    assert strat.context is not None
                    ctx = strat.context.to_dict()
            listen = self.listen_override.get(nid)
            cfg = NodeConfig(
                id=nid,
                key=self.workdir / "keys" / nid / "node.key",
                roster=roster_path,
                state_db=self.workdir / "state" / f"{nid}.sqlite",
                role=role,
                listen=None if listen is None else f"127.0.0.1:{listen}",
                collector_url=s.collector_url,
                audit=AuditConfig(
                    n=s.n, rounds=plan.rounds, tau=s.tau, z_max=s.z_max,
                    replacement=s.replacement, seed=s.seed, closing=closing,
                    label=self.audit_label(),
                ),
                timeouts=TimeoutConfig(
                    round=s.round_timeout, request=s.request_timeout, finish=s.finish_timeout
                ),
                query_set=qs,
                backend=be,
                verify=VerifyNodeConfig(
                    enabled=s.verify, rate=s.verify_rate, records=s.verify_records
                ),
                method=s.method,
                max_liars=s.max_liars,
                attack=s.attack,
                attack_context=ctx,
            )
            cpath = cfg.write(self.workdir / "nodes" / f"{nid}.toml", private=True)
            self.procs[nid] = _Proc(
                nid, role, cpath,
                self.workdir / "results" / f"{nid}.json",
                self.workdir / "logs" / f"{nid}.log",
            )
        return self

    def override_peers(self, nid: str, ports: dict[str, int]) -> Path:
        """Make node ``nid`` reach the members in ``ports`` on other ports (e.g. proxies)."""
        import dataclasses

        from fairprobe.collab.net.config import load_node_config

        assert self.roster is not None
        members = tuple(
            dataclasses.replace(m, port=ports.get(m.id, m.port)) for m in self.roster.members
        )
        own = Roster(members, name=self.roster.name, allow_remote=self.roster.allow_remote)
        path = own.write(self.workdir / f"roster-{nid}.toml", private=True)
        p = self.procs[nid].config
        cfg = load_node_config(p)
        dataclasses.replace(cfg, roster=path).write(p, private=True)
        return path

    # -- processes ----------------------------------------------------------------------------
    def start(self, ids: Sequence[str] | None = None) -> None:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        for nid in ids if ids is not None else list(self.procs):
            p = self.procs[nid]
            if p.popen is not None and p.popen.poll() is None:
                continue
            p.log_fh = _open_log(p.log)
            p.popen = subprocess.Popen(
                [self.python, "-m", "fairprobe", "node", "run",
                 "--config", str(p.config), "--json", str(p.result)],
                stdout=p.log_fh, stderr=subprocess.STDOUT, env=env, start_new_session=True,
                preexec_fn=die_with_parent,
            )
            # a record of what runs, so that a supervisor can end it even if this process dies
            pid_dir = _private_dir(self.workdir / "pids")
            write_file(pid_dir / f"{nid}.pid", str(p.popen.pid), what="pid file", private=True)

    def signal(self, nid: str, sig: int = signal.SIGKILL) -> None:
        p = self.procs[nid]
        if p.popen is not None and p.popen.poll() is None:
            p.popen.send_signal(sig)
            p.popen.wait(timeout=30)

    def status(self, nid: str, timeout: float = 1.0) -> dict[str, Any] | None:
        assert self.roster is not None
        m = self.roster.member(nid)
        try:
            r = httpx.get(f"{m.url}/v1/status", timeout=timeout, trust_env=False)
            return dict(r.json())
        except (httpx.HTTPError, ValueError):
            return None

    def wait_round(self, nid: str, round_: int, timeout: float) -> None:
        """Block until node ``nid`` reports a round >= ``round_``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            st = self.status(nid)
            if st is not None and st["round"] >= round_:
                return
            time.sleep(0.05)
        raise ProtocolError(f"node {nid} did not reach round {round_} in {timeout:.0f} s.")

    def alive(self) -> list[str]:
        return [k for k, p in self.procs.items() if p.popen is not None and p.popen.poll() is None]

    def wait(self, timeout: float, *, progress: bool = False) -> dict[str, dict[str, Any]]:
        """Wait for every started node to exit; return ``{id: result}`` (raise on a failure)."""
        deadline = time.monotonic() + timeout
        bar_ctx: Any = contextlib.nullcontext()
        if progress:
            from rich.progress import Progress

            bar_ctx = Progress(transient=True)
        with bar_ctx as bar:
            task = bar.add_task("audit rounds", total=self.plan.rounds) if progress else None
            while self.alive():
                if time.monotonic() > deadline:
                    raise ProtocolError(
                        f"the network did not finish in {timeout:.0f} s; logs in "
                        f"{self.workdir / 'logs'}."
                    )
                if progress and task is not None:
                    rounds = [st["round"] for k in self.alive() if (st := self.status(k, 0.2))]
                    if rounds:
                        bar.update(task, completed=max(0, min(rounds) - 1))
                time.sleep(0.1)
        results: dict[str, dict[str, Any]] = {}
        for nid, p in self.procs.items():
            if p.popen is None:  # never started (a member played by someone else)
                continue
            if p.popen.returncode != 0 or not p.result.exists():
                tail = p.log.read_text(errors="replace").strip().splitlines()[-1:] or ["?"]
                raise ProtocolError(
                    f"node {nid} exited with code {p.popen.returncode}: {tail[0]}"
                )
            results[nid] = json.loads(p.result.read_text())
        return results

    def close(self) -> None:
        """Terminate every process still running (SIGTERM, then SIGKILL)."""
        for p in self.procs.values():
            if p.popen is not None and p.popen.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    p.popen.terminate()
        deadline = time.monotonic() + 5
        for p in self.procs.values():
            if p.popen is None:
                continue
            try:
                p.popen.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    p.popen.kill()
                p.popen.wait(timeout=10)
            if p.log_fh is not None:
                p.log_fh.close()
                p.log_fh = None

    def __enter__(self) -> LocalNetwork:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def closing_rounds(neighbours: Sequence[Sequence[int]]) -> int:
    """The largest gossip lag of the graph (an entry of round ``R`` reaches a node ``h`` hops
    away at the end of round ``R + h - 1``): the closing rounds ``bounded`` needs."""
    from fairprobe.collab.graph import gossip_lags

    v = len(neighbours)
    adj = np.zeros((v, v), dtype=bool)
    for i, nb in enumerate(neighbours):
        adj[i, list(nb)] = True
    return int(gossip_lags(adj).max()) if v > 1 else 0


def summarise(results: dict[str, dict[str, Any]], tau: float) -> dict[str, Any]:
    """``nodes`` (id, role, estimate, verdict), the ``median`` estimate over all nodes
    (attackers report 0) and its ``verdict`` against ``tau`` (Section VI-A)."""
    nodes = [
        {"id": k, "role": v["role"], "estimate": v["estimate"], "verdict": v["verdict"],
         "method": v.get("method", "auditopus"), "certified_k": v.get("certified_k"),
         "excluded": v.get("excluded", {}), "verification": v.get("verification", {}),
         "trajectory": v.get("trajectory", []), "source_weights": v.get("source_weights", {}),
         "finding": v.get("finding"), "bounded": v.get("bounded"),
         "max_liars": v.get("max_liars", 0)}
        for k, v in sorted(results.items())
    ]
    med = float(statistics.median(x["estimate"] for x in nodes))
    honest = [x for x in nodes if x["role"] == "honest"]
    exclusions = {
        x["id"]: {
            "excluded_by": sum(1 for h in honest if x["id"] in h["excluded"]),
            "of_honest": len(honest),
            "last_round": max((h["excluded"][x["id"]] for h in honest if x["id"] in h["excluded"]),
                              default=None),
        }
        for x in nodes
        if any(x["id"] in h["excluded"] for h in honest) or x["role"] == "attacker"
    }
    bounded = [x["bounded"] for x in honest]
    if honest and all(b is not None for b in bounded):
        return {
            "nodes": nodes, "exclusions": exclusions, "median": med, "tau": tau,
            **_bounded_summary(bounded, len(nodes) - len(honest), tau,
                               subject=str(get_subject(honest))),
        }
    cks = [x["certified_k"] for x in honest]
    gk = None
    if honest and all(k is not None for k in cks):
        from fairprobe.collab.certificate import global_certified_k

        gk = int(global_certified_k(
            [x["estimate"] for x in honest], cks, len(nodes) - len(honest), tau))
    return {
        "nodes": nodes,
        "exclusions": exclusions,
        "certified_k": gk,
        "median": med,
        "verdict": "fair" if abs(med) <= tau else "unfair",
        "tau": tau,
    }


def get_subject(honest: list[dict[str, Any]]) -> str:
    """``model`` when the nodes audited a live platform, ``simulation`` when they replayed a
    bundled population (the truth is known: a report does not count it in its headline)."""
    subj = {str(((x.get("finding") or {}).get("question") or {}).get("subject", "model"))
            for x in honest}
    return "model" if "model" in subj else "simulation"


def _bounded_summary(bounded: list[dict[str, Any]], liars: int, tau: float, *,
                     subject: str = "model") -> dict[str, Any]:
    """The regulator's ``bounded`` verdict from the honest nodes' intervals (attackers report
    ``[0, 0]``): :func:`fairprobe.collab.bounded.global_interval` and ``decide``."""
    from fairprobe.collab.bounded import escape_bound, global_interval, make_finding

    # a node counts the sources it finds without an honest challenger among those that may
    # lie (its K grows by their number): the regulator takes the largest
    K = max(int(b["max_liars"]) for b in bounded)
    a4 = _a4_summary([b.get("a4") for b in bounded])
    nan = float("nan")
    lo = [nan if b["low"] is None else float(b["low"]) for b in bounded]
    hi = [nan if b["high"] is None else float(b["high"]) for b in bounded]
    # proofs are transferable: the proven liars' reports are dropped, each uses up one of K
    proven = set().union(*(b.get("proven_liars") or [] for b in bounded))
    k_reg = K  # proven liars do not use up K (fairprobe.collab.bounded)
    g_lo, g_hi = (global_interval(lo, hi, k_reg, liar_reports=max(liars - len(proven), 0))
                  if k_reg >= 0 else (nan, nan))
    flips = [b["flip_mass"] for b in bounded if b.get("flip_mass") is not None]
    fm = min(flips) if flips else None
    rate = bounded[0].get("verification_rate")
    f = make_finding((g_lo + g_hi) / 2, g_lo, g_hi, tau=tau, subject=subject, max_liars=K,
                     counts={"flip_mass": fm, "verification_rate": rate,
                             "escape_bound": escape_bound(fm, rate), "a4": a4})
    cks = [b.get("certified_k") for b in bounded]
    return {
        "verdict": f.verdict, "finding": f.to_dict(), "max_liars": K,
        "interval": {"low": _finite(g_lo), "high": _finite(g_hi)},
        "certified_k": _global_k(cks) if f.verdict != "undetermined" else None,
        "flip_mass": fm, "verification_rate": rate, "escape_bound": escape_bound(fm, rate),
        "a4": a4, "default_method": "bounded",
    }


def _a4_summary(checks: list[dict[str, Any] | None]) -> dict[str, Any] | None:
    """The honest nodes' local checks of A4 (:meth:`Driver.a4`) combined for the regulator's
    escape bound, which rests on every node's: the sources some node found without an honest
    challenger, and the smallest coalition of liars under which some source may lack one."""
    cs = [c for c in checks if c]
    if not cs:
        return None
    gaps = sorted(set().union(*(c["without_challenger"] for c in cs)))
    ls = [int(c["holds_unless_liars"]) for c in cs if c["holds_unless_liars"] is not None]
    L = min(ls) if ls else None
    weak = sorted(set().union(*(c["weakest"] for c in cs
                                if c["holds_unless_liars"] is not None
                                and int(c["holds_unless_liars"]) == L)))
    if gaps:
        cond = ("no honest challenger for " + ", ".join(gaps) + " (every neighbour a proven "
                "liar): the verdicts count them among the sources that may lie")
    elif L is None:
        cond = "every source is challenged by an honest node or proven"
    else:
        cond = (f"holds if fewer than {L} sources lie besides the proven ones, or if each of "
                + ", ".join(weak) + " has an honest neighbour")
    return {"check": "local", "holds": not gaps and L is None, "without_challenger": gaps,
            "holds_unless_liars": L, "weakest": weak, "condition": cond}


def _global_k(cks: list[int | None], proven: int = 0) -> int | None:
    """The regulator's rule with ``k`` liars needs ``k - proven + 1`` honest intervals deciding
    at ``k``: the largest such ``k`` (proven liars do not count against ``k``: ``proven = 0``
    by default)."""
    ks = sorted((k for k in cks if k is not None), reverse=True)
    best = None
    for k in range(proven, proven + len(ks)):
        if ks[k - proven] >= k:
            best = k
    return best


def _finite(x: float) -> float | None:
    return None if not math.isfinite(x) else float(x)


def _term_is_exit() -> None:
    """Turn SIGTERM into SystemExit so that the network's processes are ended on the way out."""
    import threading

    if threading.current_thread() is threading.main_thread():

        def _exit(signum: int, frame: object) -> None:
            raise SystemExit(128 + signum)

        signal.signal(signal.SIGTERM, _exit)


def _private_dir(p: Path) -> Path:
    """A folder of the demo's workdir: created 0700 whatever the umask; a symbolic link (or
    anything but a folder) placed there is refused, never written through."""
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        st = None
    if st is None:
        p.mkdir(mode=0o700)
    elif not stat.S_ISDIR(st.st_mode):
        kind = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a folder"
        raise ConfigError(f"--workdir: {p} is {kind}; the demo writes only into folders it "
                          "creates (remove it or choose another --workdir).")
    os.chmod(p, 0o700)  # mkdir's mode is filtered by the umask
    return p


def _open_log(path: Path) -> Any:
    """A node's log, opened for appending 0600; never through a symbolic link."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0),
                     0o600)
    except OSError as exc:
        raise ConfigError(f"--workdir: cannot open the log {path}: {exc.strerror or exc} "
                          "(a symbolic link is never followed).") from None
    os.fchmod(fd, 0o600)
    return os.fdopen(fd, "ab")


@contextlib.contextmanager
def _workdir(path: Path | None) -> Iterator[Path]:
    if path is not None:
        path = path.absolute()  # node configs name their files relative to their own folder
        if not path.exists():
            path.mkdir(parents=True)
            os.chmod(path, 0o700)  # whatever the umask
        yield path
    else:
        with tempfile.TemporaryDirectory(prefix="fairprobe-demo-") as d:
            yield Path(d)


def run_demo(
    spec: DemoSpec, *, workdir: Path | None = None, progress: bool = False, timeout: float = 3600
) -> dict[str, Any]:
    """Run a whole network to the end.

    Returns ``nodes`` (``id``, ``role``, ``estimate``, ``verdict``), ``median`` (a float),
    ``verdict``, ``tau``, ``true_dp`` (of the population), ``honest_dp`` (of the honest
    auditors' data), ``rounds`` and ``spec``.
    """
    _term_is_exit()
    with _workdir(workdir) as wd, LocalNetwork(spec, wd) as net:
        net.write()
        net.start()
        try:
            results = net.wait(timeout, progress=progress)
        except FairprobeError:
            raise
        out = summarise(results, spec.tau)
        out["true_dp"] = _finite(net.plan.true_dp)
        out["honest_dp"] = _finite(net.plan.honest_dp)
        out["rounds"] = int(net.plan.rounds)
        out["spec"] = asdict(spec)
        return out
