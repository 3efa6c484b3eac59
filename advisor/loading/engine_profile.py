"""Engine profiles (``profiles/engines/<id>.yaml``): one serving engine at one version family.

Every number is a ``{value, kind, source}`` mapping like the GPU and interconnect profiles;
the launch-default table and the feature list carry one ``source``/``kind`` for their block.
Unknown keys are errors. ``to_spec()`` returns the frozen :class:`~advisor.core.engine.EngineSpec`
the core reads. The version family is a specifier such as ``">=0.4,<0.8"``
(:func:`parse_versions`); :func:`version_key` turns a release string (``0.5.1.post1``,
``1.0.0rc3``) into the comparable tuple of its leading numbers.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Annotated, Literal

from pydantic import Field, StrictBool, field_validator, model_validator

from advisor.core.engine import GIB, EngineSpec, EngineSupport, TokenBudgetTier
from advisor.core.expert_parallel import ExpertParallelTerms
from advisor.core.kv_transfer import KvTransferTerms, RequestPath, TransferTiming
from advisor.core.speculative import SpeculativeMethod
from advisor.loading.profile_schema import (
    NonEmptyStr,
    PositiveInt,
    ProfileId,
    SourcedCount,
    SourcedFraction,
    SourcedNonNegative,
    SourcedNumber,
    SourcedPositive,
    StrictModel,
    ValueKind,
    walk_sourced,
)

EngineName = Literal["vllm", "sglang", "trtllm"]

_VERSION_RE = re.compile(r"^\s*v?(\d+(?:\.\d+)*)")
_CLAUSE_RE = re.compile(r"^\s*(>=|<)\s*v?(\d+(?:\.\d+)*)\s*$")


def version_key(version: str) -> tuple[int, ...] | None:
    """The leading numeric components of a release string (``0.5.1.post1`` → (0, 5, 1)),
    trailing zeros dropped so that ``0.10`` == ``0.10.0``; None if it starts with no number."""
    match = _VERSION_RE.match(version)
    if match is None:
        return None
    parts = [int(p) for p in match.group(1).split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def parse_versions(spec: str) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None]:
    """(lowest included, first excluded) of a ``">=A,<B"`` specifier (either part optional)."""
    low: tuple[int, ...] | None = None
    below: tuple[int, ...] | None = None
    for clause in spec.split(","):
        match = _CLAUSE_RE.match(clause)
        if match is None:
            raise ValueError(f"cannot read version clause {clause.strip()!r}; write e.g. "
                             "\">=0.4,<0.8\" (clauses >= and <, comma-separated)")
        key = version_key(match.group(2))
        if match.group(1) == ">=":
            low = key
        else:
            below = key
    if low is not None and below is not None and low >= below:
        raise ValueError(f"empty version range {spec!r}")
    return low, below


def covers(spec: str, version: str) -> bool:
    """Whether a release string falls in the family's version range."""
    key = version_key(version)
    if key is None:
        return False
    low, below = parse_versions(spec)
    return (low is None or key >= low) and (below is None or key < below)


class EfficiencyOverrides(StrictModel):
    """Engine-fitted efficiency factors that replace the GPU profile's (any subset)."""

    weight_bandwidth_efficiency: SourcedFraction | None = None
    kv_bandwidth_efficiency: SourcedFraction | None = None
    prefill_compute_efficiency_bf16: SourcedFraction | None = None
    prefill_compute_efficiency_fp8: SourcedFraction | None = None
    attention_compute_efficiency: SourcedFraction | None = None
    block_fp8_compute_efficiency: SourcedFraction | None = None


class Collectives(StrictModel):
    """Software cost of one TP all-reduce on top of the link latency."""

    allreduce_overhead_s: SourcedNonNegative
    allreduce_overhead_per_doubling_s: SourcedNonNegative


class MoeCosts(StrictModel):
    """Mixture-of-experts terms."""

    layer_overhead_s: SourcedNonNegative
    lowbit_efficiency: SourcedFraction


class ExpertParallelCosts(StrictModel):
    """Expert-parallel terms (docs/model.md §3.4): load imbalance with and without the
    balancer, all-to-all efficiency, redundant experts, library buffers, overlap."""

    imbalance_with_balancer: SourcedPositive
    imbalance_without_balancer: SourcedPositive
    all_to_all_efficiency: SourcedFraction
    redundant_experts: SourcedNonNegative
    comm_buffer_bytes: SourcedNonNegative
    comm_sm_fraction: SourcedFraction
    two_batch_overlap: SourcedNonNegative
    """1: plans run two micro-batches that hide the all-to-all; 0: they do not."""


