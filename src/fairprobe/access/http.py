"""Generic HTTP JSON endpoints, and the transport shared with the chat backend.

The request/response mapping is set in config (:class:`HttpJsonConfig`). The defaults match the
fairprobe platform server (``fairprobe platform serve``)::

    POST {url}/audit/predict   {"instances": [record, ...]}
    200                        {"predictions": [{"decision": 0|1, "score": p, "logit": z}, ...]}

(the user interface is ``path = "/user/predict"`` with the same shape).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import threading
import time
from collections.abc import Mapping, Sequence
from email.utils import parsedate_to_datetime
from typing import Any, Literal

import httpx
from pydantic import Field, field_validator

from fairprobe.access.base import Answer, Backend, Record, TransientAccessError
from fairprobe.access.config import BackendConfig, register_backend
from fairprobe.access.retry import RateLimitedError
from fairprobe.errors import AccessError, AnswerParseError, ConfigError
from fairprobe.provenance import redact_url

__all__ = [
    "HttpJsonBackend",
    "HttpJsonConfig",
    "HttpLimitsConfig",
    "HttpStatusError",
    "HttpTransport",
    "dotted_get",
    "headers_from_env",
    "http_url",
    "parse_decision",
    "parse_duration",
]

_RETRY_STATUS = {408, 425, 429, 500, 502, 503, 504}


def dotted_get(obj: Any, path: str) -> Any:
    """``obj`` at a dotted path (``"a.b.0.c"``; integers index lists; ``""`` is ``obj``).

    Raises KeyError naming the first missing step.
    """
    if not path:
        return obj
    cur = obj
    for step in path.split("."):
        if isinstance(cur, Mapping) and step in cur:
            cur = cur[step]
        elif (
            isinstance(cur, list)
            and step.lstrip("-").isdigit()
            and -len(cur) <= int(step) < len(cur)
        ):
            cur = cur[int(step)]
        else:
            raise KeyError(step)
    return cur


class HttpStatusError(AccessError):
    """A permanent HTTP error status (4xx other than 408/425/429); ``status`` holds it."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def parse_duration(v: str) -> float | None:
    """Seconds in a rate-limit reset value: ``"1s"``, ``"6m0s"``, ``"20ms"``, ``"1h2m3.5s"``,
    or a bare number of seconds; ``None`` when unreadable.

    >>> parse_duration("6m0s"), parse_duration("20ms"), parse_duration("2.5")
    (360.0, 0.02, 2.5)
    """
    v = v.strip()[:64]
    try:
        x = float(v)
        return x if math.isfinite(x) and x >= 0 else None
    except ValueError:
        pass
    total, pos = 0.0, 0
    for m in _DURATION.finditer(v):
        if m.start() != pos:
            return None
        pos = m.end()
        total += float(m.group(1)) * {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}[m.group(2)]
    return total if pos == len(v) and pos > 0 else None


def rate_limit_wait(headers: Mapping[str, str]) -> float | None:
    """Seconds until a rate-limit window the server reports as exhausted resets.

    Reads ``x-ratelimit-remaining-{requests,tokens}`` and ``x-ratelimit-reset-{requests,tokens}``
    (OpenAI, Azure, vLLM gateways, OpenRouter): the longest reset among the windows with nothing
    remaining; ``None`` when no window is exhausted or the headers are absent.
    """
    wait = None
    for kind in ("requests", "tokens"):
        remaining = headers.get(f"x-ratelimit-remaining-{kind}")
        reset = headers.get(f"x-ratelimit-reset-{kind}")
        if remaining is None or reset is None:
            continue
        try:
            left = float(remaining)
        except ValueError:
            continue
        secs = parse_duration(reset)
        if left <= 0 and secs is not None:
            wait = secs if wait is None else max(wait, secs)
    return wait


def _retry_after(resp: httpx.Response) -> float | None:
    ms = resp.headers.get("retry-after-ms")
    if ms is not None:
        try:
            x = float(ms) / 1000.0
            if math.isfinite(x) and x >= 0:
                return x
        except ValueError:
            pass
    v = resp.headers.get("retry-after")
    if v is None:
        return rate_limit_wait(resp.headers)
    try:
        return max(0.0, float(v))
    except ValueError:
        pass
    try:
        import datetime as dt

        when = parsedate_to_datetime(v)
        return max(0.0, (when - dt.datetime.now(dt.UTC)).total_seconds())
    except (TypeError, ValueError):
        return None


