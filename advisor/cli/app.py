"""The ``pd-advisor`` command line: Typer wiring, exit codes, and the top-level error guard.

Exit codes are API: 0 ok, 1 gate failed (``check`` only), 2 could not evaluate (bad input,
usage error, internal error). No traceback escapes unless ``--debug`` is given.

``app`` (the whole command line, every subcommand attached) is built on first use;
:func:`main` builds only the subcommand the arguments name (``advisor.cli.commands``), so a
run of one command does not import and wire the other eight. Help, completion and unknown
commands get the whole app.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

import typer

from advisor import __version__

EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_ERROR = 2

COMPLETION_ENV = "_PD_ADVISOR_COMPLETE"
"""Set by the shell-completion scripts Typer installs; completion needs every command."""

def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"pd-advisor {__version__}")
        raise typer.Exit()


def _root(
    version: bool = typer.Option(False, "--version", callback=_version_callback, is_eager=True,
                                 help="Print the version and exit."),
    debug: bool = typer.Option(False, "--debug", help="Show full tracebacks for internal errors."),
) -> None:
    """pd-advisor: an analytic advisor for LLM serving architecture."""
    from advisor.cli.output import set_debug

    set_debug(debug)


def make_app(command: str | None = None) -> typer.Typer:
    """The Typer app with every subcommand, or only ``command`` (a name from
    ``commands.NAMES``)."""
    from advisor.cli import commands

    app = typer.Typer(
        name="pd-advisor",
        no_args_is_help=True,
        add_completion=True,
        pretty_exceptions_enable=False,
        help="Chunked prefill on a colocated pool, or prefill/decode disaggregation? "
        "Exit codes: 0 ok, 1 gate failed, 2 could not evaluate.",
    )
    app.callback()(_root)
    commands.register(app, command)
    return app


def invoked_command(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` (without the program name) runs, when it names one and the
    whole app is not needed (completion); else None."""
    from advisor.cli import commands

    if os.environ.get(COMPLETION_ENV):
        return None
    # the root options take no values, so the first other word is the command
    word = next((a for a in argv if not a.startswith("-")), None)
    return word if word in commands.NAMES else None


def __getattr__(name: str) -> Any:
    """``app``: the whole command line, built on first access (tests, documentation)."""
    if name == "app":
        app = make_app()
        globals()["app"] = app
        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """Console-script entry point: run the app; map unexpected exceptions to exit 2."""
    argv = sys.argv[1:]
    debug = "--debug" in argv
    try:
        make_app(invoked_command(argv))()
    except SystemExit:
        raise
    except KeyboardInterrupt:
        sys.stderr.write("pd-advisor: interrupted\n")
        sys.exit(EXIT_ERROR)
    except Exception as exc:  # the guard exists to catch everything
        if debug:
            raise
        sys.stderr.write(f"pd-advisor: internal error: {type(exc).__name__}: {exc} "
                         "(run with --debug for the traceback)\n")
        sys.exit(EXIT_ERROR)
