"""Finite batches: N requests sent at once, served until the last one completes (#30).

A benchmark run at ``--request-rate inf`` (or a batch job) is no open-loop queue: every
request is in the system at t = 0, and the run ends when the longest outputs of the last
requests admitted are done. Its figures are the batch's own: the **makespan** (first arrival
to last completion), the throughput N / makespan, and the percentiles of TTFT and TPOT over
the batch's requests.

**The model** is a fluid (mean-value) run of the engine's scheduler over the batch, step by
step, on the same step times as everything else (``Instance.step_time_s``); it tracks
expected counts, not individual requests:

* the router deals the batch out evenly (join-the-shortest-queue on an empty pool is round
  robin): n = N / instances per instance, in arrival order;
* **chunked** (token budget c): each step every decoding request emits a token and the rest of
  the budget, c − D, prefills the queue in arrival order — a prompt of S̄ tokens (the mean
  computed prompt) is one fluid unit — as long as fewer than M requests run (M: the engine's
  sequence cap and the KV memory at the mean context, the plan's ``max_sequences``); a request
  whose prefill ends emits its first token at the end of that step and decodes from the next;
* **unchunked**: while prompts wait and can be admitted, the next step is a prefill-only pass
  over them (up to the pass cap), the decodes stall; otherwise a decode step;
* **disaggregated**: each prefill instance runs passes of L_m tokens over its N / x prompts;
  each prompt's KV crosses the instance's link one after another (layer-wise, as in
  docs/model.md §6: it leaves max(t_x/L, t_x − T·(L−1)/L) after the pass plus the setup α, or
  after the previous transfer); it emits its first token when its KV arrives, and joins a
  decode instance's batch (N / y each, arrivals spread over the prefill span) at the next step;
* a request of O output tokens completes O − 1 decode steps after its first token; outputs are
  the phase's length distribution in ``OUTPUT_BINS`` equal-probability bins, so the decode
  batch drains as the short outputs finish. A decode step at a fractional batch under one is
  timed at batch 1 (the last request decodes alone).

Figures: TTFT of the request at rank r = the time its first token is out (+ the engine's
per-request overhead, as everywhere in the model); TPOT of a request = (completion − first
token) / (O − 1), its percentiles over the batch's ranks × output bins; the makespan is the
median of the last completion, max over requests of (completion step of its rank + O − 1),
whose distribution is Π_r F_O(κ − k_r + 1) (F_O the rounded, clipped lognormal). Checked
against the discrete-event simulator on the same batch (``simulate.batch``).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

import numpy as np

from advisor.core.distributions import LengthDistribution, normal_quantile
from advisor.core.instance import Instance

OUTPUT_BINS = 48
"""Equal-probability bins of the output length."""
RANK_POINTS = 256
"""Ranks at which the TTFT and TPOT distributions are read."""
QUANTILES = (0.50, 0.95, 0.99)
MAX_STEPS = 20_000_000
"""A fluid run longer than this many steps is refused (a bug or an absurd batch)."""


@dataclass(frozen=True, kw_only=True)
class BatchFigures:
    """The analytic (or simulated) figures of one finite batch."""

    requests: int
    makespan_s: float
    """First arrival to the last completion."""
    ttft_ms: tuple[float, float, float]
    """At ``QUANTILES``."""
    tpot_ms: tuple[float, float, float]
    ttft_mean_ms: float
    tpot_mean_ms: float
    ttft_at_slo_ms: float
    tpot_at_slo_ms: float
    output_tokens: float
    """Output tokens of the whole batch (mean output × requests)."""

    @property
    def throughput_rps(self) -> float:
        """Requests per second over the makespan."""
        return self.requests / self.makespan_s if self.makespan_s > 0 else 0.0

    @property
    def output_tokens_per_s(self) -> float:
        """Output tokens per second over the makespan."""
        return self.output_tokens / self.makespan_s if self.makespan_s > 0 else 0.0


def _output_bins(dist: LengthDistribution) -> tuple[np.ndarray, np.ndarray]:
    """(lengths, weights): whole-token outputs at the midpoints of equal-probability bins."""
    if dist.sigma <= 0.0:
        return np.array([max(1.0, round(dist.mean))]), np.array([1.0])
    q = (np.arange(OUTPUT_BINS) + 0.5) / OUTPUT_BINS
    z = np.array([normal_quantile(float(x)) for x in q])
    values = np.exp(dist.mu + dist.sigma * z)
    if dist.max_tokens is not None:
        values = np.minimum(values, dist.max_tokens)
    lengths = np.maximum(np.rint(values), 1.0)
    return lengths, np.full(lengths.size, 1.0 / lengths.size)


def _output_cdf(dist: LengthDistribution, x: np.ndarray) -> np.ndarray:
    """P(O ≤ x) of the rounded, clipped output distribution."""
    if dist.sigma <= 0.0:
        return (x >= max(1.0, round(dist.mean))).astype(float)
    v = np.maximum(x + 0.5, 1e-300)
    z = (np.log(v) - dist.mu) / (dist.sigma * math.sqrt(2.0))
    out = 0.5 * (1.0 + np.array([math.erf(float(a)) for a in np.ravel(z)]).reshape(z.shape))
    if dist.max_tokens is not None:
        out = np.where(x >= round(dist.max_tokens), 1.0, out)
    result: np.ndarray = np.where(x < 1, 0.0, out)
    return result


@dataclass
class _Run:
    """One instance's fluid run: per step its end time, the decode step count after it, the
    requests whose first token came out in it and the decode batch it carried."""

    end_s: list[float]
    k_after: list[int]
    first: list[float]
    """Cumulative requests with a first token at the step's end."""

    def first_token_s(self, ranks: np.ndarray) -> np.ndarray:
        """End of the step in which the request at each (fractional) rank got its token."""
        cum = np.asarray(self.first)
        idx = np.minimum(np.searchsorted(cum, ranks - 1e-9, side="left"), cum.size - 1)
        out: np.ndarray = np.asarray(self.end_s)[idx]
        return out

    def first_k(self, ranks: np.ndarray) -> np.ndarray:
        cum = np.asarray(self.first)
        idx = np.minimum(np.searchsorted(cum, ranks - 1e-9, side="left"), cum.size - 1)
        out: np.ndarray = np.asarray(self.k_after)[idx]
        return out

    tail_step_s: float = 0.0
    """A decode step of one request: the steps past the run's end (the longest outputs,
    beyond the last output bin, decode alone)."""

    def time_at_k(self, k: np.ndarray) -> np.ndarray:
        """End time of decode step k (the step at which the counter reached k)."""
        ks = np.asarray(self.k_after)
        ends = np.asarray(self.end_s)
        idx = np.minimum(np.searchsorted(ks, k, side="left"), ks.size - 1)
        beyond = np.maximum(np.asarray(k, dtype=float) - ks[-1], 0.0)
        out: np.ndarray = ends[idx] + beyond * self.tail_step_s
        return out


