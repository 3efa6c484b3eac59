"""Event loop of a colocated pool (chunked or unchunked prefill), and the decode engine that
the disaggregated decode pool reuses.

One *engine* instance runs continuous batching:

* **chunked** (token budget c): each step carries every running decode (one token each), then
  the partly prefilled prompt, then new prompts in arrival order, up to c tokens; a prompt
  whose last piece is in the step emits its first token at the step's end and decodes from the
  next step on.
* **unchunked**: when prompts wait, the next step is a prefill-only pass over all of them (in
  arrival order, up to ``prefill_cap_tokens``); the instance's decodes stall for that pass.
* **decode** (disaggregated decode instance): requests arrive with their KV and join the batch
  at the next step boundary.

Admission (memory): the memory plan fits ``max_sequences`` requests of a phase at that phase's
mean context, so a request of phase p takes 1/max_sequences[p] of an instance's KV memory from
its first prefill piece until it completes; a request is admitted while the shares add up to
at most 1 (with one phase: at most ``max_sequences`` requests). Requests are not preempted;
the KV actually used by each request (its context) is not tracked beyond that share.

Speed (no per-token Python work): a stretch of decode-only steps with an unchanged batch is
advanced as one *run* that ends at the next completion. Each decoding request keeps its finish
step on a heap keyed by the instance's step counter, and the batch's total context is
base + D·k, so a run of m steps costs O(1): it is timed as m steps of the step time at its
mid-run mean context (exact while the step time is linear in the context). An arrival that
needs the instance (a prompt to prefill, a request to admit) cuts the run at the end of the step
in progress. Routing is join-the-shortest-queue on outstanding requests (ties rotate).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from heapq import heappop, heappush
from typing import Literal

import numpy as np

from advisor.core.simulate.arrivals import Trace
from advisor.core.simulate.metrics import GAP_BINS, GAP_BINS_PER_E, GAP_MIN_S, RawRun
from advisor.core.simulate.steptime import StepTimes

EngineMode = Literal["chunked", "unchunked", "decode"]
Progress = Callable[[int, int], None]

IDLE, STEP, RUN = 0, 1, 2
FULL = 1.0 + 1e-9
"""Memory shares may add up to 1 (plus rounding)."""
PROGRESS_EVERY = 100
"""Progress callbacks per run (one per 1 % of the arrivals)."""


class _Inst:
    """State of one engine instance."""

    __slots__ = (
        "T",
        "base",
        "blocked",
        "busy",
        "dheap",
        "fin",
        "has_dec",
        "head_done",
        "k",
        "kind",
        "last_dec",
        "m",
        "mem",
        "queue",
        "start",
        "steps",
        "ver",
    )

    def __init__(self) -> None:
        self.queue: deque[int] = deque()
        self.head_done = 0
        self.dheap: list[tuple[int, int, int]] = []
        self.base = 0
        """Σ over decoding requests of (context at join − step counter at join)."""
        self.k = 0
        """Decode step counter: a decoding request's context is its base + k."""
        self.kind = IDLE
        self.ver = 0
        self.start = 0.0
        self.T = 0.0
        self.m = 0
        self.fin: list[int] = []
        self.has_dec = False
        self.blocked = False
        self.last_dec = 0.0
        self.busy = 0.0
        self.steps = 0
        self.mem = 0.0
        """Share of the KV memory held by admitted requests."""


