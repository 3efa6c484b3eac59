"""The simulator's event loops against exact cases, queueing theory and their own bookkeeping."""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest

from advisor.core.distributions import LengthDistribution
from advisor.core.kv_transfer import transfer_seconds
from advisor.core.simulate import ColocatedSimPlan, DisaggregatedSimPlan, PlanError, simulate
from advisor.core.simulate.arrivals import draw_trace, phase_counts
from advisor.core.simulate.colocated_sim import run_colocated
from advisor.core.simulate.disaggregated_sim import run_disaggregated
from advisor.core.simulate.plan import build_deployment
from advisor.core.simulate.steptime import StepTimes
from tests.simulate.helpers import model, scenario

PROMPT, OUTPUT = 1000, 10


def _fixed(name: str, rate: float, burstiness: float, prompt: int = PROMPT,
           output: int = OUTPUT):
    """A test scenario with one phase of constant lengths at ``rate``."""
    sc = scenario(name)
    ph = dataclasses.replace(sc.phases[0], rate_rps=rate, burstiness=burstiness,
                             prompt_tokens=LengthDistribution.constant(prompt),
                             output_tokens=LengthDistribution.constant(output))
    return dataclasses.replace(sc, phases=(ph,))


@pytest.mark.parametrize(("mode", "plan"), [
    ("chunked", ColocatedSimPlan(1, 1, 1, 4096)),
    ("unchunked", ColocatedSimPlan(1, 1, 1, None)),
])
def test_isolated_requests_colocated(mode: str, plan: ColocatedSimPlan) -> None:
    """Requests 10 s apart never meet: TTFT is one prefill step, TPOT one decode step."""
    sc = _fixed("s01-8b-short-light", rate=0.1, burstiness=0.0)
    res = simulate(sc, mode, 200, 1, plan=plan, warmup=0.0)  # type: ignore[arg-type]
    inst = build_deployment(sc, mode, plan).pools[0].instance  # type: ignore[arg-type]
    ttft = (float(inst.prefill_time_s(PROMPT)) + inst.efficiency.request_overhead_s) * 1000
    # m = O − 1 decode steps at the mid-run context S + 1 + (m − 1)/2
    tpot = float(inst.decode_step_s(1, PROMPT + 1 + (OUTPUT - 2) / 2)) * 1000
    for c in res.overall.ttft_ms:
        assert c.simulated == pytest.approx(ttft, rel=5e-3)
    for c in res.overall.tpot_ms:
        assert c.simulated == pytest.approx(tpot, rel=2e-3)
    assert res.overall.goodput_share == 1.0


def test_isolated_requests_disaggregated() -> None:
    """Prefill pass + exposed layer-wise KV transfer + setup; then batch-1 decode steps."""
    sc = _fixed("s07-32b-short-light", rate=0.1, burstiness=0.0)
    plan = DisaggregatedSimPlan(2, 1, 1, 2, 1, 1)
    res = simulate(sc, "disaggregated", 200, 1, plan=plan, warmup=0.0)
    dep = build_deployment(sc, "disaggregated", plan)
    pre, dec = dep.pools
    t_pre = float(pre.instance.prefill_time_s(PROMPT))
    assert dep.link is not None
    exposed, _ = transfer_seconds(PROMPT * pre.instance.kv_bytes_per_token_wire, dep.link,
                                  pre.instance.gpus, t_pre, pre.instance.model.num_layers)
    ttft = (t_pre + float(exposed) + pre.instance.efficiency.request_overhead_s) * 1000
    tpot = float(dec.instance.decode_step_s(1, PROMPT + 1 + (OUTPUT - 2) / 2)) * 1000
    assert res.overall.ttft_ms[1].simulated == pytest.approx(ttft, rel=5e-3)
    assert res.overall.tpot_ms[1].simulated == pytest.approx(tpot, rel=2e-3)
    assert res.kv_link_utilization is not None and 0 < res.kv_link_utilization.simulated < 0.01


