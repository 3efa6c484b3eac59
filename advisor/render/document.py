"""The typed report documents (``schema_version`` 1): what ``recommend`` and ``check`` write as
JSON, and what every other format renders from (#28).

Each document is a tree of :class:`~typing_extensions.TypedDict` types: the builder
(:mod:`advisor.render.report_json`) and every renderer are type-checked against them, and the
JSON Schema (``advisor/schemas/report.schema.json``) is generated from them
(:mod:`advisor.render.report_schema`). At run time the documents are plain dicts (imported
only for type checking and the schema).

Rules: units live in key names (``_ms``, ``_rps``, ``_bytes_per_s``); fractions stay
fractions; a value that does not exist is ``null``; never NaN or infinity. Keys may be added
within schema version 1, none renamed or removed; MoE keys only for MoE models (``NotRequired``).
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from typing_extensions import TypedDict

from advisor.render.document_fields import (
    Count,
    DecidingRule,
    Fraction,
    GateCheck,
    NonNeg,
    PlanKind,
    Position,
    PrecisionTensors,
    PreconditionId,
    Quantiles,
    Sha256,
    SpeculativeInput,
    Tool,
    Verdict,
)


# --------------------------------------------------------------------------- inputs
class PolicyFile(TypedDict):
    """A ``.pd-advisor.yaml`` that changed the policy, and the keys it set (#33)."""

    path: str
    keys: list[str]


class InputFile(TypedDict):
    path: str
    sha256: Sha256
    policy_files: list[PolicyFile]


class ModelRef(TypedDict):
    id: str
    name: str
    total_params: NonNeg


class EngineProfile(TypedDict):
    """The engine profile (version family) whose constants the numbers use."""

    id: str
    name: str
    versions: str


class GpuRef(TypedDict):
    id: str
    name: str


class Link(TypedDict):
    id: str
    bandwidth_bytes_per_s: NonNeg


class Cluster(TypedDict):
    gpu: GpuRef
    gpus: Count
    gpus_per_node: Count
    nodes: Count
    intra_node: Link
    inter_node: Link | None
    usd_per_gpu_hour: NonNeg | None
    price_source: Literal["workload", "gpu-profile"] | None


class Lengths(TypedDict):
    mean: NonNeg
    p50: NonNeg
    p95: NonNeg
    max: NonNeg | None


class ClosedLoop(TypedDict):
    """The fixed point λ·e2e_s = concurrency, on the model's median latencies of `plan`."""

    concurrency: Count
    equivalent_rate_rps: NonNeg
    ttft_ms_p50: NonNeg
    tpot_ms_p50: NonNeg
    e2e_s: NonNeg
    plan: Literal["deployed", "colocated", "disaggregated"]


class FiniteBatchPlan(TypedDict):
    plan: Literal["colocated", "disaggregated"]
    makespan_s: NonNeg
    throughput_rps: NonNeg
    ttft_ms: Quantiles
    tpot_ms: Quantiles
    ttft_ms_at_slo: NonNeg
    tpot_ms_at_slo: NonNeg


class FiniteBatch(TypedDict):
    """A finite batch (requests at t = 0): its makespan and percentiles on the best plan of
    each architecture; rate_rps = requests / makespan of `plan`."""

    requests: Count
    plan: Literal["colocated", "disaggregated"]
    plans: list[FiniteBatchPlan]


class Traffic(TypedDict):
    name: str
    share: Fraction
    rate_rps: NonNeg
    burstiness: NonNeg
    prompt_tokens: Lengths
    output_tokens: Lengths
    prefix_cache_hit_rate: Fraction
    concurrency: Count | None
    """Closed-loop clients; rate_rps is then the equivalent rate (Little's law)."""
    closed_loop: ClosedLoop | None
    finite_batch: FiniteBatch | None


class Slo(TypedDict):
    ttft_ms: NonNeg | None
    tpot_ms: NonNeg | None
    percentile: NonNeg


RouterPolicy = Literal["least-loaded", "round-robin", "random", "power-of-two"]


class DeploymentInput(TypedDict):
    mode: Literal["colocated", "disaggregated"]
    chunked_prefill: bool
    chunk_tokens: Count | None
    tensor_parallel: Count | None
    prefill_gpus: Count | None
    decode_gpus: Count | None
    prefill_tensor_parallel: Count | None
    decode_tensor_parallel: Count | None
    max_num_seqs: Count | None
    max_model_len: Count | None
    gpu_memory_utilization: Fraction | None
    router: RouterPolicy | None
    expert_parallel: NotRequired[Count | None]
    prefill_expert_parallel: NotRequired[Count | None]
    decode_expert_parallel: NotRequired[Count | None]
    speculative: NotRequired[SpeculativeInput]


class Inputs(TypedDict):
    """The resolved scenario the numbers were computed for."""

    name: str | None
    model: ModelRef
    precision: str
    precision_tensors: PrecisionTensors
    engine: str
    engine_profile: EngineProfile
    cluster: Cluster
    traffic: list[Traffic]
    slo: Slo
    autoscaling: bool
    router: RouterPolicy
    """How every pool's router dispatches requests (both architectures assume it)."""
    deployment: DeploymentInput | None


class CalibrationFile(TypedDict):
    path: str
    sha256: str


class FittedOn(TypedDict):
    model: str | None
    engine: Literal["vllm", "sglang", "trtllm"]
    gpu: str
    tensor_parallel: Position | None
    precision: Literal["bf16", "fp8", "fp8-block"] | None
    files: list[CalibrationFile]


class Calibration(TypedDict):
    """The active calibration overlay (`calibration:`): fitted on, factors; null if none."""

    file: str
    fitted_on: FittedOn
    factors: dict[str, float]


# --------------------------------------------------------------------------- plans
class Interference(TypedDict):
    """TPOT inflation when a prompt lands in a running decode batch."""

    prompt_tokens: NonNeg
    decode_batch: NonNeg
    decode_step_ms: NonNeg | None
    unchunked_tpot_factor: NonNeg | None
    chunked_tpot_factor: NonNeg | None
    chunk_tokens: Count
    chunked_safe_rate_rps: NonNeg | None


class Colocated(TypedDict):
    """A colocated pool of identical instances (latencies null when overloaded); MoE models
    add the expert-parallel keys."""

    tensor_parallel: Count
    pipeline_stages: Count
    instances: Count
    gpus: Count
    chunked: bool
    chunk_tokens: Count | None
    max_goodput_rps: NonNeg
    capacity_rps: NonNeg
    rate_rps: NonNeg
    output_tokens_per_s_per_gpu: NonNeg
    percentile: NonNeg
    ttft_ms: NonNeg | None
    tpot_ms: NonNeg | None
    best_ttft_ms: NonNeg | None
    best_tpot_ms: NonNeg | None
    overloaded: bool
    meets_slo: bool
    decode_batch: NonNeg
    max_running_sequences: Count
    phase: str | None
    usd_per_hour: NonNeg | None
    """Every cluster GPU at the price in force (inputs.cluster.usd_per_gpu_hour); or null."""
    usd_per_million_output_tokens: NonNeg | None
    """usd_per_hour over the output tokens an hour carries at max_goodput_rps; null without
    a price or without goodput."""
    interference: Interference | None
    expert_parallel: NotRequired[Count]
    dp_attention: NotRequired[bool]
    all_to_all_share: NotRequired[Fraction]
    redundant_experts: NotRequired[Count]
    decode_batch_per_gpu: NotRequired[NonNeg]


class Allocation(TypedDict):
    """One integer prefill:decode split."""

    prefill_expert_parallel: NotRequired[Count]
    decode_expert_parallel: NotRequired[Count]
    prefill_dp_attention: NotRequired[bool]
    decode_dp_attention: NotRequired[bool]
    prefill_redundant_experts: NotRequired[Count]
    decode_redundant_experts: NotRequired[Count]
    prefill_tensor_parallel: Count
    decode_tensor_parallel: Count
    prefill_pipeline_stages: Count
    decode_pipeline_stages: Count
    prefill_instances: Count
    decode_instances: Count
    prefill_gpus: Count
    decode_gpus: Count
    idle_gpus: Count
    max_goodput_rps: NonNeg
    limited_by: str


class Disaggregated(TypedDict):
    """Prefill and decode pools with the best integer split (null fields without one)."""

    prefill_expert_parallel: NotRequired[Count]
    decode_expert_parallel: NotRequired[Count]
    prefill_dp_attention: NotRequired[bool]
    decode_dp_attention: NotRequired[bool]
    prefill_redundant_experts: NotRequired[Count]
    decode_redundant_experts: NotRequired[Count]
    prefill_tensor_parallel: Count | None
    decode_tensor_parallel: Count | None
    prefill_pipeline_stages: Count | None
    decode_pipeline_stages: Count | None
    prefill_instances: Count | None
    decode_instances: Count | None
    prefill_gpus: Count | None
    decode_gpus: Count | None
    idle_gpus: Count | None
    limited_by: str | None
    ideal_prefill_fraction: Fraction
    max_goodput_rps: NonNeg
    ideal_max_goodput_rps: NonNeg
    rounding_loss: NonNeg
    rate_rps: NonNeg
    output_tokens_per_s_per_gpu: NonNeg
    percentile: NonNeg
    ttft_ms: NonNeg | None
    tpot_ms: NonNeg | None
    best_ttft_ms: NonNeg | None
    best_tpot_ms: NonNeg | None
    overloaded: bool
    meets_slo: bool
    decode_batch: NonNeg
    decode_max_running_sequences: Count
    prefill_saturating_tokens: NonNeg
    prefill_rate_per_instance_rps: NonNeg
    decode_rate_per_instance_rps: NonNeg
    phase: str | None
    usd_per_hour: NonNeg | None
    usd_per_million_output_tokens: NonNeg | None
    alternatives: list[Allocation]
    prefill_all_to_all_share: NotRequired[Fraction]
    decode_all_to_all_share: NotRequired[Fraction]
    decode_batch_per_gpu: NotRequired[NonNeg | None]


class KvTransfer(TypedDict):
    """KV transfer of the split (descriptions: docs/model.md §6, the report schema's)."""

    link_id: str
    bytes_per_token: NonNeg
    bytes_per_request_mean: NonNeg
    bytes_per_request_p95: NonNeg
    demand_bytes_per_s: NonNeg
    offered_demand_bytes_per_s: NonNeg
    link_bytes_per_s: NonNeg
    utilization: NonNeg
    offered_utilization: NonNeg
    transfer_ms: NonNeg
    serialized_transfer_ms: NonNeg
    concurrent_transfers: NonNeg
    rate_rps: NonNeg
    at_carried_rate: bool
    backend: str
    timing: Literal["layer-wise", "per-chunk", "after-prefill"]
    request_path: Literal["sequential", "parallel"]
    second_hop_ms: NonNeg | None
    nics_per_node: NonNeg
    sender_nics: NonNeg
    receiver_nics: NonNeg


class SplitVariant(TypedDict):
    """One integer split under one mix: its goodput, the best split's, the loss between."""

    label: str
    prefill_gpus: Count
    decode_gpus: Count
    goodput_rps: NonNeg
    best_goodput_rps: NonNeg
    loss: NonNeg
    prompt_scale: NonNeg
    output_scale: NonNeg


class Fragility(TypedDict):
    """The chosen split under the drift band's corners and its neighbouring splits."""

    drift: NonNeg
    drift_loss: NonNeg
    drifted: list[SplitVariant]
    neighbours: list[SplitVariant]


class Phase(TypedDict):
    name: str
    share: Fraction
    rate_rps: NonNeg
    prompt_tokens_mean: NonNeg
    output_tokens_mean: NonNeg
    ideal_prefill_fraction: Fraction | None
    prefill_gpus: Count | None
    decode_gpus: Count | None
    rounding_loss: NonNeg | None
    colocated_max_goodput_rps: NonNeg | None
    unchunked_max_goodput_rps: NonNeg | None
    disaggregated_max_goodput_rps: NonNeg | None
    static_goodput_rps: NonNeg | None


class Precondition(TypedDict):
    id: PreconditionId
    question: str
    passed: bool
    """Whether it stands in disaggregation's way (false: it vetoes); where the rule does not
    apply (`status` n/a) true when a split exists."""
    measured: float | None
    """null where the rule does not apply."""
    threshold: float
    unit: str
    bound: Literal["max", "min"]
    explanation: str
    status: Literal["pass", "fail", "n/a"]
    overridden: bool
    """The recommendation set this failing precondition aside: it is the only plan that
    meets the SLOs (deciding_rule meets-slo)."""


class WarningEntry(TypedDict):
    id: str
    message: str


class Excluded(TypedDict):
    instance: str
    reason: str


class GpusNeeded(TypedDict):
    colocated: Count | None
    disaggregated: Count | None
    unchunked: Count | None


class Headroom(TypedDict):
    colocated: NonNeg
    disaggregated: NonNeg
    unchunked: NonNeg


class Boundary(TypedDict):
    """The nearest value of `key` (in `direction`) that flips the verdict (kind verdict) or
    leaves the TPOT SLO (kind slo); null: nothing in the searched range does."""

    key: str
    current: float | None
    flips_at: float | None
    direction: Literal["up", "down"]
    kind: Literal["verdict", "slo"]
    to: Verdict | None
    description: str


class Finding(TypedDict):
    id: str
    check: GateCheck
    key: str
    message: str


class Deployed(TypedDict):
    """The model's prediction for exactly the declared deployment (what `check` judges)."""

    mode: Literal["colocated", "disaggregated"]
    chunked_prefill: bool
    tensor_parallel: Count | None
    chunk_tokens: Count | None
    prefill_gpus: Count | None
    decode_gpus: Count | None
    prefill_tensor_parallel: Count | None
    decode_tensor_parallel: Count | None
    expert_parallel: NotRequired[Count | None]
    prefill_expert_parallel: NotRequired[Count | None]
    decode_expert_parallel: NotRequired[Count | None]
    max_goodput_rps: NonNeg | None
    rate_rps: NonNeg | None
    percentile: NonNeg
    ttft_ms: NonNeg | None
    tpot_ms: NonNeg | None
    overloaded: bool | None
    meets_slo: bool
    feasible: bool
    reason: str
    phase: str | None
    best_split_prefill_gpus: Count | None
    """Prefill GPUs of the split the deployment is measured against (the static split when
    pools are static across phases)."""
    usd_per_hour: NonNeg | None
    usd_per_million_output_tokens: NonNeg | None
    findings: list[Finding]


# --------------------------------------------------------------------------- the decision
class PhaseHeadroom(TypedDict):
    colocated: NonNeg
    unchunked: NonNeg
    disaggregated: NonNeg


class PhasePlans(TypedDict):
    """The three plans in one phase: every figure of one column from this phase."""

    name: str
    share: Fraction
    rate_rps: NonNeg
    headroom: PhaseHeadroom
    """Goodput / offered rate of each plan in this phase."""
    colocated: Colocated | None
    unchunked: Colocated | None
    disaggregated: Disaggregated | None
    """The split the verdict judges here (the static one when pools are static)."""
    best_split: Disaggregated | None
    """This phase's own best split when it differs from `disaggregated` (static pools)."""


class Sizing(TypedDict):
    """One plan against the offered rate: what it needs and what it has to spare."""

    plan: PlanKind
    exists: bool
    gpus: Count
    gpus_needed: Count | None
    """Fewest GPUs carrying every phase's rate within the SLOs; null: no count does."""
    headroom: NonNeg
    """Worst phase's goodput / offered rate (≥ 1 carries it)."""
    binding_phase: str
    meets_slo: bool
    over_provisioned: bool
    """Carries at least twice the offered rate."""


class SplitRow(Allocation):
    """A row of the P:D table: the phase's best split and runners-up in goodput order, and
    the static split kept for every phase (its goodput in this phase)."""

    role: Literal["best", "runner-up", "alternative", "static"]


class Gains(TypedDict):
    """Disaggregation's gains over the best colocated plan, chunked or not (null:
    undefined or unbounded)."""

    verdict: float | None
    per_phase_splits: float | None
    ideal: float | None


class Rounding(TypedDict):
    loss: NonNeg | None
    phase: str | None


class KnifeEdge(TypedDict):
    """A flip of the verdict within ±10 % of the GPU count or the rate."""

    key: Literal["cluster.gpus", "traffic.rate_rps"]
    current: float
    flips_at: float
    to: Verdict
    change: float
    """flips_at / current − 1."""


class Decision(TypedDict):
    """The one decision every format shows (#28)."""

    recommended: PlanKind
    architecture: Literal["colocated", "disaggregated"]
    rule_verdict: Verdict
    """What the preconditions and the gain alone decide (before the SLO policy)."""
    overridden: list[str]
    """What the SLO policy set aside: "gain" and/or precondition ids."""
    any_plan_meets: bool
    binding_phase: str
    baseline: Literal["colocated", "unchunked"]
    """The best colocated plan, chunked or not: the one the gains are measured against."""
    gains: Gains
    rounding: Rounding
    phases: list[PhasePlans]
    sizing: list[Sizing]
    split_phase: str
    splits: list[SplitRow]
    knife_edges: NotRequired[list[KnifeEdge]]  # only after a boundary search (not in check)


class Recommendation(TypedDict):
    """`pd-advisor recommend --format json`."""

    schema_version: Literal[1]
    kind: Literal["recommendation"]
    tool: Tool
    input: InputFile
    name: str | None
    verdict: Verdict
    slo_met: bool
    summary: str
    reasons: list[str]
    warnings: list[WarningEntry]
    measure_next: list[str]
    preconditions: list[Precondition]
    deciding_rule: DecidingRule
    headline_reason: str
    disagg_gain: float | None
    disagg_gain_unbounded: bool
    disagg_ideal_gain: float | None
    rounding_loss: NonNeg | None
    mix_loss: NonNeg
    fragility: Fragility | None
    inputs: Inputs
    calibration: Calibration | None
    policy: dict[str, float]
    colocated: Colocated | None
    unchunked: Colocated | None
    disaggregated: Disaggregated | None
    kv_transfer: KvTransfer | None
    phases: list[Phase]
    static_mix_loss: NonNeg
    static_allocation: Allocation | None
    excluded: list[Excluded]
    gpus_needed: GpusNeeded
    headroom: Headroom
    boundaries: NotRequired[list[Boundary]]
    deployed: NotRequired[Deployed]
    decision: Decision


# --------------------------------------------------------------------------- check runs
class LocatedFinding(Finding):
    line: Position
    col: Position
    path: NotRequired[str]
    """The file the position is in, when it is not the entry's (a Kubernetes manifest)."""


class LocatedWarning(TypedDict):
    id: str
    message: str
    key: str
    line: Position
    col: Position
    path: NotRequired[str]


class ManifestGap(TypedDict):
    what: str
    path: str
    line: Position
    col: Position
    message: str


class ManifestSource(TypedDict):
    """The Kubernetes manifests the deployment was read from, and their gaps."""

    paths: list[str]
    kind: str
    name: str
    gaps: list[ManifestGap]
    pools: list[dict[str, Any]]
    facts: dict[str, Any]


class Problem(TypedDict):
    path: str
    line: Position
    col: Position
    key: str
    message: str


class FileEntry(TypedDict):
    path: str
    status: Literal["pass", "fail", "error"]
    verdict: Verdict | None
    slo_met: bool | None
    findings: list[LocatedFinding]
    warnings: list[LocatedWarning]
    problems: list[Problem]
    report: Recommendation | None
    manifest: NotRequired[ManifestSource]
    cache: NotRequired[Literal["hit", "miss", "off"]]


class Counts(TypedDict):
    files: Count
    passed: Count
    failed: Count
    errors: Count


class CheckRun(TypedDict):
    """`pd-advisor check --format json`."""

    schema_version: Literal[1]
    kind: Literal["check"]
    tool: Tool
    status: Literal["pass", "fail", "error"]
    counts: Counts
    checks: list[GateCheck]
    files: list[FileEntry]


Document = Recommendation | CheckRun  # either JSON document, told apart by ``kind``
