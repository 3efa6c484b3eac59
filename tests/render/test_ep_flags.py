"""Expert-parallel launch flags (`--emit sglang|vllm` for EP plans): the spellings of
SGLang 0.5.23 and vLLM 0.33 (docs/model.md §4.1; engines' EP deployment docs), written into
#18's per-node launch script (one process per node, node rank from the hosts file)."""

from __future__ import annotations

from pathlib import Path

from advisor.loading.catalog import ProfileCatalog
from advisor.render.ep_flags import per_rank, sglang_ep_flags, vllm_ep_flags
from advisor.render.formats import EmitEngine
from advisor.render.launch import render_launch
from advisor.usecases.launch import launch_memory_for_workload, plan_launch
from advisor.usecases.recommend import build_file_report
from tests.ecosystem.launch_harness import flag, run_script, script_nodes

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "deepseek-v3-96xh100.yaml"


def test_sglang_flags_per_role() -> None:
    assert sglang_ep_flags(32, "prefill", 32) == [
        "--tp-size", "32", "--attn-dp-size", "32", "--ep-size", "32",
        "--moe-a2a-backend", "deepep", "--deepep-mode", "normal", "--moe-dense-tp-size", "1",
        "--enable-two-batch-overlap", "--enable-eplb", "--ep-num-redundant-experts", "32"]
    assert "low_latency" in sglang_ep_flags(72, "decode", 32)
    assert "--enable-eplb" not in sglang_ep_flags(8, "colocated", 0)
    # EP8 with attention TP over the node: no DP attention, dense layers TP too
    tp_attention = sglang_ep_flags(8, "colocated", 0, attention_tensor_parallel=8)
    assert "--attn-dp-size" not in tp_attention and "--moe-dense-tp-size" not in tp_attention


def test_vllm_flags() -> None:
    flags = vllm_ep_flags(144, 8, "decode", 32)
    assert flags[:6] == ["--tensor-parallel-size", "1", "--data-parallel-size", "144",
                         "--data-parallel-size-local", "8"]
    assert "--enable-expert-parallel" in flags and "deepep_low_latency" in flags
    assert flag(flags, "--eplb-config") == '{"num_redundant_experts":32}'  # quoted by the script
    assert "deepep_high_throughput" in vllm_ep_flags(32, 8, "prefill", 32)
    tp_attention = vllm_ep_flags(8, 8, "colocated", 0, attention_tensor_parallel=8)
    assert tp_attention[:6] == ["--tensor-parallel-size", "8", "--data-parallel-size", "1",
                                "--data-parallel-size-local", "1"]
    assert "--enable-dbo" not in tp_attention
    assert per_rank(532, 16) == 33


def _plan(engine: EmitEngine, mode: str | None = None):  # type: ignore[no-untyped-def]
    catalog = ProfileCatalog(env={})
    report, _ = build_file_report(EXAMPLE, catalog, boundaries=False)
    memory = launch_memory_for_workload(EXAMPLE, catalog, engine)
    return report, plan_launch(report, engine, memory, model="deepseek-ai/DeepSeek-V3",
                               mode=mode)


def test_emit_for_an_ep_plan_uses_ep_flags_not_tp1(tmp_path: Path) -> None:
    report, plan = _plan(EmitEngine.sglang, mode="colocated")
    ep = report["colocated"]["expert_parallel"]
    assert ep > 1 and plan.mode == "colocated"
    sglang = render_launch(plan)
    assert f"x EP{ep} (DP attention)" in sglang
    assert "x TP1" not in sglang and not plan.warnings
    hosts = script_nodes(sglang)
    head = run_script(sglang, tmp_path, [], hosts, node_rank=0)
    other = run_script(sglang, tmp_path, [], hosts, node_rank=1)
    for argv in head + other:
        assert [flag(argv, f) for f in ("--tp-size", "--attn-dp-size", "--ep-size")] == [
            str(ep)] * 3
        assert flag(argv, "--moe-a2a-backend") == "deepep"
        assert flag(argv, "--nnodes") == str(ep // 8)
        # instance-wide cap: SGLang divides it by the attention-DP size itself
        assert int(flag(argv, "--max-running-requests") or 0) == report["colocated"][
            "max_running_sequences"]
    assert [flag(a, "--node-rank") for a in head + other] == ["0", "1"]
    assert flag(other[0], "--dist-init-addr") == "host-0.example:29501"


def test_vllm_ep_plan_runs_one_process_per_node_with_dp_ranks(tmp_path: Path) -> None:
    report, plan = _plan(EmitEngine.vllm, mode="colocated")
    ep, instances = report["colocated"]["expert_parallel"], report["colocated"]["instances"]
    script = render_launch(plan)
    hosts = script_nodes(script)
    assert hosts == ep * instances // 8
    calls = [run_script(script, tmp_path, [], hosts, node_rank=rank)
             for rank in range(ep // 8 + 1)]
    assert all(len(c) == 1 for c in calls)
    argvs = [c[0] for c in calls]
    for argv in argvs:
        assert argv[:2] == ["vllm", "serve"] and "--enable-expert-parallel" in argv
        assert flag(argv, "--data-parallel-size") == str(ep)
        assert flag(argv, "--data-parallel-size-local") == "8"
        assert flag(argv, "--tensor-parallel-size") == "1"
        # per DP rank: vLLM applies --max-num-seqs per rank
        assert int(flag(argv, "--max-num-seqs") or 0) == max(
            1, report["colocated"]["max_running_sequences"] // ep)
    head, second, next_head = argvs[0], argvs[1], argvs[ep // 8]
    assert flag(head, "--api-server-count") == "8" and "--headless" not in head
    assert flag(second, "--data-parallel-start-rank") == "8" and "--headless" in second
    assert flag(second, "--data-parallel-address") == "host-0.example"
    assert flag(next_head, "--data-parallel-address") == f"host-{ep // 8}.example"
    [router] = run_script(script, tmp_path, ["router"], hosts)
    assert [w for w in router if w.startswith("http")] == [
        f"http://host-{i * ep // 8}.example:8100" for i in range(instances)]


def test_disaggregated_ep_plan_per_role(tmp_path: Path) -> None:
    report, plan = _plan(EmitEngine.vllm, mode="disaggregated")
    d = report["disaggregated"]
    prefill, decode = plan.pools
    assert (prefill.expert_parallel, decode.expert_parallel) == (
        d["prefill_expert_parallel"], d["decode_expert_parallel"])
    # each DP rank prefills its own prompts: the per-rank budget holds the p95 prompt
    assert prefill.token_budget is not None
    assert prefill.token_budget // prefill.attention_ranks >= 2048
    script = render_launch(plan)
    hosts = script_nodes(script)
    first_decode = prefill.instances * prefill.expert_parallel // 8
    [p] = run_script(script, tmp_path, [], hosts, node_rank=0)
    [dec] = run_script(script, tmp_path, [], hosts, node_rank=first_decode)
    assert flag(p, "--all2all-backend") == "deepep_high_throughput"
    assert flag(dec, "--all2all-backend") == "deepep_low_latency"
    assert flag(p, "--kv-transfer-config") == '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'
    assert int(flag(p, "--max-num-batched-tokens") or 0) == (
        prefill.token_budget // prefill.attention_ranks)
    [router] = run_script(script, tmp_path, ["router"], hosts)
    assert router.count("--prefill") == prefill.instances
    assert router.count("--decode") == decode.instances
