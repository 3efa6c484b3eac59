"""Reading Kubernetes serving manifests (issue #32, item 1).

The upstream example manifests of the shared test data (``shared_path("k8s", "examples")``,
read in place; PROVENANCE.md there names each repository and commit) → the plan each
deploys, written here per file from reading it: pools, replicas, GPUs per replica (pods ×
GPUs each), the TP or EP degree and the limits its flags set. Files that deploy no serving
engine are located errors. Values a manifest does not give are named gaps at their line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from advisor.loading import engine_argv as ea
from advisor.loading.errors import InputError
from advisor.loading.manifest_plan import DeployedPlan, gpu_profile_for_label
from advisor.loading.manifests import ManifestRef, as_deployment, merge, read_manifest
from tests.shared_files import shared_path

DATA = Path(__file__).resolve().parents[1] / "data" / "k8s"

# file → ({role: {fact: value}}, {plan fact: value})
EXPECTED: dict[str, tuple[dict[str, dict[str, Any]], dict[str, Any]]] = {
    "dynamo/vllm/disagg.yaml": (
        {"prefill": {"replicas": 1, "gpus": 1, "tensor_parallel": 1,
                     "kv_connector": "NixlConnector"},
         "decode": {"replicas": 1, "gpus": 1, "tensor_parallel": 1}},
        {"engine": "vllm", "model": "Qwen/Qwen3-0.6B", "router_policy": "round-robin"}),
    "dynamo/sglang/disagg.yaml": (
        {"prefill": {"replicas": 1, "gpus": 1, "tensor_parallel": 1, "kv_connector": "nixl"},
         "decode": {"replicas": 1, "gpus": 1, "tensor_parallel": 1}},
        {"engine": "sglang", "model": "Qwen/Qwen3-0.6B"}),
    "dynamo/recipes/llama-3-70b/vllm/disagg-multi-node/deploy.yaml": (
        {"prefill": {"replicas": 1, "gpus": 8, "tensor_parallel": 8,
                     "gpu_memory_utilization": 0.9},
         "decode": {"replicas": 1, "gpus": 8, "tensor_parallel": 8}},
        {"engine": "vllm", "model": "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic"}),
    "dynamo/vllm/v1beta1/disagg.yaml": (
        {"prefill": {"replicas": 1, "gpus": 1, "tensor_parallel": 1},
         "decode": {"replicas": 1, "gpus": 1, "tensor_parallel": 1}},
        {"engine": "vllm", "model": "Qwen/Qwen3-0.6B"}),
    "dynamo/sglang/v1beta1/disagg-multinode.yaml": (  # nodeCount 2 x 4 GPUs, --tp-size 8
        {"prefill": {"replicas": 1, "gpus": 8, "nodes": 2, "tensor_parallel": 8,
                     "gpu_memory_utilization": 0.82},
         "decode": {"replicas": 1, "gpus": 8, "nodes": 2, "tensor_parallel": 8}},
        {"engine": "sglang"}),
    "kserve/llm-inference-service-pd-qwen2-7b-gpu.yaml": (
        {"prefill": {"replicas": 2, "gpus": 1, "tensor_parallel": 1},
         "decode": {"replicas": 1, "gpus": 1, "kv_connector": "NixlConnector"}},
        {"engine": "vllm", "model": "Qwen/Qwen2.5-7B-Instruct"}),
    "kserve/llm-inference-service-dp-ep-deepseek-r1-pd-gpu-p-deepep-ht-d-deepep-ht.yaml": (
        {"prefill": {"replicas": 1, "gpus": 16, "nodes": 2, "expert_parallel": 16,
                     "max_model_len": 4096, "gpu_memory_utilization": 0.97},
         "decode": {"replicas": 1, "gpus": 16, "expert_parallel": 16,
                    "gpu_memory_utilization": 0.99}},
        {"model": "deepseek-ai/DeepSeek-R1-0528"}),
    "kserve/inference_pd_disaggregation.yaml": (
        {"prefill": {"replicas": 2, "gpus": 1}, "decode": {"replicas": 1, "gpus": 1}},
        {"model": "RedHatAI/gpt-oss-20b"}),
    "llm-d/pd-disaggregation/disaggregatedset.yaml": (  # 2 slices x (4 prefill + 1 decode)
        {"prefill": {"replicas": 8, "gpus": 1, "tensor_parallel": 1},
         "decode": {"replicas": 2, "gpus": 4, "tensor_parallel": 4}},
        {"engine": "vllm", "model": "openai/gpt-oss-120b"}),
    "llm-d/pd-disaggregation/ms-pd/values.yaml": (
        {"prefill": {"replicas": 4, "gpus": 1, "tensor_parallel": 1, "max_model_len": 32000},
         "decode": {"replicas": 1, "gpus": 4, "tensor_parallel": 4}},
        {"model": "openai/gpt-oss-120b", "sidecar_connector": "nixlv2"}),
    "llm-d/wide-ep-lws/decode.yaml": (  # DP = LWS_GROUP_SIZE 2 x DP_SIZE_LOCAL 8
        {"decode": {"replicas": 1, "gpus": 16, "nodes": 2, "expert_parallel": 16,
                    "max_num_seqs": 256, "token_budget": 256}},
        {"model": "deepseek-ai/DeepSeek-R1-0528"}),
    "llm-d/wide-ep-lws/prefill.yaml": (
        {"prefill": {"replicas": 1, "gpus": 16, "expert_parallel": 16,
                     "gpu_memory_utilization": 0.8}}, {}),
    "llm-d/wide-ep-lws/disaggregatedset/disaggregatedset.yaml": (
        {"prefill": {"replicas": 1, "gpus": 16, "expert_parallel": 16},
         "decode": {"replicas": 1, "gpus": 16, "expert_parallel": 16, "max_num_seqs": 256}},
        {}),
    "llm-d-modelservice/values-pd.yaml": (  # the chart's defaults: TP 1, one GPU per pod
        {"prefill": {"replicas": 1, "gpus": 1, "tensor_parallel": 1},
         "decode": {"replicas": 1, "gpus": 1, "tensor_parallel": 1}},
        {"model": "facebook/opt-125m"}),
    "llm-d-modelservice/values-pd-mnnvl.yaml": (
        {"prefill": {"replicas": 1, "gpus": 1}, "decode": {"replicas": 1, "gpus": 1}}, {}),
    "llm-d-modelservice/values-heterogeneous-pd.yaml": (
        {"prefill": {"replicas": 1, "gpus": 1, "tensor_parallel": 1},
         "decode": {"replicas": 1, "gpus": 2, "tensor_parallel": 2}}, {}),
    "lws/vllm/GPU/lws.yaml": (  # Ray over a group of 2 pods x 8 GPUs, TP 8 x PP 2
        {"colocated": {"replicas": 2, "gpus": 16, "nodes": 2, "tensor_parallel": 8,
                       "pipeline_parallel": 2}},
        {"engine": "vllm", "engine_version": "0.8.5",
         "model": "meta-llama/Llama-3.1-405B-Instruct"}),
    "lws/sglang/lws.yaml": (
        {"colocated": {"replicas": 2, "gpus": 2, "nodes": 2, "tensor_parallel": 2}},
        {"engine": "sglang", "model": "meta-llama/Meta-Llama-3.1-8B-Instruct"}),
}

NOT_SERVING = {
    "kserve/llmisvc_config_pd_disagg.yaml": "no serving workload in this file",
    "kserve/config-llm-prefill-template.yaml": "no serving workload in this file",
    "lws/disaggregatedset_v1_disaggregatedset.yaml": "no container in this manifest runs",
}


def _read(rel: str, root: Path | None = None, values_kind: str | None = None) -> DeployedPlan:
    base = root or shared_path("k8s", "examples")
    return read_manifest(ManifestRef(path=base / rel, display=rel, values_kind=values_kind))


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_upstream_example_reads_as_the_expected_plan(rel: str) -> None:
    pools, facts = EXPECTED[rel]
    plan = _read(rel)
    assert sorted(p.role for p in plan.pools) == sorted(pools)
    for role, want in pools.items():
        pool = plan.pool(role)
        assert pool is not None
        assert {k: pool.value(k) for k in want} == want, role
    assert {k: plan.value(k) for k in facts} == facts
    for pool in plan.pools:  # every value says where it was read
        for fact in pool.facts.values():
            assert fact.where.path == rel and fact.where.line >= 1


@pytest.mark.parametrize("rel", sorted(NOT_SERVING))
def test_a_file_without_a_serving_engine_is_a_located_error(rel: str) -> None:
    with pytest.raises(InputError) as caught:
        _read(rel)
    [problem] = caught.value.problems
    assert problem.path == rel and problem.line >= 1 and NOT_SERVING[rel] in problem.message


def test_every_example_file_is_covered() -> None:
    root = shared_path("k8s", "examples")
    files = {str(p.relative_to(root)) for p in root.rglob("*.yaml")}
    assert files == set(EXPECTED) | set(NOT_SERVING)


def test_a_manifest_without_a_gpu_type_names_the_gap(tmp_path: Path) -> None:
    """With the nodeSelector, the GPU type is read at its line; without it, the gap is named
    at the first pool, and the workload's cluster.gpu is said to be assumed."""
    plan = _read("llama70b-dgd.yaml", DATA)
    product = plan.facts["gpu_product"]
    assert gpu_profile_for_label(str(product.value)) == "h100-sxm"
    assert product.where.line == 26 and "nodeSelector" in product.source
    assert not [g for g in plan.gaps if g.what == "GPU type"]
    text = (DATA / "llama70b-dgd.yaml").read_text(encoding="utf-8")
    bare = "\n".join(line for line in text.splitlines()
                     if "nodeSelector" not in line and "gpu.product" not in line)
    (tmp_path / "bare.yaml").write_text(bare + "\n", encoding="utf-8")
    plan = _read("bare.yaml", tmp_path)
    [gap] = [g for g in plan.gaps if g.what == "GPU type"]
    assert gap.where.path == "bare.yaml" and gap.where.line == 22  # prefill replicas
    assert "cluster.gpu is assumed" in gap.why


