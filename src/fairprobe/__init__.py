"""fairprobe: fairness audits of black-box models that stay right when someone games them."""

from fairprobe.errors import FairprobeError

__version__ = "0.1.0"
__all__ = ["FairprobeError", "__version__"]
