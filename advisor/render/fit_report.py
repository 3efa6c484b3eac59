"""``pd-advisor fit`` output: the fitted traffic as JSON, as a table, and as a workload file.

Pure functions of a :class:`~advisor.core.trace_fit.FittedTraffic` and a description of the
log. The workload text has every fitted number commented with how it was measured; prefix
reuse is written as a commented-out ``traffic.prefix_cache_hit_rate`` (an upper bound: an
unbounded cache; the user opts in, since ``simulate`` does not model prefix caching) and is
reported in the JSON/table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from advisor.core.trace_fit import FittedPhase, FittedTraffic, LengthSummary
from advisor.core.trace_gof import GOOD_FIT_KS
from advisor.core.trace_limits import tick_text
from advisor.core.trace_phases import TESTS_TEXT as PHASE_TESTS
from advisor.core.trace_timing import Burstiness
from advisor.escaping import visible, yaml_comment, yaml_scalar

if TYPE_CHECKING:
    from advisor.core.simulate import SimulationResult

SCHEMA_VERSION = 2
PREFIX_NOTE = ("an upper bound (an unbounded prefix cache); the written workload carries it "
               "as a commented-out traffic.prefix_cache_hit_rate, to opt in")


@dataclass(frozen=True, kw_only=True)
class LogInfo:
    """What was read."""

    paths: tuple[str, ...]
    format: str
    time_scale: float
    start_epoch_s: float | None
    block_tokens: int | None


@dataclass(frozen=True, kw_only=True)
class Target:
    """The non-traffic part of the written workload."""

    name: str
    model_ref: str
    gpu_ref: str
    gpus: int
    precision: str
    engine: str
    inter_node: str | None
    context_tokens: int
    """The model's context window: length statistics above it are capped."""


def _num(x: float | None, digits: int = 6) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    return float(f"{x:.{digits}g}")


def _lengths_dict(s: LengthSummary) -> dict[str, Any]:
    return {"mean": _num(s.mean), "p50": _num(s.p50), "p95": _num(s.p95), "max": _num(s.max),
            "count": s.count}


def _burst_dict(b: Burstiness) -> dict[str, Any]:
    return {"value": _num(b.value), "method": b.method, "gaps_cv": _num(b.gaps_cv),
            "lower_bound": _num(b.lower), "upper_bound": _num(b.gaps_cv) if b.lower is not None
            else None, "gaps": b.gaps, "windows": b.windows or None}


def _phase_dict(ph: FittedPhase) -> dict[str, Any]:
    return {"name": ph.name, "share": _num(ph.share), "duration_s": _num(ph.duration_s),
            "requests": ph.requests, "rate_rps": _num(ph.rate_rps),
            "burstiness": _num(ph.burstiness), "gaps": ph.gaps,
            "burstiness_detail": _burst_dict(ph.detail),
            "prompt_tokens": _lengths_dict(ph.prompt), "output_tokens": _lengths_dict(ph.output),
            "goodness_of_fit": {"prompt_ks": _num(ph.fit.prompt_ks, 4),
                                "output_ks": _num(ph.fit.output_ks, 4),
                                "gaps_ks": _num(ph.fit.gaps_ks, 4),
                                "prompt_output_spearman": _num(ph.fit.length_correlation, 4)},
            "prefix_reuse": _num(ph.prefix_reuse),
            "stretches_s": [[_num(a), _num(b)] for a, b in ph.stretches]}


