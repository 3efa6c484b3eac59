"""The ``--emit`` launch script starts (issue #18, item 1).

Each script is executed by bash with stub ``vllm``/``python``/``vllm-router``/``sglang``
functions that record their argv, an empty ``PATH`` and a ``command_not_found_handle`` that
records anything else the script tries to run. What bash passed to the stubs is then checked:

* every server instance passes the start-up memory check
  (``advisor.core.memory.launch_memory_problem``: weights plus the KV of one
  ``--max-model-len`` sequence within ``--gpu-memory-utilization``, logits buffers sized by
  ``--max-num-seqs``) with the exact flags emitted, for every example and both engines —
  expert-parallel servers (the DeepSeek-V3 example) as the EP instance their flags describe
  (experts over ``--data-parallel-size``/``--ep-size`` GPUs, a sequence's KV on one
  DP-attention rank, the running-sequence cap per rank, DeepEP buffers);
* a model path and profile fields with spaces, quotes, ``$(...)``, backticks and a newline
  reach the stubs intact, and nothing else runs.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from advisor.core.expert_parallel import ExpertLayout
from advisor.core.memory import build_instance, launch_memory_problem
from advisor.loading.catalog import ProfileCatalog
from advisor.loading.resolve import load_scenario
from advisor.render.formats import EmitEngine
from advisor.render.launch import LaunchPlan, Pool, render_launch
from advisor.usecases.launch import place
from tests.ecosystem.launch_harness import (
    HOSTILE,
    emitted_servers,
    flag,
    run_script,
    script_nodes,
)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
# --------------------------------------------------------------------------- memory check
@pytest.mark.parametrize("engine", ["vllm", "sglang"])
@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_every_emitted_instance_passes_the_memory_check(
        example: Path, engine: str, run_cli: Callable[..., Any], tmp_path: Path) -> None:
    script = run_cli("recommend", example, "--emit", engine, "-f", "none", exit_code=0).stdout
    servers, routers = emitted_servers(script, tmp_path)
    assert servers
    catalog = ProfileCatalog()
    scenario = load_scenario(example, catalog)
    spec = catalog.engine(engine)
    cl = scenario.cluster
    for argv in servers:
        ep, ranks, redundant = 1, 1, 0
        if engine == "vllm":
            assert argv[:2] == ["vllm", "serve"]
            tp = int(flag(argv, "--tensor-parallel-size") or 0)
            if "--enable-expert-parallel" in argv:  # EP = TP x DP, --max-num-seqs per rank
                ranks = int(flag(argv, "--data-parallel-size") or 0)
                ep = tp * ranks
                redundant = json.loads(flag(argv, "--eplb-config") or "{}").get(
                    "num_redundant_experts", 0)
            pp = int(flag(argv, "--pipeline-parallel-size") or 1)
            length = int(flag(argv, "--max-model-len") or 0)
            seqs = int(flag(argv, "--max-num-seqs") or 0)
            fraction = float(flag(argv, "--gpu-memory-utilization") or 0)
            budget = flag(argv, "--max-num-batched-tokens")
            if budget is not None:  # vLLM refuses max_num_seqs above the token budget
                assert int(budget) >= seqs
        else:
            assert argv[:3] == ["python", "-m", "sglang.launch_server"]
            tp = int(flag(argv, "--tp-size") or 0)
            pp = int(flag(argv, "--pp-size") or 1)
            length = int(flag(argv, "--context-length") or 0)
            seqs = int(flag(argv, "--max-running-requests") or 0)
            fraction = float(flag(argv, "--mem-fraction-static") or 0)
            if flag(argv, "--ep-size"):  # SGLang divides the cap by the attention-DP size
                ep = int(flag(argv, "--ep-size") or 0)
                ranks = int(flag(argv, "--attn-dp-size") or 1)
                tp, seqs = ep // ranks, seqs // ranks
                redundant = int(flag(argv, "--ep-num-redundant-experts") or 0)
        assert tp and length and seqs and fraction, argv
        assert flag(argv, "--kv-cache-dtype") == (
            ("fp8" if engine == "vllm" else "fp8_e4m3") if scenario.precision == "fp8"
            else "auto")
        layout = None
        if ep > 1:
            assert scenario.model.moe is not None
            experts = scenario.model.moe.num_experts + redundant
            assert experts % ep == 0, argv
            layout = ExpertLayout(expert_parallel=ep, attention_tensor_parallel=tp,
                                  redundant_experts=redundant, experts_per_gpu=experts // ep,
                                  gpus_per_node=cl.gpus_per_node)
        instance = build_instance(scenario.model, cl.gpu, scenario.precision, spec, tp, pp,
                                  cl.intra_node, cl.inter_node, layout)
        assert launch_memory_problem(instance, fraction, length, seqs) == "", argv
    if routers:
        [router] = routers
        assert router[0] in ("vllm-router", "python")


def test_the_issue_plan_runs_on_a_hosts_file(run_cli: Callable[..., Any],
                                             tmp_path: Path) -> None:
    """prefill-heavy-70b-ib: 128 nodes; each layout written once, the router's URLs come from
    the hosts file (not inline), the vLLM Router rather than the toy proxy."""
    example = ROOT / "examples" / "prefill-heavy-70b-ib.yaml"
    script = run_cli("recommend", example, "--emit", "vllm", "-f", "none", exit_code=0).stdout
    assert len(script.splitlines()) < 120
    assert "toy_proxy_server" not in script and "host-" not in script
    assert script.count("vllm serve") <= 2 * 8
    servers, [router] = emitted_servers(script, tmp_path)
    assert router[:2] == ["vllm-router", "--vllm-pd-disaggregation"]
    prefill = [router[i + 1] for i, w in enumerate(router) if w == "--prefill"]
    decode = [router[i + 1] for i, w in enumerate(router) if w == "--decode"]
    report = run_cli("recommend", example, "-f", "json", exit_code=0).stdout
    plan = json.loads(report)["disaggregated"]
    assert len(prefill) == plan["prefill_instances"] and len(decode) == plan["decode_instances"]
    assert prefill[0] == "http://host-0.example:8100"
    # SGLang: different prefill/decode TP is supported; the router gets the bootstrap ports
    script = run_cli("recommend", example, "--emit", "sglang", "-f", "none", exit_code=0).stdout
    assert "WARNING" not in script
    servers, [router] = emitted_servers(script, tmp_path)
    tps = {(flag(s, "--disaggregation-mode"), flag(s, "--tp-size")) for s in servers}
    assert tps == {("prefill", str(plan["prefill_tensor_parallel"])),
                   ("decode", str(plan["decode_tensor_parallel"]))}
    first = router.index("--prefill")
    assert router[first + 1: first + 3] == ["http://host-0.example:30000", "8998"]


# --------------------------------------------------------------------------- shell safety
def _plan(engine: EmitEngine, mode: str, spans: bool = False) -> LaunchPlan:
    hostile = "gpu $(stub_pwned) `stub_pwned` 'q\" \n# x"
    if mode == "colocated":
        pools: tuple[Pool, ...] = (Pool(role="colocated", instances=3,
                                        tensor_parallel=8 if spans else 4,
                                        pipeline_stages=2 if spans else 1,
                                         token_budget=2048, running_sequences=64),)
    else:
        pools = (Pool(role="prefill", instances=3, tensor_parallel=2, pipeline_stages=1,
                      token_budget=8192, running_sequences=256),
                 Pool(role="decode", instances=2, tensor_parallel=4, pipeline_stages=1,
                      token_budget=None, running_sequences=128))
    slots = tuple(place([(p.role, p.instances, p.gpus_per_instance) for p in pools], 8))
    return LaunchPlan(engine=engine, mode=mode, checkpoint=HOSTILE, gpu=hostile,
                      gpus_per_node=8, memory_fraction=0.9, max_model_len=4096,
                      max_model_len_note=f"note {hostile}", fp8=False, pools=pools,
                      slots=slots, nodes=len({n for s in slots for n in s.nodes}),
                      kv_link=hostile, slo_met=False, warnings=(f"pool {hostile}",))


@pytest.mark.parametrize("engine", list(EmitEngine))
@pytest.mark.parametrize(("mode", "spans"), [("colocated", False), ("colocated", True),
                                              ("disaggregated", False)])
def test_hostile_values_pass_through_intact(engine: EmitEngine, mode: str, spans: bool,
                                            tmp_path: Path) -> None:
    script = render_launch(_plan(engine, mode, spans))
    checked = subprocess.run(["/bin/bash", "-n"], input=script, text=True, capture_output=True)
    assert checked.returncode == 0, checked.stderr
    # every line of the comments stays a comment
    for line in script.splitlines():
        if "stub_pwned" in line and "HOSTILE" not in line:
            assert line.lstrip().startswith("#") or "/data/we" in line, line
    servers, routers = emitted_servers(script, tmp_path)
    assert servers
    for argv in servers:
        model = argv[2] if argv[0] == "vllm" else flag(argv, "--model-path")
        assert model == HOSTILE
    if routers:
        assert all(w.startswith("http://host-") for w in routers[0]
                   if w.startswith("http"))


def test_kv_transfer_config_is_single_quoted_json() -> None:
    script = render_launch(_plan(EmitEngine.vllm, "disaggregated"))
    assert ("--kv-transfer-config '{\"kv_connector\":\"NixlConnector\","
            "\"kv_role\":\"kv_producer\"}'") in script


def test_spanning_instances_get_node_rank_and_head(tmp_path: Path) -> None:
    script = render_launch(_plan(EmitEngine.vllm, "colocated", spans=True))
    hosts = script_nodes(script)
    head = run_script(script, tmp_path, [], hosts, node_rank=0)
    other = run_script(script, tmp_path, [], hosts, node_rank=1)
    assert [flag(a, "--node-rank") for a in head + other] == ["0", "1"]
    assert flag(other[0], "--master-addr") == "host-0.example"
    assert "--headless" in other[0] and "--headless" not in head[0]
    [router] = run_script(script, tmp_path, ["router"], hosts)
    assert [w for w in router if w.startswith("http")] == [
        "http://host-0.example:8100", "http://host-2.example:8100",
        "http://host-4.example:8100"]


@pytest.mark.parametrize("engine", list(EmitEngine))
def test_hostile_values_in_an_expert_parallel_plan(engine: EmitEngine, tmp_path: Path) -> None:
    """An EP plan (#17: two EP16 instances with DP attention over 2 nodes each, 32 redundant
    experts) in the per-node script: bash accepts it, the hostile model path arrives intact on
    every node, the JSON EPLB config arrives as one word, vLLM's DP start rank comes from the
    node rank."""
    pools = (Pool(role="colocated", instances=2, tensor_parallel=1, pipeline_stages=1,
                  token_budget=8192, running_sequences=512, expert_parallel=16,
                  redundant_experts=32),)
    slots = tuple(place([(p.role, p.instances, p.gpus_per_instance) for p in pools], 8))
    plan = LaunchPlan(engine=engine, mode="colocated", checkpoint=HOSTILE, gpu="h100-sxm",
                      gpus_per_node=8, memory_fraction=0.9, max_model_len=4096,
                      max_model_len_note="note", fp8=False, pools=pools, slots=slots,
                      nodes=len({n for s in slots for n in s.nodes}), kv_link=None,
                      slo_met=True)
    script = render_launch(plan)
    checked = subprocess.run(["/bin/bash", "-n"], input=script, text=True, capture_output=True)
    assert checked.returncode == 0, checked.stderr
    argvs = [run_script(script, tmp_path, [], 4, node_rank=rank)[0] for rank in range(4)]
    for rank, argv in enumerate(argvs):
        model = argv[2] if argv[0] == "vllm" else flag(argv, "--model-path")
        assert model == HOSTILE
        if engine is EmitEngine.vllm:
            assert flag(argv, "--eplb-config") == '{"num_redundant_experts":32}'
            assert flag(argv, "--data-parallel-address") == f"host-{rank - rank % 2}.example"
            assert flag(argv, "--max-num-seqs") == "32"  # 512 running / 16 DP ranks
            if rank % 2:
                assert flag(argv, "--data-parallel-start-rank") == "8" and "--headless" in argv
            else:
                assert flag(argv, "--api-server-count") == "8"
        else:
            assert flag(argv, "--node-rank") == str(rank % 2)
            assert flag(argv, "--ep-num-redundant-experts") == "32"
            assert flag(argv, "--max-running-requests") == "512"


def test_script_refuses_a_short_hosts_file(tmp_path: Path) -> None:
    script = render_launch(_plan(EmitEngine.sglang, "colocated", spans=True))
    (tmp_path / "hosts.txt").write_text("only-one\n")
    result = subprocess.run(["/bin/bash", "-c", script, "launch.sh"],
                            env={**os.environ, "HOSTS_FILE": str(tmp_path / "hosts.txt"),
                                 "NODE_RANK": "0"}, capture_output=True, text=True)
    assert result.returncode == 2 and "hosts needed" in result.stderr


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_hostile_checkpoint_folder_through_the_cli(engine: str, run_cli: Callable[..., Any],
                                                   tmp_path: Path) -> None:
    """A workload whose ``model:`` names a config.json in a folder whose name has spaces,
    quotes, ``$(...)``, backticks and a newline: the servers get that folder, intact."""
    folder = tmp_path / "ck pt'q\"$(stub_pwned)`stub_pwned`\nx"
    folder.mkdir()
    source = ROOT / "tests" / "data" / "ecosystem" / "hf" / "llama-3.1-8b" / "config.json"
    (folder / "config.json").write_text(source.read_text())
    workload = tmp_path / "w.yaml"
    model = json.dumps(str(folder / "config.json"))  # a YAML double-quoted scalar
    workload.write_text((ROOT / "tests" / "data" / "ecosystem" / "workloads" / "chat-8b.yaml")
                        .read_text().replace("model: llama-3.1-8b", f"model: {model}"))
    script = run_cli("recommend", workload, "--emit", engine, "-f", "none",
                     exit_code=0).stdout
    checked = subprocess.run(["/bin/bash", "-n"], input=script, text=True, capture_output=True)
    assert checked.returncode == 0, checked.stderr
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    servers, _ = emitted_servers(script, run_dir)
    assert servers
    for argv in servers:
        served = argv[2] if argv[0] == "vllm" else flag(argv, "--model-path")
        assert served == str(folder)
