"""Simulator speed: simulated requests per second of wall time (median of several runs).

    python benchmarks/bench_simulate.py [WORKLOAD] [--requests N] [--runs K] [--mode MODE]

The target of issue #6 is 1,000,000 simulated requests per minute on one core for the
colocated chunked mode (16,667 requests/s). The analytic evaluation that picks the plan is
done once, outside the timed runs; each run draws its own trace (seed = run number), so the
figure includes drawing the inputs and computing the percentiles. ``measure`` returns the
figures for ``benchmarks/run.py``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from advisor.core.simulate.plan import Mode

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the checkout, not an installed copy

DEFAULT_WORKLOAD = ROOT / "examples" / "chat-8b-single-node.yaml"
TARGET_PER_MINUTE = 1_000_000


@dataclass(frozen=True)
class SimulateRun:
    """One timed simulation."""

    requests: int
    seconds: float
    steps: int

    @property
    def requests_per_s(self) -> float:
        return self.requests / self.seconds


@dataclass(frozen=True)
class SimulateResult:
    """Simulated requests per second of wall time, median over the runs."""

    workload: str
    mode: str
    runs: tuple[SimulateRun, ...]

    @property
    def requests_per_s(self) -> float:
        return statistics.median(r.requests_per_s for r in self.runs)

    @property
    def requests_per_min(self) -> float:
        return self.requests_per_s * 60


def measure(workload: Path = DEFAULT_WORKLOAD, mode: Mode = "chunked", requests: int = 200_000,
            runs: int = 5,
            on_run: Callable[[int, SimulateRun], None] | None = None) -> SimulateResult:
    """Simulate ``runs`` traces of ``requests`` requests (seed = run number) and time each."""
    from advisor.core.plan.evaluate import evaluate
    from advisor.core.simulate import simulate
    from advisor.loading.catalog import ProfileCatalog
    from advisor.loading.resolve import load_scenario

    scenario = load_scenario(Path(workload), ProfileCatalog())
    model = evaluate(scenario)
    done = []
    for run in range(max(1, runs)):
        start = time.perf_counter()
        res = simulate(scenario, mode, requests, run, model=model)
        done.append(SimulateRun(requests, time.perf_counter() - start, res.steps))
        if on_run is not None:
            on_run(run, done[-1])
    return SimulateResult(Path(workload).name, mode, tuple(done))


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the figures; exit 1 if the chunked target is missed."""
    from advisor.core.simulate import MODES

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", nargs="?", type=Path, default=DEFAULT_WORKLOAD)
    parser.add_argument("--requests", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--mode", choices=MODES, default="chunked")
    args = parser.parse_args(argv)

    def show(run: int, r: SimulateRun) -> None:
        print(f"run {run + 1}: {r.requests:,} requests in {r.seconds:.2f} s "
              f"= {r.requests_per_s:,.0f} requests/s ({r.steps:,} engine steps)")

    result = measure(args.workload, args.mode, args.requests, args.runs, on_run=show)
    median = result.requests_per_s
    print(f"{result.workload} [{args.mode}]: median {median:,.0f} requests/s "
          f"= {median * 60:,.0f} requests/min (target {TARGET_PER_MINUTE:,}/min)")
    if args.mode == "chunked" and median * 60 < TARGET_PER_MINUTE:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
