"""Benchmark: the vectorised sweep (``advisor.core.sweep``).

1. Allocation/rounding kernel: the best integer prefill/decode split over every shape pair,
   and its rounding loss, for 100,000 cluster sizes at once (the capacities of
   ``examples/prefill-heavy-70b-ib.yaml``: 8 shapes, 48 shape pairs). A *design point* is one
   cluster size; the (size × shape pair) splits solved per second are printed too, and the
   scalar ``allocation.split`` (enumerating every x) for comparison.
2. End to end: a 4,096-point ``cluster.gpus`` sweep (1…4,096) of the three-phase workload
   ``benchmarks/three-phase.yaml`` — capacities for every shape set, three per-phase splits,
   the static all-phase allocation, colocated plan choice, KV link and verdict at every
   point — against the scalar ``evaluate`` + ``assess`` per point.

Median of repeats after one warm-up, on one core (numpy's own loops; no threads are used).
Run: ``python benchmarks/bench_sweep.py``. Not a test: machines are shared.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, too

import numpy as np

from advisor.core import allocation as alloc
from advisor.core import sweep as sw
from advisor.core.evaluate import evaluate
from advisor.core.rules import assess
from advisor.loading.catalog import ProfileCatalog
from advisor.loading.resolve import load_scenario

ROOT = Path(__file__).resolve().parents[1]
KERNEL_POINTS = 100_000
SWEEP_SPEC = "1:4096"


def _median(fn, repeats: int) -> float:  # type: ignore[no-untyped-def]
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def kernel(catalog: ProfileCatalog, repeats: int = 7) -> None:
    sc = load_scenario(ROOT / "examples" / "prefill-heavy-70b-ib.yaml", catalog)
    caps = sw._Capacities(sc)
    grp = caps.group(int(caps.group_codes(np.array([1024]))[0]), 1024)
    pc = grp.phases[0]
    pi, pj = grp.pairs[0]
    G = np.arange(128, 128 + KERNEL_POINTS, dtype=np.int64)

    def run() -> None:
        sp = sw.best_splits(G, grp.gpus[pi], pc.prefill[pi], grp.gpus[pj], pc.decode[pj],
                            pc.link_rate, sc.cluster.gpus_per_node)
        ideal = pc.ideal_per_gpu * G
        np.clip(1.0 - sp.goodput / ideal, 0.0, 1.0)

    t = _median(run, repeats)
    pre = [alloc.PoolOption(int(g), float(r), "") for g, r in zip(grp.gpus, pc.prefill)]
    dec = [alloc.PoolOption(int(g), float(r), "") for g, r in zip(grp.gpus, pc.decode)]
    sample = range(1000, 1200)

    def scalar() -> None:
        for g in sample:
            alloc.split(g, pre, dec, pc.link_rate, sc.cluster.gpus_per_node)

    ts = _median(scalar, 3) / len(sample)
    print(f"allocation/rounding kernel ({len(grp.shapes)} shapes, {pi.size} pairs, "
          f"{KERNEL_POINTS:,} cluster sizes 128…{128 + KERNEL_POINTS - 1:,}):")
    print(f"  vectorised: {KERNEL_POINTS / t:>13,.0f} design points/s "
          f"({KERNEL_POINTS * pi.size / t:,.0f} size × pair splits/s; {t * 1000:.1f} ms)")
    print(f"  scalar allocation.split: {1 / ts:>8,.0f} design points/s at ~1,100 GPUs "
          f"({ts * 1e3:.2f} ms each)")


def end_to_end(catalog: ProfileCatalog, repeats: int = 5) -> None:
    path = ROOT / "benchmarks" / "three-phase.yaml"
    sc = load_scenario(path, catalog)
    axis = sw.make_axis("cluster.gpus", SWEEP_SPEC)
    t = _median(lambda: sw.sweep(sc, [axis]), repeats)

    def with_load() -> None:
        sw.sweep(load_scenario(path, catalog), [sw.make_axis("cluster.gpus", SWEEP_SPEC)])

    t_load = _median(with_load, repeats)
    probe = [64, 512, 1024, 2048, 4096]
    t0 = time.perf_counter()
    for g in probe:
        s = sw.apply_value(sc, "cluster.gpus", g)
        assess(s, evaluate(s))
    per_point = (time.perf_counter() - t0) / len(probe)
    n = len(axis)
    print(f"end to end: {n:,}-point cluster.gpus sweep ({SWEEP_SPEC}) of {path.name} "
          f"({len(sc.phases)} phases, static pools):")
    print(f"  sweep: {t:.3f} s ({n / t:,.0f} points/s); with loading the file: {t_load:.3f} s")
    print(f"  scalar evaluate + assess: {per_point * 1000:.0f} ms a point, "
          f"≈ {per_point * n:,.0f} s for the same sweep")


def main() -> None:
    catalog = ProfileCatalog()
    kernel(catalog)
    end_to_end(catalog)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
