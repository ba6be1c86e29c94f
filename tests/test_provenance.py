import json

import numpy as np
import pandas as pd
import pytest

from fairprobe.provenance import (
    AnswerCounts,
    Provenance,
    answer_counts_by_group,
    outcome_disparity_note,
    pool_digest,
    redact_text,
    redact_url,
    set_command_line,
)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://user:secret@127.0.0.1:8000/x", "http://user:***@127.0.0.1:8000/x"),
        ("https://tok3n@host/v1", "https://***@host/v1"),
        ("http://h/p?api_key=abc&x=1", "http://h/p?api_key=***&x=1"),
        ("http://127.0.0.1:8000", "http://127.0.0.1:8000"),
    ],
)
def test_redact_url(url: str, expected: str) -> None:
    assert redact_url(url) == expected


def test_redact_text_masks_urls_inside_messages() -> None:
    msg = "http endpoint http://bob:pw123@127.0.0.1:9/audit/predict?token=zz unreachable"
    out = redact_text(msg)
    assert "pw123" not in out and "zz" not in out
    assert "http://bob:***@127.0.0.1:9/audit/predict?token=***" in out


def test_capture_redacts_command_line_and_backend() -> None:
    set_command_line(["audit", "--url", "http://u:s3cret@127.0.0.1:1", "--api-key", "k-123"])
    try:
        p = Provenance.capture(
            seed=3, backend={"kind": "http", "url": "http://u:s3cret@127.0.0.1:1",
                             "identity": "http:http://u:s3cret@127.0.0.1:1/audit/predict"},
        )
    finally:
        set_command_line(None)
    text = json.dumps(p.to_dict())
    assert "s3cret" not in text and "k-123" not in text
    assert p.command[:2] == ("fairprobe", "audit")
    assert p.seed == 3 and p.created_utc.endswith("Z")
    assert Provenance.from_dict(p.to_dict()).to_dict() == p.to_dict()


def test_pool_digest_changes_with_any_value() -> None:
    df = pd.DataFrame({"a": [1, 2, 3], "g": ["x", "y", "x"]})
    d0 = pool_digest(df, "pool.csv")
    assert d0["rows"] == 3 and d0["columns"] == ["a", "g"]
    assert pool_digest(df.copy())["sha256"] == d0["sha256"]
    df2 = df.copy()
    df2.loc[1, "a"] = 5
    assert pool_digest(df2)["sha256"] != d0["sha256"]
    assert pool_digest(df.rename(columns={"a": "b"}))["sha256"] != d0["sha256"]


def test_answer_counts_by_group_and_disparity_note() -> None:
    rng = np.random.default_rng(0)
    n = 400
    groups = np.array(["A"] * n + ["B"] * n)
    # the endpoint refuses 20% of group A and 2% of group B
    outcomes = np.where(
        rng.random(2 * n) < np.where(groups == "A", 0.20, 0.02), "refused", "ok"
    )
    cached = np.arange(2 * n) % 2 == 0
    by = answer_counts_by_group(groups, outcomes, cached)
    assert by["A"].asked == n and by["A"].paid == n // 2 and by["A"].cached == n // 2
    assert by["A"].refused + by["A"].ok == n
    note, p = outcome_disparity_note(by)
    assert note is not None and p is not None and p < 1e-6
    assert "A:" in note and "B:" in note
    prov = Provenance.capture().with_answers(by)
    assert prov.answers is not None
    assert prov.answers["total"]["asked"] == 2 * n
    assert prov.notes and "differs significantly" in prov.notes[0]


def test_no_disparity_note_when_shares_are_equal() -> None:
    by = {"A": AnswerCounts(paid=100, ok=90, unparsed=10), "B": AnswerCounts(paid=100, ok=89, unparsed=11)}
    note, p = outcome_disparity_note(by)
    assert note is None and p is not None and p > 0.5
    assert outcome_disparity_note({"A": AnswerCounts(paid=5, ok=5), "B": AnswerCounts(paid=5, ok=5)}) == (None, None)
