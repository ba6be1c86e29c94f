"""One ``with`` rule for the objects that hold a resource until ``close()``."""

from __future__ import annotations

from typing import Any, Self

__all__ = ["Closing"]


class Closing:
    """``with obj:`` returns ``obj`` and calls ``obj.close()`` at the end, whatever happened
    (an exception propagates). Subclasses define :meth:`close`."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
