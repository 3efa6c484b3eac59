"""The per-instance constants of the step-time formula and the small pieces every step
shares (docs/model.md §3, §3.4): the roofline, the busiest unit's share, the draft passes, the
all-to-all bytes.

Pure arithmetic on floats and numpy arrays.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from advisor.core.speculative import draft_step_s

ACTIVATION_BYTES = 2.0
"""Activations travel in 16-bit for both precisions (FP8 here means weights and KV)."""


@dataclass(frozen=True, kw_only=True)
class StepParams:
    """Per-instance constants of the step-time formula (floats, or arrays for stacked shapes)."""

    gpus: np.ndarray | float
    compute_flops_per_s: np.ndarray | float
    """GPUs × dense peak × MFU: the rate of the weight GEMMs."""
    attention_flops_per_s: np.ndarray | float
    """GPUs × the attention format's dense peak × attention efficiency: the rate of the
    attention kernels (QK^T and PV over the cached keys; docs/model.md §3)."""
    decode_attention_flops_per_s: np.ndarray | float
    """The rate of the decode attention kernels: ``attention_flops_per_s``, except for MLA,
    whose absorbed decode kernels compute in 16 bit whatever the KV cache's format
    (:attr:`Instance.decode_attention_flops_per_gpu_s`)."""
    memory_bytes_per_s: np.ndarray | float
    """One GPU's bandwidth × weight-streaming efficiency η_w."""
    kv_read_bytes_per_s: np.ndarray | float
    """One GPU's bandwidth × KV-read efficiency η_kv."""
    dense_weight_bytes_per_gpu: np.ndarray | float
    expert_weight_bytes_per_gpu: np.ndarray | float
    """Routed-expert bytes per GPU, divided by the low-bit kernel efficiency (4-bit experts):
    the bytes that stream in the same time at η_w."""
    kv_bytes_per_token_per_gpu: np.ndarray | float
    tp_comm_s_per_byte: np.ndarray | float
    """Seconds per activation byte for the step's 2·L ring all-reduces."""
    tp_comm_latency_s: np.ndarray | float
    pp_comm_s_per_byte: np.ndarray | float
    pp_comm_latency_s: np.ndarray | float
    step_overhead_s: np.ndarray | float
    request_overhead_s: np.ndarray | float
    moe_overhead_s: np.ndarray | float = 0.0
    """MoE layers × the engine's small-batch cost per MoE layer (scaled by 1 − coverage)."""
    compute_memory_overlap: np.ndarray | float = 1.0
    """ω at the ridge point (:func:`roofline`): 1 = max(compute, memory), 0 = their sum."""
    a2a_latency_s: np.ndarray | float = 0.0
    """Expert parallelism: MoE layers × 2 launches × link latency of dispatch + combine."""
    a2a_s_per_prefill_token: np.ndarray | float = 0.0
    """Expert parallelism: all-to-all seconds per instance-wide prefill token (all layers)."""
    a2a_s_per_decode_token: np.ndarray | float = 0.0
    """Expert parallelism: all-to-all seconds per instance-wide decode token (all layers)."""
    a2a_overlap: np.ndarray | float = 0.0
    """1: two micro-batches (TBO/DBO) hide each one's all-to-all behind the other's compute
    of the MoE layers (exposed: what the compute does not cover), each micro-batch streaming
    the weights and launching dispatch/combine itself; 0: one batch, all of it exposed."""
    step_scale: np.ndarray | float = 1.0
    """A fixed factor on the whole step (1; the expert-load imbalance is the ``imbalance_*``
    fields)."""
    imbalance_z: np.ndarray | float = 0.0
    """Expert parallelism: z(E_p), the expected maximum of E_p standard normals (0 without)."""
    imbalance_slot_var: np.ndarray | float = 0.0
    """Expert parallelism: c²/m, the systematic load variance of a rank of m expert slots."""
    imbalance_ranks: np.ndarray | float = 1.0
    """Expert parallelism: E_p, the ranks the (token, expert) assignments spread over."""
    expert_compute_flops_per_s: np.ndarray | float = 0.0
    """MoE: the FLOP/s the routed experts run at (the EP group's GPUs under expert
    parallelism, else ``compute_flops_per_s``)."""
    attention_ranks: np.ndarray | float = 1.0
    """Expert parallelism: DP-attention ranks (each holds its own sequences; 1 without)."""
    pipeline_microbatches: np.ndarray | float = 1.0
    """Batches in flight across the pipeline stages (the stage count when the engine
    micro-batches, else 1): a step's sequences are spread over up to this many micro-batches,
    each crossing every stage (the step time is one crossing)."""
    decode_query_tokens: np.ndarray | float = 1.0
    """Query tokens per decoding sequence: k + 1 under speculative decoding (the verify
    pass), else 1 (``core.speculative``)."""
    decode_tokens_per_step: np.ndarray | float = 1.0
    """τ: tokens a decode step emits per sequence (1 without speculation)."""
    draft_fixed_s: np.ndarray | float = 0.0
    draft_s_per_seq: np.ndarray | float = 0.0
    draft_kv_bytes_per_token_per_gpu: np.ndarray | float = 0.0
    """The draft passes of a step with decodes (``speculative.DraftCost``)."""

    @classmethod
    def stack(cls, params: list[StepParams], ndim: int) -> StepParams:
        """Stack per-instance params along a leading axis, padded to ``ndim`` dimensions."""
        shape = (len(params),) + (1,) * (ndim - 1)
        return cls(**{f.name: np.array([getattr(p, f.name) for p in params],
                                       dtype=float).reshape(shape)
                      for f in fields(cls)})



