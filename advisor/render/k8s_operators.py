"""``--emit dynamo | kserve | llm-d``: the plan as the custom resource (or Helm values) of
an LLM-serving operator, with the upstream field names of the versions named here.

* **NVIDIA Dynamo** ``DynamoGraphDeployment`` ``nvidia.com/v1beta1`` (ai-dynamo/dynamo
  ``deploy/operator/config/crd/bases/nvidia.com_dynamographdeployments.yaml`` at cdf9267d;
  the served version upstream examples now use): ``spec.backendFramework``, a
  ``Frontend`` component (``python3 -m dynamo.frontend``; its ``--router-mode`` is the
  router), and one component per pool (``type: prefill|decode``, or ``worker`` for a
  colocated pool) whose main container runs ``python3 -m dynamo.vllm|dynamo.sglang`` with
  the engine's own flags; an instance over several nodes is ``multinode.nodeCount`` pods of
  the node's GPUs ("Total GPUs used is nodeCount * container GPU request", the CRD). Images:
  ``nvcr.io/nvidia/ai-dynamo/<engine>-runtime:1.3.0`` (Dynamo's own recipes at cdf9267d).
* **KServe** ``LLMInferenceService`` ``serving.kserve.io/v1alpha2`` (kserve/kserve
  ``config/crd/.../serving.kserve.io_llminferenceservices.yaml`` at aaac4e29): the decode
  (or colocated) pool is ``spec.replicas``/``spec.template``, the prefill pool
  ``spec.prefill``; ``parallelism`` carries TP/PP/DP/EP (KServe's presets pass them to
  ``vllm serve``), the other engine flags go in the main container's ``args`` (the presets
  append them); ``spec.router`` asks for KServe's scheduler (the llm-d inference scheduler).
  KServe's presets run vLLM.
* **llm-d** ``llm-d-modelservice`` Helm values (llm-d-incubation/llm-d-modelservice chart
  v0.4.12 at 3051935e; ``values.schema.json``): ``modelArtifacts``, ``decode``/``prefill``
  with ``replicas``, ``parallelism`` (the chart requests ``dataLocal x tensor`` GPUs per pod
  and passes TP/DP to ``vllm serve``), ``containers[].args`` with the other engine flags,
  ``acceleratorTypes`` for the GPU nodes, ``routing.proxy`` (the P/D sidecar). llm-d serves
  with vLLM.
"""

from __future__ import annotations

from typing import Any, cast

from advisor.core.router_names import Stage, router_note, router_policy
from advisor.render import k8s_common as kc
from advisor.render.engine_flags import server_flags
from advisor.render.formats import EmitEngine
from advisor.render.launch_plan import LaunchPlan, Pool

DYNAMO_API = "nvidia.com/v1beta1"
DYNAMO_RELEASE = "1.3.0"
KSERVE_API = "serving.kserve.io/v1alpha2"
LLMD_CHART = "llm-d-modelservice chart v0.4.12"
LLMD_VLLM_PORT = 8200
"""Where the chart starts vLLM on a decode pod behind the routing sidecar
(``routing.proxy.targetPort``'s default)."""


# --------------------------------------------------------------------------- Dynamo
def dynamo_router_mode(plan: LaunchPlan) -> str:
    """The frontend's ``--router-mode`` for the policy the model evaluated: the decode
    workers' (or the colocated ones'), which the frontend routes to."""
    workers = next(p for p in plan.pools if p.role in ("decode", "colocated"))
    return router_policy("dynamo", plan.router, cast(Stage, workers.role), workers.instances)


