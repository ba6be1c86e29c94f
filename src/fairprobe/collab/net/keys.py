"""Ed25519 keys, the canonical bytes of a signed entry, and the signer / verifier of a node.

Each auditor signs its own counts vector together with the round that produced it
(``collaborative-auditing-auditopus.md``, Section III-B: "Each auditor digitally signs its own LAS
vector together with the round in which it produced it, and auditors relay these signed entries
unchanged"). The signed message is :func:`entry_bytes`: a fixed domain tag, the auditor id and the
five integers ``(round, a, A, b, B)`` as big-endian unsigned 64-bit words. Nothing else is signed,
so an entry relayed by any number of hops verifies against its author's public key alone.

Table messages between neighbours carry a second signature, by the sender, over
:func:`envelope_bytes` (sender, receiver, round and a digest of the entries), so that nobody but a
neighbour can fill the slot "neighbour ``u``'s table of round ``t``" a node waits for.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from fairprobe.errors import ConfigError, ProtocolError

__all__ = [
    "AUDITOR_ID_RE",
    "Ed25519Signer",
    "Ed25519Verifier",
    "KeyPair",
    "check_auditor_id",
    "entry_bytes",
    "envelope_bytes",
    "generate_keypair",
    "load_private_key",
    "public_key_from_b64",
    "public_key_to_b64",
]

ENTRY_TAG = b"fairprobe/collab/entry/v1\x00"
ENVELOPE_TAG = b"fairprobe/collab/table/v1\x00"
AUDITOR_ID_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_U64 = (1 << 64) - 1
PRIVATE_KEY_FILE = "node.key"
PUBLIC_KEY_FILE = "node.pub"


def check_auditor_id(auditor_id: str) -> str:
    """Return ``auditor_id`` if it is 1-64 characters of ``[A-Za-z0-9_.-]``, else raise."""
    if not isinstance(auditor_id, str) or not AUDITOR_ID_RE.match(auditor_id):
        raise ConfigError(
            f"An auditor id must be 1-64 characters of letters, digits, '_', '.', '-'. "
            f"Got {auditor_id!r} instead."
        )
    return auditor_id


def _lp(s: str) -> bytes:
    raw = s.encode("utf-8")
    return struct.pack(">H", len(raw)) + raw


def entry_bytes(auditor: str, round_: int, a: int, A: int, b: int, B: int) -> bytes:
    """Canonical bytes of an entry ``(auditor, round, a, A, b, B)``: what its author signs.

    ``ENTRY_TAG || len(id) (u16) || id (UTF-8) || round || a || A || b || B`` (u64 big-endian
    each). Raises :class:`ProtocolError` for a value outside ``[0, 2**64)``: such an entry cannot
    be signed, hence never verifies.
    """
    values = (round_, a, A, b, B)
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int) or v < 0 or v > _U64:
            raise ProtocolError(f"Entry fields must be integers in [0, 2**64). Got {values}.")
    return ENTRY_TAG + _lp(auditor) + struct.pack(">5Q", *values)


def envelope_bytes(sender: str, receiver: str, round_: int, entries: Iterable[bytes]) -> bytes:
    """Bytes the sender of a table signs: tag, sender, receiver, round, SHA-256 of the entries.

    ``entries`` are the canonical bytes of each entry followed by its signature, in message order.
    """
    h = hashlib.sha256()
    for e in entries:
        h.update(struct.pack(">I", len(e)))
        h.update(e)
    return ENVELOPE_TAG + _lp(sender) + _lp(receiver) + struct.pack(">Q", round_) + h.digest()


def public_key_to_b64(key: Ed25519PublicKey) -> str:
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return base64.b64encode(raw).decode("ascii")


def public_key_from_b64(text: str) -> Ed25519PublicKey:
    """Parse a base64 raw 32-byte Ed25519 public key (the roster's ``public_key``)."""
    try:
        raw = base64.b64decode(text, validate=True)
        if len(raw) != 32:
            raise ValueError("length")
        return Ed25519PublicKey.from_public_bytes(raw)
    except (ValueError, TypeError) as exc:
        raise ConfigError(
            f"A public key must be 32 bytes in base64 (as printed by `fairprobe node keygen`). "
            f"Got {text!r}."
        ) from exc


@dataclass(frozen=True)
class KeyPair:
    """Paths of a generated key pair and the public key in base64 (for the roster)."""

    private_path: Path
    public_path: Path
    public_key_b64: str

    def to_dict(self) -> dict[str, str]:
        return {
            "private_key": str(self.private_path),
            "public_key_file": str(self.public_path),
            "public_key": self.public_key_b64,
        }


def _refuse_symlink(p: Path, what: str) -> None:
    if p.is_symlink():
        raise ConfigError(
            f"{what} {p} is a symbolic link; give a real path (a key is never written through "
            "a link)."
        )


def _write_new(path: Path, data: bytes, mode: int) -> None:
    """Create ``path`` with exactly ``mode`` (whatever the umask), never through a symlink."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, mode)
    except FileExistsError:
        raise ConfigError(f"{path} appeared while writing the key pair; try again.") from None
    except OSError as exc:
        raise ConfigError(f"Cannot write {path}: {exc.strerror}.") from None
    try:
        os.fchmod(fd, mode)  # the umask may have narrowed (or a filesystem widened) the mode
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
    except OSError as exc:
        raise ConfigError(f"Cannot write {path}: {exc.strerror}.") from None


def generate_keypair(
    out_dir: str | os.PathLike[str], *, force: bool = False, secret: bytes | None = None
) -> KeyPair:
    """Write a new Ed25519 key pair to ``out_dir``: ``node.key`` (PKCS#8 PEM) and ``node.pub``
    (the base64 raw public key, one line).

    Modes are explicit, whatever the umask: the directory ``0700`` (when created here; an
    existing one must not be writable by group or others), ``node.key`` ``0600``, ``node.pub``
    ``0644``. Symbolic links are refused for the directory and both files. Refuses to overwrite
    an existing private key unless ``force``. ``secret`` (32 bytes) derives the key instead of
    drawing it: only for demo and test networks that must be reproducible from a seed.
    """
    out = Path(out_dir)
    _refuse_symlink(out, "Key directory")
    try:
        if not out.exists():
            out.mkdir(parents=True, mode=0o700)
            os.chmod(out, 0o700)  # mkdir's mode is filtered by the umask
        elif not out.is_dir():
            raise ConfigError(f"Key directory {out} exists and is not a directory.")
        st = out.stat()
    except OSError as exc:
        raise ConfigError(f"Cannot create key directory {out}: {exc.strerror}.") from exc
    if st.st_mode & 0o022:
        raise ConfigError(
            f"Key directory {out} is writable by others (mode {st.st_mode & 0o777:o}); "
            f"run `chmod 700 {out}` or use another directory."
        )
    priv_path = out / PRIVATE_KEY_FILE
    pub_path = out / PUBLIC_KEY_FILE
    for p, what in ((priv_path, "Private key"), (pub_path, "Public key file")):
        _refuse_symlink(p, what)
    if priv_path.exists() and not force:
        raise ConfigError(f"{priv_path} already exists; pass --force to replace it.")
    if secret is None:
        key = Ed25519PrivateKey.generate()
    else:
        if len(secret) != 32:
            raise ConfigError("A key secret is 32 bytes.")
        key = Ed25519PrivateKey.from_private_bytes(secret)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    for p in (priv_path, pub_path):
        if p.exists():
            p.unlink()
    _write_new(priv_path, pem, 0o600)
    pub_b64 = public_key_to_b64(key.public_key())
    _write_new(pub_path, (pub_b64 + "\n").encode("ascii"), 0o644)
    return KeyPair(priv_path, pub_path, pub_b64)


def load_private_key(path: str | os.PathLike[str]) -> Ed25519PrivateKey:
    """Load a PKCS#8 PEM Ed25519 private key; refuse one readable by group or others."""
    p = Path(path)
    try:
        mode = p.stat().st_mode & 0o777
        data = p.read_bytes()
    except OSError as exc:
        raise ConfigError(f"Cannot read private key {p}: {exc.strerror}.") from exc
    if mode & 0o077:
        raise ConfigError(
            f"Private key {p} is readable by others (mode {mode:o}); run `chmod 600 {p}`."
        )
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{p} is not an unencrypted PEM private key.") from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise ConfigError(f"{p} is not an Ed25519 private key.")
    return key


#: Prefix of every message signed within an audit (``context``: the audit id).
AUDIT_TAG = b"fairprobe/collab/audit/v1\x00"


def bind_audit(context: bytes, message: bytes) -> bytes:
    """The bytes actually signed: ``AUDIT_TAG || len(context) (u16) || context || message``
    (``message`` itself when there is no audit context, as in the simulator)."""
    if not context:
        return message
    return AUDIT_TAG + struct.pack(">H", len(context)) + context + message


class Ed25519Signer:
    """Signs entries and table envelopes with one auditor's private key.

    ``context`` (the audit id, :func:`fairprobe.collab.net.node.audit_id`) is bound into every
    signature (:func:`bind_audit`): nothing signed in one audit verifies in another."""

    def __init__(self, auditor_id: str, key: Ed25519PrivateKey, *, context: bytes = b"") -> None:
        self.auditor_id = check_auditor_id(auditor_id)
        self._key = key
        self.context = bytes(context)

    @property
    def public_key_b64(self) -> str:
        return public_key_to_b64(self._key.public_key())

    def sign(self, message: bytes) -> bytes:
        return self._key.sign(bind_audit(self.context, message))

    def sign_entry(self, round_: int, a: int, A: int, b: int, B: int) -> bytes:
        return self.sign(entry_bytes(self.auditor_id, round_, a, A, b, B))


class Ed25519Verifier:
    """Verifies signatures against the public keys of a roster (auditor id -> key)."""

    def __init__(
        self, public_keys: Mapping[str, Ed25519PublicKey], *, context: bytes = b""
    ) -> None:
        self._keys = dict(public_keys)
        self.context = bytes(context)

    def knows(self, auditor_id: str) -> bool:
        return auditor_id in self._keys

    def verify(self, auditor_id: str, message: bytes, signature: bytes) -> bool:
        """True iff ``signature`` is ``auditor_id``'s valid Ed25519 signature of ``message``."""
        key = self._keys.get(auditor_id)
        if key is None or len(signature) != 64:
            return False
        try:
            key.verify(signature, bind_audit(self.context, message))
        except InvalidSignature:
            return False
        return True

    def verify_entry(
        self, auditor: str, round_: int, a: int, A: int, b: int, B: int, signature: bytes
    ) -> bool:
        try:
            msg = entry_bytes(auditor, round_, a, A, b, B)
        except ProtocolError:
            return False
        return self.verify(auditor, msg, signature)
