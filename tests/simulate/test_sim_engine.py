"""The simulator's event loops against exact cases, queueing theory and their own bookkeeping."""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest

from advisor.core.disaggregated import kv_path, request_path_s
from advisor.core.distributions import LengthDistribution
from advisor.core.kv_transfer import transfer_seconds
from advisor.core.simulate import (
    MAX_REQUESTS,
    ColocatedSimPlan,
    DisaggregatedSimPlan,
    PlanError,
    simulate,
)
from advisor.core.simulate.arrivals import draw_trace
from advisor.core.simulate.engine import RUN, STEP, EnginePool
from advisor.core.simulate.plan import build_deployment
from tests.simulate.helpers import model, raw_run, scenario

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
    ("chunked", ColocatedSimPlan(tensor_parallel=1, pipeline_stages=1, instances=1,
                                 chunk_tokens=4096)),
    ("unchunked", ColocatedSimPlan(tensor_parallel=1, pipeline_stages=1, instances=1,
                                   chunk_tokens=None)),
])
def test_isolated_requests_colocated(mode: str, plan: ColocatedSimPlan) -> None:
    """Requests 10 s apart never meet: TTFT is one prefill step, TPOT one decode step."""
    sc = _fixed("s01-8b-short-light", rate=0.1, burstiness=0.0)
    res = simulate(sc, mode, None, 1, plan=plan)  # type: ignore[arg-type]
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
    plan = DisaggregatedSimPlan(prefill_tensor_parallel=2, prefill_pipeline_stages=1,
                                prefill_instances=1, decode_tensor_parallel=2,
                                decode_pipeline_stages=1, decode_instances=1)
    res = simulate(sc, "disaggregated", 200, 1, plan=plan)
    dep = build_deployment(sc, "disaggregated", plan)
    pre, dec = dep.pools
    t_pre = float(pre.instance.prefill_time_s(PROMPT))
    assert dep.link is not None
    path = kv_path(dep.link, pre.instance, dec.instance)
    exposed, _ = transfer_seconds(PROMPT * path.bytes_per_token, dep.link, path.nics, t_pre,
                                  pre.instance.model.num_layers, layer_wise=path.layer_wise)
    ttft = (t_pre + float(exposed) + request_path_s(pre.instance)) * 1000
    tpot = float(dec.instance.decode_step_s(1, PROMPT + 1 + (OUTPUT - 2) / 2)) * 1000
    assert res.overall.ttft_ms[1].simulated == pytest.approx(ttft, rel=5e-3)
    assert res.overall.tpot_ms[1].simulated == pytest.approx(tpot, rel=2e-3)
    assert res.kv_link_utilization is not None and 0 < res.kv_link_utilization.simulated < 0.01


def test_prefill_queue_is_md1() -> None:
    """One prefill instance, one prompt per pass, Poisson: the M/D/1 mean wait and P(wait)."""
    sc = _fixed("s07-32b-short-light", rate=1.0, burstiness=1.0, output=1)
    plan = DisaggregatedSimPlan(prefill_tensor_parallel=2, prefill_pipeline_stages=1,
                                prefill_instances=1, decode_tensor_parallel=2,
                                decode_pipeline_stages=1, decode_instances=1,
                                prefill_batch_tokens=PROMPT)
    dep = build_deployment(sc, "disaggregated", plan)
    pre, dec = dep.pools
    service = float(pre.instance.prefill_time_s(PROMPT))
    rho = 0.7
    sc = _fixed("s07-32b-short-light", rate=rho / service, burstiness=1.0, output=1)
    dep = build_deployment(sc, "disaggregated", plan)
    trace = draw_trace(sc.phases, 40_000, 11)
    raw = raw_run(sc, "disaggregated", plan, trace)
    assert dep.link is not None
    path = kv_path(dep.link, pre.instance, dec.instance)
    exposed, _ = transfer_seconds(PROMPT * path.bytes_per_token, dep.link, path.nics, service,
                                  pre.instance.model.num_layers, layer_wise=path.layer_wise)
    hop = request_path_s(pre.instance) - pre.instance.efficiency.request_overhead_s
    wait = (raw.first_token_s - trace.arrival_s) - service - float(exposed) - hop
    wait = wait[2000:]
    md1 = rho / (2 * (1 - rho)) * service
    assert float(wait.mean()) == pytest.approx(md1, rel=0.08)
    # (the pass time is read at 1,002 tokens: the 8-significant-bit bucket of 1,000)
    assert float((wait > 0.01 * service).mean()) == pytest.approx(rho, abs=0.02)


