"""The one table of engine flags: what every server of a pool starts with, however it is
launched (the bash launch script, a Dynamo worker, a LeaderWorkerSet pod, a KServe or llm-d
container).

:func:`server_flags` gives a pool's engine options — parallelism, token budget, running
sequences, maximum length, memory fraction, KV dtype, the KV transfer settings — as plain
words (the caller quotes them for a shell or writes them as YAML list items); where each
server runs (ports, GPUs, node ranks, the head's address) is the launcher's business and not
here. Flags as the current releases spell them: vLLM 0.33 (``vllm==0.33.0`` wheel,
``engine/arg_utils.py``), SGLang 0.5.23 (``sglang==0.5.23`` wheel, ``srt/arg_groups``);
expert-parallel flags in :mod:`advisor.render.ep_flags`. The KV transfer settings follow the
vLLM "NixlConnector usage guide" (``kv_producer``/``kv_consumer``; ``kv_both`` for wide-EP
P/D, vLLM's expert-parallel deployment guide) and SGLang's "PD disaggregation" page
(``--disaggregation-mode``, the Mooncake transfer backend).
"""

from __future__ import annotations

import json
from typing import cast

from advisor.core.router_names import RouterKind, Stage, router_note, router_policy
from advisor.render.ep_flags import per_rank, sglang_ep_flags, vllm_ep_flags
from advisor.render.formats import EmitEngine
from advisor.render.launch_plan import LaunchPlan, Pool

ENGINE_RELEASES = {EmitEngine.vllm: "0.33.0", EmitEngine.sglang: "0.5.23"}
"""The release whose command line :func:`server_flags` writes."""

KV_ENV = {EmitEngine.vllm: (("UCX_NET_DEVICES", "all"),), EmitEngine.sglang: ()}
"""Environment every P/D server of an engine gets (NIXL's UCX may use every NIC)."""


