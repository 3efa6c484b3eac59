"""The simulated request trace: renewal arrivals and token lengths, phase by phase.

* Requests are split over the phases in proportion to ``share × rate`` (the number each phase
  receives in a day; largest-remainder rounding, so the counts add up exactly).
* Phases run one after another in the workload's order; each starts at the previous phase's
  last arrival, so the backlog one phase leaves is served in the next.
* Inter-arrival times are gamma with mean 1/rate and coefficient of variation = burstiness
  (shape 1/cv², scale cv²/rate; cv = 1 is Poisson, cv = 0 is a constant gap).
* Prompt and output lengths are drawn from the phase's ``LengthDistribution``: lognormal
  (μ, σ) clipped to [1, max] and rounded to whole tokens, or the constant mean when σ = 0.

Everything comes from one ``numpy.random.default_rng(seed)`` in a fixed order, so a seed
fixes the trace.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.core.distributions import LengthDistribution
from advisor.core.scenario import TrafficPhase


@dataclass(frozen=True)
class Trace:
    """Requests in arrival order (arrays of one length)."""

    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    phase: np.ndarray
    """Index into ``phase_names`` per request."""
    phase_names: tuple[str, ...]

    @property
    def requests(self) -> int:
        """Number of requests."""
        return int(self.arrival_s.size)


def phase_counts(phases: tuple[TrafficPhase, ...], requests: int) -> list[int]:
    """Requests per phase ∝ share × rate, summing to ``requests`` (largest remainder)."""
    weights = np.array([max(p.share, 0.0) * max(p.rate_rps, 0.0) for p in phases], dtype=float)
    if weights.sum() <= 0:
        weights = np.ones(len(phases))
    exact = weights / weights.sum() * requests
    counts = np.floor(exact).astype(int)
    order = np.argsort(-(exact - counts), kind="stable")
    for i in order[: requests - int(counts.sum())]:
        counts[i] += 1
    return [int(c) for c in counts]


def interarrival_s(rng: np.random.Generator, rate_rps: float, cv: float, n: int) -> np.ndarray:
    """``n`` gamma inter-arrival gaps with mean 1/rate and coefficient of variation ``cv``."""
    if n <= 0:
        return np.zeros(0)
    if cv <= 1e-9:
        return np.full(n, 1.0 / rate_rps)
    shape = 1.0 / (cv * cv)
    return rng.gamma(shape, 1.0 / (shape * rate_rps), size=n)


def draw_lengths(rng: np.random.Generator, dist: LengthDistribution, n: int) -> np.ndarray:
    """``n`` whole-token lengths from ``dist`` (at least 1, at most ``max_tokens``)."""
    if dist.sigma <= 0.0:
        values = np.full(n, dist.mean)
    else:
        values = rng.lognormal(dist.mu, dist.sigma, size=n)
    if dist.max_tokens is not None:
        values = np.minimum(values, dist.max_tokens)
    return np.maximum(np.rint(values), 1.0).astype(np.int64)


def draw_trace(phases: tuple[TrafficPhase, ...], requests: int, seed: int) -> Trace:
    """The request trace of ``phases`` with ``requests`` requests in total."""
    rng = np.random.default_rng(seed)
    counts = phase_counts(phases, requests)
    arrivals, prompts, outputs, tags = [], [], [], []
    start = 0.0
    for idx, (ph, n) in enumerate(zip(phases, counts, strict=True)):
        gaps = interarrival_s(rng, ph.rate_rps, ph.burstiness, n)
        times = start + np.cumsum(gaps)
        prompts.append(draw_lengths(rng, ph.prompt_tokens, n))
        outputs.append(draw_lengths(rng, ph.output_tokens, n))
        arrivals.append(times)
        tags.append(np.full(n, idx, dtype=np.int16))
        if n:
            start = float(times[-1])
    return Trace(arrival_s=np.concatenate(arrivals), prompt_tokens=np.concatenate(prompts),
                 output_tokens=np.concatenate(outputs), phase=np.concatenate(tags),
                 phase_names=tuple(p.name for p in phases))