def _short(text: str, n: int = 160) -> str:
    if "Traceback (most recent call last)" in text:  # a server's traceback: the exception says it
        lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
        starts = [i for i, ln in enumerate(lines)
                  if re.match(r"^[A-Za-z_][\w.]*(Error|Exception)\b.*:", ln)]
        text = " ".join(lines[starts[-1]:]) if starts else (lines[-1] if lines else text)
    one = " ".join(text[: 4 * n].split())
    return one if len(one) <= n else one[: n - 3] + "..."


def _error_text(content: bytes, n: int = 160) -> str:
    """The message of an error body (OpenAI ``{"error": {"message"}}``, FastAPI ``{"detail"}``)."""
    text = content.decode("utf-8", errors="replace")
    try:
        data = json.loads(content)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return _short(text, n)
    if isinstance(data, Mapping):
        err = data.get("error", data.get("detail"))
        if isinstance(err, Mapping) and isinstance(err.get("message"), str):
            return _short(err["message"], n)
        if isinstance(err, str):
            return _short(err, n)
        if isinstance(data.get("message"), str):  # {"object": "error", "message": ...} (vLLM)
            return _short(data["message"], n)
    return _short(text, n)


#: Default of the config key ``max_response_bytes_per_record``: bytes a response may hold
#: (after decompression) per record asked, on top of a fixed :data:`RESPONSE_BYTES_BASE`.
MAX_RESPONSE_BYTES_PER_RECORD = 64 * 1024
#: Bytes every response may hold whatever the number of records (envelopes, metadata, errors).
RESPONSE_BYTES_BASE = 1024 * 1024
#: Default of the config key ``max_rate_limit_pause``: the longest pause, in seconds, before a
#: request when an earlier answer reported an exhausted rate-limit window.
MAX_RATE_LIMIT_PAUSE = 60.0


def is_loopback(url: str) -> bool:
    """Whether ``url``'s host is this machine (``localhost``, 127.0.0.0/8, ``::1``)."""
    import ipaddress

    host = (httpx.URL(url).host or "").strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def url_secrets(url: str) -> list[str]:
    """The credentials in ``url`` as they may travel: the password, ``user:password`` and the
    Basic header httpx builds from them."""
    import base64

    u = httpx.URL(url)
    user, password = u.username, u.password
    if not password:
        return []
    pair = f"{user}:{password}"
    return [password, pair, base64.b64encode(pair.encode()).decode()]


class _Deadline(Exception):
    pass


class _TooLarge(Exception):
    pass


def _read_bounded(resp: httpx.Response, cap: int, deadline: float) -> bytes:
    """The body of ``resp``, decompressed, refused past ``cap`` bytes or past ``deadline``.

    The raw stream is decompressed here (gzip and deflate only, the encodings the client
    announces) with ``max_length``, so a small compressed body never expands beyond the cap
    in memory; the deadline is checked after every chunk, so a server dripping bytes cannot
    keep a request alive past it.
    """
    import zlib

    declared = resp.headers.get("content-length")
    enc = resp.headers.get("content-encoding", "").strip().lower()
    if enc in ("", "identity") and declared and declared.isdigit() and int(declared) > cap:
        raise _TooLarge(int(declared))
    if enc in ("gzip", "x-gzip"):
        dec: Any = zlib.decompressobj(16 + zlib.MAX_WBITS)
    elif enc == "deflate":
        dec = zlib.decompressobj()
    elif enc in ("", "identity"):
        dec = None
    else:
        raise AnswerParseError(f"the body is {enc}-encoded; fairprobe accepts gzip and deflate.")
    out = bytearray()
    try:
        for chunk in resp.iter_raw():
            if time.monotonic() > deadline:
                raise _Deadline
            data = chunk
            while data:
                piece = data if dec is None else dec.decompress(data, cap + 1 - len(out))
                out += piece
                if len(out) > cap:
                    raise _TooLarge(len(out))
                data = b"" if dec is None else dec.unconsumed_tail
        if dec is not None:
            out += dec.flush()
    except zlib.error:
        raise AnswerParseError(f"the {enc} body does not decompress.") from None
    if len(out) > cap:
        raise _TooLarge(len(out))
    return bytes(out)