def fit_document(fit: FittedTraffic, log: LogInfo, written: str | None) -> dict[str, Any]:
    """The JSON document of a ``fit`` run."""
    q, idle = fit.quantisation, fit.idle
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "fit",
        "traces": list(log.paths),
        "format": log.format,
        "time_scale": _num(log.time_scale),
        "requests": fit.requests,
        "duration_s": _num(fit.duration_s),
        "rate_rps": _num(fit.rate_rps),
        "burstiness": _num(fit.burstiness),
        "burstiness_detail": _burst_dict(fit.burst_detail),
        "span": {"rate_rps": _num(fit.span_rate_rps), "gaps_cv": _num(fit.span_burstiness)},
        "timestamps": {"tick_s": _num(q.tick_s), "distinct": q.distinct,
                       "zero_gap_share": _num(q.zero_gap_share, 4), "coarse": q.coarse,
                       "field_unit_s": _num(fit.time_unit_s)},
        "idle": {"gaps": idle.count, "fence_s": _num(idle.fence_s),
                 "idle_s": _num(idle.idle_s), "duty_cycle": _num(idle.duty_cycle, 4),
                 "longest_s": _num(float(idle.gaps_s.max())) if idle.count else None,
                 "shortest_s": _num(float(idle.gaps_s.min())) if idle.count else None},
        "phase_search": {"min_phase_s": _num(fit.min_phase_s), "splits": list(fit.phase_tests),
                         "tests": PHASE_TESTS},
        "prompt_tokens": _lengths_dict(fit.prompt),
        "output_tokens": _lengths_dict(fit.output),
        "prefix_reuse": None if fit.prefix_reuse is None else {
            "prompt_token_share": _num(fit.prefix_reuse),
            "block_share": _num(fit.prefix_block_reuse),
            "block_tokens": fit.block_tokens,
            "note": PREFIX_NOTE},
        "phases": [_phase_dict(p) for p in fit.phases],
        "notes": list(fit.notes),
        "not_represented": list(fit.limits),
        "workload": written,
    }


def _clock(t: float, start_epoch_s: float | None) -> str:
    if start_epoch_s is None:
        return f"{t:,.0f} s"
    tod = (start_epoch_s + t) % 86_400
    return f"{int(tod // 3600):02d}:{int(tod % 3600 // 60):02d}"


def _stretches(ph: FittedPhase, log: LogInfo) -> str:
    parts = [f"{_clock(a, log.start_epoch_s)}–{_clock(b, log.start_epoch_s)}"
             for a, b in ph.stretches[:4]]
    more = f" and {len(ph.stretches) - 4} more" if len(ph.stretches) > 4 else ""
    return ", ".join(parts) + more


def _ks(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x:.2f}" + ("!" if x > GOOD_FIT_KS else "")


def _timing_lines(fit: FittedTraffic) -> list[str]:
    q, idle = fit.quantisation, fit.idle
    lines = []
    if q.tick_s is not None:
        tick = tick_text(q.tick_s, fit.time_scale, fit.time_unit_s)
        lines.append(f"timestamps: {tick}; {q.distinct:,} distinct for {q.requests:,} "
                     f"requests, {q.zero_gap_share * 100:.1f} % zero gaps"
                     + (" — coarse: the burstiness is an estimate within bounds"
                        if q.coarse else ""))
    else:
        lines.append(f"timestamps: no common tick of 1 µs or more; {q.distinct:,} distinct for "
                     f"{q.requests:,} requests, {q.zero_gap_share * 100:.1f} % zero gaps")
    if idle.count:
        span = (f"{float(idle.gaps_s.min()):,.3g} s" if idle.count == 1 else
                f"{float(idle.gaps_s.min()):,.3g}–{float(idle.gaps_s.max()):,.3g} s")
        lines.append(f"idle: {idle.count} gap{'s' * (idle.count != 1)} beyond "
                     f"{idle.fence_s or 0:,.3g} s ({span}) cut out: duty cycle "
                     f"{idle.duty_cycle * 100:.1f} %, idle {(1 - idle.duty_cycle) * 100:.1f} % "
                     f"of the span; over the whole span {fit.span_rate_rps:,.4g} req/s, gap CV "
                     f"{fit.span_burstiness:.3g}")
    else:
        lines.append(f"idle: none (no gap beyond {idle.fence_s or 0:,.3g} s, the busy gaps' "
                     "fence)" if idle.fence_s is not None else
                     "idle: not tested (too few gaps)")
    return lines


