"""How the work of ``recommend`` grows with the cluster and with the number of traffic phases.

    python benchmarks/bench_scaling.py [--runs N] [--gpus 8,64,...] [--phases 1,2,...]

For each synthetic workload (Llama 3.1 70B in FP8 on H100s with an NDR InfiniBand link, the
three-phase benchmark day of ``three-phase.yaml`` with every rate scaled with the cluster, at
8, 64, 1,024, 16,384 and 100,000 GPUs; and 1, 2, 4 and 8 phases at 1,024 GPUs) it reports
medians and ranges (min–max) over ``--runs`` fresh processes of:

* **evaluate, first run** — CPU ms of ``evaluate`` (with its capacity tables) in a process that
  has imported everything and loaded the workload but evaluated nothing yet: what a command
  pays;
* **evaluate, warm** — CPU ms of a second ``evaluate`` of the same workload in that process
  with new capacity tables (the module-level tables are then built: what a repeated call, a
  sweep point, pays);
* **boundaries** — CPU ms of ``verdict_boundaries`` right after the first evaluation, sharing
  its capacity tables, as ``recommend`` runs it; then the same per search (GPU count, both
  directions; inter-node bandwidth; rate; gain), timed in the same order;
* **whole process** — CPU ms (user + system, from the child's rusage) and wall ms of
  ``python -m advisor recommend FILE`` (default table to /dev/null), bytecode cached by an
  untimed warm-up run as after an install.

CPU time (``time.process_time``, numpy on one thread) rather than wall time, so other work on a
shared machine inflates the figures less. ``measure`` returns the rows for tests and
``run.py``. Not a test: no time is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import bench_cold_breakdown  # noqa: E402  (after the path above)

GPU_SIZES = (8, 64, 1_024, 16_384, 100_000)
PHASE_COUNTS = (1, 2, 4, 8)
PHASES_AT_GPUS = 1_024

# the three phases of three-phase.yaml (rates at 1,024 GPUs), then five more for the phase
# scaling, all at a similar load per GPU
_PHASES = [
    {"name": "chat", "rate_rps": 400, "prompt_tokens": {"mean": 900, "p95": 3000},
     "output_tokens": {"mean": 350, "p95": 900}},
    {"name": "rag", "rate_rps": 150, "prompt_tokens": {"mean": 7000, "p95": 14000, "max": 16000},
     "output_tokens": {"mean": 200, "p95": 500}},
    {"name": "batch-summaries", "rate_rps": 60, "burstiness": 2.0,
     "prompt_tokens": {"mean": 12000, "p95": 24000, "max": 32000},
     "output_tokens": {"mean": 600, "p95": 1200}},
    {"name": "code", "rate_rps": 200, "prompt_tokens": {"mean": 3000, "p95": 8000},
     "output_tokens": {"mean": 400, "p95": 1000}},
    {"name": "agents", "rate_rps": 120, "burstiness": 1.5,
     "prompt_tokens": {"mean": 5000, "p95": 12000, "max": 20000},
     "output_tokens": {"mean": 300, "p95": 800}},
    {"name": "night-batch", "rate_rps": 80, "prompt_tokens": {"mean": 2000, "p95": 6000},
     "output_tokens": {"mean": 800, "p95": 1600}},
    {"name": "search", "rate_rps": 500, "prompt_tokens": {"mean": 600, "p95": 1500},
     "output_tokens": {"mean": 120, "p95": 300}},
    {"name": "long-docs", "rate_rps": 30, "prompt_tokens": {"mean": 20000, "p95": 40000,
                                                           "max": 60000},
     "output_tokens": {"mean": 500, "p95": 1000}},
]


def workload(gpus: int, phases: int = 3) -> dict:
    """The synthetic workload: ``phases`` phases (equal shares) at ``gpus`` GPUs, every rate
    scaled by gpus / 1,024."""
    scale = gpus / PHASES_AT_GPUS
    chosen = []
    for ph in _PHASES[:phases]:
        ph = dict(ph)
        ph["rate_rps"] = round(ph["rate_rps"] * scale, 6)
        chosen.append(ph)
    if phases == 1:
        traffic = {k: v for k, v in chosen[0].items() if k != "name"}
        traffic.setdefault("burstiness", 1.0)
    else:
        shares = [round(1.0 / phases, 6)] * phases
        shares[-1] = round(1.0 - sum(shares[:-1]), 6)
        traffic = {"burstiness": 1.0,
                   "phases": [{**ph, "share": s} for ph, s in zip(chosen, shares, strict=True)]}
    return {"version": 1, "name": f"scaling-{gpus}gpu-{phases}ph", "model": "llama-3.1-70b",
            "precision": "fp8", "engine": "vllm",
            "cluster": {"gpu": "h100-sxm", "gpus": gpus, "inter_node": "ib-ndr-400"},
            "traffic": traffic,
            "slo": {"ttft_ms": 3000, "tpot_ms": 50, "percentile": 95},
            "operations": {"autoscaling": False}}


_CHILD = r'''
import json, sys, time
from pathlib import Path
import numpy
from advisor.loading.catalog import ProfileCatalog
from advisor.loading.resolve import load_scenario
from advisor.core.plan.capacities import Capacities
from advisor.core.plan.evaluate import evaluate
from advisor.core.analysis import boundaries as B
try:  # the one decision (#28)
    from advisor.core.verdict.decision import decide
except ImportError:
    decide = None
    from advisor.core.verdict.rules import assess
sc = load_scenario(Path(sys.argv[1]), ProfileCatalog())
clock = time.process_time
out = {}
t = clock(); caps = Capacities(sc); m = evaluate(sc, caps); out["evaluate_first"] = clock() - t
if decide is not None:
    d = decide(sc, m)
    verdict, gain = d.verdict, d.gain
    t = clock(); bounds = B.verdict_boundaries(sc, verdict, gain, m, caps)
else:
    a = assess(sc, m)
    verdict, gain = a.verdict, a.disagg_gain
    t = clock(); bounds = B.verdict_boundaries(sc, m, caps)
out["boundaries"] = clock() - t
t = clock(); evaluate(sc, Capacities(sc)); out["evaluate_warm"] = clock() - t
# the searches one by one, in verdict_boundaries' order, on fresh tables after one evaluate
caps = Capacities(sc); m = evaluate(sc, caps)
if hasattr(B, "gpu_boundaries"):  # both directions in the same calls
    steps = [("gpus", lambda: B.gpu_boundaries(sc, verdict, caps))]
else:  # a checkout before #20: one search per direction
    steps = [("gpus", lambda: (B.gpu_boundary(sc, verdict, "up", caps),
                               B.gpu_boundary(sc, verdict, "down", caps)))]
rate = (B.rate_boundaries if hasattr(B, "rate_boundaries") else B.rate_boundary)
steps += [("bandwidth", lambda: B.bandwidth_boundary(sc, verdict, caps)),
         ("rate", lambda: rate(sc, verdict, caps)),
         ("gain", lambda: B.gain_boundary(sc, verdict, gain, caps))]
for name, fn in steps:
    t = clock(); fn(); out["search " + name] = clock() - t
out["verdict"] = verdict
out["found"] = {b.key + " " + b.direction: b.flips_at for b in bounds}
json.dump(out, sys.stdout)
'''


@dataclass(frozen=True)
class Row:
    """Medians and ranges, milliseconds, over the runs of one workload."""

    label: str
    gpus: int
    phases: int
    verdict: str
    figures: dict[str, tuple[float, float, float]]
    """name → (median, min, max) ms."""


def _stats(samples: Sequence[float]) -> tuple[float, float, float]:
    return statistics.median(samples), min(samples), max(samples)


def measure(gpus: Sequence[int] = GPU_SIZES, phases: Sequence[int] = PHASE_COUNTS,
            runs: int = 3, progress: Callable[[str], None] = lambda _: None) -> list[Row]:
    """One row per workload: the GPU sizes with three phases, then the phase counts at
    1,024 GPUs (the three-phase one not repeated)."""
    import yaml

    cases = [(g, 3) for g in gpus] + [(PHASES_AT_GPUS, p) for p in phases
                                       if (PHASES_AT_GPUS, p) not in [(g, 3) for g in gpus]]
    rows = []
    with tempfile.TemporaryDirectory(prefix="pd-advisor-scaling-") as tmp:
        env = bench_cold_breakdown.cold_env(str(Path(tmp) / "pycache"))
        for g, p in cases:
            path = Path(tmp) / f"scaling-{g}-{p}.yaml"
            path.write_text(yaml.safe_dump(workload(g, p), sort_keys=False), encoding="utf-8")
            progress(f"{g:,} GPUs, {p} phase(s)")
            samples: dict[str, list[float]] = {}
            verdict = ""
            for n in range(runs + 1):  # the first round warms the bytecode cache, untimed
                proc = subprocess.run([sys.executable, "-c", _CHILD, str(path)], cwd=ROOT,
                                      env=env, capture_output=True, text=True, check=False,
                                      timeout=600)
                if proc.returncode != 0:
                    raise RuntimeError(f"scaling child failed:\n{proc.stderr[-2000:]}")
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                t0 = os.times().elapsed
                whole = subprocess.run([sys.executable, "-m", "advisor", "recommend", str(path)],
                                       cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.PIPE, check=False, timeout=600)
                wall = os.times().elapsed - t0
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                if whole.returncode != 0:
                    raise RuntimeError(f"recommend failed:\n{whole.stderr[-2000:]!r}")
                if n == 0:
                    continue
                out = json.loads(proc.stdout)
                verdict = out.pop("verdict")
                out.pop("found")
                for k, v in out.items():
                    samples.setdefault(k, []).append(v * 1000)
                cpu = ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
                samples.setdefault("process cpu", []).append(cpu * 1000)
                samples.setdefault("process wall", []).append(wall * 1000)
            rows.append(Row(f"{g:,} GPUs, {p} phase{'s' * (p != 1)}", g, p, verdict,
                            {k: _stats(v) for k, v in samples.items()}))
    return rows


COLUMNS = [("evaluate_first", "evaluate 1st"), ("evaluate_warm", "evaluate warm"),
           ("boundaries", "boundaries"), ("process cpu", "process CPU"),
           ("process wall", "process wall")]
SEARCHES = ["search gpus", "search bandwidth", "search rate", "search gain"]


def cell(fig: tuple[float, float, float]) -> str:
    med, lo, hi = fig
    return f"{med:,.0f} ({lo:,.0f}–{hi:,.0f})"


def render(rows: Sequence[Row], runs: int, markdown: bool = False) -> str:
    """The table: one row per workload, medians with (min–max) ms."""
    head = ["workload", "verdict"] + [name for _, name in COLUMNS]
    body = [[r.label, r.verdict] + [cell(r.figures[k]) for k, _ in COLUMNS] for r in rows]
    head2 = ["workload"] + [s.removeprefix("search ") for s in SEARCHES]
    body2 = [[r.label] + [cell(r.figures[k]) for k in SEARCHES] for r in rows]
    title = (f"CPU ms, median (min–max) of {runs} fresh processes; process wall in ms "
             "(`python -m advisor recommend FILE`)")
    title2 = "boundary searches one by one, CPU ms (same processes)"
    out = []
    for t, h, b in ((title, head, body), (title2, head2, body2)):
        if markdown:
            out += [f"**{t}**", "", "| " + " | ".join(h) + " |",
                    "|---|" + "|".join("---:" for _ in h[1:]) + "|"]
            out += ["| " + " | ".join(row) + " |" for row in b]
        else:
            widths = [max(len(x[i]) for x in [h, *b]) for i in range(len(h))]
            out += [t.replace("`", "")]
            for n, row in enumerate([h, *b]):
                out.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                                     for i, (c, w) in enumerate(zip(row, widths, strict=True))))
                if n == 0:
                    out.append("  ".join("-" * w for w in widths))
        out.append("")
    return "\n".join(out)


def _ints(text: str) -> list[int]:
    return [int(x.replace("_", "")) for x in text.split(",") if x.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--gpus", type=_ints, default=list(GPU_SIZES))
    parser.add_argument("--phases", type=_ints, default=list(PHASE_COUNTS))
    parser.add_argument("--markdown", action="store_true", help="print markdown tables")
    args = parser.parse_args(argv)
    rows = measure(args.gpus, args.phases, args.runs,
                   lambda msg: print(f"  … {msg}", file=sys.stderr, flush=True))
    print(render(rows, args.runs, args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
