"""Pydantic models of the three profile kinds (GPU, interconnect, model) and their conversion
to the plain core objects (:class:`GpuSpec`, :class:`LinkSpec`, :class:`ModelSpec`).

Every hardware number in a profile is a ``{value, kind, source}`` mapping
(:class:`SourcedNumber`): ``kind`` is one of ``datasheet | empirical | derived | estimate``
and ``source`` says where the number comes from. A model's ``architecture`` block carries one
``source``/``kind`` for all of its fields, since they all come from one ``config.json``.
Unknown keys are rejected everywhere (``extra="forbid"``). The validated objects keep the
provenance so that ``pd-advisor profiles show`` can display it; ``to_spec()`` drops it and
returns the numbers the core needs. File I/O lives in :mod:`advisor.loading.catalog`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator, model_validator

from advisor.core.hardware import EfficiencyFactors, GpuSpec, LinkSpec
from advisor.core.limits import (
    EFFICIENCY_RANGE,
    GPU_FLOPS_RANGE,
    GPU_MEMORY_BANDWIDTH_RANGE,
    GPU_MEMORY_BYTES_RANGE,
    LINK_BANDWIDTH_RANGE,
    MAX_GPUS,
    MAX_MODEL_LAYERS,
    MAX_NICS_PER_UNIT,
    MAX_OVERHEAD_S,
)
from advisor.core.model_arch import MlaSpec, ModelSpec, MoeSpec
from advisor.core.precision import GroupFormats

ValueKind = Literal["datasheet", "empirical", "derived", "estimate"]
"""How a number was obtained: vendor datasheet/config, measurement, arithmetic, or estimate."""

EngineName = Literal["vllm", "sglang", "trtllm"]
ProfileKind = Literal["gpus", "interconnects", "models", "engines"]

ProfileId = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9._-]*$", max_length=64)]
"""Lower-case id: letters, digits, '.', '_' and '-' (the file name without .yaml)."""

PositiveInt = Annotated[int, Field(strict=True, gt=0)]
NonNegativeInt = Annotated[int, Field(strict=True, ge=0)]
NonEmptyStr = Annotated[str, Field(min_length=1)]


class StrictModel(BaseModel):
    """Base: unknown keys are errors, instances are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


_Strict = StrictModel


def _as_float(value: Any) -> Any:
    """Accept ints, floats and numeric strings (PyYAML reads ``1e12`` as a string); no bools."""
    if isinstance(value, bool):
        raise ValueError("expected a number, got a boolean")
    if isinstance(value, str):
        try:
            return float(value.replace("_", ""))
        except ValueError:
            raise ValueError(f"expected a number, got {value!r}") from None
    return value


class SourcedNumber(_Strict):
    """One number with its provenance."""

    value: float
    kind: ValueKind
    source: NonEmptyStr

    @field_validator("value", mode="before")
    @classmethod
    def _number(cls, value: Any) -> Any:
        return _as_float(value)

    @field_validator("value")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value

    @field_validator("source")
    @classmethod
    def _source_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("source must not be blank")
        return value


class SourcedPositive(SourcedNumber):
    """A sourced number that must be > 0 (peaks, bytes, bandwidths)."""

    value: Annotated[float, Field(gt=0)]


class SourcedNonNegative(SourcedNumber):
    """A sourced number that must be >= 0 (latencies, fixed overheads in seconds)."""

    value: Annotated[float, Field(ge=0)]


class SourcedFlops(SourcedNumber):
    """A tensor peak within :data:`~advisor.core.limits.GPU_FLOPS_RANGE` (FLOP/s)."""

    value: Annotated[float, Field(ge=GPU_FLOPS_RANGE[0], le=GPU_FLOPS_RANGE[1])]


class SourcedMemoryBytes(SourcedNumber):
    """GPU memory within :data:`~advisor.core.limits.GPU_MEMORY_BYTES_RANGE` (bytes)."""

    value: Annotated[float, Field(ge=GPU_MEMORY_BYTES_RANGE[0], le=GPU_MEMORY_BYTES_RANGE[1])]


class SourcedMemoryBandwidth(SourcedNumber):
    """GPU memory bandwidth within :data:`~advisor.core.limits.GPU_MEMORY_BANDWIDTH_RANGE`."""

    value: Annotated[float, Field(ge=GPU_MEMORY_BANDWIDTH_RANGE[0],
                                  le=GPU_MEMORY_BANDWIDTH_RANGE[1])]


