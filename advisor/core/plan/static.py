"""The best static split: one prefill:decode allocation kept through every traffic phase.

Its score is ``Σ share_k · g_k(x)/g_k*`` — each phase's goodput at the static split x as a
fraction of that phase's best split ``g_k*``, weighted by how long the phase lasts; the static
mix loss is ``1 − score`` (docs/model.md §8). The score shares y(x) across phases. When
``g_d`` is a multiple of ``g_p`` only the largest x of each y can be best, and along those
points x is linear in y, so the score is a sum of minima of linear functions — concave — and
its maximum sits next to a phase crossing ``y_k`` or at an end; when ``g_p`` is a multiple of
``g_d``, y is linear in x and the same holds in x. Four integers around each crossing plus
both ends are evaluated exactly. Pairs of other sizes (node sizes that are not powers of
two) are enumerated in full. Pairs whose continuous bound ``Σ share·u_p·G/g_k*`` is below
the score of a known split (each phase's best) are skipped. Where the exact score is flat
over several x (ties in exact arithmetic) the smallest candidate x is kept.
``tests/plan/test_split.py`` checks it against the exhaustive enumeration.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from advisor.core.plan.split import BLOCK_ELEMENTS, PoolRates, always_packs, packs_into_nodes

Rate = Callable[[np.ndarray], np.ndarray]
"""Prefill goodput per instance at x prefill instances (broadcast to x's shape)."""


def _rate_fn(table: np.ndarray | PoolRates, rows: Any, shape: Any) -> Rate:
    """Rates of one phase for cluster-size ``rows`` and prefill ``shape``: a (n, shapes)
    array (the same at every x), or a :class:`PoolRates` (each x its own pool)."""
    if isinstance(table, PoolRates):
        return lambda x: table.at(shape, x)
    vals = table[rows, shape]
    return lambda x: np.broadcast_to(vals, np.broadcast_shapes(np.shape(vals), np.shape(x)))


@dataclass(frozen=True, kw_only=True)
class StaticAllocations:
    """Best static (all-phase) allocation per cluster size."""

    score: np.ndarray
    """Σ share · goodput/best; −1 where no pair fits (static mix loss = 1 − score)."""
    goods: np.ndarray
    """(n, phases) goodput of the static split in each phase."""
    found: np.ndarray
    prefill_option: np.ndarray
    decode_option: np.ndarray
    x: np.ndarray
    y: np.ndarray


def static_allocation(gpus: np.ndarray, shape_gpus: np.ndarray,
                      prefill: Sequence[np.ndarray | PoolRates],
                      decode: Sequence[np.ndarray], links: Sequence[float],
                      best: Sequence[np.ndarray], shares: Sequence[float], gpus_per_node: int,
                      known: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]] = (),
                      compatible: np.ndarray | None = None) -> StaticAllocations:
    """The best static (all-phase) allocation for many cluster sizes at once.

    ``prefill[k]``/``decode[k]`` are phase k's per-shape capacities (prefill: per shape, per
    (cluster size, shape), or a :class:`PoolRates` table: each split at its own prefill pool
    size), ``best[k]`` (n,) its best integer
    goodput per cluster size, ``links[k]`` its KV link rate per prefill GPU. ``known`` are
    feasible allocations (prefill shape, decode shape, x; −1 = none) per cluster size, e.g.
    each phase's best split: their scores bound the optimum from below,
    and pairs whose continuous upper bound Σ share·G/(g_p/A + g_d/D)/best is lower cannot
    win or tie, so they are skipped; so are pairs ``compatible`` (shapes × shapes) excludes.
    """
    G = np.asarray(gpus, dtype=np.int64)
    g = np.asarray(shape_gpus, dtype=np.int64)
    s, n, K = g.size, G.size, len(prefill)
    grid_i, grid_j = np.meshgrid(np.arange(s), np.arange(s), indexing="ij")
    ii, jj = grid_i.ravel(), grid_j.ravel()                     # prefill-major
    m = ii.size
    pair_score = np.full((n, m), -1.0)
    pair_goods = np.zeros((n, m, K))
    pair_x = np.zeros((n, m), dtype=np.int64)
    Pk: list[np.ndarray | PoolRates] = [
        prefill[k] if isinstance(prefill[k], PoolRates)
        else np.broadcast_to(np.asarray(prefill[k], dtype=float), (n, s)) for k in range(K)]
    Dk = [np.asarray(decode[k], dtype=float) for k in range(K)]
    bk = [np.asarray(b, dtype=float) for b in best]
    if n and m:
        gp, gd = g[ii], g[jj]
        Gc = G[:, None]
        feasible = gp + gd <= Gc                                           # (n, m)
        if compatible is not None:
            feasible = feasible & compatible[ii, jj][None, :]
        # bounds: the score of the known allocations below, a continuous relaxation above
        lb = np.full(n, -np.inf)
        for pi, pj, px in known:
            ok = pi >= 0
            if not ok.any():
                continue
            pi0, pj0 = np.maximum(pi, 0), np.maximum(pj, 0)
            sc_k, _ = _static_score(np.maximum(px, 1), G, g[pi0], g[pj0],
                                    [_rate_fn(p, np.arange(n), pi0) for p in Pk],
                                    [d[pj0] for d in Dk],
                                    links, bk, shares, gpus_per_node)
            lb = np.maximum(lb, np.where(ok, sc_k, -np.inf))
        ub = np.zeros((n, m))
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            top = np.maximum((Gc - gd) // gp, 1)          # the fastest pool a pair can have
            for k in range(K):
                pk = _rate_fn(Pk[k], np.arange(n)[:, None], ii[None, :])(top)
                a = np.minimum(pk, gp * links[k]) if links[k] > 0 else pk
                d = Dk[k][jj]
                cont = np.where((a > 0) & (d > 0), Gc / (gp / a + gd / d), 0.0)
                b_ = bk[k][:, None]
                ub = ub + shares[k] * np.where(b_ > 0, cont / np.where(b_ > 0, b_, 1.0), 0.0)
        keep = feasible & ~(ub * (1.0 + 1e-9) + 1e-12 < lb[:, None])
        cls_y = gd % gp == 0
        regular = cls_y | (gp % gd == 0)
        rows, cols = np.nonzero(keep & regular[None, :])
        step = max(1, BLOCK_ELEMENTS // (2 + 4 * K))
        for st in range(0, rows.size, step):
            r_, c_ = rows[st:st + step], cols[st:st + step]
            Ge = G[r_][:, None]
            egp, egd = gp[c_][:, None], gd[c_][:, None]
            eP = [_rate_fn(p, r_[:, None], ii[c_][:, None]) for p in Pk]
            eD = [d[jj][c_][:, None] for d in Dk]
            x = _static_candidates(Ge, egp, egd, cls_y[c_][:, None], eP, eD, links)
            sc_, gk = _static_score(x, Ge, egp, egd, eP, eD, links,
                                    [b[r_][:, None] for b in bk], shares, gpus_per_node)
            c = np.argmax(sc_, axis=1)                      # first x with the pair's best score
            e = np.arange(r_.size)
            pair_score[r_, c_] = sc_[e, c]
            pair_goods[r_, c_] = gk[:, e, c].T
            pair_x[r_, c_] = x[e, c]
        for pidx in np.flatnonzero(~regular):   # sizes that do not divide each other: every x
            sel = np.flatnonzero(keep[:, pidx])
            if sel.size == 0:
                continue
            xmax = max(1, (int(G[sel].max()) - int(gd[pidx])) // int(gp[pidx]))
            x = np.arange(1, xmax + 1, dtype=np.int64)[None, :]
            Ge = G[sel][:, None]
            sc_, gk = _static_score(x, Ge, gp[pidx], gd[pidx],
                                    [_rate_fn(p, sel[:, None], ii[pidx]) for p in Pk],
                                    [d[jj[pidx]] for d in Dk], links,
                                    [b[sel][:, None] for b in bk], shares, gpus_per_node)
            c = np.argmax(sc_, axis=1)
            e = np.arange(sel.size)
            pair_score[sel, pidx] = sc_[e, c]
            pair_goods[sel, pidx] = np.broadcast_to(gk, (K, *sc_.shape))[:, e, c].T
            pair_x[sel, pidx] = np.broadcast_to(x, sc_.shape)[e, c]
    # the first pair whose score is strictly higher than all before it wins
    rows_n = np.arange(n)
    if m:
        j = np.argmax(pair_score, axis=1)
        score, goods, bx = pair_score[rows_n, j], pair_goods[rows_n, j], pair_x[rows_n, j]
    else:
        j = np.zeros(n, dtype=np.int64)
        score, goods, bx = np.full(n, -1.0), np.zeros((n, K)), np.zeros(n, dtype=np.int64)
    found = score >= 0
    pi = np.where(found, ii[j] if m else 0, -1)
    pj = np.where(found, jj[j] if m else 0, -1)
    x = np.where(found, bx, 0)
    gp_c = g[np.maximum(pi, 0)] if s else np.ones(n, dtype=np.int64)
    gd_c = g[np.maximum(pj, 0)] if s else np.ones(n, dtype=np.int64)
    y = np.where(found, (G - x * gp_c) // gd_c, 0)
    return StaticAllocations(score=score, goods=goods, found=found, prefill_option=pi,
                             decode_option=pj, x=x, y=y)


def _static_candidates(G: np.ndarray, gp: np.ndarray, gd: np.ndarray, cls_y: np.ndarray,
                       P: Sequence[Rate], D: Sequence[np.ndarray],
                       links: Sequence[float]) -> np.ndarray:
    """Candidate x per (cluster size, pair) row, ascending: four integers around each
    phase's crossing (in y when g_d is a multiple of g_p, else in x) and both ends. With
    pool-size dependent prefill rates the crossing is found at the rate of its own pool
    (three fixed-point steps from the largest pool)."""
    max_x = (G - gd) // gp
    y_max = (G - gp) // gd
    q_p = G // gp
    q_d = G // gd
    r_y = np.maximum(gd // gp, 1)
    r_x = np.maximum(gp // gd, 1)
    offs = np.arange(-1, 3, dtype=np.int64)
    cands = [np.ones_like(max_x), np.maximum(max_x, 1)]
    for k in range(len(P)):
        d = D[k]
        x_est = np.maximum(max_x, 1)
        for _ in range(3):
            p = P[k](x_est)
            a = np.minimum(p, gp * links[k]) if links[k] > 0 else p
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                yk = np.nan_to_num(a * q_p / (a * r_y + d), nan=1.0, posinf=1.0, neginf=1.0)
                xk = np.nan_to_num(d * q_d / (a + d * r_x), nan=1.0, posinf=1.0, neginf=1.0)
            x_new = np.clip(np.where(cls_y, (G - np.floor(yk).astype(np.int64) * gd) // gp,
                                     np.floor(xk).astype(np.int64)), 1, np.maximum(max_x, 1))
            if np.array_equal(x_new, x_est):
                break
            x_est = x_new
        yy = np.clip(np.floor(yk).astype(np.int64) + offs, 1, np.maximum(y_max, 1))
        xx = np.clip(np.floor(xk).astype(np.int64) + offs, 1, np.maximum(max_x, 1))
        cands.append(np.where(cls_y, (G - yy * gd) // gp, xx))
    return np.sort(np.concatenate(cands, axis=-1), axis=-1)


def _static_score(x: np.ndarray, G: np.ndarray, gp: Any, gd: Any, P: Sequence[Rate],
                  D: Sequence[Any], links: Sequence[float], best: Sequence[np.ndarray],
                  shares: Sequence[float], gpn: int) -> tuple[np.ndarray, np.ndarray]:
    """Scores (−1 where invalid) and per-phase goods (K, …) of the splits x."""
    y = (G - x * gp) // gd
    ok = (x >= 1) & (y >= 1)
    gp_a, gd_a = np.asarray(gp, dtype=np.int64), np.asarray(gd, dtype=np.int64)
    if not (always_packs(gp_a, gpn).all() and always_packs(gd_a, gpn).all()):
        ok &= packs_into_nodes(x, gp_a, y, gd_a, G, gpn)
    score = np.zeros(np.broadcast_shapes(x.shape, G.shape))
    goods = []
    for k in range(len(P)):
        link = (x * gp) * links[k] if links[k] > 0 else np.inf
        gk = np.minimum(np.minimum(x * P[k](x), y * D[k]), link)
        goods.append(np.broadcast_to(gk, score.shape))
        bk = best[k]
        with np.errstate(divide="ignore", invalid="ignore"):
            term = np.where(bk > 0, gk / np.where(bk > 0, bk, 1.0), 0.0)
        score = score + shares[k] * term
    return np.where(ok, score, -1.0), np.stack(goods)
