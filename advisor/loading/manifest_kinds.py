"""One reader per kind of serving manifest; each returns the pools of one YAML document.

The field names are those of the upstream CRDs and charts at the versions named in
``docs/kubernetes.md``:

* **NVIDIA Dynamo** ``DynamoGraphDeployment`` (ai-dynamo/dynamo,
  ``deploy/operator/config/crd/bases/nvidia.com_dynamographdeployments.yaml``):
  ``nvidia.com/v1alpha1`` ``spec.services.<name>`` (``componentType``,
  ``subComponentType``, ``replicas``, ``resources.limits.gpu``, ``multinode.nodeCount``,
  ``extraPodSpec.mainContainer``) and ``nvidia.com/v1beta1`` ``spec.components[]``
  (``type``, ``replicas``, ``multinode.nodeCount``, ``podTemplate``); GPUs per replica =
  node count × the container's GPUs (the CRD's own words). The ``Frontend``'s
  ``--router-mode`` is the router policy (Dynamo's frontend defaults to round-robin).
* **KServe** ``LLMInferenceService`` ``serving.kserve.io/v1alpha2`` (kserve/kserve): the
  decode (main) pool is ``spec.replicas``/``spec.template``, the prefill pool
  ``spec.prefill``; TP/PP/DP from ``parallelism`` (the preset passes ``tensor`` as
  ``--tensor-parallel-size``), extra flags from the ``VLLM_ADDITIONAL_ARGS`` variable and
  the container's ``args``; a multi-node replica (``worker``) spans ``data / dataLocal``
  pods. KServe's presets run ``vllm serve``. ``baseRefs`` resolve to
  ``LLMInferenceServiceConfig`` documents of the same file.
* **LeaderWorkerSet** ``leaderworkerset.x-k8s.io/v1`` (kubernetes-sigs/lws): ``replicas``
  groups of ``leaderWorkerTemplate.size`` pods; and its ``DisaggregatedSet``
  (``disaggregatedset.x-k8s.io/v1``): ``slices`` × each role's LWS spec.
* Kubernetes ``Deployment``/``StatefulSet`` (``apps/v1``) whose container runs an engine, and
  a router ``Deployment`` (``vllm-router``, the SGLang Model Gateway) next to them.
* **llm-d-modelservice** Helm values (llm-d-incubation/llm-d-modelservice chart v0.4.12):
  ``decode``/``prefill`` (``create``, ``replicas``, ``parallelism``, ``containers``,
  ``acceleratorTypes``), ``modelArtifacts``, ``multinode``; the chart's defaults apply where
  the values are silent (decode 1 replica, prefill 0, every degree 1) and GPUs per pod are
  ``dataLocal × tensor`` unless a container sets its own (``templates/_helpers.tpl``).

The role of a pool (prefill, decode or colocated) comes from the CRD field, else the
``llm-d.ai/role`` label, else the engine flags (``--disaggregation-mode``, a
``kv_producer``/``kv_consumer`` KV role); a pool whose role nothing states is colocated.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from advisor.loading import engine_argv as ea
from advisor.loading import manifest_plan as mp
from advisor.loading.manifest_plan import Doc, Fact, Loc

ROUTER_DEFAULTS = {"dynamo.frontend": ("--router-mode", "round-robin"),
                   "vllm-router": ("--policy", "cache_aware"),
                   "sglang-router": ("--policy", "cache_aware")}
"""The router policy when the command sets none: Dynamo's frontend (ai-dynamo/dynamo
``components/src/dynamo/frontend/frontend_args.py``: round-robin), the vLLM Router
(vllm-project/router ``docs/cli_reference.md``: cache_aware) and the SGLang Model Gateway
(``sglang-router`` 0.3.2 ``router_args.py``: cache_aware)."""


@dataclass
class Read:
    """What a reader found in one document."""

    pools: list[mp.DeployedPool]
    facts: dict[str, Fact]
    name: str


# --------------------------------------------------------------------------- pools
def build_pool(doc: Doc, *, role: Fact | str | None, name: str,
               replicas: Fact, pod: Loc, nodes: Fact | None = None,
               gpus_per_pod: Fact | None = None, env: Mapping[str, str | None] | None = None,
               extra: tuple[ea.Word, ...] = (), prefix: ea.Invocation | None = None,
               pods: tuple[Loc, ...] = (), gpu_type: Fact | None = None
               ) -> mp.DeployedPool | None:
    """One pool from a pod template (``pods``: more templates to look in for the engine,
    e.g. a LeaderWorkerSet's worker after its leader; ``gpu_type``: the GPU type when the
    platform, not the pod, selects it). None when no container runs an engine."""
    engine = None
    for where in (pod, *pods):
        engine = mp.pod_engine(doc, where, env, extra, prefix)
        if engine is not None:
            pod = where
            break
    if engine is None:
        return None
    facts: dict[str, Fact] = dict(engine.facts)
    at = engine.container
    facts["engine"] = doc.fact(engine.engine, (*at, "command") if doc.get((*at, "command"))
                               else at, f"the container runs {engine.program}")
    image = doc.get((*at, "image"))
    if isinstance(image, str):
        facts["image"] = doc.fact(image, (*at, "image"))
    product = gpu_type or mp.gpu_product(doc, pod)
    if product is not None:
        facts["gpu_product"] = product
    if gpus_per_pod is None:
        gpus_per_pod = mp.pod_gpus(doc, at)
    facts["replicas"] = replicas
    count = nodes.value if nodes is not None else 1
    if nodes is not None:
        facts["nodes"] = nodes
    if gpus_per_pod is not None:
        facts["gpus"] = Fact(value=int(gpus_per_pod.value) * int(count),
                             where=gpus_per_pod.where,
                             source=gpus_per_pod.source + (f" x {count} pods" if count > 1
                                                           else ""))
    else:
        doc.gap(f"{name} GPUs", at, "the container requests no whole GPUs (resources.limits "
                "nvidia.com/gpu) and nothing else in the manifest sets them")
    if isinstance(role, str):
        resolved = role
    elif role is not None:
        resolved = str(role.value)
    elif engine.role is not None:
        resolved = str(engine.role.value)
    else:
        resolved = "colocated"
    _defaults(facts, engine)
    _check_degrees(doc, facts, name, engine.engine)
    _unset(doc, facts, name, resolved, engine.engine)
    return mp.DeployedPool(role=resolved, name=name, where=replicas.where, facts=facts)


def _defaults(facts: dict[str, Fact], engine: mp.PodEngine) -> None:
    """TP and PP the engine defaults to (1) when the command line sets none; an expert-
    parallel instance's degree (vLLM: TP × DP; SGLang ``--ep-size``)."""
    where = facts["engine"].where
    for key in ("tensor_parallel", "pipeline_parallel"):
        if key not in facts:
            facts[key] = Fact(value=1, where=where, source=f"{engine.engine} default (1)")
    ep = facts.get("expert_parallel")
    if ep is not None and ep.value is True:
        dp = facts.get("data_parallel")
        degree = int(facts["tensor_parallel"].value) * (int(dp.value) if dp else 1)
        facts["expert_parallel"] = Fact(value=degree, where=ep.where,
                                        source="--enable-expert-parallel (EP = TP x DP)")
    if engine.engine == "sglang" and ep is not None and int(ep.value) <= 1:
        del facts["expert_parallel"]


