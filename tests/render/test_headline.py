"""Every human-readable report leads with one line: verdict, gain, deciding reason; markdown
links the figure and stays within a GitHub comment."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from advisor.render.formats import Figure, Format, render
from advisor.render.headline import deciding_reason, headline
from advisor.render.markdown import MARKER, render_markdown
from tests.render.reports import EXAMPLES, REPO_ROOT, report_for

GITHUB_COMMENT_LIMIT = 65_536
PREFILL_HEAVY = REPO_ROOT / "examples" / "prefill-heavy-70b-ib.yaml"
DAY_NIGHT = REPO_ROOT / "examples" / "day-night-shift.yaml"


def test_headline_of_a_disaggregate_verdict() -> None:
    head = headline(report_for(PREFILL_HEAVY))
    assert head.verdict == "disaggregate" and head.slo_met
    assert head.gain == "disaggregation gain +194% (needs ≥ 10%)"
    assert head.reason == report_for(PREFILL_HEAVY)["headline_reason"]


def test_a_failed_precondition_is_named_with_its_measured_value() -> None:
    doc = report_for(DAY_NIGHT)
    assert doc["deciding_rule"] == "traffic-mix"
    assert doc["headline_reason"].startswith("traffic-mix fails")
    assert deciding_reason(doc) == "traffic-mix fails (20% measured, limit 10%)"
    assert headline(doc).gain == "disaggregation loses 24% (needs a gain ≥ 10%)"


def test_unbounded_and_missing_gain() -> None:
    doc: dict[str, Any] = dict(report_for(PREFILL_HEAVY), disagg_gain_unbounded=True)
    assert "unbounded" in headline(doc).gain
    doc = dict(report_for(PREFILL_HEAVY), disagg_gain=None, disagg_gain_unbounded=False)
    assert "not defined" in headline(doc).gain


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_table_leads_with_the_verdict(path: Any) -> None:
    doc = report_for(path)
    lines = render(doc, Format.table).splitlines()
    assert lines[0].startswith("pd-advisor · ")
    missed = "" if doc["slo_met"] else " (no plan meets the SLOs)"
    assert lines[1].startswith(f"VERDICT {doc['verdict']}{missed} · disaggregation ")
    # before any detail section
    assert lines.index("Inputs") > 1


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_markdown_leads_with_the_verdict(path: Any) -> None:
    doc = report_for(path)
    lines = render(doc, Format.markdown).splitlines()
    assert lines[0] == MARKER
    verdict = next(i for i, line in enumerate(lines) if line.startswith("**Verdict: "))
    assert verdict == 3 and "disaggregation " in lines[verdict] and "because" in lines[verdict]
    assert verdict < next(i for i, line in enumerate(lines) if line.startswith("### "))


def test_markdown_references_the_plot() -> None:
    doc = report_for(PREFILL_HEAVY)
    text = render(doc, Format.markdown, figure=Figure(path="out/my figure (1).svg"))
    assert "![latency-load curves, P:D split and TTFT parts](out/my%20figure%20%281%29.svg)" \
        in text
    assert "![" not in render(doc, Format.markdown)


def test_markdown_stays_within_a_github_comment() -> None:
    doc = copy.deepcopy(report_for(DAY_NIGHT))
    doc["warnings"] = [{"id": f"w{i}", "message": "x" * 300} for i in range(400)]
    doc["measure_next"] = ["y" * 300] * 200
    doc["phases"] = doc["phases"] * 60
    text = render_markdown(doc, figure="figure.svg")
    assert len(text) <= GITHUB_COMMENT_LIMIT
    assert text.startswith(MARKER + "\n") and "**Verdict: `chunked-prefill`**" in text
    assert "figure.svg" in text
    assert "to fit a PR comment" in text
    # a normal report keeps every section
    normal = render_markdown(report_for(DAY_NIGHT))
    assert "<summary>Phases</summary>" in normal and "to fit a PR comment" not in normal


def test_one_enormous_line_is_cut_too() -> None:
    doc = copy.deepcopy(report_for(PREFILL_HEAVY))
    doc["summary"] = "z" * 200_000
    text = render_markdown(doc)
    assert len(text) <= GITHUB_COMMENT_LIMIT and text.startswith(MARKER)
