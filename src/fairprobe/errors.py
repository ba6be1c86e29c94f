"""Typed exceptions shared by the whole public API.

Every error fairprobe raises on purpose derives from :class:`FairprobeError`; its message is one
line that says what is wrong and what to do about it. The CLI turns any of them into that one line
on stderr and a non-zero exit code (see :mod:`fairprobe.cli.main`).
"""

from __future__ import annotations

#: Secret values (API keys from ``headers_env``, URL passwords, the Basic header built from
#: them) that no error line may show, whoever puts them there: a server may echo a token in its
#: error body, and that body is quoted in the message. Registered by the HTTP backends.
_SECRETS: set[str] = set()


def register_secret(value: str) -> None:
    """Keep ``value`` (4 characters or more) and each whitespace-separated part of it of 6 or
    more characters (the token of ``"Bearer <token>"``) out of every :class:`FairprobeError`
    message. Shorter values are not scrubbed: replacing them would garble the messages."""
    if len(value) >= 4:
        _SECRETS.add(value)
    for part in value.split():
        if len(part) >= 6:
            _SECRETS.add(part)


def scrub(text: str) -> str:
    """``text`` with every registered secret replaced by ``***`` (longest first)."""
    for secret in sorted(_SECRETS, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, "***")
    return text


class FairprobeError(Exception):
    """Base class of every error fairprobe raises on purpose.

    Its message never shows a registered secret (:func:`register_secret`).
    """

    exit_code: int = 2

    def __str__(self) -> str:
        return scrub(super().__str__())


class InvalidParameterError(FairprobeError, ValueError):
    """A parameter has the wrong type or lies outside its allowed range."""


class DataError(FairprobeError, ValueError):
    """Input data is unusable: a missing column, an empty group, NaN values, an unreadable file."""


class EmptyGroupError(DataError):
    """A group that a metric needs holds no instance."""


class AnswerParseError(FairprobeError):
    """A model answer could not be turned into a decision, score or logit."""


class BudgetError(FairprobeError):
    """A query budget is exhausted, or too small for the job asked of it."""


class AccessError(FairprobeError):
    """A black-box model could not be queried."""


class EndpointUnreachableError(AccessError, ConnectionError):
    """An endpoint did not answer, even after the configured retries."""

    exit_code = 3


class EndpointStatusError(AccessError):
    """An endpoint answered, with an HTTP error status, even after the configured retries (it
    is reachable: the request or the model is at fault, and the message shows the answer)."""

    exit_code = 3


class ModelIdentityError(AccessError):
    """The server answered for another model than the one asked, or the model changed during
    the audit: the answers as a whole are refused (never a fault of one record)."""

    exit_code = 3


class PortInUseError(FairprobeError, OSError):
    """A server could not bind its port because something else already listens on it."""

    exit_code = 3


class ProtocolError(FairprobeError):
    """A protocol message is invalid: forged or missing signature, impossible counts, bad schema."""


class ConfigError(FairprobeError, ValueError):
    """A configuration file is missing, unreadable or inconsistent."""


class CacheError(AccessError):
    """An answer cache cannot be used: a foreign schema, a corrupt file, tampered answers."""


class MissingExtraError(FairprobeError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""

    exit_code = 4


class Interrupted(FairprobeError):
    """The user pressed Ctrl-C; the message says what was kept (cache, partial results)."""

    exit_code = 130
