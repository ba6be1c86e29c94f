"""Provenance: what a published verdict was computed from, carried in every result JSON.

Every ``--json`` file fairprobe writes is one document (see :func:`fairprobe.report.write_result`)::

    {"schema": "fairprobe/1", "kind": "audit", "provenance": {...}, ...the command's fields...}

The ``provenance`` block records the fairprobe version, the command line (credentials redacted),
the UTC time, the seed, a hash of the query pool, the audited backend (kind, identity, URL with
credentials redacted, model id, prompt template and decoding settings of an LLM), the answers
paid / cached / unparsed / refused **per group**, the retries, and notes that qualify the verdict
(for instance: the model refused one group significantly more often than the other, so the
verdict rests on a biased subset of answers).

Credentials never leave the process: :func:`redact_url` and :func:`redact_text` replace the
password of ``http://user:secret@host`` and the value of secret-looking query parameters
(``api_key``, ``token``, ...) with ``***``; :func:`redact_text` is applied to the command line,
the backend identity and error messages.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "OUTCOMES",
    "SCHEMA",
    "AnswerCounts",
    "Provenance",
    "answer_counts_by_group",
    "outcome_disparity_note",
    "pool_digest",
    "redact_text",
    "redact_url",
    "set_command_line",
]

#: The schema tag of every result JSON.
SCHEMA = "fairprobe/1"

#: The outcome of one black-box answer (see :class:`fairprobe.access.Answer`).
OUTCOMES = ("ok", "unparsed", "refused", "truncated")

_MASK = "***"
_SECRET_PARAMS = re.compile(
    r"^(api[-_]?key|key|token|access[-_]?token|auth|authorization|password|passwd|pwd|secret|"
    r"client[-_]?secret|sig|signature|x-api-key)$",
    re.IGNORECASE,
)
# scheme://user:password@  (password may be empty-free; user may be empty)
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)(?P<user>[^\s/@:]*):(?P<pw>[^\s/@]+)@")
# scheme://token@host (a bare userinfo without a colon is usually a token)
_BARE_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)(?P<user>[^\s/@:]+)@")
_QUERY_SECRET = re.compile(
    r"(?P<pre>[?&](?:api[-_]?key|key|token|access[-_]?token|auth|password|passwd|pwd|secret|"
    r"client[-_]?secret|sig|signature)=)(?P<val>[^&#\s'\"]+)",
    re.IGNORECASE,
)
# --api-key VALUE / --token=VALUE on a command line
_SECRET_FLAG = re.compile(r"^--?(api[-_]?key|token|password|secret)(=.*)?$", re.IGNORECASE)


def redact_url(url: str) -> str:
    """``url`` with its credentials replaced by ``***``.

    The password of ``scheme://user:password@host`` (or a bare ``scheme://token@host``) and the
    values of secret-looking query parameters (``api_key``, ``token``, ``key``, ...) are masked;
    everything else is kept, so the URL still says where the model was.

    >>> redact_url("http://alice:s3cret@127.0.0.1:8000/v1?api_key=abc&x=1")
    'http://alice:***@127.0.0.1:8000/v1?api_key=***&x=1'
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact_text(url)
    if not parts.scheme or not parts.netloc:
        return redact_text(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        if ":" in userinfo:
            user = userinfo.split(":", 1)[0]
            netloc = f"{user}:{_MASK}@{host}"
        else:
            netloc = f"{_MASK}@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(_SECRET_PARAMS.match(k) for k, _ in pairs):
            query = urlencode(
                [(k, _MASK if _SECRET_PARAMS.match(k) else v) for k, v in pairs], safe="*"
            )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def redact_text(text: str) -> str:
    """Every URL credential inside free text (an error message, an identity) masked."""
    out = _USERINFO.sub(lambda m: f"{m['scheme']}{m['user']}:{_MASK}@", text)
    out = _BARE_USERINFO.sub(
        lambda m: m[0] if m["user"] == _MASK else f"{m['scheme']}{_MASK}@", out
    )
    return _QUERY_SECRET.sub(lambda m: f"{m['pre']}{_MASK}", out)


def _redact_argv(argv: Sequence[str]) -> list[str]:
    out: list[str] = []
    mask_next = False
    for a in argv:
        if mask_next:
            out.append(_MASK)
            mask_next = False
            continue
        m = _SECRET_FLAG.match(a)
        if m:
            if m.group(2):
                out.append(a.split("=", 1)[0] + "=" + _MASK)
            else:
                out.append(a)
                mask_next = True
            continue
        out.append(redact_text(a))
    return out


_COMMAND_LINE: list[str] | None = None


def set_command_line(argv: Sequence[str] | None) -> None:
    """Record the command line of this process (the CLI calls this with its ``argv``)."""
    global _COMMAND_LINE
    _COMMAND_LINE = None if argv is None else ["fairprobe", *map(str, argv)]


def _command_line() -> list[str]:
    if _COMMAND_LINE is not None:
        return _redact_argv(_COMMAND_LINE)
    return _redact_argv([*sys.argv[:1], *sys.argv[1:]])


def _utc_now() -> str:
    return _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _version() -> str:
    from fairprobe import __version__

    return __version__


def pool_digest(pool: pd.DataFrame, source: str | None = None) -> dict[str, Any]:
    """A content hash of a query pool: ``{"sha256", "rows", "columns", "source"}``.

    The hash covers the column names, dtypes and every value (vectorised through
    :func:`pandas.util.hash_pandas_object`), not the file's bytes, so the same table read from
    CSV or Parquet hashes alike within one pandas version.
    """
    import numpy as np
    import pandas as pd

    h = hashlib.sha256()
    h.update("\x1f".join(f"{c}:{pool[c].dtype}" for c in pool.columns).encode("utf-8"))
    if len(pool):
        row_hashes = pd.util.hash_pandas_object(pool, index=False).to_numpy(dtype=np.uint64)
        h.update(row_hashes.tobytes())
    return {
        "sha256": h.hexdigest(),
        "rows": len(pool),
        "columns": [str(c) for c in pool.columns],
        "source": None if source is None else redact_text(str(source)),
    }


@dataclass(frozen=True)
class AnswerCounts:
    """Answers behind a result: ``paid`` + ``cached`` = asked; each has one outcome.

    Attributes
    ----------
    paid, cached : int
        Answers paid for in this run, and answers replayed from the cache.
    ok, unparsed, refused, truncated : int
        Their outcomes (see :data:`OUTCOMES`); only ``ok`` answers enter the metric.
    """

    paid: int = 0
    cached: int = 0
    ok: int = 0
    unparsed: int = 0
    refused: int = 0
    truncated: int = 0

    @property
    def asked(self) -> int:
        return self.paid + self.cached

    @property
    def dropped(self) -> int:
        """Answers that did not give a decision (unparsed, refused or truncated)."""
        return self.unparsed + self.refused + self.truncated

    def __add__(self, other: AnswerCounts) -> AnswerCounts:
        return AnswerCounts(
            *(getattr(self, f.name) + getattr(other, f.name) for f in dataclasses.fields(self))
        )

    def to_dict(self) -> dict[str, int]:
        d = {f.name: int(getattr(self, f.name)) for f in dataclasses.fields(self)}
        d["asked"] = self.asked
        return d


def answer_counts_by_group(
    groups: Any, outcomes: Any, from_cache: Any
) -> dict[str, AnswerCounts]:
    """Per-group :class:`AnswerCounts` from per-query arrays (vectorised).

    Parameters
    ----------
    groups : array-like
        The group value of each query.
    outcomes : array-like of str
        The outcome of each answer, one of :data:`OUTCOMES`.
    from_cache : array-like of bool
        Whether each answer came from the cache (``False``: paid in this run).
    """
    import numpy as np
    import pandas as pd

    g = pd.Series(np.asarray(groups, dtype=object)).astype(str).to_numpy()
    o = np.asarray(outcomes, dtype=object)
    c = np.asarray(from_cache, dtype=bool)
    if not (len(g) == len(o) == len(c)):
        raise ValueError("groups, outcomes and from_cache must have the same length.")
    out: dict[str, AnswerCounts] = {}
    for value in sorted(set(g.tolist())):
        m = g == value
        oo = o[m]
        cc = c[m]
        out[value] = AnswerCounts(
            paid=int((~cc).sum()),
            cached=int(cc.sum()),
            **{k: int((oo == k).sum()) for k in OUTCOMES},
        )
    return out


def outcome_disparity_note(
    by_group: Mapping[str, AnswerCounts], alpha: float = 0.05
) -> tuple[str | None, float | None]:
    """A warning when the share of dropped answers differs significantly between groups.

    An endpoint that refuses (or garbles) one group's answers more often than another's biases
    the verdict, which is computed from the answers that parsed. The test is Pearson's
    chi-square test of homogeneity of (kept, dropped) across groups (Fisher's exact test for two
    groups), at level ``alpha``.

    Returns
    -------
    (note, p_value)
        ``note`` is ``None`` when the shares do not differ significantly (or nothing was
        dropped); ``p_value`` is ``None`` when no test applies.
    """
    rows = [(k, v) for k, v in by_group.items() if v.asked > 0]
    if len(rows) < 2 or sum(v.dropped for _, v in rows) == 0:
        return None, None
    from scipy import stats

    table = [[v.asked - v.dropped, v.dropped] for _, v in rows]
    if len(rows) == 2:
        p = float(stats.fisher_exact(table).pvalue)
    else:
        p = float(stats.chi2_contingency(table).pvalue)
    if p >= alpha:
        return None, p
    shares = ", ".join(f"{k}: {v.dropped}/{v.asked} ({v.dropped / v.asked:.1%})" for k, v in rows)
    note = (
        f"The share of unparsed/refused/truncated answers differs significantly between groups "
        f"(p = {p:.3g}; {shares}); the verdict rests only on parsed answers and may be biased."
    )
    return note, p


@dataclass(frozen=True)
class Provenance:
    """What a result was computed from (the ``provenance`` block of every result JSON).

    Build one with :meth:`capture`, which fills in the version, the command line and the time.

    Attributes
    ----------
    fairprobe_version : str
    command : list of str
        The command line, credentials redacted.
    created_utc : str
        ISO 8601 UTC time the result was made.
    seed : int or None
        The seed of every random choice of the run.
    query_pool : dict or None
        :func:`pool_digest` of the queries (hash, rows, columns, source).
    backend : dict or None
        ``kind``, ``identity``, ``url`` (credentials redacted), ``model_id``,
        ``identity_source`` (``reported``, ``file-hash``, ``fingerprint``, ``config``) and, for
        LLMs, ``prompt_template`` and ``decoding``.
    answers : dict or None
        ``{"total": AnswerCounts, "by_group": {group: AnswerCounts}}`` as dicts.
    retries : int or None
        Transient failures retried.
    notes : tuple of str
        Remarks that qualify the verdict (outcome disparity, cache invalidation, ...).
    extra : dict
        Command-specific fields (``cache``: path and policy, ...).
    """

    fairprobe_version: str
    command: tuple[str, ...]
    created_utc: str
    seed: int | None = None
    query_pool: Mapping[str, Any] | None = None
    backend: Mapping[str, Any] | None = None
    answers: Mapping[str, Any] | None = None
    retries: int | None = None
    notes: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def capture(
        cls,
        *,
        seed: int | None = None,
        query_pool: Mapping[str, Any] | None = None,
        backend: Mapping[str, Any] | None = None,
        answers: Mapping[str, Any] | None = None,
        retries: int | None = None,
        notes: Sequence[str] = (),
        extra: Mapping[str, Any] | None = None,
        argv: Sequence[str] | None = None,
    ) -> Provenance:
        """A provenance record of this process now: version, command line, UTC time, and the
        given fields (``backend`` URL and identity are redacted here)."""
        cmd = _command_line() if argv is None else _redact_argv(["fairprobe", *argv])
        return cls(
            fairprobe_version=_version(),
            command=tuple(cmd),
            created_utc=_utc_now(),
            seed=None if seed is None else int(seed),
            query_pool=query_pool,
            backend=None if backend is None else _redact_backend(backend),
            answers=answers,
            retries=retries,
            notes=tuple(notes),
            extra=dict(extra or {}),
        )

    def with_answers(
        self, by_group: Mapping[str, AnswerCounts], *, alpha: float = 0.05
    ) -> Provenance:
        """This record with per-group answer counts, their total, and the disparity note."""
        total = AnswerCounts()
        for v in by_group.values():
            total = total + v
        note, p = outcome_disparity_note(by_group, alpha)
        answers = {
            "total": total.to_dict(),
            "by_group": {str(k): v.to_dict() for k, v in by_group.items()},
            "outcome_disparity_p_value": p,
        }
        notes = self.notes + ((note,) if note else ())
        return dataclasses.replace(self, answers=answers, notes=notes)

    def replace(self, **changes: Any) -> Provenance:
        """A copy with some fields changed (``backend`` is redacted again)."""
        if changes.get("backend") is not None:
            changes["backend"] = _redact_backend(changes["backend"])
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready ``provenance`` block."""
        from fairprobe._jsonable import to_jsonable

        return {
            "fairprobe_version": self.fairprobe_version,
            "command": list(self.command),
            "created_utc": self.created_utc,
            "seed": self.seed,
            "query_pool": to_jsonable(self.query_pool),
            "backend": to_jsonable(self.backend),
            "answers": to_jsonable(self.answers),
            "retries": self.retries,
            "notes": list(self.notes),
            **({"extra": to_jsonable(self.extra)} if self.extra else {}),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Provenance:
        return cls(
            fairprobe_version=str(d.get("fairprobe_version", "")),
            command=tuple(d.get("command") or ()),
            created_utc=str(d.get("created_utc", "")),
            seed=d.get("seed"),
            query_pool=d.get("query_pool"),
            backend=d.get("backend"),
            answers=d.get("answers"),
            retries=d.get("retries"),
            notes=tuple(d.get("notes") or ()),
            extra=dict(d.get("extra") or {}),
        )


def _redact_backend(backend: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(backend)
    for k in ("url", "endpoint", "base_url"):
        if isinstance(out.get(k), str):
            out[k] = redact_url(out[k])
    for k in ("identity", "description"):
        if isinstance(out.get(k), str):
            out[k] = redact_text(out[k])
    return out
