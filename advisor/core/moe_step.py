"""The step of an MoE instance, its parts named (docs/model.md §3, §3.4).

The experts a step touches set its weight traffic and its small-batch MoE cost. Under expert
parallelism the attention and dense layers are those of the busiest attention rank (its own
sequences, ``busiest_unit_share``: under DP attention a prompt's attention and replicated
dense layers run on one rank), the routed experts those of every token over the EP group,
plus the all-to-all:

* **exposed all-to-all.** Without two-batch overlap (TBO/DBO) a step is one batch and every
  dispatch and combine waits for its own layer: all of it is exposed. With it the batch runs
  as two micro-batches and each one's dispatch/combine overlaps the other's compute of the
  MoE layers, so only what that compute does not cover is exposed,
  ``max(0, A2A − C_moe)`` with ``C_moe`` the MoE layers' share (L_moe/L) of the step's GPU
  work (roofline and all-reduces; not the host overheads). Each micro-batch streams the
  weights and launches its dispatch and combine itself (twice the weight reads and the α of
  one batch). A rank with one sequence has no second micro-batch.
* **imbalance.** Every rank waits at each MoE layer's barrier for the hottest one, whose
  expert load is κ times the mean: κ = 1 + z(E_p)·√(c²/m + (1 − 1/E_p)/n_r)
  (``expert_parallel.imbalance_factor``), n_r the (token, expert) assignments per rank and
  micro-batch. It scales what grows with the load — the routed-expert GEMMs and the exposed
  dispatch/combine the hottest rank receives — not the attention, the dense layers or the
  weight streaming, which are even across the ranks.

Without EP: one rank, the experts on the instance's GPUs, no all-to-all, κ = 1.
Pure: numpy arrays in, arrays out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.core.attention import attended_keys, attention_compute_s
from advisor.core.expert_parallel import imbalance_of
from advisor.core.model_arch import ModelSpec
from advisor.core.step_params import (
    ACTIVATION_BYTES,
    StepParams,
    all_to_all_seconds,
    busiest_unit_share,
    draft_seconds,
    roofline,
)


@dataclass(frozen=True, kw_only=True)
class MoeStepParts:
    """The pieces of one MoE step (seconds; κ a factor), the busiest rank's."""

    attention_s: np.ndarray
    """Attention FLOPs (prefill and decode) at their rates."""
    dense_s: np.ndarray
    """Non-routed GEMMs (attention projections, dense layers, shared expert, lm_head)."""
    experts_s: np.ndarray
    """Routed-expert GEMMs of every token over the EP group."""
    weights_s: np.ndarray
    """Weight streaming (non-expert and touched experts; twice under TBO)."""
    kv_s: np.ndarray
    """KV reads and writes."""
    comm_s: np.ndarray
    """Tensor-parallel all-reduces (and pipeline hops)."""
    overheads_s: np.ndarray
    """Per-step host overhead, small-batch MoE cost, the draft passes."""
    core_s: np.ndarray
    """The step without all-to-all and imbalance: the GEMMs' and the attention's rooflines
    + comm + overheads."""
    all_to_all_s: np.ndarray
    """Dispatch + combine of every micro-batch, before any overlap."""
    all_to_all_exposed_s: np.ndarray
    """The part the other micro-batch's compute does not hide (all of it without TBO)."""
    micro_batches: np.ndarray
    """2 under two-batch overlap, else 1."""
    imbalance: np.ndarray
    """κ: the hottest rank's expert load over the mean (1 without EP)."""
    step_s: np.ndarray
    """core + (κ − 1) · experts + κ · exposed all-to-all."""


