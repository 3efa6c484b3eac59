"""Launch commands for the recommended plan (issue #7, item 3; issue #18, item 1).

Flags as documented by vLLM (vllm-project/vllm @ 026c83f9 docs/features/nixl_connector_usage.md,
@ 00620f91 docs/configuration/optimization.md) and SGLang (sgl-project/sglang @ 08edc506
docs/advanced_features/pd_disaggregation.md, @ 004813e1 server_arguments.md, @ 046ed665
router.md); docs/sources.md#engines.

Two kinds of test: hand-made recommendation documents with known numbers (exact flags), and
documents built from real workloads, where every number in the commands must be the plan's.
The commands are what bash passes to recording stubs when it runs the emitted script on every
node (tests/ecosystem/launch_harness.py).
"""

from __future__ import annotations

import copy
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest

from advisor.loading.catalog import ProfileCatalog
from advisor.render import launch as render
from advisor.render.formats import EmitEngine
from advisor.usecases.launch import (
    HF_REPOSITORIES,
    LaunchError,
    LaunchMemory,
    checkpoint_from_workload,
    plan_launch,
)
from tests.ecosystem.launch_harness import emitted_servers

WORKLOADS = Path(__file__).resolve().parent.parent / "data" / "ecosystem" / "workloads"


def _memory(report: dict[str, Any], engine: EmitEngine | str) -> LaunchMemory:
    """The memory check of a hand-made report: its model, GPU and precision from the
    built-in profiles, launched on ``engine``."""
    catalog = ProfileCatalog(env={})
    inputs = report["inputs"]
    gpu = catalog.gpu(inputs["cluster"]["gpu"]["id"])
    return LaunchMemory(model=catalog.model(inputs["model"]["id"] if inputs["model"]["id"]
                                      in HF_REPOSITORIES else "llama-3.1-8b"),
                        gpu=gpu, precision=inputs["precision"],
                        engine=catalog.engine(EmitEngine(engine).value),
                        intra_node=catalog.link(gpu.intra_node_link_id),
                        inter_node=catalog.link("ib-ndr-400"))


def launch_commands(report: dict[str, Any], engine: EmitEngine | str, model: str | None = None,
                    mode: str | None = None) -> list[str]:
    """The lines ``--emit`` prints: the plan decided from the report, then rendered."""
    return render.launch_commands(plan_launch(report, engine, _memory(report, engine), model,
                                              mode))


def render_launch(report: dict[str, Any], engine: EmitEngine | str) -> str:
    return render.render_launch(plan_launch(report, engine, _memory(report, engine)))


def _report(**overrides: Any) -> dict[str, Any]:
    """A minimal recommendation document with the keys launch.py reads."""
    doc: dict[str, Any] = {
        "verdict": "chunked-prefill", "slo_met": True,
        "inputs": {
            "model": {"id": "llama-3.1-8b", "name": "Llama 3.1 8B"}, "precision": "bf16",
            "cluster": {"gpu": {"id": "h100-sxm"}, "gpus": 8, "gpus_per_node": 8},
            "traffic": [{"name": "all", "prompt_tokens": {"mean": 1000, "p50": 800,
                                                          "p95": 2500, "max": None},
                         "output_tokens": {"mean": 300, "p50": 220, "p95": 800, "max": None}}],
        },
        "policy": {"memory_fraction": 0.85},
        "colocated": {"tensor_parallel": 2, "pipeline_stages": 1, "instances": 4, "gpus": 8,
                      "chunked": True, "chunk_tokens": 1024, "max_goodput_rps": 40.0,
                      "rate_rps": 10.0, "decode_batch": 6.0, "overloaded": False,
                      "max_running_sequences": 30, "interference": {"decode_batch": 6.0}},
        "disaggregated": {"prefill_tensor_parallel": 1, "decode_tensor_parallel": 4,
                          "prefill_pipeline_stages": 1, "decode_pipeline_stages": 1,
                          "prefill_instances": 3, "decode_instances": 1, "prefill_gpus": 3,
                          "decode_gpus": 4, "idle_gpus": 1, "rate_rps": 10.0,
                          "decode_batch": 30.0, "decode_rate_per_instance_rps": 20.0,
                          "decode_max_running_sequences": 75,
                          "prefill_saturating_tokens": 2048.0, "overloaded": False},
        "kv_transfer": {"link_id": "nvlink4"},
    }
    for key, value in overrides.items():
        doc[key] = value
    return doc


