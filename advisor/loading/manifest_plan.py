"""The serving plan a Kubernetes manifest deploys, every value with where it was read.

A manifest reader (:mod:`advisor.loading.manifest_kinds`) returns a :class:`DeployedPlan`:
the engine and its version, the model, the router policy and, per pool (colocated, prefill,
decode), the replica count, GPUs per replica (and nodes it spans), the parallel degrees and
the engine limits. Each value is a :class:`Fact` that says where in the manifest it stands
(``path:line:col`` and the dotted key) and what it was read from (a flag, a CRD field, a
chart or engine default the manifest relies on). What the manifest does not say is a
:class:`Gap` at the place it would be, never a guess.

This module also holds what every reader shares: the engine command line of a pod
(:func:`pod_engine`, through :mod:`advisor.loading.engine_argv`), its GPUs and GPU type
(:func:`pod_gpus`, :func:`gpu_product`), and the GPU profile a node label names
(:func:`gpu_profile_for_label`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from advisor.loading import engine_argv as ea
from advisor.loading.yaml_source import YamlDocument

Loc = tuple[str | int, ...]

ROLES = ("colocated", "prefill", "decode")


@dataclass(frozen=True, kw_only=True)
class Where:
    """A place in a manifest."""

    path: str
    line: int
    col: int
    key: str
    """Dotted key of the node (``spec.services.VllmDecodeWorker.replicas``)."""

    def text(self) -> str:
        """``path:line``."""
        return f"{self.path}:{self.line}"


@dataclass(frozen=True, kw_only=True)
class Fact:
    """One value of the deployed plan and where it was read."""

    value: Any
    where: Where
    source: str
    """What it was read from: ``--tensor-parallel-size``, ``spec.parallelism.tensor``, or a
    default the manifest relies on (``Dynamo frontend default``)."""


@dataclass(frozen=True, kw_only=True)
class Gap:
    """A value the manifest does not give (or gives in a form that cannot be read)."""

    what: str
    where: Where
    why: str

    def text(self) -> str:
        """``path:line: what: why``."""
        return f"{self.where.text()}: {self.what}: {self.why}"


@dataclass(frozen=True, kw_only=True)
class DeployedPool:
    """Identical replicas of one role."""

    role: str
    """``colocated``, ``prefill`` or ``decode``."""
    name: str
    """The component's name in the manifest."""
    where: Where
    """Where the pool is declared (its replica count, or the component)."""
    facts: Mapping[str, Fact]
    """``replicas``, ``gpus`` (per replica), ``nodes`` (per replica), ``tensor_parallel``,
    ``pipeline_parallel``, ``data_parallel``, ``expert_parallel``, ``token_budget``,
    ``chunked_prefill``, ``max_num_seqs``, ``max_model_len``, ``gpu_memory_utilization``,
    ``kv_connector``, ``kv_cache_dtype``, ``engine``, ``image``, ``model``, ``gpu_product``."""

    def value(self, key: str) -> Any:
        """The value of ``key`` (None when the manifest does not give it)."""
        fact = self.facts.get(key)
        return None if fact is None else fact.value

    @property
    def total_gpus(self) -> int | None:
        """Replicas × GPUs per replica (None when either is unknown)."""
        replicas, gpus = self.value("replicas"), self.value("gpus")
        return None if replicas is None or gpus is None else int(replicas) * int(gpus)


@dataclass(frozen=True, kw_only=True)
class DeployedPlan:
    """What one manifest file (or several, merged) deploys."""

    path: str
    kind: str
    """``DynamoGraphDeployment nvidia.com/v1beta1``, ``llm-d-modelservice values``, ..."""
    name: str
    facts: Mapping[str, Fact]
    """``engine``, ``engine_version``, ``model``, ``gpu_product``, ``router_policy``,
    ``workload`` (the ``# pd-advisor: workload=`` annotation)."""
    pools: tuple[DeployedPool, ...]
    gaps: tuple[Gap, ...]
    where: Where

    def value(self, key: str) -> Any:
        fact = self.facts.get(key)
        return None if fact is None else fact.value

    def pool(self, role: str) -> DeployedPool | None:
        return next((p for p in self.pools if p.role == role), None)


class ManifestError(Exception):
    """A manifest that cannot be read as a serving plan; ``where`` says where."""

    def __init__(self, where: Where, message: str) -> None:
        self.where = where
        self.message = message
        super().__init__(message)


