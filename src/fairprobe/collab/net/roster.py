"""The roster of a permissioned auditor network: who may take part, their keys, addresses and links.

The network of ``collaborative-auditing-auditopus.md`` (Section III-B) is permissioned and static:
"Auditors are approved before joining and know each other's identities" and communicate over "a
static, connected graph". The roster is that agreement, one TOML file shared by all auditors::

    [network]
    name = "bios-moderate-demo"

    [[auditor]]
    id = "a00"
    public_key = "base64 of the 32-byte Ed25519 public key"
    address = "127.0.0.1:8001"
    neighbours = ["a03", "a07"]

The graph must be undirected (``j`` lists ``i`` whenever ``i`` lists ``j``) and connected. Addresses
must be on 127.0.0.1 unless ``[network] allow_remote = true``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from fairprobe.collab.net import _toml
from fairprobe.collab.net.keys import (
    Ed25519Verifier,
    check_auditor_id,
    public_key_from_b64,
)
from fairprobe.errors import ConfigError

__all__ = ["Member", "Roster", "load_roster", "parse_address"]

LOOPBACK = ("127.0.0.1", "localhost")


def parse_address(text: str, *, allow_remote: bool = False) -> tuple[str, int]:
    """Split ``host:port``; the host must be 127.0.0.1 unless ``allow_remote``."""
    if not isinstance(text, str) or text.count(":") != 1:
        raise ConfigError(f"An address must read host:port (e.g. 127.0.0.1:8001). Got {text!r}.")
    host, port_s = text.split(":")
    try:
        port = int(port_s)
    except ValueError:
        port = -1
    if not 1 <= port <= 65535:
        raise ConfigError(f"The port of address {text!r} must be an int in [1, 65535].")
    if host == "localhost":
        host = "127.0.0.1"
    if not allow_remote and host not in LOOPBACK:
        raise ConfigError(
            f"Address {text!r} is not on 127.0.0.1; set allow_remote = true in [network] "
            "to run across hosts."
        )
    if not host:
        raise ConfigError(f"The host of address {text!r} is empty.")
    return host, port


@dataclass(frozen=True)
class Member:
    """One auditor of the roster."""

    id: str
    public_key_b64: str
    host: str
    port: int
    neighbours: tuple[str, ...]

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "public_key": self.public_key_b64,
            "address": self.address,
            "neighbours": list(self.neighbours),
        }


@dataclass(frozen=True)
class Roster:
    """The members of the network, in roster order, and the graph between them."""

    members: tuple[Member, ...]
    name: str = "fairprobe-collab"
    allow_remote: bool = False
    _by_id: dict[str, Member] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_id: dict[str, Member] = {}
        for m in self.members:
            check_auditor_id(m.id)
            if m.id in by_id:
                raise ConfigError(f"The roster lists auditor {m.id!r} twice.")
            by_id[m.id] = m
        if not by_id:
            raise ConfigError("The roster lists no auditor.")
        keys = set()
        for m in self.members:
            public_key_from_b64(m.public_key_b64)
            if m.public_key_b64 in keys:
                raise ConfigError(f"Auditor {m.id!r} shares its public key with another auditor.")
            keys.add(m.public_key_b64)
            for u in m.neighbours:
                if u == m.id:
                    raise ConfigError(f"Auditor {m.id!r} lists itself as a neighbour.")
                if u not in by_id:
                    raise ConfigError(f"Auditor {m.id!r} lists unknown neighbour {u!r}.")
                if m.id not in by_id[u].neighbours:
                    raise ConfigError(
                        f"The graph must be undirected: {m.id!r} lists {u!r} but {u!r} does not "
                        f"list {m.id!r}."
                    )
            if len(set(m.neighbours)) != len(m.neighbours):
                raise ConfigError(f"Auditor {m.id!r} lists a neighbour twice.")
        addresses = [m.address for m in self.members]
        if len(set(addresses)) != len(addresses):
            raise ConfigError("Two auditors of the roster share an address.")
        if len(by_id) > 1:
            seen = {self.members[0].id}
            stack = [self.members[0].id]
            while stack:
                for u in by_id[stack.pop()].neighbours:
                    if u not in seen:
                        seen.add(u)
                        stack.append(u)
            if len(seen) != len(by_id):
                raise ConfigError(
                    f"The roster's graph is not connected ({len(seen)} of {len(by_id)} auditors "
                    f"reachable from {self.members[0].id!r})."
                )
        object.__setattr__(self, "_by_id", by_id)

    @property
    def ids(self) -> list[str]:
        return [m.id for m in self.members]

    def __len__(self) -> int:
        return len(self.members)

    def __contains__(self, auditor_id: object) -> bool:
        return auditor_id in self._by_id

    def member(self, auditor_id: str) -> Member:
        try:
            return self._by_id[auditor_id]
        except KeyError:
            raise ConfigError(f"Auditor {auditor_id!r} is not in the roster.") from None

    def index(self, auditor_id: str) -> int:
        return self.ids.index(auditor_id)

    def public_keys(self) -> dict[str, Ed25519PublicKey]:
        return {m.id: public_key_from_b64(m.public_key_b64) for m in self.members}

    def verifier(self, context: bytes = b"") -> Ed25519Verifier:
        """A verifier of this roster's keys; ``context``: the audit id bound into signatures."""
        return Ed25519Verifier(self.public_keys(), context=context)

    def to_dict(self) -> dict[str, Any]:
        return {
            "network": {"name": self.name, "allow_remote": self.allow_remote},
            "auditor": [m.to_dict() for m in self.members],
        }

    def dumps(self) -> str:
        return _toml.dumps(self.to_dict())

    def write(self, path: str | os.PathLike[str], *, private: bool = False) -> Path:
        """Write the roster (atomically; never through a symbolic link; ``private``: 0600)."""
        from fairprobe._io import write_file

        return write_file(path, self.dumps(), what="roster file", private=private)

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> Roster:
        net = doc.get("network", {})
        if not isinstance(net, Mapping):
            raise ConfigError("[network] of the roster must be a table.")
        allow_remote = bool(net.get("allow_remote", False))
        name = str(net.get("name", "fairprobe-collab"))
        raw = doc.get("auditor")
        if not isinstance(raw, list) or not raw:
            raise ConfigError("The roster must hold at least one [[auditor]] table.")
        members = []
        for i, m in enumerate(raw):
            if not isinstance(m, Mapping):
                raise ConfigError(f"[[auditor]] number {i + 1} of the roster is not a table.")
            missing = {"id", "public_key", "address", "neighbours"} - set(m)
            if missing:
                raise ConfigError(
                    f"[[auditor]] number {i + 1} of the roster misses {sorted(missing)}."
                )
            nb = m["neighbours"]
            if not isinstance(nb, Sequence) or isinstance(nb, str):
                raise ConfigError(f"neighbours of auditor {m['id']!r} must be a list of ids.")
            host, port = parse_address(m["address"], allow_remote=allow_remote)
            members.append(
                Member(
                    id=check_auditor_id(m["id"]),
                    public_key_b64=str(m["public_key"]),
                    host=host,
                    port=port,
                    neighbours=tuple(str(u) for u in nb),
                )
            )
        return cls(tuple(members), name=name, allow_remote=allow_remote)


def load_roster(path: str | os.PathLike[str]) -> Roster:
    """Read and check a roster file."""
    p = Path(path)
    doc = _toml.load(p, "roster")
    return Roster.from_dict(doc)
