"""The colocated prompt queue and its pool size (issue #6, docs/model.md §5 and §7)."""

from __future__ import annotations

import numpy as np
import pytest

from advisor.core.colocated import (
    CHUNK_CANDIDATES,
    evaluate_colocated,
    max_rate_meeting,
    queue_instances,
)
from advisor.core.distributions import LengthDistribution
from advisor.core.memory import plan_memory
from advisor.core.queueing import backlog_quantile_tokens, gg_c_wait_s, renewal_wait_probability
from advisor.core.scenario import TrafficPhase
from tests.core.helpers import instance

LENGTHS = (
    LengthDistribution.fit(mean=800, p50=600, p95=2200),
    LengthDistribution.fit(mean=6000, p95=12000, max_tokens=16000),
    LengthDistribution.fit(mean=300, p95=2000),
    LengthDistribution.constant(1000),
)


def _brute_force(p: float, m: float, d: LengthDistribution, q: float, n: int = 20000) -> float:
    """q-quantile of X + S by bisection over n equal-probability prompt lengths."""
    s = np.array([d.quantile((i + 0.5) / n) for i in range(n)])
    lo, hi = 0.0, float(s.max()) + 60.0 * m + 1.0
    for _ in range(80):
        y = (lo + hi) / 2.0
        with np.errstate(over="ignore"):
            surv = np.where(s > y, 1.0, p * np.exp(-(y - s) / max(m, 1e-12))).mean()
        lo, hi = (y, hi) if surv > 1.0 - q else (lo, y)
    return (lo + hi) / 2.0


@pytest.mark.parametrize("lengths", LENGTHS, ids=lambda d: f"sigma{d.sigma:.2f}")
@pytest.mark.parametrize("q", [0.5, 0.95, 0.99])
def test_backlog_quantile_matches_brute_force(lengths: LengthDistribution, q: float) -> None:
    rng = np.random.default_rng(round(q * 100))
    for _ in range(12):
        p = float(rng.random())
        m = lengths.mean * 10 ** rng.uniform(-3.0, np.log10(30.0 / (1.0 - p)))
        got = float(backlog_quantile_tokens(np.array(p), np.array(m), lengths, q))
        assert got == pytest.approx(_brute_force(p, m, lengths, q), rel=0.03), (p, m)


def test_backlog_quantile_limits_and_monotonicity() -> None:
    d = LENGTHS[0]
    # no backlog: the prompt's own quantile; overload: unbounded
    got = backlog_quantile_tokens(np.array([0.0, 0.4, 0.7]), np.array([5.0, 0.0, np.inf]), d, 0.95)
    assert got[0] == pytest.approx(d.quantile(0.95), rel=1e-9)
    assert got[1] == pytest.approx(d.quantile(0.95), rel=0.01)
    assert np.isinf(got[2])
    p = np.linspace(0.0, 1.0, 101)[:, None]
    m = d.mean * np.geomspace(1e-3, 1e5, 120)[None, :]
    y = backlog_quantile_tokens(p, m, d, 0.95)
    assert np.all(np.diff(y, axis=0) >= 0.0) and np.all(np.diff(y, axis=1) >= 0.0)


def test_array_arrival_cvs_equal_the_scalar_ones() -> None:
    rho = np.random.default_rng(3).random((4, 3, 9))
    cv = np.array([1.0, 0.5, 2.5, 1.0 / np.sqrt(8.0)])[:, None, None]
    got = renewal_wait_probability(rho, cv)
    for i in range(4):
        np.testing.assert_allclose(got[i], renewal_wait_probability(rho[i], float(cv[i, 0, 0])),
                                   rtol=1e-12, atol=1e-15)


def test_regular_arrivals_never_wait_negatively() -> None:
    """Round-robin shares are more regular than Poisson (CV² = c²/n < 1): the GI/M/1 ratio β
    can fall below ½ at light load, and the effective arrival SCV 2β − 1 is floored at 0."""
    rho = np.geomspace(1e-4, 0.99, 200)
    for cv in (0.5, 1.0 / np.sqrt(8.0), 0.1):
        wait, p_wait = gg_c_wait_s(1, rho, np.array(1.0), cv, 0.3)
        assert np.all(wait >= 0.0) and np.all(np.diff(wait) > 0.0)
        assert np.all(p_wait <= rho + 1e-12)
        kingman_cs_only = rho / (1.0 - rho) * 0.3**2 / 2.0
        assert np.all(wait >= kingman_cs_only * (1 - 1e-9))  # the service term stays