def render_fit_table(fit: FittedTraffic, log: LogInfo, written: str | None) -> str:
    """A plain-text summary."""
    scale = f", time scale {log.time_scale:g}" if log.time_scale != 1.0 else ""
    b = fit.burst_detail
    bound = (f" (estimate; bounds {b.lower:.3g}–{b.gaps_cv:.3g})" if b.lower is not None
             else "")
    lines = [(f"Fitted {fit.requests:,} requests over {fit.duration_s:,.0f} s from "
              f"{visible(', '.join(log.paths))} ({log.format}{scale})"),
             (f"busy periods: {fit.rate_rps:,.4g} req/s, burstiness (CV of gaps) "
              f"{fit.burstiness:.3g}{bound}, prompt mean {fit.prompt.mean:,.0f} / p95 "
              f"{fit.prompt.p95:,.0f}, output mean {fit.output.mean:,.0f} / p95 "
              f"{fit.output.p95:,.0f} tokens")]
    lines += _timing_lines(fit)
    if fit.prefix_reuse is not None:
        lines.append(f"prefix reuse: {fit.prefix_reuse * 100:.1f} % of prompt tokens "
                     f"({(fit.prefix_block_reuse or 0) * 100:.1f} % of {fit.block_tokens}-token "
                     f"blocks) were a prefix seen earlier — {PREFIX_NOTE}")
    kept = (f"{len(fit.phase_tests)} split{'s' * (len(fit.phase_tests) != 1)} kept ("
            + ", ".join(f"by {t}" for t in fit.phase_tests) + ")" if fit.phase_tests
            else "no split passed the tests")
    lines.append(f"phases: {kept}; {PHASE_TESTS}; each side at least "
                 f"{fit.min_phase_s:,.0f} busy s (--min-phase)")
    lines.append("")
    header = (f"{'phase':10s} {'share':>7s} {'req/s':>9s} {'CV':>6s} {'prompt mean':>12s} "
              f"{'p95':>8s} {'KS':>5s} {'output mean':>12s} {'p95':>8s} {'KS':>5s} "
              f"{'gaps KS':>7s} {'reuse':>7s}  when")
    lines.append(header)
    lines.append("─" * len(header))
    for ph in fit.phases:
        reuse = "—" if ph.prefix_reuse is None else f"{ph.prefix_reuse * 100:.1f}%"
        lines.append(f"{ph.name:10s} {ph.share * 100:6.1f}% {ph.rate_rps:9.4g} "
                     f"{ph.burstiness:6.3g} {ph.prompt.mean:12,.0f} {ph.prompt.p95:8,.0f} "
                     f"{_ks(ph.fit.prompt_ks):>5s} {ph.output.mean:12,.0f} "
                     f"{ph.output.p95:8,.0f} {_ks(ph.fit.output_ks):>5s} "
                     f"{_ks(ph.fit.gaps_ks):>7s} {reuse:>7s}  {_stretches(ph, log)}")
    lines.append(f"KS: Kolmogorov–Smirnov distance between the log and the fitted lognormal "
                 f"(lengths) or gamma (gaps); ! above {GOOD_FIT_KS:g}, a poor fit")
    for note in fit.notes:
        lines.append(f"note: {visible(note)}")
    if fit.limits:
        lines.append("")
        lines.append("What the workload format cannot represent:")
        lines += [f"  - {visible(limit)}" for limit in fit.limits]
    if written:
        lines.append(f"wrote {visible(written)}")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------ workload YAML
def _stat_lines(indent: str, key: str, s: LengthSummary, limit: int, ks: float) -> list[str]:
    """A length as YAML statistics, each commented; statistics the workload format would
    refuse (a median above the mean, a p95 below it) are left out with a note."""
    cap = float(limit)
    mean, p50, p95, top = (min(v, cap) for v in (s.mean, s.p50, s.p95, s.max))
    if top <= mean + 1e-9 and p50 >= mean - 1e-9:  # every request the same length
        return [(f"{indent}{key}: {max(1, round(mean))}"
                 f"{'':<4}# every one of the {s.count:,} requests")]
    fit = "poor fit, see the top" if ks > GOOD_FIT_KS else "fits"
    lines = [f"{indent}{key}:{'':<20}# {s.count:,} requests; lognormal KS distance {ks:.2f} "
             f"({fit})"]
    pad = indent + "  "
    lines.append(f"{pad}{'mean: ' + _tok(mean):<26}# arithmetic mean")
    if p50 <= mean:
        lines.append(f"{pad}{'p50: ' + _tok(p50):<26}# median (linear interpolation)")
    else:
        lines.append(f"{pad}# p50 {_tok(p50)} is above the mean: left out (lengths are "
                     "modelled right-skewed)")
    if p95 >= mean:
        lines.append(f"{pad}{'p95: ' + _tok(p95):<26}# 95th percentile (linear interpolation)")
    else:
        lines.append(f"{pad}# p95 {_tok(p95)} is below the mean: left out")
    note = "longest request" + (f" (capped at the {limit:,}-token context window; "
                                f"the log's is {_tok(s.max)})" if s.max > cap else "")
    lines.append(f"{pad}{'max: ' + _tok(top):<26}# {note}")
    return lines