class BudgetTier(StrictModel):
    """One launch-default tier: GPUs with at least ``min_memory_gib`` (and no ``exclude``
    substring in their id or name)."""

    min_memory_gib: Annotated[float, Field(ge=0)]
    tokens: PositiveInt
    max_num_seqs: PositiveInt
    exclude: str = ""


class LaunchDefaults(StrictModel):
    """The token budget and running-sequence cap the engine picks when not told."""

    source: NonEmptyStr
    kind: ValueKind
    tiers: list[BudgetTier] = Field(default_factory=list)
    fallback_tokens: PositiveInt
    fallback_max_num_seqs: PositiveInt


class MemoryTerms(StrictModel):
    """Runtime memory held back per GPU."""

    runtime_reserve_bytes: SourcedNonNegative
    logits_bytes_per_entry: SourcedNonNegative


class Supports(StrictModel):
    """What the engine family supports."""

    source: NonEmptyStr
    kind: ValueKind
    pd_transfer_backends: list[NonEmptyStr] = Field(default_factory=list)
    different_tp_across_pools: StrictBool
    expert_parallel: StrictBool
    dp_attention: StrictBool
    speculative_methods: list[SpeculativeMethod] = Field(default_factory=list)
    """Speculative-decoding methods the family runs (docs/model.md §3.6)."""


class PipelineParallel(StrictModel):
    """How a pipeline-parallel instance schedules (docs/model.md §3)."""

    microbatching: SourcedNumber
    """1: one micro-batch per stage in flight (throughput credit); 0: one batch crosses the
    stages at a time."""

    @field_validator("microbatching")
    @classmethod
    def _zero_or_one(cls, value: SourcedNumber) -> SourcedNumber:
        if value.value not in (0.0, 1.0):
            raise ValueError("microbatching must be 1 (micro-batches in flight) or 0 (one "
                             "batch at a time)")
        return value


class KvTransferPath(StrictModel):
    """How the engine's P/D path moves a request (docs/model.md §6)."""

    source: NonEmptyStr
    kind: ValueKind
    backend: NonEmptyStr
    """The transfer backend plans assume (one of ``supports.pd_transfer_backends``)."""
    timing: dict[NonEmptyStr, TransferTiming]
    """When each backend moves the KV: ``layer-wise``, ``per-chunk`` or ``after-prefill``."""
    request_path: RequestPath
    """``sequential``: the router sends the request to the decode instance once the prefill
    answered; ``parallel``: to both at once."""