def _commands(lines: list[str]) -> list[list[str]]:
    """Every engine and router process the script starts, on every node (argv, preceded by
    the ``NAME=value`` engine variables it saw)."""
    servers, routers = emitted_servers("\n".join(lines) + "\n", Path(tempfile.mkdtemp()),
                                       keep_env=True, every_node=True)
    return servers + routers


def _comments(lines: list[str]) -> str:
    """All comment text, wrapped lines joined."""
    return " ".join(line.lstrip("#").strip() for line in lines if line.startswith("#"))


def _flag(words: list[str], name: str) -> str | None:
    return words[words.index(name) + 1] if name in words else None


def _env(words: list[str]) -> dict[str, str]:
    return dict(w.split("=", 1) for w in words if "=" in w and not w.startswith("-")
                and w.split("=", 1)[0].isupper())


# --------------------------------------------------------------------------- hand-made plans
def test_vllm_colocated_flags() -> None:
    lines = launch_commands(_report(), "vllm")
    assert lines[:2] == ["#!/usr/bin/env bash",
                         "# pd-advisor launch plan (vllm): chunked prefill on a colocated pool"]
    commands = _commands(lines)
    serves = [c for c in commands if "serve" in c]
    assert len(serves) == 4
    for i, words in enumerate(serves):
        assert _env(words)["CUDA_VISIBLE_DEVICES"] == f"{2 * i},{2 * i + 1}"
        assert words[words.index("serve") + 1] == "meta-llama/Llama-3.1-8B-Instruct"
        assert _flag(words, "--port") == str(8100 + i)
        assert _flag(words, "--tensor-parallel-size") == "2"
        assert _flag(words, "--max-num-batched-tokens") == "1024"
        # the model's running sequences per instance at the plan's goodput
        assert _flag(words, "--max-num-seqs") == "30"
        assert _flag(words, "--gpu-memory-utilization") == "0.85"
        assert _flag(words, "--kv-cache-dtype") == "auto"
        # no max length in the workload: the model's context, which the memory holds
        assert _flag(words, "--max-model-len") == "131072"
    assert "the model's full context" in _comments(lines)
    [router] = [c for c in commands if c[0] == "vllm-router"]
    assert router[router.index("--worker-urls") + 1:router.index("--policy")] == [
        f"http://localhost:{8100 + i}" for i in range(4)]


def test_sglang_colocated_flags_and_router() -> None:
    report = _report()
    report["inputs"]["precision"] = "fp8"
    report["inputs"]["traffic"][0]["prompt_tokens"]["max"] = 8000
    report["inputs"]["traffic"][0]["output_tokens"]["max"] = 2000
    commands = _commands(launch_commands(report, EmitEngine.sglang, model="/ckpt/llama"))
    servers = [c for c in commands if "sglang.launch_server" in c]
    assert len(servers) == 4
    for i, words in enumerate(servers):
        assert _flag(words, "--model-path") == "/ckpt/llama"
        assert _flag(words, "--tp-size") == "2"
        assert _flag(words, "--base-gpu-id") == str(2 * i)
        assert _flag(words, "--chunked-prefill-size") == "1024"
        assert _flag(words, "--max-running-requests") == "30"
        assert _flag(words, "--mem-fraction-static") == "0.85"
        assert _flag(words, "--kv-cache-dtype") == "fp8_e4m3"
        assert _flag(words, "--context-length") == "10000"
    [router] = [c for c in commands if "sglang_router.launch_router" in c]
    urls = router[router.index("--worker-urls") + 1: router.index("--policy")]
    assert urls == [f"http://localhost:{30000 + i}" for i in range(4)]


def test_vllm_running_sequences_never_exceed_the_token_budget() -> None:
    report = _report()
    report["colocated"].update(chunk_tokens=256, max_running_sequences=500)
    [first, *_] = [c for c in _commands(launch_commands(report, "vllm")) if "serve" in c]
    assert _flag(first, "--max-num-seqs") == "256"


