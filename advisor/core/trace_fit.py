"""A workload's traffic fitted from a request log: it segments the log before it summarises.

Pure numpy on arrays (arrival times in seconds from the first request, prompt and output
tokens, optionally the prefix-cache hits per request); ``advisor.loading.traces`` reads the
files and ``pd-advisor fit`` writes the result as a workload. In order:

1. **Timestamps** (``trace_timing``): the tick every timestamp is a multiple of, the share of
   zero gaps and distinct timestamps; a coarse tick makes the burstiness a bounded estimate.
2. **Idle periods** (``trace_timing``): gaps beyond the far-out fence of the busy gaps are cut
   out of the clock and reported (duty cycle, idle share); everything below is measured on
   the *busy clock*.
3. **Phases** (``trace_phases``): stretches whose rate or mix differ by a test on the data,
   with a minimum phase length, grouped into phases.
4. **Per phase**: rate = gaps inside its stretches / their busy time; burstiness = CV of the
   inter-arrival gaps inside them (idle gaps excluded; the dispersion estimate for coarse
   timestamps); prompt and output lengths: mean, median, 95th percentile and maximum; prefix
   reuse = Σ min(hits × block, prompt) / Σ prompt.
5. **Goodness of fit** (``trace_gof``): the KS distance of every fitted distribution (prompt
   and output lognormals, the gamma gaps) to the log, the prompt–output rank correlation; and
   the list of what the workload format cannot represent.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from advisor.core import trace_gof, trace_phases, trace_timing
from advisor.core.distributions import LengthDistribution
from advisor.core.scenario import TrafficPhase
from advisor.core.trace_limits import not_represented
from advisor.core.trace_result import FittedPhase, FittedTraffic, GoodnessOfFit, LengthSummary
from advisor.core.trace_timing import IdlePeriods

MIN_PHASE_S = trace_phases.MIN_PHASE_S
__all__ = ["MIN_PHASE_S", "FittedPhase", "FittedTraffic", "GoodnessOfFit", "LengthSummary",
           "fit_traffic", "length_distribution", "lengths", "traffic_phases"]


def lengths(x: np.ndarray) -> LengthSummary:
    """Mean, median, p95 and max of token lengths (percentiles interpolated linearly)."""
    v = np.asarray(x, dtype=float)
    p50, p95 = np.percentile(v, [50.0, 95.0])
    return LengthSummary(mean=float(v.mean()), p50=float(p50), p95=float(p95), max=float(v.max()),
                         count=int(v.size))


def _prefix(prompt: np.ndarray, hits: np.ndarray | None, block: int | None) -> float | None:
    if hits is None or block is None or prompt.size == 0:
        return None
    reused = np.minimum(hits * block, prompt).sum()
    return float(reused / max(prompt.sum(), 1))


def _gof(prompt: np.ndarray, output: np.ndarray, gaps: np.ndarray, cv: float,
         coarse: bool, p: LengthSummary, o: LengthSummary) -> GoodnessOfFit:
    return GoodnessOfFit(
        prompt_ks=trace_gof.length_ks(prompt, length_distribution(p)),
        output_ks=trace_gof.length_ks(output, length_distribution(o)),
        gaps_ks=None if coarse else trace_gof.gap_ks(gaps, cv),
        length_correlation=trace_gof.spearman(prompt.astype(float), output.astype(float)))


def fit_traffic(arrival_s: np.ndarray, prompt_tokens: np.ndarray, output_tokens: np.ndarray,
                prefix_hit_blocks: np.ndarray | None = None,
                prefix_blocks: np.ndarray | None = None,
                block_tokens: int | None = None, *, time_scale: float = 1.0,
                time_unit_s: float | None = None,
                min_phase_s: float = MIN_PHASE_S) -> FittedTraffic:
    """Fit the traffic of a log (arrays in arrival order; module docstring)."""
    t = np.asarray(arrival_s, dtype=float)
    prompt = np.asarray(prompt_tokens, dtype=np.int64)
    output = np.asarray(output_tokens, dtype=np.int64)
    n = t.size
    if n < 2:
        raise ValueError("fitting needs at least 2 requests")
    idle = trace_timing.idle_periods(t)
    busy = trace_timing.busy_clock(t, idle)
    gap_ok = np.ones(n - 1, dtype=bool)
    gap_ok[idle.gap_index] = False
    quant = trace_timing.quantisation(t, busy, gap_ok, time_scale)
    spread = trace_timing.spread_ticks(busy, quant.tick_s) if (
        quant.coarse and quant.tick_s is not None) else None
    whole = trace_timing.burstiness(busy, gap_ok, np.zeros(n, dtype=np.int32), quant, spread)
    clock = busy if spread is None else spread
    dispersion = whole.value ** 2 if whole.method == "dispersion" else None
    seg_info = trace_phases.segment(clock, prompt, output, dispersion, min_phase_s)
    starts = list(seg_info.starts)
    ends = [*starts[1:], n]
    stretch = np.zeros(n, dtype=np.int32)
    busy_bounds: list[float] = []
    bounds: list[tuple[float, float]] = []
    for s, (a, b) in enumerate(zip(starts, ends, strict=True)):
        stretch[a:b] = s
        b_end = b if b < n else n - 1
        busy_bounds.append(float(clock[b_end] - clock[a]))
        bounds.append((float(t[a]), float(t[b_end])))
    phase_of = list(seg_info.phase_of)
    nphases = max(phase_of) + 1
    durations = [0.0] * nphases
    for s, d in enumerate(busy_bounds):
        durations[phase_of[s]] += d
    shares = _shares(durations)
    phase_idx = np.asarray(phase_of, dtype=np.int32)[stretch]
    same_stretch = (stretch[1:] == stretch[:-1]) & gap_ok
    phases = []
    for p in range(nphases):
        sel = phase_idx == p
        count = int(sel.sum())
        gaps_in = same_stretch & sel[1:]
        gaps_n = int(gaps_in.sum())
        dur = max(durations[p], 1e-9)
        rate = (gaps_n if gaps_n > 0 else count) / dur
        idx = np.flatnonzero(sel)
        sub_ok = (same_stretch[idx[:-1]] & (np.diff(idx) == 1)) if idx.size > 1 else np.zeros(
            0, dtype=bool)
        detail = trace_timing.burstiness(busy[idx], sub_ok, stretch[idx], quant,
                                         None if spread is None else spread[idx])
        p_sum, o_sum = lengths(prompt[sel]), lengths(output[sel])
        gaps = np.diff(busy)[gaps_in]
        hits = prefix_hit_blocks[sel] if prefix_hit_blocks is not None else None
        phases.append(FittedPhase(
            name=f"phase-{p + 1}", share=shares[p], duration_s=durations[p], requests=count,
            rate_rps=rate, burstiness=detail.value, gaps=detail.gaps, prompt=p_sum,
            output=o_sum, prefix_reuse=_prefix(prompt[sel], hits, block_tokens),
            stretches=tuple(bd for s, bd in enumerate(bounds) if phase_of[s] == p),
            detail=detail,
            fit=_gof(prompt[sel], output[sel], gaps, detail.value, quant.coarse, p_sum, o_sum)))
    segment, seg_phase, seg_bounds = _replay_segments(t, stretch, phase_of, idle)
    block_reuse = None
    if prefix_hit_blocks is not None and prefix_blocks is not None:
        block_reuse = float(prefix_hit_blocks.sum() / max(int(prefix_blocks.sum()), 1))
    span = max(float(t[-1] - t[0]), 1e-9)
    busy_span = max(float(busy[-1] - busy[0]), 1e-9)
    raw_g = np.diff(t)
    span_cv = float(raw_g.std() / raw_g.mean()) if raw_g.mean() > 0 else 1.0
    fitted = FittedTraffic(
        requests=n, duration_s=span, rate_rps=(n - 1) / busy_span, burstiness=whole.value,
        prompt=lengths(prompt), output=lengths(output),
        prefix_reuse=_prefix(prompt, prefix_hit_blocks, block_tokens),
        prefix_block_reuse=block_reuse, block_tokens=block_tokens, phases=tuple(phases),
        segment=segment, segment_phase=seg_phase, segment_bounds_s=seg_bounds,
        quantisation=quant, idle=idle, span_rate_rps=(n - 1) / span, span_burstiness=span_cv,
        burst_detail=whole, min_phase_s=min_phase_s, phase_tests=seg_info.tests,
        time_scale=time_scale, time_unit_s=time_unit_s)
    return dataclasses.replace(fitted, limits=not_represented(fitted))


def _replay_segments(t: np.ndarray, stretch: np.ndarray, phase_of: list[int],
                     idle: IdlePeriods) -> tuple[np.ndarray, tuple[int, ...],
                                                 tuple[tuple[float, float], ...]]:
    """The stretches cut at their idle gaps: each busy piece is measured on its own in a
    replay (the system drains in an idle period; its warm-up starts again after one)."""
    cut = np.zeros(t.size, dtype=bool)
    cut[0] = True
    cut[1:] |= stretch[1:] != stretch[:-1]
    cut[idle.gap_index + 1] = True
    piece = np.cumsum(cut) - 1
    starts = np.flatnonzero(cut)
    ends = np.append(starts[1:], t.size)
    seg_phase = tuple(int(phase_of[int(stretch[a])]) for a in starts.tolist())
    bounds = []
    for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
        # a piece ends where the next begins unless an idle gap separates them
        end = float(t[b]) if b < t.size and not _cut_is_idle(idle, b - 1) else float(t[b - 1])
        bounds.append((float(t[a]), end))
    return piece.astype(np.int32), seg_phase, tuple(bounds)


def _cut_is_idle(idle: IdlePeriods, gap: int) -> bool:
    """Whether gap ``gap`` (between requests gap and gap + 1) is idle."""
    i = int(np.searchsorted(idle.gap_index, gap))
    return i < idle.gap_index.size and int(idle.gap_index[i]) == gap


def _shares(durations: list[float]) -> list[float]:
    """Time shares rounded to 1e-6 that add up to exactly 1 (largest remainder)."""
    total = sum(durations)
    if total <= 0:
        return [1.0 / len(durations)] * len(durations)
    units = 10**6
    exact = [d / total * units for d in durations]
    floors = [math.floor(x) for x in exact]
    order = sorted(range(len(exact)), key=lambda i: floors[i] - exact[i])
    for i in order[: units - sum(floors)]:
        floors[i] += 1
    while min(floors) < 1:  # a sliver of a stretch still gets a share the format accepts
        floors[floors.index(min(floors))] += 1
        floors[floors.index(max(floors))] -= 1
    return [f / units for f in floors]


def traffic_phases(fit: FittedTraffic, context_tokens: float | None = None
                   ) -> tuple[TrafficPhase, ...]:
    """The fitted phases as the core's ``TrafficPhase`` (the analytic column of a replay):
    lengths fitted to mean, p50 (when ≤ mean), p95 (when ≥ mean) and max, capped at
    ``context_tokens`` — the statistics ``pd-advisor fit`` writes."""
    out = []
    for ph in fit.phases:
        out.append(TrafficPhase(name=ph.name, share=ph.share, rate_rps=max(ph.rate_rps, 1e-6),
                                burstiness=min(max(ph.burstiness, 0.0), 1000.0),
                                prompt_tokens=length_distribution(ph.prompt, context_tokens),
                                output_tokens=length_distribution(ph.output, context_tokens)))
    return tuple(out)


def length_distribution(s: LengthSummary, cap: float | None = None) -> LengthDistribution:
    """The distribution ``fit`` writes for a length: a constant when it never varies, else
    the lognormal of mean, p50 (when ≤ mean), p95 (when ≥ mean) and max, capped at ``cap``."""
    c = math.inf if cap is None else float(cap)
    mean, p50, p95, top = (max(1.0, min(v, c)) for v in (s.mean, s.p50, s.p95, s.max))
    if top <= mean + 1e-9 and p50 >= mean - 1e-9:
        return LengthDistribution.constant(mean)
    return LengthDistribution.fit(mean=mean, p50=p50 if p50 <= mean else None,
                                  p95=p95 if p95 >= mean else None, max_tokens=top)
