"""The integer split: the many-cluster-size search and the static split against the exact
enumerations, and the split's own properties."""

from __future__ import annotations

import random

import numpy as np
import pytest

from advisor.core.plan import split as alloc
from advisor.core.plan.static import static_allocation


def _shapes(rng: random.Random, packable: bool) -> tuple[int, list[int]]:
    gpn = rng.choice([8, 8, 4, 16, 6])
    sizes = [t for t in (1, 2, 4, 8, 16) if t <= gpn] + [gpn * p for p in (2, 4, 8, 16)]
    if not packable:
        sizes += [3, 5, 12, 24]  # sizes that are neither ≤ a node nor whole nodes
    return gpn, sorted(rng.sample(sorted(set(sizes)), rng.randint(1, min(5, len(set(sizes))))))


def _rate(rng: random.Random) -> float:
    c = rng.random()
    if c < 0.3:
        return float(rng.randint(1, 6))            # integer rates: many exact ties
    if c < 0.5:
        return rng.randint(1, 8) / rng.choice([2, 3, 4])
    return rng.uniform(0.05, 20.0)


@pytest.mark.parametrize("packable", [True, False])
def test_best_splits_equal_the_exact_enumeration(packable: bool) -> None:
    """Same goodput, pair, x and y as ``best_allocations(...)[0]``, ties included."""
    rng = random.Random(11 if packable else 12)
    checked = 0
    for _ in range(120):
        gpn, shp = _shapes(rng, packable)
        P = [_rate(rng) for _ in shp]
        D = [_rate(rng) for _ in shp]
        if rng.random() < 0.2:
            P[0] = 0.0
        link = rng.choice([0.0, rng.uniform(0.1, 5.0), float(rng.randint(1, 3))])
        G = np.array(sorted({rng.randint(1, 700) for _ in range(25)}), dtype=np.int64)
        pre = [alloc.PoolOption(g, p, str(g)) for g, p in zip(shp, P, strict=True)]
        dec = [alloc.PoolOption(g, d, str(g)) for g, d in zip(shp, D, strict=True)]
        ii = [i for i, o in enumerate(pre) if o.rate_rps > 0]
        jj = [j for j, o in enumerate(dec) if o.rate_rps > 0]
        pi = np.array([i for i in ii for _ in jj], dtype=np.int64)
        pj = np.array([j for _ in ii for j in jj], dtype=np.int64)
        g = np.array(shp, dtype=np.int64)
        got = alloc.best_splits(G, g[pi], np.array(P)[pi], g[pj], np.array(D)[pj], link, gpn)
        for n, total in enumerate(G):
            best = alloc.best_allocations(int(total), pre, dec, link, gpn)
            if not best:
                assert got.pair[n] == -1
                continue
            b = best[0]
            k = int(got.pair[n])
            assert k >= 0
            assert (got.goodput[n], pi[k], pj[k], got.x[n], got.y[n]) == (
                b.goodput_rps, b.prefill_option, b.decode_option, b.prefill_instances,
                b.decode_instances), (gpn, shp, P, D, link, int(total))
            checked += 1
    assert checked > 1000


