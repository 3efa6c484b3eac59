"""The one-line verdict every human-readable report leads with: verdict, gain, deciding reason.

:func:`deciding_reason` is the single place that picks the reason: today the verdict's first
reason (the rule engine lists the deciding one first); when the verdict carries an explicit
deciding rule, only that function changes.
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
    """The reason that decided the verdict: the verdict's first reason; a failed
    precondition's reason shortened to its measured value and limit (its explanation
    follows in the report)."""
    reasons = doc.get("reasons") or []
    if not reasons:
        return str(doc.get("summary") or "")
    reason = str(reasons[0])
    for p in doc.get("preconditions") or []:
        if reason.startswith(f"{p['id']} fails"):
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
    sign = "+" if gain > 0 else ""
    return f"disaggregation gain {sign}{t.pct(gain)}{bar}"


def headline(doc: Mapping[str, Any]) -> Headline:
    """The headline of a recommendation document."""
    verdict = str(doc["verdict"])
    return Headline(verdict, t.verdict_title(verdict), bool(doc.get("slo_met", True)),
                    gain_text(doc), deciding_reason(doc))
