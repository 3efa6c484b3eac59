"""A workload's traffic fitted from a request log: rate, burstiness, lengths, phases, reuse.

Pure numpy on arrays (arrival times in seconds from the first request, prompt and output
tokens, optionally the prefix-cache hits per request); ``advisor.loading.traces`` reads the
files and ``pd-advisor fit`` writes the result as a workload.

**Phases** are stretches of the log with a different arrival rate or request mix, found by
binary segmentation (Scott & Knott 1974; Killick & Eckley, "changepoint", J. Stat. Softw.
58(3), 2014, §2) on a cost that adds

* the arrival counts: a Poisson process with rate C/D on each stretch (C requests over D
  seconds, log-likelihood C·ln(C/D) − C), divided by the dispersion φ = max(c², ¼) of bursty
  arrivals (c the median CV of inter-arrival gaps within ``BINS`` equal time bins, which a
  rate step does not inflate: counts of a renewal process of CV c vary c² times as much as
  Poisson counts);
* the mix: Gaussian log-likelihoods of ln(prompt) and ln(output) around each stretch's mean,
  with the median within-bin variance.

A split is kept when it raises the log-likelihood by more than ``PENALTY`` · ln(n) (several
times the Bayesian information criterion's penalty, since real logs drift) *and*
it changes something by a margin worth a phase: the rate by ``MIN_RATE_STEP`` or a mean
log-length by ``MIN_MIX_STEP``; stretches hold at least ``MIN_SEGMENT_REQUESTS`` requests.
Stretches are then grouped into phases — a stretch joins the first phase whose rate and
mean log-lengths are within those margins (the day's busy hours recurring, say) — and a
phase's ``share`` is its stretches' total time over the log's span.

**Per phase**: rate = requests / time; burstiness = CV (standard deviation / mean) of the
inter-arrival gaps inside its stretches; prompt and output lengths: mean, median, 95th
percentile and maximum; prefix reuse = Σ min(hits × block, prompt) / Σ prompt.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from advisor.core.distributions import LengthDistribution
from advisor.core.scenario import TrafficPhase

BINS = 48
"""Equal time bins for the robust dispersion and variance estimates."""
MIN_SEGMENT_REQUESTS = 200
MAX_SEGMENTS = 16
PENALTY = 10.0
MIN_RATE_STEP = math.log(1.2)
"""Smallest rate change that makes a new phase: 20 %."""
MIN_MIX_STEP = math.log(1.2)
"""Smallest change of a mean length (geometric) that makes a new phase: 20 %."""


@dataclass(frozen=True)
class LengthSummary:
    """Statistics of one length (tokens)."""

    mean: float
    p50: float
    p95: float
    max: float
    count: int


@dataclass(frozen=True)
class FittedPhase:
    """One phase found in the log."""

    name: str
    share: float
    """Its stretches' time over the log's span."""
    duration_s: float
    requests: int
    rate_rps: float
    burstiness: float
    """CV of the inter-arrival gaps inside its stretches."""
    gaps: int
    prompt: LengthSummary
    output: LengthSummary
    prefix_reuse: float | None
    """Share of prompt tokens that are a prefix seen earlier (None without hash ids)."""
    stretches: tuple[tuple[float, float], ...]
    """(start, end) seconds from the log's first request."""


@dataclass(frozen=True, eq=False)
class FittedTraffic:
    """The fitted traffic of a log."""

    requests: int
    duration_s: float
    rate_rps: float
    burstiness: float
    prompt: LengthSummary
    output: LengthSummary
    prefix_reuse: float | None
    prefix_block_reuse: float | None
    """Share of hash blocks seen earlier."""
    block_tokens: int | None
    phases: tuple[FittedPhase, ...]
    segment: np.ndarray
    """Stretch index per request."""
    segment_phase: tuple[int, ...]
    segment_bounds_s: tuple[tuple[float, float], ...]
    notes: tuple[str, ...] = field(default=())


def lengths(x: np.ndarray) -> LengthSummary:
    """Mean, median, p95 and max of token lengths (percentiles interpolated linearly)."""
    v = np.asarray(x, dtype=float)
    p50, p95 = np.percentile(v, [50.0, 95.0])
    return LengthSummary(float(v.mean()), float(p50), float(p95), float(v.max()), int(v.size))


def gap_cv(t: np.ndarray, seg: np.ndarray | None = None) -> tuple[float, int]:
    """CV of inter-arrival gaps (only between requests of one stretch when ``seg`` given)."""
    gaps = np.diff(t)
    if seg is not None:
        gaps = gaps[seg[1:] == seg[:-1]]
    if gaps.size < 2 or gaps.mean() <= 0:
        return 1.0, int(gaps.size)
    return float(gaps.std() / gaps.mean()), int(gaps.size)


