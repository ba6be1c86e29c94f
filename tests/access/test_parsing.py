"""Label parsing strategies, reasoning blocks, outcomes and logprob scorers."""

from __future__ import annotations

import math
import time
from typing import Any

import pytest

from fairprobe.access.parsing import (
    PARSERS,
    SCORERS,
    classify_answer,
    label_score,
    parse_label,
    split_reasoning,
)
from fairprobe.errors import InvalidParameterError

INCOME = [">50K", "<=50K"]
TOXIC = ["toxic", "non-toxic"]


@pytest.mark.parametrize(
    ("parser", "text", "expected"),
    [
        ("exact", " <=50k. ", "<=50K"),
        ("exact", "Income: >50K", None),
        ("json", '```json\n{"label": ">50K"}\n```', ">50K"),
        ("json", "<=50K", None),
        ("json", 'I think {"answer": "<=50K"} fits', "<=50K"),
        ("search", "The income is >50K.", ">50K"),
        ("search", ">50K or <=50K", None),
        ("auto", '{"label": "<=50K"}', "<=50K"),
        ("auto", "It is <=50K", "<=50K"),
    ],
)
def test_each_parser(parser: str, text: str, expected: str | None) -> None:
    assert PARSERS[parser](text, INCOME) == expected


def test_parsers_are_pluggable() -> None:
    def last_word(text: str, labels: Any) -> str | None:
        words = text.split()
        return next((lab for lab in labels if words and words[-1] == lab), None)

    PARSERS.register(last_word, "test-last-word")
    try:
        assert parse_label("maybe >50K but finally <=50K", INCOME, "test-last-word") == "<=50K"
    finally:
        del PARSERS["test-last-word"]
    with pytest.raises(InvalidParameterError, match="parser"):
        parse_label("x", INCOME, "no-such-parser")


@pytest.mark.parametrize(
    ("text", "reasoning", "answer", "closed"),
    [
        ("<think>a >50K b</think>\n<=50K", "<think>a >50K b", "\n<=50K", True),
        ("hmm, >50K?</think> <=50K", "hmm, >50K?", " <=50K", True),  # no opening tag (R1)
        ("<THINKING>x</THINKING>y", "<THINKING>x", "y", True),
        ("<think>still thinking about >50K", "<think>still thinking about >50K", "", False),
        ("plain <=50K", None, "plain <=50K", True),
    ],
)
def test_split_reasoning(text: str, reasoning: str | None, answer: str, closed: bool) -> None:
    assert split_reasoning(text) == (reasoning, answer, closed)


@pytest.mark.parametrize(
    ("content", "kw", "outcome", "label"),
    [
        ("<think>Is it >50K or <=50K? Low.</think> <=50K", {}, "ok", "<=50K"),
        ("<think>Is it >50K or <=50K?", {"finish_reason": "length"}, "truncated", None),
        ("<think>Is it >50K or <=50K?", {}, "truncated", None),  # never closed, no answer
        ("", {"finish_reason": "length"}, "truncated", None),
        (None, {"refusal": "I can't help with that."}, "refused", None),
        ("<=50K", {"finish_reason": "content_filter"}, "refused", None),
        ("I'm sorry, but I cannot assess income.", {}, "refused", None),
        ("As an AI, I don't judge people.", {}, "refused", None),
        ("I'm sorry, but I cannot assess income.", {"refusal_patterns": []}, "unparsed", None),
        ("Hard to say.", {}, "unparsed", None),
        (">50K or <=50K", {}, "unparsed", None),
        ("<=50K", {"finish_reason": "length"}, "ok", "<=50K"),  # the label was complete
        (None, {}, "unparsed", None),
    ],
)
def test_classify_answer(content: str | None, kw: dict, outcome: str, label: str | None) -> None:
    got = classify_answer(content, INCOME, **kw)
    assert (got.outcome, got.label) == (outcome, label)


def tok(token: str, lp: float, top: list[tuple[str, float]] | None = None) -> dict[str, Any]:
    return {"token": token, "logprob": lp,
            "top_logprobs": [{"token": t, "logprob": v} for t, v in (top or [])]}


def test_sequence_scorer_tells_labels_apart_where_they_diverge() -> None:
    labels = ["not toxic", "not offensive", "toxic"]
    # "not" is shared by a positive and a negative label; they diverge at the second token
    toks = [tok("not", math.log(0.9), [("not", math.log(0.9)), ("toxic", math.log(0.1))]),
            tok(" toxic", math.log(0.7), [(" toxic", math.log(0.7)),
                                           (" offensive", math.log(0.3))])]
    # positive labels: "toxic" and "not offensive"
    s, z = label_score("not toxic", "not toxic", toks, labels, ["toxic", "not offensive"])
    p_pos, p_neg = 0.1 + 0.9 * 0.3, 0.9 * 0.7
    assert s == pytest.approx(p_pos / (p_pos + p_neg))
    assert z == pytest.approx(math.log(p_pos / p_neg))
    # the first-token scorer cannot see the divergence: "not" is consistent with both sides
    s1, _ = SCORERS["first-token"]("not toxic", "not toxic", toks, labels,
                                   ["toxic", "not offensive"])
    assert s1 == pytest.approx(1.0)  # only "toxic" counted


def test_sequence_equals_first_token_for_single_token_labels() -> None:
    toks = [tok("<=50K", math.log(0.7), [("<=50K", math.log(0.7)), (">50K", math.log(0.3))])]
    a = label_score("<=50K", "<=50K", toks, INCOME, [">50K"])
    b = SCORERS["first-token"]("<=50K", "<=50K", toks, INCOME, [">50K"])
    assert a == pytest.approx(b) and a[0] == pytest.approx(0.3)


def test_long_hostile_answers_parse_in_linear_time() -> None:
    # a quadratic parser takes minutes on these; each must stay well under a second
    for text in ("{" * 200_000, "toxic " * 100_000, "<think>" * 50_000, '{"a":' * 100_000):
        t0 = time.perf_counter()
        classify_answer(text, TOXIC)
        assert time.perf_counter() - t0 < 2.0, text[:10]
