"""Prefix caching (#16): a hit rate h computes (1 − h) of each prompt; KV memory, decode
context and KV transfer keep the whole prompt (docs/model.md §2.1)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from advisor.core.disaggregated import prefill_capacity
from advisor.core.distributions import LengthDistribution
from advisor.core.plan.evaluate import evaluate
from tests.core.helpers import instance, scenario


def _with_hit_rate(hit: float, **kw: object):
    sc = scenario(**kw)  # type: ignore[arg-type]
    return replace(sc, phases=tuple(replace(p, prefix_cache_hit_rate=hit) for p in sc.phases))


def test_half_hit_rate_halves_prefill_compute_per_request() -> None:
    """Llama-3.1-8B, 4,096-token prompts on one H100: at h = 0.5 a request computes 2,048
    tokens. Matmul FLOPs 2·N·S halve exactly; the causal attention term 2·L·d·S² quarters.
    A whole-prompt prefill pass is compute-bound here (≈0.1 s of FLOPs vs ≈8 ms of weight
    reads), so the model's pass time minus its fixed step cost is FLOPs / (peak · MFU), exactly;
    the prefill capacity (requests/s of a saturated instance) rises by nearly the FLOP ratio
    (weight reads and step costs per pass do not shrink)."""
    inst = instance("llama-3.1-8b", "h100-sxm", 1)
    m = inst.model
    full = scenario(prompt=4096).phases[0]
    half = replace(full, prefix_cache_hit_rate=0.5)
    assert half.computed_prompt_tokens.mean == 2048
    assert half.computed_prompt_tokens.quantile(0.95) == 2048

    def flops(s: float) -> float:
        return 2 * m.matmul_params_per_token * s + 2 * m.num_layers * m.attention_width * s * s

    assert 2 * m.matmul_params_per_token * 2048 * 2 == 2 * m.matmul_params_per_token * 4096
    hand_ratio = flops(4096) / flops(2048)
    cap_full = prefill_capacity(inst, full, 0.95, None, inst.intra_link).max_rate_rps
    cap_half = prefill_capacity(inst, half, 0.95, None, inst.intra_link).max_rate_rps
    rate = inst.params.compute_flops_per_s  # 989 TFLOPS × MFU
    fixed = inst.params.step_overhead_s
    for tokens in (4096, 2048):
        assert float(inst.prefill_time_s(tokens)) - fixed == pytest.approx(
            flops(tokens) / rate, rel=1e-9)
    computed = half.computed_prompt_tokens.mean
    assert (float(inst.prefill_time_s(computed)) - fixed) * hand_ratio == pytest.approx(
        float(inst.prefill_time_s(4096)) - fixed, rel=1e-9)
    assert 0.9 * hand_ratio < cap_half / cap_full <= hand_ratio


def test_hit_rate_moves_the_ideal_prefill_fraction_down_and_keeps_kv_bytes() -> None:
    kw = {"model": "llama-3.1-8b", "gpus": 8, "rate": 20.0, "prompt": 2000, "output": 200,
          "ttft_ms": 1000.0, "tpot_ms": 40.0}
    cold = evaluate(_with_hit_rate(0.0, **kw)).disaggregated
    warm = evaluate(_with_hit_rate(0.5, **kw)).disaggregated
    assert cold is not None and warm is not None
    assert warm.ideal_prefill_fraction < cold.ideal_prefill_fraction
    assert cold.kv_transfer is not None and warm.kv_transfer is not None
    # the decode side still needs the whole prompt's KV (engines: docs/model.md §2.1)
    assert warm.kv_transfer.bytes_per_request_mean == cold.kv_transfer.bytes_per_request_mean


def test_shared_prefix_share_of_the_mean() -> None:
    """A 1,000-token shared prefix on constant 4,000-token prompts: h = 0.25; on a lognormal,
    E[min(P, S)] / E[S] (prompts shorter than the prefix are all cached)."""
    constant = LengthDistribution.constant(4000)
    assert constant.mean_capped(1000) / constant.mean == 0.25
    skewed = LengthDistribution.fit(mean=4000, p50=3000)
    share = skewed.mean_capped(1000) / skewed.mean
    assert 0.0 < share < 0.25
    assert skewed.mean_capped(1e12) == pytest.approx(skewed.mean)
