"""Black-box model access: backends, the persistent response cache, budgets and retries.

>>> from fairprobe.access import BlackBox, load_backend
>>> with BlackBox(load_backend("backend.toml"), cache="answers.sqlite", budget=1000) as bb:
...     answers = bb.query(records)                                  # doctest: +SKIP

Names are imported lazily (PEP 562), so that ``import fairprobe.access.cache`` or a CLI command
that needs one backend does not pay for pandas, httpx and pydantic it does not use. See
``docs/access.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fairprobe._lazy import lazy_exports
from fairprobe.access.base import Answer, AnswerBatch, Backend, TransientAccessError

if TYPE_CHECKING:
    from fairprobe.access.blackbox import BlackBox, validate_answers
    from fairprobe.access.cache import ResponseCache
    from fairprobe.access.config import (
        BackendConfig,
        LocalConfig,
        ReplayConfig,
        backend_kinds,
        load_backend,
        register_backend,
    )
    from fairprobe.access.http import HttpJsonBackend, HttpJsonConfig
    from fairprobe.access.local import LocalModelBackend
    from fairprobe.access.openai_chat import OpenAIChatBackend, OpenAIChatConfig, parse_label
    from fairprobe.access.records import canonical_json, normalize_records, record_key
    from fairprobe.access.replay import ReplayBackend
    from fairprobe.access.retry import Backoff, RateLimitedError
    from fairprobe.access.servers import KServeV1Backend, KServeV2Backend, MlflowBackend

_LAZY = {
    "BlackBox": "blackbox",
    "validate_answers": "blackbox",
    "ResponseCache": "cache",
    "BackendConfig": "config",
    "LocalConfig": "config",
    "ReplayConfig": "config",
    "backend_kinds": "config",
    "load_backend": "config",
    "register_backend": "config",
    "HttpJsonBackend": "http",
    "HttpJsonConfig": "http",
    "LocalModelBackend": "local",
    "OpenAIChatBackend": "openai_chat",
    "OpenAIChatConfig": "openai_chat",
    "parse_label": "openai_chat",
    "canonical_json": "records",
    "normalize_records": "records",
    "record_key": "records",
    "ReplayBackend": "replay",
    "Backoff": "retry",
    "RateLimitedError": "retry",
    "KServeV1Backend": "servers",
    "KServeV2Backend": "servers",
    "MlflowBackend": "servers",
}

__all__ = [
    "Answer",
    "AnswerBatch",
    "Backend",
    "BackendConfig",
    "Backoff",
    "BlackBox",
    "HttpJsonBackend",
    "HttpJsonConfig",
    "KServeV1Backend",
    "KServeV2Backend",
    "LocalConfig",
    "LocalModelBackend",
    "MlflowBackend",
    "OpenAIChatBackend",
    "OpenAIChatConfig",
    "RateLimitedError",
    "ReplayBackend",
    "ReplayConfig",
    "ResponseCache",
    "TransientAccessError",
    "backend_kinds",
    "canonical_json",
    "load_backend",
    "normalize_records",
    "parse_label",
    "record_key",
    "register_backend",
    "validate_answers",
]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
