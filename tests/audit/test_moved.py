"""The audit package's names, and the former module names kept for one release."""

from __future__ import annotations

import subprocess
import sys

import pytest


def test_public_names_from_the_package() -> None:
    import fairprobe.audit as audit
    from fairprobe.audit import job, monitor, predictions, run

    homes = {"run": run, "job": job, "predictions": predictions, "monitor": monitor}
    for name in audit.__all__:
        assert getattr(audit, name) is getattr(homes[audit._WHERE[name]], name)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        audit.nope  # noqa: B018


@pytest.mark.parametrize(("old", "new"), [("fairprobe.auditing", "fairprobe.audit.job"),
                                          ("fairprobe.predictions", "fairprobe.audit.predictions")])
def test_old_module_names_import_the_new_modules_with_a_warning(old: str, new: str) -> None:
    code = (f"import warnings, importlib\n"
            f"with warnings.catch_warnings(record=True) as w:\n"
            f"    warnings.simplefilter('always')\n"
            f"    m = importlib.import_module({old!r})\n"
            f"assert m is importlib.import_module({new!r}), m\n"
            f"[d] = [x for x in w if issubclass(x.category, DeprecationWarning)]\n"
            f"assert {new!r} in str(d.message), d.message\n"
            f"from {old} import *\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def test_importing_the_package_loads_nothing_heavy() -> None:
    r = subprocess.run([sys.executable, "-c", "import sys, fairprobe.audit, fairprobe.audit.job; "
                        "print('pandas' in sys.modules)"], capture_output=True, text=True,
                       timeout=60)
    assert r.stdout.strip() == "False", r.stderr
