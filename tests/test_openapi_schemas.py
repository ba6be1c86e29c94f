"""Schemathesis, every check (``--checks all``, both generation modes),
against the platform server and an auditor node, real processes on 127.0.0.1. The served
OpenAPI schemas say exactly what each endpoint answers: a schema-valid request is answered
(ST202), every status and content type is documented (ST103, ST105), a schema-violating request
is refused (ST201; 408/411/413/415 count as refusals, ``schemathesis.toml``).

main: ``instances: []`` and ``messages: []`` were schema-valid but refused; 400/404/422 were
undocumented; the node's schema allowed signatures, addresses and integers it refuses.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("schemathesis")

ROOT = Path(__file__).resolve().parents[1]
#: Examples per operation and phase: about 500 generated requests per server, 10-20 s each.
EXAMPLES = 25


def _st(url: str) -> tuple[int, str, int]:
    exe = shutil.which("schemathesis", path=str(Path(sys.executable).parent)) or "schemathesis"
    r = subprocess.run(
        [exe, "--config-file", str(ROOT / "schemathesis.toml"), "--no-color", "run",
         url + "/openapi.json", "--checks", "all", "--max-examples", str(EXAMPLES),
         "--seed", "23"],
        capture_output=True, text=True, timeout=600, cwd=ROOT)
    m = re.search(r"(\d+) generated", r.stdout)
    return r.returncode, r.stdout[-4000:], int(m.group(1)) if m else 0


def test_platform_schema_has_no_schemathesis_failure() -> None:
    from fairprobe.platform.process import PlatformProcess

    with PlatformProcess(seed=5) as p:
        code, out, n = _st(p.url)
    assert code == 0 and n > 300, out


def test_platform_schema_with_reasoning_has_no_schemathesis_failure() -> None:
    from fairprobe.platform.process import PlatformProcess

    with PlatformProcess(seed=5, llm_reasoning="field") as p:
        code, out, n = _st(p.url)
    assert code == 0 and n > 300, out


def test_node_schema_has_no_schemathesis_failure(tmp_path: Path) -> None:
    from fairprobe.collab.net.launcher import DemoSpec, LocalNetwork

    spec = DemoSpec(honest=2, attackers=0, seed=0, case="civil-near-fair", n=300, rounds=3,
                    round_timeout=280, request_timeout=1.0, verify=True)
    with LocalNetwork(spec, tmp_path) as net:
        net.write()
        net.start(["a00"])  # a01 never starts: a00 serves while it waits in round 1
        t0 = time.monotonic()
        while net.status("a00") is None:
            assert time.monotonic() - t0 < 60, net.procs["a00"].log.read_text()[-2000:]
            time.sleep(0.1)
        code, out, n = _st(net.roster.member("a00").url)
        assert net.status("a00") is not None
        assert "Traceback" not in net.procs["a00"].log.read_text(errors="replace")
    assert code == 0 and n > 200, out