def kv_transfer_config(pool: Pool) -> str:
    """vLLM's ``--kv-transfer-config`` of a P/D pool (compact JSON)."""
    if pool.expert_parallel > 1:  # vLLM's wide-EP P/D example: kv_both on both sides
        config = {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
    else:
        config = {"kv_connector": "NixlConnector",
                  "kv_role": "kv_producer" if pool.role == "prefill" else "kv_consumer"}
    return json.dumps(config, separators=(",", ":"))


def server_flags(plan: LaunchPlan, pool: Pool, gpus_per_node: int | None = None) -> list[str]:
    """The engine options of every server of ``pool`` (``gpus_per_node``: GPUs one process
    drives, for an expert-parallel vLLM instance's local DP size; default the plan's)."""
    if plan.engine is EmitEngine.vllm:
        return _vllm(plan, pool, gpus_per_node or plan.gpus_per_node)
    return _sglang(plan, pool)


def _limits(plan: LaunchPlan, seqs: int, vllm: bool) -> list[str]:
    if vllm:
        return ["--max-num-seqs", str(seqs), "--max-model-len", str(plan.max_model_len),
                "--gpu-memory-utilization", f"{plan.memory_fraction:g}",
                "--kv-cache-dtype", "fp8" if plan.fp8 else "auto"]
    return ["--max-running-requests", str(seqs), "--context-length", str(plan.max_model_len),
            "--mem-fraction-static", f"{plan.memory_fraction:g}",
            "--kv-cache-dtype", "fp8_e4m3" if plan.fp8 else "auto"]


def _vllm(plan: LaunchPlan, pool: Pool, gpus_per_node: int) -> list[str]:
    if pool.expert_parallel > 1:
        ranks = pool.attention_ranks
        words = vllm_ep_flags(pool.expert_parallel, gpus_per_node, pool.role,
                              pool.redundant_experts, pool.tensor_parallel)
        seqs = per_rank(pool.running_sequences, ranks)
        if pool.token_budget:
            words += ["--max-num-batched-tokens", str(per_rank(pool.token_budget, ranks))]
        elif pool.role == "colocated":  # whole prompts: the budget holds the longest one
            words += ["--no-enable-chunked-prefill",
                      "--max-num-batched-tokens", str(max(plan.max_model_len, seqs))]
        else:  # batched-DP MoE would default both to 256 per rank
            words += ["--max-num-batched-tokens", str(max(seqs, 256))]
    else:
        words = ["--tensor-parallel-size", str(pool.tensor_parallel)]
        if pool.pipeline_stages > 1:
            words += ["--pipeline-parallel-size", str(pool.pipeline_stages)]
        if pool.token_budget:
            words += ["--max-num-batched-tokens", str(pool.token_budget)]
        elif pool.role == "colocated":
            words += ["--no-enable-chunked-prefill"]
        seqs = pool.running_sequences
    words += _limits(plan, seqs, vllm=True)
    if pool.role != "colocated":
        words += ["--kv-transfer-config", kv_transfer_config(pool)]
    return words + speculative_flags(plan, pool)


def _sglang(plan: LaunchPlan, pool: Pool) -> list[str]:
    words = ["--disaggregation-mode", pool.role] if pool.role != "colocated" else []
    if pool.expert_parallel > 1:
        words += sglang_ep_flags(pool.expert_parallel, pool.role, pool.redundant_experts,
                                 pool.tensor_parallel)
    else:
        words += ["--tp-size", str(pool.tensor_parallel)]
    if pool.pipeline_stages > 1:
        words += ["--pp-size", str(pool.pipeline_stages)]
    if pool.role != "decode":
        words += ["--chunked-prefill-size", str(pool.token_budget) if pool.token_budget
                  else "-1"]
    words += _limits(plan, pool.running_sequences, vllm=False)
    if pool.role != "colocated":
        words += ["--disaggregation-transfer-backend", "mooncake"]
    return words + speculative_flags(plan, pool)


# --------------------------------------------------------------------------- speculation
VLLM_METHODS = {"eagle3": "eagle3", "mtp": "mtp", "ngram": "ngram", "draft-model": "draft_model"}
"""``deployment.speculative.method`` → vLLM's ``--speculative-config`` ``method`` (vLLM docs,
"Speculative Decoding": eagle3, mtp, ngram, draft_model)."""
SGLANG_ALGORITHMS = {"eagle3": "EAGLE3", "mtp": "NEXTN", "ngram": "NGRAM",
                     "draft-model": "STANDALONE"}
"""→ SGLang's ``--speculative-algorithm`` (its choices EAGLE, EAGLE3, NEXTN, STANDALONE,
NGRAM; ``srt/server_args.py``; NEXTN is EAGLE on the model's own MTP layers)."""
DRAFT_PLACEHOLDER = "DRAFT_CHECKPOINT"
"""Written where a draft is needed and the workload names none (set
``deployment.speculative.draft_model``)."""


def speculative_flags(plan: LaunchPlan, pool: Pool) -> list[str]:
    """The speculative-decoding options of a decoding server (colocated, decode; none for a
    prefill server, which emits no tokens of its own but the first)."""
    spec = plan.speculative
    if spec is None or pool.role == "prefill":
        return []
    k, draft = spec.draft_tokens, spec.draft_checkpoint
    needs_draft = spec.method in ("eagle3", "draft-model")
    if needs_draft and draft is None:
        draft = DRAFT_PLACEHOLDER
    if plan.engine is EmitEngine.vllm:
        config: dict[str, object] = {"method": VLLM_METHODS[spec.method]}
        if needs_draft:
            config["model"] = draft
        config["num_speculative_tokens"] = k
        return ["--speculative-config", json.dumps(config, separators=(",", ":"))]
    words = ["--speculative-algorithm", SGLANG_ALGORITHMS[spec.method]]
    if spec.method == "ngram":
        return [*words, "--speculative-num-draft-tokens", str(k)]
    if needs_draft:
        words += ["--speculative-draft-model-path", str(draft)]
    # a chain of k drafts: k steps, top-1, k + 1 tokens verified (SGLang's rule for topk 1)
    return [*words, "--speculative-num-steps", str(k), "--speculative-eagle-topk", "1",
            "--speculative-num-draft-tokens", str(k + 1)]


# --------------------------------------------------------------------------- routers
def _router_kind(plan: LaunchPlan) -> RouterKind:
    return "vllm-router" if plan.engine is EmitEngine.vllm else "sglang-router"


def stage_policies(plan: LaunchPlan, kind: RouterKind) -> dict[str, str]:
    """Each stage's router policy (stage -> the router's name for it) for the policy the
    model evaluated (:func:`advisor.core.router_names.router_policy`)."""
    return {p.role: router_policy(kind, plan.router, cast(Stage, p.role), p.instances)
            for p in plan.pools}


def router_policy_flags(plan: LaunchPlan) -> list[str]:
    """The policy options of the plan's router (vLLM Router or SGLang Model Gateway)."""
    chosen = stage_policies(plan, _router_kind(plan))
    if plan.mode == "colocated":
        return ["--policy", chosen["colocated"]]
    if plan.engine is not EmitEngine.vllm and chosen["prefill"] == chosen["decode"]:
        # the gateway's own default (cache_aware) needs no flag
        return [] if chosen["prefill"] == "cache_aware" else ["--policy", chosen["prefill"]]
    return ["--prefill-policy", chosen["prefill"], "--decode-policy", chosen["decode"]]


def router_notes(plan: LaunchPlan) -> list[str]:
    """What the emitted vLLM Router / SGLang Model Gateway runs when it is not the policy the
    model evaluated."""
    kind = _router_kind(plan)
    note = router_note(kind, plan.router, stage_policies(plan, kind))
    return [] if note is None else [note]
