"""A split under a drifting mix: the goodput a fixed P:D split keeps when prompts and outputs
change length (docs/model.md §8.1, #14).

A static prefill:decode split is sized for one mix. When the mean prompt grows while the mean
output shrinks (or the reverse) the ratio of prefill to decode work moves and the split goes
stale. The drift band ``policy.assumed_mix_drift`` (±d) is evaluated at its two corners that
move the ratio furthest — prompts ×(1+d) with outputs ×(1−d), and prompts ×(1−d) with
outputs ×(1+d) — at the same arrival rate. (Scaling both lengths the same way changes the load
but not the ratio, so re-splitting recovers little there.) Each corner is a scenario with
every phase's length distributions scaled (lognormal shape kept; the memory-planning upper
length scaled up with a growing mix, never below the workload's), evaluated by the same
capacity tables as the workload itself. A shape that no longer fits at a corner serves
nothing there.

The loss of a split at a corner is ``1 − goodput(split) / goodput(best split of the same
GPUs)`` under that corner's capacities; the drift loss is the worst corner's.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from advisor.core.distributions import LengthDistribution
from advisor.core.plan.capacities import Capacities, CapacityGroup
from advisor.core.plan.split import PoolRates, best_splits
from advisor.core.scenario import Scenario


def _scaled(dist: LengthDistribution, factor: float) -> LengthDistribution:
    """``dist`` with every length scaled by ``factor`` (at least one token); its planning
    length (``max``) scales up with it but never below the original."""
    mean = max(dist.mean * factor, 1.0)
    ratio = mean / dist.mean
    return LengthDistribution(mean=mean, mu=dist.mu + math.log(ratio), sigma=dist.sigma,
                              max_tokens=dist.upper_tokens * max(ratio, 1.0))


def drift_corners(drift: float) -> tuple[tuple[float, float], ...]:
    """(prompt scale, output scale) of the corners of a ±``drift`` band that move the P:D
    ratio furthest; none for a zero band."""
    if drift <= 0:
        return ()
    return ((1.0 + drift, 1.0 - drift), (1.0 - drift, 1.0 + drift))


def drifted_scenario(sc: Scenario, prompt_scale: float, output_scale: float) -> Scenario:
    """``sc`` with every phase's mean prompt and output lengths scaled."""
    phases = tuple(replace(ph, prompt_tokens=_scaled(ph.prompt_tokens, prompt_scale),
                           output_tokens=_scaled(ph.output_tokens, output_scale))
                   for ph in sc.phases)
    return replace(sc, phases=phases)


def corner_capacities(caps: Capacities, phases: tuple[int, ...]) -> list[Capacities]:
    """The capacities of each drift corner (:func:`drift_corners`) of the scenario of
    ``caps`` reduced to ``phases`` (indices), built once per ``caps`` and shared by every later
    call: ``evaluate``'s fragility and each design-point evaluation of the boundary searches
    read the same corner tables instead of recomputing them (#20)."""
    sc = caps.sc
    sub = replace(sc, phases=tuple(sc.phases[k] for k in phases))

    def corner(ps: float, os_: float) -> Callable[[], Capacities]:
        return lambda: Capacities(drifted_scenario(sub, ps, os_))

    return [caps.derived(("drift", phases, ps, os_), corner(ps, os_))
            for ps, os_ in drift_corners(sc.policy.assumed_mix_drift)]


def phase_rates(caps: Capacities, grp: CapacityGroup, k: int, gpus: np.ndarray
                ) -> tuple[PoolRates, np.ndarray, float]:
    """Phase k's prefill goodput per instance by the split's pool size, its (n, shapes)
    decode goodput per instance at cluster sizes ``gpus`` and its KV-link rate per prefill
    GPU."""
    G = np.asarray(gpus, dtype=np.int64)
    pre = caps.split_prefill_rates(grp, k, G)
    dec = np.tile(np.asarray(grp.phases[k].decode_rates, dtype=float), (G.size, 1))
    return pre, dec, float(grp.phases[k].link_rate)


