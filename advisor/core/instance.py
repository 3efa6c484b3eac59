"""One engine instance (model × GPU × precision × parallelism) and its batched step time.

The step time is the roofline max of compute time and memory time, plus tensor-parallel
communication and a fixed per-step overhead (docs/model.md §3):

    T = max(FLOPs / (g · peak · MFU), bytes_per_gpu / (BW · MBU)) + T_comm + C_step

* FLOPs = 2 · N_matmul · (p + d)  +  prefill attention 2·L·d_attn·(2·c·k + c²) per prefill
  sequence (chunk c after k earlier tokens; causal)  +  decode attention 4·L·d_attn·ctx per
  decoding sequence.
* bytes = weights touched (dense: all; MoE: non-expert + touched experts, 1 − (1 − k/E)^tokens)
  + KV reads (decode context, and the re-read of earlier chunks for chunked prefill)
  + KV writes of the new tokens — per GPU, KV heads duplicated when TP > kv_heads.
* T_comm = 2 all-reduces per layer of the step's activations (ring: 2·(t−1)/t · bytes over the
  intra-node link) plus one link latency each; an instance spanning nodes runs pipeline stages
  over the inter-node link (activations sent once per stage boundary; no pipelining credit).

Every function here accepts numpy arrays and broadcasts, so candidates and design points are
evaluated together.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from functools import cached_property
from typing import Any

import numpy as np

from advisor.core.hardware import EfficiencyFactors, GpuSpec, LinkSpec, Precision
from advisor.core.model_arch import ModelSpec

ACTIVATION_BYTES = 2.0
"""Activations travel in 16-bit for both precisions (FP8 here means weights and KV)."""

MAX_NUM_SEQS = {"vllm": 1024, "sglang": 1024, "trtllm": 2048}
"""Engine cap on concurrently running sequences per instance.

vLLM: ``max_num_seqs`` defaults to 1024 on ≥ 70 GiB GPUs (engines.md §0.2 trap 9); SGLang:
ESTIMATE, taken equal to vLLM; TensorRT-LLM: ESTIMATE, ``max_batch_size`` 2048 as used by
trtllm-bench sweeps (not confirmed in the reference)."""


@dataclass(frozen=True)
class StepParams:
    """Per-instance constants of the step-time formula (floats, or arrays for stacked shapes)."""

    gpus: np.ndarray | float
    compute_flops_per_s: np.ndarray | float
    """GPUs × dense peak × MFU."""
    memory_bytes_per_s: np.ndarray | float
    """One GPU's bandwidth × MBU."""
    dense_weight_bytes_per_gpu: np.ndarray | float
    expert_weight_bytes_per_gpu: np.ndarray | float
    kv_bytes_per_token_per_gpu: np.ndarray | float
    tp_comm_s_per_byte: np.ndarray | float
    """Seconds per activation byte for the step's 2·L ring all-reduces."""
    tp_comm_latency_s: np.ndarray | float
    pp_comm_s_per_byte: np.ndarray | float
    pp_comm_latency_s: np.ndarray | float
    step_overhead_s: np.ndarray | float
    request_overhead_s: np.ndarray | float

    @classmethod
    def stack(cls, params: list[StepParams], ndim: int) -> StepParams:
        """Stack per-instance params along a leading axis, padded to ``ndim`` dimensions."""
        shape = (len(params),) + (1,) * (ndim - 1)
        return cls(**{f.name: np.array([getattr(p, f.name) for p in params], dtype=float).reshape(shape)
                      for f in fields(cls)})


_SCALAR = (float, int)
"""Python numbers and numpy float64 scalars (a subclass of float); not 0-d arrays."""


def _finite_scalars(*values: object) -> bool:
    """Whether every value is a finite Python or numpy scalar number (not an array).

    Finite when their sum is (an overflowing sum only sends finite values to the array path,
    which gives the same result).
    """
    for v in values:
        if not isinstance(v, _SCALAR):
            return False
    return math.isfinite(sum(values))  # type: ignore[arg-type]


