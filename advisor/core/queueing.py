"""Queueing approximations: mean waits and how a mean wait becomes a percentile.

* G/G/1 (Kingman): W = ρ/(1−ρ) · (c_a² + c_s²)/2 · E[S]  (Kingman; docs/sources.md#queueing).
* G/G/c (Allen–Cunneen): W = C(c, a)/(c·μ − λ) · (c_a² + c_s²)/2, with C the Erlang-C
  probability of waiting (from the Erlang-B recursion; for many servers the Poisson pmf where
  the tail beyond c is negligible, its integral form elsewhere).
* Percentile of the wait: waits are taken as a mass P(wait > 0) at zero plus an exponential
  tail with the conditional mean W / P(wait > 0) (exact for M/M/c, the standard heavy-traffic
  form for G/G/c). The q-quantile is then
      w_q = (W / P) · ln(P / (1 − q))  when P > 1 − q, else 0.
* Percentile of a backlog plus a prompt (``backlog_quantile_tokens``): the q-quantile of
  X + S, X the tokens found waiting (0 with probability 1 − P(wait), else exponential) and S
  the arriving prompt's length, from a table per length shape and quantile.
* ρ ≥ 1 is overload: reported as such by callers (never a negative or infinite wait); these
  functions return +inf there and callers must map it to ``overloaded``.

All functions broadcast over numpy arrays. They use numpy and the standard library only:
this module is on the path of every ``recommend``, whose cold start may not pay the ~0.2–0.7 s
of importing scipy (issue #8). tests/core/test_numerics.py checks the Erlang C and the GI/M/1
root against ``scipy.special`` and ``scipy.optimize`` to 1e-10.
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

import numpy as np

from advisor.core.arrays import clip, unique_sorted
from advisor.core.distributions import LengthDistribution, normal_quantile

_RECURSION_SERVERS = 64
"""Up to this many servers Erlang B comes from its finite sum, beyond from the integral."""
_QUADRATURE_NODES = 24
_WINDOW_WIDTHS = 8.0
"""Half-width of the integration window in widths of the integrand's peak."""


def erlang_c(servers: np.ndarray | int, offered_load: np.ndarray | float) -> np.ndarray:
    """Probability an arrival waits in M/M/c with offered load a = λ/μ (Erlang C).

    C = c·B / (c − a + a·B), B the Erlang-B blocking probability, from
    * its finite sum 1/B = Σ_{j=0..c} c!/((c − j)!·a^j) for c ≤ 64 (exact);
    * beyond, the Poisson pmf(c; a) where the tail beyond c is negligible
      (:func:`_erlang_b_large`), else the integral 1/B = a·∫₀^∞ exp(−a·t + c·ln(1 + t)) dt:
      the integrand is log-concave with its peak at t* = c/a − 1 and width (1 + t*)/√c, so
      Gauss–Legendre on t* ± 8 widths (clipped at 0) with 24 nodes, scaled by the peak
      value so nothing overflows, gives it to < 1e-6 relative (checked against scipy for
      c ≤ 100,000; worst near c = 65 at light load, ~1e-9 for c ≥ 1,000) with work
      independent of c.
    a ≥ c (overload) gives 1, a ≤ 0 gives 0.
    """
    a = np.asarray(offered_load, dtype=float)
    c: float | np.ndarray
    if np.ndim(servers) == 0:
        c = float(servers)
        if c == 1.0:  # one server: P(wait) = ρ
            return clip(a, 0.0, 1.0)
        blocking = (_erlang_b_sum(c, a) if c <= _RECURSION_SERVERS
                    else _erlang_b_large(c, a))
    else:
        c, a = np.broadcast_arrays(np.asarray(servers, dtype=float), a)
        few = c <= _RECURSION_SERVERS
        blocking = np.empty(c.shape)
        blocking[few] = _erlang_b_sum(c[few], a[few])
        blocking[~few] = _erlang_b_large(c[~few], a[~few])
    with np.errstate(divide="ignore", invalid="ignore"):
        prob = c * blocking / (c - a + a * blocking)
    out = np.where(a <= 0.0, 0.0, np.where(a >= c, 1.0, prob))  # NaN stays NaN
    if np.ndim(c):
        out = np.where(c == 1.0, clip(a, 0.0, 1.0), out)  # one server, as above
    return out