class _Steps:
    """Step times of one instance, tabulated over the decode batch (interpolated)."""

    def __init__(self, inst: Instance, max_batch: int, prefill_room: float | None,
                 s_mean: float, ctx: float) -> None:
        self.inst = inst
        self.grid = np.unique(np.concatenate((np.arange(0, min(max_batch, 256) + 1),
                                              np.geomspace(1, max(max_batch, 1), 64).round())))
        self.ctx = ctx
        self.s_mean = s_mean
        self.dec = np.asarray(inst.decode_step_s(np.maximum(self.grid, 1.0), ctx), dtype=float)
        self.room = prefill_room
        if prefill_room is not None:
            q = np.maximum(prefill_room - self.grid, 1.0)
            self.full = np.asarray(self._mixed(q, self.grid), dtype=float)
        self._grid = self.grid.astype(float).tolist()
        self._dec = self.dec.tolist()
        self._full = self.full.tolist() if prefill_room is not None else []

    def _mixed(self, q: np.ndarray | float, b: np.ndarray | float) -> np.ndarray:
        s = self.s_mean
        seqs = np.maximum(np.asarray(q, dtype=float) / s, 1.0)
        earlier = np.where(s > np.asarray(q), (s - np.asarray(q)) / 2.0, 0.0)
        out: np.ndarray = self.inst.step_time_s(prefill_tokens=q, prefill_seqs=seqs,
                                                prefill_context_tokens=earlier,
                                                decode_seqs=b, decode_context_tokens=self.ctx)
        return out

    def _at(self, table: list[float], d: float) -> float:
        """Linear interpolation of ``table`` (on the batch grid) at ``d`` (scalar, fast)."""
        g = self._grid
        if d <= 0.0:
            return table[0]
        if d >= g[-1]:
            return table[-1]
        i = int(d) if d < 256.0 else bisect.bisect_right(g, d) - 1
        lo, hi = g[i], g[i + 1]
        return float(table[i] + (table[i + 1] - table[i]) * (d - lo) / (hi - lo))

    def decode(self, d: float) -> float:
        return self._at(self._dec, d if d > 1.0 else 1.0)

    def mixed(self, d: float, q: float) -> float:
        """A chunked step: d decodes and q prefill tokens (≤ the room left by d)."""
        if q <= 0:
            return self.decode(d)
        assert self.room is not None
        room = max(self.room - d, 1.0)
        full = self._at(self._full, d)
        if q >= room - 1e-9:
            return full
        dec = self.decode(d)
        return dec + (full - dec) * q / room

    def prefill_pass(self, tokens: float) -> float:
        return float(self.inst.prefill_time_s(self.s_mean, max(tokens / self.s_mean, 1.0)))


