"""``--emit dynamo | lws | kserve | llm-d`` (issue #32, items 2 and 3).

Every emitter × a dense colocated plan, a disaggregated plan (an instance over two nodes
included) and an expert-parallel plan: each emitted document validates against the upstream
schema of the version it targets (the shared test data, ``shared_path("k8s", ...)``, read in
place; defaults filled in as the API server does, no undeclared field), and reading the
manifest back (:mod:`advisor.loading.manifests`) gives the same plan: pools, replicas, GPUs
per replica, TP/EP degree, token budget, running sequences, maximum length, memory fraction,
engine, model and GPU type. The flags are the launch script's (one table): checked on the
real prefill-heavy example with the start-up memory check.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor.core.memory import launch_memory_problem
from advisor.loading.catalog import ProfileCatalog
from advisor.loading.manifest_plan import gpu_profile_for_label
from advisor.loading.manifests import ManifestRef, read_manifest
from advisor.render import k8s_operators as ko
from advisor.render.engine_flags import server_flags
from advisor.render.ep_flags import per_rank
from advisor.render.formats import EmitEngine
from advisor.render.k8s_lws import render_lws
from advisor.render.launch_plan import LaunchPlan, Pool
from advisor.usecases.launch import LaunchMemory, place
from tests.ecosystem.k8s_schemas import LLMD_VALUES, problems

ROOT = Path(__file__).resolve().parents[2]


def _plan(engine: EmitEngine, pools: tuple[Pool, ...], checkpoint: str, gpu: str = "h100-sxm",
          fp8: bool = False) -> LaunchPlan:
    slots = tuple(place([(p.role, p.instances, p.gpus_per_instance) for p in pools], 8))
    return LaunchPlan(engine=engine, mode="colocated" if pools[0].role == "colocated"
                      else "disaggregated", checkpoint=checkpoint, gpu=gpu, gpus_per_node=8,
                      memory_fraction=0.9, max_model_len=16384, max_model_len_note="test",
                      fp8=fp8, pools=pools, slots=slots,
                      nodes=len({n for s in slots for n in s.nodes}), kv_link="ib-ndr-400",
                      slo_met=True)


PLANS: dict[str, Callable[[EmitEngine], LaunchPlan]] = {
    "dense": lambda e: _plan(e, (Pool(role="colocated", instances=4, tensor_parallel=2,
                                      pipeline_stages=1, token_budget=2048,
                                      running_sequences=256),),
                             "meta-llama/Llama-3.1-8B-Instruct"),
    "disaggregated": lambda e: _plan(e, (Pool(role="prefill", instances=3, tensor_parallel=2,
                                              pipeline_stages=1, token_budget=8192,
                                              running_sequences=64),
                                         Pool(role="decode", instances=2, tensor_parallel=16,
                                              pipeline_stages=1, token_budget=None,
                                              running_sequences=128)),
                                     "meta-llama/Llama-3.1-70B-Instruct", fp8=True),
    "ep": lambda e: _plan(e, (Pool(role="prefill", instances=1, tensor_parallel=1,
                                   pipeline_stages=1, token_budget=16384, running_sequences=512,
                                   expert_parallel=16, redundant_experts=16),
                              Pool(role="decode", instances=1, tensor_parallel=1, pipeline_stages=1,
                                   token_budget=None, running_sequences=2048, expert_parallel=16,
                                   redundant_experts=16)),
                          "deepseek-ai/DeepSeek-V3", fp8=True),
}


def _emit(kind: str, plan: LaunchPlan) -> str:
    if kind == "lws":
        return render_lws(plan)
    if kind == "dynamo":
        return ko.render_dynamo(plan)
    if kind == "kserve":
        return ko.render_kserve(plan)
    return ko.render_llmd(plan)


CASES = [(kind, engine, shape) for kind in ("dynamo", "lws", "kserve", "llm-d")
         for engine in ((EmitEngine.vllm, EmitEngine.sglang) if kind in ("dynamo", "lws")
                        else (EmitEngine.vllm,))
         for shape in PLANS]


def _ids(case: tuple[str, EmitEngine, str]) -> str:
    return f"{case[0]}-{case[1].value}-{case[2]}"


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_emitted_manifest_validates_and_reads_back_as_the_same_plan(
        case: tuple[str, EmitEngine, str], tmp_path: Path) -> None:
    kind, engine, shape = case
    plan = PLANS[shape](engine)
    text = _emit(kind, plan)
    documents = [d for d in yaml.safe_load_all(text) if d is not None]
    for doc in documents:  # item 3: upstream schemas of the versions targeted
        assert problems(doc, LLMD_VALUES if kind == "llm-d" else None) == [], doc.get("kind")
    assert text.startswith("# pd-advisor deployment")
    path = tmp_path / "deploy.yaml"
    path.write_text(text, encoding="utf-8")
    read = read_manifest(ManifestRef(path=path, display="deploy.yaml",
                                     values_kind="llm-d" if kind == "llm-d" else None))
    assert read.value("model") == plan.checkpoint
    assert read.value("engine") == engine.value
    assert gpu_profile_for_label(str(read.value("gpu_product"))) == plan.gpu
    assert sorted(p.role for p in read.pools) == sorted(p.role for p in plan.pools)
    for pool in plan.pools:
        got = read.pool(pool.role)
        assert got is not None
        ranks = pool.attention_ranks
        per = ranks if engine is EmitEngine.vllm else 1  # vLLM counts per DP rank
        expected = {
            "replicas": pool.instances, "gpus": pool.gpus_per_instance,
            "max_num_seqs": per_rank(pool.running_sequences, per),
            "max_model_len": plan.max_model_len, "gpu_memory_utilization": 0.9}
        if pool.expert_parallel > 1:
            expected["expert_parallel"] = pool.expert_parallel
        else:
            expected["tensor_parallel"] = pool.tensor_parallel
        if pool.token_budget and not (engine is EmitEngine.vllm and pool.expert_parallel > 1
                                      and pool.role == "decode"):
            expected["token_budget"] = per_rank(pool.token_budget, per)
        assert {k: got.value(k) for k in expected} == expected, (pool.role, got.facts.keys())
    assert not [g for g in read.gaps if g.what in ("GPU type", "model")]


def test_one_decode_worker_gets_a_policy_valid_for_one_worker() -> None:
    """vllm-project/router docs/cli_reference.md: a PD stage with power_of_two needs two
    workers; with one, the emitted router (script and manifests) uses round_robin."""
    for decoders, policy in ((1, "round_robin"), (2, "power_of_two")):
        plan = _plan(EmitEngine.vllm, (Pool(role="prefill", instances=3, tensor_parallel=2,
                                            pipeline_stages=1, token_budget=8192,
                                            running_sequences=64),
                                       Pool(role="decode", instances=decoders, tensor_parallel=4,
                                            pipeline_stages=1, token_budget=None,
                                            running_sequences=128)),
                     "meta-llama/Llama-3.1-8B-Instruct")
        router = next(d for d in yaml.safe_load_all(render_lws(plan))
                      if d and d.get("kind") == "Deployment")
        args = router["spec"]["template"]["spec"]["containers"][0]["args"]
        assert args[args.index("--decode-policy") + 1] == policy


def test_manifest_flags_are_the_launch_script_table() -> None:
    """Each engine container carries exactly server_flags() of its pool (one table)."""
    plan = PLANS["disaggregated"](EmitEngine.vllm)
    docs = list(yaml.safe_load_all(render_lws(plan)))
    for doc, pool in zip(docs, plan.pools, strict=False):
        tpl = doc["spec"]["leaderWorkerTemplate"]
        spec = (tpl.get("leaderTemplate") or tpl["workerTemplate"])["spec"]
        args = spec["containers"][0]["args"]
        flags = server_flags(plan, pool, gpus_per_node=min(8, pool.gpus_per_instance))
        start = args.index(flags[0])
        assert args[start:start + len(flags)] == flags


def test_hostile_checkpoint_stays_one_yaml_value(tmp_path: Path) -> None:
    """A model path with quotes, a newline and YAML syntax is one value after a round trip;
    the header comment cannot be left."""
    hostile = "/data/we ird'q\"\n- {x: y}: #z/model"
    plan = _plan(EmitEngine.vllm, (Pool(role="colocated", instances=2, tensor_parallel=2,
                                        pipeline_stages=1, token_budget=2048,
                                        running_sequences=256),), hostile)
    for kind in ("dynamo", "lws", "kserve", "llm-d"):
        text = _emit(kind, plan)
        assert all(line.startswith("#") for line in text.split("---", 1)[0].splitlines())
        docs = [d for d in yaml.safe_load_all(text) if d]
        assert hostile in yaml.safe_dump(docs) or any(
            hostile in str(v) for v in _values(docs)), kind


def _values(node: Any) -> list[Any]:
    if isinstance(node, dict):
        return [x for v in node.values() for x in _values(v)]
    if isinstance(node, list):
        return [x for v in node for x in _values(v)]
    return [node]


def test_real_plan_manifests_pass_the_start_up_memory_check(run_cli: Callable[..., Any]) -> None:
    """A real disaggregated plan (Llama 3.1 70B FP8 on 32 H100s) as LeaderWorkerSets: every
    engine container's flags pass the start-up memory check the launch script's do (every
    example's script is checked in test_launch_script.py)."""
    example = ROOT / "tests" / "data" / "k8s" / "llama70b-workload.yaml"
    text = run_cli("recommend", example, "--emit", "lws", "-f", "none", exit_code=0).stdout
    catalog = ProfileCatalog()
    from advisor.loading.resolve import load_scenario

    scenario = load_scenario(example, catalog)
    memory = LaunchMemory.from_scenario(scenario, catalog.engine("vllm"))
    checked = 0
    for doc in yaml.safe_load_all(text):
        if not doc or doc.get("kind") != "LeaderWorkerSet":
            continue
        args = doc["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0][
            "args"]

        def flag(name: str, argv: list[str] = args) -> str:
            return argv[argv.index(name) + 1]

        instance = memory.instance(int(flag("--tensor-parallel-size")), 1)
        assert launch_memory_problem(instance, float(flag("--gpu-memory-utilization")),
                                     int(flag("--max-model-len")),
                                     int(flag("--max-num-seqs"))) == ""
        checked += 1
    assert checked == 2
