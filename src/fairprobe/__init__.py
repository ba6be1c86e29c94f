"""fairprobe: fairness audits of black-box models that stay right when someone games them."""

from typing import TYPE_CHECKING, Any

from fairprobe import _moved
from fairprobe.errors import FairprobeError

if TYPE_CHECKING:
    from fairprobe.stats.frame import AuditFrame

__version__ = "0.1.0"

_moved.install()  # old module names (fairprobe.auditing, ...), importable for one release
__all__ = ["AuditFrame", "FairprobeError", "__version__"]


def __getattr__(name: str) -> Any:
    # PEP 562: `fairprobe.AuditFrame` without importing pandas/scipy at `import fairprobe`
    # (the CLI's --help must stay fast).
    if name == "AuditFrame":
        from fairprobe.stats.frame import AuditFrame

        return AuditFrame
    raise AttributeError(f"module 'fairprobe' has no attribute {name!r}")


def __dir__() -> list[str]:
    # lazy names are listed, so that dir(fairprobe) and tab completion show AuditFrame
    return sorted({*globals(), *__all__})
