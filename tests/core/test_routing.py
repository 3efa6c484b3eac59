"""One dispatch model for every pool (``advisor/core/routing.py``, issue #27 item 1).

The colocated prompt queue and the prefill pool's queue both come from
``routing.dispatch_wait_s``; what differs between them is an input (the share of the router's
count that is the queue), never the architecture. Checked here: the policies' limits, that the
two sides use the same queue code (swapping it changes nothing, down to the verdict), and that
switching the router changes both sides' queues.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.core import colocated, disaggregated, routing
from advisor.core.distributions import LengthDistribution
from advisor.core.memory import plan_memory
from advisor.core.plan.evaluate import evaluate
from advisor.core.queueing import gg_c_wait_s
from advisor.core.scenario import ROUTER_POLICIES, TrafficPhase
from advisor.core.verdict.decision import decide
from tests.core.helpers import instance, scenario

RATES = np.linspace(0.05, 0.9, 18)


@pytest.mark.parametrize("policy", ROUTER_POLICIES)
def test_one_instance_is_one_queue_under_every_policy(policy: str) -> None:
    got = routing.dispatch_wait_s(policy, 1, RATES, 1.0, 2.5, 1.3, 0.4)  # type: ignore[arg-type]
    want = gg_c_wait_s(1, RATES, 1.0, 2.5, 1.3)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)


def test_policies_reduce_to_their_queues() -> None:
    n, c, cs = 6, 2.5, 1.2
    rr = routing.dispatch_wait_s("round-robin", n, RATES, 1.0, c, cs)
    np.testing.assert_allclose(rr[0], gg_c_wait_s(1, RATES, 1.0, c / np.sqrt(n), cs)[0])
    rnd = routing.dispatch_wait_s("random", n, RATES, 1.0, c, cs)
    np.testing.assert_allclose(rnd[0],
                               gg_c_wait_s(1, RATES, 1.0, np.sqrt(1 + (c**2 - 1) / n), cs)[0])
    # Poisson thinned at random stays Poisson: each instance queues as if alone
    np.testing.assert_allclose(routing.dispatch_wait_s("random", n, RATES, 1.0, 1.0, cs)[0],
                               gg_c_wait_s(1, RATES, 1.0, 1.0, cs)[0])
    # JSQ whose count is the queue pools it; whose count is other work deals round robin
    pooled = gg_c_wait_s(np.full(RATES.shape, n), RATES * n, 1.0, c, cs)
    np.testing.assert_allclose(routing.dispatch_wait_s("least-loaded", n, RATES, 1.0, c, cs,
                                                       1.0)[0], pooled[0])
    np.testing.assert_allclose(routing.dispatch_wait_s("least-loaded", n, RATES, 1.0, c, cs,
                                                       0.0)[0], rr[0])
    # two choices out of two instances are JSQ
    for share in (0.2, 1.0):
        np.testing.assert_allclose(
            routing.dispatch_wait_s("power-of-two", 2, RATES, 1.0, c, cs, share)[0],
            routing.dispatch_wait_s("least-loaded", 2, RATES, 1.0, c, cs, share)[0])


def test_balancing_orders_the_policies() -> None:
    """Where the count is the queue, Poisson arrivals: JSQ ≤ power-of-two ≤ random, and the
    supermarket limit (n → ∞) of power-of-two is Mitzenmacher's: P(wait) = ρ²·(random's)/ρ."""
    n = 16
    w = {p: routing.dispatch_wait_s(p, n, RATES, 1.0, 1.0, 1.0, 1.0)  # type: ignore[arg-type]
         for p in ROUTER_POLICIES}
    assert np.all(w["least-loaded"][0] <= w["power-of-two"][0] + 1e-12)
    assert np.all(w["power-of-two"][0] <= w["random"][0] + 1e-12)
    big = routing.dispatch_wait_s("power-of-two", 10**6, RATES, 1.0, 1.0, 1.0, 1.0)
    np.testing.assert_allclose(big[1], RATES**2, rtol=1e-4)
    series = sum(RATES ** (2.0 ** (i + 1) - 2.0) for i in range(1, 9))
    np.testing.assert_allclose(big[0], series, rtol=1e-4, atol=1e-12)


def test_overload_is_infinite_never_nan() -> None:
    for p in ROUTER_POLICIES:
        wait, prob = routing.dispatch_wait_s(p, 4, np.array([0.0, 0.5, 1.0, 2.0]), 1.0, 3.0,
                                             3.7, np.array([0.0, 0.3, 1.0, 0.5]))
        assert not np.any(np.isnan(wait)) and not np.any(np.isnan(prob))
        assert wait[0] == 0.0 and np.isinf(wait[2]) and np.isinf(wait[3])


def _phase(burstiness: float, mean: float, p95_ratio: float) -> TrafficPhase:
    return TrafficPhase(name="p", share=1.0, rate_rps=1.0, burstiness=burstiness,
                        prompt_tokens=LengthDistribution.fit(mean=mean, p95=mean * p95_ratio),
                        output_tokens=LengthDistribution.fit(mean=200, p95=600))


WORKLOADS = st.tuples(st.sampled_from([1.0, 2.0, 3.0]), st.sampled_from([500.0, 1500.0, 4000.0]),
                      st.sampled_from([1.5, 3.0, 3.8]), st.integers(min_value=3, max_value=24),
                      st.floats(min_value=0.3, max_value=0.8))


def _colocated_wait(inst: object, seqs: int, ph: TrafficPhase, n: int, load: float,
                    router: str) -> float:
    rate = load * float(colocated.max_rate_meeting(inst, seqs, ph, np.array(2048.0),  # type: ignore[arg-type]
                                                   0.95, None, None, instances=float(n)))
    pt = colocated.evaluate_colocated(inst, seqs, ph, np.array(rate), np.array(2048.0),  # type: ignore[arg-type]
                                      0.95, float(n), router)  # type: ignore[arg-type]
    assert pt.ttft_prefill_s is not None
    return float(pt.ttft_prefill_s)


def _prefill_wait(inst: object, ph: TrafficPhase, n: int, load: float, router: str) -> float:
    sc = scenario("qwen2.5-32b")
    _, per_request = disaggregated.prefill_service(inst, ph.computed_prompt_tokens.mean)  # type: ignore[arg-type]
    _, wait, _, _ = disaggregated.prefill_ttft_parts(
        inst, ph, np.array(load / per_request), 0.95, sc.cluster.kv_link,  # type: ignore[arg-type]
        servers=n, router=router)  # type: ignore[arg-type]
    return float(wait)


@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(WORKLOADS)
def test_switching_router_changes_both_sides_queues(workload: tuple) -> None:
    """Over generated workloads (arrival CV 1–3, prompt CV up to ~3.7, 3–24 instances, 30–80 %
    load) every pair of policies gives a different queue on both sides (two choices out of
    n ≥ 3 differ from JSQ; with two instances they are JSQ, test above)."""
    c, mean, ratio, n, load = workload
    ph = _phase(c, mean, ratio)
    inst = instance("qwen2.5-32b", "h100-sxm", 2)
    seqs = plan_memory(inst, 6000, 1200, 0.9).max_sequences
    co = {p: _colocated_wait(inst, seqs, ph, n, load, p) for p in ROUTER_POLICIES}
    pre = {p: _prefill_wait(inst, ph, n, load, p) for p in ROUTER_POLICIES}
    for side in (co, pre):
        values = list(side.values())
        assert all(np.isfinite(values))
        for i in range(len(values)):
            for j in range(i + 1, len(values)):
                assert values[i] != pytest.approx(values[j], rel=1e-6), side


@settings(max_examples=5, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.sampled_from(ROUTER_POLICIES), st.sampled_from([1.0, 3.0]),
       st.sampled_from([10.0, 25.0]))
def test_swapping_the_sides_queue_code_changes_nothing(monkeypatch: pytest.MonkeyPatch,
                                                       router: str, burstiness: float,
                                                       rate: float) -> None:
    """The queue code each architecture calls is the same: with the colocated module's queue
    function given to the disaggregated side and the other way round (the labels swapped),
    the verdict and the gain of a generated workload are the same, to the last bit."""
    sc = dataclasses.replace(
        scenario("qwen2.5-32b", gpus=16, rate=rate, burstiness=burstiness,
                 prompt=LengthDistribution.fit(mean=1500, p95=6000), output=200,
                 ttft_ms=1500, tpot_ms=50, inter_node="ib-ndr-400"), router=router)
    before = evaluate(sc)
    with monkeypatch.context() as m:
        m.setattr(colocated, "dispatch_wait_s", disaggregated.dispatch_wait_s)
        m.setattr(disaggregated, "dispatch_wait_s", colocated.dispatch_wait_s)
        after = evaluate(dataclasses.replace(sc))
    assert colocated.dispatch_wait_s is routing.dispatch_wait_s
    assert disaggregated.dispatch_wait_s is routing.dispatch_wait_s
    d0, d1 = decide(sc, before), decide(sc, after)
    assert d1.verdict == d0.verdict and d1.recommended == d0.recommended
    assert (d1.gain, d1.split_gain, d1.ideal_gain) == (d0.gain, d0.split_gain, d0.ideal_gain)
    for plan in ("colocated", "disaggregated"):
        p0, p1 = getattr(before, plan), getattr(after, plan)
        assert (p1 and p1.max_goodput_rps) == (p0 and p0.max_goodput_rps)
        assert (p1 and p1.ttft_ms) == (p0 and p0.ttft_ms)
