"""Entry prechecks and wire schemas (the core's own checks are tested through the node)."""

from __future__ import annotations

import base64

import pytest
from pydantic import ValidationError

from fairprobe.collab.net.keys import Ed25519Signer, generate_keypair, load_private_key
from fairprobe.collab.net.messages import EntryMessage, TableMessage, max_body_bytes
from fairprobe.collab.net.validate import Reason, precheck


@pytest.fixture(scope="module")
def signer(tmp_path_factory):
    kp = generate_keypair(tmp_path_factory.mktemp("k"))
    return Ed25519Signer("a0", load_private_key(kp.private_path))


def entry(signer, r, a, A, b, B, auditor="a0"):
    sig = signer.sign_entry(r, *(abs(x) for x in (a, A, b, B)))
    return EntryMessage(auditor=auditor, round=r, a=a, A=A, b=b, B=B,
                        sig=base64.b64encode(sig).decode())


def pre(e, known=True, carrier=5, held=0):
    return precheck(e, known=known, last_round=8, carrier_round=carrier, held_round=held)


def test_precheck_reasons(signer):
    assert pre(entry(signer, 2, 3, 6, 1, 4)) is None
    assert pre(entry(signer, 2, 3, 6, 1, 4), known=False) == Reason.UNKNOWN_AUDITOR
    assert pre(entry(signer, 2, -1, 6, 1, 4)) == Reason.IMPOSSIBLE_COUNTS
    assert pre(entry(signer, 2, 1, -6, 1, 4)) == Reason.IMPOSSIBLE_COUNTS
    assert pre(entry(signer, 2, 7, 6, 1, 4)) == Reason.IMPOSSIBLE_COUNTS     # a > A
    assert pre(entry(signer, 2, 1, 6, 5, 4)) == Reason.IMPOSSIBLE_COUNTS     # b > B
    assert pre(entry(signer, 0, 0, 0, 0, 0)) == Reason.BAD_ROUND
    assert pre(entry(signer, 9, 1, 6, 1, 4), carrier=9) == Reason.BAD_ROUND  # past the last round
    assert pre(entry(signer, 6, 1, 6, 1, 4), carrier=5) == Reason.BAD_ROUND  # newer than carrier
    assert pre(entry(signer, 2, 3, 6, 1, 4), held=3) == Reason.STALE_ROUND
    assert pre(entry(signer, 3, 3, 6, 1, 4), held=3) is None                # same round: core's


def test_schema_is_strict_and_bounded(signer):
    e = entry(signer, 2, 3, 6, 1, 4).model_dump()
    for bad in [
        {**e, "a": "3"},            # no coercion
        {**e, "a": 3.5},
        {**e, "a": True},
        {**e, "sig": "x" * 88},     # not base64 of 64 bytes
        {**e, "sig": e["sig"][:-4]},
        {**e, "extra": 1},          # unknown key
        {**e, "auditor": "a b"},
        {**e, "a": 2**63},
    ]:
        with pytest.raises(ValidationError):
            EntryMessage.model_validate(bad)
    # JSON (and JSON Schema) has one number type: 3.0 is the integer 3, signed as 3
    assert EntryMessage.model_validate({**e, "a": float(e["a"])}) == EntryMessage.model_validate(e)
    msg = {"sender": "a0", "receiver": "a1", "round": 1, "entries": [e], "sig": e["sig"]}
    TableMessage.model_validate(msg)
    with pytest.raises(ValidationError):
        TableMessage.model_validate({**msg, "round": 0})
    with pytest.raises(ValidationError):
        TableMessage.model_validate({**msg, "query": "is this comment toxic?"})
    # the body bound leaves room for a full table, not for much more
    full = TableMessage.model_validate({**msg, "entries": [e] * 40}).model_dump_json()
    assert len(full) < max_body_bytes(40) < 4 * len(full)
