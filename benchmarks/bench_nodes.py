"""Cost of the networked collaborative audit: 40 node processes on 127.0.0.1.

For each run it prints the wall time per round and the bytes each node sends per round, next to
the paper's cost statement (``collaborative-auditing-auditopus.md``, Section V-D, "Cost": each
round an auditor sends each neighbour its table, ``|V|`` signed entries).

    .venv/bin/python benchmarks/bench_nodes.py                  # 40 nodes (32 honest, 8 attackers)
    .venv/bin/python benchmarks/bench_nodes.py --honest 12 --attackers 2 --repeats 3
    .venv/bin/python benchmarks/bench_nodes.py --verify      # with verification of answers

With ``--verify`` it also prints the verification layer's cost per honest node and round
(challenge and opening bytes, proofs) and the leaves re-asked as a share of the queries issued.

Numbers depend on the machine and on what else runs on it; the script prints the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from fairprobe.collab.net.launcher import DemoSpec, LocalNetwork


def http_request_overhead(body_len: int) -> int:
    """Bytes of the HTTP/1.1 request line and headers httpx sends with one table."""
    with httpx.Client(trust_env=False) as c:
        req = c.build_request(
            "POST", "http://127.0.0.1:65535/v1/table", content=b"x" * body_len,
            headers={"content-type": "application/json"},
        )
    head = f"POST {req.url.raw_path.decode()} HTTP/1.1\r\n".encode()
    head += b"".join(k + b": " + v + b"\r\n" for k, v in req.headers.raw)
    return len(head) + 2


def one_run(spec: DemoSpec, workdir: Path) -> dict[str, object]:
    t0 = time.monotonic()
    with LocalNetwork(spec, workdir) as net:
        net.write()
        net.start()
        results = net.wait(timeout=3600)
    wall = time.monotonic() - t0
    assert net.roster is not None
    v = len(net.roster)
    rounds = net.plan.rounds
    per_node = []
    for nid, r in results.items():
        deg = len(net.roster.member(nid).neighbours)
        tables = r["sent_tables"]
        per_node.append({
            "id": nid,
            "degree": deg,
            "seconds_per_round": r["seconds_per_round"],
            "body_bytes_per_round": r["sent_body_bytes"] / rounds,
            "entries_per_round": r["sent_entries"] / rounds,
            "paper_entries_per_round": deg * v,
            "bytes_per_entry": r["sent_body_bytes"] / max(1, r["sent_entries"]),
            "last_round_entries": deg * r["last_table_entries"],
            "last_round_body_bytes": deg * r["last_table_bytes"],
            "last_round_http_bytes": deg * (
                r["last_table_bytes"] + http_request_overhead(r["last_table_bytes"])
            ),
            "http_bytes_per_round": (
                r["sent_body_bytes"]
                + tables * http_request_overhead(r["sent_body_bytes"] // max(1, tables))
            ) / rounds,
            "role": r["role"],
            "queries_used": r["queries_used"],
            "verification": r.get("verification", {}),
            "excluded": r.get("excluded", {}),
        })
    return {"wall": wall, "rounds": rounds, "nodes": v, "per_node": per_node}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--honest", type=int, default=32)
    ap.add_argument("--attackers", type=int, default=8)
    ap.add_argument("--case", default="bios-moderate")
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--max-rounds", type=int, default=12)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--verify", action="store_true", help="Turn on verification of answers.")
    a = ap.parse_args()
    spec = DemoSpec(honest=a.honest, attackers=a.attackers, seed=a.seed, case=a.case, n=a.n,
                    max_rounds=a.max_rounds, round_timeout=120.0, verify=a.verify)
    runs = []
    for k in range(a.repeats):
        with tempfile.TemporaryDirectory(prefix="bench-nodes-") as d:
            runs.append(one_run(spec, Path(d)))
        print(f"run {k + 1}/{a.repeats}: {runs[-1]['nodes']} nodes, {runs[-1]['rounds']} rounds, "
              f"{runs[-1]['wall']:.1f} s wall (start-up included)", flush=True)
    pn = [x for r in runs for x in r["per_node"]]  # type: ignore[union-attr]

    def med(key: str) -> float:
        return statistics.median(float(x[key]) for x in pn)

    def rng(key: str) -> str:
        vals = [float(x[key]) for x in pn]
        return f"{min(vals):,.0f} .. {max(vals):,.0f}"

    v = runs[0]["nodes"]
    print(f"\nload average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores "
          "(the machine is shared; times are noisy)")
    print(f"{'':34}{'median':>12}  range over nodes")
    print(f"{'wall time per round (s)':34}{med('seconds_per_round'):12.3f}")
    print(f"{'entries sent per round (mean)':34}{med('entries_per_round'):12.1f}  "
          f"{rng('entries_per_round')}")
    print(f"{'paper: |V| x degree per round':34}{med('paper_entries_per_round'):12.1f}  "
          f"{rng('paper_entries_per_round')}   (|V| = {v})")
    print(f"{'entries sent in the last round':34}{med('last_round_entries'):12.1f}  "
          f"{rng('last_round_entries')}")
    print(f"{'JSON bytes per entry':34}{med('bytes_per_entry'):12.1f}")
    print(f"{'body bytes sent per round (mean)':34}{med('body_bytes_per_round'):12,.0f}  "
          f"{rng('body_bytes_per_round')}")
    print(f"{'  with HTTP/1.1 request framing':34}{med('http_bytes_per_round'):12,.0f}  "
          f"{rng('http_bytes_per_round')}")
    print(f"{'body bytes sent, last round':34}{med('last_round_body_bytes'):12,.0f}  "
          f"{rng('last_round_body_bytes')}")
    print(f"{'  with HTTP/1.1 request framing':34}{med('last_round_http_bytes'):12,.0f}  "
          f"{rng('last_round_http_bytes')}")
    if a.verify:
        hon = [x for x in pn if x["role"] == "honest"]
        rounds = runs[0]["rounds"]

        def vmed(key: str) -> float:
            return statistics.median(x["verification"].get(key, 0) / rounds for x in hon)

        print(f"\nverification of answers, per honest node and round (median over {len(hon)}):")
        for key in ("challenges-sent", "leaves-checked", "challenge-bytes-sent",
                    "opening-bytes-received", "openings-served", "opening-bytes-sent",
                    "proof-bytes-sent", "proof-bytes-received"):
            print(f"  {key:32}{vmed(key):12,.1f}")
        share = [x["verification"].get("reasked", 0) / max(1, x["queries_used"]) for x in hon]
        print(f"  {'re-asked / queries issued':32}{100 * statistics.median(share):11.2f}%  "
              f"(max {100 * max(share):.2f}%)")
        att = [x["id"] for x in pn if x["role"] == "attacker"]
        for k in att:
            rs = [x["excluded"][k] for x in hon if k in x["excluded"]]
            print(f"  attacker {k}: excluded by {len(rs)}/{len(hon)} honest nodes"
                  + (f", by round {max(rs)}" if rs else ""))
    print("\nentries per round fall short of |V| x degree in the first rounds only: an auditor's "
          "table holds the auditors within t-1 hops at round t (gossip, Section III-C).")
    if a.json:
        a.json.write_text(json.dumps({"spec": vars(a) | {"json": str(a.json)}, "runs": runs},
                                     indent=2))


if __name__ == "__main__":
    main()
