"""A finite batch in a workload (#30): ``traffic: {requests: N, arrival: all-at-once}`` is
evaluated as a makespan on the best plan of both architectures, its rate is N / makespan of
the one with the shorter makespan, ``simulate`` runs the same batch as its check, and bad
input is located."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

BATCH = """version: 1
model: llama-3.1-8b
precision: bf16
engine: vllm
cluster:
  gpu: l40s
  gpus: 4
traffic:
{traffic}
slo:
  ttft_ms: 60000
  tpot_ms: 200
"""
GOOD = ("  requests: 400\n  arrival: all-at-once\n  prompt_tokens: 1000\n"
        "  output_tokens: 270")


def _write(tmp_path: Path, traffic: str) -> Path:
    path = tmp_path / "batch.yaml"
    path.write_text(BATCH.format(traffic=traffic), encoding="utf-8")
    return path


def test_a_batch_is_a_makespan_on_both_architectures(tmp_path: Path,
                                                     run_cli: Callable[..., Any]) -> None:
    path = _write(tmp_path, GOOD)
    doc = json.loads(run_cli("recommend", path, "-f", "json", exit_code=0).stdout)
    (phase,) = doc["inputs"]["traffic"]
    batch = phase["finite_batch"]
    assert batch["requests"] == 400
    plans = {p["plan"]: p for p in batch["plans"]}
    assert set(plans) == {"colocated", "disaggregated"}
    best = min(plans.values(), key=lambda p: p["makespan_s"])
    assert batch["plan"] == best["plan"]
    assert phase["rate_rps"] == pytest.approx(400 / best["makespan_s"], rel=1e-5)  # 6 digits
    for p in plans.values():
        assert p["ttft_ms"]["p50"] < p["ttft_ms"]["p95"] <= p["ttft_ms"]["p99"]
        assert p["makespan_s"] * 1000 > p["ttft_ms"]["p99"]
    table = run_cli("recommend", path, exit_code=0).stdout
    assert "a batch of 400 requests at once" in " ".join(table.split())


def test_simulate_runs_the_batch_beside_the_model(tmp_path: Path,
                                                  run_cli: Callable[..., Any]) -> None:
    path = _write(tmp_path, GOOD)
    doc = json.loads(run_cli("simulate", path, "-m", "chunked", "-f", "json",
                             exit_code=0).stdout)
    assert doc["kind"] == "simulation-batch" and doc["requests"] == 400
    figures = {f["metric"]: f for f in doc["modes"][0]["figures"]}
    span = figures["makespan (s)"]
    assert span["analytic"] == pytest.approx(span["simulated"], rel=0.10)
    run_cli("simulate", path, "--requests", "1000", exit_code=2)


@pytest.mark.parametrize(("traffic", "key", "message"), [
    ("  requests: 400\n  prompt_tokens: 1000\n  output_tokens: 270", "arrival",
     "a finite batch gives both requests"),
    ("  requests: 400\n  arrival: all-at-once\n  rate_rps: 3\n  prompt_tokens: 1000\n"
     "  output_tokens: 270", "requests", "not both"),
    ("  requests: 400\n  arrival: at-noon\n  prompt_tokens: 1000\n  output_tokens: 270",
     "arrival", "all-at-once"),
    ("  requests: 0\n  arrival: all-at-once\n  prompt_tokens: 1000\n  output_tokens: 270",
     "requests", ""),
])
def test_bad_batches_are_located(tmp_path: Path, run_cli: Callable[..., Any], traffic: str,
                                 key: str, message: str) -> None:
    path = _write(tmp_path, traffic)
    err = run_cli("validate", path, exit_code=2).stderr
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1)
                if text.strip().startswith(f"{key}:") or (key == "arrival"
                                                          and text.strip() == "traffic:"))
    assert f"{path}:" in err and "traffic." in err and message in err, err
    assert "Traceback" not in err and line > 0
