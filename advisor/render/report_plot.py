"""The recommendation's figure (``recommend --plot FILE.png|FILE.svg``, the HTML report).

Draws :class:`~advisor.core.analysis.figure_data.FigureData` with matplotlib (the ``plot`` extra,
imported only here, on the headless Agg backend), each panel lettered once:

(a), (b) TTFT and TPOT percentiles against the request rate for the colocated (chunked),
    disaggregated and unchunked plans, the SLO lines, the workload's rate, each plan's
    goodput (a hollow marker on its curves) and, hatched, the rates where no plan meets the
    SLOs;
(c) the P:D allocation in GPUs (prefill, decode, idle) of the disaggregated plan's split, the
    runner-up (or, for a static split, the best split of the phase alone) and the ideal
    fractional split;
(d) the TTFT decomposition at the workload's rate;
(e) multi-phase workloads: each plan's goodput per phase against the phase's rate.

The numbers it prints are the report's: the goodputs in the legend are read from the report
document (the same values its tables print, formatted by the same functions), the curves and
markers are placed with the figure data's, which the model computed once for both. One
colour per plan in every panel (``figure_style``). Output is deterministic (fixed SVG hash
salt, no date in the metadata).
"""

from __future__ import annotations

import io
import math
import textwrap
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from advisor.core.analysis.figure_data import (
    COLOCATED,
    DISAGGREGATED,
    PLAN_LABELS,
    TTFT_PARTS,
    UNCHUNKED,
    FigureData,
    LatencyCurve,
)
from advisor.render import numbers as n
from advisor.render.figure_style import (
    INFEASIBLE_COLOR,
    INFEASIBLE_HATCH,
    NEUTRAL,
    PARTS,
    PLAN_STYLE,
    POOLS,
    SLO_LINE,
    WORKLOAD_LINE,
    plan_gid,
    tagged_legend,
)
from advisor.render.headline import headline
from advisor.render.plot import RC, plain, require_matplotlib

if TYPE_CHECKING:
    from advisor.render.document import Recommendation

FIGSIZE = (12.0, 10.0)
FIGSIZE_PHASES = (12.0, 13.5)
DPI = 100
FORMATS = ("png", "svg")
TITLE_COLUMNS = 110
"""The title wraps at this many characters (12-pt bold across the 12-inch figure)."""
LIMITED_BY = {"ttft": "TTFT binds", "tpot": "TPOT binds", "overload": "then overloaded"}


def figure_format(path: str) -> str:
    """``png`` or ``svg`` from a file name (ValueError otherwise)."""
    suffix = path.rsplit(".", 1)[-1].lower() if "." in path else ""
    if suffix not in FORMATS:
        raise ValueError(f"--plot writes .png or .svg, not {path!r}")
    return suffix


def figure_title(doc: Recommendation) -> str:
    """``NAME — verdict: chunked-prefill · disaggregation gain +12% (needs ≥ 10%) · because
    traffic-mix fails (15% measured, limit 10%)``: the report's verdict line."""
    head = headline(doc)
    name = doc["name"] or doc["input"]["path"]
    unmet = " (no plan meets the SLOs)" if not head.slo_met else ""
    reason = f" · because {head.reason}" if head.reason else ""
    return f"{name} — verdict: {head.verdict}{unmet} · {head.gain}{reason}"


def report_goodputs(doc: Recommendation, data: FigureData) -> dict[str, float | None]:
    """Each plan's goodput in the figure's phase as the report document states it (its
    per-phase table; the disaggregated plan is the static split's when the figure draws one).
    """
    row = next((p for p in doc["phases"] if p["name"] == data.phase), None)
    if row is None:
        raise ValueError(f"the report has no phase {data.phase!r}")
    disagg = "static_goodput_rps" if data.static_split else "disaggregated_max_goodput_rps"
    return {COLOCATED: row["colocated_max_goodput_rps"],
            UNCHUNKED: row["unchunked_max_goodput_rps"], DISAGGREGATED: row[disagg]}  # type: ignore[literal-required]


