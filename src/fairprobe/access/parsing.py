"""Label parsing of generative answers: outcome classes, parsing strategies, logprob scores.

An LLM used as a classifier answers in text. Each answer gets one **outcome**:

``ok``
    a label of the fixed label set was found (the answer counts in the audit);
``refused``
    the API flagged a refusal (``message.refusal``, ``finish_reason = "content_filter"``), or the
    answer names no label and matches one of the refusal patterns (:data:`REFUSAL_PATTERNS`);
``truncated``
    no label, and the generation stopped at the token limit (``finish_reason = "length"``, e.g.
    a reasoning model that spent its ``max_completion_tokens`` thinking);
``unparsed``
    anything else (no label, several labels, an empty answer).

Only ``ok`` answers enter the metric; the others are dropped and counted per group, because a
model that refuses one group more often than another biases the audit of the rest.

Parsing runs in three steps, each linear in the length of the text:

1. **reasoning** (:func:`split_reasoning`): a ``<think>...</think>`` block (also ``<thinking>``,
   ``<reasoning>``) is cut off and the label is looked for in the text *after* it; a block that
   never closes leaves no answer (with ``finish_reason = "length"``: truncated). A separate
   ``reasoning_content`` field (vLLM, DeepSeek, Ollama) never holds the answer.
2. **label** (a parser of :data:`PARSERS`, chosen by name): ``exact`` (the whole answer is a
   label, ignoring case, quotes, surrounding punctuation), ``json`` (the answer, a fenced code block
   or a ``{...}`` object in it is JSON: a string label, ``{"label": ...}`` or a one-key object),
   ``search`` (exactly one label occurs as a whole word; an occurrence inside a longer label's
   occurrence, as ``>50K`` inside ``<=50K``, does not count) and ``auto`` (``exact``, then
   ``json``, then ``search``: the default).
3. **score** (a scorer of :data:`SCORERS`): from the token logprobs the API returns, a probability
   of the positive labels (:func:`label_score`).

Parsers are plug-ins: ``PARSERS.register(my_parser, "mine")`` with ``my_parser(text, labels) ->
label | None`` makes ``parser = "mine"`` a valid config value.
"""

from __future__ import annotations

import bisect
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from fairprobe._registry import Registry

__all__ = [
    "OUTCOMES",
    "PARSERS",
    "REFUSAL_PATTERNS",
    "SCORERS",
    "Outcome",
    "ParsedAnswer",
    "classify_answer",
    "label_score",
    "parse_label",
    "split_reasoning",
]

Outcome = Literal["ok", "unparsed", "refused", "truncated"]
#: Every answer outcome, in reporting order.
OUTCOMES: tuple[str, ...] = ("ok", "unparsed", "refused", "truncated")

#: Longest answer text parsed (characters); the rest is ignored. Answers are capped by the token
#: limit anyway; this bounds the work on a hostile server's reply.
MAX_PARSE_CHARS = 65_536

#: Default refusal patterns (case-insensitive regular expressions, searched in an answer that
#: names no label). Set ``refusal_patterns = []`` in the config to count such answers as unparsed.
REFUSAL_PATTERNS: tuple[str, ...] = (
    r"\bI(?:'m| am) (?:sorry|unable|not able)\b",
    r"\bI (?:cannot|can't|can not|won't|will not|must decline)\b",
    r"\bas an AI\b",
    r"\bnot (?:comfortable|appropriate) (?:to|for me)\b",
)

_STRIP = " \t\r\n\"'`.,;:!*"
_FENCE = re.compile(r"^```[a-zA-Z]*\s*(.*?)\s*```$", re.DOTALL)
_OBJECT = re.compile(r"\{[^{}]*\}")  # innermost objects: each brace is scanned once
_TAGS = ("think", "thinking", "reasoning")

LabelParser = Callable[[str, Sequence[str]], "str | None"]
PARSERS: Registry[LabelParser] = Registry("parser", "OpenAIChatConfig")


def _norm(s: str) -> str:
    return " ".join(s.casefold().split())


def _match_label(value: str, labels: Sequence[str]) -> str | None:
    v = _norm(value.strip(_STRIP))
    for lab in labels:
        if _norm(lab) == v:
            return lab
    return None


def _from_json(obj: Any, labels: Sequence[str]) -> str | None:
    if isinstance(obj, str):
        return _match_label(obj, labels)
    if isinstance(obj, Mapping):
        if "label" in obj and isinstance(obj["label"], str):
            return _match_label(obj["label"], labels)
        if len(obj) == 1:
            (only,) = obj.values()
            if isinstance(only, str):
                return _match_label(only, labels)
    return None


