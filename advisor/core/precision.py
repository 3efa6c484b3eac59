"""Number formats per tensor: the weights and the KV cache, and what a GPU does with them.

A workload names the format of its weights and of its KV cache separately
(``precision: {weights: fp8, kv_cache: bf16}``) or with one word, a shorthand for both
(:data:`SHORTHAND`). The weights may be split by layer group (:data:`GROUPS`: the routed
experts, the attention projections, the dense layers — dense FFNs, shared experts, routers,
norms — and the LM head), each in its own format (``{weights: fp4, attention: fp8}``); a group
not named takes ``weights`` (the LM head keeps 16 bit under 4-bit weights), unless the model's
checkpoint fixes it (:class:`GroupFormats`, read from config.json ``quantization_config``).
Bytes per weight and per KV element follow the formats (docs/model.md §1.1); the matmul rate
follows the *compute* format, which is the weight format where the GPU has tensor cores for it
and 16 bit otherwise — the weight-only ("W8A16", "W4A16") kernels engines run on such GPUs:
weights are streamed at low precision and dequantised to 16 bit in the GEMM (vLLM's FP8 Marlin
on Ampere, Marlin/AWQ/GPTQ kernels for INT4). NVFP4 (``fp4``) has no such fallback in the
model: it needs Blackwell FP4 tensor cores, and :func:`unsupported_reason` says so (the loading
layer reports it at the key; :func:`unsupported_groups` for each layer group).

Sources (docs/model.md §1.1): NVIDIA, "Introducing NVFP4 for Efficient and Accurate
Low-Precision Inference" (developer.nvidia.com blog, 2025: E2M1 values, one FP8 E4M3 scale per
16 values); Open Compute Project, "OCP Microscaling Formats (MX) Specification v1.0" (2023:
MXFP4 = E2M1 values, one E8M0 scale per 32); vLLM documentation, "FP8 W8A8" (docs.vllm.ai,
features/quantization/fp8: FP8 models run on Ampere as weight-only W8A16 via FP8 Marlin);
Frantar et al., "MARLIN: Mixed-Precision Auto-Regressive Parallel Inference on Large Language
Models" (arXiv 2408.11743: INT4 × FP16 kernels, group size 128).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal

WeightFormat = Literal["bf16", "fp16", "fp8", "fp8-block", "fp4", "mxfp4", "int4"]
KvFormat = Literal["bf16", "fp16", "fp8"]
ComputeFormat = Literal["bf16", "fp8", "fp4"]

WEIGHT_FORMATS: tuple[str, ...] = ("bf16", "fp16", "fp8", "fp8-block", "fp4", "mxfp4", "int4")
KV_FORMATS: tuple[str, ...] = ("bf16", "fp16", "fp8")

WEIGHT_BYTES_PER_PARAM: dict[str, float] = {
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "fp8-block": 1.0,
    "fp4": (4 + 8 / 16) / 8,
    "mxfp4": (4 + 8 / 32) / 8,
    "int4": (4 + (16 + 4) / 128) / 8,
}
"""Storage per weight. FP8: 1 B (block FP8's one FP32 scale per 128×128 block, 0.02 %, is left
out). NVFP4: 4-bit values plus one FP8 scale per 16 = 4.5 bits. MXFP4: 4-bit values plus one
8-bit scale per 32 = 4.25 bits. INT4 (AWQ/GPTQ, group 128): 4-bit values plus a 16-bit scale
and a 4-bit zero point per 128 = 4.156 bits."""

KV_BYTES_PER_ELEMENT: dict[str, float] = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0}
"""KV-cache storage per element."""

FOUR_BIT_WEIGHTS: frozenset[str] = frozenset({"fp4", "mxfp4", "int4"})
"""Formats whose checkpoints keep the input embedding and the LM head in 16 bit (AWQ/GPTQ,
ModelOpt NVFP4 and MXFP4 checkpoints quantise the linear layers of the blocks only)."""

GROUPS: tuple[str, ...] = ("experts", "attention", "dense", "lm_head")
"""Layer groups whose weights may each have their own format (docs/model.md §1.1)."""

SHORTHAND: dict[str, tuple[str, str]] = {
    "bf16": ("bf16", "bf16"),
    "fp16": ("fp16", "fp16"),
    "fp8": ("fp8", "fp8"),
    "fp8-block": ("fp8-block", "bf16"),
    "fp4": ("fp4", "bf16"),
    "mxfp4": ("mxfp4", "bf16"),
    "int4": ("int4", "bf16"),
}
"""One word → (weights, KV cache). ``fp8`` means per-tensor FP8 weights *and* an FP8 KV
cache (NVIDIA ModelOpt checkpoints); the weight-only formats keep a 16-bit KV cache, as the
engines do with ``--kv-cache-dtype auto``."""


@dataclass(frozen=True, kw_only=True)
class GroupFormats:
    """The weight format of each layer group as a checkpoint stores it (None: the checkpoint
    does not say; the workload's ``weights`` applies). Read from a config.json
    ``quantization_config`` (``advisor.loading.hf_config``)."""

    experts: str | None = None
    attention: str | None = None
    dense: str | None = None
    lm_head: str | None = None

    def items(self) -> list[tuple[str, str]]:
        """(group, format) of the groups the checkpoint fixes."""
        return [(g, getattr(self, g)) for g in GROUPS if getattr(self, g) is not None]


@dataclass(frozen=True, eq=False, kw_only=True)
class Precision:
    """The formats of the weights (per layer group where set) and of the KV cache.

    Equal to its one-word shorthand (``Precision(weights="fp8", kv_cache="fp8") == "fp8"``, same
    hash) when no group has its own format, so code written for the one-word precisions keeps
    working.
    """

    weights: str
    kv_cache: str
    experts: str | None = None
    """Routed experts' format (None: ``weights``)."""
    attention: str | None = None
    """Attention projections' format (q/k/v/o; MLA's down/up projections) (None: ``weights``)."""
    dense: str | None = None
    """Dense FFN layers, shared experts, routers and norms (None: ``weights``)."""
    lm_head: str | None = None
    """The LM head's format (None: ``weights``, but 16-bit bytes under 4-bit weights)."""

    def _key(self) -> tuple[str | None, ...]:
        return (self.weights, self.kv_cache, *(getattr(self, g) for g in GROUPS))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            pair = SHORTHAND.get(other)
            return self.uniform and pair == (self.weights, self.kv_cache)
        if isinstance(other, Precision):
            return self._key() == other._key()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.label)

    @classmethod
    def of(cls, value: Precision | str) -> Precision:
        """A precision from a spec or a one-word shorthand (``fp8-block`` → fp8-block + bf16)."""
        if isinstance(value, Precision):
            return value
        weights, kv_cache = SHORTHAND[value]
        return cls(weights=weights, kv_cache=kv_cache)

    @property
    def uniform(self) -> bool:
        """Whether no layer group has a format of its own (every matmul in ``weights``)."""
        return all(getattr(self, g) is None for g in GROUPS)

    def groups_set(self) -> list[tuple[str, str]]:
        """(group, format) of the groups with a format of their own."""
        return [(g, getattr(self, g)) for g in GROUPS if getattr(self, g) is not None]

    def with_checkpoint(self, checkpoint: GroupFormats | None) -> Precision:
        """These formats with the groups this precision leaves unset taken from a checkpoint
        (a group set here wins)."""
        if checkpoint is None:
            return self
        if all(getattr(self, g) is not None for g, _ in checkpoint.items()):
            return self
        groups = {g: getattr(self, g) for g in GROUPS}
        groups.update({g: f for g, f in checkpoint.items() if groups[g] is None})
        return Precision(weights=self.weights, kv_cache=self.kv_cache, **groups)

    def group_format(self, group: str) -> str:
        """The stored format of a layer group's weights: its own, else ``weights`` (the LM
        head of 4-bit weights: bf16)."""
        own: str | None = getattr(self, group)
        if own is not None:
            return own
        if group == "lm_head" and self.four_bit:
            return "bf16"
        return self.weights

    def group_compute_weights(self, group: str) -> str:
        """The format whose tensor cores a group's matmuls use: its own, else ``weights``
        (an LM head left unset computes as the rest, today's rule)."""
        own: str | None = getattr(self, group)
        return own if own is not None else self.weights

    def group_bytes_per_param(self, group: str) -> float:
        """Storage per weight of a layer group."""
        return WEIGHT_BYTES_PER_PARAM[self.group_format(group)]

    @property
    def label(self) -> str:
        """The shorthand when the pair is one (``fp8``), else ``weights fp8, KV bf16``; groups
        with their own format follow (``fp4, attention fp8``)."""
        base = f"weights {self.weights}, KV {self.kv_cache}"
        for word, pair in SHORTHAND.items():
            if pair == (self.weights, self.kv_cache):
                base = word
                break
        return ", ".join([base, *(f"{g.replace('_', '-')} {f}" for g, f in self.groups_set())])

    def __str__(self) -> str:
        return self.label

    @property
    def weight_bytes_per_param(self) -> float:
        """Storage per quantised weight (the ``weights`` format)."""
        return WEIGHT_BYTES_PER_PARAM[self.weights]

    @property
    def kv_bytes_per_element(self) -> float:
        """Storage per KV-cache element."""
        return KV_BYTES_PER_ELEMENT[self.kv_cache]

    @property
    def four_bit(self) -> bool:
        """Whether the weights are a 4-bit format (embeddings and LM head stay 16 bit)."""
        return self.weights in FOUR_BIT_WEIGHTS

    @property
    def fp8_weights(self) -> bool:
        """Whether the weights are FP8 (per-tensor or block-scaled)."""
        return self.weights in ("fp8", "fp8-block")