def roofline(compute_s: Any, memory_s: Any, overlap: Any) -> Any:
    """max(C, M, (1 − o/2)·(C + M)): the roofline max away from the ridge point, where one of
    compute and memory traffic hides the other, and a share of their sum near it, where
    neither hides the other (docs/model.md §3). ``o`` is the overlap at the ridge point
    C = M: 1 = max(C, M) everywhere, 0 = C + M everywhere."""
    share = 1.0 - 0.5 * overlap
    if isinstance(compute_s, SCALAR) and isinstance(memory_s, SCALAR):
        return max(max(compute_s, memory_s), share * (compute_s + memory_s))
    return np.maximum(np.maximum(compute_s, memory_s), share * (compute_s + memory_s))


SCALAR = (float, int)
"""Python numbers and numpy float64 scalars (a subclass of float); not 0-d arrays."""



def draft_seconds(q: StepParams, d: np.ndarray, dec_keys: np.ndarray) -> np.ndarray | float:
    """The draft passes of a step with ``d`` decodes at ``dec_keys`` keys (0 without)."""
    seconds: np.ndarray | float = draft_step_s(
        q.draft_fixed_s, q.draft_s_per_seq, q.draft_kv_bytes_per_token_per_gpu,
        q.kv_read_bytes_per_s, d, dec_keys)
    return seconds



def busiest_unit_share(units: np.ndarray | float, prefill_tokens: np.ndarray,
                       prefill_seqs: np.ndarray, decode_seqs: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(prefill tokens, prefill sequences, decodes) of the busiest of ``units`` units a step's
    sequences are spread over — pipeline micro-batches in flight, DP-attention ranks — each
    sequence in one unit (an engine schedules no sequence in two micro-batches at once; DP
    attention keeps a sequence on its rank): the prompt pieces over min(n, units) units, the
    decodes evenly but at least one where there are any."""
    if isinstance(units, SCALAR) and units == 1.0:
        return prefill_tokens, prefill_seqs, decode_seqs
    pieces = np.maximum(np.minimum(prefill_seqs, units), 1.0)
    return (prefill_tokens / pieces, prefill_seqs / pieces,
            np.maximum(decode_seqs / units, np.minimum(decode_seqs, 1.0)))



def all_to_all_seconds(q: StepParams, prefill_tokens: np.ndarray | float,
                       decode_seqs: np.ndarray | float) -> np.ndarray | float:
    """Expert-parallel dispatch + combine time of one step (0 without EP): α per MoE layer
    and launch when the step has tokens, plus bytes over the slowest link."""
    p = np.asarray(prefill_tokens, dtype=float)
    d = np.asarray(decode_seqs, dtype=float)
    busy = np.where(p + d > 0, 1.0, 0.0)
    return (q.a2a_latency_s * busy + q.a2a_s_per_prefill_token * p
            + q.a2a_s_per_decode_token * d)