def test_littles_law_on_long_runs() -> None:
    """Runs twice the sized length: Little's law over the measurement window within 2 %."""
    for name, mode in [("s01-8b-short-light", "chunked"), ("s06-8b-long-bursty", "unchunked"),
                       ("s12-70b-long-heavy", "disaggregated")]:
        sized = simulate(scenario(name), mode, None, 3, model=model(name))  # type: ignore[arg-type]
        res = simulate(scenario(name), mode, 2 * sized.requests_planned, 3,  # type: ignore[arg-type]
                       model=model(name))
        assert res.reached
        assert res.little.relative_error < 0.02, (name, mode, res.little)


def test_same_seed_same_result_other_seed_other_result() -> None:
    sc, r = scenario("s03-8b-short-bursty"), model("s03-8b-short-bursty")
    a = simulate(sc, "chunked", 3000, 5, model=r)
    b = simulate(sc, "chunked", 3000, 5, model=r)
    c = simulate(sc, "chunked", 3000, 6, model=r)
    assert a == b
    assert a.overall.ttft_ms != c.overall.ttft_ms


def _concurrency(raw: object) -> int:
    """Most requests between first token and completion at once."""
    first, done = raw.first_token_s, raw.done_s  # type: ignore[attr-defined]
    n = first.size
    events = np.concatenate([np.stack([first, np.ones(n)], 1), np.stack([done, -np.ones(n)], 1)])
    events = events[np.lexsort((events[:, 1], events[:, 0]))]
    return int(np.cumsum(events[:, 1]).max())


def test_max_num_seqs_bounds_concurrency() -> None:
    """No more than max_num_seqs requests run on an instance at once (first token ≥
    admission, so [first token, done) intervals under-count the running set)."""
    sc = scenario("s02-8b-short-heavy")
    plan = ColocatedSimPlan(tensor_parallel=1, pipeline_stages=1, instances=1, chunk_tokens=2048)
    ph = dataclasses.replace(sc.phases[0], rate_rps=30.0)
    trace = draw_trace((ph,), 3000, 2)
    raw = raw_run(sc, "chunked", plan, trace, max_num_seqs=12)
    assert _concurrency(raw) <= 12
    assert not np.isnan(raw.done_s).any()
    free = raw_run(sc, "chunked", plan, trace)
    assert _concurrency(free) > 12  # the cap is what held it


