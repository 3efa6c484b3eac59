"""#28's properties of the decision document over generated workloads (1–4 phases, 1–4,096
GPUs, dense and MoE models of the built-in profiles): the headline is the tables' numbers,
the best split carries at least every runner-up, "no plan meets the SLOs" exactly when none
does, the recommended plan meets them whenever any plan does, every per-phase plan is that
phase's, and the table, markdown and HTML show the same sections in the same order.

The default tier draws a few workloads (the decision of a generated workload costs up to a
second); ``-m thorough`` draws more.
"""

from __future__ import annotations

import hashlib
import html
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from advisor.core.plan.evaluate import evaluate
from advisor.core.verdict.decision import decide
from advisor.loading.resolve import load_scenario
from advisor.render.headline import headline
from advisor.render.html import render_html
from advisor.render.markdown import render_markdown
from advisor.render.report_json import build_report
from advisor.render.table import render_table
from advisor.render.view import section_titles
from tests.fuzz.strategies import to_yaml, workloads
from tests.render.reports import ALL_WORKLOADS, relative, report_for
from tests.sweep.helpers import catalog

PLANS = ("colocated", "unchunked", "disaggregated")


def _report(doc: dict[str, Any]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "workload.yaml"
        path.write_text(to_yaml(doc), encoding="utf-8")
        sc = load_scenario(path, catalog())
    return dict(build_report(sc, decide(sc, evaluate(sc)), "workload.yaml",
                            hashlib.sha256(b"").hexdigest()))


def _flat(text: str) -> str:
    return " ".join(text.split())


def _formats(doc: dict[str, Any]) -> dict[str, str]:
    return {"table": _flat(render_table(doc, width=200)),
            "markdown": _flat(render_markdown(doc)),
            "html": _flat(html.unescape(render_html(doc)))}


def assert_one_decision(doc: dict[str, Any]) -> None:
    """Every property of #28's list on one recommendation document."""
    d = doc["decision"]
    sizing = {s["plan"]: s for s in d["sizing"]}
    meets = {p: bool(sizing[p]["exists"] and sizing[p]["meets_slo"]) for p in PLANS}
    # "no plan meets the SLOs" iff none does; the recommended plan meets them if any does
    assert d["any_plan_meets"] == any(meets.values())
    assert doc["slo_met"] == any(meets.values())
    if any(meets.values()):
        assert meets[d["recommended"]], (d["recommended"], meets)
    assert (doc["verdict"] == "disaggregate") == (d["recommended"] == "disaggregated")
    # the best split carries at least every runner-up (the static split is ranked apart)
    ranked = [s for s in d["splits"] if s["role"] != "static"]
    best = [s for s in ranked if s["role"] == "best"]
    assert len(best) <= 1
    if best:
        assert all(best[0]["max_goodput_rps"] >= s["max_goodput_rps"] for s in ranked)
    # every per-phase plan is that phase's: the phases table's numbers, phase by phase
    static = doc["static_allocation"] is not None
    rows = {p["name"]: p for p in doc["phases"]}
    for phase in d["phases"]:
        row = rows[phase["name"]]
        assert phase["rate_rps"] == row["rate_rps"]
        keys = {"colocated": "colocated_max_goodput_rps",
                "unchunked": "unchunked_max_goodput_rps",
                "disaggregated": "static_goodput_rps" if static
                else "disaggregated_max_goodput_rps"}
        for plan, key in keys.items():
            got = (phase[plan] or {}).get("max_goodput_rps")
            assert got == row[key] or (got is None and not row[key]), (phase["name"], plan)
    assert d["binding_phase"] in rows
    # the headline is the same words in every format; the same sections, in the same order
    head = headline(doc)
    titles = [_flat(t) for t in section_titles(doc)]
    for fmt, text in _formats(doc).items():
        assert head.verdict in text and _flat(head.gain) in text, fmt
        assert ("no plan meets the slos" in text.lower()) == (not any(meets.values())), fmt
        at = 0
        for title in titles:
            found = text.lower().find(title.lower(), at)
            assert found >= 0, (fmt, title)
            at = found + len(title)


@pytest.mark.parametrize("path", ALL_WORKLOADS, ids=lambda p: p.stem)
def test_the_shipped_workloads_show_one_decision(path: Path) -> None:
    assert_one_decision(report_for(path))
    assert relative(path)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=workloads(resolvable=True, max_gpus=4096, max_phases=4))
def test_generated_workloads_show_one_decision(doc: dict[str, Any]) -> None:
    assert_one_decision(_report(doc))


@pytest.mark.thorough
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=workloads(resolvable=True, max_gpus=4096, max_phases=4))
def test_more_generated_workloads_show_one_decision(doc: dict[str, Any]) -> None:
    assert_one_decision(_report(doc))
