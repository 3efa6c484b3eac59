"""What a plan costs: dollars per hour and per million output tokens (docs/model.md §12).

A plan runs on the workload's cluster, and every GPU of it is billed, the ones a plan leaves
idle (rounding into whole instances, an unused remainder) included:

    usd_per_hour = cluster GPUs × price per GPU-hour
    usd_per_million_output_tokens = usd_per_hour / (max goodput × mean output tokens × 3600) · 10⁶

at the plan's max goodput (the most it carries within the SLOs), so the per-token figure is
the best the plan can do; at a lower rate the same hour buys fewer tokens. The price is the
workload's ``cluster.price_per_gpu_hour`` when set, else the GPU profile's public reference
price (``kind: estimate``: one provider's on-demand list price at one date). Without either,
both figures are None.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True)
class PlanCost:
    """The price of one plan (None where there is no price or no goodput)."""

    usd_per_hour: float | None
    usd_per_million_output_tokens: float | None


def plan_cost(gpus: int, usd_per_gpu_hour: float | None, max_goodput_rps: float | None,
              output_tokens_mean: float) -> PlanCost:
    """The cost of ``gpus`` GPUs carrying ``max_goodput_rps`` requests of
    ``output_tokens_mean`` output tokens (module docstring)."""
    if usd_per_gpu_hour is None:
        return PlanCost(None, None)
    per_hour = gpus * usd_per_gpu_hour
    tokens_per_hour = (max_goodput_rps or 0.0) * output_tokens_mean * SECONDS_PER_HOUR
    if not (tokens_per_hour > 0 and math.isfinite(tokens_per_hour)):
        return PlanCost(per_hour, None)
    return PlanCost(per_hour, per_hour / tokens_per_hour * 1e6)
