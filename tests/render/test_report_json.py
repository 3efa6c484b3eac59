"""The canonical JSON document: required keys, no NaN anywhere, nulls where values are absent."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from advisor.loading.errors import InputProblem
from advisor.render.report_json import (
    GATE_CHECKS,
    as_check,
    build_check,
    check_error_entry,
    exit_code,
    finding_check,
    sanitize,
)
from tests.render.reports import ACCEPTANCE, ALL_WORKLOADS, report_for

REQUIRED: dict[str, tuple[str, ...]] = {
    "": ("schema_version", "tool", "input", "verdict", "slo_met", "summary", "reasons",
         "warnings", "measure_next", "preconditions", "colocated", "disaggregated",
         "kv_transfer", "phases", "static_mix_loss"),
    "tool": ("name", "version"),
    "input": ("path", "sha256"),
    "colocated": ("tensor_parallel", "instances", "gpus", "chunk_tokens", "max_goodput_rps",
                  "output_tokens_per_s_per_gpu", "percentile", "ttft_ms", "tpot_ms",
                  "overloaded", "interference"),
    "disaggregated": ("prefill_tensor_parallel", "decode_tensor_parallel", "prefill_instances",
                      "decode_instances", "prefill_gpus", "decode_gpus", "idle_gpus",
                      "ideal_prefill_fraction", "max_goodput_rps", "ideal_max_goodput_rps",
                      "rounding_loss", "output_tokens_per_s_per_gpu", "percentile", "ttft_ms",
                      "tpot_ms", "overloaded", "alternatives"),
    "kv_transfer": ("bytes_per_token", "bytes_per_request_mean", "bytes_per_request_p95",
                    "demand_bytes_per_s", "link_bytes_per_s", "utilization", "transfer_ms"),
    "deployed": ("mode", "tensor_parallel", "chunk_tokens", "prefill_gpus", "decode_gpus",
                 "max_goodput_rps", "percentile", "ttft_ms", "tpot_ms", "overloaded",
                 "meets_slo", "findings"),
}


def walk(value: Any, where: str = "$") -> list[str]:
    """Every place in a JSON value holding something JSON cannot carry faithfully."""
    bad = []
    if isinstance(value, float) and not math.isfinite(value):
        bad.append(where)
    elif isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                bad.append(f"{where}.{key!r} (key)")
            bad += walk(item, f"{where}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            bad += walk(item, f"{where}[{index}]")
    elif not (value is None or isinstance(value, (bool, int, float, str))):
        bad.append(f"{where} ({type(value).__name__})")
    return bad


@pytest.mark.parametrize("path", ALL_WORKLOADS, ids=lambda p: p.stem)
def test_report_is_finite_plain_json(path: Path) -> None:
    doc = report_for(path)
    assert walk(doc) == []
    json.dumps(doc, allow_nan=False)


@pytest.mark.parametrize("path", ALL_WORKLOADS, ids=lambda p: p.stem)
def test_report_has_the_contract_keys(path: Path) -> None:
    doc = report_for(path)
    assert doc["schema_version"] == 1
    assert doc["tool"]["name"] == "pd-advisor"
    assert len(doc["input"]["sha256"]) == 64
    assert not Path(doc["input"]["path"]).is_absolute()
    for section, keys in REQUIRED.items():
        block = doc if not section else doc.get(section)
        if block is None:
            continue
        missing = [k for k in keys if k not in block]
        assert not missing, f"{section or 'top level'} lacks {missing}"
    if doc["colocated"] is not None and doc["colocated"]["interference"] is not None:
        assert {"unchunked_tpot_factor", "chunked_tpot_factor",
                "chunked_safe_rate_rps"} <= set(doc["colocated"]["interference"])
    for p in doc["preconditions"]:
        assert {"id", "passed", "measured", "threshold", "unit", "explanation"} <= set(p)
    for p in doc["phases"]:
        assert {"name", "share", "rate_rps", "ideal_prefill_fraction", "prefill_gpus",
                "decode_gpus", "rounding_loss"} <= set(p)
    assert doc["verdict"] in ("chunked-prefill", "disaggregate")


@pytest.mark.parametrize("path", ALL_WORKLOADS, ids=lambda p: p.stem)
def test_overloaded_plans_have_null_latencies(path: Path) -> None:
    doc = report_for(path)
    for key in ("colocated", "unchunked", "disaggregated"):
        plan = doc[key]
        if plan is not None and plan["overloaded"]:
            assert plan["ttft_ms"] is None and plan["tpot_ms"] is None


def test_fractions_stay_fractions() -> None:
    doc = report_for(ACCEPTANCE[0])
    assert 0 <= doc["disaggregated"]["ideal_prefill_fraction"] <= 1
    assert 0 <= doc["disaggregated"]["rounding_loss"] <= 1
    for p in doc["preconditions"]:
        if p["unit"] == "fraction":
            assert 0 <= p["threshold"] <= 1
    assert doc["inputs"]["slo"]["percentile"] == 95


def test_deployed_only_with_a_deployment_block(tmp_path: Path) -> None:
    from advisor.loading.catalog import ProfileCatalog
    from advisor.usecases.recommend import build_file_report

    text = ACCEPTANCE[0].read_text(encoding="utf-8")
    stripped = text[: text.index("deployment:")]
    path = tmp_path / "no-deployment.yaml"
    path.write_text(stripped, encoding="utf-8")
    report, _ = build_file_report(path, ProfileCatalog(env={}), display="no-deployment.yaml")
    assert "deployed" not in report
    assert "deployed" in report_for(ACCEPTANCE[0])


def test_sanitize_replaces_non_finite_and_numpy() -> None:
    raw = {"a": float("nan"), "b": [float("inf"), -float("inf"), 1.5], "c": np.float64(2.0),
           "d": np.int64(3), "e": np.bool_(True), "f": (1, None), "g": np.float64("nan")}
    clean = sanitize(raw)
    assert clean == {"a": None, "b": [None, None, 1.5], "c": 2.0, "d": 3, "e": True,
                     "f": [1, None], "g": None}
    assert walk(clean) == []
    assert type(clean["d"]) is int and type(clean["e"]) is bool
    with pytest.raises(TypeError):
        sanitize({"x": object()})


def test_finding_checks_cover_every_rule_id() -> None:
    ids = {"slo-unmet": "slo-achievable", "mode-contradicts-verdict": "mode",
           "chunking-off": "mode", "precondition-kv-bandwidth": "preconditions",
           "deployment-misses-slo": "deployment-slo", "deployment-infeasible": "deployment-slo",
           "split-off": "split"}
    for finding_id, check in ids.items():
        assert finding_check(finding_id) == check
        assert check in GATE_CHECKS


def test_check_document_status_and_exit_code() -> None:
    passing = as_check(report_for(ACCEPTANCE[0]))
    assert passing["status"] == "pass" and exit_code(passing) == 0
    error = check_error_entry("x.yaml", [InputProblem(path="x.yaml", line=3, col=4, key="slo",
                                                      message="bad")])
    failing = dict(passing["files"][0], status="fail")
    assert exit_code(build_check([failing])) == 1
    assert exit_code(build_check([failing]), exit_zero=True) == 0
    mixed = build_check([passing["files"][0], failing, error])
    assert mixed["status"] == "error"
    assert mixed["counts"] == {"files": 3, "passed": 1, "failed": 1, "errors": 1}
    assert exit_code(mixed) == 2 and exit_code(mixed, exit_zero=True) == 2
    assert error["problems"] == [{"path": "x.yaml", "line": 3, "col": 4, "key": "slo",
                                  "message": "bad"}]
