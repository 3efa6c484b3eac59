"""#28's four cases, each a contradiction a new user saw in the reports of main ca772fa, as the
fixed behaviour: one decision, shown the same in the table, markdown and HTML.

- agents-70b (closed loop): "no plan meets the SLOs" above a table where the split met them,
  and the chunked plan that misses TPOT recommended;
- a workload ``fit`` from the Mooncake conversation trace
  (``tests/data/acceptance/mooncake-conversation-fit.yaml``): the gain taken against the
  chunked plan while the unchunked one carried more;
- day-night-shift: a plans table mixing phases, a "best" split below its "runner-up", a
  boundary saying "(now 20)" for a phase at 4 req/s, ``[split-off]`` measured against another
  split than the verdict's;
- chat-8b: 8 GPUs carrying ~11× the offered rate, said nowhere in the table.

They pin behaviour (who is recommended, what is said, that the formats agree), not today's
values.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import pytest

from advisor.render import numbers as n
from advisor.render.headline import gain_text, headline
from advisor.render.html import render_html
from advisor.render.markdown import render_markdown
from advisor.render.table import render_table
from tests.render.reports import REPO_ROOT, check_doc_for, report_for

EXAMPLES = REPO_ROOT / "examples"
AGENTS = EXAMPLES / "agents-70b-closed-loop.yaml"
DAY_NIGHT = EXAMPLES / "day-night-shift.yaml"
CHAT = EXAMPLES / "chat-8b-single-node.yaml"
MOONCAKE = REPO_ROOT / "tests" / "data" / "acceptance" / "mooncake-conversation-fit.yaml"
PLANS = ("colocated", "unchunked", "disaggregated")


@cache
def _formats(name: str) -> dict[str, str]:
    doc = report_for(REPO_ROOT / name)
    return {"table": render_table(doc, width=120), "markdown": render_markdown(doc),
            "html": render_html(doc)}


def _text(path: Any) -> dict[str, str]:
    return _formats(str(path.relative_to(REPO_ROOT)))


def _sizing(doc: dict[str, Any], plan: str) -> dict[str, Any]:
    return next(s for s in doc["decision"]["sizing"] if s["plan"] == plan)


def _meets(doc: dict[str, Any]) -> dict[str, bool]:
    return {p: _sizing(doc, p)["meets_slo"] for p in PLANS}


def test_agents_recommends_the_split_that_meets_the_slos() -> None:
    """Only the split meets the TPOT SLO at the offered rate: it is recommended, saying it
    overrode traffic-mix; no format says "no plan meets the SLOs"; the gate has no
    ``[slo-unmet]``; the GPU/rate knife edge is said, with its flip points."""
    doc = report_for(AGENTS)
    meets = _meets(doc)
    assert meets["disaggregated"] and not meets["colocated"] and not meets["unchunked"]
    assert doc["verdict"] == "disaggregate" and doc["slo_met"] is True
    assert doc["decision"]["recommended"] == "disaggregated"
    assert doc["deciding_rule"] == "meets-slo"
    assert "traffic-mix" in doc["decision"]["overridden"]
    assert doc["decision"]["rule_verdict"] == "chunked-prefill"
    for fmt, text in _text(AGENTS).items():
        assert "no plan meets the slos" not in text.lower(), fmt
        assert "set aside: traffic-mix fails" in text, fmt
    findings = [f["id"] for e in check_doc_for((AGENTS,))["files"] for f in e["findings"]]
    assert "slo-unmet" not in findings
    edges = doc["decision"]["knife_edges"]
    assert edges and all(abs(e["change"]) <= 0.1 + 1e-9 for e in edges)
    for e in edges:
        assert e["flips_at"] == pytest.approx(e["current"] * (1 + e["change"]), rel=1e-6)
    assert "Knife edge" in _text(AGENTS)["table"]


def test_mooncake_fit_measures_the_gain_against_the_better_colocated_plan() -> None:
    """On the fitted conversation workload the unchunked pool carries more than the chunked
    one: the gain is measured against it, and with no plan meeting the SLOs the recommended
    plan is the one carrying the most, the report saying "no plan meets" in every format."""
    doc = report_for(MOONCAKE)
    c, u = (_sizing(doc, p)["headroom"] for p in ("colocated", "unchunked"))
    assert u > c
    assert doc["decision"]["baseline"] == "unchunked"
    assert not any(_meets(doc).values())
    assert doc["slo_met"] is False and doc["decision"]["any_plan_meets"] is False
    rec = doc["decision"]["recommended"]
    assert _sizing(doc, rec)["headroom"] == max(_sizing(doc, p)["headroom"] for p in PLANS)
    for fmt, text in _text(MOONCAKE).items():
        assert "no plan meets the slos" in text.lower(), fmt
        assert "best colocated plan (whole-prompt prefill)" in text, fmt


def test_day_night_plans_are_one_phase_and_the_best_split_is_best() -> None:
    """The plans table is the binding phase's, every column; the P:D table's best split
    carries at least every runner-up; one rounding loss; the rate boundary names the binding
    phase's own rate; ``[split-off]`` measures the declared split against the verdict's
    (static) split."""
    doc = report_for(DAY_NIGHT)
    d = doc["decision"]
    binding = d["binding_phase"]
    phase = next(p for p in d["phases"] if p["name"] == binding)
    row = next(p for p in doc["phases"] if p["name"] == binding)
    assert doc["static_allocation"] is not None  # static pools: the verdict judges that split
    key = {"colocated": "colocated_max_goodput_rps", "unchunked": "unchunked_max_goodput_rps",
           "disaggregated": "static_goodput_rps"}
    for plan in PLANS:  # the decision's per-phase plans are the phases table's numbers
        assert phase[plan]["max_goodput_rps"] == row[key[plan]]
        # the JSON's top-level plan (schema v1) is the plan in its own binding phase
        own = _sizing(doc, plan)["binding_phase"]
        own_row = next(p for p in doc["phases"] if p["name"] == own)
        assert doc[plan]["max_goodput_rps"] == own_row[key[plan]]
    assert phase["best_split"]["max_goodput_rps"] == row["disaggregated_max_goodput_rps"]
    table = _text(DAY_NIGHT)["table"]
    plans = table[table.index("Plans at the offered rate"):table.index("Right-sizing")]
    assert f"phase {binding}" in plans
    assert n.rps(phase["unchunked"]["max_goodput_rps"]) in plans
    other = next(p for p in d["phases"] if p["name"] != binding)
    assert n.rps(other["unchunked"]["max_goodput_rps"]) not in plans
    splits = [s for s in d["splits"] if s["role"] != "static"]
    best = [s for s in splits if s["role"] == "best"]
    assert len(best) == 1
    assert all(best[0]["max_goodput_rps"] >= s["max_goodput_rps"] for s in splits)
    losses = set(re.findall(r"whole instances lose ([\d.]+%)", table, flags=re.IGNORECASE))
    assert losses == {n.pct(doc["rounding_loss"])}
    rate = next(b for b in doc["boundaries"]
                if b["key"] == "traffic.rate_rps" and b["kind"] == "slo")
    # the JSON keeps the workload-wide rate (schema v1); the words scale it to the phase
    safe = rate["flips_at"] / rate["current"] * phase["rate_rps"]
    assert (f"up to {n.rps(safe)} in phase '{binding}' (now {n.num(phase['rate_rps'])})"
            in rate["description"])
    static = doc["static_allocation"]
    assert static is not None
    assert doc["deployed"]["best_split_prefill_gpus"] == static["prefill_gpus"]
    assert f"the static split's {static['prefill_gpus']}" in table


def test_chat_says_how_over_provisioned_it_is() -> None:
    """8 GPUs carry ~11× the 10 req/s offered: the right-sizing section of every format says
    over-provisioned and how many GPUs would carry the rate."""
    doc = report_for(CHAT)
    rec = _sizing(doc, doc["decision"]["recommended"])
    assert rec["over_provisioned"] and rec["headroom"] > 5
    assert rec["gpus_needed"] is not None and rec["gpus_needed"] < rec["gpus"]
    needed = n.gpus(rec["gpus_needed"])
    for fmt, text in _text(CHAT).items():
        text = " ".join(text.split())
        assert "over-provisioned" in text, fmt
        assert f"{needed} would carry it" in text, fmt
        assert n.factor(rec["headroom"]) in text, fmt


@pytest.mark.parametrize("path", [AGENTS, DAY_NIGHT, CHAT, MOONCAKE], ids=lambda p: p.stem)
def test_the_headline_is_the_same_in_every_format(path: Any) -> None:
    """The verdict line (verdict, gain, reason) is one computation shown in every format."""
    doc = report_for(path)
    head = headline(doc)
    assert head.gain == gain_text(doc)
    for fmt, text in _text(path).items():
        flat = " ".join(text.split())
        assert head.verdict in flat and " ".join(head.gain.split()) in flat, fmt