def test_running_sequences_are_the_model_figure_above_1024() -> None:
    """The model holds the figure within the engine profile's max_num_seqs for the GPU (SGLang
    and TensorRT-LLM: 2,048); the launch plan applies no second cap of its own."""
    report = _report(verdict="disaggregate")
    report["disaggregated"]["decode_max_running_sequences"] = 1800
    servers = [c for c in _commands(launch_commands(report, "sglang"))
               if _flag(c, "--disaggregation-mode") == "decode"]
    assert _flag(servers[0], "--max-running-requests") == "1800"


def test_the_model_caps_running_sequences_at_the_engine_profile() -> None:
    """max_num_seqs per engine profile and GPU tier (profiles/engines/*.yaml launch_defaults)."""
    from advisor.core.memory import build_instance, plan_memory

    catalog = ProfileCatalog(env={})
    model, h100, a100 = (catalog.model("llama-3.1-8b"), catalog.gpu("h100-sxm"),
                         catalog.gpu("a100-80gb-sxm"))
    for engine, gpu, cap in (("vllm", h100, 1024), ("vllm", a100, 256), ("sglang", h100, 2048),
                             ("trtllm", h100, 2048)):
        inst = build_instance(model, gpu, "bf16", catalog.engine(engine), 1, 1,
                              catalog.link(gpu.intra_node_link_id), None)
        assert plan_memory(inst, 150.0, 300, 0.9).max_sequences == cap, (engine, gpu.id)


def test_overloaded_plan_is_flagged_and_keeps_the_model_figure() -> None:
    report = _report(slo_met=False)
    report["colocated"].update(overloaded=True, max_running_sequences=412)
    lines = launch_commands(report, "sglang")
    assert "WARNING: the report says this plan misses the SLOs" in _comments(lines)
    [first, *_] = [c for c in _commands(lines) if "sglang.launch_server" in c]
    assert _flag(first, "--max-running-requests") == "412"


def test_unchunked_plan_switches_chunking_off() -> None:
    report = _report()
    report["colocated"]["chunk_tokens"] = None
    vllm = next(c for c in _commands(launch_commands(report, "vllm")) if "serve" in c)
    assert "--no-enable-chunked-prefill" in vllm and "--max-num-batched-tokens" not in vllm
    sglang = next(c for c in _commands(launch_commands(report, "sglang"))
              if "sglang.launch_server" in c)
    assert _flag(sglang, "--chunked-prefill-size") == "-1"


def test_vllm_disaggregated_nixl() -> None:
    report = _report(verdict="disaggregate")
    lines = launch_commands(report, "vllm")
    assert lines[1] == "# pd-advisor launch plan (vllm): prefill/decode disaggregation"
    commands = _commands(lines)
    serves = [c for c in commands if "serve" in c]
    prefill = [c for c in serves if "kv_producer" in _flag(c, "--kv-transfer-config")]
    decode = [c for c in serves if "kv_consumer" in _flag(c, "--kv-transfer-config")]
    assert (len(prefill), len(decode)) == (3, 1)
    for i, words in enumerate(prefill):
        env = _env(words)
        assert env["CUDA_VISIBLE_DEVICES"] == str(i)
        assert env["VLLM_NIXL_SIDE_CHANNEL_HOST"] == "localhost"
        assert env["VLLM_NIXL_SIDE_CHANNEL_PORT"] == str(5600 + i)
        assert env["UCX_NET_DEVICES"] == "all"
        assert json.loads(_flag(words, "--kv-transfer-config")) == {
            "kv_connector": "NixlConnector", "kv_role": "kv_producer"}
        assert _flag(words, "--tensor-parallel-size") == "1"
        assert _flag(words, "--max-num-batched-tokens") == "4096"  # p95 2500 -> 4096
        assert _flag(words, "--port") == str(8100 + i)
        assert int(_flag(words, "--max-num-seqs")) <= 4096  # within the token budget
    [dec] = decode
    assert _env(dec)["CUDA_VISIBLE_DEVICES"] == "3,4,5,6"
    assert _env(dec)["VLLM_NIXL_SIDE_CHANNEL_PORT"] == "5603"  # unique on the shared host
    assert _flag(dec, "--tensor-parallel-size") == "4"
    # decode batch 30 at 10 req/s per instance, goodput 20 req/s per instance, +25 %
    assert _flag(dec, "--max-num-seqs") == "75"
    # the vLLM Router in PD mode (vllm-project/router), not the toy proxy of vLLM's tests
    [router] = [c for c in commands if c[0] == "vllm-router"]
    assert "--vllm-pd-disaggregation" in router
    assert [router[i + 1] for i, w in enumerate(router) if w == "--prefill"] == [
        f"http://localhost:{8100 + i}" for i in range(3)]
    assert [router[i + 1] for i, w in enumerate(router) if w == "--decode"] == [
        "http://localhost:8200"]