_LIMIT_FLAGS = {"vllm": {"token_budget": "--max-num-batched-tokens",
                         "max_num_seqs": "--max-num-seqs", "max_model_len": "--max-model-len",
                         "gpu_memory_utilization": "--gpu-memory-utilization"},
                "sglang": {"token_budget": "--chunked-prefill-size",
                           "max_num_seqs": "--max-running-requests",
                           "max_model_len": "--context-length",
                           "gpu_memory_utilization": "--mem-fraction-static"}}


def _unset(doc: Doc, facts: dict[str, Fact], name: str, role: str, engine: str) -> None:
    """One gap per pool naming the engine limits its command line leaves to the engine's
    defaults (the model then plans with the engine profile's), and a P/D pool's missing KV
    connector."""
    flags = _LIMIT_FLAGS.get(engine, {})
    missing = [flag for key, flag in flags.items() if key not in facts
               and not (key == "token_budget" and role == "decode")
               and not (key == "token_budget" and facts.get("chunked_prefill") is not None)]
    where = facts["engine"].where
    if missing:
        doc.gaps.append(mp.Gap(what=f"{name} engine limits", where=where, why=(
            f"{', '.join(missing)} not set: the engine's defaults apply; the gate plans with "
            "the engine profile's budget and running-sequence cap for the GPU, the workload's "
            "longest request and policy.memory_fraction")))
    if role != "colocated" and "kv_connector" not in facts:
        doc.gaps.append(mp.Gap(what=f"{name} KV connector", where=where, why=(
            "no --kv-transfer-config / --disaggregation-transfer-backend: the platform's or "
            "the engine's default connector moves the KV cache")))


