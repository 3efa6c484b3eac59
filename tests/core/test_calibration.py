"""The cost model pinned to published measurements (performance-model.md §11).

Each case cites its source, table and setup. Throughput cases are offline maximum-load runs:
the model's prediction is the colocated chunked capacity (no SLO) of one instance at the
engine's token budget, times the output length. First-token cases are one whole-prompt
prefill pass at batch 1 (plus the engine's request overhead).

Tolerance ±30 % (the reference's suggested tolerance for these tables). Cases the model is
known to miss are listed in ``KNOWN_OUTSIDE`` with the diagnosed cause; they are printed in the
table and asserted to *stay* documented (if one comes inside, move it to the pinned set).
Run ``pytest -s tests/core/test_calibration.py`` to see the table.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from advisor.core.colocated import max_rate_meeting
from advisor.core.distributions import LengthDistribution
from advisor.core.memory import build_instance, plan_memory
from advisor.core.scenario import TrafficPhase
from advisor.loading.catalog import ProfileCatalog

TOLERANCE = 0.30
TRT_PERF = "TensorRT-LLM perf-overview @00f37686 (v1.0), trtllm-bench throughput, FP8, max load"
TRT_V05 = "TensorRT-LLM performance.md @138f96d4 v0.5 low-latency table, batch 1"
SGL_060 = "sgl-project/sglang benchmark/benchmark_vllm_060 offline, ShareGPT 5,000 prompts"


@dataclass(frozen=True)
class Case:
    """One published measurement and the setup that reproduces it."""

    id: str
    source: str
    model: str
    gpu: str
    precision: str
    engine: str
    tensor_parallel: int
    prompt_tokens: int
    output_tokens: int
    kind: str  # "throughput" (total output tokens/s) | "ttft" (ms)
    published: float
    chunk_tokens: int = 8192


CASES = [
    Case("T1 128/128", TRT_PERF + " table 'Llama 3.1 8B' (T1), 1xH100 TP1", "llama-3.1-8b",
         "h100-sxm", "fp8", "trtllm", 1, 128, 128, "throughput", 28312),
    Case("T1 128/2048", TRT_PERF + " T1", "llama-3.1-8b", "h100-sxm", "fp8", "trtllm", 1,
         128, 2048, "throughput", 22714),
    Case("T1 1000/1000", TRT_PERF + " T1", "llama-3.1-8b", "h100-sxm", "fp8", "trtllm", 1,
         1000, 1000, "throughput", 15220),
    Case("T1 2048/128", TRT_PERF + " T1", "llama-3.1-8b", "h100-sxm", "fp8", "trtllm", 1,
         2048, 128, "throughput", 3450),
    Case("T1 2048/2048", TRT_PERF + " T1", "llama-3.1-8b", "h100-sxm", "fp8", "trtllm", 1,
         2048, 2048, "throughput", 9305),
    Case("T1 20000/2000", TRT_PERF + " T1", "llama-3.1-8b", "h100-sxm", "fp8", "trtllm", 1,
         20000, 2000, "throughput", 1351),
    Case("T2 2048/128", TRT_PERF + " T2, 1xH200 TP1", "llama-3.1-8b", "h200-sxm", "fp8",
         "trtllm", 1, 2048, 128, "throughput", 3538),
    Case("T2 2048/2048", TRT_PERF + " T2, 1xH200 TP1", "llama-3.1-8b", "h200-sxm", "fp8",
         "trtllm", 1, 2048, 2048, "throughput", 12194),
    Case("T2 128/2048", TRT_PERF + " T2, 1xH200 TP1", "llama-3.1-8b", "h200-sxm", "fp8",
         "trtllm", 1, 128, 2048, "throughput", 26221),
    Case("T3 128/128", TRT_PERF + " table 'Llama 3.3 70B' (T3), 2xH100 TP2", "llama-3.1-70b",
         "h100-sxm", "fp8", "trtllm", 2, 128, 128, "throughput", 6378),
    Case("T3 1000/1000", TRT_PERF + " T3, 2xH100 TP2", "llama-3.1-70b", "h100-sxm", "fp8",
         "trtllm", 2, 1000, 1000, "throughput", 4205),
    Case("T3 2048/128", TRT_PERF + " T3, 2xH100 TP2", "llama-3.1-70b", "h100-sxm", "fp8",
         "trtllm", 2, 2048, 128, "throughput", 762),
    Case("T4 2048/128", TRT_PERF + " T4, 1xH200 TP1", "llama-3.1-70b", "h200-sxm", "fp8",
         "trtllm", 1, 2048, 128, "throughput", 442),
    Case("T4 128/2048", TRT_PERF + " T4, 1xH200 TP1", "llama-3.1-70b", "h200-sxm", "fp8",
         "trtllm", 1, 128, 2048, "throughput", 4336),
    Case("T5a 2048/128", TRT_PERF + " table 'Llama 3.1 405B' (T5a), 8xH100 TP8", "llama-3.1-405b",
         "h100-sxm", "fp8", "trtllm", 8, 2048, 128, "throughput", 453),
    Case("T5a 128/2048", TRT_PERF + " T5a, 8xH100 TP8", "llama-3.1-405b", "h100-sxm", "fp8",
         "trtllm", 8, 128, 2048, "throughput", 4340),
    Case("T5b 128/2048", TRT_PERF + " T5b, 8xH200 TP8", "llama-3.1-405b", "h200-sxm", "fp8",
         "trtllm", 8, 128, 2048, "throughput", 5348),
    Case("S1 ISL2048", TRT_V05 + " (S1) LLaMA-70B FP8 4xH100 TP4", "llama-2-70b", "h100-sxm",
         "fp8", "trtllm", 4, 2048, 1, "ttft", 109),
    Case("S1 ISL128", TRT_V05 + " (S1) LLaMA-70B FP8 4xH100 TP4", "llama-2-70b", "h100-sxm",
         "fp8", "trtllm", 4, 128, 1, "ttft", 26),
    Case("S2 ISL2048", TRT_V05 + " (S2) LLaMA-70B FP16 4xA100 TP4", "llama-2-70b",
         "a100-80gb-sxm", "bf16", "trtllm", 4, 2048, 1, "ttft", 377),
    Case("S2 ISL128", TRT_V05 + " (S2) LLaMA-70B FP16 4xA100 TP4", "llama-2-70b",
         "a100-80gb-sxm", "bf16", "trtllm", 4, 128, 1, "ttft", 47),
    Case("S3 H100", TRT_V05 + " (S3) LLaMA-7B FP8 1xH100", "llama-2-7b", "h100-sxm", "fp8",
         "trtllm", 1, 2048, 1, "ttft", 36),
    Case("S3 A100", TRT_V05 + " (S3) LLaMA-7B FP16 1xA100", "llama-2-7b", "a100-80gb-sxm",
         "bf16", "trtllm", 1, 2048, 1, "ttft", 133),
    Case("DB 70B TP4", "Databricks LLM inference best practices, TTFT Llama2-70B 512 tokens "
         "batch 1, 4xA100-40GB (TensorRT-LLM)", "llama-2-70b", "a100-40gb-sxm", "bf16", "trtllm",
         4, 512, 1, "ttft", 154),
    Case("DB 70B TP8", "Databricks, same, 8xA100-40GB", "llama-2-70b", "a100-40gb-sxm", "bf16",
         "trtllm", 8, 512, 1, "ttft", 114),
    # vLLM v0.6 (V0) ran short-context models without chunked prefill, batching whole prompts
    # up to max_model_len tokens per step: modelled as an 8,192-token budget like SGLang's
    # default chunked-prefill-size.
    Case("O2 vLLM", SGL_060 + " (O2) vLLM v0.6.0 Llama-3.1-8B BF16 1xA100-80GB; means 220 in "
         "/ 194 out [D from totals]", "llama-3.1-8b", "a100-80gb-sxm", "bf16", "vllm", 1, 220, 194,
         "throughput", 4132, chunk_tokens=8192),
    Case("O1 SGLang", SGL_060 + " (O1) SGLang v0.3.0, same setup", "llama-3.1-8b",
         "a100-80gb-sxm", "bf16", "sglang", 1, 220, 194, "throughput", 4281.5, chunk_tokens=8192),
]

KNOWN_OUTSIDE = {
    "T2 128/2048": "decode-heavy at the memory-bound maximum batch: the model assumes the whole KV "
                   "budget is filled and read at the same MBU as weights; measured large-batch "
                   "decode on H200 is slower (attention kernels below the weight-read MBU)",
    "T4 128/2048": "same cause as T2 128/2048 (70B on one H200, ~330 sequences at full KV budget)",
    "T5a 128/2048": "same cause (405B TP8 decode at full KV budget)",
    "S1 ISL128": "TensorRT-LLM v0.5 static batching had ~20 ms of fixed cost per forward pass at "
                 "TP4 (performance-model.md §3); the calibrated modern 2 ms step overhead omits it",
    "DB 70B TP4": "Databricks' TTFT includes a decode step and 2023-era fixed overheads that grow "
                  "with TP (performance-model.md §3, §11.3)",
    "DB 70B TP8": "same cause as DB 70B TP4, larger at TP8",
    "O2 vLLM": "offline ShareGPT run, compute-bound on decode-heavy mixed batches: the model "
               "runs those matmuls at the prefill MFU (0.6), small-M decode GEMMs run below it; "
               "ShareGPT's length spread is modelled by its means",
    "O1 SGLang": "same cause as O2 vLLM",
}


def predict(case: Case, catalog: ProfileCatalog) -> float:
    """The model's figure for a case (tokens/s or ms)."""
    gpu = catalog.gpu(case.gpu)
    inst = build_instance(catalog.model(case.model), gpu, case.precision, case.engine,
                          case.tensor_parallel, 1, catalog.link(gpu.intra_node_link_id), None)
    if case.kind == "ttft":
        return (float(inst.prefill_time_s(case.prompt_tokens))
                + inst.efficiency.request_overhead_s) * 1000.0
    phase = TrafficPhase("calibration", 1.0, 1.0, 1.0,
                         LengthDistribution.constant(case.prompt_tokens),
                         LengthDistribution.constant(case.output_tokens))
    mem = plan_memory(inst, case.prompt_tokens + case.output_tokens / 2,
                      case.prompt_tokens + case.output_tokens, 0.9)
    rate = float(max_rate_meeting(inst, mem.max_sequences, phase,
                                  np.array(float(case.chunk_tokens)), 0.95, None, None))
    return rate * case.output_tokens


