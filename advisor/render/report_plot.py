"""The recommendation's figure (``recommend --plot FILE.png|FILE.svg``, the HTML report).

Draws :class:`~advisor.core.analysis.figure_data.FigureData` with matplotlib (the ``plot`` extra,
imported only here, on the headless Agg backend):

(a) TTFT and TPOT percentiles against the request rate for the colocated (chunked),
    disaggregated and unchunked plans, the SLO lines, the workload's rate and the rate where
    each plan stops meeting the SLOs;
(b) the P:D allocation in GPUs (prefill, decode, idle) of the best and runner-up splits and
    the ideal fractional split;
(c) the TTFT decomposition at the workload's rate;
(d) multi-phase workloads: goodput per phase of the static split against each phase's best.

Readable in grayscale and by colour-blind readers: the Okabe–Ito palette, and every series
also differs by line style and marker (curves) or hatch (bars). Output is deterministic
(fixed SVG hash salt, no date in the metadata).
"""

from __future__ import annotations

import io
import math
import textwrap
from typing import TYPE_CHECKING, Any

import numpy as np

from advisor.core.analysis.figure_data import (
    COLOCATED,
    DISAGGREGATED,
    TTFT_PARTS,
    UNCHUNKED,
    FigureData,
)
from advisor.render.headline import headline
from advisor.render.plot import RC, plain, require_matplotlib

if TYPE_CHECKING:
    from advisor.render.document import Recommendation

FIGSIZE = (12.0, 9.0)
FIGSIZE_PHASES = (12.0, 12.5)
DPI = 100
FORMATS = ("png", "svg")
TITLE_COLUMNS = 110
"""The title wraps at this many characters (12-pt bold across the 12-inch figure)."""
# Okabe & Ito (2008), "Color Universal Design": distinguishable with every common colour
# vision deficiency
STYLE = {COLOCATED: {"color": "#0072B2", "ls": "-", "marker": "o"},
         DISAGGREGATED: {"color": "#D55E00", "ls": "--", "marker": "s"},
         UNCHUNKED: {"color": "#009E73", "ls": ":", "marker": "^"}}
POOLS = {"prefill": ("#E69F00", "//"), "decode": ("#56B4E9", ".."), "idle": ("#BBBBBB", "xx")}
PARTS = {"queueing": ("queueing", "#CC79A7", "xx"), "prefill": ("prefill", "#E69F00", "//"),
         "kv_transfer": ("KV transfer", "#D55E00", "\\\\"),
         "decode_step": ("decode step in progress", "#56B4E9", ".."),
         "overhead": ("per-request overhead", "#999999", "--")}
PHASE_BARS = (("static_goodput_rps", "static split", "#0072B2", "//"),
              ("phase_best_goodput_rps", "best split of the phase alone", "#E69F00", ".."))


def figure_format(path: str) -> str:
    """``png`` or ``svg`` from a file name (ValueError otherwise)."""
    suffix = path.rsplit(".", 1)[-1].lower() if "." in path else ""
    if suffix not in FORMATS:
        raise ValueError(f"--plot writes .png or .svg, not {path!r}")
    return suffix


def figure_title(doc: Recommendation) -> str:
    """``NAME — verdict: disaggregate · disaggregation gain +194% (needs ≥ 10%)``."""
    head = headline(doc)
    name = doc["name"] or doc["input"]["path"]
    unmet = " (no plan meets the SLOs)" if not head.slo_met else ""
    return f"{name} — verdict: {head.verdict}{unmet} · {head.gain}"


def render_figure(data: FigureData, title: str, fmt: str) -> bytes:
    """The figure as PNG or SVG bytes."""
    plt = require_matplotlib()
    import matplotlib

    size = FIGSIZE_PHASES if data.phases else FIGSIZE
    with matplotlib.rc_context({**RC, "svg.hashsalt": "pd-advisor", "svg.fonttype": "none",
                                "font.size": 9}):
        fig = plt.figure(figsize=size, dpi=DPI)
        try:
            _draw(fig, data, title)
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


def _draw(fig: Any, data: FigureData, title: str) -> None:
    rows = 3 if data.phases else 2
    grid = fig.add_gridspec(rows, 2, height_ratios=[1.25, 1.0, 1.0][:rows])
    mix = "" if data.phase == "all" else f" (phase '{plain(data.phase)}')"
    _curves(fig.add_subplot(grid[0, 0]), data, "ttft", f"(a) TTFT vs load{mix}")
    _curves(fig.add_subplot(grid[0, 1]), data, "tpot", f"(a) TPOT vs load{mix}")
    _splits(fig.add_subplot(grid[1, 0]), data)
    _decomposition(fig.add_subplot(grid[1, 1]), data)
    if data.phases:
        _phases(fig.add_subplot(grid[2, :]), data)
    fig.suptitle(plain(textwrap.fill(title, TITLE_COLUMNS)), fontsize=12, fontweight="bold",
                 y=0.995)
    if data.curves:
        _legend(fig, data)
    fig.tight_layout(rect=(0.0, 0.0, 1.0, 0.90 if not data.phases else 0.92))


