"""The analytic model's predictions for exactly the simulated plan, phase by phase.

The same core functions ``evaluate`` uses, called on the simulated allocation at each phase's
rate (so a user-given plan is compared with its own prediction, and the default plan
reproduces ``ModelResult``'s figures):

* colocated: ``evaluate_colocated`` per instance at rate / instances, with the pool size and
  the router policy the simulator runs (``routing.dispatch_wait_s``);
* disaggregated: ``prefill_ttft`` per prefill instance (with the KV link's utilisation, as
  ``evaluate`` passes it, and the same router model) and ``decode_tpot_at_rate`` per decode
  instance.

Percentiles 50, 95 and 99 are asked of the model directly (its ``quantile`` argument).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from advisor.core.colocated import evaluate_colocated
from advisor.core.disaggregated import decode_tpot_at_rate, kv_path, prefill_ttft
from advisor.core.kv_transfer import link_capacity_bytes_per_s
from advisor.core.scenario import RouterPolicy, TrafficPhase
from advisor.core.simulate.plan import ColocatedSimPlan, Deployment

QUANTILES = (0.50, 0.95, 0.99)


@dataclass(frozen=True, kw_only=True)
class AnalyticPrediction:
    """Analytic figures for one phase (ms; None when the model calls the point overloaded)."""

    ttft_ms: tuple[float | None, float | None, float | None]
    """At QUANTILES."""
    tpot_ms: tuple[float | None, float | None, float | None]
    overloaded: bool
    kv_link_utilization: float | None
    decode_batch: float
    """Mean decode batch per (decode) instance."""
    slo_ttft_ms: float | None = None
    """At the SLO's percentile."""
    slo_tpot_ms: float | None = None


Triple = tuple[float | None, float | None, float | None]


def _ms(x: float | np.ndarray) -> float | None:
    v = float(x)
    return v * 1000.0 if math.isfinite(v) else None


def _triple(values: list[float | None]) -> Triple:
    return (values[0], values[1], values[2])


def predict(dep: Deployment, phase: TrafficPhase, phase_index: int,
            slo_quantile: float = 0.95, routing: RouterPolicy = "least-loaded"
            ) -> AnalyticPrediction:
    """The analytic prediction of ``dep`` serving ``phase`` (also at ``slo_quantile``) with
    the simulator's ``routing`` on every pool (``routing.dispatch_wait_s``, as ``evaluate``
    prices it)."""
    qs = (*QUANTILES, slo_quantile)
    ttft: list[float | None] = []
    if isinstance(dep.plan, ColocatedSimPlan):
        pool = dep.pools[0]
        rate = phase.rate_rps / pool.instances
        chunk = None if dep.plan.chunk_tokens is None else np.array(float(dep.plan.chunk_tokens))
        tpots: list[float | None] = []
        over = False
        batch = 0.0
        for q in qs:
            pt = evaluate_colocated(pool.instance, pool.max_sequences[phase_index], phase,
                                    np.array(rate), chunk, q, float(pool.instances),
                                    routing)
            over = over or bool(pt.overloaded)
            ttft.append(None if pt.overloaded else _ms(pt.ttft_q_s))
            tpots.append(None if pt.overloaded else _ms(pt.tpot_q_s))
            batch = float(pt.batch)
        return AnalyticPrediction(ttft_ms=_triple(ttft), tpot_ms=_triple(tpots), overloaded=over,
                                  kv_link_utilization=None, decode_batch=batch, slo_ttft_ms=ttft[3],
                                  slo_tpot_ms=tpots[3])

    pre, dec = dep.pools
    assert dep.link is not None
    pinst = pre.instance
    path = kv_path(dep.link, pinst, dec.instance)
    bytes_mean = phase.prompt_tokens.mean * path.bytes_per_token
    capacity = float(link_capacity_bytes_per_s(dep.link, pre.instances * pinst.gpus))
    util = phase.rate_rps * bytes_mean / capacity if capacity > 0 else math.inf
    rate_p = phase.rate_rps / pre.instances
    rate_d = phase.rate_rps / dec.instances
    lm = dep.prefill_batch_tokens[phase_index]
    tpot_s, batch, d_over = decode_tpot_at_rate(dec.instance, phase, rate_d,
                                                dec.max_sequences[phase_index])
    over = bool(d_over) or util >= 1.0
    for q in qs:
        t, rho, _ = prefill_ttft(pinst, phase, np.array(rate_p), q, dep.link, min(util, 0.999), lm,
                                 pre.instances, path=path, router=routing)
        over = over or bool(rho >= 1.0)
        ttft.append(_ms(t))
    tpot = None if over else _ms(tpot_s)
    ttft = [None if over else x for x in ttft]
    return AnalyticPrediction(ttft_ms=_triple(ttft), tpot_ms=(tpot, tpot, tpot), overloaded=over,
                              kv_link_utilization=float(util),
                              decode_batch=float(batch), slo_ttft_ms=ttft[3], slo_tpot_ms=tpot)
