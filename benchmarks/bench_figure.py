"""Benchmark: the data of ``recommend --plot`` / ``--format html`` (``core.analysis.figure_data``).

Prints, per example workload, the median and spread of ``figure_data`` (curves over about 64
rates and three percentiles for three plans, what binds at each goodput, bars,
decomposition) after the model is evaluated, imports are done and one warm-up ran. Drawing
with matplotlib is not included (about a second per figure, matplotlib's own time). Run:
``python benchmarks/bench_figure.py``. Not a test: machines are shared.

Target (issue #22, our own budget): under 200 ms per example, so that the figure adds little
to a `recommend` that already spends a few hundred ms in the verdict boundaries.
"""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the checkout, not an installed copy

TARGET_MS = 200.0


@dataclass(frozen=True)
class FigureTiming:
    """Wall time of ``figure_data`` on one workload."""

    name: str
    median_ms: float
    min_ms: float
    max_ms: float


def measure(paths: list[Path] | None = None, repeats: int = 5) -> list[FigureTiming]:
    """Time ``figure_data`` on each workload (default: the examples)."""
    from advisor.core.analysis.figure_data import figure_data
    from advisor.core.plan.capacities import Capacities
    from advisor.core.plan.evaluate import evaluate
    from advisor.loading.catalog import ProfileCatalog
    from advisor.loading.resolve import load_scenario_and_document

    out = []
    for path in paths or sorted((ROOT / "examples").glob("*.yaml")):
        sc, _ = load_scenario_and_document(path, ProfileCatalog(env={}))
        caps = Capacities(sc)
        model = evaluate(sc, caps)
        figure_data(sc, model, caps)  # warm-up (scipy import, caches)
        times = []
        for _ in range(max(repeats, 1)):
            start = time.perf_counter()
            figure_data(sc, model, caps)
            times.append((time.perf_counter() - start) * 1000.0)
        out.append(FigureTiming(path.stem, statistics.median(times), min(times), max(times)))
    return out


def main() -> None:
    print(f"{'workload':<28} {'median ms':>10} {'min':>8} {'max':>8}   target < {TARGET_MS:g} ms")
    for t in measure():
        ok = "pass" if t.median_ms < TARGET_MS else "FAIL"
        print(f"{t.name:<28} {t.median_ms:>10.1f} {t.min_ms:>8.1f} {t.max_ms:>8.1f}   {ok}")


if __name__ == "__main__":
    main()