def test_sglang_disaggregated_bootstrap_ports_and_router() -> None:
    commands = _commands(launch_commands(_report(verdict="disaggregate"), "sglang"))
    servers = [c for c in commands if "sglang.launch_server" in c]
    prefill = [c for c in servers if _flag(c, "--disaggregation-mode") == "prefill"]
    decode = [c for c in servers if _flag(c, "--disaggregation-mode") == "decode"]
    assert (len(prefill), len(decode)) == (3, 1)
    ports = [_flag(c, "--disaggregation-bootstrap-port") for c in prefill]
    assert ports == ["8998", "8999", "9000"]  # distinct on one host (SGLang server_arguments.md)
    for c in servers:
        assert _flag(c, "--disaggregation-transfer-backend") == "mooncake"
    assert _flag(decode[0], "--max-running-requests") == "75"
    assert _flag(decode[0], "--base-gpu-id") == "3"
    [router] = [c for c in commands if "sglang_router.launch_router" in c]
    assert "--pd-disaggregation" in router
    text = " ".join(router)
    for i in range(3):
        assert f"--prefill http://localhost:{30000 + i} {8998 + i}" in text
    assert "--decode http://localhost:31000" in text


def test_instances_larger_than_a_node() -> None:
    report = _report()
    report["colocated"].update(tensor_parallel=8, pipeline_stages=2, instances=2, gpus=32)
    lines = launch_commands(report, "vllm")
    serves = [c for c in _commands(lines) if "serve" in c]
    assert len(serves) == 4  # one process per node (vLLM's multi-node mp executor)
    assert all(_flag(c, "--pipeline-parallel-size") == "2" for c in serves)
    assert [_flag(c, "--node-rank") for c in serves] == ["0", "1", "0", "1"]
    assert [_flag(c, "--master-addr") for c in serves] == ["host-0.example"] * 2 + \
        ["host-2.example"] * 2
    assert ["--headless" in c for c in serves] == [False, True, False, True]
    sglang = [c for c in _commands(launch_commands(report, "sglang"))
              if "sglang.launch_server" in c]
    assert [_flag(c, "--node-rank") for c in sglang] == ["0", "1", "0", "1"]
    assert [_flag(c, "--dist-init-addr") for c in sglang] == ["host-0.example:29501"] * 2 + \
        ["host-2.example:29501"] * 2


def test_large_plans_write_each_node_layout_once() -> None:
    report = _report(verdict="disaggregate")
    report["inputs"]["cluster"]["gpus"] = 256
    report["disaggregated"].update(prefill_instances=100, decode_instances=20,
                                   prefill_tensor_parallel=2, decode_tensor_parallel=2)
    lines = launch_commands(report, "sglang")
    text = "\n".join(lines)
    # layouts: 25 nodes of 4 prefill, 5 nodes of 4 decode: 4 + 4 commands written
    assert text.count("sglang.launch_server") == 8
    assert "rank >= 0 && rank <= 24" in text and "rank >= 25 && rank <= 29" in text
    servers = [c for c in _commands(lines) if "sglang.launch_server" in c]
    assert len(servers) == 120
    [router] = [c for c in _commands(lines) if "sglang_router.launch_router" in c]
    assert router.count("--prefill") == 100 and router.count("--decode") == 20


def test_missing_plan_raises() -> None:
    with pytest.raises(LaunchError, match="no disaggregated plan"):
        launch_commands(_report(verdict="disaggregate", disaggregated=None), "vllm")
    with pytest.raises(LaunchError, match="no colocated plan"):
        launch_commands(_report(colocated=None), "sglang")
    with pytest.raises(ValueError, match="'trtllm' is not a valid EmitEngine"):
        launch_commands(_report(), "trtllm")


