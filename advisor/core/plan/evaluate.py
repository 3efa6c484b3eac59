"""Scenario → ModelResult: one design point in full detail, the best plans chosen.

A thin caller of the engine: the shapes, per-instance capacities and goodput tables come
from :class:`~advisor.core.plan.capacities.Capacities` (the tables ``evaluate_points`` and
the boundary searches read), the integer and static splits from
:mod:`~advisor.core.plan.split` and :mod:`~advisor.core.plan.static`. What this module adds
is the detail of the chosen plans: latencies at the workload's rate and at light load, the
KV transfer, interference, runners-up, GPUs needed and the declared deployment.

The order of work (docs/model.md §4–§8):
1. instance shapes (TP within a node, TP × PP across nodes) and their memory; shapes that do
   not fit are excluded with a reason;
2. colocated pools per shape: chunked (token budgets 256…16384, or the pinned one) and
   unchunked; goodput = instances × the largest per-instance rate meeting the SLOs;
3. disaggregated pools: prefill and decode capacities per shape, the ideal fractional split,
   the best integer split over ``cluster.gpus`` and its rounding loss, the KV transfer;
4. phases: each phase on its own; the best *static* allocation across phases and the goodput
   it loses against per-phase re-allocation;
5. the declared deployment, predicted as declared.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import partial

import numpy as np

from advisor.core.colocated import evaluate_colocated, max_rate_meeting, queue_instances
from advisor.core.disaggregated import (
    decode_tpot_at_rate,
    kv_path,
    prefill_ttft,
)
from advisor.core.interference import tpot_inflation
from advisor.core.kv_transfer import split_transfer
from advisor.core.plan.best import best_colocated
from advisor.core.plan.capacities import (
    Capacities,
    CapacityGroup,
    seconds,
)
from advisor.core.plan.drift import (
    corner_capacities,
    corner_goodputs,
    drift_corners,
    split_goodput,
)
from advisor.core.plan.result_memo import (
    ColocatedPlanKey,
    FragilityKey,
    PhasePools,
    PoolsKey,
    RateFreeKey,
    ResultMemo,
    SafeRateKey,
)
from advisor.core.plan.shapes import Shape
from advisor.core.plan.sizing import (
    PhaseSplitOptions,
    colocated_gpus_needed,
    disaggregated_gpus_needed,
    worst_headroom,
)
from advisor.core.plan.split import (
    Allocation,
    PoolOption,
    packs_into_nodes,
    split,
)
from advisor.core.plan.static import static_allocation
from advisor.core.results import (
    AllocationSummary,
    ColocatedPlan,
    DeployedPrediction,
    DisaggregatedPlan,
    Fragility,
    Interference,
    ModelResult,
    PhaseResult,
    SplitVariant,
    meets_slo,
)
from advisor.core.scenario import Scenario, TrafficPhase

LIGHT_LOAD_RPS = 1e-6
"""Per-instance rate at which "best achievable" (light-load) percentiles are evaluated."""


def _ms(seconds_: float | None) -> float | None:
    if seconds_ is None or not math.isfinite(seconds_):
        return None
    return float(seconds_) * 1000.0


def _chunk_array(chunk: int | None) -> np.ndarray | None:
    return None if chunk is None else np.array(float(chunk))


# ---------------------------------------------------------------------------------------------
# colocated


@dataclass(frozen=True)
class _ColocatedTable:
    """Per-instance colocated goodput of every shape at the cluster's pool sizes."""

    budgets: tuple[int | None, ...]
    """Token budgets of the columns (None: unchunked)."""
    goods: np.ndarray
    """(phases, shapes, budgets) req/s per instance."""

    def get(self, shape: int, budget: int | None, phase: int) -> float | None:
        if budget not in self.budgets:
            return None
        return float(self.goods[phase, shape, self.budgets.index(budget)])


def _colocated_tables(caps: Capacities, grp: CapacityGroup) -> tuple[_ColocatedTable,
                                                                     _ColocatedTable]:
    """(chunked, unchunked) goodput tables at the scenario's cluster size."""
    G = np.array([caps.sc.cluster.gpus], dtype=np.int64)
    assert grp.chunks is not None
    chunked = _ColocatedTable(tuple(int(c) for c in grp.chunks), caps.colocated(grp, G)[:, 0])
    return chunked, _ColocatedTable((None,), caps.colocated(grp, G, chunked=False)[:, 0])


