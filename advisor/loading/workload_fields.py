"""Workload-format field types added by #16: precision per tensor, closed-loop traffic,
prefix caching, engine limits and the GPU-hour price.

Kept apart from :mod:`advisor.loading.workload_schema` (which uses them) so that module stays
within its size limit; the cross-field rules for these keys are here too and return
``(loc, message)`` pairs that the schema module turns into its issues.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Discriminator, Field, StrictInt, Tag

from advisor.core.hardware import GpuSpec
from advisor.core.limits import (
    MAX_BATCH_REQUESTS,
    MAX_CONCURRENCY,
    MAX_NICS_PER_UNIT,
    MAX_PRICE_PER_GPU_HOUR,
    MAX_RATE_RPS,
    MAX_TOKENS,
)
from advisor.core.model_arch import ModelSpec
from advisor.core.precision import (
    GROUPS,
    KV_FORMATS,
    SHORTHAND,
    WEIGHT_FORMATS,
    Precision,
    format_unsupported,
    unsupported_groups,
    unsupported_reason,
)
from advisor.core.scenario import DEFAULT_ROUTER, ROUTER_POLICIES

Loc = tuple[str | int, ...]
WeightFormatName = Literal["bf16", "fp16", "fp8", "fp8-block", "fp4", "mxfp4", "int4"]
KvFormatName = Literal["bf16", "fp16", "fp8"]
assert set(WEIGHT_FORMATS) == set(get_args(WeightFormatName))
assert set(KV_FORMATS) == set(get_args(KvFormatName))


class PrecisionTensors(BaseModel):
    """The number format of each tensor kind."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    weights: WeightFormatName = Field(
        description="Weight format: bf16, fp16, fp8 (per-tensor), fp8-block (128x128 block "
        "scales), fp4 (NVFP4, Blackwell only), mxfp4, int4 (AWQ/GPTQ, group 128). FP8 on a GPU "
        "without FP8 tensor cores, and mxfp4/int4 without FP4 ones, run as weight-only kernels "
        "(16-bit matmuls).")
    kv_cache: KvFormatName = Field(
        "bf16", description="KV-cache format: bf16, fp16 or fp8 (default bf16, the engines' "
        "--kv-cache-dtype auto).")
    experts: WeightFormatName | None = Field(
        None, description="Routed experts' weight format (default: weights; or the "
        "checkpoint's, from its config.json quantization_config).")
    attention: WeightFormatName | None = Field(
        None, description="Attention projections' weight format (q/k/v/o; MLA's down and up "
        "projections) (default: weights, or the checkpoint's).")
    dense: WeightFormatName | None = Field(
        None, description="Dense FFN layers, shared experts, routers and norms (default: "
        "weights, or the checkpoint's).")
    lm_head: WeightFormatName | None = Field(
        None, description="LM head weight format (default: weights, stored in 16 bit under "
        "4-bit weights; or the checkpoint's).")


_TAG_WORD = "precision:word"
_TAG_TENSORS = "precision:tensors"
PRECISION_TAGS = frozenset({_TAG_WORD, _TAG_TENSORS})


def _precision_tag(value: Any) -> str | None:
    if isinstance(value, dict | PrecisionTensors):
        return _TAG_TENSORS
    if isinstance(value, str):
        return _TAG_WORD
    return None


PrecisionWord = Literal["bf16", "fp16", "fp8", "fp8-block", "fp4", "mxfp4", "int4"]
assert set(SHORTHAND) == set(get_args(PrecisionWord))

PrecisionChoice = Annotated[
    Annotated[PrecisionWord, Tag(_TAG_WORD)] | Annotated[PrecisionTensors, Tag(_TAG_TENSORS)],
    Discriminator(
        _precision_tag,
        custom_error_type="precision_type",
        custom_error_message="expected a precision word (bf16, fp16, fp8, fp8-block, fp4, "
                             "mxfp4, int4) or a mapping {weights, kv_cache, experts, "
                             "attention, dense, lm_head}",
    ),
    Field(description="Number formats: one word for weights and KV cache (bf16, fp16, fp8 = "
          "FP8 weights and FP8 KV; fp8-block, fp4, mxfp4, int4 = those weights with a 16-bit "
          "KV cache), or {weights, kv_cache} to set each, with experts, attention, dense and "
          "lm_head for layer groups in formats of their own."),
]


def precision_pair(value: Any) -> tuple[str, str]:
    """(weights, kv_cache) of a validated ``precision`` value."""
    if isinstance(value, PrecisionTensors):
        return value.weights, value.kv_cache
    return SHORTHAND[value]