def test_model_names() -> None:
    lines = launch_commands(_report(), "vllm")
    assert "meta-llama/Llama-3.1-8B-Instruct" in lines[3] or any(
        "meta-llama/Llama-3.1-8B-Instruct" in line for line in lines)
    catalog = ProfileCatalog(env={})
    assert set(HF_REPOSITORIES) <= set(catalog.ids("models"))
    report = _report()
    report["inputs"]["model"]["id"] = "my-model"
    serves = [c for c in _commands(launch_commands(report, "vllm")) if "serve" in c]
    assert {c[c.index("serve") + 1] for c in serves} == {"my-model"}


def test_checkpoint_from_workload() -> None:
    workload = Path("/srv/deploy/workload.yaml")
    assert checkpoint_from_workload("llama-3.1-8b", workload) is None
    assert checkpoint_from_workload("models/mine.yaml", workload) is None
    assert checkpoint_from_workload("ckpt/config.json", workload) == "/srv/deploy/ckpt"
    assert checkpoint_from_workload("./ckpt", workload) == "/srv/deploy/ckpt"
    assert checkpoint_from_workload("/abs/ckpt", workload) == "/abs/ckpt"
    assert checkpoint_from_workload(None, workload) is None


def test_render_is_pure() -> None:
    report = _report(verdict="disaggregate")
    before = copy.deepcopy(report)
    text = render_launch(report, "vllm")
    assert text.endswith("\n") and report == before


# --------------------------------------------------------------------------- real reports
def _real_report(name: str) -> dict[str, Any]:
    from advisor.usecases.recommend import build_file_report

    report, _ = build_file_report(WORKLOADS / name, ProfileCatalog(env={}))
    return report


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_real_colocated_plan_numbers_come_from_the_report(engine: str) -> None:
    report = _real_report("chat-8b.yaml")
    plan = report["colocated"]
    servers = [c for c in _commands(launch_commands(report, engine, mode="colocated"))
               if "serve" in c or "sglang.launch_server" in c]
    assert len(servers) == plan["instances"]
    tp_flag, budget_flag, fraction_flag = (
        ("--tensor-parallel-size", "--max-num-batched-tokens", "--gpu-memory-utilization")
        if engine == "vllm" else ("--tp-size", "--chunked-prefill-size", "--mem-fraction-static"))
    for words in servers:
        assert _flag(words, tp_flag) == str(plan["tensor_parallel"])
        assert _flag(words, budget_flag) == str(plan["chunk_tokens"])
        assert float(_flag(words, fraction_flag)) == report["policy"]["memory_fraction"]


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_real_disaggregated_plan_numbers_come_from_the_report(engine: str) -> None:
    report = _real_report("rag-70b-2-nodes.yaml")
    plan = report["disaggregated"]
    lines = launch_commands(report, engine, mode="disaggregated")
    servers = [c for c in _commands(lines) if "serve" in c or "sglang.launch_server" in c]
    if engine == "vllm":
        roles = [json.loads(_flag(c, "--kv-transfer-config"))["kv_role"] for c in servers]
        prefill = [c for c, r in zip(servers, roles, strict=True) if r == "kv_producer"]
        decode = [c for c, r in zip(servers, roles, strict=True) if r == "kv_consumer"]
        tp = "--tensor-parallel-size"
    else:
        prefill = [c for c in servers if _flag(c, "--disaggregation-mode") == "prefill"]
        decode = [c for c in servers if _flag(c, "--disaggregation-mode") == "decode"]
        tp = "--tp-size"
    assert len(prefill) == plan["prefill_instances"]
    assert len(decode) == plan["decode_instances"]
    assert {_flag(c, tp) for c in prefill} == {str(plan["prefill_tensor_parallel"])}
    assert {_flag(c, tp) for c in decode} == {str(plan["decode_tensor_parallel"])}
    gpus_used = sum(int(_flag(c, tp)) for c in servers)
    assert gpus_used == plan["prefill_gpus"] + plan["decode_gpus"]
    assert f"prefill: {plan['prefill_instances']} x TP{plan['prefill_tensor_parallel']}" in \
        _comments(lines)


