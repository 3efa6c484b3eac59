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
    from advisor.core.calibration import BenchmarkRun, CalibrationResult, RunPrediction
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


def served_model_note(records: Sequence[RunProvenance], config_name: str | None,
                      config_file: str | None) -> tuple[bool, str, str | None]:
    """Whether the workload's model has a name the files can be checked against, what was
    assumed, and the name of the model served (None: the workload's model id). A model read
    from a ``config.json`` is named by its ``_name_or_path`` (``config_name``); without one its
    folder names nothing, so the model the result files record is taken as the one served
    (when they agree), and said so."""
    if config_file is None or config_name is not None:
        return True, "", config_name
    named = sorted({r.model for r in records if r.model})
    if len(named) == 1:
        return False, (f"the model: {config_file} has no _name_or_path, so its folder names "
                       f"nothing; the result files record '{named[0]}', taken as the model "
                       "served (its architecture is the config's)"), named[0]
    return False, (f"the model: {config_file} has no _name_or_path and the result files "
                   + ("record none" if not named else "record several: " + ", ".join(named))
                   + "; the runs are taken to serve the config's model"), None


def instances_from(records: Sequence[RunProvenance], given: int | None
                   ) -> tuple[int, str, list[str]]:
    """(instances behind the endpoint, the assumption in words, problems): ``given``
    (``--instances``), else the replicas the files record (llm-d report, or llm-d automation
    keys), else 1 — said so."""
    recorded = sorted({r.replicas for r in records if r.replicas})
    problems = [f"{r.label}: the run had separate prefill and decode replicas; calibrate fits "
                "one colocated pool (calibrate the decode side from a colocated run)"
                for r in records if r.disaggregated]
    if given is not None:
        for r in records:
            if r.replicas and r.replicas != given:
                problems.append(f"{r.label}: the file records {r.replicas} replicas, but "
                                f"--instances says {given}")
        return given, f"{given} instance{'s' * (given != 1)} (--instances)", problems
    if len(recorded) == 1:
        files = ", ".join(r.label for r in records if r.replicas)
        return recorded[0], f"{recorded[0]} instances (recorded in {files})", problems
    if len(recorded) > 1:
        problems.append("the files record different replica counts ("
                        + ", ".join(str(x) for x in recorded) + "); calibrate each "
                        "deployment separately or pass --instances")
        return recorded[0], "", problems
    return 1, ("1 instance behind the endpoint (assumed: the files do not say; pass "
               "--instances N for N replicas behind a router)"), problems


def provenance_mismatches(scenario: Scenario, records: Sequence[RunProvenance],
                          workload: str, tensor_parallel: int | None, instances: int,
                          model_named: bool = True) -> tuple[list[str], int | None]:
    """Every difference between what the result files record and the workload (one message
    per file and key, naming both sides), and the TP to fit at when only the files give one.
    ``tensor_parallel`` is the TP given, else the deployment's (None: neither);
    ``model_named`` False: the workload's model has no name to compare (``served_model_note``)."""
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
        if model_named and r.model is not None and not model_matches(r.model, scenario):
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
    from advisor.core.calibration import AT_PEAK, BOUNDS

    top = BOUNDS["decode_bandwidth_efficiency"][1]
    return [f"{name} = {value:.4g} (the fit's upper bound, {top:g} = the GPU's peak)"
            for name, value in kept.items()
            if name in result.fitted_fields and not name.endswith("_s")
            and value >= top * AT_PEAK]


def file_of(label: str) -> str:
    """The file a run label names (``a.json``, ``a.jsonl#3`` and ``a.json[2]`` → ``a…``)."""
    return re.sub(r"(#\d+|\[\d+\])$", "", label)


def file_of_runs(runs: Sequence[BenchmarkRun]) -> list[str]:
    """The files of ``runs``, in order."""
    return list(dict.fromkeys(file_of(r.label) for r in runs))


def _rms(values: list[float]) -> float:
    import math

    return math.sqrt(sum(v * v for v in values) / len(values)) if values else 0.0


