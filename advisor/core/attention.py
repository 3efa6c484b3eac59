"""Attention's share of a step: the keys each query attends to and the attention kernels'
seconds (docs/model.md §3: K_pre, K_dec, A_pre, A_dec; MLA's absorbed decode, #29 item 1)."""

from __future__ import annotations

from typing import Any

import numpy as np

from advisor.core.model_arch import ModelSpec


def attended_keys(m: ModelSpec, chunk: np.ndarray, k: np.ndarray, ctx: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(keys per prefill query summed over the chunk, keys per decode query, earlier
    tokens re-read per prefill sequence) of ``instance.step_time``, sliding-window layers at
    most W keys each."""
    pre_keys = 2.0 * chunk * k + chunk * chunk
    dec_keys = ctx
    window = m.sliding_window_tokens
    if window:
        win_share = m.window_layer_share
        full_share = 1.0 - win_share
        lo, hi = np.minimum(k, window), np.minimum(k + chunk, window)
        win_keys = ((hi * hi - lo * lo) / 2.0
                    + np.maximum(k + chunk - np.maximum(k, window), 0.0) * window)
        pre_keys = full_share * pre_keys + win_share * 2.0 * win_keys
        dec_keys = full_share * ctx + win_share * np.minimum(ctx, window)
        k = full_share * k + win_share * np.minimum(k, window)
    return pre_keys, dec_keys, k


def attention_compute_s(m: ModelSpec, attention_flops_per_s: Any,
                        decode_attention_flops_per_s: Any, prefill_seqs: Any, pre_keys: Any,
                        decode_queries: Any, dec_keys: Any) -> Any:
    """Seconds of the attention kernels: the prefill pairs (``pre_keys`` is twice the pairs
    per sequence, :func:`attended_keys`) at the attention rate, the decode queries × keys at
    the decode-attention rate (MLA: absorbed, in 16 bit; docs/model.md §3)."""
    return (prefill_seqs * 0.5 * m.prefill_attention_flops_per_pair * pre_keys
            / attention_flops_per_s
            + m.decode_attention_flops_per_key * decode_queries * dec_keys
            / decode_attention_flops_per_s)