def _occurrences(text: str, labels: Sequence[str]) -> list[tuple[int, int, str]]:
    """Whole-word occurrences of the labels, without those inside a longer label's occurrence.

    O(n log n) in the text length: each label is found by ``str.find``, and containment in a
    longer occurrence is a binary search among the longer labels' (disjoint) occurrences.
    """
    low = text.casefold()
    by_label: dict[str, list[tuple[int, int]]] = {}
    for lab in labels:
        needle = lab.casefold()
        if not needle:
            continue
        spans: list[tuple[int, int]] = []
        start = low.find(needle)
        while start >= 0:
            end = start + len(needle)
            left_ok = not (needle[0].isalnum() and start > 0 and low[start - 1].isalnum())
            right_ok = not (needle[-1].isalnum() and end < len(low) and low[end].isalnum())
            if left_ok and right_ok:
                spans.append((start, end))
            start = low.find(needle, start + 1)
        by_label[lab] = spans
    out: list[tuple[int, int, str]] = []
    for lab, spans in by_label.items():
        longer = [
            sorted(by_label[o]) for o in by_label if len(o) > len(lab) and lab.casefold() in
            o.casefold()
        ]
        for s0, s1 in spans:
            inside = False
            for occ in longer:
                i = bisect.bisect_right(occ, (s0, math.inf)) - 1
                # occurrences of one label may overlap ("aa" in "aaa"); check a few before
                for j in range(i, max(-1, i - 4), -1):
                    if occ[j][0] <= s0 and s1 <= occ[j][1]:
                        inside = True
                        break
                if inside:
                    break
            if not inside:
                out.append((s0, s1, lab))
    out.sort()
    return out


@PARSERS.register_as("exact")
def parse_exact(text: str, labels: Sequence[str]) -> str | None:
    """The whole answer is a label (case, quotes, surrounding punctuation ignored)."""
    return _match_label(text, labels)


@PARSERS.register_as("json")
def parse_json(text: str, labels: Sequence[str]) -> str | None:
    """A JSON label: the answer, its fenced code block or a ``{...}`` object inside it."""
    body = text.strip()
    m = _FENCE.match(body)
    if m:
        body = m.group(1)
    candidates = [body, *(mo.group(0) for mo in _OBJECT.finditer(body))]
    for cand in candidates[:64]:
        try:
            obj = json.loads(cand)
        except (ValueError, RecursionError):
            continue
        lab = _from_json(obj, labels)
        if lab is not None:
            return lab
    return None


@PARSERS.register_as("search")
def parse_search(text: str, labels: Sequence[str]) -> str | None:
    """Exactly one label occurs in the answer as a whole word."""
    found = {s[2] for s in _occurrences(text, labels)}
    return found.pop() if len(found) == 1 else None


@PARSERS.register_as("auto")
def parse_auto(text: str, labels: Sequence[str]) -> str | None:
    """``exact``, then ``json``, then ``search``."""
    return parse_exact(text, labels) or parse_json(text, labels) or parse_search(text, labels)


def split_reasoning(text: str) -> tuple[str | None, str, bool]:
    """``(reasoning, answer, closed)``: the text split at a reasoning block.

    The answer is the text after the last closing tag (``</think>``, ``</thinking>``,
    ``</reasoning>``), the reasoning what precedes it. A block opened and never closed leaves the
    text before it as the answer and ``closed = False`` (the model stopped while thinking). A text
    without tags is all answer.
    """
    low = text.casefold()
    best = -1
    best_end = -1
    for tag in _TAGS:
        close = f"</{tag}>"
        i = low.rfind(close)
        if i > best:
            best, best_end = i, i + len(close)
    if best >= 0:
        return text[:best], text[best_end:], True
    first = -1
    for tag in _TAGS:
        i = low.find(f"<{tag}>")
        if i >= 0 and (first < 0 or i < first):
            first = i
    if first >= 0:
        return text[first:], text[:first], False
    return None, text, True


