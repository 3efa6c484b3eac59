"""KV-cache transfer between prefill and decode pools: demand, link capacity, exposed time.

* bytes per request = prompt tokens · KV bytes/token · TP duplication of the ranks that
  receive it (each decode rank gets the KV heads it holds; docs/sources.md#kv-bytes-per-token);
  with equal TP on both pools that is the prefill instance's own duplication.
* demand = rate · mean bytes per request (DistServe's OPT-66B example; docs/sources.md#kv-demand),
  offered (the workload's rate) and carried (at most the plan's goodput).
* link capacity = prefill GPUs · NICs per GPU · per-NIC, per-direction bandwidth · efficiency
  (inter-node NICs, ``cluster.nics_per_node``; the intra-node link when the whole cluster is
  one node) (§9.3).
* utilisation U = demand / capacity; U ≥ 1 means the link cannot keep up.
* transfer time of one request: t_x = bytes/(n · η · B) over n NICs — the narrower of the
  prefill instance's sending NICs and the decode instance's receiving NICs (re-sharding when
  the pools' TPs differ; docs/sources.md#kv-transfer). Exposed after the prefill pass:
  α + t_x when the engine's connector moves the KV after the prefill finishes
  (``after-prefill``, ``per-chunk`` at a budget that holds the prompt); with layer-wise
  transfer (Splitwise, §9.2) all but the last layer overlaps the prefill compute,
  α + max(t_x / L, t_x − T_prefill · (L − 1)/L). A shared link adds an M/D/1 wait
  U/(2(1 − U)) · t_x.
* the router's second hop (``request_path: sequential``: the request reaches the decode
  instance only after the prefill answered) costs the decode server's front end once more.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from advisor.core.arrays import clip
from advisor.core.hardware import LinkSpec

TransferTiming = Literal["layer-wise", "per-chunk", "after-prefill"]
"""When a connector moves a request's KV: each layer's during the prefill pass, each prefill
chunk's after that chunk, or all of it after the prefill finished."""
RequestPath = Literal["sequential", "parallel"]
"""How the P/D router dispatches a request: to the prefill instance and, once it answered,
to the decode instance (``sequential``), or to both at once (``parallel``)."""


@dataclass(frozen=True, kw_only=True)
class KvTransferTerms:
    """How an engine moves a request between its pools (engine profile ``kv_transfer:``,
    sourced there; docs/model.md §6)."""

    backend: str = ""
    """The P/D transfer backend the plans assume (the first the engine supports)."""
    timing: TransferTiming = "after-prefill"
    """When that backend moves the KV. ``per-chunk`` ships each chunk after its forward; the
    prefill pool's launch budget holds the percentile prompt in one chunk, so the model
    exposes it like ``after-prefill``."""
    request_path: RequestPath = "sequential"

    @property
    def layer_wise(self) -> bool:
        """Whether all but the last layer's transfer overlaps the prefill compute."""
        return self.timing == "layer-wise"

    def second_hop_s(self, request_overhead_s: float) -> float:
        """TTFT cost of the router's second hop: the decode server's front end (HTTP,
        tokenisation, admission — the engine's per-request overhead) runs after the prefill
        answered on a sequential path, beside the prefill on a parallel one."""
        return request_overhead_s if self.request_path == "sequential" else 0.0


@dataclass(frozen=True, kw_only=True)
class KvPath:
    """One request's KV route from a prefill to a decode instance (``disaggregated.kv_path``
    builds it from the two instances)."""

    bytes_per_token: float
    """Bytes on the wire per prompt token: the KV heads every receiving rank holds (the
    decode instance's TP duplication)."""
    sender_nics: float
    """NICs of the prefill GPUs holding one sequence's KV."""
    receiver_nics: float
    """NICs of the decode GPUs that receive it."""
    layer_wise: bool
    """Whether the engine's connector overlaps all but the last layer with the prefill."""

    @property
    def nics(self) -> float:
        """NICs the transfer runs over: the narrower side (re-sharding when TPs differ)."""
        return min(self.sender_nics, self.receiver_nics)


@dataclass(frozen=True, kw_only=True)
class KvTransfer:
    """KV-transfer figures for a disaggregated plan at the rate it carries: the workload's
    rate, or the plan's goodput when the rate exceeds it (an overloaded plan cannot produce
    more KV than it prefills; #14)."""

    link_id: str
    bytes_per_token: float
    bytes_per_request_mean: float
    bytes_per_request_p95: float
    demand_bytes_per_s: float
    """KV demand the plan carries: ``rate_rps`` · mean bytes per request."""
    offered_demand_bytes_per_s: float
    """KV demand the workload offers: its rate · mean bytes per request (equal to the carried
    one unless the rate exceeds the plan's goodput)."""
    link_bytes_per_s: float
    utilization: float
    """Carried demand / link capacity."""
    offered_utilization: float
    """Offered demand / link capacity."""
    transfer_ms: float
    """Exposed transfer time of a p95-length prompt after its prefill pass, ms."""
    serialized_transfer_ms: float
    """The same transfer without any overlap, ms."""
    concurrent_transfers: float
    """Mean transfers in flight (Little's law: rate · serialized transfer time)."""
    rate_rps: float
    """The request rate the carried figures are computed at (≤ the workload's rate)."""
    at_carried_rate: bool
    """Whether ``rate_rps`` is the plan's goodput because the workload's rate exceeds it."""
    backend: str
    """The P/D transfer backend assumed (engine profile)."""
    timing: TransferTiming
    """When that backend moves the KV (engine profile)."""
    request_path: RequestPath
    """How the router dispatches a request to the pools (engine profile)."""
    second_hop_ms: float
    """TTFT cost of the router's second hop, ms (0 on a parallel path)."""
    nics_per_node: float
    """NICs per node of the KV link (GPUs per node when the link is the intra-node one)."""
    sender_nics: float
    """NICs one request's KV leaves its prefill instance through."""
    receiver_nics: float
    """NICs it enters its decode instance through (the narrower side sets the transfer)."""


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


