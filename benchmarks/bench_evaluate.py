"""Benchmark: full evaluation of one workload (all TP × chunk × allocation candidates).

Prints the median and spread over repeated runs after imports and one warm-up, per example
workload. Run: ``python benchmarks/bench_evaluate.py``. Not a test: machines are shared.
``measure`` returns the figures for ``benchmarks/run.py``.

Target (issue #3): a full evaluation in under 50 ms after imports, for the three-phase
workload ``benchmarks/three-phase.yaml``.
"""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from advisor.loading.catalog import ProfileCatalog

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the checkout, not an installed copy

THREE_PHASE = ROOT / "benchmarks" / "three-phase.yaml"
TARGET_THREE_PHASE_MS = 50.0


@dataclass(frozen=True)
class EvaluateTiming:
    """Wall time of ``evaluate`` on one workload (after loading it and one warm-up)."""

    name: str
    phases: int
    median_ms: float
    min_ms: float
    max_ms: float

    @property
    def evaluations_per_s(self) -> float:
        return 1000.0 / self.median_ms


def workloads() -> list[Path]:
    """The example workloads, then the three-phase benchmark workload."""
    return [*sorted((ROOT / "examples").glob("*.yaml")), THREE_PHASE]


def measure(path: Path, repeats: int = 15,
            catalog: ProfileCatalog | None = None) -> EvaluateTiming:
    """Median, min and max of ``repeats`` timed ``evaluate`` calls on ``path``."""
    from advisor.core.plan.evaluate import evaluate
    from advisor.loading.catalog import ProfileCatalog
    from advisor.loading.resolve import load_scenario

    sc = load_scenario(Path(path), catalog if catalog is not None else ProfileCatalog())
    evaluate(sc)
    times = []
    for _ in range(max(1, repeats)):
        t0 = time.perf_counter()
        evaluate(sc)
        times.append((time.perf_counter() - t0) * 1000)
    return EvaluateTiming(Path(path).name, len(sc.phases), statistics.median(times),
                          min(times), max(times))


def main(repeats: int = 15) -> None:
    from advisor.loading.catalog import ProfileCatalog

    catalog = ProfileCatalog()
    print(f"{'workload':<34} {'phases':>6} {'median ms':>10} {'min ms':>8} {'max ms':>8}")
    for path in workloads():
        t = measure(path, repeats, catalog)
        print(f"{t.name:<34} {t.phases:>6} {t.median_ms:>10.1f} "
              f"{t.min_ms:>8.1f} {t.max_ms:>8.1f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