# --------------------------------------------------------------------------- a document
@dataclass
class Doc:
    """One YAML document of a manifest file, with helpers that keep positions."""

    document: YamlDocument
    gaps: list[Gap] = field(default_factory=list)

    @property
    def path(self) -> str:
        return self.document.path

    def get(self, loc: Loc) -> Any:
        """The plain value at ``loc`` (None when absent)."""
        value: Any = self.document.data
        for part in loc:
            listed = isinstance(part, int) and isinstance(value, list) and 0 <= part < len(value)
            if listed or (isinstance(part, str) and isinstance(value, dict) and part in value):
                value = value[part]
            else:
                return None
        return value

    def where(self, loc: Loc, at_key: bool = False) -> Where:
        line, col = self.document.locate(loc, at_key=at_key)
        return Where(path=self.path, line=line, col=col,
                     key=".".join(str(p) for p in loc))

    def fact(self, value: Any, loc: Loc, source: str | None = None) -> Fact:
        return Fact(value=value, where=self.where(loc), source=source or ".".join(
            str(p) for p in loc))

    def gap(self, what: str, loc: Loc, why: str) -> None:
        self.gaps.append(Gap(what=what, where=self.where(loc), why=why))

    def word_where(self, word: ea.Word, loc: Loc) -> Where:
        return Where(path=self.path, line=word.line, col=word.col,
                     key=".".join(str(p) for p in loc))


# --------------------------------------------------------------------------- GPU type
_GPU_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"gb200", "gb200"), (r"b200", "b200"), (r"h200", "h200-sxm"), (r"h800", "h800"),
    (r"h100.*(pcie|nvl)", "h100-pcie"), (r"h100", "h100-sxm"), (r"h20\b|h20-", "h20"),
    (r"a100.*(40gb|40g)", "a100-40gb-sxm"), (r"a100.*pcie", "a100-80gb-pcie"),
    (r"tesla-a100$|a100-sxm4-40", "a100-40gb-sxm"), (r"a100", "a100-80gb-sxm"),
    (r"l40s", "l40s"), (r"\bl4\b|-l4$|^l4$", "l4"), (r"a10g", "a10g"),
    (r"mi325x", "mi325x"), (r"mi300x", "mi300x"))
"""GPU profile per node-label value, first match wins (lower case): NVIDIA GPU Feature
Discovery's ``nvidia.com/gpu.product`` (the board name with dashes, e.g.
``NVIDIA-H100-80GB-HBM3``), GKE's ``cloud.google.com/gke-accelerator`` (``nvidia-h100-80gb``,
``nvidia-tesla-a100`` = the 40 GB A100), and any label whose value names the board."""

GPU_LABEL_KEYS = ("nvidia.com/gpu.product", "cloud.google.com/gke-accelerator",
                  "karpenter.k8s.aws/instance-gpu-name", "amd.com/gpu.product-name",
                  "node.kubernetes.io/instance-type")
"""Node labels read for the GPU type (any other key with ``gpu`` or ``accelerator`` in its
name is read too)."""


def gpu_profile_for_label(value: str) -> str | None:
    """The GPU profile id a node-label value names (None when it names none we know)."""
    text = value.lower().replace("_", "-").replace(" ", "-")
    for pattern, profile in _GPU_PATTERNS:
        if re.search(pattern, text):
            return profile
    return None


def _label_key(key: str) -> bool:
    low = key.lower()
    return key in GPU_LABEL_KEYS or "gpu" in low or "accelerator" in low


def gpu_product(doc: Doc, pod: Loc) -> Fact | None:
    """The GPU type a pod spec asks for: its ``nodeSelector`` or required node affinity on a
    GPU label (the first value, when affinity lists several)."""
    selector = doc.get((*pod, "nodeSelector"))
    if isinstance(selector, dict):
        for key, value in selector.items():
            if isinstance(value, str) and _label_key(str(key)):
                return doc.fact(value, (*pod, "nodeSelector", key), f"nodeSelector {key}")
    terms = doc.get((*pod, "affinity", "nodeAffinity",
                     "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"))
    for t, term in enumerate(terms if isinstance(terms, list) else []):
        exprs = term.get("matchExpressions") if isinstance(term, dict) else None
        for e, expr in enumerate(exprs if isinstance(exprs, list) else []):
            if (isinstance(expr, dict) and _label_key(str(expr.get("key", "")))
                    and expr.get("operator") == "In" and expr.get("values")):
                loc = (*pod, "affinity", "nodeAffinity",
                       "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms",
                       t, "matchExpressions", e, "values", 0)
                return doc.fact(str(expr["values"][0]), loc, f"node affinity {expr['key']}")
    return None


GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu")


def pod_gpus(doc: Doc, container: Loc) -> Fact | None:
    """Whole GPUs a container requests (limits, else requests)."""
    for part in ("limits", "requests"):
        for name in GPU_RESOURCES:
            value = doc.get((*container, "resources", part, name))
            if value is not None:
                return _count(doc, value, (*container, "resources", part, name), name)
    return None


