"""Colocated serving: one pool of identical instances running prefill and decode together.

Steady-state, mean-field model per instance at arrival rate λ (docs/model.md §5):

* Decode batch B from Little's law: B = λ · O · τ, τ the mean time per output token.
* **Chunked prefill** (token budget c): a mixed step carries B decodes plus up to q = c − B
  prompt tokens. Prompts need λ·S̄ tokens/s; the share of steps that carry prompt tokens is
  f = max(λ·S̄·τ/q, 1 − e^(−λτ)) — enough full budgets for the token demand, and at least the
  chance that a prompt arrived during a step (Poisson) — each carrying q_eff = λ·S̄·τ/f tokens;
  τ = f·T_mix(q_eff) + (1−f)·T_dec (docs/model.md §5). The budget is the prompt
  "server": utilisation ρ = λ·S̄·τ/q, overload at ρ ≥ 1.
* **Unchunked**: a prompt runs whole as its own pass of T_pre(S) and stalls every decode of
  the instance: φ = λ·S̄/q_eff · T_pre, τ = T_dec/(1 − φ), and a token gap is inflated with
  probability f = m·T_dec/(1−φ) (m prefill passes per second).
* Percentiles: TPOT_q = T_dec + (T_inflated − T_dec) · (upper q-quantile of the inflated share
  of a request's O gaps); TTFT_q = q-quantile of the residual of the step in progress (length-
  biased) + the prompt queue and the prompt's own prefill. The queue is the instance's G/G/1
  prompt queue (``queueing.gg_c_wait_s`` with one server) fed by the router's share of the
  arrivals: join-the-shortest-queue deals a burst out about round robin, and round robin over
  n instances turns gamma arrivals of CV c into gamma arrivals of CV² = c²/n (n from
  ``queue_instances``); service CV = prompt-length CV.
  - chunked: a backlog drains in full budget steps, so its service is a prompt's tokens at
    T_full/room each; the TTFT runs the q-quantile of (tokens found waiting + own prompt)
    (``queueing.backlog_quantile_tokens``) in whole budget steps and a shorter last one;
  - unchunked: the wait percentile (service = each request's share φ/λ of the busy time,
    ``queueing.wait_quantile_s``) + the q-quantile prompt's whole pass.
* Overload: φ ≥ 1 (prompt work exceeds the instance), B above the memory/engine cap, or the
  fixed point for B not converging. Overloaded points carry no latency (None upstream).

Everything broadcasts over numpy arrays (chunk sizes × rates).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from advisor.core.arrays import clip
from advisor.core.decode_lines import decode_step_lines
from advisor.core.instance import (
    Instance,
    StackedInstances,
    budget_units,
    cycle_token_budget,
)
from advisor.core.queueing import (
    backlog_quantile_tokens,
    binomial_share_quantile,
    wait_quantile_s,
)
from advisor.core.routing import dispatch_wait_s
from advisor.core.scenario import DEFAULT_ROUTER, RouterPolicy, TrafficPhase

FIXED_POINT_ITERATIONS = 40
GRID_POINTS = 40
RATE_GRID_POINTS = 24
"""Rates per pass of the rate-grid search (unchunked plans, capacity from a known goodput)."""
GRID_PASSES = 3
RATE_RANGE = 1e5
"""Span of the rate-grid search's first pass: rates from the upper bound down to 1e-5 of it."""
RATE_LOG_TOLERANCE = 1e-3
"""The rate-grid search refines until its bracket is this narrow in log rate (1e-3 relative:
three passes of 24 rates over a full ``RATE_RANGE`` span, 23³ ≈ 1.2e4 steps)."""
MAX_SHIFTS = 2
"""Spans of ``RATE_RANGE`` the rate-grid search moves down when a pass finds no rate meeting
the targets (rates down to 1e-15 of the upper bound); below them the goodput is 0."""
BATCH_FLOOR = 1e-4
"""Smallest decode batch of the chunked goodput search (a nearly idle instance)."""
CHUNK_CANDIDATES = (256, 512, 1024, 2048, 4096, 8192, 16384)
"""Token budgets searched when the deployment does not pin one (powers of two, §4.3)."""


