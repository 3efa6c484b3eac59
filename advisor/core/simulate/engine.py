"""One pool of engine instances: continuous batching with a paged KV cache.

Each instance runs the scheduler of vLLM's V1 engine (``vllm/v1/core/sched/scheduler.py``:
running requests first, then waiting ones, first come first served) over a KV cache of
``capacity_blocks`` blocks of ``block_tokens`` tokens:

* **KV blocks**: a request holds ⌈tokens/block⌉ blocks for the tokens it has in the cache —
  the prompt tokens prefilled so far, then prompt + generated tokens while it decodes — from
  its first prefill piece (or, on a disaggregated decode instance, its arrival with the KV)
  until it completes;
* **admission**: a waiting request is admitted when fewer than ``max_num_seqs`` requests run
  and the free blocks hold its first piece; admission stops at the first request that does
  not fit (no overtaking);
* **preemption with recompute**: before a step, every running decode needs room for its
  next token; when the free blocks do not cover that, the most recently admitted running
  request is preempted — its blocks freed, put back at the head of the queue — until they
  do; a preempted request prefills its prompt and the tokens it had generated again (one
  piece), emits its next token at the end of that step, and decodes on. No request is
  admitted in a step that preempted (vLLM V1 does the same);
* steps by mode:
  - **chunked** (token budget c per scheduled batch, times the pipeline micro-batches in
    flight, ``instance.cycle_token_budget``): every running decode (one token each), then the partly
    prefilled prompt, then new prompts in arrival order, up to c tokens; a prompt whose last
    piece is in the step emits its first token at the step's end and decodes from the next
    step on. A partly prefilled prompt that the free blocks cannot take whole gets the piece
    that fits. A budget split over u units (``instance.budget_units``: pipeline
    micro-batches, DP-attention ranks) advances the first u requests of the queue (those
    partly prefilled first) by at most (c − decodes)/u tokens each, one unit each, as the
    model has it;
  - **unchunked**: when prompts wait and can be admitted, the next step is a prefill-only
    pass over them (arrival order, up to ``prefill_cap_tokens``); the decodes stall for it;
  - **decode** (disaggregated decode instance): requests arrive with their KV and join the
    batch at the next step boundary; a preempted request is recomputed here as one prefill
    piece of a mixed step.

Speed (no per-token Python work): a stretch of decode-only steps with an unchanged batch is
advanced as one *run* that ends at the next completion, or earlier at the step whose new
tokens would not fit in the free blocks. Decoding requests keep their finish step on a heap
keyed by the instance's step counter k; a decoding request's context is off + k, the batch's
total is base + D·k, and its blocks Σ⌈(offᵢ + k)/b⌉ = (base + D·k + Σᵣ hᵣ·((−r − k) mod b))/b
with hᵣ the number of offsets ≡ r (mod b) — so a run costs O(b) at most, O(1) while the blocks
are far from full. A run of m steps is timed as m steps at its mid-run mean context. An arrival
that needs the instance cuts the run at the end of the step in progress.
"""

from __future__ import annotations

import math
from collections import deque
from heapq import heappop, heappush
from itertools import islice
from typing import Literal

from advisor.core.instance import budget_units, cycle_token_budget
from advisor.core.simulate.metrics import GAP_BINS, GAP_BINS_PER_E, GAP_MIN_S, GapStats
from advisor.core.simulate.recorder import Recorder
from advisor.core.simulate.steptime import StepTimes

EngineMode = Literal["chunked", "unchunked", "decode"]

Event = tuple[float, int, int, int]
"""An entry of the shared event heap: (time s, event kind, instance or request index, version)."""

IDLE, STEP, RUN = 0, 1, 2
RECOMPUTE_BUDGET_TOKENS = 8192
"""Prefill tokens a disaggregated decode instance recomputes in one step (vLLM's default
``max_num_batched_tokens`` on ≥ 70 GiB GPUs; at least one whole preempted request)."""

_LN_GAP_MIN = math.log(GAP_MIN_S)


