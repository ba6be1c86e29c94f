"""Keys, canonical entry bytes, roster and node-config parsing."""

from __future__ import annotations

import base64
import os
import stat
import struct

import pytest

from fairprobe.collab.net.config import NodeConfig, load_node_config
from fairprobe.collab.net.keys import (
    ENTRY_TAG,
    Ed25519Signer,
    entry_bytes,
    generate_keypair,
    load_private_key,
)
from fairprobe.collab.net.roster import Member, Roster, load_roster, parse_address
from fairprobe.errors import ConfigError, ProtocolError


def test_keygen_writes_private_key_0600_and_refuses_overwrite(tmp_path):
    kp = generate_keypair(tmp_path / "k")
    assert stat.S_IMODE(os.stat(kp.private_path).st_mode) == 0o600
    assert len(base64.b64decode(kp.public_key_b64)) == 32
    assert kp.public_path.read_text().strip() == kp.public_key_b64
    with pytest.raises(ConfigError, match="already exists"):
        generate_keypair(tmp_path / "k")
    kp2 = generate_keypair(tmp_path / "k", force=True)
    assert kp2.public_key_b64 != kp.public_key_b64


def test_load_private_key_refuses_world_readable(tmp_path):
    kp = generate_keypair(tmp_path)
    os.chmod(kp.private_path, 0o644)
    with pytest.raises(ConfigError, match="chmod 600"):
        load_private_key(kp.private_path)


def test_entry_bytes_layout_is_fixed():
    b = entry_bytes("a1", 3, 1, 2, 3, 4)
    assert b == ENTRY_TAG + b"\x00\x02a1" + struct.pack(">5Q", 3, 1, 2, 3, 4)
    # every field is bound: changing any one changes the bytes
    variants = {entry_bytes("a1", *v) for v in [(3, 1, 2, 3, 4), (4, 1, 2, 3, 4), (3, 2, 2, 3, 4),
                                                (3, 1, 3, 3, 4), (3, 1, 2, 4, 4), (3, 1, 2, 3, 5)]}
    assert len(variants) == 6
    assert entry_bytes("a1", 3, 1, 2, 3, 4) != entry_bytes("a2", 3, 1, 2, 3, 4)
    with pytest.raises(ProtocolError):
        entry_bytes("a1", 3, -1, 2, 3, 4)


def test_sign_verify_roundtrip_and_forgery(tmp_path):
    kp1 = generate_keypair(tmp_path / "1")
    kp2 = generate_keypair(tmp_path / "2")
    s1 = Ed25519Signer("a1", load_private_key(kp1.private_path))
    s2 = Ed25519Signer("a2", load_private_key(kp2.private_path))
    roster = Roster((
        Member("a1", kp1.public_key_b64, "127.0.0.1", 9001, ("a2",)),
        Member("a2", kp2.public_key_b64, "127.0.0.1", 9002, ("a1",)),
    ))
    v = roster.verifier()
    sig = s1.sign_entry(2, 5, 10, 3, 8)
    assert v.verify_entry("a1", 2, 5, 10, 3, 8, sig)
    assert not v.verify_entry("a1", 2, 5, 10, 3, 9, sig)          # tampered counts
    assert not v.verify_entry("a1", 3, 5, 10, 3, 8, sig)          # tampered round
    assert not v.verify_entry("a2", 2, 5, 10, 3, 8, sig)          # claimed by another auditor
    forged = s2.sign(entry_bytes("a1", 2, 5, 10, 3, 8))           # a2 signs for a1
    assert not v.verify_entry("a1", 2, 5, 10, 3, 8, forged)
    assert not v.verify_entry("zz", 2, 5, 10, 3, 8, sig)          # unknown auditor
    assert not v.verify_entry("a1", 2, 5, 10, 3, 8, sig[:63])     # truncated


def _roster_doc(keys, edges, addr=lambda i: f"127.0.0.1:{9100 + i}"):
    ids = [f"a{i}" for i in range(len(keys))]
    nb = {i: [] for i in ids}
    for u, w in edges:
        nb[ids[u]].append(ids[w])
        nb[ids[w]].append(ids[u])
    return {
        "network": {"name": "t"},
        "auditor": [
            {"id": ids[i], "public_key": k, "address": addr(i), "neighbours": nb[ids[i]]}
            for i, k in enumerate(keys)
        ],
    }


@pytest.fixture(scope="module")
def three_keys(tmp_path_factory):
    d = tmp_path_factory.mktemp("keys")
    return [generate_keypair(d / str(i)).public_key_b64 for i in range(3)]


