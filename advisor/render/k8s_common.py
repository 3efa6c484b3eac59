"""What every emitted Kubernetes manifest shares: names, labels, the GPU node selector, the
engine container of a pool (its flags from :mod:`advisor.render.engine_flags`, the same table
the launch script uses), whole-GPU requests, and the YAML text itself.

Manifests are written by PyYAML's emitter (``yaml.safe_dump_all``), never by formatting
strings: every value, a model path with quotes or a newline included, is quoted by the
emitter as YAML needs. The header is YAML comments with control characters escaped, so no
value can leave its comment.

GPU node selectors use NVIDIA GPU Feature Discovery's ``nvidia.com/gpu.product`` label (the
board name as ``nvidia-smi`` prints it, spaces as dashes; NVIDIA/gpu-feature-discovery
README, "Generated Labels"); check yours with ``kubectl get nodes -L nvidia.com/gpu.product``.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from advisor.escaping import yaml_comment
from advisor.render.engine_flags import ENGINE_RELEASES, KV_ENV, server_flags
from advisor.render.formats import EmitEngine
from advisor.render.launch_plan import LaunchPlan, Pool

GPU_PRODUCT_LABELS: dict[str, str] = {
    "h100-sxm": "NVIDIA-H100-80GB-HBM3", "h100-pcie": "NVIDIA-H100-PCIe",
    "h200-sxm": "NVIDIA-H200", "h800": "NVIDIA-H800", "h20": "NVIDIA-H20",
    "a100-80gb-sxm": "NVIDIA-A100-SXM4-80GB", "a100-40gb-sxm": "NVIDIA-A100-SXM4-40GB",
    "a100-80gb-pcie": "NVIDIA-A100-80GB-PCIe", "b200": "NVIDIA-B200", "gb200": "NVIDIA-GB200",
    "l40s": "NVIDIA-L40S", "l4": "NVIDIA-L4", "a10g": "NVIDIA-A10G"}
"""``nvidia.com/gpu.product`` per GPU profile (AMD profiles: none, the manifest says so)."""

GPU_RESOURCE = "nvidia.com/gpu"
PORT = 8000
"""The port every emitted engine serves HTTP on inside its pod."""
HF_SECRET = "hf-token-secret"
"""The Secret (key ``HF_TOKEN``) pods read a Hugging Face token from, if it exists."""

ENGINE_IMAGES = {EmitEngine.vllm: "vllm/vllm-openai:v{version}",
                 EmitEngine.sglang: "lmsysorg/sglang:v{version}"}
"""The engines' own images at the release whose flags are written."""


def image(plan: LaunchPlan) -> str:
    """The engine image (the release the flags are written for)."""
    return ENGINE_IMAGES[plan.engine].format(version=ENGINE_RELEASES[plan.engine])


def dns_name(text: str, limit: int = 40) -> str:
    """A DNS-1123 label made of ``text`` (lower case, dashes), at most ``limit`` long."""
    name = re.sub(r"[^a-z0-9]+", "-", text.rsplit("/", 1)[-1].lower()).strip("-")
    return (name[:limit].rstrip("-") or "model")


def base_name(plan: LaunchPlan) -> str:
    return dns_name(plan.checkpoint)


def labels(plan: LaunchPlan, pool: Pool) -> dict[str, str]:
    """Pod labels: the app, its component, and llm-d's role label for P/D pools (routers
    select on it)."""
    out = {"app.kubernetes.io/name": base_name(plan),
           "app.kubernetes.io/component": pool.role,
           "app.kubernetes.io/managed-by": "pd-advisor"}
    if pool.role != "colocated":
        out["llm-d.ai/role"] = pool.role
    return out


def node_selector(plan: LaunchPlan) -> dict[str, str]:
    label = GPU_PRODUCT_LABELS.get(plan.gpu)
    return {"nvidia.com/gpu.product": label} if label else {}


@dataclass(frozen=True, kw_only=True)
class PodShape:
    """How one instance of a pool is laid over pods."""

    pods: int
    """Pods per instance (nodes it spans)."""
    gpus: int
    """Whole GPUs each pod requests."""


def pod_shape(plan: LaunchPlan, pool: Pool) -> PodShape:
    """One pod per instance inside a node; one pod per node for an instance spanning
    nodes."""
    gpus = pool.gpus_per_instance
    if gpus <= plan.gpus_per_node:
        return PodShape(pods=1, gpus=gpus)
    return PodShape(pods=math.ceil(gpus / plan.gpus_per_node), gpus=plan.gpus_per_node)


