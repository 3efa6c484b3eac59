"""Closed-loop traffic (#16): N clients → the equivalent rate λ with λ · E2E(λ) = N, on the
model's own (median) latencies (docs/model.md §2.2)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import pytest

from advisor.core.distributions import LengthDistribution
from advisor.core.plan.capacities import Capacities
from advisor.core.plan.evaluate import evaluate
from advisor.core.results import ModelResult
from advisor.core.scenario import Deployment, Scenario
from advisor.core.solve import closed_loop
from advisor.core.solve.closed_loop import equivalent_rate, probe_scenario, solve_closed_loop
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


# ---- one set of capacity tables for every probe (#20) ---------------------------------------


def _example_70b() -> Scenario:
    """examples/agents-70b-closed-loop.yaml as loaded (16 H100 over IB, a colocated TP4
    deployment, TTFT and TPOT SLOs, the ±25 % drift band): its phase already solved."""
    from pathlib import Path

    from advisor.loading.catalog import ProfileCatalog
    from advisor.loading.resolve import load_scenario

    path = Path(__file__).resolve().parents[2] / "examples" / "agents-70b-closed-loop.yaml"
    return load_scenario(path, ProfileCatalog(env={}))


def _closed_variants() -> dict[str, Scenario]:
    """Closed-loop scenarios covering each plan the clients can hit: the best plan with a
    pooled (TTFT-SLO) prefill queue, a declared colocated and a declared disaggregated
    deployment, and two closed-loop phases."""
    example = _example_70b()
    two = _closed(64)
    a = two.phases[0]
    b = replace(a, name="night", share=0.3,
                prompt_tokens=LengthDistribution.constant(4000), concurrency=16)
    return {
        "best-plan": _closed(256),
        "deployed-colocated": example,
        "deployed-disaggregated": replace(example, deployment=Deployment(
            mode="disaggregated", tensor_parallel=4, prefill_gpus=8, decode_gpus=8)),
        "two-phases": replace(two, phases=(replace(a, share=0.7), b)),
    }


@pytest.mark.parametrize("name", ["best-plan", "deployed-colocated", "deployed-disaggregated",
                                  "two-phases"])
def test_shared_tables_solve_as_fresh_tables(name: str, monkeypatch: pytest.MonkeyPatch
                                             ) -> None:
    """The solve evaluates every probe with one set of capacity tables and finds the root
    with ``roots.brentq``; the solve before #20 — fresh tables built for every probe, scipy's
    ``brentq`` — gives exactly the same ClosedLoop (rate, latencies, E2E and plan), bit for
    bit."""
    from scipy import optimize

    sc = _closed_variants()[name]
    shared = solve_closed_loop(sc)

    calls: list[float] = []

    def fresh(probe: Scenario, caps: Capacities | None = None) -> ModelResult:
        calls.append(probe.phases[0].rate_rps)
        return evaluate(probe)  # new tables every probe, whatever the solver passes

    def scipy_brentq(f: Callable[[float], float], a: float, b: float, rtol: float) -> float:
        calls.append(math.nan)
        return float(optimize.brentq(f, a, b, rtol=rtol))

    monkeypatch.setattr(closed_loop, "evaluate", fresh)
    monkeypatch.setattr(closed_loop, "brentq", scipy_brentq)
    old = solve_closed_loop(sc)
    assert any(math.isnan(c) for c in calls) and any(c > 0 for c in calls)  # the old path ran
    loops = [(p.closed_loop, q.closed_loop) for p, q in zip(shared.phases, old.phases,
                                                            strict=True)]
    assert all(new is not None for new, _ in loops)
    assert [new for new, _ in loops] == [was for _, was in loops]
    assert shared == old


@pytest.mark.parametrize("name", ["best-plan", "deployed-colocated", "deployed-disaggregated"])
def test_shared_tables_evaluate_as_fresh_tables(name: str) -> None:
    """Every part of ``evaluate`` — plans, deployment, static allocation, fragility under
    the drift corners — is the same with the tables of the probe at other rates (and the
    rate-free results earlier probes left in ``Capacities.results``) as with tables built for
    the rate: the invariant the shared-table solve rests on."""
    sc = _closed_variants()[name]
    phase = sc.phases[0]
    loop = solve_closed_loop(sc).phases[0].closed_loop
    assert loop is not None
    solved = loop.rate_rps
    caps = Capacities(probe_scenario(sc, phase, 1e-9))
    for rate in (1e-9, solved / 2.0, solved, solved * 1.5, solved * 4.0):
        probe = probe_scenario(sc, phase, rate)
        with_shared = evaluate(probe, caps)
        assert with_shared == evaluate(probe), rate
        # the drift corners' tables are shared too (built once, at the first probe's rate)
        assert with_shared.fragility is not None and len(with_shared.fragility.drifted) == 2
