"""``recommend --format html``: one valid, self-contained file, verdict first, every plan and
precondition, user strings escaped, no scripts and nothing fetched; a headless Chromium
screenshot where one is installed."""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest

from advisor.render.formats import Format, render
from advisor.render.view import PLAN_LABELS
from tests.render.reports import EXAMPLES, REPO_ROOT, check_doc_for, report_for

html5lib = pytest.importorskip("html5lib", reason="html5lib (the test extra) is not installed")

PREFILL_HEAVY = REPO_ROOT / "examples" / "prefill-heavy-70b-ib.yaml"
HOSTILE = '<script>alert("x")</script> & <img src=x onerror=alert(1)>'
CHROMIUM = "/usr/bin/chromium"


def _parse(text: str) -> Any:
    """Parse strictly: html5lib raises on any parse error (unclosed tags, bad nesting)."""
    parser = html5lib.HTMLParser(strict=True, namespaceHTMLElements=False)
    return parser.parse(text)


def _text(node: Any) -> str:
    return " ".join("".join(node.itertext()).split())


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_html_is_valid_and_complete(path: Path) -> None:
    doc = report_for(path)
    text = render(doc, Format.html)
    tree = _parse(text)
    body = tree.find("body")
    sections = list(body)
    # verdict first: the first element of the body is the verdict box
    assert sections[0].get("id") == "verdict"
    first = _text(sections[0])
    assert f"Verdict: {doc['verdict']}" in first
    assert "disaggregation gain" in first or "disaggregation loses" in first
    assert doc["reasons"][0].split(":")[0] in first
    whole = _text(body)
    for plan in PLAN_LABELS.values():
        assert plan in whole
    for p in doc["preconditions"]:
        assert p["id"] in whole
        assert " ".join(p["explanation"].split()) in whole
    for w in doc["warnings"]:
        assert " ".join(w["message"].split()) in whole
    for m in doc["measure_next"]:
        assert " ".join(m.split()) in whole
    assert tree.find(".//script") is None and "<script" not in text.lower()
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", text)
    assert "@import" not in text and "url(" not in text


def test_no_plan_meets_the_slos_comes_right_after_the_verdict() -> None:
    doc = report_for(REPO_ROOT / "tests" / "data" / "check" / "does-not-fit.yaml")
    body = _parse(render(doc, Format.html)).find("body")
    assert "unmet" in body[0].get("class", "")
    assert "(no plan meets the SLOs)" in _text(body[0])
    assert _text(body[1]).startswith("No plan meets the SLOs")
    assert "GPUs it would take" in _text(body[1])


def test_html_has_cost_fragility_and_interference() -> None:
    """#28: the design-review artefact shows every section the other formats do, cost,
    fragility and interference included, and says why a rule passes over a value above its
    limit."""
    doc = report_for(EXAMPLES[[p.stem for p in EXAMPLES].index("chat-8b-single-node")])
    whole = _text(_parse(render(doc, Format.html)).find("body"))
    for title in ("Cost", "Fragility of the split", "Interference (colocated)", "Right-sizing"):
        assert title in whole
    assert "over-provisioned" in whole


def test_check_run_renders_as_html() -> None:
    doc = check_doc_for(tuple(EXAMPLES))
    tree = _parse(render(doc, Format.html))
    assert "pd-advisor check" in _text(tree.find("body"))


def test_hostile_name_is_escaped(run_cli: Any, tmp_path: Path) -> None:
    source = PREFILL_HEAVY.read_text(encoding="utf-8")
    hostile = source.replace("name: prefill-heavy-70b-ib", "name: '" + HOSTILE + "'", 1)
    workload = tmp_path / "hostile.yaml"
    workload.write_text(hostile, encoding="utf-8")
    out = tmp_path / "report.html"
    run_cli("recommend", workload, "--format", "html", "-o", out, exit_code=0)
    text = out.read_text(encoding="utf-8")
    assert "<script" not in text.lower() and "<img" not in text.lower()
    assert "&lt;script&gt;" in text
    tree = _parse(text)
    assert tree.find(".//script") is None and tree.find(".//img") is None
    assert HOSTILE in _text(tree.find("body"))  # shown, as text


def test_html_inlines_the_figure_when_matplotlib_is_installed(run_cli: Any) -> None:
    pytest.importorskip("matplotlib", reason="the plot extra (matplotlib) is not installed")
    result = run_cli("recommend", PREFILL_HEAVY, "--format", "html", exit_code=0)
    tree = _parse(result.stdout)
    svg = tree.find(".//figure/{http://www.w3.org/2000/svg}svg")
    assert svg is not None
    assert "<?xml" not in result.stdout and "DOCTYPE svg" not in result.stdout


def test_html_without_matplotlib_has_a_note(run_cli: Any,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    result = run_cli("recommend", PREFILL_HEAVY, "--format", "html", exit_code=0)
    assert "<svg" not in result.stdout
    assert "pip install &#x27;pd-advisor[plot]&#x27;" in result.stdout
    _parse(result.stdout)


def _png_pixels(data: bytes) -> tuple[int, int, bytes, int]:
    """(width, height, raw scanlines, bytes per pixel) of an 8-bit RGB/RGBA PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        length = struct.unpack(">I", data[pos:pos + 4])[0]
        kind, chunk = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = chunk
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    width, height, depth, colour = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and colour in (2, 6)
    return width, height, zlib.decompress(idat), 3 if colour == 2 else 4


def _distinct_rows(data: bytes) -> int:
    """How many different scanlines the image has (a blank page has one)."""
    width, height, raw, bpp = _png_pixels(data)
    stride = width * bpp + 1
    return len({raw[r * stride + 1:(r + 1) * stride] for r in range(height)})


@pytest.mark.skipif(not os.path.exists(CHROMIUM),
                    reason=f"no Chromium at {CHROMIUM} (apt-get install chromium) to screenshot "
                           "the HTML report")
def test_chromium_screenshot_is_not_blank(run_cli: Any, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the plot extra (matplotlib) is not installed")
    report = tmp_path / "report.html"
    run_cli("recommend", PREFILL_HEAVY, "--format", "html", "-o", report, exit_code=0)
    shot = tmp_path / "shot.png"
    profile = tmp_path / "profile"
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
           "--no-first-run", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", f"--user-data-dir={profile}", "--hide-scrollbars",
           "--window-size=1280,2400", f"--screenshot={shot}", report.as_uri()]
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    assert shot.is_file() and shot.stat().st_size > 20_000
    assert _distinct_rows(shot.read_bytes()) > 200
    shutil.rmtree(profile, ignore_errors=True)
