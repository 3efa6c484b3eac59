"""PNG plots of a sweep (matplotlib, an optional extra: ``pip install 'pd-advisor[plot]'``).

matplotlib is imported only when a plot is drawn, with the headless Agg backend. A 1-D sweep
shows the goodput per GPU of both architectures and the rounding loss against the varied
key, the region where the verdict is ``disaggregate`` shaded and the crossover marked; a
grid shows the verdict map. Every figure is ``FIGSIZE`` inches at ``DPI`` (1000 × 600 px).
"""

from __future__ import annotations

import io
import math
from typing import Any

import numpy as np

from advisor.core.analysis.keys import Axis
from advisor.core.analysis.sweep import SweepResult
from advisor.escaping import visible

FIGSIZE = (10.0, 6.0)
DPI = 100
PIXELS = (int(FIGSIZE[0] * DPI), int(FIGSIZE[1] * DPI))
INSTALL_HINT = "pip install 'pd-advisor[plot]'"
COLORS = {"colocated": "#1f77b4", "disaggregated": "#d62728", "loss": "#7f7f7f",
          "disagg_region": "#2ca02c", "chunked_region": "#e8eef7"}


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

    current = current or {}
    with matplotlib.rc_context(RC):
        fig = plt.figure(figsize=FIGSIZE, dpi=DPI)
        try:
            if len(result.axes) == 1:
                _plot_line(fig, result, current, title, cost)
            else:
                _plot_map(fig, result, current, title)
            buffer = io.BytesIO()
            fig.savefig(buffer, dpi=DPI, format="png", metadata={"Software": "pd-advisor"})
        finally:
            plt.close(fig)
    return buffer.getvalue()


def _plot_line(fig: Any, result: SweepResult, current: dict[str, Any], title: str | None,
               cost: bool = False) -> None:
    from matplotlib.patches import Patch

    axis = result.axes[0]
    m = result.metrics
    x, numeric = _positions(axis)
    log = _use_log(axis, x)
    ax = fig.add_subplot(111)
    ax2 = ax.twinx()
    dis = np.asarray(m["disaggregate"], dtype=bool)
    edges = _edges(x, log)
    for a, b in _runs(dis):
        ax.axvspan(edges[a], edges[b + 1], color=COLORS["disagg_region"], alpha=0.12, lw=0)
    metric = "usd_per_million_output_tokens" if cost else "goodput_per_gpu"
    coloc = np.asarray(m[f"colocated_{metric}"], dtype=float)
    disagg = np.asarray(m[f"disaggregated_{metric}"], dtype=float)
    loss = np.asarray(m["rounding_loss"], dtype=float) * 100.0
    style = {"marker": "o", "ms": 3} if len(x) <= 40 else {}
    l1, = ax.plot(x, coloc, color=COLORS["colocated"], lw=1.6,
                  label="chunked prefill, colocated", **style)
    l2, = ax.plot(x, disagg, color=COLORS["disaggregated"], lw=1.2,
                  label="prefill/decode disaggregation", **style)
    l3, = ax2.plot(x, loss, color=COLORS["loss"], lw=0.8, alpha=0.8,
                   label="rounding loss (right axis)", **style)
    handles = [l1, l2, l3]
    if result.policy is not None:
        lim = result.policy.max_rounding_loss * 100.0
        ax2.axhline(lim, color=COLORS["loss"], ls=":", lw=1.0)
        ax2.annotate(f"rounding warning {lim:g}%", xy=(1.0, lim),
                     xycoords=("axes fraction", "data"), xytext=(-4, 3),
                     textcoords="offset points", ha="right", fontsize=8, color=COLORS["loss"])
    cross = result.crossovers()[0]
    if cross.value is not None and cross.label is not None:
        i = list(axis.labels).index(cross.label)
        ax.axvline(x[i], color=COLORS["disagg_region"], lw=1.6, ls="--")
        note = f"disaggregate from {axis.key} = {plain(cross.label)}"
        if cross.stable_label is not None and cross.stable_label != cross.label:
            k = list(axis.labels).index(cross.stable_label)
            ax.axvline(x[k], color=COLORS["disagg_region"], lw=1.0, ls=":")
            note += f"\n(alternates; throughout from {plain(cross.stable_label)})"
        ax.annotate(note, xy=(x[i], 1.0), xycoords=("data", "axes fraction"), xytext=(4, -8),
                    textcoords="offset points", fontsize=9, color="#1b6e1b", va="top")
        handles.append(Patch(color=COLORS["disagg_region"], alpha=0.3,
                             label="verdict: disaggregate"))
    else:
        ax.annotate("no crossover in this range: chunked prefill throughout", xy=(0.01, 0.98),
                    xycoords="axes fraction", va="top", fontsize=9)
    cur = current.get(axis.key)
    if cur is not None and numeric:
        ax.axvline(float(cur), color="black", lw=0.8, ls=":")
        ax.annotate(f"workload: {cur:,g}" if isinstance(cur, (int, float)) else plain(cur),
                    xy=(float(cur), 0.0), xycoords=("data", "axes fraction"), xytext=(3, 4),
                    textcoords="offset points", fontsize=8)
    if log:
        ax.set_xscale("log")
        _plain_log_ticks(ax.xaxis, x, axis.key == "cluster.gpus")
    if not numeric:
        ax.set_xticks(x)
        ax.set_xticklabels([plain(label) for label in axis.labels], rotation=30, ha="right")
    ax.set_xlim(edges[0], edges[-1])
    ax.set_xlabel(axis.key)
    ax.set_ylabel("USD per M output tokens" if cost
                  else "goodput per GPU (req/s at the SLOs)")
    ax2.set_ylabel("rounding loss of the integer P:D split (%)")
    top = np.nanmax(np.concatenate([coloc, disagg])) if coloc.size else 1.0
    ax.set_ylim(0, (top if math.isfinite(top) and top > 0 else 1.0) * 1.25)
    lmax = np.nanmax(loss) if loss.size else 1.0
    # the right axis reaches the rounding-warning line: an annotation beyond the axis range
    # once left tight_layout no room (a UserWarning on every such plot, #33)
    warn_line = result.policy.max_rounding_loss * 100.0 if result.policy is not None else 0.0
    ax2.set_ylim(0, max(lmax if math.isfinite(lmax) else 1.0, warn_line, 1.0) * 1.1)
    ax.grid(True, which="major", alpha=0.25)
    ax.set_title(plain(title or f"{result.workload or 'workload'}: sweep over {axis.key}"),
                 fontsize=11)
    fig.legend(handles=handles, loc="lower center", fontsize=8, framealpha=0.9,
               ncol=len(handles), bbox_to_anchor=(0.5, 0.0))
    fig.tight_layout(rect=(0.0, 0.05, 1.0, 1.0))


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


