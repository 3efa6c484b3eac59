"""The data of the report's figure, computed from the model (no drawing here).

``recommend --plot`` and the HTML report draw it (docs/model.md §11):

(a), (b) latency–load curves: the TTFT and TPOT percentiles (p95, p99 and the SLO's) of the
    best colocated (chunked), disaggregated and unchunked plans against the request rate,
    each plan kept as evaluated (same instances, same split) while the rate grows, in the
    traffic mix of one phase (the phase that binds the recommended architecture), with each
    plan's goodput — the model's own number, the one the report prints — and the target that
    binds there;
(c) the P:D allocation: GPUs per pool (prefill, decode, idle) of the disaggregated plan's
    split and its runner-up (for a static split, the best split of the phase alone), beside
    the ideal prefill fraction;
(d) the TTFT decomposition of each plan at the workload's rate: queueing, prefill, KV
    transfer, the decode step in progress, the per-request overhead — the parts sum to the
    model's TTFT percentile (a plan overloaded there has none);
(e) for workloads with several phases: each plan's goodput in each phase — the colocated
    pools, the static split and the best split of that phase alone (per-phase
    re-allocation) — against the phase's rate.

Every number is the model's own: the goodputs are the plans' (``plan.evaluate``, computed
once), and the curves call the functions ``plan.evaluate`` calls (``evaluate_colocated``,
``prefill_ttft``, ``decode_tpot_at_rate``) with the plan's instances, so at the workload's
rate they reproduce the plan's reported percentiles and they cross the SLO at its goodput.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from advisor.core.colocated import evaluate_colocated, own_prompt_prefill_s, queue_instances
from advisor.core.disaggregated import (
    decode_tpot_at_rate,
    kv_path,
    prefill_service,
    prefill_ttft_parts,
    request_path_s,
)
from advisor.core.kv_transfer import KvPath, link_capacity_bytes_per_s, link_utilization
from advisor.core.plan.capacities import Capacities
from advisor.core.plan.shapes import Shape
from advisor.core.results import (
    AllocationSummary,
    ColocatedPlan,
    ModelResult,
    PhaseResult,
)
from advisor.core.scenario import RouterPolicy, Scenario, TrafficPhase

CURVE_POINTS = 60
"""Rates per curve (evenly spaced from 0 to the end of the axis, plus the workload's rate)."""
CURVE_QUANTILES = (0.95, 0.99)
"""Percentiles drawn besides the SLO's."""
AXIS_HEADROOM = 1.25
"""The rate axis ends this far past the largest goodput (and at least at 1.5× the rate)."""
BINDING_PROBES = (1.001, 1.003, 1.01, 1.03, 1.1)
"""Rates past a plan's goodput (× it) probed for what fails first: the goodput searches stop
within 1e-3 of the root, the split's pool-size grid within 0.41 %, so the first probe that
misses names the target that binds."""

COLOCATED, DISAGGREGATED, UNCHUNKED = "colocated", "disaggregated", "unchunked"
PLAN_LABELS = {COLOCATED: "colocated, chunked prefill",
               DISAGGREGATED: "disaggregated prefill/decode",
               UNCHUNKED: "colocated, unchunked"}
TTFT_PARTS = ("queueing", "prefill", "kv_transfer", "decode_step", "overhead")
"""TTFT decomposition keys, in drawing order."""


@dataclass(frozen=True, kw_only=True)
class LatencyCurve:
    """One plan's percentiles against the whole-plan request rate (NaN: overloaded)."""

    plan: str
    label: str
    ttft_ms: dict[float, np.ndarray]
    """Per quantile (0.95 → array over ``FigureData.rates_rps``)."""
    tpot_ms: dict[float, np.ndarray]
    goodput_rps: float
    """The model's goodput of the plan in this phase (the largest rate meeting the SLOs, the
    capacity without SLOs; 0: no rate does), the number the report prints."""
    limited_by: str | None
    """What binds at ``goodput_rps``: ``ttft``, ``tpot`` or ``overload`` (None: no rate
    meets the SLOs)."""


SPLIT_ROLES = ("best", "runner-up", "static", "phase-best")
"""What a bar of the P:D panel is: the phase's best split, its runner-up, the static split
across phases, the best split of the phase alone (beside a static one)."""


@dataclass(frozen=True, kw_only=True)
class SplitBar:
    """One integer P:D split, in GPUs."""

    role: str
    """One of :data:`SPLIT_ROLES`."""
    prefill_gpus: int
    decode_gpus: int
    idle_gpus: int
    prefill_instances: int
    decode_instances: int
    goodput_rps: float


@dataclass(frozen=True)
class TtftDecomposition:
    """A plan's TTFT percentile at the workload's rate, in parts (ms) that sum to it; an
    overloaded plan has no parts (``parts_ms`` empty, ``total_ms`` None)."""

    plan: str
    label: str
    parts_ms: dict[str, float]
    total_ms: float | None


@dataclass(frozen=True, kw_only=True)
class PhaseGoodput:
    """One phase: each plan's goodput there (req/s; None: no such plan), the report's."""

    name: str
    rate_rps: float
    colocated_goodput_rps: float | None
    unchunked_goodput_rps: float | None
    static_goodput_rps: float
    """The disaggregated plan the verdict judges: the static split (the phase's best split
    when the pools follow the mix)."""
    phase_best_goodput_rps: float
    phase_ideal_goodput_rps: float


@dataclass(frozen=True, kw_only=True)
class FigureData:
    """Everything the figure draws."""

    phase: str
    """The phase whose mix the curves and the decomposition are evaluated in."""
    percentile: float
    quantiles: tuple[float, ...]
    ttft_slo_ms: float | None
    tpot_slo_ms: float | None
    rate_rps: float
    """The workload's rate in ``phase``."""
    rates_rps: np.ndarray
    """The curves' rates: evenly spaced to the end of the axis, the workload's rate and each
    plan's goodput among them."""
    curves: tuple[LatencyCurve, ...]
    cluster_gpus: int
    ideal_prefill_fraction: float | None
    splits: tuple[SplitBar, ...]
    static_split: bool
    """Whether the disaggregated plan is the static split across phases (the first bar)."""
    ttft: tuple[TtftDecomposition, ...]
    phases: tuple[PhaseGoodput, ...]
    """Empty for a single-phase workload."""


# --------------------------------------------------------------------------- evaluators
Evaluator = Callable[[np.ndarray, float], tuple[np.ndarray, np.ndarray]]
"""(whole-plan rates, quantile) → (TTFT_q s, TPOT_q s); NaN where overloaded."""


def _shape(shapes: list[Shape], tensor_parallel: int, pipeline_stages: int,
           expert_parallel: int = 1) -> Shape | None:
    return next((s for s in shapes if s.instance.tensor_parallel == tensor_parallel
                 and s.instance.pipeline_stages == pipeline_stages
                 and s.instance.expert_parallel == expert_parallel), None)


def _colocated_eval(shape: Shape, plan: ColocatedPlan, ph: TrafficPhase,
                    router: RouterPolicy) -> Evaluator:
    n = max(plan.instances, 1)
    pool = float(queue_instances(n))
    chunk = None if plan.chunk_tokens is None else np.array(float(plan.chunk_tokens))
    seqs = shape.max_sequences[ph.name]

    def run(rates: np.ndarray, q: float) -> tuple[np.ndarray, np.ndarray]:
        pt = evaluate_colocated(shape.instance, seqs, ph, np.asarray(rates, float) / n, chunk,
                                q, pool, router)
        bad = np.asarray(pt.overloaded, bool)
        return (np.where(bad, np.nan, pt.ttft_q_s), np.where(bad, np.nan, pt.tpot_q_s))

    return run


@dataclass(frozen=True, kw_only=True)
class _Disagg:
    pshape: Shape
    dshape: Shape
    alloc: AllocationSummary
    link_bytes_per_s: float
    kv_bytes_per_request: float
    path: KvPath


def _disagg_parts(d: _Disagg, sc: Scenario, caps: Capacities, ph: TrafficPhase,
                  rates: np.ndarray, q: float) -> tuple[np.ndarray, ...]:
    """(own prefill, wait, exposed transfer, overloaded) seconds at whole-plan ``rates``."""
    a = d.alloc
    util = np.asarray(link_utilization(rates * d.kv_bytes_per_request, d.link_bytes_per_s))
    link = caps.group_at(sc.cluster.gpus).link
    lm, per_request = prefill_service(d.pshape.instance, ph.prompt_tokens.mean)
    own, wait, exposed, rho = prefill_ttft_parts(
        d.pshape.instance, ph, rates / a.prefill_instances, q, link, np.minimum(util, 0.999),
        lm, a.prefill_instances, per_request, d.path, sc.router)
    over = (np.asarray(rho) >= 1.0) | (util >= 1.0)
    return (np.broadcast_to(own, rates.shape), np.broadcast_to(wait, rates.shape),
            np.broadcast_to(exposed, rates.shape), over)


def _disagg_eval(d: _Disagg, sc: Scenario, caps: Capacities, ph: TrafficPhase) -> Evaluator:
    overhead = request_path_s(d.pshape.instance)
    seqs = d.dshape.max_sequences[ph.name]

    def run(rates: np.ndarray, q: float) -> tuple[np.ndarray, np.ndarray]:
        rates = np.atleast_1d(np.asarray(rates, float))
        own, wait, exposed, over = _disagg_parts(d, sc, caps, ph, rates, q)
        dec = [decode_tpot_at_rate(d.dshape.instance, ph, float(r) / d.alloc.decode_instances,
                                   seqs) for r in rates]
        tpot = np.array([t for t, _, _ in dec])
        bad = over | np.array([o for _, _, o in dec])
        return (np.where(bad, np.nan, own + wait + exposed + overhead),
                np.where(bad, np.nan, tpot))

    return run


# --------------------------------------------------------------------------- binding target
def binding_target(run: Evaluator, q: float, ttft_slo_s: float | None,
                   tpot_slo_s: float | None, goodput_rps: float) -> str | None:
    """What binds a plan at its goodput: at the first rate of :data:`BINDING_PROBES` past it
    that misses, ``overload`` (no steady state) or the target furthest over (``ttft``,
    ``tpot``); the one closest to its target when none misses; None when no rate meets the
    SLOs."""
    if not goodput_rps > 0:
        return None
    ttft, tpot = run(goodput_rps * np.array(BINDING_PROBES), q)
    t, p = np.asarray(ttft, float), np.asarray(tpot, float)
    over_t = np.full(t.shape, -np.inf) if ttft_slo_s is None else t / ttft_slo_s
    over_p = np.full(p.shape, -np.inf) if tpot_slo_s is None else p / tpot_slo_s
    overloaded = ~(np.isfinite(t) & np.isfinite(p))
    miss = np.flatnonzero(overloaded | (over_t > 1.0) | (over_p > 1.0))
    i = int(miss[0]) if miss.size else 0
    if overloaded[i]:
        return "overload"
    if not (math.isfinite(over_t[i]) or math.isfinite(over_p[i])):
        return "overload"  # no targets: only the capacity binds
    return "ttft" if over_t[i] >= over_p[i] else "tpot"


# --------------------------------------------------------------------------- the figure
@dataclass(frozen=True)
class _DisaggView:
    """The disaggregated plan of one phase as the verdict judges it."""

    allocation: AllocationSummary
    goodput_rps: float
    static: bool
    """Whether it is the static split across phases (the pools cannot follow the mix)."""
    other: AllocationSummary | None
    """The bar beside it: the runner-up split, or for a static split the best split of the
    phase alone."""


def _disagg_view(model: ModelResult, sc: Scenario, k: int) -> _DisaggView | None:
    """Phase ``k``'s disaggregated plan: the static split when the pools cannot follow the
    mix (with that phase's goodput under it), the phase's best split otherwise."""
    best = model.phases[k].disaggregated
    static = model.static_allocation
    if len(sc.phases) > 1 and not sc.autoscaling and static is not None:
        good = model.phases[k].static_goodput_rps
        return _DisaggView(static, static.max_goodput_rps if good is None else good, True,
                           None if best is None else best.allocation)
    if best is None or best.allocation is None:
        return None
    return _DisaggView(best.allocation, best.max_goodput_rps, False,
                       best.alternatives[0] if best.alternatives else None)


def _bars(view: _DisaggView | None) -> tuple[SplitBar, ...]:
    if view is None:
        return ()
    out = [(view.allocation, "static" if view.static else "best", view.goodput_rps)]
    if view.other is not None:
        out.append((view.other, "phase-best" if view.static else "runner-up",
                    view.other.max_goodput_rps))
    return tuple(SplitBar(role=role, prefill_gpus=a.prefill_gpus, decode_gpus=a.decode_gpus,
                          idle_gpus=a.idle_gpus,
                          prefill_instances=a.prefill_instances,
                          decode_instances=a.decode_instances, goodput_rps=good)
                 for a, role, good in out)


def _ms(seconds: np.ndarray) -> np.ndarray:
    return np.asarray(seconds, dtype=float) * 1000.0


def figure_data(sc: Scenario, model: ModelResult, caps: Capacities, phase: str | None = None,
                points: int = CURVE_POINTS) -> FigureData:
    """The figure's data for ``sc`` as ``model`` evaluated it (``caps``: its capacity tables;
    ``phase``: the phase the curves use, default the one binding the colocated plan)."""
    names = [p.name for p in sc.phases]
    name = phase if phase in names else model.colocated_phase
    k = names.index(name) if name in names else 0
    ph = sc.phases[k]
    pr = model.phases[k]
    shapes = caps.group_at(sc.cluster.gpus).shapes
    slo = sc.slo
    ttft_s = None if slo.ttft_ms is None else slo.ttft_ms / 1000.0
    tpot_s = None if slo.tpot_ms is None else slo.tpot_ms / 1000.0
    quantiles = tuple(sorted({*CURVE_QUANTILES, round(slo.quantile, 6)}))

    evaluators: list[tuple[str, Evaluator, float]] = []
    decomposition: list[TtftDecomposition] = []
    for key, plan in ((COLOCATED, pr.colocated), (UNCHUNKED, pr.unchunked)):
        if plan is None:
            continue
        shape = _shape(shapes, plan.tensor_parallel, plan.pipeline_stages, plan.expert_parallel)
        if shape is None:
            continue
        evaluators.append((key, _colocated_eval(shape, plan, ph, sc.router), plan.max_goodput_rps))
        decomposition.append(_decomposition(key, _colocated_parts(shape, plan, ph,
                                                                  slo.quantile, sc.router)))
    view = _disagg_view(model, sc, k)
    if view is not None:
        alloc = view.allocation
        pshape = _shape(shapes, alloc.prefill_tensor_parallel, alloc.prefill_pipeline_stages,
                        alloc.prefill_expert_parallel)
        dshape = _shape(shapes, alloc.decode_tensor_parallel, alloc.decode_pipeline_stages,
                        alloc.decode_expert_parallel)
        if pshape is not None and dshape is not None:
            link = caps.group_at(sc.cluster.gpus).link
            path = kv_path(link, pshape.instance, dshape.instance)
            d = _Disagg(pshape=pshape, dshape=dshape, alloc=alloc,
                        link_bytes_per_s=float(link_capacity_bytes_per_s(link, alloc.prefill_gpus)),
                        kv_bytes_per_request=ph.prompt_tokens.mean * path.bytes_per_token,
                        path=path)
            evaluators.insert(1 if evaluators and evaluators[0][0] == COLOCATED else 0,
                              (DISAGGREGATED, _disagg_eval(d, sc, caps, ph), view.goodput_rps))
            decomposition.insert(min(1, len(decomposition)), _decomposition(
                DISAGGREGATED, _disagg_ttft_parts(d, sc, caps, ph, slo.quantile)))

    top = max([ph.rate_rps * 1.5, *(good * AXIS_HEADROOM for _, _, good in evaluators)])
    # the workload's rate and each goodput are points of every curve
    rates = np.union1d(np.linspace(top / points, top, points),
                       [ph.rate_rps, *(good for _, _, good in evaluators if good > 0)])
    curves = []
    for key, run, good in evaluators:
        ttft: dict[float, np.ndarray] = {}
        tpot: dict[float, np.ndarray] = {}
        for q in quantiles:
            t, p = run(rates, q)
            ttft[q], tpot[q] = _ms(t), _ms(p)
        curves.append(LatencyCurve(plan=key, label=PLAN_LABELS[key], ttft_ms=ttft, tpot_ms=tpot,
                                   goodput_rps=good,
                                   limited_by=binding_target(run, slo.quantile, ttft_s, tpot_s,
                                                             good)))

    phases: tuple[PhaseGoodput, ...] = ()
    if len(sc.phases) > 1:
        phases = tuple(_phase_goodput(p) for p in model.phases)
    own = pr.disaggregated
    ideal = None if own is None or view is None else own.ideal_prefill_fraction
    return FigureData(phase=name, percentile=slo.percentile, quantiles=quantiles,
                      ttft_slo_ms=slo.ttft_ms, tpot_slo_ms=slo.tpot_ms, rate_rps=ph.rate_rps,
                      rates_rps=rates, curves=tuple(curves), cluster_gpus=sc.cluster.gpus,
                      ideal_prefill_fraction=ideal, splits=_bars(view),
                      static_split=view is not None and view.static,
                      ttft=tuple(decomposition), phases=phases)


def _decomposition(plan: str, parts: dict[str, float] | None) -> TtftDecomposition:
    if parts is None:  # overloaded at the workload's rate
        return TtftDecomposition(plan, PLAN_LABELS[plan], {}, None)
    return TtftDecomposition(plan, PLAN_LABELS[plan], parts, sum(parts.values()))


def _phase_goodput(p: PhaseResult) -> PhaseGoodput:
    best = p.disaggregated
    return PhaseGoodput(
        name=p.name, rate_rps=p.rate_rps,
        colocated_goodput_rps=None if p.colocated is None else p.colocated.max_goodput_rps,
        unchunked_goodput_rps=None if p.unchunked is None else p.unchunked.max_goodput_rps,
        static_goodput_rps=p.static_goodput_rps if p.static_goodput_rps is not None
        else (best.max_goodput_rps if best else 0.0),
        phase_best_goodput_rps=best.max_goodput_rps if best else 0.0,
        phase_ideal_goodput_rps=best.ideal_max_goodput_rps if best else 0.0)


def _colocated_parts(shape: Shape, plan: ColocatedPlan, ph: TrafficPhase,
                     q: float, router: RouterPolicy) -> dict[str, float] | None:
    """The colocated TTFT percentile at the plan's rate in parts (ms); None if overloaded."""
    n = max(plan.instances, 1)
    chunk = None if plan.chunk_tokens is None else np.array(float(plan.chunk_tokens))
    pt = evaluate_colocated(shape.instance, shape.max_sequences[ph.name], ph,
                            np.array(ph.rate_rps / n), chunk, q, float(queue_instances(n)),
                            router)
    if bool(pt.overloaded) or pt.ttft_prefill_s is None or pt.ttft_step_s is None \
            or pt.ttft_wait_s is None:
        return None
    prefill = float(pt.ttft_prefill_s)
    queue = float(pt.ttft_wait_s)
    if plan.chunk_tokens is not None:
        own = float(own_prompt_prefill_s(shape.instance, ph, q, pt, plan.chunk_tokens))
        queue += max(prefill - own, 0.0)
        prefill = min(own, prefill)
    return {"queueing": queue * 1000.0, "prefill": prefill * 1000.0, "kv_transfer": 0.0,
            "decode_step": float(pt.ttft_step_s) * 1000.0,
            "overhead": float(shape.instance.request_overhead_s) * 1000.0}


def _disagg_ttft_parts(d: _Disagg, sc: Scenario, caps: Capacities, ph: TrafficPhase,
                       q: float) -> dict[str, float] | None:
    """The disaggregated TTFT percentile at the workload's rate in parts (ms): the first
    token comes out of the prefill pass, so no decode step is part of it."""
    own, wait, exposed, over = _disagg_parts(d, sc, caps, ph, np.array([ph.rate_rps]), q)
    if bool(over[0]):
        return None
    return {"queueing": float(wait[0]) * 1000.0, "prefill": float(own[0]) * 1000.0,
            "kv_transfer": float(exposed[0]) * 1000.0, "decode_step": 0.0,
            "overhead": request_path_s(d.pshape.instance) * 1000.0}