def test_engine_version_comes_from_the_image_tag_not_a_platform_release() -> None:
    assert _read("lws/vllm/GPU/lws.yaml").value("engine_version") == "0.8.5"
    plan = _read("dynamo/recipes/llama-3-70b/vllm/disagg-multi-node/deploy.yaml")
    assert plan.value("engine_version") is None
    [gap] = [g for g in plan.gaps if g.what == "engine version"]
    assert "Dynamo release" in gap.why and gap.where.line == 49


def test_llmd_prefill_and_decode_files_make_one_deployment() -> None:
    """The wide-EP guide's two LeaderWorkerSets, merged (deployment.from: [a, b]); alone, a
    decode pool is a located error naming what is missing."""
    decode = _read("llm-d/wide-ep-lws/decode.yaml")
    with pytest.raises(InputError, match="without a prefill pool"):
        as_deployment(decode)
    deployment = as_deployment(merge([_read("llm-d/wide-ep-lws/prefill.yaml"), decode]))
    assert deployment.data == {"mode": "disaggregated", "prefill_gpus": 16,
                               "prefill_expert_parallel": 16, "decode_gpus": 16,
                               "decode_expert_parallel": 16, "max_num_seqs": 256,
                               "gpu_memory_utilization": 0.8}
    assert deployment.where["deployment.decode_gpus"].path == "llm-d/wide-ep-lws/decode.yaml"