def _finite_max(values: list[np.ndarray]) -> float:
    finite = [float(np.nanmax(v)) for v in values if np.isfinite(v).any()]
    return max(finite) if finite else 1.0


def _curves(ax: Any, data: FigureData, metric: str, title: str) -> None:
    slo = data.ttft_slo_ms if metric == "ttft" else data.tpot_slo_ms
    q_slo = round(data.percentile / 100.0, 6)
    x = data.rates_rps
    shown: list[np.ndarray] = []
    for curve in data.curves:
        style = STYLE[curve.plan]
        series = curve.ttft_ms if metric == "ttft" else curve.tpot_ms
        for q, y in series.items():
            main = abs(q - q_slo) < 1e-9
            ax.plot(x, y, color=style["color"], ls=style["ls"], lw=2.0 if main else 0.9,
                    alpha=1.0 if main else 0.55, marker=style["marker"] if main else None,
                    markevery=max(len(x) // 8, 1), ms=5)
            shown.append(y)
        if curve.slo_limit_rps is not None and curve.limited_by in (metric, "overload"):
            ref = slo if slo is not None else _finite_max(list(series.values()))
            ax.plot([curve.slo_limit_rps], [ref], marker=style["marker"], ms=11, mfc="white",
                    mec=style["color"], mew=2.2, ls="none", zorder=5)
    if not data.curves:
        ax.text(0.5, 0.5, "no plan fits this workload (see the report)", ha="center",
                va="center", transform=ax.transAxes)
    top = _finite_max(shown)
    if slo is not None:
        top = min(top, 2.0 * slo) if top > slo else max(top, slo)
        ax.axhline(slo, color="black", ls="-.", lw=1.2)
        ax.annotate(f"SLO {slo:,.4g} ms (p{_pct(q_slo)})", xy=(0.0, slo),
                    xycoords=("axes fraction", "data"), xytext=(3, 3),
                    textcoords="offset points", fontsize=8)
    ax.axvline(data.rate_rps, color="#555555", ls=":", lw=1.2)
    ax.annotate(f"workload {data.rate_rps:,.4g} req/s", xy=(data.rate_rps, 1.0),
                xycoords=("data", "axes fraction"), xytext=(3, -10),
                textcoords="offset points", fontsize=8, color="#333333")
    ax.set_xlim(0.0, float(x[-1]))
    ax.set_ylim(0.0, top * 1.15 if math.isfinite(top) and top > 0 else 1.0)
    ax.set_xlabel("request rate (req/s)")
    ax.set_ylabel(f"{metric.upper()} (ms)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.25)


def _legend(fig: Any, data: FigureData) -> None:
    """One legend for both curve panels: each plan with where it stops meeting the SLOs."""
    from matplotlib.lines import Line2D

    q_slo = round(data.percentile / 100.0, 6)
    handles = []
    for curve in data.curves:
        style = STYLE[curve.plan]
        if curve.slo_limit_rps is None:
            limit = "misses the SLOs at any rate"
        else:
            why = {"ttft": "TTFT", "tpot": "TPOT", "overload": "overload"}.get(
                curve.limited_by or "", "")
            limit = f"meets the SLOs up to {curve.slo_limit_rps:,.4g} req/s ({why})"
        handles.append(Line2D([], [], color=style["color"], ls=style["ls"], lw=2.0,
                              marker=style["marker"], label=f"{curve.label}: {limit}"))
    others = [q for q in data.quantiles if abs(q - q_slo) > 1e-9]
    handles.append(Line2D([], [], color="#444444", lw=2.0,
                          label=f"thick: p{_pct(q_slo)} (the SLO's)"))
    if others:
        handles.append(Line2D([], [], color="#444444", lw=0.9, alpha=0.55,
                              label="thin: " + ", ".join(f"p{_pct(q)}" for q in others)))
    handles.append(Line2D([], [], color="#444444", marker="o", mfc="white", mew=2.0, ms=9,
                          ls="none", label="hollow marker: SLO limit"))
    fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.955), ncol=2,
               fontsize=8, framealpha=0.9)


def _pct(q: float) -> str:
    return f"{q * 100:g}"


def _splits(ax: Any, data: FigureData) -> None:
    ax.set_title("(b) P:D allocation (GPUs)", fontsize=10)
    rows: list[tuple[str, float, float, float]] = [
        (f"{b.label}\n{b.prefill_instances}+{b.decode_instances} inst., "
         f"{b.goodput_rps:,.4g} req/s", b.prefill_gpus, b.decode_gpus, b.idle_gpus)
        for b in data.splits]
    if data.ideal_prefill_fraction is not None and data.splits:
        f = data.ideal_prefill_fraction
        rows.append((f"ideal (fraction {f:.3f})", f * data.cluster_gpus,
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
                ax.text(lo + w / 2, yi, f"{w:,.4g}", ha="center", va="center", fontsize=8,
                        bbox={"facecolor": "white", "alpha": 0.8, "lw": 0, "pad": 1})
        left = left + widths
    ax.set_yticks(y)
    ax.set_yticklabels([r[0] for r in rows], fontsize=8)
    ax.set_xlim(0, data.cluster_gpus)
    ax.set_xlabel(f"GPUs (of {data.cluster_gpus:,})")
    ax.legend(fontsize=7, loc="lower right", framealpha=0.9, ncol=3)


def _decomposition(ax: Any, data: FigureData) -> None:
    ax.set_title(f"(c) p{data.percentile:g} TTFT at {data.rate_rps:,.4g} req/s, in parts",
                 fontsize=10)
    if not data.ttft:
        why = ("every plan is overloaded at the workload's rate" if data.curves
               else "no plan fits this workload")
        ax.text(0.5, 0.5, why, ha="center",
                va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return
    y = np.arange(len(data.ttft))[::-1]
    left = np.zeros(len(data.ttft))
    for part in TTFT_PARTS:
        label, color, hatch = PARTS[part]
        widths = np.array([d.parts_ms[part] for d in data.ttft])
        if not (widths > 0).any():
            continue
        ax.barh(y, widths, left=left, color=color, hatch=hatch, edgecolor="black", lw=0.6,
                label=label)
        left = left + widths
    for yi, d in zip(y, data.ttft, strict=True):
        ax.text(d.total_ms, yi, f" {d.total_ms:,.4g} ms", va="center", fontsize=8)
    if data.ttft_slo_ms is not None:
        ax.axvline(data.ttft_slo_ms, color="black", ls="-.", lw=1.2)
        ax.annotate("TTFT SLO", xy=(data.ttft_slo_ms, 1.0), xycoords=("data", "axes fraction"),
                    xytext=(-3, -10), textcoords="offset points", ha="right", fontsize=8)
    ax.set_yticks(y)
    ax.set_yticklabels([d.label for d in data.ttft], fontsize=8)
    ax.set_xlim(0, max(float(left.max()), data.ttft_slo_ms or 0.0) * 1.3)
    ax.set_xlabel("ms")
    ax.legend(fontsize=7, loc="lower right", framealpha=0.9)


def _phases(ax: Any, data: FigureData) -> None:
    ax.set_title("(d) goodput per phase: the static P:D split vs each phase's own best split",
                 fontsize=10)
    x = np.arange(len(data.phases))
    width = 0.35
    for k, (attr, label, color, hatch) in enumerate(PHASE_BARS):
        vals = np.array([getattr(p, attr) for p in data.phases], dtype=float)
        bars = ax.bar(x + (k - 0.5) * width, vals, width, color=color, hatch=hatch,
                      edgecolor="black", lw=0.6, label=label)
        for bar, v in zip(bars, vals, strict=True):
            ax.text(bar.get_x() + bar.get_width() / 2, v, f"{v:,.3g}", ha="center",
                    va="bottom", fontsize=8)
    rates = np.array([p.rate_rps for p in data.phases])
    ax.hlines(rates, x - width * 1.1, x + width * 1.1, colors="black", linestyles="--", lw=1.8,
              label="phase rate (the load to carry)")
    ax.set_xticks(x)
    ax.set_xticklabels([plain(p.name) for p in data.phases])
    ax.set_ylabel("req/s within the SLOs")
    ax.grid(True, axis="y", alpha=0.25)
    ax.legend(fontsize=8, loc="upper right", framealpha=0.9)


def svg_for_html(svg: bytes) -> str:
    """The SVG element alone (no XML declaration or DOCTYPE), to inline in HTML."""
    text = svg.decode("utf-8")
    start = text.find("<svg")
    return text[start:] if start >= 0 else text
