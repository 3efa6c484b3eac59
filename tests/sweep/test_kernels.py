"""The vectorised integer split and static allocation against the exact enumerations."""

from __future__ import annotations

import random

import numpy as np
import pytest

from advisor.core import allocation as alloc
from advisor.core import sweep as sw


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
        pre = [alloc.PoolOption(g, p, str(g)) for g, p in zip(shp, P)]
        dec = [alloc.PoolOption(g, d, str(g)) for g, d in zip(shp, D)]
        ii = [i for i, o in enumerate(pre) if o.rate_rps > 0]
        jj = [j for j, o in enumerate(dec) if o.rate_rps > 0]
        pi = np.array([i for i in ii for _ in jj], dtype=np.int64)
        pj = np.array([j for _ in ii for j in jj], dtype=np.int64)
        g = np.array(shp, dtype=np.int64)
        got = sw.best_splits(G, g[pi], np.array(P)[pi], g[pj], np.array(D)[pj], link, gpn)
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
    """``evaluate._static_allocation``'s loop, verbatim on plain numbers."""
    best_score, best_goods = -1.0, None
    for i in range(len(shp)):
        for j in range(len(shp)):
            gp, gd = shp[i], shp[j]
            if gp + gd > G:
                continue
            x = np.arange(1, (G - gd) // gp + 1)
            y = (G - x * gp) // gd
            ok = (y >= 1) & alloc._nodes_ok(x, np.int64(gp), y, np.int64(gd), np.int64(G), gpn)
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
            pre = [alloc.PoolOption(a, p, "") for a, p in zip(shp, P[k])]
            dec = [alloc.PoolOption(a, d, "") for a, d in zip(shp, D[k])]
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
        got = sw.static_allocation(G, g, [np.array(p) for p in P], [np.array(d) for d in D],
                                   links, best_rate, shares, gpn, known=known)
        for n, total in enumerate(G):
            score, goods = _static_reference(int(total), shp, P, D, links,
                                             [float(b[n]) for b in best_rate], shares, gpn)
            assert got.score[n] == pytest.approx(score, rel=1e-12, abs=1e-15)
            if goods is None:
                assert not got.found[n]
            else:
                assert np.allclose(got.goods[n], goods, rtol=1e-12)


@pytest.mark.parametrize(("spec", "expected"), [
    ("8,16,32", (8, 16, 32)),
    ("32,8,16,8", (8, 16, 32)),
    ("8:12", (8, 9, 10, 11, 12)),
    ("8:64:4", (8, 27, 45, 64)),
    ("8:4096:log:10", (8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)),
])
def test_gpu_specs(spec: str, expected: tuple[int, ...]) -> None:
    assert sw.parse_spec("cluster.gpus", spec)[0] == expected


def test_float_specs() -> None:
    values, log = sw.parse_spec("traffic.rate_rps", "1:100")
    assert len(values) == sw.DEFAULT_FLOAT_POINTS and values[0] == 1 and values[-1] == 100
    assert not log
    values, log = sw.parse_spec("slo.tpot_ms", "10:1000:log")
    assert len(values) == sw.DEFAULT_LOG_POINTS and log
    assert values[0] == 10 and values[-1] == 1000
    assert sw.parse_spec("cluster.inter_node", "ib-ndr-400,roce-400")[0] == ("ib-ndr-400",
                                                                             "roce-400")


@pytest.mark.parametrize(("key", "spec", "message"), [
    ("cluster.gpu", "8", "cannot vary"),
    ("cluster.gpus", "8:4:log", "low to high"),
    ("cluster.gpus", "0,8", "≥ 1"),
    ("cluster.gpus", "8.5", "whole numbers"),
    ("cluster.gpus", "a,b", "not a list of numbers"),
    ("traffic.rate_rps", "0:10", "≥ 1e-06"),
    ("traffic.rate_rps", "1:10:log:0", "positive integer"),
    ("slo.percentile", "50:100", "≤ 99.99"),
    ("cluster.inter_node", "a:b", "not a range"),
    # the model's domain, as the workload format limits it (issue #8 fuzzing)
    ("traffic.burstiness", "1e200", "≤ 1000"),
    ("cluster.gpus", "8,200000", "≤ 100000"),
    ("traffic.rate_rps", "1e-7,1", "≥ 1e-06"),
    ("traffic.prompt_tokens", "1e400", "not finite"),
    ("traffic.output_tokens", "100,2e7", "≤ 1e\\+07"),
])
def test_bad_specs(key: str, spec: str, message: str) -> None:
    with pytest.raises(sw.SweepError, match=message):
        sw.parse_spec(key, spec)


def test_pooled_prefill_search_equals_the_scalar_one() -> None:
    """``prefill_goodputs`` over many pool sizes at once = one pool size at a time, and each
    goodput is the SLO root: TTFT meets the SLO there and misses it 2e-4 of the instance's
    capacity above (the nested grids resolve 1/23³ ≈ 8e-5 of it)."""
    from advisor.core.disaggregated import prefill_capacity, prefill_ttft, saturating_tokens
    from advisor.core.evaluate import _shapes
    from advisor.core.kv_transfer import pool_link
    from tests.sweep.helpers import THREE_PHASE, scenario

    sc = scenario(THREE_PHASE)
    shapes, _ = _shapes(sc)
    link = pool_link(sc.cluster.intra_node, sc.cluster.inter_node, False)
    ttft = sc.slo.ttft_ms / 1000.0
    checked = 0
    for shape in shapes[:3]:
        inst = shape.instance
        for phase in sc.phases:
            servers = np.array([1, 2, 3, 7, 64, 500, 1601])
            got = sw.prefill_goodputs(inst, phase, sc.slo.quantile, ttft, link, servers)
            caps = [prefill_capacity(inst, phase, sc.slo.quantile, ttft, link, int(n))
                    for n in servers]
            assert got.tolist() == [cap.goodput_rps for cap in caps]
            step = 2e-4 * caps[0].max_rate_rps
            lm = saturating_tokens(inst, phase.prompt_tokens.mean)
            for n, rate in zip(servers, got):
                if rate <= 0:
                    continue
                at, above = prefill_ttft(inst, phase, np.array([rate, rate + step]),
                                         sc.slo.quantile, link, 0.0, lm, int(n))[0]
                assert at <= ttft < above
                checked += 1
    assert checked > 10
