"""The canonical JSON documents (``schema_version`` 1); every other format renders from them.

Two documents exist, typed by :mod:`advisor.render.document` (the builder below and every
renderer are type-checked against those types, and the JSON Schema is generated from them):

* a *recommendation* (``kind: "recommendation"``), built by :func:`build_report` from a
  scenario and its decision — what ``pd-advisor recommend`` prints;
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
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, cast

from advisor import __version__
from advisor.escaping import json_escaped

if TYPE_CHECKING:  # the core only in annotations: a cached report renders without it
    from advisor.core.distributions import LengthDistribution
    from advisor.core.kv_transfer import KvTransfer
    from advisor.core.results import (
        AllocationSummary,
        ColocatedPlan,
        DeployedPrediction,
        DisaggregatedPlan,
        Fragility,
        Interference,
        ModelResult,
        PhaseResult,
        SplitVariant,
    )
    from advisor.core.scenario import Scenario, TrafficPhase
    from advisor.core.verdict.decision import Boundary, Decision, PhasePlans, Sizing, SplitRow
    from advisor.render import document as doc_t
    from advisor.render import document_fields as fields_t

SCHEMA_VERSION: Literal[1] = 1
"""Version of both JSON documents; bumped only when a key is renamed or removed."""

TOOL_NAME: Literal["pd-advisor"] = "pd-advisor"

GATE_CHECKS: tuple[fields_t.GateCheck, ...] = ("slo-achievable", "mode", "preconditions",
                                            "deployment-slo", "split")
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


def finding_check(finding_id: str) -> fields_t.GateCheck:
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


def _closed_loop(phase: TrafficPhase) -> doc_t.ClosedLoop | None:
    loop = phase.closed_loop
    if loop is None:
        return None
    return cast("doc_t.ClosedLoop", {  # plan: one of the plan kinds the solve uses
        "concurrency": loop.concurrency, "equivalent_rate_rps": loop.rate_rps,
        "ttft_ms_p50": loop.ttft_ms, "tpot_ms_p50": loop.tpot_ms, "e2e_s": loop.e2e_s,
        "plan": loop.plan})


def _finite_batch(phase: TrafficPhase) -> doc_t.FiniteBatch | None:
    batch = phase.finite_batch
    if batch is None:
        return None
    return cast("doc_t.FiniteBatch", {  # plan: one of the two architectures
        "requests": batch.requests, "plan": batch.plan, "plans": [
            {"plan": f.plan, "makespan_s": f.makespan_s, "throughput_rps": f.throughput_rps,
             "ttft_ms": dict(zip(("p50", "p95", "p99"), f.ttft_ms, strict=True)),
             "tpot_ms": dict(zip(("p50", "p95", "p99"), f.tpot_ms, strict=True)),
             "ttft_ms_at_slo": f.ttft_at_slo_ms, "tpot_ms_at_slo": f.tpot_at_slo_ms}
            for f in batch.plans]})


def _length(dist: LengthDistribution) -> doc_t.Lengths:
    return {"mean": dist.mean, "p50": dist.quantile(0.5), "p95": dist.quantile(0.95),
            "max": dist.max_tokens}


# --------------------------------------------------------------------------- sections
def _inputs(sc: Scenario) -> doc_t.Inputs:
    cl = sc.cluster
    dep = sc.deployment
    deployment: doc_t.DeploymentInput | None = None
    if dep is not None:
        deployment = {
            "mode": dep.mode, "chunked_prefill": dep.chunked_prefill,
            "chunk_tokens": dep.chunk_tokens, "tensor_parallel": dep.tensor_parallel,
            "prefill_gpus": dep.prefill_gpus, "decode_gpus": dep.decode_gpus,
            "prefill_tensor_parallel": dep.prefill_tensor_parallel,
            "decode_tensor_parallel": dep.decode_tensor_parallel,
            "max_num_seqs": dep.max_num_seqs, "max_model_len": dep.max_model_len,
            "gpu_memory_utilization": dep.gpu_memory_utilization, "router": dep.router}
        if sc.model.is_moe:  # the pinned EP degrees (absent for dense models)
            deployment["expert_parallel"] = dep.expert_parallel
            deployment["prefill_expert_parallel"] = dep.prefill_expert_parallel
            deployment["decode_expert_parallel"] = dep.decode_expert_parallel
    return {
        "name": sc.name,
        "model": {"id": sc.model.id, "name": sc.model.name,
                  "total_params": round(sc.model.total_params)},  # a count: exact
        "precision": str(sc.precision),
        "precision_tensors": _precision_tensors(sc),
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
            "price_source": cast("doc_t.Cluster", {"price_source": cl.price_source})[
                "price_source"],
        },
        "traffic": [{"name": p.name, "share": p.share, "rate_rps": p.rate_rps,
                     "burstiness": p.burstiness, "prompt_tokens": _length(p.prompt_tokens),
                     "output_tokens": _length(p.output_tokens),
                     "prefix_cache_hit_rate": p.prefix_cache_hit_rate,
                     "concurrency": p.concurrency,
                     "closed_loop": _closed_loop(p),
                     "finite_batch": _finite_batch(p)} for p in sc.phases],
        "slo": {"ttft_ms": sc.slo.ttft_ms, "tpot_ms": sc.slo.tpot_ms,
                "percentile": sc.slo.percentile},
        "autoscaling": sc.autoscaling,
        "router": sc.router,
        "deployment": deployment,
    }


def _interference(i: Interference | None) -> doc_t.Interference | None:
    if i is None:
        return None
    return {"prompt_tokens": i.prompt_tokens, "decode_batch": i.decode_batch,
            "decode_step_ms": i.decode_step_ms, "unchunked_tpot_factor": i.unchunked_tpot_factor,
            "chunked_tpot_factor": i.chunked_tpot_factor, "chunk_tokens": i.chunk_tokens,
            "chunked_safe_rate_rps": i.chunked_safe_rate_rps}


def _cost(sc: Scenario, max_goodput_rps: float | None, phase: str | None
          ) -> tuple[float | None, float | None]:
    """(``usd_per_hour``, ``usd_per_million_output_tokens``) of a plan (core/cost.py): every
    cluster GPU billed, tokens at the plan's max goodput and its phase's mean output."""
    ph = next((p for p in sc.phases if p.name == phase), sc.peak_phase)
    from advisor.core.cost import plan_cost

    cost = plan_cost(sc.cluster.gpus, sc.cluster.usd_per_gpu_hour, max_goodput_rps,
                     ph.output_tokens.mean)
    return cost.usd_per_hour, cost.usd_per_million_output_tokens


def _colocated(plan: ColocatedPlan | None, sc: Scenario, phase: str | None
               ) -> doc_t.Colocated | None:
    if plan is None:
        return None
    usd_hour, usd_tokens = _cost(sc, plan.max_goodput_rps, phase)
    out: doc_t.Colocated = {
        "tensor_parallel": plan.tensor_parallel, "pipeline_stages": plan.pipeline_stages,
        "instances": plan.instances, "gpus": plan.gpus, "chunked": plan.chunked,
        "chunk_tokens": plan.chunk_tokens, "max_goodput_rps": plan.max_goodput_rps,
        "capacity_rps": plan.capacity_rps, "rate_rps": plan.rate_rps,
        "output_tokens_per_s_per_gpu": plan.output_tokens_per_s_per_gpu,
        "percentile": plan.percentile, "ttft_ms": plan.ttft_ms, "tpot_ms": plan.tpot_ms,
        "best_ttft_ms": plan.best_ttft_ms, "best_tpot_ms": plan.best_tpot_ms,
        "overloaded": plan.overloaded, "meets_slo": plan.meets(sc.slo),
        "decode_batch": plan.decode_batch, "max_running_sequences": plan.max_running_sequences,
        "phase": phase, "usd_per_hour": usd_hour, "usd_per_million_output_tokens": usd_tokens,
        "interference": _interference(plan.interference),
    }
    if sc.model.is_moe:
        out["expert_parallel"] = plan.expert_parallel
        out["dp_attention"] = plan.dp_attention
        out["all_to_all_share"] = plan.all_to_all_share
        out["redundant_experts"] = plan.redundant_experts
        out["decode_batch_per_gpu"] = plan.decode_batch * plan.instances / max(plan.gpus, 1)
    return out


def _allocation(a: AllocationSummary, moe: bool = False) -> doc_t.Allocation:
    out: doc_t.Allocation = {
        "prefill_tensor_parallel": a.prefill_tensor_parallel,
        "decode_tensor_parallel": a.decode_tensor_parallel,
        "prefill_pipeline_stages": a.prefill_pipeline_stages,
        "decode_pipeline_stages": a.decode_pipeline_stages,
        "prefill_instances": a.prefill_instances, "decode_instances": a.decode_instances,
        "prefill_gpus": a.prefill_gpus, "decode_gpus": a.decode_gpus,
        "idle_gpus": a.idle_gpus, "max_goodput_rps": a.max_goodput_rps,
        "limited_by": a.limited_by}
    if moe:
        _moe_allocation(out, a)
    return out


def _moe_allocation(out: doc_t.Allocation | doc_t.Disaggregated, a: AllocationSummary) -> None:
    """The EP keys of an allocation (mixture-of-experts models only)."""
    out["prefill_expert_parallel"] = a.prefill_expert_parallel
    out["decode_expert_parallel"] = a.decode_expert_parallel
    out["prefill_dp_attention"] = a.prefill_dp_attention
    out["decode_dp_attention"] = a.decode_dp_attention
    out["prefill_redundant_experts"] = a.prefill_redundant_experts
    out["decode_redundant_experts"] = a.decode_redundant_experts


def _disaggregated(plan: DisaggregatedPlan | None, sc: Scenario,
                   phase: str | None) -> doc_t.Disaggregated | None:
    if plan is None:
        return None
    a = plan.allocation
    usd_hour, usd_tokens = _cost(sc, plan.max_goodput_rps, phase)
    out: doc_t.Disaggregated = {
        "prefill_tensor_parallel": a.prefill_tensor_parallel if a else None,
        "decode_tensor_parallel": a.decode_tensor_parallel if a else None,
        "prefill_pipeline_stages": a.prefill_pipeline_stages if a else None,
        "decode_pipeline_stages": a.decode_pipeline_stages if a else None,
        "prefill_instances": a.prefill_instances if a else None,
        "decode_instances": a.decode_instances if a else None,
        "prefill_gpus": a.prefill_gpus if a else None,
        "decode_gpus": a.decode_gpus if a else None,
        "idle_gpus": a.idle_gpus if a else None,
        "limited_by": a.limited_by if a else None,
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
        "phase": phase, "usd_per_hour": usd_hour, "usd_per_million_output_tokens": usd_tokens,
        "alternatives": [_allocation(x, sc.model.is_moe) for x in plan.alternatives],
    }
    if sc.model.is_moe:
        if a is not None:
            _moe_allocation(out, a)
        out["prefill_all_to_all_share"] = plan.prefill_all_to_all_share
        out["decode_all_to_all_share"] = plan.decode_all_to_all_share
        out["decode_batch_per_gpu"] = (plan.decode_batch / a.decode_gpus * a.decode_instances
                                       if a is not None and a.decode_gpus else None)
    return out


def _kv(kv: KvTransfer | None) -> doc_t.KvTransfer | None:
    if kv is None:
        return None
    return {"link_id": kv.link_id, "bytes_per_token": kv.bytes_per_token,
            "bytes_per_request_mean": kv.bytes_per_request_mean,
            "bytes_per_request_p95": kv.bytes_per_request_p95,
            "demand_bytes_per_s": kv.demand_bytes_per_s,
            "offered_demand_bytes_per_s": kv.offered_demand_bytes_per_s,
            "link_bytes_per_s": kv.link_bytes_per_s, "utilization": kv.utilization,
            "offered_utilization": kv.offered_utilization,
            "transfer_ms": kv.transfer_ms, "serialized_transfer_ms": kv.serialized_transfer_ms,
            "concurrent_transfers": kv.concurrent_transfers, "rate_rps": kv.rate_rps,
            "at_carried_rate": kv.at_carried_rate, "backend": kv.backend, "timing": kv.timing,
            "request_path": kv.request_path, "second_hop_ms": kv.second_hop_ms or None,
            "nics_per_node": kv.nics_per_node, "sender_nics": kv.sender_nics,
            "receiver_nics": kv.receiver_nics}


def _variant(v: SplitVariant) -> doc_t.SplitVariant:
    return {"label": v.label, "prefill_gpus": v.prefill_gpus, "decode_gpus": v.decode_gpus,
            "goodput_rps": v.goodput_rps, "best_goodput_rps": v.best_goodput_rps,
            "loss": v.loss, "prompt_scale": v.prompt_scale, "output_scale": v.output_scale}


def _fragility(f: Fragility | None) -> doc_t.Fragility | None:
    if f is None:
        return None
    return {"drift": f.drift, "drift_loss": f.drift_loss,
            "drifted": [_variant(v) for v in f.drifted],
            "neighbours": [_variant(v) for v in f.neighbours]}


def _phase(p: PhaseResult) -> doc_t.Phase:
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


def _deployed(sc: Scenario, d: Decision) -> doc_t.Deployed:
    from advisor.core.verdict.gate import reference_split_prefill_gpus
    from advisor.render.prose import finding_message

    pred: DeployedPrediction | None = d.model.deployed
    dep = sc.deployment
    assert dep is not None
    goodput = pred.max_goodput_rps if pred is not None else None
    phase = pred.phase if pred is not None else None
    usd_hour, usd_tokens = _cost(sc, goodput, phase)
    out: doc_t.Deployed = {
        "mode": dep.mode, "chunked_prefill": dep.chunked_prefill,
        "tensor_parallel": (pred.tensor_parallel if pred is not None
                            and pred.tensor_parallel is not None else dep.tensor_parallel),
        "chunk_tokens": pred.chunk_tokens if pred is not None else dep.chunk_tokens,
        "prefill_gpus": dep.prefill_gpus, "decode_gpus": dep.decode_gpus,
        "prefill_tensor_parallel": dep.prefill_tensor_parallel,
        "decode_tensor_parallel": dep.decode_tensor_parallel,
        "max_goodput_rps": goodput,
        "rate_rps": pred.rate_rps if pred is not None else None,
        "percentile": pred.percentile if pred is not None else sc.slo.percentile,
        "ttft_ms": pred.ttft_ms if pred is not None else None,
        "tpot_ms": pred.tpot_ms if pred is not None else None,
        "overloaded": pred.overloaded if pred is not None else None,
        "meets_slo": pred.meets_slo if pred is not None else False,
        "feasible": pred.feasible if pred is not None else False,
        "reason": pred.reason if pred is not None else "",
        "phase": phase,
        "best_split_prefill_gpus": (reference_split_prefill_gpus(sc, d.model)
                                    if pred is not None and dep.mode == "disaggregated"
                                    else None),
        "usd_per_hour": usd_hour, "usd_per_million_output_tokens": usd_tokens,
        "findings": [{"id": f.id, "check": finding_check(f.id), "key": f.key,
                      "message": finding_message(sc, d, f)} for f in d.findings],
    }
    if sc.model.is_moe:  # the pinned EP degrees (absent for dense models)
        out["expert_parallel"] = dep.expert_parallel
        out["prefill_expert_parallel"] = dep.prefill_expert_parallel
        out["decode_expert_parallel"] = dep.decode_expert_parallel
    return out


def _policy_files(sc: Scenario) -> list[doc_t.PolicyFile]:
    """Every ``.pd-advisor.yaml`` that changed the policy, with the keys it set (#33)."""
    if "policy_file" not in sc.extras:
        return []
    return [{"path": sc.extras["policy_file"],
             "keys": sc.extras["policy_file_keys"].split(",")}]


def _boundary(b: Boundary) -> doc_t.Boundary:
    out: doc_t.Boundary = {
        "key": b.key, "current": b.current, "flips_at": b.flips_at, "direction": b.direction,
        "kind": b.kind, "to": cast("fields_t.Verdict | None", b.to), "description": b.description}
    return out


def _calibration(sc: Scenario) -> doc_t.Calibration | None:
    """The calibration overlay the numbers use (None: the profiles' factors alone)."""
    cal = sc.calibration
    if cal is None:
        return None
    return {"file": cal.file, "fitted_on": cast("doc_t.FittedOn", dict(cal.fitted_on)),
            "factors": dict(cal.factors)}


# --------------------------------------------------------------------------- the decision
def _phase_plans(p: PhasePlans, sc: Scenario) -> doc_t.PhasePlans:
    def head(plan: ColocatedPlan | DisaggregatedPlan | None) -> float:
        return plan.max_goodput_rps / p.rate_rps if plan is not None else 0.0

    return {"name": p.name, "share": p.share, "rate_rps": p.rate_rps,
            "headroom": {"colocated": head(p.colocated), "unchunked": head(p.unchunked),
                         "disaggregated": head(p.disaggregated)},
            "colocated": _colocated(p.colocated, sc, p.name),
            "unchunked": _colocated(p.unchunked, sc, p.name),
            "disaggregated": _disaggregated(p.disaggregated, sc, p.name),
            "best_split": (None if p.best_split is p.disaggregated
                           else _disaggregated(p.best_split, sc, p.name))}


def _sizing(s: Sizing) -> doc_t.Sizing:
    return {"plan": s.plan, "exists": s.exists, "gpus": s.gpus, "gpus_needed": s.gpus_needed,
            "headroom": s.headroom, "binding_phase": s.binding_phase, "meets_slo": s.meets_slo,
            "over_provisioned": s.over_provisioned}


def _split_row(r: SplitRow, moe: bool) -> doc_t.SplitRow:
    row = cast("doc_t.SplitRow", _allocation(r.allocation, moe))
    row["role"] = r.role
    return row


def _decision(sc: Scenario, d: Decision) -> doc_t.Decision:
    """The decision block (schema_version 1 additions, #28)."""
    out: doc_t.Decision = {
        "recommended": d.recommended,
        "architecture": "disaggregated" if d.verdict == "disaggregate" else "colocated",
        "rule_verdict": d.rule_verdict,
        "overridden": list(d.overridden),
        "any_plan_meets": d.any_plan_meets,
        "binding_phase": d.binding_phase,
        "baseline": d.baseline,
        "gains": {"verdict": d.gain, "per_phase_splits": d.split_gain, "ideal": d.ideal_gain},
        "rounding": {"loss": d.rounding_loss, "phase": d.rounding_phase},
        "phases": [_phase_plans(p, sc) for p in d.phases],
        "sizing": [_sizing(s) for s in d.sizing],
        "split_phase": d.split_phase,
        "splits": [_split_row(r, sc.model.is_moe) for r in d.splits],
    }
    if d.boundaries is not None:  # knife edges are read off the boundaries; check skips both
        out["knife_edges"] = [
            {"key": cast("Literal['cluster.gpus', 'traffic.rate_rps']", k.key),
             "current": k.current, "flips_at": k.flips_at, "to": k.to, "change": k.change}
            for k in d.knife_edges]
    return out


# --------------------------------------------------------------------------- documents
def build_report(scenario: Scenario, decision: Decision, input_path: str,
                 input_sha256: str) -> doc_t.Recommendation:
    """The recommendation document for one workload (see the module docstring).

    ``input_path`` is shown as given (keep it relative for reproducible output);
    ``input_sha256`` is the SHA-256 of the file's content as it was read (``input.sha256``:
    of what a pipe delivered too, #33); the decision's boundaries (when it searched them)
    become ``boundaries``.
    """
    from advisor.render import advice, prose

    sc, d, m = scenario, decision, decision.model
    dis = m.disaggregated
    gain = d.gain
    doc: doc_t.Recommendation = {
        "schema_version": SCHEMA_VERSION,
        "kind": "recommendation",
        "tool": {"name": TOOL_NAME, "version": __version__},
        "input": {"path": input_path, "sha256": input_sha256,
                  "policy_files": _policy_files(sc)},
        "name": sc.name,
        "verdict": d.verdict,
        "slo_met": d.slo_met,
        "summary": prose.summary(sc, d),
        "reasons": list(prose.reasons(sc, d)),
        "warnings": [{"id": w.id, "message": w.message} for w in advice.advisories(sc, d)],
        "measure_next": list(advice.measure_next(sc, d)),
        "preconditions": [{"id": r.id, "question": r.question,  # type: ignore[typeddict-item]
                           "passed": r.passed, "measured": r.measured, "threshold": r.limit,
                           "unit": r.unit, "bound": r.bound,
                           "explanation": prose.explanation(sc, d, r), "status": r.status,
                           "overridden": r.overridden} for r in d.rules],
        "deciding_rule": d.deciding_rule,  # type: ignore[typeddict-item]  # DECIDING_RULES
        "headline_reason": prose.headline_reason(sc, d),
        "disagg_gain": gain,
        "disagg_gain_unbounded": gain is not None and math.isinf(gain) and gain > 0,
        "disagg_ideal_gain": d.ideal_gain,
        "rounding_loss": d.rounding_loss,
        "mix_loss": d.mix_loss,
        "fragility": _fragility(m.fragility),
        "inputs": _inputs(sc),
        "calibration": _calibration(sc),
        "policy": dict(vars(sc.policy)),
        "colocated": _colocated(m.colocated, sc, m.colocated_phase),
        "unchunked": _colocated(m.unchunked, sc, None),
        "disaggregated": _disaggregated(dis, sc, m.disaggregated_phase),
        "kv_transfer": _kv(dis.kv_transfer if dis is not None else None),
        "phases": [_phase(p) for p in m.phases],
        "static_mix_loss": m.static_mix_loss,
        "static_allocation": (None if m.static_allocation is None
                              else _allocation(m.static_allocation)),
        "excluded": [{"instance": e.label, "reason": e.reason} for e in m.excluded],
        "gpus_needed": {"colocated": m.colocated_gpus_needed,
                        "disaggregated": m.disaggregated_gpus_needed,
                        "unchunked": m.unchunked_gpus_needed},
        "headroom": {"colocated": m.colocated_headroom,
                     "disaggregated": m.disaggregated_headroom,
                     "unchunked": m.unchunked_headroom},
        "decision": _decision(sc, d),
    }
    if d.boundaries is not None:
        doc["boundaries"] = [_boundary(b) for b in d.boundaries]
    if sc.deployment is not None:
        doc["deployed"] = _deployed(sc, d)
    deployment = doc["inputs"]["deployment"]
    if deployment is not None and sc.engine.speculative is not None:
        deployment["speculative"] = _speculative(sc, m)
    report: doc_t.Recommendation = sanitize(doc)  # the same shape, rounded
    return report


def _speculative(sc: Scenario, m: ModelResult) -> fields_t.SpeculativeInput:
    """``inputs.deployment.speculative``: the setting and its effect (docs/model.md §3.6)."""
    from advisor.core.speculative import DEFAULT_ACCEPTANCE
    from advisor.core.speculative_effect import speculative_effects

    spec = sc.engine.speculative
    assert spec is not None
    effects: list[fields_t.SpeculativeEffect] = [
        cast("fields_t.SpeculativeEffect", dict(vars(e))) for e in speculative_effects(sc, m)]
    default = DEFAULT_ACCEPTANCE[spec.method]
    return {"method": spec.method, "draft_tokens": spec.draft_tokens,
            "acceptance_rate": spec.acceptance_rate,
            "accepted_tokens_per_step": spec.tokens_per_step,
            "acceptance_source": cast("Literal['workload', 'default']", spec.acceptance_source),
            "default_acceptance_source": (default.source if spec.acceptance_source == "default"
                                          else None),
            "verify_tokens_per_sequence": spec.verify_tokens_per_sequence,
            "draft_model": spec.draft_model_id, "effect": effects}


Locator = Callable[[str], tuple[int, int]]
"""Maps a dotted workload key (``deployment.mode``) to its 1-based ``(line, col)``."""


def check_entry(report: doc_t.Recommendation, locate: Locator,
                place: Callable[[str], str] | None = None) -> doc_t.FileEntry:
    """One file's result in a check run, from its recommendation document.

    Findings get the position of their key from ``locate`` (the CLI reads it from the YAML);
    with ``place``, also the file that position is in (``path``: a Kubernetes manifest for
    ``deployment`` keys read from one). A file without a ``deployment:`` block is an error
    (nothing to gate).
    """
    path = report["input"]["path"]
    deployed = report.get("deployed")
    if deployed is None:
        line, col = locate("deployment")
        return {"path": path, "status": "error", "verdict": report["verdict"],
                "slo_met": report["slo_met"], "findings": [], "warnings": [],
                "problems": [{"path": path, "line": line, "col": col, "key": "deployment",
                              "message": MISSING_DEPLOYMENT_MESSAGE}],
                "report": report}
    findings: list[doc_t.LocatedFinding] = []
    for f in deployed["findings"]:
        line, col = locate(f["key"])
        found: doc_t.LocatedFinding = {"id": f["id"], "check": f["check"], "key": f["key"],
                                       "message": f["message"], "line": line, "col": col}
        if place is not None:
            found["path"] = place(f["key"])
        findings.append(found)
    warnings: list[doc_t.LocatedWarning] = []
    if deployed["mode"] == "disaggregated":
        line, col = locate("deployment.mode")
        for w in report["warnings"]:
            warning: doc_t.LocatedWarning = {"id": w["id"], "message": w["message"],
                                             "key": "deployment.mode", "line": line, "col": col}
            if place is not None:
                warning["path"] = place("deployment.mode")
            warnings.append(warning)
    return {"path": path, "status": "fail" if findings else "pass",
            "verdict": report["verdict"], "slo_met": report["slo_met"], "findings": findings,
            "warnings": warnings, "problems": [], "report": report}


def check_error_entry(path: str, problems: Iterable[Any]) -> doc_t.FileEntry:
    """One file that could not be evaluated; ``problems`` are ``InputProblem``-like objects."""
    return {"path": path, "status": "error", "verdict": None, "slo_met": None,
            "findings": [], "warnings": [],
            "problems": [{"path": p.path, "line": p.line, "col": p.col, "key": p.key,
                          "message": p.message} for p in problems],
            "report": None}


def build_check(entries: Iterable[doc_t.FileEntry]) -> doc_t.CheckRun:
    """The check-run document: every file's entry and the overall status.

    The status is ``error`` if any file could not be evaluated, else ``fail`` if any file has
    a finding, else ``pass`` — the exit code follows it (2, 1, 0) whatever the format.
    """
    files = list(entries)
    counts: doc_t.Counts = {"files": len(files),
                            "passed": sum(f["status"] == "pass" for f in files),
                            "failed": sum(f["status"] == "fail" for f in files),
                            "errors": sum(f["status"] == "error" for f in files)}
    status: Literal["pass", "fail", "error"] = (
        "error" if counts["errors"] else "fail" if counts["failed"] else "pass")
    doc: doc_t.CheckRun = {"schema_version": SCHEMA_VERSION, "kind": "check",
                           "tool": {"name": TOOL_NAME, "version": __version__},
                           "status": status, "counts": counts, "checks": list(GATE_CHECKS),
                           "files": files}
    report: doc_t.CheckRun = sanitize(doc)  # the same shape, rounded
    return report


def as_check(report: doc_t.Recommendation) -> doc_t.CheckRun:
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


def _precision_tensors(sc: Scenario) -> fields_t.PrecisionTensors:
    """Weight and KV formats, the compute format, and each group's when one has its own."""
    from advisor.core.precision import GROUPS, format_compute  # a scenario: the core is loaded

    gpu, p = sc.cluster.gpu, sc.model.formats(sc.precision)
    tensors = cast("fields_t.PrecisionTensors", {
        "weights": sc.precision.weights, "kv_cache": sc.precision.kv_cache,
        "compute": gpu.compute_format(sc.precision)})
    if not p.uniform:
        tensors["groups"] = cast("fields_t.GroupFormats", {g: {
            "weights": p.group_format(g), "compute": format_compute(
                p.group_compute_weights(g), gpu.has_fp8_compute, gpu.has_fp4_compute)}
            for g in GROUPS})
    return tensors