@pytest.fixture(scope="module")
def table() -> list[tuple[Case, float, float]]:
    catalog = ProfileCatalog()
    rows = []
    for case in CASES:
        pred = predict(case, catalog)
        rows.append((case, pred, pred / case.published - 1.0))
    return rows


def test_print_calibration_table(table: list[tuple[Case, float, float]]) -> None:
    """Print case, source, predicted, published and error (visible with ``pytest -s``)."""
    print()
    print(f"{'case':<14} {'unit':<6} {'predicted':>10} {'published':>10} {'error':>8}  status  source")
    for case, pred, err in table:
        unit = "tok/s" if case.kind == "throughput" else "ms"
        status = "known " if case.id in KNOWN_OUTSIDE else ("ok    " if abs(err) <= TOLERANCE else "FAIL  ")
        print(f"{case.id:<14} {unit:<6} {pred:>10.1f} {case.published:>10.1f} {err:>+8.1%}  "
              f"{status}  {case.source}")
    pinned = [r for r in table if r[0].id not in KNOWN_OUTSIDE]
    assert len(pinned) >= 10


@pytest.mark.parametrize("case", [c for c in CASES if c.id not in KNOWN_OUTSIDE], ids=lambda c: c.id)
def test_pinned_case_within_tolerance(case: Case, table: list[tuple[Case, float, float]]) -> None:
    _, pred, err = next(r for r in table if r[0] is case)
    assert abs(err) <= TOLERANCE, f"{case.id}: predicted {pred:.1f}, published {case.published} ({case.source})"


