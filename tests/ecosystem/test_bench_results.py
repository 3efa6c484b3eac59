"""Parsing vLLM and SGLang benchmark result files (issue #7, item 2).

The formats are those written by vLLM's ``vllm bench serve --save-result``
(vllm-project/vllm @ 009e6d4a vllm/benchmarks/serve.py; older files: @ 0049e29c
benchmarks/benchmark_serving.py) and SGLang's ``bench_serving`` (sgl-project/sglang @ 0033168f
and 50a61368 python/sglang/bench_serving.py); docs/sources.md#benchmark-result-formats lists
their traps. Fixture A and B are ILLUSTRATIVE files in those formats (made-up, internally
consistent values); the others are variants of them (old vLLM format, --append-result,
Infinity).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from advisor.loading.bench_results import (
    BenchResultError,
    detect_format,
    load_results,
    parse_results,
    statistics_of,
)

BENCH = Path(__file__).resolve().parent.parent / "data" / "ecosystem" / "bench"
BAD = BENCH / "bad"


def test_vllm_fixture_a() -> None:
    [run] = load_results(BENCH / "vllm-fixture-a.json")
    assert run.label == "vllm-fixture-a.json"
    assert (run.prompt_tokens, run.output_tokens) == (1024, 128)  # 4096/4, 512/4
    assert run.request_rate_rps == 2.0 and run.max_concurrency is None
    assert run.arrival_cv == 1.0  # burstiness 1 = Poisson
    assert run.completed == 4
    assert run.ttft_statistic == "median" and run.ttft_s == pytest.approx(0.050)  # ms -> s
    assert run.tpot_s == pytest.approx(0.0107835)
    assert run.output_tokens_per_s == pytest.approx(150.7612)
    # Little's law: 1.1778 req/s x 1.421 s in flight
    assert run.mean_concurrency == pytest.approx(1.1778 * 1.421, rel=1e-6)


def test_sglang_fixture_b_and_infinity() -> None:
    runs = load_results(BENCH / "sglang-fixture-b.jsonl")
    assert [r.label for r in runs] == ["sglang-fixture-b.jsonl#1", "sglang-fixture-b.jsonl#2"]
    first, second = runs
    assert (first.prompt_tokens, first.output_tokens) == (2048, 256)
    assert first.request_rate_rps == 4.0 and first.mean_concurrency == 10.6
    assert first.ttft_s == pytest.approx(0.1527) and first.tpot_s == pytest.approx(0.011495)
    assert math.isinf(second.request_rate_rps)  # the bare token Infinity
    assert second.max_concurrency == 16
    assert second.load_label == "conc 16"


def test_vllm_string_inf_and_appended_objects() -> None:
    runs = load_results(BENCH / "vllm-appended.json")
    assert len(runs) == 2
    assert runs[0].request_rate_rps == 2.0
    assert math.isinf(runs[1].request_rate_rps)  # "request_rate": "inf"
    assert runs[1].max_concurrency == 8
    assert (runs[1].prompt_tokens, runs[1].output_tokens) == (1024, 128)


def test_old_vllm_format_uses_second_arrays() -> None:
    """No TTFT/TPOT statistics (e2el only), typo key ``request_goodput:``, arrays in seconds."""
    [run] = load_results(BENCH / "vllm-old-format.json")
    assert run.ttft_statistic == "median"
    assert run.ttft_s == pytest.approx(0.051)  # median of 0.05, 0.048, 0.056, 0.052 seconds
    assert run.tpot_s == pytest.approx((0.0105 + 0.0108 + 0.011 + 0.0106) / 4)
    assert run.mean_concurrency is not None


def test_statistics_are_matched_by_pattern() -> None:
    stats = statistics_of({"p99.9_ttft_ms": 80.0, "p12.5_itl_ms": 9.0, "median_e2e_latency_ms":
                           3000, "mean_tpot_ms": 10, "p99_foo_ms": 1, "max_itl_ms": 50,
                           "mean_ttft_ms": float("nan")})
    assert stats == {"ttft": {"p99.9": 0.08}, "itl": {"p12.5": 0.009},
                     "e2el": {"median": 3.0}, "tpot": {"mean": 0.01}}


def test_format_detection() -> None:
    assert detect_format(json.loads((BENCH / "vllm-fixture-a.json").read_text())) == "vllm"
    line = (BENCH / "sglang-fixture-b.jsonl").read_text().splitlines()[0]
    assert detect_format(json.loads(line)) == "sglang"
    # vLLM --metadata may add keys SGLang also writes; vLLM's own keys win
    assert detect_format({"num_prompts": 4, "dataset_name": "random"}) == "vllm"
    assert detect_format({"name": "x"}) is None


def test_median_falls_back_to_mean_and_itl() -> None:
    text = json.dumps({"backend": "sglang", "dataset_name": "sharegpt", "request_rate": 1.0,
                       "duration": 10.0, "completed": 10, "total_input_tokens": 5000,
                       "total_output_tokens": 1000, "mean_ttft_ms": 40.0,
                       "mean_itl_ms": 12.0})
    [run] = parse_results(text, "x.jsonl")
    assert run.ttft_statistic == "mean" and run.ttft_s == pytest.approx(0.04)
    assert run.tpot_s == pytest.approx(0.012)
    assert run.output_tokens_per_s == pytest.approx(100.0)  # derived: 1000 / 10 s


def test_burstiness_becomes_arrival_cv() -> None:
    data = json.loads((BENCH / "vllm-fixture-a.json").read_text())
    data["burstiness"] = 4.0
    [run] = parse_results(json.dumps(data), "x.json")
    assert run.arrival_cv == pytest.approx(0.5)


@pytest.mark.parametrize(("name", "message"), [
    ("truncated.json", "invalid JSON at line 5 column 2 .*: the file ends inside a JSON object"),
    ("empty.json", "file is empty"),
    ("pooling.json", "pooling .*generates no tokens"),
    ("missing-keys.json", "missing keys 'duration', 'total_output_tokens' .*partial"),
    ("not-a-result.json", "neither a vLLM --save-result JSON nor an SGLang"),
    ("zero-completed.jsonl", "no request completed"),
    ("no-stats.json", "no TTFT or TPOT statistics"),
])
def test_bad_files_name_the_file_and_the_problem(name: str, message: str) -> None:
    with pytest.raises(BenchResultError, match=message) as info:
        load_results(BAD / name)
    assert str(info.value).startswith(str(BAD / name))


def test_bad_run_inside_a_multi_run_file_is_located() -> None:
    good = (BENCH / "sglang-fixture-b.jsonl").read_text().splitlines()[0]
    bad = json.dumps({"backend": "sglang", "dataset_name": "random", "duration": 1.0,
                      "completed": 3, "total_input_tokens": 30, "total_output_tokens": 30,
                      "total_output_tokens_retokenized": 30, "request_rate": -1,
                      "mean_ttft_ms": 5})
    # at the value of the key, in the second run's line (#21)
    with pytest.raises(BenchResultError,
                       match=r"^f\.jsonl:2:\d+: run 2: key 'request_rate' must be"):
        parse_results(good + "\n" + bad + "\n", "f.jsonl")


def test_non_object_and_unreadable(tmp_path: Path) -> None:
    with pytest.raises(BenchResultError, match="expected a JSON object per run, got list"):
        parse_results("[1, 2]", "x.json")
    with pytest.raises(BenchResultError, match="is a directory, not a file"):
        load_results(tmp_path)  # a directory
