"""Checks of a pinned expert-parallel degree (``deployment.expert_parallel``,
``prefill_expert_parallel``, ``decode_expert_parallel``; docs/model.md §4.1): the keys on
their own (schema stage) and against the model, engine and cluster (cross-check stage).
Messages only; the callers attach the locations."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, StrictInt

from advisor.core.expert_parallel import redundant_experts_for

POOL_DEGREE_KEYS: tuple[str, ...] = ("prefill_tensor_parallel", "decode_tensor_parallel",
                                     "prefill_expert_parallel", "decode_expert_parallel")
"""Per-pool parallelism keys of a disaggregated deployment."""

ExpertParallel = Annotated[StrictInt | None, Field(
    None, ge=1, description="Expert-parallel degree of each replica, MoE models only "
    "(colocated only): the routed experts sharded over this many GPUs (whole nodes) with "
    "data-parallel attention; instead of tensor_parallel.")]
PrefillExpertParallel = Annotated[StrictInt | None, Field(
    None, ge=1, description="Expert-parallel degree of each prefill instance (disaggregated "
    "only; MoE models).")]
DecodeExpertParallel = Annotated[StrictInt | None, Field(
    None, ge=1, description="Expert-parallel degree of each decode instance (disaggregated "
    "only; MoE models).")]


def ep_key_issues(deployment: Any, misplaced: set[str]) -> list[tuple[str, str]]:
    """(key, message) for EP keys given with the matching TP key, and pools that are not
    whole EP groups; adds conflicting keys to ``misplaced``."""
    out: list[tuple[str, str]] = []
    for prefix in ("", "prefill_", "decode_"):
        ep_key, tp_key = f"{prefix}expert_parallel", f"{prefix}tensor_parallel"
        if (getattr(deployment, ep_key) is not None and getattr(deployment, tp_key) is not None
                and ep_key not in misplaced):
            out.append((ep_key, f"give either {tp_key} or {ep_key}: an expert-parallel "
                                "instance runs data-parallel attention over its GPUs"))
            misplaced.add(ep_key)
    if deployment.mode != "disaggregated":
        return out
    for pool in ("prefill", "decode"):
        gpus = getattr(deployment, f"{pool}_gpus")
        ep = getattr(deployment, f"{pool}_expert_parallel")
        if gpus is None or ep is None or f"{pool}_expert_parallel" in misplaced:
            continue
        if ep > gpus:
            out.append((f"{pool}_expert_parallel", f"{ep} exceeds {pool}_gpus ({gpus})"))
        elif gpus % ep:
            out.append((f"{pool}_gpus", f"{gpus} is not a multiple of {pool}_expert_parallel "
                                        f"({ep}): pools hold whole EP groups"))
    return out


def expert_parallel_issues(deployment: Any, cluster: Any,
                           profiles: Any) -> list[tuple[tuple[str, ...], str]]:
    """A pinned EP degree against the model (MoE, experts held evenly), the engine (EP terms)
    and the cluster (whole nodes; a colocated pool of whole EP groups)."""
    out: list[tuple[tuple[str, ...], str]] = []
    model, engine, gpu = profiles.model, profiles.engine, profiles.gpu
    for name in ("expert_parallel", "prefill_expert_parallel", "decode_expert_parallel"):
        ep = getattr(deployment, name)
        if ep is None or model is None:
            continue
        loc = ("deployment", name)
        if model.moe is None:
            out.append((loc, f"expert parallelism needs a mixture-of-experts model; {model.id} "
                             "is dense (use tensor_parallel)"))
            continue
        terms = getattr(engine, "expert_parallel", None)
        if engine is not None and (terms is None or not engine.supports.expert_parallel):
            out.append((loc, f"the engine profile {engine.id} has no expert-parallel terms"))
            continue
        experts = model.moe.num_experts
        if terms is not None and redundant_experts_for(experts, ep, terms) is None:
            spare = min(terms.redundant_experts, experts // 8) if terms.balancer else 0
            extra = f" or {experts + spare} (with {spare} redundant)" if spare else ""
            out.append((loc, f"{ep} does not divide the model's {experts} routed experts{extra}"))
        if cluster is not None and gpu is not None:
            per_node = cluster.gpus_per_node or gpu.gpus_per_node
            if ep % per_node:
                out.append((loc, f"{ep} is not a whole number of nodes of {per_node} GPUs: "
                                 "EP groups are modelled over whole nodes"))
            elif ep > cluster.gpus:
                out.append((loc, f"{ep} exceeds cluster.gpus ({cluster.gpus})"))
            elif name == "expert_parallel" and cluster.gpus % ep:
                out.append((loc, f"cluster.gpus ({cluster.gpus}) is not a multiple of {ep}"))
    return out
