"""What the simulator runs: a mode and an allocation, by default the analytic model's best.

* ``chunked`` / ``unchunked``: ``ModelResult.colocated`` / ``.unchunked`` (TP, PP, instance
  count, chunk size);
* ``disaggregated``: ``ModelResult.disaggregated.allocation`` (prefill and decode shapes and
  instance counts; the static allocation when the workload has phases and no autoscaling).

The built :class:`Deployment` carries the instances and their memory limits: per phase where
the analytic model has per-phase numbers (``max_sequences`` at the phase's mean context), and
the KV cache the simulator pages (``kv_tokens``: the memory plan's KV budget of one instance in
tokens, ``memory.plan_memory``; for a model with sliding-window layers, counted in tokens of
the window-aware size at the first phase's mean context, so that budget / mean context is the
plan's sequence count there). Block size and sequence cap are the engine's
(``KV_BLOCK_TOKENS``; the engine profile's ``max_num_seqs`` for the GPU).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from advisor.core.disaggregated import saturating_tokens
from advisor.core.expert_parallel import expert_layout
from advisor.core.hardware import LinkSpec
from advisor.core.instance import Instance
from advisor.core.memory import build_instance, plan_memory
from advisor.core.results import ModelResult
from advisor.core.scenario import Scenario

Mode = Literal["chunked", "unchunked", "disaggregated"]
MODES: tuple[Mode, ...] = ("chunked", "unchunked", "disaggregated")

KV_BLOCK_TOKENS = {"vllm": 16, "sglang": 1, "trtllm": 32}
"""Tokens per KV-cache block (page) by engine, the engines' defaults: vLLM ``--block-size``
16 on CUDA (``vllm/config/cache.py``, CacheConfig.block_size); SGLang ``--page-size`` 1
(``python/sglang/srt/server_args.py``); TensorRT-LLM ``tokens_per_block`` 32
(``tensorrt_llm/llmapi/llm_args.py``, KvCacheConfig)."""


def engine_max_num_seqs(instance: Instance) -> int:
    """The engine's cap on running sequences per instance on its GPU (the engine profile's
    ``max_num_seqs``, the same cap the memory plan applies)."""
    return int(instance.engine.max_num_seqs(instance.gpu))


def engine_block_tokens(instance: Instance) -> int:
    """Tokens per KV block of the instance's engine (16 when unknown)."""
    return int(KV_BLOCK_TOKENS.get(instance.engine.name, 16))


class PlanError(ValueError):
    """The scenario has no plan for the mode, or the given plan cannot run."""


@dataclass(frozen=True, kw_only=True)
class ColocatedSimPlan:
    """A colocated pool: ``instances`` × (TP × PP) GPUs; ``chunk_tokens`` None = unchunked."""

    tensor_parallel: int
    pipeline_stages: int
    instances: int
    chunk_tokens: int | None
    expert_parallel: int = 1
    """EP degree with DP attention (1: none; the instance then has this many GPUs)."""


@dataclass(frozen=True, kw_only=True)
class DisaggregatedSimPlan:
    """Prefill and decode pools; ``prefill_batch_tokens`` None = the saturating token count."""

    prefill_tensor_parallel: int
    prefill_pipeline_stages: int
    prefill_instances: int
    decode_tensor_parallel: int
    decode_pipeline_stages: int
    decode_instances: int
    prefill_batch_tokens: float | None = None
    prefill_expert_parallel: int = 1
    decode_expert_parallel: int = 1


Plan = ColocatedSimPlan | DisaggregatedSimPlan


@dataclass(frozen=True)
class Pool:
    """One pool's instance and memory limits."""

    instance: Instance
    instances: int
    max_sequences: tuple[int, ...]
    """Per phase (scenario order)."""
    kv_tokens: int
    """KV cache of one instance, tokens (module docstring)."""


@dataclass(frozen=True, kw_only=True)
class Deployment:
    """A plan with its instances built."""

    mode: Mode
    plan: Plan
    pools: tuple[Pool, ...]
    """(colocated,) or (prefill, decode)."""
    link: LinkSpec | None
    prefill_batch_tokens: tuple[float, ...]
    """Per phase (disaggregated only; empty otherwise)."""

    @property
    def gpus(self) -> int:
        """GPUs in use."""
        return sum(p.instance.gpus * p.instances for p in self.pools)


