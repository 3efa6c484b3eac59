"""Every pd-advisor benchmark in one table, with the targets of issues #3, #5, #6, #8, #20, #34.

    python benchmarks/run.py [--runs N] [--quick] [--markdown FILE|-]

Each figure says what it times. Cold figures are the wall time of a fresh process; in-process
figures are CPU time (``time.process_time``) where the machine is shared, wall time where
stated.

1. Cold start: the wall time of a fresh process running ``pd-advisor --version``,
   ``pd-advisor recommend EXAMPLE`` (default table format, stdout to /dev/null) for every file
   in ``examples/``, ``pd-advisor check`` on the four examples together, ``pd-advisor sweep``
   of the three-phase workload (4,096 cluster sizes, csv) and ``recommend`` on a generated
   100,000-GPU workload (``bench_scaling.workload``), beside the *floor*:
   ``python -c "import numpy, yaml, pydantic, typer, rich.console"`` in the same environment —
   what any CLI built on these libraries pays before doing anything. Each command runs as
   ``sys.executable -m advisor …`` (the interpreter running this script, with the checkout
   first on ``PYTHONPATH``; ``-m advisor`` is the console script's own entry point), not
   through a pyenv/asdf shim. One untimed warm-up of each command (it also writes the
   bytecode cache, to a temporary ``PYTHONPYCACHEPREFIX``: no run pays for compiling, as after
   a pip install), then ``--runs`` interleaved rounds; the median and the range are shown.
   Targets (#20): ``recommend`` ≤ 1.6 × the floor for the chat and bursty examples and
   ≤ 2.0 × for every example; ``check`` on the four examples ≤ 2.0 ×; ``recommend`` at
   100,000 GPUs ≤ 1.5 s. Beside them, for reference, the *Typer floor* (``typer_floor.py``:
   a do-nothing Typer app with ``recommend``'s parameters) and, phase by phase, where a cold
   ``recommend`` of the chat example spends its time (``bench_cold_breakdown.py``: every
   phase measured, start-up and shutdown included).
2. Evaluate: the first evaluation in a fresh process (what a command pays) and a second one
   in it (``bench_evaluate.first_run``; target #20: < 60 ms CPU for the three-phase workload),
   and the warm repeats in this process (``bench_evaluate.measure``; target #3: < 50 ms).
3. Scaling (``bench_scaling.py``): CPU ms of the first evaluate, the verdict boundaries and
   the whole ``recommend`` process from 8 to 100,000 GPUs and 1 to 8 phases (target #20: the
   boundary searches ≤ 50 ms CPU at any size).
4. Throughput, in this process after imports and a warm-up, on one core (numpy threads = 1):
   sweep design points (``bench_sweep.kernel``, and ``bench_sweep.end_to_end``: the sweep call
   in process, with and without loading the file; targets #5: ≥ 1,000,000 design points/s, a
   4,096-point sweep of the three-phase workload < 1 s) and simulated requests
   (``bench_simulate.measure``; target #6: ≥ 1,000,000 requests/min, colocated chunked).
5. Result cache (``bench_cache.py``): ``check`` over 100 copies of the chat example, cold,
   every file a hit, one file changed (target #34: 100 unchanged files ≤ 1 s wall).
6. Large runs (``bench_large.py``, fresh processes, CPU and peak RSS): a 10**6-point sweep
   (targets #34: ≤ 15 s CPU, ≤ 600 MB) and ``recommend`` of 24 phases at 1,024 GPUs (≤ 3 s
   CPU).

Prints the machine (CPU model, cores, Python, load) first. ``--markdown FILE`` also writes the
tables as markdown (``-`` for stdout): into FILE's generated section when it has one
(``python benchmarks/run.py --markdown docs/performance.md`` rewrites the tables there and keeps
the text around them), the whole of FILE otherwise. Exit status 1 when a target is missed.
Not a test: machines are noisy, so no test asserts these times.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for _p in (str(HERE), str(ROOT)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

# after the thread limits and the path above, which these imports need (hence E402)
import bench_cache  # noqa: E402
import bench_cold_breakdown  # noqa: E402
import bench_evaluate  # noqa: E402
import bench_large  # noqa: E402
import bench_scaling  # noqa: E402
import bench_simulate  # noqa: E402
import bench_sweep  # noqa: E402

FLOOR_IMPORTS = "import numpy, yaml, pydantic, typer, rich.console"
FLOOR = "floor"
TYPER_FLOOR = "typer floor"
VERSION = "--version"
CHECK = "check on the four examples"
SWEEP = "sweep of the three-phase workload"
LARGE = "recommend at 100,000 GPUs"
LARGE_GPUS = 100_000
TARGET_COLD_RATIO = 2.0
TARGET_COLD_RATIO_SMALL = 1.6
SMALL_EXAMPLES = ("chat-8b-single-node", "bursty-32b-16gpu")
FOUR_EXAMPLES = ("chat-8b-single-node", "bursty-32b-16gpu", "day-night-shift",
                 "prefill-heavy-70b-ib")
"""The four examples #20's ``check`` target names (later examples: ``recommend`` rows only)."""
TARGET_CHECK_RATIO = 2.0
TARGET_LARGE_S = 1.5
TARGET_BOUNDARIES_CPU_MS = 50.0
TARGET_CHECK_HITS_S = 1.0
"""#34: ``check`` on 100 unchanged files, wall seconds."""
TARGET_HIT_RATIO = 0.1
"""#34: a result-cache hit, × the floor."""


