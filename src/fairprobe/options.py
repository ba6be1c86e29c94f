"""Options objects shared by the library's audit calls and the CLI commands behind them.

An audit's *access* (how the model is reached: answer cache, retries, timeout, seed, budget) and
its *data source* (the table of records, read from a path or given as a DataFrame) are frozen
dataclasses checked once, in ``__post_init__``; a bad value raises a typed exception from
:mod:`fairprobe.errors` whose one-line message names the CLI flag to fix. A command builds them
from its flags, a Python user builds them directly or passes the flat keywords of the
compatibility form (:func:`split_flat`), and both reach the same library call.

Method-specific options live with their method (e.g.
:class:`fairprobe.twosource.options.TwoSourceOptions`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fairprobe._defaults import DEFAULT_MIN_GROUP_SIZE
from fairprobe._flat import split_flat, with_fields
from fairprobe._validation import check_int, check_real, parse_budget
from fairprobe.errors import InvalidParameterError

__all__ = [
    "DEFAULT_CACHE",
    "AccessOptions",
    "AuditQuestion",
    "DataSource",
    "split_flat",
    "with_fields",
]

#: The persistent answer cache of every command (``--cache``).
DEFAULT_CACHE = Path(".fairprobe") / "cache.sqlite"


def _flag_error(flag: str, expected: str, value: Any) -> InvalidParameterError:
    return InvalidParameterError(f"{flag} must be {expected}; got {value!r}.")


@dataclass(frozen=True)
class AccessOptions:
    """How an audit reaches a black-box model.

    Attributes
    ----------
    budget : int, "all" or None
        Queries the audit may pay (``--budget``); ``None``: the method's default; ``"all"``:
        every record of the pool. Its range is checked by the method (it depends on the pool).
    seed : int
        Seeds every random choice of the audit (``--seed``), >= 0.
    cache : path or None
        Persistent answer cache (``--cache``, SQLite); ``None`` keeps answers in memory only.
    retries : int
        Retries of a failed batch (``--retries``), >= 0.
    timeout : float or None
        Per-request timeout in seconds (``--timeout``), > 0.
    progress : bool
        Show a progress bar (``--progress``).
    """

    budget: int | str | None = None
    seed: int = 0
    cache: Path | None = DEFAULT_CACHE
    retries: int = 5
    timeout: float | None = None
    progress: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "budget", parse_budget(self.budget))
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise _flag_error("--seed", "an integer >= 0", self.seed)
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or self.retries < 0:
            raise _flag_error("--retries", "an integer >= 0", self.retries)
        if self.timeout is not None and (
            isinstance(self.timeout, bool)
            or not isinstance(self.timeout, int | float)
            or not 0 < float(self.timeout) < float("inf")
        ):
            raise _flag_error("--timeout", "a positive number of seconds", self.timeout)
        if self.cache is not None and not isinstance(self.cache, Path):
            object.__setattr__(self, "cache", Path(self.cache))

    def open(self, backend: Any, *, seeded: bool = True) -> Any:
        """A :class:`~fairprobe.access.BlackBox` over ``backend`` with this cache, these
        retries and this timeout (seeded with :attr:`seed` unless ``seeded`` is false); the
        cache's folder is created."""
        from fairprobe.access.blackbox import BlackBox

        if self.cache is not None:
            self.cache.parent.mkdir(parents=True, exist_ok=True)
        return BlackBox(
            backend,
            cache=self.cache,
            retries=self.retries,
            timeout=self.timeout,
            seed=self.seed if seeded else None,
        )


@dataclass(frozen=True)
class AuditQuestion:
    """What an audit asks, whatever reaches the model or reads the table: which metrics, the
    band a fair value lies in, the level of its intervals, the group compared against and the
    smallest group that is measured.

    Every path (a model audit, a predictions audit, the monitor, the planner) reads these from
    one object, so one option is checked, and its error worded, in one place. Path-specific
    choices (an interval construction, an allocation) stay with the path.

    Attributes
    ----------
    metrics : tuple of str
        The metrics asked for, as the user named them (``--metric``; names and aliases are
        resolved by :mod:`fairprobe.metrics` where the path knows which it can compute).
    tolerance : float >= 0 or None
        Band of a difference metric (``--tolerance``): fair when ``|gap| <= tolerance``;
        ``None``: the path's default.
    threshold : float in (0, 1] or None
        Floor of a ratio metric (``--threshold``, the four-fifths rule's 0.8); ``None``: the
        path's default.
    confidence_level : float in (0, 1)
        Level of the intervals (``--confidence-level``).
    reference : any
        The group every other is compared with (``--reference``); ``None``: the path's rule.
    min_group_size : int >= 1
        Groups with fewer rows are listed as too small, not measured (``--min-group-size``).
    owner : str
        The function named in an error message.
    """

    metrics: tuple[str, ...] = ()
    tolerance: float | None = None
    threshold: float | None = None
    confidence_level: float = 0.95
    reference: Any = None
    min_group_size: int = DEFAULT_MIN_GROUP_SIZE
    owner: str = field(default="AuditQuestion", compare=False, repr=False)

    def __post_init__(self) -> None:
        owner, set_ = self.owner, object.__setattr__
        metrics = (self.metrics,) if isinstance(self.metrics, str) else tuple(self.metrics)
        set_(self, "metrics", metrics)
        set_(self, "confidence_level", check_real(
            self.confidence_level, "confidence_level", owner, lo=0.0, hi=1.0, closed="neither"))
        set_(self, "min_group_size", check_int(self.min_group_size, "min_group_size", owner, lo=1))
        if self.tolerance is not None:
            set_(self, "tolerance", check_real(self.tolerance, "tolerance", owner, lo=0.0))
        if self.threshold is not None:
            set_(self, "threshold", check_real(
                self.threshold, "threshold", owner, lo=0.0, hi=1.0, closed="right"))


@dataclass(frozen=True)
class DataSource:
    """The table of records an audit reads: a path (CSV/Parquet), a DataFrame, or ``None`` for
    the method's bundled default.

    Attributes
    ----------
    table : path, DataFrame or None
        Where the records are.
    flag : str
        The CLI flag that gives it (named in a read error, e.g. ``--queries``).
    """

    table: str | os.PathLike[str] | Any | None = field(default=None, compare=False)
    flag: str = "--queries"

    def __post_init__(self) -> None:
        import pandas as pd

        t = self.table
        if t is not None and not isinstance(t, str | os.PathLike | pd.DataFrame):
            raise _flag_error(self.flag, "a table path or a pandas DataFrame", type(t).__name__)

    def load(self, default: Callable[[], Any]) -> Any:
        """The records as a DataFrame (``default()`` when no table is given)."""
        import pandas as pd

        if self.table is None:
            return default()
        if isinstance(self.table, pd.DataFrame):
            return self.table
        from fairprobe._io import read_table

        return read_table(self.table, f"{self.flag} file")

    def label(self, default: str) -> str:
        """The source's name in the provenance: ``default``, ``"DataFrame"`` or the path."""
        import pandas as pd

        if self.table is None:
            return default
        return "DataFrame" if isinstance(self.table, pd.DataFrame) else str(self.table)
