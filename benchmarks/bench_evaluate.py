"""Benchmark: full evaluation of one workload (all TP × chunk × allocation candidates).

Prints the median and spread over repeated runs after imports and one warm-up, per example
workload. Run: ``python benchmarks/bench_evaluate.py``. Not a test: machines are shared.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from advisor.core.evaluate import evaluate
from advisor.loading.catalog import ProfileCatalog
from advisor.loading.resolve import load_scenario

ROOT = Path(__file__).resolve().parents[1]


def main(repeats: int = 15) -> None:
    catalog = ProfileCatalog()
    files = sorted((ROOT / "examples").glob("*.yaml")) + [ROOT / "benchmarks" / "three-phase.yaml"]
    print(f"{'workload':<34} {'phases':>6} {'median ms':>10} {'min ms':>8} {'max ms':>8}")
    for path in files:
        sc = load_scenario(path, catalog)
        evaluate(sc)
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            evaluate(sc)
            times.append((time.perf_counter() - t0) * 1000)
        print(f"{path.name:<34} {len(sc.phases):>6} {statistics.median(times):>10.1f} "
              f"{min(times):>8.1f} {max(times):>8.1f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