def test_roster_roundtrip(tmp_path, three_keys):
    r = Roster.from_dict(_roster_doc(three_keys, [(0, 1), (1, 2)]))
    p = r.write(tmp_path / "roster.toml")
    r2 = load_roster(p)
    assert r2 == r and r2.member("a1").neighbours == ("a0", "a2")
    assert r2.member("a2").url == "http://127.0.0.1:9102"


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda d: d["auditor"][0]["neighbours"].append("a2"), "undirected"),
        (lambda d: d["auditor"][0]["neighbours"].append("zz"), "unknown neighbour"),
        (lambda d: d["auditor"][0]["neighbours"].append("a0"), "itself"),
        (lambda d: d["auditor"][1].update(id="a0"), "twice"),
        (lambda d: d["auditor"][1].update(public_key=d["auditor"][0]["public_key"]), "shares"),
        (lambda d: d["auditor"][1].update(public_key="bm90IGEga2V5"), "32 bytes"),
        (lambda d: d["auditor"][1].update(address="10.0.0.1:9000"), "not on 127.0.0.1"),
        (lambda d: d["auditor"][1].update(address="127.0.0.1:0"), "port"),
        (lambda d: d["auditor"][1].update(address=d["auditor"][0]["address"]), "share an address"),
        (lambda d: d["auditor"][1].pop("neighbours"), "misses"),
        (lambda d: d["auditor"][1].update(id="bad id!"), "auditor id"),
    ],
)
def test_roster_rejects_bad_files(three_keys, mutate, match):
    d = _roster_doc(three_keys, [(0, 1), (1, 2)])
    mutate(d)
    with pytest.raises(ConfigError, match=match):
        Roster.from_dict(d)


def test_roster_must_be_connected(three_keys):
    with pytest.raises(ConfigError, match="not connected"):
        Roster.from_dict(_roster_doc(three_keys, [(0, 1)]))


def test_parse_address():
    assert parse_address("localhost:80") == ("127.0.0.1", 80)
    assert parse_address("10.1.2.3:80", allow_remote=True) == ("10.1.2.3", 80)
    for bad in ["127.0.0.1", "127.0.0.1:x", "127.0.0.1:70000", ":80"]:
        with pytest.raises(ConfigError):
            parse_address(bad, allow_remote=True)


def test_node_config_roundtrip_and_errors(tmp_path):
    cfg = NodeConfig.from_dict(
        {
            "id": "a0",
            "key": "k/node.key",
            "roster": "roster.toml",
            "state_db": "s.sqlite",
            "role": "attacker",
            "audit": {"n": 50, "rounds": 4, "seed": 3},
            "timeouts": {"round": 5},
        },
        base=tmp_path,
    )
    assert cfg.key == (tmp_path / "k/node.key").resolve() and cfg.audit.n == 50
    p = cfg.write(tmp_path / "node.toml")
    cfg2 = load_node_config(p)
    assert cfg2.audit == cfg.audit and cfg2.timeouts == cfg.timeouts and cfg2.role == "attacker"
    assert cfg2.fingerprint() == cfg.fingerprint()
    base = {"id": "a0", "key": "k", "roster": "r", "state_db": "s", "role": "attacker"}
    for extra, match in [
        ({"role": "spy"}, "role"),
        ({"audit": {"n": 0}}, "n must"),
        ({"audit": {"rounds": "3"}}, "rounds must"),
        ({"audit": {"bogus": 1}}, "unknown keys"),
        ({"timeouts": {"round": -1.0}}, "round must"),
        ({"collector_url": "ftp://x"}, "collector_url"),
        ({"role": "honest"}, "query_set"),
        ({"colour": "red"}, "unknown keys"),
    ]:
        with pytest.raises(ConfigError, match=match):
            NodeConfig.from_dict({**base, **extra}, base=tmp_path)
    (tmp_path / "bad.toml").write_text("id = [")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_node_config(tmp_path / "bad.toml")


def test_keygen_modes_are_explicit_whatever_the_umask(tmp_path):
    old = os.umask(0)
    try:
        kp = generate_keypair(tmp_path / "wide" / "k")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "wide" / "k").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(kp.private_path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(kp.public_path).st_mode) == 0o644
    old = os.umask(0o077)
    try:
        kp = generate_keypair(tmp_path / "narrow", force=True)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(kp.public_path).st_mode) == 0o644


def test_keygen_refuses_symlinks_and_a_directory_others_can_write(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    d = tmp_path / "k"
    d.mkdir(mode=0o700)
    (d / "node.pub").symlink_to(victim)
    with pytest.raises(ConfigError, match="symbolic link"):
        generate_keypair(d)
    assert victim.read_text() == "keep me\n" and not (d / "node.key").exists()
    (d / "node.pub").unlink()
    (d / "node.key").symlink_to(victim)
    with pytest.raises(ConfigError, match="symbolic link"):
        generate_keypair(d, force=True)
    assert victim.read_text() == "keep me\n"
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    with pytest.raises(ConfigError, match="symbolic link"):
        generate_keypair(tmp_path / "link")
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    with pytest.raises(ConfigError, match="writable by others"):
        generate_keypair(shared)