def _erlang_b_sum(c: float | np.ndarray, a: np.ndarray) -> np.ndarray:
    """Erlang B from its finite sum 1/B = Σ_{j=0..c} c!/((c − j)!·a^j) (c ≤ 64).

    Summed in Horner form, the Erlang-B recursion 1/B(k) = 1 + (k/a)·1/B(k − 1) from
    1/B(0) = 1: one vectorised step per server count for every load at once, the rows sorted
    by count so that the rows still climbing (c ≥ k) are a prefix (#20: ~4× cheaper than the
    (rows, c) matrix of running products it replaces; the same sum, to ~1e-14 relative). An
    overflow to infinity (a ≪ 1) means B = 0, which is what 1/inf gives. ``c`` is one count
    or one per load.
    """
    if np.size(a) == 0:
        return np.zeros(np.shape(a))
    loads = np.asarray(a, dtype=float)
    counts = np.broadcast_to(np.round(c), loads.shape).ravel()
    order = np.argsort(-counts, kind="stable")
    top = int(counts[order[0]])
    # rows with c ≥ k, for k = 1…top: a prefix of the rows sorted by falling count
    climbing = np.searchsorted(-counts[order], -np.arange(1, top + 1), side="right")
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        per_load = 1.0 / loads.ravel()[order]
        inverse = np.ones(counts.size)
        for k in range(1, top + 1):
            rows = inverse[:climbing[k - 1]]
            rows *= k * per_load[:rows.size]
            rows += 1.0
        blocking = np.empty(counts.size)
        blocking[order] = 1.0 / inverse
    return blocking.reshape(loads.shape)


@lru_cache(maxsize=1)
def _legendre_nodes() -> tuple[np.ndarray, np.ndarray]:
    return np.polynomial.legendre.leggauss(_QUADRATURE_NODES)


_POISSON_TAIL_NEGLIGIBLE = 1e-10
"""Where the Poisson tail beyond c is below this, Erlang B is the Poisson pmf itself."""


def _log_factorial(c: np.ndarray | float) -> np.ndarray:
    """ln c! for c ≥ 64 by Stirling's series to the z⁻⁵ term (error < 1/(1680·z⁷) < 1e-16)."""
    z = np.asarray(c, dtype=float) + 1.0
    inv = 1.0 / z
    inv2 = inv * inv
    series = inv * (1.0 / 12.0 - inv2 * (1.0 / 360.0 - inv2 / 1260.0))
    out: np.ndarray = (z - 0.5) * np.log(z) - z + 0.5 * math.log(2.0 * math.pi) + series
    return out


def _erlang_b_large(c: float | np.ndarray, a: np.ndarray) -> np.ndarray:
    """Erlang B for c > 64 servers: B = Poisson pmf(c; a) / Poisson cdf(c; a). Where the tail
    P(X > c) — at most pmf·a/(c + 1 − a), the geometric bound of the pmf's ratio a/(j + 1) —
    is below 1e-10, the cdf is 1 to that precision and B is the pmf, from Stirling's series
    (a few operations a load: a large pool at moderate load, most of what a boundary search
    over large clusters asks); elsewhere from the integral (:func:`_erlang_b_integral`)."""
    if np.size(a) == 0:
        return np.zeros(np.shape(a))
    loads = np.asarray(a, dtype=float)
    counts = np.broadcast_to(np.asarray(c, dtype=float), loads.shape)
    inside = clip(loads, 1e-300, counts * (1.0 - 1e-12))
    with np.errstate(divide="ignore", over="ignore", under="ignore"):
        pmf = np.exp(counts * np.log(inside) - inside - _log_factorial(counts))
        tail = pmf * inside / (counts + 1.0 - inside)
    pmf = np.array(pmf, dtype=float, ndmin=1)
    near = ~(np.atleast_1d(tail) < _POISSON_TAIL_NEGLIGIBLE)
    if np.any(near):
        pmf[near] = _erlang_b_integral(np.atleast_1d(counts)[near],
                                       np.atleast_1d(inside)[near])
    return pmf.reshape(loads.shape)