def split_goodput(pre: PoolRates, dec: np.ndarray, link_rate: float, shape_gpus: np.ndarray,
                  prefill_option: np.ndarray, decode_option: np.ndarray, x: np.ndarray,
                  y: np.ndarray) -> np.ndarray:
    """Goodput of x prefill and y decode instances (options index the shapes; −1: no split,
    goodput 0): ``min(x·P(x), y·D, x·g_p·L)``, P(x) the prefill goodput per instance with
    the split's own x instances behind the router, per row of the (n, shapes) decode table."""
    rows = np.arange(dec.shape[0])
    pi, di = np.maximum(prefill_option, 0), np.maximum(decode_option, 0)
    p = x * pre.at(pi, np.maximum(x, 1))
    d = y * dec[rows, di]
    link = x * shape_gpus[pi] * link_rate if link_rate > 0 else np.full(p.shape, np.inf)
    good = np.minimum(np.minimum(p, d), link)
    return np.where((prefill_option >= 0) & (decode_option >= 0) & (x > 0) & (y > 0), good, 0.0)


def best_goodput(caps: Capacities, grp: CapacityGroup, k: int, gpus: np.ndarray) -> np.ndarray:
    """Phase k's best integer split goodput at each cluster size (``split.best_splits``)."""
    G = np.asarray(gpus, dtype=np.int64)
    pc = grp.phases[k]
    pi, pj = pc.pairs
    if pi.size == 0:
        return np.zeros(G.size)
    rates = caps.split_prefill_rates(grp, k, G)
    sp = best_splits(G, grp.gpus[pi], rates.take(pi), grp.gpus[pj], pc.decode_rates[pj],
                     pc.link_rate, caps.sc.cluster.gpus_per_node)
    return np.asarray(sp.goodput, dtype=float)


def shape_map(nominal: CapacityGroup, other: CapacityGroup) -> np.ndarray:
    """Index in ``other`` of each of ``nominal``'s shapes (by label; −1: absent)."""
    where = {s.label: i for i, s in enumerate(other.shapes)}
    return np.array([where.get(s.label, -1) for s in nominal.shapes], dtype=np.int64)


def corner_goodputs(nominal: CapacityGroup, caps: Capacities, grp: CapacityGroup, k: int,
                    gpus: np.ndarray, prefill_option: np.ndarray, decode_option: np.ndarray,
                    x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(goodput of the split, goodput of the best split) at one corner (``caps``, ``grp``),
    phase k, per cluster size; options index ``nominal``'s shapes."""
    G = np.asarray(gpus, dtype=np.int64)
    m = shape_map(nominal, grp)
    pi = np.where(prefill_option >= 0, m[np.maximum(prefill_option, 0)], -1)
    di = np.where(decode_option >= 0, m[np.maximum(decode_option, 0)], -1)
    pre, dec, link = phase_rates(caps, grp, k, G)
    if dec.shape[1] == 0:
        return np.zeros(G.size), np.zeros(G.size)
    have = split_goodput(pre, dec, link, grp.gpus, pi, di, x, y)
    return have, best_goodput(caps, grp, k, G)


def drift_loss(nominal: CapacityGroup, corners: list[tuple[Capacities, CapacityGroup]], k: int,
               gpus: np.ndarray, prefill_option: np.ndarray, decode_option: np.ndarray,
               x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Worst loss over the corners of the split (x of ``prefill_option``, y of
    ``decode_option``, shape indices of ``nominal``) against each corner's best split,
    phase k, per cluster size."""
    G = np.asarray(gpus, dtype=np.int64)
    worst = np.zeros(G.size)
    for caps, grp in corners:
        have, best = corner_goodputs(nominal, caps, grp, k, G, prefill_option, decode_option,
                                     x, y)
        with np.errstate(divide="ignore", invalid="ignore"):
            loss = np.where(best > 0, np.maximum(0.0, 1.0 - have / np.where(best > 0, best, 1.0)),
                            0.0)
        worst = np.maximum(worst, loss)
    return worst
