"""Generate a directory of daily prediction logs (Parquet) for the tutorial's log audit.

Usage: ``python tutorial/make_logs.py OUT_DIR [--days 90] [--first DAY]`` writes one file per
day, ``OUT_DIR/2024-01-01.parquet`` ..., with columns ``ts`` (timestamp), ``sex``,
``age_band``, ``approved`` (the model's decision, 0/1) and ``repaid`` (the outcome, 0/1); 3,000
decisions a day, seeded by the day. The model is fair until day 60, then approves women 10
points less often. ``--first`` starts at a later day (to add days to an existing directory).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

START = pd.Timestamp("2024-01-01")


def day(d: int, n: int = 3000) -> pd.DataFrame:
    rng = np.random.default_rng(1000 + d)
    sex = rng.choice(["Female", "Male"], n)
    age = rng.choice(["18-29", "30-49", "50+"], n, p=[0.3, 0.45, 0.25])
    repaid = (rng.random(n) < 0.7).astype(np.int8)
    rate = np.where(repaid == 1, 0.65, 0.35) - np.where((sex == "Female") & (d >= 60), 0.10, 0.0)
    approved = (rng.random(n) < rate).astype(np.int8)
    ts = START + pd.Timedelta(days=d) + pd.to_timedelta(rng.integers(0, 86400, n), unit="s")
    return pd.DataFrame({"ts": ts, "sex": sex, "age_band": age, "approved": approved,
                         "repaid": repaid})


def main() -> None:
    ap = argparse.ArgumentParser(description="daily prediction logs for the tutorial")
    ap.add_argument("out", type=Path)
    ap.add_argument("--days", type=int, default=90)
    ap.add_argument("--first", type=int, default=0)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for d in range(args.first, args.first + args.days):
        name = (START + pd.Timedelta(days=d)).strftime("%Y-%m-%d")
        day(d).to_parquet(args.out / f"{name}.parquet", index=False)
    print(f"wrote {args.days} daily files to {args.out}")


if __name__ == "__main__":
    main()
