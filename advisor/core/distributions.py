"""Token-length distributions fitted from the statistics a workload gives.

A length given as one integer is a constant. Two or more statistics ({mean, p50, p95, max})
define a lognormal (docs/model.md §2):

* mean + p50: σ² = 2·ln(mean/p50), μ = ln p50;
* mean + p95: the smaller root of ln(p95/mean) = z95·σ − σ²/2, σ = z95 − √(z95² − 2·ln(p95/mean));
* p50 + p95: σ = ln(p95/p50)/z95, μ = ln p50;
* all three: μ and σ by least squares on the three log-statistics. For a given σ the best μ
  is the mean of the three residual offsets, which leaves a quartic in σ; its minimum over
  σ ≥ 0 is at σ = 0 or a real root of the cubic derivative (``numpy.roots``), so the global
  least-squares fit is exact and needs no iterative solver;
* ``max`` truncates the distribution (quantiles are clipped at max).

Only the standard library and numpy are used: this module is on the path of every
``recommend``, whose cold start may not pay for importing scipy (issue #8). The normal
quantile is :class:`statistics.NormalDist` (Wichura's AS 241, accurate to ~1e-16);
tests/core/test_numerics.py checks every function here against scipy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

import numpy as np

_STANDARD_NORMAL = NormalDist()


@lru_cache(maxsize=256)
def _normal_cdf(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def normal_quantile(q: float) -> float:
    """Standard normal q-quantile."""
    return _STANDARD_NORMAL.inv_cdf(q)


Z95 = normal_quantile(0.95)


def _three_statistic_fit(log_mean: float, log_p50: float, log_p95: float) -> tuple[float, float]:
    """(μ, σ ≥ 0) minimising the squared misfit of the three lognormal log-statistics.

    Residuals r = (μ + σ²/2 − ln mean, μ − ln p50, μ + z·σ − ln p95) = μ + d(σ) − t. The best
    μ is mean(t − d(σ)), and the remaining misfit Σ(e − ē)², e = d(σ) − t, is a quartic
    polynomial in σ; its global minimum on σ ≥ 0 is at 0 or at a real root of its derivative.
    """
    targets = np.array([log_mean, log_p50, log_p95])
    # e_i(σ) = a_i·σ² + b_i·σ − t_i as coefficient rows (σ², σ, 1)
    coeffs = np.array([[0.5, 0.0, -targets[0]], [0.0, 0.0, -targets[1]],
                       [0.0, Z95, -targets[2]]])
    centred = coeffs - coeffs.mean(axis=0)
    quartic = sum(np.polymul(row, row) for row in centred)
    candidates = [0.0] + [float(r.real) for r in np.roots(np.polyder(quartic))
                          if abs(r.imag) < 1e-9 and r.real > 0.0]
    sigma = min(candidates, key=lambda x: float(np.polyval(quartic, x)))
    mu = float(np.mean(targets - np.array([sigma**2 / 2, 0.0, Z95 * sigma])))
    return mu, sigma


@dataclass(frozen=True)
class LengthDistribution:
    """A token-length distribution: constant (sigma 0) or lognormal(mu, sigma), clipped at max."""

    mean: float
    mu: float
    sigma: float
    max_tokens: float | None = None

    @classmethod
    def constant(cls, tokens: float) -> LengthDistribution:
        """A fixed length."""
        return cls(mean=float(tokens), mu=math.log(tokens), sigma=0.0, max_tokens=float(tokens))

    @classmethod
    def fit(cls, mean: float | None = None, p50: float | None = None, p95: float | None = None,
            max_tokens: float | None = None) -> LengthDistribution:
        """Fit a lognormal to the given statistics (at least one of mean/p50/p95)."""
        if mean is not None and p50 is None and p95 is None:
            return cls(mean=float(mean), mu=math.log(mean), sigma=0.0, max_tokens=max_tokens)
        if mean is None and p95 is None and p50 is not None:
            return cls(mean=float(p50), mu=math.log(p50), sigma=0.0, max_tokens=max_tokens)
        if mean is not None and p50 is not None and p95 is not None:
            mu, sigma = _three_statistic_fit(math.log(mean), math.log(p50), math.log(p95))
        elif mean is not None and p50 is not None:
            sigma = math.sqrt(max(0.0, 2.0 * math.log(mean / p50)))
            mu = math.log(p50)
        elif p50 is not None and p95 is not None:
            sigma = max(0.0, math.log(p95 / p50) / Z95)
            mu = math.log(p50)
        elif mean is not None and p95 is not None:
            gap = math.log(p95 / mean)
            # gap = z·σ − σ²/2 has a real root only while gap ≤ z²/2; beyond that the
            # heaviest lognormal with this mean puts p95 at mean·e^(z²/2): use σ = z.
            sigma = 0.0 if gap <= 0 else Z95 - math.sqrt(max(0.0, Z95 * Z95 - 2.0 * gap))
            mu = math.log(mean) - sigma**2 / 2
        else:
            raise ValueError("a p95 alone does not fix a lognormal: give the mean or the p50 too")
        mean_value = float(mean) if mean is not None else math.exp(mu + sigma**2 / 2)
        return cls(mean=mean_value, mu=mu, sigma=sigma, max_tokens=max_tokens)

    def scaled(self, factor: float) -> LengthDistribution:
        """Every length × ``factor`` (the same shape: μ + ln factor, σ unchanged)."""
        if factor == 1.0:
            return self
        return LengthDistribution(
            mean=self.mean * factor, mu=self.mu + math.log(factor), sigma=self.sigma,
            max_tokens=None if self.max_tokens is None else self.max_tokens * factor)

    def quantile(self, q: float) -> float:
        """The q-quantile (0 < q < 1) in tokens, clipped at ``max_tokens``."""
        if self.sigma == 0.0:
            value = self.mean
        else:
            value = math.exp(self.mu + self.sigma * normal_quantile(q))
        if self.max_tokens is not None:
            value = min(value, self.max_tokens)
        return max(1.0, value)

    def mean_capped(self, cap: float) -> float:
        """E[min(S, cap)]: the mean of the lengths cut at ``cap`` (a shared prefix of ``cap``
        tokens covers that much of each prompt). Lognormal: e^(μ+σ²/2)·Φ((ln c − μ − σ²)/σ)
        + c·(1 − Φ((ln c − μ)/σ)), scaled to this distribution's mean; the ``max`` clip is
        left out."""
        if cap <= 0:
            return 0.0
        if self.sigma == 0.0:
            return min(self.mean, cap)
        s, z = self.sigma, math.log(cap) - self.mu
        below = _normal_cdf((z - s * s) / s)
        above = 1.0 - _normal_cdf(z / s)
        return self.mean * below + cap * above

    @property
    def p95(self) -> float:
        """95th percentile in tokens."""
        return self.quantile(0.95)

    @property
    def mean_square(self) -> float:
        """E[S²] (for the quadratic attention term); exp(2μ + 2σ²) for a lognormal."""
        if self.sigma == 0.0:
            return self.mean**2
        return self.mean**2 * math.exp(self.sigma**2)

    @property
    def cv(self) -> float:
        """Coefficient of variation (std / mean)."""
        return math.sqrt(max(0.0, math.exp(self.sigma**2) - 1.0))

    @property
    def upper_tokens(self) -> float:
        """The longest length to plan memory for: ``max`` if given, else the p99.9."""
        if self.max_tokens is not None:
            return self.max_tokens
        return self.quantile(0.999)
