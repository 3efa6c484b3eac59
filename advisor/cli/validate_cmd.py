"""``pd-advisor validate FILE...``: check workload files and show what they resolve to.

Problems go to stderr, one per line, as ``path:line:col: error: key: message``; the resolved
scenario of every valid file goes to stdout. Exit 2 if any file has a problem, else 0.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from rich.console import Console

    from advisor.core.distributions import LengthDistribution
    from advisor.core.scenario import Scenario

EXIT_ERROR = 2


def register(app: typer.Typer) -> None:
    """Attach the ``validate`` command to ``app``."""

    @app.command("validate")
    def validate(
        files: Annotated[list[Path], typer.Argument(
            metavar="FILE", help="Workload YAML files to check.")],
        profiles: Annotated[list[Path] | None, typer.Option(
            "--profiles", metavar="DIR",
            help="Extra profile directory (gpus/, interconnects/, models/); repeatable. "
                 "Searched before $PD_ADVISOR_PROFILES and the built-in profiles.")] = None,
    ) -> None:
        """Check workload files; print every problem as path:line:col, and each valid
        file's resolved scenario."""
        from rich.console import Console

        from advisor.loading.catalog import ProfileCatalog
        from advisor.loading.errors import InputError
        from advisor.loading.resolve import load_many

        catalog = ProfileCatalog(extra_dirs=profiles or ())
        console = Console(highlight=False)
        bad_files = 0
        problem_count = 0
        for path, result in zip(files, load_many(files, catalog), strict=True):
            if isinstance(result, InputError):
                bad_files += 1
                problem_count += len(result.problems)
                for problem in result.problems:
                    sys.stderr.write(problem.format() + "\n")
            else:
                render_scenario(console, path, result)
        sys.stderr.flush()
        valid = len(files) - bad_files
        noun = "file" if len(files) == 1 else "files"
        summary = f"pd-advisor: checked {len(files)} {noun}: {valid} valid"
        if bad_files:
            summary += f", {bad_files} with {problem_count} problem{'s' * (problem_count != 1)}"
        sys.stderr.write(summary + "\n")
        if bad_files:
            raise typer.Exit(code=EXIT_ERROR)


# ----------------------------------------------------------------------------- rendering
def _tokens(value: float) -> str:
    """A token count, rounded for display."""
    return f"{value:,.0f}"


def _length_cell(dist: LengthDistribution) -> str:
    """``mean / p50 / p95 / σ`` of a fitted length, or ``N (constant)``."""
    if dist.sigma == 0.0:
        return f"{_tokens(dist.mean)} (constant)"
    text = (f"{_tokens(dist.mean)} / {_tokens(dist.quantile(0.5))} / "
            f"{_tokens(dist.quantile(0.95))} / σ {dist.sigma:.2f}")
    if dist.max_tokens is not None:
        text += f" / max {_tokens(dist.max_tokens)}"
    return text


def _ms(value: float | None) -> str:
    return "none" if value is None else f"{value:g} ms"


def _shown(text: object) -> str:
    """A user string (name, path, id) for the console (``output.console_text``)."""
    from advisor.cli.output import console_text

    return console_text(text)


