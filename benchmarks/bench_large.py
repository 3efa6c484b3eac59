"""The two large runs #34 sets targets for, as fresh processes: CPU seconds and peak RSS.

    python benchmarks/bench_large.py [--runs N] [--only sweep|phases]

* **sweep**: ``pd-advisor sweep three-phase.yaml --vary cluster.gpus=1024:2023 --vary
  traffic.rate_rps=10:4000:log:1000 --format csv`` — a 10**6-point two-key grid of the
  three-phase day, CSV to /dev/null (target: ≤ 15 s CPU, ≤ 600 MB peak RSS);
* **phases**: ``pd-advisor recommend`` on ``bench_scaling.workload(1024, 24)``-style
  synthetic day of 24 phases at 1,024 GPUs (the eight phases of ``bench_scaling`` three times
  over, each rate scaled by 0.6 + 0.05·k; default table to /dev/null; target ≤ 3 s CPU).

CPU is user + system time of the child (``resource.getrusage(RUSAGE_CHILDREN)``), peak RSS its
``ru_maxrss``; median and range (min–max) of ``--runs`` (default 3), after one untimed
warm-up that writes the bytecode (a temporary ``PYTHONPYCACHEPREFIX``); no result cache.
Not a test: no time is asserted (the machine is shared; CPU time inflates less than wall time
but does inflate under contention).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import bench_cold_breakdown  # noqa: E402  (after the path above)
import bench_scaling  # noqa: E402

SWEEP_VARY = ("cluster.gpus=1024:2023", "traffic.rate_rps=10:4000:log:1000")
"""1,000 cluster sizes × 1,000 rates: 10**6 design points."""
PHASES = 24
PHASES_AT_GPUS = 1_024
TARGET_SWEEP_CPU_S = 15.0
TARGET_SWEEP_RSS_MB = 600.0
TARGET_PHASES_CPU_S = 3.0


@dataclass(frozen=True, kw_only=True)
class LargeRun:
    """CPU seconds and peak RSS (MB) of each timed run of one command."""

    label: str
    cpu_s: list[float]
    rss_mb: list[float]


def phases_workload(directory: Path, phases: int = PHASES, gpus: int = PHASES_AT_GPUS) -> Path:
    """Write the synthetic ``phases``-phase day at ``gpus`` GPUs; its path."""
    import yaml

    base = bench_scaling._PHASES
    chosen = []
    for k in range(phases):
        ph = dict(base[k % len(base)])
        ph["name"] = f"{ph['name']}-{k // len(base)}"
        ph["rate_rps"] = round(ph["rate_rps"] * (0.6 + 0.05 * k) * gpus / PHASES_AT_GPUS, 6)
        chosen.append(ph)
    doc = bench_scaling.workload(gpus, 2)
    shares = [round(1.0 / phases, 6)] * phases
    shares[-1] = round(1.0 - sum(shares[:-1]), 6)
    doc["name"] = f"scaling-{gpus}gpu-{phases}ph"
    doc["traffic"] = {"burstiness": 1.0,
                      "phases": [{**ph, "share": s} for ph, s in zip(chosen, shares, strict=True)]}
    path = directory / f"phases-{phases}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def commands(directory: Path, only: str | None = None) -> dict[str, list[str]]:
    """Label → argv of each large run."""
    py = [sys.executable, "-m", "advisor"]
    out = {}
    if only in (None, "sweep"):
        vary = [w for v in SWEEP_VARY for w in ("--vary", v)]
        out["sweep"] = [*py, "sweep", str(HERE / "three-phase.yaml"), *vary, "--format", "csv"]
    if only in (None, "phases"):
        out["phases"] = [*py, "recommend", str(phases_workload(directory))]
    return out


def measure(runs: int = 3, only: str | None = None,
            progress: Callable[[str], None] | None = None) -> list[LargeRun]:
    """Run each command ``runs`` times (after a warm-up) as a fresh process."""
    with tempfile.TemporaryDirectory(prefix="pd-advisor-bench-large-") as tmp:
        env = bench_cold_breakdown.cold_env(tmp)
        cmds = commands(Path(tmp), only)
        samples = {label: LargeRun(label=label, cpu_s=[], rss_mb=[]) for label in cmds}
        for n in range(runs + 1):
            for label, argv in cmds.items():
                if progress is not None:
                    progress(f"{label}: {'warm-up' if n == 0 else f'run {n} of {runs}'}")
                cpu, rss = _child(argv, env)
                if n:
                    samples[label].cpu_s.append(cpu)
                    samples[label].rss_mb.append(rss)
        return list(samples.values())


def _child(argv: Sequence[str], env: dict[str, str]) -> tuple[float, float]:
    """(CPU seconds, peak RSS MB) of one run of ``argv`` in a fresh process."""
    code = ("import resource, subprocess, sys\n"
            "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, "
            "stderr=subprocess.PIPE)\n"
            "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
            "print(p.returncode, u.ru_utime + u.ru_stime, u.ru_maxrss)\n"
            "sys.stderr.write(p.stderr.decode(errors='replace')[-2000:])\n")
    # a wrapper process of its own, so ru_maxrss is this command's peak alone
    proc = subprocess.run([sys.executable, "-c", code, *argv], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=False, timeout=600)
    status, cpu, rss_kb = proc.stdout.split()
    if status != "0":
        raise RuntimeError(f"{' '.join(argv)}: exit {status}\n{proc.stderr}")
    return float(cpu), float(rss_kb) / 1024 if sys.platform != "darwin" else float(rss_kb) / 2**20


def _cell(values: Sequence[float], unit: str, fmt: str = ".2f") -> str:
    return (f"{statistics.median(values):{fmt}} {unit} "
            f"[{min(values):{fmt}}–{max(values):{fmt}}]")


def summary(results: Sequence[LargeRun]) -> list[tuple[str, str, str, str]]:
    """(what, CPU, peak RSS, target) rows."""
    rows = []
    for r in results:
        if r.label == "sweep":
            what = "sweep, 10**6 points (three-phase, gpus × rate), CSV"
            target = f"≤ {TARGET_SWEEP_CPU_S:g} s CPU, ≤ {TARGET_SWEEP_RSS_MB:g} MB"
        else:
            what = f"recommend, {PHASES} phases at {PHASES_AT_GPUS:,} GPUs"
            target = f"≤ {TARGET_PHASES_CPU_S:g} s CPU"
        rows.append((what, _cell(r.cpu_s, "s"), _cell(r.rss_mb, "MB", ".0f"), target))
    return rows


def met(result: LargeRun) -> bool:
    """Whether the median meets its target."""
    cpu = statistics.median(result.cpu_s)
    if result.label == "sweep":
        return cpu <= TARGET_SWEEP_CPU_S and statistics.median(result.rss_mb) <= TARGET_SWEEP_RSS_MB
    return cpu <= TARGET_PHASES_CPU_S


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", choices=("sweep", "phases"))
    args = parser.parse_args(argv)
    results = measure(args.runs, args.only,
                      lambda msg: print(f"  … {msg}", file=sys.stderr, flush=True))
    for (what, cpu, rss, target), r in zip(summary(results), results, strict=True):
        print(f"{what:<52} CPU {cpu:<24} peak RSS {rss:<22} target {target:<26} "
              f"{'pass' if met(r) else 'FAIL'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