# ---- machine ---------------------------------------------------------------------------------
def cpu_model() -> str:
    """The CPU model from /proc/cpuinfo (Linux; with family/model, clock, and whether it is a
    virtual machine), else what ``platform`` knows."""
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return platform.processor() or platform.machine() or "unknown CPU"
    info: dict[str, str] = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        info.setdefault(key.strip(), " ".join(value.split()))
    name = next((info[k] for k in ("model name", "Model", "Hardware", "cpu model")
                 if info.get(k)), platform.processor() or platform.machine() or "unknown CPU")
    extra = []
    if info.get("cpu family") and info.get("model"):
        extra.append(f"family {info['cpu family']} model {info['model']}")
    if info.get("cpu MHz"):
        extra.append(f"{float(info['cpu MHz']):,.0f} MHz")
    if "hypervisor" in info.get("flags", "").split():
        extra.append("virtual machine")
    return f"{name} ({', '.join(extra)})" if extra else name


def machine() -> dict[str, str]:
    """CPU model, core counts, Python, OS and the checkout measured."""
    logical = os.cpu_count() or 0
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = logical
    cores = f"{logical} logical cores" + (f" ({usable} usable)" if usable != logical else "")
    from advisor import __version__

    return {
        "cpu": cpu_model(),
        "cores": cores,
        "python": f"{platform.python_implementation()} {platform.python_version()} "
                  f"({sys.executable})",
        "os": platform.platform(terse=True),
        "advisor": f"{__version__} from {ROOT}{_git_describe()}",
        "date": datetime.date.today().isoformat(),
        "load": _load(),
    }


def _load() -> str:
    try:
        one, five, _ = os.getloadavg()
    except (AttributeError, OSError):
        return "unknown"
    return f"{one:.2f} (1 min), {five:.2f} (5 min) at the start; other work skews the figures"


def _git_describe() -> str:
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10, check=False)
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain",
                                "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    if head.returncode != 0:
        return ""
    return f" (git {head.stdout.strip()}{' + uncommitted changes' if dirty.stdout.strip() else ''})"