def render_scenario(console: Console, path: Path, scenario: Scenario) -> None:
    """A readable summary of a resolved scenario."""
    from rich.table import Table

    from advisor.core.scenario import Policy

    title = scenario.name or path.stem
    console.print(f"[bold]{_shown(title)}[/bold]  ({_shown(path)}): valid")
    model = scenario.model
    cluster = scenario.cluster
    facts = Table.grid(padding=(0, 2))
    facts.add_column(style="bold")
    facts.add_column()
    facts.add_row("model", f"{_shown(model.name)} ({_shown(model.id)}), "
                           f"{model.total_params / 1e9:.1f} B params, "
                           f"context {model.max_context_tokens:,} tokens")
    formats = model.formats(scenario.precision)  # the checkpoint's groups filled in
    facts.add_row("precision", str(formats) + (" (groups unset in the workload: the "
                                               "checkpoint's)" if formats != scenario.precision
                                               else ""))
    facts.add_row("engine", scenario.engine.label)
    nodes = f"{cluster.nodes} node{'s' * (cluster.nodes != 1)} of {cluster.gpus_per_node}"
    facts.add_row("cluster", f"{cluster.gpus} × {_shown(cluster.gpu.name)} "
                  f"({_shown(cluster.gpu.id)}), {nodes}")
    facts.add_row("intra-node", _link(cluster.intra_node))
    facts.add_row("inter-node", _link(cluster.inter_node) if cluster.inter_node else "none "
                  "(single node)")
    slo = scenario.slo
    facts.add_row("SLO", f"TTFT {_ms(slo.ttft_ms)}, TPOT {_ms(slo.tpot_ms)} at p{slo.percentile:g}")
    facts.add_row("autoscaling", "yes" if scenario.autoscaling else "no (static pools)")
    facts.add_row("router", scenario.router)
    facts.add_row("deployment", _deployment(scenario))
    if "config" in scenario.extras:
        facts.add_row("config", _shown(scenario.extras["config"]))
    console.print(facts)

    phases = Table(title="traffic phases (lengths in tokens: mean / p50 / p95 / σ of log)",
                   title_justify="left", show_edge=False)
    for header in ("phase", "share", "rate req/s", "burstiness", "prompt", "output"):
        phases.add_column(header, justify="right" if header in ("share", "rate req/s",
                                                                  "burstiness") else "left")
    for phase in scenario.phases:
        phases.add_row(_shown(phase.name), f"{phase.share:.0%}", f"{phase.rate_rps:g}",
                       f"{phase.burstiness:g}", _length_cell(phase.prompt_tokens),
                       _length_cell(phase.output_tokens))
    console.print(phases)

    defaults = Policy()
    policy = Table(title="policy", title_justify="left", show_edge=False)
    policy.add_column("threshold")
    policy.add_column("value", justify="right")
    policy.add_column("source")
    for name, value in vars(scenario.policy).items():
        policy.add_row(name, f"{value:g}", "default" if value == getattr(defaults, name)
                       else "override")
    console.print(policy)
    console.print()


def _link(link: object) -> str:
    """``id (name), N GB/s per direction``."""
    bandwidth = getattr(link, "bandwidth_bytes_per_s", 0.0) / 1e9
    return _shown(f"{getattr(link, 'id', '?')} ({getattr(link, 'name', '?')}), "
                  f"{bandwidth:g} GB/s per GPU")


def _deployment(scenario: Scenario) -> str:
    """One line describing today's deployment."""
    deployment = scenario.deployment
    if deployment is None:
        return "not given (the advisor recommends one; `check` needs it)"
    chunking = "chunked prefill off"
    if deployment.chunked_prefill:
        default = ("" if deployment.chunk_tokens is not None
                   else f", {scenario.engine.id}'s default on this GPU")
        chunking = f"chunked prefill, token budget {scenario.chunk_tokens}{default}"
    spec = deployment.speculative
    if spec is not None:
        chunking += (f", speculative {spec.method} (k = {spec.draft_tokens}, "
                     f"{spec.tokens_per_step:.2f} tokens a step, {spec.acceptance_source} "
                     "acceptance)")
    if deployment.mode == "colocated":
        tp = f"TP {deployment.tensor_parallel or 1}"
        return f"colocated, {tp}, {chunking}"
    prefill_tp = deployment.prefill_tensor_parallel or "searched"
    decode_tp = deployment.decode_tensor_parallel or "searched"
    return (f"disaggregated: {deployment.prefill_gpus} prefill GPUs (TP {prefill_tp}) + "
            f"{deployment.decode_gpus} decode GPUs (TP {decode_tp}), {chunking}")
