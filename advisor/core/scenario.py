"""The one immutable, fully resolved scenario the core evaluates.

Built by ``advisor.loading.resolve`` from a workload file and the profiles; the core never
sees files, ids it must look up, or defaults it must apply.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal, get_args

import numpy as np

from advisor.core.distributions import LengthDistribution
from advisor.core.engine import EngineSpec
from advisor.core.hardware import GpuSpec, LinkSpec, Precision
from advisor.core.kv_transfer import pool_link
from advisor.core.model_arch import ModelSpec
from advisor.core.speculative import SpeculativeDecoding

Engine = Literal["vllm", "sglang", "trtllm"]
DeploymentMode = Literal["colocated", "disaggregated"]
RouterPolicy = Literal["least-loaded", "round-robin", "random", "power-of-two"]
"""How the router in front of a pool sends each request to one instance on arrival
(docs/model.md §7): ``least-loaded`` joins the instance with the fewest outstanding requests
(join-the-shortest-queue: llm-d's queue scorer, vLLM Router's ``sticky_least_loaded``),
``round-robin`` deals requests out in turn (vLLM's disaggregation proxy, Dynamo's default
``--router-mode``), ``random`` draws an instance uniformly, ``power-of-two`` draws two and
takes the less loaded (SGLang Model Gateway / vLLM Router ``power_of_two``)."""
ROUTER_POLICIES: tuple[RouterPolicy, ...] = get_args(RouterPolicy)
DEFAULT_ROUTER: RouterPolicy = "least-loaded"


@dataclass(frozen=True, kw_only=True)
class Cluster:
    """The GPUs the deployment may use and how they are connected."""

    gpu: GpuSpec
    gpus: int
    gpus_per_node: int
    intra_node: LinkSpec
    inter_node: LinkSpec | None
    """Per-GPU NIC between nodes; None means the deployment must fit on one node."""
    price_per_gpu_hour: float | None = None
    """The workload's own GPU-hour price, USD (``cluster.price_per_gpu_hour``); None: the GPU
    profile's reference price, if any."""
    nics_per_node: int | None = None
    """NICs of the inter-node link per node (``cluster.nics_per_node``, else the interconnect
    profile's usual build); None: the link's own default (or no inter-node link)."""

    @property
    def usd_per_gpu_hour(self) -> float | None:
        """The price in force: the workload's, else the GPU profile's, else None."""
        if self.price_per_gpu_hour is not None:
            return self.price_per_gpu_hour
        return self.gpu.price_per_gpu_hour_usd

    @property
    def price_source(self) -> str | None:
        """``workload``, ``gpu-profile`` (an estimate) or None."""
        if self.price_per_gpu_hour is not None:
            return "workload"
        return None if self.gpu.price_per_gpu_hour_usd is None else "gpu-profile"

    @property
    def nodes(self) -> int:
        """Nodes spanned by ``gpus`` (:func:`nodes_spanned`)."""
        return nodes_spanned(self.gpus, self.gpus_per_node)

    @property
    def single_node(self) -> bool:
        """Whether every GPU sits in one node."""
        return self.gpus <= self.gpus_per_node

    @property
    def spans_nodes(self) -> bool:
        """Whether instances may span nodes: more than one node and an inter-node link."""
        return self.inter_node is not None and not self.single_node

    @property
    def inter_nics_per_node(self) -> int | None:
        """NICs per node of the inter-node link in force (None without one)."""
        if self.inter_node is None:
            return None
        if self.nics_per_node is not None:
            return self.nics_per_node
        return self.inter_node.default_nics_per_node(self.gpus_per_node)

    @property
    def kv_link(self) -> LinkSpec:
        """The link the KV cache crosses from prefill to decode instances: the intra-node
        link while the cluster is one node (or has no inter-node link), else the
        inter-node NICs, ``nics_per_node / gpus_per_node`` per GPU."""
        link = pool_link(self.intra_node, self.inter_node, self.single_node)
        nics = self.inter_nics_per_node
        if link is self.intra_node or nics is None:
            return link
        share = nics / self.gpus_per_node
        return link if share == link.nics_per_gpu else replace(link, nics_per_gpu=share)

    def instances_of(self, instance_gpus: int) -> int:
        """Whole instances of ``instance_gpus`` GPUs the cluster holds
        (:func:`instances_in_cluster`)."""
        return int(instances_in_cluster(self.gpus, instance_gpus, self.gpus_per_node))

    def with_gpus(self, gpus: int) -> Cluster:
        """The same cluster with ``gpus`` GPUs."""
        return replace(self, gpus=int(gpus))


