"""Smoke test of ``benchmarks/``: every measuring function runs with tiny counts and returns
sane positive figures, and ``run.py`` renders its tables. No timing is asserted (machines are
noisy); ``python benchmarks/run.py`` is the benchmark."""

from __future__ import annotations

import importlib
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture(scope="module")
def run() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        yield importlib.import_module("run")
    finally:
        sys.path.remove(str(BENCHMARKS))


def _positive(*values: float) -> bool:
    return all(math.isfinite(v) and v > 0 for v in values)


@pytest.mark.thorough  # ~23 s: runs every benchmark function once (thorough tier: .ci/run runs it)
def test_benchmark_functions_return_positive_figures(run: ModuleType) -> None:
    from advisor.loading.catalog import ProfileCatalog

    catalog = ProfileCatalog()
    ev = run.bench_evaluate.measure(run.bench_evaluate.THREE_PHASE, repeats=1, catalog=catalog)
    assert ev.phases == 3 and _positive(ev.median_ms, ev.evaluations_per_s)

    k = run.bench_sweep.kernel(catalog, repeats=1, points=1_000, scalar_sample=range(1000, 1002),
                               scalar_repeats=1)
    assert k.points == 1_000 and k.pairs > 0
    assert _positive(k.points_per_s, k.splits_per_s, k.scalar_seconds_per_point)

    sw = run.bench_sweep.end_to_end(catalog, repeats=1, spec="1:32", probe=(16,))
    assert sw.points == 32 and sw.phases == 3
    assert _positive(sw.seconds, sw.seconds_with_load, sw.scalar_seconds_per_point)

    sim = run.bench_simulate.measure(requests=500, runs=1)
    assert sim.mode == "chunked" and len(sim.runs) == 1 and sim.runs[0].steps > 0
    assert _positive(sim.requests_per_s, sim.requests_per_min)

    first = run.bench_evaluate.first_run(run.bench_evaluate.THREE_PHASE, runs=1)
    assert first.phases == 3 and _positive(first.first_ms, first.first_cpu_ms, first.second_ms)

    rows = run.bench_scaling.measure(gpus=(8,), phases=(), runs=1)
    assert [(r.gpus, r.phases) for r in rows] == [(8, 3)]
    assert all(_positive(*fig) for fig in rows[0].figures.values()
               if fig[0] > 0) and rows[0].figures["process cpu"][0] > 0
    assert "8 GPUs, 3 phases" in run.bench_scaling.render(rows, 1)

    commands = run.cold_start_commands([])
    assert set(commands) == {run.FLOOR, run.TYPER_FLOOR, run.VERSION, run.SWEEP}
    # time_commands raises when a command fails: the Typer floor's app must parse its line
    timed = run.time_commands({k: commands[k] for k in (run.VERSION, run.TYPER_FLOOR)}, runs=1,
                              warmup=False)
    assert all(len(v) == 1 and _positive(*v) for v in timed.values())
    cold = {run.FLOOR: [0.25], **timed, run.CHECK: [0.4], run.LARGE: [1.0],
            "recommend examples/chat-8b-single-node.yaml": [0.3]}  # not timed here: too slow

    breakdown = run.bench_cold_breakdown.measure(runs=1)
    assert breakdown.phases[0][0] == run.bench_cold_breakdown.STARTUP
    assert breakdown.phases[-1][0] == run.bench_cold_breakdown.SHUTDOWN
    assert len(breakdown.phases) == 16 and _positive(breakdown.total_s)
    assert all(math.isfinite(s) and s >= 0 for _, s in breakdown.phases)
    # every phase measured: they add up to the process's wall time
    assert math.isclose(sum(s for _, s in breakdown.phases), breakdown.total_s, rel_tol=1e-6)

    figures = run.Figures(cold=cold, breakdown=breakdown, first_run=[first], evaluate=[ev],
                          scaling=rows, scaling_runs=1, kernel=k, sweep=sw, simulate=sim)
    tabs, failures = run.tables(figures, runs=1)
    assert [len(t.rows) for t in tabs] == [6, 20, 1, 1, 4]
    # the fixed part: every phase but the model's and the report's, less than the whole
    fixed = run.bench_cold_breakdown.fixed_s(breakdown)
    model = [s for name, s in breakdown.phases
             if name.startswith(run.bench_cold_breakdown.MODEL_PHASES)]
    assert len(model) == 5 and math.isclose(fixed + sum(model), breakdown.total_s, rel_tol=1e-6)
    assert isinstance(failures, list)
    info = run.machine()
    assert info["cpu"] and info["python"]
    text = run.render_text(info, tabs)
    markdown = run.render_markdown(info, tabs)
    assert "design points/s" in text and "requests/s" in text and "× floor" in text
    assert "100,000-GPU workload" in text and "check` on the four examples" in markdown
    assert markdown.count("\n|---|") == 5 and "≥ 1,000,000/min" in markdown


