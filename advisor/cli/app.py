"""The ``pd-advisor`` command line: Typer wiring, exit codes, and the top-level error guard.

Exit codes are API: 0 ok, 1 gate failed (``check`` only), 2 could not evaluate (bad input,
usage error, internal error, an output that cannot be written), 130 interrupted (SIGINT,
"pd-advisor: interrupted"). A reader that stops early (``| head -1``) ends the run with 0.
No traceback escapes unless ``--debug`` is given.

``app`` (the whole command line, every subcommand attached) is built on first use;
:func:`main` builds only the subcommand the arguments name (``advisor.cli.commands``), so a
run of one command does not import and wire the other eight. Help, completion and unknown
commands get the whole app.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence
from typing import Any

import typer
from typer.core import TyperGroup

from advisor import __version__

EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_ERROR = 2
EXIT_INTERRUPTED = 130
"""128 + SIGINT, the shell's convention."""

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


def _blank_flag_types(command: Any, ctx: Any) -> None:
    """Give every on/off flag of ``command``, and of its subcommands, an empty metavar.

    Typer 0.26+ prints a ``<bool>`` type next to flags, which take no value
    (``--version <bool>``); an explicit metavar replaces that type in help and is used nowhere
    else for a flag. ``get_params`` includes the help option and Typer's completion options.
    """
    for param in command.get_params(ctx):
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
    for sub in getattr(command, "commands", {}).values():
        _blank_flag_types(sub, ctx)


class AdvisorGroup(TyperGroup):
    """The root command group: commands listed in ``commands.MODULES`` order (Typer lists
    sub-apps such as ``profiles`` after every plain command), and no help page shows a
    ``<bool>`` type on a flag."""

    def list_commands(self, ctx: Any) -> list[str]:
        from advisor.cli.commands import MODULES

        rank = {name: i for i, name in enumerate(MODULES)}
        return sorted(super().list_commands(ctx), key=lambda name: rank.get(name, len(rank)))

    def format_help(self, ctx: Any, formatter: Any) -> None:
        _blank_flag_types(self, ctx)
        super().format_help(ctx, formatter)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            _blank_flag_types(command, ctx)
        return command


def make_app(command: str | None = None) -> typer.Typer:
    """The Typer app with every subcommand, or only ``command`` (a name from
    ``commands.NAMES``)."""
    from advisor.cli import commands

    app = typer.Typer(
        name="pd-advisor",
        cls=AdvisorGroup,
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


class Interrupted(BaseException):
    """SIGINT, raised by :func:`_on_sigint`. Not a ``KeyboardInterrupt``, which Click turns
    into a silent exit 130 before :func:`main` could say why the run stopped."""


def _on_sigint(signum: int, frame: Any) -> None:
    raise Interrupted


def main() -> None:
    """Console-script entry point: run the app; map unexpected exceptions to exit 2, SIGINT
    to 130, and output failures to 0 (the reader stopped) or 2 (advisor.cli.output)."""
    from advisor.cli.output import OutputFailed, finish_stdout, guard_stdout

    argv = sys.argv[1:]
    debug = "--debug" in argv
    stdout = sys.stdout
    guard_stdout()
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_sigint)
    code: int | str | None = EXIT_OK
    try:
        try:
            make_app(invoked_command(argv))()
        except SystemExit as exc:
            code = exc.code
        except Interrupted:
            finish_stdout(None)
            sys.stderr.write("pd-advisor: interrupted\n")
            sys.exit(EXIT_INTERRUPTED)
        except OutputFailed as exc:
            sys.exit(finish_stdout(exc))
        except Exception as exc:  # the guard exists to catch everything
            if debug:
                raise
            from advisor.cli.output import message

            message(f"pd-advisor: internal error: {type(exc).__name__}: {exc} "
                    "(run with --debug for the traceback)")
            code = EXIT_ERROR
        failed = finish_stdout()
        sys.exit(code if failed is None else failed)
    finally:
        sys.stdout = stdout  # callers running main() in-process get their stream back
