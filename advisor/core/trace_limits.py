"""What the workload format cannot represent of a fitted log, each with the figures that
show it: the list ``pd-advisor fit`` ends with.

The format (``traffic:`` / ``phases:``) holds per phase a share of time, a rate, a gamma
burstiness (CV) and one lognormal per length, drawn independently. A log can hold more:

* idle periods (the format has no off-time: the fit writes the busy periods' traffic);
* timestamps too coarse to see the gaps (the CV written is then an estimate with bounds);
* lengths that are no single lognormal (several populations) and gaps that are not gamma —
  KS distance above ``trace_gof.GOOD_FIT_KS``;
* prompt and output lengths that move together (|Spearman ρ| ≥ ``trace_gof.CORRELATION_NOTE``);
* the order and length of the phases' stretches (a phase is a share of time).
"""

from __future__ import annotations

from advisor.core.trace_gof import CORRELATION_NOTE, GOOD_FIT_KS
from advisor.core.trace_result import FittedTraffic


def _seconds(x: float) -> str:
    return f"{x:,.0f} s" if x >= 10 else f"{x:.3g} s"


def tick_text(tick_s: float, time_scale: float, time_unit_s: float | None) -> str:
    """The tick as a person says it (``whole seconds (1,000 units of the millisecond
    field)``)."""
    native = tick_s / time_scale
    names = {1.0: "whole seconds", 60.0: "whole minutes", 0.001: "whole milliseconds"}
    text = names.get(round(native, 9), f"multiples of {native:g} s")
    if time_unit_s is not None and native >= 1.5 * time_unit_s:
        unit = {0.001: "millisecond", 1e-6: "microsecond", 1.0: "second"}.get(
            time_unit_s, f"{time_unit_s:g}-s")
        text += f" in a {unit} field ({native / time_unit_s:,.0f} of its units)"
    if time_scale != 1.0:
        text += f", {tick_s:g} s after the time scale"
    return text


def not_represented(fit: FittedTraffic) -> tuple[str, ...]:
    """The log's features the workload format cannot hold (module docstring)."""
    out: list[str] = []
    idle = fit.idle
    if idle.count:
        gaps = idle.gaps_s
        span = _seconds(float(gaps.min())) + (
            f"–{_seconds(float(gaps.max()))}" if idle.count > 1 else "")
        out.append(
            f"idle periods: {idle.count} gap{'s' * (idle.count != 1)} of {span} (beyond the busy "
            f"gaps' far-out fence, {_seconds(idle.fence_s or 0.0)}) hold "
            f"{(1 - idle.duty_cycle) * 100:.1f} % of the span (duty cycle "
            f"{idle.duty_cycle * 100:.1f} %). The workload is the busy periods' traffic "
            f"({fit.rate_rps:.4g} req/s, CV {fit.burstiness:.3g}); over the whole span the log "
            f"averages {fit.span_rate_rps:.4g} req/s with a gap CV of "
            f"{fit.span_burstiness:.3g}. A pool sized for the busy periods idles in the others "
            "(scaling to zero is not modelled)")
    q = fit.quantisation
    detail = fit.burst_detail
    if q.coarse and q.tick_s is not None:
        how = ("the dispersion of the counts per window (√(Var N / E N), Cox & Lewis)"
               if detail.method == "dispersion" else "the gaps as logged (too few windows "
               "for the dispersion estimate)")
        out.append(
            f"quantised timestamps: {tick_text(q.tick_s, fit.time_scale, fit.time_unit_s)}; "
            f"{q.zero_gap_share * 100:.1f} % of the gaps are zero, {q.distinct:,} distinct "
            f"timestamps for {q.requests:,} requests. Arrivals within a tick cannot be seen: "
            f"the burstiness written, {detail.value:.3g}, is an estimate from {how}, bounded by "
            f"{detail.lower or 0.0:.3g} (each tick's requests spread evenly) and "
            f"{detail.gaps_cv:.3g} (the gaps as logged)")
    for what in ("prompt", "output"):
        poor = [(ph.name, getattr(ph.fit, f"{what}_ks")) for ph in fit.phases
                if getattr(ph.fit, f"{what}_ks") > GOOD_FIT_KS]
        if poor:
            where = ", ".join(f"{name} {ks:.2f}" for name, ks in poor)
            out.append(f"{what} lengths that are not one lognormal (KS distance between the "
                       f"log and the fitted lognormal above {GOOD_FIT_KS:g}: {where}; several "
                       "populations?): the format holds one lognormal per phase")
    for ph in fit.phases:
        if ph.fit.gaps_ks is not None and ph.fit.gaps_ks > GOOD_FIT_KS:
            out.append(f"{ph.name}: the inter-arrival gaps are not gamma (KS distance "
                       f"{ph.fit.gaps_ks:.2f} to the gamma of CV {ph.burstiness:.3g}): the "
                       "model and the simulator take gamma gaps of the written CV")
        rho = ph.fit.length_correlation
        if rho is not None and abs(rho) >= CORRELATION_NOTE:
            out.append(f"{ph.name}: prompt and output lengths are correlated (Spearman rho "
                       f"{rho:+.2f}); the format draws them independently")
    stretches = sum(len(ph.stretches) for ph in fit.phases)
    if len(fit.phases) > 1 or stretches > 1:
        out.append(f"the order and length of the {stretches} stretches: a phase is a share of "
                   "time, so the format holds how long each phase lasts in all, not when")
    return tuple(out)
