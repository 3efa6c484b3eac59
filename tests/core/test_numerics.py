"""The scipy-free numerics on the ``recommend`` path, checked against scipy (issue #8).

``advisor.core.queueing``, ``advisor.core.distributions`` and ``advisor.core.roots`` (the
closed-loop solve's root-finder, #20) use numpy and the standard library only, so that
``recommend`` does not pay for importing scipy. Each function here is pinned to the scipy
routine it replaces, over the whole range the model uses.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from scipy import optimize, special, stats

from advisor.core import queueing, roots
from advisor.core.distributions import Z95, LengthDistribution, normal_quantile

SERVERS = (1, 2, 3, 5, 8, 17, 40, 64, 65, 66, 100, 128, 300, 1000, 3213, 20000, 100000)


def _erlang_c_scipy(c: float, a: np.ndarray) -> np.ndarray:
    """Erlang C from scipy's Poisson pmf and regularised upper incomplete gamma."""
    pmf = np.exp(c * np.log(a) - a - special.gammaln(c + 1.0))
    top = pmf * c / (c - a)
    return top / (special.gammaincc(c, a) + top)


@pytest.mark.parametrize("servers", SERVERS)
def test_erlang_c_matches_scipy(servers: int) -> None:
    """Relative error ≤ 1e-6 (sum for c ≤ 64: ≤ 1e-12) from ρ = 1e-12 to 1 − 1e-9."""
    rho = np.concatenate([np.geomspace(1e-12, 0.5, 300), 1.0 - np.geomspace(0.5, 1e-9, 300)])
    a = servers * rho
    want = _erlang_c_scipy(float(servers), a)
    got = queueing.erlang_c(servers, a)
    tolerance = 1e-12 if servers <= 64 else 1e-6
    meaningful = want > 1e-250  # below that both are "never waits"
    np.testing.assert_allclose(got[meaningful], want[meaningful], rtol=tolerance, atol=0.0)
    assert np.all(got[~meaningful] < 1e-200)


def test_erlang_c_edges_and_broadcasting() -> None:
    """Overload gives 1, no load 0, NaN stays NaN; a pool of one waits with probability ρ;
    an array of pool sizes gives exactly what each size gives alone."""
    for c in (1, 7, 500):
        got = queueing.erlang_c(c, np.array([0.0, -1.0, c, 2.0 * c, np.inf, np.nan]))
        np.testing.assert_array_equal(got[:5], [0.0, 0.0, 1.0, 1.0, 1.0])
        assert math.isnan(got[5])
    np.testing.assert_array_equal(queueing.erlang_c(1, np.array([0.25, 0.5])), [0.25, 0.5])
    sizes = np.array([[1], [2], [64], [65], [800]])
    loads = np.array([[0.5, 1.5, 40.0, 600.0]])
    together = queueing.erlang_c(sizes, loads)
    for row, c in enumerate(sizes[:, 0]):
        np.testing.assert_array_equal(together[row], queueing.erlang_c(int(c), loads[0]))