class EnginePool:
    """A pool of identical engine instances sharing one event heap.

    Heap entries are ``(time, event_kind, instance, version)``; stale versions are skipped.
    """

    def __init__(self, trace: Trace, steps: StepTimes, instances: int, mode: EngineMode,
                 chunk_tokens: int | None, max_sequences: tuple[int, ...],
                 prefill_cap_tokens: int, heap: list, event_kind: int,
                 first_token_s: list[float], done_s: list[float], counts: list[int],
                 raw: RawRun) -> None:
        self.trace = trace
        self.steps = steps
        self.mode = mode
        self.chunk = int(chunk_tokens or 0)
        shares = [1.0 / max(1, int(x)) for x in max_sequences]
        self.share = [shares[p] for p in trace.phase.tolist()]
        self.prefill_cap = int(prefill_cap_tokens)
        self.insts = [_Inst() for _ in range(instances)]
        self.heap = heap
        self.kind = event_kind
        self.first = first_token_s
        self.done = done_s
        self.counts = counts
        self.raw = raw
        self.S = trace.prompt_tokens.tolist()
        self.O = trace.output_tokens.tolist()

    # ------------------------------------------------------------------ gaps
    def _gap(self, gap: float, weight: float) -> None:
        raw = self.raw
        raw.gap_max_s = max(raw.gap_max_s, gap)
        if gap <= GAP_MIN_S:
            b = 0
        else:
            b = int((math.log(gap) - _LN_GAP_MIN) * GAP_BINS_PER_E)
            if b >= GAP_BINS:
                b = GAP_BINS - 1
        raw.gap_hist[b] += weight

    # ------------------------------------------------------------------ segment end
    def finish(self, i: int, t: float) -> None:
        """Apply the segment of instance ``i`` that ends at ``t`` (completions, first tokens)."""
        st = self.insts[i]
        h = st.dheap
        d = len(h)
        if st.kind == RUN:
            m = st.m
            per = st.T
            st.busy += m * per
            st.k += m
            st.steps += m
            if d:
                self._gap(st.start + per - st.last_dec, d)
                if m > 1:
                    self._gap(per, d * (m - 1))
                st.last_dec = t
        else:
            st.busy += t - st.start
            st.steps += 1
            if st.has_dec:
                st.k += 1
                if d:
                    self._gap(t - st.last_dec, d)
                    st.last_dec = t
        st.kind = IDLE
        k = st.k
        if h and h[0][0] <= k:
            done = self.done
            counts = self.counts
            share = self.share
            while h and h[0][0] <= k:
                _, rid, off = heappop(h)
                st.base -= off
                st.mem -= share[rid]
                done[rid] = t
                counts[i] -= 1
        if st.fin:
            was_empty = not h
            first = self.first
            out = self.O
            for rid in st.fin:
                first[rid] = t
                o = out[rid]
                if o > 1:
                    off = self.S[rid] + 1 - k
                    heappush(h, (k + o - 1, rid, off))
                    st.base += off
                else:
                    self.done[rid] = t
                    self.counts[i] -= 1
                    st.mem -= self.share[rid]
            st.fin = []
            if was_empty and h:
                st.last_dec = t
        if not h and not st.head_done:
            st.mem = 0.0  # nothing admitted: drop the rounding drift

    # ------------------------------------------------------------------ segment start
    def start(self, i: int, t: float) -> None:
        """Plan the next segment of idle instance ``i`` at time ``t``."""
        st = self.insts[i]
        h = st.dheap
        d = len(h)
        q = st.queue
        mode = self.mode
        if q:
            share = self.share
            mem = st.mem
            if mode == "decode":
                # admit arrived requests (their KV is here) into the batch
                out = self.O
                S = self.S
                k = st.k
                while q and mem + share[q[0]] <= FULL:
                    rid = q.popleft()
                    mem += share[rid]
                    off = S[rid] + 1 - k
                    heappush(h, (k + out[rid] - 1, rid, off))
                    st.base += off
                d = len(h)
                st.mem = mem
            elif mode == "chunked":
                room = self.chunk - d
                S = self.S
                fin = st.fin
                hd = st.head_done
                p = n = 0
                attn = 0
                while q and room > 0:
                    rid = q[0]
                    if not hd:
                        if mem + share[rid] > FULL:
                            break
                        mem += share[rid]
                    rem = S[rid] - hd
                    n += 1
                    if rem <= room:
                        attn += rem * (2 * hd + rem)
                        p += rem
                        room -= rem
                        fin.append(rid)
                        q.popleft()
                        hd = 0
                    else:
                        attn += room * (2 * hd + room)
                        p += room
                        hd += room
                        room = 0
                st.head_done = hd
                st.mem = mem
                if n:
                    kk = (attn - p * p / n) / (2.0 * p)
                    ctx = st.base / d + st.k if d else 0.0
                    dur = self.steps.step(p, n, int(kk) if kk > 0 else 0, d, ctx)
                    st.kind = STEP
                    st.has_dec = True
                    st.start = t
                    st.ver += 1
                    heappush(self.heap, (t + dur, self.kind, i, st.ver))
                    return
            else:  # unchunked: a prefill-only pass over the waiting prompts
                S = self.S
                fin = st.fin
                cap = self.prefill_cap
                p = n = 0
                attn = 0
                while q:
                    rid = q[0]
                    s = S[rid]
                    if n and p + s > cap:
                        break
                    if mem + share[rid] > FULL:
                        break
                    mem += share[rid]
                    p += s
                    n += 1
                    attn += s * s
                    fin.append(q.popleft())
                st.mem = mem
                if n:
                    kk = (attn - p * p / n) / (2.0 * p)
                    dur = self.steps.step(p, n, int(kk) if kk > 0 else 0, 0, 0.0)
                    st.kind = STEP
                    st.has_dec = False
                    st.start = t
                    st.ver += 1
                    heappush(self.heap, (t + dur, self.kind, i, st.ver))
                    return
        if h:
            k = st.k
            m = h[0][0] - k
            per = self.steps.decode(d, st.base / d + k + 0.5 * (m - 1))
            st.kind = RUN
            st.start = t
            st.T = per
            st.m = m
            st.blocked = bool(q)
            st.ver += 1
            heappush(self.heap, (t + m * per, self.kind, i, st.ver))

    # ------------------------------------------------------------------ arrivals
    def add(self, i: int, rid: int, t: float) -> None:
        """Request ``rid`` reaches instance ``i`` at ``t``: start or cut the current run."""
        st = self.insts[i]
        st.queue.append(rid)
        kind = st.kind
        if kind == IDLE:
            self.start(i, t)
        elif kind == RUN and not st.blocked:
            per = st.T
            j = int((t - st.start) / per) + 1
            if j < st.m:
                end = st.start + j * per
                if end < t:
                    j += 1
                    end = st.start + j * per
                if j < st.m:
                    st.m = j
                    st.ver += 1
                    heappush(self.heap, (end, self.kind, i, st.ver))

    def on_event(self, i: int, ver: int, t: float) -> None:
        """A heap entry for instance ``i`` fired (ignored when stale)."""
        st = self.insts[i]
        if ver != st.ver:
            return
        self.finish(i, t)
        self.start(i, t)

    def busy_seconds(self) -> float:
        """Σ busy time over the instances."""
        return float(sum(st.busy for st in self.insts))

    def step_count(self) -> int:
        """Engine steps simulated."""
        return int(sum(st.steps for st in self.insts))