def _plot_map(fig: Any, result: SweepResult, current: dict[str, Any], title: str | None) -> None:
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    ax0, ax1 = result.axes
    dis = np.asarray(result.metrics["disaggregate"], dtype=float)
    x, xnum = _positions(ax0)
    y, ynum = _positions(ax1)
    xlog, ylog = _use_log(ax0, x), _use_log(ax1, y)
    ax = fig.add_subplot(111)
    cmap = ListedColormap([COLORS["chunked_region"], COLORS["disagg_region"]])
    ax.pcolormesh(_edges(x, xlog), _edges(y, ylog), dis.T, cmap=cmap, vmin=0, vmax=1,
                  shading="flat")
    # crossover per row: the first value of the first key with a disaggregate verdict
    xe = _edges(x, xlog)
    for j, c in enumerate(result.crossovers()):
        if c.value is not None and c.label is not None and not c.from_start:
            i = list(ax0.labels).index(c.label)
            ye = _edges(y, ylog)
            ax.plot([xe[i], xe[i]], [ye[j], ye[j + 1]], color="black", lw=1.2)
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
        ax.set_xticklabels([plain(label) for label in ax0.labels], rotation=30, ha="right")
    if not ynum:
        ax.set_yticks(y)
        ax.set_yticklabels([plain(label) for label in ax1.labels])
    ax.set_xlabel(ax0.key)
    ax.set_ylabel(ax1.key)
    ax.legend(handles=[Patch(color=COLORS["chunked_region"], label="chunked prefill"),
                       Patch(color=COLORS["disagg_region"], label="disaggregate"),
                       ], loc="upper left", fontsize=8, framealpha=0.9)
    ax.set_title(plain(title or f"{result.workload or 'workload'}: verdict map"), fontsize=11)
    fig.tight_layout()