def _check_degrees(doc: Doc, facts: dict[str, Fact], name: str, engine: str) -> None:
    """A replica's GPUs against its parallel degrees (a gap when they disagree)."""
    gpus = facts.get("gpus")
    if gpus is None:
        return
    tp, pp = int(facts["tensor_parallel"].value), int(facts["pipeline_parallel"].value)
    dp = facts.get("data_parallel")
    ep = facts.get("expert_parallel")
    if ep is not None:
        need = int(ep.value)
    else:
        need = tp * pp * (int(dp.value) if dp is not None and engine == "vllm" else 1)
    if need != int(gpus.value) and int(gpus.value) % need:
        doc.gaps.append(mp.Gap(what=f"{name} parallelism", where=facts["tensor_parallel"].where,
                               why=f"the engine is set for {need} GPUs per instance, but a "
                                   f"replica has {gpus.value} ({gpus.source})"))


def _role_label(doc: Doc, *locs: Loc) -> Fact | None:
    for loc in locs:
        value = doc.get((*loc, "labels", "llm-d.ai/role"))
        if value in ("prefill", "decode"):
            return doc.fact(value, (*loc, "labels", "llm-d.ai/role"), "label llm-d.ai/role")
    return None


def _replicas(doc: Doc, loc: Loc, default: int, why: str) -> Fact:
    value = doc.get(loc)
    if isinstance(value, int) and not isinstance(value, bool):
        return doc.fact(value, loc)
    return Fact(value=default, where=doc.where(loc), source=why)


def _router(doc: Doc, container: Loc, inv: ea.Invocation, facts: dict[str, Fact]) -> None:
    """The router policy of a router command (its default when the command sets none)."""
    _, flags = ea.parse_flags(inv)
    option, default = ROUTER_DEFAULTS.get(inv.program, ("--policy", None))
    chosen: dict[str, ea.Flag] = {f.name: f for f in flags}
    for name in ("--decode-policy", option):
        flag = chosen.get(name)
        if flag is not None and flag.value is not None:
            facts["router_policy"] = Fact(value=flag.value, where=doc.word_where(
                flag.at, (*container, "args")), source=f"{inv.program} {name}")
            return
    if default is not None:
        facts["router_policy"] = Fact(value=default, where=doc.word_where(
            inv.at, (*container, "command")), source=f"{inv.program} default ({option} "
                                                      f"{default})")


def pod_router(doc: Doc, pod: Loc, facts: dict[str, Fact]) -> bool:
    """Read a router container in ``pod``; whether there was one."""
    for container in mp.containers(doc, pod):
        inv = mp.invocation(doc, container)
        if inv is not None and inv.engine is None:
            _router(doc, container, inv, facts)
            return True
    return False


