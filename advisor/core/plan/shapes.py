"""Instance shapes: the tensor/pipeline-parallel sizes that fit the model, and their memory.

TP takes powers of two up to the node size; instances larger than a node use TP = node
size and 2, 4, … pipeline stages across nodes when the cluster has an inter-node link
(``memory.candidate_sizes``). Each shape's memory plan is made per traffic phase at the
phase's mean context; a shape that does not fit in some phase is excluded with the reason
(docs/model.md §4).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from advisor.core.expert_parallel import ep_candidate_sizes, expert_layout
from advisor.core.instance import Instance
from advisor.core.memory import build_instance, candidate_sizes, plan_memory
from advisor.core.results import ExcludedInstance
from advisor.core.scenario import Scenario


@dataclass(frozen=True)
class Shape:
    """One instance shape that can serve every phase of a scenario."""

    instance: Instance
    label: str
    """``TP4`` or ``TP8×PP2``."""
    max_sequences: Mapping[str, int]
    """Concurrent sequences one instance holds, per phase name (memory and engine cap)."""

    @property
    def gpus(self) -> int:
        """GPUs per instance."""
        return self.instance.gpus


def shape_label(tensor_parallel: int, pipeline_stages: int) -> str:
    """``TP4`` or ``TP8×PP2``."""
    if pipeline_stages == 1:
        return f"TP{tensor_parallel}"
    return f"TP{tensor_parallel}×PP{pipeline_stages}"


def instance_shapes(sc: Scenario) -> tuple[list[Shape], list[ExcludedInstance]]:
    """The shapes that fit ``sc``'s model on its cluster, and the excluded ones with why."""
    cl = sc.cluster
    max_request = max(p.prompt_tokens.upper_tokens + p.output_tokens.upper_tokens
                      for p in sc.phases)
    max_request = min(max_request, float(sc.model.max_context_tokens))
    if sc.deployment is not None and sc.deployment.max_model_len is not None:
        max_request = float(sc.deployment.max_model_len)  # engines reserve room for one
    shapes: list[Shape] = []
    excluded: list[ExcludedInstance] = []
    candidates = [build_instance(sc.model, cl.gpu, sc.precision, sc.engine, tp, pp,
                                 cl.intra_node, cl.inter_node)
                  for tp, pp in candidate_sizes(sc.model, cl.gpu, cl.gpus, cl.gpus_per_node,
                                                cl.spans_nodes)]
    candidates += expert_parallel_instances(sc)
    for inst in candidates:
        seqs: dict[str, int] = {}
        reason = ""
        for ph in sc.phases:
            ctx = ph.prompt_tokens.mean + ph.output_tokens.mean / 2.0
            mem = plan_memory(inst, ctx, max_request, sc.policy.memory_fraction)
            if not mem.fits:
                reason = mem.reason
                break
            seqs[ph.name] = mem.max_sequences
        if reason:
            excluded.append(ExcludedInstance(inst.label, reason))
        else:
            shapes.append(Shape(inst, inst.label, seqs))
    return shapes, excluded


def ep_sizes_upto(sc: Scenario, gpus: int) -> list[int]:
    """EP sizes :func:`expert_parallel_instances` may try on clusters of up to ``gpus`` GPUs
    with an inter-node link (empty for dense models and engines without EP terms)."""
    m, eng, cl = sc.model, sc.engine, sc.cluster
    terms = eng.expert_parallel
    if m.moe is None or terms is None or not eng.supports.expert_parallel:
        return []
    return ep_candidate_sizes(m.moe.num_experts, gpus, cl.gpus_per_node, True, terms)


def expert_parallel_instances(sc: Scenario) -> list[Instance]:
    """The expert-parallel instances to try for an MoE model on an engine with EP terms
    (docs/model.md §4.1): EP over one node or whole-node multiples that hold the experts
    evenly, attention data-parallel (where the engine has DP attention), and EP over one
    node with attention TP over the node. None for dense models, engines without EP, or a
    workload that pins another parallelism (``deployment.expert_parallel``)."""
    m, cl, eng = sc.model, sc.cluster, sc.engine
    terms = eng.expert_parallel
    if m.moe is None or terms is None or not eng.supports.expert_parallel:
        return []
    out: list[Instance] = []
    for ep in ep_candidate_sizes(m.moe.num_experts, cl.gpus, cl.gpus_per_node,
                                 cl.spans_nodes, terms):
        attention = [1] if eng.supports.dp_attention else []
        if ep == cl.gpus_per_node:
            attention.append(ep)
        for attn_tp in attention:
            lay = expert_layout(m.moe.num_experts, ep, attn_tp, cl.gpus_per_node, terms)
            if lay is not None:
                out.append(build_instance(m, cl.gpu, sc.precision, eng, attn_tp, 1,
                                          cl.intra_node, cl.inter_node, lay))
    return out
