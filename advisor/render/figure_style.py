"""Colours, line styles and hatches shared by every figure (the report's and the sweep's).

One colour per plan, the same in every panel and every figure (#28): the colocated pool with
chunked prefill, the disaggregated prefill/decode pools, the unchunked colocated pool. Nothing
else drawn uses these three colours (pools, TTFT parts, regions take others or light tints),
and each artist drawn for a plan carries the gid ``plan:<key>`` so that a test can check it.

Okabe & Ito (2008), "Color Universal Design" (https://jfly.uni-koeln.de/color/): eight
colours distinguishable with every common colour vision deficiency; every series also
differs by line style and marker (curves) or hatch (bars), so the figures read in grayscale.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from advisor.core.analysis.figure_data import COLOCATED, DISAGGREGATED, UNCHUNKED


@dataclass(frozen=True, kw_only=True)
class PlanStyle:
    """How one plan is drawn."""

    color: str
    tint: str
    """A light version (25 % of the colour on white) for regions: the verdict's area."""
    ls: str
    marker: str
    hatch: str


PLAN_STYLE = {
    COLOCATED: PlanStyle(color="#0072B2", tint="#BFDCEC", ls="-", marker="o", hatch=""),
    DISAGGREGATED: PlanStyle(color="#D55E00", tint="#F4D7BF", ls="--", marker="s", hatch="//"),
    UNCHUNKED: PlanStyle(color="#009E73", tint="#BFE7DC", ls=":", marker="^", hatch=".."),
}
PLAN_COLORS = {plan: style.color for plan, style in PLAN_STYLE.items()}
"""The one colour of each plan."""

POOLS = {"prefill": ("#E69F00", "//"), "decode": ("#56B4E9", ".."), "idle": ("#BBBBBB", "xx")}
"""GPU pools of a split: colour and hatch."""
PARTS = {"queueing": ("queueing", "#CC79A7", "xx"), "prefill": ("prefill", "#E69F00", "//"),
         "kv_transfer": ("KV transfer", "#F0E442", "\\\\"),
         "decode_step": ("decode step in progress", "#56B4E9", ".."),
         "overhead": ("per-request overhead", "#999999", "--")}
"""TTFT parts: label, colour, hatch (prefill and decode as the pools)."""
INFEASIBLE_COLOR = "#666666"
INFEASIBLE_HATCH = "xxx"
"""Where no plan meets the SLOs: grey cross-hatching over whatever lies beneath."""
SLO_LINE = {"color": "black", "ls": "-.", "lw": 1.2}
NEUTRAL = "#444444"
BAR_LINE = {"color": NEUTRAL, "ls": (0, (6, 3)), "lw": 1.1}
"""The disaggregation bar: the colocated line raised by ``min_disagg_gain``."""
WORKLOAD_LINE = {"color": "#555555", "ls": ":", "lw": 1.2}


def plan_gid(plan: str) -> str:
    """The gid of an artist drawn for ``plan``."""
    return f"plan:{plan}"


def tagged_legend(owner: Any, handles: list[Any], **kwargs: Any) -> Any:
    """``owner.legend(handles=…)`` (an axes' or a figure's) whose drawn handles keep the gids
    of the artists they stand for (a plan's)."""
    legend = owner.legend(handles=handles, **kwargs)
    for drawn, handle in zip(legend.legend_handles, handles, strict=True):
        if drawn is not None and handle.get_gid():
            drawn.set_gid(handle.get_gid())
    return legend