def _colocated_plan(sc: Scenario, shape: Shape, chunk: int | None, ph: TrafficPhase,
                    per_instance_goodput: float, memo: ResultMemo) -> ColocatedPlan:
    key = ColocatedPlanKey(shape=shape.label, chunk_tokens=chunk, phase=ph.name,
                           per_instance_goodput_rps=per_instance_goodput, rate_rps=ph.rate_rps,
                           cluster_gpus=sc.cluster.gpus)
    return memo.colocated_plans.get(key, partial(_colocated_plan_uncached, sc, shape, chunk,
                                                 ph, per_instance_goodput, memo))


def _colocated_plan_uncached(sc: Scenario, shape: Shape, chunk: int | None, ph: TrafficPhase,
                             per_instance_goodput: float, memo: ResultMemo) -> ColocatedPlan:
    inst = shape.instance
    n = sc.cluster.instances_of(inst.gpus)
    rate_inst = ph.rate_rps / max(n, 1)
    pool = float(queue_instances(n))
    seqs = shape.max_sequences[ph.name]
    pt = evaluate_colocated(inst, seqs, ph, np.array(rate_inst), _chunk_array(chunk),
                            sc.slo.quantile, pool, sc.router)
    fixed = RateFreeKey(shape=shape.label, chunk_tokens=chunk, phase=ph.name,
                        per_instance_goodput_rps=per_instance_goodput, instances=n)
    capacity, both = memo.rate_free.get(fixed, lambda: (
            max_rate_meeting(inst, seqs, ph, _chunk_array(chunk), sc.slo.quantile, None, None,
                             feasible_rate=None if chunk is not None else per_instance_goodput,
                             instances=pool, router=sc.router),
            # at the goodput (the running sequences) and at a light load (best percentiles)
            evaluate_colocated(inst, seqs, ph, np.array([max(per_instance_goodput,
                                                             LIGHT_LOAD_RPS), LIGHT_LOAD_RPS]),
                               _chunk_array(chunk), sc.slo.quantile, pool, sc.router)))
    overloaded = bool(pt.overloaded) or n == 0
    goodput_total = per_instance_goodput * n
    gpus = n * inst.gpus
    running = int(min(math.ceil(float(both.batch[0])), seqs))
    light_over = bool(both.overloaded[1])
    return ColocatedPlan(
        tensor_parallel=inst.tensor_parallel, pipeline_stages=inst.pipeline_stages,
        instances=n, gpus=gpus, chunked=chunk is not None, chunk_tokens=chunk,
        max_goodput_rps=float(goodput_total), capacity_rps=float(capacity) * n,
        rate_rps=ph.rate_rps, percentile=sc.slo.percentile,
        ttft_ms=None if overloaded else _ms(float(pt.ttft_q_s)),
        tpot_ms=None if overloaded else _ms(float(pt.tpot_q_s)),
        overloaded=overloaded, decode_batch=float(pt.batch),
        output_tokens_per_s_per_gpu=float(goodput_total * ph.output_tokens.mean / max(gpus, 1)),
        best_ttft_ms=None if light_over else _ms(float(both.ttft_q_s[1])),
        best_tpot_ms=None if light_over else _ms(float(both.tpot_q_s[1])),
        max_running_sequences=max(running, 1), expert_parallel=inst.expert_parallel,
        dp_attention=inst.attention_data_parallel > 1, redundant_experts=inst.redundant_experts,
        all_to_all_share=inst.all_to_all_share(
            decode_seqs=max(float(pt.batch), 1.0),
            decode_context_tokens=ph.prompt_tokens.mean + ph.output_tokens.mean / 2.0))


def _interference(sc: Scenario, shape: Shape, chunk: int, ph: TrafficPhase,
                  plan: ColocatedPlan, caps: Capacities) -> Interference:
    inst = shape.instance
    seqs = shape.max_sequences[ph.name]
    s95 = ph.computed_prompt_tokens.quantile(0.95)  # the prompt tokens a prefill computes
    ctx = ph.prompt_tokens.mean + ph.output_tokens.mean / 2.0
    b = max(plan.decode_batch if not plan.overloaded else seqs, 1.0)
    b = min(b, float(seqs))
    unchunked_f, chunked_f, t_dec = tpot_inflation(inst, b, ctx, s95, chunk)
    safe = None
    if sc.slo.tpot_ms is not None:
        key = SafeRateKey(shape=shape.label, chunk_tokens=chunk, phase=ph.name,
                          instances=plan.instances)
        per = caps.results.safe_rates.get(key, lambda: (
            max_rate_meeting(inst, seqs, ph, np.array(float(chunk)), sc.slo.quantile, None,
                             seconds(sc.slo.tpot_ms),
                             instances=float(queue_instances(plan.instances)),
                             router=sc.router)))
        safe = float(per) * plan.instances
    return Interference(prompt_tokens=s95, decode_batch=b, decode_step_ms=t_dec * 1000,
                        unchunked_tpot_factor=unchunked_f,
                        chunked_tpot_factor=chunked_f, chunk_tokens=chunk,
                        chunked_safe_rate_rps=safe)


