"""``pd-advisor fit --metrics`` output: the traffic fitted from Prometheus metrics as a
workload, a table (with the measured latency beside the model's prediction) and JSON.

Pure functions of a :class:`~advisor.core.metrics_fit.MetricsFit` and the model's
prediction (``usecases.metrics``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from advisor.core.metrics_fit import MetricsFit, MetricsPhase
from advisor.core.trace_gof import GOOD_FIT_KS
from advisor.render.fit_report import TAIL_LINES, Target, deployment_lines, wrap

LATENCY_NAMES = {"ttft": "TTFT", "tpot": "TPOT (per request)", "itl": "inter-token latency",
                 "e2e": "end-to-end latency"}


def _num(x: float | None, digits: int = 6) -> float | None:
    return None if x is None or not math.isfinite(x) else float(f"{x:.{digits}g}")


def not_represented(fit: MetricsFit) -> list[str]:
    """What the metrics (and the workload format) cannot say."""
    out = []
    assumed = [p.name for p in fit.phases if p.burstiness_from == "assumed"]
    if assumed:
        out.append(f"burstiness of {', '.join(assumed)}: counts per scrape interval cannot see "
                   "the gaps between requests; written as 1 (Poisson) — fewer than 8 intervals "
                   "to estimate it from the counts' dispersion")
    others = [p.name for p in fit.phases if p.burstiness_from == "dispersion"]
    if others:
        out.append(f"burstiness of {', '.join(others)}: estimated from the dispersion of the "
                   "counts per interval (√(Var N / E N)); gaps shorter than an interval are "
                   "not seen")
    for what in ("prompt", "output"):
        poor = [f"{p.name} {getattr(p, what + '_ks'):.2f}" for p in fit.phases
                if (getattr(p, what + "_ks") or 0.0) > GOOD_FIT_KS]
        if poor:
            out.append(f"{what} lengths that are not one lognormal (KS distance at the "
                       f"histogram's bucket bounds above {GOOD_FIT_KS:g}: {', '.join(poor)})")
    out.append("phases from the rate only: the histograms' increases give each phase's "
               "lengths, but a change of mix at a steady rate is not looked for")
    out.append("prompt-output correlation and prefix reuse: metrics aggregate requests; "
               "neither is in them")
    return out


def metrics_document(fit: MetricsFit, sources: list[str], written: str | None,
                     prediction: Mapping[str, Any] | None) -> dict[str, Any]:
    """The JSON document of a ``fit --metrics`` run."""
    return {
        "schema_version": 1, "kind": "fit-metrics", "metrics": sources, "engine": fit.engine,
        "span_s": _num(fit.span_s), "intervals": fit.intervals, "requests": _num(fit.requests),
        "rate_rps": _num(fit.rate_rps), "dispersion": _num(fit.dispersion),
        "phases": [{
            "name": p.name, "start_s": _num(p.start_s), "end_s": _num(p.end_s),
            "requests": _num(p.requests), "rate_rps": _num(p.rate_rps),
            "burstiness": _num(p.burstiness), "burstiness_from": p.burstiness_from,
            "prompt_tokens": dict(zip(("mean", "p50", "p95", "max"),
                                      (_num(v) for v in p.prompt_stats), strict=True)),
            "output_tokens": dict(zip(("mean", "p50", "p95", "max"),
                                      (_num(v) for v in p.output_stats), strict=True)),
            "goodness_of_fit": {"prompt_ks": _num(p.prompt_ks, 4),
                                "output_ks": _num(p.output_ks, 4)},
            "measured_latency_ms": {k: dict(zip(("p50", "p95", "p99"),
                                                (_num(x) for x in v), strict=True))
                                    for k, v in p.latency_ms.items()},
        } for p in fit.phases],
        "prediction": dict(prediction) if prediction else None,
        "not_represented": not_represented(fit),
        "workload": written,
    }


def _ms(x: float | None) -> str:
    return "—" if x is None or not math.isfinite(x) else f"{x:,.1f}"


def render_metrics_table(fit: MetricsFit, sources: list[str], written: str | None,
                         prediction: Mapping[str, Any] | None) -> str:
    """A plain-text summary, with the measured latency beside the model's."""
    lines = [f"Fitted {fit.requests:,.0f} requests over {fit.span_s:,.0f} s "
             f"({fit.intervals} intervals) from {fit.engine} metrics: {', '.join(sources)}",
             f"overall {fit.rate_rps:.4g} req/s; dispersion of the interval counts' "
             f"differences φ = {fit.dispersion:.3g}", ""]
    header = (f"{'phase':9s} {'req/s':>9s} {'CV':>6s} {'from':>10s} {'prompt mean':>11s} "
              f"{'p95':>7s} {'KS':>5s} {'output mean':>11s} {'p95':>7s} {'KS':>5s}  when")
    lines += [header, "─" * len(header)]
    for p in fit.phases:
        ks = [("—" if v is None else f"{v:.2f}" + ("!" if v > GOOD_FIT_KS else ""))
              for v in (p.prompt_ks, p.output_ks)]
        lines.append(f"{p.name:9s} {p.rate_rps:9.4g} {p.burstiness:6.3g} "
                     f"{p.burstiness_from:>10s} {p.prompt_stats[0]:11,.0f} "
                     f"{p.prompt_stats[2]:7,.0f} {ks[0]:>5s} {p.output_stats[0]:11,.0f} "
                     f"{p.output_stats[2]:7,.0f} {ks[1]:>5s}  {p.start_s:,.0f}–{p.end_s:,.0f} s")
    lines.append("")
    plan = prediction.get("plan") if prediction else None
    lines.append("Latency: measured (the histograms' increases) and the model's prediction for "
                 "the fitted workload" + (f" on the recommended plan ({plan})" if plan else ""))
    head = (f"{'phase':9s} {'metric':22s} {'measured p50/p95/p99 ms':>26s} "
            f"{'model p50/p95/p99':>22s}")
    lines += [head, "─" * len(head)]
    for i, p in enumerate(fit.phases):
        model = (prediction or {}).get("phases", [{}] * len(fit.phases))
        mine = model[i] if i < len(model) else {}
        for key, values in p.latency_ms.items():
            pred = mine.get("ttft_ms" if key == "ttft" else "tpot_ms" if key in ("tpot", "itl")
                            else "", None)
            shown = "/".join(_ms(v) for v in values)
            model_text = "/".join(_ms(v) for v in pred) if pred else "—"
            lines.append(f"{p.name:9s} {LATENCY_NAMES[key]:22s} {shown:>26s} {model_text:>22s}")
    lines.append("(the model's TPOT is per request; inter-token latency is per token gap)")
    lines.append("")
    lines.append("What the metrics and the workload format cannot represent:")
    lines += [f"  - {x}" for x in not_represented(fit)]
    if written:
        lines.append(f"wrote {written}")
    return "\n".join(lines) + "\n"