@pytest.mark.parametrize("case_id", sorted(KNOWN_OUTSIDE))
def test_known_outside_cases_are_still_outside(case_id: str, table: list[tuple[Case, float, float]]) -> None:
    """A documented miss that starts to fit should be moved into the pinned set."""
    _, _, err = next(r for r in table if r[0].id == case_id)
    assert abs(err) > TOLERANCE, f"{case_id} now within ±30 % ({err:+.1%}): pin it"


def test_shape_h200_vs_h100(table: list[tuple[Case, float, float]]) -> None:
    """Prefill-heavy: H200 ≈ H100 (published 1.03); decode-heavy: H200 faster (published 1.31)."""
    by_id = {c.id: p for c, p, _ in table}
    assert by_id["T2 2048/128"] / by_id["T1 2048/128"] == pytest.approx(1.0, abs=0.1)
    assert by_id["T2 2048/2048"] / by_id["T1 2048/2048"] > 1.15


def test_shape_short_prompts_are_overhead_dominated() -> None:
    """A 128-token prefill on 4xH100 costs far more than its FLOPs (fixed costs dominate)."""
    catalog = ProfileCatalog()
    gpu = catalog.gpu("h100-sxm")
    inst = build_instance(catalog.model("llama-2-70b"), gpu, "fp8", "trtllm", 4, 1,
                          catalog.link(gpu.intra_node_link_id), None)
    flops_s = 2 * inst.model.matmul_params_per_token * 128 / (4 * gpu.peak_flops_per_s("fp8"))
    assert float(inst.prefill_time_s(128)) > 3 * flops_s


def test_shape_large_batch_decode_becomes_compute_bound() -> None:
    """Decode step time is flat at small batch and grows ~linearly past the ridge point."""
    catalog = ProfileCatalog()
    gpu = catalog.gpu("h100-sxm")
    inst = build_instance(catalog.model("llama-3.1-8b"), gpu, "bf16", "vllm", 1, 1,
                          catalog.link(gpu.intra_node_link_id), None)
    t1, t8 = float(inst.decode_step_s(1, 0)), float(inst.decode_step_s(8, 0))
    t2k, t4k = float(inst.decode_step_s(2048, 0)), float(inst.decode_step_s(4096, 0))
    assert t8 / t1 < 1.05  # memory-bound: weights dominate
    assert t4k / t2k == pytest.approx(2.0, rel=0.15)  # compute-bound: linear in batch
