"""A decode-only step as lines in the batch (dense models): the closed forms of
``colocated`` (the unchunked steady state) read them (docs/model.md §5)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.core.instance import ACTIVATION_BYTES, StepParams
from advisor.core.model_arch import ModelSpec


@dataclass(frozen=True, kw_only=True)
class DecodeLines:
    """A decode-only step as lines in the batch B: T_dec(B) = maxᵢ(aᵢ + bᵢ·B) + r0 + rr·B."""

    intercepts_s: tuple[np.ndarray | float, ...]
    """aᵢ: each line's seconds at B = 0."""
    slopes_s: tuple[np.ndarray | float, ...]
    """bᵢ: each line's seconds per sequence."""
    r0_s: np.ndarray | float
    """Communication latency, step overhead and the draft's fixed cost (seconds)."""
    rr_s: np.ndarray | float
    """Communication, draft and verify seconds per sequence outside the max."""

    def at(self, batch: np.ndarray | float) -> np.ndarray | float:
        """T_dec at ``batch`` sequences (the lines' formula)."""
        top: np.ndarray | float = self.intercepts_s[0] + self.slopes_s[0] * batch
        for a, b in zip(self.intercepts_s[1:], self.slopes_s[1:], strict=True):
            top = np.maximum(top, a + b * batch)
        return top + self.r0_s + self.rr_s * batch


def decode_step_lines(m: ModelSpec, q: StepParams, context_tokens: float) -> DecodeLines:
    """A decode-only step as lines in the batch B (dense models), the lines the closed forms
    of ``colocated`` (the unchunked steady state) read (docs/model.md §5):

        T_dec(B) = max(cc·B, m0, γ·(m0 + cc·B)) + a·B + r0 + rr·B,

    the weight GEMMs' roofline (compute line cc·B, weight-streaming line m0, the ridge line
    γ·(C + M) with γ = 1 − o/2, o = ``compute_memory_overlap``), the attention kernels' roofline
    per sequence a = max(ca, mk, γ·(ca + mk)) (their compute and KV traffic are both linear in
    B) and the communication + overhead line of :func:`step_time` for ``decode_seqs = B``
    (MoE weight traffic is not linear in B), as three lines: (0, cc + a), (m0, a),
    (γ·m0, γ·cc + a). With m pipeline micro-batches the lines hold for B ≥ m (a crossing of
    B/m sequences: slopes divided by m); below, each micro-batch holds one sequence and the
    step is the lines' value at B = m (``StepParams.pipeline_microbatches``).
    """
    if m.moe is not None:
        raise ValueError("decode steps of MoE models are not linear in the batch")
    ctx = float(context_tokens)
    if m.sliding_window_tokens:
        win_share = m.window_layer_share
        ctx = (1.0 - win_share) * ctx + win_share * min(ctx, m.sliding_window_tokens)
    v = q.decode_query_tokens  # speculation: k + 1 verify tokens per sequence, and the draft
    cc = 2.0 * m.matmul_params_per_token * v / q.compute_flops_per_s
    ca = m.decode_attention_flops_per_key * ctx * v / q.decode_attention_flops_per_s
    m0 = (q.dense_weight_bytes_per_gpu + q.expert_weight_bytes_per_gpu) / q.memory_bytes_per_s
    mk = q.kv_bytes_per_token_per_gpu * (ctx + v) / q.kv_read_bytes_per_s
    share = 1.0 - 0.5 * q.compute_memory_overlap
    a = np.maximum(np.maximum(ca, mk), share * (ca + mk))
    r0 = q.tp_comm_latency_s + q.pp_comm_latency_s + q.step_overhead_s + q.draft_fixed_s
    rr = ((q.tp_comm_s_per_byte + q.pp_comm_s_per_byte) * m.hidden_size * ACTIVATION_BYTES * v
          + q.draft_s_per_seq + q.draft_kv_bytes_per_token_per_gpu * ctx / q.kv_read_bytes_per_s)
    per = q.pipeline_microbatches
    return DecodeLines(intercepts_s=(0.0 * m0, m0, share * m0),
                       slopes_s=((cc + a) / per, a / per, (share * cc + a) / per),
                       r0_s=r0, rr_s=rr / per)