@dataclass(frozen=True)
class _ColocatedChoice:
    plan: ColocatedPlan | None
    """The binding phase's view of the best plan."""
    per_phase: dict[str, ColocatedPlan]
    shape: Shape | None
    binding_phase: str


def _best_colocated(sc: Scenario, shapes: list[Shape], table: _ColocatedTable,
                    memo: ResultMemo) -> _ColocatedChoice:
    """The best colocated plan (max of the worst phase's goodput/rate, then goodput per GPU)
    and its per-phase views."""
    counts = np.array([[sc.cluster.instances_of(s.gpus) for s in shapes]], dtype=float)
    best = best_colocated(table.goods[:, None], counts,
                          np.array([[p.rate_rps for p in sc.phases]]),
                          np.array([s.gpus for s in shapes], dtype=np.int64))
    if not bool(best.found[0]):
        return _ColocatedChoice(None, {}, None, sc.phases[0].name)
    i, k = int(best.shape[0]), int(best.budget[0])
    shape = shapes[i]
    chunk = table.budgets[k]
    per_phase = {p.name: _colocated_plan(sc, shape, chunk, p, float(table.goods[n, i, k]), memo)
                 for n, p in enumerate(sc.phases)}
    binding = min(sc.phases, key=lambda p: per_phase[p.name].max_goodput_rps / p.rate_rps)
    return _ColocatedChoice(per_phase[binding.name], per_phase, shape, binding.name)


# ---------------------------------------------------------------------------------------------
# disaggregated




def _phase_pools(caps: Capacities, grp: CapacityGroup, k: int) -> PhasePools:
    """Phase k's pools at the scenario's cluster size: prefill goodputs with the pooled
    queue sized from the ideal split (when there is a TTFT SLO; the ideal split's), the best
    integer split (each split with its own prefill instances behind the router)."""
    cl = caps.sc.cluster
    pc = grp.phases[k]
    prefill_caps = pc.prefill
    if pc.pooled and grp.shapes:
        rates = caps.pooled_prefill(grp, k, np.array([cl.gpus], dtype=np.int64))[0]
        prefill_caps = [replace(c, goodput_rps=float(r))
                        for c, r in zip(pc.prefill, rates, strict=True)]
    prefill = [PoolOption(s.gpus, c.goodput_rps, s.label)
               for s, c in zip(grp.shapes, prefill_caps, strict=True)]
    decode = [PoolOption(s.gpus, c.goodput_rps, s.label)
              for s, c in zip(grp.shapes, pc.decode, strict=True)]
    own = caps.split_prefill_rates(grp, k, np.array([cl.gpus], dtype=np.int64))
    result = split(cl.gpus, prefill, decode, pc.link_rate, cl.gpus_per_node, pooled=own,
                   compatible=grp.compatible)
    return PhasePools(prefill=prefill, decode=decode, prefill_caps=prefill_caps,
                       decode_caps=pc.decode, link_rate_per_prefill_gpu=pc.link_rate, split=result,
                       own_pool=own)


def _summary(shapes: list[Shape], a: Allocation) -> AllocationSummary:
    pi, di = shapes[a.prefill_option].instance, shapes[a.decode_option].instance
    return AllocationSummary(prefill_tensor_parallel=pi.tensor_parallel,
                             decode_tensor_parallel=di.tensor_parallel,
                             prefill_pipeline_stages=pi.pipeline_stages,
                             decode_pipeline_stages=di.pipeline_stages,
                             prefill_instances=a.prefill_instances,
                             decode_instances=a.decode_instances,
                             prefill_gpus=a.prefill_gpus, decode_gpus=a.decode_gpus,
                             idle_gpus=a.idle_gpus, max_goodput_rps=a.goodput_rps,
                             limited_by=a.limited_by, prefill_expert_parallel=pi.expert_parallel,
                             decode_expert_parallel=di.expert_parallel,
                             prefill_dp_attention=pi.attention_data_parallel > 1,
                             decode_dp_attention=di.attention_data_parallel > 1,
                             prefill_redundant_experts=pi.redundant_experts,
                             decode_redundant_experts=di.redundant_experts)


