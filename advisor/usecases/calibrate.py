"""``calibrate``: the instance and token budget that served a set of benchmark runs, the fit,
and the overlay document it writes.

The runs are taken to come from one endpoint serving the workload's model on its GPU with
``tensor_parallel`` GPUs per instance (given, else the workload's colocated
``deployment.tensor_parallel``, else the smallest power of two within a node whose memory
holds the longest run), ``instances`` instances behind the endpoint, and the token budget
given, else the deployment's (``token_budget.deployment_token_budget``: its
``chunk_tokens``, else the engine's default for the GPU), else the engine's default.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from advisor.core.calibration import BenchmarkRun, CalibrationResult
    from advisor.core.instance import Instance
    from advisor.core.scenario import Scenario


class CalibrationSetupError(ValueError):
    """The runs cannot be mapped to an instance (the message says why)."""


def serving_instance(scenario: Scenario, runs: Sequence[BenchmarkRun],
                     tensor_parallel: int | None) -> Instance:
    """The instance that served the runs: the given TP, the colocated deployment's, else the
    smallest power of two within a node that fits the longest run in memory."""
    from advisor.core.memory import build_instance, plan_memory

    cl = scenario.cluster
    longest = max(runs, key=lambda r: r.prompt_tokens + r.output_tokens)
    ctx = longest.prompt_tokens + longest.output_tokens / 2
    total = longest.prompt_tokens + longest.output_tokens

    def make(tp: int) -> Instance:
        return build_instance(scenario.model, cl.gpu, scenario.precision, scenario.engine, tp, 1,
                              cl.intra_node, cl.inter_node)

    given = tensor_parallel
    dep = scenario.deployment
    if given is None and dep is not None and dep.mode == "colocated":
        given = dep.tensor_parallel
    if given is not None:
        inst = make(given)
        memory = plan_memory(inst, ctx, total, scenario.policy.memory_fraction)
        if not memory.fits:
            raise CalibrationSetupError(f"TP{given} cannot serve the runs: {memory.reason}")
        return inst
    tp = 1
    reasons = []
    while tp <= cl.gpus_per_node:
        inst = make(tp)
        memory = plan_memory(inst, ctx, total, scenario.policy.memory_fraction)
        if memory.fits:
            return inst
        reasons.append(f"TP{tp}: {memory.reason}")
        tp *= 2
    raise CalibrationSetupError("no tensor-parallel degree within a node fits the runs ("
                                + "; ".join(reasons) + "); pass --tensor-parallel")


def serving_token_budget(scenario: Scenario, chunk_tokens: int | None) -> int:
    """The token budget the runs were served with: the given one, the declared chunked
    deployment's (``Scenario.chunk_tokens``, which already applies the rule for an omitted
    ``chunk_tokens``), else the engine's default for the GPU."""
    from advisor.core.token_budget import engine_default_budget

    if chunk_tokens is not None:
        return chunk_tokens
    if scenario.chunk_tokens is not None:
        return scenario.chunk_tokens
    return engine_default_budget(scenario.engine, scenario.cluster.gpu)


@dataclass(frozen=True)
class Calibration:
    """One calibration: what was fitted to what, and the overlay to write."""

    instance: Instance
    token_budget: int
    result: CalibrationResult
    kept: dict[str, float]
    """Fitted factors the runs constrain (the ones written)."""
    dropped: list[str]
    """Fitted factors the runs do not constrain (not written)."""
    overlay: str
    """The calibration overlay YAML (empty when nothing is written)."""


def calibrate(scenario: Scenario, runs: Sequence[BenchmarkRun], files: Sequence[Path],
              tensor_parallel: int | None, chunk_tokens: int | None,
              instances: int) -> Calibration:
    """Fit the efficiency factors to ``runs`` (read from ``files``) and render the overlay.

    Raises :class:`CalibrationSetupError` when no instance can have served the runs.
    """
    from advisor import __version__
    from advisor.core.calibration import fit_efficiency
    from advisor.loading import calibration_overlay as co

    inst = serving_instance(scenario, runs, tensor_parallel)
    budget = serving_token_budget(scenario, chunk_tokens)
    result = fit_efficiency(inst, list(runs), budget, scenario.policy.memory_fraction,
                            instances)
    kept = {f: getattr(result.after, f) for f in result.fitted_fields if result.constrained[f]}
    if "decode_bandwidth_efficiency" in kept and result.after.kv_bandwidth_efficiency:
        # a separate KV-read efficiency moves with the fitted weight efficiency (with_fitted)
        kept["kv_bandwidth_efficiency"] = result.after.kv_bandwidth_efficiency
    dropped = [f for f in result.fitted_fields if not result.constrained[f]]
    overlay = ""
    if kept:
        names = ", ".join(p.name for p in files[:4]) + (", ..." if len(files) > 4 else "")
        source = (f"pd-advisor calibrate {__version__}: least-squares fit to {len(runs)} "
                  f"benchmark runs ({names}); RMS log error "
                  f"{result.rms_log_error_before * 100:.1f} % -> "
                  f"{result.rms_log_error_after * 100:.1f} %")
        fit = {"runs": len(runs), "measurements": result.residual_count,
               "rms_log_error_before": round(result.rms_log_error_before, 4),
               "rms_log_error_after": round(result.rms_log_error_after, 4),
               "instances": instances, "not_constrained": dropped,
               "files": co.input_files(list(files))}
        overlay = co.render_overlay(
            gpu=scenario.cluster.gpu.id, engine=scenario.engine.name, precision=str(scenario.precision),
            model=scenario.model.id, tensor_parallel=inst.tensor_parallel, chunk_tokens=budget,
            factors=kept, source=source, fit=fit)
    return Calibration(inst, budget, result, kept, dropped, overlay)
