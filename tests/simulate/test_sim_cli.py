"""``pd-advisor simulate``: formats, determinism, errors; and the pure renderer."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from advisor.core.simulate import simulate
from advisor.render.simulate_report import render_json, render_table, simulation_document
from tests.simulate.helpers import DATA, model, scenario

WORKLOAD = DATA / "s07-32b-short-light.yaml"


def test_json_output_has_every_figure(run_cli: Callable[..., Any]) -> None:
    result = run_cli("simulate", WORKLOAD, "--requests", 1500, "--seed", 4, "--format", "json",
                     exit_code=0)
    doc = json.loads(result.stdout)
    assert doc["kind"] == "simulation" and doc["schema_version"] == 1
    assert [m["mode"] for m in doc["modes"]] == ["chunked", "unchunked", "disaggregated"]
    for m in doc["modes"]:
        ph = m["overall"]
        for key in ("ttft_ms", "tpot_ms"):
            assert set(ph[key]) == {"p50", "p95", "p99"}
            for fig in ph[key].values():
                assert fig["simulated"] > 0 and fig["analytic"] > 0
                diff = (fig["analytic"] - fig["simulated"]) / fig["simulated"]
                assert abs(fig["relative_diff"] - diff) < 1e-4
        assert 0 <= ph["goodput_share"] <= 1
        assert ph["throughput_rps"]["simulated"] > 0
        assert 0 < m["gpu_busy_share"] <= 1
        assert m["littles_law"]["relative_error"] < 0.05
    assert doc["modes"][2]["kv_link_utilization"]["simulated"] > 0
    assert doc["modes"][0]["kv_link_utilization"] is None


def test_same_seed_same_output(run_cli: Callable[..., Any]) -> None:
    args = ("simulate", WORKLOAD, "-n", 1000, "-s", 9, "--mode", "chunked")
    a = run_cli(*args, exit_code=0).stdout
    b = run_cli(*args, exit_code=0).stdout
    c = run_cli("simulate", WORKLOAD, "-n", 1000, "-s", 10, "--mode", "chunked",
                exit_code=0).stdout
    assert a == b
    assert a != c


def test_table_output(run_cli: Callable[..., Any]) -> None:
    out = run_cli("simulate", WORKLOAD, "-n", 1000, "-m", "disaggregated", "-m", "chunked",
                  exit_code=0).stdout
    assert "TTFT p95 (ms)" in out and "TPOT p99 (ms)" in out
    assert "KV link utilisation" in out and "GPU busy share" in out
    assert out.index("disaggregated —") < out.index("chunked —")
    assert "unchunked —" not in out


def test_bad_workload_exits_2(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nmodel: no-such-model\n")
    result = run_cli("simulate", bad, "-n", 100, exit_code=2)
    assert "nothing simulated" in result.stderr
    run_cli("simulate", WORKLOAD, "--mode", "sideways", exit_code=2)
    run_cli("simulate", WORKLOAD, "--requests", 5, exit_code=2)


def test_renderers_are_pure_and_nan_free() -> None:
    name = "phases-8b"
    res = simulate(scenario(name), "disaggregated", 1500, 1, model=model(name))
    doc = simulation_document("w.yaml", name, 1500, 1, [res], [("chunked", "no plan")])
    text = render_json(doc)
    assert json.loads(text)["modes"][0]["phases"][1]["name"] == "night"
    assert "NaN" not in text
    table = render_table("w.yaml", 1500, 1, [res], [("chunked", "no plan")], width=100)
    assert "phase night" in table and "whole run" in table and "chunked: not simulated" in table
    assert render_table("w.yaml", 1500, 1, [res], width=100) == render_table(
        "w.yaml", 1500, 1, [res], width=100)