def test_queue_instances_is_the_exact_pool() -> None:
    """Issue #27: the colocated queue is evaluated at the exact pool size (no rounding down
    to a power of two)."""
    got = queue_instances(np.array([0, 1, 2, 3, 4, 7, 8, 9, 1000, 1024, 100000]))
    assert got.tolist() == [1, 1, 2, 3, 4, 7, 8, 9, 1000, 1024, 100000]


def test_more_instances_shorten_the_prompt_queue() -> None:
    """At a fixed per-instance rate the colocated TTFT falls with the pool size (bursts are
    split); the TPOT does not change; the goodput per instance grows."""
    inst = instance("qwen2.5-32b", "h100-sxm", 2)
    phase = TrafficPhase(name="p", share=1.0, rate_rps=1.0, burstiness=2.5,
                         prompt_tokens=LengthDistribution.fit(mean=800, p50=600, p95=2200),
                         output_tokens=LengthDistribution.fit(mean=250, p95=700))
    seqs = plan_memory(inst, 1200, 4000, 0.9).max_sequences
    pools = np.array([1.0, 2.0, 4.0, 8.0])
    pt = evaluate_colocated(inst, seqs, phase, np.full(4, 8.0), np.array(2048.0), 0.95, pools)
    assert np.all(np.diff(pt.ttft_q_s) < 0.0)
    np.testing.assert_allclose(pt.tpot_q_s, pt.tpot_q_s[0], rtol=1e-12)
    goods = [float(max_rate_meeting(inst, seqs, phase, np.array(2048.0), 0.95, 0.3, 0.05,
                                    instances=n)) for n in pools]
    assert goods == sorted(goods) and goods[-1] > goods[0]


def test_more_regular_arrivals_never_lengthen_the_wait_given_waiting() -> None:
    """Regular arrivals (a large round-robin deal, CV² = c²/n → 0) floor the effective arrival
    SCV at 0 for the mean *and* for P(wait) (σ ≥ ρ/(2 − ρ)): with the mean floored alone, P
    kept falling while W stayed, and the wait given waiting grew with the pool — a TP2
    instance of benchmarks/three-phase.yaml's long-prompt phase lost 20 % of its goodput
    between 11 and 1,024 instances."""
    rho = np.geomspace(1e-3, 0.98, 120)
    cvs = np.array([1.0, 0.7, 0.5, 0.3, 0.1, 0.03, 0.001])
    for cs in (0.0, 0.5, 1.0):
        w, p = gg_c_wait_s(1, rho[None, :], np.array(1.0), cvs[:, None], cs)
        cond = w / p
        assert np.all(np.diff(w, axis=0) <= 1e-12 * w[:-1])
        assert np.all(np.diff(p, axis=0) <= 1e-12)
        assert np.all(np.diff(cond, axis=0) <= 1e-9 * cond[:-1])
        # below the deterministic-equivalent CV nothing moves any more
        np.testing.assert_allclose(w[-1], w[-2], rtol=1e-12)
        np.testing.assert_allclose(p[-1], rho / (2.0 - rho), rtol=1e-12)


@pytest.mark.parametrize("router", ["least-loaded", "round-robin"])
def test_goodput_per_instance_never_falls_with_the_pool(router: str) -> None:
    """More instances behind a balancing router never lower one instance's goodput (the
    colocated tables read the largest tabulated pool size ≤ a cluster's, which is only the
    conservative side if this holds); up to the rate search's 1e-3 relative tolerance."""
    inst = instance("llama-3.1-70b", "h100-sxm", 2, precision="fp8")
    phase = TrafficPhase(name="long", share=1.0, rate_rps=1.0, burstiness=2.0,
                         prompt_tokens=LengthDistribution.fit(mean=12000, p95=24000,
                                                              max_tokens=32000),
                         output_tokens=LengthDistribution.fit(mean=600, p95=1200))
    seqs = plan_memory(inst, 12000, 600, 0.9).max_sequences
    pools = np.array([1, 2, 4, 8, 11, 16, 24, 64, 256, 1024], dtype=float)
    goods = np.array([float(np.max(max_rate_meeting(inst, seqs, phase,
                                                    np.asarray(CHUNK_CANDIDATES, float), 0.95,
                                                    3.0, 0.05, instances=n, router=router)))
                      for n in pools])
    assert goods[-1] > 0.0
    assert np.all(np.diff(goods) >= -2e-3 * goods[1:]), dict(zip(pools, goods, strict=True))
