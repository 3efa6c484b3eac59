"""The JSON Schema (draft-07) of pd-advisor's JSON output, ``schema_version`` 1.

One file describes both documents: ``definitions.recommendation`` (``recommend --format
json``) and ``definitions.check`` (``check --format json``); the root accepts either, told
apart by ``kind``. Objects forbid unknown keys so that the schema and
:mod:`advisor.render.report_json` cannot drift apart silently (a test validates every
example's output); keys are only ever added within version 1.

The committed copy lives at ``advisor/schemas/report.schema.json``::

    python -m advisor.render.report_schema            # print
    python -m advisor.render.report_schema --write    # regenerate the committed copy
    python -m advisor.render.report_schema --check    # exit 1 if the committed copy drifted
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from advisor.core.scenario import ROUTER_POLICIES

DRAFT_07 = "http://json-schema.org/draft-07/schema#"
SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schemas" / "report.schema.json"
"""The committed schema, shipped inside the package."""

Schema = dict[str, Any]

NUM: Schema = {"type": "number"}
INT: Schema = {"type": "integer"}
STR: Schema = {"type": "string"}
BOOL: Schema = {"type": "boolean"}
COUNT: Schema = {"type": "integer", "minimum": 0}
FRACTION: Schema = {"type": "number", "minimum": 0, "maximum": 1}
NONNEG: Schema = {"type": "number", "minimum": 0}


def null(schema: Schema) -> Schema:
    """``schema`` or null."""
    return {"anyOf": [schema, {"type": "null"}]}


def ref(name: str) -> Schema:
    """A reference to ``definitions/name``."""
    return {"$ref": f"#/definitions/{name}"}


def obj(properties: dict[str, Schema], optional: Sequence[str] = (),
        description: str | None = None) -> Schema:
    """A closed object: every property required unless listed in ``optional``."""
    schema: Schema = {"type": "object", "additionalProperties": False,
                      "required": [k for k in properties if k not in optional],
                      "properties": properties}
    if description:
        schema = {"description": description, **schema}
    return schema


def array(items: Schema) -> Schema:
    """An array of ``items``."""
    return {"type": "array", "items": items}


def _length() -> Schema:
    return obj({"mean": NONNEG, "p50": NONNEG, "p95": NONNEG, "max": null(NONNEG)})


def _link() -> Schema:
    return obj({"id": STR, "bandwidth_bytes_per_s": NONNEG})


_PINNED_EP: dict[str, Schema] = dict.fromkeys(
    ("expert_parallel", "prefill_expert_parallel", "decode_expert_parallel"), null(COUNT))
"""A deployment's pinned EP degrees (present for mixture-of-experts models only)."""


