"""``calibrate`` on real result files of the shared data folder (read in place through
``tests.shared_files``; skipped with a reason where it is absent), issues #30 and #31.

* Three ``vllm benchmark_serving --save-result`` records of Llama-3.2-3B-Instruct on 4 × L40S,
  four TP1 replicas behind an llm-d gateway, at 10, 30 and unbounded req/s (GitHub
  ``nerdalert/vllm-bench-automation``, 2025-05-30), with the model's ``config.json`` (no
  ``_name_or_path``).
* The llm-d benchmark report example (PyPI ``llmd-benchmark-report`` 0.2.1).

What must happen (and does): the model id comes from the records, not the config's folder;
the four replicas from the records (``decode_replicas``, ``4xNVIDIA_L40S``); the unbounded run
is a finite batch of 900 requests. The data cannot support a fit: the 900-request batch's
median TTFT, 877 ms, is below what the L40S's BF16 peak allows for the 450 prompts of 999
tokens ahead of the median request on four GPUs (≥ 1.7 s at 100 % of peak), and even the two
finite-rate runs alone drive the prefill efficiency to the GPU's peak under the step-time
model (their light-load TTFT of 53 ms). So ``calibrate`` refuses, naming rinf.json as the file
the fit misses most and by how much, and writes nothing. The llm-d example is refused too:
its figures are the schema's illustration (the output length repeats the input length), and
the refusal names the file with its error.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from advisor.core import calibration as cal
from advisor.loading.bench_results import load_results
from tests.shared_files import shared_path

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "ecosystem" / "configs"


def _workload(tmp_path: Path, model: Path, gpu: str, gpus: int, extra: str = "") -> Path:
    path = tmp_path / "workload.yaml"
    path.write_text(f"version: 1\nmodel: {model}\nprecision: bf16\nengine: vllm\n"
                    f"cluster:\n  gpu: {gpu}\n  gpus: {gpus}\n{extra}"
                    "traffic:\n  rate_rps: 10\n  prompt_tokens: 1000\n  output_tokens: 270\n",
                    encoding="utf-8")
    return path


@pytest.mark.thorough  # three fits with a finite batch: ~5 s of CPU
def test_three_vllm_records_are_refused_naming_the_finite_batch(
        tmp_path: Path, run_cli: Callable[..., Any]) -> None:
    folder = shared_path("data", "bench", "vllm-4xl40s-llama32-3b")
    files = [folder / f"r{x}.json" for x in ("10", "30", "inf")]
    workload = _workload(tmp_path, folder / "config.json", "l40s", 4)
    out = tmp_path / "cal.yaml"
    result = run_cli("calibrate", *files, "-w", workload, "-o", out, exit_code=2)
    err = " ".join(result.stderr.split())
    assert "the result files record 'meta-llama/Llama-3.2-3B-Instruct', taken as the model" \
        in err  # not refused as a mismatch with the folder's name
    assert "fitted with 4 instances (recorded in r10.json, r30.json, rinf.json)" in err
    assert "rinf.json is the file the fit misses most" in err
    assert "prefill_compute_efficiency_bf16 = 1" in err and "nothing written" in err
    assert not out.exists()
    table = result.stdout
    ttft = re.search(r"rinf\.json \(burst\): TTFT p50 measured 877\.1 ms, predicted "
                     r"([\d,.]+) ms \(\+(\d+)\.\d%\)", table)
    assert ttft and int(ttft[2]) > 100, table
    assert "Without it (r10.json, r30.json) the fit is refused too" in table
    # the unbounded run is a finite batch: 900 requests at once on four instances
    rinf = load_results(files[2])[0]
    assert cal.is_finite_batch(rinf) and rinf.completed == 900 and math.isinf(
        rinf.request_rate_rps)


def test_the_finite_batch_is_beyond_the_gpus_peak(tmp_path: Path) -> None:
    """The crux, fast: rinf.json as the finite batch it is, on four L40S at 100 % of the BF16
    peak and no overheads at all, still gets its median first token later than measured."""
    import dataclasses

    from advisor.loading.catalog import ProfileCatalog
    from advisor.loading.resolve import load_scenario
    from advisor.usecases.calibrate import serving_instance

    folder = shared_path("data", "bench", "vllm-4xl40s-llama32-3b")
    rinf = load_results(folder / "rinf.json")[0]
    scenario = load_scenario(_workload(tmp_path, folder / "config.json", "l40s", 4),
                             ProfileCatalog(env={}))
    inst = serving_instance(scenario, [rinf], 1)
    ideal = dataclasses.replace(inst.efficiency, prefill_compute_efficiency_bf16=1.0,
                                decode_bandwidth_efficiency=1.0, step_overhead_s=0.0,
                                request_overhead_s=0.0)
    pred = cal.predict_run(cal.with_factors(inst, ideal), rinf, 2048, 256, 4,
                           cal.kv_tokens_for(inst, rinf, 0.9))
    assert rinf.ttft_s == pytest.approx(0.877, abs=0.001)
    assert pred.ttft_s is not None and pred.ttft_s > 1.7 * rinf.ttft_s


def test_llmd_example_is_refused_with_its_error(tmp_path: Path,
                                                run_cli: Callable[..., Any]) -> None:
    report = shared_path("data", "bench", "llmd-report", "example.json")
    workload = _workload(tmp_path, CONFIGS / "qwen3-0.6b" / "config.json", "h100-sxm", 16,
                         "  inter_node: ib-ndr-400\n")
    out = tmp_path / "cal.yaml"
    done = run_cli("calibrate", report, "-w", workload, "-o", out, exit_code=2)
    flat = " ".join(done.stderr.split())
    # the heading names the model served, not the folder the config came from (#31)
    assert done.stdout.splitlines()[0].startswith("Calibration of vllm on h100-sxm: "
                                                  "Qwen/Qwen3-0.6B, "), done.stdout
    # the factor the refusal names is marked at its bound in the table too (1.0000 shown)
    row = next(line for line in done.stdout.splitlines()
               if line.startswith("prefill compute efficiency"))
    assert "1.0000" in row and "at its bound" in row, row
    assert "fitted with 2 instances (recorded in example.json)" in flat
    assert "'Qwen/Qwen3-0.6B', taken as the model served" in flat
    assert re.search(r"RMS log error per file, before -> after: example\.json [\d.]+ % -> "
                     r"[\d.]+ %", flat), flat
    assert not out.exists()


def test_instances_and_tp_of_the_files_against_the_options(
        tmp_path: Path, run_cli: Callable[..., Any]) -> None:
    folder = shared_path("data", "bench", "vllm-4xl40s-llama32-3b")
    workload = _workload(tmp_path, folder / "config.json", "l40s", 4)
    err = run_cli("calibrate", folder / "r10.json", "-w", workload, "--instances", "2",
                  "-o", tmp_path / "c.yaml", exit_code=2).stderr
    assert "r10.json: the file records 4 replicas, but --instances says 2" in err
    assert "Traceback" not in err
