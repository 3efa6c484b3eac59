"""Closed-loop traffic: N clients that each wait for their answer → an equivalent arrival rate.

A benchmark run with ``--max-concurrency N`` (or a load test of N users) keeps N requests in
the system. By Little's law (docs/model.md §2.2) the arrival rate it generates is

    λ = N / E[end-to-end latency](λ),    E2E(λ) = TTFT(λ) + (Ō − 1)·TPOT(λ),

a fixed point, because the latencies grow with the rate. ``g(λ) = λ·E2E(λ) − N`` is negative
near 0 and non-negative at ``N / E2E(0⁺)`` (latencies only grow with load), so a root lies in
between; Brent's method finds it (:func:`advisor.core.roots.brentq`: scipy's ``brentq`` step
for step, without importing scipy on ``recommend``'s path). The latencies are the model's
own, from :func:`advisor.core.plan.evaluate.evaluate` on the phase alone, at the median (the
model has no separate mean latency; the median stands in for it), of the plan the clients
would hit: the declared deployment when there is one, else the plan that carries more
(colocated or disaggregated). An overloaded plan (no finite latency) counts as an infinite
E2E.

The probes differ only in the phase's ``rate_rps``, and no capacity table depends on the
arrival rate (:class:`~advisor.core.plan.capacities.Capacities`), so one set of tables — the
drift corners' included — serves every probe of a phase, and so do the rate-free parts of
``evaluate`` it remembers there (the colocated plans' capacity and light-load figures, the
integer split, the fragility): each probe is the same ``evaluate`` as with fresh tables,
without recomputing them. A rate is never evaluated twice (brentq's root is one it tried).

Each phase with ``concurrency`` is solved on its own; its ``rate_rps`` becomes the equivalent
rate and everything downstream (plans, SLO checks, phases, sweeps over the rate) uses it.
"""

from __future__ import annotations

import math
from dataclasses import replace

from advisor.core.plan.capacities import Capacities
from advisor.core.plan.evaluate import evaluate
from advisor.core.results import ColocatedPlan, DeployedPrediction, DisaggregatedPlan
from advisor.core.roots import brentq
from advisor.core.scenario import ClosedLoop, Scenario, TrafficPhase

LIGHT_RATE_SHARE = 1e-6
"""The 'light-load' probe rate as a share of the first guess N / E2E: low enough that no
queue forms."""
RELATIVE_TOLERANCE = 1e-4
"""brentq's relative tolerance on λ (Little's law is then met to far better than 1 %)."""
OVERLOADED_E2E_S = 1e9
"""The end-to-end seconds an overloaded plan counts as (finite, so brentq can bracket it)."""


class ClosedLoopError(ValueError):
    """No plan serves the phase even at light load (no equivalent rate exists)."""


def probe_scenario(sc: Scenario, phase: TrafficPhase, rate_rps: float) -> Scenario:
    """The phase alone at ``rate_rps``, its SLO percentile the median: what a probe
    evaluates."""
    return replace(sc, phases=(replace(phase, share=1.0, rate_rps=rate_rps),),
                   slo=replace(sc.slo, percentile=50.0))


def _latencies(sc: Scenario, phase: TrafficPhase, rate_rps: float, caps: Capacities
               ) -> tuple[float, float, float, str]:
    """(TTFT s, TPOT s, E2E s, plan) of the phase alone at ``rate_rps`` (medians); ``caps``:
    the probe scenario's capacity tables (at any rate)."""
    result = evaluate(probe_scenario(sc, phase, rate_rps), caps)
    plan: DeployedPrediction | ColocatedPlan | DisaggregatedPlan
    if sc.deployment is not None and result.deployed is not None:
        plan, name = result.deployed, "deployed"
    else:
        options = [(p, n) for p, n in ((result.colocated, "colocated"),
                                       (result.disaggregated, "disaggregated")) if p is not None]
        if not options:
            return math.inf, math.inf, math.inf, "none"
        plan, name = max(options, key=lambda o: o[0].max_goodput_rps)
    if plan.ttft_ms is None or plan.tpot_ms is None or plan.overloaded:
        return math.inf, math.inf, math.inf, name
    ttft, tpot = plan.ttft_ms / 1e3, plan.tpot_ms / 1e3
    e2e = ttft + max(phase.output_tokens.mean - 1.0, 0.0) * tpot
    return ttft, tpot, e2e, name


def equivalent_rate(sc: Scenario, phase: TrafficPhase, concurrency: int) -> ClosedLoop:
    """Solve λ·E2E(λ) = concurrency for one phase (module docstring)."""
    caps = Capacities(probe_scenario(sc, phase, 1e-9))  # every probe's tables (rate-free)
    seen: dict[float, tuple[float, float, float, str]] = {}  # a full evaluation: never twice

    def latencies(rate: float) -> tuple[float, float, float, str]:
        if rate not in seen:
            seen[rate] = _latencies(sc, phase, rate, caps)
        return seen[rate]

    first = latencies(1e-9)[2]
    if not math.isfinite(first):
        raise ClosedLoopError(f"phase '{phase.name}': no plan serves a single request, so "
                              f"{concurrency} clients have no equivalent rate")
    high = concurrency / first
    floor = high * LIGHT_RATE_SHARE

    def excess(rate: float) -> float:
        return rate * min(latencies(rate)[2], OVERLOADED_E2E_S) - concurrency

    if excess(high) <= 0.0:  # latencies flat up to N / E2E(0): no queueing at all
        rate = high
    else:
        # λ·E2E(λ) grows with λ: halve from N / E2E(0) until it falls below N (usually once),
        # so that brentq starts on a narrow bracket instead of [1e-6·high, high]
        low = high / 2.0
        while low > floor and excess(low) > 0.0:
            low /= 2.0
        low = max(low, floor)
        rate = brentq(excess, low, high, rtol=RELATIVE_TOLERANCE)
    ttft, tpot, e2e, name = latencies(rate)  # brentq's root is a point it evaluated
    if not math.isfinite(e2e):  # the root sits on the overload edge: step just below it
        rate *= 1.0 - 1e-6
        ttft, tpot, e2e, name = latencies(rate)
    return ClosedLoop(concurrency=concurrency, rate_rps=rate, ttft_ms=ttft * 1e3,
                      tpot_ms=tpot * 1e3, e2e_s=e2e, plan=name)


def solve_closed_loop(sc: Scenario) -> Scenario:
    """The scenario with every closed-loop phase's ``rate_rps`` set to its equivalent rate
    (and its :class:`ClosedLoop` attached); open-loop scenarios come back unchanged."""
    if all(p.concurrency is None for p in sc.phases):
        return sc
    phases = []
    for phase in sc.phases:
        if phase.concurrency is None:
            phases.append(phase)
            continue
        loop = equivalent_rate(sc, phase, phase.concurrency)
        phases.append(replace(phase, rate_rps=loop.rate_rps, closed_loop=loop))
    return replace(sc, phases=tuple(phases))