# ---- cold start ------------------------------------------------------------------------------
def cold_start_commands(examples: Sequence[Path] | None = None,
                        large: Path | None = None) -> dict[str, list[str]]:
    """Label → argv: the floor, ``--version``, ``recommend`` on each example, ``check`` on
    them all, the ``sweep`` of the three-phase workload, and ``recommend`` on ``large`` (a
    100,000-GPU workload file) when given."""
    if examples is None:
        examples = sorted((ROOT / "examples").glob("*.yaml"))
    py = sys.executable
    commands = {FLOOR: [py, "-c", FLOOR_IMPORTS],
                TYPER_FLOOR: [py, str(HERE / "typer_floor.py"), "recommend",
                              str(examples[0]) if examples else "workload.yaml"],
                VERSION: [py, "-m", "advisor", "--version"]}
    for path in examples:
        shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        commands[f"recommend {shown}"] = [py, "-m", "advisor", "recommend", str(path)]
    four = [p for p in examples if p.stem in FOUR_EXAMPLES] or list(examples)
    if four:
        # exit 1 is the gate failing on an example, not an error
        commands[CHECK] = [py, "-m", "advisor", "check", *map(str, four)]
    commands[SWEEP] = [py, "-m", "advisor", "sweep", str(HERE / "three-phase.yaml"), "--vary",
                       f"cluster.gpus={bench_sweep.SWEEP_SPEC}", "--format", "csv"]
    if large is not None:
        commands[LARGE] = [py, "-m", "advisor", "recommend", str(large)]
    return commands


def large_workload(directory: Path) -> Path:
    """Write the 100,000-GPU workload of ``bench_scaling`` to ``directory``; its path."""
    import yaml

    path = directory / "scaling-100000-gpus.yaml"
    path.write_text(yaml.safe_dump(bench_scaling.workload(LARGE_GPUS), sort_keys=False),
                    encoding="utf-8")
    return path


def time_commands(commands: Mapping[str, Sequence[str]], runs: int = 7,
                  warmup: bool = True) -> dict[str, list[float]]:
    """Wall seconds of each command as a fresh process; rounds interleave the commands so a
    slow patch of the machine hits all of them alike. A failing command raises."""
    with tempfile.TemporaryDirectory(prefix="pd-advisor-pycache-") as pycache:
        return _time_commands(commands, runs, warmup,
                              bench_cold_breakdown.cold_env(pycache))


def _time_commands(commands: Mapping[str, Sequence[str]], runs: int, warmup: bool,
                   env: Mapping[str, str]) -> dict[str, list[float]]:
    def once(label: str, argv: Sequence[str]) -> float:
        t0 = time.perf_counter()
        proc = subprocess.run(list(argv), cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False,
                              timeout=300)
        elapsed = time.perf_counter() - t0
        if proc.returncode not in ((0, 1) if label == CHECK else (0,)):
            raise RuntimeError(f"{label}: exit {proc.returncode}\n"
                               f"{proc.stderr.decode(errors='replace')[-2000:]}")
        return elapsed

    if warmup:
        for label, argv in commands.items():
            once(label, argv)
    times: dict[str, list[float]] = {label: [] for label in commands}
    for _ in range(max(1, runs)):
        for label, argv in commands.items():
            times[label].append(once(label, argv))
    return times


# ---- tables ----------------------------------------------------------------------------------
@dataclass
class Table:
    title: str
    headers: list[str]
    align: str  # one letter a column: l(eft) or r(ight)
    rows: list[list[str]] = field(default_factory=list)
    note: str = ""


@dataclass
class Figures:
    """Everything measured, for ``tables``."""

    cold: dict[str, list[float]] | None = None
    breakdown: bench_cold_breakdown.Breakdown | None = None
    first_run: list[bench_evaluate.FirstRunTiming] = field(default_factory=list)
    evaluate: list[bench_evaluate.EvaluateTiming] = field(default_factory=list)
    scaling: list[bench_scaling.Row] = field(default_factory=list)
    scaling_runs: int = 0
    kernel: bench_sweep.KernelResult | None = None
    sweep: bench_sweep.SweepResult | None = None
    simulate: bench_simulate.SimulateResult | None = None
    cache: bench_cache.CacheResult | None = None
    large: list[bench_large.LargeRun] = field(default_factory=list)