assert tuple(f.name for f in fields(GroupFormats)) == GROUPS


def format_compute(weights: str, has_fp8: bool, has_fp4: bool) -> ComputeFormat:
    """The tensor-core format matmuls of weights stored in ``weights`` run in (below)."""
    if weights in ("fp8", "fp8-block") and has_fp8:
        return "fp8"
    if weights in ("fp4", "mxfp4") and has_fp4:
        return "fp4"
    return "bf16"


def compute_format(precision: Precision | str, has_fp8: bool, has_fp4: bool) -> ComputeFormat:
    """The tensor-core format the matmuls run in on a GPU with those capabilities.

    FP8 weights use FP8 tensor cores where present, else weight-only (16-bit compute); FP4
    and MXFP4 use FP4 tensor cores where present, else weight-only; INT4 is always
    weight-only (W4A16); 16-bit weights compute in 16 bit.
    """
    return format_compute(Precision.of(precision).weights, has_fp8, has_fp4)


def unsupported_reason(precision: Precision | str, gpu_name: str, has_fp4: bool) -> str:
    """Why a GPU cannot serve the ``weights`` format ("" when it can)."""
    return format_unsupported(Precision.of(precision).weights, gpu_name, has_fp4)


def format_unsupported(weights: str, gpu_name: str, has_fp4: bool, what: str = "weights"
                       ) -> str:
    """Why a GPU cannot serve ``what`` stored in ``weights`` ("" when it can)."""
    if weights == "fp4" and not has_fp4:
        return (f"fp4 (NVFP4) {what} need FP4 tensor cores (NVIDIA Blackwell: B200, GB200); "
                f"{gpu_name} has none. Use mxfp4 or int4 for 4-bit weights streamed by "
                "weight-only kernels, or fp8")
    return ""


def unsupported_groups(precision: Precision | str, gpu_name: str, has_fp4: bool
                       ) -> list[tuple[str, str]]:
    """(group, reason) for every layer group with a format of its own the GPU cannot serve."""
    p = Precision.of(precision)
    found = []
    for group, fmt in p.groups_set():
        reason = format_unsupported(fmt, gpu_name, has_fp4,
                                    f"weights ({group.replace('_', '-')})")
        if reason:
            found.append((group, reason))
    return found