_LN_GAP_MIN = math.log(GAP_MIN_S)


def shortest_queue(counts: list[int], rotate: int) -> int:
    """Index of the smallest count; ties go to the first at or after ``rotate``."""
    m = min(counts)
    try:
        return counts.index(m, rotate)
    except ValueError:
        return counts.index(m)


def run_colocated(trace: Trace, steps: StepTimes, instances: int, gpus_per_instance: int,
                  chunk_tokens: int | None, max_sequences: tuple[int, ...],
                  prefill_cap_tokens: int, progress: Progress | None = None,
                  route: list[int] | None = None) -> RawRun:
    """Simulate ``trace`` on ``instances`` colocated instances (chunk None = unchunked).

    ``max_sequences`` is per phase (see Admission above). ``route`` (diagnostics): a fixed
    instance per request instead of join-the-shortest-queue.
    """
    n = trace.requests
    first = [math.nan] * n
    done = [math.nan] * n
    raw = RawRun(first_token_s=np.zeros(0), done_s=np.zeros(0), gpus=instances * gpus_per_instance)
    heap: list = []
    counts = [0] * instances
    pool = EnginePool(trace, steps, instances, "chunked" if chunk_tokens else "unchunked",
                      chunk_tokens, max_sequences, prefill_cap_tokens, heap, 0, first, done,
                      counts, raw)
    arrivals = trace.arrival_s.tolist()
    every = max(n // PROGRESS_EVERY, 1)
    on_event = pool.on_event
    add = pool.add
    rotate = 0
    single = instances == 1
    inf = math.inf
    ai = 0
    next_arrival = arrivals[0] if n else inf
    while True:
        if heap and heap[0][0] <= next_arrival:
            t, _, i, ver = heappop(heap)
            on_event(i, ver, t)
        elif ai < n:
            t = next_arrival
            if single:
                i = 0
            elif route is not None:
                i = route[ai]
            else:
                i = shortest_queue(counts, rotate)
                rotate = i + 1 if i + 1 < instances else 0
            counts[i] += 1
            add(i, ai, t)
            ai += 1
            next_arrival = arrivals[ai] if ai < n else inf
            if progress is not None and ai % every == 0:
                progress(ai, n)
        else:
            break
    if progress is not None:
        progress(n, n)
    raw.first_token_s = np.asarray(first, dtype=float)
    raw.done_s = np.asarray(done, dtype=float)
    raw.busy_gpu_s = pool.busy_seconds() * gpus_per_instance
    raw.steps = pool.step_count()
    raw.step_cache_misses = steps.misses
    return raw
