"""MLA attention FLOPs and bytes, by hand (#29 item 1; docs/model.md §3 "MLA attention").

DeepSeek-V3 (config.json: 128 heads, kv_lora_rank 512, qk_rope_head_dim 64, qk_nope_head_dim
128, v_head_dim 128, 61 layers). FLOPs of a (query, key) pair per layer: 2·H·(d_qk + d_v)
(FlashMLA's deep dive, deepseek-ai/FlashMLA docs/20250422-new-kernel-deep-dive.md: FLOPs ≈
2·h_q·s_q·s_k·(d_k + d_v), bytes ≈ 2·s_k·d_k in BF16, so FLOP/byte ≈ 2·h_q·s_q).

* decompressed (prefill's form): d_qk = 128 + 64 = 192, d_v = 128 → 2·128·320 = 81,920;
* absorbed (decode's form): d_k = 512 + 64 = 576, d_v = 512 → 2·128·1,088 = 278,528.
"""

from __future__ import annotations

import pytest

from advisor.core.attention import attention_compute_s
from advisor.core.memory import build_instance
from advisor.loading.catalog import ProfileCatalog

CAT = ProfileCatalog(env={})
V3 = CAT.model("deepseek-v3")
LAYERS = 61


def test_deepseek_v3_mla_fields() -> None:
    m = V3.mla
    assert m is not None
    assert (V3.num_attention_heads, m.kv_lora_rank, m.qk_rope_head_dim, m.qk_nope_head_dim,
            m.v_head_dim, V3.num_layers) == (128, 512, 64, 128, 128, LAYERS)


@pytest.mark.parametrize(("context", "absorbed_gflop", "decompressed_gflop", "latent_mb"), [
    # per decode token, all 61 layers: FLOPs 2·128·1088·ctx·61 and 2·128·320·ctx·61, latent
    # bytes (512 + 64)·2 B·ctx·61
    (2048, 34.7959, 10.2341, 143.92),
    (8192, 139.1837, 40.9364, 575.67),
])
def test_decode_flops_and_bytes_per_token_by_hand(context: int, absorbed_gflop: float,
                                                  decompressed_gflop: float,
                                                  latent_mb: float) -> None:
    absorbed = 2 * 128 * (2 * 512 + 64) * context * LAYERS
    decompressed = 2 * 128 * (128 + 64 + 128) * context * LAYERS
    assert absorbed / 1e9 == pytest.approx(absorbed_gflop, rel=1e-5)
    assert decompressed / 1e9 == pytest.approx(decompressed_gflop, rel=1e-5)
    assert V3.decode_attention_flops_per_key * context == absorbed
    assert V3.prefill_attention_flops_per_pair * context == decompressed
    assert absorbed / decompressed == pytest.approx(1088 / 320)     # 3.4× per key
    latent = V3.kv_bytes_per_token("bf16") * context                # read once per token
    assert latent == (512 + 64) * 2 * LAYERS * context
    assert latent / 1e6 == pytest.approx(latent_mb, rel=1e-4)
    # FLOP per byte of the absorbed kernel ≈ 2·h_q (the deep dive): 128·1088/576 = 241.8
    assert absorbed / latent == pytest.approx(128 * 1088 / 576)


def test_dense_models_keep_one_form() -> None:
    llama = CAT.model("llama-3.1-70b")
    assert llama.mla is None
    want = 4 * llama.num_attention_heads * llama.head_dim * llama.num_layers
    assert llama.prefill_attention_flops_per_pair == llama.decode_attention_flops_per_key == want


@pytest.mark.parametrize("precision", ["fp8", "bf16"])
def test_absorbed_decode_runs_at_the_16_bit_peak(precision: str) -> None:
    # FP8 weights and (for "fp8") an FP8 KV cache: prefill attention takes the FP8 peak,
    # MLA's absorbed decode the BF16 peak (FlashMLA dequantizes an FP8 cache to BF16)
    gpu, link = CAT.gpu("h200-sxm"), CAT.link("nvlink4")
    inst = build_instance(V3, gpu, precision, CAT.engine("sglang"), 8, 1, link, None)
    q = inst.params
    eff16 = inst.efficiency.attention_efficiency(False)
    assert q.decode_attention_flops_per_s == pytest.approx(8 * gpu.bf16_flops_per_s * eff16)
    if precision == "fp8":
        assert inst.fp8_attention
        assert q.attention_flops_per_s > 1.5 * q.decode_attention_flops_per_s
    seconds = attention_compute_s(V3, q.attention_flops_per_s,
                                  q.decode_attention_flops_per_s, 0.0, 0.0, 1.0, 2048.0)
    assert seconds == pytest.approx(V3.decode_attention_flops_per_key * 2048
                                    / q.decode_attention_flops_per_s)
    # and 256 decodes at 2k on TP8: 8.9 TFLOP of attention, not 3.1 (decompressed at FP8)
    assert 256 * V3.decode_attention_flops_per_key * 2048 / 1e12 == pytest.approx(8.908, rel=1e-3)
