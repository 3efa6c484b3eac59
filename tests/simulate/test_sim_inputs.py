"""Simulator inputs: the request trace and the cached step times."""

from __future__ import annotations

import math

import numpy as np
import pytest

from advisor.core.distributions import LengthDistribution
from advisor.core.simulate import ColocatedSimPlan
from advisor.core.simulate.arrivals import (
    DrawnSource,
    collect,
    draw_lengths,
    draw_trace,
    interarrival_s,
    phase_counts,
    share_rate_counts,
)
from advisor.core.simulate.plan import build_deployment
from advisor.core.simulate.steptime import StepTimes, effective_context, quantize
from tests.simulate.helpers import scenario


@pytest.mark.parametrize("cv", [0.5, 1.0, 2.5])
def test_gamma_gaps_have_the_rate_and_cv(cv: float) -> None:
    gaps = interarrival_s(np.random.default_rng(0), 4.0, cv, 200_000)
    assert gaps.mean() == pytest.approx(0.25, rel=0.02)
    assert gaps.std() / gaps.mean() == pytest.approx(cv, rel=0.03)


def test_zero_cv_is_a_constant_gap() -> None:
    gaps = interarrival_s(np.random.default_rng(0), 2.0, 0.0, 10)
    assert np.all(gaps == 0.5)


def test_lengths_follow_the_distribution() -> None:
    rng = np.random.default_rng(1)
    const = draw_lengths(rng, LengthDistribution.constant(300), 100)
    assert np.all(const == 300)
    dist = LengthDistribution.fit(mean=1000, p50=800, max_tokens=4000)
    x = draw_lengths(rng, dist, 200_000)
    assert x.min() >= 1 and x.max() <= 4000
    assert float(np.median(x)) == pytest.approx(800, rel=0.02)
    assert float(np.percentile(x, 95)) == pytest.approx(dist.quantile(0.95), rel=0.03)


def test_phase_counts_add_up() -> None:
    sc = scenario("phases-8b")
    for n in (10, 999, 10_000):
        assert sum(share_rate_counts(sc.phases, n)) == n
        assert sum(phase_counts([3.0, 1.0, 0.0], n)) == n
    assert phase_counts([3.0, 1.0], 8) == [6, 2]


def test_drawn_batches_are_the_whole_trace_in_order() -> None:
    """Batches of at most ``chunk`` requests within a phase, ids consecutive, the same
    requests for the same seed, phases in order."""
    sc = scenario("phases-8b")
    small = DrawnSource(sc.phases, [700, 300], 4, chunk=64)
    batches = list(small.batches())
    assert all(b.size <= 64 and len(set(b.segment.tolist())) == 1 for b in batches)
    assert [b.first_id for b in batches] == [sum(x.size for x in batches[:i])
                                             for i in range(len(batches))]
    a = collect(small)
    b = collect(DrawnSource(sc.phases, [700, 300], 4, chunk=64))
    assert np.array_equal(a.arrival_s, b.arrival_s)
    assert np.all(np.diff(a.arrival_s) >= 0)
    assert list(np.bincount(a.phase)) == [700, 300]


def test_trace_is_deterministic() -> None:
    sc = scenario("s03-8b-short-bursty")
    a, b, c = (draw_trace(sc.phases, 1000, s) for s in (3, 3, 4))
    assert np.array_equal(a.arrival_s, b.arrival_s)
    assert np.array_equal(a.prompt_tokens, b.prompt_tokens)
    assert not np.array_equal(a.arrival_s, c.arrival_s)
    assert np.all(np.diff(a.arrival_s) >= 0)


def test_quantize_keeps_8_significant_bits() -> None:
    for x in (0, 1, 255):
        assert quantize(x) == x
    for x in (256, 1000, 4097, 123_456, 10**6):
        assert abs(quantize(x) - x) / x <= 1 / 256


def test_effective_context_matches_attention_flops() -> None:
    pieces = [(300, 2000), (200, 0), (12, 0)]
    p = sum(c for c, _ in pieces)
    attn = sum(c * (2 * k + c) for c, k in pieces)
    k = effective_context(attn, p, len(pieces))
    assert 2 * p * k + p * p / len(pieces) == pytest.approx(attn, rel=1e-3)
    assert effective_context(500 * 500, 500, 1) == 0


@pytest.mark.parametrize(("name", "tp"), [("s01-8b-short-light", 1),
                                          ("s13-mixtral-short-medium", 4),
                                          ("s12-70b-long-heavy", 4)])
def test_cached_step_times_match_the_instance(name: str, tp: int) -> None:
    sc = scenario(name)
    inst = build_deployment(sc, "chunked", ColocatedSimPlan(tensor_parallel=tp, pipeline_stages=1,
                                                            instances=1,
                                                            chunk_tokens=2048)).pools[0].instance
    st = StepTimes(inst, 20_000)
    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(400):
        d = int(rng.integers(0, 300))
        ctx = float(rng.uniform(1, 19_000))
        p = int(rng.integers(1, 8000))
        n = int(rng.integers(1, 4))
        k = int(rng.integers(0, 12_000))
        exact = float(inst.step_time_s(p, n, k, d, ctx))
        worst = max(worst, abs(st.step(p, n, k, d, ctx) - exact) / exact)
        if d:
            exact_d = float(inst.decode_step_s(d, ctx))
            worst = max(worst, abs(st.decode(d, ctx) - exact_d) / exact_d)
    assert worst < 1e-2
    assert st.misses > 0
    assert math.isfinite(st.decode(1, 0.0))