def _disagg_plan(sc: Scenario, grp: CapacityGroup, ph: TrafficPhase, pools: PhasePools,
                 a: Allocation | None) -> DisaggregatedPlan:
    shapes = grp.shapes
    sp = pools.split
    ideal_total = sp.ideal_goodput_per_gpu_rps * sc.cluster.gpus
    alternatives = tuple(_summary(shapes, x) for x in sp.alternatives)
    if a is None:
        return DisaggregatedPlan(allocation=None, ideal_prefill_fraction=sp.ideal_prefill_fraction,
                                 ideal_max_goodput_rps=ideal_total, max_goodput_rps=0.0,
                                 rounding_loss=1.0,
                                 rate_rps=ph.rate_rps, percentile=sc.slo.percentile, ttft_ms=None,
                                 tpot_ms=None, overloaded=True, output_tokens_per_s_per_gpu=0.0,
                                 prefill_rate_per_instance_rps=0.0,
                                 decode_rate_per_instance_rps=0.0,
                                 prefill_saturating_tokens=0.0, decode_batch=0.0,
                                 alternatives=alternatives, kv_transfer=None)
    pshape, dshape = shapes[a.prefill_option], shapes[a.decode_option]
    pc, dc = pools.prefill_caps[a.prefill_option], pools.decode_caps[a.decode_option]
    rate_p = ph.rate_rps / a.prefill_instances
    rate_d = ph.rate_rps / a.decode_instances
    own = float(pshape.instance.prefill_time_s(ph.computed_prompt_tokens.quantile(0.95)))
    link = grp.link
    path = kv_path(link, pshape.instance, dshape.instance)
    pinst = pshape.instance
    kv = split_transfer(link=link, path=path, terms=pinst.engine.kv_transfer,
                        request_overhead_s=pinst.efficiency.request_overhead_s,
                        num_layers=pinst.model.num_layers, prefill_gpus=a.prefill_gpus,
                        gpus_per_node=sc.cluster.gpus_per_node,
                        prompt_mean_tokens=ph.prompt_tokens.mean,
                        prompt_p95_tokens=ph.prompt_tokens.quantile(0.95), rate_rps=ph.rate_rps,
                        goodput_rps=a.goodput_rps, prefill_s=own)
    # latencies at the workload's rate use the link load at that rate (the KV figures
    # reported are at the rate carried)
    offered_util = kv.offered_utilization
    ttft, rho, _ = prefill_ttft(pshape.instance, ph, np.array(rate_p), sc.slo.quantile, link,
                                min(offered_util, 0.999), pc.saturating_tokens,
                                a.prefill_instances, path=path, router=sc.router)
    tpot, batch, d_over = decode_tpot_at_rate(dshape.instance, ph, rate_d,
                                              dshape.max_sequences[ph.name])
    overloaded = bool(rho >= 1.0) or d_over or offered_util >= 1.0
    gpus = a.prefill_gpus + a.decode_gpus + a.idle_gpus
    light_ttft, _, _ = prefill_ttft(pshape.instance, ph, np.array(LIGHT_LOAD_RPS), sc.slo.quantile,
                                    link, 0.0, pc.saturating_tokens, path=path)
    light_tpot = float(dshape.instance.decode_token_s(1.0, ph.prompt_tokens.mean
                                                      + ph.output_tokens.mean / 2.0))
    ideal_loss = 1.0 if ideal_total <= 0 else max(0.0, min(1.0, 1.0 - a.goodput_rps / ideal_total))
    return DisaggregatedPlan(
        allocation=_summary(shapes, a), ideal_prefill_fraction=sp.ideal_prefill_fraction,
        ideal_max_goodput_rps=ideal_total, max_goodput_rps=a.goodput_rps,
        rounding_loss=ideal_loss, rate_rps=ph.rate_rps, percentile=sc.slo.percentile,
        ttft_ms=None if overloaded else _ms(float(ttft)),
        tpot_ms=None if overloaded else _ms(tpot), overloaded=overloaded,
        output_tokens_per_s_per_gpu=a.goodput_rps * ph.output_tokens.mean / max(gpus, 1),
        prefill_rate_per_instance_rps=float(pools.own_pool.at(a.prefill_option,
                                                              a.prefill_instances)),
        decode_rate_per_instance_rps=dc.goodput_rps,
        prefill_saturating_tokens=pc.saturating_tokens, decode_batch=float(batch),
        alternatives=alternatives, kv_transfer=kv,
        best_ttft_ms=_ms(float(light_ttft)), best_tpot_ms=_ms(light_tpot),
        decode_max_running_sequences=max(math.floor(dc.slo_batch), 1),
        prefill_all_to_all_share=pshape.instance.all_to_all_share(
            prefill_tokens=ph.prompt_tokens.quantile(0.95), prefill_seqs=1.0),
        decode_all_to_all_share=dshape.instance.all_to_all_share(
            decode_seqs=max(float(batch), 1.0),
            decode_context_tokens=ph.prompt_tokens.mean + ph.output_tokens.mean / 2.0))