def render_dynamo(plan: LaunchPlan) -> str:
    """The ``DynamoGraphDeployment`` of the plan."""
    engine = plan.engine.value
    runtime = f"nvcr.io/nvidia/ai-dynamo/{engine}-runtime:{DYNAMO_RELEASE}"
    mode = dynamo_router_mode(plan)
    components: list[dict[str, Any]] = [{
        "name": "Frontend", "type": "frontend", "replicas": 1,
        "podTemplate": {"spec": {"containers": [{
            "name": "main", "image": runtime, "command": ["python3", "-m", "dynamo.frontend"],
            "args": ["--router-mode", mode, "--http-port", str(kc.PORT)]}]}}}]
    for pool in plan.pools:
        shape = kc.pod_shape(plan, pool)
        container = {
            "name": "main", "image": runtime,
            "command": ["python3", "-m", f"dynamo.{engine}"],
            "args": kc.engine_command(plan, f"dynamo.{engine}")[3:]
            + (["--disaggregation-mode", pool.role]
               if pool.role != "colocated" and plan.engine is EmitEngine.vllm else [])
            + server_flags(plan, pool, gpus_per_node=shape.gpus),
            "env": kc.env(plan, pool), "resources": kc.resources(shape.gpus)}
        spec: dict[str, Any] = {"containers": [container]}
        if kc.node_selector(plan):
            spec["nodeSelector"] = kc.node_selector(plan)
        component: dict[str, Any] = {
            "name": pool.role, "type": "worker" if pool.role == "colocated" else pool.role,
            "replicas": pool.instances}
        if shape.pods > 1:
            component["multinode"] = {"nodeCount": shape.pods}
        component["podTemplate"] = {"metadata": {"labels": kc.labels(plan, pool)},
                                    "spec": spec}
        components.append(component)
    doc = {"apiVersion": DYNAMO_API, "kind": "DynamoGraphDeployment",
           "metadata": {"name": kc.base_name(plan)},
           "spec": {"backendFramework": engine, "components": components}}
    notes = [f"Router: the Dynamo frontend, --router-mode {mode} (the model evaluated "
             f"{plan.router} dispatch)."]
    differs = router_note("dynamo", plan.router, {"decode": mode})
    if differs is not None and plan.router != "least-loaded":
        notes.append(differs)
    return kc.dump([doc], kc.header(plan, f"DynamoGraphDeployment {DYNAMO_API} (ai-dynamo/"
                                          f"dynamo cdf9267d), Dynamo {DYNAMO_RELEASE} "
                                          "runtime images", notes))