class SourcedLinkBandwidth(SourcedNumber):
    """A link bandwidth within :data:`~advisor.core.limits.LINK_BANDWIDTH_RANGE` (bytes/s)."""

    value: Annotated[float, Field(ge=LINK_BANDWIDTH_RANGE[0], le=LINK_BANDWIDTH_RANGE[1])]


class SourcedOverhead(SourcedNumber):
    """A latency or overhead in seconds, from 0 to :data:`~advisor.core.limits.MAX_OVERHEAD_S`."""

    value: Annotated[float, Field(ge=0, le=MAX_OVERHEAD_S)]


class SourcedFraction(SourcedNumber):
    """A sourced efficiency factor within :data:`~advisor.core.limits.EFFICIENCY_RANGE`
    (1 % to 100 % of the peak)."""

    value: Annotated[float, Field(ge=EFFICIENCY_RANGE[0], le=EFFICIENCY_RANGE[1])]


class SourcedOptionalPositive(SourcedNumber):
    """A sourced number that may be ``null`` (FP8 peak on GPUs without FP8 tensor cores)."""

    # Ignored below: narrows the parent's `float` field to `float | None` on purpose (FP8 peak may
    # be null).
    value: Annotated[float, Field(ge=GPU_FLOPS_RANGE[0],  # type: ignore[assignment]
                                  le=GPU_FLOPS_RANGE[1])] | None

    @field_validator("value", mode="before")
    @classmethod
    def _number(cls, value: Any) -> Any:
        return None if value is None else _as_float(value)

    @field_validator("value")
    @classmethod
    # Ignored below: the parent's validator takes a float; this one also accepts the null the field
    # allows.
    def _finite(cls, value: float | None) -> float | None:  # type: ignore[override]
        if value is not None and not math.isfinite(value):
            raise ValueError("must be a finite number or null")
        return value


class SourcedPrice(SourcedPositive):
    """A public reference price with the date it was listed (ISO ``YYYY-MM`` or
    ``YYYY-MM-DD``); always an estimate of what a deployment pays."""

    as_of: Annotated[str, Field(pattern=r"^[0-9]{4}-[0-9]{2}(-[0-9]{2})?$")]

    @field_validator("kind")
    @classmethod
    def _estimate(cls, value: str) -> str:
        if value != "estimate":
            raise ValueError("a price is what one provider listed at one date: kind must be "
                             "'estimate'")
        return value


class SourcedCount(_Strict):
    """A sourced whole number from 1 to :data:`~advisor.core.limits.MAX_GPUS` (GPUs per
    node, an engine's CUDA-graph batch limit; 2**63 GPUs per node overflowed, found by
    fuzzing, #21)."""

    value: Annotated[int, Field(strict=True, gt=0, le=MAX_GPUS)]
    kind: ValueKind
    source: NonEmptyStr


# ---- GPUs -------------------------------------------------------------------------------
class EfficiencyBlock(_Strict):
    """Empirical factors that turn datasheet peaks into achieved rates (kept apart from them)."""

    prefill_compute_efficiency_bf16: SourcedFraction
    prefill_compute_efficiency_fp8: SourcedFraction
    decode_bandwidth_efficiency: SourcedFraction
    step_overhead_s: SourcedOverhead
    request_overhead_s: SourcedOverhead | None = None
    kv_bandwidth_efficiency: SourcedFraction | None = None
    """KV-read efficiency of the attention kernels (default: ``decode_bandwidth_efficiency``)."""
    attention_compute_efficiency: SourcedFraction | None = None
    """Attention FLOP/s over the dense peak of the attention's format (FP8 with an FP8 KV cache
    on FP8 tensor cores, else 16 bit); default: the prefill efficiency of that format."""

    def to_factors(self) -> EfficiencyFactors:
        """The plain-number factors the core uses."""
        return EfficiencyFactors(
            prefill_compute_efficiency_bf16=self.prefill_compute_efficiency_bf16.value,
            prefill_compute_efficiency_fp8=self.prefill_compute_efficiency_fp8.value,
            decode_bandwidth_efficiency=self.decode_bandwidth_efficiency.value,
            step_overhead_s=self.step_overhead_s.value,
            request_overhead_s=(self.request_overhead_s.value
                                if self.request_overhead_s is not None else 0.0),
            kv_bandwidth_efficiency=(self.kv_bandwidth_efficiency.value
                                     if self.kv_bandwidth_efficiency is not None else None),
            attention_compute_efficiency=(
                self.attention_compute_efficiency.value
                if self.attention_compute_efficiency is not None else None),
        )