def _inputs() -> Schema:
    return obj({
        "name": null(STR),
        "model": obj({"id": STR, "name": STR, "total_params": NONNEG}),
        "precision": STR,
        "precision_tensors": obj({
            "weights": {"enum": ["bf16", "fp16", "fp8", "fp8-block", "fp4", "mxfp4", "int4"]},
            "kv_cache": {"enum": ["bf16", "fp16", "fp8"]},
            "compute": {"enum": ["bf16", "fp8", "fp4"]}},
            description="Formats of the weights and KV cache, and the tensor-core format the "
                        "matmuls run in on this GPU (bf16 = 16-bit, incl. weight-only kernels)."),
        "engine": STR,
        "engine_profile": obj({"id": STR, "name": STR, "versions": STR},
                              description="The engine profile (version family) whose "
                                          "constants the numbers use."),
        "cluster": obj({"gpu": obj({"id": STR, "name": STR}), "gpus": COUNT,
                        "gpus_per_node": COUNT, "nodes": COUNT, "intra_node": _link(),
                        "inter_node": null(_link()), "usd_per_gpu_hour": null(NONNEG),
                        "price_source": {"enum": ["workload", "gpu-profile", None]}}),
        "traffic": array(obj({"name": STR, "share": FRACTION, "rate_rps": NONNEG,
                              "burstiness": NONNEG, "prompt_tokens": _length(),
                              "output_tokens": _length(), "prefix_cache_hit_rate": FRACTION,
                              "concurrency": {**null(COUNT), "description": (
                                  "Closed-loop clients; rate_rps is then the equivalent "
                                  "rate (Little's law).")},
                              "closed_loop": null(obj({
                                  "concurrency": COUNT, "equivalent_rate_rps": NONNEG,
                                  "ttft_ms_p50": NONNEG, "tpot_ms_p50": NONNEG, "e2e_s": NONNEG,
                                  "plan": {"enum": ["deployed", "colocated", "disaggregated"]}},
                                  description="The fixed point λ·e2e_s = concurrency, on the "
                                              "model's median latencies of `plan`."))})),
        "slo": obj({"ttft_ms": null(NONNEG), "tpot_ms": null(NONNEG), "percentile": NONNEG}),
        "autoscaling": BOOL,
        "router": {"enum": list(ROUTER_POLICIES), "description": (
            "How every pool's router dispatches requests to its instances (colocated, "
            "prefill and decode alike); the queues of both architectures assume it.")},
        "deployment": null(obj({
            "mode": {"enum": ["colocated", "disaggregated"]}, "chunked_prefill": BOOL,
            "chunk_tokens": null(COUNT), "tensor_parallel": null(COUNT),
            "prefill_gpus": null(COUNT), "decode_gpus": null(COUNT),
            "prefill_tensor_parallel": null(COUNT), "decode_tensor_parallel": null(COUNT),
            "max_num_seqs": null(COUNT), "max_model_len": null(COUNT),
            "gpu_memory_utilization": null(FRACTION),
            "router": {"enum": [*ROUTER_POLICIES, None]}, **_PINNED_EP},
            optional=tuple(_PINNED_EP))),
    }, description="The resolved scenario the numbers were computed for.")


def _interference() -> Schema:
    return obj({"prompt_tokens": NONNEG, "decode_batch": NONNEG, "decode_step_ms": null(NONNEG),
                "unchunked_tpot_factor": null(NONNEG), "chunked_tpot_factor": null(NONNEG),
                "chunk_tokens": COUNT, "chunked_safe_rate_rps": null(NONNEG)},
               description="TPOT inflation when a prompt lands in a running decode batch.")


_MOE_COLOCATED: dict[str, Schema] = {
    "expert_parallel": COUNT, "dp_attention": BOOL, "all_to_all_share": FRACTION,
    "decode_batch_per_gpu": NONNEG, "redundant_experts": COUNT}
"""Keys a colocated plan of a mixture-of-experts model adds (absent for dense models)."""

_MOE_ALLOCATION: dict[str, Schema] = {
    "prefill_expert_parallel": COUNT, "decode_expert_parallel": COUNT,
    "prefill_dp_attention": BOOL, "decode_dp_attention": BOOL,
    "prefill_redundant_experts": COUNT, "decode_redundant_experts": COUNT}
"""Keys an allocation of a mixture-of-experts model adds (absent for dense models)."""

_MOE_DISAGGREGATED: dict[str, Schema] = {
    **_MOE_ALLOCATION, "prefill_all_to_all_share": FRACTION,
    "decode_all_to_all_share": FRACTION, "decode_batch_per_gpu": null(NONNEG)}
"""Keys a disaggregated plan of a mixture-of-experts model adds (absent for dense models)."""

_COST: dict[str, Schema] = {
    "usd_per_hour": {**null(NONNEG), "description": "Every cluster GPU billed at the price in "
                     "force (inputs.cluster.usd_per_gpu_hour); null without a price."},
    "usd_per_million_output_tokens": {
        **null(NONNEG), "description": "usd_per_hour over the output tokens an hour carries "
        "at max_goodput_rps; null without a price or without goodput."},
}


