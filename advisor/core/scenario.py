"""The one immutable, fully resolved scenario the core evaluates.

Built by ``advisor.loading.resolve`` from a workload file and the profiles; the core never
sees files, ids it must look up, or defaults it must apply.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from advisor.core.distributions import LengthDistribution
from advisor.core.engine import EngineSpec
from advisor.core.hardware import GpuSpec, LinkSpec, Precision
from advisor.core.model_arch import ModelSpec

# ---- the domain the model is evaluated on (the workload format and `sweep --vary` refuse
# values outside it, so nothing downstream overflows)
MAX_GPUS = 100_000
"""Largest cluster (and node) evaluated. The integer prefill:decode split enumerates every
pool size, so time and memory grow with the GPU count: 100,000 GPUs take ~3 s and ~300 MB,
a million ~20 s and ~2 GB, and int64 arithmetic overflows long before 10**30."""

MIN_RATE_RPS = 1e-6
MAX_RATE_RPS = 1e9
"""Arrival rates accepted, requests/s (one every 12 days to a billion a second): beyond
them capacity/rate ratios and KV demand (rate × bytes) leave the floating-point range.
(The workload format checks the lower bound apart from its "must be greater than 0", so
zero and negative rates keep that plain message.)"""

MAX_BURSTINESS = 1000.0
"""Largest coefficient of variation of inter-arrival times (the queueing squares it)."""

MAX_TOKENS = 10_000_000
"""Longest token length (prompt, output, any statistic) and chunk accepted: ten million, far
past every context window, while token counts still convert to floats (10**400 does not)."""


Engine = Literal["vllm", "sglang", "trtllm"]
DeploymentMode = Literal["colocated", "disaggregated"]


@dataclass(frozen=True)
class Cluster:
    """The GPUs the deployment may use and how they are connected."""

    gpu: GpuSpec
    gpus: int
    gpus_per_node: int
    intra_node: LinkSpec
    inter_node: LinkSpec | None
    """Per-GPU NIC between nodes; None means the deployment must fit on one node."""

    @property
    def nodes(self) -> int:
        """Whole nodes spanned by ``gpus`` (the last one may be partial)."""
        return -(-self.gpus // self.gpus_per_node)


@dataclass(frozen=True)
class TrafficPhase:
    """One segment of the daily mix (or the whole traffic when there are no phases)."""

    name: str
    share: float
    """Fraction of time this phase lasts (phases sum to 1)."""
    rate_rps: float
    burstiness: float
    """Coefficient of variation of inter-arrival times (1 = Poisson)."""
    prompt_tokens: LengthDistribution
    output_tokens: LengthDistribution


@dataclass(frozen=True)
class Slo:
    """Latency targets at a percentile; None = no target."""

    ttft_ms: float | None = None
    tpot_ms: float | None = None
    percentile: float = 95.0

    @property
    def quantile(self) -> float:
        """The percentile as a fraction (95 → 0.95)."""
        return self.percentile / 100.0

    @property
    def has_targets(self) -> bool:
        """Whether any latency target is set (otherwise goodput means raw capacity)."""
        return self.ttft_ms is not None or self.tpot_ms is not None


@dataclass(frozen=True)
class Deployment:
    """What runs today (judged by ``check``)."""

    mode: DeploymentMode
    chunked_prefill: bool = True
    chunk_tokens: int | None = None
    tensor_parallel: int | None = None
    prefill_gpus: int | None = None
    decode_gpus: int | None = None
    prefill_tensor_parallel: int | None = None
    decode_tensor_parallel: int | None = None


@dataclass(frozen=True)
class Policy:
    """Rule thresholds (fractions). Defaults and their rationale: docs/model.md §9."""

    max_rounding_loss: float = 0.05
    max_kv_link_utilization: float = 0.5
    max_kv_transfer_share_of_ttft: float = 0.2
    max_static_mix_loss: float = 0.1
    min_disagg_gain: float = 0.1
    split_tolerance: float = 0.1
    memory_fraction: float = 0.9


@dataclass(frozen=True)
class Scenario:
    """A workload with every profile looked up and every default applied."""

    model: ModelSpec
    precision: Precision
    engine: EngineSpec
    """The engine profile of the deployment's engine and version family."""
    cluster: Cluster
    phases: tuple[TrafficPhase, ...]
    """At least one phase; a workload without ``phases`` has a single phase named 'all'."""
    slo: Slo
    autoscaling: bool
    deployment: Deployment | None
    policy: Policy
    name: str | None = None
    chunk_tokens: int | None = None
    """A pinned chunk size (from ``deployment.chunk_tokens``); None = search 256…16384."""
    extras: dict[str, str] = field(default_factory=dict)

    def __hash__(self) -> int:
        return id(self)

    @property
    def peak_phase(self) -> TrafficPhase:
        """The phase with the highest rate."""
        return max(self.phases, key=lambda p: p.rate_rps)