@pytest.mark.parametrize(("mode", "plan"), [
    ("chunked", ColocatedSimPlan(tensor_parallel=1, pipeline_stages=1, instances=1,
                                 chunk_tokens=2048)),
    ("unchunked", ColocatedSimPlan(tensor_parallel=1, pipeline_stages=1, instances=1,
                                   chunk_tokens=None)),
    ("disaggregated", DisaggregatedSimPlan(prefill_tensor_parallel=1, prefill_pipeline_stages=1,
                                           prefill_instances=1, decode_tensor_parallel=1,
                                           decode_pipeline_stages=1, decode_instances=1)),
])
def test_kv_blocks_run_out_preempt_and_recompute(mode: str, plan: object,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A cache of 40,000 tokens for 3,000-token requests: admission and growth run out of
    blocks, the newest requests are preempted and recomputed, and every request still
    finishes with a sensible timeline. After every scheduling decision the blocks the
    instance will hold at the end of what it started fit in the cache."""
    checked = [0]
    original = EnginePool.start

    def start(self: EnginePool, i: int, t: float) -> None:
        original(self, i, t)
        st = self.insts[i]
        if st.kind == RUN:
            k_end = st.k + st.m
        elif st.kind == STEP:
            k_end = st.k + (1 if st.has_dec else 0)
        else:
            return
        used = st.pblocks + (self.dec_blocks(st, k_end) if st.D else 0)
        assert used <= self.cap, (used, self.cap)
        checked[0] += 1

    monkeypatch.setattr(EnginePool, "start", start)
    sc = _fixed("s01-8b-short-light", rate=4.0, burstiness=1.0, prompt=2000, output=1000)
    trace = draw_trace(sc.phases, 1500, 5)
    raw = raw_run(sc, mode, plan, trace, kv_tokens=40_000)
    assert checked[0] > 1000
    assert raw.preemptions > 0
    assert not np.isnan(raw.done_s).any()
    assert np.all(raw.first_token_s > trace.arrival_s)
    assert np.all(raw.done_s > raw.first_token_s)


def test_overload_is_detected_and_gives_no_verdict() -> None:
    sc = scenario("s04-8b-long-light")
    ph = dataclasses.replace(sc.phases[0], rate_rps=sc.phases[0].rate_rps * 8)
    hot = dataclasses.replace(sc, phases=(ph,))
    res = simulate(hot, "chunked", None, 1, model=model("s04-8b-long-light"))
    assert res.overall.analytic_overloaded is True
    assert res.overall.ttft_ms[1].analytic is None
    st = res.overall.steady_state
    assert st is not None and st.overloaded and not st.reached
    assert res.overall.goodput_share is None
    assert st.growth is not None and st.growth > 0.1
    assert res.overall.throughput_rps.simulated < 0.9 * ph.rate_rps
    assert res.stopped  # not drained: its measured requests would never all finish


def test_every_request_has_a_sensible_timeline() -> None:
    sc = scenario("s09-32b-long-heavy")
    trace = draw_trace(sc.phases, 3000, 4)
    raw = raw_run(sc, "disaggregated", DisaggregatedSimPlan(prefill_tensor_parallel=2,
                                                            prefill_pipeline_stages=1,
                                                            prefill_instances=3,
                                                            decode_tensor_parallel=2,
                                                            decode_pipeline_stages=1,
                                                            decode_instances=1), trace)
    assert np.all(raw.first_token_s > trace.arrival_s)
    assert np.all(raw.done_s >= raw.first_token_s)
    multi = trace.output_tokens > 1
    assert np.all(raw.done_s[multi] > raw.first_token_s[multi])
    assert raw.counters.busy_gpu_s > 0 and raw.counters.link_busy_s > 0


def test_plan_and_argument_errors() -> None:
    sc, r = scenario("s01-8b-short-light"), model("s01-8b-short-light")
    with pytest.raises(PlanError):
        simulate(sc, "chunked", 100, 0, plan=DisaggregatedSimPlan(prefill_tensor_parallel=1,
                                                                  prefill_pipeline_stages=1,
                                                                  prefill_instances=1,
                                                                  decode_tensor_parallel=1,
                                                                  decode_pipeline_stages=1,
                                                                  decode_instances=1))
    with pytest.raises(PlanError):
        simulate(sc, "unchunked", 100, 0, plan=ColocatedSimPlan(tensor_parallel=1,
                                                                pipeline_stages=1, instances=1,
                                                                chunk_tokens=512))
    with pytest.raises(ValueError, match="unknown mode 'sideways'"):
        simulate(sc, "sideways", 100, 0, model=r)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="simulate between 10 and"):
        simulate(sc, "chunked", 5, 0, model=r)
    with pytest.raises(ValueError, match="simulate between 10 and"):
        simulate(sc, "chunked", MAX_REQUESTS + 1, 0, model=r)
    with pytest.raises(ValueError, match="unknown router 'magic'"):
        simulate(sc, "chunked", 100, 0, model=r, router="magic")  # type: ignore[arg-type]


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
    res = simulate(sc, "chunked", None, 2, model=r)
    assert [p.name for p in res.phases] == ["day", "night"]
    assert res.overall.name == "all" and res.overall.ttft_ms[1].analytic is None
    day, night = res.phases
    assert day.ttft_ms[1].analytic is not None and night.ttft_ms[1].analytic is not None
    # each phase sized for its own steady state, and measured after its own warm-up
    for ph in (day, night):
        st = ph.steady_state
        assert st is not None and st.reached, st
        assert ph.requests >= st.completions_needed
        assert ph.throughput_rps.simulated == pytest.approx(ph.rate_rps, rel=0.1)
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