def _step_time_scalar(m: ModelSpec, q: StepParams, p: float, n: float, k: float, d: float,
                      ctx: float) -> Any:
    """:func:`step_time` for one dense-model instance and finite scalar inputs, in Python
    floats.

    The same expressions in the same order as the array path (IEEE arithmetic gives the
    same bits; ``tests/core/test_instance.py`` checks it), without numpy's per-call cost:
    the capacity searches call this thousands of times per evaluation. MoE models take the
    array path: numpy's vectorised ``power`` and the C library's ``pow`` can differ in the
    last bit. Returns a numpy float64 scalar, as the array path does for scalar inputs.
    """
    n = max(float(n), 1.0 if p > 0 else 0.0)
    tokens = p + d
    chunk = p / n if n > 0 else 0.0

    attn_width = float(m.num_layers * m.attention_width)
    flops = (2.0 * m.matmul_params_per_token * tokens
             + n * 2.0 * attn_width * (2.0 * chunk * k + chunk * chunk)
             + 4.0 * attn_width * d * ctx)
    compute_s = flops / q.compute_flops_per_s

    weight_bytes = q.dense_weight_bytes_per_gpu + q.expert_weight_bytes_per_gpu
    window = m.sliding_window_tokens
    if window:
        full_share = (m.num_layers - m.sliding_window_layers) / m.num_layers
        win_share = m.sliding_window_layers / m.num_layers
        ctx = full_share * ctx + win_share * min(ctx, window)
        k = full_share * k + win_share * min(k, window)
    kv_bytes = q.kv_bytes_per_token_per_gpu * (d * ctx + n * k + tokens)
    memory_s = (weight_bytes + kv_bytes) / q.memory_bytes_per_s

    act_bytes = tokens * (m.hidden_size * ACTIVATION_BYTES)
    comm_s = (q.tp_comm_latency_s + q.tp_comm_s_per_byte * act_bytes
              + q.pp_comm_latency_s + q.pp_comm_s_per_byte * act_bytes)
    return np.float64(max(compute_s, memory_s) + comm_s + q.step_overhead_s)


def step_time(m: ModelSpec, q: StepParams, prefill_tokens: np.ndarray | float = 0.0,
              prefill_seqs: np.ndarray | float = 0.0,
              prefill_context_tokens: np.ndarray | float = 0.0,
              decode_seqs: np.ndarray | float = 0.0,
              decode_context_tokens: np.ndarray | float = 0.0) -> np.ndarray:
    """The step-time formula (module docstring) for one or many stacked instances."""
    if (m.moe is None and isinstance(q.compute_flops_per_s, float)
            and _finite_scalars(prefill_tokens, prefill_seqs, prefill_context_tokens,
                                decode_seqs, decode_context_tokens)):
        return _step_time_scalar(m, q, float(prefill_tokens), float(prefill_seqs),
                                 float(prefill_context_tokens), float(decode_seqs),
                                 float(decode_context_tokens))
    p = np.asarray(prefill_tokens, dtype=float)
    n = np.maximum(np.asarray(prefill_seqs, dtype=float), np.where(p > 0, 1.0, 0.0))
    k = np.asarray(prefill_context_tokens, dtype=float)
    d = np.asarray(decode_seqs, dtype=float)
    ctx = np.asarray(decode_context_tokens, dtype=float)
    tokens = p + d
    chunk = np.divide(p, n, out=np.zeros(np.broadcast(p, n).shape), where=n > 0)

    attn_width = float(m.num_layers * m.attention_width)
    flops = (2.0 * m.matmul_params_per_token * tokens
             + n * 2.0 * attn_width * (2.0 * chunk * k + chunk * chunk)
             + 4.0 * attn_width * d * ctx)
    compute_s = flops / q.compute_flops_per_s

    if m.moe is not None:
        frac = 1.0 - np.power(1.0 - m.moe.experts_per_token / m.moe.num_experts,
                              np.maximum(tokens, 1.0))
        weight_bytes = q.dense_weight_bytes_per_gpu + q.expert_weight_bytes_per_gpu * frac
    else:
        weight_bytes = q.dense_weight_bytes_per_gpu + q.expert_weight_bytes_per_gpu
    window = m.sliding_window_tokens
    if window:
        full_share = (m.num_layers - m.sliding_window_layers) / m.num_layers
        win_share = m.sliding_window_layers / m.num_layers
        ctx = full_share * ctx + win_share * np.minimum(ctx, window)
        k = full_share * k + win_share * np.minimum(k, window)
    kv_bytes = q.kv_bytes_per_token_per_gpu * (d * ctx + n * k + tokens)
    memory_s = (weight_bytes + kv_bytes) / q.memory_bytes_per_s

    act_bytes = tokens * (m.hidden_size * ACTIVATION_BYTES)
    comm_s = (q.tp_comm_latency_s + q.tp_comm_s_per_byte * act_bytes
              + q.pp_comm_latency_s + q.pp_comm_s_per_byte * act_bytes)
    return np.maximum(compute_s, memory_s) + comm_s + q.step_overhead_s