def _robust_scales(t: np.ndarray, lx: np.ndarray, ly: np.ndarray) -> tuple[float, float, float]:
    """(dispersion φ, var ln prompt, var ln output): medians over equal time bins."""
    span = float(t[-1] - t[0])
    edges = t[0] + span * np.arange(BINS + 1) / BINS
    idx = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, BINS - 1)
    cvs, vx, vy = [], [], []
    for b in range(BINS):
        sel = idx == b
        if sel.sum() < 20:
            continue
        tb = t[sel]
        g = np.diff(tb)
        if g.size >= 10 and g.mean() > 0:
            cvs.append(float(g.std() / g.mean()))
        vx.append(float(lx[sel].var()))
        vy.append(float(ly[sel].var()))
    cv = float(np.median(cvs)) if cvs else 1.0
    var_x = float(np.median(vx)) if vx else float(lx.var())
    var_y = float(np.median(vy)) if vy else float(ly.var())
    return max(cv * cv, 0.25), max(var_x, 1e-4), max(var_y, 1e-4)


class _Cost:
    """Prefix sums for the segment log-likelihood (module docstring)."""

    def __init__(self, t: np.ndarray, lx: np.ndarray, ly: np.ndarray, phi: float, vx: float,
                 vy: float) -> None:
        self.t = t
        self.n = t.size
        self.cx = np.concatenate(([0.0], np.cumsum(lx)))
        self.cx2 = np.concatenate(([0.0], np.cumsum(lx * lx)))
        self.cy = np.concatenate(([0.0], np.cumsum(ly)))
        self.cy2 = np.concatenate(([0.0], np.cumsum(ly * ly)))
        self.phi, self.vx, self.vy = phi, vx, vy

    def end_time(self, b: np.ndarray | int) -> np.ndarray:
        """A stretch [a, b) ends where request b arrives (the last one at the log's end)."""
        b = np.asarray(b)
        end: np.ndarray = self.t[np.minimum(b, self.n - 1)]
        return end

    def loglik(self, a: np.ndarray | int, b: np.ndarray | int) -> np.ndarray:
        a = np.asarray(a)
        b = np.asarray(b)
        c = (b - a).astype(float)
        d = np.maximum(self.end_time(b) - self.t[a], 1e-9)
        rate = (c * np.log(np.maximum(c, 1e-12) / d) - c) / self.phi
        sx = self.cx[b] - self.cx[a]
        sx2 = self.cx2[b] - self.cx2[a]
        sy = self.cy[b] - self.cy[a]
        sy2 = self.cy2[b] - self.cy2[a]
        sse_x = sx2 - sx * sx / np.maximum(c, 1.0)
        sse_y = sy2 - sy * sy / np.maximum(c, 1.0)
        gain: np.ndarray = rate - sse_x / (2 * self.vx) - sse_y / (2 * self.vy)
        return gain

    def stats(self, a: int, b: int) -> tuple[float, float, float]:
        """(ln rate, mean ln prompt, mean ln output) of [a, b)."""
        c = b - a
        d = max(float(self.end_time(b) - self.t[a]), 1e-9)
        return (math.log(c / d), (self.cx[b] - self.cx[a]) / c, (self.cy[b] - self.cy[a]) / c)


def _different(s1: tuple[float, float, float], s2: tuple[float, float, float]) -> bool:
    return (abs(s1[0] - s2[0]) > MIN_RATE_STEP or abs(s1[1] - s2[1]) > MIN_MIX_STEP
            or abs(s1[2] - s2[2]) > MIN_MIX_STEP)


def _best_split(cost: _Cost, a: int, b: int) -> tuple[float, int] | None:
    m = MIN_SEGMENT_REQUESTS
    if b - a < 2 * m:
        return None
    ks = np.arange(a + m, b - m + 1)
    gain = cost.loglik(a, ks) + cost.loglik(ks, b) - cost.loglik(a, b)
    best = int(np.argmax(gain))
    return float(gain[best]), int(ks[best])


def change_points(t: np.ndarray, prompt: np.ndarray, output: np.ndarray) -> list[int]:
    """Request indices where a new stretch starts (binary segmentation; module docstring)."""
    n = t.size
    if n < 2 * MIN_SEGMENT_REQUESTS or t[-1] <= t[0]:
        return []
    lx = np.log(np.maximum(prompt, 1).astype(float))
    ly = np.log(np.maximum(output, 1).astype(float))
    phi, vx, vy = _robust_scales(t, lx, ly)
    cost = _Cost(t, lx, ly, phi, vx, vy)
    threshold = PENALTY * math.log(n)
    bounds = [0, n]
    candidates: dict[tuple[int, int], tuple[float, int] | None] = {}
    while len(bounds) - 1 < MAX_SEGMENTS:
        best: tuple[float, int, int] | None = None
        for a, b in itertools.pairwise(bounds):
            if (a, b) not in candidates:
                candidates[(a, b)] = _best_split(cost, a, b)
            found = candidates[(a, b)]
            if found is None:
                continue
            gain, k = found
            if gain > threshold and _different(cost.stats(a, k), cost.stats(k, b)) and (
                    best is None or gain > best[0]):
                best = (gain, k, a)
        if best is None:
            break
        bounds = sorted({*bounds, best[1]})
    return bounds[1:-1]