def _count(doc: Doc, value: Any, loc: Loc, what: str) -> Fact | None:
    try:
        count = int(str(value))
    except ValueError:
        doc.gap("GPU count", loc, f"{what} is {value!r}, not a whole number of GPUs")
        return None
    return doc.fact(count, loc, what)


def gpu_count(doc: Doc, value: Any, loc: Loc, what: str) -> Fact | None:
    """A GPU count written as a number or a string (Dynamo v1alpha1 ``resources.limits.gpu``)."""
    return None if value is None else _count(doc, value, loc, what)


# --------------------------------------------------------------------------- engine line
@dataclass(frozen=True, kw_only=True)
class PodEngine:
    """The engine a pod runs, as its command line says."""

    program: str
    engine: str
    facts: dict[str, Fact]
    role: Fact | None
    """``prefill``/``decode`` when the flags say (``--disaggregation-mode``, a
    ``kv_producer``/``kv_consumer`` KV role)."""
    container: Loc


def container_env(doc: Doc, container: Loc) -> dict[str, str | None]:
    """The container's ``env``: literal values; ``valueFrom`` (secrets, fields) as None."""
    out: dict[str, str | None] = {}
    env = doc.get((*container, "env"))
    for item in env if isinstance(env, list) else []:
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            value = item.get("value")
            out[item["name"]] = None if value is None else str(value)
    return out


def containers(doc: Doc, pod: Loc) -> Iterator[Loc]:
    """The locations of a pod spec's containers (a Dynamo v1alpha1 ``extraPodSpec``'s
    ``mainContainer`` first)."""
    if isinstance(doc.get((*pod, "mainContainer")), dict):
        yield (*pod, "mainContainer")
    items = doc.get((*pod, "containers"))
    for i in range(len(items) if isinstance(items, list) else 0):
        yield (*pod, "containers", i)


def invocation(doc: Doc, container: Loc) -> ea.Invocation | None:
    """The engine or router command a container runs."""
    document = doc.document
    commands = ea.container_words(document.node((*container, "command"))
                                  if doc.get((*container, "command")) is not None else None,
                                  document.node((*container, "args"))
                                  if doc.get((*container, "args")) is not None else None)
    return ea.find_invocation(commands)


def pod_engine(doc: Doc, pod: Loc, env: Mapping[str, str | None] | None = None,
               extra: Sequence[ea.Word] = (), prefix: ea.Invocation | None = None
               ) -> PodEngine | None:
    """The engine command of the first container of ``pod`` that runs one (None: none does);
    ``env`` adds variables (``LWS_GROUP_SIZE``), ``extra`` words after the command line
    (KServe's ``VLLM_ADDITIONAL_ARGS``), ``prefix`` a command the platform supplies (a chart's
    or preset's ``vllm serve``)."""
    for container in containers(doc, pod):
        found = invocation(doc, container)
        if found is None and prefix is not None and doc.get((*container, "command")) is None:
            words = prefix.words + tuple(ea.node_words(doc.document.node((*container, "args"))
                                                       if doc.get((*container, "args"))
                                                       is not None else None))
            found = ea.Invocation(program=prefix.program, words=words, at=prefix.at)
        if found is None or found.engine is None:
            continue
        variables = {**container_env(doc, container), **(env or {})}
        for name, value in found.assignments:
            variables[name] = ea.expand(value, variables)
        full = ea.Invocation(program=found.program, words=found.words + tuple(extra),
                             at=found.at)
        facts, role = _engine_facts(doc, full, variables, container)
        return PodEngine(program=found.program, engine=str(found.engine), facts=facts,
                         role=role, container=container)
    return None


_VLLM_KEYS = {"--tensor-parallel-size": "tensor_parallel",
              "--pipeline-parallel-size": "pipeline_parallel",
              "--data-parallel-size": "data_parallel",
              "--data-parallel-size-local": "data_parallel_local",
              "--max-num-batched-tokens": "token_budget", "--max-num-seqs": "max_num_seqs",
              "--max-model-len": "max_model_len",
              "--gpu-memory-utilization": "gpu_memory_utilization",
              "--kv-cache-dtype": "kv_cache_dtype", "--model": "model"}
_SGLANG_KEYS = {"--tp-size": "tensor_parallel", "--pp-size": "pipeline_parallel",
                "--dp-size": "data_parallel", "--attn-dp-size": "attention_dp",
                "--ep-size": "expert_parallel", "--chunked-prefill-size": "token_budget",
                "--max-running-requests": "max_num_seqs", "--context-length": "max_model_len",
                "--mem-fraction-static": "gpu_memory_utilization",
                "--kv-cache-dtype": "kv_cache_dtype", "--model-path": "model",
                "--nnodes": "nodes", "--disaggregation-transfer-backend": "kv_connector"}
