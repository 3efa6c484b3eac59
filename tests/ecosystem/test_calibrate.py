"""`pd-advisor calibrate`, the fit, the overlay and the workload's `calibration:` key
(issue #7, item 2).

The round trip writes benchmark files in both formats from the model's own predictions under
known factors, then checks that `calibrate` recovers those factors within 5 %.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor.core import calibration as cal
from advisor.core.hardware import EfficiencyFactors
from advisor.core.instance import Instance
from advisor.core.memory import build_instance
from advisor.loading.calibration_overlay import (
    CalibrationOverlay,
    apply_overlay,
    load_overlay,
    render_overlay,
)
from advisor.loading.catalog import ProfileCatalog, ProfileInvalidError
from advisor.loading.errors import InputError
from advisor.loading.resolve import load_scenario

DATA = Path(__file__).resolve().parent.parent / "data" / "ecosystem"
BENCH = DATA / "bench"
WORKLOAD = DATA / "workloads" / "llama-8b-h100.yaml"
BUDGET = 8192  # vLLM's default on an 80 GB H100 (docs/sources.md#engines); the workload pins none

TRUE = {"prefill_compute_efficiency_bf16": 0.42, "decode_bandwidth_efficiency": 0.71,
        "step_overhead_s": 0.0042, "request_overhead_s": 0.012}
"""The factors the synthetic results are generated from (the fit starts from the h100-sxm
profile's vLLM factors, which differ from these)."""

# (ISL, OSL, request rate, max concurrency, format)
LOADS = [
    (512, 128, 2.0, None, "vllm"),
    (4096, 256, 1.0, None, "vllm"),
    (1024, 512, math.inf, 16, "vllm"),
    (2048, 128, 8.0, None, "sglang"),
    (8000, 64, math.inf, 4, "sglang"),
]


@pytest.fixture(scope="module")
def catalog() -> ProfileCatalog:
    return ProfileCatalog(env={})


@pytest.fixture(scope="module")
def instance(catalog: ProfileCatalog) -> Instance:
    return build_instance(catalog.model("llama-3.1-8b"), catalog.gpu("h100-sxm"), "bf16",
                          catalog.engine("vllm"),
                          1, 1, catalog.link("nvlink4"), None)


def _true_instance(instance: Instance) -> Instance:
    return cal.with_factors(instance, cal.with_fitted(instance.efficiency, **TRUE))


def _measured(instance: Instance, isl: int, osl: int, rate: float, conc: int | None,
              completed: int = 200) -> tuple[cal.BenchmarkRun, cal.RunPrediction]:
    run = cal.BenchmarkRun(label="synthetic", prompt_tokens=isl, output_tokens=osl,
                           request_rate_rps=rate, max_concurrency=conc, arrival_cv=1.0,
                           completed=completed, ttft_s=None, ttft_statistic="median",
                           tpot_s=None, output_tokens_per_s=None)
    truth = _true_instance(instance)
    pred = cal.predict_run(truth, run, BUDGET, cal.max_sequences_for(truth, run, 0.9))
    assert not pred.saturated
    return run, pred


def _vllm_object(run: cal.BenchmarkRun, pred: cal.RunPrediction) -> dict[str, Any]:
    n = run.completed
    duration = n * run.output_tokens / pred.output_tokens_per_s
    ttft_ms, tpot_ms = pred.ttft_s * 1000, pred.tpot_s * 1000
    return {
        "date": "20250601-101500", "endpoint_type": "openai", "backend": "openai",
        "label": None, "model_id": "meta-llama/Llama-3.1-8B-Instruct",
        "tokenizer_id": "meta-llama/Llama-3.1-8B-Instruct", "num_prompts": n,
        "request_rate": "inf" if math.isinf(run.request_rate_rps) else run.request_rate_rps,
        "burstiness": 1.0, "max_concurrency": run.max_concurrency, "duration": duration,
        "completed": n, "failed": 0, "total_input_tokens": int(n * run.prompt_tokens),
        "total_output_tokens": int(n * run.output_tokens), "request_throughput": n / duration,
        "request_goodput": None, "output_throughput": pred.output_tokens_per_s,
        "total_token_throughput": n * (run.prompt_tokens + run.output_tokens) / duration,
        "mean_ttft_ms": ttft_ms * 1.1, "median_ttft_ms": ttft_ms, "std_ttft_ms": 1.0,
        "p99_ttft_ms": ttft_ms * 2, "mean_tpot_ms": tpot_ms, "median_tpot_ms": tpot_ms,
        "std_tpot_ms": 0.1, "p99_tpot_ms": tpot_ms * 1.3, "mean_itl_ms": tpot_ms,
        "median_itl_ms": tpot_ms, "std_itl_ms": 1.0, "p99_itl_ms": tpot_ms * 3}


def _sglang_line(run: cal.BenchmarkRun, pred: cal.RunPrediction) -> str:
    n = run.completed
    duration = n * run.output_tokens / pred.output_tokens_per_s
    ttft_ms, tpot_ms = pred.ttft_s * 1000, pred.tpot_s * 1000
    e2e_ms = ttft_ms + (run.output_tokens - 1) * tpot_ms
    record = {  # SGLang's bench_serving run against the workload's vLLM server
        "backend": "vllm", "dataset_name": "random", "request_rate": run.request_rate_rps,
        "max_concurrency": run.max_concurrency, "sharegpt_output_len": None,
        "random_input_len": int(run.prompt_tokens), "random_output_len": int(run.output_tokens),
        "random_range_ratio": 1.0, "duration": duration, "completed": n,
        "total_input_tokens": int(n * run.prompt_tokens),
        "total_output_tokens": int(n * run.output_tokens),
        "total_output_tokens_retokenized": int(n * run.output_tokens),
        "request_throughput": n / duration, "input_throughput": n * run.prompt_tokens / duration,
        "output_throughput": pred.output_tokens_per_s, "mean_e2e_latency_ms": e2e_ms,
        "median_e2e_latency_ms": e2e_ms, "mean_ttft_ms": ttft_ms * 1.2,
        "median_ttft_ms": ttft_ms, "mean_tpot_ms": tpot_ms, "median_tpot_ms": tpot_ms,
        "mean_itl_ms": tpot_ms, "median_itl_ms": tpot_ms,
        "concurrency": n / duration * e2e_ms / 1000, "accept_length": None}
    return json.dumps(record)  # an unbounded rate becomes the bare token Infinity


@pytest.fixture(scope="module")
def synthetic_files(instance: Instance, tmp_path_factory: pytest.TempPathFactory
                    ) -> list[Path]:
    """One vLLM file (3 appended runs) and one SGLang JSONL file (2 runs)."""
    folder = tmp_path_factory.mktemp("bench")
    vllm, sglang = [], []
    for isl, osl, rate, conc, fmt in LOADS:
        run, pred = _measured(instance, isl, osl, rate, conc)
        if fmt == "vllm":
            vllm.append(json.dumps(_vllm_object(run, pred), indent=1))
        else:
            sglang.append(_sglang_line(run, pred))
    (folder / "vllm-sweep.json").write_text("\n".join(vllm) + "\n")
    (folder / "sglang-sweep.jsonl").write_text("\n".join(sglang) + "\n")
    assert "Infinity" in (folder / "sglang-sweep.jsonl").read_text()
    assert '"request_rate": "inf"' in (folder / "vllm-sweep.json").read_text()
    return [folder / "vllm-sweep.json", folder / "sglang-sweep.jsonl"]


# --------------------------------------------------------------------------- core
def test_fit_recovers_known_factors(instance: Instance) -> None:
    runs = []
    for isl, osl, rate, conc, _ in LOADS:
        run, pred = _measured(instance, isl, osl, rate, conc)
        runs.append(dataclasses.replace(run, ttft_s=pred.ttft_s, tpot_s=pred.tpot_s,
                                        output_tokens_per_s=pred.output_tokens_per_s))
    result = cal.fit_efficiency(instance, runs, BUDGET, 0.9)
    assert result.success
    assert result.before == instance.efficiency
    for field, value in TRUE.items():  # the start is far enough away to make the test mean it
        assert abs(getattr(instance.efficiency, field) / value - 1) > 0.1
    for field, value in TRUE.items():
        # the weight-streaming efficiency and the fixed step cost are told apart only through
        # the KV reads that move with the former (#15): a shallow valley, found within 2 %
        # (3 % for the step cost since the per-request overhead is fitted too, #31)
        tolerance = 0.03 if field == "step_overhead_s" else 0.02
        assert getattr(result.after, field) == pytest.approx(value, rel=tolerance)
        assert result.constrained[field]
    assert result.rms_log_error_before > 0.1
    assert result.rms_log_error_after < 0.005
    assert result.residual_count == 3 * len(LOADS)
    # untouched fields keep the profile's values
    assert result.after.prefill_compute_efficiency_fp8 == instance.efficiency.\
        prefill_compute_efficiency_fp8


def test_closed_loop_obeys_littles_law(instance: Instance) -> None:
    run, pred = _measured(instance, 1024, 256, math.inf, 12)
    e2e = pred.ttft_s + 255 * pred.tpot_s
    assert pred.rate_rps * e2e == pytest.approx(12, rel=0.01)
    # a finite rate below the closed-loop rate is an open loop at that rate
    capped = cal.predict_run(instance, dataclasses.replace(run, request_rate_rps=0.5), BUDGET,
                             cal.max_sequences_for(instance, run, 0.9))
    assert capped.rate_rps == 0.5


def test_overloaded_rate_is_predicted_saturated(instance: Instance) -> None:
    run = cal.BenchmarkRun(label="hot", prompt_tokens=4096, output_tokens=256,
                           request_rate_rps=500.0, max_concurrency=None, arrival_cv=1.0,
                           completed=100, ttft_s=1.0, ttft_statistic="median", tpot_s=0.05,
                           output_tokens_per_s=500.0)
    pred = cal.predict_run(instance, run, BUDGET, cal.max_sequences_for(instance, run, 0.9))
    assert pred.saturated and pred.rate_rps < 500
    assert cal.run_residuals(run, pred)[0] == 0.0  # TTFT is not compared under saturation


def test_unconstrained_factor_is_reported(catalog: ProfileCatalog) -> None:
    """TPOT of tiny prompts says nothing about prefill compute efficiency (on an engine whose
    steps take max(compute, memory): the GPU profile's factors alone, no engine profile)."""
    instance = build_instance(catalog.model("llama-3.1-8b"), catalog.gpu("h100-sxm"), "bf16",
                              "vllm", 1, 1, catalog.link("nvlink4"), None)
    runs = [cal.BenchmarkRun(label=f"r{i}", prompt_tokens=16, output_tokens=256,
                             request_rate_rps=rate, max_concurrency=None, arrival_cv=1.0,
                             completed=100, ttft_s=None, ttft_statistic="median", tpot_s=tpot,
                             output_tokens_per_s=None)
            for i, (rate, tpot) in enumerate([(0.5, 0.012), (1.0, 0.0125)])]
    result = cal.fit_efficiency(instance, runs, BUDGET, 0.9)
    assert not result.constrained["prefill_compute_efficiency_bf16"]
    assert result.constrained["decode_bandwidth_efficiency"]
    assert result.after.prefill_compute_efficiency_bf16 == pytest.approx(
        instance.efficiency.prefill_compute_efficiency_bf16, rel=1e-3)  # stays at the prior


def test_calibrate_takes_the_engine_default_budget(catalog: ProfileCatalog) -> None:
    """Without --chunk-tokens and without a budget in the deployment, the runs were served
    with the engine's default for the GPU (the one rule, ``token_budget``)."""
    from advisor.core.token_budget import engine_default_budget
    from advisor.usecases.calibrate import serving_token_budget
    from tests.core.helpers import scenario

    sc = dataclasses.replace(scenario(gpu="h100-sxm"), engine=catalog.engine("vllm"))
    default = engine_default_budget(sc.engine, sc.cluster.gpu)
    assert serving_token_budget(sc, None) == default == 8192
    assert serving_token_budget(sc, 512) == 512
    pinned = dataclasses.replace(sc, chunk_tokens=1024)  # a deployment's budget
    assert serving_token_budget(pinned, None) == 1024


def test_fit_needs_runs(instance: Instance) -> None:
    with pytest.raises(ValueError, match="no benchmark runs"):
        cal.fit_efficiency(instance, [], BUDGET, 0.9)


# --------------------------------------------------------------------------- CLI round trip
def test_round_trip_recovers_factors_within_5_percent(
        synthetic_files: list[Path], tmp_path: Path, run_cli: Callable[..., Any]) -> None:
    out = tmp_path / "calibration.yaml"
    result = run_cli("calibrate", *synthetic_files, "--workload", WORKLOAD, "-o", out,
                     exit_code=0)
    overlay = yaml.safe_load(out.read_text())
    assert overlay["gpu"] == "h100-sxm" and overlay["engine"] == "vllm"
    assert overlay["chunk_tokens"] == BUDGET and overlay["tensor_parallel"] == 1
    for field, value in TRUE.items():
        fitted = overlay["efficiency"][field]
        assert fitted["kind"] == "empirical"
        assert "least-squares fit to 5 benchmark runs" in fitted["source"]
        assert fitted["value"] == pytest.approx(value, rel=0.05)
    assert overlay["fit"]["runs"] == 5 and overlay["fit"]["measurements"] == 15
    assert overlay["fitted_on"] == {
        "model": "llama-3.1-8b", "engine": "vllm", "gpu": "h100-sxm", "tensor_parallel": 1,
        "precision": "bf16", "files": overlay["fitted_on"]["files"]}
    assert [f["path"] for f in overlay["fitted_on"]["files"]] == [str(p) for p in synthetic_files]
    # the before/after table: one block per run, three metrics each
    table = result.stdout
    assert "factor" in table and "before" in table and "after" in table
    for label in ("vllm-sweep.json#1", "vllm-sweep.json#3", "sglang-sweep.jsonl#2"):
        assert label in table
    assert "conc 16" in table and "conc 4" in table and "8 req/s" in table
    assert table.count("TTFT p50 ms") == 5 and table.count("output tok/s") == 5
    assert re.search(r"after 0\.[0-2] %", table)
    assert f"wrote {out}" in result.stderr


def test_round_trip_overlay_applies_to_the_workload(
        synthetic_files: list[Path], tmp_path: Path, run_cli: Callable[..., Any],
        catalog: ProfileCatalog) -> None:
    run_cli("calibrate", *synthetic_files, "-w", WORKLOAD, "-o", tmp_path / "cal.yaml",
            exit_code=0)
    workload = tmp_path / "workload.yaml"
    workload.write_text(WORKLOAD.read_text() + "calibration: cal.yaml\n")
    scenario = load_scenario(workload, catalog)
    factors = scenario.cluster.gpu.efficiency_for("vllm")
    for field, value in TRUE.items():
        assert getattr(factors, field) == pytest.approx(value, rel=0.05)
    # other engines keep the GPU profile's values, and the precision not fitted keeps the
    # engine profile's value (the overlay replaces the engine's factors on this GPU, #15)
    plain = catalog.gpu("h100-sxm")
    assert scenario.cluster.gpu.efficiency_for("sglang") == plain.efficiency_for("sglang")
    assert factors.prefill_compute_efficiency_fp8 == scenario.engine.efficiency_for(plain).\
        prefill_compute_efficiency_fp8
    assert scenario.engine.efficiency_for(scenario.cluster.gpu) == factors
    # and the recommendation runs with it
    run_cli("recommend", workload, "--format", "json", exit_code=0)


def test_overlay_to_stdout_moves_the_table_to_stderr(
        synthetic_files: list[Path], run_cli: Callable[..., Any]) -> None:
    result = run_cli("calibrate", synthetic_files[1], "-w", WORKLOAD, "-o", "-", exit_code=0)
    overlay = CalibrationOverlay.model_validate(yaml.safe_load(result.stdout))
    assert overlay.engine == "vllm"
    assert "RMS log error" in result.stderr and "RMS log error" not in result.stdout


def test_illustrative_fixtures_calibrate(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    files = [BENCH / n for n in ("vllm-fixture-a.json", "vllm-appended.json",
                                 "sglang-fixture-b.jsonl", "vllm-old-format.json")]
    result = run_cli("calibrate", *files, "-w", WORKLOAD, "-o", tmp_path / "c.yaml",
                     "--tensor-parallel", "1", "--chunk-tokens", "8192", "--allow-mismatch",
                     exit_code=0)
    assert "6 runs from 4 files" in result.stdout
    # fixture B was served by SGLang; the workload runs vLLM: fitted only when allowed
    assert ("sglang-fixture-b.jsonl#1: the run was served by engine 'sglang' (backend), but "
            f"{WORKLOAD} runs engine 'vllm' (--allow-mismatch)") in result.stderr
    assert load_overlay(tmp_path / "c.yaml").gpu == "h100-sxm"


def test_bad_benchmark_files_exit_2(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    result = run_cli("calibrate", BENCH / "vllm-fixture-a.json", BENCH / "bad" / "truncated.json",
                     BENCH / "bad" / "pooling.json", tmp_path / "nope.json", "-w", WORKLOAD,
                     "-o", tmp_path / "c.yaml", exit_code=2)
    assert "truncated.json:5:2: error: invalid JSON" in result.stderr  # located (#21)
    assert "pooling.json:1:1: error: a pooling" in result.stderr
    assert "nope.json: file not found" in result.stderr
    assert "3 benchmark file problems; nothing fitted" in result.stderr
    assert not (tmp_path / "c.yaml").exists()


def test_bad_workload_exits_2(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    bad = tmp_path / "w.yaml"
    bad.write_text("version: 1\nmodel: llama-3.1-8b\n")
    result = run_cli("calibrate", BENCH / "vllm-fixture-a.json", "-w", bad, exit_code=2)
    assert "missing required key 'precision'" in result.stderr


def test_model_that_does_not_fit_the_given_tp_exits_2(run_cli: Callable[..., Any],
                                                      tmp_path: Path) -> None:
    workload = tmp_path / "w.yaml"
    workload.write_text(WORKLOAD.read_text().replace("llama-3.1-8b", "llama-3.1-70b"))
    result = run_cli("calibrate", BENCH / "vllm-fixture-a.json", "-w", workload,
                     "--tensor-parallel", "1", "-o", tmp_path / "c.yaml", "--allow-mismatch",
                     exit_code=2)
    assert "TP1 cannot serve the runs" in result.stderr


# --------------------------------------------------------------------------- overlay + workload
def _overlay_text(gpu: str = "h100-sxm", engine: str = "vllm") -> str:
    return render_overlay(gpu=gpu, engine=engine, precision="bf16", model="llama-3.1-8b",
                          tensor_parallel=1, chunk_tokens=8192,
                          factors={"decode_bandwidth_efficiency": 0.7, "step_overhead_s": 0.004},
                          source="test", fit={"runs": 1})


def test_apply_overlay_replaces_only_the_engine_factors(catalog: ProfileCatalog,
                                                        tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(_overlay_text(engine="sglang"))
    gpu = catalog.gpu("h100-sxm")
    calibrated = apply_overlay(gpu, load_overlay(path))
    expected: EfficiencyFactors = dataclasses.replace(
        gpu.efficiency_for("sglang"), decode_bandwidth_efficiency=0.7, step_overhead_s=0.004)
    assert calibrated.efficiency_for("sglang") == expected
    assert calibrated.efficiency_for("vllm") == gpu.efficiency_for("vllm")
    assert calibrated.efficiency == gpu.efficiency


def _workload_with(tmp_path: Path, overlay: str | None, ref: str = "cal.yaml") -> Path:
    if overlay is not None:
        (tmp_path / "cal.yaml").write_text(overlay)
    workload = tmp_path / "workload.yaml"
    workload.write_text(WORKLOAD.read_text() + f"calibration: {ref}\n")
    return workload


@pytest.mark.parametrize(("overlay", "ref", "message"), [
    (None, "missing.yaml", "calibration: no calibration file at 'missing.yaml'"),
    ("gpu", "cal.yaml", ("calibration: the calibration was fitted on GPU 'a100-80gb-sxm', but the "
                        "workload uses 'h100-sxm'")),
    ("engine", "cal.yaml", ("calibration: the calibration is for engine 'sglang', but the "
                           "workload's engine is 'vllm'")),
    ("invalid", "cal.yaml", "calibration: calibration 'cal.yaml' is invalid"),
])
def test_workload_calibration_problems(tmp_path: Path, catalog: ProfileCatalog,
                                       overlay: str | None, ref: str, message: str) -> None:
    text = {None: None, "gpu": _overlay_text(gpu="a100-80gb-sxm"),
            "engine": _overlay_text(engine="sglang"),
            "invalid": _overlay_text().replace("value: 0.7", "value: 1.7")}[overlay]
    with pytest.raises(InputError) as info:
        load_scenario(_workload_with(tmp_path, text, ref), catalog)
    formatted = info.value.format()
    assert message in formatted
    assert f"{tmp_path / 'workload.yaml'}:" in formatted
    if overlay == "invalid":
        assert "efficiency.decode_bandwidth_efficiency.value" in formatted


def test_overlay_that_sets_nothing_is_invalid(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("version: 1\ngpu: h100-sxm\nengine: vllm\nefficiency: {}\n")
    with pytest.raises(ProfileInvalidError, match="sets no factor"):
        load_overlay(path)


def test_calibration_key_is_in_the_published_schema() -> None:
    from advisor.loading.schema_export import SCHEMA_PATH, workload_schema

    committed = json.loads(SCHEMA_PATH.read_text())
    assert committed == workload_schema()
    assert "calibration" in committed["properties"]
    assert "config.json" in committed["properties"]["model"]["description"]


# --------------------------------------------------------------------------- provenance (#18)
def _with_metadata(synthetic_files: list[Path], folder: Path, **metadata: Any) -> Path:
    """The synthetic vLLM file with ``--metadata`` keys added to every run (values are
    strings, as vLLM saves them) or keys of its own replaced."""
    text = synthetic_files[0].read_text()
    decoder, objects, position = json.JSONDecoder(), [], 0
    while position < len(text.rstrip()):
        obj, position = decoder.raw_decode(text, position)
        while position < len(text) and text[position].isspace():
            position += 1
        objects.append({**obj, **metadata})
    path = folder / "vllm-meta.json"
    path.write_text("\n".join(json.dumps(o) for o in objects) + "\n")
    return path


@pytest.mark.parametrize(("metadata", "message"), [
    ({"model_id": "meta-llama/Llama-3.1-70B-Instruct"},
     "vllm-meta.json#1: the run served model 'meta-llama/Llama-3.1-70B-Instruct', but {w} "
     "serves 'llama-3.1-8b' (Llama 3.1 8B)"),
    ({"engine": "sglang"},
     "vllm-meta.json#1: the run was served by engine 'sglang' (engine), but {w} runs engine "
     "'vllm'"),
    ({"gpu": "NVIDIA A100-SXM4-80GB"},
     "vllm-meta.json#1: the run was measured on GPU 'NVIDIA A100-SXM4-80GB', but {w} uses "
     "'h100-sxm'"),
    ({"tp": "2"},
     "vllm-meta.json#1: the run used TP2, but {w} (deployment.tensor_parallel or "
     "--tensor-parallel) says TP1"),
    ({"gpus": "4"},
     "vllm-meta.json#1: the run used 4 GPUs, but {w} says 1 instance x TP1 = 1 GPUs"),
])
def test_mismatched_result_files_exit_2(synthetic_files: list[Path], tmp_path: Path,
                                        run_cli: Callable[..., Any], metadata: dict[str, str],
                                        message: str) -> None:
    bench = _with_metadata(synthetic_files, tmp_path, **metadata)
    out = tmp_path / "c.yaml"
    result = run_cli("calibrate", bench, "-w", WORKLOAD, "-o", out, exit_code=2)
    assert f"pd-advisor: error: {message.format(w=WORKLOAD)}" in result.stderr
    assert ("3 differences between the benchmark files and the workload; nothing fitted "
            "(pass --allow-mismatch to fit anyway)") in result.stderr
    assert not out.exists()
    # allowed: each difference is a warning and the overlay is written
    allowed = run_cli("calibrate", bench, "-w", WORKLOAD, "-o", out, "--allow-mismatch",
                      exit_code=0)
    assert f"warning: {message.format(w=WORKLOAD)} (--allow-mismatch)" in allowed.stderr
    assert out.exists()


def test_matching_result_files_write_the_overlay(synthetic_files: list[Path], tmp_path: Path,
                                                 run_cli: Callable[..., Any]) -> None:
    bench = _with_metadata(synthetic_files, tmp_path, engine="vllm", tp="1", gpus="1",
                           gpu="NVIDIA H100 80GB HBM3")
    out = tmp_path / "c.yaml"
    result = run_cli("calibrate", bench, "-w", WORKLOAD, "-o", out, exit_code=0)
    assert "warning" not in result.stderr
    fitted_on = load_overlay(out).fitted_on
    assert fitted_on is not None
    assert (fitted_on.model, fitted_on.engine, fitted_on.gpu, fitted_on.tensor_parallel,
            fitted_on.precision) == ("llama-3.1-8b", "vllm", "h100-sxm", 1, "bf16")
    assert [f.path for f in fitted_on.files] == [str(bench)]


def test_recorded_tp_is_used_when_the_workload_gives_none(
        synthetic_files: list[Path], tmp_path: Path, run_cli: Callable[..., Any]) -> None:
    workload = tmp_path / "w.yaml"
    workload.write_text(WORKLOAD.read_text().replace("  tensor_parallel: 1\n", ""))
    bench = _with_metadata(synthetic_files, tmp_path, tp="2", gpus="2")
    run_cli("calibrate", bench, "-w", workload, "-o", tmp_path / "c.yaml", exit_code=0)
    assert load_overlay(tmp_path / "c.yaml").tensor_parallel == 2


def test_physically_impossible_fit_is_refused(tmp_path: Path,
                                              run_cli: Callable[..., Any]) -> None:
    """The 8B fixture runs fitted to a 70B workload (the issue's case): prefill and weight
    streaming would need the GPU's peak or more; refused, nothing written."""
    workload = tmp_path / "w.yaml"
    workload.write_text(WORKLOAD.read_text().replace("llama-3.1-8b", "llama-3.1-70b")
                        .replace("precision: bf16", "precision: fp8")
                        .replace("tensor_parallel: 1", "tensor_parallel: 2"))
    out = tmp_path / "c.yaml"
    files = [BENCH / n for n in ("vllm-fixture-a.json", "vllm-appended.json",
                                 "vllm-old-format.json")]
    result = run_cli("calibrate", *files, "-w", workload, "-o", out, "--allow-mismatch",
                     exit_code=2)
    assert "the fitted factors are outside physical bounds" in result.stderr
    assert "prefill_compute_efficiency_fp8 = 1 " in result.stderr
    assert "(the fit's upper bound, 1 = the GPU's peak)" in result.stderr
    assert "nothing written" in result.stderr and not out.exists()


def test_existing_output_needs_force(synthetic_files: list[Path], tmp_path: Path,
                                     run_cli: Callable[..., Any]) -> None:
    out = tmp_path / "c.yaml"
    out.write_text("# mine\n")
    result = run_cli("calibrate", *synthetic_files, "-w", WORKLOAD, "-o", out, exit_code=2)
    assert f"{out} exists; pass --force to replace it" in result.stderr
    assert out.read_text() == "# mine\n"
    run_cli("calibrate", *synthetic_files, "-w", WORKLOAD, "-o", out, "--force", exit_code=0)
    assert load_overlay(out).engine == "vllm"


def test_recommend_shows_the_active_overlay(synthetic_files: list[Path], tmp_path: Path,
                                            run_cli: Callable[..., Any]) -> None:
    run_cli("calibrate", *synthetic_files, "-w", WORKLOAD, "-o", tmp_path / "cal.yaml",
            exit_code=0)
    workload = _workload_with(tmp_path, None)
    report = json.loads(run_cli("recommend", workload, "-f", "json", exit_code=0).stdout)
    calibration = report["calibration"]
    assert calibration["file"] == "cal.yaml"
    assert calibration["fitted_on"]["model"] == "llama-3.1-8b"
    assert calibration["fitted_on"]["tensor_parallel"] == 1
    for field, value in TRUE.items():
        assert calibration["factors"][field] == pytest.approx(value, rel=0.05)
    table = run_cli("recommend", workload, exit_code=0).stdout
    assert "calibration" in table and "cal.yaml: prefill compute efficiency bf16" in table
    flat = " ".join(table.split())  # the line wraps with the fourth factor (#31)
    assert "fitted on llama-3.1-8b, vllm, h100-sxm, TP1, bf16; 2 benchmark files" in flat
    markdown = run_cli("recommend", workload, "-f", "markdown", exit_code=0).stdout
    assert "| calibration | cal.yaml:" in markdown
    html = run_cli("recommend", workload, "-f", "html", exit_code=0).stdout
    assert "<td>calibration</td><td>cal.yaml: prefill compute efficiency bf16" in html
    checked = json.loads(run_cli("check", workload, "-f", "json", exit_code=None).stdout)
    assert checked["files"][0]["report"]["calibration"]["file"] == "cal.yaml"
    assert "calibrated with cal.yaml" in run_cli("check", workload, exit_code=None).stdout
    plain = json.loads(run_cli("recommend", WORKLOAD, "-f", "json", exit_code=0).stdout)
    assert plain["calibration"] is None


def test_overlay_of_another_model_is_refused(tmp_path: Path, catalog: ProfileCatalog) -> None:
    text = _overlay_text().replace("model: llama-3.1-8b", "model: llama-3.1-70b")
    with pytest.raises(InputError) as info:
        load_scenario(_workload_with(tmp_path, text), catalog)
    assert ("calibration: the calibration was fitted on model 'llama-3.1-70b', but the "
            "workload serves 'llama-3.1-8b'") in info.value.format()
