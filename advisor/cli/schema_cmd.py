"""``pd-advisor schema``: print (or write) the workload JSON Schema."""

from __future__ import annotations

import sys
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
        from advisor.loading.schema_export import render_schema

        text = render_schema()
        if output is None or str(output) == "-":
            sys.stdout.write(text)
            return
        try:
            output.write_text(text, encoding="utf-8")
        except OSError as exc:
            sys.stderr.write(f"pd-advisor: cannot write {output}: {exc.strerror or exc}\n")
            raise typer.Exit(code=2) from None
        sys.stderr.write(f"wrote {output}\n")
