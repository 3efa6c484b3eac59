"""The scalar vocabulary of the typed report documents (:mod:`advisor.render.document`):
numbers with their JSON-Schema bounds, percentiles, and the closed sets of names (verdicts,
plan kinds, gate checks, rules). Imported only for type checking and to generate the schema,
as the documents are."""

from __future__ import annotations

from typing import Annotated, Any, Literal

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


class Quantiles(TypedDict):
    """A latency's p50, p95 and p99."""

    p50: NonNeg
    p95: NonNeg
    p99: NonNeg