def file_errors(result: CalibrationResult) -> dict[str, tuple[float, float]]:
    """Per file: (RMS log error before, after) over its runs' compared metrics."""
    from advisor.core.calibration import run_residuals

    out: dict[str, tuple[list[float], list[float]]] = {}
    for run, before, after in zip(result.runs, result.predictions_before,
                                  result.predictions_after, strict=True):
        b, a = out.setdefault(file_of(run.label), ([], []))
        rb, ra = run_residuals(run, before), run_residuals(run, after)
        keep = [i for i in range(len(rb)) if rb[i] != 0.0 or ra[i] != 0.0]
        b += [rb[i] for i in keep]
        a += [ra[i] for i in keep]
    return {f: (_rms(b), _rms(a)) for f, (b, a) in out.items()}


def files_made_worse(result: CalibrationResult, tolerance: float = 0.005) -> list[str]:
    """Files whose RMS log error the fit raised by more than ``tolerance`` (0.5 points)."""
    return [f"{name}: RMS log error {b * 100:.1f} % → {a * 100:.1f} %"
            for name, (b, a) in file_errors(result).items() if a > b + tolerance]


def disagreeing_file(instance: Instance, runs: Sequence[BenchmarkRun], budget: int,
                     memory_fraction: float, instances: int, full: CalibrationResult
                     ) -> Disagreement:
    """The file the refused fit leaves worst, and the fit of the others without it: when
    that fit (on at least two files) is within the physical bounds and lowers every file's
    residual, the others agree and this file is the one that disagrees (``accepted``)."""
    from advisor.core.calibration import (
        fit_efficiency,
        kv_tokens_for,
        max_sequences_for,
        predict_run,
        with_factors,
    )

    errors = file_errors(full)
    name = max(errors, key=lambda f: errors[f][1])
    rest = [r for r in runs if file_of(r.label) != name]
    mine = tuple(r for r in runs if file_of(r.label) == name)
    others = tuple(file_of_runs(rest))
    fit = fit_efficiency(instance, rest, budget, memory_fraction, instances)
    kept = {f: getattr(fit.after, f) for f in fit.fitted_fields if fit.constrained[f]}
    problems = physical_problems(fit, kept) + files_made_worse(fit)
    inst = with_factors(instance, fit.after)
    preds = tuple(predict_run(inst, r, budget, max_sequences_for(instance, r, memory_fraction),
                              instances, kv_tokens_for(instance, r, memory_fraction))
                  for r in mine)
    full_preds = tuple(p for r, p in zip(full.runs, full.predictions_after, strict=True)
                       if file_of(r.label) == name)
    return Disagreement(file=name, others=others, result=fit, predictions=preds, runs=mine,
                        accepted=len(others) >= 2 and not problems,
                        problems=tuple(problems), full_predictions=full_preds)


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


@dataclass(frozen=True, kw_only=True)
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
    worse: list[str] = dataclasses.field(default_factory=list)
    """Files whose residual the fit raised (then refused too)."""
    disagreement: Disagreement | None = None
    """The file that disagrees with the others, when one does."""

    @property
    def refused(self) -> bool:
        """Whether the fit was refused (nothing written)."""
        return bool(self.impossible or self.worse)


@dataclass(frozen=True, kw_only=True)
class Disagreement:
    """The file a refused fit misses most, and the fit of the other files without it."""

    file: str
    others: tuple[str, ...]
    result: CalibrationResult
    """The fit without it (its own runs predicted at those factors: ``predictions``)."""
    predictions: tuple[RunPrediction, ...]
    runs: tuple[BenchmarkRun, ...]
    accepted: bool
    """The others (two files or more) fit within the bounds without it: it disagrees."""
    problems: tuple[str, ...]
    """Why the fit without it is refused too (when not ``accepted``)."""
    full_predictions: tuple[RunPrediction, ...]
    """Its runs at the refused fit of every file."""


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
    worse = files_made_worse(result)
    if impossible or worse:
        found = disagreeing_file(inst, runs, budget, scenario.policy.memory_fraction, instances,
                                 result) if len(file_of_runs(runs)) > 1 else None
        return Calibration(instance=inst, token_budget=budget, result=result, kept=kept,
                           dropped=dropped, overlay="", impossible=impossible, worse=worse,
                           disagreement=found)
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
    return Calibration(instance=inst, token_budget=budget, result=result, kept=kept,
                       dropped=dropped, overlay=overlay)