def precision_issues(value: Any, gpu: GpuSpec, model: ModelSpec | None
                     ) -> list[tuple[Loc, str]]:
    """(key path, message) for every format of a validated ``precision`` value — and every
    format the model's checkpoint fixes for a group the value leaves unset — that the GPU
    cannot serve (fp4 without FP4 tensor cores)."""
    spec = precision_spec(value)
    issues: list[tuple[Loc, str]] = []
    reason = unsupported_reason(spec, gpu.name, gpu.has_fp4_compute)
    if reason:
        issues.append((("precision", "weights") if isinstance(value, PrecisionTensors)
                       else ("precision",), reason))
    for group, why in unsupported_groups(spec, gpu.name, gpu.has_fp4_compute):
        issues.append((("precision", group), why))
    checkpoint = model.checkpoint_formats if model is not None else None
    for group, fmt in checkpoint.items() if checkpoint is not None else []:
        if getattr(spec, group) is not None:
            continue  # the workload's own format for the group wins
        why = format_unsupported(fmt, gpu.name, gpu.has_fp4_compute,
                                 f"weights ({group.replace('_', '-')}, as the model's "
                                 "checkpoint stores them)")
        if why:
            issues.append((("model",), f"{why}; or set precision.{group} to serve them in "
                                       "another format"))
    return issues


def precision_spec(value: Any) -> Precision:
    """The core :class:`Precision` of a validated ``precision`` value (groups included)."""
    weights, kv_cache = precision_pair(value)
    if isinstance(value, PrecisionTensors):
        return Precision(weights=weights, kv_cache=kv_cache,
                         **{g: getattr(value, g) for g in GROUPS})
    return Precision(weights=weights, kv_cache=kv_cache)


# ---- traffic ---------------------------------------------------------------------------------
TrafficRate = Annotated[float | None, Field(
    None, gt=0, le=MAX_RATE_RPS, description="Mean arrival rate, requests/s. Required (or "
    "concurrency, or a finite batch) unless every phase gives its own.")]
Concurrency = Annotated[StrictInt | None, Field(
    None, ge=1, le=MAX_CONCURRENCY,
    description="Closed-loop load: clients that each send a request, wait for the whole "
    "answer and send the next (benchmark --max-concurrency). Exactly one of rate_rps and "
    "concurrency; the report shows the equivalent rate (Little's law).")]
BatchRequests = Annotated[StrictInt | None, Field(
    None, ge=1, le=MAX_BATCH_REQUESTS,
    description="A finite batch: this many requests sent at once (with arrival: all-at-once), "
    "as a benchmark at --request-rate inf or a batch job sends them; evaluated as a makespan "
    "(throughput = requests / makespan) with the batch's TTFT and TPOT percentiles. Instead of "
    "rate_rps or concurrency.")]
Arrival = Annotated[Literal["all-at-once"] | None, Field(
    None, description="How a finite batch's requests arrive: all-at-once (every request at "
    "t = 0). Given with requests.")]
PrefixHitRate = Annotated[float | None, Field(
    None, ge=0, lt=1, description="Share of prompt tokens served from the prefix cache "
    "(0 <= x < 1); prefill computes only the rest. Alternative to shared_prefix_tokens.")]
SharedPrefixTokens = Annotated[StrictInt | None, Field(
    None, ge=0, le=MAX_TOKENS, description="Tokens at the start of every prompt shared by all "
    "requests (a system prompt) and served from the prefix cache once warm; must be below the "
    "mean prompt. Alternative to prefix_cache_hit_rate.")]


def traffic_issues(traffic: Any, loc: Loc) -> list[tuple[Loc, str]]:
    """Exactly one of rate_rps / concurrency per phase (after inheritance); one prefix form."""
    issues: list[tuple[Loc, str]] = []
    if (traffic.requests is None) != (traffic.arrival is None):
        key = "arrival" if traffic.arrival is None else "requests"
        issues.append(((*loc, key), "a finite batch gives both requests (how many) and "
                                    "arrival: all-at-once"))
    if traffic.requests is not None and (traffic.rate_rps is not None
                                         or traffic.concurrency is not None):
        issues.append(((*loc, "requests"), "give either a finite batch (requests, arrival) or "
                                           "rate_rps / concurrency, not both"))
    if traffic.requests is not None and traffic.phases:
        issues.append(((*loc, "phases"), "a finite batch is one batch: it has no phases"))
    if traffic.rate_rps is not None and traffic.concurrency is not None:
        issues.append(((*loc, "concurrency"), "give either rate_rps (open loop) or concurrency "
                                              "(closed loop), not both"))
    for index, phase in enumerate(traffic.phases or ()):
        if phase.rate_rps is not None and phase.concurrency is not None:
            issues.append(((*loc, "phases", index, "concurrency"),
                           "give either rate_rps or concurrency, not both"))
    if traffic.prefix_cache_hit_rate is not None and traffic.shared_prefix_tokens is not None:
        issues.append(((*loc, "shared_prefix_tokens"),
                       "give either prefix_cache_hit_rate or shared_prefix_tokens, not both"))
    return issues


