"""``pd-advisor simulate WORKLOAD``: run the discrete-event simulator beside the analytic model.

For each mode (chunked, unchunked, disaggregated; ``--mode`` repeats, default all) the
analytic model's best plan is simulated on ``--requests`` requests drawn with ``--seed``; the
report shows p50/p95/p99 TTFT and TPOT, goodput, throughput, GPU busy share and KV link
utilisation, each simulated figure beside the analytic prediction and their relative
difference. Output is deterministic for a seed. A progress bar goes to stderr when it is a
terminal. Exit codes: 0 simulated, 2 could not (input problems, no plan for a requested mode).
"""

from __future__ import annotations

import enum
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Self

import typer

from advisor.cli.output import debug_enabled, fail, fail_with_problems, terminal_settings

if TYPE_CHECKING:
    from collections.abc import Callable

    from rich.progress import Progress

DEFAULT_REQUESTS = 20_000
PROFILES_HELP = ("Extra profile directory (gpus/, interconnects/, models/); repeatable. "
                 "Searched before $PD_ADVISOR_PROFILES and the built-in profiles.")


class SimMode(str, enum.Enum):
    """``--mode`` choices."""

    chunked = "chunked"
    unchunked = "unchunked"
    disaggregated = "disaggregated"
    all = "all"


class SimFormat(str, enum.Enum):
    """``--format`` choices."""

    table = "table"
    json = "json"


def register(app: typer.Typer) -> None:
    """Attach the ``simulate`` command to ``app``."""

    @app.command("simulate")
    def simulate_command(
        workload: Annotated[Path, typer.Argument(metavar="WORKLOAD", help="Workload YAML file.",
                                                 show_default=False)],
        requests: Annotated[int, typer.Option(
            "--requests", "-n", min=100, help="Requests to simulate per mode.")
        ] = DEFAULT_REQUESTS,
        seed: Annotated[int, typer.Option(
            "--seed", "-s", min=0, help="Random seed (same seed, same output).")] = 0,
        modes: Annotated[list[SimMode] | None, typer.Option(
            "--mode", "-m", help="Mode to simulate (default all); repeatable.",
            show_default=False)] = None,
        fmt: Annotated[SimFormat, typer.Option(
            "--format", "-f", help="Report format: table or json.")] = SimFormat.table,
        progress: Annotated[bool, typer.Option(
            "--progress/--no-progress",
            help="Progress bar on stderr (only when it is a terminal).")] = True,
        profiles: Annotated[list[Path] | None, typer.Option(
            "--profiles", metavar="DIR", help=PROFILES_HELP, show_default=False)] = None,
    ) -> None:
        """Simulate the best plans of WORKLOAD and compare them with the analytic model."""
        from advisor.core.plan.evaluate import evaluate
        from advisor.core.simulate import MODES, PlanError, simulate
        from advisor.loading.catalog import ProfileCatalog
        from advisor.loading.errors import InputError
        from advisor.loading.resolve import load_scenario
        from advisor.render.simulate_report import render_json, render_table, simulation_document

        chosen = modes or [SimMode.all]
        wanted = list(MODES) if any(m is SimMode.all for m in chosen) else list(
            dict.fromkeys(m.value for m in chosen))
        try:
            scenario = load_scenario(workload, ProfileCatalog(extra_dirs=profiles or []))
        except InputError as exc:
            fail_with_problems(workload, exc.problems, "nothing simulated")
        try:
            model = evaluate(scenario)
            results, skipped = [], []
            with _ProgressBar(progress) as bar:
                for mode in wanted:
                    callback = bar(mode, requests)
                    try:
                        results.append(simulate(scenario, mode, requests, seed,  # type: ignore[arg-type]
                                                progress=callback, model=model))
                    except PlanError as exc:
                        if len(wanted) == 1:
                            fail(f"{workload}: {mode}: {exc}")
                        skipped.append((mode, str(exc)))
        except typer.Exit:
            raise
        except Exception as exc:
            if debug_enabled():
                raise
            fail(f"internal error: {type(exc).__name__}: {exc} "
                        "(run with --debug for the traceback)")
        shown = str(workload)
        if fmt is SimFormat.json:
            doc = simulation_document(shown, scenario.name, requests, seed, results, skipped)
            sys.stdout.write(render_json(doc))
        else:
            width, color = terminal_settings(True)
            sys.stdout.write(render_table(shown, requests, seed, results, skipped, width, color))
        sys.stdout.flush()


class _ProgressBar:
    """A rich progress bar on stderr, one task per mode; a no-op off a terminal."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self._progress: Progress | None = None

    def __enter__(self) -> Self:
        if self.enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self._progress = Progress(TextColumn("simulating {task.description}"), BarColumn(),
                                      MofNCompleteColumn(), TimeElapsedColumn(),
                                      console=Console(stderr=True), transient=True)
            self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def __call__(self, mode: str, total: int) -> Callable[[int, int], None] | None:
        """A ``progress(done, total)`` callback for ``mode`` (None when disabled)."""
        if self._progress is None:
            return None
        progress = self._progress
        task = progress.add_task(mode, total=total)

        def update(done: int, _total: int) -> None:
            progress.update(task, completed=done)

        return update
