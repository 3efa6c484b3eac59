"""Launch flags of an expert-parallel (wide-EP, DP-attention) instance, per engine.

Pure functions of the pool's EP degree, role and node layout; the launch renderer
(:mod:`advisor.render.launch`) calls them. Flags as the current releases spell them, read in
the ``sglang==0.5.23`` wheel (``srt/arg_groups/fields/parallel.py``, ``parallel_hook.py``),
sgl-project/sglang ``docs/advanced_features/expert_parallelism.md`` and
``pd_disaggregation.md``, the ``vllm==0.33.0`` wheel (``engine/arg_utils.py``,
``config/parallel.py``) and vllm-project/vllm ``docs/serving/expert_parallel_deployment.md``,
``data_parallel_deployment.md`` and ``docs/design/dbo.md``:

* **SGLang** (0.5.23): one ``launch_server`` per node with ``--tp-size N`` (all GPUs of the
  instance), ``--attn-dp-size N`` (DP attention; SGLang ≤ 0.5.18 spells it
  ``--dp-size N --enable-dp-attention``, which 0.5.23 still translates until 2026-12-31),
  ``--ep-size N``, ``--moe-a2a-backend deepep`` with ``--deepep-mode normal`` on prefill,
  ``low_latency`` on decode, ``auto`` colocated, ``--moe-dense-tp-size 1`` (dense layers
  replicated per attention rank, as the cost model assumes), ``--enable-two-batch-overlap``,
  ``--enable-eplb --ep-num-redundant-experts R``.
* **vLLM** (0.33): one ``vllm serve`` per node with ``--tensor-parallel-size 1
  --data-parallel-size N --data-parallel-size-local L --enable-expert-parallel
  --all2all-backend deepep_high_throughput|deepep_low_latency --enable-eplb
  --eplb-config '{"num_redundant_experts":R}' --enable-dbo``; node 0 serves HTTP
  (``--api-server-count L``), the others run ``--data-parallel-start-rank k·L --headless``;
  all share ``--data-parallel-address`` and ``--data-parallel-rpc-port`` (the launch script
  writes these per node, from its node rank). Batched-DP MoE
  shrinks vLLM's default token budget and running sequences to 256 per rank, so both are set
  explicitly.
"""

from __future__ import annotations

import json

DP_RPC_PORT = 13345
"""``--data-parallel-rpc-port`` of vLLM's multi-node EP example."""


def sglang_deepep_mode(role: str) -> str:
    """DeepEP kernels per role: normal (high-throughput) for prefill, low-latency for decode,
    auto (both, by batch) for a colocated instance."""
    return {"prefill": "normal", "decode": "low_latency"}.get(role, "auto")


def vllm_all2all_backend(role: str) -> str:
    """vLLM's all-to-all backend per role (decode and colocated: low latency)."""
    return "deepep_high_throughput" if role == "prefill" else "deepep_low_latency"


def sglang_ep_flags(expert_parallel: int, role: str, redundant_experts: int,
                    attention_tensor_parallel: int = 1) -> list[str]:
    """SGLang flags of an instance of ``expert_parallel`` GPUs with DP attention in
    ``expert_parallel / attention_tensor_parallel`` ranks (no ``--attn-dp-size`` and dense
    layers TP over the instance when attention is TP over all of it)."""
    n = str(expert_parallel)
    ranks = expert_parallel // max(attention_tensor_parallel, 1)
    flags = ["--tp-size", n]
    if ranks > 1:
        flags += ["--attn-dp-size", str(ranks)]
    flags += ["--ep-size", n, "--moe-a2a-backend", "deepep",
              "--deepep-mode", sglang_deepep_mode(role)]
    if ranks > 1:
        flags += ["--moe-dense-tp-size", "1"]
    flags += ["--enable-two-batch-overlap"]
    if redundant_experts > 0:
        flags += ["--enable-eplb", "--ep-num-redundant-experts", str(redundant_experts)]
    return flags


def vllm_ep_flags(expert_parallel: int, gpus_per_node: int, role: str,
                  redundant_experts: int, attention_tensor_parallel: int = 1) -> list[str]:
    """vLLM flags shared by every node of an instance of ``expert_parallel`` GPUs: attention
    TP ``attention_tensor_parallel`` inside each of ``expert_parallel / attention TP`` DP
    ranks (EP = TP × DP). Values are plain words: the script writer quotes them."""
    tp = max(attention_tensor_parallel, 1)
    ranks = expert_parallel // tp
    local = max(1, min(expert_parallel, gpus_per_node) // tp)
    flags = ["--tensor-parallel-size", str(tp), "--data-parallel-size", str(ranks),
             "--data-parallel-size-local", str(local), "--enable-expert-parallel",
             "--all2all-backend", vllm_all2all_backend(role)]
    if ranks > 1:  # dual batch overlap needs DP > 1
        flags += ["--enable-dbo"]
    if redundant_experts > 0:
        config = json.dumps({"num_redundant_experts": redundant_experts}, separators=(",", ":"))
        flags += ["--enable-eplb", "--eplb-config", config]
    return flags


def per_rank(running_sequences: int, ranks: int) -> int:
    """An instance-wide count (running sequences, token budget) per DP-attention rank (vLLM
    applies ``--max-num-seqs`` and ``--max-num-batched-tokens`` per rank)."""
    return max(1, running_sequences // max(ranks, 1))