def _erlang_b_integral(c: float | np.ndarray, a: np.ndarray) -> np.ndarray:
    """Erlang B from 1/B = a·∫₀^∞ exp(−a·t + c·ln(1 + t)) dt for 0 < a < c.

    ``c`` is one count or one per load; loads outside (0, c) are evaluated just inside it
    (the caller overwrites them).
    """
    if np.size(a) == 0:
        return np.zeros(np.shape(a))
    nodes, weights = _legendre_nodes()
    a = clip(a, 1e-300, c * (1.0 - 1e-12))
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
        result: np.ndarray = np.exp(-(np.log(a) + log_peak + np.log(integral)))
        return result


_RHO_GRID = unique_sorted(np.concatenate([np.geomspace(1e-9, 0.5, 600),
                                       1.0 - np.geomspace(0.5, 1e-9, 600)]))


_BISECTIONS = 64
"""Halvings of the bracket (0, 1): 2^-64 is below double precision."""


def _solve_sigma(ks: np.ndarray) -> np.ndarray:
    """σ on ``_RHO_GRID`` for gamma arrivals of shapes ``ks`` (one row each), all at once.

    Vectorised bisection on (0, 1 − 1e-12): the gap σ − A*(μ(1 − σ)) is negative at 0 and
    positive just below 1 for ρ < 1 (σ = 1 is the other, trivial root), and it has one root
    in between, so 64 halvings pin it to double precision. Each element takes the same
    operations whatever the number of rows, so a row is the same solved alone or with others.
    """
    k = np.asarray(ks, dtype=float)[:, None]
    rho = _RHO_GRID[None, :]
    lo = np.zeros((k.shape[0], _RHO_GRID.size))
    hi = np.full_like(lo, 1.0 - 1e-12)
    for _ in range(_BISECTIONS):
        mid = (lo + hi) / 2.0
        negative = mid - np.power(1.0 + (1.0 - mid) / (k * rho), -k) < 0.0
        lo = np.where(negative, mid, lo)
        hi = np.where(negative, hi, mid)
    return (lo + hi) / 2.0


_SIGMA: dict[float, np.ndarray] = {}
"""σ tables by (rounded) arrival CV, solved on first use."""
_SIGMA_TABLES_KEPT = 4096
"""At most this many (9.4 kB each, 38 MB in all): a round-robin pool's CV is c/√n, so every
pool size a boundary search visits brings its own; a 24-phase day at 1,024 GPUs needs ~300,
and the 256 kept before made it clear and re-solve them (577 solves, ~2 s)."""


def _shape(arrival_cv: float) -> float:
    # CV below 0.05 is as regular as arrivals get here (k = 400 ≈ the deterministic limit,
    # σ = e^(−(1 − σ)/ρ)); the clip keeps k finite.
    return 1.0 / max(arrival_cv, 0.05) ** 2


def _sigma_table(arrival_cv: float) -> np.ndarray:
    """σ on ``_RHO_GRID`` for one arrival CV (solved once, then interpolated)."""
    return _sigma_tables_for((arrival_cv,))[0]


def _sigma_tables_for(cvs: tuple[float, ...]) -> list[np.ndarray]:
    """σ tables of ``cvs``, the missing ones solved together in one vectorised bisection
    (first-run cost: one pass however many CVs a workload's phases and pools produce)."""
    missing = sorted({cv for cv in cvs if cv not in _SIGMA})
    if missing:
        if len(_SIGMA) + len(missing) > _SIGMA_TABLES_KEPT:
            _SIGMA.clear()  # then every CV asked for is solved again, not only the new ones
            missing = sorted(set(cvs))
        for cv, table in zip(missing, _solve_sigma(np.array([_shape(cv) for cv in missing])),
                             strict=True):
            _SIGMA[cv] = table
    return [_SIGMA[cv] for cv in cvs]


