"""Resolved hardware facts the cost model reads: GPUs, links and efficiency factors.

These are plain numbers in SI base units (bytes, bytes/s, FLOP/s, seconds). Where each
number comes from is recorded in the profile YAML files and kept by the loading layer; the
core only needs the values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from advisor.core.precision import ComputeFormat, Precision, compute_format

__all__ = ["FP8_WEIGHTS", "EfficiencyFactors", "GpuSpec", "LinkSpec", "Precision"]

FP8_WEIGHTS: frozenset[str] = frozenset({"fp8", "fp8-block"})
"""Weight formats that are FP8 (their matmuls use the FP8 tensor peak where there is one)."""
LinkScope = Literal["scale-up", "scale-out", "host"]
NicUnit = Literal["gpu", "node"]


@dataclass(frozen=True, kw_only=True)
class EfficiencyFactors:
    """Empirical factors that turn datasheet peaks into achieved rates (all fractions)."""

    prefill_compute_efficiency_bf16: float
    """Achieved / dense peak FLOP/s for large (saturating) prefill passes in 16-bit."""
    prefill_compute_efficiency_fp8: float
    """Achieved / dense FP8 peak FLOP/s for large prefill passes with FP8 weights."""
    decode_bandwidth_efficiency: float
    """Achieved / peak memory bandwidth for weight and KV reads (MBU)."""
    step_overhead_s: float
    """Fixed cost of one engine step (launch, scheduling, sampling), seconds."""
    request_overhead_s: float = 0.0
    """Fixed cost per request on the TTFT path (tokenisation, admission, first sample), seconds."""
    kv_bandwidth_efficiency: float | None = None
    """Achieved / peak memory bandwidth for KV-cache reads by the attention kernels; None: the
    same as ``decode_bandwidth_efficiency`` (the weight-streaming efficiency)."""
    attention_compute_efficiency: float | None = None
    """Achieved / dense peak FLOP/s of the attention kernels (QK^T, softmax, PV) at the
    attention's own format (FP8 with an FP8 KV cache on FP8 tensor cores, else 16 bit); None:
    the prefill (GEMM) efficiency of that format."""

    @property
    def kv_read_efficiency(self) -> float:
        """The KV-read efficiency in force (falls back to the weight-streaming one)."""
        if self.kv_bandwidth_efficiency is None:
            return self.decode_bandwidth_efficiency
        return self.kv_bandwidth_efficiency

    def attention_efficiency(self, fp8_attention: bool) -> float:
        """The attention efficiency in force; without its own value, the GEMM efficiency of
        the attention's format (FP8 or 16 bit)."""
        if self.attention_compute_efficiency is not None:
            return self.attention_compute_efficiency
        if fp8_attention:
            return self.prefill_compute_efficiency_fp8
        return self.prefill_compute_efficiency_bf16

    def prefill_compute_efficiency(self, precision: Precision | str, has_fp8_compute: bool,
                                   has_fp4_compute: bool = False) -> float:
        """The prefill efficiency that applies to a precision on this GPU: the FP8 factor for
        FP8 and FP4 tensor-core matmuls (FP4 has no measured factor of its own: an estimate,
        docs/model.md §1.1), the 16-bit factor for 16-bit and weight-only matmuls."""
        if compute_format(precision, has_fp8_compute, has_fp4_compute) != "bf16":
            return self.prefill_compute_efficiency_fp8
        return self.prefill_compute_efficiency_bf16


