"""``--emit lws``: the plan as LeaderWorkerSets, one per pool, and its router.

LeaderWorkerSet ``leaderworkerset.x-k8s.io/v1`` (kubernetes-sigs/lws, CRD
``config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml`` at 060ab4da): a pool is
``replicas`` groups of ``leaderWorkerTemplate.size`` pods, one group per instance; an instance
inside a node is a group of one pod with the instance's GPUs, an instance over several nodes
one pod per node. LWS sets ``LWS_LEADER_ADDRESS``, ``LWS_WORKER_INDEX`` and
``LWS_GROUP_SIZE`` in every pod (the LWS docs' vLLM and SGLang examples use them): vLLM's
multi-node flags (``--nnodes``/``--node-rank``/``--master-addr``, ``--headless`` on the
workers; for expert-parallel instances ``--data-parallel-address`` and
``--data-parallel-start-rank``), SGLang's ``--dist-init-addr``/``--nnodes``/``--node-rank``.

The router is a Deployment with Kubernetes service discovery (selecting the pools' pods by
label), a Service in front of it, and the RBAC it needs to list pods: the vLLM Router
(vllm-project/router ``docs/environment/kubernetes.md``: ``--service-discovery
--vllm-pd-disaggregation --prefill-selector/--decode-selector``; the doc builds its own image,
``your-registry/vllm-router:latest``) or the SGLang Model Gateway (``sglang-router``: bootstrap
ports from the prefill pods' ``sglang.ai/bootstrap-port`` annotation).
"""

from __future__ import annotations

from typing import Any

from advisor.escaping import sh_word
from advisor.render import k8s_common as kc
from advisor.render.engine_flags import router_notes, router_policy_flags
from advisor.render.ep_flags import DP_RPC_PORT
from advisor.render.formats import EmitEngine
from advisor.render.launch_plan import LaunchPlan, Pool

LWS_API = "leaderworkerset.x-k8s.io/v1"
MASTER_PORT = 29501
BOOTSTRAP_PORT = 8998
"""SGLang's default ``--disaggregation-bootstrap-port`` (one server per pod: no clash)."""
ROUTER_IMAGES = {EmitEngine.vllm: "your-registry/vllm-router:latest",
                 EmitEngine.sglang: None}
"""The router's image: the vLLM Router has no published image (its Kubernetes doc builds
one); the SGLang Model Gateway ships in the SGLang image."""


def render_lws(plan: LaunchPlan) -> str:
    """The LeaderWorkerSets of the plan, its router and the router's RBAC, as YAML."""
    docs: list[dict[str, Any]] = [leader_worker_set(plan, pool) for pool in plan.pools]
    notes: list[str] = []
    if plan.mode == "disaggregated" or plan.pools[0].instances > 1:
        docs += router_documents(plan, kc.base_name(plan))
        notes += router_notes(plan)
        if plan.engine is EmitEngine.vllm:
            notes.append("The vLLM Router has no published image: build one (pip install "
                         "vllm-router) and replace your-registry/vllm-router:latest.")
    return kc.dump(docs, kc.header(plan, f"LeaderWorkerSet {LWS_API} (kubernetes-sigs/lws "
                                         "060ab4da)", notes))


def pool_name(plan: LaunchPlan, pool: Pool) -> str:
    return f"{kc.base_name(plan)}-{pool.role}"


def leader_worker_set(plan: LaunchPlan, pool: Pool) -> dict[str, Any]:
    shape = kc.pod_shape(plan, pool)
    labels = kc.labels(plan, pool)
    template: dict[str, Any] = {"size": shape.pods}
    if shape.pods > 1:
        template["restartPolicy"] = "RecreateGroupOnPodRestart"
        template["leaderTemplate"] = {"metadata": _pod_metadata(plan, pool, labels),
                                      "spec": pod_spec(plan, pool, leader=True)}
    template["workerTemplate"] = {"metadata": _pod_metadata(plan, pool, labels),
                                  "spec": pod_spec(plan, pool, leader=shape.pods == 1)}
    return {"apiVersion": LWS_API, "kind": "LeaderWorkerSet",
            "metadata": {"name": pool_name(plan, pool), "labels": labels},
            "spec": {"replicas": pool.instances, "leaderWorkerTemplate": template}}


def _pod_metadata(plan: LaunchPlan, pool: Pool, labels: dict[str, str]) -> dict[str, Any]:
    meta: dict[str, Any] = {"labels": dict(labels)}
    if plan.engine is EmitEngine.sglang and pool.role == "prefill":
        meta["annotations"] = {"sglang.ai/bootstrap-port": str(BOOTSTRAP_PORT)}
    return meta


