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
  all share ``--data-parallel-address`` and ``--data-parallel-rpc-port``. Batched-DP MoE
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


def sglang_ep_flags(expert_parallel: int, role: str, redundant_experts: int) -> list[str]:
    """SGLang flags of an instance of ``expert_parallel`` GPUs with DP attention."""
    n = str(expert_parallel)
    flags = ["--tp-size", n, "--attn-dp-size", n, "--ep-size", n,
             "--moe-a2a-backend", "deepep", "--deepep-mode", sglang_deepep_mode(role),
             "--moe-dense-tp-size", "1", "--enable-two-batch-overlap"]
    if redundant_experts > 0:
        flags += ["--enable-eplb", "--ep-num-redundant-experts", str(redundant_experts)]
    return flags


def vllm_ep_flags(expert_parallel: int, gpus_per_node: int, role: str,
                  redundant_experts: int) -> list[str]:
    """vLLM flags shared by every node of an instance of ``expert_parallel`` GPUs."""
    local = min(expert_parallel, gpus_per_node)
    flags = ["--tensor-parallel-size", "1", "--data-parallel-size", str(expert_parallel),
             "--data-parallel-size-local", str(local), "--enable-expert-parallel",
             "--all2all-backend", vllm_all2all_backend(role), "--enable-dbo"]
    if redundant_experts > 0:
        config = json.dumps({"num_redundant_experts": redundant_experts}, separators=(",", ":"))
        flags += ["--enable-eplb", "--eplb-config", f"'{config}'"]
    return flags


def vllm_node_flags(node_rank: int, gpus_per_node: int, head_host: str,
                    expert_parallel: int) -> list[str]:
    """vLLM flags of one node of a multi-node EP instance (node 0 serves HTTP)."""
    local = min(expert_parallel, gpus_per_node)
    flags = ["--data-parallel-address", head_host, "--data-parallel-rpc-port", str(DP_RPC_PORT)]
    if node_rank == 0:
        return [*flags, "--api-server-count", str(local)]
    return [*flags, "--data-parallel-start-rank", str(node_rank * local), "--headless"]


def per_rank(running_sequences: int, expert_parallel: int) -> int:
    """An instance's running-sequence cap per DP-attention rank (engines apply it per rank)."""
    return max(1, running_sequences // max(expert_parallel, 1))
