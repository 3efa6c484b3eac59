"""Precision per layer group (#29 item 2): each group's weights at its own bytes per parameter,
each GEMM group at its own format's peak, against hand arithmetic (docs/model.md §1.1)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from advisor.core.precision import GroupFormats, Precision, unsupported_groups
from tests.core.helpers import catalog, instance

# DeepSeek-V3 (config.json; profiles/models/deepseek-v3.yaml)
L, H, VOCAB = 61, 7168, 129_280
HEADS, Q_LORA, KV_LORA, ROPE, NOPE, V = 128, 1536, 512, 64, 128, 128
EXPERTS, TOP_K, MOE_INTER, DENSE_LAYERS, DENSE_INTER = 256, 8, 2048, 3, 18432
MOE_LAYERS = L - DENSE_LAYERS

ATTENTION = L * (H * Q_LORA + Q_LORA + Q_LORA * HEADS * (NOPE + ROPE)   # q down, norm, q up
                 + H * (KV_LORA + ROPE) + KV_LORA                      # kv down, norm
                 + KV_LORA * HEADS * (NOPE + V)                        # kv up
                 + HEADS * V * H)                                      # o_proj
DENSE = (DENSE_LAYERS * 3 * H * DENSE_INTER                            # dense FFN layers
         + MOE_LAYERS * (3 * H * MOE_INTER + H * EXPERTS)              # shared expert, router
         + L * 2 * H + H)                                              # norms, final norm
ROUTED = MOE_LAYERS * EXPERTS * 3 * H * MOE_INTER
HEAD = EMBED = VOCAB * H
FP4, FP8, BF16 = 4.5 / 8, 1.0, 2.0

MIXED = Precision(weights="fp4", kv_cache="bf16", attention="fp8", dense="fp8")
"""NVFP4 experts (and LM head at today's 4-bit rule), FP8 attention projections and dense."""


def test_group_parameters_by_hand() -> None:
    m = catalog().model("deepseek-v3")
    assert m.attention_group_params == ATTENTION
    assert m.dense_group_params == DENSE
    assert m.routed_expert_params == ROUTED
    assert m.total_params == ATTENTION + DENSE + ROUTED + HEAD + EMBED
    groups = m.matmul_params_by_group()
    assert groups == {"experts": MOE_LAYERS * TOP_K * 3 * H * MOE_INTER,
                      "attention": ATTENTION, "dense": DENSE, "lm_head": HEAD}


def test_mixed_weights_are_larger_by_the_fp8_groups() -> None:
    """All-fp4: everything but embedding and head at 4.5 bits, those two at 2 B. Mixed:
    attention and dense at 1 B instead — (A + D) · (1 − 0.5625) B more."""
    m = catalog().model("deepseek-v3")
    all_fp4 = (ATTENTION + DENSE + ROUTED) * FP4 + (HEAD + EMBED) * BF16
    mixed = (ATTENTION + DENSE) * FP8 + ROUTED * FP4 + (HEAD + EMBED) * BF16
    assert m.weight_bytes("fp4") == pytest.approx(all_fp4, rel=1e-12)
    assert m.weight_bytes(MIXED) == pytest.approx(mixed, rel=1e-12)
    assert m.weight_bytes(MIXED) - m.weight_bytes("fp4") == pytest.approx(
        (ATTENTION + DENSE) * (FP8 - FP4), rel=1e-9)
    assert m.expert_weight_bytes(MIXED) == m.expert_weight_bytes("fp4") == ROUTED * FP4
    # 11.41 G attention + 3.85 G dense params (MLA projections dominate): 6.68 GB more
    assert pytest.approx(11.41, abs=0.01) == ATTENTION / 1e9
    assert pytest.approx(3.85, abs=0.01) == DENSE / 1e9
    assert (m.weight_bytes(MIXED) - m.weight_bytes("fp4")) / 1e9 == pytest.approx(6.68, abs=0.01)


@pytest.mark.parametrize(("gpu", "fp8_peak", "fp4_peak"), [("b200", 4.5e15, 9.0e15),
                                                           ("gb200", 5.0e15, 1.0e16)])
def test_mixed_step_is_slower_by_the_fp8_gemms(gpu: str, fp8_peak: float,
                                               fp4_peak: float) -> None:
    """A prefill of 8,192 tokens at TP8: the experts run at the FP4 peak in both; attention
    projections and dense layers 2·(A + D)·P FLOPs at the FP8 peak instead of the FP4 one
    (both at the FP8/FP4 prefill efficiency, 0.45); the LM head (weights fp4, head unset)
    computes at FP4 in both."""
    tp, tokens = 8, 8192.0
    fp4 = instance("deepseek-v3", gpu, tp, "fp4")
    mixed = dataclasses.replace(fp4, precision=MIXED)
    mfu = fp4.efficiency.prefill_compute_efficiency_fp8
    assert mfu == 0.45
    a = fp4.step_parts(prefill_tokens=tokens, prefill_seqs=1.0)
    b = mixed.step_parts(prefill_tokens=tokens, prefill_seqs=1.0)
    rate4, rate8 = tp * fp4_peak * mfu, tp * fp8_peak * mfu
    nonrouted = ATTENTION + DENSE + HEAD
    assert float(a.dense_s) == pytest.approx(2 * nonrouted * tokens / rate4, rel=1e-12)
    assert float(b.dense_s) == pytest.approx(
        2 * tokens * ((ATTENTION + DENSE) / rate8 + HEAD / rate4), rel=1e-12)
    extra = 2 * (ATTENTION + DENSE) * tokens * (1 / rate8 - 1 / rate4)
    assert float(b.dense_s - a.dense_s) == pytest.approx(extra, rel=1e-9)
    assert float(b.experts_s) == pytest.approx(float(a.experts_s), rel=1e-12)
    assert float(b.attention_s) == float(a.attention_s)  # the attention core: unchanged
    # compute-bound at this size: the whole step grows by the same seconds
    assert float(a.dense_s + a.attention_s + a.experts_s) > float(a.weights_s + a.kv_s)
    assert float(b.step_s - a.step_s) == pytest.approx(extra, rel=1e-6)
    assert float(b.weights_s) > float(a.weights_s)


def test_groups_in_the_weights_format_reproduce_the_one_format_step() -> None:
    """Every group named in the weights' own format takes the per-group path and lands on
    the one-format numbers (to rounding)."""
    same = Precision(weights="fp4", kv_cache="bf16", experts="fp4", attention="fp4", dense="fp4")
    a = instance("deepseek-v3", "b200", 8, "fp4")
    b = dataclasses.replace(a, precision=same)
    assert not same.uniform
    assert b.model.weight_bytes(same) == pytest.approx(a.model.weight_bytes("fp4"), rel=1e-12)
    for p, n in ((8192.0, 1.0), (0.0, 0.0)):
        ta = a.step_time_s(prefill_tokens=p, prefill_seqs=n, decode_seqs=64.0,
                           decode_context_tokens=4000.0)
        tb = b.step_time_s(prefill_tokens=p, prefill_seqs=n, decode_seqs=64.0,
                           decode_context_tokens=4000.0)
        assert float(tb) == pytest.approx(float(ta), rel=1e-12)


def test_shorthand_is_uniform_and_equal_to_its_word() -> None:
    assert Precision.of("fp4").uniform
    assert Precision.of("fp4") == "fp4"
    assert MIXED != "fp4"
    assert Precision.of("fp4") != MIXED
    assert MIXED.label == "fp4, attention fp8, dense fp8"
    assert hash(MIXED) != hash(Precision.of("fp4"))


def test_lm_head_rule() -> None:
    """Unset: 16-bit bytes under 4-bit weights, computing as the weights; set: its own."""
    p = Precision(weights="fp4", kv_cache="bf16")
    assert p.group_format("lm_head") == "bf16" and p.group_compute_weights("lm_head") == "fp4"
    q = Precision(weights="fp4", kv_cache="bf16", lm_head="fp8")
    assert q.group_format("lm_head") == "fp8" and q.group_compute_weights("lm_head") == "fp8"
    assert Precision(weights="fp8", kv_cache="bf16").group_format("lm_head") == "fp8"


def test_an_fp8_lm_head_halves_its_bytes_and_doubles_its_rate() -> None:
    m = catalog().model("deepseek-v3")
    q = Precision(weights="fp4", kv_cache="bf16", lm_head="fp8")
    assert m.weight_bytes(q) - m.weight_bytes("fp4") == pytest.approx(HEAD * (FP8 - BF16),
                                                                      rel=1e-9)


def test_checkpoint_formats_fill_the_unset_groups() -> None:
    ckpt = GroupFormats(experts="fp4", attention="bf16", dense="fp4", lm_head="bf16")
    p = Precision(weights="fp4", kv_cache="bf16", dense="fp8").with_checkpoint(ckpt)
    assert (p.experts, p.attention, p.dense, p.lm_head) == ("fp4", "bf16", "fp8", "bf16")
    assert Precision.of("fp8").with_checkpoint(None) == "fp8"


def test_model_with_checkpoint_formats_uses_them() -> None:
    m = catalog().model("deepseek-v3")
    ckpt = dataclasses.replace(m, checkpoint_formats=GroupFormats(
        experts="fp4", attention="bf16", dense="fp4", lm_head="bf16"))
    hand = ATTENTION * BF16 + (DENSE + ROUTED) * FP4 + (HEAD + EMBED) * BF16
    assert ckpt.weight_bytes("fp4") == pytest.approx(hand, rel=1e-12)
    # the workload's own group format wins over the checkpoint's
    own = Precision(weights="fp4", kv_cache="bf16", attention="fp8")
    assert ckpt.weight_bytes(own) == pytest.approx(hand - ATTENTION * (BF16 - FP8), rel=1e-12)


def test_fp4_group_on_a_gpu_without_fp4_tensor_cores() -> None:
    found = unsupported_groups(Precision(weights="fp8", kv_cache="bf16", experts="fp4"),
                               "NVIDIA H100", False)
    assert [g for g, _ in found] == ["experts"]
    assert "Blackwell" in found[0][1] and "experts" in found[0][1]
    assert unsupported_groups(Precision(weights="fp8", kv_cache="bf16", experts="mxfp4"),
                              "NVIDIA H100", False) == []
    assert unsupported_groups(MIXED, "NVIDIA B200", True) == []


def test_expert_group_in_fp8_on_hopper_runs_the_experts_at_the_fp8_peak() -> None:
    """bf16 weights with fp8 experts on H100: experts at the FP8 peak × FP8 efficiency, the
    rest at the BF16 peak × BF16 efficiency."""
    a = instance("deepseek-v3", "h100-sxm", 8, "bf16")
    b = dataclasses.replace(a, precision=Precision(weights="bf16", kv_cache="bf16", experts="fp8"))
    eff = a.efficiency
    assert b.expert_flops_per_gpu_s == pytest.approx(
        a.gpu.fp8_flops_per_s * eff.prefill_compute_efficiency_fp8, rel=1e-12)
    assert b.gemm_flops_per_gpu_s == pytest.approx(
        a.gpu.bf16_flops_per_s * eff.prefill_compute_efficiency_bf16, rel=1e-12)
    assert np.isclose(a.gemm_flops_per_gpu_s, b.gemm_flops_per_gpu_s)


@pytest.mark.parametrize(("model", "gpu", "precision"), [
    ("deepseek-v3", "b200", "fp4"), ("deepseek-v3", "h200-sxm", "fp8-block"),
    ("llama-3.1-70b", "h100-sxm", "fp8"), ("llama-3.1-8b", "a100-80gb-sxm", "int4"),
    ("gpt-oss-120b", "b200", "mxfp4")])
def test_one_word_precisions_keep_the_one_rate_formula_bit_for_bit(model: str, gpu: str,
                                                                   precision: str) -> None:
    """The shorthand takes the one-format path: tp · peak · MFU for every GEMM, in that
    order (the goldens' numbers), and the weight bytes of the one-format sum."""
    tp = 8
    inst = instance(model, gpu, tp, precision)
    q = inst.params
    rate = tp * inst.peak_flops_per_s * inst.prefill_mfu
    assert q.compute_flops_per_s == rate
    assert q.expert_compute_flops_per_s == rate
    m = inst.model
    b = Precision.of(precision).weight_bytes_per_param
    experts = m.routed_expert_params
    fixed = m.moe.expert_weight_bytes_per_param if m.moe is not None else None
    total = ((m.total_params - experts) * b + experts * min(b, fixed) if fixed is not None
             else m.total_params * b)
    if Precision.of(precision).four_bit:
        total += (m.embedding_params + m.lm_head_params) * (2.0 - b)
    assert m.weight_bytes(precision) == total