class EngineEfficiencyBlock(_Strict):
    """Per-engine overrides: any subset of the :class:`EfficiencyBlock` keys."""

    prefill_compute_efficiency_bf16: SourcedFraction | None = None
    prefill_compute_efficiency_fp8: SourcedFraction | None = None
    decode_bandwidth_efficiency: SourcedFraction | None = None
    step_overhead_s: SourcedOverhead | None = None
    request_overhead_s: SourcedOverhead | None = None
    kv_bandwidth_efficiency: SourcedFraction | None = None
    attention_compute_efficiency: SourcedFraction | None = None

    def merged_with(self, base: EfficiencyBlock) -> EfficiencyBlock:
        """The GPU default block with this engine's keys replaced."""
        overrides = {k: v for k, v in self if v is not None}
        return base.model_copy(update=overrides)


class GpuProfile(_Strict):
    """A GPU profile file (``profiles/gpus/<id>.yaml``)."""

    id: ProfileId
    name: NonEmptyStr
    vendor: str | None = None
    bf16_flops_per_s: SourcedFlops
    """Dense (not sparse) BF16/FP16 tensor peak."""
    fp8_flops_per_s: SourcedOptionalPositive
    """Dense FP8 tensor peak, ``null`` where there are no FP8 tensor cores."""
    fp4_flops_per_s: SourcedOptionalPositive | None = None
    """Dense FP4 tensor peak (Blackwell); absent or ``null`` where there are no FP4 tensor
    cores."""
    memory_bytes: SourcedMemoryBytes
    memory_bandwidth_bytes_per_s: SourcedMemoryBandwidth
    gpus_per_node: SourcedCount
    """GPUs sharing the ``intra_node`` (scale-up) link domain."""
    intra_node: ProfileId
    """Interconnect id of the GPU-to-GPU link inside a node."""
    host_link: ProfileId
    """Interconnect id of the GPU-to-host link."""
    tdp_watts: SourcedPositive | None = None
    price_per_gpu_hour_usd: SourcedPrice | None = None
    """Public on-demand reference price of one GPU-hour (``kind: estimate``, source, ``as_of``)."""
    efficiency: EfficiencyBlock
    engines: dict[EngineName, EngineEfficiencyBlock] = Field(default_factory=dict)

    def to_spec(self) -> GpuSpec:
        """The plain :class:`GpuSpec` the core uses (per-engine overrides merged)."""
        return GpuSpec(
            id=self.id,
            name=self.name,
            bf16_flops_per_s=self.bf16_flops_per_s.value,
            fp8_flops_per_s=self.fp8_flops_per_s.value,
            memory_bytes=self.memory_bytes.value,
            memory_bandwidth_bytes_per_s=self.memory_bandwidth_bytes_per_s.value,
            gpus_per_node=self.gpus_per_node.value,
            intra_node_link_id=self.intra_node,
            efficiency=self.efficiency.to_factors(),
            engine_efficiency={engine: block.merged_with(self.efficiency).to_factors()
                               for engine, block in self.engines.items()},
            fp4_flops_per_s=None if self.fp4_flops_per_s is None else self.fp4_flops_per_s.value,
            price_per_gpu_hour_usd=(None if self.price_per_gpu_hour_usd is None
                                    else self.price_per_gpu_hour_usd.value),
        )

    def sourced_items(self) -> Iterator[tuple[str, SourcedNumber | SourcedCount]]:
        """Every sourced number as ``(dotted key, number)``, in file order."""
        yield from _walk_sourced(self, "")


# ---- interconnects ------------------------------------------------------------------------
class NicLayout(_Strict):
    """How many NICs (ports of the profile's bandwidth each) the usual build has: per GPU
    (rail-optimised RDMA fabrics) or per node (Ethernet)."""

    per: Literal["gpu", "node"]
    count: Annotated[int, Field(strict=True, gt=0, le=MAX_NICS_PER_UNIT)]
    kind: ValueKind
    source: NonEmptyStr