def missing_arrivals(traffic: Any) -> bool:
    """Whether the traffic section gives neither arrival form (phases may still give them)."""
    return traffic.rate_rps is None and traffic.concurrency is None and traffic.requests is None


def phase_arrivals_missing(phase: Any, traffic: Any) -> bool:
    """Whether a phase has no arrival form of its own and inherits none."""
    return (phase.rate_rps is None and phase.concurrency is None
            and missing_arrivals(traffic))


# ---- deployment ------------------------------------------------------------------------------
def is_power_of_two(value: int) -> bool:
    """Tensor-parallel degrees are powers of two."""
    return value > 0 and value & (value - 1) == 0


PrefillTensorParallel = Annotated[StrictInt | None, Field(
    None, ge=1, description="Tensor-parallel degree of each prefill instance "
    "(disaggregated only).")]
DecodeTensorParallel = Annotated[StrictInt | None, Field(
    None, ge=1, description="Tensor-parallel degree of each decode instance "
    "(disaggregated only).")]
MaxNumSeqs = Annotated[StrictInt | None, Field(
    None, ge=1, le=1_000_000, description="Running-sequence cap per instance (vLLM "
    "--max-num-seqs, SGLang --max-running-requests, TensorRT-LLM max_batch_size); per "
    "DP-attention rank of an expert-parallel instance; omitted: the engine's default for "
    "the GPU.")]
MaxModelLen = Annotated[StrictInt | None, Field(
    None, ge=1, le=MAX_TOKENS, description="Longest prompt + output a request may have "
    "(vLLM --max-model-len, SGLang --context-length, TensorRT-LLM max_seq_len); requests "
    "must fit, and memory is planned for it. Omitted: the workload's longest request.")]
GpuMemoryUtilization = Annotated[float | None, Field(
    None, gt=0, le=1, description="Share of GPU memory the engine may use (vLLM "
    "--gpu-memory-utilization, SGLang --mem-fraction-static); omitted: policy.memory_fraction.")]

RouterName = Literal["least-loaded", "round-robin", "random", "power-of-two"]
assert get_args(RouterName) == ROUTER_POLICIES
_ROUTERS = ("How the router sends each request to one instance of a pool on arrival, the same "
            "for colocated, prefill and decode instances: least-loaded (join the instance with "
            "the fewest outstanding requests), round-robin, random, or power-of-two (the less "
            "loaded of two drawn at random)")
OperationsRouter = Annotated[RouterName, Field(
    DEFAULT_ROUTER, description=f"{_ROUTERS}. Default {DEFAULT_ROUTER}; deployment.router, "
    "when given, is the one the deployment runs.")]
DeploymentRouter = Annotated[RouterName | None, Field(
    None, description=f"{_ROUTERS}: the policy this deployment's router runs (vLLM Router / "
    "SGLang Model Gateway --policy, Dynamo --router-mode). Omitted: operations.router.")]


def router_issues(operations: Any, deployment: Any) -> list[tuple[Loc, str]]:
    """``deployment.router`` contradicting an explicitly given ``operations.router``: the model
    assumes one router for both architectures, so the file must not name two."""
    if (deployment is None or deployment.router is None
            or "router" not in operations.model_fields_set
            or deployment.router == operations.router):
        return []
    return [(("deployment", "router"), f"{deployment.router} contradicts operations.router "
             f"({operations.router}); give the router in one place")]


# ---- cluster ---------------------------------------------------------------------------------
PricePerGpuHour = Annotated[float | None, Field(
    None, gt=0, le=MAX_PRICE_PER_GPU_HOUR, description="What one GPU-hour costs you, USD; "
    "overrides the GPU profile's public reference price (used for usd_per_hour and "
    "usd_per_million_output_tokens).")]

NicsPerNode = Annotated[StrictInt | None, Field(
    None, ge=1, le=MAX_NICS_PER_UNIT, description="NICs of the inter_node link per node "
    "(each at the profile's bandwidth): they carry the KV cache from prefill to decode "
    "GPUs. Default from the interconnect profile: one per GPU for InfiniBand/RoCE "
    "rail-optimised fabrics, per node for plain Ethernet (eth-25: one, DistServe's "
    "testbed); needs inter_node.")]