def renewal_wait_probability(utilization: np.ndarray,
                             arrival_cv: np.ndarray | float) -> np.ndarray:
    """P(an arrival waits) in a GI/M/1 queue with gamma inter-arrival times.

    σ is the root in (0, 1) of σ = A*(μ(1 − σ)), A* the Laplace transform of the
    inter-arrival time: for gamma arrivals of CV c (shape k = 1/c²),
    σ = (1 + (1 − σ)/(k·ρ))^(−k). Poisson arrivals give σ = ρ; bursty ones (c > 1) σ > ρ,
    regular ones (c < 1) σ < ρ. Solved once per CV by bisection on a grid of ρ (dense towards
    0 and 1), then interpolated. ``arrival_cv`` may be an array (broadcast with the
    utilisation): each distinct CV is solved once.
    """
    rho = clip(np.asarray(utilization, dtype=float), 0.0, 1.0)
    cv = np.asarray(arrival_cv, dtype=float)
    if cv.ndim == 0:
        return _renewal_one(rho, float(cv))
    values = unique_sorted(cv)
    if values.size == 1:
        return np.broadcast_to(_renewal_one(rho, float(values[0])),
                               np.broadcast(rho, cv).shape).copy()
    # one interpolation over the tables laid end to end (row r shifted by 2r along ρ)
    grid, tables = _sigma_tables(tuple(float(v) for v in values))
    row = np.searchsorted(values, cv)
    sigma = np.interp(rho + 2.0 * row, grid, tables)
    return np.where((rho > 1e-9) & (rho < 1.0 - 1e-9), sigma, rho)