@pytest.mark.parametrize("cv", [0.05, 0.3, 0.7, 1.5, 2.5, 4.0])
def test_gi_m_1_root_matches_scipy(cv: float) -> None:
    """The GI/M/1 σ (gamma arrivals) equals scipy's bracketing root to 1e-10 on the table's
    ρ grid up to ρ = 0.999 (where scipy's ``find_root`` on (0, 1 − 1e-12), which the model
    used before, slid to the trivial root σ = 1 or returned NaN); between grid points the
    interpolation stays within 1e-4; nearer 1 it follows the heavy-traffic limit."""
    k = 1.0 / cv**2

    def root(r: float) -> float:
        # σ = 1 is a root too; ending the bracket at 1 − 1e-3·(1 − ρ) keeps it out (the
        # interior root has 1 − σ ≈ 2(1 − ρ)/(1 + c²), far larger)
        return optimize.brentq(lambda s: s - (1.0 + (1.0 - s) / (k * r)) ** (-k),
                               0.0, 1.0 - 1e-3 * (1.0 - r), xtol=1e-16, rtol=1e-15)

    grid = queueing._RHO_GRID
    table = queueing._sigma_table(cv)
    interior = np.flatnonzero(grid <= 0.999)
    for index in interior[np.linspace(0, interior.size - 1, 40).astype(int)]:
        assert table[index] == pytest.approx(root(float(grid[index])), abs=1e-10)
    # nearer 1 a bracket ending at 1 − 1e-12 holds the trivial root too: check the heavy-
    # traffic limit 1 − σ → 2(1 − ρ)/(1 + c²) instead (Kingman), within 1 %
    for r in (1.0 - 1e-4, 1.0 - 1e-5):
        sigma = float(queueing.renewal_wait_probability(np.array([r]), cv)[0])
        assert (1.0 - sigma) == pytest.approx(2.0 * (1.0 - r) / (1.0 + cv**2), rel=1e-2)
    rho = np.array([1e-6, 0.01, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99, 0.999])
    got = queueing.renewal_wait_probability(rho, cv)
    for r, sigma in zip(rho, got, strict=True):
        assert sigma == pytest.approx(root(float(r)), abs=1e-4)
    assert np.all(np.diff(got) >= 0)


def test_normal_quantile_matches_scipy() -> None:
    for q in (1e-9, 0.01, 0.5, 0.9, 0.95, 0.99, 0.999, 1 - 1e-9):
        assert normal_quantile(q) == pytest.approx(float(stats.norm.ppf(q)), rel=1e-12, abs=1e-14)
    # Z95 is the value under test, not a constant on the wrong side (SIM300 reads any
    # upper-case name as a constant).
    assert Z95 == pytest.approx(1.6448536269514722, rel=1e-15)  # noqa: SIM300


def test_mean_and_p95_fit_is_the_smaller_root() -> None:
    """σ = z − √(z² − 2·ln(p95/mean)) reproduces mean and p95 exactly."""
    for mean, p95 in ((1000.0, 2500.0), (300.0, 800.0), (8000.0, 12000.0), (10.0, 10.5)):
        d = LengthDistribution.fit(mean=mean, p95=p95)
        assert math.exp(d.mu + d.sigma**2 / 2) == pytest.approx(mean, rel=1e-12)
        assert d.quantile(0.95) == pytest.approx(p95, rel=1e-12)
        gap = math.log(p95 / mean)
        root = optimize.brentq(lambda s, g=gap: Z95 * s - s * s / 2 - g, 0.0, Z95)
        assert d.sigma == pytest.approx(root, rel=1e-10)


@pytest.mark.parametrize(("mean", "p50", "p95"), [
    (1000.0, 800.0, 2500.0), (8000.0, 7800.0, 12000.0), (3000.0, 1000.0, 9000.0),
    (500.0, 600.0, 900.0), (100.0, 20.0, 110.0)])
def test_three_statistic_fit_is_the_least_squares_optimum(mean: float, p50: float,
                                                          p95: float) -> None:
    """The closed-form fit is the global least-squares optimum: no worse than scipy's
    ``least_squares`` (what the model used before) from several starts."""
    d = LengthDistribution.fit(mean=mean, p50=p50, p95=p95)
    targets = np.log([mean, p50, p95])

    def residual(x: np.ndarray) -> np.ndarray:
        mu, sigma = x[0], abs(x[1])
        return np.array([mu + sigma**2 / 2, mu, mu + Z95 * sigma]) - targets

    ours = float(np.sum(residual(np.array([d.mu, d.sigma])) ** 2))
    for start in (0.1, 0.5, 1.0, 2.0):
        sol = optimize.least_squares(residual, x0=[targets[1], start], xtol=1e-15,
                                     ftol=1e-15, gtol=1e-15)
        assert ours <= float(np.sum(sol.fun**2)) + 1e-12
    assert d.sigma >= 0.0


