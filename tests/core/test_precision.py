"""Precision per tensor (#16): bytes of weights and KV cache, and the compute format per GPU,
against hand arithmetic (formats: docs/model.md §1.1)."""

from __future__ import annotations

import pytest

from advisor.core.precision import Precision, compute_format, unsupported_reason
from tests.core.helpers import catalog, instance

GB = 1e9


def test_kv_cache_fp8_halves_kv_bytes_of_an_fp8_weight_model() -> None:
    """Llama-3.1-70B: 2 · 80 layers · 8 KV heads · 128 dims · bytes per element."""
    m = catalog().model("llama-3.1-70b")
    fp8_kv = Precision(weights="fp8", kv_cache="fp8")
    bf16_kv = Precision(weights="fp8", kv_cache="bf16")
    assert m.kv_bytes_per_token(bf16_kv) == 2 * 80 * 8 * 128 * 2 == 327_680
    assert m.kv_bytes_per_token(fp8_kv) == 2 * 80 * 8 * 128 * 1 == 163_840
    assert m.weight_bytes(fp8_kv) == m.weight_bytes(bf16_kv) == m.total_params * 1.0


def test_fp16_equals_bf16_bytes() -> None:
    m = catalog().model("llama-3.1-8b")
    assert m.weight_bytes("fp16") == m.weight_bytes("bf16") == m.total_params * 2.0
    assert m.kv_bytes_per_token("fp16") == m.kv_bytes_per_token("bf16")


@pytest.mark.parametrize(("fmt", "bits"), [("int4", 4 + 20 / 128), ("fp4", 4.5),
                                           ("mxfp4", 4.25)])
def test_four_bit_weights_keep_embedding_and_head_in_16_bit(fmt: str, bits: float) -> None:
    """Llama-3.1-8B (untied): vocab 128,256 × hidden 4,096 twice at 2 B, the rest at bits/8."""
    m = catalog().model("llama-3.1-8b")
    edge = 2 * 128_256 * 4_096
    hand = (m.total_params - edge) * bits / 8 + edge * 2
    assert m.weight_bytes(fmt) == pytest.approx(hand, rel=1e-12)
    if fmt == "int4":  # 6.98e9 quantised params · 0.5195 B + 1.05e9 · 2 B
        assert m.weight_bytes(fmt) / GB == pytest.approx(5.727, rel=1e-3)


def test_int4_step_time_streams_four_bit_weights_and_computes_in_16_bit() -> None:
    """A batch-1 decode step on H100 is bound by streaming the weights: int4 streams about
    a quarter of bf16's bytes (plus the 16-bit LM head), at the BF16 tensor peak."""
    bf16 = instance("llama-3.1-70b", "h100-sxm", 2, "bf16")
    int4 = instance("llama-3.1-70b", "h100-sxm", 2, "int4")
    m = bf16.model
    head = 128_256 * 8_192 * 2.0  # LM head, 16 bit in both
    hand_int4 = ((m.total_params - 2 * 128_256 * 8_192) * (4 + 20 / 128) / 8 + head) / 2
    assert int4.params.dense_weight_bytes_per_gpu == pytest.approx(hand_int4, rel=1e-12)
    assert int4.peak_flops_per_s == bf16.peak_flops_per_s == 989e12
    t_bf16 = float(bf16.decode_step_s(1.0, 1.0))
    t_int4 = float(int4.decode_step_s(1.0, 1.0))
    bw = bf16.params.memory_bytes_per_s
    fixed = t_bf16 - bf16.params.dense_weight_bytes_per_gpu / bw
    assert t_int4 - fixed == pytest.approx(hand_int4 / bw, rel=1e-3)


def test_fp4_memory_and_compute_on_blackwell() -> None:
    """NVFP4 on B200: 4.5-bit weights, matmuls at the 9 PFLOPS dense FP4 peak."""
    inst = instance("llama-3.1-70b", "b200", 1, "fp4")
    m = inst.model
    edge = 2 * 128_256 * 8_192
    assert inst.weight_bytes_per_gpu == pytest.approx((m.total_params - edge) * 0.5625 + edge * 2)
    assert inst.peak_flops_per_s == 9.0e15
    assert inst.params.compute_flops_per_s == pytest.approx(
        9.0e15 * inst.efficiency.prefill_compute_efficiency_fp8)


def test_weight_only_fallbacks_and_refusal() -> None:
    """FP8 on A100 runs weight-only (16-bit peak, 1 B weights); MXFP4 on H100 likewise;
    NVFP4 before Blackwell is refused with a reason."""
    a100 = instance("llama-3.1-8b", "a100-80gb-sxm", 1, "fp8")
    assert a100.peak_flops_per_s == 312e12
    assert a100.weight_bytes_per_gpu == a100.model.total_params
    assert compute_format("mxfp4", has_fp8=True, has_fp4=False) == "bf16"
    assert compute_format("mxfp4", has_fp8=True, has_fp4=True) == "fp4"
    assert compute_format("int4", has_fp8=True, has_fp4=True) == "bf16"
    assert "Blackwell" in unsupported_reason("fp4", "NVIDIA H100", has_fp4=False)
    assert unsupported_reason("fp4", "NVIDIA B200", has_fp4=True) == ""
    assert unsupported_reason("mxfp4", "NVIDIA H100", has_fp4=False) == ""


def test_shorthand_and_labels() -> None:
    block = Precision(weights="fp8-block", kv_cache="bf16")
    assert Precision.of("fp8-block") == block == "fp8-block"
    assert hash(Precision.of("fp8")) == hash("fp8")
    assert Precision(weights="fp8", kv_cache="bf16").label == "weights fp8, KV bf16"
    assert str(Precision.of("int4")) == "int4"
