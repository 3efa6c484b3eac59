"""Registry of subcommands: one module per command, attached here by name."""

from __future__ import annotations

import importlib

import typer

MODULES = {
    "recommend": "advisor.cli.recommend_cmd",
    "check": "advisor.cli.check_cmd",
    "sweep": "advisor.cli.sweep_cmd",
    "simulate": "advisor.cli.simulate_cmd",
    "fit": "advisor.cli.fit_cmd",
    "init": "advisor.cli.init_cmd",
    "validate": "advisor.cli.validate_cmd",
    "calibrate": "advisor.cli.calibrate_cmd",
    "profiles": "advisor.cli.profiles_cmd",
    "schema": "advisor.cli.schema_cmd",
}
"""Command name → the module that defines it, in the order ``--help`` lists them: the order a
user meets them (decide, gate, explore, verify; then start a file, validate it, calibrate it;
then the reference commands)."""

NAMES = frozenset(MODULES)


def register(app: typer.Typer, only: str | None = None) -> None:
    """Attach every subcommand to ``app``, or only the one named ``only``."""
    for name, module_name in MODULES.items():
        if only is not None and name != only:
            continue
        module = importlib.import_module(module_name)
        if name == "profiles":
            app.add_typer(module.app, name="profiles")
        else:
            module.register(app)