@dataclass(frozen=True, kw_only=True)
class ColocatedPoint:
    """Arrays of colocated metrics for one instance at given (chunk, rate) points."""

    rate_rps: np.ndarray
    batch: np.ndarray
    decode_step_s: np.ndarray
    inflated_step_s: np.ndarray
    """Mixed step (chunked) or prefill pass + decode step (unchunked)."""
    mixed_time_share: np.ndarray
    tpot_mean_s: np.ndarray
    tpot_q_s: np.ndarray
    ttft_q_s: np.ndarray
    overloaded: np.ndarray
    ttft_step_s: np.ndarray | None = None
    """TTFT part: the rest of the step in progress when the prompt arrives."""
    ttft_prefill_s: np.ndarray | None = None
    """TTFT part: the prompt's prefill (chunked: with the backlog found waiting ahead of it,
    drained in the same budget steps; :func:`own_prompt_prefill_s` separates the two)."""
    ttft_wait_s: np.ndarray | None = None
    """TTFT part: the prompt-queue wait percentile (unchunked; chunked: 0, the backlog is in
    ``ttft_prefill_s``)."""


def queue_instances(instances: np.ndarray | float) -> np.ndarray:
    """The pool size the colocated prompt queue is evaluated at: the instances the router
    splits arrivals over, exactly (at least 1; issue #27 removed the rounding down to a power
    of two). ``routing.dispatch_wait_s`` turns it into the instance's queue."""
    pool: np.ndarray = np.maximum(np.round(np.asarray(instances, dtype=float)), 1.0)
    return pool


def _phase_numbers(phase: TrafficPhase, quantile: float
                   ) -> tuple[float, float, float, float, float]:
    computed = phase.computed_prompt_tokens  # prefix-cache hits are not prefilled
    s_mean = computed.mean
    s_q = computed.quantile(quantile)
    o_mean = max(phase.output_tokens.mean, 1.0)
    ctx = phase.prompt_tokens.mean + o_mean / 2.0
    # service time ∝ prompt tokens: its CV is the prompt-length CV
    return s_mean, s_q, o_mean, ctx, computed.cv


