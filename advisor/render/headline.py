"""The one-line verdict every human-readable report leads with: verdict, gain, deciding reason.

:func:`deciding_reason` is the single place that picks the reason: the decision's
``headline_reason`` (the reason of the rule that decided, ``deciding_rule``), a failed
precondition's shortened to its measured value and limit (its explanation follows in the
report). Every number comes from the document and is written by :mod:`advisor.render.numbers`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from advisor.render import numbers as n

if TYPE_CHECKING:
    from advisor.render.document import Recommendation


@dataclass(frozen=True, kw_only=True)
class Headline:
    """The parts of the one-line verdict (plain text; each renderer escapes them)."""

    verdict: str
    """``disaggregate`` or ``chunked-prefill``."""
    title: str
    """``Disaggregate prefill and decode``."""
    slo_met: bool
    gain: str
    """``disaggregation gain +194% (needs ≥ 10%)``."""
    reason: str

    def line(self) -> str:
        """``VERDICT disaggregate · disaggregation gain +194% (needs ≥ 10%) · because …``."""
        unmet = " (no plan meets the SLOs)" if not self.slo_met else ""
        reason = f" · because {self.reason}" if self.reason else ""
        return f"VERDICT {self.verdict}{unmet} · {self.gain}{reason}"


def deciding_reason(doc: Recommendation) -> str:
    """The reason that decided the verdict (``headline_reason``); a failed precondition that
    decided is shortened to its measured value and limit."""
    from advisor.render.view import check

    reason = doc["headline_reason"] or (doc["reasons"][0] if doc["reasons"] else "")
    rule = doc["deciding_rule"]
    for p in doc["preconditions"]:
        if p["status"] == "fail" and p["id"] == rule:
            limit = n.pct(p["threshold"]) if p["unit"] == "fraction" else (
                f"{n.num(p['threshold'])} {p['unit']}")
            return f"{p['id']} fails ({check(p).measured} measured, limit {limit})"
    return reason


def gain_text(doc: Recommendation) -> str:
    """Disaggregation's modelled goodput gain over the best colocated plan, and the bar."""
    needs = doc["policy"].get("min_disagg_gain")
    bar = f" (needs ≥ {n.pct(needs)})" if needs is not None else ""
    if doc["disagg_gain_unbounded"]:
        return "disaggregation gain unbounded (colocated carries nothing within the SLOs)"
    gain = doc["disagg_gain"]
    if gain is None:
        return "disaggregation gain not defined (no plan carries goodput)"
    if gain < 0:  # a loss reads as one
        needs_gain = f" (needs a gain ≥ {n.pct(needs)})" if needs is not None else ""
        return f"disaggregation loses {n.pct(-gain)}{needs_gain}"
    return f"disaggregation gain {n.signed_pct(gain)}{bar}"


def headline(doc: Recommendation) -> Headline:
    """The headline of a recommendation document."""
    from advisor.render.view import title

    return Headline(verdict=doc["verdict"], title=title(doc),
                    slo_met=doc["decision"]["any_plan_meets"],
                    gain=gain_text(doc), reason=deciding_reason(doc))
