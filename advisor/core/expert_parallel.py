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

from dataclasses import dataclass

GIB = float(2**30)


@dataclass(frozen=True, kw_only=True)
class ExpertParallelTerms:
    """The engine's expert-parallel constants (sourced in ``profiles/engines/*.yaml``)."""

    imbalance_with_balancer: float
    """Step-time factor of the hottest rank over the mean with an expert-placement balancer
    (EPLB) and redundant experts."""
    imbalance_without_balancer: float
    """The same without a balancer."""
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