@dataclass(frozen=True)
class _Memory:
    """An instance's admission limits: running sequences and KV tokens."""

    max_seqs: float
    kv_tokens: float
    prompt_tokens: float
    """A request's prompt in the cache (the whole prompt, prefix hits included)."""


class _Schedule:
    """Expected completions (and the KV tokens they free) per future decode step."""

    def __init__(self, bins: tuple[np.ndarray, np.ndarray], s_kv: float) -> None:
        lengths, weights = bins
        multi = lengths > 1
        o, inverse = np.unique(lengths[multi].astype(np.int64), return_inverse=True)
        w = np.bincount(inverse, weights=weights[multi]) if o.size else np.zeros(0)
        self.offsets = o - 1  # a request joining at step k completes at k + O − 1
        self.weights = w
        self.kv_weights = w * (s_kv + o)
        self.decoding_share = float(w.sum())
        """Share of requests with more than one output token."""
        self.single_share = float(weights[~multi].sum())
        self.last = int(self.offsets.max()) if o.size else 0
        self.single = o.size == 1
        self.kv_share = float(self.kv_weights.sum())
        size = self.last + 2
        self.count = np.zeros(size)
        self.kv = np.zeros(size)
        self.left = 0.0
        """Expected completions scheduled and not yet taken."""

    def add(self, k: int, x: float) -> None:
        """``x`` requests start decoding at step k."""
        if not self.offsets.size:
            return
        top = k + self.last + 1
        if top >= self.count.size:
            grow = max(top + 1, 2 * self.count.size)
            for name in ("count", "kv"):
                old = getattr(self, name)
                new = np.zeros(grow)
                new[:old.size] = old
                setattr(self, name, new)
        if self.single:
            self.count[k + self.last] += x * self.decoding_share
            self.kv[k + self.last] += x * self.kv_share
            self.left += x * self.decoding_share
            return
        idx = k + self.offsets
        self.count[idx] += x * self.weights
        self.kv[idx] += x * self.kv_weights
        self.left += x * self.decoding_share

    def take(self, k: int) -> tuple[float, float]:
        """(completions, freed KV tokens) at the end of step k."""
        if k >= self.count.size:
            return 0.0, 0.0
        c, v = float(self.count[k]), float(self.kv[k])
        self.count[k] = self.kv[k] = 0.0
        self.left -= c
        return c, v


