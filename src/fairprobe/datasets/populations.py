"""The six audit populations of Table I of the collaborative-auditing paper.

Each case is fully described by the number of inputs per group and the positive rate per group of
the audited LLM (``collaborative-auditing-auditopus.md``, Section VI, Table I). Positive counts are
``round(rate * size)``; the true DP is recomputed from those integers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd

from fairprobe._validation import check_choice
from fairprobe.errors import DataError
from fairprobe.stats.counts import CountsVector

__all__ = ["POPULATIONS", "Population", "get_population", "write_population_answers"]


@dataclass(frozen=True)
class Population:
    """One audit case: inputs and positive decisions per group."""

    name: str
    dataset: str
    description: str
    size_a: int
    size_b: int
    rate_a: float
    rate_b: float
    paper_true_dp: float

    @property
    def positives_a(self) -> int:
        return int(round(self.rate_a * self.size_a))

    @property
    def positives_b(self) -> int:
        return int(round(self.rate_b * self.size_b))

    @property
    def counts(self) -> CountsVector:
        return CountsVector(self.positives_a, self.size_a, self.positives_b, self.size_b)

    @property
    def true_dp(self) -> float:
        return self.counts.dp()

    def answers(self) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int8]]:
        """Replayable answer set: ``(in_group_a, decision)`` per input, group A first.

        Within each group the positives come first; callers shuffle with their own seed.
        """
        g = np.concatenate([np.ones(self.size_a, bool), np.zeros(self.size_b, bool)])
        d = np.zeros(self.size_a + self.size_b, np.int8)
        d[: self.positives_a] = 1
        d[self.size_a : self.size_a + self.positives_b] = 1
        return g, d

    def answers_frame(self, seed: int | None = None) -> pd.DataFrame:
        """The answer set as a table: ``query_id``, ``group`` (``"A"``/``"B"``), ``decision``.

        ``query_id`` numbers the inputs 0..n-1 (a replay key). With ``seed`` the rows are
        shuffled by ``default_rng(seed)`` (the ids follow their rows); without it group A comes
        first, positives first within each group.
        """
        in_a, d = self.answers()
        frame = pd.DataFrame(
            {
                "query_id": np.arange(d.size, dtype=np.int64),
                "group": np.where(in_a, "A", "B"),
                "decision": d.astype(np.int64),
            }
        )
        if seed is not None:
            order = np.random.default_rng(seed).permutation(d.size)
            frame = frame.iloc[order].reset_index(drop=True)
        return frame

    def write_answers(self, path: str | Path, seed: int | None = None) -> Path:
        """Write :meth:`answers_frame` to ``path`` (``.csv``, ``.csv.gz`` or ``.parquet``)."""
        p = Path(path)
        name = p.name.lower()
        frame = self.answers_frame(seed)
        if name.endswith((".parquet", ".pq")):
            frame.to_parquet(p, index=False)
        elif name.endswith((".csv", ".csv.gz")):
            frame.to_csv(p, index=False)
        else:
            raise DataError(f"Answer set file {p.name} must end in .csv, .csv.gz or .parquet.")
        return p


POPULATIONS: dict[str, Population] = {
    p.name: p
    for p in [
        Population("civil-very-unfair", "civil", "Christian vs Muslim, toxic", 39_688, 17_622, 0.208, 0.436, -0.228),
        Population("civil-moderate", "civil", "Christian vs Jewish, toxic", 39_688, 4_763, 0.208, 0.398, -0.190),
        Population("civil-near-fair", "civil", "Black vs White, toxic", 9_385, 16_926, 0.476, 0.537, -0.060),
        Population("bios-very-unfair", "bios", "male vs female, Healthcare, nurse", 45_742, 48_985, 0.028, 0.300, -0.272),
        Population("bios-moderate", "bios", "female vs male, Healthcare, physician", 48_985, 45_742, 0.423, 0.571, -0.148),
        Population("bios-near-fair", "bios", "male vs female, Education, teacher", 71_261, 63_018, 0.035, 0.098, -0.063),
    ]
}


def get_population(name: str) -> Population:
    """Return the Table I population called ``name`` (e.g. ``"bios-moderate"``)."""
    check_choice(name, "case", "get_population", list(POPULATIONS))
    return POPULATIONS[name]


def write_population_answers(name: str, path: str | Path, seed: int | None = None) -> Path:
    """Write the answer set of Table I case ``name`` for the replay backend.

    Columns ``query_id``, ``group`` (``"A"``/``"B"``, group A as in Table I), ``decision`` (0/1).
    """
    return get_population(name).write_answers(path, seed)
