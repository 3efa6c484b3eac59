"""One engine instance (model × GPU × precision × parallelism) and its batched step time.

The step time is the roofline max of compute time and memory time, plus tensor-parallel
communication, a fixed per-step overhead and the small-batch cost of MoE layers
(docs/model.md §3):

    C = G / (g · peak · MFU) + A / (g · peak_attn · η_attn),   M = W / (BW · η_w) + KV / (BW · η_kv)
    T = R(C_gemm, M_w) + R(C_attn, M_kv) + T_comm + C_step + L_moe · t_moe · (1 − coverage)
    R(C, M) = max(C, M, (1 − ω/2) · (C + M))

* G = the weight GEMMs' FLOPs, 2 · N_matmul · (p + d), at the weights' tensor peak and the
  prefill MFU.
* A = the attention FLOPs, their own term at the peak of the attention's format (FP8 only
  with an FP8 KV cache on FP8 tensor cores, else 16 bit) and the attention efficiency:
  prefill attention 2·L·d_attn·(2·c·k + c²) per prefill sequence (chunk c after k earlier
  tokens; causal) + decode attention 4·L·d_attn·ctx per decoding sequence; sliding-window
  layers attend to at most W keys per query. KV is the attention's memory traffic.
* W = weights touched (all but an untied input-embedding table, of which a step gathers only
  its tokens' rows; MoE: non-expert + touched experts, 1 − (1 − k/E)^tokens;
  4-bit experts streamed at ``lowbit_moe_efficiency`` of η_w); KV = KV reads (decode context,
  and the re-read of earlier chunks for chunked prefill) + KV writes of the new tokens — per
  GPU, KV heads duplicated when TP > kv_heads.
* C and M split by kernel class, which run one after the other: the weight GEMMs (C_gemm,
  with the weight stream M_w) and the attention kernels (C_attn, with the KV traffic M_kv).
  Within a class R combines them by regime: far from the ridge point one hides the other
  (compute-bound prefill: C; memory-bound decode: M), near it a share of the sum is paid;
  ω = the engine profile's ``compute_memory_overlap``, the overlap at the ridge (1: the
  roofline max everywhere, 0: C + M everywhere; docs/model.md §3).
* T_comm = 2 all-reduces per layer of the step's activations (ring: 2·(t−1)/t · bytes over the
  intra-node link) plus, per all-reduce, the link latency and the engine's software cost
  (``EngineSpec.allreduce_software_s``).
* Pipeline stages (TP t × PP s): a batch crosses the s stages one after the other, each on
  its t GPUs with L/s layers, so one crossing takes the sum of the stage times — the
  formula on t GPUs with every layer's weights and KV — plus s − 1 activation hops over the
  inter-node link: never less than the TP-t step. An engine that micro-batches
  (``EngineSpec.pipeline_microbatching``: vLLM V1, SGLang, TensorRT-LLM) keeps s batches in
  flight, one per stage, so a step of B sequences is s crossings of B/s running side by
  side (at most one micro-batch per sequence): its time per token is one crossing at B/s.
  Without micro-batching one batch crosses at a time (no throughput credit).

Every function here accepts numpy arrays and broadcasts, so candidates and design points are
evaluated together.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from advisor.core.all_to_all import all_to_all_cost
from advisor.core.attention import attended_keys, attention_compute_s
from advisor.core.engine import EngineSpec
from advisor.core.expert_parallel import (
    ExpertLayout,
    expected_max_standard_normal,
    expert_slot_load_cv,
)
from advisor.core.hardware import EfficiencyFactors, GpuSpec, LinkSpec, Precision
from advisor.core.model_arch import ModelSpec
from advisor.core.moe_step import MoeStepParts, moe_step_parts
from advisor.core.speculative import step_terms
from advisor.core.step_params import (
    ACTIVATION_BYTES,
    SCALAR,
    StepParams,
    all_to_all_seconds,
    busiest_unit_share,
    draft_seconds,
    roofline,
)

__all__ = ["ACTIVATION_BYTES", "Instance", "StackedInstances", "StepParams",
           "all_to_all_seconds", "budget_units", "busiest_unit_share", "cycle_token_budget",
           "draft_seconds", "step_time"]


def _finite_scalars(*values: object) -> bool:
    """Whether every value is a finite Python or numpy scalar number (not an array).

    Finite when their sum is (an overflowing sum only sends finite values to the array path,
    which gives the same result).
    """
    for v in values:
        if not isinstance(v, SCALAR):
            return False
    # Ignored below: every value was just checked to be a scalar (SCALAR); the parameter type
    # admits arrays.
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
    units = float(q.pipeline_microbatches)
    if units != 1.0:  # the heaviest micro-batch crosses the stages (busiest_unit_share)
        pieces = max(min(n, units), 1.0)
        p, n, d = p / pieces, n / pieces, max(d / units, min(d, 1.0))
    dq = d * q.decode_query_tokens
    tokens = p + dq
    chunk = p / n if n > 0 else 0.0

    pre_keys = 2.0 * chunk * k + chunk * chunk
    dec_keys = ctx
    window = m.sliding_window_tokens
    if window:
        win_share = m.window_layer_share
        full_share = 1.0 - win_share
        lo, hi = min(k, window), min(k + chunk, window)
        win_keys = (hi * hi - lo * lo) / 2.0 + max(k + chunk - max(k, window), 0.0) * window
        pre_keys = full_share * pre_keys + win_share * 2.0 * win_keys
        dec_keys = full_share * ctx + win_share * min(ctx, window)
    gemm_flops = 2.0 * m.matmul_params_per_token * tokens
    gemm_s = gemm_flops / q.compute_flops_per_s
    attention_s = (n * 0.5 * m.prefill_attention_flops_per_pair * pre_keys
                   / q.attention_flops_per_s
                   + m.decode_attention_flops_per_key * dq * dec_keys
                   / q.decode_attention_flops_per_s)

    weight_bytes = q.dense_weight_bytes_per_gpu + q.expert_weight_bytes_per_gpu
    if window:
        k = full_share * k + win_share * min(k, window)
    kv_bytes = q.kv_bytes_per_token_per_gpu * (d * dec_keys + n * k + tokens)
    weights_s = weight_bytes / q.memory_bytes_per_s
    kv_s = kv_bytes / q.kv_read_bytes_per_s

    act_bytes = tokens * (m.hidden_size * ACTIVATION_BYTES)
    comm_s = (q.tp_comm_latency_s + q.tp_comm_s_per_byte * act_bytes
              + q.pp_comm_latency_s + q.pp_comm_s_per_byte * act_bytes)
    draft_s = (q.draft_fixed_s * (1.0 if d > 0 else 0.0) + q.draft_s_per_seq * d
               + q.draft_kv_bytes_per_token_per_gpu * d * dec_keys / q.kv_read_bytes_per_s)
    return np.float64(roofline(gemm_s, weights_s, q.compute_memory_overlap)
                      + roofline(attention_s, kv_s, q.compute_memory_overlap) + comm_s
                      + q.step_overhead_s + draft_s)


def step_time(m: ModelSpec, q: StepParams, prefill_tokens: np.ndarray | float = 0.0,
              prefill_seqs: np.ndarray | float = 0.0,
              prefill_context_tokens: np.ndarray | float = 0.0,
              decode_seqs: np.ndarray | float = 0.0,
              decode_context_tokens: np.ndarray | float = 0.0) -> np.ndarray:
    """The step-time formula (module docstring) for one or many stacked instances."""
    if (m.moe is None and isinstance(q.compute_flops_per_s, float)
            and _finite_scalars(prefill_tokens, prefill_seqs, prefill_context_tokens,
                                decode_seqs, decode_context_tokens)):
        # a numpy float64 scalar, as the array path returns for scalar inputs
        t: np.ndarray = _step_time_scalar(m, q, float(prefill_tokens), float(prefill_seqs),
                                          float(prefill_context_tokens), float(decode_seqs),
                                          float(decode_context_tokens))
        return t
    p = np.asarray(prefill_tokens, dtype=float)
    n = np.maximum(np.asarray(prefill_seqs, dtype=float), np.where(p > 0, 1.0, 0.0))
    k = np.asarray(prefill_context_tokens, dtype=float)
    d = np.asarray(decode_seqs, dtype=float)
    ctx = np.asarray(decode_context_tokens, dtype=float)
    p, n, d = busiest_unit_share(q.pipeline_microbatches, p, n, d)
    if m.moe is not None:
        return moe_step_parts(m, q, p, n, k, d, ctx).step_s
    dq = d * q.decode_query_tokens
    tokens = p + dq
    chunk = np.divide(p, n, out=np.zeros(np.broadcast(p, n).shape), where=n > 0)

    pre_keys, dec_keys, k = attended_keys(m, chunk, k, ctx)
    gemm_flops = 2.0 * m.matmul_params_per_token * tokens
    gemm_s = gemm_flops / q.compute_flops_per_s
    attention_s = attention_compute_s(m, q.attention_flops_per_s,
                                      q.decode_attention_flops_per_s, n, pre_keys, dq,
                                      dec_keys)

    weight_bytes = q.dense_weight_bytes_per_gpu + q.expert_weight_bytes_per_gpu
    kv_bytes = q.kv_bytes_per_token_per_gpu * (d * dec_keys + n * k + tokens)
    weights_s = weight_bytes / q.memory_bytes_per_s
    kv_s = kv_bytes / q.kv_read_bytes_per_s

    act_bytes = tokens * (m.hidden_size * ACTIVATION_BYTES)
    comm_s = (q.tp_comm_latency_s + q.tp_comm_s_per_byte * act_bytes
              + q.pp_comm_latency_s + q.pp_comm_s_per_byte * act_bytes)
    core_s: np.ndarray = (roofline(gemm_s, weights_s, q.compute_memory_overlap)
                          + roofline(attention_s, kv_s, q.compute_memory_overlap) + comm_s
                          + q.step_overhead_s + draft_seconds(q, d, dec_keys))
    return core_s



def cycle_token_budget(q: StepParams, chunk_tokens: np.ndarray | float) -> np.ndarray:
    """Tokens a chunked step (one crossing of every in-flight micro-batch) may carry: the
    engine's per-batch budget (``--max-num-batched-tokens``, ``--chunked-prefill-size``
    apply to each scheduled micro-batch) times the micro-batches in flight."""
    c = np.asarray(chunk_tokens, dtype=float)
    if np.all(np.asarray(q.pipeline_microbatches) == 1.0):
        return c
    return c * q.pipeline_microbatches


def budget_units(q: StepParams) -> np.ndarray | float:
    """Units a chunked step's budget and sequences are spread over, each with its own share
    of the budget and each prompt in one of them (docs/model.md §5): the pipeline
    micro-batches in flight (each scheduled with the engine's budget), or the DP-attention
    ranks (SGLang divides ``--chunked-prefill-size`` by the DP size; vLLM applies
    ``--max-num-batched-tokens`` per DP rank); 1 otherwise."""
    return q.pipeline_microbatches * q.attention_ranks


@dataclass(frozen=True, kw_only=True)
class Instance:
    """One serving engine instance: ``tensor_parallel`` GPUs per stage, ``pipeline_stages``
    stages."""

    model: ModelSpec
    gpu: GpuSpec
    precision: Precision
    engine: EngineSpec
    tensor_parallel: int
    pipeline_stages: int
    intra_link: LinkSpec
    inter_link: LinkSpec | None
    efficiency: EfficiencyFactors
    layout: ExpertLayout | None = None
    """Expert parallelism (None: experts sharded with TP like every other weight).
    ``tensor_parallel`` is then the attention TP of each attention rank."""

    @property
    def gpus(self) -> int:
        """GPUs this instance occupies."""
        if self.layout is not None:
            return self.layout.expert_parallel
        return self.tensor_parallel * self.pipeline_stages

    @property
    def expert_parallel(self) -> int:
        """EP degree (1 without expert parallelism)."""
        return 1 if self.layout is None else self.layout.expert_parallel

    @property
    def kv_sender_gpus(self) -> int:
        """GPUs one request's KV cache leaves from (one NIC each): the whole instance under
        TP/PP, one attention rank's GPUs under DP attention."""
        return self.gpus // self.attention_data_parallel

    @property
    def redundant_experts(self) -> int:
        """Redundant expert copies of the EP group (0 without expert parallelism)."""
        return 0 if self.layout is None else self.layout.redundant_experts

    @property
    def attention_data_parallel(self) -> int:
        """Attention ranks that hold disjoint sequences (1 without DP attention)."""
        return 1 if self.layout is None else self.layout.attention_data_parallel

    @property
    def label(self) -> str:
        """``TP4``, ``TP8×PP2``, ``EP32·DPA``."""
        if self.layout is not None:
            return self.layout.label
        if self.pipeline_stages == 1:
            return f"TP{self.tensor_parallel}"
        return f"TP{self.tensor_parallel}×PP{self.pipeline_stages}"

    @property
    def expert_bytes_per_gpu(self) -> float:
        """Routed-expert weight bytes each GPU holds (EP: its experts incl. redundant)."""
        experts = self.model.expert_weight_bytes(self.precision)
        if self.layout is None or self.model.moe is None:
            return experts / self.gpus
        return experts * self.layout.experts_per_gpu / self.model.moe.num_experts

    @property
    def weight_bytes_per_gpu(self) -> float:
        """Weights each GPU holds (sharded over TP and PP; under EP the non-expert weights
        are split over attention TP only and the experts over the EP group)."""
        if self.layout is None:
            return self.model.weight_bytes(self.precision) / self.gpus
        dense = (self.model.weight_bytes(self.precision)
                 - self.model.expert_weight_bytes(self.precision))
        return dense / self.tensor_parallel + self.expert_bytes_per_gpu

    @property
    def kv_bytes_per_token_per_gpu(self) -> float:
        """KV bytes per token each GPU stores (TP duplication included, split over stages;
        under DP attention a GPU holds only its own sequences: 1/ranks of the tokens)."""
        return (self.model.kv_bytes_per_token_per_gpu(self.precision, self.tensor_parallel)
                / self.pipeline_stages / self.attention_data_parallel)

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
        """Compute efficiency used for every matmul step (block-scaled FP8 GEMMs at the
        engine's share of the per-tensor FP8 efficiency)."""
        return self._mfu_of(self.precision)

    def _mfu_of(self, precision: Precision | str) -> float:
        """The prefill compute efficiency of GEMMs whose weights are in ``precision``'s format
        (block FP8 at the engine's share of the per-tensor FP8 efficiency)."""
        mfu = self.efficiency.prefill_compute_efficiency(precision, self.gpu.has_fp8_compute,
                                                         self.gpu.has_fp4_compute)
        if Precision.of(precision).weights == "fp8-block" and self.gpu.has_fp8_compute:
            mfu *= self.engine.block_fp8_compute_efficiency
        return mfu

    @property
    def formats(self) -> Precision:
        """The precision with the groups it leaves unset taken from the model's checkpoint."""
        return self.model.formats(self.precision)

    def _group_flops_per_gpu_s(self, weights: str) -> float:
        """Achieved matmul FLOP/s of one GPU for weights stored in ``weights``: the tensor
        peak of its compute format × that format's prefill efficiency (block FP8 at the
        engine's share)."""
        spec = Precision(weights=weights, kv_cache="bf16")
        return self.gpu.peak_flops_per_s(spec) * self._mfu_of(spec)

    @cached_property
    def gemm_flops_per_gpu_s(self) -> float:
        """Achieved FLOP/s of one GPU over the non-routed weight GEMMs (attention projections,
        dense layers, LM head; a dense model's every GEMM): each group at its own format's
        rate, N_nr / Σ_g (N_g / R_g) (docs/model.md §1.1); with no group in a format of its
        own, the weights' peak × :attr:`prefill_mfu`."""
        p = self.formats
        if p.uniform:
            return self.peak_flops_per_s * self.prefill_mfu
        groups = self.model.matmul_params_by_group()
        total = sum(n for g, n in groups.items() if g != "experts")
        seconds = sum(n / self._group_flops_per_gpu_s(p.group_compute_weights(g))
                      for g, n in groups.items() if g != "experts" and n > 0)
        return total / seconds if seconds > 0 else self.peak_flops_per_s * self.prefill_mfu

    @cached_property
    def expert_flops_per_gpu_s(self) -> float:
        """Achieved FLOP/s of one GPU on the routed experts, at the experts' format."""
        p = self.formats
        if p.uniform:
            return self.peak_flops_per_s * self.prefill_mfu
        return self._group_flops_per_gpu_s(p.group_compute_weights("experts"))

    def _tp_rate(self, tp: int, per_gpu_s: float) -> float:
        """``tp`` GPUs at ``per_gpu_s``; one-format precisions keep the product in the order
        of the one-rate formula (tp · peak · MFU), bit for bit."""
        if self.formats.uniform:
            return tp * self.peak_flops_per_s * self.prefill_mfu
        return tp * per_gpu_s

    @property
    def fp8_attention(self) -> bool:
        """Whether the attention kernels run on FP8 tensor cores: an FP8 KV cache on a GPU
        with FP8 compute (FlashAttention-3 / TensorRT-LLM FP8 FMHA); otherwise they run at 16
        bit whatever the weights' format (block-FP8, weight-only and 4-bit checkpoints keep
        16-bit activations and, by default, a 16-bit KV cache)."""
        return Precision.of(self.precision).kv_cache == "fp8" and self.gpu.has_fp8_compute

    @property
    def attention_flops_per_gpu_s(self) -> float:
        """Achieved attention FLOP/s of one GPU: the dense peak of the attention's format
        (:attr:`fp8_attention`) × the attention efficiency (docs/model.md §3)."""
        fp8 = self.fp8_attention
        peak = self.gpu.peak_flops_per_s("fp8") if fp8 else self.gpu.bf16_flops_per_s
        return peak * self.efficiency.attention_efficiency(fp8)

    @property
    def decode_attention_flops_per_gpu_s(self) -> float:
        """Achieved decode-attention FLOP/s of one GPU: :attr:`attention_flops_per_gpu_s`,
        but MLA's absorbed decode runs at the 16-bit peak even with an FP8 KV cache —
        FlashMLA's dense decode kernel is BF16 and its FP8-KV kernel dequantizes the cache
        to BF16 before the tensor-core matmuls (deepseek-ai/FlashMLA README and
        ``docs/20250929-hopper-fp8-sparse-deep-dive.md``); CUTLASS MLA (Blackwell) and
        FlashInfer MLA take BF16 queries the same way; FP8 attention is opt-in (docs/model.md
        §3)."""
        if self.model.mla is None:
            return self.attention_flops_per_gpu_s
        return self.gpu.bf16_flops_per_s * self.efficiency.attention_efficiency(False)

    @property
    def allreduce_latency_s(self) -> float:
        """Latency of one TP all-reduce: link latency + the engine's software cost."""
        if self.tensor_parallel <= 1:
            return 0.0
        return (self.intra_link.latency_s
                + self.engine.allreduce_software_s(self.tensor_parallel))

    @cached_property
    def params(self) -> StepParams:
        """The numbers the step-time formula reads, precomputed once per instance."""
        m, prec, eng = self.model, self.precision, self.engine
        experts = m.expert_weight_bytes(prec)
        lowbit = eng.lowbit_moe_efficiency if m.lowbit_experts else 1.0
        inter = self.inter_link or self.intra_link
        bandwidth = self.gpu.memory_bandwidth_bytes_per_s
        if self.layout is not None:
            return self._ep_params()
        # a step crosses the stages in turn: the formula on one stage's t GPUs with every
        # layer's weights and KV (the sum of the stage times)
        tp = self.tensor_parallel
        return StepParams(
            gpus=float(self.gpus),
            compute_flops_per_s=self._tp_rate(tp, self.gemm_flops_per_gpu_s),
            attention_flops_per_s=tp * self.attention_flops_per_gpu_s,
            decode_attention_flops_per_s=tp * self.decode_attention_flops_per_gpu_s,
            memory_bytes_per_s=bandwidth * self.efficiency.decode_bandwidth_efficiency,
            kv_read_bytes_per_s=bandwidth * self.efficiency.kv_read_efficiency,
            dense_weight_bytes_per_gpu=(m.weight_bytes(prec) - experts
                                        - m.gathered_embedding_bytes(prec)) / tp,
            expert_weight_bytes_per_gpu=experts / tp / lowbit,
            kv_bytes_per_token_per_gpu=self.model.kv_bytes_per_token_per_gpu(prec, tp),
            tp_comm_s_per_byte=(2.0 * m.num_layers * 2.0 * (self.tensor_parallel - 1)
                                / self.tensor_parallel / self.intra_link.effective_bytes_per_s),
            tp_comm_latency_s=2.0 * m.num_layers * self.allreduce_latency_s,
            pp_comm_s_per_byte=(self.pipeline_stages - 1) / inter.effective_bytes_per_s,
            pp_comm_latency_s=(self.pipeline_stages - 1) * inter.latency_s,
            step_overhead_s=self.efficiency.step_overhead_s,
            request_overhead_s=self.efficiency.request_overhead_s,
            moe_overhead_s=m.num_moe_layers * eng.moe_layer_overhead_s,
            compute_memory_overlap=eng.compute_memory_overlap,
            expert_compute_flops_per_s=self._tp_rate(tp, self.expert_flops_per_gpu_s),
            pipeline_microbatches=float(self.pipeline_microbatches),
            **self._speculative_terms(self._tp_rate(tp, self.gemm_flops_per_gpu_s)),
        )

    def _speculative_terms(self, compute_flops_per_s: float) -> dict[str, float]:
        """The StepParams of the engine's speculative decoding (none: the defaults)."""
        return step_terms(self.engine.speculative, self.model, self.precision,
                          tensor_parallel=self.tensor_parallel,
                          weight_bytes_per_s=(self.gpu.memory_bandwidth_bytes_per_s
                                              * self.efficiency.decode_bandwidth_efficiency),
                          compute_flops_per_s=compute_flops_per_s,
                          expert_shards=self.expert_parallel if self.layout else None)

    @property
    def pipeline_microbatches(self) -> int:
        """Micro-batches in flight: the stages when the engine micro-batches, else 1."""
        return self.pipeline_stages if self.engine.pipeline_microbatching else 1

    def _ep_params(self) -> StepParams:
        """Step-time constants of an expert-parallel instance (docs/model.md §3.4): the
        non-expert weights replicated per attention rank, the experts sharded over the EP
        group, the KV and the attention all-reduces of one attention rank (the busiest rank's
        share of a step's sequences is ``_moe_step_time``'s), the all-to-all α + β per MoE
        layer, the imbalance factor."""
        m, prec, eng, lay = self.model, self.precision, self.engine, self.layout
        terms = eng.expert_parallel
        assert lay is not None and m.moe is not None and terms is not None
        experts = m.expert_weight_bytes(prec)
        lowbit = eng.lowbit_moe_efficiency if m.lowbit_experts else 1.0
        bandwidth = self.gpu.memory_bandwidth_bytes_per_s
        tp, ranks = self.tensor_parallel, lay.attention_data_parallel
        # FP8 GEMM inputs: the experts' format decides what the dispatch carries
        fp8_weights = self.formats.group_compute_weights("experts") in ("fp8", "fp8-block")
        dispatch = terms.dispatch_bytes_fp8 if fp8_weights else 2.0
        cost = all_to_all_cost(
            expert_parallel=lay.expert_parallel, gpus_per_node=lay.gpus_per_node,
            experts_per_token=m.moe.experts_per_token, hidden_size=m.hidden_size,
            dispatch_bytes=dispatch, combine_bytes=terms.combine_bytes,
            intra_link=self.intra_link, inter_link=self.inter_link,
            efficiency=terms.all_to_all_efficiency)
        layers = float(m.num_moe_layers)
        slot_cv = expert_slot_load_cv(terms)
        sm_share = 1.0 - (terms.comm_sm_fraction if terms.two_batch_overlap else 0.0)
        flops_per_gpu = self.gemm_flops_per_gpu_s * sm_share
        return StepParams(
            gpus=float(self.gpus),
            # the busiest attention rank's t GPUs run its attention and dense layers
            compute_flops_per_s=tp * flops_per_gpu,
            attention_flops_per_s=tp * self.attention_flops_per_gpu_s * sm_share,
            decode_attention_flops_per_s=tp * self.decode_attention_flops_per_gpu_s * sm_share,
            memory_bytes_per_s=bandwidth * self.efficiency.decode_bandwidth_efficiency,
            kv_read_bytes_per_s=bandwidth * self.efficiency.kv_read_efficiency,
            dense_weight_bytes_per_gpu=(m.weight_bytes(prec) - experts
                                        - m.gathered_embedding_bytes(prec)) / tp,
            expert_weight_bytes_per_gpu=self.expert_bytes_per_gpu / lowbit,
            kv_bytes_per_token_per_gpu=m.kv_bytes_per_token_per_gpu(prec, tp),
            tp_comm_s_per_byte=(2.0 * m.num_layers * 2.0 * (tp - 1) / tp
                                / self.intra_link.effective_bytes_per_s),
            tp_comm_latency_s=2.0 * m.num_layers * self.allreduce_latency_s,
            pp_comm_s_per_byte=0.0,
            pp_comm_latency_s=0.0,
            step_overhead_s=self.efficiency.step_overhead_s,
            request_overhead_s=self.efficiency.request_overhead_s,
            moe_overhead_s=m.num_moe_layers * eng.moe_layer_overhead_s,
            compute_memory_overlap=eng.compute_memory_overlap,
            a2a_latency_s=layers * cost.latency_s_per_layer,
            a2a_s_per_prefill_token=layers * cost.prefill_s_per_token_per_layer,
            a2a_s_per_decode_token=layers * cost.decode_s_per_token_per_layer,
            a2a_overlap=1.0 if terms.two_batch_overlap else 0.0,
            imbalance_z=expected_max_standard_normal(lay.expert_parallel),
            imbalance_slot_var=slot_cv**2 / lay.experts_per_gpu,
            imbalance_ranks=float(lay.expert_parallel),
            expert_compute_flops_per_s=self.gpus * (self.expert_flops_per_gpu_s * sm_share),
            attention_ranks=float(ranks),
            **self._speculative_terms(tp * flops_per_gpu),
        )

    def all_to_all_share(self, prefill_tokens: float = 0.0, prefill_seqs: float = 0.0,
                         decode_seqs: float = 0.0, decode_context_tokens: float = 0.0) -> float:
        """Share of a step's work that is all-to-all: a2a / (a2a + the rest), before the
        two-batch overlap hides it (0 without EP)."""
        if self.layout is None or self.model.moe is None:
            return 0.0
        parts = self.step_parts(prefill_tokens, prefill_seqs, 0.0, decode_seqs,
                                decode_context_tokens)
        a2a, core = float(parts.all_to_all_s), float(parts.core_s)
        return a2a / (a2a + core) if a2a > 0.0 and a2a + core > 0 else 0.0

    def step_parts(self, prefill_tokens: np.ndarray | float = 0.0,
                   prefill_seqs: np.ndarray | float = 0.0,
                   prefill_context_tokens: np.ndarray | float = 0.0,
                   decode_seqs: np.ndarray | float = 0.0,
                   decode_context_tokens: np.ndarray | float = 0.0) -> MoeStepParts:
        """The named parts of one step of an MoE instance (``moe_step.MoeStepParts``)."""
        if self.model.moe is None:
            raise ValueError("step parts are those of an MoE model's step")
        q = self.params
        p = np.asarray(prefill_tokens, dtype=float)
        n = np.maximum(np.asarray(prefill_seqs, dtype=float), np.where(p > 0, 1.0, 0.0))
        d = np.asarray(decode_seqs, dtype=float)
        p, n, d = busiest_unit_share(q.pipeline_microbatches, p, n, d)
        return moe_step_parts(self.model, q, p, n, np.asarray(prefill_context_tokens, float),
                              d, np.asarray(decode_context_tokens, dtype=float))

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

    def decode_token_s(self, batch: np.ndarray | float,
                       context_tokens: np.ndarray | float) -> np.ndarray:
        """Seconds per output token of a decode-only step: the step over the tokens it emits
        per sequence (speculative decoding; the step itself without, docs/model.md §3.6)."""
        step: np.ndarray = self.decode_step_s(batch, context_tokens)
        return step / self.params.decode_tokens_per_step


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
