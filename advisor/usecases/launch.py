"""``--emit``: the launch plan of a recommendation, every number of its commands decided here.

:func:`plan_launch` reads the canonical recommendation document
(:func:`advisor.render.report_json.build_report`) and returns a
:class:`~advisor.render.launch.LaunchPlan` for the plan of the verdict (or of ``mode``);
``advisor.render.launch.launch_commands`` only spells it out in an engine's flags. Where the
numbers come from (all from the document):

* instance counts, tensor parallelism, pipeline stages and the colocated token budget: the
  plan (a declared chunked deployment's budget, or the one the search chose);
* running sequences per instance: the model's ``max_running_sequences`` (colocated: the decode
  batch at the plan's goodput, within memory) and ``decode_max_running_sequences`` (decode
  pool: the largest batch within memory and the TPOT SLO), which the model already holds within
  the workload's engine profile's ``max_num_seqs`` for the GPU (``EngineSpec.max_num_seqs``);
  for vLLM's colocated budget, never above the token budget (vLLM requires budget >=
  max_num_seqs);
* prefill token budget under disaggregation: the plan's saturating token count
  (``prefill_saturating_tokens``) rounded up to a power of two, raised to the p95 prompt
  rounded up to a power of two so that 95 % of prompts prefill in one pass, within
  :data:`PREFILL_BUDGET_RANGE`;
* memory fraction: ``policy.memory_fraction`` (the fraction the memory plan assumed);
* maximum model length: longest prompt + longest output when every phase bounds both
  (``max``); None otherwise (the model's own context applies);
* KV cache in FP8 when the workload's precision is fp8;
* the checkpoint: the one the caller names, else the Hugging Face repository of a built-in
  profile (:data:`HF_REPOSITORIES`), else the profile id; a workload whose ``model:`` names a
  ``config.json`` serves that checkpoint's folder (:func:`checkpoint_from_workload`);
* placement: instances packed onto nodes in order (prefill first), none straddling a node
  unless it is larger than one; host names ``node0``, ``node1``, ... stand for the machines.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from advisor.render.formats import EmitEngine
from advisor.render.launch import LaunchPlan, Pool, Slot


class LaunchError(ValueError):
    """The document has no plan that commands can be emitted for."""


PREFILL_BUDGET_RANGE = (2048, 16384)
"""Smallest and largest prefill token budget of a disaggregated prefill instance."""

HF_REPOSITORIES: dict[str, str] = {
    "llama-2-7b": "meta-llama/Llama-2-7b-hf",
    "llama-2-70b": "meta-llama/Llama-2-70b-hf",
    "llama-3.1-8b": "meta-llama/Llama-3.1-8B-Instruct",
    "llama-3.1-70b": "meta-llama/Llama-3.1-70B-Instruct",
    "llama-3.1-405b": "meta-llama/Llama-3.1-405B-Instruct",
    "mistral-7b": "mistralai/Mistral-7B-v0.1",
    "mixtral-8x7b": "mistralai/Mixtral-8x7B-Instruct-v0.1",
    "mixtral-8x22b": "mistralai/Mixtral-8x22B-Instruct-v0.1",
    "qwen2.5-7b": "Qwen/Qwen2.5-7B-Instruct",
    "qwen2.5-32b": "Qwen/Qwen2.5-32B-Instruct",
    "qwen2.5-72b": "Qwen/Qwen2.5-72B-Instruct",
    "qwen3-8b": "Qwen/Qwen3-8B",
    "qwen3-32b": "Qwen/Qwen3-32B",
    "qwen3-235b-a22b": "Qwen/Qwen3-235B-A22B",
    "deepseek-v3": "deepseek-ai/DeepSeek-V3",
    "gpt-oss-20b": "openai/gpt-oss-20b",
    "gpt-oss-120b": "openai/gpt-oss-120b",
    "opt-13b": "facebook/opt-13b",
    "opt-66b": "facebook/opt-66b",
}
"""Checkpoint served for each built-in model profile (same architecture as the profile)."""


def checkpoint_from_workload(model_ref: str | None, workload: Path) -> str | None:
    """The checkpoint folder a workload's ``model:`` names, when it names a config.json.

    ``model: ckpt/config.json`` or ``model: ckpt`` (a folder) → ``ckpt`` resolved against the
    workload's folder; ids and profile YAML paths → None. Path arithmetic only, no I/O.
    """
    if not model_ref or model_ref.lower().endswith((".yaml", ".yml")):
        return None
    if "/" not in model_ref and "\\" not in model_ref and not model_ref.endswith(".json"):
        return None
    path = Path(model_ref).expanduser()
    path = path if path.is_absolute() else workload.parent / path
    return str(path.parent if path.suffix.lower() == ".json" else path)


def plan_launch(report: Mapping[str, Any], engine: EmitEngine | str, model: str | None = None,
                mode: str | None = None) -> LaunchPlan:
    """The launch plan of the recommended plan (or of ``mode``: ``colocated`` or
    ``disaggregated``); ``model`` is the checkpoint to serve. Raises :class:`LaunchError`
    when that plan does not exist, ``ValueError`` for an engine that has no launch commands.
    """
    engine = EmitEngine(engine)
    inputs = report["inputs"]
    chosen = mode or ("disaggregated" if report["verdict"] == "disaggregate" else "colocated")
    if chosen not in ("colocated", "disaggregated"):
        raise LaunchError(f"unknown mode {chosen!r}; expected colocated or disaggregated")
    pools = (_colocated_pools(report, engine) if chosen == "colocated"
             else _disaggregated_pools(report))
    gpus_per_node = int(inputs["cluster"]["gpus_per_node"])
    slots = place([(p.role, p.instances, p.gpus_per_instance) for p in pools], gpus_per_node)
    kv = report.get("kv_transfer") or {}
    return LaunchPlan(
        engine=engine, mode=chosen,
        checkpoint=model or HF_REPOSITORIES.get(inputs["model"]["id"], inputs["model"]["id"]),
        gpu=inputs["cluster"]["gpu"]["id"], gpus_per_node=gpus_per_node,
        memory_fraction=float(report["policy"]["memory_fraction"]),
        max_model_len=max_model_len(list(inputs["traffic"])),
        fp8=inputs["precision"] == "fp8", pools=pools, slots=tuple(slots),
        nodes=len({node for s in slots for node in s.nodes}),
        kv_link=kv.get("link_id") if chosen == "disaggregated" else None,
        slo_met=bool(report.get("slo_met", True)))


def plan_launch_for_workload(report: Mapping[str, Any], engine: EmitEngine | str,
                             model_ref: Any, workload: Path) -> LaunchPlan:
    """:func:`plan_launch` serving the checkpoint a workload's ``model:`` names, if any
    (``model_ref``: the raw ``model:`` value)."""
    ref = model_ref if isinstance(model_ref, str) else None
    return plan_launch(report, engine, model=checkpoint_from_workload(ref, workload))


# --------------------------------------------------------------------------- decisions
def _colocated_pools(report: Mapping[str, Any], engine: EmitEngine) -> tuple[Pool, ...]:
    plan = report.get("colocated")
    if not plan or not plan.get("instances"):
        raise LaunchError("the report has no colocated plan (no instance shape fits the "
                          "GPUs); nothing to launch")
    budget = plan.get("chunk_tokens")
    seqs = running_sequences(plan["max_running_sequences"])
    if budget and engine is EmitEngine.vllm:
        seqs = min(seqs, int(budget))
    return (Pool("colocated", int(plan["instances"]), int(plan["tensor_parallel"]),
                 int(plan["pipeline_stages"]), int(budget) if budget else None, seqs,
                 *_ep(plan.get("expert_parallel"), plan.get("redundant_experts"))),)


def _disaggregated_pools(report: Mapping[str, Any]) -> tuple[Pool, ...]:
    plan = report.get("disaggregated")
    if not plan or not plan.get("prefill_instances") or not plan.get("decode_instances"):
        raise LaunchError("the report has no disaggregated plan (no prefill/decode split "
                          "fits the GPUs); nothing to launch")
    budget = max(prefill_budget(list(report["inputs"]["traffic"])),
                 min(pow2_at_least(float(plan["prefill_saturating_tokens"])),
                     PREFILL_BUDGET_RANGE[1]))
    prefill = Pool("prefill", int(plan["prefill_instances"]),
                   int(plan["prefill_tensor_parallel"]),
                   int(plan.get("prefill_pipeline_stages") or 1), budget, None,
                   *_ep(plan.get("prefill_expert_parallel"),
                        plan.get("prefill_redundant_experts")))
    decode = Pool("decode", int(plan["decode_instances"]), int(plan["decode_tensor_parallel"]),
                  int(plan.get("decode_pipeline_stages") or 1), None,
                  running_sequences(plan["decode_max_running_sequences"]),
                  *_ep(plan.get("decode_expert_parallel"), plan.get("decode_redundant_experts")))
    return prefill, decode


def _ep(expert_parallel: int | None, redundant_experts: int | None) -> tuple[int, int]:
    """(EP degree, redundant experts) of a pool from the report (1, 0 without EP)."""
    ep = int(expert_parallel or 1)
    return (ep, int(redundant_experts or 0)) if ep > 1 else (1, 0)


def running_sequences(model_value: int | float | None) -> int:
    """The model's running-sequence figure for one instance (at least 1; the model caps it at
    the engine profile's ``max_num_seqs`` for the GPU)."""
    return max(1, int(model_value or 1))