def parse_label(text: str | None, labels: Sequence[str], parser: str = "auto") -> str | None:
    """The label an answer text names after any reasoning block, or ``None``.

    Examples
    --------
    >>> labs = [">50K", "<=50K"]
    >>> parse_label(" <=50k. ", labs), parse_label('{"label": ">50K"}', labs)
    ('<=50K', '>50K')
    >>> parse_label("The income is <=50K.", labs), parse_label(">50K or <=50K", labs)
    ('<=50K', None)
    >>> parse_label("<think>Maybe >50K? No.</think> <=50K", labs)
    '<=50K'
    """
    if text is None:
        return None
    _, answer, _ = split_reasoning(text[:MAX_PARSE_CHARS])
    return PARSERS.create(parser, answer, labels)  # type: ignore[no-any-return]


@dataclass(frozen=True, slots=True)
class ParsedAnswer:
    """One classified answer: its outcome, the label (``ok`` only) and the text it came from."""

    outcome: Outcome
    label: str | None
    answer: str
    reasoning: str | None


def classify_answer(
    content: str | None,
    labels: Sequence[str],
    *,
    parser: str = "auto",
    finish_reason: str | None = None,
    refusal: str | None = None,
    refusal_patterns: Sequence[str] = REFUSAL_PATTERNS,
    strip_reasoning: bool = True,
) -> ParsedAnswer:
    """Classify one answer into an outcome of :data:`OUTCOMES` and find its label.

    Parameters
    ----------
    content : str or None
        The answer text (``choices[0].message.content``).
    labels : sequence of str
    parser : str
        A name in :data:`PARSERS`.
    finish_reason : str, optional
        ``"length"`` marks a truncated generation, ``"content_filter"`` a refusal.
    refusal : str, optional
        The API's ``message.refusal`` field.
    refusal_patterns : sequence of str
        Case-insensitive regular expressions that mark an unlabelled answer as a refusal.
    strip_reasoning : bool
        Look for the label after a reasoning block (see :func:`split_reasoning`).
    """
    if isinstance(refusal, str) and refusal.strip():
        return ParsedAnswer("refused", None, refusal, None)
    if finish_reason == "content_filter":
        return ParsedAnswer("refused", None, content or "", None)
    text = (content or "")[:MAX_PARSE_CHARS]
    reasoning: str | None = None
    closed = True
    if strip_reasoning:
        reasoning, text, closed = split_reasoning(text)
    label = PARSERS.create(parser, text, labels) if text.strip() else None
    if label is not None:
        return ParsedAnswer("ok", label, text, reasoning)
    if finish_reason == "length" or not closed and not text.strip():
        return ParsedAnswer("truncated", None, text, reasoning)
    for pat in refusal_patterns:
        if re.search(pat, text, flags=re.IGNORECASE):
            return ParsedAnswer("refused", None, text, reasoning)
    return ParsedAnswer("unparsed", None, text, reasoning)


# -- logprob scores -----------------------------------------------------------------------------

Scorer = Callable[..., "tuple[float | None, float | None]"]
SCORERS: Registry[Scorer] = Registry("scorer", "OpenAIChatConfig")


def _label_tokens(token_logprobs: Any, content: str, label: str, labels: Sequence[str]
                  ) -> tuple[list[str], str, int, int] | None:
    """The reply's tokens and :func:`_label_token_span` of ``label`` in them (``None``: no
    log-probabilities, or the label is not found on token boundaries)."""
    if not token_logprobs:
        return None
    toks = [str(t.get("token", "")) for t in token_logprobs]
    found = _label_token_span(content, label, toks, labels)
    return None if found is None else (toks, *found)


def _label_token_span(
    content: str, label: str, toks: Sequence[str], labels: Sequence[str]
) -> tuple[str, int, int] | None:
    """``(content, first token index, label start)`` of the chosen label's last occurrence."""
    text = "".join(toks)
    if text != content:
        content = text  # the tokens are the ground truth for offsets
    spans = [s for s in _occurrences(content, labels) if s[2] == label]
    start = spans[-1][0] if spans else content.casefold().rfind(label.casefold())
    if start < 0:
        return None
    pos = 0
    for i, t in enumerate(toks):
        if pos <= start < pos + len(t):
            return content, i, start
        pos += len(t)
    return None


def _side(cand: str, labels: Sequence[str], pos_set: set[str]) -> int:
    """+1 (only positive labels consistent with ``cand``), -1 (only negative), 0 (both/none)."""
    consistent = {
        lab.casefold() for lab in labels if lab.casefold().startswith(cand) or
        cand.startswith(lab.casefold())
    }
    if not consistent:
        return 0
    if consistent <= pos_set:
        return 1
    if not consistent & pos_set:
        return -1
    return 0