def _static_reference(G: int, shp: list[int], P: list[list[float]], D: list[list[float]],
                      links: list[float], best: list[float], shares: list[float],
                      gpn: int) -> tuple[float, list[float] | None]:
    """The exhaustive static split: every pair, every x (the first best x of a pair, the first
    pair strictly better than all before it)."""
    best_score, best_goods = -1.0, None
    for i in range(len(shp)):
        for j in range(len(shp)):
            gp, gd = shp[i], shp[j]
            if gp + gd > G:
                continue
            x = np.arange(1, (G - gd) // gp + 1)
            y = (G - x * gp) // gd
            ok = (y >= 1) & alloc.packs_into_nodes(x, np.int64(gp), y, np.int64(gd), np.int64(G),
                                                   gpn)
            score = np.zeros(x.shape)
            goods = []
            for k in range(len(P)):
                link = x * gp * links[k] if links[k] > 0 else np.inf
                g = np.minimum(np.minimum(x * P[k][i], y * D[k][j]), link)
                goods.append(g)
                score = score + shares[k] * (g / best[k] if best[k] > 0 else 0.0)
            score = np.where(ok, score, -1.0)
            a = int(np.argmax(score))
            if score[a] > best_score:
                best_score, best_goods = float(score[a]), [float(g[a]) for g in goods]
    return best_score, best_goods


@pytest.mark.parametrize("packable", [True, False])
def test_static_allocation_equals_the_exact_enumeration(packable: bool) -> None:
    """Score and per-phase goodputs of the best static split (continuous rates: no exact
    ties, where the scalar pick would be decided by rounding)."""
    rng = random.Random(21 if packable else 22)
    for _ in range(40):
        gpn, shp = _shapes(rng, packable)
        K = rng.choice([2, 3])
        P = [[rng.uniform(0.05, 20.0) for _ in shp] for _ in range(K)]
        D = [[rng.uniform(0.05, 20.0) for _ in shp] for _ in range(K)]
        links = [rng.choice([0.0, rng.uniform(0.1, 5.0)]) for _ in range(K)]
        raw = [rng.random() + 0.1 for _ in range(K)]
        shares = [r / sum(raw) for r in raw]
        G = np.array(sorted({rng.randint(1, 400) for _ in range(12)}), dtype=np.int64)
        g = np.array(shp, dtype=np.int64)
        best = []
        for k in range(K):
            pre = [alloc.PoolOption(a, p, "") for a, p in zip(shp, P[k], strict=True)]
            dec = [alloc.PoolOption(a, d, "") for a, d in zip(shp, D[k], strict=True)]
            best.append(np.array([(alloc.best_allocations(int(t), pre, dec, links[k], gpn)[:1]
                                   or [None])[0] for t in G], dtype=object))
        best_rate = [np.array([b.goodput_rps if b is not None else 0.0 for b in bk])
                     for bk in best]
        known = []
        for k in range(K):  # the per-phase best splits seed the lower bound, as in a sweep
            pi = np.array([b.prefill_option if b is not None else -1 for b in best[k]])
            pj = np.array([b.decode_option if b is not None else -1 for b in best[k]])
            px = np.array([b.prefill_instances if b is not None else 0 for b in best[k]])
            known.append((pi, pj, px))
        got = static_allocation(G, g, [np.array(p) for p in P], [np.array(d) for d in D],
                                   links, best_rate, shares, gpn, known=known)
        for n, total in enumerate(G):
            score, goods = _static_reference(int(total), shp, P, D, links,
                                             [float(b[n]) for b in best_rate], shares, gpn)
            assert got.score[n] == pytest.approx(score, rel=1e-12, abs=1e-15)
            if goods is None:
                assert not got.found[n]
            else:
                assert np.allclose(got.goods[n], goods, rtol=1e-12)


def test_more_gpus_never_lower_the_best_integer_goodput() -> None:
    """One more GPU keeps every split of one fewer feasible (it idles), so the best integer
    goodput never falls as the cluster grows."""
    G = np.arange(2, 600, dtype=np.int64)
    got = alloc.best_splits(G, np.array([2]), np.array([5.0]), np.array([4]), np.array([11.0]),
                            0.0, 8)
    assert np.all(np.diff(got.goodput) >= 0.0)
    for n in (7, 99, 597):  # and it is the exhaustive enumeration's
        best = alloc.best_allocations(int(G[n]), [alloc.PoolOption(2, 5.0, "")],
                                      [alloc.PoolOption(4, 11.0, "")], 0.0, 8)[0]
        assert got.goodput[n] == best.goodput_rps


def test_ties_between_decode_shapes_go_to_the_most_headroom() -> None:
    """#27 item 8: when prefill binds, the split shown is the decode shape with the most
    decode capacity to spare (not the first listed; then the one using fewer GPUs); both
    searches agree."""
    pre = [alloc.PoolOption(1, 10.0, "TP1")]
    # on 8 GPUs, x = 4 prefill instances carry 40; every decode option carries more
    dec = [alloc.PoolOption(1, 11.0, "TP1"),    # 4 × 11 = 44
           alloc.PoolOption(2, 25.0, "TP2"),    # 2 × 25 = 50: the most headroom
           alloc.PoolOption(4, 50.0, "TP4")]    # 1 × 50 = 50: as much, same GPUs
    best = alloc.best_allocations(8, pre, dec, 0.0, 8)
    assert [b.goodput_rps for b in best[:3]] == [40.0, 40.0, 40.0]
    assert [dec[b.decode_option].label for b in best[:3]] == ["TP2", "TP4", "TP1"]
    got = alloc.best_splits(np.array([8]), np.array([1, 1, 1]), np.array([10.0] * 3),
                            np.array([1, 2, 4]), np.array([11.0, 25.0, 50.0]), 0.0, 8)
    assert int(got.pair[0]) == 1 and int(got.x[0]) == 4
