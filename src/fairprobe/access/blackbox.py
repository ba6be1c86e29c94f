"""BlackBox: the one way fairprobe asks a model anything.

:class:`BlackBox` wraps a :class:`~fairprobe.access.Backend` with everything an audit needs around
the raw model call, once for every backend:

* a persistent :class:`~fairprobe.access.ResponseCache` — every answer is committed as soon as its
  batch returns, so no query is ever paid twice and a run killed at any point resumes where it
  stopped;
* a query budget checked *before* anything is paid (cached answers are free);
* retries with exponential backoff and jitter on transient failures (HTTP 429/5xx, timeouts,
  refused connections), then :class:`~fairprobe.errors.EndpointUnreachableError`;
* bounded concurrency (a thread pool over batches of ``backend.max_batch``; answers keep the input
  order);
* validation of every answer (a malformed one raises
  :class:`~fairprobe.errors.AnswerParseError`; an unparsable generative answer has decision
  ``None``, is dropped from the audit and counted in :attr:`BlackBox.unparsed`);
* a rich progress bar with the queries spent.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from numbers import Real
from typing import Any

import numpy as np
import numpy.typing as npt

from fairprobe import _interrupt
from fairprobe._closing import Closing
from fairprobe._validation import check_int, check_real, param_error
from fairprobe.access.base import Answer, AnswerBatch, Backend, TransientAccessError
from fairprobe.access.cache import ResponseCache
from fairprobe.access.identity import IdentityCheck, ModelIdentity
from fairprobe.access.records import Records, canonical_json, normalize_records, record_key
from fairprobe.access.retry import Backoff, _LockedRandom
from fairprobe.errors import (
    AccessError,
    AnswerParseError,
    BudgetError,
    EndpointStatusError,
    EndpointUnreachableError,
    FairprobeError,
)
from fairprobe.provenance import redact_text

__all__ = ["BlackBox", "validate_answers"]

log = logging.getLogger(__name__)

#: The sized identity check of a model that reports no identity: before cached answers are
#: reused, this many of them (or all, when fewer) drawn uniformly without replacement are asked
#: again. If a share ``p >= CHECK_SHARE`` of the reused answers would differ, all the re-asked
#: ones agree with probability at most ``(1 - p)^n <= 0.99^688 = 0.00099`` (without replacement
#: it is smaller still), so the change is caught with probability >= ``CHECK_POWER``.
CHECK_SHARE = 0.01
CHECK_POWER = 0.999
SIZED_CHECK = math.ceil(math.log(1.0 - CHECK_POWER) / math.log(1.0 - CHECK_SHARE))  # 688


class _Aborted(Exception):
    """Another batch failed; this one stops retrying."""


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= 1e-6 + 1e-6 * abs(b)


def _hint(backend: Backend, status: int | None) -> str:
    try:
        text = backend.error_hint(status)
    except Exception:  # a hint must never hide the error it explains  # noqa: BLE001
        return ""
    return f"; {text}" if text else ""


def _same_answer(cached: Answer | None, fresh: Answer) -> bool:
    """Whether a cached answer and a fresh one to the same record agree (fingerprinting)."""
    if cached is None:
        return True  # nothing to compare
    return (
        cached.decision == fresh.decision
        and cached.outcome == fresh.outcome
        and _close(cached.score, fresh.score)
        and _close(cached.logit, fresh.logit)
    )


def _describe(value: Any) -> str:
    return f"{value!r} ({type(value).__name__})"


def validate_answers(answers: Any, n: int, who: str) -> list[Answer]:
    """Check the answers a backend returned for a batch of ``n`` records; return them cleaned.

    A decision must be 0, 1 or ``None`` (unparsed; a NaN decision is an error, not an unparsed
    answer), a score a finite number in [0, 1] or ``None``, a logit a finite number or ``None``.
    Anything else raises :class:`~fairprobe.errors.AnswerParseError` naming ``who``.
    """
    if not isinstance(answers, Sequence) or isinstance(answers, str | bytes):
        raise AnswerParseError(f"{who} returned a {type(answers).__name__}, not a list of answers.")
    if len(answers) != n:
        raise AnswerParseError(f"{who} returned {len(answers)} answers for a batch of {n} records.")
    out: list[Answer] = []
    for i, a in enumerate(answers):
        if not isinstance(a, Answer):
            raise AnswerParseError(f"{who} answer {i} is a {type(a).__name__}, not an Answer.")
        d = a.decision
        if d is not None:
            if isinstance(d, Real) and not isinstance(d, bool) and math.isnan(float(d)):
                raise AnswerParseError(f"{who} answer {i} has a NaN decision; expected 0 or 1.")
            if not isinstance(d, Real) or float(d) not in (0.0, 1.0):
                raise AnswerParseError(
                    f"{who} answer {i} has decision {_describe(d)}; expected 0 or 1."
                )
            d = int(d)
        s, z = a.score, a.logit
        if s is not None:
            if isinstance(s, bool) or not isinstance(s, Real) or not 0.0 <= float(s) <= 1.0:
                raise AnswerParseError(
                    f"{who} answer {i} has score {_describe(s)}; expected a number in [0, 1]."
                )
            s = float(s)
        if z is not None:
            if isinstance(z, bool) or not isinstance(z, Real) or not math.isfinite(float(z)):
                raise AnswerParseError(
                    f"{who} answer {i} has logit {_describe(z)}; expected a finite number."
                )
            z = float(z)
        if (d is None) != (a.outcome != "ok"):
            raise AnswerParseError(
                f"{who} answer {i} has outcome {a.outcome!r} with decision {d!r}; an 'ok' answer "
                "needs a decision and any other outcome has none."
            )
        if d is not a.decision or s is not a.score or z is not a.logit:
            a = Answer(d, s, z, a.raw, a.outcome)
        out.append(a)
    return out


class BlackBox(Closing):
    """Budgeted, cached, retried, concurrent access to a black-box model.

    Parameters
    ----------
    backend : Backend
        The model endpoint (see :func:`fairprobe.access.load_backend`).
    cache : None, ResponseCache, str or PathLike, default=None
        Where answers persist. A path opens (and later closes) a :class:`ResponseCache` there.
        ``None`` keeps answers in memory for the life of this object only: nothing is paid twice
        within it, but nothing survives it either.
    budget : int or None, default=None
        Most queries this object may pay for (cached answers are free). A :meth:`query` that needs
        more new answers than remain raises :class:`~fairprobe.errors.BudgetError` before paying
        for any of them.
    retries : int, default=5
        Retries of a batch after a transient failure (so ``retries + 1`` attempts in all), with
        waits drawn by ``backoff``; then :class:`~fairprobe.errors.EndpointUnreachableError`.
    backoff : Backoff or float, default=Backoff()
        The wait policy; a float is the first wait in seconds of a default :class:`Backoff`.
    timeout : float or None, default=None
        Per-request timeout in seconds of network backends (those with a ``timeout``
        attribute); ``None`` keeps the backend's own. A request that times out is retried.
    concurrency : int, default=4
        Batches in flight at once.
    progress : bool, default=False
        Show a rich progress bar with the queries spent.
    seed : int or None, default=None
        Seed of the backoff jitter.
    refresh : bool, default=False
        Ask the model again for every record instead of replaying cached answers, and overwrite
        them (``--refresh``). Within this object, a record is still asked only once.
    verify_identity : bool, default=True
        Establish the identity of the model behind the backend before the first query (see
        :meth:`resolve_identity`): a reported model id or a file hash enters the cache key; with
        none, the cached answers a query would reuse pass the sized check first
        (``fingerprint_size`` of them asked again; one changed answer drops every cached answer
        of that backend). ``False`` reuses cached answers unchecked (the provenance says
        ``off``).
    fingerprint_size : int, default=SIZED_CHECK (688)
        Cached answers asked again per query before the others are reused, when the endpoint
        reports no identity (paid, outside ``budget``, counted in :attr:`fingerprint_paid`).
        688 catches a model that answers >= 1% of the reused records differently with
        probability >= 0.999; a smaller value is weaker, and the provenance states its power.

    Examples
    --------
    >>> from fairprobe.access import BlackBox, LocalModelBackend
    >>> bb = BlackBox(LocalModelBackend(lambda df: (df["x"] > 0).astype(int)), budget=10)
    >>> bb.query([{"x": 1}, {"x": -1}, {"x": 1}]).decisions
    array([1., 0., 1.])
    >>> bb.spent, bb.remaining
    (2, 8)
    """

    def __init__(
        self,
        backend: Backend,
        *,
        cache: ResponseCache | str | os.PathLike[str] | None = None,
        budget: int | None = None,
        retries: int = 5,
        backoff: Backoff | float = Backoff(),
        timeout: float | None = None,
        concurrency: int = 4,
        progress: bool = False,
        seed: int | None = None,
        refresh: bool = False,
        verify_identity: bool = True,
        fingerprint_size: int = SIZED_CHECK,
    ) -> None:
        if not isinstance(backend, Backend):
            raise param_error("backend", "BlackBox", "a fairprobe.access.Backend", backend)
        self.backend = backend
        self.budget = None if budget is None else check_int(budget, "budget", "BlackBox", lo=0)
        self.retries = check_int(retries, "retries", "BlackBox", lo=0)
        if isinstance(backoff, Backoff):
            self.backoff = backoff
        else:
            self.backoff = Backoff(base=check_real(backoff, "backoff", "BlackBox", lo=0.0))
        if timeout is not None:
            timeout = check_real(timeout, "timeout", "BlackBox", lo=0.0, closed="neither")
            if hasattr(backend, "timeout"):
                backend.timeout = timeout
        self.timeout = timeout
        self.concurrency = check_int(concurrency, "concurrency", "BlackBox", lo=1)
        self.progress = bool(progress)
        check_int(backend.max_batch, "max_batch", type(backend).__name__, lo=1)
        self._owns_cache = not isinstance(cache, ResponseCache)
        if cache is None:
            self.cache = ResponseCache(":memory:")
        elif isinstance(cache, ResponseCache):
            self.cache = cache
        elif isinstance(cache, str | os.PathLike):
            self.cache = ResponseCache(cache)
        else:
            raise param_error("cache", "BlackBox", "None, a ResponseCache or a file path", cache)
        self._rng = _LockedRandom(seed)
        self._lock = threading.Lock()
        self._spent = 0
        self._reserved = 0
        self._unparsed = 0
        self._from_cache = 0
        self._retried = 0
        self._closed = False
        self.refresh = bool(refresh)
        self.verify_identity = bool(verify_identity)
        self.fingerprint_size = check_int(fingerprint_size, "fingerprint_size", "BlackBox", lo=1)
        self._check: IdentityCheck | None = None
        self._identity_lock = threading.Lock()
        self._fresh: set[str] = set()  # keys answered by the model in this run (--refresh)
        self._checked: set[str] = set()  # cached keys that passed this run's sized check
        self._fingerprint_paid = 0
        self._taken_over = 0
        self._waited = 0
        self._log: list[AnswerBatch] = []

    # -- accounting -------------------------------------------------------------------------
    @property
    def identity(self) -> str:
        """The backend's identity."""
        return redact_text(self.backend.identity)

    @property
    def cache_identity(self) -> str:
        """The namespace of this run's answers in the cache (after :meth:`resolve_identity`)."""
        return self.resolve_identity().cache_identity

    @property
    def identity_check(self) -> IdentityCheck | None:
        """How the answer identity was established (``None`` before the first query)."""
        return self._check

    @property
    def fingerprint_paid(self) -> int:
        """Queries paid to fingerprint the model (outside the budget)."""
        return self._fingerprint_paid

    @property
    def resumed_in_flight(self) -> int:
        """Queries asked again because an earlier run died while they were in flight."""
        return self._taken_over

    def answer_log(self) -> tuple[npt.NDArray[np.str_], npt.NDArray[np.bool_]]:
        """Outcome and from-cache flag of every answer returned so far, in query order.

        The answers of successive :meth:`query` calls are concatenated: an audit that queries
        its sample in order gets one entry per sampled record (for per-group accounting).
        """
        with self._lock:
            log = list(self._log)
        if not log:
            return np.empty(0, dtype="<U9"), np.empty(0, dtype=bool)
        outcomes = np.concatenate([b.outcomes for b in log if b.outcomes is not None])
        cached = np.concatenate([b.cached for b in log if b.cached is not None])
        return outcomes, cached

    def resolve_identity(self) -> IdentityCheck:
        """Establish which model answers, once, before anything is read from the cache.

        1. The backend reports a model identity (:meth:`Backend.model_identity`: the platform's
           ``/health``, a model file hash): a reported digest refines the cache namespace.
        2. Otherwise the source is ``fingerprint``: each :meth:`query` first asks
           ``min(fingerprint_size, reused)`` of the cached answers it would reuse again (paid,
           outside the budget; the sized check). If any answer differs, the model behind the
           endpoint changed: every cached answer of this backend is dropped (``invalidated``)
           and :attr:`IdentityCheck.note` says so.

        Returns
        -------
        IdentityCheck
        """
        if self._check is not None:
            return self._check
        with self._identity_lock:  # once, even when several threads query at the same time
            if self._check is None:
                self._check = self._resolve_identity()
            return self._check

    def _resolve_identity(self) -> IdentityCheck:
        backend = self.backend
        ident = redact_text(backend.identity)  # never a credential in the cache
        if not self.verify_identity:
            return IdentityCheck(ident, ident, None, "off")
        mi = self._with_retries(backend.model_identity, None)
        if isinstance(mi, ModelIdentity):
            if mi.source == "reported":
                cache_ident = f"{ident} model={mi.model_id or '?'}#{mi.digest[:12]}"
            else:
                cache_ident = ident
            return IdentityCheck(ident, cache_ident, mi.model_id, mi.source,
                                 detail=dict(mi.detail))
        return self._fingerprint(ident)

    def _fingerprint(self, ident: str) -> IdentityCheck:
        """The source when the model reports no identity (the check itself runs per query)."""
        if self.refresh:
            return IdentityCheck(ident, ident, None, "refreshed")
        temperature = getattr(getattr(self.backend, "config", None), "temperature", None)
        if isinstance(temperature, int | float) and temperature > 0:
            # sampled answers differ from run to run: re-asking cannot tell a new model apart
            if self.cache.count(ident) == 0:
                return IdentityCheck(ident, ident, None, "unverified")
            return IdentityCheck(
                ident, ident, None, "unverified",
                note=(
                    f"The answers are sampled (temperature {temperature:g}) and the endpoint "
                    "reports no model identity: cached answers were used without checking that "
                    "the model behind it is unchanged (use --refresh or --no-cache to be sure)."
                ),
            )
        if self.cache.count(ident) == 0:
            return IdentityCheck(ident, ident, None, "unverified")
        # the check itself runs in query(), on the cached answers that call would reuse
        return IdentityCheck(ident, ident, None, "fingerprint")

    def _sized_check(self, ident: str, found: dict[str, Answer], records: dict[str, Any]
                     ) -> dict[str, Answer]:
        """The cached answers of ``found`` that may be reused, after the sized check.

        ``min(fingerprint_size, hits)`` of the hits not yet checked in this run are asked again
        (seeded, uniformly without replacement). All agree: every hit of this call is reused.
        One differs: the model changed; every cached answer of this backend is dropped (and the
        re-asked ones stored), so only the fresh answers are returned and the rest is paid.
        """
        import dataclasses

        todo = [k for k in found if k not in self._checked]
        if not todo:
            return found
        m = min(self.fingerprint_size, len(todo))
        rng = np.random.default_rng(int(self._rng.random() * 2**63))
        pick = sorted(rng.choice(len(todo), size=m, replace=False).tolist())
        keys = [todo[i] for i in pick]
        before = self._spent
        try:
            got = self._ask([records[k] for k in keys], None)
        finally:
            with self._lock:
                self._fingerprint_paid += self._spent - before
                self._spent = before  # identity checks are outside the budget
        mismatched = sum(1 for k, a in zip(keys, got, strict=True)
                         if not _same_answer(found[k], a))
        fresh = dict(zip(keys, got, strict=True))
        check = self._check
        assert check is not None
        invalidated, note = 0, check.note
        if mismatched:
            invalidated = self.cache.clear(ident)
            self.cache.put_many(ident, list(fresh.items()),
                                records={k: canonical_json(records[k]) for k in keys}, replace=True)
            where = getattr(self.backend, "endpoint", ident)
            note = (
                f"The model behind {redact_text(str(where))} changed since its answers were "
                f"cached: {mismatched} of {m} cached records asked again were answered "
                f"differently, so the {invalidated} cached answers of this backend were dropped "
                "and asked again.")
            log.info(note)
            self._checked.update(keys)
            out = fresh
        else:
            self._checked.update(todo)
            out = {**found, **fresh}
        self._check = dataclasses.replace(
            check, fingerprint_asked=check.fingerprint_asked + m,
            fingerprint_mismatched=check.fingerprint_mismatched + mismatched,
            invalidated=check.invalidated + invalidated, note=note,
            reused_checked=check.reused_checked + len(todo),
            check_size=self.fingerprint_size)
        return out

    def _needs_check(self) -> bool:
        check = self._check
        return check is not None and check.source == "fingerprint" \
            and self.verify_identity and not self.refresh

    def _with_retries(self, fn: Callable[[], Any], abort: threading.Event | None) -> Any:
        """``fn()`` with the retry policy of queries (transient failures retried)."""
        backend = self.backend
        attempt = 0
        t0 = time.monotonic()
        while True:
            if abort is not None and abort.is_set():
                raise _Aborted
            try:
                return fn()
            except TransientAccessError as exc:
                if attempt >= self.retries:
                    where = redact_text(str(getattr(backend, "endpoint", backend.identity)))
                    status = getattr(exc, "status", None)
                    hint = _hint(backend, status)
                    if status is not None:  # it answered: not "unreachable"
                        raise EndpointStatusError(
                            f"{redact_text(str(exc)).rstrip('.')} (on each of {attempt + 1} "
                            f"attempts in {time.monotonic() - t0:.1f} s){hint}"
                        ) from exc
                    raise EndpointUnreachableError(
                        f"{backend.kind} endpoint {where} still unreachable after "
                        f"{attempt + 1} attempts in {time.monotonic() - t0:.1f} s; "
                        f"last error: {redact_text(str(exc))}{hint}"
                    ) from exc
                wait_s = self.backoff.delay(
                    attempt, self._rng.random(), getattr(exc, "retry_after", None)
                )
                with self._lock:
                    self._retried += 1
                log.info("transient failure (%s); retry %d in %.2f s", exc, attempt + 1, wait_s)
                if abort is not None:
                    if abort.wait(wait_s):
                        raise _Aborted from None
                else:
                    time.sleep(wait_s)
                attempt += 1

    @property
    def spent(self) -> int:
        """Queries paid to the model by this object so far."""
        return self._spent

    @property
    def remaining(self) -> int | None:
        """Queries left in the budget (``None`` when there is no budget)."""
        return None if self.budget is None else self.budget - self._spent

    @property
    def unparsed(self) -> int:
        """Answers returned so far whose decision could not be parsed (dropped, reported)."""
        return self._unparsed

    @property
    def from_cache(self) -> int:
        """Queries answered so far without paying (cache hits and repeats within a call)."""
        return self._from_cache

    @property
    def retried(self) -> int:
        """Transient failures retried so far."""
        return self._retried

    def stats(self) -> dict[str, Any]:
        """Accounting as a JSON-ready dict."""
        return {
            "identity": self.identity,
            "spent": self.spent,
            "budget": self.budget,
            "remaining": self.remaining,
            "from_cache": self.from_cache,
            "unparsed": self.unparsed,
            "retried": self.retried,
            "fingerprint_paid": self.fingerprint_paid,
            "resumed_in_flight": self.resumed_in_flight,
        }

    def check_cached(self, records: Records) -> None:
        """Run the sized identity check once on the cached answers of all ``records``, before
        they are queried in parts (e.g. by tenths): each part then reuses what passed, instead
        of paying a check of its own. A no-op when the model reports its identity."""
        if self._closed:
            raise AccessError("this BlackBox is closed; create a new one.")
        dicts, canon = normalize_records(records)
        index: dict[str, int] = {}
        for i, c in enumerate(canon):
            index.setdefault(record_key(c), i)
        identity = self.resolve_identity().cache_identity
        if not self._needs_check():
            return
        found = self.cache.get_many(identity, [k for k in index if k not in self._fresh])
        if found:
            with self._identity_lock:
                self._sized_check(identity, found, {k: dicts[index[k]] for k in found})

    # -- the query --------------------------------------------------------------------------
    def query(self, records: Records) -> AnswerBatch:
        """Ask the model about ``records``; return the answers in input order.

        Parameters
        ----------
        records : sequence of mappings or pandas.DataFrame
            JSON-serialisable records (NaN becomes ``null``). Identical records are asked once.

        Returns
        -------
        AnswerBatch
            ``n_paid`` counts the queries paid in this call, ``n_cached`` the others
            (``n_paid + n_cached == len(records)``).

        Raises
        ------
        BudgetError
            The call needs more new answers than the budget has left (nothing is paid).
        EndpointUnreachableError
            A batch still failed after ``retries`` retries (answers of the batches that did
            return are kept in the cache).
        AnswerParseError
            The backend returned a malformed answer.
        """
        if self._closed:
            raise AccessError("this BlackBox is closed; create a new one.")
        dicts, canon = normalize_records(records)
        n = len(dicts)
        if n == 0:
            empty: npt.NDArray[np.float64] = np.empty(0, dtype=np.float64)
            return AnswerBatch(empty, empty.copy(), empty.copy(), 0, 0)
        index: dict[str, int] = {}
        first: list[int] = []
        inverse = np.empty(n, dtype=np.intp)
        for i, c in enumerate(canon):
            k = record_key(c)
            u = index.get(k)
            if u is None:
                u = index[k] = len(first)
                first.append(i)
            inverse[i] = u
        ukeys = list(index)
        identity = self.resolve_identity().cache_identity
        if self.refresh:
            found = self.cache.get_many(identity, [k for k in ukeys if k in self._fresh])
        else:
            found = self.cache.get_many(identity, ukeys)
        if found and self._needs_check():
            with self._identity_lock:  # one check at a time; later calls reuse its result
                found = self._sized_check(
                    identity, {k: a for k, a in found.items() if k not in self._fresh},
                    {k: dicts[first[index[k]]] for k in found}) | {
                    k: a for k, a in found.items() if k in self._fresh}
        answers: list[Answer | None] = [found.get(k) for k in ukeys]
        missing = [u for u, a in enumerate(answers) if a is None]
        paid_now = np.zeros(len(ukeys), dtype=bool)
        with self._lock:  # reserve the budget, so that concurrent calls cannot overspend it
            if self.budget is not None:
                left = self.budget - self._spent - self._reserved
                if len(missing) > left:
                    raise BudgetError(
                        f"this query needs {len(missing)} new answers but only {left} of the "
                        f"budget of {self.budget} remain ({self._spent} spent); raise the budget "
                        "or query fewer records."
                    )
            self._reserved += len(missing)
        step = self.backend.max_batch
        batches = [missing[lo : lo + step] for lo in range(0, len(missing), step)]
        paid = [0]
        released = [0]  # reservations already turned into spending by _ask
        # a file cache may be shared with other processes: claim keys before paying for them
        shared = self.cache.path != ":memory:"
        try:
            with self._progress_bar(len(ukeys), len(ukeys) - len(missing)) as advance:

                def pay(batch: list[int], abort: threading.Event | None) -> None:
                    _interrupt.check()  # Ctrl-C whose exception a finaliser swallowed
                    got = self._ask([dicts[first[u]] for u in batch], abort, released)
                    self.cache.put_many(
                        identity,
                        [(ukeys[u], a) for u, a in zip(batch, got, strict=True)],
                        records={ukeys[u]: canon[first[u]] for u in batch},
                        replace=self.refresh,
                    )
                    for u, a in zip(batch, got, strict=True):
                        answers[u] = a
                    paid_now[batch] = True
                    with self._lock:
                        paid[0] += len(batch)
                        self._fresh.update(ukeys[u] for u in batch)

                def run(batch: list[int], abort: threading.Event | None) -> None:
                    if not shared:
                        pay(batch, abort)
                        return
                    pos = {ukeys[u]: u for u in batch}
                    todo = list(pos)
                    wait_s = 0.02
                    while todo:
                        cr = self.cache.claim(identity, todo, skip_answered=not self.refresh)
                        for k, a in cr.answered.items():
                            answers[pos[k]] = a
                        if cr.taken_over:
                            with self._lock:
                                self._taken_over += cr.taken_over
                        if cr.claimed:
                            mine = [pos[k] for k in cr.claimed]
                            try:
                                pay(mine, abort)
                            except BaseException:
                                self.cache.release(identity, cr.claimed)
                                raise
                        todo = cr.busy
                        if todo:  # another live process is paying for these: wait for it
                            with self._lock:
                                self._waited += len(todo)
                            if abort is not None:
                                if abort.wait(wait_s):
                                    raise _Aborted
                            else:
                                time.sleep(wait_s)
                            wait_s = min(0.5, wait_s * 1.5)

                self._run_batches(batches, run, advance)
        finally:
            with self._lock:
                self._reserved -= len(missing) - released[0]
        n_paid = paid[0]
        # the first occurrence of a record paid now is paid; its repeats in this call are free
        cached_mask = np.ones(n, dtype=bool)
        cached_mask[np.asarray(first, dtype=np.intp)[paid_now]] = False
        out = self._assemble(answers, inverse, n_paid, n - n_paid, cached_mask)
        with self._lock:
            self._from_cache += n - n_paid
            self._unparsed += out.n_unparsed
            self._log.append(out)
        if out.n_unparsed:
            log.info(
                "%d of %d answers could not be parsed; they are dropped from the audit.",
                out.n_unparsed,
                n,
            )
        return out

    @staticmethod
    def _assemble(
        answers: list[Answer | None],
        inverse: npt.NDArray[np.intp],
        n_paid: int,
        n_cached: int,
        cached: npt.NDArray[np.bool_],
    ) -> AnswerBatch:
        m = len(answers)
        dec = np.full(m, np.nan)
        sco = np.full(m, np.nan)
        lgt = np.full(m, np.nan)
        outc = np.full(m, "ok", dtype="<U9")
        for u, a in enumerate(answers):
            if a is None:  # pragma: no cover - every batch either answered or raised
                raise AccessError("internal error: a query was left without an answer.")
            if a.decision is not None:
                dec[u] = a.decision
            if a.score is not None:
                sco[u] = a.score
            if a.logit is not None:
                lgt[u] = a.logit
            if a.outcome != "ok":
                outc[u] = a.outcome
        return AnswerBatch(
            dec[inverse], sco[inverse], lgt[inverse], n_paid, n_cached, outc[inverse], cached
        )

    def _run_batches(
        self,
        batches: list[list[int]],
        run: Callable[[list[int], threading.Event | None], None],
        advance: Callable[[int], None],
    ) -> None:
        if not batches:
            return
        if len(batches) == 1 or self.concurrency == 1:
            for b in batches:
                run(b, None)
                advance(len(b))
            return
        abort = threading.Event()
        pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="fairprobe-blackbox")
        try:
            pending: set[Future[None]] = set()
            sizes: dict[Future[None], int] = {}
            for b in batches:
                f = pool.submit(run, b, abort)
                sizes[f] = len(b)
                pending.add(f)
            while pending:
                done, pending = wait(pending, return_when=FIRST_EXCEPTION)
                for f in done:
                    exc = f.exception()
                    if exc is not None and not isinstance(exc, _Aborted):
                        abort.set()
                        raise exc
                    advance(sizes[f])
        except BaseException:
            abort.set()
            raise
        finally:
            # cancel what has not started; let running batches finish so that every answer paid
            # for reaches the cache
            pool.shutdown(wait=True, cancel_futures=True)

    def _ask(
        self,
        batch: list[dict[str, Any]],
        abort: threading.Event | None,
        released: list[int] | None = None,
    ) -> list[Answer]:
        """Pay for ``batch``. With ``released`` (a one-item counter of the calling query), the
        batch's reservation is turned into spending under the same lock, so that a concurrent
        call never counts the same queries twice (as reserved and as spent)."""
        backend = self.backend
        who = f"{backend.kind} backend"

        def call() -> Any:
            try:
                return backend.ask(batch)
            except TransientAccessError:
                raise  # retried; the hint is added to the final error
            except FairprobeError as exc:
                if exc.args and isinstance(exc.args[0], str):  # no credentials in messages
                    status = getattr(exc, "status", None)
                    hint = _hint(backend, status) if isinstance(status, int) else ""
                    exc.args = (redact_text(exc.args[0]) + hint, *exc.args[1:])
                raise
            except Exception as exc:
                raise AccessError(
                    f"{who} failed: {type(exc).__name__}: {redact_text(str(exc))}"
                ) from exc

        got = self._with_retries(call, abort)
        with self._lock:
            self._spent += len(batch)
            if released is not None:
                self._reserved -= len(batch)
                released[0] += len(batch)
        return validate_answers(got, len(batch), who)

    # -- progress ---------------------------------------------------------------------------
    def _progress_bar(self, total: int, done: int) -> _Progress:
        return _Progress(self, total, done)

    # -- lifecycle --------------------------------------------------------------------------
    def close(self) -> None:
        """Close the backend and, if this object opened it, the cache (idempotent)."""
        if self._closed:
            return
        self._closed = True
        try:
            self.backend.close()
        finally:
            if self._owns_cache:
                self.cache.close()

    def __repr__(self) -> str:
        return (
            f"BlackBox({self.identity!r}, spent={self.spent}, budget={self.budget}, "
            f"unparsed={self.unparsed})"
        )


class _Progress:
    """A rich progress bar over the unique queries of one call (a no-op when disabled)."""

    def __init__(self, bb: BlackBox, total: int, done: int) -> None:
        self.bb = bb
        self.total = total
        self.done = done
        self._bar: Any = None
        self._task: Any = None

    def __enter__(self) -> Callable[[int], None]:
        if self.bb.progress:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(
                TextColumn("[bold]querying[/]"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("spent {task.fields[spent]}{task.fields[of]}"),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=Console(stderr=True),  # keeps stdout for results
            )
            self._bar.start()
            self._task = self._bar.add_task(
                "query", total=self.total, completed=self.done, **self._fields()
            )
        return self.advance

    def _fields(self) -> dict[str, str]:
        b = self.bb.budget
        return {"spent": str(self.bb.spent), "of": "" if b is None else f"/{b}"}

    def advance(self, k: int) -> None:
        if self._bar is not None:
            self._bar.update(self._task, advance=k, **self._fields())

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
