"""``recommend --plot FILE.png|FILE.svg``: the figure written, sized, titled; a clear message
without matplotlib or with another extension."""

from __future__ import annotations

import functools
import re
import struct
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tests.render.reports import REPO_ROOT

PREFILL_HEAVY = REPO_ROOT / "examples" / "prefill-heavy-70b-ib.yaml"
DAY_NIGHT = REPO_ROOT / "examples" / "day-night-shift.yaml"
CHAT = REPO_ROOT / "examples" / "chat-8b-single-node.yaml"
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
    for label in ("(a) TTFT against load", "(b) TPOT against load", "(c) P:D allocation",
                  "(d) p99 TTFT", "meets the SLOs up to", "workload 300 req/s",
                  "SLO 3,000 ms (p99)"):
        assert label in text, label
    assert "goodput per phase" not in text  # one phase: no panel (e)
    assert len(list(root.iter(f"{SVG_NS}path"))) > 50


@functools.cache
def _recommendation(path: Path) -> Any:
    from advisor.loading.catalog import ProfileCatalog
    from advisor.usecases.recommend import build_recommendation

    rec = build_recommendation(path, ProfileCatalog(env={}), boundaries=False, figure=True)
    assert rec.figure is not None
    return rec


def test_multi_phase_figure_has_the_phase_panel() -> None:
    pytest.importorskip("matplotlib", reason="the plot extra (matplotlib) is not installed")
    from advisor.render.report_plot import render_figure

    rec = _recommendation(DAY_NIGHT)
    svg = render_figure(rec.figure, rec.report, "svg").decode()
    assert "(e) goodput per phase" in svg and "night-rag" in svg and "day-chat" in svg
    # the title wraps onto lines of its own, never a literal "\n" (escaped after wrapping)
    root = ET.fromstring(svg.encode())
    text = " ".join("".join(t.itertext()) for t in root.iter(f"{SVG_NS}text"))
    assert "day-night-shift" in text and "\\n" not in text
    assert render_figure(rec.figure, rec.report, "svg").decode() == svg


@pytest.mark.parametrize("path", [PREFILL_HEAVY, DAY_NIGHT], ids=lambda p: p.stem)
def test_panels_are_lettered_once_and_each_plan_keeps_its_colour(path: Path) -> None:
    """#28: distinct panel letters in order ((a) … (e)); one colour per plan in every panel
    and the legend — every artist drawn for a plan has that plan's colour, and nothing else
    uses a plan's colour (the KV-transfer part and the static split used to take the
    disaggregated and colocated plans' colours)."""
    pytest.importorskip("matplotlib", reason="the plot extra (matplotlib) is not installed")
    import matplotlib.pyplot as plt

    from advisor.render.report_plot import draw_figure
    from tests.render.figure_colors import plan_panels

    rec = _recommendation(path)
    fig = draw_figure(rec.figure, rec.report)
    try:
        titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
        letters = [m.group(1) for title in titles if (m := re.match(r"\((\w)\) ", title))]
        assert letters == list("abcde"[:len(titles)]), titles
        assert len(titles) == (5 if rec.figure.phases else 4)
        seen = plan_panels(fig)
        for curve in rec.figure.curves:  # each plan is drawn in several panels
            assert len(seen[curve.plan]) >= 3, curve.plan
    finally:
        plt.close(fig)


def test_the_legend_prints_the_reports_goodputs() -> None:
    """#28: 'meets the SLOs up to X req/s' is the report's goodput, formatted as its table
    formats it (prefill-heavy's unchunked pool: 215 req/s in both; the legend said 214.7
    where the report said 210.7)."""
    pytest.importorskip("matplotlib", reason="the plot extra (matplotlib) is not installed")
    from advisor.render import numbers as n
    from advisor.render.report_plot import render_figure
    from advisor.render.table import render_table

    rec = _recommendation(PREFILL_HEAVY)
    root = ET.fromstring(render_figure(rec.figure, rec.report, "svg"))
    text = " ".join("".join(e.itertext()) for e in root.iter(f"{SVG_NS}text"))
    table = render_table(rec.report, width=120, color=False)
    goodput_row = next(line for line in table.splitlines() if line.startswith("goodput"))
    for key, label in (("colocated", "colocated, chunked prefill"),
                       ("disaggregated", "disaggregated prefill/decode"),
                       ("unchunked", "colocated, unchunked")):
        stated = n.rps(rec.report[key]["max_goodput_rps"])
        assert f"{label}: meets the SLOs up to {stated}" in text, (label, stated)
        assert stated in goodput_row
    assert "215 req/s" in goodput_row and "214.7" not in text


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


def test_markdown_links_the_figure_relative_to_the_report(run_cli: Any, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """#28: ``recommend --format markdown -o out/report.md --plot out/fig.svg`` links
    ``fig.svg`` (the path as given, ``out/fig.svg``, never loads next to the report, and an
    absolute one never loads in a PR)."""
    pytest.importorskip("matplotlib", reason="the plot extra (matplotlib) is not installed")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    run_cli("recommend", CHAT, "--format", "markdown", "-o", "out/report.md",
            "--plot", tmp_path / "out" / "fig.svg", exit_code=0)
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "![latency-load curves, P:D split and TTFT parts](fig.svg)" in report
    assert str(tmp_path) not in report
    assert (tmp_path / "out" / "fig.svg").stat().st_size > 10_000


def test_figure_links_are_relative_to_where_the_report_goes(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    from advisor.cli.output import link_from

    monkeypatch.chdir(tmp_path)
    assert link_from(Path("out/report.md"), Path("out/fig.svg")) == "fig.svg"
    assert link_from(tmp_path / "out" / "report.md", Path("figs/a b.png")) == "../figs/a b.png"
    assert link_from(Path("report.md"), tmp_path / "out" / "fig.svg") == "out/fig.svg"
    assert link_from(None, tmp_path / "out" / "fig.svg") == "out/fig.svg"  # stdout: cwd
    assert link_from(Path("-"), Path("fig.png")) == "fig.png"
    assert link_from(Path("deep/er/report.md"), Path("fig.png")) == "../../fig.png"
