"""The configuration of one node (``node.toml``).

::

    id = "a00"
    key = "keys/a00/node.key"          # relative paths are relative to this file
    roster = "roster.toml"
    role = "honest"                    # or "attacker"
    state_db = "state/a00.sqlite"
    collector_url = "http://127.0.0.1:9000/results"   # optional
    listen = "127.0.0.1:8001"          # optional; defaults to the roster address

    [audit]
    n = 300          # queries per round (the budget n of Section III-C)
    rounds = 12      # T; every node of the network uses the same value
    tau = 0.05
    z_max = 8.0
    replacement = false
    seed = 7         # seeds this node's query order (and an attacker's nothing: it is exact)

    [timeouts]
    round = 20.0     # seconds to wait for the neighbours' tables of a round
    request = 2.0    # seconds per HTTP request
    finish = 10.0    # seconds to keep delivering the last table after the last round

    [query_set]      # honest nodes only; where this auditor's private queries come from
    kind = "population"          # a share of a bundled Table I population (replayed answers)
    case = "bios-moderate"
    # ... see QuerySetConfig

    [backend]        # honest nodes only; how the model is asked (fairprobe.access)
    kind = "population-replay"
    cache = "state/a00.answers.sqlite"

Everything is checked on load; a bad file gives one :class:`~fairprobe.errors.ConfigError` line.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from fairprobe.collab.net import _toml
from fairprobe.collab.net.keys import check_auditor_id
from fairprobe.collab.net.roster import parse_address
from fairprobe.collab.protocol import PROTOCOL
from fairprobe.collab.verify import DEFAULT_MAX_LIARS, DEFAULT_PROOF_CAP, DEFAULT_RATE
from fairprobe.errors import ConfigError, InvalidParameterError

__all__ = ["AuditConfig", "NodeConfig", "TimeoutConfig", "VerifyNodeConfig", "load_node_config"]

ROLES = ("honest", "attacker")


def _section(doc: Mapping[str, Any], name: str, record: type | None = None) -> dict[str, Any]:
    """Table ``[name]`` of the node file; with ``record`` (a dataclass), one whose keys are all
    fields of that record."""
    v = doc.get(name, {})
    if not isinstance(v, Mapping):
        raise ConfigError(f"[{name}] of the node file must be a table.")
    if record is not None:
        unknown = set(v) - {f.name for f in fields(record)}
        if unknown:
            raise ConfigError(f"[{name}] has unknown keys {sorted(unknown)}.")
    return dict(v)


def _num(d: Mapping[str, Any], key: str, default: Any, kind: type, where: str) -> Any:
    v = d.get(key, default)
    ok = isinstance(v, kind) and not isinstance(v, bool)
    if kind is float and isinstance(v, int) and not isinstance(v, bool):
        v, ok = float(v), True
    if not ok:
        raise ConfigError(f"{where}.{key} must be a {kind.__name__}. Got {v!r}.")
    return v


@dataclass(frozen=True)
class AuditConfig:
    # the protocol's parameters default to the simulator's (PROTOCOL), so that a node file
    # that leaves them out runs the audit a simulation of the same seed runs
    n: int = PROTOCOL.n
    rounds: int = 10
    tau: float = PROTOCOL.tau
    z_max: float = PROTOCOL.z_max
    replacement: bool = PROTOCOL.replacement
    seed: int = 0
    #: Closing rounds after the last querying round: entries keep circulating, no source may
    #: add queries, so every honest node ends holding every source's final counts (``bounded``).
    closing: int = 0
    #: A name of this audit every auditor's file carries (a fresh random string per audit:
    #: ``python -c "import secrets; print(secrets.token_hex(16))"``). With the roster and this
    #: table it makes the audit id that every signature binds (``fairprobe.collab.net.node.
    #: audit_id``): entries, tables, challenges, openings and proofs of another audit over the
    #: same roster and keys do not verify.
    label: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The ``[audit]`` table; ``closing`` and ``label`` only when set (files and state
        fingerprints of audits without them stay what they were before they existed)."""
        d = asdict(self)
        if not self.closing:
            d.pop("closing")
        if not self.label:
            d.pop("label")
        return d

    def __post_init__(self) -> None:
        if not isinstance(self.label, str) or len(self.label) > 256:
            raise ConfigError("[audit] label must be a string of at most 256 characters.")
        if not 0 <= self.closing <= 10_000:
            raise ConfigError(f"[audit] closing must be an int in [0, 10000]. Got {self.closing}.")
        if self.n < 1:
            raise ConfigError(f"[audit] n must be an int >= 1. Got {self.n}.")
        if not 1 <= self.rounds <= 100_000:
            raise ConfigError(f"[audit] rounds must be an int in [1, 100000]. Got {self.rounds}.")
        if not 0 < self.tau < 1:
            raise ConfigError(f"[audit] tau must be a float in (0, 1). Got {self.tau}.")
        if not self.z_max > 0:
            raise ConfigError(f"[audit] z_max must be a float > 0. Got {self.z_max}.")
        if self.seed < 0:
            raise ConfigError(f"[audit] seed must be an int >= 0. Got {self.seed}.")