def _colocated() -> Schema:
    return obj({
        "tensor_parallel": COUNT, "pipeline_stages": COUNT, "instances": COUNT, "gpus": COUNT,
        "chunked": BOOL, "chunk_tokens": null(COUNT), "max_goodput_rps": NONNEG,
        "capacity_rps": NONNEG, "rate_rps": NONNEG, "output_tokens_per_s_per_gpu": NONNEG,
        "percentile": NONNEG, "ttft_ms": null(NONNEG), "tpot_ms": null(NONNEG),
        "best_ttft_ms": null(NONNEG), "best_tpot_ms": null(NONNEG),
        "overloaded": BOOL, "meets_slo": BOOL, "decode_batch": NONNEG,
        "max_running_sequences": COUNT, "phase": null(STR), **_COST,
        "interference": null(ref("interference")),
        **_MOE_COLOCATED,
    }, optional=tuple(_MOE_COLOCATED),
        description="A colocated pool of identical instances (latencies null when overloaded); "
                    "MoE models add the expert-parallel keys.")


_ALLOCATION_KEYS = ("prefill_tensor_parallel", "decode_tensor_parallel",
                    "prefill_pipeline_stages", "decode_pipeline_stages", "prefill_instances",
                    "decode_instances", "prefill_gpus", "decode_gpus", "idle_gpus")


def _allocation() -> Schema:
    return obj({**dict.fromkeys(_ALLOCATION_KEYS, COUNT), "max_goodput_rps": NONNEG,
                "limited_by": STR, **_MOE_ALLOCATION}, optional=tuple(_MOE_ALLOCATION),
               description="One integer prefill:decode split.")


def _disaggregated() -> Schema:
    return obj({
        **{k: null(COUNT) for k in _ALLOCATION_KEYS}, "limited_by": null(STR),
        "ideal_prefill_fraction": FRACTION, "max_goodput_rps": NONNEG,
        "ideal_max_goodput_rps": NONNEG, "rounding_loss": NONNEG, "rate_rps": NONNEG,
        "output_tokens_per_s_per_gpu": NONNEG, "percentile": NONNEG, "ttft_ms": null(NONNEG),
        "tpot_ms": null(NONNEG), "best_ttft_ms": null(NONNEG), "best_tpot_ms": null(NONNEG),
        "overloaded": BOOL, "meets_slo": BOOL, "decode_batch": NONNEG,
        "decode_max_running_sequences": COUNT, "prefill_saturating_tokens": NONNEG,
        "prefill_rate_per_instance_rps": NONNEG, "decode_rate_per_instance_rps": NONNEG,
        "phase": null(STR), **_COST, "alternatives": array(ref("allocation")),
        **_MOE_DISAGGREGATED,
    }, optional=tuple(_MOE_DISAGGREGATED),
        description="Prefill and decode pools with the best integer split (null fields when "
                    "no split exists).")


def _kv_transfer() -> Schema:
    return obj({"link_id": STR, "bytes_per_token": NONNEG, "bytes_per_request_mean": NONNEG,
                "bytes_per_request_p95": NONNEG, "demand_bytes_per_s": NONNEG,
                "link_bytes_per_s": NONNEG, "utilization": NONNEG, "transfer_ms": NONNEG,
                "serialized_transfer_ms": NONNEG, "concurrent_transfers": NONNEG,
                "rate_rps": NONNEG, "at_carried_rate": BOOL},
               description="KV-cache transfer of the disaggregated plan at the rate it carries "
                           "(`rate_rps`: the workload's, or the plan's goodput when the rate is "
                           "beyond it, `at_carried_rate` true).")


def _variant() -> Schema:
    return obj({"label": STR, "prefill_gpus": COUNT, "decode_gpus": COUNT,
                "goodput_rps": NONNEG, "best_goodput_rps": NONNEG, "loss": NONNEG,
                "prompt_scale": NONNEG, "output_scale": NONNEG},
               description="One integer split under one mix: its goodput, the best split's "
                           "under the same mix, and the loss between them.")


def _phase() -> Schema:
    return obj({"name": STR, "share": FRACTION, "rate_rps": NONNEG,
                "prompt_tokens_mean": NONNEG, "output_tokens_mean": NONNEG,
                "ideal_prefill_fraction": null(FRACTION), "prefill_gpus": null(COUNT),
                "decode_gpus": null(COUNT), "rounding_loss": null(NONNEG),
                "colocated_max_goodput_rps": null(NONNEG),
                "unchunked_max_goodput_rps": null(NONNEG),
                "disaggregated_max_goodput_rps": null(NONNEG),
                "static_goodput_rps": null(NONNEG)})


