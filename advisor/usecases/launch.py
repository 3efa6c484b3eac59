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
* prefill running sequences (disaggregation): the engine profile's ``max_num_seqs`` for the GPU,
  within the prefill token budget;
* memory fraction: ``policy.memory_fraction`` (the fraction the memory plan assumed);
* maximum model length, always set: longest prompt + longest output when every phase bounds
  both (``max``), else the longest sequence every pool's memory holds with the emitted memory
  fraction and running-sequence cap (:func:`advisor.core.memory.longest_sequence_tokens`, at
  most the model's context) — the plan says which;
* every pool is checked with the exact numbers emitted
  (:func:`advisor.core.memory.launch_memory_problem`: the start-up check vLLM makes); a pool
  that fails it gets a warning in the plan;
* values the workload's ``deployment:`` pins (``max_num_seqs``, ``max_model_len``,
  ``gpu_memory_utilization``) replace the computed ones, in :func:`_apply_overrides` only;
* KV cache in FP8 when the workload's KV cache is fp8 (else the engine's ``auto``);
* the checkpoint: the one the caller names, else the Hugging Face repository of a built-in
  profile (:data:`HF_REPOSITORIES`), else the profile id; a workload whose ``model:`` names a
  ``config.json`` serves that checkpoint's folder (:func:`checkpoint_from_workload`), with
  ``./`` in front of a relative path that starts with ``-`` (#33: never read as an option);
* placement: instances packed onto nodes in order (prefill first), none straddling a node
  unless it is larger than one; host names ``node0``, ``node1``, ... stand for the machines;
* expert-parallel plans (MoE, #17): each pool's EP degree, DP attention and redundant
  experts from the plan (``expert_parallel``, ``prefill_/decode_expert_parallel``, ...);
  running sequences, token budgets and a pinned ``max_num_seqs`` count per attention rank
  times the ranks (the engine's cap applies per rank, docs/model.md §4); a disaggregated EP
  prefill instance gets the per-rank budget above on every rank; the memory check builds
  the EP instance (experts per GPU, KV of a sequence on one rank, DeepEP buffers).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.core.expert_parallel import ExpertLayout
from advisor.core.memory import build_instance, launch_memory_problem, longest_sequence_tokens
from advisor.core.scenario import DEFAULT_ROUTER, ROUTER_POLICIES, RouterPolicy
from advisor.escaping import path_argument
from advisor.loading.model_ids import HF_IDS, looks_like_repo_id
from advisor.render.ep_flags import per_rank
from advisor.render.formats import EmitEngine
from advisor.render.launch import LaunchPlan, Pool, Slot
from advisor.render.launch_plan import SpeculativeLaunch

if TYPE_CHECKING:
    from advisor.core.engine import EngineSpec
    from advisor.core.hardware import GpuSpec, LinkSpec, Precision
    from advisor.core.instance import Instance
    from advisor.core.model_arch import ModelSpec
    from advisor.core.scenario import Scenario
    from advisor.loading.catalog import ProfileCatalog


class LaunchError(ValueError):
    """The document has no plan that commands can be emitted for."""


PREFILL_BUDGET_RANGE = (2048, 16384)
"""Smallest and largest prefill token budget of a disaggregated prefill instance."""

HF_REPOSITORIES: dict[str, str] = {profile: ids[0] for profile, ids in HF_IDS.items()}
"""Checkpoint served for each built-in model profile: the first Hugging Face id
:data:`advisor.loading.model_ids.HF_IDS` gives it (same architecture as the profile)."""


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


@dataclass(frozen=True)
class LaunchOverrides:
    """Engine flags the workload pins (``deployment:``); None = computed by the plan."""

    max_num_seqs: int | None = None
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None

    @classmethod
    def from_scenario(cls, scenario: Scenario) -> LaunchOverrides:
        """The values a scenario's deployment declares (fields it does not have: None)."""
        dep = scenario.deployment

        def value(name: str) -> Any:
            return getattr(dep, name, None) if dep is not None else None

        seqs, length, fraction = (value("max_num_seqs"), value("max_model_len"),
                                  value("gpu_memory_utilization"))
        return cls(max_num_seqs=int(seqs) if seqs else None,
                   max_model_len=int(length) if length else None,
                   gpu_memory_utilization=float(fraction) if fraction else None)


@dataclass(frozen=True, kw_only=True)
class LaunchMemory:
    """What the memory check of an emitted instance needs: the model, GPU, precision, links
    and the profile of the engine the commands launch (not the workload's, when the two
    differ)."""

    model: ModelSpec
    gpu: GpuSpec
    precision: Precision
    engine: EngineSpec
    intra_node: LinkSpec
    inter_node: LinkSpec | None
    overrides: LaunchOverrides = LaunchOverrides()
    gpus_per_node: int = 8
    """GPUs per node (where an expert-parallel instance's all-to-all crosses nodes)."""

    @classmethod
    def from_scenario(cls, scenario: Scenario, engine: EngineSpec) -> LaunchMemory:
        """The scenario's hardware and model, launched on ``engine``."""
        cl = scenario.cluster
        return cls(model=scenario.model, gpu=cl.gpu, precision=scenario.precision,
                   engine=engine, intra_node=cl.intra_node, inter_node=cl.inter_node,
                   overrides=LaunchOverrides.from_scenario(scenario),
                   gpus_per_node=cl.gpus_per_node)

    def instance(self, tensor_parallel: int, pipeline_stages: int, expert_parallel: int = 1,
                 redundant_experts: int = 0) -> Instance:
        """The instance a pool launches (``expert_parallel`` > 1: an EP instance whose
        ``tensor_parallel`` is the attention TP of each DP-attention rank)."""
        layout = None
        if expert_parallel > 1 and self.model.moe is not None:
            experts = self.model.moe.num_experts + redundant_experts
            layout = ExpertLayout(expert_parallel=expert_parallel,
                                  attention_tensor_parallel=tensor_parallel,
                                  redundant_experts=redundant_experts,
                                  experts_per_gpu=-(-experts // expert_parallel),
                                  gpus_per_node=self.gpus_per_node)
        return build_instance(self.model, self.gpu, self.precision, self.engine,
                              tensor_parallel, pipeline_stages, self.intra_node,
                              self.inter_node, layout)

    def pool_instance(self, pool: Pool) -> Instance:
        """The instance of ``pool``."""
        return self.instance(pool.tensor_parallel, pool.pipeline_stages, pool.expert_parallel,
                             pool.redundant_experts)


def plan_launch(report: Mapping[str, Any], engine: EmitEngine | str, memory: LaunchMemory,
                model: str | None = None, mode: str | None = None) -> LaunchPlan:
    """The launch plan of the recommended plan (or of ``mode``: ``colocated`` or
    ``disaggregated``); ``model`` is the checkpoint to serve; ``memory`` sizes the maximum
    model length and checks every pool. Raises :class:`LaunchError` when that plan does not
    exist, ``ValueError`` for an engine that has no launch commands.
    """
    engine = EmitEngine(engine)
    inputs = report["inputs"]
    chosen = mode or ("disaggregated" if report["verdict"] == "disaggregate" else "colocated")
    if chosen not in ("colocated", "disaggregated"):
        raise LaunchError(f"unknown mode {chosen!r}; expected colocated or disaggregated")
    pools = (_colocated_pools(report, engine) if chosen == "colocated"
             else _disaggregated_pools(report, memory))
    fraction = float(report["policy"]["memory_fraction"])
    pools, fraction, pinned_len = _apply_overrides(pools, fraction, memory.overrides, engine)
    length, length_note = _max_model_len(list(inputs["traffic"]), pools, fraction, memory,
                                         pinned_len)
    warnings = tuple(
        f"{pool.role} instances ({pool.shape}) fail the start-up memory check: {problem}"
        for pool in pools
        if (problem := launch_memory_problem(
            memory.pool_instance(pool), fraction, length,
            per_rank(pool.running_sequences, pool.attention_ranks))))
    gpus_per_node = int(inputs["cluster"]["gpus_per_node"])
    slots = place([(p.role, p.instances, p.gpus_per_instance) for p in pools], gpus_per_node)
    kv = report.get("kv_transfer") or {}
    return LaunchPlan(
        engine=engine, mode=chosen,
        checkpoint=path_argument(
            model or HF_REPOSITORIES.get(inputs["model"]["id"], inputs["model"]["id"])),
        gpu=inputs["cluster"]["gpu"]["id"], gpus_per_node=gpus_per_node,
        memory_fraction=fraction, max_model_len=length, max_model_len_note=length_note,
        fp8=(inputs.get("precision_tensors") or {}).get("kv_cache",
                                                        inputs["precision"]) == "fp8",
        pools=pools, slots=tuple(slots),
        nodes=len({node for s in slots for node in s.nodes}),
        kv_link=kv.get("link_id") if chosen == "disaggregated" else None,
        slo_met=bool(report.get("slo_met", True)), warnings=warnings,
        notes=_engine_notes(inputs, engine, memory) + _speculative_notes(inputs),
        gpu_name=memory.gpu.name, router=_router(inputs), speculative=_speculative(inputs))


def _speculative_notes(inputs: Mapping[str, Any]) -> tuple[str, ...]:
    """A note where the draft's checkpoint is needed and not named."""
    spec = (inputs.get("deployment") or {}).get("speculative") or {}
    if spec.get("method") in ("eagle3", "draft-model") and spec.get("draft_model") is None:
        return (f"speculative decoding ({spec['method']}) needs the draft's checkpoint: replace "
                "DRAFT_CHECKPOINT, or name it in deployment.speculative.draft_model",)
    return ()


def _speculative(inputs: Mapping[str, Any]) -> SpeculativeLaunch | None:
    """The report's ``inputs.deployment.speculative`` for the launch (None: off)."""
    spec = (inputs.get("deployment") or {}).get("speculative")
    if not spec:
        return None
    draft = spec.get("draft_model")
    return SpeculativeLaunch(
        method=str(spec["method"]), draft_tokens=int(spec["draft_tokens"]),
        draft_checkpoint=None if draft is None else path_argument(
            HF_REPOSITORIES.get(draft, draft)))


def _router(inputs: Mapping[str, Any]) -> RouterPolicy:
    """The dispatch policy the report's model evaluated (``inputs.router``)."""
    value = inputs.get("router", DEFAULT_ROUTER)
    return value if value in ROUTER_POLICIES else DEFAULT_ROUTER


def _engine_notes(inputs: Mapping[str, Any], engine: EmitEngine,
                  memory: LaunchMemory) -> tuple[str, ...]:
    """A caveat when the commands run another engine than the workload's."""
    workload = inputs.get("engine")
    if not workload or workload == engine.value:
        return ()
    return (f"The workload runs {workload}; these are {engine.value} flags. The plan (pool "
            f"sizes, token budgets, running sequences) is the one the model made for "
            f"{workload}; the memory check uses {engine.value}'s engine profile "
            f"({memory.engine.id}). Re-run with engine: {engine.value} to size the plan for "
            f"{engine.value}.",)


def emit_engine_spec(scenario: Scenario, engine: EmitEngine | str,
                     profile: EngineSpec) -> EngineSpec:
    """The engine profile the emitted commands run: the workload's own when it names the
    same engine (its version family), else ``profile`` (the emitted engine's current one)."""
    return scenario.engine if scenario.engine.name == EmitEngine(engine).value else profile


def launch_memory_for_workload(workload: Path, catalog: ProfileCatalog,
                               engine: EmitEngine | str) -> LaunchMemory:
    """The :class:`LaunchMemory` of a workload file launched on ``engine`` (the workload is
    loaded again: ``--emit`` only, a few milliseconds)."""
    from advisor.loading.resolve import load_scenario

    scenario = load_scenario(workload, catalog)
    return LaunchMemory.from_scenario(scenario, emit_engine_spec(
        scenario, engine, catalog.engine(EmitEngine(engine).value)))


def plan_launch_for_workload(report: Mapping[str, Any], engine: EmitEngine | str,
                             model_ref: Any, workload: Path, memory: LaunchMemory) -> LaunchPlan:
    """:func:`plan_launch` serving the checkpoint a workload's ``model:`` names, if any
    (``model_ref``: the raw ``model:`` value)."""
    ref = model_ref if isinstance(model_ref, str) else None
    if ref is not None and looks_like_repo_id(ref) and not (workload.parent / ref).exists():
        return plan_launch(report, engine, memory, model=ref)  # a Hugging Face id, as written
    return plan_launch(report, engine, memory, model=checkpoint_from_workload(ref, workload))


def _apply_overrides(pools: tuple[Pool, ...], fraction: float, overrides: LaunchOverrides,
                     engine: EmitEngine) -> tuple[tuple[Pool, ...], float, int | None]:
    """The one place where the workload's pinned engine flags replace the plan's numbers."""
    if overrides.max_num_seqs is not None:  # the engine's cap: per DP-attention rank
        pools = tuple(replace(p, running_sequences=overrides.max_num_seqs * p.attention_ranks)
                      for p in pools)
    if engine is EmitEngine.vllm:  # vLLM requires max_num_batched_tokens >= max_num_seqs
        pools = tuple(replace(p, running_sequences=min(p.running_sequences, p.token_budget))
                      if p.token_budget else p for p in pools)
    if overrides.gpu_memory_utilization is not None:
        fraction = overrides.gpu_memory_utilization
    return pools, fraction, overrides.max_model_len


def _max_model_len(phases: list[Mapping[str, Any]], pools: tuple[Pool, ...], fraction: float,
                   memory: LaunchMemory, pinned: int | None) -> tuple[int, str]:
    """The ``--max-model-len`` of every instance and a sentence saying where it comes from."""
    if pinned is not None:
        return pinned, "as the workload's deployment.max_model_len pins it"
    bounded = max_model_len(phases)
    context = int(memory.model.max_context_tokens)
    if bounded is not None:
        if bounded <= context:
            return bounded, ("the workload's longest prompt + longest output (every phase "
                             "gives max for both)")
        return context, (f"the model's context ({context} tokens; the workload's maxima add "
                         f"up to {bounded})")
    longest = min(longest_sequence_tokens(
        memory.pool_instance(p), fraction, per_rank(p.running_sequences, p.attention_ranks))
        for p in pools)
    if longest >= context:
        return context, (f"the model's full context ({context} tokens): the workload gives no "
                         "max for every length, and the plan's memory holds one full-context "
                         "sequence on every instance")
    return max(longest, 1), (f"the longest sequence the plan's memory holds on every instance "
                             f"({longest} tokens; the model's context is {context}): the "
                             "workload gives no max for every length; longer requests are "
                             "refused by the engine")


# --------------------------------------------------------------------------- decisions
def _colocated_pools(report: Mapping[str, Any], engine: EmitEngine) -> tuple[Pool, ...]:
    """The colocated pool the report recommends: chunked prefill, or whole prompts when that
    is the better colocated plan (``decision.recommended`` ``unchunked``)."""
    unchunked = (report.get("decision") or {}).get("recommended") == "unchunked"
    plan = report.get("unchunked" if unchunked else "colocated")
    if not plan or not plan.get("instances"):
        raise LaunchError("the report has no colocated plan (no instance shape fits the "
                          "GPUs); nothing to launch")
    budget = plan.get("chunk_tokens")
    seqs = running_sequences(plan["max_running_sequences"])
    del engine  # vLLM's budget >= max_num_seqs rule: _apply_overrides
    ep, redundant = _ep(plan.get("expert_parallel"), plan.get("redundant_experts"))
    return (Pool(role="colocated", instances=int(plan["instances"]),
                 tensor_parallel=int(plan["tensor_parallel"]),
                 pipeline_stages=int(plan["pipeline_stages"]),
                 token_budget=int(budget) if budget else None, running_sequences=seqs,
                 expert_parallel=ep, redundant_experts=redundant),)


def _disaggregated_pools(report: Mapping[str, Any], memory: LaunchMemory
                         ) -> tuple[Pool, ...]:
    plan = report.get("disaggregated")
    if not plan or not plan.get("prefill_instances") or not plan.get("decode_instances"):
        raise LaunchError("the report has no disaggregated plan (no prefill/decode split "
                          "fits the GPUs); nothing to launch")
    p_ep, p_red = _ep(plan.get("prefill_expert_parallel"), plan.get("prefill_redundant_experts"))
    p_tp = int(plan["prefill_tensor_parallel"])
    ranks = p_ep // p_tp if p_ep > 1 else 1  # DP-attention ranks: each prefills its own prompts
    budget = max(prefill_budget(list(report["inputs"]["traffic"])),
                 min(pow2_at_least(float(plan["prefill_saturating_tokens"]) / ranks),
                     PREFILL_BUDGET_RANGE[1]))
    prefill = Pool(role="prefill", instances=int(plan["prefill_instances"]), tensor_parallel=p_tp,
                   pipeline_stages=int(plan.get("prefill_pipeline_stages") or 1),
                   token_budget=budget * ranks,
                   running_sequences=min(memory.engine.max_num_seqs(memory.gpu), budget) * ranks,
                   expert_parallel=p_ep, redundant_experts=p_red)
    d_ep, d_red = _ep(plan.get("decode_expert_parallel"), plan.get("decode_redundant_experts"))
    decode = Pool(role="decode", instances=int(plan["decode_instances"]),
                  tensor_parallel=int(plan["decode_tensor_parallel"]),
                  pipeline_stages=int(plan.get("decode_pipeline_stages") or 1),
                  token_budget=None,
                  running_sequences=running_sequences(plan["decode_max_running_sequences"]),
                  expert_parallel=d_ep, redundant_experts=d_red)
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
                slots.append(Slot(role=role, index=index, nodes=tuple(range(node, node + span)),
                                  gpus=tuple(range(gpus_per_node)), local=0))
                node += span
                continue
            if used + each > gpus_per_node:
                node, used = node + 1, 0
            local = per_node_role.get((node, role), 0)
            per_node_role[(node, role)] = local + 1
            slots.append(Slot(role=role, index=index, nodes=(node,), gpus=tuple(range(used,
                                                                                      used + each)),
                              local=local))
            used += each
    return slots
