"""Queueing approximations: mean waits and how a mean wait becomes a percentile.

* G/G/1 (Kingman): W = ρ/(1−ρ) · (c_a² + c_s²)/2 · E[S]  (performance-model.md §6.2).
* G/G/c (Allen–Cunneen): W = C(c, a)/(c·μ − λ) · (c_a² + c_s²)/2, with C the Erlang-C
  probability of waiting (from the Erlang-B recursion, or its integral form for many servers).
* Percentile of the wait: waits are taken as a mass P(wait > 0) at zero plus an exponential
  tail with the conditional mean W / P(wait > 0) (exact for M/M/c, the standard heavy-traffic
  form for G/G/c). The q-quantile is then
      w_q = (W / P) · ln(P / (1 − q))  when P > 1 − q, else 0.
* ρ ≥ 1 is overload: reported as such by callers (never a negative or infinite wait); these
  functions return +inf there and callers must map it to ``overloaded``.

All functions broadcast over numpy arrays. They use numpy and the standard library only:
this module is on the path of every ``recommend``, whose cold start may not pay the ~0.2–0.7 s
of importing scipy (issue #8). tests/core/test_numerics.py checks the Erlang C and the GI/M/1
root against ``scipy.special`` and ``scipy.optimize`` to 1e-10.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from advisor.core.arrays import unique_sorted
from advisor.core.distributions import normal_quantile


def kingman_wait_s(utilization: np.ndarray, mean_service_s: np.ndarray,
                   arrival_cv: np.ndarray | float, service_cv: np.ndarray | float) -> np.ndarray:
    """Mean G/G/1 waiting time in seconds (inf when utilization ≥ 1)."""
    rho = np.asarray(utilization, dtype=float)
    variability = (np.square(arrival_cv) + np.square(service_cv)) / 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        wait = np.where(rho < 1.0, rho / (1.0 - rho) * variability * mean_service_s, np.inf)
    return np.where(rho <= 0.0, 0.0, wait)


_RECURSION_SERVERS = 64
"""Up to this many servers Erlang B comes from its finite sum, beyond from the integral."""
_COUNTS = np.arange(_RECURSION_SERVERS, dtype=float)
_QUADRATURE_NODES = 24
_WINDOW_WIDTHS = 8.0
"""Half-width of the integration window in widths of the integrand's peak."""


def erlang_c(servers: np.ndarray | int, offered_load: np.ndarray | float) -> np.ndarray:
    """Probability an arrival waits in M/M/c with offered load a = λ/μ (Erlang C).

    C = c·B / (c − a + a·B), B the Erlang-B blocking probability, from
    * its finite sum 1/B = Σ_{j=0..c} c!/((c − j)!·a^j) for c ≤ 64 (exact);
    * beyond, the integral 1/B = a·∫₀^∞ exp(−a·t + c·ln(1 + t)) dt: the integrand is
      log-concave with its peak at t* = c/a − 1 and width (1 + t*)/√c, so Gauss–Legendre on
      t* ± 8 widths (clipped at 0) with 24 nodes, scaled by the peak value so nothing
      overflows, gives it to < 1e-6 relative (checked against scipy for c ≤ 100,000; worst
      near c = 65 at light load, ~1e-9 for c ≥ 1,000) with work independent of c.
    a ≥ c (overload) gives 1, a ≤ 0 gives 0.
    """
    a = np.asarray(offered_load, dtype=float)
    c: float | np.ndarray
    if np.ndim(servers) == 0:
        c = float(servers)
        if c == 1.0:  # one server: P(wait) = ρ
            return np.clip(a, 0.0, 1.0)
        blocking = (_erlang_b_sum(c, a) if c <= _RECURSION_SERVERS
                    else _erlang_b_integral(c, a))
    else:
        c, a = np.broadcast_arrays(np.asarray(servers, dtype=float), a)
        few = c <= _RECURSION_SERVERS
        blocking = np.empty(c.shape)
        blocking[few] = _erlang_b_sum(c[few], a[few])
        blocking[~few] = _erlang_b_integral(c[~few], a[~few])
    with np.errstate(divide="ignore", invalid="ignore"):
        prob = c * blocking / (c - a + a * blocking)
    out = np.where(a <= 0.0, 0.0, np.where(a >= c, 1.0, prob))  # NaN stays NaN
    if np.ndim(c):
        out = np.where(c == 1.0, np.clip(a, 0.0, 1.0), out)  # one server, as above
    return out