class _Inst:
    """State of one engine instance."""

    __slots__ = (
        "D",
        "T",
        "base",
        "blocked",
        "busy",
        "dec_off",
        "dec_seq",
        "dheap",
        "fin",
        "has_dec",
        "head_done",
        "hist",
        "k",
        "kind",
        "last_dec",
        "m",
        "partial",
        "pblocks",
        "preempted",
        "queue",
        "running",
        "start",
        "steps",
        "ver",
    )

    def __init__(self, block_tokens: int) -> None:
        self.queue: deque[int] = deque()
        """Waiting requests (the head may be partly prefilled: ``head_done`` tokens)."""
        self.head_done = 0
        self.partial: dict[int, int] = {}
        """Split budgets (``EnginePool.units`` > 1): the partly prefilled requests at the front
        of the queue → their prefilled tokens (``head_done`` is unused then)."""
        self.running: dict[int, None] = {}
        """Admitted requests in admission order (decoding, prefilling)."""
        self.dheap: list[tuple[int, int, int, int]] = []
        """(finish step, join sequence, request, off) of decoding requests (lazy deletion)."""
        self.dec_seq: dict[int, int] = {}
        """Decoding request → its valid heap entry's join sequence."""
        self.dec_off: dict[int, int] = {}
        """Decoding request → its off."""
        self.D = 0
        self.base = 0
        """Σ over decoding requests of off (context = off + k)."""
        self.hist = [0] * block_tokens
        """Decoding requests per off mod block_tokens."""
        self.pblocks = 0
        """Blocks of admitted requests that are prefilling: ⌈head_done/b⌉ for the partly
        prefilled head, ⌈prompt/b⌉ for those whose prefill ends in the step running."""
        self.k = 0
        """Decode step counter."""
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
        self.preempted = 0


