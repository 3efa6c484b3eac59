"""Frozen result objects of the cost model (units in every field name)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from advisor.core.kv_transfer import KvTransfer
from advisor.core.scenario import Slo


class JudgedPlan(Protocol):
    """What :func:`meets_slo` reads of a plan."""

    @property
    def overloaded(self) -> bool: ...
    @property
    def ttft_ms(self) -> float | None: ...
    @property
    def tpot_ms(self) -> float | None: ...
    @property
    def max_goodput_rps(self) -> float: ...
    @property
    def rate_rps(self) -> float: ...


def meets_slo(plan: JudgedPlan, slo: Slo) -> bool:
    """The one rule for "meets the SLO" (model, rules and every report use it): the plan is
    not overloaded at its rate, carries that rate within the SLOs (goodput ≥ rate), and its
    TTFT and TPOT percentiles at the rate are within the targets that are set."""
    if plan.overloaded or plan.max_goodput_rps < plan.rate_rps:
        return False
    if slo.ttft_ms is not None and (plan.ttft_ms is None or plan.ttft_ms > slo.ttft_ms):
        return False
    return not (slo.tpot_ms is not None and (plan.tpot_ms is None or plan.tpot_ms > slo.tpot_ms))


@dataclass(frozen=True)
class ExcludedInstance:
    """An instance shape that cannot serve the workload, and why."""

    label: str
    reason: str


@dataclass(frozen=True, kw_only=True)
class Interference:
    """TPOT inflation when a prompt lands in a running decode batch (docs/model.md §5)."""

    prompt_tokens: float
    """The prompt length used (the workload's p95)."""
    decode_batch: float
    """Decode batch per instance at the workload's rate (at least 1)."""
    decode_step_ms: float
    unchunked_tpot_factor: float
    """(T_dec + T_prefill(prompt)) / T_dec: the gap a whole prompt inserts."""
    chunked_tpot_factor: float
    """T_mixed(chunk) / T_dec: the gap with the chosen token budget."""
    chunk_tokens: int
    chunked_safe_rate_rps: float | None
    """Rate (whole pool) up to which chunked prefill keeps the TPOT percentile in the SLO."""


@dataclass(frozen=True, kw_only=True)
class ColocatedPlan:
    """A colocated pool: identical instances, each running prefill and decode."""

    tensor_parallel: int
    pipeline_stages: int
    instances: int
    gpus: int
    chunked: bool
    chunk_tokens: int | None
    max_goodput_rps: float
    """Largest total rate meeting the SLOs (raw capacity when there is no SLO)."""
    capacity_rps: float
    """Largest total rate before overload, ignoring SLOs."""
    rate_rps: float
    percentile: float
    ttft_ms: float | None
    tpot_ms: float | None
    overloaded: bool
    decode_batch: float
    output_tokens_per_s_per_gpu: float
    """At ``max_goodput_rps``."""
    interference: Interference | None = None
    best_ttft_ms: float | None = None
    """The TTFT percentile at light load: the floor no rate can beat."""
    best_tpot_ms: float | None = None
    """The TPOT percentile at light load."""
    max_running_sequences: int = 0
    """Sequences one instance runs at its goodput (the engine's running-sequence cap to set)."""
    expert_parallel: int = 1
    """EP degree of each instance (1: experts sharded with TP, or a dense model)."""
    dp_attention: bool = False
    """Attention data-parallel across the EP group (KV not replicated across ranks)."""
    all_to_all_share: float = 0.0
    """Share of a decode step at the plan's batch that is EP dispatch + combine."""
    redundant_experts: int = 0
    """Redundant expert copies per EP group (the balancer's; 0 without EP)."""

    def meets(self, slo: Slo) -> bool:
        """Whether the plan meets ``slo`` at its rate (:func:`meets_slo`)."""
        return meets_slo(self, slo)


@dataclass(frozen=True, kw_only=True)
class AllocationSummary:
    """One integer P:D split."""

    prefill_tensor_parallel: int
    decode_tensor_parallel: int
    prefill_pipeline_stages: int
    decode_pipeline_stages: int
    prefill_instances: int
    decode_instances: int
    prefill_gpus: int
    decode_gpus: int
    idle_gpus: int
    max_goodput_rps: float
    limited_by: str
    prefill_expert_parallel: int = 1
    decode_expert_parallel: int = 1
    prefill_dp_attention: bool = False
    decode_dp_attention: bool = False
    prefill_redundant_experts: int = 0
    decode_redundant_experts: int = 0


@dataclass(frozen=True, kw_only=True)
class DisaggregatedPlan:
    """Prefill and decode pools with the best integer split."""

    allocation: AllocationSummary | None
    ideal_prefill_fraction: float
    ideal_max_goodput_rps: float
    max_goodput_rps: float
    rounding_loss: float
    rate_rps: float
    percentile: float
    ttft_ms: float | None
    tpot_ms: float | None
    overloaded: bool
    output_tokens_per_s_per_gpu: float
    prefill_rate_per_instance_rps: float
    decode_rate_per_instance_rps: float
    prefill_saturating_tokens: float
    decode_batch: float
    alternatives: tuple[AllocationSummary, ...]
    kv_transfer: KvTransfer | None
    best_ttft_ms: float | None = None
    """The TTFT percentile at light load (prefill alone, transfer included)."""
    best_tpot_ms: float | None = None
    """The decode step of a batch of one."""
    decode_max_running_sequences: int = 0
    """Largest batch a decode instance may run within memory and the TPOT SLO."""
    prefill_all_to_all_share: float = 0.0
    """Share of a p95-prompt prefill that is EP dispatch + combine (0 without EP)."""
    decode_all_to_all_share: float = 0.0
    """Share of a decode step at the plan's batch that is EP dispatch + combine."""

    def meets(self, slo: Slo) -> bool:
        """Whether the plan meets ``slo`` at its rate (:func:`meets_slo`)."""
        return meets_slo(self, slo)


@dataclass(frozen=True, kw_only=True)
class PhaseResult:
    """Everything evaluated for one traffic phase."""

    name: str
    share: float
    rate_rps: float
    prompt_tokens_mean: float
    output_tokens_mean: float
    colocated: ColocatedPlan | None
    unchunked: ColocatedPlan | None
    disaggregated: DisaggregatedPlan | None
    static_goodput_rps: float | None = None
    """Goodput of the best static (all-phase) allocation in this phase."""
    static: DisaggregatedPlan | None = None
    """The static (all-phase) split in this phase, when pools are static across several
    phases: the plan the verdict judges (``disaggregated`` is this phase's own best split)."""


@dataclass(frozen=True, kw_only=True)
class DeployedPrediction:
    """The model's prediction for exactly the declared deployment (worst phase)."""

    mode: str
    tensor_parallel: int | None
    chunk_tokens: int | None
    prefill_gpus: int | None
    decode_gpus: int | None
    max_goodput_rps: float
    rate_rps: float
    percentile: float
    ttft_ms: float | None
    tpot_ms: float | None
    overloaded: bool
    meets_slo: bool
    phase: str
    best_split_prefill_gpus: int | None = None
    feasible: bool = True
    reason: str = ""


@dataclass(frozen=True, kw_only=True)
class SplitVariant:
    """Goodput of one integer split under one traffic mix."""

    label: str
    """E.g. 'chosen, prompts +25% / outputs −25%' or 'one prefill instance fewer'."""
    prefill_gpus: int
    decode_gpus: int
    goodput_rps: float
    """Goodput of this split under this mix, req/s."""
    best_goodput_rps: float
    """Goodput of the best split of the same GPUs under the same mix, req/s."""
    prompt_scale: float = 1.0
    output_scale: float = 1.0

    @property
    def loss(self) -> float:
        """1 − goodput / best (0 when the best carries nothing)."""
        if self.best_goodput_rps <= 0:
            return 0.0
        return max(0.0, 1.0 - self.goodput_rps / self.best_goodput_rps)


@dataclass(frozen=True)
class Fragility:
    """The chosen P:D split under a drifting mix and its neighbouring splits (#14)."""

    drift: float
    """The drift band, a fraction of the mean prompt and output lengths."""
    drifted: tuple[SplitVariant, ...]
    """The chosen split at each corner of the band (prompts and outputs scaled)."""
    neighbours: tuple[SplitVariant, ...]
    """One prefill instance fewer / more (decode filling the rest), at the nominal mix."""

    @property
    def drift_loss(self) -> float:
        """Worst loss of the chosen split across the band against re-splitting."""
        return max((v.loss for v in self.drifted), default=0.0)


@dataclass(frozen=True, kw_only=True)
class ModelResult:
    """The cost model's full output for one scenario."""

    phases: tuple[PhaseResult, ...]
    colocated: ColocatedPlan | None
    unchunked: ColocatedPlan | None
    disaggregated: DisaggregatedPlan | None
    colocated_phase: str
    disaggregated_phase: str
    static_mix_loss: float
    static_allocation: AllocationSummary | None
    excluded: tuple[ExcludedInstance, ...]
    colocated_gpus_needed: int | None
    disaggregated_gpus_needed: int | None
    colocated_headroom: float
    """min over phases of goodput / rate for the colocated plan (≥ 1 meets the rate)."""
    disaggregated_headroom: float
    unchunked_gpus_needed: int | None = None
    unchunked_headroom: float = 0.0
    """min over phases of goodput / rate for the unchunked colocated plan."""
    deployed: DeployedPrediction | None = None
    disaggregated_best_headroom: float = 0.0
    """min over phases of each phase's best integer split's goodput / rate (per-phase
    re-allocation; equals ``disaggregated_headroom`` unless a static split is kept)."""
    disaggregated_ideal_headroom: float = 0.0
    """min over phases of the ideal (fractional) split's goodput / rate: what whole
    instances would carry without rounding (the ``gpu-scale`` comparison, #14)."""
    tpot_floor_ms: float | None = None
    """The fastest decode step of any instance shape at batch 1 (the TPOT no plan can beat;
    None without shapes)."""
    tpot_floor_shape: str = ""
    ttft_floor_ms: float | None = None
    """The fastest prefill of the SLO-percentile prompt on any shape, alone (no queueing,
    no transfer): the TTFT no plan can beat."""
    ttft_floor_shape: str = ""
    fragility: Fragility | None = None
    """How the chosen split fares when the mix drifts, and its neighbours (#14)."""
    smallest_instance_gpus: int | None = None
    """GPUs of the smallest instance shape that fits the model (None: none fits)."""