# --------------------------------------------------------------------------- Dynamo
def read_dynamo(doc: Doc) -> Read:
    """A ``DynamoGraphDeployment`` (v1alpha1 ``services`` or v1beta1 ``components``)."""
    pools: list[mp.DeployedPool] = []
    facts: dict[str, Fact] = {}
    backend = doc.get(("spec", "backendFramework"))
    if isinstance(backend, str):
        facts["engine"] = doc.fact(backend, ("spec", "backendFramework"))
    beta = isinstance(doc.get(("spec", "components")), list)
    entries: list[tuple[str, Loc]] = []
    if beta:
        for i, item in enumerate(doc.get(("spec", "components"))):
            entries.append((str(item.get("name", i)) if isinstance(item, dict) else str(i),
                            ("spec", "components", i)))
    elif isinstance(doc.get(("spec", "services")), dict):
        entries = [(str(k), ("spec", "services", k)) for k in doc.get(("spec", "services"))]
    else:
        raise mp.ManifestError(doc.where(("spec",)), "a DynamoGraphDeployment needs "
                               "spec.services (v1alpha1) or spec.components (v1beta1)")
    for name, loc in entries:
        kind = doc.get((*loc, "type" if beta else "componentType"))
        sub = None if beta else doc.get((*loc, "subComponentType"))
        pod = (*loc, "podTemplate", "spec") if beta else (*loc, "extraPodSpec")
        if kind == "frontend":
            _dynamo_frontend(doc, loc, pod, beta, facts)
            continue
        if kind not in ("worker", "prefill", "decode", None):
            continue
        role: Fact | str | None = None
        if kind in ("prefill", "decode"):
            role = doc.fact(kind, (*loc, "type"))
        elif sub in ("prefill", "decode"):
            role = doc.fact(sub, (*loc, "subComponentType"))
        nodes = None
        if doc.get((*loc, "multinode")) is not None:
            count = doc.get((*loc, "multinode", "nodeCount"))
            nodes = (doc.fact(int(count), (*loc, "multinode", "nodeCount"))
                     if isinstance(count, int) else
                     Fact(value=2, where=doc.where((*loc, "multinode")),
                          source="multinode.nodeCount CRD default (2)"))
        gpus = None if beta else mp.gpu_count(
            doc, doc.get((*loc, "resources", "limits", "gpu")),
            (*loc, "resources", "limits", "gpu"), "resources.limits.gpu")
        env = _dynamo_env(doc, loc)
        pool = build_pool(doc, role=role, name=name,
                          replicas=_replicas(doc, (*loc, "replicas"), 1,
                                             "replicas omitted (1)"),
                          pod=pod, nodes=nodes, gpus_per_pod=gpus, env=env)
        if pool is None:
            doc.gap(f"{name} engine", loc, "no container of this worker runs vllm, sglang or "
                    "trtllm (python3 -m dynamo.vllm|sglang|trtllm)")
            continue
        pools.append(pool)
    return Read(pools=pools, facts=facts, name=str(doc.get(("metadata", "name")) or ""))


def _dynamo_env(doc: Doc, loc: Loc) -> dict[str, str | None]:
    """Variables a Dynamo component sets outside its container (``envs``, ``spec.env``)."""
    out: dict[str, str | None] = {}
    for where in (("spec", "env"), (*loc, "envs")):
        items = doc.get(where)
        for item in items if isinstance(items, list) else []:
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                value = item.get("value")
                out[item["name"]] = None if value is None else str(value)
    return out


def _dynamo_frontend(doc: Doc, loc: Loc, pod: Loc, beta: bool, facts: dict[str, Fact]) -> None:
    containers = list(mp.containers(doc, pod)) if beta else [(*pod, "mainContainer")]
    for container in containers:
        args = doc.get((*container, "args"))
        words = ea.node_words(doc.document.node((*container, "args"))) if args else []
        inv = mp.invocation(doc, container)
        if inv is None:  # the runtime image's entry point runs dynamo.frontend
            at = words[0] if words else ea.Word(text="", line=doc.where(loc).line,
                                                col=doc.where(loc).col)
            inv = ea.Invocation(program="dynamo.frontend", words=tuple(words), at=at)
        if inv.engine is None:
            _router(doc, container, inv, facts)
            return


# --------------------------------------------------------------------------- KServe
VLLM_SERVE = ea.Invocation(program="vllm", words=(), at=ea.Word(text="vllm", line=1, col=1))


