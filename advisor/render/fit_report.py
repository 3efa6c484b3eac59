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
from typing import Any

from advisor.core.trace_fit import FittedPhase, FittedTraffic, LengthSummary
from advisor.escaping import visible, yaml_comment, yaml_scalar

SCHEMA_VERSION = 1
PREFIX_NOTE = ("an upper bound (an unbounded prefix cache); the written workload carries it "
               "as a commented-out traffic.prefix_cache_hit_rate, to opt in")


@dataclass(frozen=True)
class LogInfo:
    """What was read."""

    paths: tuple[str, ...]
    format: str
    time_scale: float
    start_epoch_s: float | None
    block_tokens: int | None


@dataclass(frozen=True)
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


def _phase_dict(ph: FittedPhase) -> dict[str, Any]:
    return {"name": ph.name, "share": _num(ph.share), "duration_s": _num(ph.duration_s),
            "requests": ph.requests, "rate_rps": _num(ph.rate_rps),
            "burstiness": _num(ph.burstiness), "gaps": ph.gaps,
            "prompt_tokens": _lengths_dict(ph.prompt), "output_tokens": _lengths_dict(ph.output),
            "prefix_reuse": _num(ph.prefix_reuse),
            "stretches_s": [[_num(a), _num(b)] for a, b in ph.stretches]}


def fit_document(fit: FittedTraffic, log: LogInfo, written: str | None) -> dict[str, Any]:
    """The JSON document of a ``fit`` run."""
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
        "prompt_tokens": _lengths_dict(fit.prompt),
        "output_tokens": _lengths_dict(fit.output),
        "prefix_reuse": None if fit.prefix_reuse is None else {
            "prompt_token_share": _num(fit.prefix_reuse),
            "block_share": _num(fit.prefix_block_reuse),
            "block_tokens": fit.block_tokens,
            "note": PREFIX_NOTE},
        "phases": [_phase_dict(p) for p in fit.phases],
        "notes": list(fit.notes),
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


def render_fit_table(fit: FittedTraffic, log: LogInfo, written: str | None) -> str:
    """A plain-text summary."""
    scale = f", time scale {log.time_scale:g}" if log.time_scale != 1.0 else ""
    lines = [(f"Fitted {fit.requests:,} requests over {fit.duration_s:,.0f} s from "
              f"{visible(', '.join(log.paths))} ({log.format}{scale})"),
             (f"overall: {fit.rate_rps:,.4g} req/s, burstiness (CV of gaps) "
              f"{fit.burstiness:.3g}, prompt mean {fit.prompt.mean:,.0f} / p95 "
              f"{fit.prompt.p95:,.0f}, output mean {fit.output.mean:,.0f} / p95 "
              f"{fit.output.p95:,.0f} tokens")]
    if fit.prefix_reuse is not None:
        lines.append(f"prefix reuse: {fit.prefix_reuse * 100:.1f} % of prompt tokens "
                     f"({(fit.prefix_block_reuse or 0) * 100:.1f} % of {fit.block_tokens}-token "
                     f"blocks) were a prefix seen earlier — {PREFIX_NOTE}")
    lines.append("")
    header = (f"{'phase':10s} {'share':>7s} {'req/s':>9s} {'CV':>6s} {'prompt mean':>12s} "
              f"{'p95':>8s} {'output mean':>12s} {'p95':>8s} {'reuse':>7s}  when")
    lines.append(header)
    lines.append("─" * len(header))
    for ph in fit.phases:
        reuse = "—" if ph.prefix_reuse is None else f"{ph.prefix_reuse * 100:.1f}%"
        lines.append(f"{ph.name:10s} {ph.share * 100:6.1f}% {ph.rate_rps:9.4g} "
                     f"{ph.burstiness:6.3g} {ph.prompt.mean:12,.0f} {ph.prompt.p95:8,.0f} "
                     f"{ph.output.mean:12,.0f} {ph.output.p95:8,.0f} {reuse:>7s}  "
                     f"{_stretches(ph, log)}")
    for note in fit.notes:
        lines.append(f"note: {visible(note)}")
    if written:
        lines.append(f"wrote {visible(written)}")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------ workload YAML
def _stat_lines(indent: str, key: str, s: LengthSummary, limit: int) -> list[str]:
    """A length as YAML statistics, each commented; statistics the workload format would
    refuse (a median above the mean, a p95 below it) are left out with a note."""
    cap = float(limit)
    mean, p50, p95, top = (min(v, cap) for v in (s.mean, s.p50, s.p95, s.max))
    if top <= mean + 1e-9 and p50 >= mean - 1e-9:  # every request the same length
        return [(f"{indent}{key}: {max(1, round(mean))}"
                 f"{'':<4}# every one of the {s.count:,} requests")]
    lines = [f"{indent}{key}:{'':<20}# {s.count:,} requests"]
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
                     "the log's span")
    rate = max(ph.rate_rps, 1e-6)
    lines.append(f"{indent}{'rate_rps: ' + f'{rate:.6g}':<26}# {ph.requests:,} requests / "
                 f"{ph.duration_s:,.1f} s")
    cv = min(max(ph.burstiness, 0.0), 1000.0)
    lines.append(f"{indent}{'burstiness: ' + f'{cv:.4g}':<26}# CV (std/mean) of the "
                 f"{ph.gaps:,} inter-arrival gaps")
    lines += _stat_lines(indent, "prompt_tokens", ph.prompt, limit)
    lines += _stat_lines(indent, "output_tokens", ph.output, limit)
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
    body += ["", "traffic:"]
    if fit.prefix_reuse is not None:
        body.append(f"  # prefix_cache_hit_rate: {min(fit.prefix_reuse, 0.99):.3f}  # the log's "
                    "prefix reuse (hash_ids): uncomment to model it, see the top")
    limit = target.context_tokens
    if len(fit.phases) == 1:
        body += _phase_lines(fit.phases[0], log, "  ", limit, as_phase=False)
    else:
        body.append(f"  # {len(fit.phases)} phases: stretches of the log that differ in rate "
                    "or mix (binary segmentation, docs/traces.md)")
        body.append("  phases:")
        for ph in fit.phases:
            body += _phase_lines(ph, log, "      ", limit, as_phase=True)
    body += ["", "slo:                             # targets: set your own",
             "  ttft_ms: 1000", "  tpot_ms: 50", "  percentile: 95", "",
             "operations:", "  autoscaling: false", ""]
    return "\n".join(head + body)
