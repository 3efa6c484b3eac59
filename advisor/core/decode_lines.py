"""A decode-only step as lines in the batch (dense models): the closed forms of
``colocated`` (the unchunked steady state) read them (docs/model.md §5)."""

from __future__ import annotations

import numpy as np

from advisor.core.instance import ACTIVATION_BYTES, StepParams
from advisor.core.model_arch import ModelSpec


def decode_step_lines(m: ModelSpec, q: StepParams, context_tokens: float
                      ) -> tuple[np.ndarray | float, ...]:
    """A decode-only step as lines in the batch B (dense models): (cc, m0, mm, r0, rr) with

        T_dec(B) = max(cc·B, m0 + mm·B) + r0 + rr·B,

    the compute line, the memory line and the communication + overhead line of
    :func:`step_time` for ``decode_seqs = B`` (MoE weight traffic is not linear in B). An
    engine whose compute and memory work do not overlap (``compute_memory_overlap`` 0: C + M)
    has its compute line folded into the memory line (cc = 0, mm + cc); the overlap is 0 or 1.
    With m pipeline micro-batches the lines hold for B ≥ m (a crossing of B/m sequences:
    slopes divided by m); below, each micro-batch holds one sequence and the step is the
    lines' value at B = m (``StepParams.pipeline_microbatches``).
    """
    if m.moe is not None:
        raise ValueError("decode steps of MoE models are not linear in the batch")
    ctx = float(context_tokens)
    if m.sliding_window_tokens:
        win_share = m.window_layer_share
        ctx = (1.0 - win_share) * ctx + win_share * min(ctx, m.sliding_window_tokens)
    v = q.decode_query_tokens  # speculation: k + 1 verify tokens per sequence, and the draft
    cc = (2.0 * m.matmul_params_per_token * v / q.compute_flops_per_s
          + m.decode_attention_flops_per_key * ctx * v / q.decode_attention_flops_per_s)
    m0 = (q.dense_weight_bytes_per_gpu + q.expert_weight_bytes_per_gpu) / q.memory_bytes_per_s
    mm = q.kv_bytes_per_token_per_gpu * (ctx + v) / q.kv_read_bytes_per_s
    overlap = q.compute_memory_overlap
    cc, mm = cc * overlap, mm + (1.0 - overlap) * cc
    r0 = q.tp_comm_latency_s + q.pp_comm_latency_s + q.step_overhead_s + q.draft_fixed_s
    rr = ((q.tp_comm_s_per_byte + q.pp_comm_s_per_byte) * m.hidden_size * ACTIVATION_BYTES * v
          + q.draft_s_per_seq + q.draft_kv_bytes_per_token_per_gpu * ctx / q.kv_read_bytes_per_s)
    per = q.pipeline_microbatches
    return cc / per, m0, mm / per, r0, rr / per
