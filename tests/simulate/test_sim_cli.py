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
    assert doc["kind"] == "simulation" and doc["schema_version"] == 2
    assert [m["mode"] for m in doc["modes"]] == ["chunked", "unchunked", "disaggregated"]
    for m in doc["modes"]:
        ph = m["overall"]
        for key in ("ttft_ms", "tpot_ms"):
            assert set(ph[key]) == {"p50", "p95", "p99"}
            for fig in ph[key].values():
                assert fig["simulated"] > 0 and fig["analytic"] > 0
                diff = (fig["analytic"] - fig["simulated"]) / fig["simulated"]
                assert abs(fig["relative_diff"] - diff) < 1e-4
        st = ph["steady_state"]
        assert set(st) >= {"reached", "warmup_s", "measured_s", "littles_law_gap",
                           "requests_needed"}
        assert st["reached"] is True, st
        assert 0 <= ph["goodput_share"] <= 1
        assert ph["throughput_rps"]["simulated"] > 0
        assert 0 < m["gpu_busy_share"] <= 1
        assert m["littles_law"]["relative_error"] < 0.05
        assert m["requests"] == 1500 and m["sized"] is False
        assert m["kv_cache"]["capacity_tokens"] > 0 and m["kv_cache"]["block_tokens"] in (1, 16, 32)
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


def test_requests_are_bounded_up_front(run_cli: Callable[..., Any]) -> None:
    """Issue #21: a documented maximum, refused at once with exit 2 and the range named
    (before: 1e9 grew to 17.8 GB, 1e10 an internal MemoryError, 1e20 an internal
    ValueError)."""
    for n in ("10000001", "1000000000", "10000000000", "99999999999999999999", "-1"):
        result = run_cli("simulate", WORKLOAD, "--requests", n, exit_code=2)
        bound = "100" if n == "-1" else "10000000"
        assert bound in result.stderr and "--requests" in result.stderr
        assert "internal error" not in result.stderr and "Traceback" not in result.stderr


def test_sized_run_by_default(run_cli: Callable[..., Any]) -> None:
    doc = json.loads(run_cli("simulate", WORKLOAD, "-m", "disaggregated", "-f", "json",
                             exit_code=0).stdout)
    assert doc["requests"] is None
    mode = doc["modes"][0]
    st = mode["overall"]["steady_state"]
    assert mode["sized"] is True and st["reached"] is True
    assert mode["requests"] == mode["requests_planned"] == st["requests_needed"]


def test_renderers_are_pure_and_nan_free() -> None:
    name = "phases-8b"
    res = simulate(scenario(name), "disaggregated", 1500, 1, model=model(name))
    doc = simulation_document("w.yaml", name, 1500, 1, [res], [("chunked", "no plan")])
    assert doc["modes"][0]["phases"][0]["steady_state"] is not None
    text = render_json(doc)
    assert json.loads(text)["modes"][0]["phases"][1]["name"] == "night"
    assert "NaN" not in text
    table = render_table("w.yaml", 1500, 1, [res], [("chunked", "no plan")], width=100)
    assert "phase night" in table and "whole run" in table and "chunked: not simulated" in table
    assert render_table("w.yaml", 1500, 1, [res], width=100) == render_table(
        "w.yaml", 1500, 1, [res], width=100)
