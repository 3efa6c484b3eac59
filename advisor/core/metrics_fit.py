"""A workload's traffic fitted from an engine's Prometheus metrics (``pd-advisor fit
--metrics``): most teams have metrics, not request logs (#31).

Pure numpy on the counters and histograms of several scrapes in time order
(``advisor.loading.prom_metrics`` reads the files; every series is already summed over the
instances' label sets):

* **requests** per interval: the increase of the finished-request counter
  (``vllm:request_success_total``; SGLang ``sglang:num_requests_total``; else the count of the
  end-to-end latency histogram), a decrease read as a counter reset (Prometheus ``rate()``);
* **rate over time → phases**: binary segmentation of the per-interval counts (Poisson
  likelihood divided by the dispersion φ, with the same penalty, 20 % step and minimum phase
  length as a log's phases, ``trace_phases``); φ is estimated from the differences of
  consecutive counts, Var(Nᵢ − Nᵢ₋₁) / (2·E N), which a step in the rate hardly moves;
* **burstiness**: counts per interval cannot see the gaps between requests; with at least
  ``MIN_DISPERSION_INTERVALS`` intervals in a phase the index of dispersion of its counts
  gives c ≈ √D (Cox & Lewis 1966, §4.5, as for quantised logs: intervals are coarse ticks),
  else it is written as 1 (Poisson) and said so;
* **lengths** (prompt and output, per phase): the increases of the token histograms
  (``vllm:request_prompt_tokens``, ``vllm:request_generation_tokens``) over the phase's
  intervals: mean = Δsum/Δcount (exact), p50 and p95 by linear interpolation inside the
  bucket that holds them (Prometheus ``histogram_quantile``), max = the upper bound of the
  highest bucket with a request; without token histograms (SGLang), the means of the token
  counters over the requests; the goodness of fit is the KS distance between the histogram's
  CDF and the fitted lognormal's at the bucket bounds;
* **latency** (TTFT, inter-token latency / TPOT, end-to-end), per phase: p50/p95/p99 of the
  histograms' increases, by the same interpolation — the measured side of the table the
  command prints beside the model's prediction.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from advisor.core import trace_phases
from advisor.core.distributions import LengthDistribution

MIN_DISPERSION_INTERVALS = 8
"""Intervals a phase needs for the dispersion estimate of its burstiness."""
QUANTILES = (0.5, 0.95, 0.99)


@dataclass(frozen=True)
class HistogramSeries:
    """One histogram over the scrapes: cumulative bucket counts per scrape (``counts[t, b]``
    for upper bounds ``bounds[b]``, the last +inf), and the ``sum`` per scrape."""

    bounds: np.ndarray
    counts: np.ndarray
    sums: np.ndarray


@dataclass(frozen=True, kw_only=True)
class MetricSeries:
    """What ``fit --metrics`` reads, in scrape order."""

    times_s: np.ndarray
    requests: np.ndarray
    """The finished-request counter per scrape."""
    prompt: HistogramSeries | None
    output: HistogramSeries | None
    prompt_tokens: np.ndarray | None
    """The prompt-token counter (when no histogram)."""
    output_tokens: np.ndarray | None
    latency: dict[str, HistogramSeries]
    """``ttft``, ``itl``, ``tpot``, ``e2e`` histograms present."""
    engine: str
    """``vllm`` or ``sglang``."""


@dataclass(frozen=True, kw_only=True)
class MetricsPhase:
    """One phase of the metrics: its intervals and what they show."""

    name: str
    start_s: float
    end_s: float
    requests: float
    rate_rps: float
    burstiness: float
    burstiness_from: str
    """``dispersion`` (√ of the counts' index of dispersion) or ``assumed`` (1, Poisson)."""
    intervals: int
    prompt: LengthDistribution
    output: LengthDistribution
    prompt_stats: tuple[float, float, float, float]
    """(mean, p50, p95, max) tokens."""
    output_stats: tuple[float, float, float, float]
    prompt_ks: float | None
    output_ks: float | None
    latency_ms: dict[str, tuple[float, float, float]]
    """Measured p50/p95/p99 per latency histogram."""


@dataclass(frozen=True, kw_only=True)
class MetricsFit:
    """The phases of the metrics and the whole span."""

    phases: tuple[MetricsPhase, ...]
    span_s: float
    requests: float
    rate_rps: float
    dispersion: float
    intervals: int
    engine: str


def increases(values: np.ndarray) -> np.ndarray:
    """Increases between consecutive scrapes, a decrease read as a counter reset (the
    increase is then the value after it), along the first axis."""
    v = np.asarray(values, dtype=float)
    d = np.diff(v, axis=0)
    return np.where(d < 0, v[1:], d)


def histogram_quantile(q: float, bounds: np.ndarray, cumulative: np.ndarray) -> float | None:
    """Prometheus ``histogram_quantile``: linear interpolation inside the bucket holding the
    q-quantile (the first bucket from 0; the +inf bucket answers its lower bound)."""
    total = float(cumulative[-1])
    if total <= 0:
        return None
    rank = q * total
    b = int(np.searchsorted(cumulative, rank, side="left"))
    b = min(b, bounds.size - 1)
    upper = float(bounds[b])
    lower = float(bounds[b - 1]) if b > 0 else 0.0
    if math.isinf(upper):
        return lower
    below = float(cumulative[b - 1]) if b > 0 else 0.0
    inside = float(cumulative[b]) - below
    share = (rank - below) / inside if inside > 0 else 1.0
    return lower + (upper - lower) * min(max(share, 0.0), 1.0)


def _length(bounds: np.ndarray, cumulative: np.ndarray, total: float, count: float
            ) -> tuple[LengthDistribution, tuple[float, float, float, float], float | None]:
    mean = max(total / count, 1.0)
    p50 = histogram_quantile(0.5, bounds, cumulative) or mean
    p95 = histogram_quantile(0.95, bounds, cumulative) or mean
    top_bucket = int(np.searchsorted(cumulative, cumulative[-1], side="left"))
    top = float(bounds[min(top_bucket, bounds.size - 1)])
    if math.isinf(top):
        top = float(bounds[-2]) if bounds.size > 1 else p95
    top = max(top, p95, mean)
    dist = LengthDistribution.fit(mean=mean, p50=p50 if p50 <= mean else None,
                                  p95=p95 if p95 >= mean else None, max_tokens=top)
    finite = np.isfinite(bounds)
    ks = None
    if finite.any() and cumulative[-1] > 0:
        emp = cumulative[finite] / cumulative[-1]
        fitted = np.array([_cdf(dist, float(b)) for b in bounds[finite]])
        ks = float(np.max(np.abs(emp - fitted)))
    return dist, (mean, p50, p95, top), ks


def _cdf(dist: LengthDistribution, x: float) -> float:
    if dist.max_tokens is not None and x >= dist.max_tokens:
        return 1.0
    if dist.sigma <= 0.0:
        return 1.0 if x >= dist.mean else 0.0
    return 0.5 * (1.0 + math.erf((math.log(max(x, 1e-300)) - dist.mu)
                                 / (dist.sigma * math.sqrt(2.0))))


def _segments(counts: np.ndarray, dt: np.ndarray, min_phase_s: float
              ) -> tuple[list[int], float]:
    """Interval indices where a phase starts, and φ (module docstring)."""
    k = counts.size
    mean = float(counts.sum() / max(dt.sum(), 1e-12) * np.mean(dt))
    if k >= 3 and mean > 0:
        phi = max(float(np.var(np.diff(counts), ddof=1)) / (2.0 * mean), 0.25)
    else:
        phi = 1.0
    cum_c = np.concatenate(([0.0], np.cumsum(counts)))
    cum_t = np.concatenate(([0.0], np.cumsum(dt)))

    def ll(a: int, b: int) -> float:
        c, d = cum_c[b] - cum_c[a], cum_t[b] - cum_t[a]
        return (c * math.log(c / d) - c) / phi if c > 0 and d > 0 else 0.0

    threshold = trace_phases.PENALTY * math.log(max(float(cum_c[-1]), 2.0))
    bounds = [0, k]
    while len(bounds) - 1 < trace_phases.MAX_SEGMENTS:
        best: tuple[float, int] | None = None
        for a, b in itertools.pairwise(bounds):
            for s in range(a + 1, b):
                if cum_t[s] - cum_t[a] < min_phase_s or cum_t[b] - cum_t[s] < min_phase_s:
                    continue
                gain = ll(a, s) + ll(s, b) - ll(a, b)
                r1 = (cum_c[s] - cum_c[a]) / (cum_t[s] - cum_t[a])
                r2 = (cum_c[b] - cum_c[s]) / (cum_t[b] - cum_t[s])
                step = abs(math.log(max(r1, 1e-12) / max(r2, 1e-12)))
                if gain > threshold and step > trace_phases.MIN_RATE_STEP and (
                        best is None or gain > best[0]):
                    best = (gain, s)
        if best is None:
            break
        bounds = sorted({*bounds, best[1]})
    return bounds[:-1], phi


def fit_metrics(series: MetricSeries, min_phase_s: float = trace_phases.MIN_PHASE_S
                ) -> MetricsFit:
    """Fit rate, phases, burstiness and lengths from the scrapes (module docstring)."""
    t = np.asarray(series.times_s, dtype=float)
    if t.size < 2:
        raise ValueError("rates need at least two scrapes")
    dt = np.diff(t)
    if (dt <= 0).any():
        raise ValueError("scrapes must be in time order, at distinct times")
    counts = increases(series.requests)
    starts, phi = _segments(counts, dt, min_phase_s)
    ends = [*starts[1:], counts.size]
    phases = []
    for p, (a, b) in enumerate(zip(starts, ends, strict=True)):
        sel = slice(a, b)
        n = float(counts[sel].sum())
        span = float(dt[sel].sum())
        c = counts[sel]
        if c.size >= MIN_DISPERSION_INTERVALS and c.mean() > 0:
            cv, how = math.sqrt(max(float(c.var(ddof=1)) / float(c.mean()), 0.0)), "dispersion"
        else:
            cv, how = 1.0, "assumed"
        prompt = _phase_length(series.prompt, series.prompt_tokens, counts, a, b)
        output = _phase_length(series.output, series.output_tokens, counts, a, b)
        latency = {}
        for name, hist in series.latency.items():
            inc = increases(hist.counts)[sel].sum(axis=0)
            qs = [histogram_quantile(q, hist.bounds, inc) for q in QUANTILES]
            if all(v is not None for v in qs):
                latency[name] = (qs[0] * 1000.0, qs[1] * 1000.0, qs[2] * 1000.0)  # type: ignore[operator]
        phases.append(MetricsPhase(
            name=f"phase-{p + 1}", start_s=float(t[a] - t[0]), end_s=float(t[b] - t[0]),
            requests=n, rate_rps=n / span if span > 0 else 0.0, burstiness=cv,
            burstiness_from=how, intervals=b - a, prompt=prompt[0], output=output[0],
            prompt_stats=prompt[1], output_stats=output[1], prompt_ks=prompt[2],
            output_ks=output[2], latency_ms=latency))
    total = float(counts.sum())
    span = float(t[-1] - t[0])
    return MetricsFit(phases=tuple(phases), span_s=span, requests=total,
                      rate_rps=total / span, dispersion=phi, intervals=int(counts.size),
                      engine=series.engine)


def _phase_length(hist: HistogramSeries | None, counter: np.ndarray | None,
                  requests: np.ndarray, a: int, b: int
                  ) -> tuple[LengthDistribution, tuple[float, float, float, float],
                             float | None]:
    if hist is not None:
        inc = increases(hist.counts)[a:b].sum(axis=0)
        total = float(increases(hist.sums)[a:b].sum())
        count = float(inc[-1])
        if count > 0:
            return _length(hist.bounds, inc, total, count)
    n = float(requests[a:b].sum())
    if counter is None or n <= 0:
        raise ValueError("no token histogram or counter to measure lengths with")
    mean = max(float(increases(counter)[a:b].sum()) / n, 1.0)
    return LengthDistribution.constant(mean), (mean, mean, mean, mean), None
