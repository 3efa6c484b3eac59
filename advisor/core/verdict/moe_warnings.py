"""Warnings about what the cost model cannot represent for a mixture-of-experts deployment
(docs/model.md §10): never a silent TP-only answer for a model that engines serve with
expert parallelism."""

from __future__ import annotations

from advisor.core.results import ModelResult
from advisor.core.scenario import Scenario


def moe_warnings(sc: Scenario, m: ModelResult) -> tuple[tuple[str, str], ...]:
    """``(id, message)`` pairs for an MoE scenario (empty for dense models)."""
    model, eng = sc.model, sc.engine
    if model.moe is None:
        return ()
    out: list[tuple[str, str]] = []
    if eng.expert_parallel is None or not eng.supports.expert_parallel:
        out.append(("ep-not-modelled",
                    f"{model.name} is a mixture-of-experts model, but the engine profile "
                    f"{eng.id} has no expert-parallel terms: only TP/PP plans were tried. "
                    "Wide expert parallelism with DP attention can deliver several times the "
                    "output per GPU (docs/model.md §3.4); use an engine profile with EP "
                    "(sglang, vllm)"))
        return tuple(out)
    if not sc.cluster.spans_nodes and sc.cluster.gpus > sc.cluster.gpus_per_node:
        out.append(("ep-single-node",
                    "no inter-node link is given: expert-parallel groups were limited to one "
                    "node; set cluster.inter_node to let EP span nodes"))
    uses_ep = (m.colocated is not None and m.colocated.expert_parallel > 1) or (
        m.disaggregated is not None and m.disaggregated.allocation is not None
        and max(m.disaggregated.allocation.prefill_expert_parallel,
                m.disaggregated.allocation.decode_expert_parallel) > 1)
    if uses_ep:
        out.append(("ep-left-out",
                    "expert-parallel plans leave out multi-token prediction (speculative decoding "
                    "raises decode tokens per step), KV-cache hits on disk (prefill work saved) "
                    "and dynamic expert imbalance beyond the fixed EPLB factor; see "
                    "docs/model.md §10"))
    return tuple(out)