def _mixed_steps(inst: Instance | StackedInstances, arrivals_per_step: np.ndarray,
                 b: np.ndarray, room: np.ndarray, s_mean: float, ctx: float
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(budget share needed, share f of steps carrying prompt tokens, mixed-step seconds).

    ``arrivals_per_step`` is λ·τ. The share of steps carrying prompt tokens is at least the
    share needed to move λ·S̄ tokens/s in full budgets, and at least the chance that a prompt
    arrived during a step (Poisson: 1 − e^(−λτ)); each carries q_eff = λ·τ·S̄/f tokens.
    When the budget is split over u units (``instance.budget_units``: pipeline micro-batches,
    DP-attention ranks) a prompt advances room/u tokens a step in its unit: the prompts in
    prefill, λτ·S̄·u/room on average, keep a step busy with probability 1 − e^(−need·u), and
    q_eff comes in pieces of at most room/u.
    """
    units = budget_units(inst.params)
    need = arrivals_per_step * s_mean / room
    f = clip(np.maximum(np.maximum(need, -np.expm1(-arrivals_per_step)),
                        -np.expm1(-need * units)), 0.0, 1.0)
    q_eff = np.minimum(room, np.divide(arrivals_per_step * s_mean, np.maximum(f, 1e-12)))
    q_eff = np.maximum(q_eff, np.minimum(s_mean, room) * (f > 0))
    unit_room = room / units
    seqs = np.maximum(np.maximum(q_eff / s_mean, 1.0), q_eff / unit_room)
    earlier = np.where(s_mean > unit_room, (s_mean - unit_room) / 2.0, 0.0)
    t_inf = inst.step_time_s(prefill_tokens=q_eff, prefill_seqs=seqs,
                             prefill_context_tokens=earlier, decode_seqs=b,
                             decode_context_tokens=ctx)
    return need, f, t_inf


def evaluate_colocated(inst: Instance | StackedInstances, max_sequences: np.ndarray | int,
                       phase: TrafficPhase,
                       rate_rps: np.ndarray | float, chunk_tokens: np.ndarray | float | None,
                       quantile: float, instances: np.ndarray | float = 1.0,
                       router: RouterPolicy = DEFAULT_ROUTER) -> ColocatedPoint:
    """Colocated metrics per instance at ``rate_rps``; ``chunk_tokens`` None = unchunked.

    Each instance queues its own prompts: a colocated router balances outstanding requests
    (mostly decodes), not the prompt queue, so the instances do not pool into one G/G/c queue
    for prompts. It does deal the arrivals out about round robin: ``instances`` is the pool
    size it splits them over (per-instance arrival CV² = burstiness²/instances; scalar or
    broadcastable to the rates; 1 = the instance alone; ``queue_instances`` gives the one
    ``evaluate`` uses). Checked against the simulator, tests/simulate/test_sim_matrix.py.
    """
    s_mean, _, o_mean, ctx, _ = _phase_numbers(phase, quantile)
    chunked = chunk_tokens is not None
    lam = np.asarray(rate_rps, dtype=float)
    c = (cycle_token_budget(inst.params, chunk_tokens) if chunk_tokens is not None
         else np.asarray(0.0))
    lam, c = np.broadcast_arrays(lam, c)
    lam = lam.astype(float)
    c = c.astype(float)

    if not chunked and inst.model.moe is None:
        return _unchunked_explicit(inst, max_sequences, phase, lam, c, quantile, instances,
                                   router)

    # speculative decoding (docs/model.md §3.6): a decoding sequence takes v = k + 1 tokens of
    # the budget and a step emits τ_s tokens of it, so τ (time per token) is a step / τ_s
    v, ts = inst.params.decode_query_tokens, inst.params.decode_tokens_per_step
    b = np.zeros_like(lam)
    b_prev = b
    t_inf = inst.decode_step_s(1.0, ctx) + 0.0 * lam
    tau = t_inf / ts
    for it in range(FIXED_POINT_ITERATIONS):
        t_dec = inst.decode_step_s(np.maximum(b, 1.0), ctx)
        if chunked:
            room = np.maximum(c - b * v, 1.0)
            # the previous iterate's τ stands in for this one's in λ·τ
            _, f, t_inf = _mixed_steps(inst, lam * tau * ts, b, room, s_mean, ctx)
            step = f * t_inf + (1.0 - f) * t_dec
            tau = step / ts
            # the prompt "server" is the token budget: its utilisation is the share of the
            # budget prompts use, λ·S̄·τ/room (≥ 1 = overload)
            phi = lam * s_mean * step / room
        else:
            t_pre, passes, phi, phi_c = _prefill_passes(inst, lam, s_mean)
            step = t_dec / (1.0 - phi_c)
            tau = step / ts
            f = np.minimum(passes * step, 1.0)
            t_inf = t_pre + t_dec
        # B = λ·Ō·τ(B) is increasing in B: iterating from 0 climbs monotonically to the
        # smallest fixed point, or past the cap (overload). The cap keeps numbers finite.
        cap = 4.0 * max_sequences + 4.0
        b_next = np.minimum(lam * o_mean * tau, cap)
        settled = np.all(np.abs(b_next - b) <= 1e-5 * np.maximum(b_next, 1.0))
        if it % 3 == 2:
            # Aitken's Δ² on three successive iterates: where the map contracts (ratio of
            # successive steps in [0, 0.95)), jump to the extrapolated fixed point.
            d1, d2 = b - b_prev, b_next - b
            ratio = np.divide(d2, d1, out=np.zeros_like(d2), where=np.abs(d1) > 1e-12)
            safe = (ratio >= 0.0) & (ratio < 0.95)
            jump = np.where(safe, b_next + d2 * np.where(safe, ratio, 0.0)
                            / (1.0 - np.where(safe, ratio, 0.0)), b_next)
            b_next = np.minimum(jump, cap)
        b_prev, b = b, b_next
        if settled and it > 2:
            break
    converged = np.abs(b - lam * o_mean * tau) <= 1e-3 * np.maximum(b, 1.0)
    overloaded = (phi >= 1.0) | (b > max_sequences) | ~converged
    if chunked:
        overloaded = overloaded | (c <= b * v)

    return _metrics(inst, phase, quantile, chunked, lam, b, c, tau, f, t_dec, t_inf, phi,
                    overloaded, instances, router)


def _metrics(inst: Instance | StackedInstances, phase: TrafficPhase, quantile: float,
             chunked: bool, lam: np.ndarray, b: np.ndarray, c: np.ndarray, tau: np.ndarray,
             f: np.ndarray, t_dec: np.ndarray, t_inf: np.ndarray, phi: np.ndarray,
             overloaded: np.ndarray, instances: np.ndarray | float = 1.0,
             router: RouterPolicy = DEFAULT_ROUTER) -> ColocatedPoint:
    """Percentiles of a solved steady state (shared by the rate and the batch parametrisation)."""
    s_mean, s_q, o_mean, ctx, _ = _phase_numbers(phase, quantile)
    # Inflated gaps come in runs: a prompt spans ⌈S̄/room⌉ consecutive mixed steps, and bursty
    # arrivals bring prompts in clusters (runs longer by (1 + c_a²)/2, the burst factor of
    # the queue), so a request's Ō gaps hold about Ō/run independent draws, not Ō.
    burst = max((1.0 + phase.burstiness**2) / 2.0, 1.0)
    units = budget_units(inst.params)
    v, ts = inst.params.decode_query_tokens, inst.params.decode_tokens_per_step
    run = (np.maximum(s_mean * units / np.maximum(c - b * v, 1.0), 1.0) * burst if chunked
           else burst)
    # a request's Ō tokens come in Ō/τ_s steps (speculative decoding, §3.6)
    share_q = binomial_share_quantile(o_mean / ts / run, f, quantile)
    tpot_q = (t_dec + (t_inf - t_dec) * share_q) / ts

    # TTFT: a residual step, the queue ahead of the prompt, and its own prefill. The queue is
    # the router's (``routing.dispatch_wait_s``, the same model as a prefill pool's), whose
    # count here is mostly decoding requests (``_prompt_queue``).
    if chunked:
        room = np.maximum(c - b * v, 1.0)
        # the budget's units (pipeline micro-batches, DP-attention ranks): a prompt and the
        # backlog ahead of it in its unit advance room/u tokens a step
        unit_room = room / units
        # a backlog drains in full budget steps (every unit busy): T_full/room seconds per
        # queued token
        token_s = inst.step_time_s(prefill_tokens=room, prefill_seqs=units,
                                   prefill_context_tokens=np.maximum(s_mean - unit_room, 0.0)
                                   / 2, decode_seqs=b, decode_context_tokens=ctx) / room
        wait_mean, p_wait = _prompt_queue(router, instances, lam, s_mean * token_s, phase, b)
        with np.errstate(divide="ignore", invalid="ignore"):
            backlog = np.where(p_wait > 0, wait_mean / np.where(p_wait > 0, p_wait, 1.0), 0.0)
            backlog = np.where(np.isfinite(wait_mean), backlog / token_s, np.inf)
        # the q-quantile of (tokens ahead in its unit + own prompt), run like one prompt of
        # that length: its full chunks and the shorter last one, beside the other units'
        # prompts (as many as the budget's prompt share keeps busy)
        y = backlog_quantile_tokens(p_wait, backlog / units, phase.computed_prompt_tokens,
                                    quantile)
        y = np.where(np.isfinite(y), y, 0.0)
        pieces = clip(units * np.minimum(phi, 1.0), 1.0, units)
        own_prefill = _chunked_pass_s(inst, y, unit_room, b, ctx, pieces)
        wait_q = np.where(np.isfinite(wait_mean), 0.0, np.inf)
        residual = _residual_quantile(t_dec, t_inf, f, quantile)
    else:
        own_prefill = inst.prefill_time_s(s_q)
        # the prompt work each request brings, in instance-seconds (its share of the busy
        # time φ)
        with np.errstate(divide="ignore", invalid="ignore"):
            service = np.where(lam > 0, phi / lam, 0.0)
        wait_mean, p_wait = _prompt_queue(router, instances, lam, service, phase, b)
        wait_q = wait_quantile_s(wait_mean, p_wait, quantile)
        # a prompt waits for the decode step in progress; waiting for prefill passes in
        # progress is part of the queue wait
        residual = quantile * t_dec
    ttft_q = residual + own_prefill + wait_q + inst.request_overhead_s
    finite = ~overloaded & np.isfinite(ttft_q) & np.isfinite(tpot_q)
    overloaded = overloaded | ~finite
    return ColocatedPoint(rate_rps=lam, batch=b, decode_step_s=np.broadcast_to(t_dec, lam.shape),
                          inflated_step_s=np.broadcast_to(t_inf, lam.shape),
                          mixed_time_share=np.broadcast_to(np.minimum(phi, 1.0), lam.shape),
                          tpot_mean_s=np.broadcast_to(tau, lam.shape),
                          tpot_q_s=np.where(overloaded, np.nan, tpot_q),
                          ttft_q_s=np.where(overloaded, np.nan, ttft_q),
                          overloaded=overloaded,
                          ttft_step_s=np.broadcast_to(residual, lam.shape),
                          ttft_prefill_s=np.broadcast_to(own_prefill, lam.shape),
                          ttft_wait_s=np.broadcast_to(wait_q, lam.shape))


def _prompt_queue(router: RouterPolicy, instances: np.ndarray | float, lam: np.ndarray,
                  service_s: np.ndarray, phase: TrafficPhase, batch: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(mean wait, P(wait)) of a colocated instance's prompt queue behind the pool's router.

    The router counts the requests outstanding at each instance until their last token, so
    what it balances is the prompts queued or in prefill, L_p = λ·(W + S), beside the B
    decoding: ``count_share`` = L_p/(L_p + B) (W the round-robin wait, which needs no share;
    docs/model.md §7.2). The same ``routing.dispatch_wait_s`` prices a prefill pool, whose
    count is its prompt queue (share 1).
    """
    arrival_cv = phase.burstiness
    service_cv = phase.computed_prompt_tokens.cv
    rr = dispatch_wait_s("round-robin", instances, lam, service_s, arrival_cv, service_cv)
    w_rr = rr[0]
    with np.errstate(invalid="ignore", over="ignore"):
        prompts = lam * (np.where(np.isfinite(w_rr), w_rr, 0.0) + service_s)
        share = np.where(prompts > 0, prompts / (prompts + np.maximum(batch, 0.0)), 1.0)
    return dispatch_wait_s(router, instances, lam, service_s, arrival_cv, service_cv,
                           share, round_robin=rr)


def own_prompt_prefill_s(inst: Instance | StackedInstances, phase: TrafficPhase,
                         quantile: float, point: ColocatedPoint, chunk_tokens: float
                         ) -> np.ndarray:
    """The q-quantile prompt's own chunked prefill at ``point``'s decode batch, without any
    backlog ahead of it: its full budget steps and the shorter last one (the same steps
    ``_metrics`` runs the backlog and the prompt in; the report's TTFT decomposition)."""
    _, s_q, _, ctx, _ = _phase_numbers(phase, quantile)
    b = np.asarray(point.batch, dtype=float)
    room = np.maximum(cycle_token_budget(inst.params, float(chunk_tokens))
                      - b * inst.params.decode_query_tokens, 1.0)
    return np.asarray(_chunked_pass_s(inst, s_q, room / budget_units(inst.params), b, ctx),
                      dtype=float)


def _chunked_pass_s(inst: Instance | StackedInstances, tokens: Any, room: Any, b: Any,
                    ctx: Any, pieces: Any = 1.0) -> Any:
    """Seconds to prefill ``tokens`` in chunks of ``room`` tokens beside ``b`` decodes of
    context ``ctx`` (and ``pieces`` − 1 other prompts' chunks in the budget's other units):
    the full chunks and the shorter last one."""
    full = np.floor(tokens / room)
    rest = tokens - full * room
    t_full = inst.step_time_s(prefill_tokens=room * pieces, prefill_seqs=pieces,
                              prefill_context_tokens=np.maximum(tokens - room, 0.0) / 2,
                              decode_seqs=b, decode_context_tokens=ctx)
    t_rest = inst.step_time_s(prefill_tokens=rest * pieces, prefill_seqs=pieces,
                              prefill_context_tokens=tokens - rest, decode_seqs=b,
                              decode_context_tokens=ctx)
    return full * t_full + np.where(rest > 0, t_rest, 0.0)


def _prefill_passes(inst: Instance | StackedInstances, lam: np.ndarray, s_mean: float
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Unchunked prompt passes: (pass seconds, passes/s, busy share φ, φ capped below 1).

    Prompts arriving during a pass batch into the next one: m = max(1, λ·T_pre(S̄)) per pass.
    """
    batch_prompts = np.maximum(1.0, lam * inst.prefill_time_s(s_mean))
    t_pre = inst.prefill_time_s(s_mean, batch_prompts)
    passes = lam / batch_prompts
    phi = passes * t_pre
    return t_pre, passes, phi, np.minimum(phi, 0.999999)


def _unchunked_explicit(inst: Instance | StackedInstances, max_sequences: np.ndarray | int,
                        phase: TrafficPhase, lam: np.ndarray, c: np.ndarray,
                        quantile: float, instances: np.ndarray | float = 1.0,
                        router: RouterPolicy = DEFAULT_ROUTER) -> ColocatedPoint:
    """The unchunked steady state in closed form (dense models).

    The prefill passes do not depend on the decode batch: φ = (λ/m)·T_pre(m prompts), m =
    max(1, λ·T_pre(S̄)). Little's law then reads B = c₁·T_dec(B) with c₁ = λ·Ō/(1 − φ), and
    T_dec(B) = maxᵢ(aᵢ + bᵢ·B) + r0 + rr·B (``decode_lines.decode_step_lines``), so the
    smallest fixed point is max over the lines of c₁·(aᵢ + r0)/(1 − c₁·(bᵢ + rr)) (or
    c₁·T_dec(1) when that is below one sequence); none exists when c₁·(bᵢ + rr) ≥ 1 for a
    line (overload).
    """
    s_mean, _, o_mean, ctx, _ = _phase_numbers(phase, quantile)
    t_pre, passes, phi, phi_c = _prefill_passes(inst, lam, s_mean)
    ts = inst.params.decode_tokens_per_step  # a step emits τ_s tokens per sequence (§3.6)
    c1 = lam * o_mean / (1.0 - phi_c) / ts
    lines = decode_step_lines(inst.model, inst.params, ctx)
    # the lines hold from one sequence per pipeline micro-batch (B ≥ m) on; below, the step
    # is their value at m
    floor = np.asarray(inst.params.pipeline_microbatches, dtype=float)
    t_one = lines.at(floor)
    no_fixed: np.ndarray | bool = False
    big: np.ndarray | float = 0.0
    for intercept_s, slope_s in zip(lines.intercepts_s, lines.slopes_s, strict=True):
        slope = c1 * (slope_s + lines.rr_s)
        no_fixed = no_fixed | (slope >= 1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            big = np.maximum(big, c1 * (intercept_s + lines.r0_s) / (1.0 - slope))
    b = np.where(c1 * t_one < floor, c1 * t_one, big)
    cap = 4.0 * np.asarray(max_sequences, dtype=float) + 4.0
    b = np.where(no_fixed | ~np.isfinite(b), cap, np.minimum(b, cap))
    t_dec = inst.decode_step_s(np.maximum(b, 1.0), ctx)
    step = t_dec / (1.0 - phi_c)
    tau = step / ts
    f = np.minimum(passes * step, 1.0)
    t_inf = t_pre + t_dec
    overloaded = (phi >= 1.0) | (b > max_sequences) | no_fixed
    return _metrics(inst, phase, quantile, False, lam, b, c, tau, f, t_dec, t_inf, phi,
                    overloaded, instances, router)


def chunked_state_at_batch(inst: Instance | StackedInstances, max_sequences: np.ndarray | int,
                           phase: TrafficPhase, batch: np.ndarray, chunk_tokens: np.ndarray,
                           quantile: float, instances: np.ndarray | float = 1.0,
                           router: RouterPolicy = DEFAULT_ROUTER
                           ) -> tuple[ColocatedPoint, np.ndarray]:
    """The chunked steady state whose decode batch is ``batch``, explicitly (no fixed point).

    Little's law fixes λ·τ = B/Ō, so every quantity of the chunked model is explicit in B:
    need = (B/Ō)·S̄/room, f = max(need, 1 − e^(−B/Ō)), q_eff = (B/Ō)·S̄/f,
    τ = f·T_mix(q_eff) + (1 − f)·T_dec(B), λ = (B/Ō)/τ. Returns the point and a mask of the
    *stable* branch: λ increases with B up to the first maximum; beyond it no arrival rate
    settles there (overload).
    """
    s_mean, _, o_mean, ctx, _ = _phase_numbers(phase, quantile)
    b, c = np.broadcast_arrays(np.asarray(batch, float),
                               cycle_token_budget(inst.params, chunk_tokens))
    b, c = b.astype(float), c.astype(float)
    x = b / o_mean  # λ·τ
    v, ts = inst.params.decode_query_tokens, inst.params.decode_tokens_per_step
    t_dec = inst.decode_step_s(np.maximum(b, 1.0), ctx)
    room = np.maximum(c - b * v, 1.0)
    need, f, t_inf = _mixed_steps(inst, x * ts, b, room, s_mean, ctx)  # arrivals per step
    tau = (f * t_inf + (1.0 - f) * t_dec) / ts
    lam = x / tau
    stable = np.concatenate([np.ones((*lam.shape[:-1], 1), bool),
                             np.diff(lam, axis=-1) > 0], axis=-1)
    stable = np.logical_and.accumulate(stable, axis=-1)
    overloaded = (need >= 1.0) | (b > max_sequences) | (c <= b * v) | ~stable
    return _metrics(inst, phase, quantile, True, lam, b, c, tau, f, t_dec, t_inf, need,
                    overloaded, instances, router), stable


def _max_rate_by_batch(inst: Instance | StackedInstances, max_sequences: np.ndarray | int,
                       phase: TrafficPhase, chunks: np.ndarray, quantile: float,
                       ttft_slo_s: float | None, tpot_slo_s: float | None,
                       lead: tuple[int, ...], instances: np.ndarray | float = 1.0,
                       router: RouterPolicy = DEFAULT_ROUTER) -> np.ndarray:
    """Largest per-instance rate meeting the SLOs under chunked prefill, searched over B.

    Nested grids over the decode batch (log-spaced first, then linear inside the bracket):
    the feasible steady states form a prefix of the stable branch, and the goodput is the
    rate of its last point.
    """
    seqs = np.asarray(max_sequences, dtype=float)
    seqs_lead = seqs.reshape(seqs.shape + (1,) * (len(lead) - seqs.ndim))
    verify = float(np.max(inst.params.decode_query_tokens))  # k + 1 budget tokens (§3.6)
    b_hi = np.minimum(np.broadcast_to(seqs_lead, lead), (chunks - 1.0) / verify)
    lo = np.full(lead, np.log(BATCH_FLOOR))
    hi = np.log(np.maximum(b_hi, BATCH_FLOOR * 2))
    best = np.zeros(lead)
    steps = np.linspace(0.0, 1.0, GRID_POINTS)
    idx = np.indices(lead)
    for pass_ in range(GRID_PASSES):
        if pass_ == 0:
            grid_b = np.exp(lo[..., None] + (hi - lo)[..., None] * steps)
        else:
            grid_b = lo[..., None] + (hi - lo)[..., None] * steps
        seqs_grid = seqs.reshape(seqs.shape + (1,) * (len(lead) + 1 - seqs.ndim))
        pt, _ = chunked_state_at_batch(inst, seqs_grid, phase, grid_b, chunks[..., None],
                                       quantile, instances, router)
        ok = within_targets(pt, ttft_slo_s, tpot_slo_s)
        # feasible prefix: up to the first infeasible batch
        prefix = np.logical_and.accumulate(ok, axis=-1)
        count = prefix.sum(axis=-1)
        last = np.maximum(count - 1, 0)
        lam_last = pt.rate_rps[(*idx, last)]
        best = np.where(count > 0, np.maximum(best, lam_last), best)
        b_last = grid_b[(*idx, last)]
        b_next = grid_b[(*idx, np.minimum(last + 1, GRID_POINTS - 1))]
        if pass_ == 0:
            lo, hi = np.where(count > 0, b_last, 0.0), np.where(count > 0, b_next, grid_b[..., 0])
        else:
            lo, hi = np.where(count > 0, b_last, lo), np.where(count > 0, b_next, lo)
    return best


def _residual_quantile(t_dec: np.ndarray, t_inf: np.ndarray, f: np.ndarray,
                       quantile: float) -> np.ndarray:
    """q-quantile of the remaining time of the step in progress when a prompt arrives.

    Arrivals land in a step with probability proportional to its length (inspection paradox):
    inflated steps take the time share w = f·T_inf/τ. The residual is uniform within the
    step, so P(R > r) = w·(1 − r/T_inf)⁺ + (1 − w)·(1 − r/T_dec)⁺; solved for 1 − q.
    """
    tau = f * t_inf + (1.0 - f) * t_dec
    w = clip(np.divide(f * t_inf, tau, out=np.zeros_like(tau), where=tau > 0), 0.0, 1.0)
    tail = 1.0 - quantile
    with np.errstate(divide="ignore", invalid="ignore"):
        above = t_inf * (1.0 - tail / w)  # valid when the answer lies past T_dec
        below = quantile / (w / t_inf + (1.0 - w) / t_dec)
    return np.where((w > tail) & (above >= t_dec), above, np.minimum(below, t_dec))


def within_targets(point: ColocatedPoint, ttft_slo_s: float | None,
              tpot_slo_s: float | None) -> np.ndarray:
    """Points that are not overloaded and meet both targets (None = no target)."""
    ok = ~point.overloaded
    if ttft_slo_s is not None:
        ok = ok & (np.nan_to_num(point.ttft_q_s, nan=np.inf) <= ttft_slo_s)
    if tpot_slo_s is not None:
        ok = ok & (np.nan_to_num(point.tpot_q_s, nan=np.inf) <= tpot_slo_s)
    return ok


def rate_upper_bound(inst: Instance | StackedInstances, phase: TrafficPhase) -> np.ndarray:
    """A rate no instance can exceed: the prompt-token roofline of a full 16k-token pass,
    or a thousand decode-only steps of one sequence per second (whichever is larger), ×2."""
    s_mean = max(phase.computed_prompt_tokens.mean, 1.0)
    t = inst.prefill_time_s(16384.0)
    decode_floor = inst.decode_step_s(1.0, s_mean) * 1e-3
    return np.maximum(16384.0 / (s_mean * t), 1.0 / np.maximum(decode_floor, 1e-9)) * 2.0


def max_rate_meeting(inst: Instance | StackedInstances, max_sequences: np.ndarray | int,
                     phase: TrafficPhase, chunk_tokens: np.ndarray | None, quantile: float,
                     ttft_slo_s: float | None, tpot_slo_s: float | None,
                     feasible_rate: float | None = None,
                     instances: np.ndarray | float = 1.0,
                     router: RouterPolicy = DEFAULT_ROUTER) -> np.ndarray:
    """Largest per-instance rate meeting the SLOs (0 when none).

    ``instances`` is the pool size the router splits arrivals over (one number, or one per
    stacked shape): the per-instance prompt queue depends on it (``_metrics``).

    ``feasible_rate``, when given, is a rate known to meet the criteria (e.g. the SLO goodput
    when searching for raw capacity): the search then starts there and needs fewer passes.

    Vectorised over token budgets (``chunk_tokens``, 1-D) and, for :class:`StackedInstances`,
    over instance shapes (a leading axis; ``max_sequences`` then has one entry per shape).
    The result has shape (shapes?, chunks?) following the inputs.

    Every metric is monotone non-decreasing in the rate, so the feasible set is an interval
    from zero. It is located by nested log-spaced grids (``RATE_GRID_POINTS`` rates per pass,
    each zooming into the bracket the previous one found) until the bracket is
    ``RATE_LOG_TOLERANCE`` narrow (1e-3 relative); a pass that finds no rate meeting them
    looks one ``RATE_RANGE`` span lower (at most ``MAX_SHIFTS`` times) without counting as a
    refinement, so the precision is the same however far below the upper bound the goodput
    lies (chunked plans without a known feasible rate use the batch search,
    ``_max_rate_by_batch``).
    """
    stacked = isinstance(inst, StackedInstances)
    n_shapes = len(inst.instances) if isinstance(inst, StackedInstances) else 1
    chunks = None if chunk_tokens is None else np.atleast_1d(np.asarray(chunk_tokens, float))
    n_chunks = 1 if chunks is None else chunks.size
    pool = np.asarray(instances, dtype=float)
    if chunks is not None and feasible_rate is None:
        lead = (n_shapes, n_chunks)
        seqs_b = (np.asarray(max_sequences, dtype=float).reshape(-1, 1) if stacked
                  else np.full((1, 1), float(max_sequences)))
        pool_b = pool if pool.ndim == 0 else pool.reshape(-1, 1, 1)
        out = _max_rate_by_batch(inst, seqs_b, phase, np.broadcast_to(chunks, lead), quantile,
                                 ttft_slo_s, tpot_slo_s, lead, pool_b, router)
        if not stacked:
            out = out[0]
        if chunk_tokens is None or np.ndim(chunk_tokens) == 0:  # (never None here: chunks is set)
            out = out[..., 0]
        return out
    upper = np.broadcast_to(np.asarray(rate_upper_bound(inst, phase), dtype=float).reshape(-1, 1),
                            (n_shapes, n_chunks))
    if feasible_rate is not None and feasible_rate > 0:
        lo = np.full((n_shapes, n_chunks), np.log(min(feasible_rate, float(upper.min()))))
    else:
        lo = np.log(upper) - np.log(RATE_RANGE)
    hi = np.log(upper).copy()
    found = np.zeros((n_shapes, n_chunks), dtype=bool)
    done = np.zeros((n_shapes, n_chunks), dtype=bool)
    shifts = 0
    steps = np.linspace(0.0, 1.0, RATE_GRID_POINTS)
    seqs = np.asarray(max_sequences, dtype=float).reshape(-1, 1, 1) if stacked else max_sequences
    pool_r = pool if pool.ndim == 0 else (pool.reshape(-1, 1, 1) if stacked else pool)
    rows = np.arange(n_shapes)[:, None]
    cols = np.arange(n_chunks)[None, :]
    while not done.all():
        grid = lo[..., None] + (hi - lo)[..., None] * steps  # (shapes, chunks, points)
        c = None if chunks is None else np.broadcast_to(chunks[None, :, None], grid.shape)
        rates = np.exp(grid) if stacked else np.exp(grid[0])
        cc = c if (stacked or c is None) else c[0]
        ok = within_targets(evaluate_colocated(inst, seqs, phase, rates, cc, quantile, pool_r,
                                                      router),
                       ttft_slo_s, tpot_slo_s).reshape(grid.shape)
        any_ok = ok.any(axis=-1)
        last = np.where(any_ok, RATE_GRID_POINTS - 1 - np.argmax(ok[..., ::-1], axis=-1), 0)
        new_lo = grid[rows, cols, last]
        new_hi = grid[rows, cols, np.minimum(last + 1, RATE_GRID_POINTS - 1)]
        # found: zoom into the bracket (a zoomed grid whose points all miss, which only the
        # fixed point's last iteration can cause, keeps the bracket); not yet found: the
        # next span of RATE_RANGE below, which costs no refinement pass
        zoom = ~done & any_ok
        shift = ~done & ~found & ~any_ok
        lo, hi = (np.where(zoom, new_lo, np.where(shift, lo - (hi - lo), lo)),
                  np.where(zoom, new_hi, np.where(shift, grid[..., 0], hi)))
        found |= any_ok
        shifts += int(shift.any())
        done |= (found & (hi - lo <= RATE_LOG_TOLERANCE)) | (~found & (shifts > MAX_SHIFTS))
    out = np.where(found, np.exp(lo), 0.0)
    if not stacked:
        out = out[0]
    if chunk_tokens is None or np.ndim(chunk_tokens) == 0:
        out = out[..., 0]
    return out