def _prefix(prompt: np.ndarray, hits: np.ndarray | None, block: int | None) -> float | None:
    if hits is None or block is None or prompt.size == 0:
        return None
    reused = np.minimum(hits * block, prompt).sum()
    return float(reused / max(prompt.sum(), 1))


def fit_traffic(arrival_s: np.ndarray, prompt_tokens: np.ndarray, output_tokens: np.ndarray,
                prefix_hit_blocks: np.ndarray | None = None,
                prefix_blocks: np.ndarray | None = None,
                block_tokens: int | None = None,
                timestamp_step_s: float | None = None) -> FittedTraffic:
    """Fit the traffic of a log (arrays in arrival order; module docstring)."""
    t = np.asarray(arrival_s, dtype=float)
    prompt = np.asarray(prompt_tokens, dtype=np.int64)
    output = np.asarray(output_tokens, dtype=np.int64)
    n = t.size
    if n < 2:
        raise ValueError("fitting needs at least 2 requests")
    cps = change_points(t, prompt, output)
    starts = [0, *cps]
    ends = [*cps, n]
    seg = np.zeros(n, dtype=np.int32)
    seg_stats = []
    bounds = []
    for s, (a, b) in enumerate(zip(starts, ends, strict=True)):
        seg[a:b] = s
        t_end = float(t[b]) if b < n else float(t[-1])
        bounds.append((float(t[a]), t_end))
        c = b - a
        d = max(t_end - float(t[a]), 1e-9)
        lx = float(np.log(np.maximum(prompt[a:b], 1)).mean())
        ly = float(np.log(np.maximum(output[a:b], 1)).mean())
        seg_stats.append((math.log(c / d), lx, ly))
    # group stretches into phases
    phase_of: list[int] = []
    reps: list[tuple[float, float, float]] = []
    for st in seg_stats:
        for p, rep in enumerate(reps):
            if not _different(st, rep):
                phase_of.append(p)
                break
        else:
            phase_of.append(len(reps))
            reps.append(st)
    span = max(float(t[-1] - t[0]), 1e-9)
    phase_idx = np.asarray(phase_of, dtype=np.int32)[seg]
    durations = [0.0] * len(reps)
    for s, (b0, b1) in enumerate(bounds):
        durations[phase_of[s]] += b1 - b0
    shares = _shares(durations)
    phases = []
    for p in range(len(reps)):
        sel = phase_idx == p
        count = int(sel.sum())
        dur = max(durations[p], 1e-9)
        last_is_here = phase_of[-1] == p
        gaps_n = count - (1 if last_is_here else 0)
        rate = (gaps_n if gaps_n > 0 else count) / dur
        cv, gaps = gap_cv(t[sel], seg[sel])
        hits = prefix_hit_blocks[sel] if prefix_hit_blocks is not None else None
        phases.append(FittedPhase(
            name=f"phase-{p + 1}", share=shares[p], duration_s=durations[p], requests=count,
            rate_rps=rate, burstiness=cv, gaps=gaps, prompt=lengths(prompt[sel]),
            output=lengths(output[sel]), prefix_reuse=_prefix(prompt[sel], hits, block_tokens),
            stretches=tuple(b for s, b in enumerate(bounds) if phase_of[s] == p)))
    cv_all, _ = gap_cv(t)
    notes = []
    if timestamp_step_s is not None and n > 1 and span / (n - 1) < 10 * timestamp_step_s:
        notes.append(f"the timestamps are whole multiples of {timestamp_step_s:g} s, close to "
                     "the mean gap: the burstiness (CV of gaps) is only approximate")
    block_reuse = None
    if prefix_hit_blocks is not None and prefix_blocks is not None:
        block_reuse = float(prefix_hit_blocks.sum() / max(int(prefix_blocks.sum()), 1))
    return FittedTraffic(
        requests=n, duration_s=span, rate_rps=(n - 1) / span, burstiness=cv_all,
        prompt=lengths(prompt), output=lengths(output),
        prefix_reuse=_prefix(prompt, prefix_hit_blocks, block_tokens),
        prefix_block_reuse=block_reuse, block_tokens=block_tokens, phases=tuple(phases),
        segment=seg, segment_phase=tuple(phase_of), segment_bounds_s=tuple(bounds),
        notes=tuple(notes))


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
                                prompt_tokens=_distribution(ph.prompt, context_tokens),
                                output_tokens=_distribution(ph.output, context_tokens)))
    return tuple(out)


def _distribution(s: LengthSummary, cap: float | None) -> LengthDistribution:
    c = math.inf if cap is None else float(cap)
    mean, p50, p95, top = (max(1.0, min(v, c)) for v in (s.mean, s.p50, s.p95, s.max))
    if top <= mean + 1e-9 and p50 >= mean - 1e-9:
        return LengthDistribution.constant(mean)
    return LengthDistribution.fit(mean=mean, p50=p50 if p50 <= mean else None,
                                  p95=p95 if p95 >= mean else None, max_tokens=top)
