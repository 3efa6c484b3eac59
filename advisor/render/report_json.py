"""The canonical JSON documents (``schema_version`` 1); every other format renders from them.

Two documents exist:

* a *recommendation* (``kind: "recommendation"``), built by :func:`build_report` from a
  scenario and its assessment — what ``pd-advisor recommend`` prints;
* a *check run* (``kind: "check"``), built by :func:`build_check` from one entry per workload
  file (:func:`check_entry`, :func:`check_error_entry`) — what ``pd-advisor check`` prints.

Rules for both: units live in key names (``_ms``, ``_rps``, ``_bytes_per_s``); fractions stay
fractions (0.05, never 5); a value that does not exist (an overloaded plan's latency, a plan
that cannot be built) is ``null``; no NaN or infinity ever appears (:func:`sanitize`).
Keys may be added within schema version 1; none are renamed or removed.

Numbers: every float is rounded to :data:`SIGNIFICANT_DIGITS` (6) significant digits by
:func:`json_number` (``0.30000000000000004`` is written ``0.3``, ``0.08192875127430543``
``0.0819288``), and ``-0.0`` is written ``0.0``; integers are written exactly. The rule is
applied by :func:`sanitize`, so the in-memory documents every other format renders from carry
the same numbers, and every JSON output (recommendation, check run, sweep, simulation) is
written by :func:`json_text`. The same input thus gives byte-identical JSON on every run,
whatever ``PYTHONHASHSEED``, and last-bit differences of floating-point libraries between
platforms do not show unless a value lies on a rounding boundary.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from advisor import __version__
from advisor.core.cost import plan_cost
from advisor.core.distributions import LengthDistribution
from advisor.core.kv_transfer import KvTransfer
from advisor.core.results import (
    AllocationSummary,
    ColocatedPlan,
    DeployedPrediction,
    DisaggregatedPlan,
    Fragility,
    Interference,
    PhaseResult,
    SplitVariant,
)
from advisor.core.scenario import Scenario, TrafficPhase
from advisor.core.verdict.rules import Assessment, Finding
from advisor.escaping import json_escaped

if TYPE_CHECKING:
    from advisor.core.analysis.boundaries import Boundary

SCHEMA_VERSION = 1
"""Version of both JSON documents; bumped only when a key is renamed or removed."""

TOOL_NAME = "pd-advisor"

GATE_CHECKS: tuple[str, ...] = ("slo-achievable", "mode", "preconditions", "deployment-slo",
                                "split")
"""The checks ``check`` runs on each file (one JUnit test case each)."""

GATE_CHECK_TITLES: dict[str, str] = {
    "slo-achievable": "some plan meets the SLOs on the GPUs given",
    "mode": "deployment.mode agrees with the verdict",
    "preconditions": "a disaggregated deployment satisfies every precondition",
    "deployment-slo": "the declared deployment meets the SLOs at the workload's rate",
    "split": "a disaggregated split is within tolerance of the best integer split",
}

MISSING_DEPLOYMENT_MESSAGE = (
    "no `deployment:` block, so there is nothing to gate; add one describing what runs today: "
    "`deployment.mode` (colocated or disaggregated); for colocated also "
    "`deployment.tensor_parallel`, `deployment.chunked_prefill` and optionally "
    "`deployment.chunk_tokens`; for disaggregated `deployment.prefill_gpus` and "
    "`deployment.decode_gpus` (optionally `deployment.prefill_tensor_parallel` and "
    "`deployment.decode_tensor_parallel`)")
"""What ``check`` says about a workload without ``deployment:`` (the file then exits 2)."""


# --------------------------------------------------------------------------- helpers
SIGNIFICANT_DIGITS = 6
"""Significant digits of every float in a JSON document (far beyond the model's accuracy;
the simulator's figures have always used the same rule)."""


def json_number(value: float) -> float | None:
    """The one rounding rule of JSON output: :data:`SIGNIFICANT_DIGITS` significant digits.

    None for NaN and infinities; ``-0.0`` becomes ``0.0``. Idempotent.
    """
    if not math.isfinite(value):
        return None
    return float(f"{value:.{SIGNIFICANT_DIGITS}g}") + 0.0  # + 0.0 turns -0.0 into 0.0


def sanitize(value: Any) -> Any:
    """A JSON-safe copy: floats rounded by :func:`json_number` (non-finite ones become None),
    numpy scalars plain Python values."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return json_number(value)
    if isinstance(value, Mapping):
        return {str(k): sanitize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [sanitize(v) for v in value]
    if hasattr(value, "item"):  # numpy scalar
        return sanitize(value.item())
    raise TypeError(f"cannot put {type(value).__name__} in a report")


def json_text(doc: Any) -> str:
    """Every JSON document pd-advisor writes: :func:`sanitize`-d, indented, key order kept;
    non-printable characters of its strings as ``\\uXXXX`` escapes
    (:func:`advisor.escaping.json_escaped`, #33)."""
    return json_escaped(json.dumps(sanitize(doc), indent=2, ensure_ascii=False,
                                   allow_nan=False)) + "\n"


def finding_check(finding_id: str) -> str:
    """The gate check (one of :data:`GATE_CHECKS`) a finding id belongs to."""
    if finding_id == "slo-unmet":
        return "slo-achievable"
    if finding_id in ("mode-contradicts-verdict", "chunking-off"):
        return "mode"
    if finding_id.startswith("precondition-"):
        return "preconditions"
    if finding_id == "split-off":
        return "split"
    return "deployment-slo"


def _closed_loop(phase: TrafficPhase) -> dict[str, Any] | None:
    loop = phase.closed_loop
    if loop is None:
        return None
    return {"concurrency": loop.concurrency, "equivalent_rate_rps": loop.rate_rps,
            "ttft_ms_p50": loop.ttft_ms, "tpot_ms_p50": loop.tpot_ms, "e2e_s": loop.e2e_s,
            "plan": loop.plan}


def _length(dist: LengthDistribution) -> dict[str, Any]:
    return {"mean": dist.mean, "p50": dist.quantile(0.5), "p95": dist.quantile(0.95),
            "max": dist.max_tokens}


# --------------------------------------------------------------------------- sections
def _inputs(sc: Scenario) -> dict[str, Any]:
    cl = sc.cluster
    dep = sc.deployment
    return {
        "name": sc.name,
        "model": {"id": sc.model.id, "name": sc.model.name,
                  "total_params": round(sc.model.total_params)},  # a count: exact
        "precision": str(sc.precision),
        "precision_tensors": {"weights": sc.precision.weights,
                              "kv_cache": sc.precision.kv_cache,
                              "compute": cl.gpu.compute_format(sc.precision)},
        "engine": sc.engine.name,
        "engine_profile": {"id": sc.engine.id, "name": sc.engine.title,
                           "versions": sc.engine.versions},
        "cluster": {
            "gpu": {"id": cl.gpu.id, "name": cl.gpu.name},
            "gpus": cl.gpus, "gpus_per_node": cl.gpus_per_node, "nodes": cl.nodes,
            "intra_node": {"id": cl.intra_node.id,
                           "bandwidth_bytes_per_s": cl.intra_node.bandwidth_bytes_per_s},
            "inter_node": None if cl.inter_node is None else {
                "id": cl.inter_node.id,
                "bandwidth_bytes_per_s": cl.inter_node.bandwidth_bytes_per_s},
            "usd_per_gpu_hour": cl.usd_per_gpu_hour,
            "price_source": cl.price_source,
        },
        "traffic": [{"name": p.name, "share": p.share, "rate_rps": p.rate_rps,
                     "burstiness": p.burstiness, "prompt_tokens": _length(p.prompt_tokens),
                     "output_tokens": _length(p.output_tokens),
                     "prefix_cache_hit_rate": p.prefix_cache_hit_rate,
                     "concurrency": p.concurrency,
                     "closed_loop": _closed_loop(p)} for p in sc.phases],
        "slo": {"ttft_ms": sc.slo.ttft_ms, "tpot_ms": sc.slo.tpot_ms,
                "percentile": sc.slo.percentile},
        "autoscaling": sc.autoscaling,
        "router": sc.router,
        "deployment": None if dep is None else {
            "mode": dep.mode, "chunked_prefill": dep.chunked_prefill,
            "chunk_tokens": dep.chunk_tokens, "tensor_parallel": dep.tensor_parallel,
            "prefill_gpus": dep.prefill_gpus, "decode_gpus": dep.decode_gpus,
            "prefill_tensor_parallel": dep.prefill_tensor_parallel,
            "decode_tensor_parallel": dep.decode_tensor_parallel,
            "max_num_seqs": dep.max_num_seqs, "max_model_len": dep.max_model_len,
            "gpu_memory_utilization": dep.gpu_memory_utilization, "router": dep.router,
            **_pinned_ep(sc)},
    }


def _pinned_ep(sc: Scenario) -> dict[str, Any]:
    """The deployment's pinned EP degrees (MoE models only; absent for dense models)."""
    dep = sc.deployment
    if dep is None or not sc.model.is_moe:
        return {}
    return {"expert_parallel": dep.expert_parallel,
            "prefill_expert_parallel": dep.prefill_expert_parallel,
            "decode_expert_parallel": dep.decode_expert_parallel}


def _interference(i: Interference | None) -> dict[str, Any] | None:
    if i is None:
        return None
    return {"prompt_tokens": i.prompt_tokens, "decode_batch": i.decode_batch,
            "decode_step_ms": i.decode_step_ms, "unchunked_tpot_factor": i.unchunked_tpot_factor,
            "chunked_tpot_factor": i.chunked_tpot_factor, "chunk_tokens": i.chunk_tokens,
            "chunked_safe_rate_rps": i.chunked_safe_rate_rps}


def _cost(sc: Scenario, max_goodput_rps: float | None, phase: str | None) -> dict[str, Any]:
    """``usd_per_hour`` and ``usd_per_million_output_tokens`` of a plan (core/cost.py): every
    cluster GPU billed, tokens at the plan's max goodput and its phase's mean output."""
    ph = next((p for p in sc.phases if p.name == phase), sc.peak_phase)
    cost = plan_cost(sc.cluster.gpus, sc.cluster.usd_per_gpu_hour, max_goodput_rps,
                     ph.output_tokens.mean)
    return {"usd_per_hour": cost.usd_per_hour,
            "usd_per_million_output_tokens": cost.usd_per_million_output_tokens}


def _colocated(plan: ColocatedPlan | None, sc: Scenario, phase: str | None
               ) -> dict[str, Any] | None:
    if plan is None:
        return None
    return {
        "tensor_parallel": plan.tensor_parallel, "pipeline_stages": plan.pipeline_stages,
        "instances": plan.instances, "gpus": plan.gpus, "chunked": plan.chunked,
        "chunk_tokens": plan.chunk_tokens, "max_goodput_rps": plan.max_goodput_rps,
        "capacity_rps": plan.capacity_rps, "rate_rps": plan.rate_rps,
        "output_tokens_per_s_per_gpu": plan.output_tokens_per_s_per_gpu,
        "percentile": plan.percentile, "ttft_ms": plan.ttft_ms, "tpot_ms": plan.tpot_ms,
        "best_ttft_ms": plan.best_ttft_ms, "best_tpot_ms": plan.best_tpot_ms,
        "overloaded": plan.overloaded, "meets_slo": plan.meets(sc.slo),
        "decode_batch": plan.decode_batch, "max_running_sequences": plan.max_running_sequences,
        "phase": phase,
        **_cost(sc, plan.max_goodput_rps, phase),
        "interference": _interference(plan.interference),
        **({"expert_parallel": plan.expert_parallel, "dp_attention": plan.dp_attention,
            "all_to_all_share": plan.all_to_all_share,
            "redundant_experts": plan.redundant_experts,
            "decode_batch_per_gpu": plan.decode_batch * plan.instances / max(plan.gpus, 1)}
           if sc.model.is_moe else {}),
    }


def _allocation(a: AllocationSummary, moe: bool = False) -> dict[str, Any]:
    ep = ({"prefill_expert_parallel": a.prefill_expert_parallel,
           "decode_expert_parallel": a.decode_expert_parallel,
           "prefill_dp_attention": a.prefill_dp_attention,
           "decode_dp_attention": a.decode_dp_attention,
           "prefill_redundant_experts": a.prefill_redundant_experts,
           "decode_redundant_experts": a.decode_redundant_experts} if moe else {})
    return {**ep, "prefill_tensor_parallel": a.prefill_tensor_parallel,
            "decode_tensor_parallel": a.decode_tensor_parallel,
            "prefill_pipeline_stages": a.prefill_pipeline_stages,
            "decode_pipeline_stages": a.decode_pipeline_stages,
            "prefill_instances": a.prefill_instances, "decode_instances": a.decode_instances,
            "prefill_gpus": a.prefill_gpus, "decode_gpus": a.decode_gpus,
            "idle_gpus": a.idle_gpus, "max_goodput_rps": a.max_goodput_rps,
            "limited_by": a.limited_by}


_EMPTY_ALLOCATION: dict[str, Any] = dict.fromkeys((
    "prefill_tensor_parallel", "decode_tensor_parallel", "prefill_pipeline_stages",
    "decode_pipeline_stages", "prefill_instances", "decode_instances", "prefill_gpus",
    "decode_gpus", "idle_gpus", "limited_by"))


def _disaggregated(plan: DisaggregatedPlan | None, sc: Scenario,
                   phase: str | None) -> dict[str, Any] | None:
    if plan is None:
        return None
    allocation = dict(_EMPTY_ALLOCATION)
    if plan.allocation is not None:
        allocation.update(_allocation(plan.allocation, sc.model.is_moe))
    allocation.pop("max_goodput_rps", None)
    return {
        **allocation,
        "ideal_prefill_fraction": plan.ideal_prefill_fraction,
        "max_goodput_rps": plan.max_goodput_rps,
        "ideal_max_goodput_rps": plan.ideal_max_goodput_rps,
        "rounding_loss": plan.rounding_loss, "rate_rps": plan.rate_rps,
        "output_tokens_per_s_per_gpu": plan.output_tokens_per_s_per_gpu,
        "percentile": plan.percentile, "ttft_ms": plan.ttft_ms, "tpot_ms": plan.tpot_ms,
        "best_ttft_ms": plan.best_ttft_ms, "best_tpot_ms": plan.best_tpot_ms,
        "overloaded": plan.overloaded, "meets_slo": plan.meets(sc.slo),
        "decode_batch": plan.decode_batch,
        "decode_max_running_sequences": plan.decode_max_running_sequences,
        "prefill_saturating_tokens": plan.prefill_saturating_tokens,
        "prefill_rate_per_instance_rps": plan.prefill_rate_per_instance_rps,
        "decode_rate_per_instance_rps": plan.decode_rate_per_instance_rps,
        "phase": phase,
        **_cost(sc, plan.max_goodput_rps, phase),
        "alternatives": [_allocation(a, sc.model.is_moe) for a in plan.alternatives],
        **({"prefill_all_to_all_share": plan.prefill_all_to_all_share,
            "decode_all_to_all_share": plan.decode_all_to_all_share,
            "decode_batch_per_gpu": (plan.decode_batch / plan.allocation.decode_gpus
                                     * plan.allocation.decode_instances)
            if plan.allocation is not None and plan.allocation.decode_gpus else None}
           if sc.model.is_moe else {}),
    }


def _kv(kv: KvTransfer | None) -> dict[str, Any] | None:
    if kv is None:
        return None
    return {"link_id": kv.link_id, "bytes_per_token": kv.bytes_per_token,
            "bytes_per_request_mean": kv.bytes_per_request_mean,
            "bytes_per_request_p95": kv.bytes_per_request_p95,
            "demand_bytes_per_s": kv.demand_bytes_per_s,
            "link_bytes_per_s": kv.link_bytes_per_s, "utilization": kv.utilization,
            "transfer_ms": kv.transfer_ms, "serialized_transfer_ms": kv.serialized_transfer_ms,
            "concurrent_transfers": kv.concurrent_transfers, "rate_rps": kv.rate_rps,
            "at_carried_rate": kv.at_carried_rate}


def _variant(v: SplitVariant) -> dict[str, Any]:
    return {"label": v.label, "prefill_gpus": v.prefill_gpus, "decode_gpus": v.decode_gpus,
            "goodput_rps": v.goodput_rps, "best_goodput_rps": v.best_goodput_rps,
            "loss": v.loss, "prompt_scale": v.prompt_scale, "output_scale": v.output_scale}


def _fragility(f: Fragility | None) -> dict[str, Any] | None:
    if f is None:
        return None
    return {"drift": f.drift, "drift_loss": f.drift_loss,
            "drifted": [_variant(v) for v in f.drifted],
            "neighbours": [_variant(v) for v in f.neighbours]}


def _phase(p: PhaseResult) -> dict[str, Any]:
    d = p.disaggregated
    a = d.allocation if d is not None else None
    return {
        "name": p.name, "share": p.share, "rate_rps": p.rate_rps,
        "prompt_tokens_mean": p.prompt_tokens_mean, "output_tokens_mean": p.output_tokens_mean,
        "ideal_prefill_fraction": d.ideal_prefill_fraction if d else None,
        "prefill_gpus": a.prefill_gpus if a else None,
        "decode_gpus": a.decode_gpus if a else None,
        "rounding_loss": d.rounding_loss if d else None,
        "colocated_max_goodput_rps": p.colocated.max_goodput_rps if p.colocated else None,
        "unchunked_max_goodput_rps": p.unchunked.max_goodput_rps if p.unchunked else None,
        "disaggregated_max_goodput_rps": d.max_goodput_rps if d else None,
        "static_goodput_rps": p.static_goodput_rps,
    }


def _finding(f: Finding) -> dict[str, Any]:
    return {"id": f.id, "check": finding_check(f.id), "key": f.key, "message": f.message}


def _deployed(sc: Scenario, pred: DeployedPrediction | None,
              findings: Iterable[Finding]) -> dict[str, Any]:
    dep = sc.deployment
    assert dep is not None
    base: dict[str, Any] = {
        "mode": dep.mode, "chunked_prefill": dep.chunked_prefill,
        "tensor_parallel": dep.tensor_parallel, "chunk_tokens": dep.chunk_tokens,
        "prefill_gpus": dep.prefill_gpus, "decode_gpus": dep.decode_gpus,
        "prefill_tensor_parallel": dep.prefill_tensor_parallel,
        "decode_tensor_parallel": dep.decode_tensor_parallel, **_pinned_ep(sc),
        "max_goodput_rps": None, "rate_rps": None, "percentile": sc.slo.percentile,
        "ttft_ms": None, "tpot_ms": None, "overloaded": None, "meets_slo": False,
        "feasible": False, "reason": "", "phase": None, "best_split_prefill_gpus": None,
    }
    if pred is not None:
        base.update({
            "tensor_parallel": pred.tensor_parallel if pred.tensor_parallel is not None
            else dep.tensor_parallel,
            "chunk_tokens": pred.chunk_tokens, "max_goodput_rps": pred.max_goodput_rps,
            "rate_rps": pred.rate_rps, "percentile": pred.percentile, "ttft_ms": pred.ttft_ms,
            "tpot_ms": pred.tpot_ms, "overloaded": pred.overloaded, "meets_slo": pred.meets_slo,
            "feasible": pred.feasible, "reason": pred.reason, "phase": pred.phase,
            "best_split_prefill_gpus": pred.best_split_prefill_gpus})
    base.update(_cost(sc, base["max_goodput_rps"], base["phase"]))
    base["findings"] = [_finding(f) for f in findings]
    return base


def _policy_files(sc: Scenario) -> list[dict[str, Any]]:
    """Every ``.pd-advisor.yaml`` that changed the policy, with the keys it set (#33)."""
    if "policy_file" not in sc.extras:
        return []
    return [{"path": sc.extras["policy_file"],
             "keys": sc.extras["policy_file_keys"].split(",")}]


def _policy(sc: Scenario) -> dict[str, Any]:
    return dict(vars(sc.policy))


def _boundary(b: Boundary) -> dict[str, Any]:
    return {"key": b.key, "current": b.current, "flips_at": b.flips_at,
            "direction": b.direction, "kind": b.kind, "to": b.to,
            "description": b.description}


# --------------------------------------------------------------------------- documents
def _calibration(sc: Scenario) -> dict[str, Any] | None:
    """The calibration overlay the numbers use (None: the profiles' factors alone)."""
    cal = sc.calibration
    if cal is None:
        return None
    return {"file": cal.file, "fitted_on": dict(cal.fitted_on), "factors": dict(cal.factors)}


def build_report(scenario: Scenario, assessment: Assessment, input_path: str,
                 input_sha256: str, boundaries: Sequence[Boundary] | None = None
                 ) -> dict[str, Any]:
    """The recommendation document for one workload (see the module docstring).

    ``input_path`` is shown as given (keep it relative for reproducible output);
    ``input_sha256`` is the SHA-256 of the file's content as it was read (``input.sha256``:
    of what a pipe delivered too, #33); ``boundaries``
    (``advisor.core.analysis.boundaries.verdict_boundaries``) become ``boundaries`` when given.
    """
    sc, a, m = scenario, assessment, assessment.model
    d = m.disaggregated
    gain = a.disagg_gain
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "kind": "recommendation",
        "tool": {"name": TOOL_NAME, "version": __version__},
        "input": {"path": input_path, "sha256": input_sha256,
                  "policy_files": _policy_files(sc)},
        "name": sc.name,
        "verdict": a.verdict,
        "slo_met": a.slo_met,
        "summary": a.summary,
        "reasons": list(a.reasons),
        "warnings": [{"id": w.id, "message": w.message} for w in a.warnings],
        "measure_next": list(a.measure_next),
        "preconditions": [{"id": p.id, "question": p.question, "passed": p.passed,
                           "measured": p.measured, "threshold": p.threshold, "unit": p.unit,
                           "bound": p.bound, "explanation": p.explanation}
                          for p in a.preconditions],
        "deciding_rule": a.deciding_rule,
        "headline_reason": a.headline_reason,
        "disagg_gain": gain,
        "disagg_gain_unbounded": gain is not None and math.isinf(gain) and gain > 0,
        "disagg_ideal_gain": a.ideal_gain,
        "rounding_loss": a.rounding_loss,
        "mix_loss": a.mix_loss if a.mix_loss is not None else 0.0,
        "fragility": _fragility(m.fragility),
        "inputs": _inputs(sc),
        "calibration": _calibration(sc),
        "policy": _policy(sc),
        "colocated": _colocated(m.colocated, sc, m.colocated_phase),
        "unchunked": _colocated(m.unchunked, sc, None),
        "disaggregated": _disaggregated(d, sc, m.disaggregated_phase),
        "kv_transfer": _kv(d.kv_transfer if d is not None else None),
        "phases": [_phase(p) for p in m.phases],
        "static_mix_loss": m.static_mix_loss,
        "static_allocation": (None if m.static_allocation is None
                              else _allocation(m.static_allocation)),
        "excluded": [{"instance": e.label, "reason": e.reason} for e in m.excluded],
        "gpus_needed": {"colocated": m.colocated_gpus_needed,
                        "disaggregated": m.disaggregated_gpus_needed},
        "headroom": {"colocated": m.colocated_headroom,
                     "disaggregated": m.disaggregated_headroom},
    }
    if boundaries is not None:
        doc["boundaries"] = [_boundary(b) for b in boundaries]
    if sc.deployment is not None:
        doc["deployed"] = _deployed(sc, m.deployed, a.findings)
    report: dict[str, Any] = sanitize(doc)  # the same JSON shape, rounded
    return report


Locator = Callable[[str], tuple[int, int]]
"""Maps a dotted workload key (``deployment.mode``) to its 1-based ``(line, col)``."""


def check_entry(report: Mapping[str, Any], locate: Locator,
                place: Callable[[str], str] | None = None) -> dict[str, Any]:
    """One file's result in a check run, from its recommendation document.

    Findings get the position of their key from ``locate`` (the CLI reads it from the YAML);
    with ``place``, also the file that position is in (``path``: a Kubernetes manifest for
    ``deployment`` keys read from one). A file without a ``deployment:`` block is an error
    (nothing to gate).
    """
    path = report["input"]["path"]

    def at(key: str) -> dict[str, Any]:
        line, col = locate(key)
        return {"line": line, "col": col} | ({"path": place(key)} if place else {})

    deployed = report.get("deployed")
    if deployed is None:
        line, col = locate("deployment")
        return {"path": path, "status": "error", "verdict": report["verdict"],
                "slo_met": report["slo_met"], "findings": [], "warnings": [],
                "problems": [{"path": path, "line": line, "col": col, "key": "deployment",
                              "message": MISSING_DEPLOYMENT_MESSAGE}],
                "report": dict(report)}
    findings = [{**f, **at(f["key"])} for f in deployed["findings"]]
    warnings = [{**w, "key": "deployment.mode", **at("deployment.mode")}
                for w in report["warnings"]] if deployed["mode"] == "disaggregated" else []
    return {"path": path, "status": "fail" if findings else "pass",
            "verdict": report["verdict"], "slo_met": report["slo_met"], "findings": findings,
            "warnings": warnings, "problems": [], "report": dict(report)}


def check_error_entry(path: str, problems: Iterable[Any]) -> dict[str, Any]:
    """One file that could not be evaluated; ``problems`` are ``InputProblem``-like objects."""
    return {"path": path, "status": "error", "verdict": None, "slo_met": None,
            "findings": [], "warnings": [],
            "problems": [{"path": p.path, "line": p.line, "col": p.col, "key": p.key,
                          "message": p.message} for p in problems],
            "report": None}


def build_check(entries: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The check-run document: every file's entry and the overall status.

    The status is ``error`` if any file could not be evaluated, else ``fail`` if any file has
    a finding, else ``pass`` — the exit code follows it (2, 1, 0) whatever the format.
    """
    files = [dict(e) for e in entries]
    counts = {"files": len(files),
              "passed": sum(f["status"] == "pass" for f in files),
              "failed": sum(f["status"] == "fail" for f in files),
              "errors": sum(f["status"] == "error" for f in files)}
    status = "error" if counts["errors"] else "fail" if counts["failed"] else "pass"
    doc = {"schema_version": SCHEMA_VERSION, "kind": "check",
           "tool": {"name": TOOL_NAME, "version": __version__},
           "status": status, "counts": counts, "checks": list(GATE_CHECKS), "files": files}
    report: dict[str, Any] = sanitize(doc)  # the same JSON shape, rounded
    return report


def as_check(report: Mapping[str, Any]) -> dict[str, Any]:
    """A one-file check run from a recommendation (positions unknown: every key at 1:1).

    Lets the check-only formats (github, sarif, junit) render a saved recommendation.
    """
    return build_check([check_entry(report, lambda key: (1, 1))])


def exit_code(check_doc: Mapping[str, Any], exit_zero: bool = False) -> int:
    """0 pass, 1 fail (0 with ``exit_zero``), 2 error (even with ``exit_zero``)."""
    status = check_doc["status"]
    if status == "error":
        return 2
    if status == "fail":
        return 0 if exit_zero else 1
    return 0
