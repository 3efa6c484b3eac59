"""Registry of subcommands: one module per command, attached here."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Attach all subcommands to ``app``."""
    from advisor.cli import check_cmd, profiles_cmd, recommend_cmd, schema_cmd, validate_cmd

    app.add_typer(profiles_cmd.app, name="profiles")
    validate_cmd.register(app)
    schema_cmd.register(app)
    recommend_cmd.register(app)
    check_cmd.register(app)
    from advisor.cli import simulate_cmd
    simulate_cmd.register(app)
    from advisor.cli import calibrate_cmd, init_cmd
    calibrate_cmd.register(app)
    init_cmd.register(app)
    from advisor.cli import sweep_cmd
    sweep_cmd.register(app)
