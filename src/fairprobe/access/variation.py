"""LLM audits beyond one prompt: prompt variation and name-swap counterfactual pairs.

An LLM's verdict can hinge on the wording of the prompt, and its decisions on a first name alone.
Two audit dimensions make both visible:

**Prompt variation** (:func:`prompt_sensitivity`): the same audit (same queries, same seed) run
once per prompt template; the result lists each template's estimate, interval and verdict, and
summarises the sensitivity as the spread of the estimates (max - min) and whether the verdicts
agree. A verdict that flips between reasonable prompts is not a finding about the model alone.

**Name swap** (:func:`name_swap_pairs`, :func:`name_swap_audit`): each record whose name field
holds a first name of the bundled lists (:mod:`fairprobe.datasets.names`: the top 25 female and
male names of Appendix D of the two-source paper) is paired with a copy where the name is
replaced by a name of the other list (seeded draw; in free text, every whole-word occurrence of
a listed name is replaced, one consistent replacement per name). Both are asked; the **flip
rate** is the share of pairs whose decisions differ, among pairs where both answers are usable,
with a Wilson score interval (:func:`fairprobe.stats.intervals.wilson_interval`). Under a model
that ignores names it is 0; its interval bounds how often the name alone changes a decision.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any

import numpy as np
import pandas as pd

from fairprobe._validation import check_int
from fairprobe.errors import DataError

__all__ = [
    "NameSwapResult",
    "PromptSensitivity",
    "name_swap_audit",
    "name_swap_pairs",
    "prompt_sensitivity",
    "read_templates",
]


@dataclass(frozen=True)
class PromptSensitivity:
    """One audit per prompt template and the spread of their results.

    Attributes
    ----------
    variants : list of dict
        Per template, in order: ``name``, ``template``, ``identity`` (the cache namespace),
        ``estimate``, ``interval``, ``verdict``, ``outcomes`` (answers per outcome).
    """

    variants: list[dict[str, Any]]

    @property
    def estimates(self) -> list[float]:
        return [float(v["estimate"]) for v in self.variants]

    @property
    def spread(self) -> float:
        """Largest minus smallest estimate over the templates."""
        e = [x for x in self.estimates if np.isfinite(x)]
        return float(max(e) - min(e)) if e else float("nan")

    @property
    def verdicts_agree(self) -> bool:
        return len({v["verdict"] for v in self.variants}) == 1

    def to_dict(self) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for v in self.variants:
            counts[str(v["verdict"])] = counts.get(str(v["verdict"]), 0) + 1
        return {
            "variants": self.variants,
            "spread": self.spread,
            "verdicts_agree": self.verdicts_agree,
            "verdict_counts": counts,
        }


def prompt_sensitivity(
    templates: Mapping[str, str], run_one: Callable[[str, str], Any]
) -> PromptSensitivity:
    """Run ``run_one(name, template)`` (an audit returning an AuditResult) for each template."""
    if len(templates) < 2:
        raise DataError("Prompt variation needs at least two templates.")
    variants = []
    for name, template in templates.items():
        res = run_one(name, template)
        m = res.metric.to_dict()
        variants.append({
            "name": name,
            "template": template,
            "identity": res.backend,
            "estimate": m.get("estimate"),
            "interval": m.get("interval"),
            "verdict": res.verdict,
            "unparsed": res.unparsed,
            "outcomes": {
                o: sum(g.get(o, 0) for g in res.outcomes_by_group.values())
                for o in ("ok", "unparsed", "refused", "truncated")
            },
        })
    return PromptSensitivity(variants)


def _name_lists() -> tuple[tuple[str, ...], tuple[str, ...]]:
    from fairprobe.datasets.names import FEMALE_NAMES, MALE_NAMES

    return FEMALE_NAMES, MALE_NAMES


def name_swap_pairs(
    records: pd.DataFrame, field: str, seed: int = 0
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Counterfactual copies of ``records`` with the first names in ``field`` swapped.

    Returns ``(swapped, has_name, direction)``: the swapped records (same order), whether a
    record held a listed name (records without one are copied unchanged and left out of the
    pairs), and the direction (``"F->M"``, ``"M->F"`` or ``""``).
    """
    seed = check_int(seed, "seed", "name_swap_pairs", lo=0)
    if field not in records.columns:
        raise DataError(f"The name-swap field {field!r} is not a column of the queries.")
    female, male = _name_lists()
    sex_of = {n.casefold(): "F" for n in female} | {n.casefold(): "M" for n in male}
    word = re.compile(r"\b(" + "|".join(sorted(female + male, key=len, reverse=True)) + r")\b",
                      re.IGNORECASE)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0x5A4D]))
    out = records.copy()
    has = np.zeros(len(records), dtype=bool)
    direction = np.full(len(records), "", dtype="<U4")
    values = records[field].tolist()
    new_values: list[Any] = []
    for i, v in enumerate(values):
        if not isinstance(v, str):
            new_values.append(v)
            continue
        mapping: dict[str, str] = {}
        dirs: set[str] = set()

        def swap(m: re.Match[str], mapping: dict[str, str] = mapping,
                 dirs: set[str] = dirs) -> str:
            name = m.group(0)
            key = name.casefold()
            if key not in mapping:
                s = sex_of[key]
                pool = male if s == "F" else female
                mapping[key] = pool[int(rng.integers(len(pool)))]
                dirs.add("F->M" if s == "F" else "M->F")
            return mapping[key]

        swapped = word.sub(swap, v)
        if mapping and len(dirs) == 1:
            has[i] = True
            direction[i] = dirs.pop()
            new_values.append(swapped)
        else:  # no listed name, or names of both sexes: no clean counterfactual
            new_values.append(v)
    out[field] = new_values
    return out, has, direction


