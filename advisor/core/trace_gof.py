"""How well the fitted distributions describe a request log: one goodness-of-fit figure per
distribution, and the log's features the workload format cannot hold.

The figure is the Kolmogorov–Smirnov distance D = sup |F_log − F_fit|: the largest gap
between the log's empirical CDF and the fitted one (0 = identical, 1 = disjoint). With
thousands of requests a KS *p-value* rejects every parametric fit of real data, so the
distance itself is reported: below ``GOOD_FIT_KS`` the fitted CDF is within 0.1 of the log's
everywhere (tail percentiles may still differ; the table shows them), above it the fit is
called poor.

* Lengths are whole tokens: the lognormal (clipped at ``max``) is compared as its rounding, F
  at x + ½ against the log's share ≤ x and at x − ½ against its share < x, at every length
  the log holds.
* Inter-arrival gaps are compared with the gamma distribution of the written mean and CV (the
  simulator's arrivals; docs/model.md §7.1). Not with quantised timestamps (the gaps are then
  the ticks').
* Prompt and output lengths are drawn independently in the workload format: their rank
  correlation (Spearman's ρ) is reported, and noted from ``CORRELATION_NOTE``.

scipy (``special.ndtr``, ``special.gammainc``) is imported inside the functions: ``fit`` is
not on ``recommend``'s path.
"""

from __future__ import annotations

import math

import numpy as np

from advisor.core.distributions import LengthDistribution

GOOD_FIT_KS = 0.1
"""KS distance above which a fitted distribution is called a poor description of the log."""
CORRELATION_NOTE = 0.2
"""|Spearman ρ| between prompt and output lengths from which the independence is noted."""


def length_ks(values: np.ndarray, dist: LengthDistribution) -> float:
    """KS distance between whole-token lengths and the (rounded) fitted distribution."""
    from scipy import special

    x, counts = np.unique(np.asarray(values, dtype=float), return_counts=True)
    cum = np.cumsum(counts) / counts.sum()
    before = cum - counts / counts.sum()

    def cdf(v: np.ndarray) -> np.ndarray:
        if dist.sigma <= 0.0:
            out = (v >= dist.mean).astype(float)
        else:
            z = (np.log(np.maximum(v, 1e-300)) - dist.mu) / dist.sigma
            out = np.where(v > 0, special.ndtr(z), 0.0)
        if dist.max_tokens is not None:
            out = np.where(v >= dist.max_tokens, 1.0, out)
        result: np.ndarray = out
        return result

    upper = np.abs(cum - cdf(x + 0.5))
    lower = np.abs(before - cdf(x - 0.5))
    return float(max(upper.max(), lower.max()))


def gap_ks(gaps: np.ndarray, cv: float) -> float | None:
    """KS distance between inter-arrival gaps and the gamma of their mean and ``cv``
    (None with fewer than 20 gaps or a zero mean)."""
    from scipy import special

    g = np.sort(np.asarray(gaps, dtype=float))
    if g.size < 20 or g.mean() <= 0:
        return None
    n = g.size
    if cv <= 1e-6:
        cdf = (g >= g.mean()).astype(float)
    else:
        shape = 1.0 / (cv * cv)
        cdf = special.gammainc(shape, g * shape / g.mean())
    hi = np.arange(1, n + 1) / n
    lo = np.arange(0, n) / n
    return float(max(np.max(hi - cdf), np.max(cdf - lo)))


def spearman(x: np.ndarray, y: np.ndarray) -> float | None:
    """Spearman's rank correlation (average ranks for ties); None when one side is constant."""
    from scipy import stats

    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    rho = float(stats.spearmanr(x, y).statistic)
    return rho if math.isfinite(rho) else None