def _tok(x: float) -> str:
    return f"{x:.1f}" if x < 100 else f"{round(x):d}"


def _phase_lines(ph: FittedPhase, log: LogInfo, indent: str, limit: int,
                 as_phase: bool) -> list[str]:
    lines = []
    if as_phase:
        lines.append(f"{indent[:-2]}- name: {yaml_scalar(ph.name)}{'':<12}# {_stretches(ph, log)}")
        lines.append(f"{indent}{'share: ' + f'{ph.share:.6f}':<26}# {ph.duration_s:,.0f} s of "
                     "the log's busy time")
    rate = max(ph.rate_rps, 1e-6)
    lines.append(f"{indent}{'rate_rps: ' + f'{rate:.6g}':<26}# {ph.requests:,} requests / "
                 f"{ph.duration_s:,.1f} busy s")
    cv = min(max(ph.burstiness, 0.0), 1000.0)
    d = ph.detail
    if d.method == "dispersion":
        how = (f"estimate (coarse timestamps): √(Var/mean) of the counts in {d.windows:,} "
               f"windows; bounds {d.lower or 0:.3g}–{d.gaps_cv:.3g}")
    elif d.lower is not None:
        how = (f"CV of the {ph.gaps:,} gaps as logged, an upper bound (coarse timestamps; "
               f"lower bound {d.lower:.3g})")
    else:
        how = f"CV (std/mean) of the {ph.gaps:,} inter-arrival gaps in busy periods"
    gaps = "" if ph.fit.gaps_ks is None else f"; gamma KS {ph.fit.gaps_ks:.2f}"
    lines.append(f"{indent}{'burstiness: ' + f'{cv:.4g}':<26}# {how}{gaps}")
    lines += _stat_lines(indent, "prompt_tokens", ph.prompt, limit, ph.fit.prompt_ks)
    lines += _stat_lines(indent, "output_tokens", ph.output, limit, ph.fit.output_ks)
    if ph.prefix_reuse is not None:
        lines.append(f"{indent}# prefix reuse: {ph.prefix_reuse * 100:.1f} % of prompt tokens "
                     "(hash_ids; the whole log's is the prefix_cache_hit_rate line above)")
    return lines


def workload_yaml(fit: FittedTraffic, log: LogInfo, target: Target) -> str:
    """The workload file text (valid under the workload schema; editors validate it against
    the file ``pd-advisor schema -o`` writes, as ``pd-advisor init`` sets up)."""
    scale = f", time scale {log.time_scale:g}" if log.time_scale != 1.0 else ""
    head = [(f"# Traffic fitted by `pd-advisor fit` from {yaml_comment(', '.join(log.paths))} "
             f"({log.format}, {fit.requests:,} requests over {fit.duration_s:,.0f} s{scale})."),
            "# Every traffic number says how it was measured. Model, cluster and SLO are",
            "# starting values (--model, --gpu, --gpus): set them to your deployment."]
    if fit.prefix_reuse is not None:
        head += [(f"# Prefix reuse: {fit.prefix_reuse * 100:.1f} % of prompt tokens "
                  f"({(fit.prefix_block_reuse or 0) * 100:.1f} % of the "
                  f"{fit.block_tokens}-token hash_ids blocks) repeat a prefix seen in an"),
                 "# earlier request (an upper bound: an unbounded prefix cache). traffic: has",
                 "# it as a commented-out prefix_cache_hit_rate: uncomment it to model the",
                 "# cache (`simulate` does not model one)."]
    for note in fit.notes:
        head.append(f"# Note: {yaml_comment(note)}.")
    if fit.limits:
        head.append("# What this file cannot represent of the log (pd-advisor fit):")
        for item in fit.limits:
            head += ["#   " + line for line in _wrap("- " + yaml_comment(item) + ".", 84)]
    body = [*deployment_lines(target), "", "traffic:"]
    if fit.prefix_reuse is not None:
        body.append(f"  # prefix_cache_hit_rate: {min(fit.prefix_reuse, 0.99):.3f}  # the log's "
                    "prefix reuse (hash_ids): uncomment to model it, see the top")
    limit = target.context_tokens
    if len(fit.phases) == 1:
        body += _phase_lines(fit.phases[0], log, "  ", limit, as_phase=False)
    else:
        body.append(f"  # {len(fit.phases)} phases: stretches of the log whose rate or mix "
                    "differ by a test (docs/traces.md)")
        body.append("  phases:")
        for ph in fit.phases:
            body += _phase_lines(ph, log, "      ", limit, as_phase=True)
    body += TAIL_LINES
    return "\n".join(head + body)


