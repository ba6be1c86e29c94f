"""``fairprobe node keygen``, ``node run`` and ``collab demo``: outputs and one-line errors."""

from __future__ import annotations

import json
import os
import stat

import pytest

from fairprobe.cli.main import main


def run(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def test_keygen(tmp_path, capsys):
    code, out, err = run(["node", "keygen", "--out", str(tmp_path / "k")], capsys)
    assert code == 0, err
    d = json.loads(out)
    assert stat.S_IMODE(os.stat(d["private_key"]).st_mode) == 0o600
    assert (tmp_path / "k" / "node.pub").read_text().strip() == d["public_key"]
    code, out, err = run(["node", "keygen", "--out", str(tmp_path / "k")], capsys)
    assert code != 0 and err.startswith("error: ") and "--force" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["node", "run", "--config", "/nonexistent/node.toml"], "Cannot read node file"),
        (["collab", "demo", "--honest", "0"], "'honest' parameter"),
        (["collab", "demo", "--honest", "3", "--attackers", "-1"], "'attackers' parameter"),
        (["collab", "demo", "--honest", "3", "--case", "nope"], "'case' parameter"),
        (["collab", "demo", "--honest", "3", "--attack", "nope"], "'attack' parameter"),
        (["collab", "demo", "--honest", "3", "--method", "nope"], "'method' parameter"),
        (["collab", "demo", "--honest", "3", "--verify-rate", "2"], "'verify_rate' parameter"),
        (["collab", "demo", "--honest", "3", "--verify", "--verify-records", "some"],
         "'verify_records' parameter"),
        (["collab", "demo", "--honest", "3", "--attack", "consistent", "--platform",
          "http://127.0.0.1:9"], "use --attack adaptive"),
    ],
)
def test_bad_input_is_one_error_line(argv, needle, capsys):
    code, out, err = run(argv, capsys)
    assert code != 0
    assert err.startswith("error: ") and needle in err, err
    assert len(err.strip().splitlines()) == 1


def test_node_run_refuses_a_key_that_is_not_in_the_roster(tmp_path, capsys):
    from fairprobe.collab.net.config import NodeConfig
    from fairprobe.collab.net.keys import generate_keypair
    from fairprobe.collab.net.roster import Member, Roster

    k1 = generate_keypair(tmp_path / "k1")
    k2 = generate_keypair(tmp_path / "k2")
    roster = Roster((
        Member("a0", k1.public_key_b64, "127.0.0.1", 9301, ("a1",)),
        Member("a1", k2.public_key_b64, "127.0.0.1", 9302, ("a0",)),
    ))
    rp = roster.write(tmp_path / "roster.toml")
    cfg = NodeConfig(id="a0", key=k2.private_path, roster=rp, state_db=tmp_path / "s.sqlite",
                     role="attacker")
    p = cfg.write(tmp_path / "node.toml")
    code, out, err = run(["node", "run", "--config", str(p)], capsys)
    assert code != 0 and "does not match the public key" in err


def _two_node_files(tmp_path, **qs):
    from fairprobe.collab.net.config import AuditConfig, NodeConfig
    from fairprobe.collab.net.keys import generate_keypair
    from fairprobe.collab.net.roster import Member, Roster

    k1 = generate_keypair(tmp_path / "k1")
    k2 = generate_keypair(tmp_path / "k2")
    roster = Roster((
        Member("a0", k1.public_key_b64, "127.0.0.1", 9301, ("a1",)),
        Member("a1", k2.public_key_b64, "127.0.0.1", 9302, ("a0",)),
    ))
    rp = roster.write(tmp_path / "roster.toml")
    cfg = NodeConfig(
        id="a0", key=k1.private_path, roster=rp, state_db=tmp_path / "s.sqlite",
        audit=AuditConfig(n=50, rounds=2),
        query_set={"kind": "population", "case": "civil-near-fair", "honest": 3, "alpha": 1.0,
                   "seed": 0, **qs},
        backend={"kind": "population", "case": "civil-near-fair"},
    )
    return cfg.write(tmp_path / "node.toml"), rp


@pytest.mark.parametrize("index", [3, 99, -1])
def test_query_set_index_out_of_range_says_what_to_fix(tmp_path, capsys, index):
    p, _ = _two_node_files(tmp_path, index=index)
    code, out, err = run(["node", "run", "--config", str(p)], capsys)
    assert code != 0 and err.startswith("error: ") and "unexpected" not in err, err
    assert "[query_set] index must be an int in [0, 2]" in err
    assert len(err.strip().splitlines()) == 1


def test_bad_utf8_in_node_and_roster_files_says_what_to_fix(tmp_path, capsys):
    p, rp = _two_node_files(tmp_path, index=0)
    good = p.read_bytes()
    p.write_bytes(good.replace(b'id = "a0"', b'id = "a0\xff"'))
    code, out, err = run(["node", "run", "--config", str(p)], capsys)
    assert code != 0 and "is not UTF-8 text" in err and "save it as UTF-8" in err, err
    assert "unexpected" not in err and len(err.strip().splitlines()) == 1
    p.write_bytes(good)
    rp.write_bytes(rp.read_bytes() + b"\n# \xc3\x28\n")
    code, out, err = run(["node", "run", "--config", str(p)], capsys)
    assert code != 0 and "Roster" in err and "is not UTF-8 text" in err, err
