"""Property tests of the cost model (deterministic Hypothesis)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.core.colocated import evaluate_colocated
from advisor.core.distributions import LengthDistribution
from advisor.core.memory import plan_memory
from advisor.core.plan.evaluate import evaluate
from advisor.core.scenario import TrafficPhase
from tests.core.helpers import instance, scenario

PROFILE = settings(derandomize=True, deadline=None, max_examples=25,
                   suppress_health_check=[HealthCheck.too_slow])

MODELS = ["llama-3.1-8b", "qwen2.5-32b", "llama-3.1-70b", "mixtral-8x7b", "deepseek-v3"]
GPUS = ["h100-sxm", "a100-80gb-sxm", "h200-sxm", "l40s", "mi300x"]


@PROFILE
@given(model=st.sampled_from(MODELS[:3]), gpu=st.sampled_from(GPUS),
       tp=st.sampled_from([1, 2, 4, 8]), p=st.integers(0, 16384), d=st.integers(0, 512),
       ctx=st.integers(0, 32768))
def test_step_time_never_below_roofline(model: str, gpu: str, tp: int, p: int, d: int,
                                        ctx: int) -> None:
    inst = instance(model, gpu, tp)
    t = float(inst.step_time_s(prefill_tokens=p, prefill_seqs=1, decode_seqs=d,
                               decode_context_tokens=ctx))
    g = inst.gpu
    flops = 2 * inst.model.matmul_params_per_token * (p + d)
    bytes_per_gpu = inst.model.weight_bytes("bf16") * inst.model.moe_touched_fraction(p + d) / tp \
        if inst.model.is_moe else inst.model.weight_bytes("bf16") / tp
    bound = max(flops / (tp * g.peak_flops_per_s("bf16")),
                bytes_per_gpu / g.memory_bandwidth_bytes_per_s)
    assert t >= bound


@PROFILE
@given(rate_a=st.floats(0.01, 50), factor=st.floats(1.0, 3.0), prompt=st.integers(64, 8192),
       output=st.integers(8, 1024), chunk=st.sampled_from([None, 512, 2048, 8192]),
       burst=st.floats(0.5, 3.0))
def test_higher_rate_never_lowers_percentile_latency(rate_a: float, factor: float, prompt: int,
                                                     output: int, chunk: int | None,
                                                     burst: float) -> None:
    inst = instance("llama-3.1-8b", "h100-sxm", 1)
    phase = TrafficPhase(name="p", share=1.0, rate_rps=rate_a, burstiness=burst,
                         prompt_tokens=LengthDistribution.fit(mean=prompt, p95=prompt * 2),
                         output_tokens=LengthDistribution.constant(output))
    mem = plan_memory(inst, prompt + output / 2, prompt * 4 + output, 0.9)
    c = None if chunk is None else np.array(float(chunk))
    a = evaluate_colocated(inst, mem.max_sequences, phase, np.array(rate_a), c, 0.95)
    b = evaluate_colocated(inst, mem.max_sequences, phase, np.array(rate_a * factor), c, 0.95)
    if bool(b.overloaded):
        return
    assert not bool(a.overloaded)
    assert float(b.ttft_q_s) >= float(a.ttft_q_s) * (1 - 1e-6)
    assert float(b.tpot_q_s) >= float(a.tpot_q_s) * (1 - 1e-6)


def _walk_numbers(obj, path="result"):
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            yield from _walk_numbers(getattr(obj, f.name), f"{path}.{f.name}")
    elif isinstance(obj, (tuple, list)):
        for i, x in enumerate(obj):
            yield from _walk_numbers(x, f"{path}[{i}]")
    elif isinstance(obj, dict):
        for k, x in obj.items():
            yield from _walk_numbers(x, f"{path}.{k}")
    elif isinstance(obj, (float, np.floating)):
        yield path, float(obj)


@settings(derandomize=True, deadline=None, max_examples=20,
          suppress_health_check=[HealthCheck.too_slow])
@given(model=st.sampled_from(MODELS), gpu=st.sampled_from(GPUS),
       gpus=st.sampled_from([1, 2, 8, 16, 64]), rate=st.floats(0.05, 2000),
       prompt=st.integers(16, 32000), output=st.integers(1, 4000),
       ttft=st.one_of(st.none(), st.floats(50, 20000)),
       tpot=st.one_of(st.none(), st.floats(5, 500)),
       inter=st.sampled_from([None, "eth-25", "ib-ndr-400"]), burst=st.floats(0.0, 4.0))
def test_no_nan_or_infinity_escapes(model, gpu, gpus, rate, prompt, output, ttft, tpot, inter,
                                    burst) -> None:
    sc = scenario(model=model, gpu=gpu, gpus=gpus, rate=rate,
                  prompt=LengthDistribution.fit(mean=prompt, p95=prompt * 1.5), output=output,
                  ttft_ms=ttft, tpot_ms=tpot, inter_node=inter if gpus > 8 else None,
                  burstiness=burst)
    result = evaluate(sc)
    for path, value in _walk_numbers(result):
        assert math.isfinite(value), f"{path} = {value}"
