"""The ``pd-advisor`` command line: Typer wiring, exit codes, and the top-level error guard.

Exit codes are API: 0 ok, 1 gate failed (``check`` only), 2 could not evaluate (bad input,
usage error, internal error). No traceback escapes unless ``--debug`` is given.
"""

from __future__ import annotations

import sys

import typer

from advisor import __version__

EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_ERROR = 2

app = typer.Typer(
    name="pd-advisor",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    help="Chunked prefill on a colocated pool, or prefill/decode disaggregation? "
    "Exit codes: 0 ok, 1 gate failed, 2 could not evaluate.",
)

_state = {"debug": False}


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"pd-advisor {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version_callback, is_eager=True,
                                 help="Print the version and exit."),
    debug: bool = typer.Option(False, "--debug", help="Show full tracebacks for internal errors."),
) -> None:
    """pd-advisor: an analytic advisor for LLM serving architecture."""
    _state["debug"] = debug


def _register() -> None:
    """Attach every subcommand module (they import numpy/scipy/pydantic lazily)."""
    from advisor.cli import commands

    commands.register(app)


_register()


def main() -> None:
    """Console-script entry point: run the app; map unexpected exceptions to exit 2."""
    debug = "--debug" in sys.argv[1:]
    try:
        app()
    except SystemExit:
        raise
    except KeyboardInterrupt:
        sys.stderr.write("pd-advisor: interrupted\n")
        sys.exit(EXIT_ERROR)
    except Exception as exc:  # noqa: BLE001 - the guard exists to catch everything
        if debug:
            raise
        sys.stderr.write(f"pd-advisor: internal error: {type(exc).__name__}: {exc} "
                         "(run with --debug for the traceback)\n")
        sys.exit(EXIT_ERROR)
