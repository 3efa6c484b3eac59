"""``pd-advisor schema``: print (or write) the workload JSON Schema."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    """Attach the ``schema`` command to ``app``."""

    @app.command("schema")
    def schema(
        output: Annotated[Path | None, typer.Option(
            "-o", "--output", metavar="FILE",
            help="Write the schema to FILE instead of stdout ('-' means stdout).")] = None,
    ) -> None:
        """Print the JSON Schema (draft-07) of workload files, for editors and CI."""
        from advisor.cli.output import write_output
        from advisor.loading.schema_export import render_schema

        write_output(render_schema(), output)