def test_prefill_queue_is_md1() -> None:
    """One prefill instance, one prompt per pass, Poisson: the M/D/1 mean wait and P(wait)."""
    sc = _fixed("s07-32b-short-light", rate=1.0, burstiness=1.0, output=1)
    plan = DisaggregatedSimPlan(2, 1, 1, 2, 1, 1, prefill_batch_tokens=PROMPT)
    dep = build_deployment(sc, "disaggregated", plan)
    pre, dec = dep.pools
    service = float(pre.instance.prefill_time_s(PROMPT))
    rho = 0.7
    sc = _fixed("s07-32b-short-light", rate=rho / service, burstiness=1.0, output=1)
    dep = build_deployment(sc, "disaggregated", plan)
    trace = draw_trace(sc.phases, 40_000, 11)
    raw = run_disaggregated(trace, dep, StepTimes(pre.instance, 2000),
                            StepTimes(dec.instance, 2000))
    assert dep.link is not None
    exposed, _ = transfer_seconds(PROMPT * pre.instance.kv_bytes_per_token_wire, dep.link,
                                  pre.instance.gpus, service, pre.instance.model.num_layers)
    wait = (raw.first_token_s - trace.arrival_s) - service - float(exposed)
    wait = wait[2000:]
    md1 = rho / (2 * (1 - rho)) * service
    assert float(wait.mean()) == pytest.approx(md1, rel=0.08)
    # (the pass time is read at 1,002 tokens: the 8-significant-bit bucket of 1,000)
    assert float((wait > 0.01 * service).mean()) == pytest.approx(rho, abs=0.02)


def test_littles_law_on_long_runs() -> None:
    for name, mode in [("s01-8b-short-light", "chunked"), ("s06-8b-long-bursty", "unchunked"),
                       ("s12-70b-long-heavy", "disaggregated")]:
        res = simulate(scenario(name), mode, 20_000, 3, model=model(name))  # type: ignore[arg-type]
        assert res.little.relative_error < 0.02, (name, mode, res.little)


def test_same_seed_same_result_other_seed_other_result() -> None:
    sc, r = scenario("s03-8b-short-bursty"), model("s03-8b-short-bursty")
    a = simulate(sc, "chunked", 3000, 5, model=r)
    b = simulate(sc, "chunked", 3000, 5, model=r)
    c = simulate(sc, "chunked", 3000, 6, model=r)
    assert a == b
    assert a.overall.ttft_ms != c.overall.ttft_ms


def test_memory_cap_bounds_concurrency() -> None:
    """No more than max_sequences requests are past admission on an instance at once."""
    sc = scenario("s02-8b-short-heavy")
    plan = ColocatedSimPlan(1, 1, 1, 2048)
    dep = build_deployment(sc, "chunked", plan)
    ph = dataclasses.replace(sc.phases[0], rate_rps=30.0)
    trace = draw_trace((ph,), 3000, 2)
    pool = dep.pools[0]
    cap = 12
    raw = run_colocated(trace, StepTimes(pool.instance, 40_000), 1, 1, 2048, (cap,), 10**6)
    # first token ≥ admission, so [first token, done) intervals under-count the admitted set
    events = np.concatenate([np.stack([raw.first_token_s, np.ones(trace.requests)], 1),
                             np.stack([raw.done_s, -np.ones(trace.requests)], 1)])
    events = events[np.lexsort((events[:, 1], events[:, 0]))]
    assert int(np.cumsum(events[:, 1]).max()) <= cap
    assert not np.isnan(raw.done_s).any()


def test_overload_still_finishes_and_is_flagged() -> None:
    sc = scenario("s04-8b-long-light")
    ph = dataclasses.replace(sc.phases[0], rate_rps=sc.phases[0].rate_rps * 8)
    hot = dataclasses.replace(sc, phases=(ph,))
    res = simulate(hot, "chunked", 2000, 1, model=model("s04-8b-long-light"))
    assert res.overall.analytic_overloaded is True
    assert res.overall.ttft_ms[1].analytic is None
    assert res.overall.throughput_rps.simulated < ph.rate_rps
    assert res.overall.ttft_ms[2].simulated > 10 * 1000


def test_every_request_has_a_sensible_timeline() -> None:
    sc = scenario("s09-32b-long-heavy")
    dep = build_deployment(sc, "disaggregated", DisaggregatedSimPlan(2, 1, 3, 2, 1, 1))
    trace = draw_trace(sc.phases, 3000, 4)
    pre, dec = dep.pools
    raw = run_disaggregated(trace, dep, StepTimes(pre.instance, 40_000),
                            StepTimes(dec.instance, 40_000))
    assert np.all(raw.first_token_s > trace.arrival_s)
    assert np.all(raw.done_s >= raw.first_token_s)
    multi = trace.output_tokens > 1
    assert np.all(raw.done_s[multi] > raw.first_token_s[multi])
    assert raw.busy_gpu_s > 0 and raw.link_busy_s > 0


