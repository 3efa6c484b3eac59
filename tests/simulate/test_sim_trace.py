"""``simulate WORKLOAD --trace FILE``: a request log replayed on the workload's plans, beside the
analytic percentiles for the traffic fitted to the log (issue #19)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.simulate.helpers import DATA
from tests.traces.planted import PlantedPhase, make, write

WORKLOAD = DATA / "s01-8b-short-light.yaml"
FORMATS = {"mooncake": "jsonl", "azure": "csv", "burstgpt": "csv", "vllm-bench": "json"}
PHASES = (PlantedPhase(8.0, 100.0, 1500.0, 200.0), PlantedPhase(16.0, 50.0, 4000.0, 400.0))
REQUESTS = 1600


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("replay")
    planted = make(phases=PHASES)
    return {fmt: write(planted, fmt, root / f"log-{fmt}.{ext}") for fmt, ext in FORMATS.items()}


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_every_format_replays(fmt: str, files: dict[str, Path],
                              run_cli: Callable[..., Any]) -> None:
    doc = json.loads(run_cli("simulate", WORKLOAD, "--trace", files[fmt], "-m", "disaggregated",
                             "-f", "json", "--min-phase", "30", exit_code=0).stdout)
    assert doc["trace"]["requests"] == REQUESTS and doc["trace"]["format"] == fmt
    assert [p["name"] for p in doc["trace"]["phases"]] == ["phase-1", "phase-2"]
    (mode,) = doc["modes"]
    assert mode["source"] == "trace" and mode["requests"] == REQUESTS
    assert mode["requests_planned"] == REQUESTS and mode["sized"] is False
    for ph, rate in zip(mode["phases"], (8.0, 16.0), strict=True):
        assert ph["rate_rps"] == pytest.approx(rate, rel=0.05)
        assert ph["throughput_rps"]["simulated"] == pytest.approx(rate, rel=0.1)
        for q in ("p50", "p95", "p99"):
            assert ph["ttft_ms"][q]["simulated"] > 0 and ph["ttft_ms"][q]["analytic"] > 0
        assert ph["steady_state"] is not None
        assert ph["steady_state"]["warmup_s"] > 0
    assert "NaN" not in json.dumps(doc)


def test_replay_table_names_the_log(files: dict[str, Path],
                                    run_cli: Callable[..., Any]) -> None:
    out = run_cli("simulate", WORKLOAD, "--trace", files["mooncake"], "-m", "chunked",
                  "--time-scale", "2", "--min-phase", "30", exit_code=0).stdout
    assert f"Replaying {files['mooncake']} (mooncake): 1,600 requests over 300 s" in out
    rate = float(out.split("phase phase-1 (", 1)[1].split(" ", 1)[0])
    assert rate == pytest.approx(4.0, rel=0.01)  # twice as slow: 4 req/s
    assert "replayed log" in out


def test_replay_errors_are_located(files: dict[str, Path], run_cli: Callable[..., Any],
                                   tmp_path: Path) -> None:
    err = run_cli("simulate", WORKLOAD, "--trace", files["azure"], "--requests", 1000,
                  exit_code=2).stderr
    assert "--requests has no meaning with --trace" in err
    bad = tmp_path / "bad.csv"
    bad.write_text("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                   "1,ChatGPT,10,5,15,Conversation log\n0,ChatGPT,10,5,15,Conversation log\n",
                   encoding="utf-8")
    err = run_cli("simulate", WORKLOAD, "--trace", bad, exit_code=2).stderr
    assert err.startswith(f"{bad}:3:1: error: Timestamp: 0 is earlier")
    assert err.rstrip().endswith("1 problem; nothing simulated")
