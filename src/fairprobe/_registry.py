"""One plug-in registry for every pluggable strategy (attacks, aggregators, proxies, detectors,
sequential tests, radius methods).

A :class:`Registry` is a ``dict`` from name to factory (a class, or any callable), so
``list(REG)``, ``name in REG`` and ``REG[name]`` work as before; :meth:`Registry.register` is the
class decorator and :meth:`Registry.create` builds a registered strategy by name, refusing an
unknown name with the standard parameter error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from fairprobe._validation import check_choice
from fairprobe.errors import ConfigError, InvalidParameterError

__all__ = ["ClassRegistry", "Registry"]

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")


class Registry(dict[str, F]):
    """Named factories of one kind of strategy.

    Parameters
    ----------
    param : str
        The parameter that names a strategy of this kind (``"attack"``, ``"proxy"`` ...), used in
        error messages.
    owner : str
        The function that takes it (``"get_attack"`` ...), used in error messages.
    """

    def __init__(self, param: str, owner: str) -> None:
        super().__init__()
        self.param = param
        self.owner = owner

    def register(self, factory: F, name: str | None = None) -> F:
        """Add ``factory`` under ``name`` (default: its ``name`` attribute); return it unchanged.

        Registering the same factory twice is harmless; another factory under a taken name is a
        :class:`~fairprobe.errors.ConfigError`.
        """
        key = name if name is not None else getattr(factory, "name", "")
        if not isinstance(key, str) or not key:
            raise InvalidParameterError(
                f"{getattr(factory, '__name__', factory)!r} needs a non-empty 'name' to be "
                f"registered as a {self.param}."
            )
        if key in self and self[key] is not factory:
            raise ConfigError(f"A {self.param} named {key!r} is already registered.")
        self[key] = factory
        return factory

    def register_as(self, name: str) -> Callable[[F], F]:
        """Decorator form of :meth:`register` with an explicit name."""

        def deco(factory: F) -> F:
            return self.register(factory, name)

        return deco

    def create(self, name: str, /, *args: Any, **kwargs: Any) -> Any:
        """Call the factory registered as ``name`` with ``args`` and ``kwargs``."""
        check_choice(name, self.param, self.owner, list(self))
        return self[name](*args, **kwargs)


class ClassRegistry(Registry[type[T]], Generic[T]):
    """A :class:`Registry` of subclasses of one base class ``T`` (the proxies, the detectors,
    the attack strategies ...), whose :meth:`make` is typed to return a ``T``: a family's
    ``register_x`` / ``make_x`` are this registry's :meth:`~Registry.register` and :meth:`make`
    rather than a typed wrapper written again in each family.
    """

    def make(self, name: str, *args: Any, **kwargs: Any) -> T:
        """Build the strategy registered as ``name`` with ``args`` and ``kwargs`` (an unknown
        name is the standard parameter error naming :attr:`~Registry.owner`)."""
        made: T = self.create(name, *args, **kwargs)
        return made