def _length_lines(indent: str, key: str, stats: tuple[float, float, float, float],
                  ks: float | None, cap: int) -> list[str]:
    mean, p50, p95, top = (min(v, float(cap)) for v in stats)
    if top <= mean + 1e-9 and p50 >= mean - 1e-9:
        return [f"{indent}{key}: {max(1, round(mean))}    # mean of the token counters"]
    fit = "" if ks is None else f"; lognormal KS distance {ks:.2f} at the bucket bounds"
    out = [f"{indent}{key}:{'':<20}# the token histogram's increase{fit}",
           f"{indent}  {'mean: ' + f'{mean:.1f}':<24}# Δsum / Δcount (exact)"]
    if p50 <= mean:
        out.append(f"{indent}  {'p50: ' + f'{p50:.1f}':<24}# interpolated inside its bucket")
    if p95 >= mean:
        out.append(f"{indent}  {'p95: ' + f'{p95:.1f}':<24}# interpolated inside its bucket")
    out.append(f"{indent}  {'max: ' + f'{top:.0f}':<24}# upper bound of the highest bucket used")
    return out


def _phase_lines(p: MetricsPhase, indent: str, cap: int, share: float | None) -> list[str]:
    out = []
    if share is not None:
        out += [f"{indent[:-2]}- name: {p.name}{'':<12}# {p.start_s:,.0f}–{p.end_s:,.0f} s",
                f"{indent}{'share: ' + f'{share:.6f}':<26}# its time over the span"]
    how = ("√(Var/mean) of the counts per interval" if p.burstiness_from == "dispersion"
           else "assumed Poisson: too few intervals to see it")
    out += [f"{indent}{'rate_rps: ' + f'{max(p.rate_rps, 1e-6):.6g}':<26}# {p.requests:,.0f} "
            f"requests / {p.end_s - p.start_s:,.0f} s",
            f"{indent}{'burstiness: ' + f'{p.burstiness:.4g}':<26}# {how}"]
    out += _length_lines(indent, "prompt_tokens", p.prompt_stats, p.prompt_ks, cap)
    out += _length_lines(indent, "output_tokens", p.output_stats, p.output_ks, cap)
    return out


def metrics_workload_yaml(fit: MetricsFit, sources: list[str], target: Target) -> str:
    """The workload file text fitted from metrics."""
    head = [f"# Traffic fitted by `pd-advisor fit --metrics` from {fit.engine} metrics "
            f"({', '.join(sources)}; {fit.requests:,.0f} requests over {fit.span_s:,.0f} s).",
            "# Model, cluster and SLO are starting values (--model, --gpu, --gpus).",
            "# What this file cannot represent of the metrics:"]
    for item in not_represented(fit):
        head += ["#   " + line for line in wrap("- " + item + ".", 84)]
    body = [*deployment_lines(target), "", "traffic:"]
    cap = target.context_tokens
    if len(fit.phases) == 1:
        body += _phase_lines(fit.phases[0], "  ", cap, None)
    else:
        total = sum(p.end_s - p.start_s for p in fit.phases)
        shares = [(p.end_s - p.start_s) / total for p in fit.phases]
        shares[-1] = 1.0 - sum(round(x, 6) for x in shares[:-1])
        body.append("  phases:")
        for p, share in zip(fit.phases, shares, strict=True):
            body += _phase_lines(p, "      ", cap, round(share, 6))
    return "\n".join(head + body + TAIL_LINES)
