"""The terminal report: reading order, 80 columns, no colour codes unless asked."""

from __future__ import annotations

from typing import Any

import pytest

from advisor.render.table import render_table
from tests.render.reports import ACCEPTANCE, ALL_WORKLOADS, REPO_ROOT, check_doc_for, report_for


def by_name(fragment: str) -> dict[str, Any]:
    return report_for(next(p for p in ACCEPTANCE if fragment in p.stem))


@pytest.mark.parametrize("path", ALL_WORKLOADS, ids=lambda p: p.stem)
def test_fits_80_columns(path: Any) -> None:
    text = render_table(report_for(path), width=80)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "\x1b[" not in text
    assert all(line == line.rstrip() for line in text.splitlines())


def test_sections_in_reading_order() -> None:
    text = render_table(by_name("day-night"), width=100)
    lines = [line.strip("╭─ ").split(" ─")[0] for line in text.splitlines()]
    order = ["Chunked prefill on a colocated pool", "Plans at the offered rate — phase night",
             "Right-sizing", "Preconditions for disaggregation", "Declared deployment",
             "Inputs", "P:D splits — phase night", "KV transfer", "Interference (colocated)",
             "Phases"]
    positions = [next(i for i, line in enumerate(lines) if line == heading)
                 for heading in order]
    assert positions == sorted(positions)
    assert "✗ traffic-mix" in text and "✓ kv-bandwidth" in text


def test_slo_unmet_is_said_first_and_plainly() -> None:
    doc = by_name("long-prompt")
    assert doc["slo_met"] is False
    text = render_table(doc, width=80)
    assert text.index("NO PLAN MEETS THE SLOs") < text.index("Inputs")
    assert "GPUs it would take" in text and "carries within the SLOs" in text
    assert "(no plan meets the SLOs)" in text


def test_slo_met_has_no_warning_panel() -> None:
    text = render_table(by_name("chat-8b"), width=100)
    assert "NO PLAN MEETS" not in text


def test_colour_only_when_asked() -> None:
    doc = by_name("chat-8b")
    assert "\x1b[" in render_table(doc, width=100, color=True)


def test_markup_in_text_is_printed_verbatim() -> None:
    doc = dict(by_name("chat-8b"), summary="[bold]not markup[/bold] [x]")
    assert "[bold]not markup[/bold] [x]" in render_table(doc, width=120)


def test_check_run_table_lists_locations() -> None:
    bad = REPO_ROOT / "tests" / "data" / "bad" / "syntax-error.yaml"
    doc = check_doc_for((ACCEPTANCE[0], bad))
    text = render_table(doc, width=100)
    assert "✓ PASS" in text and "✗ ERROR" in text
    assert "tests/data/bad/syntax-error.yaml:10:16:" in text
    assert text.rstrip().endswith("1 could not be evaluated")
