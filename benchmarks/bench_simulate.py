"""Simulator speed: simulated requests per second of wall time (median of several runs).

    python benchmarks/bench_simulate.py [WORKLOAD] [--requests N] [--runs K] [--mode MODE]

The target of issue #6 is 1,000,000 simulated requests per minute on one core for the
colocated chunked mode (16,667 requests/s). The analytic evaluation that picks the plan is
done once, outside the timed runs; each run draws its own trace (seed = run number), so the
figure includes drawing the inputs and computing the percentiles.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET_PER_MINUTE = 1_000_000


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the figures; exit 1 if the chunked target is missed."""
    from advisor.core.evaluate import evaluate
    from advisor.core.simulate import MODES, simulate
    from advisor.loading.catalog import ProfileCatalog
    from advisor.loading.resolve import load_scenario

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", nargs="?", type=Path,
                        default=ROOT / "examples" / "chat-8b-single-node.yaml")
    parser.add_argument("--requests", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--mode", choices=MODES, default="chunked")
    args = parser.parse_args(argv)

    scenario = load_scenario(args.workload, ProfileCatalog())
    model = evaluate(scenario)
    rates = []
    for run in range(args.runs):
        start = time.perf_counter()
        res = simulate(scenario, args.mode, args.requests, run, model=model)
        elapsed = time.perf_counter() - start
        rates.append(args.requests / elapsed)
        print(f"run {run + 1}: {args.requests:,} requests in {elapsed:.2f} s "
              f"= {rates[-1]:,.0f} requests/s ({res.steps:,} engine steps)")
    median = statistics.median(rates)
    print(f"{args.workload.name} [{args.mode}]: median {median:,.0f} requests/s "
          f"= {median * 60:,.0f} requests/min (target {TARGET_PER_MINUTE:,}/min)")
    if args.mode == "chunked" and median * 60 < TARGET_PER_MINUTE:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