class EnginePool:
    """A pool of identical engine instances sharing one event heap.

    Heap entries are ``(time, event_kind, instance, version)``; stale versions are skipped.
    ``counts`` is the outstanding requests per instance (the router's view), decremented here
    at completion.
    """

    def __init__(self, rec: Recorder, steps: StepTimes, instances: int, mode: EngineMode,
                 chunk_tokens: int | None, capacity_blocks: int, block_tokens: int,
                 max_num_seqs: int, prefill_cap_tokens: int, heap: list[Event], event_kind: int,
                 counts: list[int], gaps: GapStats) -> None:
        self.rec = rec
        self.steps = steps
        self.mode = mode
        # a step is one crossing of every in-flight pipeline micro-batch, each with the budget
        self.chunk = int(cycle_token_budget(steps.instance.params, float(chunk_tokens or 0)))
        self.units = max(1, round(float(budget_units(steps.instance.params))))
        """Units the chunked budget is split over (micro-batches, DP-attention ranks): each
        prompt advances in one of them, up to (budget − decodes)/units tokens a step."""
        self.cap = int(capacity_blocks)
        self.B = int(block_tokens)
        self.max_seqs = int(max_num_seqs)
        self.prefill_cap = int(prefill_cap_tokens)
        self.insts = [_Inst(self.B) for _ in range(instances)]
        self.heap = heap
        self.kind = event_kind
        self.counts = counts
        self.gaps = gaps
        self.redo: dict[int, int] = {}
        """Preempted request → tokens it had generated (to recompute)."""
        self.seq = 0
        self.S = rec.S
        self.O = rec.O
        self.preemptions = 0
        self.decoding = 0
        """Σ over instances of the requests decoding."""
        rec.batch_probe = self.batch

    # ------------------------------------------------------------------ KV blocks
    def dec_blocks(self, st: _Inst, k: int) -> int:
        """Blocks the decoding requests hold at step counter ``k`` (exact)."""
        B = self.B
        if B == 1:
            return st.base + st.D * k
        pad = 0
        for r, c in enumerate(st.hist):
            if c:
                pad += c * ((-r - k) % B)
        return (st.base + st.D * k + pad) // B

    def _fits(self, st: _Inst, k: int) -> bool:
        """Whether every decode's tokens at counter ``k`` fit beside the prefilling ones."""
        room = self.cap - st.pblocks
        B = self.B
        if (st.base + st.D * k + st.D * (B - 1)) // B <= room:
            return True
        return self.dec_blocks(st, k) <= room

    def _join(self, st: _Inst, rid: int, off: int, finish_k: int) -> None:
        """``rid`` joins the decode batch (context off + k, done at counter ``finish_k``)."""
        self.seq += 1
        seq = self.seq
        heappush(st.dheap, (finish_k, seq, rid, off))
        st.dec_seq[rid] = seq
        st.dec_off[rid] = off
        st.base += off
        st.hist[off % self.B] += 1
        st.D += 1
        self.decoding += 1

    def _leave(self, st: _Inst, rid: int, off: int) -> None:
        del st.dec_seq[rid]
        del st.dec_off[rid]
        st.base -= off
        st.hist[off % self.B] -= 1
        st.D -= 1
        self.decoding -= 1

    def _clean_top(self, st: _Inst) -> None:
        """Drop heap entries of requests preempted since they joined."""
        h = st.dheap
        ds = st.dec_seq
        while h and ds.get(h[0][2]) != h[0][1]:
            heappop(h)

    def _preempt(self, st: _Inst, k_next: int) -> bool:
        """Preempt the newest running requests until the decodes fit at ``k_next``."""
        hit = False
        running = st.running
        S = self.S
        while running and not self._fits(st, k_next):
            rid, _ = running.popitem()
            hit = True
            self.preemptions += 1
            st.preempted += 1
            if rid in st.dec_seq:
                # its off: context now = S + generated = off + k
                off = st.dec_off[rid]
                self._leave(st, rid, off)
                self.redo[rid] = off + st.k - S[rid]
                st.queue.appendleft(rid)
            elif self.units > 1:  # a partly prefilled request: restart it
                st.pblocks -= -(-st.partial.pop(rid, 0) // self.B)
            else:  # the partly prefilled head (the newest admission)
                st.pblocks -= -(-st.head_done // self.B)
                st.head_done = 0
        return hit

    def batch(self) -> int:
        """Requests decoding on the pool's instances now."""
        return self.decoding

    # ------------------------------------------------------------------ gaps
    def _gap(self, gap: float, weight: float) -> None:
        g = self.gaps
        if gap > g.max_s:  # a hot path: cheaper than max()
            g.max_s = gap
        if gap <= GAP_MIN_S:
            b = 0
        else:
            b = int((math.log(gap) - _LN_GAP_MIN) * GAP_BINS_PER_E)
            if b >= GAP_BINS:
                b = GAP_BINS - 1
        g.hist[b] += weight

    # ------------------------------------------------------------------ segment end
    def finish(self, i: int, t: float) -> None:
        """Apply the segment of instance ``i`` that ends at ``t`` (completions, first tokens)."""
        st = self.insts[i]
        d = st.D
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
        h = st.dheap
        rec = self.rec
        B = self.B
        if h and h[0][0] <= k:
            counts = self.counts
            ds = st.dec_seq
            doff = st.dec_off
            hist = st.hist
            running = st.running
            done = rec.done
            left_n = 0
            while h and h[0][0] <= k:
                _, seq, rid, off = heappop(h)
                if ds.get(rid) != seq:
                    continue
                del ds[rid]
                del doff[rid]
                st.base -= off
                hist[off % B] -= 1
                left_n += 1
                del running[rid]
                done(rid, t)
                counts[i] -= 1
            st.D -= left_n
            self.decoding -= left_n
        if st.fin:
            was_empty = st.D == 0
            S = self.S
            osl = self.O
            F = rec.F
            redo = self.redo
            ds = st.dec_seq
            doff = st.dec_off
            hist = st.hist
            joined = 0
            for rid in st.fin:
                if redo and rid in redo:
                    gen = redo.pop(rid)
                    st.pblocks -= -(-(S[rid] + gen) // B)
                    gen += 1
                    fin_k = k + osl[rid] - gen
                    off = S[rid] + gen - k
                    if fin_k > k:
                        self.seq += 1
                        heappush(h, (fin_k, self.seq, rid, off))
                        ds[rid] = self.seq
                        doff[rid] = off
                        st.base += off
                        hist[off % B] += 1
                        joined += 1
                        continue
                else:
                    st.pblocks -= -(-S[rid] // B)
                    F[rid] = t
                    o = osl[rid]
                    if o > 1:
                        off = S[rid] + 1 - k
                        self.seq += 1
                        heappush(h, (k + o - 1, self.seq, rid, off))
                        ds[rid] = self.seq
                        doff[rid] = off
                        st.base += off
                        hist[off % B] += 1
                        joined += 1
                        continue
                del st.running[rid]
                rec.done(rid, t)
                self.counts[i] -= 1
            st.D += joined
            self.decoding += joined
            st.fin = []
            if was_empty and st.D:
                st.last_dec = t
        if st.D == 0 and not st.running:
            st.base = 0  # nothing admitted: drop any drift (exact integers anyway)

    # ------------------------------------------------------------------ segment start
    def start(self, i: int, t: float) -> None:
        """Plan the next segment of idle instance ``i`` at time ``t``."""
        st = self.insts[i]
        q = st.queue
        mode = self.mode
        k = st.k
        if mode == "unchunked" and q and self._unchunked_pass(st, i, t):
            return
        preempted = False
        d = st.D
        if d and (st.base + d * (k + 1) + d * (self.B - 1)) // self.B > self.cap - st.pblocks \
                and not self._fits(st, k + 1):
            preempted = self._preempt(st, k + 1) and st.D > 0
        if q and not preempted and (
                (mode == "chunked" and (self._chunked_step(st, i, t) if self.units == 1
                                        else self._chunked_step_units(st, i, t)))
                or (mode == "decode" and self._decode_admit(st, i, t))):
            return
        if st.D:
            self._clean_top(st)
            h = st.dheap
            m = h[0][0] - k
            if preempted:
                m = 1
            elif (st.base + st.D * (k + m) + st.D * (self.B - 1)) // self.B \
                    > self.cap - st.pblocks and not self._fits(st, k + m):
                lo, hi = 1, m  # lo fits (checked above), hi does not
                while hi - lo > 1:
                    mid = (lo + hi) // 2
                    if self._fits(st, k + mid):
                        lo = mid
                    else:
                        hi = mid
                m = lo
            d = st.D
            per = self.steps.decode(d, st.base / d + k + 0.5 * (m - 1))
            st.kind = RUN
            st.start = t
            st.T = per
            st.m = m
            st.blocked = bool(q)
            st.ver += 1
            heappush(self.heap, (t + m * per, self.kind, i, st.ver))

    def _free_after_growth(self, st: _Inst, exact: bool) -> int:
        """Free blocks once the decodes have their next token (``exact`` False: a lower
        bound, one block of padding counted per decode)."""
        d = st.D
        if not d:
            return self.cap - st.pblocks
        k1 = st.k + 1
        if exact:
            return self.cap - st.pblocks - self.dec_blocks(st, k1)
        B = self.B
        return self.cap - st.pblocks - (st.base + d * k1 + d * (B - 1)) // B

    def _chunked_step(self, st: _Inst, i: int, t: float) -> bool:
        """Fill a chunked step's budget; start it and return True when it has prefill."""
        q = st.queue
        d = st.D
        room = self.chunk - d
        if room <= 0:
            return False
        S = self.S
        redo = self.redo
        B = self.B
        free = (self.cap - st.pblocks - (st.base + d * (st.k + 1) + d * (B - 1)) // B if d
                else self.cap - st.pblocks)
        exact = not d
        running = st.running
        fin = st.fin
        hd = st.head_done
        max_seqs = self.max_seqs
        p = n = 0
        attn = 0
        while q and room > 0:
            rid = q[0]
            plen = S[rid] + redo[rid] if redo and rid in redo else S[rid]
            rem = plen - hd
            piece = rem if rem < room else room  # hot path: cheaper than min()
            had = -(-hd // B)
            need = -(-(hd + piece) // B) - had
            if need > free and not exact:
                free += self._free_after_growth(st, True) - self._free_after_growth(st, False)
                exact = True
            if hd == 0:  # a new admission: whole first piece or nothing
                if need > free or len(running) >= max_seqs:
                    break
                running[rid] = None
            elif need > free:
                piece = (had + free) * B - hd
                if piece <= 0:
                    break
                need = -(-(hd + piece) // B) - had
            st.pblocks += need
            free -= need
            n += 1
            attn += piece * (2 * hd + piece)
            p += piece
            room -= piece
            if piece == rem:
                fin.append(rid)
                q.popleft()
                hd = 0
            else:
                hd += piece
                break
        st.head_done = hd
        if not n:
            return False
        self._start_mixed_step(st, i, t, p, n, attn)
        return True

    def _start_mixed_step(self, st: _Inst, i: int, t: float, p: int, n: int,
                          attn: int) -> None:
        """Start a step of ``p`` prompt tokens in ``n`` pieces (attention units ``attn``,
        Σ piece·(2·done + piece)) beside the running decodes."""
        d = st.D
        kk = (attn - p * p / n) / (2.0 * p)
        ctx = st.base / d + st.k if d else 0.0
        dur = self.steps.step(p, n, int(kk) if kk > 0 else 0, d, ctx)
        st.kind = STEP
        st.has_dec = True
        st.start = t
        st.ver += 1
        heappush(self.heap, (t + dur, self.kind, i, st.ver))

    def _chunked_step_units(self, st: _Inst, i: int, t: float) -> bool:
        """:meth:`_chunked_step` with the budget split over ``units`` units: the first
        ``units`` requests of the queue (those partly prefilled first, in arrival order)
        each advance at most (budget − decodes)/units tokens, in one unit each."""
        q = st.queue
        d = st.D
        room = self.chunk - d
        unit_room = room // self.units
        if unit_room <= 0:
            return False
        S = self.S
        redo = self.redo
        B = self.B
        free = self._free_after_growth(st, True)
        running = st.running
        partial = st.partial
        p = n = 0
        attn = 0
        taken: list[int] = []
        for rid in list(islice(q, self.units)):
            plen = S[rid] + redo[rid] if redo and rid in redo else S[rid]
            hd = partial.get(rid, 0)
            rem = plen - hd
            piece = rem if rem < unit_room else unit_room
            had = -(-hd // B)
            need = -(-(hd + piece) // B) - had
            if hd == 0:  # a new admission: whole first piece or nothing
                if need > free or len(running) >= self.max_seqs:
                    break
                running[rid] = None
            elif need > free:
                piece = (had + free) * B - hd
                if piece <= 0:
                    break
                need = -(-(hd + piece) // B) - had
            st.pblocks += need
            free -= need
            n += 1
            attn += piece * (2 * hd + piece)
            p += piece
            if piece == rem:
                partial.pop(rid, None)
                st.fin.append(rid)
            else:
                partial[rid] = hd + piece
            taken.append(rid)
        if not n:
            return False
        done = set(st.fin)
        for _ in taken:  # the taken requests are the queue's front; keep the partial ones
            q.popleft()
        q.extendleft(reversed([rid for rid in taken if rid not in done]))
        self._start_mixed_step(st, i, t, p, n, attn)
        return True

    def _unchunked_pass(self, st: _Inst, i: int, t: float) -> bool:
        """A prefill-only pass over the admissible waiting prompts; True when started."""
        q = st.queue
        S = self.S
        redo = self.redo
        B = self.B
        free = self.cap - st.pblocks - (self.dec_blocks(st, st.k) if st.D else 0)
        running = st.running
        cap = self.prefill_cap
        fin = st.fin
        p = n = 0
        attn = 0
        while q:
            rid = q[0]
            s = S[rid] + redo[rid] if redo and rid in redo else S[rid]
            if n and p + s > cap:
                break
            need = -(-s // B)
            if len(running) >= self.max_seqs or need > free:
                break
            running[rid] = None
            st.pblocks += need
            free -= need
            p += s
            n += 1
            attn += s * s
            fin.append(q.popleft())
        if not n:
            return False
        kk = (attn - p * p / n) / (2.0 * p)
        dur = self.steps.step(p, n, int(kk) if kk > 0 else 0, 0, 0.0)
        st.kind = STEP
        st.has_dec = False
        st.start = t
        st.ver += 1
        heappush(self.heap, (t + dur, self.kind, i, st.ver))
        return True

    def _decode_admit(self, st: _Inst, i: int, t: float) -> bool:
        """Admit arrived requests (KV here) into the batch, and recomputes as prefill pieces;
        start a mixed step and return True when there is a recompute."""
        q = st.queue
        S = self.S
        osl = self.O
        redo = self.redo
        B = self.B
        k = st.k
        free = self._free_after_growth(st, True)
        running = st.running
        p = n = 0
        attn = 0
        while q:
            rid = q[0]
            if len(running) >= self.max_seqs:
                break
            if rid in redo:
                s = S[rid] + redo[rid]
                if n and p + s > RECOMPUTE_BUDGET_TOKENS:
                    break
                need = -(-s // B)
                if need > free:
                    break
                q.popleft()
                running[rid] = None
                st.pblocks += need
                free -= need
                p += s
                n += 1
                attn += s * s
                st.fin.append(rid)
                continue
            off = S[rid] + 1 - k
            need = -(-(off + k + 1) // B)
            if need > free:
                break
            q.popleft()
            running[rid] = None
            free -= need
            self._join(st, rid, off, k + osl[rid] - 1)
        if not n:
            return False
        d = st.D
        kk = (attn - p * p / n) / (2.0 * p)
        ctx = st.base / d + k if d else 0.0
        dur = self.steps.step(p, n, int(kk) if kk > 0 else 0, d, ctx)
        st.kind = STEP
        st.has_dec = True
        st.start = t
        st.ver += 1
        heappush(self.heap, (t + dur, self.kind, i, st.ver))
        return True

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
