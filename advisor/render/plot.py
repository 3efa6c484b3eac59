"""PNG plots of a sweep (matplotlib, an optional extra: ``pip install 'pd-advisor[plot]'``).

matplotlib is imported only when a plot is drawn, with the headless Agg backend. What a plot
shows is computed first, without matplotlib (:func:`sweep_figure`, tested on its own), then
drawn:

* a 1-D sweep: goodput per GPU (or USD per million output tokens) of both architectures
  against the varied key, in the plans' colours (``figure_style``); the bar disaggregation
  must clear (``policy.min_disagg_gain``, drawn in the plotted unit); the verdict's area
  (disaggregate shaded); every crossover (each value where the verdict changes); the values
  where no plan meets the SLOs (hatched); and under the plot a strip of the rules at each
  value — the gain against the bar, the three preconditions, the SLOs — so that a
  disaggregated line above the colocated one with a chunked-prefill verdict shows what fails
  there; and, on the right axis, the rounding loss of the integer split (what gpu-scale
  weighs) against its warning level;
* a grid: the verdict map, the crossover of each row, and the cells where no plan meets the
  SLOs hatched.

Every figure is ``FIGSIZE`` inches at ``DPI`` (1000 × 700 px).
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from advisor.core.analysis.figure_data import COLOCATED, DISAGGREGATED, PLAN_LABELS
from advisor.core.analysis.keys import Axis
from advisor.core.analysis.sweep import COST_METRIC, SweepResult
from advisor.core.verdict.rules import DECIDING_RULES, RULES, ok_field
from advisor.escaping import visible
from advisor.render import numbers as n
from advisor.render.figure_style import (
    BAR_LINE,
    INFEASIBLE_COLOR,
    INFEASIBLE_HATCH,
    NEUTRAL,
    PLAN_STYLE,
    WORKLOAD_LINE,
    plan_gid,
    tagged_legend,
)

FIGSIZE = (10.0, 7.0)
DPI = 100
PIXELS = (int(FIGSIZE[0] * DPI), int(FIGSIZE[1] * DPI))
INSTALL_HINT = "pip install 'pd-advisor[plot]'"
LOSS_COLOR = "#7F7F7F"
"""The rounding-loss line (grey: no plan's colour)."""
MAX_LABELLED_CROSSOVERS = 6
"""Crossovers named on the plot; beyond them the lines alone (the table lists every one)."""
MAX_HATCHED_CELLS = 40_000
"""A verdict map hatches at most this many cells one by one; beyond, they are greyed."""
RULE_ROWS = (("gain", "gain ≥ bar"), *((ok_field(r.id), r.id) for r in RULES),
             ("slo", "SLOs met"))
"""The rule strip under a 1-D sweep, top to bottom: (what passes, row label); the
preconditions are the registry's."""


class PlotUnavailable(RuntimeError):
    """matplotlib is not installed."""


def require_matplotlib() -> Any:
    """``matplotlib.pyplot`` on the Agg backend, or :class:`PlotUnavailable` with a hint."""
    try:
        import matplotlib
    except ImportError:
        raise PlotUnavailable(f"--plot needs matplotlib, which is not installed: "
                              f"{INSTALL_HINT}") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


# --------------------------------------------------------------------------- what is drawn
@dataclass(frozen=True)
class Crossover:
    """A value where the verdict changes along the first axis."""

    index: int
    """The first point with the new verdict."""
    label: str
    verdict: str


@dataclass(frozen=True, kw_only=True)
class SweepFigure:
    """What a 1-D sweep plot draws, per point of the axis."""

    metric: str
    """``goodput_per_gpu`` or ``usd_per_million_output_tokens``."""
    colocated: np.ndarray
    disaggregated: np.ndarray
    bar: np.ndarray
    """Where the disaggregated line must be to clear ``min_disagg_gain`` (goodput: at or
    above it; cost: at or below it); NaN where it is undefined."""
    min_gain: float
    disaggregate: np.ndarray
    """The verdict is ``disaggregate``."""
    no_plan_meets: np.ndarray
    """Neither the best colocated plan nor the best split meets the SLOs at the rate."""
    rules: dict[str, np.ndarray]
    """:data:`RULE_ROWS` keys → where each passes."""
    crossovers: tuple[Crossover, ...]
    summary: str
    """One paragraph: where the verdict is what, and why where it might surprise."""


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """Index ranges [start, stop] where ``mask`` is true."""
    out, start = [], None
    for i, v in enumerate(mask):
        if v and start is None:
            start = i
        elif not v and start is not None:
            out.append((start, i - 1))
            start = None
    if start is not None:
        out.append((start, len(mask) - 1))
    return out


def _where(labels: Sequence[str], mask: np.ndarray, limit: int = 6) -> str:
    """The values where ``mask`` holds, as ranges: ``2, 4, 6–8``."""
    parts = [labels[a] if a == b else f"{labels[a]}–{labels[b]}" for a, b in _runs(mask)]
    return ", ".join(parts[:limit]) + (f" and {len(parts) - limit} more" if len(parts) > limit
                                      else "")


def _bar(metric: str, coloc: np.ndarray, disagg: np.ndarray, gain: np.ndarray,
         min_gain: float) -> np.ndarray:
    """The disaggregated value at which the gain (a ratio of headrooms) is exactly
    ``min_gain``: the disaggregated line scaled by (1 + min_gain)/(1 + gain) — for one phase
    the colocated line × (1 + min_gain) — and the colocated line × (1 + min_gain) where the
    gain is undefined (cost: inverted, per-token cost falls as goodput rises)."""
    up = 1.0 + min_gain
    with np.errstate(divide="ignore", invalid="ignore"):
        defined = np.isfinite(gain) & (gain > -1.0) & np.isfinite(disagg) & (disagg > 0)
        if metric == COST_METRIC:
            return np.where(defined, disagg * (1.0 + gain) / up, coloc / up)
        return np.where(defined, disagg * up / (1.0 + gain), coloc * up)


def sweep_figure(result: SweepResult, cost: bool = False) -> SweepFigure:
    """What :func:`plot_sweep` draws for a 1-D sweep (the verdict map reads the masks)."""
    m = result.metrics
    metric = COST_METRIC if cost else "goodput_per_gpu"
    coloc = np.asarray(m[f"colocated_{metric}"], dtype=float)
    disagg = np.asarray(m[f"disaggregated_{metric}"], dtype=float)
    gain = np.asarray(m["gain"], dtype=float)
    min_gain = result.policy.min_disagg_gain if result.policy is not None else 0.1
    dis = np.asarray(m["disaggregate"], dtype=bool)
    # the verdict policy recommends a plan that meets the SLOs whenever one does, so the
    # recommended plan misses them exactly where no plan meets them
    infeasible = ~np.asarray(m["slo_met"], dtype=bool)
    by_slo = np.asarray(m["deciding_rule"]) == DECIDING_RULES.index("meets-slo")
    rules = {"gain": np.nan_to_num(gain, nan=-np.inf) >= min_gain, "slo": ~infeasible}
    for key, _ in RULE_ROWS:
        if key not in rules:
            rules[key] = np.asarray(m[key], dtype=bool)
    crossovers: tuple[Crossover, ...] = ()
    summary = ""
    if len(result.axes) == 1:
        labels = result.axes[0].labels
        change = np.flatnonzero(dis[1:] != dis[:-1]) + 1
        crossovers = tuple(Crossover(int(i), labels[int(i)],
                                     "disaggregate" if dis[i] else "chunked-prefill")
                           for i in change)
        summary = _summary(result.axes[0], dis, infeasible, by_slo, rules, disagg, coloc,
                           cost, min_gain)
    return SweepFigure(metric=metric, colocated=coloc, disaggregated=disagg, bar=_bar(metric, coloc,
                                                                                      disagg, gain,
                                                                                      min_gain),
                       min_gain=min_gain, disaggregate=dis, no_plan_meets=infeasible, rules=rules,
                       crossovers=crossovers, summary=summary)


def _summary(axis: Axis, dis: np.ndarray, infeasible: np.ndarray, by_slo: np.ndarray,
             rules: dict[str, np.ndarray], disagg: np.ndarray, coloc: np.ndarray, cost: bool,
             min_gain: float) -> str:
    labels = axis.labels
    lines = []
    if dis.all():
        lines.append("verdict: disaggregate throughout")
    elif not dis.any():
        lines.append("verdict: chunked prefill throughout")
    else:
        lines.append(f"verdict: disaggregate at {axis.key} = {_where(labels, dis)}; "
                     "chunked prefill elsewhere")
    if by_slo.any():
        lines.append(f"at {_where(labels, by_slo)} the rules' pick misses the SLOs: the plan "
                     "that meets them is recommended")
    clears = rules["gain"] & ~dis
    if clears.any():
        names = {ok_field(r.id): r.id for r in RULES}
        fails = [name for key, name in names.items() if (clears & ~rules[key]).any()]
        lines.append(f"disaggregation clears the +{n.pct(min_gain)} bar at "
                     f"{_where(labels, clears)}, but {' / '.join(fails) or 'a rule'} fails "
                     "there (the strip below)")
    better = (disagg < coloc) if cost else (disagg > coloc)
    short = better & ~rules["gain"] & ~dis
    if short.any():
        lines.append(f"disaggregation beats colocated but not by the bar at "
                     f"{_where(labels, short)}")
    if infeasible.any():
        lines.append(f"no plan meets the SLOs at {_where(labels, infeasible)} (hatched)")
    return "\n".join(lines)


# --------------------------------------------------------------------------- drawing
def _positions(axis: Axis) -> tuple[np.ndarray, bool]:
    """x positions of an axis's values, and whether they are numbers."""
    if axis.numeric:
        return np.array([float(v) for v in axis.values]), True
    return np.arange(len(axis), dtype=float), False


def _use_log(axis: Axis, x: np.ndarray) -> bool:
    if not axis.numeric or x.size < 2 or x.min() <= 0:
        return False
    return axis.log or (axis.key == "cluster.gpus" and x.max() / x.min() >= 64)


def _edges(x: np.ndarray, log: bool) -> np.ndarray:
    """Cell edges around sorted centres (geometric midpoints on a log axis)."""
    if x.size == 1:
        return np.array([x[0] * 0.9, x[0] * 1.1]) if log else np.array([x[0] - 0.5, x[0] + 0.5])
    mid = np.sqrt(x[1:] * x[:-1]) if log else (x[1:] + x[:-1]) / 2.0
    first = x[0] ** 2 / mid[0] if log else 2 * x[0] - mid[0]
    last = x[-1] ** 2 / mid[-1] if log else 2 * x[-1] - mid[-1]
    return np.concatenate([[first], mid, [last]])


def plain(text: object) -> str:
    """User text (a name, a profile id) for a figure: the escaping rule of
    :func:`advisor.escaping.visible`. Every figure is drawn with ``text.parse_math`` off
    (:data:`RC`), so ``$...$`` in a name is text, never mathtext (#33)."""
    return visible(str(text))


RC: dict[Any, Any] = {"text.parse_math": False}
"""matplotlib settings of every figure: no mathtext (user text is shown as written)."""


def sweep_png(result: SweepResult, current: dict[str, Any] | None = None,
              title: str | None = None, cost: bool = False) -> bytes:
    """``result`` drawn as PNG bytes (:data:`PIXELS`); the CLI writes them atomically.
    ``cost``: a line plots USD per million output tokens instead of goodput per GPU (needs
    a GPU price)."""
    plt = require_matplotlib()
    import matplotlib

    with matplotlib.rc_context(RC):
        fig = draw_sweep(result, current, title, cost)
        try:
            buffer = io.BytesIO()
            fig.savefig(buffer, dpi=DPI, format="png", metadata={"Software": "pd-advisor"})
        finally:
            plt.close(fig)
    return buffer.getvalue()


def plot_sweep(result: SweepResult, path: Path | str, current: dict[str, Any] | None = None,
               title: str | None = None, cost: bool = False) -> tuple[int, int]:
    """Draw ``result`` to a PNG at ``path`` (:func:`sweep_png`); returns its size in pixels."""
    Path(path).write_bytes(sweep_png(result, current, title, cost))
    return PIXELS


def draw_sweep(result: SweepResult, current: dict[str, Any] | None = None,
               title: str | None = None, cost: bool = False) -> Any:
    """The sweep's figure as a matplotlib ``Figure`` (the caller closes it)."""
    plt = require_matplotlib()
    fig = plt.figure(figsize=FIGSIZE, dpi=DPI)
    data = sweep_figure(result, cost)
    if len(result.axes) == 1:
        _plot_line(fig, result, data, current or {}, title, cost)
    else:
        _plot_map(fig, result, data, current or {}, title)
    return fig


def _shade(ax: Any, edges: np.ndarray, mask: np.ndarray, **kwargs: Any) -> None:
    for a, b in _runs(mask):
        ax.axvspan(edges[a], edges[b + 1], **kwargs)


def _plot_line(fig: Any, result: SweepResult, data: SweepFigure, current: dict[str, Any],
               title: str | None, cost: bool) -> None:
    from matplotlib.colors import ListedColormap
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    axis = result.axes[0]
    x, numeric = _positions(axis)
    log = _use_log(axis, x)
    edges = _edges(x, log)
    grid = fig.add_gridspec(2, 1, height_ratios=[4.0, 1.35], hspace=0.08)
    ax = fig.add_subplot(grid[0])
    strip = fig.add_subplot(grid[1], sharex=ax)
    dis_style = PLAN_STYLE[DISAGGREGATED]
    _shade(ax, edges, data.disaggregate, color=dis_style.tint, alpha=0.6, lw=0,
           gid=plan_gid(DISAGGREGATED))
    _shade(ax, edges, data.no_plan_meets, facecolor="none", edgecolor=INFEASIBLE_COLOR,
           hatch=INFEASIBLE_HATCH, alpha=0.4, lw=0, gid="infeasible")
    dots = {"marker": "o", "ms": 3} if len(x) <= 40 else {}
    handles: list[Any] = []
    for plan, values in ((COLOCATED, data.colocated), (DISAGGREGATED, data.disaggregated)):
        style = PLAN_STYLE[plan]
        line, = ax.plot(x, values, color=style.color, ls=style.ls, lw=1.6,
                        label=PLAN_LABELS[plan], gid=plan_gid(plan),
                        **({**dots, "marker": style.marker} if dots else {}))
        handles.append(line)
    bar_label = (f"the bar: colocated −{n.pct(1 - 1 / (1 + data.min_gain))} per token"
                 if cost else f"the bar: colocated +{n.pct(data.min_gain)} "
                              "(policy.min_disagg_gain)")
    bar, = ax.plot(x, data.bar, label=bar_label, gid="bar", **BAR_LINE)
    handles.append(bar)
    loss_ax = ax.twinx()  # the integer split's rounding loss, what gpu-scale weighs
    loss = np.asarray(result.metrics["rounding_loss"], dtype=float) * 100.0
    loss_line, = loss_ax.plot(x, loss, color=LOSS_COLOR, lw=0.8, alpha=0.8,
                              label="rounding loss of the integer split (right axis)",
                              **dots)
    handles.append(loss_line)
    if result.policy is not None:
        limit = result.policy.max_rounding_loss * 100.0
        loss_ax.axhline(limit, color=LOSS_COLOR, ls=":", lw=1.0)
        loss_ax.annotate(f"rounding warning {limit:g}%", xy=(1.0, limit),
                         xycoords=("axes fraction", "data"), xytext=(-4, 3),
                         textcoords="offset points", ha="right", fontsize=8, color=LOSS_COLOR)
    finite_loss = loss[np.isfinite(loss)]
    loss_ax.set_ylim(0, max(float(finite_loss.max()) if finite_loss.size else 1.0, 1.0) * 1.6)
    loss_ax.set_ylabel("rounding loss (%)", color=LOSS_COLOR)
    for k, c in enumerate(data.crossovers):
        edge = edges[c.index]
        ax.axvline(edge, color=NEUTRAL, lw=1.3, ls="-", gid="crossover")
        if k < MAX_LABELLED_CROSSOVERS:
            arrow = "→ disaggregate" if c.verdict == "disaggregate" else "→ chunked prefill"
            ax.annotate(f"{arrow}\nfrom {plain(c.label)}", xy=(edge, 1.0),
                        xycoords=("data", "axes fraction"), xytext=(3, -4),
                        textcoords="offset points", fontsize=8, va="top", color=NEUTRAL)
    if data.crossovers:
        handles.append(Line2D([], [], color=NEUTRAL, lw=1.3,
                              label="crossover (the verdict changes)"))
    if data.disaggregate.any():
        handles.append(Patch(color=dis_style.tint, label="verdict: disaggregate",
                             gid=plan_gid(DISAGGREGATED)))
    if data.no_plan_meets.any():
        handles.append(Patch(facecolor="none", edgecolor=INFEASIBLE_COLOR,
                             hatch=INFEASIBLE_HATCH, lw=0, label="no plan meets the SLOs",
                             gid="infeasible"))
    cur = current.get(axis.key)
    if cur is not None and numeric:
        ax.axvline(float(cur), **WORKLOAD_LINE)
        ax.annotate(f"workload: {cur:,g}" if isinstance(cur, (int, float)) else plain(cur),
                    xy=(float(cur), 0.0), xycoords=("data", "axes fraction"), xytext=(3, 4),
                    textcoords="offset points", fontsize=8)
    values = np.concatenate([data.colocated, data.disaggregated, data.bar])
    finite = values[np.isfinite(values)]
    top = float(finite.max()) if finite.size else 1.0
    ax.set_ylim(0, (top if top > 0 else 1.0) * 1.25)
    ax.set_ylabel("USD per M output tokens" if cost else "goodput per GPU (req/s at the SLOs)")
    ax.grid(True, which="major", alpha=0.25)
    ax.tick_params(labelbottom=False)
    # fixed layout (no text measured): title, the summary under it, the plot, the strip, the
    # legend at the bottom
    lines = data.summary.count("\n") + 1
    inches = FIGSIZE[1]
    top_frac = 1.0 - (0.42 + 0.155 * lines) / inches
    fig.suptitle(plain(title or f"{result.workload or 'workload'}: sweep over {axis.key}"),
                 fontsize=11, y=1.0 - 0.08 / inches, va="top")
    fig.text(0.1, 1.0 - 0.36 / inches, data.summary, fontsize=8, va="top", ha="left",
             color="#222222")
    tagged_legend(fig, handles, loc="lower center", fontsize=8, framealpha=0.9, ncol=3,
                  bbox_to_anchor=(0.5, 0.0))
    legend_rows = math.ceil(len(handles) / 3)
    # the rule strip: a dark cell where a rule fails
    passed = np.array([data.rules[key] for key, _ in RULE_ROWS], dtype=float)
    strip.pcolormesh(edges, np.arange(len(RULE_ROWS) + 1), passed,
                     cmap=ListedColormap(["#4D4D4D", "#F2F2F2"]), vmin=0, vmax=1,
                     shading="flat", edgecolors="white", linewidth=0.4 if len(x) <= 80 else 0,
                     gid="rules")
    strip.set_yticks(np.arange(len(RULE_ROWS)) + 0.5)
    strip.set_yticklabels([label for _, label in RULE_ROWS], fontsize=8)
    strip.set_ylim(len(RULE_ROWS), 0)
    strip.tick_params(axis="y", length=0)
    strip.set_xlabel(f"{axis.key}   (strip: dark = the rule fails at that value)")
    for c in data.crossovers:
        strip.axvline(edges[c.index], color=NEUTRAL, lw=1.3, gid="crossover")
    if log:
        ax.set_xscale("log")
        _plain_log_ticks(strip.xaxis, x, axis.key == "cluster.gpus")
    if not numeric:
        strip.set_xticks(x)
        strip.set_xticklabels([plain(v) for v in axis.labels], rotation=30, ha="right")
    ax.set_xlim(edges[0], edges[-1])
    fig.subplots_adjust(left=0.1, right=0.93, top=top_frac,
                        bottom=(0.62 + 0.17 * legend_rows) / inches)


def _plain_log_ticks(axis: Any, x: np.ndarray, powers_of_two: bool) -> None:
    """Readable ticks on a log axis: powers of two for GPU counts, else 1-2-5 steps."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    lo, hi = float(x.min()), float(x.max())
    if powers_of_two:
        ticks = [2.0**k for k in range(math.floor(math.log2(lo)),
                                         math.ceil(math.log2(hi)) + 1)]
    else:
        ticks = [m * 10.0**e for e in range(math.floor(math.log10(lo)) - 1,
                                             math.ceil(math.log10(hi)) + 1)
                 for m in (1, 2, 5)]
    ticks = [t for t in ticks if lo / 1.01 <= t <= hi * 1.01]
    if len(ticks) >= 2:
        axis.set_major_locator(FixedLocator(ticks))
        axis.set_minor_locator(NullLocator())
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))


def _plot_map(fig: Any, result: SweepResult, data: SweepFigure, current: dict[str, Any],
              title: str | None) -> None:
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    ax0, ax1 = result.axes
    x, xnum = _positions(ax0)
    y, ynum = _positions(ax1)
    xlog, ylog = _use_log(ax0, x), _use_log(ax1, y)
    xe, ye = _edges(x, xlog), _edges(y, ylog)
    ax = fig.add_subplot(111)
    chunked, dis = PLAN_STYLE[COLOCATED], PLAN_STYLE[DISAGGREGATED]
    ax.pcolormesh(xe, ye, data.disaggregate.astype(float).T,
                  cmap=ListedColormap([chunked.tint, dis.tint]), vmin=0, vmax=1,
                  shading="flat", gid="verdict")
    infeasible = data.no_plan_meets.T
    if infeasible.any():
        masked = np.ma.masked_where(~infeasible, np.ones(infeasible.shape))
        if int(infeasible.sum()) <= MAX_HATCHED_CELLS:
            ax.pcolor(xe, ye, masked, facecolor="none", edgecolor=INFEASIBLE_COLOR,
                      hatch=INFEASIBLE_HATCH, lw=0, alpha=0.5, gid="infeasible")
        else:
            ax.pcolormesh(xe, ye, masked, cmap=ListedColormap([INFEASIBLE_COLOR]), alpha=0.45,
                          shading="flat", gid="infeasible")
    # crossover per row: the first value of the first key with a disaggregate verdict
    for j, c in enumerate(result.crossovers()):
        if c.value is not None and c.label is not None and not c.from_start:
            i = list(ax0.labels).index(c.label)
            ax.plot([xe[i], xe[i]], [ye[j], ye[j + 1]], color="black", lw=1.2,
                    gid="crossover")
    cx, cy = current.get(ax0.key), current.get(ax1.key)
    if xnum and ynum and cx is not None and cy is not None:
        ax.plot([float(cx)], [float(cy)], marker="*", ms=12, color="black", ls="none")
        ax.annotate("workload", xy=(float(cx), float(cy)), xytext=(6, 4),
                    textcoords="offset points", fontsize=8)
    if xlog:
        ax.set_xscale("log")
        _plain_log_ticks(ax.xaxis, x, ax0.key == "cluster.gpus")
    if ylog:
        ax.set_yscale("log")
        _plain_log_ticks(ax.yaxis, y, ax1.key == "cluster.gpus")
    if not xnum:
        ax.set_xticks(x)
        ax.set_xticklabels([plain(v) for v in ax0.labels], rotation=30, ha="right")
    if not ynum:
        ax.set_yticks(y)
        ax.set_yticklabels([plain(v) for v in ax1.labels])
    ax.set_xlabel(ax0.key)
    ax.set_ylabel(ax1.key)
    handles = [Patch(color=chunked.tint, label="verdict: chunked prefill",
                     gid=plan_gid(COLOCATED)),
               Patch(color=dis.tint, label="verdict: disaggregate", gid=plan_gid(DISAGGREGATED))]
    if infeasible.any():
        handles.append(Patch(facecolor="none", edgecolor=INFEASIBLE_COLOR,
                             hatch=INFEASIBLE_HATCH, lw=0, gid="infeasible",
                             label="no plan meets the SLOs (hatched over the verdict)"))
    tagged_legend(ax, handles, loc="upper left", fontsize=8, framealpha=0.9)
    ax.set_title(plain(title or f"{result.workload or 'workload'}: verdict map"), fontsize=11)
    fig.tight_layout()