def _static_allocation(sc: Scenario, grp: CapacityGroup, pools: dict[str, PhasePools]
                       ) -> tuple[float, Allocation | None, dict[str, float]]:
    """The best allocation fixed across phases (``static.static_allocation`` at the cluster's
    size): (static mix loss, the allocation, its goodput per phase)."""
    cl = sc.cluster
    G = np.array([cl.gpus], dtype=np.int64)
    per_phase = [pools[ph.name] for ph in sc.phases]
    best = [p.split.best for p in per_phase]
    st = static_allocation(
        G, grp.gpus, [p.own_pool for p in per_phase],
        [np.array([o.rate_rps for o in p.decode], dtype=float) for p in per_phase],
        [p.link_rate_per_prefill_gpu for p in per_phase],
        [np.array([b.goodput_rps if b else 0.0]) for b in best],
        [ph.share for ph in sc.phases], cl.gpus_per_node,
        known=[(np.array([b.prefill_option if b else -1]), np.array([b.decode_option if b else -1]),
                np.array([b.prefill_instances if b else 0])) for b in best],
        compatible=grp.compatible)
    score = float(st.score[0])
    if not bool(st.found[0]):
        return 0.0, None, {}
    i, j, x, y = (int(st.prefill_option[0]), int(st.decode_option[0]), int(st.x[0]),
                  int(st.y[0]))
    goods = {ph.name: float(st.goods[0, k]) for k, ph in enumerate(sc.phases)}
    used_p, used_d = x * grp.shapes[i].gpus, y * grp.shapes[j].gpus
    a = Allocation(prefill_option=i, decode_option=j, prefill_instances=x, decode_instances=y,
                   prefill_gpus=used_p, decode_gpus=used_d, idle_gpus=cl.gpus - used_p - used_d,
                   goodput_rps=float(min(goods.values())), limited_by="static")
    return max(0.0, 1.0 - score), a, goods


# ---------------------------------------------------------------------------------------------
# fragility and floors


def _fragility(sc: Scenario, caps: Capacities, grp: CapacityGroup, k: int, pools: PhasePools,
               a: Allocation | None) -> Fragility | None:
    """The split ``a`` of phase k under the drift band's corners (against re-splitting
    there) and its neighbours with one prefill instance fewer or more (``drift`` module)."""
    if a is None or not grp.shapes:
        return None
    G = np.array([sc.cluster.gpus], dtype=np.int64)
    pre_o, dec_o = np.array([a.prefill_option]), np.array([a.decode_option])
    x, y = np.array([a.prefill_instances]), np.array([a.decode_instances])
    drifted = []
    # only this phase drifts (its capacities, shared with the design points of the searches)
    corners = corner_capacities(caps, (k,))
    for (ps, os_), dcaps in zip(drift_corners(sc.policy.assumed_mix_drift), corners,
                                strict=True):
        dgrp = dcaps.group_at(sc.cluster.gpus)
        have, best = corner_goodputs(grp, dcaps, dgrp, 0, G, pre_o, dec_o, x, y)
        drifted.append(SplitVariant(
            label=f"prompts {_signed(ps)}, outputs {_signed(os_)}", prefill_gpus=a.prefill_gpus,
            decode_gpus=a.decode_gpus,
            goodput_rps=float(have[0]), best_goodput_rps=float(best[0]), prompt_scale=ps,
            output_scale=os_))
    gp, gd = int(grp.gpus[a.prefill_option]), int(grp.gpus[a.decode_option])
    dec = np.array([[o.rate_rps for o in pools.decode]])
    best_nominal = pools.split.best.goodput_rps if pools.split.best else 0.0
    neighbours = []
    for dx, label in ((-1, "one prefill instance fewer"), (1, "one prefill instance more")):
        nx = a.prefill_instances + dx
        ny = (sc.cluster.gpus - nx * gp) // gd
        if nx < 1 or ny < 1 or not bool(packs_into_nodes(
                np.array(nx), np.array(gp), np.array(ny), np.array(gd),
                np.array(sc.cluster.gpus), sc.cluster.gpus_per_node)):
            continue
        good = split_goodput(pools.own_pool, dec, pools.link_rate_per_prefill_gpu, grp.gpus,
                             pre_o, dec_o, np.array([nx]), np.array([ny]))
        neighbours.append(SplitVariant(label=label, prefill_gpus=nx * gp, decode_gpus=ny * gd,
                                       goodput_rps=float(good[0]), best_goodput_rps=best_nominal))
    return Fragility(sc.policy.assumed_mix_drift, tuple(drifted), tuple(neighbours))