def tables(figures: Figures, runs: int) -> tuple[list[Table], list[str]]:
    """The cold-start and throughput tables (pass/fail beside each target), and the list
    of missed targets."""
    out = []
    failures: list[str] = []

    def verdict(ok: bool, what: str) -> str:
        if not ok:
            failures.append(what)
        return "pass" if ok else "**FAIL**"

    if figures.cold:
        floor = statistics.median(figures.cold[FLOOR])
        cold = Table(
            f"Cold start (wall time of a fresh process, median and range of {runs} runs)",
            ["command", "median", "range", "× floor", "target", "result"], "lrrrll",
            note="Run as `sys.executable -m advisor …` (the console script's entry point, no "
                 "pyenv shim), the checkout first on PYTHONPATH, bytecode cached by an untimed "
                 "warm-up run; reports go to /dev/null. The floor is `python -c \""
                 + FLOOR_IMPORTS + "\"`; the Typer floor adds what Typer does at run time "
                 "(Typer ≥ 0.29 coerces every parameter through a pydantic TypeAdapter), for "
                 "reference.")
        for label, samples in figures.cold.items():
            med = statistics.median(samples)
            ratio = med / floor
            target = result = ""
            if label == FLOOR:
                name = f"floor: `{FLOOR_IMPORTS}`"
            elif label == TYPER_FLOOR:
                name = ("Typer floor: a do-nothing Typer app with recommend's parameters "
                        "(`benchmarks/typer_floor.py`)")
            elif label == VERSION:
                name = "`pd-advisor --version`"
            elif label == CHECK:
                name = "`pd-advisor check` on the four examples (one process)"
                target = f"≤ {TARGET_CHECK_RATIO:g}× floor"
                result = verdict(ratio <= TARGET_CHECK_RATIO, f"cold start: {label}")
            elif label == SWEEP:
                name = (f"`pd-advisor sweep three-phase.yaml --vary cluster.gpus="
                        f"{bench_sweep.SWEEP_SPEC} --format csv` (whole process)")
            elif label == LARGE:
                name = f"`pd-advisor recommend` on a {LARGE_GPUS:,}-GPU workload"
                target = f"≤ {TARGET_LARGE_S:g} s"
                result = verdict(med <= TARGET_LARGE_S, f"cold start: {label}")
            else:
                name = f"`pd-advisor {label}`"
                limit = (TARGET_COLD_RATIO_SMALL if any(e in label for e in SMALL_EXAMPLES)
                         else TARGET_COLD_RATIO)
                target = f"≤ {limit:g}× floor"
                result = verdict(ratio <= limit, f"cold start: {label}")
            cold.rows.append([name, f"{med:.3f} s", f"{min(samples):.3f}–{max(samples):.3f} s",
                              f"{ratio:.2f}×", target, result])
        out.append(cold)

    if figures.breakdown is not None:
        b = figures.breakdown
        where = Table(
            f"Where a cold `recommend {b.workload}` goes (median of {b.runs} processes)",
            ["phase", "median", "share"], "lrr",
            note="`benchmarks/bench_cold_breakdown.py`: a child interpreter runs the command's "
                 "phases in order and reads one monotonic clock between them; start-up (from "
                 "spawning to the first statement) and shutdown (from the last statement to "
                 "the process reaped) are measured across the process boundary, not inferred.")
        for name, seconds in b.phases:
            where.rows.append([name, f"{seconds * 1000:.1f} ms", f"{seconds / b.total_s:.0%}"])
        where.rows.append(["whole process", f"{b.total_s * 1000:.1f} ms", "100%"])
        fixed = bench_cold_breakdown.fixed_s(b)
        where.rows.append(["of which fixed: start-up, imports, command line, load, shutdown "
                           "(what any workload pays before and after the model)",
                           f"{fixed * 1000:.1f} ms", f"{fixed / b.total_s:.0%}"])
        if figures.cold:
            floor = statistics.median(figures.cold[FLOOR])
            room = TARGET_COLD_RATIO_SMALL * floor - fixed
            where.rows.append([f"fixed ÷ the floor ({floor * 1000:.0f} ms, cold table)",
                               f"{fixed / floor:.2f}×", ""])
            where.rows.append([f"left for evaluate, boundaries and the report within "
                               f"{TARGET_COLD_RATIO_SMALL:g}× the floor",
                               f"{room * 1000:.1f} ms", ""])
        out.append(where)

    if figures.first_run:
        ev = Table("Evaluate as a command pays it (fresh processes)",
                   ["workload", "first evaluate, CPU", "first, wall (range)", "second, wall",
                    "target", "result"], "lrrrrl",
                   note="`bench_evaluate.first_run`: everything imported and the workload "
                        "loaded, then `evaluate` twice; medians over processes. The target is "
                        "judged on CPU time (the machine is shared).")
        for f in figures.first_run:
            target = result = ""
            if f.name == bench_evaluate.THREE_PHASE.name:
                target = f"< {bench_evaluate.TARGET_FIRST_RUN_THREE_PHASE_MS:g} ms"
                result = verdict(f.first_cpu_ms < bench_evaluate.TARGET_FIRST_RUN_THREE_PHASE_MS,
                                 f"evaluate first run {f.name}")
            ev.rows.append([f"`{f.name}` ({f.phases} phase{'s' if f.phases > 1 else ''})",
                            f"{f.first_cpu_ms:.1f} ms",
                            f"{f.first_ms:.1f} ms ({f.first_range_ms[0]:.0f}–"
                            f"{f.first_range_ms[1]:.0f})", f"{f.second_ms:.1f} ms", target,
                            result])
        out.append(ev)

    if figures.scaling:
        sc = Table(f"Scaling: CPU ms, median (range) of {figures.scaling_runs} fresh processes",
                   ["workload", "evaluate, 1st", "boundaries", "recommend process CPU",
                    "recommend process wall", "target (boundaries)", "result"], "lrrrrll",
                   note="`benchmarks/bench_scaling.py`: the three-phase day with every rate "
                        "scaled with the cluster, and 1–8 phases at 1,024 GPUs.")
        for r in figures.scaling:
            ok = r.figures["boundaries"][0] <= TARGET_BOUNDARIES_CPU_MS
            sc.rows.append([r.label] + [bench_scaling.cell(r.figures[k]) for k in (
                "evaluate_first", "boundaries", "process cpu", "process wall")]
                + [f"≤ {TARGET_BOUNDARIES_CPU_MS:g} ms",
                   verdict(ok, f"boundaries at {r.label}")])
        out.append(sc)

    thr = Table("Throughput (in process, after imports and a warm-up, one core; wall time)",
                ["benchmark", "figure", "target", "result"], "lrrl")
    for t in figures.evaluate:
        fig = (f"{t.median_ms:.1f} ms ({t.min_ms:.0f}–{t.max_ms:.0f}; "
               f"{t.evaluations_per_s:,.0f} evaluations/s)")
        if t.name == bench_evaluate.THREE_PHASE.name:
            target = f"< {bench_evaluate.TARGET_THREE_PHASE_MS:g} ms"
            result = verdict(t.median_ms < bench_evaluate.TARGET_THREE_PHASE_MS,
                             f"evaluate {t.name}")
        else:
            target = result = ""
        thr.rows.append([f"evaluate, warm repeats: `{t.name}` "
                         f"({t.phases} phase{'s' if t.phases > 1 else ''})",
                         fig, target, result])
    if figures.kernel is not None:
        k = figures.kernel
        thr.rows.append([
            f"sweep allocation/rounding kernel ({k.pairs} shape pairs, {k.points:,} sizes)",
            f"{k.points_per_s:,.0f} design points/s",
            f"≥ {bench_sweep.TARGET_KERNEL_POINTS_PER_S:,}/s",
            verdict(k.points_per_s >= bench_sweep.TARGET_KERNEL_POINTS_PER_S, "sweep kernel")])
    if figures.sweep is not None:
        s = figures.sweep
        thr.rows.append([
            f"sweep in process (the `sweep` call; with loading the file in brackets): "
            f"{s.points:,}-point `cluster.gpus` of `{s.workload}`",
            f"{s.seconds:.2f} s ({s.seconds_with_load:.2f} s; {s.points_per_s:,.0f} points/s)",
            f"< {bench_sweep.TARGET_SWEEP_S:g} s",
            verdict(s.seconds < bench_sweep.TARGET_SWEEP_S, "sweep in process")])
    if figures.simulate is not None:
        m = figures.simulate
        target_ok = m.mode != "chunked" or m.requests_per_min >= bench_simulate.TARGET_PER_MINUTE
        thr.rows.append([
            f"simulate `{m.workload}` [{m.mode}], {m.runs[0].requests:,} requests a run",
            f"{m.requests_per_s:,.0f} requests/s = {m.requests_per_min / 1e6:,.2f} M/min",
            f"≥ {bench_simulate.TARGET_PER_MINUTE:,}/min" if m.mode == "chunked" else "",
            verdict(target_ok, "simulate") if m.mode == "chunked" else ""])
    if thr.rows:
        out.append(thr)
    if figures.cache is not None:
        c = figures.cache
        cache_rows = [[*row, "", ""] for row in bench_cache.summary(c)]
        cache_rows[1][2] = f"≤ {TARGET_CHECK_HITS_S:g} s"
        cache_rows[1][3] = verdict(statistics.median(c.warm) <= TARGET_CHECK_HITS_S,
                                   "cache: check on unchanged files")
        if c.one_hit and figures.cold:
            floor = statistics.median(figures.cold[FLOOR])
            ratio = c.per_hit_s / floor
            cache_rows[-1][1] += f" ({ratio:.3f}× floor)"
            cache_rows[-1][2] = f"≤ {TARGET_HIT_RATIO:g}× floor"
            cache_rows[-1][3] = verdict(ratio <= TARGET_HIT_RATIO, "cache: a hit")
        out.append(Table(
            f"Result cache (#34): `pd-advisor check --format none` on {c.files} "
            "copies of the chat example, wall time of a fresh process, median [range]",
            ["case", "wall", "target", "result"], "lrll", cache_rows,
            note="`benchmarks/bench_cache.py`; the cache in a temporary directory. The cold "
                 "figures above run with PD_ADVISOR_NO_CACHE=1. A hit is judged by what each "
                 "further unchanged file adds to a check: (all hits − one hit) / "
                 f"({c.files} − 1)."))
    if figures.large:
        big = Table("Large runs (#34): fresh processes, CPU (user + system) and peak RSS, "
                    "median [range]", ["run", "CPU", "peak RSS", "target", "result"], "lrrll",
                    note="`benchmarks/bench_large.py`: the 10**6-point sweep writes its CSV to "
                         "/dev/null; the 24-phase day is synthetic (bench_scaling's eight "
                         "phases three times over).")
        for (what, cpu, rss, target), r in zip(bench_large.summary(figures.large),
                                               figures.large, strict=True):
            big.rows.append([what, cpu, rss, target,
                             verdict(bench_large.met(r), f"large run: {r.label}")])
        out.append(big)
    return out, failures