def read_kserve(doc: Doc, configs: Mapping[str, Doc]) -> Read:
    """An ``LLMInferenceService``; ``configs`` are the ``LLMInferenceServiceConfig``
    documents of the same file, by name (for ``baseRefs``)."""
    bases: list[Doc] = []
    refs = doc.get(("spec", "baseRefs"))
    for i, ref in enumerate(refs if isinstance(refs, list) else []):
        name = ref.get("name") if isinstance(ref, dict) else None
        if name in configs:
            bases.append(configs[str(name)])
        else:
            doc.gap("base configuration", ("spec", "baseRefs", i), f"{name!r} is not an "
                    "LLMInferenceServiceConfig in this file; what it sets is not read")
    layers = [doc, *bases]
    facts: dict[str, Fact] = {}
    for layer in layers:
        model = layer.get(("spec", "model", "name")) or layer.get(("spec", "model", "uri"))
        if isinstance(model, str):
            key = "name" if layer.get(("spec", "model", "name")) else "uri"
            facts["model"] = layer.fact(model.removeprefix("hf://"), ("spec", "model", key))
            break
    pools = []
    for role, prefix in (("decode", ("spec",)), ("prefill", ("spec", "prefill"))):
        owner = next((la for la in layers if la.get((*prefix, "template")) is not None
                      or la.get((*prefix, "replicas")) is not None), None)
        if owner is None:
            continue
        pool = _kserve_pool(owner, layers, role, prefix)
        if pool is not None:
            pools.append(pool)
    has_prefill = any(p.role == "prefill" for p in pools)
    if not has_prefill:  # one pool only: the main pool serves both phases
        pools = [mp.DeployedPool(role="colocated", name=p.name, where=p.where, facts=p.facts)
                 for p in pools]
    if any(la.get(("spec", "router", "scheduler")) is not None for la in layers):
        doc.gap("router policy", ("spec", "router", "scheduler"), "the llm-d inference "
                "scheduler (EPP) picks the endpoints; its EndpointPickerConfig is not part "
                "of this manifest")
    return Read(pools=pools, facts=facts, name=str(doc.get(("metadata", "name")) or ""))