@dataclass(frozen=True)
class TimeoutConfig:
    round: float = 20.0
    request: float = 2.0
    finish: float = 10.0

    def __post_init__(self) -> None:
        for k, v in asdict(self).items():
            if not v > 0:
                raise ConfigError(f"[timeouts] {k} must be a float > 0. Got {v}.")


#: How an attacker node answers challenges (``[verify] answers``).
ANSWERS = ("all", "none", "truthful")
#: How an attacker node backs its counts with records (``[verify] records``).
RECORDS = ("random", "chosen", "poisoned")


@dataclass(frozen=True)
class VerifyNodeConfig:
    """``[verify]``: the optional verification of answers (:mod:`fairprobe.collab.verify`).

    ``enabled``: commit to the counted records in every signed entry, challenge neighbours and
    exchange proofs of fraud (every node of a network must agree: a node with it on refuses
    entries without a records root). ``rate``: leaves challenged per round as a fraction of the
    queries issued that round (at least one). ``records``: for an attacker node only, how it
    backs its fabricated counts (``random`` or ``chosen``, see ``VerifyConfig``; ``poisoned``:
    drawn like ``random``, but every committed record is one the model refuses -- a query id
    outside the population or a record without one -- the hostile case the challengers must
    survive).
    """

    enabled: bool = False
    rate: float = DEFAULT_RATE
    records: str = "random"
    #: For an attacker node only: which requested leaves it opens (``all``; ``none``: answers
    #: ``{"openings": []}``; ``truthful``: only the leaves whose answers are true). Honest
    #: challengers count anything but ``all`` as a failed challenge.
    answers: str = "all"
    #: Query-costing proofs of one signer that do not confirm before this node blames the
    #: signer and drops its proofs (:class:`fairprobe.collab.verify.ProofBudget`).
    proof_cap: int = DEFAULT_PROOF_CAP

    def to_dict(self) -> dict[str, Any]:
        """The ``[verify]`` table; ``answers`` and ``proof_cap`` only when not the default
        (older files and fingerprints unchanged)."""
        d = asdict(self)
        if self.answers == "all":
            d.pop("answers")
        if self.proof_cap == DEFAULT_PROOF_CAP:
            d.pop("proof_cap")
        return d

    def __post_init__(self) -> None:
        if not 0 <= self.rate <= 1:
            raise ConfigError(f"[verify] rate must be a float in [0, 1]. Got {self.rate}.")
        if self.records not in RECORDS:
            raise ConfigError(f"[verify] records must be one of {RECORDS}. Got {self.records!r}.")
        if self.answers not in ANSWERS:
            raise ConfigError(f"[verify] answers must be one of {ANSWERS}. Got {self.answers!r}.")
        if isinstance(self.proof_cap, bool) or not isinstance(self.proof_cap, int) \
                or self.proof_cap < 1:
            raise ConfigError(
                f"[verify] proof_cap must be an integer >= 1. Got {self.proof_cap!r}.")


