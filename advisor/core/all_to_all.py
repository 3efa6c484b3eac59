"""All-to-all dispatch and combine of an expert-parallel MoE layer (docs/model.md §3.4).

Under expert parallelism each MoE layer sends every token's hidden vector to the GPUs that
hold its top-k experts (*dispatch*) and brings the weighted expert outputs back
(*combine*). Per token and direction the payload is ``hidden × bytes`` per copy; how many
copies leave a GPU depends on the kernel family the engines use:

* prefill (DeepEP "normal" kernels, SGLang ``--deepep-mode auto``/vLLM
  ``deepep_high_throughput``): a token crosses the inter-node network once per *remote node*
  that holds one of its experts and is forwarded over NVLink inside that node, so the
  inter-node copies are the expected number of distinct remote nodes among k uniform picks;
* decode (DeepEP "low-latency" kernels): one copy per routed expert that is not on the GPU
  (no node deduplication; the low-latency kernels trade bytes for latency) — over NVLink to
  the GPUs of the same node and over RDMA to the others (DeepEP's
  ``Buffer(allow_nvlink_for_low_latency_mode=True)``, the default, which vLLM and SGLang
  keep; Ant Group's H20 study: "~50 % of MoE traffic stays on NVLink at EP16 but only ~25 %
  at EP32").

Time per layer = 2 · α + (dispatch + combine bytes per GPU) / β, with α the link latency
and β the link's line rate × the all-to-all efficiency of the engine's kernels; the
slowest of the NVLink and the inter-node legs sets the time. Dispatch may travel in FP8
(DeepSeek and SGLang dispatch in FP8 and combine in BF16).

All functions are pure arithmetic on floats.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.core.hardware import LinkSpec


@dataclass(frozen=True, kw_only=True)
class AllToAllCost:
    """α + β cost of one MoE layer's dispatch + combine, per token of the instance."""

    latency_s_per_layer: float
    """2 · α: one dispatch and one combine launch."""
    prefill_s_per_token_per_layer: float
    """Seconds per instance-wide prefill token (normal kernels, node-deduplicated)."""
    decode_s_per_token_per_layer: float
    """Seconds per instance-wide decode token (low-latency kernels, one copy per expert)."""
    prefill_bytes_per_token: float
    """Dispatch + combine bytes one prefill token sends off its GPU (both legs)."""
    decode_bytes_per_token: float
    """Dispatch + combine bytes one decode token sends off its GPU (both legs)."""


def expected_distinct(bins: int, picks: int) -> float:
    """Expected number of distinct bins hit by ``picks`` uniform draws over ``bins`` bins
    (``bins · (1 − (1 − 1/bins)^picks)``)."""
    if bins <= 0:
        return 0.0
    return bins * (1.0 - (1.0 - 1.0 / bins) ** picks)


def payload_bytes_per_copy(hidden_size: int, dispatch_bytes: float,
                           combine_bytes: float) -> float:
    """Dispatch + combine bytes of one token copy (hidden × (dispatch + combine) bytes)."""
    return float(hidden_size) * (dispatch_bytes + combine_bytes)


def all_to_all_cost(*, expert_parallel: int, gpus_per_node: int, experts_per_token: int,
                    hidden_size: int, dispatch_bytes: float, combine_bytes: float,
                    intra_link: LinkSpec, inter_link: LinkSpec | None,
                    efficiency: float) -> AllToAllCost:
    """The all-to-all cost of one MoE layer of an EP group of ``expert_parallel`` GPUs.

    Tokens are spread evenly over the ``expert_parallel`` GPUs (DP attention); the per-token
    coefficients are per instance-wide token (already divided by ``expert_parallel``).
    """
    ep, k = expert_parallel, experts_per_token
    copy = payload_bytes_per_copy(hidden_size, dispatch_bytes, combine_bytes)
    local = min(ep, gpus_per_node)
    nodes = max(1, ep // gpus_per_node) if ep > gpus_per_node else 1
    # shares of one token's k expert copies: same GPU, same node (NVLink), other nodes
    same_node_other_gpu = k * (local - 1) / ep
    remote_expert_copies = k * (ep - local) / ep
    nvl_bw = intra_link.bandwidth_bytes_per_s * efficiency
    if nodes > 1 and inter_link is not None:
        net_bw = inter_link.bandwidth_bytes_per_s * efficiency
        alpha = max(intra_link.latency_s, inter_link.latency_s)
        # normal kernels: one copy per distinct remote node, forwarded inside it over NVLink
        remote_nodes = expected_distinct(nodes, k) * (nodes - 1) / nodes
        pre_net = remote_nodes * copy
        pre_nvl = (same_node_other_gpu + remote_expert_copies) * copy
        prefill_s = max(pre_net / net_bw, pre_nvl / nvl_bw)
        # low-latency kernels: one copy per routed expert off the GPU, NVLink inside the node
        # and RDMA to the other nodes, the two legs at once (the slower sets the time)
        dec_net = remote_expert_copies * copy
        dec_nvl = same_node_other_gpu * copy
        decode_s = max(dec_net / net_bw, dec_nvl / nvl_bw)
        pre_bytes, dec_bytes = pre_net + (same_node_other_gpu * copy), dec_net + dec_nvl
    else:
        alpha = intra_link.latency_s
        pre_bytes = dec_bytes = same_node_other_gpu * copy
        prefill_s = decode_s = pre_bytes / nvl_bw
    return AllToAllCost(latency_s_per_layer=2.0 * alpha,
                        prefill_s_per_token_per_layer=prefill_s / ep,
                        decode_s_per_token_per_layer=decode_s / ep,
                        prefill_bytes_per_token=pre_bytes, decode_bytes_per_token=dec_bytes)
