"""Disaggregated serving: a prefill pool and a decode pool, per-instance capacities.

Prefill instance (docs/model.md §6): prompts are batched up to the *saturating* token count
L_m — the smallest power of two (≥ 512) whose tokens/s reach 90 % of a 16k-token pass
(Sarathi-Serve Fig. 3/4, Splitwise's 2,048 cap, DistServe's L_m; docs/sources.md#roofline).
At rate λ the instance is busy ρ = λ · S̄ · T(L_m)/L_m; TTFT_q = prefill of the q-prompt
(batched with ρ·L_m other tokens) + the G/G/c wait over the pool's prefill instances
(Allen–Cunneen; a shortest-queue router) as a percentile + exposed KV transfer + request
overhead. Its goodput is the largest λ with TTFT_q ≤ SLO and ρ < 1.

Decode instance: a decode-only batch B bounded by memory/engine (``max_sequences``) and by
the TPOT SLO (T_dec(B) ≤ SLO, by bisection on B). Capacity D = B / (Ō · T_dec(B)).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.core.hardware import LinkSpec
from advisor.core.instance import Instance
from advisor.core.kv_transfer import link_utilization, transfer_seconds
from advisor.core.queueing import gg_c_wait_s, wait_quantile_s
from advisor.core.scenario import TrafficPhase

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


@dataclass(frozen=True)
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
    """Token count per prefill pass at which the instance is saturated."""
    n = np.maximum(SATURATION_GRID / max(mean_prompt_tokens, 1.0), 1.0)
    t = inst.prefill_time_s(SATURATION_GRID / n, n)
    rate = SATURATION_GRID / t
    idx = int(np.argmax(rate >= SATURATION_SHARE * rate[-1]))
    return float(max(SATURATION_GRID[idx], mean_prompt_tokens))


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
                 per_request: float | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(TTFT_q seconds, utilisation ρ, exposed transfer seconds) of a prefill instance.

    ``rate_rps`` is per instance; ``servers`` instances share the arrivals (G/G/c wait,
    Allen–Cunneen, as behind a shortest-queue router). ``lm`` and ``per_request`` are
    :func:`prefill_service`'s, when the caller has them.
    """
    own, wait_q, exposed, rho = prefill_ttft_parts(inst, phase, rate_rps, quantile, link,
                                                   link_utilization, lm, servers, per_request)
    ttft = own + wait_q + exposed + inst.efficiency.request_overhead_s
    return np.where(rho < 1.0, ttft, np.inf), rho, exposed