def decode_step_lines(m: ModelSpec, q: StepParams, context_tokens: float
                      ) -> tuple[np.ndarray | float, ...]:
    """A decode-only step as lines in the batch B (dense models): (cc, m0, mm, r0, rr) with

        T_dec(B) = max(cc·B, m0 + mm·B) + r0 + rr·B,

    the compute line, the memory line and the communication + overhead line of
    :func:`step_time` for ``decode_seqs = B`` (MoE weight traffic is not linear in B).
    """
    if m.moe is not None:
        raise ValueError("decode steps of MoE models are not linear in the batch")
    ctx = float(context_tokens)
    if m.sliding_window_tokens:
        full_share = (m.num_layers - m.sliding_window_layers) / m.num_layers
        ctx = (full_share * ctx + (1 - full_share) * min(ctx, m.sliding_window_tokens))
    attn_width = float(m.num_layers * m.attention_width)
    cc = (2.0 * m.matmul_params_per_token + 4.0 * attn_width * float(context_tokens)) \
        / q.compute_flops_per_s
    m0 = (q.dense_weight_bytes_per_gpu + q.expert_weight_bytes_per_gpu) / q.memory_bytes_per_s
    mm = q.kv_bytes_per_token_per_gpu * (ctx + 1.0) / q.memory_bytes_per_s
    r0 = q.tp_comm_latency_s + q.pp_comm_latency_s + q.step_overhead_s
    rr = (q.tp_comm_s_per_byte + q.pp_comm_s_per_byte) * m.hidden_size * ACTIVATION_BYTES
    return cc, m0, mm, r0, rr


