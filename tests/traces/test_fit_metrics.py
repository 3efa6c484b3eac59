"""``fit --metrics`` (issue #31): a recorded vLLM ``/metrics`` exposition (two scrapes, 600 s
apart; tests/data/metrics/README.md) fitted into a workload whose rate and mean lengths are
the increases of the counters and of the histograms' sums and counts — recomputed here from
the text with a few lines of Python; a ``query_range`` export of the same series gives the same
workload; bad input is located, exit 2.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from advisor.core.metrics_fit import fit_metrics
from advisor.loading.prom_metrics import load_metrics

DATA = Path(__file__).resolve().parents[1] / "data" / "metrics"
SCRAPES = [DATA / "vllm-scrape-1.prom", DATA / "vllm-scrape-2.prom"]


def _totals(path: Path) -> dict[str, float]:
    """Every series summed over its labels, buckets per ``le``."""
    out: dict[str, float] = defaultdict(float)
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line or line.startswith("#"):
            continue
        name, rest = line.split("{", 1) if "{" in line else line.split(" ", 1)
        le = re.search(r'le="([^"]+)"', rest)
        key = f"{name}@{le[1]}" if le else name
        out[key] += float(line.rsplit(" ", 1)[1])
    return out


def test_rate_and_lengths_are_the_increases_of_the_counters_and_histograms() -> None:
    a, b = (_totals(p) for p in SCRAPES)
    requests = b["vllm:request_success_total"] - a["vllm:request_success_total"]
    prompt_mean = ((b["vllm:request_prompt_tokens_sum"] - a["vllm:request_prompt_tokens_sum"])
                   / (b["vllm:request_prompt_tokens_count"]
                      - a["vllm:request_prompt_tokens_count"]))
    output_mean = ((b["vllm:request_generation_tokens_sum"]
                    - a["vllm:request_generation_tokens_sum"])
                   / (b["vllm:request_generation_tokens_count"]
                      - a["vllm:request_generation_tokens_count"]))
    fit = fit_metrics(load_metrics(SCRAPES, 600.0))
    (phase,) = fit.phases
    assert requests == 3000 and phase.requests == requests
    assert phase.rate_rps == pytest.approx(requests / 600.0, rel=1e-12)
    assert phase.prompt_stats[0] == pytest.approx(prompt_mean, rel=1e-12)
    assert phase.output_stats[0] == pytest.approx(output_mean, rel=1e-12)
    assert phase.burstiness == 1.0 and phase.burstiness_from == "assumed"
    # the median lies in the bucket holding half the increase
    le = sorted({float(k.split("@")[1]) for k in b if k.startswith(
        "vllm:request_prompt_tokens_bucket@") and k[-4:] != "+Inf"})
    inc = [b[f"vllm:request_prompt_tokens_bucket@{x:.1f}"]
           - a[f"vllm:request_prompt_tokens_bucket@{x:.1f}"] for x in le]
    half = next(i for i, c in enumerate(inc) if c >= requests / 2)
    assert le[half - 1] <= phase.prompt_stats[1] <= le[half]
    assert set(phase.latency_ms) == {"ttft", "itl", "tpot", "e2e"}


def test_the_written_workload_and_the_report(run_cli: Callable[..., Any],
                                             tmp_path: Path) -> None:
    out = tmp_path / "w.yaml"
    table = run_cli("fit", "--metrics", *SCRAPES, "--interval", "600", "-o", out,
                    exit_code=0).stdout
    assert "Latency: measured" in table and "TTFT" in table and f"wrote {out}" in table
    text = out.read_text(encoding="utf-8")
    assert "rate_rps: 5" in text and "# Δsum / Δcount (exact)" in text
    assert "engine: vllm" in text and "burstiness: 1" in text
    run_cli("recommend", out, exit_code=0)
    doc = json.loads(run_cli("fit", "--metrics", *SCRAPES, "--interval", "600", "-f", "json",
                             exit_code=0).stdout)
    (phase,) = doc["phases"]
    assert phase["measured_latency_ms"]["ttft"]["p50"] > 0
    assert doc["prediction"]["phases"][0]["ttft_ms"][0] > 0
    assert any("burstiness" in x for x in doc["not_represented"])


def test_a_query_range_export_gives_the_same_workload(tmp_path: Path) -> None:
    series = defaultdict(list)
    for t, path in zip((1000.0, 1600.0), SCRAPES, strict=True):
        for key, value in _totals(path).items():
            series[key].append([t, repr(value)])
    result = []
    for key, values in series.items():
        name, _, le = key.partition("@")
        metric = {"__name__": name, **({"le": le} if le else {})}
        result.append({"metric": metric, "values": values})
    export = tmp_path / "range.json"
    export.write_text(json.dumps({"status": "success", "data": {"resultType": "matrix",
                                                                "result": result}}))
    a = fit_metrics(load_metrics([export]))
    b = fit_metrics(load_metrics(SCRAPES, 600.0))
    assert a.phases[0].rate_rps == pytest.approx(b.phases[0].rate_rps, rel=1e-12)
    assert a.phases[0].prompt_stats == pytest.approx(b.phases[0].prompt_stats, rel=1e-9)


def test_bad_metrics_are_located(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    bad = tmp_path / "bad.prom"
    text = SCRAPES[1].read_text(encoding="utf-8").splitlines()
    text[8] = text[8].rsplit(" ", 1)[0] + " twelve"
    bad.write_text("\n".join(text) + "\n", encoding="utf-8")
    err = run_cli("fit", "--metrics", SCRAPES[0], bad, "--interval", "600",
                  exit_code=2).stderr
    assert re.search(rf"{re.escape(str(bad))}:9:\d+: error: ", err), err
    err = run_cli("fit", "--metrics", SCRAPES[0], exit_code=2).stderr
    assert "rates need two or more" in err
    err = run_cli("fit", "--metrics", *SCRAPES, exit_code=2).stderr
    assert "give --interval SECONDS" in err
    cut = tmp_path / "range.json"
    cut.write_text('{"status": "success", "data": {"resultType": "matrix", "result": [',
                   encoding="utf-8")
    err = run_cli("fit", "--metrics", cut, exit_code=2).stderr
    assert re.search(rf"{re.escape(str(cut))}:1:\d+: error: not JSON", err), err


def _sglang_scrape(path: Path, requests: int, prompt_sum: float, output_sum: float,
                   prompt_buckets: list[int] | None, output_buckets: list[int] | None) -> None:
    """An SGLang ``/metrics`` scrape with the collector's names (sgl-project/sglang
    ``python/sglang/srt/metrics/collector.py``, ``TokenizerMetricsCollector``; the token
    histograms only with ``--collect-tokens-histogram``), cumulative since the start."""
    label = 'model_name="Qwen/Qwen3-8B"'
    lines = [f"sglang:num_requests_total{{{label}}} {requests}",
             f"sglang:prompt_tokens_total{{{label}}} {prompt_sum}",
             f"sglang:generation_tokens_total{{{label}}} {output_sum}"]
    for name, bounds, counts, total in (
            ("sglang:prompt_tokens_histogram", (500, 1000, 2000, 4000), prompt_buckets,
             prompt_sum),
            ("sglang:generation_tokens_histogram", (100, 300, 500, 1000), output_buckets,
             output_sum)):
        if counts is None:
            continue
        lines += [f'{name}_bucket{{{label},le="{le}"}} {c}' for le, c in zip(
            (*map(str, bounds), "+Inf"), counts, strict=True)]
        lines += [f"{name}_sum{{{label}}} {total}", f"{name}_count{{{label}}} {counts[-1]}"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_sglang_token_histograms_and_counters(tmp_path: Path) -> None:
    a, b = tmp_path / "a.prom", tmp_path / "b.prom"
    _sglang_scrape(a, 100, 120_000.0, 25_000.0, [10, 40, 80, 95, 100], [20, 70, 90, 99, 100])
    _sglang_scrape(b, 700, 840_000.0, 160_000.0, [70, 280, 560, 665, 700],
                   [140, 490, 630, 693, 700])
    (phase,) = fit_metrics(load_metrics([a, b], 300.0)).phases
    assert phase.requests == 600 and phase.rate_rps == pytest.approx(2.0, rel=1e-12)
    assert phase.prompt_stats[0] == pytest.approx(720_000 / 600, rel=1e-12)
    assert phase.output_stats[0] == pytest.approx(135_000 / 600, rel=1e-12)
    # the median prompt lies in the (1000, 2000] bucket: 240 of 600 below 1000, 480 below 2000
    assert 1000 < phase.prompt_stats[1] < 2000
    # without --collect-tokens-histogram the means come from the token counters
    _sglang_scrape(a, 100, 120_000.0, 25_000.0, None, None)
    _sglang_scrape(b, 700, 840_000.0, 160_000.0, None, None)
    series = load_metrics([a, b], 300.0)
    assert series.engine == "sglang" and series.prompt is None
    (phase,) = fit_metrics(series).phases
    assert phase.prompt_stats[0] == pytest.approx(1200.0, rel=1e-12)
    assert phase.output_stats[0] == pytest.approx(225.0, rel=1e-12)