class LinkProfile(_Strict):
    """An interconnect profile file (``profiles/interconnects/<id>.yaml``).

    Bandwidth is per direction and per NIC (per GPU for a scale-up link); ``nics`` says how
    many NICs a node has (default: one per GPU).
    """

    id: ProfileId
    name: NonEmptyStr
    scope: Literal["scale-up", "scale-out", "host"]
    bandwidth_bytes_per_s: SourcedLinkBandwidth
    latency_s: SourcedOverhead
    efficiency: SourcedFraction
    transfer_setup_s: SourcedNonNegative | None = None
    nics: NicLayout | None = None

    def to_spec(self) -> LinkSpec:
        """The plain :class:`LinkSpec` the core uses."""
        extra: dict[str, Any] = ({} if self.transfer_setup_s is None
                                 else {"transfer_setup_s": self.transfer_setup_s.value})
        if self.nics is not None:
            extra.update(nic_count=self.nics.count, nic_unit=self.nics.per)
        return LinkSpec(
            id=self.id,
            name=self.name,
            scope=self.scope,
            bandwidth_bytes_per_s=self.bandwidth_bytes_per_s.value,
            latency_s=self.latency_s.value,
            efficiency=self.efficiency.value,
            **extra,
        )

    def sourced_items(self) -> Iterator[tuple[str, SourcedNumber | SourcedCount]]:
        """Every sourced number as ``(dotted key, number)``, in file order."""
        yield from _walk_sourced(self, "")


# ---- models ------------------------------------------------------------------------------
class MoeBlock(_Strict):
    """Mixture-of-experts fields (``architecture.moe``)."""

    num_experts: PositiveInt
    experts_per_token: PositiveInt
    moe_intermediate_size: PositiveInt
    shared_experts: NonNegativeInt = 0
    first_dense_layers: NonNegativeInt = 0
    expert_bias: StrictBool = False
    router_bias: StrictBool = False
    expert_weight_bytes_per_param: Annotated[float, Field(gt=0, le=4)] | None = None

    @model_validator(mode="after")
    def _top_k_fits(self) -> MoeBlock:
        if self.experts_per_token > self.num_experts:
            raise ValueError("experts_per_token must not exceed num_experts")
        return self

    def to_spec(self) -> MoeSpec:
        """The core :class:`MoeSpec`."""
        return MoeSpec(**self.model_dump())


class MlaBlock(_Strict):
    """Multi-head latent attention fields (``architecture.mla``)."""

    kv_lora_rank: PositiveInt
    q_lora_rank: PositiveInt | None = None
    qk_rope_head_dim: PositiveInt
    qk_nope_head_dim: PositiveInt
    v_head_dim: PositiveInt

    def to_spec(self) -> MlaSpec:
        """The core :class:`MlaSpec`."""
        return MlaSpec(**self.model_dump())


WeightFormatName = Literal["bf16", "fp16", "fp8", "fp8-block", "fp4", "mxfp4", "int4"]


class CheckpointPrecisionBlock(_Strict):
    """The weight format of each layer group as the checkpoint stores it
    (``architecture.checkpoint_precision``; config.json ``quantization_config``): a group
    left out follows the workload's ``precision``."""

    experts: WeightFormatName | None = None
    attention: WeightFormatName | None = None
    dense: WeightFormatName | None = None
    lm_head: WeightFormatName | None = None

    def to_spec(self) -> GroupFormats:
        """The core :class:`GroupFormats`."""
        return GroupFormats(**self.model_dump())


