"""Queueing approximations: mean waits and how a mean wait becomes a percentile.

* G/G/1 (Kingman): W = ρ/(1−ρ) · (c_a² + c_s²)/2 · E[S]  (performance-model.md §6.2).
* G/G/c (Allen–Cunneen): W = C(c, a)/(c·μ − λ) · (c_a² + c_s²)/2, with C the Erlang-C
  probability of waiting, computed from scipy's Poisson distribution (no hand-rolled factorials).
* Percentile of the wait: waits are taken as a mass P(wait > 0) at zero plus an exponential
  tail with the conditional mean W / P(wait > 0) (exact for M/M/c, the standard heavy-traffic
  form for G/G/c). The q-quantile is then
      w_q = (W / P) · ln(P / (1 − q))  when P > 1 − q, else 0.
* ρ ≥ 1 is overload: reported as such by callers (never a negative or infinite wait); these
  functions return +inf there and callers must map it to ``overloaded``.

All functions broadcast over numpy arrays.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy import special

from advisor.core.distributions import normal_quantile


def kingman_wait_s(utilization: np.ndarray, mean_service_s: np.ndarray,
                   arrival_cv: np.ndarray | float, service_cv: np.ndarray | float) -> np.ndarray:
    """Mean G/G/1 waiting time in seconds (inf when utilization ≥ 1)."""
    rho = np.asarray(utilization, dtype=float)
    variability = (np.square(arrival_cv) + np.square(service_cv)) / 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        wait = np.where(rho < 1.0, rho / (1.0 - rho) * variability * mean_service_s, np.inf)
    return np.where(rho <= 0.0, 0.0, wait)


def erlang_c(servers: np.ndarray | int, offered_load: np.ndarray | float) -> np.ndarray:
    """Probability an arrival waits in M/M/c with offered load a = λ/μ (Erlang C).

    C = P(N ≥ c) of the Poisson(a) tail ratio form:
        C = pois.pmf(c, a) · c/(c − a) / (pois.cdf(c − 1, a) + pois.pmf(c, a) · c/(c − a)),
    with the Poisson pmf from scipy's ``gammaln`` and the cdf as scipy's regularised upper
    incomplete gamma, P(N ≤ c − 1) = Q(c, a) (the same functions ``scipy.stats.poisson``
    uses, without its per-call argument checking).
    """
    c = np.asarray(servers, dtype=float)
    a = np.asarray(offered_load, dtype=float)
    if c.size == 1 and float(c) == 1.0:  # one server: the probability of waiting is ρ
        return np.clip(a, 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        pmf = np.exp(c * np.log(a) - a - special.gammaln(c + 1.0))
        top = pmf * c / (c - a)
        prob = top / (special.gammaincc(c, a) + top)
    return np.where(a >= c, 1.0, np.where(a <= 0, 0.0, prob))


def allen_cunneen_wait_s(servers: np.ndarray | int, arrival_rate: np.ndarray,
                         mean_service_s: np.ndarray, arrival_cv: np.ndarray | float,
                         service_cv: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    """Mean G/G/c wait and the probability of waiting (Allen–Cunneen)."""
    c = np.asarray(servers, dtype=float)
    lam = np.asarray(arrival_rate, dtype=float)
    s = np.asarray(mean_service_s, dtype=float)
    a = lam * s
    p_wait = erlang_c(c, a)
    variability = (np.square(arrival_cv) + np.square(service_cv)) / 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        wait = np.where(a < c, p_wait * s / (c - a) * variability, np.inf)
    return np.where(lam <= 0, 0.0, wait), p_wait


_RHO_GRID = np.unique(np.concatenate([np.geomspace(1e-9, 0.5, 600),
                                       1.0 - np.geomspace(0.5, 1e-9, 600)]))


@lru_cache(maxsize=64)
def _sigma_table(arrival_cv: float) -> np.ndarray:
    """σ on ``_RHO_GRID`` for one arrival CV (solved once, then interpolated)."""
    from scipy.optimize.elementwise import find_root

    # CV below 0.05 is as regular as arrivals get here (k = 400 ≈ the deterministic limit,
    # σ = e^(−(1 − σ)/ρ)); the clip keeps k finite.
    k = 1.0 / max(arrival_cv, 0.05) ** 2

    def gap(sig: np.ndarray, rho_: np.ndarray) -> np.ndarray:
        return sig - np.power(1.0 + (1.0 - sig) / (k * rho_), -k)

    lo = np.zeros_like(_RHO_GRID)
    hi = np.full_like(_RHO_GRID, 1.0 - 1e-12)
    return find_root(gap, (lo, hi), args=(_RHO_GRID,)).x


def renewal_wait_probability(utilization: np.ndarray, arrival_cv: float) -> np.ndarray:
    """P(an arrival waits) in a GI/M/1 queue with gamma inter-arrival times.

    σ is the root in (0, 1) of σ = A*(μ(1 − σ)), A* the Laplace transform of the
    inter-arrival time: for gamma arrivals of CV c (shape k = 1/c²),
    σ = (1 + (1 − σ)/(k·ρ))^(−k). Poisson arrivals give σ = ρ; bursty ones (c > 1) σ > ρ.
    Solved once per CV with scipy's vectorised bracketing root finder on a grid of ρ (dense
    towards 0 and 1), then interpolated.
    """
    rho = np.clip(np.asarray(utilization, dtype=float), 0.0, 1.0)
    if arrival_cv == 1.0:
        return rho
    sigma = np.interp(rho, _RHO_GRID, _sigma_table(round(float(arrival_cv), 6)))
    return np.where((rho > 1e-9) & (rho < 1.0 - 1e-9), sigma, rho)


def gg_c_wait_s(servers: np.ndarray | int, arrival_rate: np.ndarray,
                mean_service_s: np.ndarray, arrival_cv: float,
                service_cv: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    """Mean G/G/c wait and P(wait > 0) with gamma-renewal (bursty) arrivals.

    Allen–Cunneen with an effective arrival variability taken from the GI/M/1 solution instead
    of the raw c_a²: with σ = ``renewal_wait_probability`` at the per-server utilisation ρ and
    β = [σ/(1 − σ)] / [ρ/(1 − ρ)] (the GI/M/1 wait over the M/M/1 wait),
        W = C(c, a)/(c·μ − λ) · (c_eff² + c_s²)/2,   c_eff² = 2β − 1,
        P(wait > 0) = min(1, C(c, a) · σ/ρ).
    Poisson arrivals (β = 1, σ = ρ) give Allen–Cunneen exactly (Pollaczek–Khinchine for one
    server); exponential service on one server gives the exact GI/M/1 mean. Kingman's c_a²
    term understates bursty waits (gamma CV 2.5 at ρ = 0.5: 3.6 vs the exact 5.0 service
    times), which the simulator showed (tests/simulate/test_sim_matrix.py).
    """
    c = np.asarray(servers, dtype=float)
    lam = np.asarray(arrival_rate, dtype=float)
    s = np.asarray(mean_service_s, dtype=float)
    a = lam * s
    p_wait = erlang_c(c, a)
    rho = np.clip(np.divide(a, c, out=np.zeros(np.broadcast(a, c).shape), where=c > 0), 0.0, 1.0)
    sigma = renewal_wait_probability(rho, float(arrival_cv))
    with np.errstate(divide="ignore", invalid="ignore"):
        beta = np.where((rho > 0) & (rho < 1), (sigma / (1.0 - sigma)) / (rho / (1.0 - rho)), 1.0)
        p = np.where(rho > 0, np.minimum(p_wait * sigma / np.where(rho > 0, rho, 1.0), 1.0),
                     p_wait)
        variability = (2.0 * beta - 1.0 + np.square(service_cv)) / 2.0
        wait = np.where(a < c, p_wait * s / (c - a) * variability, np.inf)
    return np.where(lam <= 0, 0.0, wait), p


def wait_quantile_s(mean_wait_s: np.ndarray, p_wait: np.ndarray, quantile: float) -> np.ndarray:
    """The ``quantile`` of the waiting time from its mean and P(wait > 0) (exponential tail)."""
    w = np.asarray(mean_wait_s, dtype=float)
    p = np.clip(np.asarray(p_wait, dtype=float), 0.0, 1.0)
    tail = 1.0 - quantile
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(p > tail, (w / p) * np.log(p / tail), 0.0)
    return np.where(np.isfinite(w), np.maximum(q, 0.0), np.inf)


def binomial_share_quantile(trials: np.ndarray | float, probability: np.ndarray,
                            quantile: float) -> np.ndarray:
    """Upper ``quantile`` of the share of successes among ``trials`` Bernoulli(probability).

    Used for TPOT percentiles: the share of a request's token gaps that land on an inflated
    step. Normal approximation to the binomial with continuity correction, clipped to [0, 1].
    """
    n = np.maximum(np.asarray(trials, dtype=float), 1.0)
    f = np.clip(np.asarray(probability, dtype=float), 0.0, 1.0)
    z = normal_quantile(quantile)
    share = f + z * np.sqrt(f * (1.0 - f) / n) + 0.5 / n * (f > 0)
    return np.clip(share, 0.0, 1.0)