def pow2_at_least(value: float) -> int:
    """The smallest power of two ≥ ``value`` (at least 1)."""
    return 1 << max(0, math.ceil(math.log2(max(value, 1.0))))


def prefill_budget(phases: list[Mapping[str, Any]]) -> int:
    """The p95 prompt of the longest phase rounded up to a power of two, within
    :data:`PREFILL_BUDGET_RANGE`."""
    p95 = max(float(p["prompt_tokens"]["p95"]) for p in phases)
    low, high = PREFILL_BUDGET_RANGE
    return min(max(pow2_at_least(math.floor(p95 + 1e-6)), low), high)


def max_model_len(phases: list[Mapping[str, Any]]) -> int | None:
    """Longest prompt + longest output when every phase bounds both, else None."""
    lengths = []
    for phase in phases:
        top_in, top_out = phase["prompt_tokens"].get("max"), phase["output_tokens"].get("max")
        if top_in is None or top_out is None:
            return None
        lengths.append(math.ceil(top_in) + math.ceil(top_out))
    return max(lengths) if lengths else None


def place(roles: list[tuple[str, int, int]], gpus_per_node: int) -> list[Slot]:
    """Pack (role, count, gpus each) in order onto nodes of ``gpus_per_node`` GPUs."""
    slots: list[Slot] = []
    node, used = 0, 0
    per_node_role: dict[tuple[int, str], int] = {}
    for role, count, each in roles:
        for index in range(count):
            if each > gpus_per_node:  # spans whole nodes
                if used:
                    node, used = node + 1, 0
                span = math.ceil(each / gpus_per_node)
                slots.append(Slot(role, index, tuple(range(node, node + span)),
                                  tuple(range(gpus_per_node)), 0))
                node += span
                continue
            if used + each > gpus_per_node:
                node, used = node + 1, 0
            local = per_node_role.get((node, role), 0)
            per_node_role[(node, role)] = local + 1
            slots.append(Slot(role, index, (node,), tuple(range(used, used + each)), local))
            used += each
    return slots
