"""The scalar vocabulary of the typed report documents (:mod:`advisor.render.document`):
numbers with their JSON-Schema bounds, percentiles, and the closed sets of names (verdicts,
plan kinds, gate checks, rules). Imported only for type checking and to generate the schema,
as the documents are."""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired

from typing_extensions import TypedDict


class Js:
    """JSON-Schema keywords added to an annotated type when the schema is generated."""

    def __init__(self, **keywords: Any) -> None:
        self.keywords = keywords

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> Any:
        schema = handler(core_schema)
        schema.update(self.keywords)
        return schema


NonNeg = Annotated[float, Js(minimum=0)]
Fraction = Annotated[float, Js(minimum=0, maximum=1)]
Count = Annotated[int, Js(minimum=0)]
Position = Annotated[int, Js(minimum=1)]
Sha256 = Annotated[str, Js(pattern="^[0-9a-f]{64}$")]

Verdict = Literal["chunked-prefill", "disaggregate"]
PlanKind = Literal["colocated", "unchunked", "disaggregated"]
GateCheck = Literal["slo-achievable", "mode", "preconditions", "deployment-slo", "split"]
DecidingRule = Literal["gain", "gpu-scale", "kv-bandwidth", "traffic-mix", "not-applicable",
                       "no-split", "meets-slo"]
PreconditionId = Literal["gpu-scale", "kv-bandwidth", "traffic-mix"]


class Tool(TypedDict):
    name: Literal["pd-advisor"]
    version: str


class Quantiles(TypedDict):
    """A latency's p50, p95 and p99."""

    p50: NonNeg
    p95: NonNeg
    p99: NonNeg


class SpeculativeEffect(TypedDict):
    """A plan's decode instance with and without the deployment's speculative decoding
    (docs/model.md §3.6)."""

    plan: Literal["colocated", "disaggregated"]
    instance: str
    context_tokens: NonNeg
    tokens_per_step: NonNeg
    decode_step_ms_at_batch_1: NonNeg
    draft_ms_at_batch_1: NonNeg
    tpot_ms_at_batch_1: NonNeg
    tpot_ms_at_batch_1_without: NonNeg
    max_decode_batch_at_tpot_slo: NonNeg | None
    max_decode_batch_at_tpot_slo_without: NonNeg | None


class SpeculativeInput(TypedDict):
    """``deployment.speculative`` as resolved, and its effect on the chosen plans."""

    method: Literal["eagle3", "mtp", "ngram", "draft-model"]
    draft_tokens: Count
    acceptance_rate: Fraction | None
    """Per-token acceptance (None when accepted tokens per step were given instead)."""
    accepted_tokens_per_step: NonNeg
    """τ: mean tokens per verify step, given or (1 − a^(k+1))/(1 − a)."""
    acceptance_source: Literal["workload", "default"]
    default_acceptance_source: str | None
    """Where the method's default acceptance comes from (when it is used)."""
    verify_tokens_per_sequence: Count
    draft_model: str | None
    effect: list[SpeculativeEffect]


WeightFormat = Literal["bf16", "fp16", "fp8", "fp8-block", "fp4", "mxfp4", "int4"]


class GroupFormat(TypedDict):
    """One layer group's stored weight format and the matmul format it runs in on this GPU."""

    weights: WeightFormat
    compute: Literal["bf16", "fp8", "fp4"]


class GroupFormats(TypedDict):
    """The formats in force per layer group (the workload's, else the checkpoint's, else
    ``weights``; docs/model.md §1.1)."""

    experts: GroupFormat
    attention: GroupFormat
    dense: GroupFormat
    lm_head: GroupFormat


class PrecisionTensors(TypedDict):
    """Weight and KV-cache formats, and the matmul format on this GPU (bf16 incl. weight-only);
    ``groups`` only when a layer group has a format of its own."""

    weights: WeightFormat
    kv_cache: Literal["bf16", "fp16", "fp8"]
    compute: Literal["bf16", "fp8", "fp4"]
    groups: NotRequired[GroupFormats]
