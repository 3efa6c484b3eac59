"""Benchmark: full evaluation of one workload (all TP × chunk × allocation candidates).

Prints the median and spread over repeated runs after imports and one warm-up, per example
workload. Run: ``python benchmarks/bench_evaluate.py``. Not a test: machines are shared.
``measure`` returns the figures for ``benchmarks/run.py``.

Target (issue #3): a full evaluation in under 50 ms after imports, for the three-phase
workload ``benchmarks/three-phase.yaml``. These are *warm* figures (repeats in one process, the
module-level tables built); a command pays the *first* evaluation of its process, which
``first_run`` measures in fresh processes (target, issue #20: < 60 ms for the three-phase
workload).
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
for _p in (str(ROOT), str(ROOT / "benchmarks")):
    if _p not in sys.path:
        sys.path.insert(0, _p)  # the checkout, not an installed copy

THREE_PHASE = ROOT / "benchmarks" / "three-phase.yaml"
TARGET_THREE_PHASE_MS = 50.0
TARGET_FIRST_RUN_THREE_PHASE_MS = 60.0


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


_FIRST_RUN_CHILD = r'''
import json, sys, time
from pathlib import Path
from advisor.core.plan.capacities import Capacities
from advisor.core.plan.evaluate import evaluate
from advisor.loading.catalog import ProfileCatalog
from advisor.loading.resolve import load_scenario
sc = load_scenario(Path(sys.argv[1]), ProfileCatalog())
out = []
for _ in range(2):
    w, c = time.perf_counter(), time.process_time()
    evaluate(sc, Capacities(sc))
    out.append((time.perf_counter() - w, time.process_time() - c))
json.dump(out, sys.stdout)
'''


@dataclass(frozen=True)
class FirstRunTiming:
    """``evaluate`` as a command pays it: the first call in a fresh process (everything
    imported, the workload loaded), and a second call in the same process, medians over
    processes, milliseconds (wall and CPU)."""

    name: str
    phases: int
    runs: int
    first_ms: float
    first_cpu_ms: float
    first_range_ms: tuple[float, float]
    second_ms: float


def first_run(path: Path, runs: int = 7) -> FirstRunTiming:
    """Median over ``runs`` fresh processes (after an untimed one) of the first and second
    ``evaluate`` of ``path``."""
    import json
    import subprocess
    import tempfile

    from bench_cold_breakdown import cold_env

    firsts, cpus, seconds = [], [], []
    with tempfile.TemporaryDirectory(prefix="pd-advisor-pycache-") as pycache:
        for n in range(runs + 1):
            proc = subprocess.run([sys.executable, "-c", _FIRST_RUN_CHILD, str(path)], cwd=ROOT,
                                  env=cold_env(pycache), capture_output=True, text=True,
                                  check=False, timeout=300)
            if proc.returncode != 0:
                raise RuntimeError(f"first-run child failed:\n{proc.stderr[-2000:]}")
            if n == 0:
                continue
            (w1, c1), (w2, _) = json.loads(proc.stdout)
            firsts.append(w1 * 1000)
            cpus.append(c1 * 1000)
            seconds.append(w2 * 1000)
    from advisor.loading.catalog import ProfileCatalog
    from advisor.loading.resolve import load_scenario

    phases = len(load_scenario(Path(path), ProfileCatalog()).phases)
    return FirstRunTiming(Path(path).name, phases, runs, statistics.median(firsts),
                          statistics.median(cpus), (min(firsts), max(firsts)),
                          statistics.median(seconds))


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
