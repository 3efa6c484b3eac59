"""Closed-loop traffic (#16): N clients → the equivalent rate λ with λ · E2E(λ) = N, on the
model's own (median) latencies (docs/model.md §2.2)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from advisor.core.closed_loop import equivalent_rate, solve_closed_loop
from advisor.core.plan.evaluate import evaluate
from advisor.core.scenario import Scenario
from tests.core.helpers import scenario


def _closed(clients: int) -> Scenario:
    sc = scenario(model="llama-3.1-8b", gpus=8, prompt=1000, output=300, ttft_ms=500.0,
                  tpot_ms=25.0)
    return replace(sc, phases=tuple(replace(p, concurrency=clients) for p in sc.phases))


def _median_latencies_ms(sc: Scenario, rate: float) -> tuple[float, float]:
    """The best plan's median TTFT and TPOT with the phase at ``rate`` (recomputed here)."""
    probe = replace(sc, phases=(replace(sc.phases[0], rate_rps=rate),),
                    slo=replace(sc.slo, percentile=50.0))
    result = evaluate(probe)
    plans = [p for p in (result.colocated, result.disaggregated) if p is not None]
    plan = max(plans, key=lambda p: p.max_goodput_rps)
    assert plan.ttft_ms is not None and plan.tpot_ms is not None
    return plan.ttft_ms, plan.tpot_ms


@pytest.mark.parametrize("clients", [16, 256])
def test_equivalent_rate_satisfies_littles_law(clients: int) -> None:
    sc = solve_closed_loop(_closed(clients))
    phase = sc.phases[0]
    loop = phase.closed_loop
    assert loop is not None and phase.rate_rps == loop.rate_rps
    ttft_ms, tpot_ms = _median_latencies_ms(sc, phase.rate_rps)
    e2e_s = (ttft_ms + (300 - 1) * tpot_ms) / 1000.0
    assert phase.rate_rps * e2e_s == pytest.approx(clients, rel=0.01)
    assert (loop.ttft_ms, loop.tpot_ms) == pytest.approx((ttft_ms, tpot_ms), rel=1e-9)


def test_one_client_sees_light_load_latencies() -> None:
    """Concurrency 1: one request at a time, so the latencies are those of an idle system and
    λ = 1 / E2E(light load)."""
    loop = equivalent_rate(_closed(1), _closed(1).phases[0], 1)
    light_ttft, light_tpot = _median_latencies_ms(_closed(1), 1e-9)
    assert loop.ttft_ms == pytest.approx(light_ttft, rel=0.01)
    assert loop.tpot_ms == pytest.approx(light_tpot, rel=0.01)
    assert loop.rate_rps == pytest.approx(
        1000.0 / (light_ttft + 299 * light_tpot), rel=0.01)


def test_more_clients_more_rate_and_latency() -> None:
    low = equivalent_rate(_closed(8), _closed(8).phases[0], 8)
    high = equivalent_rate(_closed(512), _closed(512).phases[0], 512)
    assert high.rate_rps > low.rate_rps
    assert high.e2e_s > low.e2e_s
    assert high.rate_rps < 512 / low.e2e_s  # queueing: fewer than N/E2E(light) requests/s
