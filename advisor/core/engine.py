"""A serving engine at one version family: the engine-side constants of the cost model.

Resolved by the loading layer from ``profiles/engines/<id>.yaml`` (every number there is
sourced); the core only sees this frozen record. It carries (docs/model.md §3.2):

* the per-step fixed cost and the per-request TTFT overhead of the engine;
* optional overrides of the GPU profile's efficiency factors (weight streaming, KV reads,
  prefill compute), fitted per engine (``tools/refit_engines.py``);
* the software cost of one tensor-parallel all-reduce, on top of the link latency, rising
  with the number of ranks: ``overhead + per_doubling · log2(TP/2)`` for TP ≥ 2;
* the small-batch cost of a mixture-of-experts layer (routing, permutation, grouped-GEMM
  launches), charged per MoE layer for the share of routed experts a step does *not* touch,
  ``t_moe · (1 − coverage)``, and the bandwidth efficiency of 4-bit expert kernels relative
  to the weight-streaming efficiency;
* launch defaults: token budget per GPU (a table of memory tiers), ``max_num_seqs``, the
  runtime memory reserve and its logits/sampler term (``max_num_seqs × vocab × bytes``),
  the CUDA-graph batch limit;
* what the engine supports (KV-transfer backends, different TP across pools, expert
  parallelism, DP attention);
* how a pipeline-parallel instance schedules (micro-batches in flight, one per stage, or one
  batch crossing the stages at a time) and how its P/D path moves a request (the transfer
  backend, when it ships the KV, how the router dispatches: ``KvTransferTerms``).

:meth:`EngineSpec.generic` is the engine as the GPU profile alone describes it (no engine
profile): the behaviour before engine profiles existed, kept for callers that name an engine
by string only.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from advisor.core.expert_parallel import ExpertParallelTerms
from advisor.core.hardware import EfficiencyFactors, GpuSpec
from advisor.core.kv_transfer import KvTransferTerms
from advisor.core.speculative import SpeculativeDecoding

GIB = float(2**30)

GENERIC_RUNTIME_RESERVE_BYTES = 3.5 * GIB
"""aiconfigurator ``other_mem`` per GPU: the reserve used when no engine profile says more."""

GENERIC_MAX_NUM_SEQS = {"vllm": 1024, "sglang": 1024, "trtllm": 2048}
"""Running-sequence caps used by :meth:`EngineSpec.generic` (the pre-profile constants)."""


@dataclass(frozen=True)
class TokenBudgetTier:
    """One row of an engine's launch-default table: GPUs with at least ``min_memory_bytes``
    (and whose id/name does not contain ``exclude``) get ``tokens`` per step and
    ``max_num_seqs`` running sequences. Rows are tried in order; the first match wins."""

    min_memory_bytes: float
    tokens: int
    max_num_seqs: int
    exclude: str = ""

    def matches(self, gpu: GpuSpec) -> bool:
        """Whether this tier applies to ``gpu``."""
        if gpu.memory_bytes < self.min_memory_bytes:
            return False
        return not (self.exclude and self.exclude.lower() in f"{gpu.id} {gpu.name}".lower())


@dataclass(frozen=True, kw_only=True)
class EngineSupport:
    """Deployment features of the engine family (what a plan may ask of it)."""

    pd_transfer_backends: tuple[str, ...] = ()
    """KV-transfer backends for prefill/decode disaggregation (empty: no P/D support)."""
    different_tp_across_pools: bool = False
    """Prefill and decode pools may run different tensor-parallel degrees."""
    expert_parallel: bool = False
    dp_attention: bool = False
    speculative_methods: tuple[str, ...] = ()
    """Speculative-decoding methods the family runs (``deployment.speculative.method``)."""


@dataclass(frozen=True, kw_only=True)
class EngineSpec:
    """One engine version family, resolved from its profile (see the module docstring)."""

    id: str
    """Profile id, e.g. ``vllm-v1``."""
    name: str
    """Engine: ``vllm``, ``sglang`` or ``trtllm``."""
    title: str
    """The profile's human name, e.g. ``vLLM V1 engine``."""
    versions: str = ""
    """The versions the family covers, as written in the profile (``>=0.8``)."""
    step_overhead_s: float | None = None
    """Fixed cost of one engine step; None: the GPU profile's."""
    request_overhead_s: float | None = None
    """Per-request cost on the TTFT path (API server, tokenisation, scheduling, first-token
    streaming); None: the GPU profile's."""
    weight_bandwidth_efficiency: float | None = None
    """Override of the GPU's weight-streaming efficiency (``decode_bandwidth_efficiency``)."""
    kv_bandwidth_efficiency: float | None = None
    """Override of the GPU's KV-read efficiency."""
    prefill_compute_efficiency_bf16: float | None = None
    prefill_compute_efficiency_fp8: float | None = None
    attention_compute_efficiency: float | None = None
    """Override of the GPU's attention efficiency (attention FLOP/s over the 16-bit peak)."""
    allreduce_overhead_s: float = 0.0
    """Software cost of one TP all-reduce at TP2, added to the link latency."""
    allreduce_overhead_per_doubling_s: float = 0.0
    """Growth of that cost per doubling of TP beyond 2."""
    moe_layer_overhead_s: float = 0.0
    """Cost per MoE layer of a step that touches few experts: ``t · (1 − coverage)``."""
    lowbit_moe_efficiency: float = 1.0
    """Bandwidth efficiency of 4-bit (MXFP4/NVFP4) expert kernels relative to the weight-
    streaming efficiency (1 = same)."""
    compute_memory_overlap: float = 1.0
    """ω, the overlap of a kernel class's compute and memory time at its ridge point: a class
    takes max(C, M, (1 − ω/2)·(C + M)) — 1 = max(C, M) at every ratio (the roofline), 0 =
    C + M at every ratio; between, the max past C/M = (2 − ω)/ω or below its inverse."""
    block_fp8_compute_efficiency: float = 1.0
    """Prefill efficiency of block-scaled FP8 GEMMs relative to per-tensor FP8 (1 = same)."""
    token_budget_tiers: tuple[TokenBudgetTier, ...] = ()
    default_token_budget_tokens: int = 8192
    """Token budget where no tier matches."""
    default_max_num_seqs: int = 1024
    """Running-sequence cap where no tier matches."""
    runtime_reserve_bytes: float = GENERIC_RUNTIME_RESERVE_BYTES
    """GPU memory held back per GPU for activations, CUDA graphs and the allocator."""
    logits_bytes_per_entry: float = 0.0
    """Bytes the logits/sampler buffers take per (running sequence × vocabulary entry)."""
    cuda_graph_max_batch: int = 0
    """Largest decode batch replayed from a captured CUDA graph (0 = unknown/none)."""
    supports: EngineSupport = EngineSupport()
    expert_parallel: ExpertParallelTerms | None = None
    """Expert-parallel constants (None: the engine profile gives none; no EP plans)."""
    pipeline_microbatching: bool = False
    """A pipeline-parallel instance keeps one micro-batch per stage in flight (each stage
    works on another batch; throughput credit), rather than one batch crossing the stages
    at a time. False without a profile: no credit."""
    kv_transfer: KvTransferTerms = dataclasses.field(default_factory=KvTransferTerms)
    """How the engine's P/D path moves a request (without a profile: the KV after the
    prefill, a sequential router: the conservative side)."""
    speculative: SpeculativeDecoding | None = None
    """The launch's speculative decoding (``deployment.speculative``; None: off): every
    decoding instance of the scenario — colocated and the decode pool alike — runs it."""

    def can_pair(self, prefill_tensor_parallel: int, decode_tensor_parallel: int) -> bool:
        """Whether a prefill pool of one attention TP may feed a decode pool of another
        (``supports.different_tp_across_pools``)."""
        return (self.supports.different_tp_across_pools
                or prefill_tensor_parallel == decode_tensor_parallel)

    @property
    def label(self) -> str:
        """Name, profile id and version family: ``vLLM V1 engine (vllm, >=0.8)``."""
        if not self.versions:
            return self.title
        return f"{self.title} ({self.id}, {self.versions})"

    # ---- efficiency ------------------------------------------------------------------
    def efficiency_for(self, gpu: GpuSpec) -> EfficiencyFactors:
        """The efficiency factors an instance of this engine runs with on ``gpu``.

        Precedence (most specific first): the GPU profile's block for this engine
        (``engines:`` in the GPU profile, or a calibration overlay), this profile's overrides,
        the GPU profile's defaults.
        """
        specific = gpu.engine_efficiency.get(self.name)
        if specific is not None:
            return specific
        base = gpu.efficiency
        updates: dict[str, float] = {}
        for key, value in (("decode_bandwidth_efficiency", self.weight_bandwidth_efficiency),
                           ("kv_bandwidth_efficiency", self.kv_bandwidth_efficiency),
                           ("prefill_compute_efficiency_bf16",
                            self.prefill_compute_efficiency_bf16),
                           ("prefill_compute_efficiency_fp8", self.prefill_compute_efficiency_fp8),
                           ("attention_compute_efficiency", self.attention_compute_efficiency),
                           ("step_overhead_s", self.step_overhead_s),
                           ("request_overhead_s", self.request_overhead_s)):
            if value is not None:
                updates[key] = value
        return dataclasses.replace(base, **updates) if updates else base

    # ---- collectives -----------------------------------------------------------------
    def allreduce_software_s(self, tensor_parallel: int) -> float:
        """Engine cost of one all-reduce over ``tensor_parallel`` ranks (0 at TP1)."""
        if tensor_parallel <= 1:
            return 0.0
        doublings = max(math.log2(tensor_parallel) - 1.0, 0.0)
        return self.allreduce_overhead_s + self.allreduce_overhead_per_doubling_s * doublings

    # ---- launch defaults -------------------------------------------------------------
    def _tier(self, gpu: GpuSpec) -> TokenBudgetTier | None:
        return next((t for t in self.token_budget_tiers if t.matches(gpu)), None)

    def default_token_budget(self, gpu: GpuSpec) -> int:
        """Per-step token budget the engine picks on ``gpu`` when the launch sets none."""
        tier = self._tier(gpu)
        return tier.tokens if tier is not None else self.default_token_budget_tokens

    def max_num_seqs(self, gpu: GpuSpec) -> int:
        """Running-sequence cap the engine picks on ``gpu`` when the launch sets none."""
        tier = self._tier(gpu)
        return tier.max_num_seqs if tier is not None else self.default_max_num_seqs

    def reserve_bytes(self, gpu: GpuSpec, vocab_size: int,
                      max_num_seqs: int | None = None) -> float:
        """Runtime memory per GPU: the fixed reserve plus the logits/sampler buffers, sized
        for ``max_num_seqs`` running sequences (default: the engine's own cap on ``gpu``)."""
        seqs = self.max_num_seqs(gpu) if max_num_seqs is None else max_num_seqs
        return (self.runtime_reserve_bytes
                + self.logits_bytes_per_entry * seqs * float(vocab_size))

    # ---- the engine with no profile ------------------------------------------------------
    @classmethod
    def generic(cls, name: str) -> EngineSpec:
        """The engine as the GPU profile alone describes it (no engine profile)."""
        return cls(id=name, name=name, title=name,
                   default_max_num_seqs=GENERIC_MAX_NUM_SEQS.get(name, 1024))
