"""Where a cold ``pd-advisor recommend`` spends its time: each phase of the command timed in a
fresh process, median over several processes.

    python benchmarks/bench_cold_breakdown.py [WORKLOAD] [--runs N]

A child interpreter does what ``pd-advisor recommend WORKLOAD`` does, in the same order, with
a clock reading between the phases: the floor's imports, what Typer imports at run time to
coerce the arguments (pydantic's model machinery), wiring the command, building the pydantic
schemas, importing the loading, core and rendering code, then loading, evaluating, assessing
with the verdict boundaries, and rendering the default table. Python's own start-up is the
process's wall time minus the child's clock. Bytecode is cached by an untimed warm-up run
(``PYTHONPYCACHEPREFIX``), as after an install. ``measure`` returns the figures for
``benchmarks/run.py``. Not a test: machines are noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_WORKLOAD = ROOT / "examples" / "chat-8b-single-node.yaml"

STARTUP = "Python start-up (interpreter, site)"

_CHILD = r'''
import json, sys, time
marks = [("", time.perf_counter())]
def mark(name):
    marks.append((name, time.perf_counter()))
import numpy, yaml, pydantic, typer, rich.console
mark("floor imports: numpy, yaml, pydantic, typer, rich.console")
from typer import _adapters
mark("Typer's run-time imports (pydantic model machinery for argument coercion)")
import typer.main
from advisor.cli.app import make_app
typer.main.get_command(make_app("recommend"))
mark("command line: wire the recommend command")
from advisor.loading import profile_schema, workload_schema
mark("pydantic schemas of workloads and profiles (class construction)")
from advisor.loading import catalog, resolve
mark("loading code (YAML guard, resolution)")
from advisor.core.plan import evaluate
from advisor.core.verdict import boundaries, rules
mark("core modules (dataclasses, constants)")
from advisor.render import formats, report_json, table
mark("rendering modules (rich tables)")
from pathlib import Path
path = Path(sys.argv[1])
sc, _ = resolve.load_scenario_and_document(path, catalog.ProfileCatalog())
mark("read and validate the workload and its profiles")
model = evaluate.evaluate(sc)
mark("evaluate the model")
assessment = rules.assess(sc, model)
bounds = boundaries.verdict_boundaries(sc, model)
mark("assess, with the verdict boundaries")
doc = report_json.build_report(sc, assessment, str(path), path.read_bytes(), bounds)
formats.render(doc, formats.Format.table, width=100, color=False)
mark("build the report and render the table")
json.dump([(name, t - marks[i][1]) for i, (name, t) in enumerate(marks[1:])], sys.stdout)
'''


@dataclass(frozen=True)
class Breakdown:
    """Median seconds per phase (in order; Python start-up first) and of the whole process."""

    workload: str
    runs: int
    phases: list[tuple[str, float]]
    total_s: float


def cold_env(pycache: str) -> dict[str, str]:
    """The environment of a cold run: the checkout first on PYTHONPATH; bytecode cached in
    ``pycache`` (written by the warm-up run whatever PYTHONDONTWRITEBYTECODE says, so no run
    pays for compiling, as after a pip install, and nothing is written into the checkout);
    no colour; no extra profile directories."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PD_ADVISOR_PROFILES", "PYTHONDONTWRITEBYTECODE")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env["PYTHONPYCACHEPREFIX"] = pycache
    env["NO_COLOR"] = "1"
    return env


def measure(workload: Path = DEFAULT_WORKLOAD, runs: int = 7) -> Breakdown:
    """Run the child ``runs`` times (after one untimed warm-up) and take medians."""
    samples: list[list[tuple[str, float]]] = []
    totals: list[float] = []
    with tempfile.TemporaryDirectory(prefix="pd-advisor-pycache-") as pycache:
        env = cold_env(pycache)
        for n in range(runs + 1):
            t0 = time.perf_counter()
            proc = subprocess.run([sys.executable, "-c", _CHILD, str(workload)], cwd=ROOT,
                                  env=env, capture_output=True, text=True, check=False,
                                  timeout=300)
            wall = time.perf_counter() - t0
            if proc.returncode != 0:
                raise RuntimeError(f"breakdown child failed:\n{proc.stderr[-2000:]}")
            if n == 0:
                continue  # warm-up: writes the bytecode cache
            phases = [(str(name), float(s)) for name, s in json.loads(proc.stdout)]
            samples.append([(STARTUP, wall - sum(s for _, s in phases)), *phases])
            totals.append(wall)
    names = [name for name, _ in samples[0]]
    medians = [(name, statistics.median(run[i][1] for run in samples))
               for i, name in enumerate(names)]
    shown = workload.relative_to(ROOT) if workload.is_relative_to(ROOT) else workload
    return Breakdown(str(shown), runs, medians, statistics.median(totals))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", nargs="?", type=Path, default=DEFAULT_WORKLOAD)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args(argv)
    b = measure(args.workload.resolve(), args.runs)
    width = max(len(name) for name, _ in b.phases)
    print(f"cold recommend {b.workload}: median of {b.runs} processes")
    for name, seconds in b.phases:
        print(f"{name:<{width}}  {seconds * 1000:7.1f} ms  {seconds / b.total_s:6.1%}")
    print(f"{'process wall time':<{width}}  {b.total_s * 1000:7.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
