"""Right-sizing: the fewest GPUs each plan needs at the offered rate, and its headroom.

A plan given the whole cluster carries its goodput; against the offered rate that is its
*headroom* (worst phase's goodput / rate: ≥ 1 carries it, 11 carries eleven times the rate).
The GPUs it needs are the fewest that carry every phase's rate within the SLOs:

* colocated — ⌈R / per-instance goodput⌉ instances of the plan's shape (the per-instance
  goodput at the cluster's prompt-queue pool size; a smaller pool queues a little more, so
  this is a lower bound within one pool size step);
* disaggregated — DistServe's ceilings per shape pair: the fewest x prefill instances with
  x·P(x) ≥ R (each split's own pooled prefill queue), more when the KV link needs more NICs,
  y = ⌈R/D⌉ decode instances; x·g_p + y·g_d GPUs, whole nodes when an instance spans nodes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from advisor.core.plan.split import PoolOption, PoolRates
from advisor.core.results import ColocatedPlan
from advisor.core.scenario import TrafficPhase


def worst_headroom(phases: Sequence[TrafficPhase], per_phase: Mapping[str, ColocatedPlan]
                   ) -> float:
    """The worst phase's goodput / rate of a colocated plan (0 without one)."""
    if not per_phase:
        return 0.0
    return float(min(per_phase[p.name].max_goodput_rps / p.rate_rps for p in phases))


def colocated_gpus_needed(phases: Sequence[TrafficPhase],
                          per_phase: Mapping[str, ColocatedPlan]) -> int | None:
    """Fewest GPUs of a colocated plan's shape carrying every phase's rate (None: none)."""
    if not per_phase:
        return None
    need = 0
    for ph in phases:
        pp = per_phase[ph.name]
        per_inst = pp.max_goodput_rps / max(pp.instances, 1)
        if per_inst <= 0 or pp.instances <= 0:
            return None
        need = max(need, math.ceil(ph.rate_rps / per_inst) * (pp.gpus // pp.instances))
    return need


@dataclass(frozen=True, kw_only=True)
class PhaseSplitOptions:
    """One phase's pools at the cluster's size: what the disaggregated sizing reads."""

    rate_rps: float
    prefill: Sequence[PoolOption]
    decode: Sequence[PoolOption]
    own_pool: PoolRates
    """Prefill goodput per instance by the split's own pool size."""
    link_rate_per_prefill_gpu: float


def _prefill_instances_for(own: PoolRates, option: int, rate_rps: float) -> int | None:
    """Fewest instances x of ``option`` whose pooled queue carries ``rate_rps``: x·P(x) ≥ R
    over the tabulated pool sizes (the cluster's), else ⌈R/P(top)⌉ beyond them (P grows
    with the pool, so that many carry it: conservative); None if it serves nothing."""
    top = int(own.sizes[-1])
    xs = np.arange(1, top + 1, dtype=np.int64)
    carried = xs * own.at(np.full(xs.shape, option), xs)
    enough = np.flatnonzero(carried >= rate_rps * (1 - 1e-9))
    if enough.size:
        return int(xs[enough[0]])
    p_top = float(own.at(option, top))
    if p_top <= 0:
        return None
    return max(top + 1, math.ceil(rate_rps / p_top - 1e-9))


def disaggregated_gpus_needed(gpus_per_node: int, phases: Sequence[PhaseSplitOptions],
                              compatible: np.ndarray | None = None) -> int | None:
    """Fewest GPUs whose integer split carries every phase's rate (module docstring), over the
    (prefill, decode) pairs the engine can deploy (``compatible[i, j]``; all when None)."""
    gpn = gpus_per_node
    need = 0
    for sp in phases:
        best = None
        for i, p in enumerate(sp.prefill):
            x = _prefill_instances_for(sp.own_pool, i, sp.rate_rps)
            if x is None:
                continue
            if sp.link_rate_per_prefill_gpu > 0:
                x = max(x, math.ceil(sp.rate_rps / (p.gpus * sp.link_rate_per_prefill_gpu)
                                     - 1e-9))
            for j, d in enumerate(sp.decode):
                if d.rate_rps <= 0 or (compatible is not None and not compatible[i, j]):
                    continue
                y = math.ceil(sp.rate_rps / d.rate_rps - 1e-9)
                gpus = x * p.gpus + y * d.gpus
                if p.gpus > gpn or d.gpus > gpn:
                    gpus = -(-gpus // gpn) * gpn
                best = gpus if best is None else min(best, gpus)
        if best is None:
            return None
        need = max(need, best)
    return need
