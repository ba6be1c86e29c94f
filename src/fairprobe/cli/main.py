"""The ``fairprobe`` command line: thin commands over the library, one error line on failure.

Each command module exposes ``register(app)``; :func:`main` runs the app and turns every
:class:`~fairprobe.errors.FairprobeError` (and any unexpected exception) into one line on stderr
and a non-zero exit, never a traceback (set ``FAIRPROBE_DEBUG=1`` to see one).

Startup is kept light (``fairprobe --help`` in well under 0.5 s): this module and the command
modules import only typer/rich at top level; numpy, pandas, scipy, the method packages and the
optional extras are imported inside the command functions. Measure with
``python -X importtime -c "import fairprobe.cli.main"`` or ``benchmarks/bench_cli.py``.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Annotated

import typer

from fairprobe import __version__, _interrupt
from fairprobe.errors import FairprobeError

app = typer.Typer(
    name="fairprobe",
    help="Fairness audits of black-box models that stay right when someone games them.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"fairprobe {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_version_callback,
            is_eager=True,
            help="Print the version and exit.",
        ),
    ] = False,
) -> None:
    """Fairness audits of black-box models that stay right when someone games them."""


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
    "report",
    "monitor",
    "discover",
    "plan",
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
    from fairprobe._text import visible
    from fairprobe.provenance import redact_text

    sys.stderr.write(f"error: {visible(redact_text(message))}\n")
    sys.exit(code)


def _is_click_exception(exc: BaseException) -> bool:
    # typer >= 0.20 vendors click (typer._click); older typer uses click itself. Recognise both by
    # shape so that neither needs importing here (click alone costs ~40 ms of startup).
    return any(c.__name__ == "ClickException" for c in type(exc).__mro__) and hasattr(exc, "show")


_DEFAULT_INTERRUPT_MESSAGE = (
    "interrupted; the answers paid for so far are in the cache: rerun the same command to "
    "resume without paying for them again."
)
#: The line printed on Ctrl-C; a command may replace it for its own run (e.g. when nothing is
#: cached). :func:`main` resets it at every call.
INTERRUPT_MESSAGE = _DEFAULT_INTERRUPT_MESSAGE


_Interrupted = _interrupt.Interrupted


def _on_sigint(signum: int, frame: object) -> None:
    # the flag survives even if the exception is raised inside a finaliser and lost there
    _interrupt.REQUESTED.set()
    raise _Interrupted


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``fairprobe`` script."""
    import signal
    import threading

    global INTERRUPT_MESSAGE
    INTERRUPT_MESSAGE = _DEFAULT_INTERRUPT_MESSAGE
    _interrupt.REQUESTED.clear()
    debug = os.environ.get("FAIRPROBE_DEBUG") == "1"
    from fairprobe.provenance import set_command_line

    set_command_line(sys.argv[1:] if argv is None else argv)
    if not debug:
        # numeric edge cases (0/0 rates, log(0)) are handled and reported by the code; numpy's
        # RuntimeWarnings about them are noise on a user's terminal (FAIRPROBE_DEBUG=1 shows them)
        import warnings

        warnings.filterwarnings("ignore", category=RuntimeWarning)
    previous = None
    if threading.current_thread() is threading.main_thread():
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            previous = signal.signal(signal.SIGINT, _on_sigint)
    try:
        _run(argv, debug)
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


#: Options that name a file a command writes (checked before any command starts its work).
OUTPUT_OPTIONS = ("--json", "--cache")
#: Options whose value "-" means standard output: the terminal text then goes to stderr, so that
#: stdout carries only the document (``fairprobe audit ... --json - | jq``).
STDOUT_OPTIONS = ("--json", "--csv", "--md", "--html")


def _stdout_taken(argv: list[str]) -> bool:
    for i, arg in enumerate(argv):
        flag, eq, value = arg.partition("=")
        if flag in STDOUT_OPTIONS and ((eq and value == "-") or (
                not eq and i + 1 < len(argv) and argv[i + 1] == "-")):
            return True
    return False


def _check_output_options(argv: list[str]) -> None:
    """A directory or unwritable ``--json``/``--cache`` fails before any query is paid."""
    if "--help" in argv or "-h" in argv:
        return
    from pathlib import Path

    from fairprobe.cli._common import check_output_path

    for i, arg in enumerate(argv):
        flag, eq, value = arg.partition("=")
        if flag not in OUTPUT_OPTIONS:
            continue
        if not eq:
            if i + 1 >= len(argv) or argv[i + 1].startswith("-"):
                continue
            value = argv[i + 1]
        if value and value != "-":
            check_output_path(Path(value), flag)


def _run(argv: list[str] | None, debug: bool) -> None:
    try:
        args = list(sys.argv[1:] if argv is None else argv)
        _check_output_options(args)
        from fairprobe.cli._common import console

        console.file = sys.stderr if _stdout_taken(args) else None  # type: ignore[assignment]
        rv = app(args=argv, standalone_mode=False)
    except _Interrupted:
        _fail(INTERRUPT_MESSAGE, 130)
    except FairprobeError as exc:
        if debug:
            raise
        _fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__, exc.exit_code)
    except KeyboardInterrupt:
        _fail(INTERRUPT_MESSAGE, 130)
    except Exception as exc:  # never a traceback for the user
        if _is_click_exception(exc):
            exc.show()  # type: ignore[attr-defined]
            sys.exit(int(exc.exit_code))  # type: ignore[attr-defined]
        if type(exc).__name__ == "Abort":
            _fail("aborted.", 130)
        if debug:
            raise
        from fairprobe._extras import missing_extra_message

        extra_msg = missing_extra_message(exc)
        if extra_msg is not None:
            _fail(extra_msg, 4)
        from fairprobe.errors import scrub

        _fail(scrub(f"unexpected {type(exc).__name__}: {exc} (set FAIRPROBE_DEBUG=1 for "
                    "details)"), 1)
    else:
        if rv == 130:  # click's silent exit code for a KeyboardInterrupt it caught
            _fail(INTERRUPT_MESSAGE, 130)
        sys.exit(rv if isinstance(rv, int) else 0)


if __name__ == "__main__":
    main()
