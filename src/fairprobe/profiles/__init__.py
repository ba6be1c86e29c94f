"""Audits laid out as a regulator's rule lays them out (``audit --predictions --profile``).

* :mod:`~fairprobe.profiles.nyc_ll144`: NYC Local Law 144 bias audit (6 RCNY §5-300 to §5-304);
* :mod:`~fairprobe.profiles.ugesp`: the four-fifths rule (29 CFR 1607.4(D));
* :mod:`~fairprobe.profiles.cfpb_air`: fair-lending AIR and SMD;
* :mod:`~fairprobe.profiles.core`: what they share (unknown categories, rates, exact intervals,
  the shortfall).

Each computes the rule's point values from raw counts and adds, marked as fairprobe's
additions, exact intervals and whether a ratio is decidably below its threshold
(``docs/regulatory.md``).
"""

from __future__ import annotations

from fairprobe.profiles.job import PROFILES, profile_job

__all__ = ["PROFILES", "profile_job"]
