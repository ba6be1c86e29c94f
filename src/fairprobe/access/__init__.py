"""Black-box model access: backends, the persistent response cache, budgets and retries.

>>> from fairprobe.access import BlackBox, load_backend
>>> with BlackBox(load_backend("backend.toml"), cache="answers.sqlite", budget=1000) as bb:
...     answers = bb.query(records)                                  # doctest: +SKIP

See ``docs/access.md``.
"""

from fairprobe.access.base import Answer, AnswerBatch, Backend, TransientAccessError
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

__all__ = [
    "Answer",
    "AnswerBatch",
    "Backend",
    "BackendConfig",
    "Backoff",
    "BlackBox",
    "HttpJsonBackend",
    "HttpJsonConfig",
    "LocalConfig",
    "LocalModelBackend",
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
