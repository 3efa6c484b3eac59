"""The one-line verdict every human-readable report leads with: verdict, gain, deciding reason.

:func:`deciding_reason` is the single place that picks the reason: the rule engine's
``headline_reason`` (the reason of the rule that decided, ``deciding_rule``), a failed
precondition's shortened to its measured value and limit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from advisor.render import text as t


@dataclass(frozen=True)
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


def deciding_reason(doc: Mapping[str, Any]) -> str:
    """The reason that decided the verdict (``headline_reason``, else the first reason); a
    failed precondition that decided is shortened to its measured value and limit (its
    explanation follows in the report)."""
    reasons = doc.get("reasons") or []
    reason = str(doc.get("headline_reason") or (reasons[0] if reasons else "")
                 or doc.get("summary") or "")
    rule = doc.get("deciding_rule")
    for p in doc.get("preconditions") or []:
        if p.get("passed") is False and (p["id"] == rule or reason.startswith(f"{p['id']} fails")):
            measured, limit = t.precondition_values(p)
            return f"{p['id']} fails ({measured} measured, limit {limit})"
    return reason


def gain_text(doc: Mapping[str, Any]) -> str:
    """Disaggregation's modelled goodput gain over the best colocated pool, and the bar."""
    needs = (doc.get("policy") or {}).get("min_disagg_gain")
    bar = f" (needs ≥ {t.pct(needs)})" if needs is not None else ""
    if doc.get("disagg_gain_unbounded"):
        return "disaggregation gain unbounded (colocated carries nothing within the SLOs)"
    gain = doc.get("disagg_gain")
    if gain is None:
        return "disaggregation gain not defined (no plan carries goodput)"
    if gain < 0:  # a loss reads as one
        needs_gain = f" (needs a gain ≥ {t.pct(needs)})" if needs is not None else ""
        return f"disaggregation loses {t.pct(-gain)}{needs_gain}"
    sign = "+" if gain > 0 else ""
    return f"disaggregation gain {sign}{t.pct(gain)}{bar}"


def headline(doc: Mapping[str, Any]) -> Headline:
    """The headline of a recommendation document."""
    verdict = str(doc["verdict"])
    return Headline(verdict, t.verdict_title(verdict), bool(doc.get("slo_met", True)),
                    gain_text(doc), deciding_reason(doc))
