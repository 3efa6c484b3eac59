"""A finite batch (``traffic: {requests: N, arrival: all-at-once}``) → its makespan on both
architectures and the equivalent rate N / makespan (#30).

The batch's plans are the best plans ``evaluate`` picks for its traffic — the best colocated
(chunked) plan and the best disaggregated split; with a declared deployment, the batch runs on
it — each evaluated as the finite batch it is (``core.finite_batch``, on the same instances,
memory limits and links the simulator builds for the plan: ``simulate.plan``). Both
architectures by the same rules: the same fluid model of the engine's scheduler, the same
step times. The phase's ``rate_rps`` becomes N / makespan of the plan with the shorter
makespan (or the deployed one), so everything downstream sizes the pool for the batch's
throughput; the batch's own TTFT and TPOT percentiles are in :class:`FiniteBatch` and the
report's ``inputs.traffic[].finite_batch``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from advisor.core.plan.evaluate import evaluate
from advisor.core.scenario import BatchPlanFigures, FiniteBatch, Scenario, TrafficPhase

if TYPE_CHECKING:
    from advisor.core.simulate.plan import Mode

PROBE_RATE_RPS = 1.0
"""The rate the batch's plans are chosen at (plan choice does not depend on the rate)."""


class FiniteBatchError(ValueError):
    """No plan serves the batch."""


def _figures(sc: Scenario, mode: Mode, requests: int) -> BatchPlanFigures | None:
    # the simulator's modules load only for a finite batch: every other scenario passes
    # through ``solve_finite_batch`` untouched, and a cold ``recommend`` need not import them
    from advisor.core.simulate.batch import predict_batch
    from advisor.core.simulate.plan import PlanError, build_deployment, default_plan

    try:
        plan = default_plan(sc, mode, evaluate(sc))
        dep = build_deployment(sc, mode, plan)
    except PlanError:
        return None
    fig = predict_batch(sc, dep, 0, requests)
    return BatchPlanFigures(plan="colocated" if mode == "chunked" else "disaggregated",
                            makespan_s=fig.makespan_s, throughput_rps=fig.throughput_rps,
                            ttft_ms=fig.ttft_ms, tpot_ms=fig.tpot_ms,
                            ttft_at_slo_ms=fig.ttft_at_slo_ms, tpot_at_slo_ms=fig.tpot_at_slo_ms)


def batch_of(sc: Scenario, phase: TrafficPhase) -> FiniteBatch:
    """The batch's figures on the best plan of each architecture (module docstring)."""
    requests = int(phase.batch_requests or 0)
    probe = replace(sc, phases=(replace(phase, share=1.0, rate_rps=PROBE_RATE_RPS),))
    plans = [f for f in (_figures(probe, "chunked", requests),
                         _figures(probe, "disaggregated", requests)) if f is not None]
    if not plans:
        raise FiniteBatchError(f"phase '{phase.name}': no plan serves the batch of "
                               f"{requests:,} requests")
    chosen = min(plans, key=lambda f: f.makespan_s)
    if sc.deployment is not None:
        deployed = "colocated" if sc.deployment.mode == "colocated" else "disaggregated"
        chosen = next((f for f in plans if f.plan == deployed), chosen)
    return FiniteBatch(requests=requests, plan=chosen.plan, plans=tuple(plans))


def solve_finite_batch(sc: Scenario) -> Scenario:
    """The scenario with a finite batch's rate set to requests / makespan (and its
    :class:`FiniteBatch` attached); other scenarios come back unchanged."""
    if all(p.batch_requests is None for p in sc.phases):
        return sc
    phases = []
    for phase in sc.phases:
        if phase.batch_requests is None:
            phases.append(phase)
            continue
        batch = batch_of(sc, phase)
        chosen = next(f for f in batch.plans if f.plan == batch.plan)
        phases.append(replace(phase, rate_rps=chosen.throughput_rps, finite_batch=batch))
    return replace(sc, phases=tuple(phases))
