import json

import numpy as np
import pytest

from fairprobe.collab.protocol import (
    AttackerCore,
    AuditorCore,
    Entry,
    NullSigner,
    QuerySampler,
    core_from_dict,
    dp_of,
)
from fairprobe.collab.score import suspicion_scores
from fairprobe.errors import EmptyGroupError, InvalidParameterError, ProtocolError
from fairprobe.stats.counts import CountsVector

ROSTER = ["h0", "h1", "x0"]


class _HashSigner:
    """A toy signer (tests only): the 'signature' is the author id and fields."""

    def __init__(self, who: str) -> None:
        self.who = who

    def sign_entry(self, round_: int, a: int, A: int, b: int, B: int) -> bytes:
        return f"{self.who}|{round_}|{a}|{A}|{b}|{B}".encode()


class _HashVerifier:
    def knows(self, auditor_id: str) -> bool:
        return auditor_id in ROSTER

    def verify_entry(self, auditor, round_, a, A, b, B, signature) -> bool:
        return signature == f"{auditor}|{round_}|{a}|{A}|{b}|{B}".encode()


def _entry(who: str, r: int, c: tuple[int, int, int, int]) -> Entry:
    return Entry(who, r, CountsVector(*c), _HashSigner(who).sign_entry(r, *c))


def _core(who: str = "h0") -> AuditorCore:
    return AuditorCore(who, ROSTER, n=10, signer=_HashSigner(who), verifier=_HashVerifier())


def test_round_weights_follow_algorithm_1() -> None:
    core = _core()
    core.start_round()
    core.record_answers(CountsVector(2, 5, 3, 5))
    core.merge([_entry("h1", 1, (1, 4, 4, 6))])
    r1 = core.end_round()
    assert r1.weights == {"h0": 1.0, "h1": 1.0}  # first increments: weight 1
    assert r1.estimate == pytest.approx(dp_of([3, 9, 7, 11]))
    core.start_round()
    core.record_answers(CountsVector(5, 5, 0, 5))  # an unusual increment of its own
    core.merge([_entry("h1", 2, (2, 8, 8, 12))])
    r2 = core.end_round()
    exp = suspicion_scores([[2, 5, 3, 5], [1, 4, 4, 6]], [[5, 5, 0, 5], [1, 4, 4, 6]])
    assert r2.weights["h0"] == exp.weight[0] and r2.weights["h1"] == exp.weight[1]
    W = np.array([[2, 5, 3, 5], [1, 4, 4, 6]], float) + exp.weight[:, None] * np.array(
        [[5, 5, 0, 5], [1, 4, 4, 6]], float
    )
    assert r2.estimate == dp_of(W.sum(axis=0))
    # no new entry of h1 in round 3: h1 is not rescored, its weights stay locked
    core.start_round()
    core.record_answers(CountsVector(2, 5, 3, 5))
    r3 = core.end_round()
    assert set(r3.weights) == {"h0"}
    v = core.verdict()
    assert v.rounds == 3 and v.fair == (abs(v.estimate) <= 0.05)


def test_merge_rules() -> None:
    core = _core()
    core.start_round()
    core.record_answers(CountsVector(1, 2, 1, 2))
    rep = core.merge([_entry("h1", 1, (1, 4, 4, 6))])
    assert rep.accepted == ("h1",)
    forged = Entry("h1", 2, CountsVector(2, 8, 4, 8), b"forged")
    unknown = _entry("zz", 1, (0, 1, 0, 1))
    rep = core.merge(
        [
            forged,
            unknown,
            _entry("h1", 1, (1, 4, 4, 6)),  # duplicate
            _entry("h1", 1, (0, 4, 4, 6)),  # same round, other counts
            _entry("h1", 2, (0, 5, 4, 6)),  # a shrinks
            _entry("h1", 2, (1, 14, 4, 6)),  # 10 new queries... fine (n = 10)
            _entry("x0", 1, (1, 40, 4, 6)),  # more than n * round queries
        ]
    )
    assert ("zz", "unknown-auditor") in rep.rejected
    assert ("x0", "impossible-counts") in rep.rejected
    assert ("h1", "bad-signature") in rep.rejected
    assert ("h1", "equivocation") in rep.rejected
    assert ("h1", "shrinking-totals") in rep.rejected
    assert rep.accepted == ("h1",) and rep.ignored == 1
    assert core.held["h1"].counts == (1, 14, 4, 6)
    assert core.merge([_entry("x0", 2, (1, 3, 1, 2))]).accepted == ("x0",)
    over = core.merge([_entry("x0", 3, (1, 20, 1, 5))])  # 20 new queries in one round
    assert over.rejected == (("x0", "over-budget"),)
    stale = core.merge([_entry("h1", 1, (1, 4, 4, 6))])
    assert stale.ignored == 1 and not stale.accepted
    # nobody can hand me a newer version of my own entry
    mine = core.merge([_entry("h0", 5, (1, 2, 1, 2))])
    assert mine.rejected == (("h0", "bad-round"),)


