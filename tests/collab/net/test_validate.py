"""Entry validation: every rejection reason, and what is accepted."""

from __future__ import annotations

import base64

import pytest
from pydantic import ValidationError

from fairprobe.collab.net.keys import Ed25519Signer, entry_bytes, generate_keypair, load_private_key
from fairprobe.collab.net.messages import EntryMessage, TableMessage, max_body_bytes
from fairprobe.collab.net.roster import Member, Roster
from fairprobe.collab.net.validate import (
    HeldEntry,
    Reason,
    check_against_held,
    check_static,
    is_duplicate,
)

N = 10


@pytest.fixture(scope="module")
def net(tmp_path_factory):
    d = tmp_path_factory.mktemp("k")
    kps = [generate_keypair(d / str(i)) for i in range(2)]
    signers = [Ed25519Signer(f"a{i}", load_private_key(k.private_path)) for i, k in enumerate(kps)]
    roster = Roster((
        Member("a0", kps[0].public_key_b64, "127.0.0.1", 9001, ("a1",)),
        Member("a1", kps[1].public_key_b64, "127.0.0.1", 9002, ("a0",)),
    ))
    return signers, roster.verifier()


def entry(signer, r, a, A, b, B, *, sig=None, auditor=None):
    s = sig if sig is not None else signer.sign(entry_bytes(signer.auditor_id, r, *map(abs, (a, A, b, B))))
    return EntryMessage(
        auditor=auditor or signer.auditor_id, round=r, a=a, A=A, b=b, B=B,
        sig=base64.b64encode(s).decode(),
    )


def static(e, v, carrier=5):
    return check_static(e, verifier=v, n=N, last_round=8, carrier_round=carrier)


def test_valid_entry_passes(net):
    (s0, _), v = net
    e = entry(s0, 2, 3, 6, 1, 4)
    assert static(e, v) is None
    assert check_against_held(e, None, n=N) is None
    assert check_against_held(e, HeldEntry(1, 1, 3, 1, 2), n=N) is None


def test_static_rejections(net):
    (s0, s1), v = net
    good = entry(s0, 2, 3, 6, 1, 4)
    tampered = good.model_copy(update={"a": 4})
    assert static(tampered, v) == Reason.BAD_SIGNATURE
    forged = entry(s1, 2, 3, 6, 1, 4, auditor="a0")    # a1's signature claimed as a0's
    assert static(forged, v) == Reason.BAD_SIGNATURE
    assert static(entry(s0, 2, 3, 6, 1, 4, auditor="zz"), v) == Reason.UNKNOWN_AUDITOR
    assert static(entry(s0, 2, -1, 6, 1, 4), v) == Reason.IMPOSSIBLE_COUNTS
    assert static(entry(s0, 2, 7, 6, 1, 4), v) == Reason.IMPOSSIBLE_COUNTS   # a > A
    assert static(entry(s0, 2, 1, 6, 5, 4), v) == Reason.IMPOSSIBLE_COUNTS   # b > B
    assert static(entry(s0, 2, 1, 15, 1, 6), v) == Reason.IMPOSSIBLE_COUNTS  # 21 > n * 2
    assert static(entry(s0, 2, 1, 14, 1, 6), v) is None                      # 20 == n * 2
    assert static(entry(s0, 9, 1, 6, 1, 4), v, carrier=9) == Reason.BAD_ROUND  # past last round
    assert static(entry(s0, 6, 1, 6, 1, 4), v, carrier=5) == Reason.BAD_ROUND  # newer than carrier
    assert static(entry(s0, 0, 0, 0, 0, 0), v) == Reason.BAD_ROUND


def test_rejections_against_held(net):
    (s0, _), v = net
    held = HeldEntry(3, 4, 12, 3, 10, b"x")
    assert check_against_held(entry(s0, 2, 3, 6, 1, 4), held, n=N) == Reason.STALE_ROUND
    assert check_against_held(entry(s0, 3, 4, 12, 3, 11), held, n=N) == Reason.EQUIVOCATION
    assert check_against_held(entry(s0, 3, 4, 12, 3, 10), held, n=N) is None
    assert check_against_held(entry(s0, 4, 3, 15, 3, 12), held, n=N) == Reason.SHRINKING_TOTALS
    assert check_against_held(entry(s0, 4, 4, 11, 3, 12), held, n=N) == Reason.SHRINKING_TOTALS
    assert check_against_held(entry(s0, 4, 4, 20, 3, 13), held, n=N) == Reason.OVER_BUDGET
    assert check_against_held(entry(s0, 4, 4, 19, 3, 13), held, n=N) is None   # +10 == n
    assert check_against_held(entry(s0, 5, 4, 29, 3, 13), held, n=N) is None   # +20 == 2n


def test_duplicate_is_not_a_rejection(net):
    (s0, _), v = net
    e = entry(s0, 2, 3, 6, 1, 4)
    assert is_duplicate(e, HeldEntry(2, 3, 6, 1, 4, e.signature))
    assert not is_duplicate(e, HeldEntry(2, 3, 6, 1, 4, b"other"))
    assert not is_duplicate(e, None)


def test_schema_is_strict_and_bounded(net):
    (s0, _), _ = net
    e = entry(s0, 2, 3, 6, 1, 4).model_dump()
    for bad in [
        {**e, "a": "3"},            # no coercion
        {**e, "a": 3.0},
        {**e, "a": True},
        {**e, "sig": "x" * 88},     # not base64 of 64 bytes
        {**e, "extra": 1},          # unknown key
        {**e, "auditor": "a b"},
        {**e, "a": 2**63},
    ]:
        with pytest.raises(ValidationError):
            EntryMessage.model_validate(bad)
    msg = {"sender": "a0", "receiver": "a1", "round": 1, "entries": [e], "sig": e["sig"]}
    TableMessage.model_validate(msg)
    with pytest.raises(ValidationError):
        TableMessage.model_validate({**msg, "round": 0})
    with pytest.raises(ValidationError):
        TableMessage.model_validate({**msg, "query": "what is the toxicity of..."})
    # the body bound leaves room for a full table, not for much more
    full = TableMessage.model_validate({**msg, "entries": [e] * 40}).model_dump_json()
    assert len(full) < max_body_bytes(40) < 4 * len(full)