@lru_cache(maxsize=256)
def _sigma_tables(values: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
    """σ tables of several CVs laid end to end, row r on ρ + 2r (σ = ρ for CV 1)."""
    solved = iter(_sigma_tables_for(tuple(round(v, 6) for v in values if v != 1.0)))
    tables = [_RHO_GRID if v == 1.0 else next(solved) for v in values]
    grid = (_RHO_GRID[None, :] + 2.0 * np.arange(len(values))[:, None]).ravel()
    return grid, np.concatenate(tables)


def _renewal_one(rho: np.ndarray, arrival_cv: float) -> np.ndarray:
    if arrival_cv == 1.0:
        return rho
    sigma = np.interp(rho, _RHO_GRID, _sigma_table(round(float(arrival_cv), 6)))
    return np.where((rho > 1e-9) & (rho < 1.0 - 1e-9), sigma, rho)


def gg_c_wait_s(servers: np.ndarray | int, arrival_rate: np.ndarray,
                mean_service_s: np.ndarray | float, arrival_cv: np.ndarray | float,
                service_cv: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    """Mean G/G/c wait and P(wait > 0) with gamma-renewal (bursty) arrivals.

    Allen–Cunneen with an effective arrival variability taken from the GI/M/1 solution instead
    of the raw c_a²: with σ = ``renewal_wait_probability`` at the per-server utilisation ρ and
    β = [σ/(1 − σ)] / [ρ/(1 − ρ)] (the GI/M/1 wait over the M/M/1 wait),
        W = C(c, a)/(c·μ − λ) · (c_eff² + c_s²)/2,   c_eff² = max(2β − 1, 0),
        P(wait > 0) = min(1, C(c, a) · σ/ρ).
    Poisson arrivals (β = 1, σ = ρ) give Allen–Cunneen exactly (Pollaczek–Khinchine for one
    server); exponential service on one server gives the exact GI/M/1 mean. Kingman's c_a²
    term understates bursty waits (gamma CV 2.5 at ρ = 0.5: 3.6 vs the exact 5.0 service
    times), which the simulator showed (tests/simulate/test_sim_matrix.py). Regular arrivals
    (c_a < 1, e.g. a stream dealt out round robin) can give β < 1/2 at light load; σ is
    then floored at ρ/(2 − ρ), where β = 1/2 and c_eff² = 0 (the formula's deterministic-arrival
    limit), for the mean and P(wait) alike, so the wait given waiting never grows as arrivals
    get more regular (a larger round-robin deal). ``arrival_cv`` may
    be an array (one CV per point).
    """
    lam = np.asarray(arrival_rate, dtype=float)
    s = np.asarray(mean_service_s, dtype=float)
    a = lam * s
    c: float | np.ndarray
    if np.ndim(servers) == 0 and float(servers) == 1.0:  # one server: P(wait) = ρ = a
        c = 1.0
        p_wait = rho = clip(a, 0.0, 1.0)
    else:
        c = np.asarray(servers, dtype=float)
        p_wait = erlang_c(c, a)
        rho = clip(np.divide(a, c, out=np.zeros(np.broadcast(a, c).shape), where=c > 0),
                   0.0, 1.0)
    # regular arrivals: σ floored where β = ½ (c_eff² = 0), for the mean and P alike (docstring)
    sigma = np.maximum(renewal_wait_probability(rho, arrival_cv), rho / (2.0 - rho))
    with np.errstate(divide="ignore", invalid="ignore"):
        beta = np.where((rho > 0) & (rho < 1), (sigma / (1.0 - sigma)) / (rho / (1.0 - rho)), 1.0)
        p = np.where(rho > 0, np.minimum(p_wait * sigma / np.where(rho > 0, rho, 1.0), 1.0),
                     p_wait)
        variability = (np.maximum(2.0 * beta - 1.0, 0.0) + np.square(service_cv)) / 2.0
        wait = np.where(a < c, p_wait * s / (c - a) * variability, np.inf)
    return np.where(lam <= 0, 0.0, wait), p


def wait_quantile_s(mean_wait_s: np.ndarray, p_wait: np.ndarray, quantile: float) -> np.ndarray:
    """The ``quantile`` of the waiting time from its mean and P(wait > 0) (exponential tail)."""
    w = np.asarray(mean_wait_s, dtype=float)
    p = clip(np.asarray(p_wait, dtype=float), 0.0, 1.0)
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
    f = clip(np.asarray(probability, dtype=float), 0.0, 1.0)
    z = normal_quantile(quantile)
    share = f + z * np.sqrt(f * (1.0 - f) / n) + 0.5 / n * (f > 0)
    return clip(share, 0.0, 1.0)


_STANDARD_NORMAL = NormalDist()
_KNOT_STEP = 0.1
"""Spacing of the length distribution's CDF knots, in standard-normal z (lognormal: 10 % of σ)."""
_KNOTS_BELOW, _KNOTS_ABOVE = 60, 45
"""Knots below and above the quantile's own (z from z_q − 6 to z_q + 4.5)."""
_BACKLOG_NODES = np.geomspace(1e-4, 1e6, 61)
"""Conditional mean backlog, in prompt means, of the table's columns."""
_BACKLOG_LOG = np.log(_BACKLOG_NODES)
_BACKLOG_PER_LOG = (_BACKLOG_NODES.size - 1) / (_BACKLOG_LOG[-1] - _BACKLOG_LOG[0])
_FINE_SPAN, _FINE_STEP = 1.2, 0.04
"""P(wait) rows: every 0.04 in ln P within e^±1.2 of 1 − q (where the quantile turns from
the prompt's to the backlog's), coarser outside."""
_TABLE_BISECTIONS = 32


def _wait_rows(quantile: float) -> np.ndarray:
    """The table's P(wait) rows for one quantile, ascending, up to 1."""
    tail = 1.0 - quantile
    top = math.log(1.0 / tail)
    fine_top = min(_FINE_SPAN, top)
    fine = tail * np.exp(np.linspace(-_FINE_SPAN, fine_top,
                                     round((fine_top + _FINE_SPAN) / _FINE_STEP) + 1))
    below = tail * math.exp(-_FINE_SPAN) * np.geomspace(1e-4, 1.0, 13)[:-1]
    above = (np.geomspace(fine[-1], 1.0, max(2, math.ceil((top - fine_top) / 0.25) + 1))[1:]
             if top > fine_top else np.zeros(0))
    return np.concatenate([below, fine, above])


def _length_knots(sigma: float, mu_rel: float, max_rel: float | None,
                  quantile: float) -> tuple[np.ndarray, np.ndarray, int]:
    """CDF knots of S/mean (ascending), the probability between consecutive knots (S taken
    uniform in between) and the index of the knot at the quantile itself."""
    zq = normal_quantile(quantile)
    z = zq + _KNOT_STEP * (np.arange(_KNOTS_BELOW + _KNOTS_ABOVE + 1) - _KNOTS_BELOW)
    cdf = np.array([_STANDARD_NORMAL.cdf(float(v)) for v in z])
    cdf[0], cdf[-1] = 0.0, 1.0  # the far tails go to the end segments
    knots = np.exp(mu_rel + sigma * z)
    if max_rel is not None:
        knots = np.minimum(knots, max_rel)
    return knots, np.diff(cdf), _KNOTS_BELOW


def _backlog_plus_length(knots: np.ndarray, weights: np.ndarray, p_wait: np.ndarray,
                         backlog: np.ndarray, quantile: float) -> np.ndarray:
    """Exact q-quantile of X + S (S piecewise uniform on the knots) on the grid of P(wait)
    rows × conditional mean backlog columns (both 1-D): shape (rows, columns).

    P(X + S > y) = P(S > y) + P(wait)·E[e^(−(y − S)/m); S ≤ y] is decreasing in y: it is
    evaluated at every knot (the expectation by a recursion over the segments, per backlog),
    the segment where it crosses 1 − q found, and y bisected inside it.
    """
    tail = 1.0 - quantile
    n = weights.size
    width = np.diff(knots)
    above = np.concatenate([np.cumsum(weights[::-1])[::-1], [0.0]])  # P(S > knot j)
    m = backlog
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        # x = segment width / m, capped where e^(−x) is below any weight (no subnormals)
        x = np.minimum(width[:, None] / m[None, :], 700.0)          # (segments, columns)
        decay = np.exp(-x)
        small = x < 1e-6
        share = weights[:, None] * np.where(small, 1.0 - x / 2.0,
                                            (1.0 - decay) / np.where(small, 1.0, x))
        conv = np.zeros((n + 1, m.size))  # E[e^(−(knot_j − S)/m); S ≤ knot_j]
        for j in range(n):
            conv[j + 1] = decay[j] * conv[j] + share[j]
        p = p_wait[:, None]                                          # (rows, 1)
        seg = np.empty((p_wait.size, m.size), dtype=np.int64)
        for r in range(p_wait.size):
            seg[r] = np.sum(above[:, None] + p_wait[r] * conv > tail, axis=0) - 1
        seg = np.clip(seg, 0, n - 1)
        cols = np.arange(m.size)[None, :]
        k0, wd, wt = knots[seg], width[seg], weights[seg]
        c0, a1, mm = conv[seg, cols], above[seg + 1], m[None, :]
        lo, hi = np.zeros(seg.shape), wd.copy()
        flat = wd <= 0
        slope = np.where(flat, 0.0, wt / np.where(flat, 1.0, wd))
        base = a1 + np.where(flat, 0.0, wt)
        for _ in range(_TABLE_BISECTIONS):
            mid = (lo + hi) / 2.0
            e = np.exp(-mid / mm)
            big = base - slope * mid + p * (e * c0 + slope * mm * (1.0 - e)) > tail
            lo, hi = np.where(big, mid, lo), np.where(big, hi, mid)
        y = k0 + (lo + hi) / 2.0
        # past the last knot only the backlog's exponential tail is left
        past = above[n] + p * conv[n][None, :] > tail
        beyond = knots[-1] + mm * np.log(np.maximum(p * conv[n][None, :], 1e-300) / tail)
        return np.where(past, beyond, y)


@lru_cache(maxsize=256)
def _backlog_table(sigma: float, mu_rel: float, max_rel: float | None,
                   quantile: float) -> tuple[np.ndarray, np.ndarray, float]:
    """ln(y/mean) on (P(wait) rows × backlog columns), the rows' ln P, and S_q/mean."""
    knots, weights, iq = _length_knots(sigma, mu_rel, max_rel, quantile)
    rows = _wait_rows(quantile)
    y = _backlog_plus_length(knots, weights, rows, _BACKLOG_NODES, quantile)
    return np.log(y), np.log(rows), float(knots[iq])


def backlog_quantile_tokens(p_wait: np.ndarray, backlog_tokens: np.ndarray,
                            lengths: LengthDistribution, quantile: float) -> np.ndarray:
    """The ``quantile`` of X + S in tokens: S a prompt length from ``lengths``, X the backlog
    it finds — none with probability 1 − ``p_wait``, else exponential with mean
    ``backlog_tokens`` (the conditional mean).

    This is the percentile of the *sum*, not the sum of the percentiles (which overstates it:
    a long backlog and a long prompt rarely coincide). Exact for S piecewise uniform between
    CDF knots 0.1σ apart (the lognormal's, ``max`` included), solved once per length shape
    (σ, μ − ln mean, max/mean: a rescaled length shares the table) and quantile on a grid of
    P(wait) and backlog/mean, then interpolated bilinearly in (ln P(wait), ln backlog) on
    ln y — monotone in both, within ~3 % of the exact value where the backlog is below
    ~30/(1 − P(wait)) prompt means (every stable queue here). Below the table's lowest
    P(wait) the value goes linearly to S_q at P(wait) = 0; past its largest backlog it
    grows in proportion. An infinite backlog (overload) gives inf.
    """
    mean = lengths.mean
    if lengths.sigma == 0.0:
        mean = mean if lengths.max_tokens is None else min(mean, lengths.max_tokens)
        key: tuple[float, float, float | None, float] = (1e-9, 0.0, None, float(quantile))
        # (a constant length: a vanishingly narrow lognormal)
    else:
        key = (float(lengths.sigma), round(lengths.mu - math.log(mean), 12),
               None if lengths.max_tokens is None else float(lengths.max_tokens / mean),
               float(quantile))
    table, log_rows, s_q = _backlog_table(*key)
    cols = _BACKLOG_NODES.size
    p = clip(np.asarray(p_wait, dtype=float), 0.0, 1.0)
    rel = np.asarray(backlog_tokens, dtype=float) / mean
    p_low = math.exp(float(log_rows[0]))
    fp = np.interp(np.log(np.maximum(p, p_low)), log_rows, _row_index(log_rows.size))
    # the columns are uniform in ln m; fmin/fmax put an infinite backlog on the last one
    fm = (np.log(np.fmax(np.fmin(rel, _BACKLOG_NODES[-1]), _BACKLOG_NODES[0]))
          - _BACKLOG_LOG[0]) * _BACKLOG_PER_LOG
    i = np.minimum(fp.astype(np.int64), log_rows.size - 2)
    k = np.minimum(fm.astype(np.int64), cols - 2)
    a, b = fp - i, fm - k
    flat = table.ravel()
    at = i * cols + k
    lower = flat[at] + b * (flat[at + 1] - flat[at])
    upper = flat[at + cols] + b * (flat[at + cols + 1] - flat[at + cols])
    y: np.ndarray = np.exp(lower + a * (upper - lower))
    past = rel > _BACKLOG_NODES[-1]
    if np.any(past):  # beyond the table the backlog's tail dominates: y ∝ backlog
        y = np.where(past & (p > 1.0 - quantile), y * rel / _BACKLOG_NODES[-1], y)
    low = p < p_low
    if np.any(low):
        y = np.where(low, s_q + (y - s_q) * p / p_low, y)
    y = y * mean
    if np.any(past):
        y = np.where(np.isinf(rel), np.inf, y)
    return y


@lru_cache(maxsize=8)
def _row_index(rows: int) -> np.ndarray:
    return np.arange(rows, dtype=float)
