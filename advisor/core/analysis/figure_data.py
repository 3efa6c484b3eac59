"""The data of the report's figure, computed from the model (no drawing here).

``recommend --plot`` and the HTML report draw four panels (docs/model.md §11):

(a) latency–load curves: the TTFT and TPOT percentiles (p95, p99 and the SLO's) of the best
    colocated (chunked), disaggregated and unchunked plans against the request rate, each
    plan kept as evaluated (same instances, same split) while the rate grows, in the traffic
    mix of one phase (the phase that binds the recommended architecture); with the rate at
    which each stops meeting the SLOs (a root of ``max(TTFT_q/SLO, TPOT_q/SLO) − 1``,
    scipy's ``brentq``; overload counts as a miss);
(b) the P:D allocation: GPUs per pool (prefill, decode, idle) of the best and runner-up
    splits, beside the ideal prefill fraction;
(c) the TTFT decomposition of each plan at the workload's rate: queueing, prefill, KV
    transfer, the decode step in progress, the per-request overhead — the parts sum to the
    model's TTFT percentile;
(d) for workloads with several phases: the goodput of the static split in each phase
    against the best split of that phase alone (per-phase re-allocation) and its rate.

Every number is the model's own: the curves call the functions ``plan.evaluate`` calls
(``evaluate_colocated``, ``prefill_ttft``, ``decode_tpot_at_rate``) with the plan's
instances, so at the workload's rate they reproduce the plan's reported percentiles.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from advisor.core.colocated import evaluate_colocated, own_prompt_prefill_s, queue_instances
from advisor.core.disaggregated import decode_tpot_at_rate, prefill_service, prefill_ttft_parts
from advisor.core.kv_transfer import link_utilization
from advisor.core.plan.capacities import Capacities
from advisor.core.plan.shapes import Shape
from advisor.core.results import AllocationSummary, ColocatedPlan, DisaggregatedPlan, ModelResult
from advisor.core.scenario import Scenario, TrafficPhase

CURVE_POINTS = 60
"""Rates per curve (evenly spaced from 0 to the end of the axis, plus the workload's rate)."""
CURVE_QUANTILES = (0.95, 0.99)
"""Percentiles drawn besides the SLO's."""
AXIS_HEADROOM = 1.25
"""The rate axis ends this far past the largest SLO limit (and at least at 1.5× the rate)."""
LIMIT_RTOL = 1e-4
"""Relative tolerance of the SLO-limit root."""
MAX_DOUBLINGS = 60

COLOCATED, DISAGGREGATED, UNCHUNKED = "colocated", "disaggregated", "unchunked"
PLAN_LABELS = {COLOCATED: "colocated, chunked prefill",
               DISAGGREGATED: "disaggregated prefill/decode",
               UNCHUNKED: "colocated, unchunked"}
TTFT_PARTS = ("queueing", "prefill", "kv_transfer", "decode_step", "overhead")
"""TTFT decomposition keys, in drawing order."""


@dataclass(frozen=True)
class LatencyCurve:
    """One plan's percentiles against the whole-plan request rate (NaN: overloaded)."""

    plan: str
    label: str
    ttft_ms: dict[float, np.ndarray]
    """Per quantile (0.95 → array over ``FigureData.rates_rps``)."""
    tpot_ms: dict[float, np.ndarray]
    slo_limit_rps: float | None
    """Largest rate meeting the SLOs (capacity without SLOs); None: no rate does."""
    limited_by: str | None
    """What fails just past ``slo_limit_rps``: ``ttft``, ``tpot`` or ``overload``."""
    max_goodput_rps: float
    """The model's goodput of the plan (its limit as ``evaluate`` found it)."""


@dataclass(frozen=True)
class SplitBar:
    """One integer P:D split, in GPUs."""

    label: str
    prefill_gpus: int
    decode_gpus: int
    idle_gpus: int
    prefill_instances: int
    decode_instances: int
    goodput_rps: float


@dataclass(frozen=True)
class TtftDecomposition:
    """A plan's TTFT percentile at the workload's rate, in parts (ms) that sum to it."""

    plan: str
    label: str
    parts_ms: dict[str, float]
    total_ms: float


@dataclass(frozen=True)
class PhaseGoodput:
    """One phase: the static split's goodput against the phase's own best split."""

    name: str
    rate_rps: float
    static_goodput_rps: float
    phase_best_goodput_rps: float
    phase_ideal_goodput_rps: float


@dataclass(frozen=True)
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
    curves: tuple[LatencyCurve, ...]
    cluster_gpus: int
    ideal_prefill_fraction: float | None
    splits: tuple[SplitBar, ...]
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


def _colocated_eval(shape: Shape, plan: ColocatedPlan, ph: TrafficPhase) -> Evaluator:
    n = max(plan.instances, 1)
    pool = float(queue_instances(n))
    chunk = None if plan.chunk_tokens is None else np.array(float(plan.chunk_tokens))
    seqs = shape.max_sequences[ph.name]

    def run(rates: np.ndarray, q: float) -> tuple[np.ndarray, np.ndarray]:
        pt = evaluate_colocated(shape.instance, seqs, ph, np.asarray(rates, float) / n, chunk,
                                q, pool)
        bad = np.asarray(pt.overloaded, bool)
        return (np.where(bad, np.nan, pt.ttft_q_s), np.where(bad, np.nan, pt.tpot_q_s))

    return run


@dataclass(frozen=True)
class _Disagg:
    pshape: Shape
    dshape: Shape
    alloc: AllocationSummary
    link_bytes_per_s: float
    kv_bytes_per_request: float


def _disagg_parts(d: _Disagg, sc: Scenario, caps: Capacities, ph: TrafficPhase,
                  rates: np.ndarray, q: float) -> tuple[np.ndarray, ...]:
    """(own prefill, wait, exposed transfer, overloaded) seconds at whole-plan ``rates``."""
    a = d.alloc
    util = np.asarray(link_utilization(rates * d.kv_bytes_per_request, d.link_bytes_per_s))
    link = caps.group_at(sc.cluster.gpus).link
    lm, per_request = prefill_service(d.pshape.instance, ph.prompt_tokens.mean)
    own, wait, exposed, rho = prefill_ttft_parts(
        d.pshape.instance, ph, rates / a.prefill_instances, q, link, np.minimum(util, 0.999),
        lm, a.prefill_instances, per_request)
    over = (np.asarray(rho) >= 1.0) | (util >= 1.0)
    return (np.broadcast_to(own, rates.shape), np.broadcast_to(wait, rates.shape),
            np.broadcast_to(exposed, rates.shape), over)


def _disagg_eval(d: _Disagg, sc: Scenario, caps: Capacities, ph: TrafficPhase) -> Evaluator:
    overhead = d.pshape.instance.efficiency.request_overhead_s
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


# --------------------------------------------------------------------------- SLO limit
def limiting_metric(run: Evaluator, q: float, ttft_slo_s: float | None,
                    tpot_slo_s: float | None, limit_rps: float | None) -> str | None:
    """Which target fails first past ``limit_rps``: ``ttft``, ``tpot`` or ``overload``."""
    if limit_rps is None:
        return None
    ttft, tpot = run(np.array([limit_rps * (1.0 + 10 * LIMIT_RTOL)]), q)
    t, p = float(ttft[0]), float(tpot[0])
    if not (math.isfinite(t) and math.isfinite(p)):
        return "overload"
    over_t = -math.inf if ttft_slo_s is None else t / ttft_slo_s
    over_p = -math.inf if tpot_slo_s is None else p / tpot_slo_s
    return "ttft" if over_t >= over_p else "tpot"


def _miss(run: Evaluator, q: float, ttft_slo_s: float | None, tpot_slo_s: float | None,
          rate: float) -> float:
    """> 0 where the plan misses the SLOs (or is overloaded) at ``rate``, < 0 where it
    meets them: max over the set targets of percentile/target − 1."""
    ttft, tpot = run(np.array([rate]), q)
    t, p = float(ttft[0]), float(tpot[0])
    if not (math.isfinite(t) and math.isfinite(p)):
        return 1.0
    ratios = [-0.5]  # no target: only overload is a miss
    if ttft_slo_s is not None:
        ratios.append(t / ttft_slo_s - 1.0)
    if tpot_slo_s is not None:
        ratios.append(p / tpot_slo_s - 1.0)
    return max(ratios)


def slo_limit_rps(run: Evaluator, q: float, ttft_slo_s: float | None,
                  tpot_slo_s: float | None, start_rps: float) -> float | None:
    """The rate where the plan stops meeting the SLOs: the root of :func:`_miss` between a
    light load and the first doubling of ``start_rps`` that misses (None: it misses even at
    a light load; percentiles grow with the rate, so the root is the boundary)."""
    from scipy.optimize import brentq

    lo = max(start_rps, 1e-9) * 1e-6
    if _miss(run, q, ttft_slo_s, tpot_slo_s, lo) > 0:
        return None
    hi = max(start_rps, lo * 2.0)
    for _ in range(MAX_DOUBLINGS):
        if _miss(run, q, ttft_slo_s, tpot_slo_s, hi) > 0:
            break
        lo, hi = hi, hi * 2.0
    else:
        return None
    return float(brentq(lambda r: _miss(run, q, ttft_slo_s, tpot_slo_s, r), lo, hi,
                        rtol=LIMIT_RTOL, xtol=lo * 1e-9 + 1e-12))


# --------------------------------------------------------------------------- the figure
def _phase_disagg(model: ModelResult, sc: Scenario, k: int) -> DisaggregatedPlan | None:
    """The disaggregated plan of phase ``k`` as the verdict saw it: the static split when
    the pools cannot follow the mix, the phase's best split otherwise."""
    ph = model.phases[k]
    if ph.name == model.disaggregated_phase:
        return model.disaggregated
    return ph.disaggregated


def _allocation_for(model: ModelResult, sc: Scenario, k: int) -> AllocationSummary | None:
    plan = _phase_disagg(model, sc, k)
    if len(sc.phases) > 1 and not sc.autoscaling and model.static_allocation is not None:
        return model.static_allocation
    return None if plan is None else plan.allocation


def _bars(model: ModelResult) -> tuple[SplitBar, ...]:
    plan = model.disaggregated
    if plan is None or plan.allocation is None:
        return ()
    out = [(plan.allocation, "best")]
    if plan.alternatives:
        out.append((plan.alternatives[0], "runner-up"))
    return tuple(SplitBar(label, a.prefill_gpus, a.decode_gpus, a.idle_gpus,
                          a.prefill_instances, a.decode_instances, a.max_goodput_rps)
                 for a, label in out)


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
        evaluators.append((key, _colocated_eval(shape, plan, ph), plan.max_goodput_rps))
        parts = _colocated_parts(shape, plan, ph, slo.quantile)
        if parts is not None:
            decomposition.append(TtftDecomposition(key, PLAN_LABELS[key], parts,
                                                   sum(parts.values())))
    alloc = _allocation_for(model, sc, k)
    dplan = _phase_disagg(model, sc, k)
    if alloc is not None and dplan is not None:
        pshape = _shape(shapes, alloc.prefill_tensor_parallel, alloc.prefill_pipeline_stages,
                        alloc.prefill_expert_parallel)
        dshape = _shape(shapes, alloc.decode_tensor_parallel, alloc.decode_pipeline_stages,
                        alloc.decode_expert_parallel)
        if pshape is not None and dshape is not None:
            link = caps.group_at(sc.cluster.gpus).link
            d = _Disagg(pshape, dshape, alloc, alloc.prefill_gpus * link.effective_bytes_per_s,
                        ph.prompt_tokens.mean * pshape.instance.kv_bytes_per_token_wire)
            goodput = (dplan.max_goodput_rps if dplan.allocation == alloc
                       else pr.static_goodput_rps or alloc.max_goodput_rps)
            evaluators.insert(1 if evaluators and evaluators[0][0] == COLOCATED else 0,
                              (DISAGGREGATED, _disagg_eval(d, sc, caps, ph), goodput))
            parts = _disagg_ttft_parts(d, sc, caps, ph, slo.quantile)
            if parts is not None:
                decomposition.insert(min(1, len(decomposition)), TtftDecomposition(
                    DISAGGREGATED, PLAN_LABELS[DISAGGREGATED], parts, sum(parts.values())))

    limits = {key: slo_limit_rps(run, slo.quantile, ttft_s, tpot_s,
                                 max(good, ph.rate_rps, 1e-6))
              for key, run, good in evaluators}
    top = max([ph.rate_rps * 1.5, *((v or 0.0) * AXIS_HEADROOM for v in limits.values())])
    rates = np.union1d(np.linspace(top / points, top, points), [ph.rate_rps])
    curves = []
    for key, run, good in evaluators:
        ttft: dict[float, np.ndarray] = {}
        tpot: dict[float, np.ndarray] = {}
        for q in quantiles:
            t, p = run(rates, q)
            ttft[q], tpot[q] = _ms(t), _ms(p)
        curves.append(LatencyCurve(key, PLAN_LABELS[key], ttft, tpot, limits[key],
                                   limiting_metric(run, slo.quantile, ttft_s, tpot_s,
                                                   limits[key]), good))

    phases: tuple[PhaseGoodput, ...] = ()
    if len(sc.phases) > 1:
        phases = tuple(PhaseGoodput(
            p.name, p.rate_rps,
            p.static_goodput_rps if p.static_goodput_rps is not None
            else (p.disaggregated.max_goodput_rps if p.disaggregated else 0.0),
            p.disaggregated.max_goodput_rps if p.disaggregated else 0.0,
            p.disaggregated.ideal_max_goodput_rps if p.disaggregated else 0.0)
            for p in model.phases)
    ideal = None if model.disaggregated is None else model.disaggregated.ideal_prefill_fraction
    return FigureData(phase=name, percentile=slo.percentile, quantiles=quantiles,
                      ttft_slo_ms=slo.ttft_ms, tpot_slo_ms=slo.tpot_ms, rate_rps=ph.rate_rps,
                      rates_rps=rates, curves=tuple(curves), cluster_gpus=sc.cluster.gpus,
                      ideal_prefill_fraction=ideal, splits=_bars(model),
                      ttft=tuple(decomposition), phases=phases)


def _colocated_parts(shape: Shape, plan: ColocatedPlan, ph: TrafficPhase,
                     q: float) -> dict[str, float] | None:
    """The colocated TTFT percentile at the plan's rate in parts (ms); None if overloaded."""
    n = max(plan.instances, 1)
    chunk = None if plan.chunk_tokens is None else np.array(float(plan.chunk_tokens))
    pt = evaluate_colocated(shape.instance, shape.max_sequences[ph.name], ph,
                            np.array(ph.rate_rps / n), chunk, q, float(queue_instances(n)))
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
            "overhead": float(d.pshape.instance.efficiency.request_overhead_s) * 1000.0}