@dataclass(frozen=True)
class NameSwapResult:
    """Decisions of records and their name-swapped counterparts.

    Attributes
    ----------
    field : str
        The record field holding the name.
    n_records : int
        Records drawn.
    n_pairs : int
        Records with a listed name (a counterfactual exists).
    n_usable : int
        Pairs with both answers usable (outcome ``ok``).
    n_flips : int
        Usable pairs whose decisions differ.
    by_direction : dict
        Per direction (``F->M``, ``M->F``): usable pairs, flips, flips to positive (the swapped
        record got the positive decision, the original did not) and to negative.
    outcomes : dict
        Answers per outcome, originals and swapped together.
    confidence_level : float
    """

    field: str
    n_records: int
    n_pairs: int
    n_usable: int
    n_flips: int
    by_direction: dict[str, dict[str, int]] = dc_field(default_factory=dict)
    outcomes: dict[str, int] = dc_field(default_factory=dict)
    confidence_level: float = 0.95

    @property
    def flip_rate(self) -> float:
        return self.n_flips / self.n_usable if self.n_usable else float("nan")

    def confidence_interval(self, confidence_level: float | None = None) -> tuple[float, float]:
        """Wilson score interval of the flip rate."""
        from fairprobe.stats.intervals import wilson_interval

        level = self.confidence_level if confidence_level is None else confidence_level
        if self.n_usable == 0:
            return float("nan"), float("nan")
        lo, hi = wilson_interval(self.n_flips, self.n_usable, level)
        return float(lo), float(hi)

    def to_dict(self) -> dict[str, Any]:
        lo, hi = self.confidence_interval()
        return {
            "field": self.field,
            "n_records": self.n_records,
            "n_pairs": self.n_pairs,
            "n_usable": self.n_usable,
            "n_flips": self.n_flips,
            "flip_rate": self.flip_rate,
            "interval": {"low": lo, "high": hi, "level": self.confidence_level,
                         "method": "wilson"},
            "by_direction": self.by_direction,
            "outcomes": self.outcomes,
        }


def name_swap_audit(
    blackbox: Any,
    records: pd.DataFrame,
    field: str,
    *,
    seed: int = 0,
    confidence_level: float = 0.95,
) -> NameSwapResult:
    """Ask ``blackbox`` about ``records`` and their name-swapped copies; count the flips."""
    swapped, has, direction = name_swap_pairs(records, field, seed)
    if not has.any():
        raise DataError(
            f"No record's {field!r} holds a first name of the bundled lists; name swap needs "
            "names such as those of fairprobe.datasets.names."
        )
    orig = blackbox.query(records[has].reset_index(drop=True))
    cf = blackbox.query(swapped[has].reset_index(drop=True))
    d0, d1 = orig.decisions, cf.decisions
    ok = ~np.isnan(d0) & ~np.isnan(d1)
    flips = ok & (d0 != d1)
    dirs = direction[has]
    by_dir = {}
    for dname in ("F->M", "M->F"):
        m = dirs == dname
        by_dir[dname] = {
            "usable": int((ok & m).sum()),
            "flips": int((flips & m).sum()),
            "to_positive": int((flips & m & (d1 == 1)).sum()),
            "to_negative": int((flips & m & (d1 == 0)).sum()),
        }
    outcomes: dict[str, int] = {}
    for batch in (orig, cf):
        for k, v in batch.outcome_counts().items():
            outcomes[k] = outcomes.get(k, 0) + v
    return NameSwapResult(
        field=field,
        n_records=len(records),
        n_pairs=int(has.sum()),
        n_usable=int(ok.sum()),
        n_flips=int(flips.sum()),
        by_direction=by_dir,
        outcomes=outcomes,
        confidence_level=confidence_level,
    )


def read_templates(path: str) -> dict[str, str]:
    """Prompt templates from a TOML file: ``[templates]`` ``name = "template"`` pairs."""
    import tomllib
    from pathlib import Path

    p = Path(path)
    if not p.is_file():
        raise DataError(f"The prompt-variants file {path!r} does not exist.")
    try:
        with p.open("rb") as f:
            data = tomllib.load(f)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"Cannot parse {p.name}: {exc}") from None
    t = data.get("templates")
    if not isinstance(t, dict) or not all(isinstance(v, str) for v in t.values()):
        raise DataError(
            f'{p.name} needs a [templates] table of name = "template" strings, e.g. '
            '[templates] short = "Income of {record}: answer {labels}."'
        )
    if len(t) < 2:
        raise DataError(f"{p.name} lists {len(t)} template(s); prompt variation needs two or more.")
    return {str(k): str(v) for k, v in t.items()}
