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

from dataclasses import dataclass

import numpy as np

from advisor.core.hardware import EfficiencyFactors, GpuSpec, LinkSpec, Precision
from advisor.core.model_arch import BYTES_PER_ELEMENT, ModelSpec

ACTIVATION_BYTES = 2.0
"""Activations travel in 16-bit for both precisions (FP8 here means weights and KV)."""

MAX_NUM_SEQS = {"vllm": 1024, "sglang": 1024, "trtllm": 2048}
"""Engine cap on concurrently running sequences per instance.

vLLM: ``max_num_seqs`` defaults to 1024 on ≥ 70 GiB GPUs (engines.md §0.2 trap 9); SGLang:
ESTIMATE, taken equal to vLLM; TensorRT-LLM: ESTIMATE, ``max_batch_size`` 2048 as used by
trtllm-bench sweeps (not confirmed in the reference)."""


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
        m = self.model
        p = np.asarray(prefill_tokens, dtype=float)
        n = np.maximum(np.asarray(prefill_seqs, dtype=float), np.where(p > 0, 1.0, 0.0))
        k = np.asarray(prefill_context_tokens, dtype=float)
        d = np.asarray(decode_seqs, dtype=float)
        ctx = np.asarray(decode_context_tokens, dtype=float)
        tokens = p + d
        chunk = np.divide(p, n, out=np.zeros(np.broadcast(p, n).shape), where=n > 0)

        # --- compute ------------------------------------------------------------------
        linear_flops = 2.0 * m.matmul_params_per_token * tokens
        attn_width = float(m.num_layers * m.attention_width)
        prefill_attn = n * 2.0 * attn_width * (2.0 * chunk * k + chunk * chunk)
        decode_attn = 4.0 * attn_width * d * ctx
        flops = linear_flops + prefill_attn + decode_attn
        compute_s = flops / (self.gpus * self.peak_flops_per_s * self.prefill_mfu)

        # --- memory (per GPU) -----------------------------------------------------------
        bytes_per_elem = BYTES_PER_ELEMENT[self.precision]
        experts = m.expert_weight_bytes(self.precision)
        dense_part = m.weight_bytes(self.precision) - experts
        if m.moe is not None:
            frac = 1.0 - np.power(1.0 - m.moe.experts_per_token / m.moe.num_experts,
                                  np.maximum(tokens, 1.0))
        else:
            frac = 0.0
        weight_bytes = (dense_part + experts * frac) / self.gpus
        kv_tok = self.kv_bytes_per_token_per_gpu
        window = m.sliding_window_tokens
        if window:
            full_share = (m.num_layers - m.sliding_window_layers) / m.num_layers
            win_share = m.sliding_window_layers / m.num_layers
            ctx_eff = full_share * ctx + win_share * np.minimum(ctx, window)
            k_eff = full_share * k + win_share * np.minimum(k, window)
        else:
            ctx_eff, k_eff = ctx, k
        kv_bytes = kv_tok * (d * ctx_eff + n * k_eff + tokens)
        memory_s = (weight_bytes + kv_bytes) / (
            self.gpu.memory_bandwidth_bytes_per_s * self.efficiency.decode_bandwidth_efficiency)
        del bytes_per_elem

        # --- communication ----------------------------------------------------------------
        comm_s = np.zeros_like(compute_s)
        act_bytes = tokens * m.hidden_size * ACTIVATION_BYTES
        t = self.tensor_parallel
        if t > 1:
            link = self.intra_link
            per_reduce = (link.latency_s
                          + 2.0 * (t - 1) / t * act_bytes / link.effective_bytes_per_s)
            comm_s = comm_s + 2.0 * m.num_layers * per_reduce
        if self.pipeline_stages > 1:
            link = self.inter_link or self.intra_link
            comm_s = comm_s + (self.pipeline_stages - 1) * (
                link.latency_s + act_bytes / link.effective_bytes_per_s)

        return np.maximum(compute_s, memory_s) + comm_s + self.efficiency.step_overhead_s

    def prefill_time_s(self, prompt_tokens: np.ndarray | float,
                       prompts: np.ndarray | float = 1.0) -> np.ndarray:
        """Seconds to prefill ``prompts`` whole prompts of ``prompt_tokens`` each in one pass."""
        s = np.asarray(prompt_tokens, dtype=float)
        n = np.asarray(prompts, dtype=float)
        return self.step_time_s(prefill_tokens=s * n, prefill_seqs=n)

    def decode_step_s(self, batch: np.ndarray | float,
                      context_tokens: np.ndarray | float) -> np.ndarray:
        """Seconds for a decode-only step of ``batch`` sequences at a mean context."""
        return self.step_time_s(decode_seqs=batch, decode_context_tokens=context_tokens)