def _kserve_pool(doc: Doc, layers: list[Doc], role: str, prefix: Loc) -> mp.DeployedPool | None:
    def first(loc: Loc) -> tuple[Doc, Any] | None:
        for layer in layers:
            value = layer.get(loc)
            if value is not None:
                return layer, value
        return None

    replicas_at = first((*prefix, "replicas"))
    replicas = (replicas_at[0].fact(replicas_at[1], (*prefix, "replicas"))
                if replicas_at else Fact(value=1, where=doc.where(prefix),
                                         source="replicas omitted (1)"))
    template = next((la for la in layers if la.get((*prefix, "template", "containers"))), doc)
    pod = (*prefix, "template")
    extra: list[ea.Word] = []
    env: dict[str, str | None] = {}
    gpus = None
    for layer in reversed(layers):  # base configurations first, the service last
        for container in mp.containers(layer, pod):
            if layer.get((*container, "name")) not in ("main", None):
                continue
            env.update(mp.container_env(layer, container))
            found = mp.pod_gpus(layer, container)
            gpus = found or gpus
            items = layer.get((*container, "env"))
            for i, item in enumerate(items if isinstance(items, list) else []):
                if isinstance(item, dict) and item.get("name") == "VLLM_ADDITIONAL_ARGS" \
                        and isinstance(item.get("value"), str):
                    where = layer.where((*container, "env", i, "value"))
                    extra = ea.split_args(item["value"], ea.Word(text="", line=where.line,
                                                                 col=where.col))
    parallel: list[ea.Word] = []
    for key, flag in (("tensor", "--tensor-parallel-size"),
                      ("pipeline", "--pipeline-parallel-size"),
                      ("data", "--data-parallel-size"),
                      ("dataLocal", "--data-parallel-size-local")):
        found_at = first((*prefix, "parallelism", key))
        if found_at is not None:
            where = found_at[0].where((*prefix, "parallelism", key))
            parallel += [ea.Word(text=flag, line=where.line, col=where.col),
                         ea.Word(text=str(found_at[1]), line=where.line, col=where.col)]
    expert = first((*prefix, "parallelism", "expert"))
    if expert is not None and expert[1] is True:
        where = expert[0].where((*prefix, "parallelism", "expert"))
        parallel.append(ea.Word(text="--enable-expert-parallel", line=where.line, col=where.col))
    model_word = ea.Word(text="/mnt/models", line=1, col=1)
    prefix_cmd = ea.Invocation(program="vllm", words=(model_word, *parallel),
                               at=ea.Word(text="vllm", line=doc.where(pod).line,
                                          col=doc.where(pod).col))
    nodes = None
    if first((*prefix, "worker")) is not None:
        data, local = first((*prefix, "parallelism", "data")), first(
            (*prefix, "parallelism", "dataLocal"))
        if data and local and int(local[1]):
            nodes = Fact(value=int(data[1]) // int(local[1]), where=doc.where(
                (*prefix, "parallelism")), source="parallelism.data / dataLocal (worker pods)")
        elif gpus is not None and int(gpus.value) > 0:  # TP x PP over pods of `gpus` GPUs
            tp, pp = first((*prefix, "parallelism", "tensor")), first(
                (*prefix, "parallelism", "pipeline"))
            need = int(tp[1] if tp else 1) * int(pp[1] if pp else 1)
            nodes = Fact(value=max(1, -(-need // int(gpus.value))), where=doc.where(
                (*prefix, "parallelism")), source="parallelism tensor x pipeline over the "
                                                  "pods' GPUs (worker pods)")
    pool = build_pool(template, role=role, name=".".join(str(p) for p in prefix),
                      replicas=replicas, pod=pod, nodes=nodes, gpus_per_pod=gpus,
                      env=env, extra=tuple(extra), prefix=prefix_cmd)
    if pool is not None and pool.facts.get("model", Fact(value="", where=pool.where,
                                                          source="")).value == "/mnt/models":
        facts = dict(pool.facts)
        del facts["model"]
        pool = mp.DeployedPool(role=pool.role, name=pool.name, where=pool.where, facts=facts)
    return pool


# --------------------------------------------------------------------------- LWS, apps/v1
def read_lws_spec(doc: Doc, spec: Loc, name: str, role: Fact | None,
                  slices: Fact | None = None) -> mp.DeployedPool | None:
    """A LeaderWorkerSet spec (``spec`` of an LWS, or a DisaggregatedSet role's ``spec``)."""
    tpl = (*spec, "leaderWorkerTemplate")
    size_value = doc.get((*tpl, "size"))
    size = (doc.fact(size_value, (*tpl, "size")) if isinstance(size_value, int)
            else Fact(value=1, where=doc.where(tpl), source="size omitted (1)"))
    replicas = _replicas(doc, (*spec, "replicas"), 1, "replicas omitted (1)")
    if slices is not None:
        replicas = Fact(value=int(replicas.value) * int(slices.value), where=replicas.where,
                        source=f"{replicas.source} x {slices.value} slices")
    leader = (*tpl, "leaderTemplate", "spec")
    worker = (*tpl, "workerTemplate", "spec")
    first = leader if doc.get(leader) is not None else worker
    role = role or _role_label(doc, (*tpl, "leaderTemplate", "metadata"),
                               (*tpl, "workerTemplate", "metadata"))
    env = {"LWS_GROUP_SIZE": str(size.value)}
    return build_pool(doc, role=role, name=name, replicas=replicas, pod=first,
                      nodes=size if int(size.value) > 1 else None, env=env,
                      pods=(worker,) if first != worker else ())


def read_lws(doc: Doc) -> Read:
    name = str(doc.get(("metadata", "name")) or "")
    pool = read_lws_spec(doc, ("spec",), name, _role_label(doc, ("metadata",)))
    return Read(pools=[pool] if pool else [], facts={}, name=name)


def read_disaggregated_set(doc: Doc) -> Read:
    name = str(doc.get(("metadata", "name")) or "")
    value = doc.get(("spec", "slices"))
    slices = (doc.fact(value, ("spec", "slices")) if isinstance(value, int)
              else Fact(value=1, where=doc.where(("spec",)), source="slices omitted (1)"))
    pools = []
    roles = doc.get(("spec", "roles"))
    for i, item in enumerate(roles if isinstance(roles, list) else []):
        role_name = item.get("name") if isinstance(item, dict) else None
        role = (doc.fact(role_name, ("spec", "roles", i, "name"))
                if role_name in ("prefill", "decode") else None)
        pool = read_lws_spec(doc, ("spec", "roles", i, "spec"), f"{name}/{role_name}", role,
                             slices)
        if pool is not None:
            pools.append(pool)
    return Read(pools=pools, facts={}, name=name)


def read_apps(doc: Doc, facts: dict[str, Fact]) -> Read:
    """A ``Deployment`` or ``StatefulSet``: a pool when it runs an engine, the router when it
    runs one (into ``facts``)."""
    name = str(doc.get(("metadata", "name")) or "")
    pod = ("spec", "template", "spec")
    role = _role_label(doc, ("spec", "template", "metadata"), ("metadata",))
    pool = build_pool(doc, role=role, name=name,
                      replicas=_replicas(doc, ("spec", "replicas"), 1,
                                         "replicas omitted (1)"), pod=pod)
    if pool is None:
        pod_router(doc, pod, facts)
    return Read(pools=[pool] if pool else [], facts={}, name=name)


# --------------------------------------------------------------------------- llm-d values
CHART = "llm-d-modelservice chart v0.4.12 default"


def read_llmd_values(doc: Doc) -> Read:
    """llm-d-modelservice values (``decode``/``prefill``, ``modelArtifacts``)."""
    facts: dict[str, Fact] = {}
    name = doc.get(("modelArtifacts", "name"))
    uri = doc.get(("modelArtifacts", "uri"))
    if isinstance(name, str):
        facts["model"] = doc.fact(name, ("modelArtifacts", "name"))
    elif isinstance(uri, str) and uri.startswith("hf://") and "{{" not in uri:
        facts["model"] = doc.fact(uri.removeprefix("hf://"), ("modelArtifacts", "uri"))
    multinode = doc.get(("multinode",)) is True
    pools = []
    for role, default in (("decode", 1), ("prefill", 0)):
        if doc.get((role,)) is None or doc.get((role, "create")) is False:
            continue
        replicas = _replicas(doc, (role, "replicas"), default, f"{CHART} ({default})")
        if replicas.value == 0:
            continue
        degrees = {key: doc.get((role, "parallelism", key)) for key in
                   ("tensor", "data", "dataLocal", "workers")}
        tp = degrees["tensor"] or 1
        local = degrees["dataLocal"] or degrees["data"] or 1
        workers = degrees["workers"] or 1
        where = doc.where((role, "parallelism") if doc.get((role, "parallelism"))
                          else (role,))
        words: list[ea.Word] = []
        model_text = str(facts["model"].value) if "model" in facts else "/model-cache"
        words.append(ea.Word(text=model_text, line=where.line, col=where.col))
        if tp > 1:
            words += [ea.Word(text="--tensor-parallel-size", line=where.line, col=where.col),
                      ea.Word(text=str(tp), line=where.line, col=where.col)]
        dp = degrees["data"] or (local * workers)
        if dp > 1:
            words += [ea.Word(text="--data-parallel-size", line=where.line, col=where.col),
                      ea.Word(text=str(dp), line=where.line, col=where.col)]
        pod = (role,)
        gpus = Fact(value=int(local) * int(tp), where=where,
                    source="parallelism dataLocal x tensor (the chart's GPUs per pod)")
        for container in mp.containers(doc, pod):
            own = mp.pod_gpus(doc, container)
            if own is not None:
                gpus = own
        command = doc.get((role, "containers", 0, "modelCommand")) or "custom"
        prefix = (ea.Invocation(program="vllm", words=tuple(words), at=words[0])
                  if command in ("vllmServe", "imageDefault") else None)
        nodes = (Fact(value=int(workers), where=where, source="parallelism.workers (LWS)")
                 if multinode and workers > 1 else None)
        role_fact = doc.fact(role, (role,), f"values key {role}")
        labels = doc.get((role, "acceleratorTypes", "labelValues"))
        key = doc.get((role, "acceleratorTypes", "labelKey"))
        gpu_type = (doc.fact(str(labels[0]), (role, "acceleratorTypes", "labelValues", 0),
                             f"acceleratorTypes {key}")
                    if isinstance(labels, list) and labels and key else None)
        pool = build_pool(doc, role=role_fact, name=role, replicas=replicas, pod=pod,
                          nodes=nodes, gpus_per_pod=gpus, prefix=prefix, gpu_type=gpu_type)
        if pool is None:
            doc.gap(f"{role} engine", (role, "containers"), "modelCommand is neither vllmServe "
                    "nor imageDefault and no container's command runs an engine")
            continue
        pools.append(pool)
    if [p.role for p in pools] == ["decode"]:  # no prefill pool: decode serves both phases
        pools = [mp.DeployedPool(role="colocated", name=p.name, where=p.where, facts=p.facts)
                 for p in pools]
    connector = doc.get(("routing", "proxy", "connector"))
    if isinstance(connector, str):
        facts["sidecar_connector"] = doc.fact(connector, ("routing", "proxy", "connector"))
    doc.gap("router policy", ("routing",), "the llm-d inference scheduler (EPP) picks the "
            "endpoints; its EndpointPickerConfig is installed with the InferencePool, not in "
            "these values")
    return Read(pools=pools, facts=facts, name=str(name or ""))