@dataclass(frozen=True)
class Instance:
    """One serving engine instance: ``tensor_parallel`` GPUs per stage, ``pipeline_stages`` stages."""

    model: ModelSpec
    gpu: GpuSpec
    precision: Precision
    engine: str
    tensor_parallel: int
    pipeline_stages: int
    intra_link: LinkSpec
    inter_link: LinkSpec | None
    efficiency: EfficiencyFactors

    @property
    def gpus(self) -> int:
        """GPUs this instance occupies."""
        return self.tensor_parallel * self.pipeline_stages

    @property
    def weight_bytes_per_gpu(self) -> float:
        """Weights each GPU holds (sharded over TP and PP)."""
        return self.model.weight_bytes(self.precision) / self.gpus

    @property
    def kv_bytes_per_token_per_gpu(self) -> float:
        """KV bytes per token each GPU stores (TP duplication included, split over stages)."""
        return (self.model.kv_bytes_per_token_per_gpu(self.precision, self.tensor_parallel)
                / self.pipeline_stages)

    @property
    def kv_bytes_per_token_wire(self) -> float:
        """KV bytes per token the instance ships when every rank sends its own shard."""
        return (self.model.kv_bytes_per_token(self.precision)
                * self.model.kv_duplication_factor(self.tensor_parallel))

    @property
    def peak_flops_per_s(self) -> float:
        """Dense tensor peak of one GPU at this precision."""
        return self.gpu.peak_flops_per_s(self.precision)

    @property
    def prefill_mfu(self) -> float:
        """Compute efficiency used for every matmul step."""
        return self.efficiency.prefill_compute_efficiency(self.precision, self.gpu.has_fp8_compute)

    @cached_property
    def params(self) -> StepParams:
        """The numbers the step-time formula reads, precomputed once per instance."""
        m, prec = self.model, self.precision
        experts = m.expert_weight_bytes(prec)
        inter = self.inter_link or self.intra_link
        return StepParams(
            gpus=float(self.gpus),
            compute_flops_per_s=self.gpus * self.peak_flops_per_s * self.prefill_mfu,
            memory_bytes_per_s=(self.gpu.memory_bandwidth_bytes_per_s
                                * self.efficiency.decode_bandwidth_efficiency),
            dense_weight_bytes_per_gpu=(m.weight_bytes(prec) - experts) / self.gpus,
            expert_weight_bytes_per_gpu=experts / self.gpus,
            kv_bytes_per_token_per_gpu=self.kv_bytes_per_token_per_gpu,
            tp_comm_s_per_byte=(2.0 * m.num_layers * 2.0 * (self.tensor_parallel - 1)
                                / self.tensor_parallel / self.intra_link.effective_bytes_per_s),
            tp_comm_latency_s=(2.0 * m.num_layers * self.intra_link.latency_s
                               if self.tensor_parallel > 1 else 0.0),
            pp_comm_s_per_byte=(self.pipeline_stages - 1) / inter.effective_bytes_per_s,
            pp_comm_latency_s=(self.pipeline_stages - 1) * inter.latency_s,
            step_overhead_s=self.efficiency.step_overhead_s,
            request_overhead_s=self.efficiency.request_overhead_s,
        )

    def step_time_s(self, prefill_tokens: np.ndarray | float = 0.0,
                    prefill_seqs: np.ndarray | float = 0.0,
                    prefill_context_tokens: np.ndarray | float = 0.0,
                    decode_seqs: np.ndarray | float = 0.0,
                    decode_context_tokens: np.ndarray | float = 0.0) -> np.ndarray:
        """Seconds for one batched step.

        Args:
            prefill_tokens: new prompt tokens processed in the step (all prefill sequences).
            prefill_seqs: sequences those tokens belong to (each gets an equal piece).
            prefill_context_tokens: tokens each prefill sequence already has in cache
                (earlier chunks; 0 for an unchunked prompt).
            decode_seqs: sequences decoding one token each.
            decode_context_tokens: mean context length of the decoding sequences.
        """
        return step_time(self.model, self.params, prefill_tokens, prefill_seqs,
                         prefill_context_tokens, decode_seqs, decode_context_tokens)

    @property
    def request_overhead_s(self) -> float:
        """Fixed per-request cost on the TTFT path."""
        return self.efficiency.request_overhead_s

    def prefill_time_s(self, prompt_tokens: np.ndarray | float,
                       prompts: np.ndarray | float = 1.0) -> np.ndarray:
        """Seconds to prefill ``prompts`` whole prompts of ``prompt_tokens`` each in one pass."""
        s: np.ndarray | float
        n: np.ndarray | float
        if _finite_scalars(prompt_tokens, prompts):  # stay scalars: step_time's fast path
            s, n = float(prompt_tokens), float(prompts)
        else:
            s, n = np.asarray(prompt_tokens, dtype=float), np.asarray(prompts, dtype=float)
        return self.step_time_s(prefill_tokens=s * n, prefill_seqs=n)

    def decode_step_s(self, batch: np.ndarray | float,
                      context_tokens: np.ndarray | float) -> np.ndarray:
        """Seconds for a decode-only step of ``batch`` sequences at a mean context."""
        return self.step_time_s(decode_seqs=batch, decode_context_tokens=context_tokens)


class StackedInstances:
    """Several instances of one model evaluated together: params stacked on a leading axis.

    Offers the same step-time methods as :class:`Instance`; every result gains a leading
    axis of length ``len(instances)``.
    """

    def __init__(self, instances: list[Instance], ndim: int) -> None:
        self.instances = instances
        self.model = instances[0].model
        self.params = StepParams.stack([i.params for i in instances], ndim)
        self.request_overhead_s = self.params.request_overhead_s

    def step_time_s(self, prefill_tokens: np.ndarray | float = 0.0,
                    prefill_seqs: np.ndarray | float = 0.0,
                    prefill_context_tokens: np.ndarray | float = 0.0,
                    decode_seqs: np.ndarray | float = 0.0,
                    decode_context_tokens: np.ndarray | float = 0.0) -> np.ndarray:
        """Seconds for one batched step on every stacked instance."""
        return step_time(self.model, self.params, prefill_tokens, prefill_seqs,
                         prefill_context_tokens, decode_seqs, decode_context_tokens)

    def prefill_time_s(self, prompt_tokens: np.ndarray | float,
                       prompts: np.ndarray | float = 1.0) -> np.ndarray:
        """Seconds to prefill whole prompts in one pass, per stacked instance."""
        s = np.asarray(prompt_tokens, dtype=float)
        return self.step_time_s(prefill_tokens=s * prompts, prefill_seqs=prompts)

    def decode_step_s(self, batch: np.ndarray | float,
                      context_tokens: np.ndarray | float) -> np.ndarray:
        """Seconds for a decode-only step, per stacked instance."""
        return self.step_time_s(decode_seqs=batch, decode_context_tokens=context_tokens)