def test_sglang_launches_different_prefill_and_decode_tp() -> None:
    """SGLang >= 0.5.18 maps the KV between different attention-TP layouts itself
    (sgl-project/sglang PR #5922; the 0.5.2-only --disaggregation-decode-tp flag is gone from
    the 0.5.18 and 0.5.23 CLIs): launch TP1 prefill with TP4 decode, no warning."""
    lines = launch_commands(_report(verdict="disaggregate"), "sglang")
    assert not any("WARNING" in line for line in lines)
    servers = [c for c in _commands(lines) if "sglang.launch_server" in c]
    assert {(_flag(c, "--disaggregation-mode"), _flag(c, "--tp-size")) for c in servers} == {
        ("prefill", "1"), ("decode", "4")}
    assert not any("--disaggregation-decode-tp" in c for c in servers)


def test_deployment_pins_replace_the_computed_flags() -> None:
    """deployment.max_num_seqs / max_model_len / gpu_memory_utilization (the workload format
    gets them in #16) replace the plan's numbers, in one place; a pin that fails the memory
    check is named in a WARNING."""
    import dataclasses

    from advisor.usecases.launch import LaunchOverrides

    report = _report()
    memory = dataclasses.replace(_memory(report, "vllm"), overrides=LaunchOverrides(
        max_num_seqs=64, max_model_len=8192, gpu_memory_utilization=0.8))
    lines = render.launch_commands(plan_launch(report, "vllm", memory))
    serves = [c for c in _commands(lines) if "serve" in c]
    assert {(_flag(c, "--max-num-seqs"), _flag(c, "--max-model-len"),
             _flag(c, "--gpu-memory-utilization")) for c in serves} == {("64", "8192", "0.8")}
    assert "as the workload's deployment.max_model_len pins it" in _comments(lines)
    assert "WARNING" not in _comments(lines)
    too_long = dataclasses.replace(memory, overrides=LaunchOverrides(max_model_len=10_000_000))
    text = _comments(render.launch_commands(plan_launch(report, "vllm", too_long)))
    assert "WARNING: colocated instances (TP2) fail the start-up memory check" in text


def test_another_engines_plan_says_so() -> None:
    """Issue #32: `--emit vllm` on an `engine: trtllm` workload wrote vLLM flags sized for
    TensorRT-LLM without a word; the script now says whose plan it is."""
    report = _report()
    report["inputs"]["engine"] = "trtllm"
    text = _comments(launch_commands(report, "vllm"))
    assert "NOTE: The workload runs trtllm; these are vllm flags." in text
    assert "NOTE: The workload runs" not in _comments(launch_commands(_report(), "vllm"))


@pytest.mark.parametrize(("router", "colocated", "prefill", "decode"), [
    # the model's policy -> the vLLM Router's: colocated pool of 4, prefill 3, decode 1
    ("least-loaded", "power_of_two", "cache_aware", "round_robin"),
    ("round-robin", "round_robin", "round_robin", "round_robin"),
    ("random", "random", "random", "random"),
    ("power-of-two", "power_of_two", "power_of_two", "round_robin"),
])
def test_the_router_runs_the_policy_the_model_evaluated(router: str, colocated: str,
                                                        prefill: str, decode: str) -> None:
    """#27 / #32: the emitted router runs the workload's ``operations.router`` (the report's
    ``inputs.router``), its closest policy where the router has no such one (said in a
    NOTE), round_robin on a one-worker stage (power_of_two needs two)."""
    report = _report()
    report["inputs"]["router"] = router
    lines = launch_commands(report, "vllm")
    [r] = [c for c in _commands(lines) if c[0] == "vllm-router"]
    assert _flag(r, "--policy") == colocated
    disagg = launch_commands(report, "vllm", mode="disaggregated")
    [r] = [c for c in _commands(disagg) if c[0] == "vllm-router"]
    assert (_flag(r, "--prefill-policy"), _flag(r, "--decode-policy")) == (prefill, decode)
    note = "NOTE: Router: the model evaluated least-loaded dispatch"
    assert (note in _comments(lines)) == (router == "least-loaded")
    if router != "least-loaded":
        assert "NOTE: Router" not in _comments(lines) + _comments(disagg)
