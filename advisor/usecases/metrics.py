"""``fit --metrics``: the model's latency for the fitted workload, beside the measured one.

The plan is the one ``recommend`` picks for the fitted workload (chunked colocated, or
disaggregated when the verdict is to disaggregate) on the cluster the command names; its
p50/p95/p99 TTFT and TPOT per phase are the analytic figures ``simulate`` compares with
(``core.simulate.analytic.predict``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from advisor.core.scenario import Scenario


def predicted_latency(scenario: Scenario) -> dict[str, Any]:
    """{verdict, mode, plan, phases: [{name, ttft_ms, tpot_ms}]} (ms at p50/p95/p99)."""
    from advisor.core.plan.evaluate import evaluate
    from advisor.core.simulate.analytic import predict
    from advisor.core.simulate.plan import (
        ColocatedSimPlan,
        build_deployment,
        default_plan,
    )
    from advisor.usecases.replay import recommended_mode

    model = evaluate(scenario)
    mode, verdict = recommended_mode(scenario, model)
    plan = default_plan(scenario, mode, model)
    dep = build_deployment(scenario, mode, plan)
    phases = []
    for i, ph in enumerate(scenario.phases):
        pred = predict(dep, ph, i, scenario.slo.quantile)
        phases.append({"name": ph.name, "ttft_ms": None if pred.overloaded else pred.ttft_ms,
                       "tpot_ms": None if pred.overloaded else pred.tpot_ms})
    shape = (f"{plan.instances} × TP{plan.tensor_parallel}" if isinstance(plan, ColocatedSimPlan)
             else f"{plan.prefill_instances} prefill + {plan.decode_instances} decode instances")
    return {"verdict": verdict, "mode": mode, "plan": f"{mode}, {shape}", "phases": phases}
