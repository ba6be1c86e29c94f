"""One ``with`` rule for the objects that hold a resource until ``close()``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Self

__all__ = ["Closing"]


class Closing(ABC):
    """``with obj:`` returns ``obj`` and calls ``obj.close()`` at the end, whatever happened
    (an exception propagates). Subclasses must define :meth:`close`; a class that does not
    cannot be instantiated."""

    @abstractmethod
    def close(self) -> None:
        """Release the resource (idempotent in every subclass)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
