"""The saved state of a monitor: counts of every file read, and the windows already looked at.

A daily job reruns the monitor on a growing directory. The state keeps

* ``counts``: the windowed :class:`~fairprobe.scale.GroupCounts` of every file read so far, with
  each file's path, size and modification time, so that a rerun counts only the new files (a
  counted file that changed is refused: its rows would be counted twice or lost);
* ``sealed``: the counts of each window *as the monitor looked at it*, and the order of looks.
  A window is looked at once, when it has closed (its end is at most ``now``); rows that arrive
  later for a sealed window enter the audit's counts but not the monitor's, whose e-values are
  fixed once computed (a supermartingale cannot revise its past).

Integrity: the state names the directory it describes (a state used for another source is
refused), each file is known by its device and inode as well as its path (a counted file renamed
is not counted again; one whose size or time changed is refused), and the saved document carries
the SHA-256 of its content, checked on load (an edited state is refused). The digest detects
edits and corruption; it is not a secret key, so it does not stop someone who recomputes it.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from fairprobe.errors import DataError
from fairprobe.scale.counts import WINDOW, CountSpec, GroupCounts, combine_tables, window_width

__all__ = ["STATE_SCHEMA", "MonitorState", "Refresh"]

STATE_SCHEMA = "fairprobe.monitor-state/1"


@dataclass
class Refresh:
    """What one rerun did: files read (only new ones), rows added, windows sealed, late rows."""

    files_read: list[str] = field(default_factory=list)
    rows_added: int = 0
    sealed_now: list[str] = field(default_factory=list)
    late_rows: int = 0
    open_windows: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"files_read": self.files_read, "rows_added": self.rows_added,
                "sealed_now": self.sealed_now, "late_rows": self.late_rows,
                "open_windows": self.open_windows}


@dataclass
class MonitorState:
    """Counts of the files read and of the windows looked at (see the module docstring)."""

    spec: CountSpec
    counts: GroupCounts | None = None
    sealed: GroupCounts | None = None
    order: list[pd.Timestamp] = field(default_factory=list)
    source: str | None = None

    def __post_init__(self) -> None:
        if self.spec.window is None:
            raise DataError("a monitor needs time windows: give --time-col and --window.")

    # --- rerun -------------------------------------------------------------------------------
    def refresh(self, source: Any, *, now: pd.Timestamp, engine: str = "auto") -> Refresh:
        """Count the new files of ``source`` and seal the windows closed by ``now``."""
        from fairprobe.scale.engine import count, list_files

        out = Refresh()
        here = _source_key(source)
        if self.source is not None and here is not None and self.source != here:
            raise DataError(f"--state describes {self.source}, not {here}: use the state of "
                            "this source, or a new --state.")
        self.source = here if self.source is None else self.source
        counted = self.counts.sources if self.counts else ()
        known = {s["path"]: s for s in counted}
        by_inode = {(s["dev"], s["ino"]): s for s in counted if "ino" in s}
        new = []
        for f in list_files(source):
            st = f.stat()
            old = by_inode.get((st.st_dev, st.st_ino)) or known.get(str(f))
            if old is None:
                new.append(f)
            elif (old["size"], old["mtime_ns"]) != (st.st_size, st.st_mtime_ns):
                raise DataError(f"{f} changed since the monitor counted it (size or time): "
                                "logs are append-only; write new rows to a new file, or start "
                                "a new --state.")
        if new:
            batch = count(source, self.spec, engine=engine, files=new)
            # the first rows counted fix the windows' origin; later batches count from it
            self.spec = batch.spec
            self.counts = batch if self.counts is None else self.counts.merge(batch)
            out.files_read = [str(f) for f in new]
            out.rows_added = batch.n_rows
        if self.counts is None:
            return out
        width = window_width(str(self.spec.window))
        done = set(self.order)
        closed = [w for w in self.counts.windows() if w + width <= now and w not in done]
        out.open_windows = [w.isoformat() for w in self.counts.windows() if w + width > now]
        tab = self.counts.table
        if closed:
            add = tab[tab[WINDOW].isin(closed)]
            parts = [add] if self.sealed is None else [self.sealed.table, add]
            self.sealed = GroupCounts(self.spec, combine_tables(parts, self.spec))
            self.order += sorted(closed)
            out.sealed_now = [w.isoformat() for w in sorted(closed)]
        if self.sealed is not None:
            all_n = tab[tab[WINDOW].isin(self.order)]["n"].sum()
            out.late_rows = int(all_n - self.sealed.table["n"].sum())
        return out

    # --- saving ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        body = {"schema": STATE_SCHEMA, "spec": self.spec.to_dict(), "source": self.source,
                "counts": None if self.counts is None else self.counts.to_dict(),
                "sealed": None if self.sealed is None else self.sealed.to_dict(),
                "order": [w.isoformat() for w in self.order]}
        return {**body, "digest": _digest(body)}

    def save(self, path: str | os.PathLike[str]) -> Path:
        from fairprobe._io import write_file

        return write_file(path, json.dumps(self.to_dict()).encode(), what="--state")

    @classmethod
    def load_or_new(cls, path: str | os.PathLike[str], spec: CountSpec) -> MonitorState:
        """The state saved at ``path`` (it must count the same columns), or a new one."""
        p = Path(path)
        if not p.exists():
            return cls(spec)
        try:
            doc = json.loads(p.read_text())
        except (OSError, ValueError) as exc:
            raise DataError(f"cannot read --state {p.name}: {exc}") from None
        if not isinstance(doc, dict) or doc.get("schema") != STATE_SCHEMA:
            raise DataError(f"--state {p.name} is not a fairprobe monitor state.")
        digest = doc.pop("digest", None)
        if digest != _digest(doc):
            raise DataError(f"--state {p.name} does not match its digest: it was edited or "
                            "damaged; restore it, or start a new --state.")
        saved = CountSpec.from_dict(doc["spec"])
        if spec.window_origin is None and saved.window_origin is not None:
            spec = replace(spec, window_origin=saved.window_origin)  # the origin it counted from
        if saved != spec:
            raise DataError(f"--state {p.name} counts other columns ({saved.to_dict()}): use a "
                            "new --state for these columns.")
        return cls(spec,
                   None if doc["counts"] is None else GroupCounts.from_dict(doc["counts"]),
                   None if doc["sealed"] is None else GroupCounts.from_dict(doc["sealed"]),
                   [pd.Timestamp(w) for w in doc["order"]], doc.get("source"))


def _digest(body: dict[str, Any]) -> str:
    """SHA-256 of the state's canonical JSON (sorted keys, no spaces)."""
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":"),
                                     default=str).encode()).hexdigest()


def _source_key(source: Any) -> str | None:
    """The monitored source as the state records it: its resolved path (None for a frame)."""
    if isinstance(source, str | os.PathLike):
        return str(Path(source).resolve())
    return None