def engine_command(plan: LaunchPlan, module: str | None = None) -> list[str]:
    """The program: ``vllm serve MODEL`` / ``python3 -m sglang.launch_server --model-path
    MODEL``, or ``python3 -m MODULE`` with the model option (Dynamo's workers)."""
    if module is not None:
        option = "--model" if plan.engine is EmitEngine.vllm else "--model-path"
        return ["python3", "-m", module, option, plan.checkpoint]
    if plan.engine is EmitEngine.vllm:
        return ["vllm", "serve", plan.checkpoint]
    return ["python3", "-m", "sglang.launch_server", "--model-path", plan.checkpoint]


def serve_args(plan: LaunchPlan, pool: Pool, port: int | None = PORT) -> list[str]:
    """Engine options of one server of ``pool`` in a pod: the flag table, plus the port (and
    SGLang's listen address)."""
    shape = pod_shape(plan, pool)
    words = server_flags(plan, pool, gpus_per_node=shape.gpus)
    if port is None:
        return words
    if plan.engine is EmitEngine.sglang:
        return ["--host", "0.0.0.0", "--port", str(port), *words]
    return ["--port", str(port), *words]


def env(plan: LaunchPlan, pool: Pool) -> list[dict[str, Any]]:
    """Container variables: the token secret (optional), the KV transfer's (P/D pools)."""
    out: list[dict[str, Any]] = [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {
        "name": HF_SECRET, "key": "HF_TOKEN", "optional": True}}}]
    if pool.role != "colocated":
        out += [{"name": name, "value": value} for name, value in KV_ENV[plan.engine]]
        if plan.engine is EmitEngine.vllm:
            out.append({"name": "VLLM_NIXL_SIDE_CHANNEL_HOST",
                        "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}})
    return out


def resources(gpus: int) -> dict[str, Any]:
    """Whole-GPU requests (limits = requests, as the device plugin needs)."""
    return {"limits": {GPU_RESOURCE: str(gpus)}, "requests": {GPU_RESOURCE: str(gpus)}}


def shm_volume() -> tuple[dict[str, Any], dict[str, Any]]:
    """/dev/shm in memory: NCCL between the GPUs of a pod needs more than the 64 MiB
    default."""
    return ({"name": "dshm", "emptyDir": {"medium": "Memory"}},
            {"name": "dshm", "mountPath": "/dev/shm"})


def header(plan: LaunchPlan, target: str, notes: Sequence[str] = ()) -> list[str]:
    """The comment lines above a manifest: what it deploys, what it targets, caveats."""
    pools = "; ".join(f"{p.role}: {p.instances} x {p.shape} ({p.instances * p.gpus_per_instance}"
                      f" GPUs)" for p in plan.pools)
    label = GPU_PRODUCT_LABELS.get(plan.gpu)
    paragraphs = [
        f"pd-advisor deployment ({plan.mode}) of {plan.checkpoint} on {plan.gpu}: {pools}.",
        f"Targets {target}. Engine flags: {plan.engine.value} {ENGINE_RELEASES[plan.engine]} "
        "(the table the launch script uses).",
        (f"GPU nodes are selected by nvidia.com/gpu.product={label} (NVIDIA GPU Feature "
         "Discovery); check yours with kubectl get nodes -L nvidia.com/gpu.product."
         if label else f"No GPU node selector: {plan.gpu} has no nvidia.com/gpu.product "
                       "label known to pd-advisor; add your cluster's."),
        f"Maximum request length {plan.max_model_len} tokens: {plan.max_model_len_note}.",
    ]
    if not plan.slo_met:
        paragraphs.append("WARNING: the report says this plan misses the SLOs on these GPUs.")
    paragraphs += [f"WARNING: {w}" for w in plan.warnings]
    paragraphs += [f"NOTE: {n}" for n in (*plan.notes, *notes)]
    lines = []
    for paragraph in paragraphs:
        lines += comment(paragraph)
    return lines


def comment(text: str) -> list[str]:
    """``#`` lines wrapped at 98 columns, escaped by the one rule
    (:func:`advisor.escaping.yaml_comment`: controls, line breaks, bidirectional overrides)."""
    return textwrap.wrap(yaml_comment(text), width=98, initial_indent="# ",
                         subsequent_indent="#   ", break_on_hyphens=False,
                         break_long_words=False)


class _Dumper(yaml.SafeDumper):
    """Block style, keys in the order written, long strings unwrapped."""


def dump(documents: Sequence[dict[str, Any]], comments: Sequence[str]) -> str:
    """The manifest text: comment lines, then the documents (``---`` separated)."""
    body = yaml.dump_all(list(documents), Dumper=_Dumper, sort_keys=False,
                         explicit_start=True, default_flow_style=False, width=10_000,
                         allow_unicode=False)
    return "".join(line + "\n" for line in comments) + body
