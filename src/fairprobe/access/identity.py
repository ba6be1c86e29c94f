"""Answer identity: which model gave the answers in the cache.

A cached answer is only valid for the model that gave it. The cache key of an answer is
``(answer identity, record hash)``, where the answer identity is the backend's
:attr:`~fairprobe.access.Backend.identity` (kind, endpoint, request settings) refined by the
identity of the model behind it, found at the start of a run by
:meth:`fairprobe.access.BlackBox.resolve_identity` in one of three ways:

``reported``
    The endpoint reports it (the platform's ``GET /health``, an OpenAI-compatible ``model``
    field): a digest of what it reports enters the cache key, so answers of another model served
    at the same URL are never replayed.
``file-hash`` / ``code-hash``
    A local model: the SHA-256 of its file, or a hash of the estimator or callable, is already
    part of the backend identity.
``fingerprint``
    The endpoint reports nothing (``mlflow models serve``, a v2 model without a version, a JSON
    endpoint without ``/health``): before cached answers are reused, the sized check asks 688 of
    them (all, when fewer) again, drawn uniformly from those the query would reuse; if any answer
    differs, every cached answer of that backend is dropped (reported in the result's
    provenance) and the run pays for fresh ones. A model that answers a share ``p >= 1%`` of
    the reused records differently is caught with probability ``>= 1 - 0.99^688 >= 0.999``. The
    cost: ``min(688, reused)`` paid queries per run, outside the budget.

A reported identity is trusted as reported: a server that serves another model under the same
name and version is outside this guarantee (use ``--refresh``, or a version per model).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fairprobe.provenance import redact_text

__all__ = [
    "LLM_SETTINGS",
    "VOLATILE_HEALTH_KEYS",
    "IdentityCheck",
    "ModelIdentity",
    "describe_backend",
    "identity_from_report",
]

#: Keys of a health report that change without the model changing (ignored in the identity).
VOLATILE_HEALTH_KEYS = frozenset(
    {"status", "instance", "uptime", "uptime_s", "time", "timestamp", "now", "requests",
     "served", "pid", "started", "started_at", "load"}
)
_ID_KEYS = ("model_id", "model", "model_version", "version", "id")


@dataclass(frozen=True)
class ModelIdentity:
    """The identity of the model behind a backend.

    Attributes
    ----------
    model_id : str or None
        The model's name or version as reported (``None`` when only a digest is known).
    digest : str
        A short hash of everything that identifies the model; part of the cache key when
        ``source == "reported"``.
    source : str
        ``reported``, ``file-hash`` or ``code-hash`` (see the module docstring).
    detail : dict
        What was reported (volatile keys removed).
    """

    model_id: str | None
    digest: str
    source: str
    detail: Mapping[str, Any] = field(default_factory=dict)


def identity_from_report(report: Any, fields: list[str] | None = None) -> ModelIdentity | None:
    """A :class:`ModelIdentity` from an endpoint's self-description (e.g. ``GET /health``).

    ``fields`` selects the keys that identify the model; default every key but
    :data:`VOLATILE_HEALTH_KEYS`. ``None`` when the report is not a JSON object or holds nothing
    identifying.
    """
    if not isinstance(report, Mapping):
        return None
    if fields is not None:
        detail = {k: report[k] for k in fields if k in report}
    else:
        detail = {str(k): v for k, v in report.items() if k not in VOLATILE_HEALTH_KEYS}
    if not detail:
        return None
    text = json.dumps(detail, sort_keys=True, default=str, separators=(",", ":"))
    model_id = next((str(detail[k]) for k in _ID_KEYS if isinstance(detail.get(k), str | int)), None)
    return ModelIdentity(
        model_id=model_id,
        digest=hashlib.sha256(text.encode("utf-8")).hexdigest()[:16],
        source="reported",
        detail=detail,
    )


@dataclass(frozen=True)
class IdentityCheck:
    """How the answer identity of a run was established (``provenance.backend``).

    Attributes
    ----------
    backend_identity : str
        The backend's own identity (credentials redacted).
    cache_identity : str
        The namespace of the cache rows used (``backend_identity`` refined by a reported model
        digest).
    model_id : str or None
    source : str
        ``reported``, ``file-hash``, ``code-hash``, ``fingerprint`` (checked by re-asking),
        ``unverified`` (nothing cached to compare yet) or ``off`` (checks disabled).
    fingerprint_asked, fingerprint_mismatched : int
        Cached records asked again, and how many answers differed.
    invalidated : int
        Cached answers dropped because the model changed.
    note : str or None
        A sentence for the summary and the provenance when something was invalidated.
    detail : dict
        What the endpoint reported.
    """

    backend_identity: str
    cache_identity: str
    model_id: str | None
    source: str
    fingerprint_asked: int = 0
    fingerprint_mismatched: int = 0
    invalidated: int = 0
    note: str | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)
    #: Cached answers covered by the sized check (reused after it passed, or dropped), and the
    #: check's size per query (``fingerprint_size``).
    reused_checked: int = 0
    check_size: int = 0

    @property
    def detects(self) -> str | None:
        """What the sized check guarantees, as a sentence (``None`` when none ran)."""
        if self.source != "fingerprint" or not self.fingerprint_asked:
            return None
        if self.fingerprint_asked >= self.reused_checked:
            return "every reused answer was asked again"
        import math

        power = 1.0 - 0.99 ** self.check_size  # a lower bound: drawn without replacement
        return (f"a model answering >= 1% of the {self.reused_checked} reused records "
                f"differently is caught with probability >= {math.floor(power * 1e4) / 1e4:g}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "identity": redact_text(self.backend_identity),
            "cache_identity": redact_text(self.cache_identity),
            "model_id": self.model_id,
            "identity_source": self.source,
            "reported": dict(self.detail),
            "fingerprint": {
                "asked": self.fingerprint_asked,
                "mismatched": self.fingerprint_mismatched,
                "reused_checked": self.reused_checked,
                "size": self.check_size,
                "detects": self.detects,
            },
            "invalidated": self.invalidated,
        }


#: Settings of a generative backend that shape its answers (recorded in the provenance).
LLM_SETTINGS = (
    "model", "prompt_template", "system_prompt", "labels", "positive_labels", "temperature",
    "top_p", "max_tokens", "max_completion_tokens", "seed", "structured_output", "logprobs",
    "top_logprobs", "reasoning_effort", "stop", "n", "extra_body", "response_format", "omit",
    "parser", "scorer", "strip_reasoning", "refusal_patterns",
)


def describe_backend(backend: Any, check: IdentityCheck | None = None) -> dict[str, Any]:
    """The ``provenance.backend`` block: kind, identity, URL (credentials redacted), model id,
    how the identity was established and, for generative backends, the prompt template and
    decoding settings."""
    from fairprobe.provenance import redact_url

    out: dict[str, Any] = {"kind": getattr(backend, "kind", type(backend).__name__)}
    url = getattr(backend, "url", None) or getattr(backend, "endpoint", None)
    if isinstance(url, str) and "://" in url:
        out["url"] = redact_url(url)
    elif isinstance(url, str):
        out["endpoint"] = redact_text(url)
    if check is not None:
        out.update(check.to_dict())
    else:
        out["identity"] = redact_text(str(getattr(backend, "identity", "")))
    hook = getattr(backend, "provenance_info", None)
    if callable(hook):
        out.update(hook())
        return out
    cfg = getattr(backend, "config", None)
    dump = getattr(cfg, "model_dump", None)
    if callable(dump) and "chat" in out["kind"]:
        d = dump()
        llm = {k: d[k] for k in LLM_SETTINGS if k in d and d[k] is not None}
        if llm:
            out["llm"] = llm
    return out