@dataclass(frozen=True, kw_only=True)
class LinkSpec:
    """One interconnect, per GPU (or per NIC) and per direction."""

    id: str
    name: str
    scope: LinkScope
    bandwidth_bytes_per_s: float
    """Per-direction line rate available to one GPU."""
    latency_s: float
    """One-way small-message latency."""
    efficiency: float
    """Achievable fraction of line rate for large transfers."""
    transfer_setup_s: float = 0.001
    """Fixed software cost per KV transfer (α in t = α + bytes/(η·B))."""
    nic_count: int = 1
    """NICs (ports of ``bandwidth_bytes_per_s`` each) per ``nic_unit``, as the profile
    describes the usual build (``nics:``); a workload's ``cluster.nics_per_node`` overrides."""
    nic_unit: NicUnit = "gpu"
    """Whether ``nic_count`` is per GPU (rail-optimised fabrics) or per node (Ethernet)."""
    nics_per_gpu: float = 1.0
    """NICs per GPU in the cluster at hand (``Cluster.kv_link`` sets it from
    ``Cluster.nics_per_node``; 1 for a per-GPU link)."""

    @property
    def effective_bytes_per_s(self) -> float:
        """Sustained per-direction bandwidth of one NIC (one GPU's link) for large
        transfers."""
        return self.bandwidth_bytes_per_s * self.efficiency

    def default_nics_per_node(self, gpus_per_node: int) -> int:
        """NICs per node of the profile's usual build on nodes of ``gpus_per_node`` GPUs."""
        return self.nic_count * (gpus_per_node if self.nic_unit == "gpu" else 1)


@dataclass(frozen=True, kw_only=True)
class GpuSpec:
    """One GPU model: dense peaks, memory, node shape and default efficiency factors."""

    id: str
    name: str
    bf16_flops_per_s: float
    """Dense (not sparse) BF16/FP16 tensor peak."""
    fp8_flops_per_s: float | None
    """Dense FP8 tensor peak; None where the GPU has no FP8 tensor cores (Ampere)."""
    memory_bytes: float
    memory_bandwidth_bytes_per_s: float
    gpus_per_node: int
    intra_node_link_id: str
    efficiency: EfficiencyFactors
    engine_efficiency: dict[str, EfficiencyFactors] = field(default_factory=dict)
    """Per-engine overrides of ``efficiency`` (keys: vllm, sglang, trtllm)."""
    fp4_flops_per_s: float | None = None
    """Dense FP4 tensor peak; None where the GPU has no FP4 tensor cores (before Blackwell)."""
    price_per_gpu_hour_usd: float | None = None
    """Public reference price of one GPU-hour (an estimate with its source in the profile);
    None when the profile carries none."""

    def __hash__(self) -> int:  # a dict field blocks the generated hash; equal specs share an id
        return hash(self.id)

    @property
    def has_fp8_compute(self) -> bool:
        """Whether FP8 matmuls run faster than BF16 on this GPU."""
        return self.fp8_flops_per_s is not None

    @property
    def has_fp4_compute(self) -> bool:
        """Whether the GPU has FP4 tensor cores (NVFP4/MXFP4 matmuls)."""
        return self.fp4_flops_per_s is not None

    def compute_format(self, precision: Precision | str) -> ComputeFormat:
        """The tensor-core format matmuls at ``precision`` run in on this GPU
        (:func:`advisor.core.precision.compute_format`)."""
        return compute_format(precision, self.has_fp8_compute, self.has_fp4_compute)

    def peak_flops_per_s(self, precision: Precision | str) -> float:
        """Dense tensor peak used for matmuls at ``precision``: the FP8 or FP4 peak where the
        weights are in that format and the GPU has those tensor cores, else the 16-bit peak
        (weight-only kernels)."""
        fmt = self.compute_format(precision)
        if fmt == "fp8" and self.fp8_flops_per_s is not None:
            return self.fp8_flops_per_s
        if fmt == "fp4" and self.fp4_flops_per_s is not None:
            return self.fp4_flops_per_s
        return self.bf16_flops_per_s

    def efficiency_for(self, engine: str) -> EfficiencyFactors:
        """Efficiency factors for an engine named by string, falling back to the GPU default
        (an engine profile adds its own overrides: ``EngineSpec.efficiency_for``)."""
        return self.engine_efficiency.get(engine, self.efficiency)

    def ridge_point_flops_per_byte(self, precision: Precision | str) -> float:
        """Dense peak divided by memory bandwidth."""
        return self.peak_flops_per_s(precision) / self.memory_bandwidth_bytes_per_s