# --------------------------------------------------------------------------- KServe
def _parallelism(plan: LaunchPlan, pool: Pool) -> dict[str, Any]:
    shape = kc.pod_shape(plan, pool)
    if pool.expert_parallel > 1:
        return {"tensor": pool.tensor_parallel, "data": pool.attention_ranks,
                "dataLocal": max(1, pool.attention_ranks // shape.pods), "expert": True}
    out: dict[str, Any] = {"tensor": pool.tensor_parallel}
    if pool.pipeline_stages > 1:
        out["pipeline"] = pool.pipeline_stages
    return out


_PARALLEL_FLAGS = {"--tensor-parallel-size", "--pipeline-parallel-size",
                   "--data-parallel-size", "--data-parallel-size-local"}
"""Flags KServe's preset and llm-d's chart write from ``parallelism`` themselves."""


def _rest(words: list[str], drop: set[str]) -> list[str]:
    """``words`` without the options in ``drop`` (and their values)."""
    out: list[str] = []
    skip = False
    for i, word in enumerate(words):
        if skip:
            skip = False
            continue
        if word in drop:
            skip = i + 1 < len(words) and not words[i + 1].startswith("--")
            continue
        if word == "--enable-expert-parallel" and "--enable-expert-parallel" in drop:
            continue
        out.append(word)
    return out


def render_kserve(plan: LaunchPlan) -> str:
    """The ``LLMInferenceService`` of the plan."""
    pools = {p.role: p for p in plan.pools}
    main = pools.get("decode") or pools["colocated"]
    spec: dict[str, Any] = {"model": {"uri": f"hf://{plan.checkpoint}",
                                      "name": plan.checkpoint}}
    spec.update(_kserve_pool(plan, main))
    spec["router"] = {"route": {}, "gateway": {}, "scheduler": {}}
    if "prefill" in pools:
        spec["prefill"] = _kserve_pool(plan, pools["prefill"])
    doc = {"apiVersion": KSERVE_API, "kind": "LLMInferenceService",
           "metadata": {"name": kc.base_name(plan)}, "spec": spec}
    notes = ["Router: KServe's scheduler (the llm-d inference scheduler); its endpoint-picker "
             "configuration is KServe's, not set here."]
    return kc.dump([doc], kc.header(plan, f"LLMInferenceService {KSERVE_API} (kserve/kserve "
                                          "aaac4e29)", notes))


def _kserve_pool(plan: LaunchPlan, pool: Pool) -> dict[str, Any]:
    shape = kc.pod_shape(plan, pool)
    flags = _rest(server_flags(plan, pool, gpus_per_node=shape.gpus),
                  _PARALLEL_FLAGS | {"--enable-expert-parallel"})
    container = {"name": "main", "args": flags, "env": kc.env(plan, pool)[1:],
                 "resources": kc.resources(shape.gpus)}
    template: dict[str, Any] = {"containers": [container]}
    if kc.node_selector(plan):
        template["nodeSelector"] = kc.node_selector(plan)
    out: dict[str, Any] = {"replicas": pool.instances,
                           "parallelism": _parallelism(plan, pool), "template": template}
    if shape.pods > 1:
        worker: dict[str, Any] = {"containers": [dict(container)]}
        if kc.node_selector(plan):
            worker["nodeSelector"] = kc.node_selector(plan)
        out["worker"] = worker
    return out


# --------------------------------------------------------------------------- llm-d
def render_llmd(plan: LaunchPlan) -> str:
    """llm-d-modelservice values for the plan."""
    values: dict[str, Any] = {
        "multinode": any(kc.pod_shape(plan, p).pods > 1 for p in plan.pools),
        "modelArtifacts": {"uri": f"hf://{plan.checkpoint}", "name": plan.checkpoint,
                           "authSecretName": kc.HF_SECRET,
                           "labels": {"llm-d.ai/inference-serving": "true",
                                      "llm-d.ai/model": kc.base_name(plan)}},
        "routing": {"servicePort": kc.PORT,
                    "proxy": {"enabled": plan.mode == "disaggregated", "connector": "nixlv2",
                              "secure": False}},
    }
    pools = {p.role: p for p in plan.pools}
    values["decode"] = _llmd_pool(plan, pools.get("decode") or pools["colocated"])
    values["prefill"] = (_llmd_pool(plan, pools["prefill"]) if "prefill" in pools
                         else {"create": False})
    notes = ["Router: the llm-d inference scheduler (EPP) with its InferencePool, installed "
             "with the llm-d guide's gateway chart; it routes P/D through the decode pods' "
             "routing sidecar (routing.proxy)."]
    return kc.dump([values], kc.header(plan, f"{LLMD_CHART} values (llm-d-incubation/"
                                             "llm-d-modelservice 3051935e)", notes))


def _llmd_pool(plan: LaunchPlan, pool: Pool) -> dict[str, Any]:
    shape = kc.pod_shape(plan, pool)
    parallel = _parallelism(plan, pool)
    degrees: dict[str, Any] = {"tensor": pool.tensor_parallel}
    if pool.expert_parallel > 1:
        degrees |= {"data": parallel["data"], "dataLocal": parallel["dataLocal"],
                    "workers": shape.pods}
    elif shape.pods > 1:
        degrees["workers"] = shape.pods
    flags = _rest(server_flags(plan, pool, gpus_per_node=shape.gpus),
                  _PARALLEL_FLAGS - {"--pipeline-parallel-size"})
    behind_proxy = pool.role == "decode"  # the routing sidecar listens on servicePort
    container = {"name": "vllm", "image": kc.image(plan), "modelCommand": "vllmServe",
                 "args": flags, "env": kc.env(plan, pool)[1:],
                 "ports": [{"containerPort": LLMD_VLLM_PORT if behind_proxy else kc.PORT,
                            "protocol": "TCP"}],
                 "resources": kc.resources(shape.gpus), "mountModelVolume": True}
    out: dict[str, Any] = {"create": True, "replicas": pool.instances, "parallelism": degrees,
                           "containers": [container]}
    label = kc.GPU_PRODUCT_LABELS.get(plan.gpu)
    if label:
        out["acceleratorTypes"] = {"labelKey": "nvidia.com/gpu.product",
                                   "labelValues": [label]}
    return out
