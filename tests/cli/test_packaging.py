"""Packaging: a light core, extras for the heavy parts, one error line naming a missing extra, a
fast ``--help`` (no heavy module imported at startup) and ``--version``."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import fairprobe
from fairprobe._extras import EXTRA_OF_MODULE, import_optional, missing_extra_message
from fairprobe.errors import FairprobeError, MissingExtraError

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("fastapi", "uvicorn", "cryptography", "dask", "cvxpy", "matplotlib", "jinja2", "pyarrow",
         "fairlearn")


def _project() -> dict:
    with open(ROOT / "pyproject.toml", "rb") as fh:
        return tomllib.load(fh)["project"]


def _names(reqs: list[str]) -> set[str]:
    import re

    return {re.split(r"[\[<>=!~; ]", r, maxsplit=1)[0].lower() for r in reqs}


def test_core_is_light_and_every_heavy_dependency_is_in_an_extra() -> None:
    proj = _project()
    core = _names(proj["dependencies"])
    assert {"numpy", "scipy", "pandas", "httpx", "typer", "rich"} <= core
    extras = {k: _names(v) for k, v in proj["optional-dependencies"].items()}
    for heavy in ("fastapi", "uvicorn", "cryptography", "dask", "cvxpy", "matplotlib", "jinja2",
                  "pyarrow", "fairlearn"):
        assert heavy not in core, f"{heavy} must not be a core dependency"
        assert heavy in extras["all"], f"{heavy} missing from [all]"
    assert {"fastapi", "uvicorn"} <= extras["server"]
    assert {"cryptography", "dask"} <= extras["collab"]
    assert extras["radius"] == {"cvxpy"}
    assert {"jinja2", "matplotlib"} <= extras["report"]
    for name, deps in extras.items():
        # [all] is what a user runs; [docs] builds the site, a developer's tool
        if name not in ("all", "dev", "docs"):
            assert deps <= extras["all"], f"[all] lacks part of [{name}]"
    assert extras["all"] <= extras["dev"]
    assert extras["docs"] <= extras["dev"]
    # every extra that the one-line message may name exists
    assert set(EXTRA_OF_MODULE.values()) <= set(extras)


def test_import_optional_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cvxpy", None)  # as if not installed
    with pytest.raises(MissingExtraError) as e:
        import_optional("cvxpy", feature="the exact radius")
    msg = str(e.value)
    assert "\n" not in msg
    assert "the exact radius needs the optional dependency 'cvxpy'" in msg
    assert "pip install 'fairprobe[radius]'" in msg
    assert isinstance(e.value, FairprobeError) and isinstance(e.value, ImportError)
    # a present module is simply returned
    assert import_optional("json").dumps([1]) == "[1]"


def test_missing_extra_message_only_for_known_optional_modules() -> None:
    assert "fairprobe[collab]" in (missing_extra_message(ModuleNotFoundError(name="dask.distributed"))
                                   or "")
    assert missing_extra_message(ModuleNotFoundError(name="no_such_module")) is None
    assert missing_extra_message(ValueError("x")) is None


def _cli(*args: str, block: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    code = (
        "import sys\n"
        f"for m in {list(block)!r}: sys.modules[m] = None\n"
        "from fairprobe.cli.main import main\n"
        f"main({list(args)!r})\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_cli_missing_extra_is_one_line(tmp_path: Path) -> None:
    doc = tmp_path / "r.json"
    doc.write_text('{"schema": "fairprobe/1", "kind": "audit", "provenance": {}}')
    r = _cli("report", str(doc), "--html", str(tmp_path / "r.html"),
             block=("jinja2", "matplotlib"))
    assert r.returncode == 4, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    assert "pip install 'fairprobe[report]'" in lines[0]
    assert not (tmp_path / "r.html").exists()


def test_cli_any_unguarded_optional_import_still_gives_one_line() -> None:
    # the last-resort mapping in main(): a ModuleNotFoundError of a known optional module
    code = (
        "import sys\nsys.modules['fastapi'] = None\n"
        "import typer\nfrom fairprobe.cli import main as m\n"
        "@m.app.command('x-needs-fastapi')\n"
        "def _x() -> None:\n    import fastapi  # noqa\n"
        "m.main(['x-needs-fastapi'])\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 4
    assert r.stderr.strip() == (
        "error: this command needs the optional dependency 'fastapi', which is not installed; "
        "install it with: pip install 'fairprobe[server]'"
    )


def test_version() -> None:
    r = _cli("--version")
    assert r.returncode == 0
    assert r.stdout.strip() == f"fairprobe {fairprobe.__version__}"


def test_cli_startup_imports_no_heavy_module() -> None:
    # what makes `fairprobe --help` fast: building the whole command tree imports none of these
    code = (
        "import sys\nimport fairprobe.cli.main\n"
        "mods = ('numpy', 'pandas', 'scipy', 'sklearn', 'pydantic', 'httpx') + "
        f"{HEAVY!r}\n"
        "print(','.join(m for m in mods if m in sys.modules))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "", f"imported at CLI startup: {r.stdout.strip()}"


@pytest.mark.parametrize("engine", ["fairprobe.audit.run", "fairprobe.sequential",
                                    "fairprobe.audit.predictions"])
def test_audit_engines_do_not_import_scipy_stats(engine: str) -> None:
    # importing scipy.stats costs about 1.8 s (docs/report.md); the engines use the
    # scipy.special functions it wraps, and scipy.optimize only where a root is searched for
    code = (
        f"import sys\nimport {engine}\n"
        "print(','.join(m for m in ('scipy.stats', 'scipy.optimize') if m in sys.modules))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "", f"{engine} imported {r.stdout.strip()}"


def test_parquet_without_pyarrow_names_the_extra(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from fairprobe._io import read_table

    f = tmp_path / "pool.parquet"
    f.write_bytes(b"PAR1")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(MissingExtraError, match=r"reading pool.parquet needs the optional "
                                                r"dependency 'pyarrow'.*fairprobe\[parquet\]"):
        read_table(f)
