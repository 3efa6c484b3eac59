"""A request log fitted (``fit``) and replayed on a workload's plans (``simulate --trace``,
``fit --check``).

The fit is :func:`advisor.core.trace_fit.fit_traffic` on the log's arrays; the replay hands
the simulator the log's requests as logged, each in its replay segment (a phase's stretch cut
at its idle gaps, measured on its own), with the fitted phases as the analytic column.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from advisor.core.results import ModelResult
    from advisor.core.scenario import Scenario
    from advisor.core.simulate import Mode, Replay, SimulationResult
    from advisor.core.trace_fit import FittedTraffic
    from advisor.loading.traces import RequestLog


def fit_log(log: RequestLog, min_phase_s: float | None = None) -> FittedTraffic:
    """The fitted traffic of a loaded log (``min_phase_s``: the minimum phase length, default
    ``trace_phases.MIN_PHASE_S``)."""
    from advisor.core.trace_fit import MIN_PHASE_S, fit_traffic

    return fit_traffic(log.arrival_s, log.prompt_tokens, log.output_tokens,
                       log.prefix_hit_blocks, log.prefix_blocks, log.block_tokens,
                       time_scale=log.time_scale, time_unit_s=log.time_unit_s,
                       min_phase_s=MIN_PHASE_S if min_phase_s is None else min_phase_s)


def replay_of(log: RequestLog, fitted: FittedTraffic, scenario: Scenario
              ) -> tuple[Replay, dict[str, Any], str]:
    """The replay of ``log`` on ``scenario``'s plans: its fitted phases (the analytic column),
    a JSON description and a line for the table."""
    from advisor.core.simulate import Replay
    from advisor.core.simulate.arrivals import Trace
    from advisor.core.trace_fit import traffic_phases

    phases = traffic_phases(fitted, float(scenario.model.max_context_tokens))
    seg_phase = np.asarray(fitted.segment_phase, dtype=np.int16)
    trace = Trace(arrival_s=log.arrival_s, prompt_tokens=log.prompt_tokens,
                  output_tokens=log.output_tokens, phase=seg_phase[fitted.segment],
                  phase_names=tuple(p.name for p in phases))
    replay = Replay(trace=trace, phases=phases, segments=fitted.segment,
                    segment_phase=fitted.segment_phase,
                    segment_bounds_s=fitted.segment_bounds_s)
    doc = {"paths": list(log.paths), "format": log.format, "requests": log.requests,
           "duration_s": float(f"{fitted.duration_s:.6g}"), "time_scale": log.time_scale,
           "idle_gaps": fitted.idle.count,
           "duty_cycle": float(f"{fitted.idle.duty_cycle:.6g}"),
           "phases": [{"name": p.name, "share": float(f"{p.share:.6g}"),
                       "rate_rps": float(f"{p.rate_rps:.6g}"),
                       "burstiness": float(f"{p.burstiness:.6g}")} for p in fitted.phases]}
    phase_text = ", ".join(f"{p.name} {p.rate_rps:.3g} req/s (CV {p.burstiness:.2g}, "
                           f"{p.share * 100:.0f} %)" for p in fitted.phases)
    idle = ""
    if fitted.idle.count:
        idle = (f"; {fitted.idle.count} idle gap{'s' * (fitted.idle.count != 1)} "
                f"({(1 - fitted.idle.duty_cycle) * 100:.0f} % of the span) replayed as logged, "
                "each busy period measured on its own")
    note = (f"Replaying {', '.join(log.paths)} ({log.format}): {log.requests:,} requests over "
            f"{fitted.duration_s:,.0f} s; analytic column from the traffic fitted to it "
            f"({phase_text}){idle}.")
    return replay, doc, note


def recommended_mode(scenario: Scenario, model: ModelResult) -> tuple[Mode, str]:
    """The simulator mode of the plan ``recommend`` recommends (the decision's
    ``recommended``: the chunked colocated pool, whole-prompt prefill or the disaggregated
    split) and the verdict."""
    from advisor.core.verdict.decision import decide

    decision = decide(scenario, model)
    modes: dict[str, Mode] = {"colocated": "chunked", "unchunked": "unchunked",
                              "disaggregated": "disaggregated"}
    return modes[decision.recommended], decision.verdict


def replay_on_recommended(scenario: Scenario, log: RequestLog, fitted: FittedTraffic
                          ) -> tuple[SimulationResult, str]:
    """``fit --check``: the log replayed on the plan ``recommend`` recommends for the fitted
    workload (:func:`recommended_mode`); returns the result and the verdict."""
    from advisor.core.plan.evaluate import evaluate
    from advisor.core.simulate import simulate

    model = evaluate(scenario)
    mode, verdict = recommended_mode(scenario, model)
    replay, _doc, _note = replay_of(log, fitted, scenario)
    return simulate(scenario, mode, model=model, replay=replay), verdict
