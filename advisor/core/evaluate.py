"""Scenario → ModelResult: every candidate evaluated, the best plans chosen.

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
from dataclasses import dataclass

import numpy as np

from advisor.core import allocation as alloc
from advisor.core.colocated import (
    CHUNK_CANDIDATES,
    evaluate_colocated,
    max_rate_meeting,
    queue_instances,
)
from advisor.core.disaggregated import (
    decode_capacity,
    decode_tpot_at_rate,
    prefill_capacity,
    prefill_ttft,
)
from advisor.core.instance import Instance, StackedInstances
from advisor.core.interference import tpot_inflation
from advisor.core.kv_transfer import KvTransfer, pool_link, transfer_seconds
from advisor.core.memory import build_instance, candidate_sizes, plan_memory
from advisor.core.results import (
    AllocationSummary,
    ColocatedPlan,
    DeployedPrediction,
    DisaggregatedPlan,
    ExcludedInstance,
    Interference,
    ModelResult,
    PhaseResult,
)
from advisor.core.scenario import Scenario, TrafficPhase

LIGHT_LOAD_RPS = 1e-6
"""Per-instance rate at which "best achievable" (light-load) percentiles are evaluated."""


@dataclass(frozen=True)
class _Shape:
    instance: Instance
    label: str
    max_sequences: dict[str, int]
    """Per phase name."""


def _label(tp: int, pp: int) -> str:
    return f"TP{tp}" if pp == 1 else f"TP{tp}×PP{pp}"


def _ms(seconds: float) -> float | None:
    if seconds is None or not math.isfinite(seconds):
        return None
    return float(seconds) * 1000.0


def _shapes(sc: Scenario) -> tuple[list[_Shape], list[ExcludedInstance]]:
    cl = sc.cluster
    multi = cl.inter_node is not None and cl.gpus > cl.gpus_per_node
    max_request = max(p.prompt_tokens.upper_tokens + p.output_tokens.upper_tokens for p in sc.phases)
    max_request = min(max_request, float(sc.model.max_context_tokens))
    shapes: list[_Shape] = []
    excluded: list[ExcludedInstance] = []
    for tp, pp in candidate_sizes(sc.model, cl.gpu, cl.gpus, cl.gpus_per_node, multi):
        inst = build_instance(sc.model, cl.gpu, sc.precision, sc.engine, tp, pp, cl.intra_node,
                              cl.inter_node)
        seqs: dict[str, int] = {}
        reason = ""
        for ph in sc.phases:
            ctx = ph.prompt_tokens.mean + ph.output_tokens.mean / 2.0
            mem = plan_memory(inst, ctx, max_request, sc.policy.memory_fraction)
            if not mem.fits:
                reason = mem.reason
                break
            seqs[ph.name] = mem.max_sequences
        if reason:
            excluded.append(ExcludedInstance(_label(tp, pp), reason))
        else:
            shapes.append(_Shape(inst, _label(tp, pp), seqs))
    return shapes, excluded


def _instances_in_cluster(sc: Scenario, inst: Instance) -> int:
    cl = sc.cluster
    if inst.gpus <= cl.gpus_per_node:
        per_node = cl.gpus_per_node // inst.gpus
        full = cl.gpus // cl.gpus_per_node
        rem = cl.gpus - full * cl.gpus_per_node
        return full * per_node + rem // inst.gpus
    return (cl.gpus // cl.gpus_per_node) // (inst.gpus // cl.gpus_per_node)


# ---------------------------------------------------------------------------------------------
# colocated


def _s(ms: float | None) -> float | None:
    return None if ms is None else ms / 1000.0


def _colocated_plan(sc: Scenario, shape: _Shape, chunk: int | None, ph: TrafficPhase,
                    per_instance_goodput: float, memo: dict | None = None) -> ColocatedPlan:
    key = ("plan", shape.label, chunk, ph.name, per_instance_goodput)
    if memo is not None and key in memo:
        return memo[key]
    plan = _colocated_plan_uncached(sc, shape, chunk, ph, per_instance_goodput)
    if memo is not None:
        memo[key] = plan
    return plan


def _colocated_plan_uncached(sc: Scenario, shape: _Shape, chunk: int | None, ph: TrafficPhase,
                             per_instance_goodput: float) -> ColocatedPlan:
    inst = shape.instance
    n = _instances_in_cluster(sc, inst)
    rate_inst = ph.rate_rps / max(n, 1)
    pool = float(queue_instances(n))
    pt = evaluate_colocated(inst, shape.max_sequences[ph.name], ph, np.array(rate_inst),
                            None if chunk is None else np.array(float(chunk)), sc.slo.quantile,
                            pool)
    capacity = max_rate_meeting(inst, shape.max_sequences[ph.name], ph,
                                None if chunk is None else np.array(float(chunk)),
                                sc.slo.quantile, None, None,
                                feasible_rate=None if chunk is not None else per_instance_goodput,
                                instances=pool)
    overloaded = bool(pt.overloaded) or n == 0
    goodput_total = per_instance_goodput * n
    gpus = n * inst.gpus
    # at the goodput (the running sequences) and at a light load (the best percentiles)
    both = evaluate_colocated(inst, shape.max_sequences[ph.name], ph,
                              np.array([max(per_instance_goodput, LIGHT_LOAD_RPS), LIGHT_LOAD_RPS]),
                              None if chunk is None else np.array(float(chunk)),
                              sc.slo.quantile, pool)
    running = int(min(math.ceil(float(both.batch[0])), shape.max_sequences[ph.name]))
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
        max_running_sequences=max(running, 1))


def _interference(sc: Scenario, shape: _Shape, chunk: int, ph: TrafficPhase,
                  plan: ColocatedPlan) -> Interference:
    inst = shape.instance
    s95 = ph.prompt_tokens.quantile(0.95)
    ctx = ph.prompt_tokens.mean + ph.output_tokens.mean / 2.0
    b = max(plan.decode_batch if not plan.overloaded else shape.max_sequences[ph.name], 1.0)
    b = min(b, float(shape.max_sequences[ph.name]))
    unchunked_f, chunked_f, t_dec = tpot_inflation(inst, b, ctx, s95, chunk)
    safe = None
    if sc.slo.tpot_ms is not None:
        per = max_rate_meeting(inst, shape.max_sequences[ph.name], ph, np.array(float(chunk)),
                               sc.slo.quantile, None, _s(sc.slo.tpot_ms),
                               instances=float(queue_instances(plan.instances)))
        safe = float(per) * plan.instances
    return Interference(prompt_tokens=s95, decode_batch=b, decode_step_ms=t_dec * 1000,
                        unchunked_tpot_factor=unchunked_f,
                        chunked_tpot_factor=chunked_f, chunk_tokens=chunk,
                        chunked_safe_rate_rps=safe)


def _best_colocated(sc: Scenario, shapes: list[_Shape], chunked: bool, memo: dict
                    ) -> tuple[ColocatedPlan | None, dict[str, ColocatedPlan], _Shape | None, str]:
    """The best colocated plan (max of the worst phase's goodput/rate) and its per-phase views.

    All shapes and token budgets are evaluated in one vectorised search per phase; every
    per-instance goodput is kept in ``memo`` (the declared deployment reuses it).
    """
    usable = [s for s in shapes if _instances_in_cluster(sc, s.instance) > 0]
    if not usable:
        return None, {}, None, sc.phases[0].name
    stack = StackedInstances([s.instance for s in usable], ndim=3)
    counts = np.array([_instances_in_cluster(sc, s.instance) for s in usable], dtype=float)
    if chunked:
        chunks = np.array([float(sc.chunk_tokens)] if sc.chunk_tokens else CHUNK_CANDIDATES)
    else:
        chunks = None
    goods = {}
    for ph in sc.phases:
        seqs = np.array([s.max_sequences[ph.name] for s in usable], dtype=float)
        g = max_rate_meeting(stack, seqs, ph, chunks, sc.slo.quantile, _s(sc.slo.ttft_ms),
                             _s(sc.slo.tpot_ms), instances=queue_instances(counts))
        goods[ph.name] = g.reshape(len(usable), -1)  # (shapes, chunks)
        for a, shape_a in enumerate(usable):
            for b_, chunk_b in enumerate([None] if chunks is None else chunks):
                c_key = None if chunk_b is None else int(chunk_b)
                memo[("goodput", shape_a.label, c_key, ph.name)] = float(goods[ph.name][a, b_])
    headroom = np.min([goods[p.name] * counts[:, None] / p.rate_rps for p in sc.phases], axis=0)
    gpus = np.array([n * s.instance.gpus for n, s in zip(counts, usable)], dtype=float)
    per_gpu = goods[sc.phases[0].name] * counts[:, None] / gpus[:, None]
    order = np.lexsort((-per_gpu.ravel(), -headroom.ravel()))
    i, k = np.unravel_index(order[0], headroom.shape)
    shape = usable[int(i)]
    chunk = int(chunks[int(k)]) if chunks is not None else None
    per_phase = {p.name: _colocated_plan(sc, shape, chunk, p, float(goods[p.name][i, k]), memo)
                 for p in sc.phases}
    binding = min(sc.phases, key=lambda p: per_phase[p.name].max_goodput_rps / p.rate_rps)
    return per_phase[binding.name], per_phase, shape, binding.name


# ---------------------------------------------------------------------------------------------
# disaggregated


@dataclass(frozen=True)
class _PhasePools:
    prefill: list[alloc.PoolOption]
    decode: list[alloc.PoolOption]
    prefill_caps: list
    decode_caps: list
    link_rate_per_prefill_gpu: float
    split: alloc.SplitResult


def _bytes_per_request(inst: Instance, ph: TrafficPhase) -> float:
    return ph.prompt_tokens.mean * inst.kv_bytes_per_token_wire


def _phase_pools(sc: Scenario, shapes: list[_Shape], ph: TrafficPhase) -> _PhasePools:
    cl = sc.cluster
    link = pool_link(cl.intra_node, cl.inter_node, cl.gpus <= cl.gpus_per_node)
    decode, dcaps = [], []
    for shape in shapes:
        dc = decode_capacity(shape.instance, shape.max_sequences[ph.name], ph, _s(sc.slo.tpot_ms))
        decode.append(alloc.PoolOption(shape.instance.gpus, dc.goodput_rps, shape.label))
        dcaps.append(dc)
    # KV link: requests/s one prefill GPU's NIC can ship (bytes per request at the prefill TP
    # of the best shape; TP duplication differs per shape, the ideal pick uses the best one).
    link_rate = 0.0
    if shapes:
        wire = min(_bytes_per_request(s.instance, ph) / s.instance.gpus for s in shapes)
        link_rate = link.effective_bytes_per_s / max(wire * 1.0, 1.0)

    def prefill_pools(servers: list[int], ttft_slo_s: float | None
                      ) -> tuple[list[alloc.PoolOption], list]:
        caps = [prefill_capacity(s.instance, ph, sc.slo.quantile, ttft_slo_s, link, n)
                for s, n in zip(shapes, servers)]
        return [alloc.PoolOption(s.instance.gpus, c.goodput_rps, s.label)
                for s, c in zip(shapes, caps)], caps

    # Prefill instances share one queue (G/G/c), so their TTFT goodput depends on how many
    # there are: size the pool from the ideal split of the prefill capacities (ρ → 1, the
    # limit a large pooled queue approaches), then evaluate the TTFT goodput at that size.
    prefill, pcaps = prefill_pools([1] * len(shapes), None)
    fraction = prefill_sizing_fraction(pcaps, shapes, decode, link_rate)
    if sc.slo.ttft_ms is not None and fraction > 0:
        servers = [max(1, int(cl.gpus * fraction // s.instance.gpus)) for s in shapes]
        prefill, pcaps = prefill_pools(servers, _s(sc.slo.ttft_ms))
    elif sc.slo.ttft_ms is not None:
        prefill, pcaps = prefill_pools([1] * len(shapes), _s(sc.slo.ttft_ms))
    result = alloc.split(cl.gpus, prefill, decode, link_rate, cl.gpus_per_node)
    return _PhasePools(prefill, decode, pcaps, dcaps, link_rate, result)


def prefill_sizing_fraction(capacities: list, shapes: list[_Shape],
                            decode: list[alloc.PoolOption], link_rate: float) -> float:
    """Prefill share of the GPUs that sizes the pooled prefill queue: the ideal split of the
    prefill capacities at full utilisation against the decode goodputs."""
    full = [alloc.PoolOption(s.instance.gpus, c.max_rate_rps, s.label)
            for s, c in zip(shapes, capacities)]
    return alloc.ideal_split(full, decode, link_rate)[1]


def _summary(shapes: list[_Shape], a: alloc.Allocation) -> AllocationSummary:
    pi, di = shapes[a.prefill_option].instance, shapes[a.decode_option].instance
    return AllocationSummary(pi.tensor_parallel, di.tensor_parallel, pi.pipeline_stages,
                             di.pipeline_stages, a.prefill_instances, a.decode_instances,
                             a.prefill_gpus, a.decode_gpus, a.idle_gpus, a.goodput_rps,
                             a.limited_by)


def _kv_transfer(sc: Scenario, inst: Instance, prefill_gpus: int, ph: TrafficPhase,
                 prefill_s: float) -> KvTransfer:
    cl = sc.cluster
    link = pool_link(cl.intra_node, cl.inter_node, cl.gpus <= cl.gpus_per_node)
    bpt = inst.kv_bytes_per_token_wire
    mean_b = ph.prompt_tokens.mean * bpt
    p95_b = ph.prompt_tokens.quantile(0.95) * bpt
    demand = ph.rate_rps * mean_b
    capacity = prefill_gpus * link.effective_bytes_per_s
    util = demand / capacity if capacity > 0 else float("inf")
    exposed, serial = transfer_seconds(p95_b, link, inst.gpus, prefill_s, inst.model.num_layers,
                                       min(util, 0.999))
    _, serial_mean = transfer_seconds(mean_b, link, inst.gpus, prefill_s, inst.model.num_layers, 0.0)
    return KvTransfer(link_id=link.id, bytes_per_token=bpt, bytes_per_request_mean=mean_b,
                      bytes_per_request_p95=p95_b, demand_bytes_per_s=demand,
                      link_bytes_per_s=capacity, utilization=util,
                      transfer_ms=float(exposed) * 1000, serialized_transfer_ms=float(serial) * 1000,
                      concurrent_transfers=ph.rate_rps * float(serial_mean))


def _disagg_plan(sc: Scenario, shapes: list[_Shape], ph: TrafficPhase, pools: _PhasePools,
                 a: alloc.Allocation | None) -> DisaggregatedPlan:
    sp = pools.split
    ideal_total = sp.ideal_goodput_per_gpu_rps * sc.cluster.gpus
    if a is None:
        return DisaggregatedPlan(None, sp.ideal_prefill_fraction, ideal_total, 0.0, 1.0,
                                 ph.rate_rps, sc.slo.percentile, None, None, True, 0.0, 0.0, 0.0,
                                 0.0, 0.0, tuple(_summary(shapes, x) for x in sp.alternatives), None)
    pshape, dshape = shapes[a.prefill_option], shapes[a.decode_option]
    pc, dc = pools.prefill_caps[a.prefill_option], pools.decode_caps[a.decode_option]
    rate_p = ph.rate_rps / a.prefill_instances
    rate_d = ph.rate_rps / a.decode_instances
    own = float(pshape.instance.prefill_time_s(ph.prompt_tokens.quantile(0.95)))
    kv = _kv_transfer(sc, pshape.instance, a.prefill_gpus, ph, own)
    cl = sc.cluster
    link = pool_link(cl.intra_node, cl.inter_node, cl.gpus <= cl.gpus_per_node)
    ttft, rho, _ = prefill_ttft(pshape.instance, ph, np.array(rate_p), sc.slo.quantile, link,
                                min(kv.utilization, 0.999), pc.saturating_tokens,
                                a.prefill_instances)
    tpot, batch, d_over = decode_tpot_at_rate(dshape.instance, ph, rate_d,
                                              dshape.max_sequences[ph.name])
    overloaded = bool(rho >= 1.0) or d_over or kv.utilization >= 1.0
    gpus = a.prefill_gpus + a.decode_gpus + a.idle_gpus
    light_ttft, _, _ = prefill_ttft(pshape.instance, ph, np.array(LIGHT_LOAD_RPS), sc.slo.quantile,
                                    link, 0.0, pc.saturating_tokens)
    light_tpot = float(dshape.instance.decode_step_s(1.0, ph.prompt_tokens.mean
                                                      + ph.output_tokens.mean / 2.0))
    ideal_loss = 1.0 if ideal_total <= 0 else max(0.0, min(1.0, 1.0 - a.goodput_rps / ideal_total))
    return DisaggregatedPlan(
        allocation=_summary(shapes, a), ideal_prefill_fraction=sp.ideal_prefill_fraction,
        ideal_max_goodput_rps=ideal_total, max_goodput_rps=a.goodput_rps,
        rounding_loss=ideal_loss, rate_rps=ph.rate_rps, percentile=sc.slo.percentile,
        ttft_ms=None if overloaded else _ms(float(ttft)),
        tpot_ms=None if overloaded else _ms(tpot), overloaded=overloaded,
        output_tokens_per_s_per_gpu=a.goodput_rps * ph.output_tokens.mean / max(gpus, 1),
        prefill_rate_per_instance_rps=pc.goodput_rps, decode_rate_per_instance_rps=dc.goodput_rps,
        prefill_saturating_tokens=pc.saturating_tokens, decode_batch=float(batch),
        alternatives=tuple(_summary(shapes, x) for x in sp.alternatives), kv_transfer=kv,
        best_ttft_ms=_ms(float(light_ttft)), best_tpot_ms=_ms(light_tpot),
        decode_max_running_sequences=max(int(math.floor(dc.slo_batch)), 1))


def _static_allocation(sc: Scenario, shapes: list[_Shape], pools: dict[str, _PhasePools]
                       ) -> tuple[float, alloc.Allocation | None, dict[str, float]]:
    """Best allocation fixed across phases: maximise Σ share · goodput_k / best_k."""
    cl = sc.cluster
    best_score, best_a, best_goods = -1.0, None, {}
    n = len(shapes)
    for i in range(n):
        for j in range(n):
            gp, gd = shapes[i].instance.gpus, shapes[j].instance.gpus
            if gp + gd > cl.gpus:
                continue
            x = np.arange(1, (cl.gpus - gd) // gp + 1)
            y = (cl.gpus - x * gp) // gd
            ok = (y >= 1) & alloc._nodes_ok(x, np.int64(gp), y, np.int64(gd), np.int64(cl.gpus),
                                            cl.gpus_per_node)
            score = np.zeros(x.shape)
            goods = {}
            for ph in sc.phases:
                pp = pools[ph.name]
                best_k = pp.split.best.goodput_rps if pp.split.best else 0.0
                link = x * gp * pp.link_rate_per_prefill_gpu if pp.link_rate_per_prefill_gpu > 0 else np.inf
                g = np.minimum(np.minimum(x * pp.prefill[i].rate_rps, y * pp.decode[j].rate_rps), link)
                goods[ph.name] = g
                score = score + ph.share * (g / best_k if best_k > 0 else 0.0)
            score = np.where(ok, score, -1.0)
            k = int(np.argmax(score))
            if score[k] > best_score:
                best_score = float(score[k])
                used_p, used_d = int(x[k]) * gp, int(y[k]) * gd
                best_a = alloc.Allocation(i, j, int(x[k]), int(y[k]), used_p, used_d,
                                          cl.gpus - used_p - used_d,
                                          float(min(goods[p.name][k] for p in sc.phases)), "static")
                best_goods = {p.name: float(goods[p.name][k]) for p in sc.phases}
    loss = 0.0 if best_score < 0 else max(0.0, 1.0 - best_score)
    return loss, best_a, best_goods


# ---------------------------------------------------------------------------------------------
# GPUs needed


def _colocated_gpus_needed(sc: Scenario, shape: _Shape | None, plan: ColocatedPlan | None,
                           per_phase: dict[str, ColocatedPlan]) -> int | None:
    if shape is None or plan is None:
        return None
    need = 0
    for ph in sc.phases:
        pp = per_phase[ph.name]
        per_inst = pp.max_goodput_rps / max(pp.instances, 1)
        if per_inst <= 0:
            return None
        need = max(need, math.ceil(ph.rate_rps / per_inst) * shape.instance.gpus)
    return need


def _disagg_gpus_needed(sc: Scenario, pools: dict[str, _PhasePools]) -> int | None:
    """Fewest GPUs whose integer split carries every phase's rate (DistServe's ceilings).

    Per shape pair: x = ⌈R/P⌉ prefill instances (more if the KV link needs more NICs),
    y = ⌈R/D⌉ decode instances; GPUs = x·g_p + y·g_d, rounded up to whole nodes when an
    instance spans nodes.
    """
    gpn = sc.cluster.gpus_per_node
    need = 0
    for ph in sc.phases:
        sp = pools[ph.name]
        best = None
        for p in sp.prefill:
            if p.rate_rps <= 0:
                continue
            x = math.ceil(ph.rate_rps / p.rate_rps - 1e-9)
            if sp.link_rate_per_prefill_gpu > 0:
                x = max(x, math.ceil(ph.rate_rps / (p.gpus * sp.link_rate_per_prefill_gpu) - 1e-9))
            for d in sp.decode:
                if d.rate_rps <= 0:
                    continue
                y = math.ceil(ph.rate_rps / d.rate_rps - 1e-9)
                gpus = x * p.gpus + y * d.gpus
                if p.gpus > gpn or d.gpus > gpn:
                    gpus = -(-gpus // gpn) * gpn
                best = gpus if best is None else min(best, gpus)
        if best is None:
            return None
        need = max(need, best)
    return need


# ---------------------------------------------------------------------------------------------
# deployed


def _deployed(sc: Scenario, shapes: list[_Shape], pools: dict[str, _PhasePools], memo: dict
              ) -> DeployedPrediction | None:
    dep = sc.deployment
    if dep is None:
        return None
    cl = sc.cluster
    q = sc.slo.quantile
    worst: DeployedPrediction | None = None
    for ph in sc.phases:
        if dep.mode == "colocated":
            tp = dep.tensor_parallel or 1
            shape = next((s for s in shapes if s.instance.gpus == tp), None)
            if shape is None:
                return DeployedPrediction("colocated", tp, dep.chunk_tokens, None, None, 0.0,
                                          ph.rate_rps, sc.slo.percentile, None, None, True, False,
                                          ph.name, feasible=False,
                                          reason=f"TP{tp} instances cannot serve this workload")
            chunk = (dep.chunk_tokens or 2048) if dep.chunked_prefill else None
            per = memo.get(("goodput", shape.label, chunk, ph.name))
            if per is None:
                per = float(max_rate_meeting(
                    shape.instance, shape.max_sequences[ph.name], ph,
                    None if chunk is None else np.array(float(chunk)), q, _s(sc.slo.ttft_ms),
                    _s(sc.slo.tpot_ms),
                    instances=float(queue_instances(_instances_in_cluster(sc, shape.instance)))))
            plan = _colocated_plan(sc, shape, chunk, ph, per, memo)
            pred = DeployedPrediction("colocated", tp, chunk, None, None, plan.max_goodput_rps,
                                      ph.rate_rps, sc.slo.percentile, plan.ttft_ms, plan.tpot_ms,
                                      plan.overloaded, _meets(sc, plan.ttft_ms, plan.tpot_ms,
                                                              plan.overloaded), ph.name)
        else:
            ptp = dep.prefill_tensor_parallel or dep.tensor_parallel
            dtp = dep.decode_tensor_parallel or dep.tensor_parallel
            pools_k = pools[ph.name]
            pi = _pick_shape(shapes, pools_k.prefill, ptp, True)
            di = _pick_shape(shapes, pools_k.decode, dtp, False)
            pg, dg = dep.prefill_gpus or 0, dep.decode_gpus or 0
            if pi is None or di is None:
                return DeployedPrediction("disaggregated", None, None, pg, dg, 0.0, ph.rate_rps,
                                          sc.slo.percentile, None, None, True, False, ph.name,
                                          feasible=False, reason="no instance shape fits the declared pools")
            x = pg // shapes[pi].instance.gpus
            y = dg // shapes[di].instance.gpus
            a = None
            if x >= 1 and y >= 1:
                link = x * shapes[pi].instance.gpus * pools_k.link_rate_per_prefill_gpu
                good = min(x * pools_k.prefill[pi].rate_rps, y * pools_k.decode[di].rate_rps,
                           link if link > 0 else math.inf)
                a = alloc.Allocation(pi, di, x, y, x * shapes[pi].instance.gpus,
                                     y * shapes[di].instance.gpus,
                                     cl.gpus - x * shapes[pi].instance.gpus - y * shapes[di].instance.gpus,
                                     good, "declared")
            plan = _disagg_plan(sc, shapes, ph, pools_k, a)
            best = pools_k.split.best
            pred = DeployedPrediction("disaggregated", None, None, pg, dg, plan.max_goodput_rps,
                                      ph.rate_rps, sc.slo.percentile, plan.ttft_ms, plan.tpot_ms,
                                      plan.overloaded,
                                      _meets(sc, plan.ttft_ms, plan.tpot_ms, plan.overloaded)
                                      and plan.max_goodput_rps >= ph.rate_rps,
                                      ph.name,
                                      best_split_prefill_gpus=best.prefill_gpus if best else None)
        if worst is None or (not pred.meets_slo and worst.meets_slo) or (
                pred.meets_slo == worst.meets_slo
                and pred.max_goodput_rps / pred.rate_rps < worst.max_goodput_rps / worst.rate_rps):
            worst = pred
    return worst


def _pick_shape(shapes: list[_Shape], options: list[alloc.PoolOption], tp: int | None,
                prefill: bool) -> int | None:
    if tp is not None:
        for i, s in enumerate(shapes):
            if s.instance.gpus == tp:
                return i
        return None
    if not options:
        return None
    return int(np.argmax([o.rate_rps / o.gpus for o in options]))


def _meets(sc: Scenario, ttft_ms: float | None, tpot_ms: float | None, overloaded: bool) -> bool:
    if overloaded:
        return False
    if sc.slo.ttft_ms is not None and (ttft_ms is None or ttft_ms > sc.slo.ttft_ms):
        return False
    if sc.slo.tpot_ms is not None and (tpot_ms is None or tpot_ms > sc.slo.tpot_ms):
        return False
    return True


# ---------------------------------------------------------------------------------------------


def evaluate(sc: Scenario) -> ModelResult:
    """Run the whole cost model on a resolved scenario."""
    shapes, excluded = _shapes(sc)
    memo: dict = {}
    coloc, coloc_phases, coloc_shape, c_binding = _best_colocated(sc, shapes, True, memo)
    unchunked, unchunked_phases, _, _ = _best_colocated(sc, shapes, False, memo)
    if coloc is not None and coloc_shape is not None and coloc.chunk_tokens:
        binding = next(p for p in sc.phases if p.name == c_binding)
        coloc = _with_interference(coloc, _interference(sc, coloc_shape, coloc.chunk_tokens,
                                                        binding, coloc))
        coloc_phases[c_binding] = coloc

    pools = {ph.name: _phase_pools(sc, shapes, ph) for ph in sc.phases}
    if len(sc.phases) > 1:
        static_loss, static_a, static_goods = _static_allocation(sc, shapes, pools)
    else:
        static_loss, static_a, static_goods = 0.0, None, {}

    phase_results = []
    disagg_by_phase: dict[str, DisaggregatedPlan] = {}
    for ph in sc.phases:
        chosen = pools[ph.name].split.best
        if len(sc.phases) > 1 and not sc.autoscaling and static_a is not None:
            sa = static_a
            goods = static_goods[ph.name]
            chosen_static = alloc.Allocation(sa.prefill_option, sa.decode_option,
                                             sa.prefill_instances, sa.decode_instances,
                                             sa.prefill_gpus, sa.decode_gpus, sa.idle_gpus,
                                             goods, "static")
            plan = _disagg_plan(sc, shapes, ph, pools[ph.name], chosen_static)
        else:
            plan = _disagg_plan(sc, shapes, ph, pools[ph.name], chosen)
        disagg_by_phase[ph.name] = plan
        phase_results.append(PhaseResult(
            name=ph.name, share=ph.share, rate_rps=ph.rate_rps,
            prompt_tokens_mean=ph.prompt_tokens.mean, output_tokens_mean=ph.output_tokens.mean,
            colocated=coloc_phases.get(ph.name), unchunked=unchunked_phases.get(ph.name),
            disaggregated=_disagg_plan(sc, shapes, ph, pools[ph.name], chosen),
            static_goodput_rps=static_goods.get(ph.name)))

    d_binding = min(sc.phases, key=lambda p: disagg_by_phase[p.name].max_goodput_rps / p.rate_rps)
    disagg = disagg_by_phase[d_binding.name]
    coloc_headroom = min((coloc_phases[p.name].max_goodput_rps / p.rate_rps for p in sc.phases),
                         default=0.0) if coloc_phases else 0.0
    disagg_headroom = min(disagg_by_phase[p.name].max_goodput_rps / p.rate_rps for p in sc.phases)
    return ModelResult(
        phases=tuple(phase_results), colocated=coloc, unchunked=unchunked, disaggregated=disagg,
        colocated_phase=c_binding, disaggregated_phase=d_binding.name,
        static_mix_loss=static_loss,
        static_allocation=_summary(shapes, static_a) if static_a is not None else None,
        excluded=tuple(excluded),
        colocated_gpus_needed=_colocated_gpus_needed(sc, coloc_shape, coloc, coloc_phases),
        disaggregated_gpus_needed=_disagg_gpus_needed(sc, pools),
        colocated_headroom=float(coloc_headroom), disaggregated_headroom=float(disagg_headroom),
        deployed=_deployed(sc, shapes, pools, memo))


def _with_interference(plan: ColocatedPlan, inter: Interference) -> ColocatedPlan:
    from dataclasses import replace

    return replace(plan, interference=inter)
