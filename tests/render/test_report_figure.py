"""``recommend --plot FILE.png|FILE.svg``: the figure written, sized, titled; a clear message
without matplotlib or with another extension."""

from __future__ import annotations

import struct
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tests.render.reports import REPO_ROOT

PREFILL_HEAVY = REPO_ROOT / "examples" / "prefill-heavy-70b-ib.yaml"
DAY_NIGHT = REPO_ROOT / "examples" / "day-night-shift.yaml"
SVG_NS = "{http://www.w3.org/2000/svg}"


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@pytest.mark.parametrize("path", [PREFILL_HEAVY, DAY_NIGHT], ids=lambda p: p.stem)
def test_png_is_written_at_the_figure_size(run_cli: Any, tmp_path: Path, path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the plot extra (matplotlib) is not installed")
    from advisor.render.report_plot import DPI, FIGSIZE, FIGSIZE_PHASES

    png = tmp_path / "figure.png"
    result = run_cli("recommend", path, "--plot", png, "--format", "none", exit_code=0)
    assert f"wrote {png}" in result.stderr
    data = png.read_bytes()
    size = FIGSIZE_PHASES if path == DAY_NIGHT else FIGSIZE
    assert _png_size(data) == (int(size[0] * DPI), int(size[1] * DPI))
    assert len(data) > 50_000  # four panels of lines, bars and text, not an empty canvas


def test_svg_is_written_titled_with_the_workload_and_verdict(run_cli: Any,
                                                             tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the plot extra (matplotlib) is not installed")
    svg = tmp_path / "figure.svg"
    result = run_cli("recommend", PREFILL_HEAVY, "--plot", svg, exit_code=0)
    assert "VERDICT disaggregate" in result.stdout  # the report still goes to stdout
    root = ET.fromstring(svg.read_bytes())
    assert root.tag == f"{SVG_NS}svg"
    assert float(root.get("width", "0").rstrip("pt")) >= 800
    text = " ".join("".join(t.itertext()) for t in root.iter(f"{SVG_NS}text"))
    assert "prefill-heavy-70b-ib — verdict: disaggregate" in text
    for label in ("(a) TTFT vs load", "(b) P:D allocation", "(c) p99 TTFT",
                  "meets the SLOs up to", "workload 300 req/s", "SLO 3,000 ms (p99)"):
        assert label in text, label
    assert "(d) goodput per phase" not in text  # one phase: no panel (d)
    assert len(list(root.iter(f"{SVG_NS}path"))) > 50


def test_multi_phase_figure_has_the_phase_panel(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the plot extra (matplotlib) is not installed")
    from advisor.loading.catalog import ProfileCatalog
    from advisor.render.report_plot import figure_title, render_figure
    from advisor.usecases.recommend import build_recommendation

    rec = build_recommendation(DAY_NIGHT, ProfileCatalog(env={}), figure=True)
    assert rec.figure is not None
    svg = render_figure(rec.figure, figure_title(rec.report), "svg").decode()
    assert "(d) goodput per phase" in svg and "night-rag" in svg and "day-chat" in svg
    assert render_figure(rec.figure, figure_title(rec.report), "svg").decode() == svg


def test_hostile_names_do_not_break_the_figure(run_cli: Any, tmp_path: Path) -> None:
    """A name with mathtext (``$…$``) and markup is drawn literally; the SVG stays XML."""
    pytest.importorskip("matplotlib", reason="the plot extra (matplotlib) is not installed")
    hostile = 'cost $x^2$ <script>alert(1)</script> & "q"'
    source = PREFILL_HEAVY.read_text(encoding="utf-8")
    workload = tmp_path / "hostile.yaml"
    workload.write_text(source.replace("name: prefill-heavy-70b-ib",
                                       "name: '" + hostile + "'", 1), encoding="utf-8")
    svg = tmp_path / "figure.svg"
    run_cli("recommend", workload, "--plot", svg, "--format", "none", exit_code=0)
    root = ET.fromstring(svg.read_bytes())
    assert not list(root.iter(f"{SVG_NS}script"))
    text = " ".join("".join(t.itertext()) for t in root.iter(f"{SVG_NS}text"))
    assert f"{hostile} — verdict: disaggregate" in text


def test_plot_without_matplotlib_says_how_to_get_it(run_cli: Any, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib → ImportError
    png = tmp_path / "x.png"
    result = run_cli("recommend", PREFILL_HEAVY, "--plot", png, exit_code=2)
    assert "pip install 'pd-advisor[plot]'" in result.stderr
    assert not png.exists() and result.stdout == ""


def test_plot_needs_png_or_svg(run_cli: Any, tmp_path: Path) -> None:
    result = run_cli("recommend", PREFILL_HEAVY, "--plot", tmp_path / "x.pdf", exit_code=2)
    assert "--plot writes .png or .svg" in result.stderr


def test_unwritable_plot_exits_2(run_cli: Any, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the plot extra (matplotlib) is not installed")
    result = run_cli("recommend", PREFILL_HEAVY, "--plot", tmp_path / "no" / "x.png",
                     exit_code=2)
    assert "cannot write" in result.stderr