def _erlang_b_sum(c: float | np.ndarray, a: np.ndarray) -> np.ndarray:
    """Erlang B from its finite sum 1/B = Σ_{j=0..c} c!/((c − j)!·a^j) (c ≤ 64).

    The terms are running products of (c − i)/a, zero past j = c; an overflow to infinity
    (a ≪ 1) means B = 0, which is what 1/inf gives. ``c`` is one count or one per load.
    """
    if np.size(a) == 0:
        return np.zeros(np.shape(a))
    c = np.round(c)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        if np.ndim(c) == 0:
            factors = (c - _COUNTS[: int(c)]) / a[..., None]
        else:
            i = _COUNTS[: int(np.max(c))]
            factors = np.where(i < c[..., None], (c[..., None] - i) / a[..., None], 0.0)
        return 1.0 / (1.0 + np.cumprod(factors, axis=-1).sum(axis=-1))


@lru_cache(maxsize=1)
def _legendre_nodes() -> tuple[np.ndarray, np.ndarray]:
    return np.polynomial.legendre.leggauss(_QUADRATURE_NODES)


def _erlang_b_integral(c: float | np.ndarray, a: np.ndarray) -> np.ndarray:
    """Erlang B from 1/B = a·∫₀^∞ exp(−a·t + c·ln(1 + t)) dt for 0 < a < c.

    ``c`` is one count or one per load; loads outside (0, c) are evaluated just inside it
    (the caller overwrites them).
    """
    if np.size(a) == 0:
        return np.zeros(np.shape(a))
    nodes, weights = _legendre_nodes()
    a = np.clip(a, 1e-300, c * (1.0 - 1e-12))
    peak = c / a - 1.0
    width = (1.0 + peak) / np.sqrt(c)
    lo = np.maximum(0.0, peak - _WINDOW_WIDTHS * width)
    half = (peak + _WINDOW_WIDTHS * width - lo) * 0.5
    log_peak = c * np.log1p(peak) - a * peak
    t = np.multiply.outer(half, nodes)
    t += (lo + half)[..., None]
    log_f = np.log1p(t)  # then, in place: c·ln(1 + t) − a·t − (its value at the peak)
    log_f *= np.asarray(c)[..., None] if np.ndim(c) else c
    t *= a[..., None]
    log_f -= t
    log_f -= log_peak[..., None]
    integral = half * (np.exp(log_f, out=log_f) @ weights)
    with np.errstate(divide="ignore", over="ignore"):
        return np.exp(-(np.log(a) + log_peak + np.log(integral)))


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


_RHO_GRID = unique_sorted(np.concatenate([np.geomspace(1e-9, 0.5, 600),
                                       1.0 - np.geomspace(0.5, 1e-9, 600)]))


_BISECTIONS = 64
"""Halvings of the bracket (0, 1): 2^-64 is below double precision."""


@lru_cache(maxsize=64)
def _sigma_table(arrival_cv: float) -> np.ndarray:
    """σ on ``_RHO_GRID`` for one arrival CV (solved once, then interpolated).

    Vectorised bisection on (0, 1 − 1e-12): the gap σ − A*(μ(1 − σ)) is negative at 0 and
    positive just below 1 for ρ < 1 (σ = 1 is the other, trivial root), and it has one root
    in between, so 64 halvings pin it to double precision.
    """
    # CV below 0.05 is as regular as arrivals get here (k = 400 ≈ the deterministic limit,
    # σ = e^(−(1 − σ)/ρ)); the clip keeps k finite.
    k = 1.0 / max(arrival_cv, 0.05) ** 2
    lo = np.zeros_like(_RHO_GRID)
    hi = np.full_like(_RHO_GRID, 1.0 - 1e-12)
    for _ in range(_BISECTIONS):
        mid = (lo + hi) / 2.0
        negative = mid - np.power(1.0 + (1.0 - mid) / (k * _RHO_GRID), -k) < 0.0
        lo = np.where(negative, mid, lo)
        hi = np.where(negative, hi, mid)
    return (lo + hi) / 2.0


def renewal_wait_probability(utilization: np.ndarray, arrival_cv: float) -> np.ndarray:
    """P(an arrival waits) in a GI/M/1 queue with gamma inter-arrival times.

    σ is the root in (0, 1) of σ = A*(μ(1 − σ)), A* the Laplace transform of the
    inter-arrival time: for gamma arrivals of CV c (shape k = 1/c²),
    σ = (1 + (1 − σ)/(k·ρ))^(−k). Poisson arrivals give σ = ρ; bursty ones (c > 1) σ > ρ.
    Solved once per CV by bisection on a grid of ρ (dense towards 0 and 1), then interpolated.
    """
    rho = np.clip(np.asarray(utilization, dtype=float), 0.0, 1.0)
    if arrival_cv == 1.0:
        return rho
    sigma = np.interp(rho, _RHO_GRID, _sigma_table(round(float(arrival_cv), 6)))
    return np.where((rho > 1e-9) & (rho < 1.0 - 1e-9), sigma, rho)


def gg_c_wait_s(servers: np.ndarray | int, arrival_rate: np.ndarray,
                mean_service_s: np.ndarray | float, arrival_cv: float,
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