def default_plan(sc: Scenario, mode: Mode, result: ModelResult) -> Plan:
    """The analytic model's best plan for ``mode``."""
    if mode in ("chunked", "unchunked"):
        cp = result.colocated if mode == "chunked" else result.unchunked
        if cp is None or cp.instances < 1:
            raise PlanError(f"no colocated {mode} plan fits this workload")
        return ColocatedSimPlan(tensor_parallel=cp.tensor_parallel,
                                pipeline_stages=cp.pipeline_stages, instances=cp.instances,
                                chunk_tokens=cp.chunk_tokens if mode == "chunked" else None,
                                expert_parallel=cp.expert_parallel)
    dp = result.disaggregated
    if dp is None or dp.allocation is None:
        raise PlanError("no disaggregated plan fits this workload")
    a = dp.allocation
    return DisaggregatedSimPlan(prefill_tensor_parallel=a.prefill_tensor_parallel,
                                prefill_pipeline_stages=a.prefill_pipeline_stages,
                                prefill_instances=a.prefill_instances,
                                decode_tensor_parallel=a.decode_tensor_parallel,
                                decode_pipeline_stages=a.decode_pipeline_stages,
                                decode_instances=a.decode_instances,
                                prefill_expert_parallel=a.prefill_expert_parallel,
                                decode_expert_parallel=a.decode_expert_parallel)


def max_request_tokens(sc: Scenario) -> float:
    """The longest request memory is planned for (as the analytic model does)."""
    top = max(p.prompt_tokens.upper_tokens + p.output_tokens.upper_tokens for p in sc.phases)
    return min(top, float(sc.model.max_context_tokens))


def _pool(sc: Scenario, tp: int, pp: int, instances: int, ep: int = 1) -> Pool:
    cl = sc.cluster
    layout = None
    terms = sc.engine.expert_parallel
    if ep > 1:
        if sc.model.moe is None or terms is None:
            raise PlanError(f"EP{ep} needs a mixture-of-experts model and an engine with "
                            "expert-parallel terms")
        layout = expert_layout(sc.model.moe.num_experts, ep, tp, cl.gpus_per_node, terms)
        if layout is None:
            raise PlanError(f"EP{ep} cannot hold the model's experts evenly")
    inst = build_instance(sc.model, cl.gpu, sc.precision, sc.engine, tp, pp, cl.intra_node,
                          cl.inter_node, layout)
    top = max_request_tokens(sc)
    seqs = []
    kv_tokens = 0.0
    for idx, ph in enumerate(sc.phases):
        ctx = ph.prompt_tokens.mean + ph.output_tokens.mean / 2.0
        mem = plan_memory(inst, ctx, top, sc.policy.memory_fraction)
        if not mem.fits:
            raise PlanError(f"{inst.label} cannot serve phase '{ph.name}': {mem.reason}")
        seqs.append(mem.max_sequences)
        if idx == 0:
            full = sc.model.kv_bytes_per_token(sc.precision) * ctx
            windowed = sc.model.kv_bytes_per_sequence(ctx, sc.precision)
            kv_tokens = mem.max_kv_tokens * (full / windowed if windowed > 0 else 1.0)
    if instances < 1:
        raise PlanError("a pool needs at least one instance")
    return Pool(inst, instances, tuple(seqs), int(min(kv_tokens, 2**62)))


def build_deployment(sc: Scenario, mode: Mode, plan: Plan) -> Deployment:
    """Instances, memory limits and the KV link of ``plan``."""
    if mode in ("chunked", "unchunked"):
        if not isinstance(plan, ColocatedSimPlan):
            raise PlanError(f"mode {mode} needs a colocated plan")
        if (mode == "chunked") != (plan.chunk_tokens is not None):
            raise PlanError("chunked mode needs chunk_tokens; unchunked mode must have none")
        pool = _pool(sc, plan.tensor_parallel, plan.pipeline_stages, plan.instances,
                     plan.expert_parallel)
        return Deployment(mode=mode, plan=plan, pools=(pool,), link=None, prefill_batch_tokens=())
    if not isinstance(plan, DisaggregatedSimPlan):
        raise PlanError("mode disaggregated needs a disaggregated plan")
    pre = _pool(sc, plan.prefill_tensor_parallel, plan.prefill_pipeline_stages,
                plan.prefill_instances, plan.prefill_expert_parallel)
    dec = _pool(sc, plan.decode_tensor_parallel, plan.decode_pipeline_stages,
                plan.decode_instances, plan.decode_expert_parallel)
    link = sc.cluster.kv_link
    if plan.prefill_batch_tokens is not None:
        lm = tuple(float(plan.prefill_batch_tokens) for _ in sc.phases)
    else:
        lm = tuple(saturating_tokens(pre.instance, ph.prompt_tokens.mean) for ph in sc.phases)
    return Deployment(mode=mode, plan=plan, pools=(pre, dec), link=link, prefill_batch_tokens=lm)
