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
