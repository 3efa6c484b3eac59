"""``pd-advisor fit``: the planted traffic recovered from logs in every format, written as a
workload that validates and that ``recommend`` evaluates.

Planted (tests/traces/planted.py): 250 s at 8 req/s (prompts ~1,500, outputs ~200 tokens) then
150 s at 16 req/s (prompts ~4,000, outputs ~400), gamma gaps of CV 1.5, and 60 % of requests
opening with one of four shared 2-block system prompts. Required (issue #19): rate within 5 %,
CV within 15 %, the two phases and their shares, the planted prefix reuse.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from advisor.core.trace_fit import fit_traffic
from advisor.core.trace_phases import segment
from advisor.loading.catalog import ProfileCatalog
from advisor.loading.resolve import load_scenario
from advisor.loading.traces import load_trace
from advisor.usecases.replay import fit_log
from tests.traces.planted import PHASES, PlantedPhase, make, write

FORMATS = {"mooncake": "jsonl", "azure": "csv", "burstgpt": "csv", "vllm-bench": "json"}
TOTAL_S = sum(p.duration_s for p in PHASES)
MIN_PHASE_S = 60.0
"""The planted phases last minutes, not the default's ten."""


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("fit")
    planted = make()
    return {fmt: write(planted, fmt, root / f"log-{fmt}.{ext}") for fmt, ext in FORMATS.items()}


def _check_two_phases(fit: Any, cv: float) -> None:
    assert len(fit.phases) == 2, [(p.rate_rps, p.prompt.mean) for p in fit.phases]
    for got, want in zip(fit.phases, PHASES, strict=True):
        assert got.rate_rps == pytest.approx(want.rate_rps, rel=0.05)
        assert got.burstiness == pytest.approx(cv, rel=0.15)
        assert got.share == pytest.approx(want.duration_s / TOTAL_S, abs=0.02)
        assert got.prompt.mean == pytest.approx(want.prompt_mean, rel=0.1)
        assert got.output.mean == pytest.approx(want.output_mean, rel=0.1)
    assert sum(p.share for p in fit.phases) == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_fit_recovers_the_planted_traffic(fmt: str, files: dict[str, Path]) -> None:
    log = load_trace(files[fmt])
    fit = fit_log(log, MIN_PHASE_S)
    _check_two_phases(fit, cv=1.5)
    if fmt == "mooncake":
        planted = make()
        assert fit.prefix_reuse == pytest.approx(planted.expected_reuse, abs=1e-9)
        assert 0.1 < fit.prefix_reuse < 0.3
        assert all(p.prefix_reuse is not None for p in fit.phases)
    else:
        assert fit.prefix_reuse is None


@pytest.mark.parametrize("cv", [0.5, 1.0, 2.5])
def test_fit_recovers_other_burstiness(cv: float) -> None:
    planted = make(cv=cv, seed=11)
    fit = fit_traffic(planted.arrival_s - planted.arrival_s[0], planted.prompt, planted.output,
                      min_phase_s=MIN_PHASE_S)
    _check_two_phases(fit, cv=cv)


def test_no_shift_is_one_phase_and_a_recurring_one_is_one_phase() -> None:
    steady = make(phases=(PlantedPhase(10.0, 400.0, 2000.0, 300.0),), seed=3)
    fit = fit_traffic(steady.arrival_s - steady.arrival_s[0], steady.prompt, steady.output,
                      min_phase_s=MIN_PHASE_S)
    assert len(fit.phases) == 1 and fit.phases[0].share == 1.0
    assert segment(steady.arrival_s, steady.prompt, steady.output, None, MIN_PHASE_S).starts == (0,)
    day, night = PlantedPhase(12.0, 150.0, 1000.0, 200.0), PlantedPhase(4.0, 150.0, 6000.0,
                                                                        300.0)
    cycle = make(phases=(day, night, day), seed=4)
    fit = fit_traffic(cycle.arrival_s - cycle.arrival_s[0], cycle.prompt, cycle.output,
                      min_phase_s=MIN_PHASE_S)
    assert len(fit.phases) == 2
    busy = fit.phases[0]
    assert len(busy.stretches) == 2 and busy.share == pytest.approx(2 / 3, abs=0.02)
    assert busy.rate_rps == pytest.approx(12.0, rel=0.05)