def _signed(scale: float) -> str:
    """A length scale as a signed percentage, ``+25%``."""
    return f"{(scale - 1.0) * 100:+.0f}%"


def _floors(sc: Scenario, grp: CapacityGroup, pools: dict[str, PhasePools]
            ) -> tuple[float | None, str, float | None, str]:
    """(TPOT floor ms, its shape, TTFT floor ms, its shape): per phase the fastest shape at
    light load (decode batch 1; one prefill alone, no transfer), the slowest phase's."""
    tpot: tuple[float, str] | None = None
    ttft: tuple[float, str] | None = None
    for ph in sc.phases:
        ctx = ph.prompt_tokens.mean + ph.output_tokens.mean / 2.0
        caps = pools[ph.name].prefill_caps
        t_d = min(((float(s.instance.decode_token_s(1.0, ctx)), s.label) for s in grp.shapes),
                  default=None)
        t_p = min(((float(prefill_ttft(s.instance, ph, np.array(LIGHT_LOAD_RPS),
                                       sc.slo.quantile, grp.link, 0.0,
                                       c.saturating_tokens)[0]), s.label)
                   for s, c in zip(grp.shapes, caps, strict=True)), default=None)
        if t_d is not None and (tpot is None or t_d[0] > tpot[0]):
            tpot = t_d
        if t_p is not None and (ttft is None or t_p[0] > ttft[0]):
            ttft = t_p
    return (_ms(tpot[0]) if tpot else None, tpot[1] if tpot else "",
            _ms(ttft[0]) if ttft else None, ttft[1] if ttft else "")


# ---------------------------------------------------------------------------------------------
# deployed


def _deployed_colocated(sc: Scenario, grp: CapacityGroup, tables: dict[bool, _ColocatedTable],
                        ph: TrafficPhase, k: int, memo: ResultMemo) -> DeployedPrediction:
    dep = sc.deployment
    assert dep is not None
    tp: int | None = dep.tensor_parallel or 1
    index = _shape_index(grp.shapes, tp or 1, dep.expert_parallel)
    if dep.expert_parallel is not None:
        tp = None
    if index is None:
        name = f"TP{tp}" if dep.expert_parallel is None else f"EP{dep.expert_parallel}"
        return DeployedPrediction(mode="colocated", tensor_parallel=tp,
                                  chunk_tokens=sc.chunk_tokens, prefill_gpus=None, decode_gpus=None,
                                  max_goodput_rps=0.0,
                                  rate_rps=ph.rate_rps, percentile=sc.slo.percentile, ttft_ms=None,
                                  tpot_ms=None, overloaded=True, meets_slo=False,
                                  phase=ph.name, feasible=False,
                                  reason=f"{name} instances cannot serve this workload")
    shape = grp.shapes[index]
    chunk = sc.chunk_tokens if dep.chunked_prefill else None  # the deployment's budget
    per = tables[chunk is not None].get(index, chunk, k)
    if per is None:
        n = sc.cluster.instances_of(shape.gpus)
        per = float(max_rate_meeting(shape.instance, shape.max_sequences[ph.name], ph,
                                     _chunk_array(chunk), sc.slo.quantile,
                                     seconds(sc.slo.ttft_ms), seconds(sc.slo.tpot_ms),
                                     instances=float(queue_instances(n)), router=sc.router))
    plan = _colocated_plan(sc, shape, chunk, ph, per, memo)
    return DeployedPrediction(mode="colocated", tensor_parallel=tp, chunk_tokens=chunk,
                              prefill_gpus=None, decode_gpus=None,
                              max_goodput_rps=plan.max_goodput_rps,
                              rate_rps=ph.rate_rps, percentile=sc.slo.percentile,
                              ttft_ms=plan.ttft_ms, tpot_ms=plan.tpot_ms,
                              overloaded=plan.overloaded, meets_slo=meets_slo(plan, sc.slo),
                              phase=ph.name)