def render_text(info: Mapping[str, str], tabs: Sequence[Table]) -> str:
    lines = [f"{k:<8} {v}" for k, v in info.items()]
    for tab in tabs:
        rows = [tab.headers] + [[c.replace("**", "").replace("`", "") for c in r]
                                for r in tab.rows]
        widths = [max(len(r[i]) for r in rows) for i in range(len(tab.headers))]
        lines += ["", tab.title]
        for n, row in enumerate(rows):
            cells = [c.rjust(w) if a == "r" else c.ljust(w)
                     for c, w, a in zip(row, widths, tab.align, strict=True)]
            lines.append("  ".join(cells).rstrip())
            if n == 0:
                lines.append("  ".join("-" * w for w in widths))
        if tab.note:
            lines += textwrap.wrap(tab.note.replace("`", ""), 100)
    return "\n".join(lines) + "\n"


def render_markdown(info: Mapping[str, str], tabs: Sequence[Table]) -> str:
    head = (f"Measured on {info['cpu']}, {info['cores']}, {info['python'].split(' (')[0]}, "
            f"{info['os']}; pd-advisor {info['advisor']}, {info['date']}, load average "
            f"{info['load'].split(' ')[0]} (`python benchmarks/run.py`).")
    lines = [head, ""]
    for tab in tabs:
        lines += [f"**{tab.title}**", "", "| " + " | ".join(tab.headers) + " |",
                  "|" + "|".join("---:" if a == "r" else "---" for a in tab.align) + "|"]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |"
                  for row in tab.rows]
        if tab.note:
            lines += ["", tab.note]
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


