"""The benchmark reports of other tools (issue #31): the llm-d benchmark report, GuideLLM,
inference-perf and AIPerf / GenAI-Perf, read into runs (positive file, values as in the file),
and a truncated or wrong-format file refused at its line and column, exit 2.

The files and their provenance: tests/data/ecosystem/bench/formats/README.md.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from advisor.loading.bench_results import BenchResultError, load_provenance, load_results

DATA = Path(__file__).resolve().parents[1] / "data" / "ecosystem"
FORMATS = DATA / "bench" / "formats"
WORKLOAD = DATA / "workloads" / "llama-8b-h100.yaml"
FILES = {
    "llm-d": FORMATS / "llmd-benchmark-report.json",
    "guidellm": FORMATS / "guidellm-benchmarks.json",
    "inference-perf": FORMATS / "inference-perf-stage_0_lifecycle_metrics.json",
    "aiperf": FORMATS / "aiperf-profile_export_aiperf.json",
}
WRONG = {  # a key each reader needs, removed: the error names it at its place
    "llm-d": ("results", "aggregate"),
    "guidellm": ("request_totals", "request_totals"),
    "inference-perf": ("output_len", "successes"),
    "aiperf": ("output_sequence_length", "output_sequence_length"),
}


def test_llmd_report() -> None:
    (run,) = load_results(FILES["llm-d"])
    assert run.prompt_tokens == pytest.approx(2262.448) and run.completed == 500
    assert run.ttft_s == pytest.approx(0.03622930939309299) and run.ttft_statistic == "median"
    assert run.tpot_s == pytest.approx(0.0368578234128654)
    assert run.request_rate_rps == 10.0 and run.max_concurrency is None  # concurrency: inf
    (prov,) = load_provenance(FILES["llm-d"])
    assert (prov.model, prov.replicas, prov.tensor_parallel, prov.gpus) == (
        "Qwen/Qwen3-0.6B", 2, 8, 16)
    assert prov.gpu == "NVIDIA-H100-80GB-HBM3" and not prov.disaggregated


def test_guidellm_report() -> None:
    sync, constant = load_results(FILES["guidellm"])
    assert sync.label.endswith("[0]") and constant.label.endswith("[1]")
    assert sync.max_concurrency == 1 and math.isinf(sync.request_rate_rps)
    assert sync.ttft_s == pytest.approx(0.0408) and sync.tpot_s == pytest.approx(0.0076)
    assert sync.output_tokens_per_s == pytest.approx(60 * 256 / 120)
    assert constant.request_rate_rps == 6.0 and constant.arrival_cv == 0.0
    assert constant.completed == 718 and constant.ttft_s == pytest.approx(0.0583)


def test_inference_perf_report() -> None:
    (run,) = load_results(FILES["inference-perf"])
    assert run.completed == 79 and run.request_rate_rps == pytest.approx(0.4)
    assert run.prompt_tokens == pytest.approx(4476.810126582279)
    assert run.ttft_s == pytest.approx(0.0911) and run.tpot_s == pytest.approx(0.0079)
    assert run.output_tokens_per_s == pytest.approx(216.12494338685693)


def test_aiperf_report() -> None:
    (run,) = load_results(FILES["aiperf"])
    assert run.completed == 200 and run.max_concurrency == 100
    assert run.ttft_s == pytest.approx(0.7875439584999999) and run.ttft_statistic == "median"
    assert run.tpot_s == pytest.approx(0.05176)
    assert run.output_tokens == pytest.approx(96.85) and run.prompt_tokens == 550.0
    (prov,) = load_provenance(FILES["aiperf"])
    assert prov.model == "openai/gpt-oss-20b"


@pytest.mark.parametrize("fmt", list(FILES))
def test_truncated_and_wrong_format_files_are_located(fmt: str, tmp_path: Path,
                                                      run_cli: Callable[..., Any]) -> None:
    text = FILES[fmt].read_text(encoding="utf-8")
    cut = tmp_path / f"cut-{FILES[fmt].name}"
    cut.write_text(text[: len(text) // 2], encoding="utf-8")
    with pytest.raises(BenchResultError, match="truncated"):
        load_results(cut)
    err = run_cli("calibrate", cut, "-w", WORKLOAD, "-o", tmp_path / "c.yaml",
                  exit_code=2).stderr
    assert re.search(rf"{re.escape(str(cut))}:\d+:\d+: error: invalid JSON", err), err
    key, where = WRONG[fmt]
    doc = json.loads(text)
    _drop(doc, key)
    wrong = tmp_path / f"wrong-{FILES[fmt].name}"
    wrong.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    err = run_cli("calibrate", wrong, "-w", WORKLOAD, "-o", tmp_path / "c.yaml",
                  exit_code=2).stderr
    located = re.search(rf"{re.escape(str(wrong))}:(\d+):(\d+): error: (.*)", err)
    assert located, err
    assert where in located[3] and "Traceback" not in err
    assert not (tmp_path / "c.yaml").exists()


def _drop(obj: Any, key: str) -> None:
    """Remove ``key`` wherever it occurs in ``obj``."""
    if isinstance(obj, dict):
        obj.pop(key, None)
        for value in obj.values():
            _drop(value, key)
    elif isinstance(obj, list):
        for value in obj:
            _drop(value, key)
