"""The ``fairprobe`` command line: thin commands over the library, one error line on failure.

Each command module exposes ``register(app)``; :func:`main` runs the app and turns every
:class:`~fairprobe.errors.FairprobeError` (and any unexpected exception) into one line on stderr
and a non-zero exit, never a traceback (set ``FAIRPROBE_DEBUG=1`` to see one).
"""

from __future__ import annotations

import importlib
import os
import sys

import click
import typer

from fairprobe.errors import FairprobeError

app = typer.Typer(
    name="fairprobe",
    help="Fairness audits of black-box models that stay right when someone games them.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Command modules, each with a ``register(app)`` function. A module that is absent is skipped.
_COMMAND_MODULES = (
    "audit",
    "platform",
    "demo",
    "collab",
    "node",
    "sequential",
    "twosource",
    "radius",
)


def _register_all() -> None:
    for name in _COMMAND_MODULES:
        try:
            module = importlib.import_module(f"fairprobe.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"fairprobe.cli.{name}":
                continue
            raise
        module.register(app)


_register_all()


def _fail(message: str, code: int) -> None:
    sys.stderr.write(f"error: {message}\n")
    sys.exit(code)


def _is_click_exception(exc: BaseException) -> bool:
    if isinstance(exc, click.ClickException):
        return True
    return any(c.__name__ == "ClickException" for c in type(exc).__mro__) and hasattr(exc, "show")


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``fairprobe`` script."""
    debug = os.environ.get("FAIRPROBE_DEBUG") == "1"
    from fairprobe.provenance import set_command_line

    set_command_line(sys.argv[1:] if argv is None else argv)
    try:
        rv = app(args=argv, standalone_mode=False)
    except FairprobeError as exc:
        if debug:
            raise
        _fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__, exc.exit_code)
    except KeyboardInterrupt:
        _fail("interrupted; answers paid for so far are in the cache, rerun to resume.", 130)
    except Exception as exc:  # never a traceback for the user
        # typer >= 0.20 vendors click (typer._click): recognise its exceptions by shape
        if _is_click_exception(exc):
            exc.show()  # type: ignore[attr-defined]
            sys.exit(int(exc.exit_code))  # type: ignore[attr-defined]
        if type(exc).__name__ == "Abort":
            _fail("aborted.", 130)
        if debug:
            raise
        _fail(f"unexpected {type(exc).__name__}: {exc} (set FAIRPROBE_DEBUG=1 for details)", 1)
    else:
        sys.exit(rv if isinstance(rv, int) else 0)


if __name__ == "__main__":
    main()