def _finding(located: bool) -> Schema:
    props: dict[str, Schema] = {"id": STR, "check": ref("gate_check"), "key": STR,
                                "message": STR}
    if located:
        props |= {"line": {"type": "integer", "minimum": 1},
                  "col": {"type": "integer", "minimum": 1}, "path": STR}
    return obj(props, optional=("path",) if located else ())


def _deployed() -> Schema:
    return obj({
        "mode": {"enum": ["colocated", "disaggregated"]}, "chunked_prefill": BOOL,
        "tensor_parallel": null(COUNT), "chunk_tokens": null(COUNT),
        "prefill_gpus": null(COUNT), "decode_gpus": null(COUNT),
        "prefill_tensor_parallel": null(COUNT), "decode_tensor_parallel": null(COUNT),
        "max_goodput_rps": null(NONNEG), "rate_rps": null(NONNEG), "percentile": NONNEG,
        "ttft_ms": null(NONNEG), "tpot_ms": null(NONNEG), "overloaded": null(BOOL),
        "meets_slo": BOOL, "feasible": BOOL, "reason": STR, "phase": null(STR),
        "best_split_prefill_gpus": null(COUNT), **_COST, "findings": array(ref("finding")),
        **_PINNED_EP,
    }, optional=tuple(_PINNED_EP),
        description="The model's prediction for exactly the declared deployment (what `check` "
                    "judges).")


def _calibration() -> Schema:
    return obj({
        "file": STR,
        "fitted_on": obj({
            "model": null(STR), "engine": {"enum": ["vllm", "sglang", "trtllm"]}, "gpu": STR,
            "tensor_parallel": null({"type": "integer", "minimum": 1}),
            "precision": null({"enum": ["bf16", "fp8", "fp8-block"]}),
            "files": array(obj({"path": STR, "sha256": STR}))}),
        "factors": {"type": "object", "additionalProperties": NUM},
    }, description="The calibration overlay (`calibration:` in the workload) whose factors "
                   "the numbers use, what it was fitted on and the factors it sets; null when "
                   "none is active.")


def _tool() -> Schema:
    return obj({"name": {"const": "pd-advisor"}, "version": STR})