def test_sigma_tables_solved_together_are_the_ones_solved_alone() -> None:
    """The first-run batch (one bisection for every CV a workload needs) changes no bit."""
    cvs = (0.05, 0.3, 0.7, 1.3, 2.0, 3.5)
    shapes = np.array([queueing._shape(cv) for cv in cvs])
    together = queueing._solve_sigma(shapes)
    for row, k in zip(together, shapes, strict=True):
        assert np.array_equal(row, queueing._solve_sigma(np.array([k]))[0])
    assert all(np.array_equal(a, b) for a, b in zip(
        queueing._sigma_tables_for(cvs), together, strict=True))


# ---- Brent's root-finder (closed-loop solve, #20) -------------------------------------------


def _families(rng: np.random.Generator) -> list[tuple[str, Callable[[float], float], float,
                                                      float]]:
    """(name, f, a, b): monotone powers, steep tanh, steps, saturating (an overloaded plan's
    capped E2E, as the closed-loop excess), exponentials, cubics, a queue's 1/(1 − ρ)."""
    out: list[tuple[str, Callable[[float], float], float, float]] = []
    for _ in range(60):
        c, s, p = rng.uniform(-5, 5), 10 ** rng.uniform(-6, 6), rng.uniform(0.2, 5)
        a, b = sorted(rng.uniform(-10, 10, 2))
        out += [
            ("power", lambda x, c=c, p=p: math.copysign(abs(x - c) ** p, x - c), a, b),
            ("tanh", lambda x, c=c, s=s: math.tanh((x - c) * s), a, b),
            ("steps", lambda x, c=c, s=s: math.floor((x - c) * s) + 0.5, a, b),
            ("saturating", lambda x, c=c, s=s: (x - c) * s if x < c + 1 / s else 1e9 * s, a, b),
            ("exp", lambda x, c=c: math.exp(x) - math.exp(c), a, b),
            ("queue", lambda x, c=c, s=s: x * s / (1.0 - min(x / (c + 6), 0.999999)) - 3 * s,
             float(rng.uniform(1e-6, 0.1)), float(rng.uniform(0.2, 1.0) * (c + 6))),
        ]
    return out


def test_brentq_is_scipys_step_for_step() -> None:
    """Over ~360 functions with a sign change in their bracket and four tolerances (the
    closed-loop solve's 1e-4 among them), ``roots.brentq`` evaluates f at exactly scipy's
    points, in the same order, and returns exactly scipy's root (or fails as scipy does)."""
    rng = np.random.default_rng(20)
    compared = 0
    for name, f, a, b in _families(rng):
        if not f(a) * f(b) < 0:
            continue
        for rtol in (1e-4, 1e-5, 1e-10, 4 * np.finfo(float).eps):
            theirs: list[float] = []
            ours: list[float] = []
            try:
                want: float | type[Exception] = optimize.brentq(
                    lambda x, f=f, seen=theirs: seen.append(x) or f(x), a, b, rtol=rtol)
            except (RuntimeError, ValueError) as exc:
                want = type(exc)
            try:
                got: float | type[Exception] = roots.brentq(
                    lambda x, f=f, seen=ours: seen.append(x) or f(x), a, b, rtol=rtol)
            except (RuntimeError, ValueError) as exc:
                got = type(exc)
            assert (got, ours) == (want, theirs), (name, a, b, rtol)
            compared += 1
    assert compared > 600


def test_brentq_refuses_as_scipy() -> None:
    """No sign change, a NaN value and a too-small tolerance are ValueErrors, as in scipy;
    an end point that is a root comes back as is."""
    with pytest.raises(ValueError, match="different signs"):
        roots.brentq(lambda x: x * x + 1.0, -1.0, 1.0)
    with pytest.raises(ValueError, match="NaN"):
        roots.brentq(lambda x: math.nan if x > 0.1 else x - 0.5, 0.0, 1.0)
    with pytest.raises(ValueError, match="rtol too small"):
        roots.brentq(lambda x: x, -1.0, 1.0, rtol=1e-17)
    assert roots.brentq(lambda x: x - 2.0, 2.0, 3.0) == 2.0
    assert roots.brentq(lambda x: x - 3.0, 2.0, 3.0) == 3.0