def test_deployment_keys_point_at_the_manifest_lines() -> None:
    deployment = as_deployment(_read("llama70b-dgd.yaml", DATA))
    assert deployment.data == {"mode": "disaggregated", "prefill_gpus": 24,
                               "prefill_tensor_parallel": 2, "decode_gpus": 8,
                               "decode_tensor_parallel": 2, "max_model_len": 17000,
                               "router": "round-robin"}
    assert deployment.where["deployment.router"].line == 19  # --router-mode round-robin
    assert deployment.where["deployment.prefill_gpus"].line == 22  # prefill replicas:
    assert deployment.where["deployment.decode_gpus"].line == 49


def test_unknown_kind_and_malformed_yaml_are_located(tmp_path: Path) -> None:
    (tmp_path / "odd.yaml").write_text("apiVersion: v1\nkind: Service\n---\n"
                                       "apiVersion: example.com/v1\nkind: Widget\n")
    with pytest.raises(InputError) as caught:
        _read("odd.yaml", tmp_path)
    [problem] = caught.value.problems
    assert (problem.line, problem.col, problem.key) == (5, 7, "kind")
    assert "unknown kind 'Widget'" in problem.message
    (tmp_path / "bad.yaml").write_text("apiVersion: v1\nkind: [Deployment\n")
    with pytest.raises(InputError) as caught:
        _read("bad.yaml", tmp_path)
    [problem] = caught.value.problems
    assert problem.format().startswith("bad.yaml:3:1: error: invalid YAML")


