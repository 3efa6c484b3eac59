"""``pd-advisor schema``: print (or write) the workload JSON Schema, or (``--report``) the
schema of the JSON reports ``recommend`` and ``check`` write."""

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
        report: Annotated[bool, typer.Option(
            "--report", help="The schema of the JSON reports (recommend and check "
                             "--format json) instead of the workload's.")] = False,
    ) -> None:
        """Print the JSON Schema (draft-07) of workload files, for editors and CI."""
        from advisor.cli.output import write_output

        if report:
            from advisor.render.report_schema import render_schema as render_report_schema

            write_output(render_report_schema(), output)
            return
        from advisor.loading.schema_export import render_schema

        write_output(render_schema(), output)