def test_phases_and_budget() -> None:
    core = _core()
    with pytest.raises(ProtocolError):
        core.record_answers(CountsVector(0, 1, 0, 1))
    core.start_round()
    with pytest.raises(ProtocolError):
        core.start_round()
    with pytest.raises(ProtocolError):
        core.record_answers(CountsVector(0, 6, 0, 5))  # 11 > n = 10
    core.record_answers(CountsVector(0, 5, 0, 5))
    with pytest.raises(ProtocolError):
        core.record_answers(CountsVector(0, 1, 0, 1))
    core.end_round()
    core.start_round()
    rr = core.end_round()  # no query left: an empty increment is stamped
    assert core.own_entry().round == 2 and rr.weights["h0"] == 1.0


def test_no_verdict_before_both_groups() -> None:
    core = _core()
    core.start_round()
    core.record_answers(CountsVector(1, 3, 0, 0))
    core.end_round()
    with pytest.raises(EmptyGroupError):
        core.verdict()


def test_json_round_trip_resumes_identically() -> None:
    rng = np.random.default_rng(0)
    a, b = _core("h0"), _core("h0")
    for t in range(1, 9):
        for c in (a,):
            c.start_round()
        A = int(rng.integers(0, 11))
        inc = (int(rng.integers(0, A + 1)), A, int(rng.integers(0, 11 - A)), 10 - A)
        inc = (min(inc[0], inc[1]), inc[1], min(inc[2], inc[3]), inc[3])
        a.record_answers(inc)
        other = _entry("h1", t, (t, 3 * t, t, 4 * t))
        a.merge([other])
        a.end_round()
        if t == 4:
            b = core_from_dict(
                json.loads(json.dumps(a.to_dict())),
                signer=_HashSigner("h0"),
                verifier=_HashVerifier(),
            )
        elif t > 4:
            b.start_round()
            b.record_answers(inc)
            b.merge([other])
            b.end_round()
    assert b.estimate() == a.estimate()
    assert np.array_equal(b.W, a.W) and b.to_dict() == a.to_dict()


def test_attacker_core() -> None:
    x = AttackerCore("x0", ROSTER, n=10)
    x.start_round()
    e = x.fabricate()
    assert e.counts.as_tuple() == (2, 5, 2, 5) and e.round == 1
    x.merge([Entry("h0", 1, CountsVector(0, 5, 5, 5))])
    x.end_round()
    x.start_round()
    assert x.view().as_tuple() == (2, 10, 7, 10)
    e2 = x.fabricate()
    assert e2.counts.A + e2.counts.B == 20
    x.end_round()
    assert x.estimate() == 0.0 and x.verdict().fair
    y = core_from_dict(json.loads(json.dumps(x.to_dict())))
    assert isinstance(y, AttackerCore) and y.view() == x.view()


def test_entry_and_sampler_round_trip() -> None:
    e = _entry("h1", 3, (1, 2, 3, 4))
    assert Entry.from_dict(json.loads(json.dumps(e.to_dict()))) == e
    with pytest.raises(ProtocolError):
        Entry.from_dict({"auditor": "h1", "round": 1, "a": 5, "A": 2, "b": 0, "B": 0})
    s = QuerySampler(25, seed=3)
    first = s.draw(10)
    t = QuerySampler.from_dict(json.loads(json.dumps(s.to_dict())))
    rest_s, rest_t = (
        np.concatenate([s.draw(10), s.draw(10)]),
        np.concatenate([t.draw(10), t.draw(10)]),
    )
    assert np.array_equal(rest_s, rest_t) and rest_s.size == 15 and s.remaining == 0
    assert sorted(np.concatenate([first, rest_s]).tolist()) == list(range(25))
    r = QuerySampler(5, seed=1, replacement=True)
    r2 = QuerySampler.from_dict(r.to_dict())
    assert np.array_equal(r.draw(50), r2.draw(50))


def test_bad_construction() -> None:
    with pytest.raises(InvalidParameterError):
        AuditorCore("nobody", ROSTER, n=10)
    with pytest.raises(InvalidParameterError):
        AuditorCore("h0", ["h0", "h0"], n=10)
    with pytest.raises(InvalidParameterError):
        AuditorCore("h0", ROSTER, n=0)
    with pytest.raises(InvalidParameterError):
        AttackerCore("x0", ROSTER, n=10, strategy="nope")
    assert NullSigner().sign_entry(1, 0, 0, 0, 0) == b""


def test_tampered_relayed_copy_is_a_bad_signature_not_an_equivocation() -> None:
    core = _core()
    core.start_round()
    core.record_answers(CountsVector(1, 2, 1, 2))
    core.merge([_entry("h1", 1, (1, 4, 4, 6))])
    good = _entry("h1", 1, (1, 4, 4, 6))
    tampered = Entry("h1", 1, CountsVector(4, 4, 0, 6), good.sig)  # same round, altered counts
    assert core.merge([tampered]).rejected == (("h1", "bad-signature"),)
    assert core.merge([_entry("h1", 1, (4, 4, 0, 6))]).rejected == (("h1", "equivocation"),)


def test_sampler_state_without_the_order() -> None:
    s = QuerySampler(40, seed=9)
    s.draw(7)
    d = json.loads(json.dumps(s.to_dict(include_order=False)))
    assert d["order"] is None and d["order_sha256"]
    rebuilt = QuerySampler(40, seed=9).order
    t = QuerySampler.from_dict(d, order=rebuilt)
    assert np.array_equal(t.draw(40), s.draw(40))
    with pytest.raises(ProtocolError):
        QuerySampler.from_dict(d)
    with pytest.raises(ProtocolError):
        QuerySampler.from_dict(d, order=np.arange(40))