def test_helm_values_need_the_hint_when_their_keys_do_not_tell(tmp_path: Path) -> None:
    (tmp_path / "values.yaml").write_text(
        "decode:\n  replicas: 2\n  parallelism: {tensor: 2}\n"
        "  containers: [{name: vllm, image: 'vllm/vllm-openai:v0.11.0', modelCommand: "
        "vllmServe}]\n")
    with pytest.raises(InputError, match="--values-kind llm-d"):
        _read("values.yaml", tmp_path)
    plan = _read("values.yaml", tmp_path, values_kind="llm-d")
    [pool] = plan.pools
    assert (pool.role, pool.value("replicas"), pool.value("gpus")) == ("colocated", 2, 2)
    assert plan.value("engine_version") == "0.11.0"


def test_shell_scripts_are_read_as_the_shell_reads_them() -> None:
    script = ("# comment\nSTART=$(( ${IDX:-0} * LOCAL ))\nexec vllm serve m \\\n"
              "  --tensor-parallel-size $TP --kv_transfer_config '{\"a\":\n 1}' --x=$((N*2))")
    commands = ea.script_commands(script, 10, 5, literal=True)
    inv = ea.find_invocation(commands)
    assert inv is not None and inv.program == "vllm"
    assert inv.assignments == (("START", "$(( ${IDX:-0} * LOCAL ))"),)
    _, flags = ea.parse_flags(inv)
    assert [(f.name, f.value, f.at.line) for f in flags] == [
        ("--tensor-parallel-size", "$TP", 14), ("--kv-transfer-config", '{"a":\n 1}', 14),
        ("--x", "$((N*2))", 15)]
    assert ea.expand("$((N*2))", {"N": "8"}) == "16"
    assert ea.expand("$TP", {"TP": None}) is None  # set from a secret: unknown, not guessed
    assert ea.expand("${IDX:-0}", {}) == "0"


def test_limits_a_command_line_leaves_to_the_engine_are_named() -> None:
    """Upstream's minimal Dynamo example sets no limits: each pool says which flags are left
    to the engine's defaults, at its command line, and a P/D pool without a KV connector says
    so too — nothing is filled in silently."""
    plan = _read("dynamo/vllm/disagg.yaml")
    named = {g.what: g for g in plan.gaps}
    decode = named["VllmDecodeWorker engine limits"]
    assert decode.where.line == 33  # python3 -m dynamo.vllm
    assert "--max-num-seqs, --max-model-len, --gpu-memory-utilization not set" in decode.why
    assert "--max-num-batched-tokens" in named["VllmPrefillWorker engine limits"].why
    assert "VllmDecodeWorker KV connector" in named
    assert "VllmPrefillWorker KV connector" not in named  # it gives --kv-transfer-config



@pytest.mark.parametrize(("mode", "policy", "note"), [
    ("round-robin", "round-robin", None),
    ("random", "random", None),
    ("kv", "least-loaded", "prefix-affinity"),
    ("direct", None, "client pick"),
])
def test_the_routers_policy_is_the_deployments_router(tmp_path: Path, mode: str,
                                                      policy: str | None,
                                                      note: str | None) -> None:
    """#32 / #27: the router policy a manifest runs is the one the gate evaluates
    (``deployment.router``, located at the router's flag); a policy the model approximates or
    cannot represent is named as a gap at that line (and the workload's router stays)."""
    text = (DATA / "llama70b-dgd.yaml").read_text(encoding="utf-8")
    assert "args: [--router-mode, round-robin]" in text
    (tmp_path / "m.yaml").write_text(text.replace("--router-mode, round-robin",
                                                  f"--router-mode, {mode}"), encoding="utf-8")
    deployment = as_deployment(_read("m.yaml", tmp_path))
    assert deployment.data.get("router") == policy
    gaps = [g for g in deployment.notes if g.what == "router policy"]
    if note is None:
        assert not gaps
    else:
        [gap] = gaps
        assert note in gap.why and gap.where.line == 19
    if policy is not None:
        assert deployment.where["deployment.router"].line == 19
