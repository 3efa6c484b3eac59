"""The analytic model against the simulator on a matrix of scenarios (issue #6).

13 workloads (tests/data/simulate/s*.yaml: three models plus Mixtral, short and long prompts,
light and heavy load, Poisson and bursty arrivals), each simulated in the colocated chunked and
the disaggregated mode on the analytic model's best plan. The analytic p95 TTFT and TPOT must
be within ±25 % of the simulated ones, or the case is outside for a documented reason:

* ``POOLED_QUEUE`` (TTFT, analytic above the simulation): the model queues each instance as
  its own G/G/1 at rate / instances (``kingman_wait_s`` per instance, then the exponential-tail
  percentile), with the pool's full arrival CV. The simulated router is join-the-shortest-
  queue, so the instances share one queue (a G/G/c system): the wait is far shorter, most of
  all for bursty arrivals, where the per-instance Kingman term keeps the whole pool's CV.
  Evidence: ``test_model_assumptions_reproduced`` below simulates the same plans with the
  model's own assumptions (random routing = independent per-instance queues, Poisson,
  constant lengths) and every TTFT p95 is within ±25 %; replacing the Kingman wait by
  ``allen_cunneen_wait_s(instances, …)`` brings the disaggregated Poisson cases within ±15 %
  of the JSQ simulation (see the report of issue #6). The remaining conservatism with
  variable prompt lengths comes from TTFT_q = q-quantile own prefill (ceil(s_q/room) *full*
  mixed steps) + q-quantile wait, a sum of two quantiles.
* ``CLUSTERED_MIXED_STEPS`` (TPOT, analytic below the simulation): the model's TPOT tail is
  the binomial upper quantile of the share of a request's Ō gaps that land on a mixed/prefill
  step, with gaps independent. In the simulation those steps come in runs — a prompt spans
  ⌈S/room⌉ consecutive steps, a queue of prompts keeps every step mixed for a whole busy
  period, and bursts make both longer — and short outputs have fewer gaps than Ō, so the
  spread of the share across requests is larger than binomial.

Run ``pytest -s tests/simulate/test_sim_matrix.py`` to see the tables.
"""

from __future__ import annotations

import pytest

from advisor.core.simulate import ColocatedSimPlan, SimulationResult, simulate
from tests.simulate.helpers import MATRIX, idealised, model, scenario

REQUESTS = 8000
SEED = 7
TOLERANCE = 0.25

POOLED_QUEUE = "POOLED_QUEUE"
CLUSTERED_MIXED_STEPS = "CLUSTERED_MIXED_STEPS"

TPOT_CLUSTERED = {
    # (scenario, mode): bursty or long-prompt heavy cases whose TPOT p95 spread exceeds the
    # binomial one (measured −20 … −46 % at the time of writing).
    ("s06-8b-long-bursty", "chunked"),
    ("s06-8b-long-bursty", "disaggregated"),
    ("s08-32b-short-bursty", "chunked"),
    ("s11-70b-long-bursty", "chunked"),
    ("s12-70b-long-heavy", "chunked"),
}
IDEAL_TPOT_CLUSTERED = {
    # With Poisson arrivals and constant lengths only the queue busy periods cluster.
    ("s05-8b-long-heavy", "unchunked"),
    ("s09-32b-long-heavy", "unchunked"),
    ("s12-70b-long-heavy", "chunked"),
    ("s12-70b-long-heavy", "unchunked"),
}


def _queue_instances(res: SimulationResult) -> int:
    plan = res.plan
    if isinstance(plan, ColocatedSimPlan):
        return plan.instances
    return plan.prefill_instances


def _pct(x: float | None) -> str:
    return "   n/a" if x is None else f"{x * 100:+5.0f}%"


def _verdict(diff: float | None, allowed: str | None, analytic_high: bool) -> tuple[bool, str]:
    """(acceptable, label) for one relative difference (analytic − simulated) / simulated."""
    if diff is None:
        return False, "MISSING"
    if abs(diff) <= TOLERANCE:
        return True, "ok"
    if allowed is None:
        return False, "OUTSIDE"
    right_way = diff > 0 if analytic_high else diff < 0
    return right_way, allowed if right_way else f"{allowed}?wrong-direction"