def test_plan_and_argument_errors() -> None:
    sc, r = scenario("s01-8b-short-light"), model("s01-8b-short-light")
    with pytest.raises(PlanError):
        simulate(sc, "chunked", 100, 0, plan=DisaggregatedSimPlan(1, 1, 1, 1, 1, 1))
    with pytest.raises(PlanError):
        simulate(sc, "unchunked", 100, 0, plan=ColocatedSimPlan(1, 1, 1, 512))
    with pytest.raises(ValueError, match="unknown mode 'sideways'"):
        simulate(sc, "sideways", 100, 0, model=r)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="simulate at least 10 requests"):
        simulate(sc, "chunked", 5, 0, model=r)
    with pytest.raises(ValueError, match="unknown routing 'magic'"):
        simulate(sc, "chunked", 100, 0, model=r, routing="magic")  # type: ignore[arg-type]


def test_default_plan_reproduces_model_result() -> None:
    """The analytic figures beside the simulation are evaluate()'s for the default plan."""
    for name in ("s05-8b-long-heavy", "s10-70b-short-heavy"):
        r = model(name)
        for mode, plan in (("chunked", r.colocated), ("unchunked", r.unchunked),
                           ("disaggregated", r.disaggregated)):
            assert plan is not None
            res = simulate(scenario(name), mode, 500, 0, model=r)  # type: ignore[arg-type]
            ttft, tpot = res.overall.at_slo_percentile
            assert ttft.analytic == pytest.approx(plan.ttft_ms, rel=1e-9), (name, mode)
            assert tpot.analytic == pytest.approx(plan.tpot_ms, rel=1e-9), (name, mode)


def test_phases_run_in_order_with_their_own_traffic() -> None:
    sc, r = scenario("phases-8b"), model("phases-8b")
    res = simulate(sc, "chunked", 6000, 2, model=r)
    assert [p.name for p in res.phases] == ["day", "night"]
    assert res.overall.name == "all" and res.overall.ttft_ms[1].analytic is None
    day, night = res.phases
    assert day.ttft_ms[1].analytic is not None and night.ttft_ms[1].analytic is not None
    # requests ∝ share × rate: 0.6·40 : 0.4·8 (the warm-up share is taken from the day)
    assert phase_counts(sc.phases, 6000) == [5294, 706]
    assert (day.requests, night.requests) == (5294 - 300, 706)
    trace = draw_trace(sc.phases, 6000, 2)
    tags = trace.phase
    assert np.all(np.diff(tags) >= 0)
    for idx, ph in enumerate(sc.phases):
        t = trace.arrival_s[tags == idx]
        assert (t.size - 1) / (t[-1] - t[0]) == pytest.approx(ph.rate_rps, rel=0.1)
        assert trace.prompt_tokens[tags == idx].mean() == pytest.approx(
            ph.prompt_tokens.mean, rel=0.1)
    # long night prompts: slower first tokens than the day's
    assert night.ttft_ms[1].simulated > 2 * day.ttft_ms[1].simulated


def test_progress_callback_reaches_total() -> None:
    seen: list[tuple[int, int]] = []
    simulate(scenario("s01-8b-short-light"), "disaggregated", 1000, 0,
             model=model("s01-8b-short-light"), progress=lambda d, t: seen.append((d, t)))
    assert seen[-1] == (1000, 1000)
    assert all(b[0] >= a[0] for a, b in itertools.pairwise(seen))
    assert len(seen) > 10


def test_nan_free_results() -> None:
    res = simulate(scenario("s13-mixtral-short-medium"), "unchunked", 2000, 0,
                   model=model("s13-mixtral-short-medium"))
    for c in (*res.overall.ttft_ms, *res.overall.tpot_ms):
        assert c.simulated is not None and math.isfinite(c.simulated)
    assert 0 < res.gpu_busy_share <= 1.0


def test_memory_admission_follows_each_requests_phase() -> None:
    """A static allocation across phases: day requests fill the decode memory by day shares."""
    name = "phases-70b"
    res = simulate(scenario(name), "disaggregated", 8000, 1, model=model(name))
    dep = build_deployment(scenario(name), "disaggregated", res.plan)
    _, night_cap = dep.pools[1].max_sequences
    day = res.phases[0]
    assert day.decode_batch.analytic is not None and day.decode_batch.analytic > night_cap
    assert day.decode_batch.simulated == pytest.approx(day.decode_batch.analytic, rel=0.1)
    tpot = day.tpot_ms[1]
    assert tpot.relative_diff is not None and abs(tpot.relative_diff) < 0.25
