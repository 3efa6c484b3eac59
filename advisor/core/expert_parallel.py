"""Expert parallelism (EP) with data-parallel attention: the engine terms, the EP sizes worth
trying, and the redundant experts an EP group holds (docs/model.md §3.4, §4.1).

An EP instance of ``E_p`` GPUs shards the routed experts ``E_p`` ways (plus redundant copies
of hot experts placed by a balancer such as EPLB) and runs attention either data-parallel
(DP attention: every GPU holds the non-expert weights and the whole KV cache of its own
sequences, nothing replicated across ranks) or tensor-parallel over the node. Dense and
shared-expert layers are replicated per attention rank, as SGLang (``--moe-dense-tp-size 1``)
and DeepSeek's own deployment (shared expert DP) run them.

Pure: no files, no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

GIB = float(2**30)

REFERENCE_EXPERT_PARALLEL = 32
"""The EP size of the measurement the profiles' imbalance factors come from: LMSYS's prefill
EP32 (blog 2025-05-05), DeepSeek-V3's 256 routed + 32 redundant experts."""
REFERENCE_SLOTS_PER_GPU = 9
"""Expert slots per GPU in that measurement ((256 + 32)/32)."""


@dataclass(frozen=True, kw_only=True)
class ExpertParallelTerms:
    """The engine's expert-parallel constants (sourced in ``profiles/engines/*.yaml``)."""

    imbalance_with_balancer: float
    """Step-time factor of the hottest rank over the mean with an expert-placement balancer
    (EPLB) and redundant experts, measured at the reference layout (EP32, 9 expert slots per
    GPU, 16,384 tokens per GPU: the sampling noise negligible); :func:`imbalance_factor`
    scales it to other EP sizes and loads."""
    imbalance_without_balancer: float
    """The same without a balancer (at the reference layout)."""
    all_to_all_efficiency: float
    """Share of the link line rate the dispatch/combine kernels reach."""
    redundant_experts: int
    """Redundant expert copies an EP group holds with the balancer on (rounded up so every
    GPU holds the same number of experts)."""
    comm_buffer_bytes: float
    """GPU memory the all-to-all library reserves per GPU (DeepEP buffers)."""
    comm_sm_fraction: float = 0.0
    """Share of the GPU's SMs the all-to-all kernels hold while they overlap compute (compute
    runs on the rest when two micro-batches overlap)."""
    dispatch_bytes_fp8: float = 1.0
    """Bytes per hidden element of a dispatched token when weights are FP8 (FP8 dispatch)."""
    combine_bytes: float = 2.0
    """Bytes per hidden element of a combined token (BF16 combine)."""
    two_batch_overlap: bool = True
    """Two micro-batches hide the all-to-all behind the other micro-batch's compute."""
    balancer: bool = True
    """Plans use the expert-placement balancer (EPLB) and its redundant experts."""


@dataclass(frozen=True, kw_only=True)
class ExpertLayout:
    """How an EP instance places experts and attention."""

    expert_parallel: int
    """GPUs the routed experts are sharded over (= the instance's GPUs)."""
    attention_tensor_parallel: int
    """Attention TP inside each attention rank (1 = pure DP attention)."""
    redundant_experts: int
    experts_per_gpu: int
    """Routed experts (incl. redundant copies) each GPU holds."""
    gpus_per_node: int
    """GPUs per node: an EP group larger than a node crosses the inter-node network."""

    @property
    def attention_data_parallel(self) -> int:
        """Attention ranks (DP attention groups)."""
        return self.expert_parallel // self.attention_tensor_parallel

    @property
    def dp_attention(self) -> bool:
        """Whether attention is data-parallel across the EP group."""
        return self.attention_data_parallel > 1

    @property
    def label(self) -> str:
        """``EP32·DPA`` (DP attention) or ``EP8·TP8`` (tensor-parallel attention)."""
        if self.dp_attention:
            tp = self.attention_tensor_parallel
            return f"EP{self.expert_parallel}·DPA" + ("" if tp == 1 else f"×TP{tp}")
        return f"EP{self.expert_parallel}·TP{self.attention_tensor_parallel}"