def _finish(p_pos: float, p_neg: float) -> tuple[float | None, float | None]:
    if p_pos + p_neg == 0.0:
        return None, None
    score = p_pos / (p_pos + p_neg)
    logit = math.log(p_pos) - math.log(p_neg) if p_pos > 0 and p_neg > 0 else None
    return score, logit


@SCORERS.register_as("first-token")
def score_first_token(
    content: str,
    label: str,
    token_logprobs: Sequence[Mapping[str, Any]],
    labels: Sequence[str],
    positive: Sequence[str],
) -> tuple[float | None, float | None]:
    """Score from the alternatives at the label's first token only (next-token approximation)."""
    found = _label_tokens(token_logprobs, content, label, labels)
    if found is None:
        return None, None
    toks, content, idx, start = found
    pos = sum(len(t) for t in toks[:idx])
    pre = content[pos:start].casefold()
    pos_set = {p.casefold() for p in positive}
    p_pos = p_neg = 0.0
    alts = token_logprobs[idx].get("top_logprobs") or [
        {"token": toks[idx], "logprob": token_logprobs[idx].get("logprob", 0.0)}
    ]
    for alt in alts:
        tok = str(alt.get("token", "")).casefold()
        lp = alt.get("logprob")
        if not isinstance(lp, int | float) or not tok.startswith(pre):
            continue
        rest = tok[len(pre):]
        if not rest:
            continue
        side = _side(rest, labels, pos_set)
        if side > 0:
            p_pos += math.exp(lp)
        elif side < 0:
            p_neg += math.exp(lp)
    return _finish(p_pos, p_neg)


@SCORERS.register_as("sequence")
def label_score(
    content: str,
    label: str,
    token_logprobs: Sequence[Mapping[str, Any]],
    labels: Sequence[str],
    positive: Sequence[str],
) -> tuple[float | None, float | None]:
    r"""Score and logit of the positive labels from the logprobs along the chosen label's tokens.

    Walk the tokens :math:`t_1, \dots, t_m` that spell the chosen label. The chosen label's
    probability is :math:`\prod_i p(t_i \mid t_{<i})`. At each step :math:`i`, an alternative
    token among ``top_logprobs`` that leaves the chosen path and is consistent only with positive
    (negative) labels adds :math:`\prod_{j<i} p(t_j \mid t_{<j}) \cdot p(\text{alt})` to
    :math:`P_+` (:math:`P_-`); alternatives consistent with both sides, or none, are ignored. So a
    multi-token label whose first token is shared with another label ("not toxic" / "not
    offensive") is still told apart at the token where they diverge. Then ``score``
    :math:`= P_+/(P_+ + P_-)` and ``logit`` :math:`= \log P_+ - \log P_-` (``None`` when one side
    is 0). Alternatives outside the top ``k``, and continuations of alternatives after they
    diverge, are unobserved and ignored; for single-token labels this equals ``first-token``.
    """
    found = _label_tokens(token_logprobs, content, label, labels)
    if found is None:
        return None, None
    toks, content, idx, start = found
    end = start + len(label)
    pos_set = {p.casefold() for p in positive}
    chosen_side = 1 if label.casefold() in pos_set else -1
    p_pos = p_neg = 0.0
    prefix_lp = 0.0
    pos = sum(len(t) for t in toks[:idx])
    i = idx
    while i < len(toks) and pos < end:
        tok = toks[i]
        entry = token_logprobs[i]
        lp_chosen = entry.get("logprob")
        if not isinstance(lp_chosen, int | float):
            return None, None
        # text of the label spelled before this token, and the part of this token before it
        done = content[start:pos].casefold() if pos > start else ""
        pre = content[pos:start].casefold() if pos < start else ""
        for alt in entry.get("top_logprobs") or []:
            atok = str(alt.get("token", ""))
            lp = alt.get("logprob")
            if atok == tok or not isinstance(lp, int | float):
                continue
            low = atok.casefold()
            if not low.startswith(pre):
                continue
            cand = done + low[len(pre):]
            if not cand:
                continue
            side = _side(cand, labels, pos_set)
            if side > 0:
                p_pos += math.exp(prefix_lp + lp)
            elif side < 0:
                p_neg += math.exp(prefix_lp + lp)
        prefix_lp += float(lp_chosen)
        pos += len(tok)
        i += 1
    if chosen_side > 0:
        p_pos += math.exp(prefix_lp)
    else:
        p_neg += math.exp(prefix_lp)
    return _finish(p_pos, p_neg)