def kv_nics(link: LinkSpec, gpus: np.ndarray | float) -> np.ndarray:
    """NICs a request's KV crosses ``link`` through from (or into) ``gpus`` GPUs: their share
    of the node's NICs (``link.nics_per_gpu`` each), at least one."""
    return np.maximum(np.asarray(gpus, dtype=float) * link.nics_per_gpu, 1.0)


def link_capacity_bytes_per_s(link: LinkSpec, prefill_gpus: np.ndarray | float) -> np.ndarray:
    """Bytes/s the prefill GPUs' NICs can send: GPUs · NICs per GPU · η · B."""
    return (np.asarray(prefill_gpus, dtype=float) * link.nics_per_gpu
            * link.effective_bytes_per_s)


def transfer_seconds(bytes_per_request: np.ndarray | float, link: LinkSpec,
                     nics: np.ndarray | float, prefill_s: np.ndarray | float, num_layers: int,
                     utilization: np.ndarray | float = 0.0, *, layer_wise: bool
                     ) -> tuple[np.ndarray, np.ndarray]:
    """(exposed, serialized) seconds to move one request's KV over ``nics`` parallel NICs,
    after a prefill pass of ``prefill_s`` (only a layer-wise connector overlaps it)."""
    wire = np.asarray(bytes_per_request, dtype=float) / (
        np.asarray(nics, dtype=float) * link.effective_bytes_per_s)
    u = clip(np.asarray(utilization, dtype=float), 0.0, 0.999)
    queue = u / (2.0 * (1.0 - u)) * wire
    if layer_wise:
        overlapped = np.asarray(prefill_s, dtype=float) * (num_layers - 1) / num_layers
        exposed_wire = np.maximum(wire / num_layers, wire - overlapped)
    else:
        exposed_wire = wire
    return link.transfer_setup_s + exposed_wire + queue, link.transfer_setup_s + wire + queue


def split_transfer(*, link: LinkSpec, path: KvPath, terms: KvTransferTerms,
                   request_overhead_s: float, num_layers: int, prefill_gpus: int,
                   gpus_per_node: int, prompt_mean_tokens: float, prompt_p95_tokens: float,
                   rate_rps: float, goodput_rps: float, prefill_s: float) -> KvTransfer:
    """The KV transfer of a split over its route ``path`` (a p95 prompt's pass takes
    ``prefill_s``), at the rate the split carries: the workload's, or the split's goodput
    when the rate exceeds it (an overloaded prefill pool produces no more KV than that; a
    split that carries nothing within the SLOs is sized at the workload's rate), beside the
    demand the workload offers."""
    bpt = path.bytes_per_token
    mean_b = prompt_mean_tokens * bpt
    p95_b = prompt_p95_tokens * bpt
    rate = min(rate_rps, goodput_rps) if goodput_rps > 0 else rate_rps
    capacity = float(link_capacity_bytes_per_s(link, prefill_gpus))
    util = float(link_utilization(rate * mean_b, capacity))
    exposed, serial = transfer_seconds(p95_b, link, path.nics, prefill_s, num_layers,
                                       min(util, 0.999), layer_wise=path.layer_wise)
    _, serial_mean = transfer_seconds(mean_b, link, path.nics, prefill_s, num_layers, 0.0,
                                      layer_wise=path.layer_wise)
    return KvTransfer(link_id=link.id, bytes_per_token=bpt, bytes_per_request_mean=mean_b,
                      bytes_per_request_p95=p95_b, demand_bytes_per_s=rate * mean_b,
                      offered_demand_bytes_per_s=rate_rps * mean_b,
                      link_bytes_per_s=capacity, utilization=util,
                      offered_utilization=float(link_utilization(rate_rps * mean_b, capacity)),
                      transfer_ms=float(exposed) * 1000,
                      serialized_transfer_ms=float(serial) * 1000,
                      concurrent_transfers=rate * float(serial_mean), rate_rps=rate,
                      at_carried_rate=rate < rate_rps, backend=terms.backend,
                      timing=terms.timing, request_path=terms.request_path,
                      second_hop_ms=terms.second_hop_s(request_overhead_s) * 1000,
                      nics_per_node=link.nics_per_gpu * gpus_per_node,
                      sender_nics=path.sender_nics, receiver_nics=path.receiver_nics)