def _recommendation() -> Schema:
    return obj({
        "schema_version": {"const": 1},
        "kind": {"const": "recommendation"},
        "tool": _tool(),
        "input": obj({"path": STR, "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                      "policy_files": array(obj({"path": STR, "keys": array(STR)}))}),
        "name": null(STR),
        "verdict": {"enum": ["chunked-prefill", "disaggregate"]},
        "slo_met": BOOL,
        "summary": STR,
        "reasons": array(STR),
        "warnings": array(obj({"id": STR, "message": STR})),
        "measure_next": array(STR),
        "preconditions": array(obj({
            "id": {"enum": ["gpu-scale", "kv-bandwidth", "traffic-mix"]}, "question": STR,
            "passed": BOOL, "measured": null(NUM), "threshold": NUM, "unit": STR,
            "bound": {"enum": ["max", "min"]}, "explanation": STR})),
        "deciding_rule": {"enum": ["gain", "gpu-scale", "kv-bandwidth", "traffic-mix",
                                   "not-applicable", "no-split"]},
        "headline_reason": STR,
        "disagg_gain": null(NUM),
        "disagg_gain_unbounded": BOOL,
        "disagg_ideal_gain": null(NUM),
        "rounding_loss": null(NONNEG),
        "mix_loss": NONNEG,
        "fragility": null(obj({"drift": NONNEG, "drift_loss": NONNEG,
                               "drifted": array(ref("split_variant")),
                               "neighbours": array(ref("split_variant"))},
                              description="The chosen split under the drift band's corners "
                                          "and its neighbouring splits.")),
        "inputs": _inputs(),
        "calibration": null(_calibration()),
        "policy": {"type": "object", "additionalProperties": NUM},
        "colocated": null(ref("colocated")),
        "unchunked": null(ref("colocated")),
        "disaggregated": null(ref("disaggregated")),
        "kv_transfer": null(ref("kv_transfer")),
        "phases": array(ref("phase")),
        "static_mix_loss": NONNEG,
        "static_allocation": null(ref("allocation")),
        "excluded": array(obj({"instance": STR, "reason": STR})),
        "gpus_needed": obj({"colocated": null(COUNT), "disaggregated": null(COUNT)}),
        "headroom": obj({"colocated": NONNEG, "disaggregated": NONNEG}),
        "boundaries": array(ref("boundary")),
        "deployed": ref("deployed"),
    }, optional=("deployed", "boundaries"), description="`pd-advisor recommend --format json`.")


def _boundary() -> Schema:
    return obj({
        "key": STR,
        "current": null(NUM),
        "flips_at": null(NUM),
        "direction": {"enum": ["up", "down"]},
        "kind": {"enum": ["verdict", "slo"]},
        "to": null({"enum": ["chunked-prefill", "disaggregate"]}),
        "description": STR,
    }, description="The nearest value of `key` (in `direction`) that flips the verdict "
                   "(kind verdict) or leaves the TPOT SLO (kind slo); null: nothing in the "
                   "searched range does.")


def _check() -> Schema:
    problem = obj({"path": STR, "line": {"type": "integer", "minimum": 1},
                   "col": {"type": "integer", "minimum": 1}, "key": STR, "message": STR})
    warning = obj({"id": STR, "message": STR, "key": STR,
                   "line": {"type": "integer", "minimum": 1},
                   "col": {"type": "integer", "minimum": 1}, "path": STR},
                  optional=("path",))
    gap = obj({"what": STR, "path": STR, "line": {"type": "integer", "minimum": 1},
               "col": {"type": "integer", "minimum": 1}, "message": STR})
    source = obj({"paths": array(STR), "kind": STR, "name": STR, "gaps": array(gap),
                  "pools": array({"type": "object"}), "facts": {"type": "object"}},
                 description="The Kubernetes manifests the deployment was read from: what "
                             "they deploy, and what they leave unsaid (gaps).")
    file_entry = obj({
        "path": STR, "status": {"enum": ["pass", "fail", "error"]},
        "verdict": null({"enum": ["chunked-prefill", "disaggregate"]}), "slo_met": null(BOOL),
        "findings": array(ref("located_finding")), "warnings": array(warning),
        "problems": array(problem), "report": null(ref("recommendation")),
        "manifest": source}, optional=("manifest",))
    return obj({
        "schema_version": {"const": 1},
        "kind": {"const": "check"},
        "tool": _tool(),
        "status": {"enum": ["pass", "fail", "error"]},
        "counts": obj(dict.fromkeys(("files", "passed", "failed", "errors"), COUNT)),
        "checks": array(ref("gate_check")),
        "files": array(file_entry),
    }, description="`pd-advisor check --format json`.")


def report_schema() -> Schema:
    """The whole schema document."""
    from advisor.render.report_json import GATE_CHECKS

    return {
        "$schema": DRAFT_07,
        "title": "pd-advisor JSON output (schema_version 1)",
        "description": "Units are in key names (_ms, _rps, _bytes_per_s); fractions are "
                       "fractions; null where a value does not exist; never NaN.",
        "oneOf": [ref("recommendation"), ref("check")],
        "definitions": {
            "recommendation": _recommendation(),
            "check": _check(),
            "colocated": _colocated(),
            "interference": _interference(),
            "disaggregated": _disaggregated(),
            "allocation": _allocation(),
            "kv_transfer": _kv_transfer(),
            "split_variant": _variant(),
            "phase": _phase(),
            "deployed": _deployed(),
            "boundary": _boundary(),
            "finding": _finding(located=False),
            "located_finding": _finding(located=True),
            "gate_check": {"enum": list(GATE_CHECKS)},
        },
    }


def render_schema() -> str:
    """The schema as committed: 2-space indented JSON with a final newline."""
    return json.dumps(report_schema(), indent=2, ensure_ascii=False) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Print, write or check the committed schema; returns the exit code."""
    from advisor.schema_files import schema_file_main

    return schema_file_main(argv, "python -m advisor.render.report_schema",
                            __doc__.splitlines()[0], SCHEMA_PATH, render_schema(), "this module")


if __name__ == "__main__":
    sys.exit(main())
