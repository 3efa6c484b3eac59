"""Every format renders both documents; format-specific rules (markers, escaping, SARIF, JUnit)."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from typing import Any

import pytest

from advisor.render.formats import RECOMMEND_FORMATS, Format, RecommendFormat, render, renderer
from advisor.render.github import command, escape_data, escape_property, render_github
from advisor.render.markdown import MARKER, cell
from advisor.render.report_json import GATE_CHECKS, as_check
from advisor.render.sarif import build_sarif
from tests.render.reports import ACCEPTANCE, EXAMPLES, REPO_ROOT, check_doc_for, report_for

ANSI = re.compile(r"\x1b\[")


@pytest.fixture(scope="module")
def recommendation() -> dict[str, Any]:
    return report_for(ACCEPTANCE[0])


@pytest.fixture(scope="module")
def check_run() -> dict[str, Any]:
    bad = REPO_ROOT / "tests" / "data" / "bad" / "syntax-error.yaml"
    return check_doc_for((*EXAMPLES, *ACCEPTANCE, bad))


def test_renderer_mapping_is_exhaustive() -> None:
    for fmt in Format:
        assert callable(renderer(fmt))
    assert {f.value for f in RecommendFormat} == {f.value for f in RECOMMEND_FORMATS}
    assert set(RECOMMEND_FORMATS) <= set(Format)


@pytest.mark.parametrize("fmt", list(Format), ids=lambda f: f.value)
def test_every_format_renders_both_documents(fmt: Format, recommendation: dict[str, Any],
                                             check_run: dict[str, Any]) -> None:
    for doc in (recommendation, check_run):
        text = render(doc, fmt)
        assert text.strip()
        assert text.endswith("\n")
        assert not ANSI.search(text)


def test_json_is_the_document(recommendation: dict[str, Any]) -> None:
    assert json.loads(render(recommendation, Format.json)) == recommendation


def test_markdown_starts_with_marker(recommendation: dict[str, Any],
                                     check_run: dict[str, Any]) -> None:
    for doc in (recommendation, check_run):
        assert render(doc, Format.markdown).splitlines()[0] == MARKER


def test_markdown_cell_escaping() -> None:
    assert cell("a|b\nc <x> & y") == "a\\|b c &lt;x&gt; &amp; y"


def test_github_escaping() -> None:
    assert escape_data("50% done\r\nnext") == "50%25 done%0D%0Anext"
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    assert command("error", "x: 5%, y", file="dir/a,b.yaml", line=3, col=5,
                   title="pd-advisor t") == (
        "::error file=dir/a%2Cb.yaml,line=3,col=5,title=pd-advisor t::x: 5%25, y")


def test_github_groups_and_annotations(check_run: dict[str, Any]) -> None:
    lines = render_github(check_run).splitlines()
    assert sum(line.startswith("::group::") for line in lines) == len(check_run["files"])
    assert sum(line == "::endgroup::" for line in lines) == len(check_run["files"])
    errors = [line for line in lines if line.startswith("::error ")]
    expected = sum(len(f["findings"]) + len(f["problems"]) for f in check_run["files"])
    assert len(errors) == expected > 0
    for line in errors:
        assert re.match(r"^::error file=[^,:]+,line=\d+,col=\d+,title=[^:,]+::\S", line), line
    assert lines[-1].startswith("pd-advisor: ")


def test_sarif_shape(check_run: dict[str, Any]) -> None:
    sarif = build_sarif(check_run)
    assert sarif["version"] == "2.1.0" and "sarif-2.1.0" in sarif["$schema"]
    run = sarif["runs"][0]
    rule_ids = {r["id"] for r in run["tool"]["driver"]["rules"]}
    assert run["results"]
    for result in run["results"]:
        assert result["ruleId"] in rule_ids
        region = result["locations"][0]["physicalLocation"]["region"]
        assert region["startLine"] >= 1 and region["startColumn"] >= 1
        uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert not uri.startswith("/")
    assert run["invocations"][0]["executionSuccessful"] is False  # the bad file


def test_junit_one_case_per_file_and_check(check_run: dict[str, Any]) -> None:
    root = ET.fromstring(render(check_run, Format.junit).split("\n", 1)[1])
    suites = root.findall("testsuite")
    assert len(suites) == len(check_run["files"])
    for suite, entry in zip(suites, check_run["files"], strict=True):
        names = [case.get("name") for case in suite.findall("testcase")]
        if entry["status"] == "error":
            assert names == ["evaluate"]
            assert suite.find("testcase/error") is not None
        else:
            assert names == list(GATE_CHECKS)
            assert int(suite.get("failures", "0")) == len({f["check"] for f in entry["findings"]})
    assert int(root.get("tests", "0")) == sum(int(s.get("tests", "0")) for s in suites)


def test_check_only_formats_accept_a_recommendation(recommendation: dict[str, Any]) -> None:
    single = as_check(recommendation)
    assert single["counts"]["files"] == 1
    assert "::group::" in render(recommendation, Format.github)


@pytest.mark.parametrize("name", ["does-not-fit", "no-slo"])
@pytest.mark.parametrize("fmt", list(Format), ids=lambda f: f.value)
def test_degenerate_documents_render(fmt: Format, name: str) -> None:
    """No plan at all (nothing fits), and no SLO at all: every format still renders."""
    path = REPO_ROOT / "tests" / "data" / "check" / f"{name}.yaml"
    doc = report_for(path)
    for item in (doc, check_doc_for((path,))):
        assert render(item, fmt).strip()
    if name == "does-not-fit":
        assert doc["colocated"] is None and doc["slo_met"] is False
        assert doc["disaggregated"]["prefill_gpus"] is None
        assert "NO PLAN MEETS THE SLOs" in render(doc, Format.table)
    else:
        assert doc["inputs"]["slo"] == {"ttft_ms": None, "tpot_ms": None, "percentile": 95}
        assert "raw capacity" in render(doc, Format.table)


def test_markdown_check_run_fits_a_pr_comment(check_run: dict[str, Any]) -> None:
    many = dict(check_run, files=check_run["files"] * 8)
    text = render(many, Format.markdown)
    assert len(text) < 65_536
    assert "left out to fit a PR comment" in text
    assert text.count("❌ fail") == 8 * sum(f["status"] == "fail" for f in check_run["files"])
