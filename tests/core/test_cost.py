"""Cost per plan (#16): USD per hour and per million output tokens, against hand arithmetic;
null (and a how-to hint) without a price; the workload's price overrides the profile's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.core.cost import plan_cost

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_plan_cost_hand_arithmetic() -> None:
    """16 GPUs at $2.50 = $40/h; 2 req/s × 500 tokens × 3600 s = 3.6 M tokens/h → $11.11/M."""
    cost = plan_cost(16, 2.5, 2.0, 500.0)
    assert cost.usd_per_hour == 40.0
    assert cost.usd_per_million_output_tokens == pytest.approx(40.0 / 3.6)


def test_no_price_or_no_goodput_gives_none() -> None:
    assert plan_cost(16, None, 2.0, 500.0) == plan_cost(16, None, 0.0, 500.0)
    assert plan_cost(16, None, 2.0, 500.0).usd_per_hour is None
    none_carried = plan_cost(16, 2.5, 0.0, 500.0)
    assert none_carried.usd_per_hour == 40.0 and none_carried.usd_per_million_output_tokens is None


def _report(run_cli, path: Path) -> dict:
    return json.loads(run_cli("recommend", path, "--format", "json").stdout)


def test_prefill_heavy_example_every_gpu_billed(run_cli) -> None:
    """examples/prefill-heavy-70b-ib.yaml: 1,024 H100 at the profile's $2.99 (an estimate);
    per-token cost at each plan's own goodput and the 256-token mean output."""
    doc = _report(run_cli, EXAMPLES / "prefill-heavy-70b-ib.yaml")
    cluster = doc["inputs"]["cluster"]
    assert (cluster["usd_per_gpu_hour"], cluster["price_source"]) == (2.99, "gpu-profile")
    for name in ("colocated", "unchunked", "disaggregated"):
        plan = doc[name]
        assert plan["usd_per_hour"] == pytest.approx(1024 * 2.99)
        tokens_per_hour = plan["max_goodput_rps"] * 256 * 3600
        assert plan["usd_per_million_output_tokens"] == pytest.approx(
            1024 * 2.99 / tokens_per_hour * 1e6, rel=1e-5)


def test_workload_price_overrides_and_missing_price_is_null(run_cli, tmp_path: Path) -> None:
    text = (EXAMPLES / "chat-8b-single-node.yaml").read_text()
    priced = tmp_path / "priced.yaml"
    priced.write_text(text.replace("  gpus: 8 ", "  price_per_gpu_hour: 4.0\n  gpus: 8 ", 1))
    doc = _report(run_cli, priced)
    assert doc["inputs"]["cluster"]["price_source"] == "workload"
    assert doc["colocated"]["usd_per_hour"] == 32.0
    unpriced = tmp_path / "unpriced.yaml"
    unpriced.write_text(text.replace("gpu: h100-sxm ", "gpu: h200-sxm ", 1))
    doc = _report(run_cli, unpriced)
    assert doc["inputs"]["cluster"]["usd_per_gpu_hour"] is None
    assert doc["colocated"]["usd_per_hour"] is None
    assert doc["disaggregated"]["usd_per_million_output_tokens"] is None
    table = " ".join(run_cli("recommend", unpriced).stdout.split())
    assert "No GPU price: set cluster.price_per_gpu_hour" in table