_TRTLLM_KEYS = {"--tp-size": "tensor_parallel", "--pp-size": "pipeline_parallel",
                "--ep-size": "expert_parallel", "--max-num-tokens": "token_budget",
                "--max-batch-size": "max_num_seqs", "--max-seq-len": "max_model_len",
                "--kv-cache-free-gpu-memory-fraction": "gpu_memory_utilization"}
_FLOATS = frozenset({"gpu_memory_utilization"})
_STRINGS = frozenset({"model", "kv_cache_dtype", "kv_connector"})


def _engine_facts(doc: Doc, inv: ea.Invocation, variables: Mapping[str, str | None],
                  container: Loc) -> tuple[dict[str, Fact], Fact | None]:
    keys = {"vllm": _VLLM_KEYS, "sglang": _SGLANG_KEYS}.get(str(inv.engine), _TRTLLM_KEYS)
    positional, flags = ea.parse_flags(inv)
    facts: dict[str, Fact] = {}
    role: Fact | None = None
    loc = (*container, "args")

    def put(key: str, raw: str | None, word: ea.Word, source: str) -> None:
        text = None if raw is None else ea.expand(raw, variables)
        where = doc.word_where(word, loc)
        if text is None:
            doc.gaps.append(Gap(what=key.replace("_", " "), where=where, why=(
                f"{source} {raw} uses a variable the manifest does not set (or sets from a "
                "secret or field reference)")))
            return
        value: Any = text
        if key not in _STRINGS:
            try:
                value = float(text) if key in _FLOATS else int(text)
            except ValueError:
                doc.gaps.append(Gap(what=key.replace("_", " "), where=where,
                                    why=f"{source} {text!r} is not a number"))
                return
        facts[key] = Fact(value=value, where=where, source=source)

    if positional and inv.engine in ("vllm", "trtllm") and inv.program != "dynamo.vllm":
        put("model", positional[0].text, positional[0], "the model argument")
    for flag in flags:
        key = keys.get(flag.name)
        if key is not None and flag.value is not None:
            put(key, flag.value, flag.at, flag.name)
        elif flag.name in ("--enable-expert-parallel",) and inv.engine == "vllm":
            facts["expert_parallel"] = Fact(value=True, where=doc.word_where(flag.at, loc),
                                            source=flag.name)
        elif flag.name in ("--enable-chunked-prefill", "--no-enable-chunked-prefill"):
            facts["chunked_prefill"] = Fact(value=flag.name.startswith("--enable"),
                                            where=doc.word_where(flag.at, loc),
                                            source=flag.name)
        elif flag.name == "--enable-dp-attention":
            facts["dp_attention"] = Fact(value=True, where=doc.word_where(flag.at, loc),
                                         source=flag.name)
        elif flag.name == "--kv-transfer-config" and flag.value is not None:
            config = _json(ea.expand(flag.value, variables))
            where = doc.word_where(flag.at, loc)
            if isinstance(config, dict) and config.get("kv_connector"):
                facts["kv_connector"] = Fact(value=str(config["kv_connector"]), where=where,
                                             source=flag.name)
                kv_role = config.get("kv_role")
                if kv_role in ("kv_producer", "kv_consumer"):
                    role = Fact(value="prefill" if kv_role == "kv_producer" else "decode",
                                where=where, source=f"{flag.name} kv_role {kv_role}")
            else:
                doc.gaps.append(Gap(what="KV connector", where=where,
                                    why=f"{flag.name} is not a JSON object with kv_connector"))
        elif flag.name == "--disaggregation-mode" and flag.value in ("prefill", "decode"):
            role = Fact(value=flag.value, where=doc.word_where(flag.at, loc), source=flag.name)
    budget = facts.get("token_budget")
    if inv.engine == "sglang" and budget is not None and budget.value == -1:
        facts["chunked_prefill"] = Fact(value=False, where=budget.where, source=budget.source)
        del facts["token_budget"]
    return facts, role


def _json(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def image_version(image: str) -> str | None:
    """The release an image tag names (``vllm/vllm-openai:v0.8.5`` → ``0.8.5``), None for
    ``latest``, a digest or a tag without a version."""
    tag = image.rsplit("/", 1)[-1].partition("@")[0].partition(":")[2]
    match = re.match(r"^v?([0-9]+(?:\.[0-9]+)+(?:\.post[0-9]+)?)", tag)
    return match[1] if match else None
