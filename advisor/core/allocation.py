"""Integer P:D allocation and rounding loss (performance-model.md §8).

For prefill instances of g_p GPUs with capacity P (req/s each) and decode instances of g_d
GPUs with capacity D, the ideal *fractional* split serves

    r/G = 1 / (max(g_p/P, g_p·b/C_gpu·…) + g_d/D)   requests/s per GPU,

where the KV link adds a floor on prefill GPUs: each prefill GPU's NIC moves at most C_gpu
bytes/s, so G_p ≥ r · b / C_gpu (b = KV bytes per request). The prefill fraction of GPUs is
the first term's share. With whole instances on G GPUs, x prefill and y = ⌊(G − x·g_p)/g_d⌋
decode instances serve min(x·P, y·D, x·g_p·C_gpu/b); the best x maximises that. Then

    rounding loss = 1 − integer goodput / (G · ideal goodput per GPU).

Instances larger than a node occupy whole nodes; smaller ones (whose size divides the node)
pack into the remaining nodes. Everything is numpy-vectorised over (size pairs × x), and over
many GPU counts at once for sweeps.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PoolOption:
    """One instance shape for a pool with its per-instance capacity."""

    gpus: int
    rate_rps: float
    label: str
    """E.g. 'TP4' or 'TP8×PP2'."""


@dataclass(frozen=True)
class Allocation:
    """An integer split of the cluster into prefill and decode instances."""

    prefill_option: int
    decode_option: int
    prefill_instances: int
    decode_instances: int
    prefill_gpus: int
    decode_gpus: int
    idle_gpus: int
    goodput_rps: float
    limited_by: str
    """'prefill', 'decode' or 'kv-link'."""


@dataclass(frozen=True)
class SplitResult:
    """Best fractional and integer allocations and the rounding loss between them."""

    ideal_goodput_per_gpu_rps: float
    ideal_prefill_fraction: float
    ideal_prefill_option: int
    ideal_decode_option: int
    best: Allocation | None
    alternatives: tuple[Allocation, ...]
    rounding_loss: float


def ideal_split(prefill: list[PoolOption], decode: list[PoolOption],
                link_rate_per_prefill_gpu: float) -> tuple[float, float, int, int]:
    """(goodput per GPU, prefill fraction, prefill option, decode option) of the best fractional split."""
    best = (0.0, 0.0, -1, -1)
    for i, p in enumerate(prefill):
        if p.rate_rps <= 0:
            continue
        prefill_gpus_per_rps = p.gpus / p.rate_rps
        if link_rate_per_prefill_gpu > 0:
            prefill_gpus_per_rps = max(prefill_gpus_per_rps, 1.0 / link_rate_per_prefill_gpu)
        for j, d in enumerate(decode):
            if d.rate_rps <= 0:
                continue
            decode_gpus_per_rps = d.gpus / d.rate_rps
            per_gpu = 1.0 / (prefill_gpus_per_rps + decode_gpus_per_rps)
            if per_gpu > best[0]:
                frac = prefill_gpus_per_rps / (prefill_gpus_per_rps + decode_gpus_per_rps)
                best = (per_gpu, frac, i, j)
    return best


def _nodes_ok(x: np.ndarray, gp: np.ndarray, y: np.ndarray, gd: np.ndarray,
              total_gpus: np.ndarray, gpus_per_node: int) -> np.ndarray:
    """Whether x instances of gp GPUs and y of gd GPUs pack into the cluster's nodes."""
    big_p = gp > gpus_per_node
    big_d = gd > gpus_per_node
    whole_nodes = np.where(big_p, x * gp // gpus_per_node, 0) + np.where(big_d, y * gd // gpus_per_node, 0)
    small = np.where(big_p, 0, x * gp) + np.where(big_d, 0, y * gd)
    full_nodes = total_gpus // gpus_per_node
    remainder = total_gpus - full_nodes * gpus_per_node
    nodes_for_small = -(-small // gpus_per_node)
    # a partial last node can host small instances only
    fits_whole = whole_nodes <= full_nodes
    fits_small = (small <= (full_nodes - whole_nodes) * gpus_per_node + remainder)
    del nodes_for_small
    return fits_whole & fits_small


def integer_goodput(total_gpus: np.ndarray, prefill_gpus: np.ndarray, prefill_rate: np.ndarray,
                    decode_gpus: np.ndarray, decode_rate: np.ndarray,
                    link_rate_per_prefill_gpu: np.ndarray | float, gpus_per_node: int,
                    max_x: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Best integer goodput for arrays of (cluster size, prefill shape, decode shape).

    Inputs broadcast to a common shape ``s``; returns (goodput, x, y) of shape ``s``,
    maximising over x = 1 … max_x prefill instances (y fills the rest).
    """
    g = np.asarray(total_gpus, dtype=np.int64)[..., None]
    gp = np.asarray(prefill_gpus, dtype=np.int64)[..., None]
    gd = np.asarray(decode_gpus, dtype=np.int64)[..., None]
    pr = np.asarray(prefill_rate, dtype=float)[..., None]
    dr = np.asarray(decode_rate, dtype=float)[..., None]
    link = np.asarray(link_rate_per_prefill_gpu, dtype=float)[..., None]
    x = np.arange(1, max_x + 1, dtype=np.int64)
    y = (g - x * gp) // gd
    valid = (y >= 1) & _nodes_ok(x, gp, y, gd, g, gpus_per_node)
    link_cap = np.where(link > 0, x * gp * link, np.inf)
    good = np.minimum(np.minimum(x * pr, y * dr), link_cap)
    good = np.where(valid, good, -1.0)
    idx = np.argmax(good, axis=-1)
    best = np.take_along_axis(good, idx[..., None], axis=-1)[..., 0]
    bx = np.take_along_axis(np.broadcast_to(x, good.shape), idx[..., None], axis=-1)[..., 0]
    by = np.take_along_axis(np.broadcast_to(y, good.shape), idx[..., None], axis=-1)[..., 0]
    none = best < 0
    return np.where(none, 0.0, best), np.where(none, 0, bx), np.where(none, 0, by)


def best_allocations(total_gpus: int, prefill: list[PoolOption], decode: list[PoolOption],
                     link_rate_per_prefill_gpu: float, gpus_per_node: int,
                     keep: int = 4) -> list[Allocation]:
    """All feasible integer allocations, best first (distinct x:y and shapes), up to ``keep``.

    Every (prefill shape, decode shape, x) candidate is evaluated in one numpy pass; each pair
    contributes its ``keep`` best x (ties: fewer prefill instances first), and those are
    ranked by goodput, then fewer idle GPUs, then fewer prefill GPUs.
    """
    pairs = [(i, j, p, d) for i, p in enumerate(prefill) for j, d in enumerate(decode)
             if p.gpus + d.gpus <= total_gpus and p.rate_rps > 0 and d.rate_rps > 0]
    if not pairs:
        return []
    counts = np.array([(total_gpus - d.gpus) // p.gpus for _, _, p, d in pairs], dtype=np.int64)
    pair = np.repeat(np.arange(len(pairs)), counts)
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    x = np.arange(pair.size, dtype=np.int64) - starts + 1
    gp = np.array([p.gpus for _, _, p, _ in pairs], dtype=np.int64)[pair]
    gd = np.array([d.gpus for _, _, _, d in pairs], dtype=np.int64)[pair]
    pr = np.array([p.rate_rps for _, _, p, _ in pairs])[pair]
    dr = np.array([d.rate_rps for _, _, _, d in pairs])[pair]
    y = (total_gpus - x * gp) // gd
    ok = (y >= 1) & _nodes_ok(x, gp, y, gd, np.int64(total_gpus), gpus_per_node)
    pre, dec = x * pr, y * dr
    link = (x * gp * link_rate_per_prefill_gpu if link_rate_per_prefill_gpu > 0
            else np.full(x.shape, np.inf))
    good = np.where(ok, np.minimum(np.minimum(pre, dec), link), -1.0)
    order = np.lexsort((x, -good, pair))
    first = np.searchsorted(pair[order], pair[order], side="left")
    rank = np.arange(order.size) - first
    chosen = order[(rank < keep) & (good[order] >= 0)]
    rows: list[Allocation] = []
    for k in chosen:
        i, j, p, d = pairs[int(pair[k])]
        limit = ("kv-link" if link[k] <= min(pre[k], dec[k])
                 else "prefill" if pre[k] <= dec[k] else "decode")
        used_p, used_d = int(x[k]) * p.gpus, int(y[k]) * d.gpus
        rows.append(Allocation(i, j, int(x[k]), int(y[k]), used_p, used_d,
                               total_gpus - used_p - used_d, float(good[k]), limit))
    rows.sort(key=lambda a: (-a.goodput_rps, a.idle_gpus, a.prefill_gpus))
    return rows[:keep]


def split(total_gpus: int, prefill: list[PoolOption], decode: list[PoolOption],
          link_rate_per_prefill_gpu: float, gpus_per_node: int) -> SplitResult:
    """Ideal fractional split, best integer allocation, runners-up and rounding loss."""
    per_gpu, frac, pi, di = ideal_split(prefill, decode, link_rate_per_prefill_gpu)
    allocations = best_allocations(total_gpus, prefill, decode, link_rate_per_prefill_gpu,
                                   gpus_per_node)
    best = allocations[0] if allocations else None
    ideal_total = per_gpu * total_gpus
    if best is None or ideal_total <= 0:
        loss = 1.0
    else:
        loss = float(min(max(1.0 - best.goodput_rps / ideal_total, 0.0), 1.0))
    return SplitResult(per_gpu, frac, pi, di, best, tuple(allocations[1:]), loss)