def _fluid(steps: _Steps, n: float, mem: _Memory, bins: tuple[np.ndarray, np.ndarray],
           mode: str, budget: float | None, pass_cap: float | None,
           arrivals: tuple[np.ndarray, np.ndarray] | None) -> _Run:
    """The fluid run of ``n`` requests on one instance (module docstring).

    ``arrivals`` (decode instances): (times, cumulative requests) of the KV arrivals."""
    s_mean = steps.s_mean
    s_kv = mem.prompt_tokens
    sched = _Schedule(bins, s_kv)
    used = 0.0  # KV tokens of the decoding requests
    t = 0.0
    k = 0
    f = 0.0  # requests with a first token (fluid)
    done = 0.0
    dec = 0.0
    pending = 0.0  # requests that got their first token in the last step: decode from now
    run = _Run([0.0], [0], [0.0], steps.decode(1.0))
    arr_t, arr_n = arrivals if arrivals is not None else (np.array([0.0]), np.array([n]))
    a_t, a_n, a_i = arr_t.tolist(), arr_n.tolist(), 0
    for _ in range(MAX_STEPS):
        if done >= n - 1e-9 and f >= n - 1e-9:
            break
        if arrivals is None:
            arrived = n
        else:  # the KV arrivals so far (piecewise linear; t only grows)
            while a_i + 1 < len(a_t) and a_t[a_i + 1] <= t:
                a_i += 1
            if a_i + 1 < len(a_t) and t >= a_t[a_i]:
                span = a_t[a_i + 1] - a_t[a_i]
                arrived = a_n[a_i] + (a_n[a_i + 1] - a_n[a_i]) * (
                    (t - a_t[a_i]) / span if span > 0 else 1.0)
            else:
                arrived = a_n[a_i] if t >= a_t[a_i] else 0.0
        dec += pending
        pending = 0.0
        # admission (vLLM V1): fewer than max_num_seqs running and room in the KV cache
        by_kv = max(mem.kv_tokens - used, 0.0) / max(s_kv, 1.0)
        admitted_room = max(min(arrived - f, done + mem.max_seqs - f, by_kv), 0.0)
        prefilled = 0.0
        if mode == "decode":
            join = admitted_room
            if dec <= 1e-12 and join <= 1e-12:
                later = arr_t[arr_t > t]
                if later.size == 0:
                    break
                t = float(later[0])
                continue
            if join > 0:  # joins at this step boundary: its first decode step is this one
                f += join
                done += join * sched.single_share  # the first token was the only one
                sched.add(k, join)
                dec += join * sched.decoding_share
                used += join * sched.decoding_share * (s_kv + 1.0)
                run.end_s.append(t)
                run.k_after.append(k)
                run.first.append(min(f, n))
            dt = steps.decode(dec)
            advance = True
        elif mode == "unchunked" and admitted_room > 1e-12:
            tokens = admitted_room * s_mean
            if pass_cap is not None:
                tokens = min(tokens, max(pass_cap, s_mean))
            prefilled = tokens / s_mean
            dt = steps.prefill_pass(tokens)
            advance = False
        else:
            q = min(max(budget - dec, 0.0), admitted_room * s_mean) if (
                mode == "chunked" and budget is not None) else 0.0
            prefilled = q / s_mean
            if dec <= 1e-12 and prefilled <= 1e-12:
                break  # nothing left that can run (a cap of zero)
            dt = steps.mixed(dec, q) if mode == "chunked" else steps.decode(dec)
            advance = True
        t += dt
        if advance:
            k += 1
            used += dec  # every decode adds a token
            gone, freed = sched.take(k)
            gone = min(gone, dec)
            dec -= gone
            done += gone
            used = max(used - freed, 0.0)
        if prefilled > 0:
            f += prefilled
            done += prefilled * sched.single_share
            sched.add(k, prefilled)
            used += prefilled * sched.decoding_share * (s_kv + 1.0)
            pending = prefilled * sched.decoding_share
        run.end_s.append(t)
        run.k_after.append(k)
        run.first.append(min(f, n))
        if f >= n - 1e-9 and sched.left <= 1e-9 * n and dec <= 1e-9:
            break
    else:
        raise ValueError("a finite batch that does not finish in 20,000,000 steps")
    return run