class EngineProfile(StrictModel):
    """An engine profile file (``profiles/engines/<id>.yaml``)."""

    id: ProfileId
    engine: EngineName
    name: NonEmptyStr
    versions: NonEmptyStr
    """Release range of the family, e.g. ``">=0.4,<0.8"``."""
    step_overhead_s: SourcedNonNegative
    request_overhead_s: SourcedNonNegative
    compute_memory_overlap: SourcedNumber | None = None
    """The overlap of compute and memory time at a kernel class's ridge point, in [0, 1]
    (docs/model.md §3): 1 = max(compute, memory) at every ratio, 0 = their sum. Omitted: 1."""
    efficiency: EfficiencyOverrides = Field(default_factory=EfficiencyOverrides)
    collectives: Collectives | None = None
    moe: MoeCosts | None = None
    expert_parallel: ExpertParallelCosts | None = None
    launch_defaults: LaunchDefaults
    cuda_graph_max_batch: SourcedCount | None = None
    memory: MemoryTerms
    supports: Supports
    pipeline_parallel: PipelineParallel | None = None
    """Omitted: no micro-batching credit."""
    kv_transfer: KvTransferPath | None = None
    """Omitted: the KV after the prefill, a sequential router (the conservative side)."""

    @field_validator("compute_memory_overlap")
    @classmethod
    def _overlap(cls, value: SourcedNumber | None) -> SourcedNumber | None:
        if value is not None and not 0.0 <= value.value <= 1.0:
            raise ValueError("compute_memory_overlap must be within [0, 1] (0: compute + "
                             "memory at the ridge point, 1: the max of the two)")
        return value

    @field_validator("versions")
    @classmethod
    def _versions(cls, value: str) -> str:
        parse_versions(value)
        return value

    @model_validator(mode="after")
    def _kv_transfer_backends(self) -> EngineProfile:
        backends = list(self.supports.pd_transfer_backends)
        kv = self.kv_transfer
        if kv is None:
            return self
        if kv.backend not in backends:
            raise ValueError(f"kv_transfer.backend '{kv.backend}' is not one of "
                             f"supports.pd_transfer_backends {backends}")
        missing = [b for b in backends if b not in kv.timing]
        extra = [b for b in kv.timing if b not in backends]
        if missing or extra:
            raise ValueError("kv_transfer.timing must name every backend of "
                             f"supports.pd_transfer_backends once (missing {missing}, "
                             f"not listed there {extra})")
        return self

    @model_validator(mode="after")
    def _engine_default_id(self) -> EngineProfile:
        if self.id in ("vllm", "sglang", "trtllm") and self.id != self.engine:
            raise ValueError(f"the profile id '{self.id}' names another engine than "
                             f"engine: {self.engine}")
        return self

    def to_spec(self) -> EngineSpec:
        """The frozen :class:`EngineSpec` the core uses."""
        eff = self.efficiency

        def opt(number: SourcedNumber | None) -> float | None:
            return None if number is None else number.value

        tiers = tuple(TokenBudgetTier(min_memory_bytes=t.min_memory_gib * GIB, tokens=t.tokens,
                                      max_num_seqs=t.max_num_seqs, exclude=t.exclude)
                      for t in self.launch_defaults.tiers)
        return EngineSpec(
            id=self.id, name=self.engine, title=self.name,
            versions=self.versions,
            step_overhead_s=self.step_overhead_s.value,
            request_overhead_s=self.request_overhead_s.value,
            weight_bandwidth_efficiency=opt(eff.weight_bandwidth_efficiency),
            kv_bandwidth_efficiency=opt(eff.kv_bandwidth_efficiency),
            prefill_compute_efficiency_bf16=opt(eff.prefill_compute_efficiency_bf16),
            prefill_compute_efficiency_fp8=opt(eff.prefill_compute_efficiency_fp8),
            attention_compute_efficiency=opt(eff.attention_compute_efficiency),
            block_fp8_compute_efficiency=opt(eff.block_fp8_compute_efficiency) or 1.0,
            compute_memory_overlap=(1.0 if self.compute_memory_overlap is None
                                    else self.compute_memory_overlap.value),
            allreduce_overhead_s=(self.collectives.allreduce_overhead_s.value
                                  if self.collectives else 0.0),
            allreduce_overhead_per_doubling_s=(
                self.collectives.allreduce_overhead_per_doubling_s.value
                if self.collectives else 0.0),
            moe_layer_overhead_s=self.moe.layer_overhead_s.value if self.moe else 0.0,
            lowbit_moe_efficiency=self.moe.lowbit_efficiency.value if self.moe else 1.0,
            token_budget_tiers=tiers,
            default_token_budget_tokens=self.launch_defaults.fallback_tokens,
            default_max_num_seqs=self.launch_defaults.fallback_max_num_seqs,
            runtime_reserve_bytes=self.memory.runtime_reserve_bytes.value,
            logits_bytes_per_entry=self.memory.logits_bytes_per_entry.value,
            cuda_graph_max_batch=(self.cuda_graph_max_batch.value
                                  if self.cuda_graph_max_batch else 0),
            supports=EngineSupport(
                pd_transfer_backends=tuple(self.supports.pd_transfer_backends),
                different_tp_across_pools=self.supports.different_tp_across_pools,
                expert_parallel=self.supports.expert_parallel,
                dp_attention=self.supports.dp_attention,
                speculative_methods=tuple(self.supports.speculative_methods)),
            expert_parallel=self._ep_terms(),
            pipeline_microbatching=(self.pipeline_parallel is not None
                                    and self.pipeline_parallel.microbatching.value == 1.0),
            kv_transfer=(KvTransferTerms() if self.kv_transfer is None else KvTransferTerms(
                backend=self.kv_transfer.backend,
                timing=self.kv_transfer.timing[self.kv_transfer.backend],
                request_path=self.kv_transfer.request_path)),
        )

    def _ep_terms(self) -> ExpertParallelTerms | None:
        ep = self.expert_parallel
        if ep is None:
            return None
        return ExpertParallelTerms(
            imbalance_with_balancer=ep.imbalance_with_balancer.value,
            imbalance_without_balancer=ep.imbalance_without_balancer.value,
            all_to_all_efficiency=ep.all_to_all_efficiency.value,
            redundant_experts=int(ep.redundant_experts.value),
            comm_buffer_bytes=ep.comm_buffer_bytes.value,
            comm_sm_fraction=ep.comm_sm_fraction.value,
            two_batch_overlap=bool(ep.two_batch_overlap.value))

    def sourced_items(self) -> Iterator[tuple[str, SourcedNumber | SourcedCount]]:
        """Every sourced number as ``(dotted key, number)``, in file order."""
        yield from walk_sourced(self, "")


__all__ = ["EngineName", "EngineProfile", "SourcedPositive", "covers", "parse_versions",
           "version_key"]