@dataclass(frozen=True)
class NodeConfig:
    """A parsed ``node.toml``; paths are absolute."""

    id: str
    key: Path
    roster: Path
    state_db: Path
    role: str = "honest"
    listen: str | None = None
    collector_url: str | None = None
    audit: AuditConfig = field(default_factory=AuditConfig)
    timeouts: TimeoutConfig = field(default_factory=TimeoutConfig)
    query_set: dict[str, Any] = field(default_factory=dict)
    backend: dict[str, Any] = field(default_factory=dict)
    verify: VerifyNodeConfig = field(default_factory=VerifyNodeConfig)
    #: Aggregation run by an honest node (a name of ``fairprobe.collab`` aggregation methods):
    #: ``bounded``, the interval verdict that holds whichever ``max_liars`` sources lie.
    method: str = "bounded"
    #: Declared liar bound of the ``bounded`` verdict.
    max_liars: int = DEFAULT_MAX_LIARS
    #: Attack strategy of an attacker node (a name of ``fairprobe.collab.attacker.ATTACKS``).
    attack: str = "adaptive"
    #: What the platform tells a calibrated attacker (``AttackContext.to_dict()``; attackers
    #: whose strategy needs it, e.g. ``consistent``).
    attack_context: dict[str, Any] = field(default_factory=dict)
    source: Path | None = None

    def __post_init__(self) -> None:
        check_auditor_id(self.id)
        if self.role not in ROLES:
            raise ConfigError(f"role must be one of {ROLES}. Got {self.role!r}.")
        if self.listen is not None:
            parse_address(self.listen, allow_remote=True)
        if self.collector_url is not None and not self.collector_url.startswith(
            ("http://", "https://")
        ):
            raise ConfigError(f"collector_url must be an http(s) URL. Got {self.collector_url!r}.")
        if self.role == "honest" and not self.query_set:
            raise ConfigError("An honest node needs a [query_set] table.")
        from fairprobe.collab.attacker import ATTACKS
        from fairprobe.collab.baselines import AGGREGATORS

        if self.attack not in list(ATTACKS):
            raise ConfigError(f"attack must be one of {sorted(ATTACKS)}. Got {self.attack!r}.")
        methods = ["bounded", "auditopus", "robust", *AGGREGATORS]
        if self.method not in methods:
            raise ConfigError(f"method must be one of {methods}. Got {self.method!r}.")
        if isinstance(self.max_liars, bool) or not isinstance(self.max_liars, int) or \
                self.max_liars < 0:
            raise ConfigError(f"max_liars must be an int >= 0. Got {self.max_liars!r}.")

    def fingerprint(self) -> str:
        """Hash of everything that fixes the audit's outcome (not timeouts or the collector)."""
        doc: dict[str, Any] = {
            "id": self.id,
            "role": self.role,
            "audit": self.audit.to_dict(),
            "query_set": self.query_set,
            "backend": {k: v for k, v in self.backend.items() if k != "cache"},
        }
        if self.verify.enabled:
            doc["verify"] = self.verify.to_dict()
        doc["method"] = self.method
        if self.max_liars:
            doc["max_liars"] = self.max_liars
        if self.role == "attacker" and self.attack != "adaptive":
            doc["attack"] = self.attack
            doc["attack_context"] = self.attack_context
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]

    def to_toml_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "key": str(self.key),
            "roster": str(self.roster),
            "role": self.role,
            "state_db": str(self.state_db),
            "listen": self.listen,
            "collector_url": self.collector_url,
            "audit": self.audit.to_dict(),
            "timeouts": asdict(self.timeouts),
            "query_set": self.query_set or None,
            "backend": self.backend or None,
            "verify": self.verify.to_dict() if self.verify.enabled else None,
            "method": self.method,
            # always written: a file without it declares the default K
            "max_liars": self.max_liars,
            "attack": self.attack,
            "attack_context": self.attack_context or None,
        }

    def write(self, path: str | os.PathLike[str], *, private: bool = False) -> Path:
        """Write the node file (atomically; never through a symbolic link; ``private``: 0600)."""
        from fairprobe._io import write_file

        doc = {k: v for k, v in self.to_toml_dict().items() if v is not None}
        return write_file(path, _toml.dumps(doc), what="node file", private=private)

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any], base: Path | None = None) -> NodeConfig:
        base = base or Path.cwd()
        for k in ("id", "key", "roster", "state_db"):
            if not isinstance(doc.get(k), str):
                raise ConfigError(f"The node file must set {k} = \"...\".")

        def path(k: str) -> Path:
            p = Path(doc[k]).expanduser()
            return p if p.is_absolute() else (base / p).resolve()

        # a key a table leaves out takes its record's default: the defaults live on the records
        a = _section(doc, "audit", AuditConfig)
        t = _section(doc, "timeouts", TimeoutConfig)
        audit = AuditConfig(
            n=_num(a, "n", AuditConfig.n, int, "[audit]"),
            rounds=_num(a, "rounds", AuditConfig.rounds, int, "[audit]"),
            tau=_num(a, "tau", AuditConfig.tau, float, "[audit]"),
            z_max=_num(a, "z_max", AuditConfig.z_max, float, "[audit]"),
            replacement=bool(a.get("replacement", AuditConfig.replacement)),
            seed=_num(a, "seed", AuditConfig.seed, int, "[audit]"),
            closing=_num(a, "closing", AuditConfig.closing, int, "[audit]"),
            label=a.get("label", AuditConfig.label),
        )
        timeouts = TimeoutConfig(
            round=_num(t, "round", TimeoutConfig.round, float, "[timeouts]"),
            request=_num(t, "request", TimeoutConfig.request, float, "[timeouts]"),
            finish=_num(t, "finish", TimeoutConfig.finish, float, "[timeouts]"),
        )
        vs = _section(doc, "verify", VerifyNodeConfig)
        if not isinstance(vs.get("enabled", VerifyNodeConfig.enabled), bool):
            raise ConfigError("[verify] enabled must be true or false.")
        verify = VerifyNodeConfig(
            enabled=bool(vs.get("enabled", VerifyNodeConfig.enabled)),
            rate=_num(vs, "rate", VerifyNodeConfig.rate, float, "[verify]"),
            records=str(vs.get("records", VerifyNodeConfig.records)),
            answers=str(vs.get("answers", VerifyNodeConfig.answers)),
            proof_cap=vs.get("proof_cap", VerifyNodeConfig.proof_cap),
        )
        method = doc.get("method", "bounded")
        attack = doc.get("attack", "adaptive")
        for k, v in (("method", method), ("attack", attack)):
            if not isinstance(v, str):
                raise ConfigError(f"{k} must be a string. Got {v!r}.")
        qs = _section(doc, "query_set")
        be = _section(doc, "backend")
        for sec in (qs, be):
            for k in ("path", "cache"):
                if isinstance(sec.get(k), str) and not Path(sec[k]).is_absolute():
                    sec[k] = str((base / sec[k]).resolve())
        known = {
            "id", "key", "roster", "state_db", "role", "listen", "collector_url",
            "audit", "timeouts", "query_set", "backend", "verify", "method", "attack",
            "attack_context", "max_liars",
        }
        unknown = set(doc) - known
        if unknown:
            raise ConfigError(f"The node file has unknown keys {sorted(unknown)}.")
        try:
            return cls(
                id=str(doc["id"]),
                key=path("key"),
                roster=path("roster"),
                state_db=path("state_db"),
                role=str(doc.get("role", "honest")),
                listen=doc.get("listen"),
                collector_url=doc.get("collector_url") or None,
                audit=audit,
                timeouts=timeouts,
                query_set=qs,
                backend=be,
                verify=verify,
                method=method,
                max_liars=doc.get("max_liars", DEFAULT_MAX_LIARS),
                attack=attack,
                attack_context=_section(doc, "attack_context"),
            )
        except InvalidParameterError as exc:
            raise ConfigError(str(exc)) from None


def load_node_config(path: str | os.PathLike[str]) -> NodeConfig:
    """Read and check ``node.toml``; relative paths in it are relative to its directory."""
    p = Path(path)
    doc = _toml.load(p, "node file")
    cfg = NodeConfig.from_dict(doc, base=p.resolve().parent)
    object.__setattr__(cfg, "source", p.resolve())
    return cfg