def prefill_ttft_parts(inst: Instance, phase: TrafficPhase, rate_rps: np.ndarray,
                       quantile: float, link: LinkSpec,
                       link_utilization: np.ndarray | float = 0.0, lm: float | None = None,
                       servers: int | np.ndarray = 1, per_request: float | None = None
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`prefill_ttft`'s parts: (own prefill pass, queue-wait percentile, exposed KV
    transfer, utilisation ρ), seconds; the TTFT adds the per-request overhead."""
    computed = phase.computed_prompt_tokens  # prefix-cache hits are not prefilled
    s_mean = computed.mean
    s_q = computed.quantile(quantile)
    if lm is None or per_request is None:
        lm, per_request = prefill_service(inst, s_mean, lm)
    lam = np.asarray(rate_rps, dtype=float)
    rho = lam * per_request
    extra = np.minimum(rho, 1.0) * max(lm - s_q, 0.0)
    own = inst.step_time_s(prefill_tokens=s_q + extra, prefill_seqs=1.0 + extra / s_mean)
    wait, p_wait = gg_c_wait_s(servers, lam * servers, per_request, phase.burstiness,
                                        computed.cv)
    wait_q = wait_quantile_s(wait, p_wait, quantile)
    bytes_q = phase.prompt_tokens.quantile(quantile) * inst.kv_bytes_per_token_wire  # all KV
    exposed, _ = transfer_seconds(bytes_q, link, inst.kv_sender_gpus, own, inst.model.num_layers,
                                  link_utilization)
    return own, wait_q, exposed, rho


def prefill_capacity(inst: Instance, phase: TrafficPhase, quantile: float,
                     ttft_slo_s: float | None, link: LinkSpec, servers: int = 1) -> PrefillCapacity:
    """Capacity and TTFT-SLO goodput of one prefill instance in a pool of ``servers``."""
    lm, per_request = prefill_service(inst, phase.computed_prompt_tokens.mean)
    max_rate = 1.0 / per_request
    if ttft_slo_s is None:
        return PrefillCapacity(inst, lm, max_rate, max_rate * 0.999)
    best = float(_goodputs(inst, phase, quantile, ttft_slo_s, link, np.array([servers]),
                           lm, per_request)[0])
    return PrefillCapacity(inst, lm, max_rate, best)


def prefill_goodputs(inst: Instance, phase: TrafficPhase, quantile: float,
                     ttft_slo_s: float | None, link: LinkSpec, servers: np.ndarray) -> np.ndarray:
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
    return _goodputs(inst, phase, quantile, ttft_slo_s, link, servers, lm, per_request)


def _goodputs(inst: Instance, phase: TrafficPhase, quantile: float, ttft_slo_s: float,
              link: LinkSpec, servers: np.ndarray, lm: float, per_request: float) -> np.ndarray:
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
    capacity = inst.gpus * link.effective_bytes_per_s
    for _ in range(GRID_PASSES):
        rates = lo + (hi - lo) * steps
        util = link_utilization(rates * per_gpu_bytes, capacity)
        ttft = prefill_ttft(inst, phase, np.maximum(rates, 1e-12), quantile, link,
                            np.minimum(util, 0.999), lm, pool, per_request)[0]
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
        return DecodeCapacity(inst, 0, 0.0, 0.0, float("nan"))
    if tpot_slo_s is None:
        b = b_max
    else:
        if float(inst.decode_step_s(1.0, ctx)) > tpot_slo_s:
            return DecodeCapacity(inst, int(b_max), 0.0, 0.0, float(inst.decode_step_s(1.0, ctx)))
        lo, hi = 1.0, b_max
        if float(inst.decode_step_s(hi, ctx)) <= tpot_slo_s:
            lo = hi
        else:
            for _ in range(BISECTION_STEPS):
                mid = (lo + hi) / 2.0
                if float(inst.decode_step_s(mid, ctx)) <= tpot_slo_s:
                    lo = mid
                else:
                    hi = mid
        b = lo
    t = float(inst.decode_step_s(b, ctx))
    return DecodeCapacity(inst, int(b_max), b, b / (o_mean * t), t)


def decode_tpot_at_rate(inst: Instance, phase: TrafficPhase, rate_rps: float,
                        max_sequences: int) -> tuple[float, float, bool]:
    """(TPOT seconds, batch, overloaded) of one decode instance at a per-instance rate."""
    o_mean = max(phase.output_tokens.mean, 1.0)
    ctx = phase.prompt_tokens.mean + o_mean / 2.0
    b = 0.0
    for _ in range(200):
        # B ↦ λ·Ō·T_dec(B) is increasing: iterating from 0 climbs to the smallest fixed point
        t = float(inst.decode_step_s(max(b, 1.0), ctx))
        b_new = rate_rps * o_mean * t
        if b_new > max_sequences * 4:
            return float("nan"), b_new, True
        done = abs(b_new - b) <= 1e-6 * max(b_new, 1.0)
        b = b_new
        if done:
            break
    t = float(inst.decode_step_s(max(b, 1.0), ctx))
    overloaded = b > max_sequences or abs(b - rate_rps * o_mean * t) > 1e-3 * max(b, 1.0)
    return (float("nan") if overloaded else t), b, overloaded
