"""What a deployment's speculative decoding does to the chosen plans' decode instances
(docs/model.md §3.6): the step and TPOT at batch 1 with and without it, and the largest
decode batch the TPOT SLO allows either way — one decode-only step of the colocated plan's
shape and of the disaggregated decode pool's, by the same rules."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from advisor.core.disaggregated import decode_capacity
from advisor.core.expert_parallel import expert_layout
from advisor.core.instance import Instance
from advisor.core.memory import build_instance
from advisor.core.results import ModelResult
from advisor.core.scenario import Scenario


@dataclass(frozen=True, kw_only=True)
class SpeculativeEffect:
    """One plan's decode instance with and without the deployment's speculation."""

    plan: str
    """``colocated`` or ``disaggregated`` (its decode pool)."""
    instance: str
    """The instance shape (``TP4``)."""
    context_tokens: float
    """Mean decode context of the peak phase (prompt + half the output)."""
    tokens_per_step: float
    """τ: tokens a verify step emits per sequence."""
    decode_step_ms_at_batch_1: float
    """A speculative decode step of one sequence: the draft and the verify pass."""
    draft_ms_at_batch_1: float
    tpot_ms_at_batch_1: float
    tpot_ms_at_batch_1_without: float
    max_decode_batch_at_tpot_slo: float | None
    """Largest decode batch whose TPOT meets the SLO, within the engine's running-sequence
    cap (memory not checked); None without a TPOT SLO."""
    max_decode_batch_at_tpot_slo_without: float | None


def _effect(sc: Scenario, plan: str, tensor_parallel: int, stages: int,
            expert_parallel: int = 1) -> SpeculativeEffect | None:
    cl = sc.cluster
    layout = None
    if expert_parallel > 1:
        # The plan's EP instance, laid out as the plan search and the simulator lay it out
        # (``tensor_parallel`` is the attention TP); MTP's verify batch of B·τ tokens then
        # goes through the dispatch, the experts and the imbalance (docs/model.md §3.6).
        terms = sc.engine.expert_parallel
        if sc.model.moe is None or terms is None:
            return None
        layout = expert_layout(sc.model.moe.num_experts, expert_parallel, tensor_parallel,
                               cl.gpus_per_node, terms)
        if layout is None:
            return None
    with_spec = build_instance(sc.model, cl.gpu, sc.precision, sc.engine, tensor_parallel,
                               stages, cl.intra_node, cl.inter_node, layout)
    without = dataclasses.replace(with_spec, engine=dataclasses.replace(sc.engine,
                                                                        speculative=None))
    phase = sc.peak_phase
    ctx = phase.prompt_tokens.mean + max(phase.output_tokens.mean, 1.0) / 2.0
    cap = sc.engine.max_num_seqs(cl.gpu)
    slo = None if sc.slo.tpot_ms is None else sc.slo.tpot_ms / 1000.0

    def batch(inst: Instance) -> float | None:
        return None if slo is None else decode_capacity(inst, cap, phase, slo).slo_batch

    step = float(with_spec.decode_step_s(1.0, ctx))
    q = with_spec.params
    draft = float(q.draft_fixed_s) + float(q.draft_s_per_seq) + float(
        q.draft_kv_bytes_per_token_per_gpu) * ctx / float(q.kv_read_bytes_per_s)
    return SpeculativeEffect(
        plan=plan, instance=with_spec.label, context_tokens=ctx,
        tokens_per_step=float(q.decode_tokens_per_step),
        decode_step_ms_at_batch_1=step * 1000.0, draft_ms_at_batch_1=draft * 1000.0,
        tpot_ms_at_batch_1=float(with_spec.decode_token_s(1.0, ctx)) * 1000.0,
        tpot_ms_at_batch_1_without=float(without.decode_step_s(1.0, ctx)) * 1000.0,
        max_decode_batch_at_tpot_slo=batch(with_spec),
        max_decode_batch_at_tpot_slo_without=batch(without))


def speculative_effects(sc: Scenario, result: ModelResult) -> tuple[SpeculativeEffect, ...]:
    """The effect on the best colocated plan's instance and on the disaggregated plan's
    decode instance — tensor/pipeline-parallel and expert-parallel shapes alike (#29 item 5:
    MTP in EP decode); none without speculation."""
    if sc.engine.speculative is None:
        return ()
    out: list[SpeculativeEffect | None] = []
    col = result.colocated
    if col is not None:
        out.append(_effect(sc, "colocated", col.tensor_parallel, col.pipeline_stages,
                           col.expert_parallel))
    dis = result.disaggregated
    alloc = None if dis is None else dis.allocation
    if alloc is not None:
        out.append(_effect(sc, "disaggregated", alloc.decode_tensor_parallel,
                           alloc.decode_pipeline_stages, alloc.decode_expert_parallel))
    return tuple(e for e in out if e is not None)
