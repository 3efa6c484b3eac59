"""Kubernetes manifests as deployed plans: read a file, find its serving workload, and turn
the plan into a workload's ``deployment:`` block with the place of every key.

:func:`read_manifest` parses a (multi-document) manifest file with positions
(:func:`advisor.loading.yaml_source.parse_yaml_stream`), dispatches each document on its
``apiVersion``/``kind`` (or, for Helm values, on their keys or the ``values_kind`` hint) to
:mod:`advisor.loading.manifest_kinds` and returns one :class:`DeployedPlan`. Documents of
kinds that carry no serving workload (``Service``, ``ConfigMap``, RBAC, Gateway API routes,
...) are skipped; a kind it does not know, a file with no serving workload, and malformed
YAML are located errors (``path:line:col: error: key: message``).

:func:`as_deployment` maps the plan onto the workload format: the mode (prefill and decode
pools: disaggregated; one pool: colocated), each pool's GPUs (replicas × GPUs per replica)
and tensor- or expert-parallel degree, the colocated token budget and chunking, and the
engine limits (``max_num_seqs`` of the decode or colocated pool, per DP-attention rank; the
smallest ``max_model_len`` and ``gpu_memory_utilization`` of the pools). Every key comes
with the manifest position it was read from, so that a gate finding on
``deployment.prefill_gpus`` points at the prefill pool's ``replicas:`` line.

A manifest names its traffic/SLO description with a comment ``# pd-advisor: workload=PATH``
(PATH relative to the manifest); a workload names its manifests with
``deployment: {from: PATH}`` (or a list of paths: the pools of several files, such as
llm-d's separate prefill and decode LeaderWorkerSets).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.core.router_names import model_policy
from advisor.loading import manifest_kinds as mk
from advisor.loading import manifest_plan as mp
from advisor.loading.errors import InputError, InputProblem
from advisor.loading.manifest_plan import DeployedPlan, Doc, Fact, ManifestError, Where
from advisor.loading.yaml_source import UnreadableFileError, parse_yaml_stream, read_yaml_text

VALUES_KINDS = ("llm-d",)
"""``values_kind`` hints for Helm values files (which carry no ``kind``)."""

SERVING_KINDS: dict[str, tuple[str, ...]] = {
    "DynamoGraphDeployment": ("nvidia.com/v1alpha1", "nvidia.com/v1beta1"),
    "LLMInferenceService": ("serving.kserve.io/v1alpha2", "serving.kserve.io/v1alpha1"),
    "LeaderWorkerSet": ("leaderworkerset.x-k8s.io/v1",),
    "DisaggregatedSet": ("disaggregatedset.x-k8s.io/v1",),
    "Deployment": ("apps/v1",),
    "StatefulSet": ("apps/v1",),
}
"""The kinds read, with the API versions each reader knows."""

PASSIVE_KINDS = frozenset({
    "Service", "ConfigMap", "Secret", "ServiceAccount", "Role", "RoleBinding", "ClusterRole",
    "ClusterRoleBinding", "Namespace", "PersistentVolumeClaim", "PersistentVolume",
    "Ingress", "HTTPRoute", "GRPCRoute", "Gateway", "InferencePool", "InferenceModel",
    "InferenceObjective", "LLMInferenceServiceConfig", "PodDisruptionBudget",
    "HorizontalPodAutoscaler", "NetworkPolicy", "ServiceMonitor", "PodMonitor",
    "ResourceClaimTemplate", "DynamoComponentDeployment", "PriorityClass", "Job",
    "DestinationRule", "EnvoyFilter", "LimitRange", "ResourceQuota"})
"""Kinds that carry no serving engine: skipped (a ``LLMInferenceServiceConfig`` is read
when a service in the same file names it in ``baseRefs``)."""

ANNOTATION = re.compile(r"^\s*#\s*pd-advisor:\s*workload\s*=\s*(\S.*?)\s*$", re.M)


@dataclass(frozen=True, kw_only=True)
class ManifestRef:
    """A manifest file to read, as a workload or the command line names it."""

    path: Path
    display: str
    values_kind: str | None = None


def looks_like_manifest(data: Any) -> bool:
    """Whether parsed YAML is a Kubernetes object or Helm values rather than a workload."""
    if not isinstance(data, dict):
        return False
    if "apiVersion" in data and "kind" in data:
        return True
    return "version" not in data and ("modelArtifacts" in data or (
        isinstance(data.get("decode"), dict) and isinstance(data.get("prefill"), dict)))


def read_documents(ref: ManifestRef) -> tuple[str, list[Doc]]:
    """The file's text and its documents; an unreadable or malformed file raises
    :class:`InputError`."""
    try:
        text = read_yaml_text(ref.path)
    except UnreadableFileError as exc:
        raise InputError([InputProblem(path=ref.display, line=exc.line, col=exc.col, key="",
                                       message=exc.message)]) from None
    documents = parse_yaml_stream(text, ref.display)
    problems = [p for d in documents for p in d.problems]
    if problems:
        raise InputError(problems)
    return text, [Doc(d) for d in documents]


def read_manifest(ref: ManifestRef) -> DeployedPlan:
    """The plan one manifest file deploys; :class:`InputError` (located) when it cannot be
    read as one."""
    text, docs = read_documents(ref)
    try:
        return _plan(ref, text, docs)
    except ManifestError as exc:
        w = exc.where
        raise InputError([InputProblem(path=w.path, line=w.line, col=w.col, key=w.key,
                                       message=exc.message)]) from None


def _plan(ref: ManifestRef, text: str, docs: list[Doc]) -> DeployedPlan:
    pools: list[mp.DeployedPool] = []
    facts: dict[str, Fact] = {}
    kinds: list[str] = []
    names: list[str] = []
    configs = {str(d.get(("metadata", "name"))): d for d in docs
               if d.get(("kind",)) == "LLMInferenceServiceConfig"}
    gaps: list[mp.Gap] = []
    first_where: Where | None = None
    for doc in docs:
        data = doc.document.data
        if data is None:
            continue
        if not isinstance(data, dict):
            raise ManifestError(doc.where(()), "a manifest document must be a mapping "
                                "(a Kubernetes object or Helm values)")
        read = _read_document(doc, ref, configs, facts)
        gaps += doc.gaps
        if read is None:
            continue
        kind = _kind_text(doc, ref)
        kinds.append(kind)
        names.append(read.name)
        pools += read.pools
        for key, fact in read.facts.items():
            facts.setdefault(key, fact)
        if first_where is None:
            first_where = doc.where(("metadata", "name") if doc.get(("metadata",)) else ())
    if first_where is None:
        where = docs[0].where(()) if docs else Where(path=ref.display, line=1, col=1, key="")
        seen = sorted({str(d.get(("kind",))) for d in docs if d.get(("kind",))})
        raise ManifestError(where, "no serving workload in this file" + (
            f" (kinds: {', '.join(seen)})" if seen else "") + "; pd-advisor reads "
            + ", ".join(SERVING_KINDS) + " and llm-d-modelservice values")
    if not pools:
        raise ManifestError(first_where, "no container in this manifest runs a serving "
                            "engine (vllm serve, python -m sglang.launch_server, "
                            "python3 -m dynamo.vllm|sglang|trtllm, trtllm-serve)")
    _plan_facts(pools, facts, gaps, first_where)
    match = ANNOTATION.search(text)
    if match:
        line = text.count("\n", 0, match.start(1)) + 1
        col = match.start(1) - (text.rfind("\n", 0, match.start(1)) + 1) + 1
        facts["workload"] = Fact(value=match[1], where=Where(
            path=ref.display, line=line, col=col, key=""), source="# pd-advisor: workload=")
    return DeployedPlan(path=ref.display, kind=", ".join(dict.fromkeys(kinds)),
                        name=", ".join(n for n in names if n), facts=facts,
                        pools=tuple(pools), gaps=tuple(gaps), where=first_where)


def _kind_text(doc: Doc, ref: ManifestRef) -> str:
    kind = doc.get(("kind",))
    if kind is None:
        return f"{ref.values_kind or 'llm-d'}-modelservice values"
    return f"{kind} {doc.get(('apiVersion',))}"


def _read_document(doc: Doc, ref: ManifestRef, configs: dict[str, Doc],
                   facts: dict[str, Fact]) -> mk.Read | None:
    kind, version = doc.get(("kind",)), doc.get(("apiVersion",))
    if kind is None and version is None:
        if ref.values_kind == "llm-d" or looks_like_manifest(doc.document.data):
            return mk.read_llmd_values(doc)
        raise ManifestError(doc.where(()), "neither a Kubernetes object (apiVersion, kind) "
                            "nor Helm values pd-advisor knows; for llm-d-modelservice values "
                            "pass --values-kind llm-d")
    if not isinstance(kind, str) or not isinstance(version, str):
        raise ManifestError(doc.where(("kind",) if kind is None or not isinstance(kind, str)
                                      else ("apiVersion",), at_key=True),
                            "a Kubernetes object needs string apiVersion and kind")
    if kind in PASSIVE_KINDS:
        return None
    if kind not in SERVING_KINDS:
        raise ManifestError(doc.where(("kind",)), f"unknown kind '{kind}' ({version}): "
                            "pd-advisor reads " + ", ".join(SERVING_KINDS)
                            + " and llm-d-modelservice values")
    if version not in SERVING_KINDS[kind]:
        raise ManifestError(doc.where(("apiVersion",)), f"{kind} {version} is not a version "
                            "pd-advisor reads (" + ", ".join(SERVING_KINDS[kind]) + ")")
    if kind == "DynamoGraphDeployment":
        return mk.read_dynamo(doc)
    if kind == "LLMInferenceService":
        return mk.read_kserve(doc, configs)
    if kind == "LeaderWorkerSet":
        return mk.read_lws(doc)
    if kind == "DisaggregatedSet":
        return mk.read_disaggregated_set(doc)
    return mk.read_apps(doc, facts)


def _plan_facts(pools: Sequence[mp.DeployedPool], facts: dict[str, Fact],
                gaps: list[mp.Gap], where: Where) -> None:
    """Plan-wide facts from the pools: engine, its version (image tag), model, GPU type."""
    for key in ("engine", "model", "gpu_product"):
        if key not in facts:
            found = next((p.facts[key] for p in pools if key in p.facts), None)
            if found is not None:
                facts[key] = found
    image = next((p.facts["image"] for p in pools if "image" in p.facts), None)
    if image is not None:
        version = mp.image_version(str(image.value))
        dynamo = "ai-dynamo" in str(image.value) or "dynamo" in str(image.value).rsplit(
            "/", 1)[-1]
        if version is not None and not dynamo and "llm-d" not in str(image.value):
            facts["engine_version"] = Fact(value=version, where=image.where,
                                           source=f"image tag {image.value}")
        else:
            why = ("a Dynamo runtime image's tag is the Dynamo release, not the engine's"
                   if dynamo else "an llm-d image's tag is the llm-d release, not vLLM's"
                   if "llm-d" in str(image.value) else "the tag names no release")
            gaps.append(mp.Gap(what="engine version", where=image.where,
                               why=f"{image.value}: {why}; the workload's engine version "
                                   "(or the engine's current profile) is used"))
    if "gpu_product" not in facts:
        gaps.append(mp.Gap(what="GPU type", where=pools[0].where, why=(
            "no pool selects a GPU type (nodeSelector or required node affinity on "
            "nvidia.com/gpu.product or another GPU label); the workload's cluster.gpu is "
            "assumed")))
    if "model" not in facts:
        gaps.append(mp.Gap(what="model", where=where, why="no --model / --model-path or "
                           "model field; the workload's model is assumed"))
    if ("router_policy" not in facts and len(pools) > 1
            and not any(g.what == "router policy" for g in gaps)):
        gaps.append(mp.Gap(what="router policy", where=where, why=(
            "no router in this file (a Dynamo Frontend, a vllm-router or sglang-router "
            "Deployment)")))


# --------------------------------------------------------------------------- merging
def merge(plans: Sequence[DeployedPlan]) -> DeployedPlan:
    """The pools of several manifest files as one plan (facts of the first file that has
    them)."""
    if len(plans) == 1:
        return plans[0]
    facts: dict[str, Fact] = {}
    for plan in plans:
        for key, fact in plan.facts.items():
            facts.setdefault(key, fact)
    gaps = tuple(g for p in plans for g in p.gaps
                 if not (g.what in ("GPU type", "model", "router policy")
                         and {"GPU type": "gpu_product", "model": "model",
                              "router policy": "router_policy"}[g.what] in facts))
    return DeployedPlan(path=plans[0].path, kind=", ".join(dict.fromkeys(p.kind for p in plans)),
                        name=", ".join(p.name for p in plans if p.name), facts=facts,
                        pools=tuple(pool for p in plans for pool in p.pools), gaps=gaps,
                        where=plans[0].where)


# --------------------------------------------------------------------------- as deployment
@dataclass(frozen=True, kw_only=True)
class ManifestDeployment:
    """A plan as a workload ``deployment:`` block, with the place of each key."""

    plan: DeployedPlan
    data: dict[str, Any]
    where: dict[str, Where]
    """``deployment.<key>`` → where in the manifest it was read (``deployment`` and
    ``deployment.mode``: the plan)."""
    notes: tuple[mp.Gap, ...]
    """Values the pools disagree on, and which was taken."""


def as_deployment(plan: DeployedPlan) -> ManifestDeployment:
    """The workload ``deployment:`` block of ``plan``; :class:`InputError` when the pools do
    not make one (a prefill pool without a decode pool, two colocated pools, ...)."""
    roles = [p.role for p in plan.pools]
    where: dict[str, Where] = {"deployment": plan.where, "deployment.mode": plan.where}
    notes: list[mp.Gap] = []

    def fail(at: Where, message: str) -> InputError:
        return InputError([InputProblem(path=at.path, line=at.line, col=at.col, key=at.key,
                                        message=message)])

    for role in mp.ROLES:
        if roles.count(role) > 1:
            second = [p for p in plan.pools if p.role == role][1]
            raise fail(second.where, f"a second {role} pool ({second.name}); pd-advisor gates "
                       "one pool per role")
    data: dict[str, Any] = {}
    pools = {p.role: p for p in plan.pools}
    if "colocated" in pools and len(pools) > 1:
        other = next(p for p in plan.pools if p.role != "colocated")
        raise fail(other.where, f"a {other.role} pool next to a colocated one "
                   f"({pools['colocated'].name})")
    if ("prefill" in pools) != ("decode" in pools):
        have = pools.get("prefill") or pools["decode"]
        missing = "decode" if "prefill" in pools else "prefill"
        raise fail(have.where, f"a {have.role} pool without a {missing} pool: name the "
                   f"{missing} manifest too (deployment.from: [..., ...])")
    for pool in plan.pools:
        for key in ("replicas", "gpus"):
            if pool.value(key) is None:
                what = "GPUs per replica" if key == "gpus" else key
                raise fail(pool.where, f"{pool.name}: its {what} are not in the manifest "
                           "(see the gaps)")
    if "colocated" in pools:
        pool = pools["colocated"]
        data["mode"] = "colocated"
        _degree(data, where, pool, "")
        chunked = pool.facts.get("chunked_prefill")
        if chunked is not None:
            data["chunked_prefill"] = bool(chunked.value)
            where["deployment.chunked_prefill"] = chunked.where
        budget = pool.facts.get("token_budget")
        if budget is not None and data.get("chunked_prefill", True):
            data["chunk_tokens"] = int(budget.value)
            where["deployment.chunk_tokens"] = budget.where
        limited = [pool]
        seq_pool = pool
    else:
        data["mode"] = "disaggregated"
        for role in ("prefill", "decode"):
            pool = pools[role]
            data[f"{role}_gpus"] = pool.total_gpus
            where[f"deployment.{role}_gpus"] = pool.facts["replicas"].where
            _degree(data, where, pool, f"{role}_")
        limited = [pools["prefill"], pools["decode"]]
        seq_pool = pools["decode"]
    policy = plan.facts.get("router_policy")
    if policy is not None:
        reading = model_policy(str(policy.value))
        if reading.policy is not None:
            data["router"] = reading.policy
            where["deployment.router"] = policy.where
        if reading.note is not None:
            notes.append(mp.Gap(what="router policy", where=policy.where, why=(
                f"{policy.value} ({policy.source}): {reading.note}")))
    seqs = seq_pool.facts.get("max_num_seqs")
    if seqs is not None:
        value = int(seqs.value)
        ranks = seq_pool.value("attention_dp")
        if seq_pool.value("engine") == "sglang" and ranks:  # per instance; per rank below
            value = max(1, value // int(ranks))
        data["max_num_seqs"] = value
        where["deployment.max_num_seqs"] = seqs.where
    for key in ("max_model_len", "gpu_memory_utilization"):
        given = [(p.facts[key], p) for p in limited if key in p.facts]
        if not given:
            continue
        fact, _ = min(given, key=lambda item: float(item[0].value))
        if len({float(f.value) for f, _ in given}) > 1:
            notes.append(mp.Gap(what=key.replace("_", " "), where=fact.where, why=(
                "the pools differ (" + ", ".join(f"{p.role} {f.value}" for f, p in given)
                + f"); the smallest, {fact.value}, is gated")))
        data[key] = int(fact.value) if key == "max_model_len" else float(fact.value)
        where[f"deployment.{key}"] = fact.where
    return ManifestDeployment(plan=plan, data=data, where=where, notes=tuple(notes))


def _degree(data: dict[str, Any], where: dict[str, Where], pool: mp.DeployedPool,
            prefix: str) -> None:
    ep = pool.facts.get("expert_parallel")
    if ep is not None and int(ep.value) > 1:
        data[f"{prefix}expert_parallel"] = int(ep.value)
        where[f"deployment.{prefix}expert_parallel"] = ep.where
        return
    tp = pool.facts["tensor_parallel"]
    data[f"{prefix}tensor_parallel"] = int(tp.value)
    where[f"deployment.{prefix}tensor_parallel"] = tp.where


def workload_for(plan: DeployedPlan, manifest: Path) -> Path | None:
    """The workload a manifest's ``# pd-advisor: workload=`` annotation names (relative to
    the manifest's folder)."""
    ref = plan.value("workload")
    if not ref:
        return None
    path = Path(str(ref)).expanduser()
    return path if path.is_absolute() else manifest.parent / path