def test_markdown_goes_into_the_generated_section(run: ModuleType, tmp_path: Path) -> None:
    """``--markdown docs/performance.md`` rewrites the tables between the markers and keeps
    the text around them; a file without them is written whole (#28)."""
    doc = tmp_path / "performance.md"
    doc.write_text("# Performance\nintro\n<!-- generated: benchmarks (run.py) -->\nold "
                   "tables\n<!-- end: benchmarks -->\nanalysis\n", encoding="utf-8")
    assert run.write_markdown(doc, "| new |\n") == "its generated section"
    assert doc.read_text(encoding="utf-8") == (
        "# Performance\nintro\n<!-- generated: benchmarks (run.py) -->\n| new |\n"
        "<!-- end: benchmarks -->\nanalysis\n")
    bare = tmp_path / "tables.md"
    assert run.write_markdown(bare, "| new |\n") == "the whole file"
    assert bare.read_text(encoding="utf-8") == "| new |\n"
    committed = (Path(run.__file__).resolve().parents[1] / "docs" / "performance.md")
    assert run.SECTION.search(committed.read_text(encoding="utf-8")), "no generated section"


def test_bench_figure_measures_every_example() -> None:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        bench = importlib.import_module("bench_figure")
    finally:
        sys.path.remove(str(BENCHMARKS))
    path = BENCHMARKS.parent / "examples" / "chat-8b-single-node.yaml"
    (timing,) = bench.measure([path], repeats=1)
    assert timing.name == "chat-8b-single-node"
    assert _positive(timing.median_ms, timing.min_ms, timing.max_ms)


def test_cache_and_large_tables(run: ModuleType, tmp_path: Path) -> None:
    """#34's tables: the cache rows with their targets, the large runs with theirs (figures
    made up: nothing is timed here), and the 24-phase workload loads with 24 phases."""
    cache = run.bench_cache.CacheResult(files=100, cold=[9.0], warm=[0.9], one_changed=[1.0],
                                        one_hit=[0.6])
    assert math.isclose(cache.per_hit_s, 0.3 / 99)
    large = [run.bench_large.LargeRun(label="sweep", cpu_s=[14.0], rss_mb=[500.0]),
             run.bench_large.LargeRun(label="phases", cpu_s=[8.0], rss_mb=[200.0])]
    tabs, failures = run.tables(run.Figures(cold={run.FLOOR: [0.3]}, cache=cache, large=large),
                                runs=1)
    cache_tab, large_tab = tabs[-2], tabs[-1]
    assert [r[3] for r in cache_tab.rows] == ["", "pass", "", "", "pass"]
    assert "(0.010× floor)" in cache_tab.rows[-1][1]
    assert [r[-1] for r in large_tab.rows] == ["pass", "**FAIL**"]
    assert failures == ["large run: phases"]

    from advisor.loading.catalog import ProfileCatalog
    from advisor.loading.resolve import load_scenario

    sc = load_scenario(run.bench_large.phases_workload(tmp_path), ProfileCatalog())
    assert len(sc.phases) == 24 and sc.cluster.gpus == 1_024
