"""The consistency radius of an audit's data as one call: what ``fairprobe radius`` does."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fairprobe.documents import Job

__all__ = ["radius_job"]


def _pair(pair: str | Sequence[str] | None) -> tuple[str, str] | None:
    from fairprobe.errors import InvalidParameterError

    if pair is None:
        return None
    parts = [x.strip() for x in pair.split(",")] if isinstance(pair, str) else [str(x) for x in pair]
    if len(parts) != 2 or not all(parts):
        raise InvalidParameterError(f"--pair takes two group labels as 'A,B'; got {pair!r}.")
    return parts[0], parts[1]


def radius_job(
    input: str | os.PathLike[str],
    tolerance: float,
    *,
    value_col: str | None = None,
    group_col: str | None = None,
    weight_col: str | None = None,
    method: str = "exact",
    divergence: str = "kl",
    pair: str | Sequence[str] | None = None,
    curve_points: int = 21,
) -> Job:
    """The smallest distribution shift that flips the conclusion of an audit's data.

    Parameters mirror ``fairprobe radius``'s flags (``docs/radius.md``): ``input`` is a CSV or
    Parquet table (with ``value_col`` and ``group_col``) or an audit result JSON with a
    ``per_instance`` list; ``pair`` (``"A,B"`` or two labels) assesses one pair of several groups
    (default: the worst pair). The flip curve has ``curve_points`` points when one pair is
    assessed.

    Returns
    -------
    Job
        ``kind="radius"``; ``.result`` is the :class:`~fairprobe.radius.RadiusResult`; when the
        input is an every-group audit result, ``.extra["scope"]`` names the groups it compared and
        those it left out, with the reason, as the audit did.
    """
    from fairprobe._validation import check_int
    from fairprobe.provenance import Provenance
    from fairprobe.radius import consistency_radius
    from fairprobe.radius.io import read_audit_input, read_audit_scope

    check_int(curve_points, "curve_points", "radius", lo=0, hi=10_000)
    chosen = _pair(pair)
    values, groups, weights = read_audit_input(Path(input), value_col, group_col, weight_col)
    scope = read_audit_scope(Path(input))
    if chosen is not None:
        groups = groups.astype(str)
    one_pair = chosen is not None or len(set(groups.tolist())) <= 2
    res = consistency_radius(values, groups, tolerance, weights=weights, method=method,
                             divergence=divergence, pair=chosen,
                             curve_points=curve_points if one_pair else 0)
    extra: dict[str, Any] = {}
    if scope is not None and scope[1]:
        extra["scope"] = {"groups": list(scope[0]), "left_out": dict(scope[1])}
    return Job("radius", res, Provenance.capture(extra={"input": str(input)}), extra)