def moe_step_parts(m: ModelSpec, q: StepParams, p: np.ndarray, n: np.ndarray, k: np.ndarray,
                   d: np.ndarray, ctx: np.ndarray) -> MoeStepParts:
    """The parts of an MoE step of ``p`` prompt tokens in ``n`` sequences after ``k`` cached
    tokens and ``d`` decodes at context ``ctx`` (instance-wide; module docstring)."""
    assert m.moe is not None
    v = q.decode_query_tokens
    tokens = p + d * v
    p_r, n_r, d_r = busiest_unit_share(q.attention_ranks, p, n, d)
    rank_tokens = p_r + d_r * v
    # two micro-batches where the engine overlaps and the busiest rank has two sequences
    mb = 1.0 + q.a2a_overlap * np.where(n_r + d_r >= 2.0, 1.0, 0.0)
    chunk = np.divide(p_r, n_r, out=np.zeros(np.broadcast(p_r, n_r).shape), where=n_r > 0)
    pre_keys, dec_keys, k = attended_keys(m, chunk, k, ctx)
    dense_s = (2.0 * (m.matmul_params_per_token - m.routed_matmul_params_per_token)
               * rank_tokens / q.compute_flops_per_s)
    attention_s = attention_compute_s(m, q.attention_flops_per_s,
                                      q.decode_attention_flops_per_s, n_r, pre_keys, d_r * v,
                                      dec_keys)
    experts_s = 2.0 * m.routed_matmul_params_per_token * tokens / q.expert_compute_flops_per_s
    share = m.moe.experts_per_token / m.moe.num_experts
    frac = 1.0 - np.power(1.0 - share, np.maximum(tokens, 1.0))
    frac_mb = 1.0 - np.power(1.0 - share, np.maximum(tokens / mb, 1.0))
    weights_s = (mb * (q.dense_weight_bytes_per_gpu + q.expert_weight_bytes_per_gpu * frac_mb)
                 / q.memory_bytes_per_s)
    kv_s = (q.kv_bytes_per_token_per_gpu * (d_r * dec_keys + n_r * k + rank_tokens)
            / q.kv_read_bytes_per_s)
    act_bytes = rank_tokens * (m.hidden_size * ACTIVATION_BYTES)
    comm_s = (q.tp_comm_latency_s + q.tp_comm_s_per_byte * act_bytes
              + q.pp_comm_latency_s + q.pp_comm_s_per_byte * act_bytes)
    moe_small_s = q.moe_overhead_s * (1.0 - frac)
    draft_s = draft_seconds(q, d_r, dec_keys)
    gpu_s = (roofline(dense_s + experts_s, weights_s, q.compute_memory_overlap)
             + roofline(attention_s, kv_s, q.compute_memory_overlap) + comm_s)
    core_s = gpu_s + q.step_overhead_s + moe_small_s + draft_s   # the order of #27's sum
    overheads_s = q.step_overhead_s + moe_small_s + draft_s
    busy = np.where(tokens > 0, 1.0, 0.0)
    a2a_s = all_to_all_seconds(q, p, d * v) + (mb - 1.0) * q.a2a_latency_s * busy
    hiding = (mb - 1.0) * gpu_s * (m.num_moe_layers / m.num_layers)
    exposed_s = np.maximum(a2a_s - hiding, 0.0)
    per_rank = tokens * m.moe.experts_per_token / (q.imbalance_ranks * mb)
    kappa = imbalance_of(z=q.imbalance_z, slot_variance=q.imbalance_slot_var,
                         ranks=q.imbalance_ranks, assignments_per_rank=per_rank)
    # the hottest rank's extra expert GEMMs and its extra receive hold every rank at the
    # barrier; attention, dense layers and weight streaming are even across ranks
    step_s = (core_s + (kappa - 1.0) * experts_s + kappa * exposed_s) * q.step_scale
    full = np.broadcast(step_s).shape
    return MoeStepParts(
        attention_s=np.broadcast_to(attention_s, full), dense_s=np.broadcast_to(dense_s, full),
        experts_s=np.broadcast_to(experts_s, full), weights_s=np.broadcast_to(weights_s, full),
        kv_s=np.broadcast_to(kv_s, full), comm_s=np.broadcast_to(comm_s, full),
        overheads_s=np.broadcast_to(overheads_s, full), core_s=np.broadcast_to(core_s, full),
        all_to_all_s=np.broadcast_to(a2a_s, full),
        all_to_all_exposed_s=np.broadcast_to(exposed_s, full),
        micro_batches=np.broadcast_to(mb, full), imbalance=np.broadcast_to(kappa, full),
        step_s=step_s)
