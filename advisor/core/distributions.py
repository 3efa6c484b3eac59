"""Token-length distributions fitted from the statistics a workload gives.

A length given as one integer is a constant. Two or more statistics ({mean, p50, p95, max})
define a lognormal (docs/model.md §2):

* mean + p50: σ² = 2·ln(mean/p50), μ = ln p50;
* mean + p95: solve ln(p95/mean) = z95·σ − σ²/2 for the smaller root σ (scipy ``brentq``);
* p50 + p95: σ = ln(p95/p50)/z95, μ = ln p50;
* all three: μ and σ by least squares on the three log-statistics (scipy ``least_squares``);
* ``max`` truncates the distribution (quantiles are clipped at max).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from scipy import optimize, stats

Z95 = float(stats.norm.ppf(0.95))


@lru_cache(maxsize=256)
def normal_quantile(q: float) -> float:
    """Standard normal q-quantile (cached: scipy's ppf costs ~0.2 ms a call)."""
    return float(stats.norm.ppf(q))


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
            targets = (math.log(mean), math.log(p50), math.log(p95))

            def residual(x: list[float]) -> list[float]:
                mu, sigma = x[0], abs(x[1])
                return [mu + sigma**2 / 2 - targets[0], mu - targets[1], mu + Z95 * sigma - targets[2]]

            sol = optimize.least_squares(residual, x0=[targets[1], 0.5])
            mu, sigma = float(sol.x[0]), abs(float(sol.x[1]))
        elif mean is not None and p50 is not None:
            sigma = math.sqrt(max(0.0, 2.0 * math.log(mean / p50)))
            mu = math.log(p50)
        elif p50 is not None and p95 is not None:
            sigma = max(0.0, math.log(p95 / p50) / Z95)
            mu = math.log(p50)
        else:
            assert mean is not None and p95 is not None
            gap = math.log(p95 / mean)
            if gap <= 0:
                sigma = 0.0
            else:
                # gap = z·σ − σ²/2 has a real root only while gap ≤ z²/2; beyond that the
                # heaviest lognormal with this mean puts p95 at mean·e^(z²/2): use σ = z.
                top = Z95
                if gap >= Z95 * top - top**2 / 2:
                    sigma = top
                else:
                    sigma = float(optimize.brentq(lambda s: Z95 * s - s * s / 2 - gap, 0.0, top))
            mu = math.log(mean) - sigma**2 / 2
        mean_value = float(mean) if mean is not None else math.exp(mu + sigma**2 / 2)
        return cls(mean=mean_value, mu=mu, sigma=sigma, max_tokens=max_tokens)

    def quantile(self, q: float) -> float:
        """The q-quantile (0 < q < 1) in tokens, clipped at ``max_tokens``."""
        if self.sigma == 0.0:
            value = self.mean
        else:
            value = math.exp(self.mu + self.sigma * normal_quantile(q))
        if self.max_tokens is not None:
            value = min(value, self.max_tokens)
        return max(1.0, value)

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
