"""The worked examples of docs/regulatory.md: every table row printed there is what the profile
computes from the counts the page states, and the report shows one table per family."""

from __future__ import annotations

import functools
from pathlib import Path

import pandas as pd
import pytest

from fairprobe.profiles import profile_job
from fairprobe.report.kinds.profile import profile_tables

PAGE = Path(__file__).resolve().parents[2] / "docs" / "regulatory.md"


def _rows(cells: list[tuple[tuple[str, ...], int, int]], cols: list[str], out: str) -> pd.DataFrame:
    """One row per individual from (category values, applicants, selected) counts."""
    recs = []
    for values, n, k in cells:
        recs += [(*values, int(i < k)) for i in range(n)]
    return pd.DataFrame(recs, columns=[*cols, out])


LL144 = [(("Male", "White"), 200, 100), (("Male", "Black or African American"), 120, 30),
         (("Male", "Asian"), 60, 27), (("Male", "Native American or Alaska Native"), 6, 1),
         (("Female", "White"), 180, 81), (("Female", "Black or African American"), 110, 28),
         (("Female", "Asian"), 8, 2), (("Female", "Native American or Alaska Native"), 4, 1),
         (("Male", "Unknown"), 12, 5), (("Female", "Unknown"), 10, 4)]
UGESP = [(("A",), 100, 60), (("B",), 80, 30), (("C",), 50, 23), (("D",), 3, 1)]
CFPB = [(("White",), 400, 240), (("Black",), 150, 57), (("Hispanic",), 120, 66)]


@functools.cache  # the exact intervals are computed once for every test of the page
def examples() -> dict[str, dict]:
    ll = profile_job(_rows(LL144, ["sex", "race"], "hired"), profile="nyc-ll144",
                     group_cols=["sex", "race"], y_pred_col="hired", interval="score")
    ug = profile_job(_rows(UGESP, ["group"], "hired"), profile="ugesp", group_cols=["group"],
                     y_pred_col="hired")
    cf = _rows(CFPB, ["race"], "approved")
    # a score that is the decision plus a group-free spread: SMD and t-test have work to do
    cf["score"] = cf["approved"] * 40 + (cf.index % 7) * 5 + 600
    cfj = profile_job(cf, profile="cfpb-air", group_cols=["race"], y_pred_col="approved",
                      reference="White", score_col="score")
    return {"nyc-ll144": ll.to_dict(), "ugesp": ug.to_dict(), "cfpb-air": cfj.to_dict()}


def markdown(doc: dict) -> list[str]:
    """The tables as the page prints them (one per family)."""
    out = []
    for t in profile_tables(doc):
        out.append(f"*{t.caption}*")
        out.append("")
        out.append("| " + " | ".join(t.header) + " |")
        out.append("|" + "---|" * len(t.header))
        out += ["| " + " | ".join(r) + " |" for r in t.rows]
        out.append("")
    return out


@pytest.mark.parametrize("profile", ["nyc-ll144", "ugesp", "cfpb-air"])
def test_the_page_prints_what_the_profile_computes(profile: str) -> None:
    page = PAGE.read_text(encoding="utf-8")
    lines = markdown(examples()[profile])
    missing = [ln for ln in lines if ln and ln not in page]
    assert not missing, f"docs/regulatory.md differs from the {profile} profile: {missing[:3]}"


def test_the_report_has_one_table_per_family(tmp_path: Path) -> None:
    from fairprobe.report.adapters import adapt

    doc = examples()["nyc-ll144"]
    section = adapt("profile", doc, "ll144.json")
    assert [t.caption.split(":")[0] for t in section.tables] == [
        "sex", "race/ethnicity", "intersectional"]
    assert all("[fairprobe]" in t.header[-1] for t in section.tables)
    assert ("unknown category (left out)", "22") in section.facts


if __name__ == "__main__":  # prints the tables pasted into docs/regulatory.md
    for name, d in examples().items():
        print(f"## {name}\n")
        print("\n".join(markdown(d)))
