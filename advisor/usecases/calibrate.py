"""``calibrate``: the instance and token budget that served a set of benchmark runs, the fit,
and the overlay document it writes.

The runs are taken to come from one endpoint serving the workload's model on its GPU with
``tensor_parallel`` GPUs per instance (given, else the workload's colocated
``deployment.tensor_parallel``, else the smallest power of two within a node whose memory
holds the longest run), ``instances`` instances behind the endpoint, and the token budget
given, else the deployment's (``token_budget.deployment_token_budget``: its
``chunk_tokens``, else the engine's default for the GPU), else the engine's default.

**Provenance.** What the result files record about the deployment (the model served, the
engine, TP and GPU count; :func:`advisor.loading.bench_results.run_provenance`) is compared
with the workload (:func:`provenance_mismatches`): a difference is refused unless the caller
allows it, and a TP the files record is used when neither ``--tensor-parallel`` nor the
deployment gives one. **Physical bounds.** A fitted efficiency at its upper bound 1.0 (the
runs are faster than the GPU's peak allows for this model and TP) is refused, never written.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from advisor.core.calibration import BenchmarkRun, CalibrationResult
    from advisor.core.instance import Instance
    from advisor.core.scenario import Scenario
    from advisor.loading.bench_results import RunProvenance


class CalibrationSetupError(ValueError):
    """The runs cannot be mapped to an instance (the message says why)."""


class CalibrationRefused(ValueError):
    """The fit is physically impossible; nothing is written (the message says why)."""


_TOKEN = re.compile(r"[^a-z0-9]+")
_GPU_MODEL = re.compile(r"^[a-z]+\d+[a-z]*$")
_GPU_FORM = re.compile(r"^(sxm|hbm|pcie|nvl|gen|gddr)\d*[a-z]*$")


def _tokens(text: str) -> list[str]:
    return [t for t in _TOKEN.split(text.lower()) if t]


def _contains(haystack: list[str], needle: list[str]) -> bool:
    n = len(needle)
    return n > 0 and any(haystack[i:i + n] == needle for i in range(len(haystack) - n + 1))


def model_matches(recorded: str, scenario: Scenario) -> bool:
    """Whether a result file's model (``meta-llama/Llama-3.1-8B-Instruct``, a local path) is
    the workload's: the tokens of the profile id, its name or its Hugging Face repository's
    name appear, in order, in the last path component recorded."""
    from advisor.usecases.launch import HF_REPOSITORIES

    model = scenario.model
    base = _tokens(recorded.rstrip("/").rsplit("/", 1)[-1])
    names = [model.id, model.name, HF_REPOSITORIES.get(model.id, "").rsplit("/", 1)[-1]]
    return any(_contains(base, _tokens(name)) for name in names if name)


def _gpu_models(text: str) -> set[str]:
    """The GPU model tokens of a name (``h100``, ``a100``, ``mi300x``, ``l40s``), without
    vendor, memory size or form factor (``nvidia``, ``80gb``, ``sxm4``, ``hbm3``)."""
    return {t for t in _tokens(text) if _GPU_MODEL.match(t) and not _GPU_FORM.match(t)}


def gpu_matches(recorded: str, scenario: Scenario) -> bool:
    """Whether a recorded GPU name (``NVIDIA H100 80GB HBM3``) names the workload's GPU: a
    model token (``h100``) it shares with the GPU profile's id or name (a name without one
    cannot be told apart: taken as matching)."""
    gpu = scenario.cluster.gpu
    models = _gpu_models(recorded)
    return not models or bool(models & (_gpu_models(gpu.id) | _gpu_models(gpu.name)))


def provenance_mismatches(scenario: Scenario, records: Sequence[RunProvenance],
                          workload: str, tensor_parallel: int | None, instances: int
                          ) -> tuple[list[str], int | None]:
    """Every difference between what the result files record and the workload (one message
    per file and key, naming both sides), and the TP to fit at when only the files give one.
    ``tensor_parallel`` is the TP given, else the deployment's (None: neither)."""
    problems: list[str] = []
    engine = scenario.engine.name
    model = scenario.model
    recorded_tps = sorted({r.tensor_parallel for r in records if r.tensor_parallel})
    chosen = tensor_parallel
    if chosen is None and len(recorded_tps) == 1:
        chosen = recorded_tps[0]
    if chosen is None and len(recorded_tps) > 1:
        problems.append("the runs record different tensor parallelism ("
                        + ", ".join(f"TP{tp}" for tp in recorded_tps) + "); calibrate each "
                        "TP separately or pass --tensor-parallel")
    for r in records:
        if r.model is not None and not model_matches(r.model, scenario):
            problems.append(f"{r.label}: the run served model '{r.model}', but {workload} "
                            f"serves '{model.id}' ({model.name})")
        if r.engine is not None and r.engine != engine:
            problems.append(f"{r.label}: the run was served by engine '{r.engine}' "
                            f"({r.engine_key}), but {workload} runs engine '{engine}'")
        if r.gpu is not None and not gpu_matches(r.gpu, scenario):
            problems.append(f"{r.label}: the run was measured on GPU '{r.gpu}', but "
                            f"{workload} uses '{scenario.cluster.gpu.id}'")
        if r.tensor_parallel is not None and chosen is not None and r.tensor_parallel != chosen:
            problems.append(f"{r.label}: the run used TP{r.tensor_parallel}, but {workload} "
                            f"(deployment.tensor_parallel or --tensor-parallel) says TP{chosen}")
        if r.gpus is not None and chosen is not None and r.gpus != chosen * instances:
            problems.append(f"{r.label}: the run used {r.gpus} GPUs, but {workload} says "
                            f"{instances} instance{'s' * (instances != 1)} x TP{chosen} = "
                            f"{chosen * instances} GPUs")
    return problems, chosen


def physical_problems(result: CalibrationResult, kept: dict[str, float]) -> list[str]:
    """Fitted efficiencies the physics forbids: at the fit's upper bound 1.0, the GPU's peak
    (the KV-read efficiency that follows the weight efficiency is capped at 1, not fitted)."""
    from advisor.core.calibration import BOUNDS

    top = BOUNDS["decode_bandwidth_efficiency"][1]
    return [f"{name} = {value:.4g} (the fit's upper bound, {top:g} = the GPU's peak)"
            for name, value in kept.items()
            if name in result.fitted_fields and not name.endswith("_s")
            and value >= top * 0.999]


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
    impossible: list[str] = dataclasses.field(default_factory=list)
    """Fitted factors outside physical bounds (then ``overlay`` is empty: refused)."""


def calibrate(scenario: Scenario, runs: Sequence[BenchmarkRun], files: Sequence[Path],
              tensor_parallel: int | None, chunk_tokens: int | None,
              instances: int, digests: Sequence[str] = ()) -> Calibration:
    """Fit the efficiency factors to ``runs`` (read from ``files``, whose bytes as read hash
    to ``digests``, recorded in the overlay's ``fitted_on.files``) and render the overlay.

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
    impossible = physical_problems(result, kept)
    if impossible:
        return Calibration(inst, budget, result, kept, dropped, "", impossible)
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
               "instances": instances, "not_constrained": dropped}
        overlay = co.render_overlay(
            gpu=scenario.cluster.gpu.id, engine=scenario.engine.name,
            precision=str(scenario.precision), model=scenario.model.id,
            tensor_parallel=inst.tensor_parallel, chunk_tokens=budget, factors=kept,
            source=source, fit=fit,
            files=co.input_files(list(zip(files, digests, strict=True)) if digests else []))
    return Calibration(inst, budget, result, kept, dropped, overlay)