def _shutdown(resp: httpx.Response | None) -> None:
    """Shut down the socket under ``resp`` (if it got that far), unblocking a read on it."""
    import socket

    if resp is None:
        return
    try:
        stream = resp.extensions.get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if sock is not None:
            sock.shutdown(socket.SHUT_RDWR)
    except (OSError, AttributeError):  # already closed, or a transport without a socket
        pass


class HttpTransport:
    """A thread-safe httpx client that maps failures onto fairprobe's error types.

    Connection errors, timeouts and HTTP 408/425/429/5xx raise
    :class:`~fairprobe.access.TransientAccessError` (retried by BlackBox); other HTTP errors,
    redirects (never followed) and non-JSON bodies raise :class:`~fairprobe.errors.AccessError`.

    Limits, each a config key of the HTTP backends: ``timeout`` is a total deadline per request,
    connecting, sending and every read together (the caller waits for the exchange until the
    deadline and no longer, see :meth:`_exchange`); a response may hold ``RESPONSE_BYTES_BASE`` plus
    ``max_response_bytes_per_record`` bytes per record asked, after decompression; a pause for
    a rate-limit window that a successful answer reports exhausted lasts at most
    ``max_rate_limit_pause`` seconds, and once paused, a window reported exhausted again by the
    next successful answer is not believed (a server that means it answers 429, which is
    retried with its ``Retry-After``). Proxies from the environment (``HTTP_PROXY``, ...) are
    not used for a loopback ``base_url`` unless ``proxy_loopback``: the secret headers meant
    for a local server would otherwise reach the proxy. ``secrets`` never appear in an error
    message.
    """

    def __init__(self, headers: Mapping[str, str], timeout: float, *,
                 base_url: str | None = None,
                 max_response_bytes_per_record: int = MAX_RESPONSE_BYTES_PER_RECORD,
                 max_rate_limit_pause: float = MAX_RATE_LIMIT_PAUSE,
                 proxy_loopback: bool = False, secrets: Sequence[str] = ()) -> None:
        from fairprobe.errors import register_secret

        self.timeout = timeout
        self.max_response_bytes_per_record = max_response_bytes_per_record
        self.max_rate_limit_pause = max_rate_limit_pause
        self._trust_env = not (base_url is not None and is_loopback(base_url)
                               and not proxy_loopback)
        self._headers = {"Accept-Encoding": "gzip, deflate", **dict(headers)}
        for name, value in headers.items():  # credentials in plain headers are secrets too
            if name.lower() in ("authorization", "proxy-authorization", "x-api-key", "api-key",
                                "cookie"):
                register_secret(value)
        for value in (*secrets, *(url_secrets(base_url) if base_url else ())):
            register_secret(value)
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()
        self._not_before = 0.0  # monotonic time before which no request is sent
        self._paused = False  # the last pause was for a window a successful answer reported
        self._believe_windows = True
        #: Seconds spent waiting for exhausted rate-limit windows to reset.
        self.throttled_s = 0.0

    def _throttle(self) -> None:
        with self._lock:
            wait = self._not_before - time.monotonic()
        if wait > 0:
            time.sleep(wait)
            with self._lock:
                self.throttled_s += wait
                self._paused = True

    def _note_limits(self, resp: httpx.Response) -> None:
        wait = rate_limit_wait(resp.headers)
        with self._lock:
            if wait is None or wait <= 0:
                if resp.status_code < 300:
                    self._paused = False
                return
            if resp.status_code < 300 and self._paused:
                # paused for this window already, and it is "exhausted" again on a success:
                # the headers are not evidence of a limit (429s still are)
                self._believe_windows = False
            if self._believe_windows:
                self._not_before = max(self._not_before,
                                       time.monotonic() + min(wait, self.max_rate_limit_pause))

    def client(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                self._client = httpx.Client(
                    headers=self._headers,
                    limits=httpx.Limits(max_connections=64, max_keepalive_connections=16),
                    trust_env=self._trust_env,
                )
            return self._client

    def _exchange(self, method: str, url: str, body: Any, cap: int,
                  deadline: float) -> tuple[httpx.Response, bytes]:
        """One request and its bounded body, returned by ``deadline`` or abandoned.

        httpx bounds each wait (connect, send, every read) by ``timeout`` but not their sum,
        and a read that starts just before the deadline may wait a whole ``timeout`` more. So
        the exchange runs in a worker thread that the caller waits for until the deadline
        only; past it the caller raises, and the worker's socket is shut down so that its
        blocked read returns at once and the connection is not held.
        """
        box: dict[str, Any] = {}
        done = threading.Event()

        def run() -> None:
            try:
                with self.client().stream(method, url, json=body, timeout=self.timeout) as resp:
                    box["resp"] = resp
                    box["content"] = _read_bounded(resp, cap, deadline)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller as is
                box["exc"] = exc
            finally:
                done.set()

        worker = threading.Thread(target=run, name="fairprobe-http", daemon=True)
        worker.start()
        if not done.wait(max(0.0, deadline - time.monotonic())):
            _shutdown(box.get("resp"))
            raise _Deadline
        if "exc" in box:
            raise box["exc"]
        return box["resp"], box["content"]

    def request_json(self, method: str, url: str, body: Any, records: int = 0) -> Any:
        """The JSON answer to one request; ``records`` sizes the response-bytes limit."""
        self._throttle()
        cap = RESPONSE_BYTES_BASE + self.max_response_bytes_per_record * max(records, 0)
        deadline = time.monotonic() + self.timeout
        try:
            resp, content = self._exchange(method, url, body, cap, deadline)
        except (httpx.TimeoutException, _Deadline) as exc:
            raise TransientAccessError(
                f"{method} {url} timed out after {self.timeout:g} s ({type(exc).__name__.strip('_')}"
                "; config key timeout)") from None
        except _TooLarge as exc:
            raise AnswerParseError(
                f"{method} {url} answered more than {cap:,} bytes ({exc.args[0]:,} read) for "
                f"{records} record(s): refused (config key max_response_bytes_per_record, "
                f"{self.max_response_bytes_per_record:,} per record asked).") from None
        except AnswerParseError as exc:
            raise AnswerParseError(f"{method} {url}: {exc}") from None
        except httpx.TransportError as exc:
            reason = str(exc) or type(exc).__name__
            if isinstance(exc, httpx.ConnectError) and "refused" in reason.lower():
                reason = "connection refused"
            raise TransientAccessError(f"{method} {url}: {_short(reason)}") from None
        self._note_limits(resp)
        status = resp.status_code
        if status in _RETRY_STATUS:
            raise RateLimitedError(
                f"{method} {url} answered HTTP {status}: {_error_text(content)}",
                retry_after=_retry_after(resp), status=status,
            )
        if status >= 400:
            raise HttpStatusError(
                f"{method} {url} answered HTTP {status}: {_error_text(content)}", status)
        if status >= 300 or status < 200:
            where = resp.headers.get("location")
            to = f" to {redact_url(where)!r}" if where else ""
            raise HttpStatusError(
                f"{method} {url} answered HTTP {status} (a redirect{to}, which fairprobe never "
                "follows: a body sent with it is not an answer); point the backend at the "
                "final URL (config key url).", status)
        try:
            return json.loads(content)
        except RecursionError:  # a body nested deeper than Python's parser goes
            raise AnswerParseError(
                f"{method} {url} answered with JSON nested too deeply to be an answer."
            ) from None
        except (json.JSONDecodeError, UnicodeDecodeError):
            text = content.decode("utf-8", errors="replace")
            raise AnswerParseError(
                f"{method} {url} answered with a body that is not JSON: {_short(text, 80)!r}"
            ) from None

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None


def headers_from_env(names: Mapping[str, str]) -> dict[str, str]:
    out = {}
    for header, env in names.items():
        value = os.environ.get(env)
        if value is None:
            raise ConfigError(f"environment variable {env} (for header {header!r}) is not set.")
        out[header] = value
    return out


Scalar = str | int | float | bool


class HttpLimitsConfig(BackendConfig):
    """The transport limits every HTTP backend config shares (see :class:`HttpTransport`).

    Attributes
    ----------
    max_response_bytes_per_record : int
        Bytes a response may hold after decompression, per record asked (default 65,536), on
        top of 1 MiB for every response; a larger one is refused, not read.
    max_rate_limit_pause : float
        Longest pause (seconds, default 60) before a request when a successful answer reported
        an exhausted rate-limit window (``x-ratelimit-remaining-*: 0``).
    proxy_loopback : bool
        Use the environment's proxy (``HTTP_PROXY``, ...) for a server on this machine too
        (default false: a loopback URL is reached directly).
    """

    max_response_bytes_per_record: int = Field(default=MAX_RESPONSE_BYTES_PER_RECORD, ge=1)
    max_rate_limit_pause: float = Field(default=MAX_RATE_LIMIT_PAUSE, ge=0.0)
    proxy_loopback: bool = False


#: Config keys that shape how requests travel, not what the model answers: never in an identity.
TRANSPORT_KEYS = frozenset({"headers", "headers_env", "timeout", "max_batch",
                            "max_response_bytes_per_record", "max_rate_limit_pause",
                            "proxy_loopback"})


def transport_for(c: HttpLimitsConfig, url: str, headers: Mapping[str, str],
                  headers_env: Mapping[str, str], timeout: float) -> HttpTransport:
    """The transport of a backend config: its headers (``headers_env`` values are secrets)."""
    secret = headers_from_env(headers_env)
    return HttpTransport({**headers, **secret}, timeout, base_url=url,
                         max_response_bytes_per_record=c.max_response_bytes_per_record,
                         max_rate_limit_pause=c.max_rate_limit_pause,
                         proxy_loopback=c.proxy_loopback, secrets=list(secret.values()))


class HttpJsonConfig(HttpLimitsConfig):
    """Config of :class:`HttpJsonBackend`.

    Attributes
    ----------
    url : str
        Base URL (``http://127.0.0.1:8765``).
    path : str
        Appended to ``url`` (default ``/audit/predict``; ``/user/predict`` for the platform's
        user interface).
    method : {"POST", "PUT"}
    headers : dict
        Extra request headers (not part of the cache identity: put no secret here that changes
        the model; use ``headers_env`` for secrets).
    headers_env : dict
        Header name -> environment variable holding its value (e.g. an API key).
    batch_key : str or None
        Key of the list of records in the request body (default ``"instances"``); ``None`` sends
        the bare list.
    extra_body : dict
        Other fields of the request body (part of the identity).
    answers_path : str
        Dotted path of the list of answers in the response (default ``"predictions"``; ``""``
        for a bare list).
    decision_field, score_field, logit_field : str or None
        Fields of one answer (an answer that is a bare scalar is its decision). ``None`` when the
        endpoint does not return it.
    positive_values : list, optional
        Decision values meaning positive when decisions are labels (e.g. ``[">50K"]``).
    negative_values : list, optional
        With ``positive_values``: the other valid labels; any value outside both is malformed.
    threshold : float, optional
        When there is no decision field: decision = ``score >= threshold``.
    on_malformed : {"error", "drop"}
        A malformed answer raises :class:`~fairprobe.errors.AnswerParseError` (default) or is
        kept as unparsed (decision ``None``, counted by BlackBox).
    model : str, optional
        A model name or version to keep answers of different models apart in the cache.
    cache_name : str, optional
        Names the endpoint in the cache identity instead of its URL, so that cached answers
        stay valid when the same model moves to another host or port.
    identity_path : str or None
        Path (appended to ``url``) of a ``GET`` endpoint describing the model (default
        ``/health``, which the platform serves). What it reports, minus volatile keys such as
        ``status`` and ``uptime``, enters the cache key, so another model served at the same
        URL never gets the old model's answers. ``None``, or an endpoint that answers 404 or
        not JSON, falls back to fingerprinting (re-asking a few cached records).
    identity_fields : list of str, optional
        Keys of that report that identify the model (default: all but the volatile ones).
    timeout : float
        Total deadline of one request in seconds (default 30), however the server paces its
        bytes.
    max_response_bytes_per_record, max_rate_limit_pause, proxy_loopback
        Transport limits (:class:`HttpLimitsConfig`).
    """

    kind: Literal["http-json"] = "http-json"
    url: str
    path: str = "/audit/predict"
    method: Literal["POST", "PUT"] = "POST"
    headers: dict[str, str] = {}
    headers_env: dict[str, str] = {}
    batch_key: str | None = "instances"
    extra_body: dict[str, Any] = {}
    answers_path: str = "predictions"
    decision_field: str | None = "decision"
    score_field: str | None = "score"
    logit_field: str | None = "logit"
    positive_values: list[Scalar] | None = None
    negative_values: list[Scalar] | None = None
    threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    on_malformed: Literal["error", "drop"] = "error"
    model: str | None = None
    cache_name: str | None = None
    identity_path: str | None = "/health"
    identity_fields: list[str] | None = None
    max_batch: int = Field(default=64, ge=1)
    timeout: float = Field(default=30.0, gt=0.0)

    @field_validator("url")
    @classmethod
    def _check_url(cls, v: str) -> str:
        return http_url(v)


def http_url(v: str) -> str:
    """A config's base URL: ``http://`` or ``https://``, without a trailing slash."""
    if not v.startswith(("http://", "https://")):
        raise ValueError("must start with http:// or https://")
    return v.rstrip("/")


class HttpBackend(Backend):
    """Shared plumbing of the network backends: an :class:`HttpTransport`, a URL, an identity.

    Subclasses set ``self.url``, ``self._transport`` and ``self._identity`` in ``__init__``.
    """

    url: str
    _transport: HttpTransport
    _identity: str

    @property
    def identity(self) -> str:
        return self._identity

    @property
    def endpoint(self) -> str:
        """The URL, credentials redacted (for messages and provenance)."""
        return redact_url(self.url)

    @property
    def timeout(self) -> float:
        return self._transport.timeout

    @timeout.setter
    def timeout(self, value: float) -> None:
        self._transport.timeout = value

    def close(self) -> None:
        self._transport.close()

    def _config_of(self, config: Any, kwargs: dict[str, Any], *, revalidate: bool = False) -> Any:
        """The backend's config: ``config``, or one parsed from ``kwargs`` (the keyword form of
        the constructor); ``kwargs`` given with a ``config`` override its fields (validated
        again when ``revalidate``, for a model whose validators combine fields)."""
        if config is None:
            from fairprobe.access.config import parse_config

            return parse_config({"kind": self.kind, **kwargs})
        if not kwargs:
            return config
        if revalidate:
            return type(config).model_validate({**config.model_dump(exclude_unset=True), **kwargs})
        return config.model_copy(update=kwargs)


class HttpJsonBackend(HttpBackend):
    """A classifier behind a generic HTTP JSON endpoint (batched requests).

    Build it from an :class:`HttpJsonConfig`, keyword arguments, or a config file with
    :func:`fairprobe.access.load_backend`::

        HttpJsonBackend(url="http://127.0.0.1:8765")             # the platform's audit API
        HttpJsonBackend(url=..., path="/user/predict")             # its user interface
    """

    kind = "http-json"

    def __init__(self, config: HttpJsonConfig | None = None, **kwargs: Any) -> None:
        config = self._config_of(config, kwargs)
        assert isinstance(config, HttpJsonConfig)
        c = config
        if c.decision_field is None and c.threshold is None:
            raise ConfigError("an http-json backend without decision_field needs a threshold.")
        if c.decision_field is None and c.score_field is None:
            raise ConfigError("an http-json backend needs a decision_field or a score_field.")
        if c.negative_values is not None and c.positive_values is None:
            raise ConfigError("negative_values needs positive_values.")
        self.config = c
        self.max_batch = c.max_batch
        self.url = c.url + (c.path if not c.path or c.path.startswith("/") else "/" + c.path)
        self._transport = transport_for(c, self.url, c.headers, c.headers_env, c.timeout)
        transport = {*TRANSPORT_KEYS, "on_malformed", "identity_path", "identity_fields"}
        if c.cache_name is not None:
            transport |= {"url"}
        ident = json.dumps(c.model_dump(exclude=transport), sort_keys=True, default=str)
        where = redact_url(self.url) if c.cache_name is None else c.cache_name
        self._identity = (
            f"http-json:{c.method} {where}"
            + (f" model={c.model}" if c.model else "")
            + f"#{hashlib.sha256(ident.encode()).hexdigest()[:12]}"
        )

    def model_identity(self) -> Any:
        """What ``GET {url}{identity_path}`` reports about the model (``None`` if nothing)."""
        from fairprobe.access.identity import identity_from_report

        c = self.config
        if not c.identity_path:  # None or "" (TOML has no null): fingerprint instead
            return None
        path = c.identity_path if c.identity_path.startswith("/") else "/" + c.identity_path
        try:
            report = self._transport.request_json("GET", c.url + path, None)
        except TransientAccessError:
            raise
        except (AccessError, AnswerParseError):
            return None  # no such endpoint, or not JSON: fingerprint instead
        return identity_from_report(report, c.identity_fields)

    def declared_inputs(self) -> list[str] | None:
        """The input fields the endpoint declares, or ``None``.

        Reads ``GET {url}/schema`` in the fairprobe platform's shape: a section whose
        ``endpoint`` is this backend's ``path`` lists its ``features``. Anything else (no such
        endpoint, another shape, an unreachable server) declares nothing: the caller then sends
        every column but the label and the sensitive one. Costs no query.
        """
        c = self.config
        try:
            schema = self._transport.request_json("GET", c.url + "/schema", None)
        except (AccessError, AnswerParseError):
            return None
        if not isinstance(schema, Mapping):
            return None
        path = "/" + c.path.strip("/")
        for section in schema.values():
            if (isinstance(section, Mapping) and section.get("endpoint") == path
                    and isinstance(section.get("features"), list)):
                return [str(f) for f in section["features"]]
        return None

    #: The fields of the last request sent (what reached the model; ``None`` before one).
    sent_columns: list[str] | None = None

    def error_hint(self, status: int | None) -> str:
        """At a 404/405, the likely cause: a model server behind ``--url``."""
        sent = (f"the request sent the fields {', '.join(self.sent_columns)} (--feature-cols "
                "chooses them)" if self.sent_columns is not None else "")
        if status in (404, 405):
            return (f"--url expects fairprobe's JSON shape at --path {self.config.path}; a model "
                    "server takes a backend config instead: kind = \"kserve-v2\" (KServe, "
                    "MLServer, Triton), \"mlflow\" or \"kserve-v1\" (docs/access.md)")
        return sent

    def ask(self, records: Sequence[Record]) -> list[Answer]:
        c = self.config
        instances = [dict(r) for r in records]
        if instances:
            self.sent_columns = list(instances[0])
        body: Any = instances if c.batch_key is None else {**c.extra_body, c.batch_key: instances}
        data = self._transport.request_json(c.method, self.url, body, len(records))
        where = f"{c.method} {self.url}"
        try:
            answers = dotted_get(data, c.answers_path)
        except KeyError as exc:
            raise AnswerParseError(
                f"{where} answered without {c.answers_path!r} (missing {exc.args[0]!r})."
            ) from None
        if not isinstance(answers, list):
            raise AnswerParseError(
                f"{where}: {c.answers_path or 'the response'!r} is a {type(answers).__name__}, "
                "not a list."
            )
        if len(answers) != len(records):
            raise AnswerParseError(
                f"{where} returned {len(answers)} answers for {len(records)} instances."
            )
        out = []
        for i, a in enumerate(answers):
            try:
                out.append(self._parse_one(a))
            except AnswerParseError as exc:
                if c.on_malformed == "error":
                    raise AnswerParseError(f"{where} answer {i}: {exc}") from None
                out.append(Answer(None, raw=json.dumps(a, default=str)[:500]))
        return out

    def _parse_one(self, a: Any) -> Answer:
        c = self.config
        if isinstance(a, Mapping):
            dec_v = self._field(a, c.decision_field, required=True)
            score = _number(self._field(a, c.score_field), "score", lo=0.0, hi=1.0)
            logit = _number(self._field(a, c.logit_field), "logit")
        else:
            if c.decision_field is None:
                score = _number(a, "score", lo=0.0, hi=1.0)
                dec_v, logit = None, None
            else:
                dec_v, score, logit = a, None, None
        if c.decision_field is None:
            assert c.threshold is not None
            if score is None:
                raise AnswerParseError("the score is missing and there is no decision field.")
            return Answer(int(score >= c.threshold), score, logit)
        return Answer(self._decision(dec_v), score, logit)

    @staticmethod
    def _field(a: Mapping[str, Any], name: str | None, required: bool = False) -> Any:
        if name is None:
            return None
        try:
            return dotted_get(a, name)
        except KeyError:
            if required:
                raise AnswerParseError(f"field {name!r} is missing.") from None
            return None

    def _decision(self, v: Any) -> int:
        return parse_decision(v, self.config.positive_values, self.config.negative_values)


def _value_kind(v: Any) -> str | None:
    """``"text"``, ``"number"`` (a finite JSON number or boolean), or ``None`` (anything else:
    null, NaN, infinity, a list, an object)."""
    if isinstance(v, str):
        return "text"
    if isinstance(v, bool | int):
        return "number"
    if isinstance(v, float):
        return "number" if math.isfinite(v) else None
    return None


def parse_decision(v: Any, positive_values: Sequence[Any] | None,
                   negative_values: Sequence[Any] | None) -> int:
    """One answer's 0/1 decision; the rule every backend applies.

    Without ``positive_values``: a JSON number or boolean equal to 0 or 1 (text such as
    ``"1"``, ``" 1.0e0 "`` or ``"-0"`` is not a decision). With ``positive_values``: 1 for one of
    them; with ``negative_values`` too, 0 for one of those and anything else is malformed;
    without, 0 for any other value *of the same kind* as the positive ones (text for text labels,
    a finite number for numeric ones), while null, NaN, a list, an object or a value of the
    other kind is malformed, never a negative. Raises AnswerParseError.
    """
    if v is None:
        raise AnswerParseError("the decision is null.")
    if isinstance(v, str) and v.strip().lower() in ("", "nan", "null", "none", "na", "n/a"):
        # a model that could not decide writes no label: unusable, never a negative
        raise AnswerParseError(f"the decision is {v!r}: no label.")
    kind = _value_kind(v)
    if positive_values is not None:
        if kind is not None and v in positive_values:
            return 1
        if negative_values is not None:
            if kind is not None and v in negative_values:
                return 0
            raise AnswerParseError(
                f"decision {v!r} is neither a positive {list(positive_values)} nor a negative "
                f"{list(negative_values)} value (config keys positive_values / negative_values)."
            )
        if kind is not None and kind in {_value_kind(x) for x in positive_values}:
            return 0
        raise AnswerParseError(
            f"decision {v!r} ({type(v).__name__}) is not a label like the positive values "
            f"{list(positive_values)}: an unusable answer, not a negative (set negative_values "
            "to list the other labels).")
    if kind == "number" and v in (0, 1):
        return int(v)
    if isinstance(v, float) and math.isnan(v):
        raise AnswerParseError("the decision is NaN.")
    raise AnswerParseError(
        f"decision {v!r} ({type(v).__name__}) is not 0 or 1; set positive_values for labels."
    )


def _number(v: Any, what: str, lo: float | None = None, hi: float | None = None) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise AnswerParseError(f"{what} {v!r} ({type(v).__name__}) is not a number.")
    x = float(v)
    if not math.isfinite(x) or (lo is not None and x < lo) or (hi is not None and x > hi):
        rng = "" if lo is None else f" in [{lo:g}, {hi:g}]"
        raise AnswerParseError(f"{what} {v!r} is not a finite number{rng}.")
    return x


def _build(cfg: BackendConfig) -> Backend:
    assert isinstance(cfg, HttpJsonConfig)
    return HttpJsonBackend(cfg)


register_backend("http-json", HttpJsonConfig, _build)