TAIL_LINES = ["", "slo:                             # targets: set your own",
              "  ttft_ms: 1000", "  tpot_ms: 50", "  percentile: 95", "",
              "operations:", "  autoscaling: false", ""]
"""The written workload's SLO and operations (starting values)."""


def deployment_lines(target: Target) -> list[str]:
    """The written workload's model, engine and cluster."""
    body = [
        "version: 1",
        f"name: {yaml_scalar(target.name)}",
        f"model: {yaml_scalar(target.model_ref)}",
        f"precision: {yaml_scalar(target.precision)}",
        f"engine: {yaml_scalar(target.engine)}",
        "",
        "cluster:",
        f"  gpu: {yaml_scalar(target.gpu_ref)}",
        f"  gpus: {yaml_scalar(target.gpus)}",
    ]
    if target.inter_node:
        body.append(f"  inter_node: {yaml_scalar(target.inter_node)}")
    return body


def wrap(text: str, width: int) -> list[str]:
    """``text`` in lines of ``width``, continuation lines indented."""
    return _wrap(text, width)


def _wrap(text: str, width: int) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width, subsequent_indent="  ", break_on_hyphens=False)


# ------------------------------------------------------------------------------ --check
def check_document(result: SimulationResult, verdict: str) -> dict[str, Any]:
    """The ``--check`` replay as JSON (the simulate report's mode entry)."""
    from advisor.render.simulate_report import result_dict

    return {"verdict": verdict, "replay": result_dict(result)}


def _ms(x: float | None) -> str:
    return "—" if x is None or not math.isfinite(x) else f"{x:,.1f}"


def render_check_table(result: SimulationResult, verdict: str) -> str:
    """The analytic-vs-replay table of ``fit --check``: p50/p95/p99 TTFT and TPOT per phase."""
    from advisor.render.simulate_report import plan_text, steady_lines

    lines = [f"Check: the log replayed on the recommended plan ({verdict}: {result.mode}, "
             f"{plan_text(result)}, {result.gpus} GPUs); diff = (analytic − replay) / replay",
             ""]
    header = f"{'phase':10s} {'metric':10s} {'analytic':>10s} {'replay':>10s} {'diff':>7s}"
    lines += [header, "─" * len(header)]
    names = ("p50", "p95", "p99")
    for ph in result.phases:
        first = True
        for label, figs in (("TTFT", ph.ttft_ms), ("TPOT", ph.tpot_ms)):
            for name, c in zip(names, figs, strict=True):
                diff = "—" if c.relative_diff is None else f"{c.relative_diff * 100:+.0f} %"
                lines.append(f"{ph.name if first else '':10s} {label + ' ' + name:10s} "
                             f"{_ms(c.analytic):>10s} {_ms(c.simulated):>10s} {diff:>7s}")
                first = False
    lines.append("(ms; the replay measures each busy stretch after a warm-up of 3 mean "
                 "residence times)")
    for ph in result.phases:
        lines += steady_lines(ph, f"{ph.name}: ", replay=True)
    lines.append(f"GPU busy share in the replay: {result.gpu_busy_share * 100:.1f} %")
    return "\n".join(lines) + "\n"
