"""Expert-parallel launch flags (`--emit sglang|vllm` for EP plans): the spellings of
SGLang 0.5.23 and vLLM 0.33 (docs/model.md §4.1; engines' EP deployment docs)."""

from __future__ import annotations

from pathlib import Path

from advisor.loading.catalog import ProfileCatalog
from advisor.render.ep_flags import (
    per_rank,
    sglang_ep_flags,
    vllm_ep_flags,
    vllm_node_flags,
)
from advisor.render.formats import EmitEngine
from advisor.render.launch import render_launch
from advisor.usecases.launch import plan_launch
from advisor.usecases.recommend import build_file_report

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "deepseek-v3-96xh100.yaml"


def test_sglang_flags_per_role() -> None:
    assert sglang_ep_flags(32, "prefill", 32) == [
        "--tp-size", "32", "--attn-dp-size", "32", "--ep-size", "32",
        "--moe-a2a-backend", "deepep", "--deepep-mode", "normal", "--moe-dense-tp-size", "1",
        "--enable-two-batch-overlap", "--enable-eplb", "--ep-num-redundant-experts", "32"]
    assert "low_latency" in sglang_ep_flags(72, "decode", 32)
    assert "--enable-eplb" not in sglang_ep_flags(8, "colocated", 0)


def test_vllm_flags_and_node_roles() -> None:
    flags = vllm_ep_flags(144, 8, "decode", 32)
    assert flags[:6] == ["--tensor-parallel-size", "1", "--data-parallel-size", "144",
                         "--data-parallel-size-local", "8"]
    assert "--enable-expert-parallel" in flags and "deepep_low_latency" in flags
    assert "'{\"num_redundant_experts\":32}'" in flags
    assert "deepep_high_throughput" in vllm_ep_flags(32, 8, "prefill", 32)
    assert vllm_node_flags(0, 8, "node0", 32)[-2:] == ["--api-server-count", "8"]
    assert vllm_node_flags(3, 8, "node0", 32)[-3:] == ["--data-parallel-start-rank", "24",
                                                       "--headless"]
    assert per_rank(532, 16) == 33


def test_emit_for_an_ep_plan_uses_ep_flags_not_tp1() -> None:
    report, _ = build_file_report(EXAMPLE, ProfileCatalog(env={}), boundaries=False)
    ep = report["colocated"]["expert_parallel"]
    assert ep > 1
    sglang = render_launch(plan_launch(report, EmitEngine.sglang, model="deepseek-ai/DeepSeek-V3"))
    assert f"x EP{ep} (DP attention)" in sglang.splitlines()[1]
    assert f"--tp-size {ep} --attn-dp-size {ep} --ep-size {ep} --moe-a2a-backend deepep" in sglang
    vllm = render_launch(plan_launch(report, EmitEngine.vllm, model="deepseek-ai/DeepSeek-V3"))
    assert "--enable-expert-parallel" in vllm and "--headless" in vllm
    assert "x TP1" not in sglang + vllm