def _deployed_disaggregated(sc: Scenario, grp: CapacityGroup, pools: PhasePools,
                            ph: TrafficPhase) -> DeployedPrediction:
    dep = sc.deployment
    assert dep is not None
    shapes = grp.shapes
    ptp = dep.prefill_tensor_parallel or dep.tensor_parallel
    dtp = dep.decode_tensor_parallel or dep.tensor_parallel
    pi = _pick_shape(shapes, pools.prefill, ptp, dep.prefill_expert_parallel)
    di = _pick_shape(shapes, pools.decode, dtp, dep.decode_expert_parallel)
    pg, dg = dep.prefill_gpus or 0, dep.decode_gpus or 0
    if pi is None or di is None:
        return DeployedPrediction(mode="disaggregated", tensor_parallel=None, chunk_tokens=None,
                                  prefill_gpus=pg, decode_gpus=dg, max_goodput_rps=0.0,
                                  rate_rps=ph.rate_rps,
                                  percentile=sc.slo.percentile, ttft_ms=None, tpot_ms=None,
                                  overloaded=True, meets_slo=False, phase=ph.name,
                                  feasible=False,
                                  reason="no instance shape fits the declared pools")
    gp, gd = shapes[pi].gpus, shapes[di].gpus
    x, y = pg // gp, dg // gd
    a = None
    if x >= 1 and y >= 1:
        link = x * gp * pools.link_rate_per_prefill_gpu
        good = min(x * float(pools.own_pool.at(pi, x)), y * pools.decode[di].rate_rps,
                   link if link > 0 else math.inf)
        a = Allocation(prefill_option=pi, decode_option=di, prefill_instances=x, decode_instances=y,
                       prefill_gpus=x * gp, decode_gpus=y * gd,
                       idle_gpus=sc.cluster.gpus - x * gp - y * gd, goodput_rps=good,
                       limited_by="declared")
    plan = _disagg_plan(sc, grp, ph, pools, a)
    best = pools.split.best
    return DeployedPrediction(mode="disaggregated", tensor_parallel=None, chunk_tokens=None,
                              prefill_gpus=pg, decode_gpus=dg, max_goodput_rps=plan.max_goodput_rps,
                              rate_rps=ph.rate_rps, percentile=sc.slo.percentile,
                              ttft_ms=plan.ttft_ms, tpot_ms=plan.tpot_ms,
                              overloaded=plan.overloaded, meets_slo=meets_slo(plan, sc.slo),
                              phase=ph.name,
                              best_split_prefill_gpus=best.prefill_gpus if best else None)


def _deployed(sc: Scenario, grp: CapacityGroup, tables: dict[bool, _ColocatedTable],
              pools: dict[str, PhasePools], memo: ResultMemo) -> DeployedPrediction | None:
    """The declared deployment, predicted as declared (its worst phase)."""
    dep = sc.deployment
    if dep is None:
        return None
    worst: DeployedPrediction | None = None
    for k, ph in enumerate(sc.phases):
        if dep.mode == "colocated":
            pred = _deployed_colocated(sc, grp, tables, ph, k, memo)
        else:
            pred = _deployed_disaggregated(sc, grp, pools[ph.name], ph)
        if not pred.feasible:
            return pred
        if worst is None or (not pred.meets_slo and worst.meets_slo) or (
                pred.meets_slo == worst.meets_slo
                and pred.max_goodput_rps / pred.rate_rps < worst.max_goodput_rps / worst.rate_rps):
            worst = pred
    return worst


def _shape_index(shapes: list[Shape], tp: int, ep: int | None) -> int | None:
    """The shape of ``tp`` GPUs (no expert parallelism), or the EP shape of ``ep`` GPUs with
    DP attention when ``ep`` is given."""
    if ep is not None:
        return next((i for i, s in enumerate(shapes) if s.instance.expert_parallel == ep
                     and s.instance.attention_data_parallel > 1), None)
    return next((i for i, s in enumerate(shapes)
                 if s.gpus == tp and s.instance.layout is None), None)


def _pick_shape(shapes: list[Shape], options: list[PoolOption], tp: int | None,
                ep: int | None = None) -> int | None:
    """The shape of ``tp`` GPUs (or of EP degree ``ep``), or (neither declared) the best
    goodput per GPU."""
    if tp is not None or ep is not None:
        return _shape_index(shapes, tp or 1, ep)
    if not options:
        return None
    return int(np.argmax([o.rate_rps / o.gpus for o in options]))


# ---------------------------------------------------------------------------------------------


