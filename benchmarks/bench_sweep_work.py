"""What one capacity step and one design point of a sweep cost, in CPU seconds (#33).

    python benchmarks/bench_sweep_work.py

The sweep work bound (``advisor.core.limits.MAX_SWEEP_WORK_S``) estimates a sweep as
``steps × SWEEP_STEP_COST_S + points × SWEEP_POINT_COST_S``; this measures both on the
examples (``time.process_time`` of the ``sweep`` call, files loaded beforehand): a line over a
capacity key (token lengths: one capacity step per value) and lines and grids over the
vectorised keys, open-loop and closed-loop. The constants in ``limits.py`` are the upper ends
of these figures, rounded up.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CASES = (  # (workload, --vary specs, what it measures)
    ("chat-8b-single-node.yaml", ["traffic.prompt_tokens=100:10000:40"], "open step"),
    ("day-night-shift.yaml", ["traffic.prompt_tokens=100:10000:20"], "open step"),
    ("deepseek-v3-96xh100.yaml", ["traffic.prompt_tokens=100:10000:10"], "open step"),
    ("chat-8b-single-node.yaml", ["traffic.rate_rps=1:100:20000"], "open point"),
    ("day-night-shift.yaml", ["cluster.gpus=8:4096"], "open point"),
    ("agents-70b-closed-loop.yaml", ["traffic.concurrency=1:2000:10",
                                     "cluster.gpus=8:800:10"], "closed step"),
    ("agents-70b-closed-loop.yaml", ["cluster.gpus=8:800:200"], "closed point"),
)


def measure(workload: str, specs: list[str]) -> tuple[float, int, int]:
    """(CPU seconds, capacity steps, points) of one sweep."""
    from advisor.core.sweep.grid import sweep, work_estimate_s
    from advisor.loading.catalog import ProfileCatalog
    from advisor.loading.resolve import load_scenario
    from advisor.loading.sweep_spec import axis_from_vary

    catalog = ProfileCatalog()
    scenario = load_scenario(ROOT / "examples" / workload, catalog)
    axes = [axis_from_vary(spec, catalog.link) for spec in specs]
    _, steps, points = work_estimate_s(scenario, axes)
    start = time.process_time()
    sweep(scenario, axes)
    return time.process_time() - start, steps, points


def main() -> None:
    """Print CPU seconds per capacity step or per point for every case."""
    print(f"{'workload':30s} {'vary':48s} {'steps':>6s} {'points':>7s} {'CPU s':>7s}  per")
    for workload, specs, what in CASES:
        cpu, steps, points = measure(workload, specs)
        unit = cpu / steps if what.endswith("step") else cpu / points
        print(f"{workload:30s} {' '.join(specs):48s} {steps:6d} {points:7d} {cpu:7.2f}  "
              f"{what}: {unit * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