def redundant_experts_for(num_experts: int, expert_parallel: int,
                          terms: ExpertParallelTerms) -> int | None:
    """Redundant experts of an EP group, or None when ``expert_parallel`` GPUs cannot hold
    the experts evenly.

    With the balancer: the profile's count, capped at ⌊num_experts/8⌋ for smaller expert
    counts (32 for DeepSeek-V3's 256), when it makes the total a multiple of
    ``expert_parallel``; otherwise none, which needs ``expert_parallel`` to divide
    ``num_experts``.
    """
    if expert_parallel <= 0:
        return None
    want = min(terms.redundant_experts, num_experts // 8) if terms.balancer else 0
    if want and (num_experts + want) % expert_parallel == 0:
        return want
    return 0 if num_experts % expert_parallel == 0 else None


def ep_candidate_sizes(num_experts: int, gpus_available: int, gpus_per_node: int,
                       multi_node: bool, terms: ExpertParallelTerms) -> list[int]:
    """EP degrees to try: one whole node and whole-node multiples that hold the experts
    (with the redundant copies) evenly — divisors of the expert count in node units, which
    bounds the list (DeepSeek-V3 on 8-GPU nodes: 8, 16, 24, 32, 48, 64, 72, 96, 128, 144,
    256, 288)."""
    limit = gpus_available if multi_node else min(gpus_available, gpus_per_node)
    return [ep for ep in range(gpus_per_node, limit + 1, gpus_per_node)
            if redundant_experts_for(num_experts, ep, terms) is not None]


def expert_layout(num_experts: int, expert_parallel: int, attention_tensor_parallel: int,
                  gpus_per_node: int, terms: ExpertParallelTerms) -> ExpertLayout | None:
    """The layout of one EP instance, or None when the experts do not shard evenly."""
    red = redundant_experts_for(num_experts, expert_parallel, terms)
    if red is None or expert_parallel % attention_tensor_parallel != 0:
        return None
    return ExpertLayout(expert_parallel=expert_parallel,
                        attention_tensor_parallel=attention_tensor_parallel,
                        redundant_experts=red,
                        experts_per_gpu=(num_experts + red) // expert_parallel,
                        gpus_per_node=gpus_per_node)


@cache
def expected_max_standard_normal(count: int) -> float:
    """E[max of ``count`` independent standard normals] (0 for one): the integral
    ∫ x · n·φ(x)·Φ(x)^(n−1) dx on a fine grid (|x| ≤ 10; the quadrature error is below
    1e-6; ``tests/core/test_ep_width.py`` checks it against ``scipy.stats``)."""
    if count <= 1:
        return 0.0
    x = np.linspace(-10.0, 10.0, 20001)
    pdf = np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
    cdf = 0.5 * (1.0 + np.array([math.erf(v / math.sqrt(2.0)) for v in x]))
    density = count * pdf * cdf ** (count - 1)
    return float(np.trapezoid(x * density, x))


def expert_slot_load_cv(terms: ExpertParallelTerms) -> float:
    """Coefficient of variation of one expert slot's per-step load after placement, from the
    profile's reference imbalance κ_ref: c = (κ_ref − 1) · √m_ref / z(E_ref) (the reference
    measurement's sampling term is negligible; docs/model.md §3.4)."""
    kappa = terms.imbalance_with_balancer if terms.balancer else terms.imbalance_without_balancer
    return ((kappa - 1.0) * math.sqrt(REFERENCE_SLOTS_PER_GPU)
            / expected_max_standard_normal(REFERENCE_EXPERT_PARALLEL))


def imbalance_factor(*, expert_parallel: int, slots_per_gpu: int, assignments_per_rank: Any,
                     slot_load_cv: float) -> Any:
    """κ: the hottest EP rank's expert load over the mean (docs/model.md §3.4),

        κ = 1 + z(E_p) · √(c²/m + (1 − 1/E_p)/n_r)

    with z(E_p) the expected maximum of E_p standard normals, m the expert slots per GPU
    (each slot's load varying with CV c, independently: a rank's systematic spread c/√m), and
    n_r the (token, expert) assignments a rank receives per MoE layer (T·k/E_p: the
    multinomial sampling spread of uniform routing, variance n_r·(1 − 1/E_p)). Grows with
    E_p (z, fewer slots per GPU) and falls with the tokens per expert. 1 on one GPU."""
    if expert_parallel <= 1:
        return 1.0 + 0.0 * np.asarray(assignments_per_rank, dtype=float)
    return imbalance_of(z=expected_max_standard_normal(expert_parallel),
                        slot_variance=slot_load_cv**2 / slots_per_gpu, ranks=expert_parallel,
                        assignments_per_rank=assignments_per_rank)


def imbalance_of(*, z: Any, slot_variance: Any, ranks: Any, assignments_per_rank: Any) -> Any:
    """κ = 1 + z · √(c²/m + (1 − 1/E_p)/n_r) from its parts (:func:`imbalance_factor`; the
    step passes z and c²/m precomputed per layout, ``StepParams.imbalance_z`` and
    ``imbalance_slot_var``)."""
    n = np.maximum(np.asarray(assignments_per_rank, dtype=float), 1.0)
    return 1.0 + z * np.sqrt(slot_variance + (1.0 - 1.0 / ranks) / n)