def _percentiles(values: np.ndarray, weights: np.ndarray, qs: tuple[float, ...]) -> list[float]:
    order = np.argsort(values)
    v, w = values[order], weights[order]
    cum = np.cumsum(w) / w.sum()
    return [float(v[min(int(np.searchsorted(cum, q)), v.size - 1)]) for q in qs]


def _figures(run: _Run, n_per: float, requests: int, bins: tuple[np.ndarray, np.ndarray],
             dist: LengthDistribution, extra_ttft_s: float, quantile: float,
             first_s: np.ndarray | None = None) -> BatchFigures:
    """The batch's figures from one (representative) instance's run."""
    lengths, weights = bins
    ranks = (np.arange(RANK_POINTS) + 0.5) / RANK_POINTS * n_per
    t_first = run.first_token_s(ranks) if first_s is None else first_s
    k_first = run.first_k(ranks)
    ttft = (t_first + extra_ttft_s) * 1000.0
    qs = (*QUANTILES, quantile)
    multi = lengths > 1
    if multi.any():
        lo = lengths[multi]
        done_t = run.time_at_k(k_first[:, None] + lo[None, :] - 1.0)
        tpot = (done_t - t_first[:, None]) / (lo[None, :] - 1.0) * 1000.0
        w = np.broadcast_to(weights[multi][None, :], tpot.shape)
        tp = _percentiles(tpot.ravel(), w.ravel(), qs)
        tpot_mean = float((tpot * w).sum() / w.sum())
    else:
        tp = [0.0] * len(qs)
        tpot_mean = 0.0
    tt = _percentiles(ttft, np.ones(ttft.size), qs)
    makespan = _makespan(run, requests / max(n_per, 1e-12), dist)
    return BatchFigures(requests=requests, makespan_s=makespan,
                        ttft_ms=(tt[0], tt[1], tt[2]), tpot_ms=(tp[0], tp[1], tp[2]),
                        ttft_mean_ms=float(ttft.mean()), tpot_mean_ms=tpot_mean,
                        ttft_at_slo_ms=tt[3], tpot_at_slo_ms=tp[3],
                        output_tokens=float(requests * dist.mean))


def _makespan(run: _Run, copies: float, dist: LengthDistribution) -> float:
    """Median of the last completion: P(max ≤ κ) = Π over the batch's requests of
    F_O(κ − k_r + 1) — every instance's ranks (``copies`` instances run alike)."""
    cum = np.asarray(run.first)
    ks = np.asarray(run.k_after)
    step_n = np.diff(cum, prepend=0.0) * copies
    sel = step_n > 1e-12
    k_r, w_r = ks[sel], step_n[sel]
    if k_r.size == 0:
        return float(run.end_s[-1])

    def log_p(kappa: float) -> float:
        cdf = _output_cdf(dist, kappa - k_r + 1.0)
        if (cdf <= 0).any():
            return -math.inf
        return float((w_r * np.log(cdf)).sum())

    lo, hi = float(k_r.min()), float(k_r.max()) + (dist.max_tokens or dist.quantile(0.9999)) + 1
    target = math.log(0.5)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if log_p(mid) >= target:
            hi = mid
        else:
            lo = mid
        if hi - lo < 0.5:
            break
    return float(run.time_at_k(np.array([math.ceil(hi)]))[0])


