"""Disaggregated serving: a prefill pool and a decode pool, per-instance capacities.

Prefill instance (docs/model.md §6): prompts are batched up to the *saturating* token count
L_m — the smallest power of two (≥ 512) whose tokens/s reach 90 % of a 16k-token pass
(Sarathi-Serve Fig. 3/4, Splitwise's 2,048 cap, DistServe's L_m; docs/sources.md#roofline).
At rate λ the instance is busy ρ = λ · S̄ · T(L_m)/L_m; TTFT_q = prefill of the q-prompt
(batched with ρ·L_m other tokens) + the wait behind the pool's router
(``routing.dispatch_wait_s``: the workload's policy over the pool's instances, the count
being the prompt queue; docs/model.md §7.2) as a percentile + the KV transfer exposed after the
pass (as the engine's connector moves it) + the request path (the engine's per-request
overhead, and the router's second hop to the decode instance on a sequential path). Its
goodput is the largest λ with TTFT_q ≤ SLO and ρ < 1.

Decode instance: a decode-only batch B bounded by memory/engine (``max_sequences``) and by
the TPOT SLO (T_dec(B) ≤ SLO, by bisection on B). Capacity D = B / (Ō · T_dec(B)).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from advisor.core.hardware import LinkSpec
from advisor.core.instance import Instance, budget_units
from advisor.core.kv_transfer import (
    KvPath,
    kv_nics,
    link_capacity_bytes_per_s,
    link_utilization,
    transfer_seconds,
)
from advisor.core.queueing import wait_quantile_s
from advisor.core.routing import dispatch_wait_s
from advisor.core.scenario import DEFAULT_ROUTER, RouterPolicy, TrafficPhase

SATURATION_GRID = np.array([512.0, 1024.0, 2048.0, 4096.0, 8192.0, 16384.0])
SATURATION_SHARE = 0.9
BISECTION_STEPS = 48
GRID_POINTS = 24
GRID_PASSES = 3
"""The TTFT-SLO goodput search: GRID_PASSES nested grids of GRID_POINTS rates (23³ ≈ 1.2e4
steps across (0, max_rate), i.e. the goodput to 1e-4 of the instance's capacity)."""


@dataclass(frozen=True)
class PrefillCapacity:
    """One prefill instance's capacities for a phase."""

    instance: Instance
    saturating_tokens: float
    max_rate_rps: float
    """Rate at which the instance is fully busy (ρ = 1)."""
    goodput_rps: float
    """Largest rate whose TTFT percentile meets the SLO (= max_rate when no TTFT SLO)."""


@dataclass(frozen=True, kw_only=True)
class DecodeCapacity:
    """One decode instance's capacities for a phase."""

    instance: Instance
    max_batch: int
    slo_batch: float
    """Largest batch whose step time meets the TPOT SLO (max_batch without an SLO)."""
    goodput_rps: float
    tpot_s: float
    """Step time at ``slo_batch``."""


def saturating_tokens(inst: Instance, mean_prompt_tokens: float) -> float:
    """Token count per prefill pass at which the instance is saturated: the grid per unit of
    its budget (``instance.budget_units``: every DP-attention rank and pipeline micro-batch
    holds its own prompts, so a pass saturates each of them)."""
    grid = SATURATION_GRID * float(np.max(budget_units(inst.params)))
    n = np.maximum(grid / max(mean_prompt_tokens, 1.0), 1.0)
    t = inst.prefill_time_s(grid / n, n)
    rate = grid / t
    idx = int(np.argmax(rate >= SATURATION_SHARE * rate[-1]))
    return float(max(grid[idx], mean_prompt_tokens))


def prefill_service(inst: Instance, mean_prompt_tokens: float,
                    lm: float | None = None) -> tuple[float, float]:
    """(saturating tokens L_m, seconds of a pass's time per request) for mean prompts:
    prompts batched up to L_m, so a request costs T(L_m)·S̄/L_m of the instance."""
    lm = saturating_tokens(inst, mean_prompt_tokens) if lm is None else lm
    per_pass = float(inst.prefill_time_s(mean_prompt_tokens, lm / mean_prompt_tokens))
    return lm, per_pass * mean_prompt_tokens / lm


def prefill_ttft(inst: Instance, phase: TrafficPhase, rate_rps: np.ndarray, quantile: float,
                 link: LinkSpec, link_utilization: np.ndarray | float = 0.0,
                 lm: float | None = None, servers: int | np.ndarray = 1,
                 per_request: float | None = None, path: KvPath | None = None,
                 router: RouterPolicy = DEFAULT_ROUTER
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(TTFT_q seconds, utilisation ρ, exposed transfer seconds) of a prefill instance.

    ``rate_rps`` is per instance; ``servers`` instances share the arrivals behind a
    ``router`` of that policy (``routing.dispatch_wait_s``). ``lm`` and ``per_request`` are
    :func:`prefill_service`'s, when the caller has them; ``path`` the KV route to the decode
    instances (default: :func:`kv_path` without a decode shape).
    """
    own, wait_q, exposed, rho = prefill_ttft_parts(inst, phase, rate_rps, quantile, link,
                                                   link_utilization, lm, servers, per_request,
                                                   path, router)
    ttft = own + wait_q + exposed + request_path_s(inst)
    return np.where(rho < 1.0, ttft, np.inf), rho, exposed


def kv_path(link: LinkSpec, prefill: Instance, decode: Instance | None = None) -> KvPath:
    """The KV route from ``prefill`` to ``decode`` over ``link`` (docs/model.md §6): the bytes
    the decode ranks hold (their TP duplication), the prefill and decode NICs of one
    sequence (DP attention: one rank's), the engine's transfer timing. Without ``decode``:
    a decode instance of the prefill's own TP (the prefill pool's tables)."""
    dec = prefill if decode is None else decode
    return KvPath(bytes_per_token=dec.kv_bytes_per_token_wire,
                  sender_nics=float(kv_nics(link, prefill.kv_sender_gpus)),
                  receiver_nics=float(kv_nics(link, dec.kv_sender_gpus)),
                  layer_wise=prefill.engine.kv_transfer.layer_wise)


def request_path_s(inst: Instance) -> float:
    """A disaggregated request's fixed TTFT cost: the engine's per-request overhead, plus the
    router's second hop (the decode server's front end, after the prefill answered) on a
    sequential P/D path (``KvTransferTerms.second_hop_s``)."""
    overhead = inst.efficiency.request_overhead_s
    return overhead + inst.engine.kv_transfer.second_hop_s(overhead)


def prefill_ttft_parts(inst: Instance, phase: TrafficPhase, rate_rps: np.ndarray,
                       quantile: float, link: LinkSpec,
                       link_utilization: np.ndarray | float = 0.0, lm: float | None = None,
                       servers: int | np.ndarray = 1, per_request: float | None = None,
                       path: KvPath | None = None, router: RouterPolicy = DEFAULT_ROUTER
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`prefill_ttft`'s parts: (own prefill pass, queue-wait percentile, exposed KV
    transfer, utilisation ρ), seconds; the TTFT adds :func:`request_path_s`. Without
    ``path`` the transfer is priced as if the decode instances had this instance's TP (the
    prefill pool's tables do not know the decode shape; a split's own route, re-sharding
    included, is priced where the split is known)."""
    computed = phase.computed_prompt_tokens  # prefix-cache hits are not prefilled
    s_mean = computed.mean
    s_q = computed.quantile(quantile)
    if lm is None or per_request is None:
        lm, per_request = prefill_service(inst, s_mean, lm)
    lam = np.asarray(rate_rps, dtype=float)
    rho = lam * per_request
    # the pool's router (``routing.dispatch_wait_s``, the colocated pools' model too): a
    # prefill instance holds a request until its pass ends, so the router's count is the
    # prompt queue (count share 1)
    wait, p_wait = dispatch_wait_s(router, servers, lam, per_request, phase.burstiness,
                                   computed.cv, 1.0)
    wait_q = wait_quantile_s(wait, p_wait, quantile)
    units = float(np.max(budget_units(inst.params)))
    if units > 1.0:
        own, in_progress = _unit_passes(inst, lam, s_mean, s_q, lm, quantile)
        wait_q = wait_q + in_progress
    else:
        extra = np.minimum(rho, 1.0) * max(lm - s_q, 0.0)
        own = inst.step_time_s(prefill_tokens=s_q + extra, prefill_seqs=1.0 + extra / s_mean)
    route = kv_path(link, inst) if path is None else path
    bytes_q = phase.prompt_tokens.quantile(quantile) * route.bytes_per_token  # all the KV
    exposed, _ = transfer_seconds(bytes_q, link, route.nics, own, inst.model.num_layers,
                                  link_utilization, layer_wise=route.layer_wise)
    return own, wait_q, exposed, rho


PASS_GRID_POINTS = 64
"""Prompts-per-pass grid (geometric from 1 to L_m/S̄) of a prefill instance with a split
budget: the pass time is tabulated once and the fixed point read off it."""


@lru_cache(maxsize=256)
def _pass_table(inst: Instance, s_mean: float, lm: float) -> tuple[np.ndarray, np.ndarray,
                                                                   np.ndarray]:
    """(prompts per pass n, pass seconds T(n), rate λ(n) = n/T(n) at which passes of n run
    back to back) on a geometric grid of n from 1 to L_m/S̄; λ(n) made non-decreasing."""
    n_max = max(lm / max(s_mean, 1.0), 1.0)
    n = np.geomspace(1.0, n_max, PASS_GRID_POINTS) if n_max > 1.0 else np.ones(1)
    t = np.asarray(inst.step_time_s(prefill_tokens=n * s_mean, prefill_seqs=n), dtype=float)
    return n, t, np.maximum.accumulate(n / t)


def _unit_passes(inst: Instance, lam: np.ndarray, s_mean: float, s_q: float, lm: float,
                 quantile: float) -> tuple[np.ndarray, np.ndarray]:
    """(own pass, q-quantile of the pass in progress) of a prefill instance whose budget is
    split over units (DP-attention ranks, pipeline micro-batches; ``instance.budget_units``).

    A pass takes every prompt waiting (up to L_m tokens), each prompt on its own unit, so a
    pass of n ≤ units prompts costs about one prompt's: n = min(max(1, λ·T(n)), L_m/S̄), the
    smallest fixed point — where passes of n run back to back, λ = n/T(n), read off a table
    of n (:func:`_pass_table`). The instance is busy φ = λ·T(n)/n of the time (1 once
    λ·T(1) ≥ 1), and a prompt first waits for the pass in progress, whose residual is uniform
    over T(n); its own pass holds it beside n − 1 others, the pass's tokens spread over the
    units that hold its prompts (``instance.busiest_unit_share``; the simulator prices its
    passes the same way, and the prefill launch budget per unit holds a p95 prompt).
    """
    grid_n, grid_t, grid_lam = _pass_table(inst, float(s_mean), float(lm))
    n = np.interp(lam, grid_lam, grid_n)        # 1 below λ(1), L_m/S̄ beyond the last
    t_pass = np.interp(n, grid_n, grid_t)
    busy = np.minimum(lam * t_pass / n, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(busy > 0, 1.0 - (1.0 - quantile) / np.where(busy > 0, busy, 1.0), 0.0)
    in_progress = t_pass * np.maximum(share, 0.0)
    own = inst.step_time_s(prefill_tokens=s_q + (n - 1.0) * s_mean, prefill_seqs=n)
    return own, in_progress


def prefill_capacity(inst: Instance, phase: TrafficPhase, quantile: float,
                     ttft_slo_s: float | None, link: LinkSpec, servers: int = 1,
                     router: RouterPolicy = DEFAULT_ROUTER) -> PrefillCapacity:
    """Capacity and TTFT-SLO goodput of one prefill instance in a pool of ``servers``."""
    lm, per_request = prefill_service(inst, phase.computed_prompt_tokens.mean)
    max_rate = 1.0 / per_request
    if ttft_slo_s is None:
        return PrefillCapacity(inst, lm, max_rate, max_rate * 0.999)
    best = float(_goodputs(inst, phase, quantile, ttft_slo_s, link, np.array([servers]),
                           lm, per_request, router)[0])
    return PrefillCapacity(inst, lm, max_rate, best)


def prefill_goodputs(inst: Instance, phase: TrafficPhase, quantile: float,
                     ttft_slo_s: float | None, link: LinkSpec, servers: np.ndarray,
                     router: RouterPolicy = DEFAULT_ROUTER) -> np.ndarray:
    """The TTFT-SLO goodput (req/s per instance) of a prefill instance for many pool sizes.

    TTFT is non-decreasing in the rate, so the goodput is found on nested grids over
    (0, max_rate), every pool size at once: each pass keeps the largest grid rate meeting the
    SLO and refines the bracket above it; a pool size whose grid has no such rate stops (its
    goodput stays at the last one found, 0 at first). Every pool size follows the same
    arithmetic alone or in a batch, so a scalar :func:`prefill_capacity` and the sweep agree
    exactly.
    """
    lm, per_request = prefill_service(inst, phase.computed_prompt_tokens.mean)
    if ttft_slo_s is None:
        return np.full(np.size(servers), (1.0 / per_request) * 0.999)
    return _goodputs(inst, phase, quantile, ttft_slo_s, link, servers, lm, per_request, router)


def _goodputs(inst: Instance, phase: TrafficPhase, quantile: float, ttft_slo_s: float,
              link: LinkSpec, servers: np.ndarray, lm: float, per_request: float,
              router: RouterPolicy = DEFAULT_ROUTER) -> np.ndarray:
    """:func:`prefill_goodputs` with the prefill service already known."""
    n_srv = np.asarray(servers, dtype=np.int64).ravel()
    max_rate = 1.0 / per_request
    n = n_srv.size
    rows = np.arange(n)
    lo = np.zeros((n, 1))
    hi = np.full((n, 1), max_rate)
    steps = np.linspace(0.0, 1.0, GRID_POINTS)
    best = np.zeros(n)
    active = np.ones(n, dtype=bool)
    pool: int | np.ndarray = int(n_srv[0]) if n == 1 else n_srv[:, None]
    # the KV link's load at a rate: each prefill instance ships from its own GPUs' NICs, so the
    # utilisation depends on the rate per instance alone; the TTFT at a rate charges the
    # link's queueing wait (as the plan's latencies at the workload's rate do), so a pool
    # carries its goodput within the SLO
    per_gpu_bytes = phase.prompt_tokens.mean * inst.kv_bytes_per_token_wire
    capacity = link_capacity_bytes_per_s(link, inst.gpus)
    for _ in range(GRID_PASSES):
        rates = lo + (hi - lo) * steps
        util = link_utilization(rates * per_gpu_bytes, capacity)
        ttft = prefill_ttft(inst, phase, np.maximum(rates, 1e-12), quantile, link,
                            np.minimum(util, 0.999), lm, pool, per_request, router=router)[0]
        ok = (ttft <= ttft_slo_s) & (util < 1.0)
        step = active & ok.any(axis=1)
        last = GRID_POINTS - 1 - np.argmax(ok[:, ::-1], axis=1)
        best = np.where(step, rates[rows, last], best)
        lo = np.where(step[:, None], rates[rows, last][:, None], lo)
        hi = np.where(step[:, None],
                      rates[rows, np.minimum(last + 1, GRID_POINTS - 1)][:, None], hi)
        active = step
        if not active.any():
            break
    return best


def decode_capacity(inst: Instance, max_sequences: int, phase: TrafficPhase,
                    tpot_slo_s: float | None) -> DecodeCapacity:
    """Largest decode batch within memory and the TPOT SLO, and the rate it sustains."""
    o_mean = max(phase.output_tokens.mean, 1.0)
    ctx = phase.prompt_tokens.mean + o_mean / 2.0
    b_max = float(max(max_sequences, 0))
    if b_max < 1:
        return DecodeCapacity(instance=inst, max_batch=0, slo_batch=0.0, goodput_rps=0.0,
                              tpot_s=float("nan"))
    if tpot_slo_s is None:
        b = b_max
    else:
        if float(inst.decode_token_s(1.0, ctx)) > tpot_slo_s:
            return DecodeCapacity(instance=inst, max_batch=int(b_max), slo_batch=0.0,
                                  goodput_rps=0.0, tpot_s=float(inst.decode_token_s(1.0, ctx)))
        lo, hi = 1.0, b_max
        if float(inst.decode_token_s(hi, ctx)) <= tpot_slo_s:
            lo = hi
        else:
            for _ in range(BISECTION_STEPS):
                mid = (lo + hi) / 2.0
                if float(inst.decode_token_s(mid, ctx)) <= tpot_slo_s:
                    lo = mid
                else:
                    hi = mid
        b = lo
    t = float(inst.decode_token_s(b, ctx))
    return DecodeCapacity(instance=inst, max_batch=int(b_max), slo_batch=b,
                          goodput_rps=b / (o_mean * t), tpot_s=t)


def decode_tpot_at_rate(inst: Instance, phase: TrafficPhase, rate_rps: float,
                        max_sequences: int) -> tuple[float, float, bool]:
    """(TPOT seconds, batch, overloaded) of one decode instance at a per-instance rate."""
    o_mean = max(phase.output_tokens.mean, 1.0)
    ctx = phase.prompt_tokens.mean + o_mean / 2.0
    b = 0.0
    for _ in range(200):
        # B ↦ λ·Ō·T_dec(B) is increasing: iterating from 0 climbs to the smallest fixed point
        t = float(inst.decode_token_s(max(b, 1.0), ctx))
        b_new = rate_rps * o_mean * t
        if b_new > max_sequences * 4:
            return float("nan"), b_new, True
        done = abs(b_new - b) <= 1e-6 * max(b_new, 1.0)
        b = b_new
        if done:
            break
    t = float(inst.decode_token_s(max(b, 1.0), ctx))
    overloaded = b > max_sequences or abs(b - rate_rps * o_mean * t) > 1e-3 * max(b, 1.0)
    return (float("nan") if overloaded else t), b, overloaded
