"""Pipeline stages add latency; throughput credit only where the engine micro-batches
(docs/model.md §3, issue #27 item 3).

A TP t × PP s step crosses the s stages one after the other: its latency is the TP-t step
with every layer plus s − 1 activation hops. An engine that keeps one micro-batch per stage
in flight (vLLM V1, SGLang, TensorRT-LLM; ``pipeline_parallel.microbatching`` in their
profiles) spreads a step's sequences over s micro-batches, each crossing the stages.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from advisor.core.colocated import evaluate_colocated
from advisor.core.decode_lines import decode_step_lines
from advisor.core.engine import EngineSpec
from advisor.core.instance import ACTIVATION_BYTES, Instance
from advisor.core.memory import build_instance
from tests.core.helpers import catalog, scenario

CTX = 4096 + 512


def _engine(microbatching: bool) -> EngineSpec:
    return dataclasses.replace(catalog().engine("sglang"), pipeline_microbatching=microbatching)


def _r1_h20(tp: int, pp: int, microbatching: bool) -> Instance:
    """DeepSeek-R1 (DeepSeek-V3 architecture), FP8 block weights, on H20 nodes over RoCE."""
    c = catalog()
    return build_instance(c.model("deepseek-v3"), c.gpu("h20"), "fp8-block",
                          _engine(microbatching), tp, pp, c.link("nvlink4"), c.link("roce-400"))


@pytest.mark.parametrize("microbatching", [False, True])
def test_a_tp8_pp2_crossing_is_not_faster_than_tp8_at_the_same_batch(microbatching: bool
                                                                     ) -> None:
    """The issue's case: TP8 × PP2 decoded a step in 20.6 ms against TP8's 35.6 ms. A
    crossing of b sequences now takes at least TP8's step at b (with micro-batching a step of
    2b sequences is two crossings of b side by side)."""
    tp8, pp2 = _r1_h20(8, 1, microbatching), _r1_h20(8, 2, microbatching)
    per_crossing = 2 if microbatching else 1
    for b in (1.0, 16.0, 64.0, 256.0):
        crossing = float(pp2.decode_step_s(b * per_crossing, CTX))
        assert crossing >= float(tp8.decode_step_s(b, CTX))
    # a lone 4,096-token prompt sits in one micro-batch: TP8's pass plus the hop
    assert float(pp2.prefill_time_s(4096)) >= float(tp8.prefill_time_s(4096))


def test_the_crossing_is_the_tp_step_plus_the_stage_hops_by_hand() -> None:
    """Dense Llama-3.1-70B on H100: TP8 × PP4 = the TP8 step with all 80 layers + 3 hops of
    the batch's activations over the inter-node NIC (latency + bytes / effective bandwidth)."""
    c = catalog()
    nic = c.link("ib-ndr-400")
    args = (c.model("llama-3.1-70b"), c.gpu("h100-sxm"), "fp8", _engine(False))
    tp8 = build_instance(*args, 8, 1, c.link("nvlink4"), nic)
    pp4 = build_instance(*args, 8, 4, c.link("nvlink4"), nic)
    for b in (1.0, 32.0, 512.0):
        hop_s = nic.latency_s + b * 8192 * ACTIVATION_BYTES / nic.effective_bytes_per_s
        assert float(pp4.decode_step_s(b, 2000.0)) == pytest.approx(
            float(tp8.decode_step_s(b, 2000.0)) + 3 * hop_s, rel=1e-12)
    # the memory plan still splits the weights and the KV over all 32 GPUs
    assert pp4.weight_bytes_per_gpu == pytest.approx(tp8.weight_bytes_per_gpu / 4)
    assert pp4.kv_bytes_per_token_per_gpu == pytest.approx(tp8.kv_bytes_per_token_per_gpu / 4)


def test_throughput_credit_only_where_the_engine_micro_batches() -> None:
    """At 256 decoding sequences: without micro-batching TP8 × PP2 carries no more tokens/s
    than TP8 (one batch crosses at a time); with it, two crossings of 128 run side by side."""
    tp8 = _r1_h20(8, 1, True)
    flat, micro = _r1_h20(8, 2, False), _r1_h20(8, 2, True)
    b = 256.0
    rate_tp8 = b / float(tp8.decode_step_s(b, CTX))
    assert b / float(flat.decode_step_s(b, CTX)) <= rate_tp8
    assert b / float(micro.decode_step_s(b, CTX)) > 1.3 * rate_tp8
    assert float(micro.decode_step_s(b, CTX)) == pytest.approx(
        float(flat.decode_step_s(b / 2, CTX)), rel=1e-12)


def test_which_engines_micro_batch() -> None:
    """The profiles say it, with their sources (vLLM V1's batch queue, SGLang's PP event
    loop, TensorRT-LLM's PyExecutor micro-batches; SGLang 0.2-0.3 had no PP)."""
    c = catalog()
    for engine, expected in (("vllm", True), ("sglang", True), ("trtllm", True),
                             ("vllm-v0", True), ("trtllm-legacy", True), ("sglang-0.3", False)):
        assert c.engine(engine).pipeline_microbatching is expected, engine
    assert EngineSpec.generic("vllm").pipeline_microbatching is False  # no profile: no credit


def test_decode_lines_hold_from_one_sequence_per_micro_batch() -> None:
    """The unchunked closed form's lines: T(B) = lines(B) for B ≥ m, their value at m below
    (each micro-batch holds one sequence) — the step-time formula's own values."""
    c = catalog()
    inst = build_instance(c.model("llama-3.1-70b"), c.gpu("h100-sxm"), "fp8", _engine(True),
                          8, 4, c.link("nvlink4"), c.link("ib-ndr-400"))
    lines = decode_step_lines(inst.model, inst.params, 3000.0)
    for b in (1.0, 2.0, 4.0, 9.0, 300.0):
        x = max(b, 4.0)
        assert float(inst.decode_step_s(b, 3000.0)) == pytest.approx(float(lines.at(x)),
                                                                    rel=1e-12)


def test_colocated_chunked_budget_is_per_micro_batch() -> None:
    """A colocated PP instance's chunked step carries the budget of every micro-batch in
    flight: at light load a prompt advances in its micro-batch's budget (a prompt is in one
    micro-batch at a time), so its TTFT is the TP8 instance's, plus the hops."""
    sc = scenario(model="llama-3.1-70b", gpus=32, inter_node="ib-ndr-400", precision="fp8",
                  prompt=4096, output=256)
    c = catalog()
    nvl, nic = c.link("nvlink4"), c.link("ib-ndr-400")
    args = (sc.model, sc.cluster.gpu, sc.precision, _engine(True))
    tp8 = build_instance(*args, 8, 1, nvl, nic)
    pp2 = build_instance(*args, 8, 2, nvl, nic)
    ph = sc.phases[0]
    points = [evaluate_colocated(i, 64, ph, np.array(1e-6), np.array(2048.0), 0.95)
              for i in (tp8, pp2)]
    assert float(points[1].ttft_prefill_s) >= float(points[0].ttft_prefill_s)
    assert float(points[1].ttft_prefill_s) == pytest.approx(float(points[0].ttft_prefill_s),
                                                            rel=0.02)