def _row(name: str, res: SimulationResult, tpot_allowed: set[tuple[str, str]]
         ) -> tuple[bool, str]:
    ph = res.overall
    ttft, tpot = ph.ttft_ms[1], ph.tpot_ms[1]
    pooled = POOLED_QUEUE if _queue_instances(res) > 1 else None
    ok1, v1 = _verdict(ttft.relative_diff, pooled, analytic_high=True)
    clustered = CLUSTERED_MIXED_STEPS if (name, res.mode) in tpot_allowed else None
    ok2, v2 = _verdict(tpot.relative_diff, clustered, analytic_high=False)
    line = (f"{name:26s} {res.mode:13s} {_queue_instances(res):3d} "
            f"{ttft.simulated:9.1f} {ttft.analytic or float('nan'):9.1f} "
            f"{_pct(ttft.relative_diff)} {v1:22s} "
            f"{tpot.simulated:7.1f} {tpot.analytic or float('nan'):7.1f} "
            f"{_pct(tpot.relative_diff)} {v2}")
    return ok1 and ok2, line


HEADER = (f"{'scenario':26s} {'mode':13s} {'n':>3s} {'TTFT95sim':>9s} {'TTFT95ana':>9s} "
          f"{'diff':>6s} {'verdict':22s} {'TPOT95s':>7s} {'TPOT95a':>7s} {'diff':>6s} verdict")


def test_matrix_has_enough_scenarios() -> None:
    assert len(MATRIX) >= 12
    models = {scenario(n).model.name for n in MATRIX}
    assert len(models) >= 3
    assert {p.burstiness > 1.0 for n in MATRIX for p in scenario(n).phases} == {True, False}


def test_analytic_percentiles_against_simulation() -> None:
    lines, bad = [HEADER], []
    for name in MATRIX:
        for mode in ("chunked", "disaggregated"):
            res = simulate(scenario(name), mode, REQUESTS, SEED, model=model(name))
            ok, line = _row(name, res, TPOT_CLUSTERED)
            lines.append(line)
            if not ok:
                bad.append(line)
            # finite-window Little's law: edge error O(L / requests); 2 % is checked on longer
            # runs in test_sim_engine.py
            assert res.little.relative_error < 0.05, (name, mode, res.little)
    print("\nanalytic vs simulated p95 (ms), JSQ routing, "
          f"{REQUESTS} requests, seed {SEED}; n = instances sharing the prompt queue\n"
          + "\n".join(lines))
    assert not bad, "outside ±25 % without a documented reason:\n" + "\n".join(bad)


def test_model_assumptions_reproduced() -> None:
    """Poisson, constant lengths, random routing: the model's own assumptions.

    Every TTFT p95 and TPOT p50 then agrees within ±25 % (TPOT p95 only where mixed steps do
    not cluster), which locates the discrepancies of the main matrix in routing, burstiness
    and length variability, not in the step times or the simulator.
    """
    lines, bad = [HEADER], []
    for name in MATRIX:
        sc = idealised(scenario(name))
        for mode in ("chunked", "unchunked", "disaggregated"):
            res = simulate(sc, mode, 5000, SEED, model=model(name), routing="random")
            ok, line = _row(name, res, IDEAL_TPOT_CLUSTERED)
            median = res.overall.tpot_ms[0].relative_diff
            ok = ok and median is not None and abs(median) <= 0.1
            lines.append(f"{line}  TPOT50 {_pct(median)}")
            if not ok:
                bad.append(line)
    print("\nidealised (Poisson, constant lengths, random routing), 5000 requests\n"
          + "\n".join(lines))
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("name", ["s02-8b-short-heavy", "s12-70b-long-heavy"])
def test_pooling_explains_the_ttft_gap(name: str) -> None:
    """Random routing (independent per-instance queues) moves the TTFT toward the model."""
    sc, r = scenario(name), model(name)
    jsq = simulate(sc, "disaggregated", 5000, SEED, model=r)
    rnd = simulate(sc, "disaggregated", 5000, SEED, model=r, routing="random")
    analytic = jsq.overall.ttft_ms[1].analytic
    assert analytic is not None
    assert jsq.overall.ttft_ms[1].simulated < rnd.overall.ttft_ms[1].simulated
    assert abs(rnd.overall.ttft_ms[1].relative_diff or 0.0) < abs(
        jsq.overall.ttft_ms[1].relative_diff or 0.0)
