"""Answer identity: another model behind the same backend never gets the old model's answers."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fairprobe.access import Answer, Backend, BlackBox, HttpJsonBackend
from fairprobe.access.base import Record
from fairprobe.access.identity import identity_from_report


class Threshold(Backend):
    """A backend that reports no identity; its model (the threshold) can change under it."""

    kind = "threshold"
    max_batch = 8

    def __init__(self, cut: float) -> None:
        self.cut = cut
        self.paid = 0

    @property
    def identity(self) -> str:
        return "threshold:endpoint"

    def ask(self, records: Sequence[Record]) -> list[Answer]:
        self.paid += len(records)
        return [Answer(int(r["x"] > self.cut), None) for r in records]


def recs(n: int) -> list[dict[str, Any]]:
    return [{"x": float(x)} for x in np.linspace(-1, 1, n)]


def test_fingerprint_detects_a_changed_model_and_drops_its_answers(tmp_path: Path) -> None:
    cache = tmp_path / "c.sqlite"
    with BlackBox(Threshold(0.0), cache=cache) as bb:
        old = bb.query(recs(100)).decisions
    new_model = Threshold(0.5)  # same identity, another model
    # the two models differ on 25 of the 100 records; an unseeded draw of 16 misses all 25 with
    # probability C(75,16)/C(100,16) = 0.6%, so the draw is seeded
    with BlackBox(new_model, cache=cache, fingerprint_size=16, seed=0) as bb:
        out = bb.query(recs(100))
        check = bb.identity_check
    assert check is not None and check.source == "fingerprint"
    assert check.fingerprint_asked == 16 and check.fingerprint_mismatched > 0
    assert check.invalidated == 100 and check.note is not None and "changed" in check.note
    np.testing.assert_array_equal(out.decisions, [float(r["x"] > 0.5) for r in recs(100)])
    assert not np.array_equal(out.decisions, old)
    assert out.n_paid == 100 - 16 and bb.fingerprint_paid == 16  # re-asked ones are reused


def test_fingerprint_passes_for_the_same_model(tmp_path: Path) -> None:
    cache = tmp_path / "c.sqlite"
    with BlackBox(Threshold(0.0), cache=cache) as bb:
        bb.query(recs(50))
    again = Threshold(0.0)
    with BlackBox(again, cache=cache, fingerprint_size=4) as bb:
        out = bb.query(recs(50))
        assert out.n_cached == 50 and bb.spent == 0 and bb.fingerprint_paid == 4
        assert bb.identity_check is not None and bb.identity_check.invalidated == 0


def test_refresh_asks_everything_again_once(tmp_path: Path) -> None:
    cache = tmp_path / "c.sqlite"
    with BlackBox(Threshold(0.0), cache=cache) as bb:
        bb.query(recs(20))
    be = Threshold(0.5)
    with BlackBox(be, cache=cache, refresh=True) as bb:
        out = bb.query(recs(20))
        assert out.n_paid == 20 and bb.fingerprint_paid == 0
        assert bb.query(recs(20)).n_paid == 0  # refreshed once per run
    with BlackBox(Threshold(0.5), cache=cache, verify_identity=False) as bb:
        np.testing.assert_array_equal(bb.query(recs(20)).decisions, out.decisions)


def test_identity_from_report_ignores_volatile_keys() -> None:
    a = identity_from_report({"status": "ok", "model": "m1", "instance": "x", "fairwash": {"g": 0}})
    b = identity_from_report({"status": "ok", "model": "m1", "instance": "y", "fairwash": {"g": 0}})
    c = identity_from_report({"status": "ok", "model": "m1", "fairwash": {"g": 0.3}})
    assert a is not None and b is not None and c is not None
    assert a.digest == b.digest != c.digest and a.model_id == "m1"
    assert identity_from_report({"status": "ok"}) is None and identity_from_report([1]) is None


def test_platform_reports_its_identity(platform_url: str) -> None:
    with BlackBox(HttpJsonBackend(url=platform_url)) as bb:
        check = bb.resolve_identity()
    assert check.source == "reported" and check.model_id == "adult-logreg-v1"
    assert check.cache_identity.startswith(bb.identity + " model=adult-logreg-v1#")


def test_concurrent_processes_sharing_a_cache_pay_each_record_once(
    tmp_path: Path, platform_url: str, make_records: Any
) -> None:
    import json

    n = 240
    records = tmp_path / "records.json"
    records.write_text(json.dumps(make_records(n, seed=5)))
    cache = tmp_path / "cache.sqlite"
    script = str(Path(__file__).with_name("sigkill_audit.py"))
    procs = [
        subprocess.Popen([sys.executable, script, "http", str(records), str(cache),
                          str(tmp_path / f"out{i}.json"), "--url", platform_url,
                          "--max-batch", "4", "--concurrency", "3"])
        for i in range(3)
    ]
    for p in procs:
        assert p.wait(120) == 0
    outs = [json.loads((tmp_path / f"out{i}.json").read_text()) for i in range(3)]
    assert sum(o["spent"] for o in outs) == n  # no record paid twice
    assert outs[0]["decisions"] == outs[1]["decisions"] == outs[2]["decisions"]


def test_sampled_answers_are_not_fingerprinted(tmp_path: Path) -> None:
    """Re-asking a model that samples (temperature > 0) would drop the cache on every run."""
    from types import SimpleNamespace

    be = Threshold(0.0)
    be.config = SimpleNamespace(temperature=0.7)  # type: ignore[attr-defined]
    cache = tmp_path / "c.sqlite"
    with BlackBox(be, cache=cache) as bb:
        bb.query(recs(10))
    with BlackBox(be, cache=cache) as bb:
        assert bb.query(recs(10)).n_cached == 10 and bb.fingerprint_paid == 0
        check = bb.identity_check
        assert check is not None and check.source == "unverified"
        assert check.note is not None and "temperature 0.7" in check.note


class Flips(Backend):
    """Reports no identity; answers ``x > 0`` except on the records listed in ``flipped``."""

    kind = "flips"
    max_batch = 500

    def __init__(self, flipped: set[int] = frozenset()) -> None:  # type: ignore[assignment]
        self.flipped = flipped
        self.paid = 0

    @property
    def identity(self) -> str:
        return "flips:endpoint"

    def ask(self, records: Sequence[Record]) -> list[Answer]:
        self.paid += len(records)
        return [Answer(int((r["i"] % 2 == 0) != (r["i"] in self.flipped)), None) for r in records]


def test_sized_check_catches_a_model_differing_on_one_percent(tmp_path: Path) -> None:
    """2000 cached answers; the new model differs on exactly 20 (1%). The check asks 688 of the
    reused answers: missing all 20 has probability C(1980, 688) / C(2000, 688) < 0.0003, and
    every one of 20 seeds catches it (no old answer reported)."""
    from math import comb

    from fairprobe.access.blackbox import SIZED_CHECK

    assert SIZED_CHECK == 688 and 0.99**688 <= 0.001 < 0.99**687
    assert comb(1980, 688) / comb(2000, 688) < 3e-4
    records = [{"i": i} for i in range(2000)]
    for seed in range(20):
        cache = tmp_path / f"c{seed}.sqlite"
        with BlackBox(Flips(), cache=cache) as bb:
            bb.query(records)
        flipped = set(np.random.default_rng(seed).choice(2000, 20, replace=False).tolist())
        new = Flips(flipped)
        with BlackBox(new, cache=cache, seed=seed) as bb:
            out = bb.query(records)
            check = bb.identity_check
        assert check is not None and check.fingerprint_asked == 688
        assert check.fingerprint_mismatched > 0 and check.invalidated == 2000
        assert out.decisions.tolist() == [float((i % 2 == 0) != (i in flipped))
                                          for i in range(2000)]
        assert new.paid == 2000 and out.n_paid == 2000 - 688 and bb.fingerprint_paid == 688


def test_sized_check_cost_and_what_it_states(tmp_path: Path) -> None:
    cache = tmp_path / "c.sqlite"
    records = [{"i": i} for i in range(2000)]
    with BlackBox(Flips(), cache=cache) as bb:
        bb.query(records[:300])
    same = Flips()
    with BlackBox(same, cache=cache) as bb:  # fewer cached than 688: every reused one re-asked
        bb.query(records[:300])
        check = bb.identity_check
    assert same.paid == 300 and check is not None
    assert check.detects == "every reused answer was asked again"
    with BlackBox(Flips(), cache=cache) as bb:
        bb.query(records)
    same = Flips()
    with BlackBox(same, cache=cache) as bb:  # 2000 cached: 688 re-asked, 1312 reused, all agree
        out = bb.query(records)
        check = bb.identity_check
        again = bb.query(records[:10])  # checked once per run
    assert same.paid == 688 and out.n_cached == 2000 and again.n_cached == 10
    assert check is not None and check.to_dict()["fingerprint"] == {
        "asked": 688, "mismatched": 0, "reused_checked": 2000, "size": 688,
        "detects": "a model answering >= 1% of the 2000 reused records differently is caught "
                   "with probability >= 0.999"}


def test_one_sized_check_covers_a_query_in_parts(tmp_path: Path) -> None:
    cache = tmp_path / "c.sqlite"
    records = [{"i": i} for i in range(2000)]
    with BlackBox(Flips(), cache=cache) as bb:
        bb.query(records)
    same = Flips()
    with BlackBox(same, cache=cache) as bb:
        bb.check_cached(records)
        parts = [bb.query(records[lo:lo + 200]) for lo in range(0, 2000, 200)]
        check = bb.identity_check
    assert same.paid == 688 and sum(p.n_cached for p in parts) == 2000
    assert check is not None and check.reused_checked == 2000