def legend_text(curve: LatencyCurve, goodput_rps: float | None) -> str:
    """``colocated, chunked prefill: meets the SLOs up to 110 req/s (TTFT binds)``."""
    if not goodput_rps:
        return f"{curve.label}: misses the SLOs at any rate"
    why = LIMITED_BY.get(curve.limited_by or "", "")
    return f"{curve.label}: meets the SLOs up to {n.rps(goodput_rps)}" + (
        f" ({why})" if why else "")


def draw_figure(data: FigureData, doc: Recommendation) -> Any:
    """The figure as a matplotlib ``Figure`` (the caller closes it)."""
    plt = require_matplotlib()
    size = FIGSIZE_PHASES if data.phases else FIGSIZE
    fig = plt.figure(figsize=size, dpi=DPI)
    _draw(fig, data, doc)
    return fig


def render_figure(data: FigureData, doc: Recommendation, fmt: str) -> bytes:
    """The figure of the report ``doc`` as PNG or SVG bytes."""
    plt = require_matplotlib()
    import matplotlib

    with matplotlib.rc_context({**RC, "svg.hashsalt": "pd-advisor", "svg.fonttype": "none",
                                "font.size": 9}):
        fig = draw_figure(data, doc)
        try:
            buf = io.BytesIO()
            meta: dict[str, Any] = ({"Date": None, "Creator": "pd-advisor"} if fmt == "svg"
                                    else {"Software": "pd-advisor"})
            fig.savefig(buf, format=fmt, dpi=DPI, metadata=meta)
        finally:
            plt.close(fig)
    return buf.getvalue()


def figure_pixels(data: FigureData) -> tuple[int, int]:
    """The PNG's size in pixels."""
    size = FIGSIZE_PHASES if data.phases else FIGSIZE
    return int(size[0] * DPI), int(size[1] * DPI)


def _letters() -> Iterator[str]:
    """Panel letters, each once: (a), (b), …"""
    for letter in "abcdefgh":
        yield f"({letter})"


def _draw(fig: Any, data: FigureData, doc: Recommendation) -> None:
    rows = 3 if data.phases else 2
    grid = fig.add_gridspec(rows, 2, height_ratios=[1.3, 1.0, 1.0][:rows])
    letter = _letters()
    mix = "" if data.phase == "all" else f" (phase '{plain(data.phase)}')"
    _curves(fig.add_subplot(grid[0, 0]), data, "ttft", f"{next(letter)} TTFT against load{mix}")
    _curves(fig.add_subplot(grid[0, 1]), data, "tpot", f"{next(letter)} TPOT against load{mix}")
    _splits(fig.add_subplot(grid[1, 0]), data, next(letter))
    _decomposition(fig.add_subplot(grid[1, 1]), data, next(letter))
    if data.phases:
        _phases(fig.add_subplot(grid[2, :]), data, next(letter))
    # laid out here, once, on the Agg canvas (a layout engine run by savefig measures text
    # with whichever renderer it finds, and the SVG then differs by a rounding error from
    # one figure to the next): the title, the legend under it, the panels under the legend
    renderer = fig.canvas.get_renderer()
    height = fig.bbox.height
    # escaped first, then wrapped: the wrap's own line breaks must stay line breaks
    title = fig.suptitle(textwrap.fill(plain(figure_title(doc)), TITLE_COLUMNS), fontsize=12,
                         fontweight="bold", y=0.995, va="top")
    title.set_in_layout(False)  # the rect below leaves its room (tight_layout would twice)
    top = title.get_window_extent(renderer).y0 / height - 0.004
    if data.curves:
        legend = _legend(fig, data, report_goodputs(doc, data), top)
        top = legend.get_window_extent(renderer).y0 / height - 0.004
    fig.tight_layout(rect=(0.0, 0.0, 1.0, top))


def _finite_max(values: list[np.ndarray]) -> float:
    finite = [float(np.nanmax(v)) for v in values if np.isfinite(v).any()]
    return max(finite) if finite else 1.0