SECTION = re.compile(r"(<!-- generated: benchmarks\b[^\n]*-->\n)(.*?)(<!-- end: benchmarks -->)",
                     re.DOTALL)
"""The generated section of a markdown file (docs/performance.md): the tables go between."""


def write_markdown(path: Path, md: str) -> str:
    """Write the tables to ``path``: into its generated section, keeping the text around it,
    when it has one; as the whole file otherwise. Says which it did."""
    if path.exists():
        text = path.read_text(encoding="utf-8")
        found = SECTION.search(text)
        if found is not None:
            path.write_text(text[:found.start(2)] + md + text[found.end(2):], encoding="utf-8")
            return "its generated section"
    path.write_text(md, encoding="utf-8")
    return "the whole file"


# ---- main ------------------------------------------------------------------------------------
def collect(runs: int, quick: bool, progress: Callable[[str], None]) -> Figures:
    """Measure everything (``quick``: fewer repeats, smaller simulations, fewer sizes)."""
    from advisor.loading.catalog import ProfileCatalog

    figures = Figures()
    progress(f"cold start: {runs} runs of each command …")
    with tempfile.TemporaryDirectory(prefix="pd-advisor-bench-") as tmp:
        figures.cold = time_commands(cold_start_commands(large=large_workload(Path(tmp))), runs)
    progress("cold start, phase by phase …")
    figures.breakdown = bench_cold_breakdown.measure(runs=runs)
    progress("evaluate, first run in fresh processes …")
    figures.first_run = [bench_evaluate.first_run(p, runs) for p in bench_evaluate.workloads()]
    catalog = ProfileCatalog()
    progress("evaluate, warm …")
    figures.evaluate = [bench_evaluate.measure(p, 5 if quick else 15, catalog)
                        for p in bench_evaluate.workloads()]
    progress("scaling …")
    figures.scaling_runs = 1 if quick else 3
    figures.scaling = bench_scaling.measure(
        (8, 1_024, 100_000) if quick else bench_scaling.GPU_SIZES,
        (1, 8) if quick else bench_scaling.PHASE_COUNTS, figures.scaling_runs,
        lambda msg: progress(f"scaling: {msg}"))
    progress("sweep kernel …")
    figures.kernel = bench_sweep.kernel(catalog, repeats=3 if quick else 7)
    progress("sweep in process …")
    figures.sweep = bench_sweep.end_to_end(catalog, repeats=2 if quick else 5)
    progress("simulate …")
    figures.simulate = bench_simulate.measure(requests=50_000 if quick else 200_000,
                                              runs=3 if quick else 5)
    progress("result cache …")
    figures.cache = bench_cache.measure(files=100, runs=3 if quick else runs)
    progress("large runs …")
    figures.large = bench_large.measure(runs=1 if quick else 3,
                                        progress=lambda msg: progress(f"large: {msg}"))
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=None,
                        help="cold-start runs of each command (default 7; 3 with --quick)")
    parser.add_argument("--quick", action="store_true",
                        help="fewer repeats and smaller simulations (a rough look)")
    parser.add_argument("--markdown", metavar="FILE",
                        help="also write the tables as markdown to FILE ('-' = stdout)")
    args = parser.parse_args(argv)
    runs = args.runs if args.runs is not None else (3 if args.quick else 7)

    info = machine()
    print("\n".join(f"{k:<8} {v}" for k, v in info.items()), flush=True)

    def progress(msg: str) -> None:
        print(f"  … {msg}", file=sys.stderr, flush=True)

    figures = collect(runs, args.quick, progress)
    tabs, failures = tables(figures, runs)
    text = render_text(info, tabs)
    print(text.split("\n", len(info))[-1], end="")  # the machine lines are printed already
    if args.markdown:
        md = render_markdown(info, tabs)
        if args.markdown == "-":
            print()
            print(md, end="")
        else:
            where = write_markdown(Path(args.markdown), md)
            print(f"markdown written to {args.markdown} ({where})")
    print(f"load     {_load().split(' at ')[0]} at the end")
    if failures:
        print(f"missed {len(failures)} target(s): {'; '.join(failures)}")
        return 1
    print("every target met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
