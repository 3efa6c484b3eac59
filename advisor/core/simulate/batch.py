"""A finite batch — N requests at t = 0 — simulated, and the analytic model's figures for
exactly the simulated plan (``advisor.core.finite_batch``), its check (#30).

The simulated run is the ordinary event loop (``colocated_sim`` / ``disaggregated_sim``, the
same engines, paged KV and routing) on a replayed trace whose arrivals are all 0: one segment
whose measurement window is [0, 0] with no warm-up, so every request is measured; no steady
state is asked of it (a batch has none), and the drain after the last arrival may last 50
analytic makespans. Lengths are drawn from the phase's distributions with ``seed``. The
makespan is the last completion; TTFT and TPOT percentiles are the recorder's histograms (within
0.025 % of the order statistics), their means the histograms' bin-centre means.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from advisor.core.finite_batch import QUANTILES, BatchFigures, colocated_batch, disaggregated_batch
from advisor.core.scenario import Scenario, TrafficPhase
from advisor.core.simulate.arrivals import ArraySource, Trace, draw_lengths
from advisor.core.simulate.colocated_sim import KvSpec, run_colocated
from advisor.core.simulate.disaggregated_sim import run_disaggregated
from advisor.core.simulate.feed import Feed
from advisor.core.simulate.metrics import GapStats
from advisor.core.simulate.plan import (
    ColocatedSimPlan,
    Deployment,
    Mode,
    Plan,
    build_deployment,
    engine_block_tokens,
    engine_max_num_seqs,
)
from advisor.core.simulate.recorder import LogHistogram, Recorder
from advisor.core.simulate.steady import IN_FLIGHT_LIMIT
from advisor.core.simulate.steptime import StepTimes


def prefill_pass_cap(sc: Scenario, longest: int) -> int:
    """Tokens an unchunked prefill pass may hold (the simulator's cap: the context window)."""
    return max(int(sc.model.max_context_tokens), longest)


def predict_batch(sc: Scenario, dep: Deployment, phase_index: int, requests: int
                  ) -> BatchFigures:
    """The analytic figures of ``requests`` sent at once to ``dep`` (the phase's lengths)."""
    ph = sc.phases[phase_index]
    q = sc.slo.quantile
    prompt = ph.computed_prompt_tokens
    if isinstance(dep.plan, ColocatedSimPlan):
        pool = dep.pools[0]
        cap = prefill_pass_cap(sc, int(sc.model.max_context_tokens))
        return colocated_batch(pool.instance, pool.instances,
                               engine_max_num_seqs(pool.instance), float(pool.kv_tokens),
                               requests, prompt, ph.output_tokens, dep.plan.chunk_tokens, cap,
                               ph.prompt_tokens.mean, q)
    pre, dec = dep.pools
    assert dep.link is not None
    wire = pre.instance.kv_bytes_per_token_wire / (pre.instance.gpus
                                                  * dep.link.effective_bytes_per_s)
    return disaggregated_batch(pre.instance, pre.instances, dep.prefill_batch_tokens[phase_index],
                               dec.instance, dec.instances, engine_max_num_seqs(dec.instance),
                               float(dec.kv_tokens), requests, prompt, ph.output_tokens, wire,
                               dep.link.transfer_setup_s, ph.prompt_tokens.mean, q)


def _hist_mean(h: LogHistogram) -> float:
    from advisor.core.simulate.recorder import BINS_PER_E, HIST_FLOOR_MS

    if h.n == 0:
        return 0.0
    centres = HIST_FLOOR_MS * np.exp((h.lo + np.arange(h.counts.size) + 0.5) / BINS_PER_E)
    return float((centres * h.counts).sum() / h.n)


def simulate_batch(sc: Scenario, mode: Mode, plan: Plan, requests: int, seed: int = 0,
                   phase_index: int = 0) -> BatchFigures:
    """Simulate ``requests`` sent at t = 0 to ``plan`` (module docstring)."""
    ph: TrafficPhase = sc.phases[phase_index]
    one = dataclasses.replace(sc, phases=(dataclasses.replace(ph, share=1.0),))
    dep = build_deployment(one, mode, plan)
    predicted = predict_batch(one, dep, 0, requests)
    rng = np.random.default_rng(seed)
    prompts = draw_lengths(rng, ph.prompt_tokens, requests)
    outputs = draw_lengths(rng, ph.output_tokens, requests)
    trace = Trace(arrival_s=np.zeros(requests), prompt_tokens=prompts, output_tokens=outputs,
                  phase=np.zeros(requests, dtype=np.int16), phase_names=(ph.name,))
    source = ArraySource(trace, np.zeros(requests, dtype=np.int32), (0,), ((0.0, 0.0),))
    dec_pool = dep.pools[-1]
    inst = dec_pool.instance
    block = engine_block_tokens(inst)
    kv = KvSpec(capacity_blocks=max(1, dec_pool.kv_tokens // block), block_tokens=block,
                max_num_seqs=engine_max_num_seqs(inst))
    longest = int(min(float(sc.model.max_context_tokens), (kv.capacity_blocks - 1) * block))
    top = min(float((prompts + outputs).max()), float(longest))
    overhead = dep.pools[0].instance.efficiency.request_overhead_s
    horizon = max(predicted.makespan_s, 1e-3)
    rec = Recorder((0,), 1, [0.0], overhead, sc.slo.ttft_ms, sc.slo.tpot_ms, horizon,
                   ((0.0, 0.0),))
    feed = Feed(source, rec, None, longest, [horizon], IN_FLIGHT_LIMIT)
    gaps = GapStats()
    if isinstance(plan, ColocatedSimPlan):
        pool = dep.pools[0]
        counters = run_colocated(feed, StepTimes(pool.instance, top), pool.instances,
                                 pool.instance.gpus, plan.chunk_tokens, kv,
                                 prefill_pass_cap(sc, longest), gaps)
    else:
        pre, dec = dep.pools
        counters = run_disaggregated(feed, dep, StepTimes(pre.instance, top),
                                     StepTimes(dec.instance, top), kv, gaps)
    if counters.stopped:
        raise RuntimeError(f"the simulated batch did not finish: {counters.stopped}")
    fig = rec.figures(0)
    qs = (*QUANTILES, sc.slo.quantile)
    tt = [fig.ttft.quantile(q) or 0.0 for q in qs]
    tp = [fig.tpot.quantile(q) or 0.0 for q in qs]
    return BatchFigures(requests=requests, makespan_s=counters.end_s - counters.start_s,
                        ttft_ms=(tt[0], tt[1], tt[2]), tpot_ms=(tp[0], tp[1], tp[2]),
                        ttft_mean_ms=_hist_mean(fig.ttft), tpot_mean_ms=_hist_mean(fig.tpot),
                        ttft_at_slo_ms=tt[3], tpot_at_slo_ms=tp[3],
                        output_tokens=float(outputs.sum()))
