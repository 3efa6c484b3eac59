"""A do-nothing Typer command line with ``pd-advisor recommend``'s parameters, for
``benchmarks/run.py``: the floor's imports plus what Typer itself does at run time (build the
command, parse the arguments, coerce each one), which the floor does not include.

Typer ≥ 0.29 coerces every non-boolean parameter through a pydantic ``TypeAdapter``, so a
run imports pydantic's model machinery even when the program never defines a model.

    python benchmarks/typer_floor.py recommend WORKLOAD [--format table] …
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Annotated

import numpy  # noqa: F401 - the floor's imports
import pydantic  # noqa: F401
import rich.console  # noqa: F401
import typer
import yaml  # noqa: F401

app = typer.Typer(no_args_is_help=True, add_completion=True, pretty_exceptions_enable=False)


class Output(str, enum.Enum):
    table = "table"
    json = "json"
    markdown = "markdown"
    none = "none"


class Engine(str, enum.Enum):
    vllm = "vllm"
    sglang = "sglang"


@app.callback()
def root(version: bool = typer.Option(False, "--version", is_eager=True),
         debug: bool = typer.Option(False, "--debug")) -> None:
    """The root options of pd-advisor."""


@app.command("recommend")
def recommend(
    workload: Annotated[Path, typer.Argument(metavar="WORKLOAD")],
    fmt: Annotated[Output, typer.Option("--format", "-f")] = Output.table,
    emit: Annotated[Engine | None, typer.Option("--emit")] = None,
    output: Annotated[Path | None, typer.Option("-o", "--output")] = None,
    profiles: Annotated[list[Path] | None, typer.Option("--profiles")] = None,
) -> None:
    """Parse recommend's arguments and do nothing."""


@app.command("check")
def check(workloads: Annotated[list[Path], typer.Argument()]) -> None:
    """A second command, so the app is a group as pd-advisor's is."""


if __name__ == "__main__":
    app()