def pod_spec(plan: LaunchPlan, pool: Pool, leader: bool) -> dict[str, Any]:
    """One pod of a group: the engine container with this pod's share of the instance."""
    shape = kc.pod_shape(plan, pool)
    volume, mount = kc.shm_volume()
    command, args = _command(plan, pool, leader, shape.pods)
    container: dict[str, Any] = {
        "name": "engine", "image": kc.image(plan), "command": command, "args": args,
        "env": kc.env(plan, pool), "resources": kc.resources(shape.gpus),
        "volumeMounts": [mount]}
    if leader:
        container["ports"] = [{"name": "http", "containerPort": kc.PORT}]
        container["readinessProbe"] = {"httpGet": {"path": "/health", "port": kc.PORT},
                                       "periodSeconds": 10, "failureThreshold": 360}
    spec: dict[str, Any] = {"containers": [container], "volumes": [volume]}
    selector = kc.node_selector(plan)
    if selector:
        spec["nodeSelector"] = selector
    return spec


def _command(plan: LaunchPlan, pool: Pool, leader: bool, pods: int) -> tuple[list[str],
                                                                             list[str]]:
    """(command, args) of a pod: the engine, its flags and its place in the group."""
    program = kc.engine_command(plan)
    args = kc.serve_args(plan, pool)
    if plan.engine is EmitEngine.sglang:
        if pool.role == "prefill":
            args += ["--disaggregation-bootstrap-port", str(BOOTSTRAP_PORT)]
        if pods > 1:
            args += ["--dist-init-addr", f"$(LWS_LEADER_ADDRESS):{MASTER_PORT}",
                     "--nnodes", str(pods), "--node-rank", "$(LWS_WORKER_INDEX)"]
        return program[:3], program[3:] + args
    if pool.expert_parallel > 1:
        local = pool.attention_ranks // pods
        if pods == 1:
            return program[:2], program[2:] + args + ["--api-server-count", str(local)]
        args += ["--data-parallel-address", "$(LWS_LEADER_ADDRESS)",
                 "--data-parallel-rpc-port", str(DP_RPC_PORT)]
        if leader:
            return program[:2], program[2:] + args + ["--api-server-count", str(local)]
        # each node's first DP rank is its index times its local ranks: shell arithmetic
        words = " ".join(sh_word(w) for w in (*program, *args))
        script = (f'exec {words} --data-parallel-start-rank '
                  f'"$((LWS_WORKER_INDEX * {local}))" --headless')
        return ["/bin/sh", "-c"], [script]
    if pods > 1:
        args += ["--nnodes", str(pods), "--node-rank", "0" if leader else "$(LWS_WORKER_INDEX)",
                 "--master-addr", "$(LWS_LEADER_ADDRESS)", "--master-port", str(MASTER_PORT)]
        if not leader:
            args.append("--headless")
    return program[:2], program[2:] + args


# --------------------------------------------------------------------------- router
def router_documents(plan: LaunchPlan, base: str) -> list[dict[str, Any]]:
    """The router Deployment, its Service, ServiceAccount, Role and RoleBinding."""
    name = f"{base}-router"
    labels = {"app.kubernetes.io/name": base, "app.kubernetes.io/component": "router",
              "app.kubernetes.io/managed-by": "pd-advisor"}
    selector = f"app.kubernetes.io/name={base}"
    if plan.engine is EmitEngine.vllm:
        image, program, pd = ROUTER_IMAGES[EmitEngine.vllm], ["vllm-router"], \
            "--vllm-pd-disaggregation"
    else:
        image, program, pd = (kc.image(plan), ["python3", "-m", "sglang_router.launch_router"],
                              "--pd-disaggregation")
    args = ["--service-discovery"]
    if plan.mode == "disaggregated":
        args += [pd, "--prefill-selector", selector, "llm-d.ai/role=prefill",
                 "--decode-selector", selector, "llm-d.ai/role=decode"]
    else:
        args += ["--selector", selector, "app.kubernetes.io/component=colocated"]
    args += ["--service-discovery-port", str(kc.PORT),
             "--service-discovery-namespace", "$(POD_NAMESPACE)",
             *router_policy_flags(plan), "--host", "0.0.0.0", "--port", str(kc.PORT)]
    container = {"name": "router", "image": image, "command": program, "args": args,
                 "env": [{"name": "POD_NAMESPACE",
                          "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}],
                 "ports": [{"name": "http", "containerPort": kc.PORT}]}
    return [
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name,
                                                                     "labels": labels},
         "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                  "template": {"metadata": {"labels": labels},
                               "spec": {"serviceAccountName": name,
                                        "containers": [container]}}}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "labels": labels},
         "spec": {"selector": labels, "ports": [{"name": "http", "port": kc.PORT,
                                                 "targetPort": kc.PORT}]}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": name},
         "rules": [{"apiGroups": [""], "resources": ["pods"],
                    "verbs": ["get", "list", "watch"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": name},
         "subjects": [{"kind": "ServiceAccount", "name": name}],
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name}},
    ]