def colocated_batch(inst: Instance, instances: int, max_seqs: int, kv_tokens: float,
                    requests: int, prompt: LengthDistribution, output: LengthDistribution,
                    chunk_tokens: int | None, prefill_cap_tokens: float,
                    kv_prompt_tokens: float | None = None,
                    quantile: float = 0.95) -> BatchFigures:
    """A finite batch of ``requests`` on a colocated pool (chunked, or unchunked when
    ``chunk_tokens`` is None); ``prompt`` is the computed prompt (prefix hits removed),
    ``kv_prompt_tokens`` the whole prompt's mean (default: ``prompt``'s), ``max_seqs`` and
    ``kv_tokens`` an instance's sequence cap and KV cache."""
    n_per = requests / max(instances, 1)
    s_mean = max(prompt.mean, 1.0)
    s_kv = s_mean if kv_prompt_tokens is None else float(kv_prompt_tokens)
    ctx = s_kv + max(output.mean, 1.0) / 2.0
    steps = _Steps(inst, max(max_seqs, 1), None if chunk_tokens is None
                   else float(chunk_tokens), s_mean, ctx)
    bins = _output_bins(output)
    mode = "unchunked" if chunk_tokens is None else "chunked"
    run = _fluid(steps, n_per, _Memory(float(max(max_seqs, 1)), kv_tokens, s_kv), bins, mode,
                 None if chunk_tokens is None else float(chunk_tokens), prefill_cap_tokens,
                 None)
    return _figures(run, n_per, requests, bins, output, inst.request_overhead_s, quantile)


def disaggregated_batch(prefill: Instance, prefill_instances: int, prefill_batch_tokens: float,
                        decode: Instance, decode_instances: int, decode_max_seqs: int,
                        decode_kv_tokens: float, requests: int, prompt: LengthDistribution,
                        output: LengthDistribution,
                        wire_s_per_token: float, setup_s: float, context_prompt_tokens: float,
                        quantile: float = 0.95) -> BatchFigures:
    """A finite batch on prefill and decode pools (module docstring). ``wire_s_per_token``:
    seconds one prompt token's KV takes on a prefill instance's link; ``context_prompt_tokens``
    the whole prompt's mean (KV transferred and decoded over)."""
    s_mean = max(prompt.mean, 1.0)
    n_pre = requests / max(prefill_instances, 1)
    lm = max(float(prefill_batch_tokens), s_mean)
    per_pass = lm / s_mean
    t_pass = float(prefill.prefill_time_s(s_mean, per_pass))
    layers = float(prefill.model.num_layers)
    tx = context_prompt_tokens * wire_s_per_token
    ranks = (np.arange(RANK_POINTS) + 0.5) / RANK_POINTS * n_pre
    grid = np.linspace(0.0, n_pre, max(RANK_POINTS, 2) + 1)[1:]
    pass_end = np.ceil(grid / per_pass - 1e-9) * t_pass
    unqueued = pass_end + max(tx / layers, tx - t_pass * (layers - 1.0) / layers)
    # FIFO on the link: each transfer after the previous one (kv_i = max(unqueued_i,
    # kv_(i−1) + Δ·t_x) on a grid of Δ requests, as a running maximum)
    kv = grid * tx + np.maximum.accumulate(unqueued - grid * tx) + setup_s
    # the decode side: KV arrivals of all prefill instances spread over the decode instances
    n_dec = requests / max(decode_instances, 1)
    arr_t = np.concatenate(([0.0], kv))
    arr_n = np.concatenate(([0.0], grid / n_pre * n_dec))
    ctx = context_prompt_tokens + max(output.mean, 1.0) / 2.0
    steps = _Steps(decode, max(decode_max_seqs, 1), None, s_mean, ctx)
    bins = _output_bins(output)
    mem = _Memory(float(max(decode_max_seqs, 1)), decode_kv_tokens, context_prompt_tokens)
    run = _fluid(steps, n_dec, mem, bins, "decode", None, None, (arr_t, arr_n))
    # first tokens: at KV arrival (the prefill side's clock), ranks of the whole batch
    first = np.interp(ranks / n_pre, np.concatenate(([0.0], grid / n_pre)),
                      np.concatenate(([kv[0]], kv)))
    fig = _figures(run, n_dec, requests, bins, output, prefill.request_overhead_s, quantile,
                   first_s=first)
    return fig
