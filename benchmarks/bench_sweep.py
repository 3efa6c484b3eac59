"""Benchmark: the vectorised sweep (``advisor.core.analysis.sweep``, ``advisor.core.plan``).

1. Allocation/rounding kernel: the best integer prefill/decode split over every shape pair,
   and its rounding loss, for 100,000 cluster sizes at once (the capacities of
   ``examples/prefill-heavy-70b-ib.yaml``: 8 shapes, 48 shape pairs). A *design point* is one
   cluster size; the (size × shape pair) splits solved per second are printed too, and the
   scalar ``allocation.split`` (enumerating every x) for comparison.
2. End to end: a 4,096-point ``cluster.gpus`` sweep (1…4,096) of the three-phase workload
   ``benchmarks/three-phase.yaml`` — capacities for every shape set, three per-phase splits,
   the static all-phase allocation, colocated plan choice, KV link and verdict at every
   point — against the scalar ``evaluate`` + ``decide`` per point.

Median of repeats after one warm-up, on one core (numpy's own loops; no threads are used).
Run: ``python benchmarks/bench_sweep.py``. Not a test: machines are shared. ``kernel`` and
``end_to_end`` return the figures for ``benchmarks/run.py``.

Targets (issue #5): ≥ 1,000,000 design points/s on one core for the allocation/rounding part;
the 4,096-point sweep of the three-phase workload in under one second end to end.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the checkout, not an installed copy

if TYPE_CHECKING:
    from advisor.loading.catalog import ProfileCatalog

KERNEL_POINTS = 100_000
SWEEP_SPEC = "1:4096"
SCALAR_SAMPLE = range(1000, 1200)
SCALAR_PROBE = (64, 512, 1024, 2048, 4096)
TARGET_KERNEL_POINTS_PER_S = 1_000_000
TARGET_SWEEP_S = 1.0


@dataclass(frozen=True)
class KernelResult:
    """The vectorised allocation/rounding kernel against the scalar ``allocation.split``."""

    shapes: int
    pairs: int
    points: int
    seconds: float
    scalar_seconds_per_point: float

    @property
    def points_per_s(self) -> float:
        return self.points / self.seconds

    @property
    def splits_per_s(self) -> float:
        return self.points * self.pairs / self.seconds


@dataclass(frozen=True)
class SweepResult:
    """The end-to-end ``cluster.gpus`` sweep against the scalar model per point."""

    workload: str
    phases: int
    spec: str
    points: int
    seconds: float
    seconds_with_load: float
    scalar_seconds_per_point: float

    @property
    def points_per_s(self) -> float:
        return self.points / self.seconds


def _median(fn: Callable[[], object], repeats: int) -> float:
    fn()
    times = []
    for _ in range(max(1, repeats)):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def kernel(catalog: ProfileCatalog, repeats: int = 7, points: int = KERNEL_POINTS,
           scalar_sample: Sequence[int] = SCALAR_SAMPLE, scalar_repeats: int = 3) -> KernelResult:
    """Time the best-split kernel over ``points`` cluster sizes, and the scalar split."""
    import numpy as np

    from advisor.core.plan import split
    from advisor.core.plan.capacities import Capacities
    from advisor.loading.resolve import load_scenario

    sc = load_scenario(ROOT / "examples" / "prefill-heavy-70b-ib.yaml", catalog)
    caps = Capacities(sc)
    grp = caps.group_at(1024)
    pc = grp.phases[0]
    pi, pj = pc.pairs
    G = np.arange(128, 128 + points, dtype=np.int64)

    def run() -> None:
        sp = split.best_splits(G, grp.gpus[pi], pc.prefill_rates[pi], grp.gpus[pj],
                               pc.decode_rates[pj], pc.link_rate, sc.cluster.gpus_per_node)
        ideal = pc.ideal_per_gpu * G
        np.clip(1.0 - sp.goodput / ideal, 0.0, 1.0)

    t = _median(run, repeats)
    pre = [split.PoolOption(int(g), float(r), "")
           for g, r in zip(grp.gpus, pc.prefill_rates, strict=True)]
    dec = [split.PoolOption(int(g), float(r), "")
           for g, r in zip(grp.gpus, pc.decode_rates, strict=True)]

    def scalar() -> None:
        for g in scalar_sample:
            split.split(g, pre, dec, pc.link_rate, sc.cluster.gpus_per_node)

    ts = _median(scalar, scalar_repeats) / len(scalar_sample)
    return KernelResult(len(grp.shapes), int(pi.size), points, t, ts)


def end_to_end(catalog: ProfileCatalog, repeats: int = 5, spec: str = SWEEP_SPEC,
               probe: Sequence[int] = SCALAR_PROBE) -> SweepResult:
    """Time a ``cluster.gpus`` sweep of the three-phase workload (with and without loading
    the file) and the scalar ``evaluate`` + ``decide`` at a few ``probe`` sizes."""
    from advisor.core.analysis.keys import apply_value
    from advisor.core.analysis.sweep import sweep
    from advisor.core.plan.evaluate import evaluate
    from advisor.core.verdict.decision import decide
    from advisor.loading.resolve import load_scenario
    from advisor.loading.sweep_spec import make_axis

    path = ROOT / "benchmarks" / "three-phase.yaml"
    sc = load_scenario(path, catalog)
    axis = make_axis("cluster.gpus", spec)
    t = _median(lambda: sweep(sc, [axis]), repeats)

    def with_load() -> None:
        sweep(load_scenario(path, catalog), [make_axis("cluster.gpus", spec)])

    t_load = _median(with_load, repeats)
    t0 = time.perf_counter()
    for g in probe:
        s = apply_value(sc, "cluster.gpus", g)
        decide(s, evaluate(s))
    per_point = (time.perf_counter() - t0) / max(1, len(probe))
    return SweepResult(path.name, len(sc.phases), spec, len(axis), t, t_load, per_point)


def print_kernel(k: KernelResult) -> None:
    print(f"allocation/rounding kernel ({k.shapes} shapes, {k.pairs} pairs, "
          f"{k.points:,} cluster sizes 128…{128 + k.points - 1:,}):")
    print(f"  vectorised: {k.points_per_s:>13,.0f} design points/s "
          f"({k.splits_per_s:,.0f} size × pair splits/s; {k.seconds * 1000:.1f} ms)")
    print(f"  scalar split.split: {1 / k.scalar_seconds_per_point:>8,.0f} design points/s "
          f"at ~1,100 GPUs ({k.scalar_seconds_per_point * 1e3:.2f} ms each)")


def print_end_to_end(r: SweepResult) -> None:
    print(f"end to end: {r.points:,}-point cluster.gpus sweep ({r.spec}) of {r.workload} "
          f"({r.phases} phases, static pools):")
    print(f"  sweep: {r.seconds:.3f} s ({r.points_per_s:,.0f} points/s); "
          f"with loading the file: {r.seconds_with_load:.3f} s")
    print(f"  scalar evaluate + decide: {r.scalar_seconds_per_point * 1000:.0f} ms a point, "
          f"≈ {r.scalar_seconds_per_point * r.points:,.0f} s for the same sweep")


def main() -> None:
    from advisor.loading.catalog import ProfileCatalog

    catalog = ProfileCatalog()
    print_kernel(kernel(catalog))
    print_end_to_end(end_to_end(catalog))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