def evaluate(sc: Scenario, caps: Capacities | None = None) -> ModelResult:
    """Run the whole cost model on a resolved scenario (``caps``: its capacity tables, or
    those of the scenario at other arrival rates, which are the same: the closed-loop solve's)."""
    caps = caps if caps is not None else Capacities(sc)
    grp = caps.group_at(sc.cluster.gpus)
    shapes = grp.shapes
    memo = caps.results
    tables: dict[bool, _ColocatedTable] = {}
    coloc = unchunked = _ColocatedChoice(None, {}, None, sc.phases[0].name)
    if shapes:
        tables[True], tables[False] = _colocated_tables(caps, grp)
        coloc = _best_colocated(sc, shapes, tables[True], memo)
        unchunked = _best_colocated(sc, shapes, tables[False], memo)
    coloc_phases = dict(coloc.per_phase)
    coloc_plan = coloc.plan
    if coloc_plan is not None and coloc.shape is not None and coloc_plan.chunk_tokens:
        binding = next(p for p in sc.phases if p.name == coloc.binding_phase)
        coloc_plan = replace(coloc_plan, interference=_interference(
            sc, coloc.shape, coloc_plan.chunk_tokens, binding, coloc_plan, caps))
        coloc_phases[coloc.binding_phase] = coloc_plan

    pools = {ph.name: memo.pools.get(PoolsKey(phase_index=k, cluster_gpus=sc.cluster.gpus),
                                     partial(_phase_pools, caps, grp, k))
             for k, ph in enumerate(sc.phases)}
    static_loss: float = 0.0
    static_a: Allocation | None = None
    static_goods: dict[str, float] = {}
    if len(sc.phases) > 1 and shapes:
        static_loss, static_a, static_goods = _static_allocation(sc, grp, pools)

    phase_results = []
    disagg_by_phase: dict[str, DisaggregatedPlan] = {}
    for ph in sc.phases:
        best_plan = _disagg_plan(sc, grp, ph, pools[ph.name], pools[ph.name].split.best)
        plan = best_plan
        if len(sc.phases) > 1 and not sc.autoscaling and static_a is not None:
            plan = _disagg_plan(sc, grp, ph, pools[ph.name],
                                replace(static_a, goodput_rps=static_goods[ph.name]))
        disagg_by_phase[ph.name] = plan
        phase_results.append(PhaseResult(
            name=ph.name, share=ph.share, rate_rps=ph.rate_rps,
            prompt_tokens_mean=ph.prompt_tokens.mean, output_tokens_mean=ph.output_tokens.mean,
            colocated=coloc_phases.get(ph.name), unchunked=unchunked.per_phase.get(ph.name),
            disaggregated=best_plan, static_goodput_rps=static_goods.get(ph.name),
            static=plan if plan is not best_plan else None))

    d_binding = min(sc.phases, key=lambda p: disagg_by_phase[p.name].max_goodput_rps / p.rate_rps)
    coloc_headroom = worst_headroom(sc.phases, coloc_phases)
    disagg_headroom = min(disagg_by_phase[p.name].max_goodput_rps / p.rate_rps for p in sc.phases)
    ideal_headroom = min(pools[p.name].split.ideal_goodput_per_gpu_rps * sc.cluster.gpus
                         / p.rate_rps for p in sc.phases)
    k_bind = next(k for k, p in enumerate(sc.phases) if p.name == d_binding.name)
    shown = (static_a if len(sc.phases) > 1 and not sc.autoscaling and static_a is not None
             else pools[d_binding.name].split.best)
    floors = _floors(sc, grp, pools)
    return ModelResult(
        phases=tuple(phase_results), colocated=coloc_plan, unchunked=unchunked.plan,
        disaggregated=disagg_by_phase[d_binding.name],
        colocated_phase=coloc.binding_phase, disaggregated_phase=d_binding.name,
        static_mix_loss=static_loss,
        static_allocation=_summary(shapes, static_a) if static_a is not None else None,
        excluded=tuple(grp.excluded),
        colocated_gpus_needed=colocated_gpus_needed(sc.phases, coloc.per_phase),
        unchunked_gpus_needed=colocated_gpus_needed(sc.phases, unchunked.per_phase),
        unchunked_headroom=worst_headroom(sc.phases, unchunked.per_phase),
        disaggregated_gpus_needed=disaggregated_gpus_needed(sc.cluster.gpus_per_node, [
            PhaseSplitOptions(rate_rps=ph.rate_rps, prefill=pools[ph.name].prefill,
                              decode=pools[ph.name].decode,
                              own_pool=pools[ph.name].own_pool,
                              link_rate_per_prefill_gpu=pools[ph.name].link_rate_per_prefill_gpu)
            for ph in sc.phases], grp.compatible),
        colocated_headroom=float(coloc_headroom), disaggregated_headroom=float(disagg_headroom),
        deployed=_deployed(sc, grp, tables, pools, memo),
        disaggregated_ideal_headroom=float(ideal_headroom),
        disaggregated_best_headroom=float(min(
            (b.goodput_rps if (b := pools[p.name].split.best) is not None else 0.0)
            / p.rate_rps for p in sc.phases)),
        tpot_floor_ms=floors[0], tpot_floor_shape=floors[1],
        ttft_floor_ms=floors[2], ttft_floor_shape=floors[3],
        fragility=memo.fragility.get(
            FragilityKey(phase_index=k_bind, allocation=shown, cluster_gpus=sc.cluster.gpus),
            lambda: _fragility(sc, caps, grp, k_bind, pools[d_binding.name], shown)),
        smallest_instance_gpus=min((s.gpus for s in shapes), default=None))
