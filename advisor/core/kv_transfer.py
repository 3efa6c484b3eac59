"""KV-cache transfer between prefill and decode pools: demand, link capacity, exposed time.

* bytes per request = prompt tokens · KV bytes/token · TP duplication of the prefill instance
  (every rank ships its own shard; docs/sources.md#kv-bytes-per-token).
* demand = rate · mean bytes per request (DistServe's OPT-66B example; docs/sources.md#kv-demand).
* link capacity = prefill GPUs · per-GPU, per-direction bandwidth · efficiency (inter-node
  NICs; the intra-node link when the whole cluster is one node) (§9.3).
* utilisation U = demand / capacity; U ≥ 1 means the link cannot keep up.
* transfer time of one request over its prefill instance's g_p NICs:
  t = α + bytes / (g_p · η · B) (docs/sources.md#kv-transfer); with layer-wise transfer
  (Splitwise, §9.2) all but the last layer overlaps the prefill compute, so the exposed part is
  α + max(t_x / L, t_x − T_prefill · (L − 1)/L), t_x = bytes/(g_p·η·B); a shared link adds
  an M/D/1 wait U/(2(1 − U)) · t_x.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.core.arrays import clip
from advisor.core.hardware import LinkSpec


@dataclass(frozen=True)
class KvTransfer:
    """KV-transfer figures for a disaggregated plan at the rate it carries: the workload's
    rate, or the plan's goodput when the rate exceeds it (an overloaded plan cannot produce
    more KV than it prefills; #14)."""

    link_id: str
    bytes_per_token: float
    bytes_per_request_mean: float
    bytes_per_request_p95: float
    demand_bytes_per_s: float
    link_bytes_per_s: float
    utilization: float
    transfer_ms: float
    """Exposed transfer time of a p95-length prompt (after layer-wise overlap), ms."""
    serialized_transfer_ms: float
    """The same transfer without overlap, ms."""
    concurrent_transfers: float
    """Mean transfers in flight (Little's law: rate · serialized transfer time)."""
    rate_rps: float = 0.0
    """The request rate the figures are computed at (≤ the workload's rate)."""
    at_carried_rate: bool = False
    """Whether ``rate_rps`` is the plan's goodput because the workload's rate exceeds it."""


def pool_link(intra: LinkSpec, inter: LinkSpec | None, single_node: bool) -> LinkSpec:
    """The link KV crosses: the intra-node link when everything is on one node."""
    if single_node or inter is None:
        return intra
    return inter


def link_utilization(demand_bytes_per_s: np.ndarray | float,
                     link_bytes_per_s: np.ndarray | float) -> np.ndarray:
    """U = demand / capacity (+inf where the capacity is zero: nothing can carry it)."""
    demand = np.asarray(demand_bytes_per_s, dtype=float)
    capacity = np.asarray(link_bytes_per_s, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(capacity > 0, demand / np.where(capacity > 0, capacity, 1.0), np.inf)


def transfer_seconds(bytes_per_request: np.ndarray | float, link: LinkSpec, nics: float,
                     prefill_s: np.ndarray | float, num_layers: int,
                     utilization: np.ndarray | float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(exposed, serialized) seconds to move one request's KV over ``nics`` parallel links."""
    wire = np.asarray(bytes_per_request, dtype=float) / (nics * link.effective_bytes_per_s)
    u = clip(np.asarray(utilization, dtype=float), 0.0, 0.999)
    queue = u / (2.0 * (1.0 - u)) * wire
    overlapped = np.asarray(prefill_s, dtype=float) * (num_layers - 1) / num_layers
    exposed_wire = np.maximum(wire / num_layers, wire - overlapped)
    return link.transfer_setup_s + exposed_wire + queue, link.transfer_setup_s + wire + queue
