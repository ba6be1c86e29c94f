"""Helpers shared by the CLI commands: reading tables, building backends, printing results."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from fairprobe.errors import ConfigError, InvalidParameterError

if TYPE_CHECKING:
    import pandas as pd

console = Console(stderr=False, highlight=False, emoji=False)  # no :codes: from data


def read_table(path: str | Path) -> pd.DataFrame:
    """A CSV or Parquet file given on the command line, with one-line errors."""
    from fairprobe._io import read_table as _read_table

    return _read_table(path, "File")


def build_backend(url: str | None, backend_config: str | None, path: str = "/audit/predict") -> Any:
    """A backend from ``--url`` (the platform's HTTP JSON shape) or ``--backend-config FILE``."""
    from fairprobe.access.config import load_backend
    from fairprobe.access.http import HttpJsonBackend

    if (url is None) == (backend_config is None):
        raise ConfigError("Give exactly one of --url and --backend-config.")
    if backend_config is not None:
        return load_backend(backend_config)
    return HttpJsonBackend(url=url, path=path)


def answer_columns(backend_config: str | None) -> list[str]:
    """The recorded-answer columns of a replay backend config (withheld from the queries when
    the pool is the replay table itself); none for other backends."""
    if backend_config is None:
        return []
    from fairprobe.access.config import ReplayConfig, _read_file, parse_config

    cfg = parse_config(_read_file(Path(backend_config)))
    if not isinstance(cfg, ReplayConfig):
        return []
    return [cfg.decision_column, cfg.score_column, cfg.logit_column]


def split_list(value: str | None) -> list[str] | None:
    """``"a,b,c"`` as ``["a", "b", "c"]``; ``None`` stays ``None``."""
    from fairprobe._validation import split_names

    return split_names(value)


# -- flag validation: messages name the CLI flag, checked before anything is paid --------------
def flag_error(flag: str, expected: str, got: Any, hint: str = "") -> InvalidParameterError:
    """``--tolerance must be in (0, 1), got 5`` (plus an optional hint)."""
    shown = repr(got)
    if isinstance(got, float) and abs(got) >= 1e15:
        shown = f"{got:g}"
    elif len(shown) > 40:
        shown = shown[:18] + "..." + shown[-8:]
    return InvalidParameterError(f"{flag} must be {expected}, got {shown}{hint}.")


def _fmt(x: float) -> str:
    return f"{x:g}"


def check_flag_real(
    value: Any,
    flag: str,
    *,
    lo: float | None = None,
    hi: float | None = None,
    closed: str = "neither",
    hint: str = "",
) -> float:
    """A finite real in the interval (``closed``: ``both``, ``left``, ``right``, ``neither``)."""
    import math

    left = "[" if closed in ("both", "left") else "("
    right = "]" if closed in ("both", "right") else ")"
    if lo is not None and hi is not None:
        expected = f"in {left}{_fmt(lo)}, {_fmt(hi)}{right}"
    elif lo is not None:
        expected = f"{'>=' if left == '[' else '>'} {_fmt(lo)}"
    elif hi is not None:
        expected = f"{'<=' if right == ']' else '<'} {_fmt(hi)}"
    else:
        expected = "a finite number"
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise flag_error(flag, expected, value, hint) from None
    ok = math.isfinite(x)
    if ok and lo is not None:
        ok = x >= lo if left == "[" else x > lo
    if ok and hi is not None:
        ok = x <= hi if right == "]" else x < hi
    if not ok:
        if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
            value = int(value)
        raise flag_error(flag, expected, value, hint)
    return x


def parse_budget(value: str | None, flag: str = "--budget") -> int | str | None:
    """A ``--budget`` value: ``None`` (the command's default), ``"all"`` (every row of the pool
    or table) or a positive integer; anything else is one error line naming the flag."""
    from fairprobe._validation import parse_budget as _parse_budget

    return _parse_budget(value, flag)


def check_flag_int(
    value: Any, flag: str, *, lo: int | None = None, hi: int | None = None, hint: str = ""
) -> int:
    """An integer in ``[lo, hi]``."""
    if lo is not None and hi is not None:
        expected = f"an integer in [{lo}, {hi}]"
    elif lo is not None:
        expected = f"an integer >= {lo}"
    else:
        expected = "an integer"
    if isinstance(value, bool) or not isinstance(value, int):
        raise flag_error(flag, expected, value, hint)
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise flag_error(flag, expected, value, hint)
    return value


def check_flag_choice(value: str, flag: str, choices: Mapping[str, str]) -> str:
    """``value`` matched case-insensitively against ``choices`` (alias -> canonical name)."""
    key = value.strip().lower()
    lowered = {k.lower(): v for k, v in choices.items()}
    if key in lowered:
        return lowered[key]
    listed = ", ".join(dict.fromkeys(choices))
    raise InvalidParameterError(f"{flag} must be one of {listed}; got {value!r}.")


def check_output_path(path: Path | None, flag: str) -> None:
    """Fail before any work when ``path`` cannot be written: a directory, a device, a FIFO, a
    symbolic link, a read-only place (:func:`fairprobe._io.check_output`)."""
    if path is None:
        return
    from fairprobe._io import check_output

    check_output(path, flag, InvalidParameterError)


def check_file_or_model(command: str, predictions: str | None, model: dict[str, Any] | None,
                        y_pred_col: str | None, pool_hint: str) -> None:
    """The flags of a command that audits a file (``--predictions``) or a model (``--url`` /
    ``--backend-config`` with ``--queries``): one or the other, a model with its pool and no
    decision column; one error line naming the flag otherwise."""
    from fairprobe.errors import InvalidParameterError

    if model is None:
        if predictions is None:
            raise InvalidParameterError(f"{command} audits a file (--predictions FILE) or a "
                                        "model (--url / --backend-config with --queries).")
        return
    if predictions is not None:
        raise InvalidParameterError(f"{command} audits a file (--predictions) or a model "
                                    "(--url / --backend-config with --queries), not both.")
    if model.get("queries") is None:
        raise InvalidParameterError(f"{command} with a model needs the records to ask: give "
                                    f"--queries POOL ({pool_hint}).")
    if y_pred_col is not None:
        raise InvalidParameterError("--y-pred-col names a decision column of a file: drop it "
                                    "(the model's answers are the decisions).")