def _no_plan_meets_from(data: FigureData) -> float | None:
    """The rate beyond which no plan meets the SLOs (None: the axis ends before it)."""
    best = max((c.goodput_rps for c in data.curves), default=0.0)
    return best if best < float(data.rates_rps[-1]) else None


def _curves(ax: Any, data: FigureData, metric: str, title: str) -> None:
    slo = data.ttft_slo_ms if metric == "ttft" else data.tpot_slo_ms
    q_slo = round(data.percentile / 100.0, 6)
    x = data.rates_rps
    shown: list[np.ndarray] = []
    for curve in data.curves:
        style = PLAN_STYLE[curve.plan]
        series = curve.ttft_ms if metric == "ttft" else curve.tpot_ms
        for q, y in series.items():
            main = abs(q - q_slo) < 1e-9
            ax.plot(x, y, color=style.color, ls=style.ls, lw=2.0 if main else 0.9,
                    alpha=1.0 if main else 0.55, marker=style.marker if main else None,
                    markevery=max(len(x) // 8, 1), ms=5, gid=plan_gid(curve.plan))
            shown.append(y)
        at = np.flatnonzero(x == curve.goodput_rps)
        y_at = float(series[q_slo][at[0]]) if at.size else math.nan
        if curve.goodput_rps > 0 and math.isfinite(y_at):  # the goodput, on the curve
            ax.plot([curve.goodput_rps], [y_at], marker=style.marker, ms=11, mfc="white",
                    mec=style.color, mew=2.2, ls="none", zorder=5, gid=plan_gid(curve.plan))
    if not data.curves:
        ax.text(0.5, 0.5, "no plan fits this workload (see the report)", ha="center",
                va="center", transform=ax.transAxes)
    top = _finite_max(shown)
    if slo is not None:
        top = min(top, 2.0 * slo) if top > slo else max(top, slo)
        ax.axhline(slo, **SLO_LINE)
        ax.annotate(f"SLO {n.ms(slo)} (p{_pct(q_slo)})", xy=(0.0, slo),
                    xycoords=("axes fraction", "data"), xytext=(3, 3),
                    textcoords="offset points", fontsize=8)
    beyond = _no_plan_meets_from(data) if data.curves else None
    if beyond is not None:
        ax.axvspan(beyond, float(x[-1]), facecolor="none", edgecolor=INFEASIBLE_COLOR,
                   hatch=INFEASIBLE_HATCH, alpha=0.35, lw=0, gid="infeasible")
        ax.annotate("no plan meets the SLOs", xy=(1.0, 0.5), xycoords="axes fraction",
                    xytext=(-4, 0), textcoords="offset points", ha="right", va="center",
                    fontsize=8, color=NEUTRAL, rotation=90,
                    bbox={"facecolor": "white", "alpha": 0.85, "lw": 0, "pad": 1})
    ax.axvline(data.rate_rps, **WORKLOAD_LINE)
    ax.annotate(f"workload {n.rps(data.rate_rps)}", xy=(data.rate_rps, 1.0),
                xycoords=("data", "axes fraction"), xytext=(3, -10),
                textcoords="offset points", fontsize=8, color="#333333")
    ax.set_xlim(0.0, float(x[-1]))
    ax.set_ylim(0.0, top * 1.15 if math.isfinite(top) and top > 0 else 1.0)
    ax.set_xlabel("request rate (req/s)")
    ax.set_ylabel(f"{metric.upper()} (ms)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.25)


def _legend(fig: Any, data: FigureData, goodputs: Mapping[str, float | None],
            top: float) -> Any:
    """One legend for both curve panels under the title (its top at figure fraction
    ``top``): each plan with the report's goodput."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    q_slo = round(data.percentile / 100.0, 6)
    handles: list[Any] = []
    for curve in data.curves:
        style = PLAN_STYLE[curve.plan]
        handles.append(Line2D([], [], color=style.color, ls=style.ls, lw=2.0,
                              marker=style.marker, gid=plan_gid(curve.plan),
                              label=legend_text(curve, goodputs.get(curve.plan))))
    others = [q for q in data.quantiles if abs(q - q_slo) > 1e-9]
    handles.append(Line2D([], [], color=NEUTRAL, lw=2.0,
                          label=f"thick: p{_pct(q_slo)} (the SLO's)"))
    if others:
        handles.append(Line2D([], [], color=NEUTRAL, lw=0.9, alpha=0.55,
                              label="thin: " + ", ".join(f"p{_pct(q)}" for q in others)))
    handles.append(Line2D([], [], color=NEUTRAL, marker="o", mfc="white", mew=2.0, ms=9,
                          ls="none", label="hollow marker: the plan's goodput"))
    if _no_plan_meets_from(data) is not None:
        handles.append(Patch(facecolor="none", edgecolor=INFEASIBLE_COLOR,
                             hatch=INFEASIBLE_HATCH, lw=0, gid="infeasible",
                             label="hatched: no plan meets the SLOs"))
    return tagged_legend(fig, handles, loc="upper center", bbox_to_anchor=(0.5, top),
                          ncol=2, fontsize=8, framealpha=0.9)


def _pct(q: float) -> str:
    return f"{q * 100:g}"


def _splits(ax: Any, data: FigureData, letter: str) -> None:
    ax.set_title(f"{letter} P:D allocation of the disaggregated plan (GPUs)", fontsize=10)
    roles = {"best": "best", "runner-up": "runner-up", "static": "static split",
             "phase-best": f"best split of '{plain(data.phase)}' alone"}
    rows: list[tuple[str, float, float, float]] = [
        (f"{roles[b.role]}\n{b.prefill_instances} + {b.decode_instances} instances, "
         f"{n.rps(b.goodput_rps)}", b.prefill_gpus, b.decode_gpus, b.idle_gpus)
        for b in data.splits]
    if data.ideal_prefill_fraction is not None and data.splits:
        f = data.ideal_prefill_fraction
        rows.append((f"ideal (prefill fraction {n.num(f)})", f * data.cluster_gpus,
                     (1.0 - f) * data.cluster_gpus, 0.0))
    if not rows:
        ax.text(0.5, 0.5, "no disaggregated split fits", ha="center", va="center",
                transform=ax.transAxes)
        ax.set_axis_off()
        return
    y = np.arange(len(rows))[::-1]
    left = np.zeros(len(rows))
    for k, pool in enumerate(("prefill", "decode", "idle")):
        widths = np.array([r[k + 1] for r in rows], dtype=float)
        color, hatch = POOLS[pool]
        ax.barh(y, widths, left=left, color=color, hatch=hatch, edgecolor="black", lw=0.6,
                label=pool)
        for yi, w, lo in zip(y, widths, left, strict=True):
            if w >= 0.08 * data.cluster_gpus:
                ax.text(lo + w / 2, yi, n.num(w), ha="center", va="center", fontsize=8,
                        bbox={"facecolor": "white", "alpha": 0.8, "lw": 0, "pad": 1})
        left = left + widths
    ax.set_yticks(y)
    ax.set_yticklabels([r[0] for r in rows], fontsize=8)
    ax.set_xlim(0, data.cluster_gpus)
    ax.set_xlabel(f"GPUs (of {data.cluster_gpus:,})")
    ax.legend(fontsize=7, loc="lower right", framealpha=0.9, ncol=3)


def _decomposition(ax: Any, data: FigureData, letter: str) -> None:
    ax.set_title(f"{letter} p{data.percentile:g} TTFT at {n.rps(data.rate_rps)}, in parts",
                 fontsize=10)
    if not data.ttft:
        ax.text(0.5, 0.5, "no plan fits this workload", ha="center", va="center",
                transform=ax.transAxes)
        ax.set_axis_off()
        return
    y = np.arange(len(data.ttft))[::-1]
    left = np.zeros(len(data.ttft))
    for part in TTFT_PARTS:
        label, color, hatch = PARTS[part]
        widths = np.array([d.parts_ms.get(part, 0.0) for d in data.ttft])
        if not (widths > 0).any():
            continue
        ax.barh(y, widths, left=left, color=color, hatch=hatch, edgecolor="black", lw=0.6,
                label=label)
        left = left + widths
    for yi, d in zip(y, data.ttft, strict=True):
        if d.total_ms is None:
            ax.text(0.0, yi, f" overloaded at {n.rps(data.rate_rps)}: no TTFT", va="center",
                    fontsize=8, color=NEUTRAL)
        else:
            ax.text(d.total_ms, yi, f" {n.ms(d.total_ms)}", va="center", fontsize=8)
    if data.ttft_slo_ms is not None:
        ax.axvline(data.ttft_slo_ms, **SLO_LINE)
        ax.annotate("TTFT SLO", xy=(data.ttft_slo_ms, 1.0), xycoords=("data", "axes fraction"),
                    xytext=(-3, -10), textcoords="offset points", ha="right", fontsize=8)
    ax.set_yticks(y)
    ax.set_yticklabels([d.label for d in data.ttft], fontsize=8)
    for tick, d in zip(ax.get_yticklabels(), data.ttft, strict=True):
        tick.set_color(PLAN_STYLE[d.plan].color)
        tick.set_gid(plan_gid(d.plan))
    ax.set_xlim(0, max(float(left.max()), data.ttft_slo_ms or 0.0, 1e-9) * 1.3)
    ax.set_xlabel("ms")
    if (left > 0).any():
        ax.legend(fontsize=7, loc="lower right", framealpha=0.9)


PHASE_BARS = ((COLOCATED, "colocated_goodput_rps", PLAN_LABELS[COLOCATED], False),
              (UNCHUNKED, "unchunked_goodput_rps", PLAN_LABELS[UNCHUNKED], False),
              (DISAGGREGATED, "static_goodput_rps", "disaggregated, static split", False),
              (DISAGGREGATED, "phase_best_goodput_rps",
               "disaggregated, best split of the phase alone", True))
"""(plan, PhaseGoodput field, label, outline only)."""


def _phases(ax: Any, data: FigureData, letter: str) -> None:
    ax.set_title(f"{letter} goodput per phase: the colocated pools, the static P:D split and "
                 "each phase's own best split", fontsize=10)
    x = np.arange(len(data.phases))
    width = 0.8 / len(PHASE_BARS)
    handles: list[Any] = []
    for k, (plan, attr, label, outline) in enumerate(PHASE_BARS):
        style = PLAN_STYLE[plan]
        vals = np.array([getattr(p, attr) or 0.0 for p in data.phases], dtype=float)
        bars = ax.bar(x + (k - (len(PHASE_BARS) - 1) / 2) * width, vals, width,
                      color="white" if outline else style.color, hatch=style.hatch or None,
                      edgecolor=style.color if outline else "black", lw=1.2 if outline else 0.6)
        bars.patches[0].set_label(label)  # the legend's handle: one bar, gid and all
        handles.append(bars.patches[0])
        for bar, v in zip(bars, vals, strict=True):
            bar.set_gid(plan_gid(plan))
            ax.text(bar.get_x() + bar.get_width() / 2, v, n.num(v), ha="center",
                    va="bottom", fontsize=8)
    rates = np.array([p.rate_rps for p in data.phases])
    handles.insert(0, ax.hlines(rates, x - 0.45, x + 0.45, colors="black", linestyles="--",
                                lw=1.8, label="phase rate (the load to carry)"))
    ax.set_xticks(x)
    ax.set_xticklabels([plain(p.name) for p in data.phases])
    ax.set_ylabel("req/s within the SLOs")
    ax.grid(True, axis="y", alpha=0.25)
    tagged_legend(ax, handles, fontsize=8, loc="upper right", framealpha=0.9)


def svg_for_html(svg: bytes) -> str:
    """The SVG element alone (no XML declaration or DOCTYPE), to inline in HTML."""
    text = svg.decode("utf-8")
    start = text.find("<svg")
    return text[start:] if start >= 0 else text