def test_fit_writes_a_workload_recommend_evaluates(run_cli: Callable[..., Any],
                                                   files: dict[str, Path],
                                                   tmp_path: Path) -> None:
    out = tmp_path / "workload.yaml"
    table = run_cli("fit", files["mooncake"], "-o", out, "--min-phase", "60", exit_code=0).stdout
    assert "phase-1" in table and "prefix reuse: 18." in table and f"wrote {out}" in table
    text = out.read_text(encoding="utf-8")
    assert "# CV (std/mean) of the" in text and "# 95th percentile" in text
    assert "\n  # prefix_cache_hit_rate: 0.184  # the log's prefix reuse" in text  # opt-in
    assert "uncomment it to model the" in text
    opted_in = tmp_path.parent / f"{tmp_path.name}-opted-in.yaml"
    opted_in.write_text(text.replace("  # prefix_cache_hit_rate:", "  prefix_cache_hit_rate:"),
                        encoding="utf-8")
    assert load_scenario(opted_in, ProfileCatalog()).phases[1].prefix_cache_hit_rate == \
        pytest.approx(0.184)
    scenario = load_scenario(out, ProfileCatalog())
    assert [p.name for p in scenario.phases] == ["phase-1", "phase-2"]
    assert scenario.phases[0].rate_rps == pytest.approx(8.0, rel=0.05)
    run_cli("recommend", out, exit_code=0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["workload.yaml"]  # no temp file left
    # the same workload on stdout; the JSON report carries the reuse the file cannot hold
    assert run_cli("fit", files["mooncake"], "--format", "yaml", "--min-phase", "60",
                   exit_code=0).stdout == text
    doc = json.loads(run_cli("fit", files["mooncake"], "-f", "json", "--min-phase", "60",
                             exit_code=0).stdout)
    assert doc["kind"] == "fit" and len(doc["phases"]) == 2
    assert doc["prefix_reuse"]["prompt_token_share"] == pytest.approx(make().expected_reuse,
                                                                        rel=1e-5)
    assert "NaN" not in json.dumps(doc)


def test_fit_refuses_to_clobber(run_cli: Callable[..., Any], files: dict[str, Path],
                                tmp_path: Path) -> None:
    out = tmp_path / "w.yaml"
    out.write_text("keep me\n", encoding="utf-8")
    err = run_cli("fit", files["azure"], "-o", out, exit_code=2).stderr
    assert "exists; pass --force" in err and out.read_text() == "keep me\n"
    run_cli("fit", files["azure"], "-o", out, "--force", exit_code=0)
    assert out.read_text().startswith("# Traffic fitted by `pd-advisor fit`")
    log_copy = tmp_path / "log.csv"
    log_copy.write_bytes(files["azure"].read_bytes())
    err = run_cli("fit", log_copy, "-o", log_copy, "--force", exit_code=2).stderr
    assert "it is an input of this run" in err
    assert log_copy.read_bytes() == files["azure"].read_bytes()


def test_fit_on_a_bad_log_writes_nothing(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    log = tmp_path / "bad.jsonl"
    log.write_text('{"timestamp": 0, "input_length": 5, "output_length": 0}\nnope\n',
                   encoding="utf-8")
    out = tmp_path / "w.yaml"
    result = run_cli("fit", log, "-o", out, exit_code=2)
    lines = result.stderr.splitlines()
    assert lines[0].startswith(f"{log}:1:1: error: output_length: 0 output tokens")
    assert lines[1].startswith(f"{log}:2:1: error: not a JSON object")
    assert lines[-1] == f"pd-advisor: error: {log}: 2 problems; nothing fitted"
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl"]


def test_time_scale_and_model_options(run_cli: Callable[..., Any],
                                      files: dict[str, Path]) -> None:
    doc = json.loads(run_cli("fit", files["burstgpt"], "--time-scale", "0.5", "-f", "json",
                             "--min-phase", "30", exit_code=0).stdout)
    assert doc["phases"][0]["rate_rps"] == pytest.approx(16.0, rel=0.05)
    text = run_cli("fit", files["burstgpt"], "--model", "llama-3.1-70b", "--gpus", "16",
                   "-f", "yaml", exit_code=0).stdout
    assert "model: llama-3.1-70b" in text and "gpus: 16" in text and "inter_node:" in text
    run_cli("fit", files["burstgpt"], "--model", "no-such-model", exit_code=2)
    for bad in ("0", "-1", "nan", "inf", "1e9"):
        result = run_cli("fit", files["burstgpt"], "--time-scale", bad, exit_code=2)
        assert "internal error" not in result.stderr


def test_written_lengths_respect_the_schema_and_the_context_window(
        run_cli: Callable[..., Any], tmp_path: Path) -> None:
    """Left-skewed lengths (median above the mean) and prompts beyond the model's window:
    the statistics the format would refuse are left out or capped, with a comment."""
    rng = np.random.default_rng(2)
    n = 600
    t = np.cumsum(rng.exponential(0.1, n))
    prompt = np.where(rng.random(n) < 0.8, 3000, 10)  # median 3000 > mean ~2,700
    prompt[5] = 200_000  # beyond a 128k window
    log = tmp_path / "skewed.csv"
    rows = ["Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type"]
    rows += [f"{a:.3f},ChatGPT,{p},50,{p + 50},Conversation log" for a, p in zip(t, prompt,
                                                                                 strict=True)]
    log.write_text("\n".join(rows) + "\n", encoding="utf-8")
    out = tmp_path / "w.yaml"
    run_cli("fit", log, "-o", out, exit_code=0)
    text = out.read_text(encoding="utf-8")
    assert "is above the mean: left out" in text and "capped at the" in text
    assert "output_tokens: 50" in text  # every output the same: a constant
    load_scenario(out, ProfileCatalog())
