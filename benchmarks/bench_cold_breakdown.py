"""Where a cold ``pd-advisor recommend`` spends its time: each phase of the command timed in a
fresh process, median over several processes.

    python benchmarks/bench_cold_breakdown.py [WORKLOAD] [--runs N]

A child interpreter does what ``pd-advisor recommend WORKLOAD`` does, in the same order, and
reads the clock between the phases: the floor's imports, what Typer imports at run time to
coerce the arguments (pydantic's model machinery), wiring the command, parsing its arguments,
importing the pydantic schemas and the loading, core and rendering code, then loading,
evaluating (the first evaluation in the process), assessing, the verdict boundaries,
rendering the default table, writing it to stdout (/dev/null) and ending the process the way
the console script does (``advisor.__main__.exit_now``: flush, ``os._exit``; a checkout
without it ends with ``sys.exit``, i.e. the interpreter's teardown).

Every phase is measured, none inferred by subtraction: the clock is ``time.monotonic``
(``CLOCK_MONOTONIC``, one clock for every process on Linux), so **start-up** is from just
before the parent spawns the child to the child's first statement (exec, interpreter, site)
and **shutdown** from the child's last statement to the parent seeing it exit. The phases add
up to the process's wall time. Bytecode is cached by an untimed warm-up run
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

STARTUP = "start-up: exec, interpreter and site, to the first statement"
SHUTDOWN = "shutdown: from the last statement to the process reaped"

_CHILD = r'''
import time
_t0 = time.monotonic()
import json, os, sys
marks = [("", _t0)]
def mark(name):
    marks.append((name, time.monotonic()))
import numpy, yaml, pydantic, typer, rich.console
mark("imports: numpy, yaml, pydantic, typer, rich.console (the floor's)")
from typer import _adapters
mark("imports: Typer's run-time (pydantic model machinery for argument coercion)")
import typer.main
from advisor.cli.app import make_app
command = typer.main.get_command(make_app("recommend"))
mark("command line: wire the recommend command")
ctx = command.make_context("pd-advisor", ["recommend", sys.argv[1]])
mark("command line: parse the arguments")
from advisor.loading import profile_schema, workload_schema
mark("imports: pydantic schemas of workloads and profiles (class construction)")
from advisor.loading import catalog, resolve
mark("imports: loading code (YAML guard, resolution)")
from advisor.core.plan import capacities, evaluate
from advisor.core.analysis import boundaries
from advisor.core.verdict import rules
try:  # the one decision (#28); older checkouts assess and search apart
    from advisor.core.verdict import decision
except ImportError:
    decision = None
mark("imports: core modules")
from advisor.render import formats, report_json, table
mark("imports: rendering modules")
from pathlib import Path
path = Path(sys.argv[1])
sc, document = resolve.load_scenario_and_document(path, catalog.ProfileCatalog())
mark("load: read and validate the workload and its profiles")
caps = capacities.Capacities(sc)
model = evaluate.evaluate(sc, caps)
mark("evaluate (the first evaluation in the process)")
if decision is not None:
    decided = decision.decide(sc, model)
    mark("assess: the rules (the decision)")
    decided = boundaries.searched(sc, decided, caps)
    mark("verdict boundaries")
    doc = report_json.build_report(sc, decided, str(path), document.sha256)
else:
    assessment = rules.assess(sc, model)
    mark("assess: the rules")
    bounds = boundaries.verdict_boundaries(sc, model, caps)
    mark("verdict boundaries")
    data = path.read_bytes()  # checkouts before #28 hash the bytes themselves
    doc = report_json.build_report(sc, assessment, str(path), data, bounds)
text = formats.render(doc, formats.Format.table, width=100, color=False)
mark("build the report and render the table")
sys.stdout.write(text)
sys.stdout.flush()
mark("write the table to stdout")
with open(sys.argv[2], "w") as fh:
    json.dump([(name, t - marks[i][1]) for i, (name, t) in enumerate(marks[1:])]
              + [("_end", time.monotonic())], fh)
try:
    from advisor.__main__ import exit_now
except ImportError:
    sys.exit(0)
exit_now(0)
'''


@dataclass(frozen=True)
class Breakdown:
    """Median seconds per phase (in order: start-up first, shutdown last) and of the whole
    process."""

    workload: str
    runs: int
    phases: list[tuple[str, float]]
    total_s: float


MODEL_PHASES = ("evaluate", "assess", "verdict boundaries", "build the report",
                "write the table")
"""Prefixes of the phases that do the command's work on this workload (the rest is fixed:
start-up, imports, the command line, loading, shutdown)."""


def fixed_s(b: Breakdown) -> float:
    """Seconds of ``b`` outside the model and the report: what a ``recommend`` pays
    whatever the workload asks of the model."""
    return sum(s for name, s in b.phases if not name.startswith(MODEL_PHASES))


def cold_env(pycache: str) -> dict[str, str]:
    """The environment of a cold run: the checkout first on PYTHONPATH; bytecode cached in
    ``pycache`` (written by the warm-up run whatever PYTHONDONTWRITEBYTECODE says, so no run
    pays for compiling, as after a pip install, and nothing is written into the checkout);
    no colour; no extra profile directories; no result cache."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PD_ADVISOR_PROFILES", "PYTHONDONTWRITEBYTECODE")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env["PYTHONPYCACHEPREFIX"] = pycache
    env["NO_COLOR"] = "1"
    env["PD_ADVISOR_NO_CACHE"] = "1"  # cold means computed: never a result cache hit (#34)
    return env


def measure(workload: Path = DEFAULT_WORKLOAD, runs: int = 7) -> Breakdown:
    """Run the child ``runs`` times (after one untimed warm-up) and take medians."""
    samples: list[list[tuple[str, float]]] = []
    totals: list[float] = []
    with tempfile.TemporaryDirectory(prefix="pd-advisor-pycache-") as pycache:
        env = cold_env(pycache)
        marks_file = Path(pycache) / "marks.json"
        for n in range(runs + 1):
            t0 = time.monotonic()
            proc = subprocess.run([sys.executable, "-c", _CHILD, str(workload), str(marks_file)],
                                  cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True, check=False, timeout=300)
            t_end = time.monotonic()
            if proc.returncode != 0:
                raise RuntimeError(f"breakdown child failed:\n{proc.stderr[-2000:]}")
            if n == 0:
                continue  # warm-up: writes the bytecode cache
            raw = json.loads(marks_file.read_text(encoding="utf-8"))
            child_end = float(raw[-1][1])
            phases = [(str(name), float(s)) for name, s in raw[:-1]]
            first = child_end - sum(s for _, s in phases)  # the child's first statement, _t0
            startup, shutdown = first - t0, t_end - child_end
            samples.append([(STARTUP, startup), *phases, (SHUTDOWN, shutdown)])
            totals.append(t_end - t0)
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
    print(f"{'of which fixed (all but the model and report)':<{width}}  "
          f"{fixed_s(b) * 1000:7.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
