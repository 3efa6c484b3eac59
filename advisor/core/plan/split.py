"""The integer prefill:decode split and its rounding loss (docs/model.md §6).

For prefill instances of g_p GPUs with capacity P (req/s each) and decode instances of g_d
GPUs with capacity D, the ideal *fractional* split serves

    r/G = 1 / (max(g_p/P, 1/L) + g_d/D)   requests/s per GPU,

where L is the KV link's rate per prefill GPU (requests/s one prefill GPU's NIC can ship:
G_p ≥ r · b / C_gpu, b = KV bytes per request). The prefill fraction of GPUs is the first
term's share. With whole instances on G GPUs, x prefill and y = ⌊(G − x·g_p)/g_d⌋ decode
instances serve min(x·P, y·D, x·g_p·L); the best x maximises that. Then

    rounding loss = 1 − integer goodput / (G · ideal goodput per GPU).

Instances larger than a node occupy whole nodes; smaller ones (whose size divides the node)
pack into the remaining nodes (:func:`packs_into_nodes`).

Two searches give the same best split (``tests/plan/test_split.py`` checks them against each
other, ties and odd sizes included):

* :func:`best_allocations` — one cluster size, every (shape pair, x) enumerated in one numpy
  pass, the best few kept (the report shows runners-up);
* :func:`best_splits` — many cluster sizes at once, best only, without enumerating x. For a
  shape pair, ``goodput(x) = min(a(x), b(x))`` with ``a(x) = min(x·P, x·g_p·L)`` strictly
  increasing and ``b(x) = ⌊(G − x·g_p)/g_d⌋·D`` non-increasing, so ``a ≤ b`` holds on a
  prefix ``x ≤ x*`` and the maximum is ``max(a(x*), b(x*+1))``; values tied with it lie in
  ``{x*} ∪ [x*+1, …)`` (b is constant on a run of x). ``x*`` is bracketed analytically
  (``x₀ = G·D/(A·g_d + D·g_p)``, ``A = min(P, g_p·L)``; floors move it down by at most
  ``δ = g_d·D/(A·g_d + D·g_p)``) and pinned by a vectorised bisection on the exact float
  predicate; the window ``x* … x* + 4`` then holds the maximum and the four smallest x tied
  with it — all that :func:`best_allocations` keeps per pair. Ties across pairs are broken
  as there (headroom — the next limit to bind, :func:`split_headroom` —, then fewer GPUs,
  fewer prefill GPUs, pair order). Pairs are pruned first: pair p serves at
  most ``u_p·G`` (``u_p = 1/(g_p/A + g_d/D)``) and the pair with the highest ``u`` at least
  ``u·(G − g_d) − A``, so only a prefix of the pairs sorted by ``u`` can win or tie (a binary
  search per G); large clusters cost one or two pairs per point. :func:`packs_into_nodes` is
  applied to every candidate whose sizes can fail it (:func:`always_packs`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_WINDOW = np.arange(0, 5, dtype=np.int64)
BLOCK_ELEMENTS = 400_000
"""Elements per block of the vectorised searches (bounds their memory)."""
_INT_MAX = np.iinfo(np.int64).max


@dataclass(frozen=True)
class PoolRates:
    """Per-instance prefill goodput by the split's own prefill pool size (docs/model.md §6).

    ``rates[i, j]`` is option i's goodput per instance, req/s, with ``sizes[j]`` instances
    behind the router (one pooled G/G/c queue); x instances read the largest tabulated size
    ≤ x (the table holds every size up to 64, then a geometric grid: the conservative side).
    A single size 1 holds rates that do not depend on the pool (no TTFT SLO)."""

    sizes: np.ndarray
    """(m,) ascending pool sizes, ``sizes[0] == 1``."""
    rates: np.ndarray
    """(options, m) req/s per instance, non-decreasing along a row."""

    def at(self, option: np.ndarray | int, x: np.ndarray | int) -> np.ndarray:
        """Per-instance goodput of ``option`` with ``x`` instances (element-wise)."""
        j = np.maximum(np.searchsorted(self.sizes, x, side="right") - 1, 0)
        return np.asarray(self.rates[option, j], dtype=float)

    def take(self, options: np.ndarray) -> PoolRates:
        """The table of ``options`` only (e.g. per shape pair)."""
        return PoolRates(self.sizes, self.rates[np.asarray(options, dtype=np.int64)])

    @property
    def usable(self) -> np.ndarray:
        """Per option: serves anything at some pool size."""
        return np.asarray(self.rates.max(axis=1, initial=0.0) > 0, dtype=bool)


def constant_rates(rates: np.ndarray) -> PoolRates:
    """Rates that do not depend on the pool size as a :class:`PoolRates`."""
    return PoolRates(np.ones(1, dtype=np.int64), np.asarray(rates, dtype=float)[:, None])


@dataclass(frozen=True)
class PoolOption:
    """One instance shape for a pool with its per-instance capacity."""

    gpus: int
    rate_rps: float
    label: str
    """E.g. 'TP4' or 'TP8×PP2'."""


@dataclass(frozen=True, kw_only=True)
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


@dataclass(frozen=True, kw_only=True)
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
                link_rate_per_prefill_gpu: float, compatible: np.ndarray | None = None
                ) -> tuple[float, float, int, int]:
    """(goodput per GPU, prefill fraction, prefill option, decode option) of the best
    fractional split; ``compatible[i, j]`` False excludes a pair (the engine cannot pair
    those pools, ``EngineSpec.can_pair``)."""
    best = (0.0, 0.0, -1, -1)
    for i, p in enumerate(prefill):
        if p.rate_rps <= 0:
            continue
        prefill_gpus_per_rps = p.gpus / p.rate_rps
        if link_rate_per_prefill_gpu > 0:
            prefill_gpus_per_rps = max(prefill_gpus_per_rps, 1.0 / link_rate_per_prefill_gpu)
        for j, d in enumerate(decode):
            if d.rate_rps <= 0 or (compatible is not None and not compatible[i, j]):
                continue
            decode_gpus_per_rps = d.gpus / d.rate_rps
            per_gpu = 1.0 / (prefill_gpus_per_rps + decode_gpus_per_rps)
            if per_gpu > best[0]:
                frac = prefill_gpus_per_rps / (prefill_gpus_per_rps + decode_gpus_per_rps)
                best = (per_gpu, frac, i, j)
    return best


def packs_into_nodes(x: np.ndarray, gp: np.ndarray, y: np.ndarray, gd: np.ndarray,
              total_gpus: np.ndarray, gpus_per_node: int) -> np.ndarray:
    """Whether x instances of gp GPUs and y of gd GPUs pack into the cluster's nodes."""
    big_p = gp > gpus_per_node
    big_d = gd > gpus_per_node
    whole_nodes = (np.where(big_p, x * gp // gpus_per_node, 0)
                   + np.where(big_d, y * gd // gpus_per_node, 0))
    small = np.where(big_p, 0, x * gp) + np.where(big_d, 0, y * gd)
    full_nodes = total_gpus // gpus_per_node
    remainder = total_gpus - full_nodes * gpus_per_node
    # a partial last node can host small instances only
    fits_whole = whole_nodes <= full_nodes
    fits_small = (small <= (full_nodes - whole_nodes) * gpus_per_node + remainder)
    return np.asarray(fits_whole & fits_small)


def ideal_goodput_per_gpu(gpus: np.ndarray, prefill: np.ndarray, decode: np.ndarray,
                          link_rate: float, compatible: np.ndarray | None = None) -> np.ndarray:
    """``ideal_split(...)[0]`` per row of (n, shapes) prefill rates."""
    with np.errstate(divide="ignore", invalid="ignore"):
        pre = gpus / prefill
        if link_rate > 0:
            pre = np.maximum(pre, 1.0 / link_rate)
        dec = gpus / decode
        per = 1.0 / (pre[:, :, None] + dec[None, None, :])
    valid = (prefill > 0)[:, :, None] & (decode > 0)[None, None, :]
    if compatible is not None:
        valid = valid & compatible[None, :, :]
    per = np.where(valid, per, 0.0).reshape(prefill.shape[0], -1)
    return np.asarray(np.maximum(per.max(axis=1, initial=0.0), 0.0))


def best_allocations(total_gpus: int, prefill: list[PoolOption], decode: list[PoolOption],
                     link_rate_per_prefill_gpu: float, gpus_per_node: int,
                     keep: int = 4, pooled: PoolRates | None = None,
                     compatible: np.ndarray | None = None) -> list[Allocation]:
    """All feasible integer allocations, best first (distinct x:y and shapes), up to ``keep``.

    Every (prefill shape, decode shape, x) candidate is evaluated in one numpy pass; each pair
    contributes its ``keep`` best x (ties: fewer prefill instances first), and those are
    ranked by goodput, then headroom (:func:`split_headroom`), then fewer GPUs, then fewer
    prefill GPUs. ``pooled``: the prefill goodput per instance by pool size (x instances read
    theirs; default the options' rates); ``compatible`` as :func:`ideal_split`.
    """
    if pooled is None:
        pooled = constant_rates(np.array([p.rate_rps for p in prefill], dtype=float))
    usable = pooled.usable
    pairs = [(i, j, p, d) for i, p in enumerate(prefill) for j, d in enumerate(decode)
             if p.gpus + d.gpus <= total_gpus and usable[i] and d.rate_rps > 0
             and (compatible is None or compatible[i, j])]
    if not pairs:
        return []
    counts = np.array([(total_gpus - d.gpus) // p.gpus for _, _, p, d in pairs], dtype=np.int64)
    pair = np.repeat(np.arange(len(pairs)), counts)
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    x = np.arange(pair.size, dtype=np.int64) - starts + 1
    gp = np.array([p.gpus for _, _, p, _ in pairs], dtype=np.int64)[pair]
    gd = np.array([d.gpus for _, _, _, d in pairs], dtype=np.int64)[pair]
    pr = pooled.at(np.array([i for i, _, _, _ in pairs], dtype=np.int64)[pair], x)
    dr = np.array([d.rate_rps for _, _, _, d in pairs])[pair]
    y = (total_gpus - x * gp) // gd
    ok = (y >= 1) & (pr > 0) & packs_into_nodes(x, gp, y, gd,
                                                 np.asarray(total_gpus, dtype=np.int64),
                                                 gpus_per_node)
    pre, dec = x * pr, y * dr
    link = (x * gp * link_rate_per_prefill_gpu if link_rate_per_prefill_gpu > 0
            else np.full(x.shape, np.inf))
    good = np.where(ok, np.minimum(np.minimum(pre, dec), link), -1.0)
    spare = split_headroom(pre, dec, link)
    order = np.lexsort((x, -good, pair))
    first = np.searchsorted(pair[order], pair[order], side="left")
    rank = np.arange(order.size) - first
    chosen = order[(rank < keep) & (good[order] >= 0)]
    rows: list[tuple[float, int, Allocation]] = []
    for k in chosen:
        i, j, p, d = pairs[int(pair[k])]
        limit = ("kv-link" if link[k] <= min(pre[k], dec[k])
                 else "prefill" if pre[k] <= dec[k] else "decode")
        used_p, used_d = int(x[k]) * p.gpus, int(y[k]) * d.gpus
        rows.append((float(spare[k]), int(pair[k]), Allocation(
            prefill_option=i, decode_option=j, prefill_instances=int(x[k]),
            decode_instances=int(y[k]), prefill_gpus=used_p, decode_gpus=used_d,
            idle_gpus=total_gpus - used_p - used_d,
            goodput_rps=float(good[k]), limited_by=limit)))
    # ties in goodput: more headroom (the next pool to bind), fewer GPUs, fewer prefill GPUs
    rows.sort(key=lambda r: (-r[2].goodput_rps, -r[0], r[2].prefill_gpus + r[2].decode_gpus,
                             r[2].prefill_gpus, r[1]))
    return [a for _, _, a in rows[:keep]]


def split_headroom(prefill: np.ndarray, decode: np.ndarray, link: np.ndarray) -> np.ndarray:
    """A split's headroom beyond its goodput: the capacity of the next of its three limits
    (prefill pool, decode pool, KV link) to bind, req/s — the middle of the three. Among
    splits of equal goodput, the one with more headroom carries a growing rate further
    (#27: ties between decode shapes go to the one with more decode capacity)."""
    stacked = np.stack(np.broadcast_arrays(np.asarray(prefill, dtype=float),
                                           np.asarray(decode, dtype=float),
                                           np.asarray(link, dtype=float)))
    return np.asarray(np.sort(stacked, axis=0)[1])


def split(total_gpus: int, prefill: list[PoolOption], decode: list[PoolOption],
          link_rate_per_prefill_gpu: float, gpus_per_node: int,
          pooled: PoolRates | None = None, compatible: np.ndarray | None = None) -> SplitResult:
    """Ideal fractional split (at the options' rates), best integer allocation (each with its
    own prefill pool's rate when ``pooled``), runners-up and rounding loss, over the pairs
    ``compatible`` allows."""
    per_gpu, frac, pi, di = ideal_split(prefill, decode, link_rate_per_prefill_gpu, compatible)
    allocations = best_allocations(total_gpus, prefill, decode, link_rate_per_prefill_gpu,
                                   gpus_per_node, pooled=pooled, compatible=compatible)
    best = allocations[0] if allocations else None
    ideal_total = per_gpu * total_gpus
    if best is None or ideal_total <= 0:
        loss = 1.0
    else:
        loss = float(min(max(1.0 - best.goodput_rps / ideal_total, 0.0), 1.0))
    return SplitResult(ideal_goodput_per_gpu_rps=per_gpu, ideal_prefill_fraction=frac,
                       ideal_prefill_option=pi, ideal_decode_option=di, best=best,
                       alternatives=tuple(allocations[1:]), rounding_loss=loss)


def _goodput(x: np.ndarray, g: np.ndarray, gp: np.ndarray, gd: np.ndarray, p: np.ndarray,
             d: np.ndarray, link: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(goodput, y, headroom) of x prefill instances, as ``best_allocations`` computes them
    (:func:`split_headroom`)."""
    y = (g - x * gp) // gd
    pre = x * p
    dec = y * d
    cap = (x * gp) * link if link > 0 else np.full(np.shape(pre), np.inf)
    return np.minimum(np.minimum(pre, dec), cap), y, split_headroom(pre, dec, cap)


def _rate_at(tab: np.ndarray, sizes: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Per-element prefill rate at x instances: ``tab`` (e, m) rows of a :class:`PoolRates`
    table over ``sizes``, ``x`` (e,) or (e, w)."""
    if sizes.size == 1:
        return np.broadcast_to(tab[:, :1], x.shape) if x.ndim == 2 else tab[:, 0]
    j = np.maximum(np.searchsorted(sizes, x, side="right") - 1, 0)
    return np.take_along_axis(tab, j.reshape(tab.shape[0], -1), axis=1).reshape(x.shape)


def _prefill_side(x: np.ndarray, gp: np.ndarray, p: np.ndarray, link: float) -> np.ndarray:
    pre = x * p
    return np.asarray(np.minimum(pre, (x * gp) * link) if link > 0 else pre)


def _bracket(g: np.ndarray, gp: np.ndarray, gd: np.ndarray, p: np.ndarray, d: np.ndarray,
             link: float, max_x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) around the crossing for a constant prefill rate ``p``: floors move the
    continuous crossing x₀ down by at most δ."""
    a_rate = np.minimum(p, gp * link) if link > 0 else p
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        denom = a_rate * gd + d * gp
        x0 = g * d / denom
        delta = gd * d / denom
        x0 = np.where(np.isfinite(x0), x0, max_x + 1.0)
        delta = np.where(np.isfinite(delta), delta, max_x + 1.0)
    lo = np.clip(np.floor(x0 - delta) - 1.0, 0, np.maximum(max_x, 0)).astype(np.int64)
    hi = np.clip(np.floor(x0) + 2.0, 1, np.maximum(max_x, 0) + 1).astype(np.int64)
    return lo, hi


def _crossing(g: np.ndarray, gp: np.ndarray, gd: np.ndarray, tab: np.ndarray,
              sizes: np.ndarray, d: np.ndarray, link: float, max_x: np.ndarray) -> np.ndarray:
    """x* = the largest x in [1, max_x] with a(x) ≤ b(x) (0 if none), element-wise; the
    prefill rate at x is ``_rate_at(tab, sizes, x)`` (non-decreasing in x, so a(x) still
    increases).

    Bracketed analytically (below by the rate at max_x, above by the rate at the lower
    end), then bisected on the exact float predicate; the bracket is verified and widened
    to the whole range where rounding made it wrong."""
    lo, _ = _bracket(g, gp, gd, _rate_at(tab, sizes, np.maximum(max_x, 1)), d, link, max_x)
    _, hi = _bracket(g, gp, gd, _rate_at(tab, sizes, np.maximum(lo, 1)), d, link, max_x)
    hi = np.maximum(hi, lo + 1)

    def pred(x: np.ndarray) -> np.ndarray:
        y = (g - x * gp) // gd
        return np.asarray(_prefill_side(x, gp, _rate_at(tab, sizes, x), link) <= y * d)

    bad_lo = (lo >= 1) & ~pred(np.maximum(lo, 1))
    lo = np.where(bad_lo, 0, lo)
    bad_hi = (hi <= max_x) & pred(np.minimum(hi, np.maximum(max_x, 1)))
    hi = np.where(bad_hi, max_x + 1, hi)
    while True:
        open_ = hi - lo > 1
        if not open_.any():
            break
        mid = (lo + hi) // 2
        ok = pred(np.where(open_, mid, np.maximum(lo, 1)))
        lo = np.where(open_ & ok, mid, lo)
        hi = np.where(open_ & ~ok, mid, hi)
    return lo


def always_packs(size: np.ndarray, gpus_per_node: int) -> np.ndarray:
    """Sizes for which :func:`packs_into_nodes` cannot fail.

    When every instance is at most a node or a whole number of nodes, any x prefill and
    y = ⌊(G − x·g_p)/g_d⌋ decode instances pack: the whole-node instances use
    (x·g_p + y·g_d)/node ≤ ⌊G/node⌋ nodes for their share, and the small ones fit in what
    is left (x·g_p + y·g_d ≤ G). The shapes the model builds (TP ≤ node, node × PP) are
    all of this kind; :func:`packs_into_nodes` is still applied to any other size.
    """
    return np.asarray((size <= gpus_per_node) | (size % gpus_per_node == 0))


@dataclass(frozen=True)
class Splits:
    """Best integer splits for many cluster sizes (one phase)."""

    goodput: np.ndarray
    """Best integer goodput, req/s (0 where no split exists)."""
    pair: np.ndarray
    """Index into the pair list (-1 where no split exists)."""
    x: np.ndarray
    y: np.ndarray


def best_splits(gpus: np.ndarray, prefill_gpus: np.ndarray,
                prefill_rate: np.ndarray | PoolRates, decode_gpus: np.ndarray,
                decode_rate: np.ndarray, link_rate: float, gpus_per_node: int) -> Splits:
    """``best_allocations(...)[0]`` for every cluster size in ``gpus`` at once.

    The pair list is given as parallel arrays (one entry per prefill/decode shape pair, in
    ``best_allocations``' order: prefill-major). ``prefill_rate`` is per pair, per (cluster
    size, pair), or a :class:`PoolRates` table with a row per pair (each split at its own
    prefill pool size, as ``best_allocations(pooled=...)``); pairs with a zero rate are
    skipped, as ``best_allocations`` skips them. Same goodput, same x, y and pair, same
    tie-breaking.

    Pruning: pair p serves at most ``u_p·G`` (its fractional per-GPU rate ``u_p = 1/(g_p/A +
    g_d/D)``) and at least ``u_p·(G − g_d) − A`` (its x just below the crossing). Only pairs
    whose upper bound reaches the best lower bound can win or tie. With rates shared by all
    cluster sizes the pairs sorted by ``u`` make that a prefix, found by a binary search.
    With pool-size dependent rates the upper bound takes the rate at the largest x, the
    lower bound the rate at the bracket's lower end (every x at or above it is at least as
    fast).
    """
    G = np.asarray(gpus, dtype=np.int64).ravel()
    gp = np.asarray(prefill_gpus, dtype=np.int64)
    gd = np.asarray(decode_gpus, dtype=np.int64)
    D = np.asarray(decode_rate, dtype=float)
    n, m = G.size, gp.size
    good = np.zeros(n)
    pair = np.full(n, -1, dtype=np.int64)
    bx = np.zeros(n, dtype=np.int64)
    by = np.zeros(n, dtype=np.int64)
    if n == 0 or m == 0:
        return Splits(good, pair, bx, by)
    link = float(link_rate)
    table = prefill_rate if isinstance(prefill_rate, PoolRates) else None
    P = None if table is not None else np.asarray(prefill_rate, dtype=float)
    if table is not None and table.sizes.size == 1:
        P, table = table.rates[:, 0], None
    if table is not None or (P is not None and P.ndim == 2):
        block = max(1, BLOCK_ELEMENTS // m)
        for s in range(0, n, block):
            sl = slice(s, min(n, s + block))
            Gb = G[sl]
            if table is not None:
                max_x = np.maximum((Gb[:, None] - gd) // gp, 1)
                cols_all = np.broadcast_to(np.arange(m), max_x.shape)
                P_hi = table.at(cols_all, max_x)
                lo, _ = _bracket(Gb[:, None], gp, gd, P_hi, D, link, max_x)
                P_lo = table.at(cols_all, np.maximum(lo, 1))
            else:
                assert P is not None
                P_hi = P_lo = P[sl]
            with np.errstate(divide="ignore", invalid="ignore"):
                a_hi = np.minimum(P_hi, gp * link) if link > 0 else P_hi
                a_lo = np.minimum(P_lo, gp * link) if link > 0 else P_lo
                u = np.where((P_hi > 0) & (D > 0), 1.0 / (gp / a_hi + gd / D), -np.inf)
                u_lo = np.where((P_lo > 0) & (D > 0), 1.0 / (gp / a_lo + gd / D), -np.inf)
                lower = np.where(np.isfinite(u_lo), u_lo * (Gb[:, None] - gd) - a_lo, 0.0)
            lower = np.maximum(lower.max(axis=1), 0.0) * (1.0 - 1e-9)
            keep = np.isfinite(u) & ~(u * Gb[:, None] * (1.0 + 1e-9) < lower[:, None])
            rows, cols = np.nonzero(keep)
            if table is not None:
                tab, sizes = table.rates[cols], table.sizes
            else:
                assert P is not None
                tab, sizes = P[sl][rows, cols][:, None], _ONE
            r = _solve_pairs(Gb, rows, cols, gp, gd, tab, sizes, D, link, gpus_per_node)
            good[sl], pair[sl], bx[sl], by[sl] = r
        return Splits(good, pair, bx, by)
    assert P is not None
    a_rate = np.minimum(P, gp * link) if link > 0 else P
    with np.errstate(divide="ignore"):    # a zero rate (a pool of one too slow): u = 0
        u = 1.0 / (gp / a_rate + gd / D)
    order = np.argsort(-u, kind="stable")
    b = int(order[0])
    lower = np.maximum(0.0, u[b] * (G - gd[b]) - a_rate[b]) * (1.0 - 1e-9)
    neg_u = -u[order]
    count = np.searchsorted(neg_u, -lower / (G * (1.0 + 1e-9)), side="right")
    count = np.maximum(count, 1)
    block = max(1, BLOCK_ELEMENTS // max(1, int(count.mean())))
    for s in range(0, n, block):
        sl = slice(s, min(n, s + block))
        cnt = count[sl]
        rows = np.repeat(np.arange(cnt.size), cnt)
        starts = np.cumsum(cnt) - cnt
        cols = order[np.arange(int(cnt.sum())) - np.repeat(starts, cnt)]
        r = _solve_pairs(G[sl], rows, cols, gp, gd, P[cols][:, None], _ONE, D, link,
                         gpus_per_node)
        good[sl], pair[sl], bx[sl], by[sl] = r
    return Splits(good, pair, bx, by)


_ONE = np.ones(1, dtype=np.int64)


def _solve_pairs(G: np.ndarray, rows: np.ndarray, cols: np.ndarray, gp: np.ndarray,
                 gd: np.ndarray, eP: np.ndarray, sizes: np.ndarray, D: np.ndarray, link: float,
                 gpn: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Best split per cluster size among candidate (size ``rows``, pair ``cols``) elements
    (rows ascending); ``eP`` (e, m) is each element's prefill rate by pool size ``sizes``."""
    n, m = G.size, gp.size
    good = np.zeros(n)
    pair = np.full(n, -1, dtype=np.int64)
    bx = np.zeros(n, dtype=np.int64)
    by = np.zeros(n, dtype=np.int64)
    g = G[rows]
    emax = (g - gd[cols]) // gp[cols]
    feas = emax >= 1
    rows, cols, g, emax, eP = rows[feas], cols[feas], g[feas], emax[feas], eP[feas]
    if rows.size == 0:
        return good, pair, bx, by
    egp, egd, eD = gp[cols], gd[cols], D[cols]
    xs = _crossing(g, egp, egd, eP, sizes, eD, link, emax)
    win = xs[:, None] + _WINDOW                                # (e, 5)
    wp = _rate_at(eP, sizes, win)
    wg, wy, wspare = _goodput(win, g[:, None], egp[:, None], egd[:, None], wp, eD[:, None],
                              link)
    valid = (win >= 1) & (win <= emax[:, None]) & (wy >= 1) & (wp > 0)
    packs = ~(always_packs(egp, gpn) & always_packs(egd, gpn))
    if packs.any():
        valid[packs] &= packs_into_nodes(win[packs], egp[packs][:, None], wy[packs],
                                        egd[packs][:, None], g[packs][:, None], gpn)
    wg = np.where(valid, wg, -1.0)
    pmax = wg.max(axis=1)
    tie = valid & (wg == pmax[:, None])
    kept = tie & (np.cumsum(tie, axis=1) <= 4)                # best_allocations keeps 4 per pair
    seg_start = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
    seg_rows = rows[seg_start]
    seg = np.repeat(np.arange(seg_start.size), np.diff(np.r_[seg_start, rows.size]))
    best = np.maximum.reduceat(pmax, seg_start)
    has = best >= 0
    elig = kept & (wg == best[seg][:, None]) & has[seg][:, None]
    # best_allocations sorts by (−goodput, −headroom, GPUs, prefill GPUs), stable in pair
    # order: the most headroom among the best, then the integer key
    top_spare = np.maximum.reduceat(np.where(elig, wspare, -np.inf).max(axis=1), seg_start)
    elig &= wspare == top_spare[seg][:, None]
    used = win * egp[:, None] + wy * egd[:, None]
    big = int(G.max()) + 1
    key = np.where(elig, ((used * big + win * egp[:, None]) * m + cols[:, None]), _INT_MAX)
    emin = key.min(axis=1)
    kmin = np.minimum.reduceat(emin, seg_start)
    hit = elig & (key == kmin[seg][:, None])
    e, w = np.nonzero(hit)
    target = seg_rows[seg[e]]
    good[target] = wg[e, w]
    pair[target] = cols[e]
    bx[target] = win[e, w]
    by[target] = wy[e, w]
    return good, pair, bx, by