def nodes_spanned(gpus: int, gpus_per_node: int) -> int:
    """Nodes ``gpus`` GPUs occupy in nodes of ``gpus_per_node`` (the last may be partial)."""
    return -(-gpus // gpus_per_node)


def instances_in_cluster(gpus: np.ndarray | int, instance_gpus: np.ndarray | int,
                         gpus_per_node: int) -> np.ndarray:
    """Whole instances of ``instance_gpus`` GPUs on ``gpus`` GPUs in nodes of
    ``gpus_per_node``: instances up to a node pack into every node (the last node may be
    partial); larger ones take whole nodes. Broadcasts over arrays of both."""
    g = np.asarray(gpus, dtype=np.int64)
    size = np.asarray(instance_gpus, dtype=np.int64)
    full = g // gpus_per_node
    rest = g - full * gpus_per_node
    small = full * (gpus_per_node // np.maximum(size, 1)) + rest // np.maximum(size, 1)
    large = full // np.maximum(size // gpus_per_node, 1)
    return np.where(size <= gpus_per_node, small, large)


@dataclass(frozen=True, kw_only=True)
class ClosedLoop:
    """How a closed-loop phase's equivalent rate was solved (``core.solve.closed_loop``)."""

    concurrency: int
    rate_rps: float
    """The equivalent arrival rate λ with λ · e2e_s = concurrency."""
    ttft_ms: float
    """Median TTFT at that rate (the model's, on ``plan``)."""
    tpot_ms: float
    """Median TPOT at that rate."""
    e2e_s: float
    """TTFT + (mean output − 1) · TPOT."""
    plan: str
    """``deployed``, ``colocated`` or ``disaggregated``: whose latencies were used."""


@dataclass(frozen=True, kw_only=True)
class BatchPlanFigures:
    """A finite batch on one plan: its makespan and the batch's percentiles."""

    plan: str
    """``colocated`` or ``disaggregated`` (the best plan of that architecture)."""
    makespan_s: float
    throughput_rps: float
    ttft_ms: tuple[float, float, float]
    """p50, p95, p99."""
    tpot_ms: tuple[float, float, float]
    ttft_at_slo_ms: float
    tpot_at_slo_ms: float


@dataclass(frozen=True, kw_only=True)
class FiniteBatch:
    """How a finite batch was evaluated (``core.solve.finite_batch_rate``)."""

    requests: int
    plan: str
    """The plan whose throughput is the phase's rate: the one with the shorter makespan."""
    plans: tuple[BatchPlanFigures, ...]


@dataclass(frozen=True, kw_only=True)
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
    prefix_cache_hit_rate: float = 0.0
    """Share of prompt tokens served from the prefix cache (0 ≤ h < 1; docs/model.md §2.1)."""
    concurrency: int | None = None
    """Closed-loop clients this phase was given as (``rate_rps`` is then the equivalent
    rate solved by ``core.solve.closed_loop``); None: an open-loop rate."""
    closed_loop: ClosedLoop | None = None
    """How the equivalent rate was solved (None until :func:`solve_closed_loop` ran)."""
    batch_requests: int | None = None
    """A finite batch: this many requests at t = 0 (``rate_rps`` is then requests / makespan,
    solved by ``core.solve.finite_batch_rate``); None: open or closed loop."""
    finite_batch: FiniteBatch | None = None
    """The batch's figures on both architectures (None until solved)."""

    @property
    def computed_prompt_tokens(self) -> LengthDistribution:
        """The prompt tokens prefill computes: every prompt × (1 − hit rate). The cached
        prefix is neither computed nor re-read in the model (its attention cost is left out;
        docs/model.md §2.1); KV memory, decode context and KV transfer keep the whole prompt."""
        return self.prompt_tokens.scaled(1.0 - self.prefix_cache_hit_rate)


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


@dataclass(frozen=True, kw_only=True)
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
    expert_parallel: int | None = None
    """Pinned EP degree (MoE models; DP attention), instead of ``tensor_parallel``."""
    prefill_expert_parallel: int | None = None
    decode_expert_parallel: int | None = None
    max_num_seqs: int | None = None
    """Running-sequence cap per instance the launch sets (None: the engine's default); the
    scenario's engine spec carries it (``loading.resolve``)."""
    max_model_len: int | None = None
    """Longest request the launch allows; memory is planned for one such request."""
    gpu_memory_utilization: float | None = None
    """Share of GPU memory the launch gives the engine; the scenario's
    ``policy.memory_fraction`` carries it."""
    router: RouterPolicy | None = None
    """The router policy the deployment runs (None: ``operations.router``); the scenario's
    ``router`` carries it."""
    speculative: SpeculativeDecoding | None = None
    """Speculative decoding the launch runs (None: off); the scenario's engine spec carries
    it to every decoding instance (docs/model.md §3.6)."""


@dataclass(frozen=True)
class AppliedCalibration:
    """A calibration overlay the scenario runs with (``calibration:`` in the workload)."""

    file: str
    """The overlay file as the workload names it."""
    fitted_on: dict[str, Any]
    """What the factors were fitted on: ``model``, ``engine``, ``gpu``, ``tensor_parallel``,
    ``precision`` and the benchmark ``files`` (``[{path, sha256}]``)."""
    factors: dict[str, float]
    """The efficiency factors it sets (``field -> value``)."""


@dataclass(frozen=True, kw_only=True)
class Policy:
    """Rule thresholds (fractions). Defaults and their rationale: docs/model.md §9."""

    max_rounding_loss: float = 0.05
    max_kv_link_utilization: float = 0.5
    max_kv_transfer_share_of_ttft: float = 0.2
    max_static_mix_loss: float = 0.1
    min_disagg_gain: float = 0.1
    split_tolerance: float = 0.1
    memory_fraction: float = 0.9
    assumed_mix_drift: float = 0.25
    """± share of the mean prompt and output lengths a single-phase workload with static pools
    is assumed to drift by (the ``traffic-mix`` band, docs/model.md §9)."""


@dataclass(frozen=True, kw_only=True)
class Scenario:
    """A workload with every profile looked up and every default applied."""

    model: ModelSpec
    precision: Precision
    """Formats of the weights and of the KV cache (a one-word shorthand is expanded)."""
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
    """The token budget of a declared chunked deployment, pinned for the colocated plans:
    ``deployment.chunk_tokens``, else the engine's default for the GPU
    (``token_budget.deployment_token_budget``); None (no deployment, or chunking off) =
    search 256…16384."""
    extras: dict[str, str] = field(default_factory=dict)
    calibration: AppliedCalibration | None = None
    """The calibration overlay whose factors replace the GPU profile's for the engine."""
    router: RouterPolicy = DEFAULT_ROUTER
    """How every pool's router dispatches requests to its instances — colocated, prefill and
    decode alike (``deployment.router``, else ``operations.router``; docs/model.md §7)."""

    def __post_init__(self) -> None:
        # a one-word precision (``"fp8"``) becomes its (weights, KV cache) pair
        object.__setattr__(self, "precision", Precision.of(self.precision))

    def __hash__(self) -> int:
        # consistent with the generated __eq__ (equal scenarios hash equal): a few fields
        # that equal scenarios share; ``extras`` (a dict) cannot be hashed
        return hash((self.name, self.model.id, self.engine, self.precision,
                     self.cluster.gpu.id, self.cluster.gpus,
                     tuple(p.rate_rps for p in self.phases)))

    @property
    def peak_phase(self) -> TrafficPhase:
        """The phase with the highest rate."""
        return max(self.phases, key=lambda p: p.rate_rps)
