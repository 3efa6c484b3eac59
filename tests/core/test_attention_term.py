"""The attention FLOPs as their own step-time term (#30 item 3; docs/model.md §3): the weight
GEMMs run at the weights' tensor peak × the prefill MFU, the attention kernels at the peak of
the attention's format (FP8 only with an FP8 KV cache on FP8 tensor cores) × the attention
efficiency, each checked against hand arithmetic."""

from __future__ import annotations

import dataclasses

import pytest

from advisor.core.engine import EngineSpec
from advisor.core.memory import build_instance
from advisor.core.precision import Precision
from tests.core.helpers import catalog


def _instance(precision: str | Precision, gpu_id: str = "h100-sxm",
              attention_efficiency: float | None = None):
    c = catalog()
    gpu = c.gpu(gpu_id)
    engine = dataclasses.replace(EngineSpec.generic("vllm"),
                                 attention_compute_efficiency=attention_efficiency)
    return build_instance(c.model("llama-3.1-8b"), gpu, precision, engine, 1, 1,
                          c.link(gpu.intra_node_link_id), None)


def test_long_prompt_prefill_is_gemm_time_plus_attention_time() -> None:
    """Llama-3.1-8B BF16 on one H100, one 16,384-token prompt (compute-bound, TP1): T − C_step
    = 2·N·s / (989e12·MFU) + 2·L·d_attn·s² / (989e12·η_attn) with η_attn = 0.30."""
    inst = _instance("bf16", attention_efficiency=0.30)
    m, s = inst.model, 16_384.0
    gemm = 2 * m.matmul_params_per_token * s / (989e12 * inst.prefill_mfu)
    attention = 2 * m.num_layers * m.attention_width * s * s / (989e12 * 0.30)
    fixed = inst.params.step_overhead_s
    assert float(inst.prefill_time_s(s)) - fixed == pytest.approx(gemm + attention, rel=1e-9)
    # the same prompt at the GEMM efficiency (no attention value of its own) is faster
    assert float(_instance("bf16").prefill_time_s(s)) < float(inst.prefill_time_s(s))


def test_decode_attention_flops_run_at_the_attention_rate() -> None:
    """Decode at batch 4,096, context 512, the attention kernels compute-bound at a
    (hypothetical) low attention efficiency — 0.22 s of FLOPs at η_attn = 0.005 over 0.14 s of
    KV reads (each kernel class takes its own max, docs/model.md §3): halving η_attn adds
    exactly 4·L·d_attn·ctx·B / (989e12·η_attn) seconds."""
    m, b, ctx = catalog().model("llama-3.1-8b"), 4096.0, 512.0
    slow, slower = _instance("bf16", attention_efficiency=0.005), _instance(
        "bf16", attention_efficiency=0.0025)
    attention_flops = 4 * m.num_layers * m.attention_width * ctx * b
    hand = attention_flops / (989e12 * 0.0025) - attention_flops / (989e12 * 0.005)
    delta = float(slower.decode_step_s(b, ctx)) - float(slow.decode_step_s(b, ctx))
    assert delta == pytest.approx(hand, rel=1e-9)


@pytest.mark.parametrize(("precision", "gpu_id", "fp8", "peak"), [
    ("fp8", "h100-sxm", True, 1979e12),                       # FP8 weights and FP8 KV cache
    (Precision(weights="fp8", kv_cache="bf16"), "h100-sxm", False, 989e12),  # 16-bit KV
    ("fp8-block", "h100-sxm", False, 989e12),                 # block FP8 keeps a 16-bit KV
    ("fp8", "a100-80gb-sxm", False, 312e12),                  # no FP8 tensor cores on Ampere
])
def test_attention_format_follows_the_kv_cache(precision: str | Precision, gpu_id: str,
                                               fp8: bool, peak: float) -> None:
    inst = _instance(precision, gpu_id)
    eff = inst.efficiency
    expected = eff.prefill_compute_efficiency_fp8 if fp8 else eff.prefill_compute_efficiency_bf16
    assert inst.fp8_attention is fp8
    assert inst.attention_flops_per_gpu_s == pytest.approx(peak * expected, rel=1e-12)
    assert inst.params.attention_flops_per_s == pytest.approx(peak * expected, rel=1e-12)
