"""The one rule for a chunked deployment's token budget: stated, else the engine's default
for the GPU (its engine profile's launch defaults) — and every command applies it
(recommend/check, validate, --emit, calibrate)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from advisor.core.scenario import Deployment
from advisor.core.token_budget import deployment_token_budget, engine_default_budget
from advisor.loading.catalog import ProfileCatalog
from advisor.loading.resolve import load_scenario

CATALOG = ProfileCatalog(env={})
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("engine", "gpu", "tokens"), [
    # vLLM 0.33.0 `vllm serve`: ≥ 160 GiB 16384; ≥ 70 GiB without "a100" 8192; else 2048
    ("vllm", "h100-sxm", 8192), ("vllm", "h200-sxm", 8192), ("vllm", "h20", 8192),
    ("vllm", "b200", 16384), ("vllm", "mi300x", 16384), ("vllm", "gb200", 16384),
    ("vllm", "a100-80gb-sxm", 2048), ("vllm", "a100-80gb-pcie", 2048),
    ("vllm", "a100-40gb-sxm", 2048), ("vllm", "l40s", 2048), ("vllm", "l4", 2048),
    # SGLang 0.5.23 (profiles/engines/sglang.yaml): < 20 GiB 2048, 20–60 GiB 4096,
    # 60–160 GiB 8192, ≥ 160 GiB 16384
    ("sglang", "l4", 4096), ("sglang", "a10g", 4096), ("sglang", "a100-40gb-sxm", 4096),
    ("sglang", "l40s", 4096), ("sglang", "a100-80gb-sxm", 8192), ("sglang", "h100-sxm", 8192),
    ("sglang", "h200-sxm", 8192), ("sglang", "b200", 16384), ("sglang", "mi325x", 16384),
    # TensorRT-LLM: max_num_tokens 8192
    ("trtllm", "l4", 8192), ("trtllm", "h100-sxm", 8192), ("trtllm", "b200", 8192),
])
def test_engine_defaults(engine: str, gpu: str, tokens: int) -> None:
    assert engine_default_budget(CATALOG.engine(engine), CATALOG.gpu(gpu)) == tokens


@pytest.mark.parametrize(("engine", "gpu", "tokens"), [
    ("vllm-v0", "a100-80gb-sxm", 8192), ("sglang-0.3", "l4", 8192),
    ("trtllm-legacy", "h100-sxm", 8192),
])
def test_older_families_have_their_own_defaults(engine: str, gpu: str, tokens: int) -> None:
    """The rule reads the workload's engine profile, not the engine's name."""
    assert engine_default_budget(CATALOG.engine(engine), CATALOG.gpu(gpu)) == tokens


def test_a_user_profile_changes_the_default(tmp_path: Path) -> None:
    """The table lives in the engine profile: --profiles DIR overrides it."""
    text = (ROOT / "profiles" / "engines" / "trtllm.yaml").read_text(encoding="utf-8")
    assert "fallback_tokens: 8192" in text
    (tmp_path / "engines").mkdir()
    (tmp_path / "engines" / "trtllm.yaml").write_text(
        text.replace("fallback_tokens: 8192", "fallback_tokens: 4096"), encoding="utf-8")
    catalog = ProfileCatalog(extra_dirs=[tmp_path], env={})
    assert engine_default_budget(catalog.engine("trtllm"), catalog.gpu("h100-sxm")) == 4096


def test_a_stated_budget_wins_and_unchunked_has_none() -> None:
    h100 = CATALOG.gpu("h100-sxm")
    vllm, sglang = CATALOG.engine("vllm"), CATALOG.engine("sglang")
    assert deployment_token_budget(None, vllm, h100) is None
    assert deployment_token_budget(Deployment(mode="colocated", chunked_prefill=False), vllm,
                                   h100) is None
    assert deployment_token_budget(Deployment(mode="colocated", chunked_prefill=True,
                                              chunk_tokens=512), vllm, h100) == 512
    assert deployment_token_budget(Deployment(mode="colocated", chunked_prefill=True), vllm,
                                   h100) == 8192
    assert deployment_token_budget(Deployment(mode="colocated", chunked_prefill=True), sglang,
                                   h100) == 8192
    assert deployment_token_budget(Deployment(mode="disaggregated", chunked_prefill=True), vllm,
                                   CATALOG.gpu("a100-80gb-sxm")) == 2048


def _workload(tmp_path: Path, engine: str, chunk: str) -> Path:
    text = (ROOT / "tests" / "data" / "check" / "misses-slo.yaml").read_text(encoding="utf-8")
    text = text.replace("model: llama-3.1-8b", f"model: llama-3.1-8b\nengine: {engine}")
    path = tmp_path / f"{engine}.yaml"
    path.write_text(text + chunk, encoding="utf-8")
    return path


@pytest.mark.parametrize(("engine", "budget"), [("vllm", 8192), ("sglang", 8192),
                                                ("trtllm", 8192)])
def test_every_command_runs_the_default_budget(tmp_path: Path, run_cli: Callable[..., Any],
                                               engine: str, budget: int) -> None:
    """A colocated chunked deployment without chunk_tokens on H100 SXM."""
    path = _workload(tmp_path, engine, "")
    sc = load_scenario(path, CATALOG)
    assert sc.chunk_tokens == budget
    doc = json.loads(run_cli("recommend", path, "-f", "json").stdout)
    assert doc["inputs"]["deployment"]["chunk_tokens"] is None  # as declared
    assert doc["deployed"]["chunk_tokens"] == budget             # as run
    assert doc["colocated"]["chunk_tokens"] == budget            # the plan, pinned to it
    assert "the engine's default budget" in run_cli("recommend", path).stdout
    out = run_cli("validate", path).stdout
    assert f"token budget {budget}, {engine}'s default on this GPU" in out
    if engine != "trtllm":
        emitted = run_cli("recommend", path, "--format", "none", "--emit", engine,
                          exit_code=0).stdout
        flag = "--max-num-batched-tokens" if engine == "vllm" else "--chunked-prefill-size"
        assert f"{flag} {budget}" in emitted


def test_a_stated_budget_is_run_everywhere(tmp_path: Path, run_cli: Callable[..., Any]) -> None:
    path = _workload(tmp_path, "vllm", "  chunk_tokens: 1024\n")
    doc = json.loads(run_cli("recommend", path, "-f", "json").stdout)
    assert doc["inputs"]["deployment"]["chunk_tokens"] == 1024
    assert doc["deployed"]["chunk_tokens"] == doc["colocated"]["chunk_tokens"] == 1024
    assert "token budget 1024" in run_cli("validate", path).stdout