class ArchitectureBlock(_Strict):
    """A model's architecture (``config.json`` fields), with one source for the block."""

    source: NonEmptyStr
    kind: ValueKind
    num_layers: Annotated[int, Field(strict=True, gt=0, le=MAX_MODEL_LAYERS)]
    hidden_size: PositiveInt
    intermediate_size: PositiveInt
    num_attention_heads: PositiveInt
    num_kv_heads: PositiveInt
    head_dim: PositiveInt
    vocab_size: PositiveInt
    max_context_tokens: PositiveInt
    attention: Literal["mha", "gqa", "mla"]
    mlp: Literal["gated", "plain"] = "gated"
    tie_word_embeddings: StrictBool = False
    attention_bias: StrictBool = False
    mlp_bias: StrictBool = False
    qk_norm: StrictBool = False
    norm_has_bias: StrictBool = False
    learned_position_embeddings: NonNegativeInt = 0
    sliding_window_tokens: PositiveInt | None = None
    sliding_window_layers: NonNegativeInt = 0
    moe: MoeBlock | None = None
    mla: MlaBlock | None = None
    checkpoint_precision: CheckpointPrecisionBlock | None = None

    @model_validator(mode="after")
    def _consistent(self) -> ArchitectureBlock:
        if (self.attention == "mla") != (self.mla is not None):
            raise ValueError("attention: mla requires an mla block, and an mla block "
                             "requires attention: mla")
        if self.attention == "mha" and self.num_kv_heads != self.num_attention_heads:
            raise ValueError("attention: mha requires num_kv_heads == num_attention_heads")
        if self.attention != "mla" and self.num_attention_heads % self.num_kv_heads:
            raise ValueError("num_attention_heads must be a multiple of num_kv_heads")
        if self.sliding_window_layers > self.num_layers:
            raise ValueError("sliding_window_layers must not exceed num_layers")
        if self.sliding_window_layers and self.sliding_window_tokens is None:
            raise ValueError("sliding_window_layers > 0 needs sliding_window_tokens")
        if self.moe is not None and self.moe.first_dense_layers > self.num_layers:
            raise ValueError("moe.first_dense_layers must not exceed num_layers")
        return self


class ModelProfile(_Strict):
    """A model profile file (``profiles/models/<id>.yaml``)."""

    id: ProfileId
    name: NonEmptyStr
    architecture: ArchitectureBlock
    published_total_params: SourcedPositive | None = None
    published_active_params: SourcedPositive | None = None

    def to_spec(self) -> ModelSpec:
        """The plain :class:`ModelSpec` the core uses."""
        arch = self.architecture
        fields = arch.model_dump(exclude={"source", "kind", "moe", "mla",
                                          "checkpoint_precision"})
        checkpoint = arch.checkpoint_precision
        return ModelSpec(
            id=self.id,
            name=self.name,
            checkpoint_formats=checkpoint.to_spec() if checkpoint is not None else None,
            moe=arch.moe.to_spec() if arch.moe is not None else None,
            mla=arch.mla.to_spec() if arch.mla is not None else None,
            published_total_params=(self.published_total_params.value
                                    if self.published_total_params is not None else None),
            published_active_params=(self.published_active_params.value
                                     if self.published_active_params is not None else None),
            **fields,
        )

    def sourced_items(self) -> Iterator[tuple[str, SourcedNumber | SourcedCount]]:
        """The published parameter counts as ``(dotted key, number)`` (architecture excluded)."""
        yield from _walk_sourced(self, "")


Profile = GpuProfile | LinkProfile | ModelProfile

PROFILE_MODELS: dict[str, type[GpuProfile] | type[LinkProfile] | type[ModelProfile]] = {
    "gpus": GpuProfile,
    "interconnects": LinkProfile,
    "models": ModelProfile,
}
"""Profile kind (directory name) -> pydantic model."""


def parse_profile(kind: str, data: Any) -> Profile:
    """Validate loaded YAML data as a GPU, interconnect or model profile; raises
    ``pydantic.ValidationError`` (engine profiles: ``engine_profile.EngineProfile``)."""
    return PROFILE_MODELS[kind].model_validate(data)


def walk_sourced(obj: BaseModel,
                 prefix: str) -> Iterator[tuple[str, SourcedNumber | SourcedCount]]:
    """Depth-first walk yielding every sourced number below ``obj`` (dotted keys)."""
    yield from _walk_sourced(obj, prefix)


def _walk_sourced(obj: BaseModel,
                  prefix: str) -> Iterator[tuple[str, SourcedNumber | SourcedCount]]:
    """Depth-first walk yielding every sourced number below ``obj``."""
    for name, value in obj:
        key = f"{prefix}{name}"
        if isinstance(value, SourcedNumber | SourcedCount):
            yield key, value
        elif isinstance(value, ArchitectureBlock):
            continue  # one source for the whole block; shown separately
        elif isinstance(value, BaseModel):
            yield from _walk_sourced(value, f"{key}.")
        elif isinstance(value, dict):
            for sub_name, sub in value.items():
                if isinstance(sub, BaseModel):
                    yield from _walk_sourced(sub, f"{key}.{sub_name}.")
