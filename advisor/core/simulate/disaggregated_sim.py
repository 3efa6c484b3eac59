"""Event loop of a disaggregated deployment: prefill pool → KV link → decode pool.

* **Prefill instances** (join-the-shortest-queue on queued + in-pass prompts): when idle and
  prompts wait, a pass takes them in arrival order up to the saturating token count L_m (at
  least one prompt; a longer prompt runs alone). A pass lasts ``step_time_s`` of its tokens.
* **KV link**: each prefill instance ships its requests' KV over its own g_p NICs, one request
  after another (a FIFO server of bandwidth g_p · η · B; the analytic model's M/D/1 wait on
  the same server). Transfer is layer-wise: it may start once the pass has produced the first
  layer (pass start + T/L) and cannot end before the last layer plus its share
  (pass end + t_x/L), so an unqueued transfer exposes max(t_x/L, t_x − T·(L−1)/L) after the pass,
  as the analytic model has it; the fixed setup α is latency and does not hold the link.
* **Decode instances** (join-the-shortest-queue on admitted + waiting requests): a request
  whose KV has arrived emits its first token then, and joins the decode batch at the next step
  boundary while memory allows (the colocated module's decode engine).
"""

from __future__ import annotations

import math
from collections import deque
from heapq import heappop, heappush

import numpy as np

from advisor.core.simulate.arrivals import Trace
from advisor.core.simulate.colocated_sim import PROGRESS_EVERY, EnginePool, Progress, shortest_queue
from advisor.core.simulate.metrics import RawRun
from advisor.core.simulate.plan import Deployment
from advisor.core.simulate.steptime import StepTimes

PREFILL_END, KV_ARRIVED, DECODE = 0, 1, 2


def run_disaggregated(trace: Trace, dep: Deployment, prefill_steps: StepTimes,
                      decode_steps: StepTimes, progress: Progress | None = None,
                      route: tuple[list[int], list[int]] | None = None) -> RawRun:
    """Simulate ``trace`` on the prefill and decode pools of ``dep``.

    ``route`` (diagnostics): fixed (prefill, decode) instances per request instead of
    join-the-shortest-queue.
    """
    pre, dec = dep.pools
    link = dep.link
    assert link is not None
    n = trace.requests
    first = [math.nan] * n
    done = [math.nan] * n
    raw = RawRun(first_token_s=np.zeros(0), done_s=np.zeros(0), gpus=dep.gpus,
                 links=pre.instances)
    heap: list = []
    counts_d = [0] * dec.instances
    decode = EnginePool(trace, decode_steps, dec.instances, "decode", None,
                        dec.max_sequences, 0, heap, DECODE, first, done, counts_d, raw)

    n_pre = pre.instances
    counts_p = [0] * n_pre
    queues: list[deque[int]] = [deque() for _ in range(n_pre)]
    passes: list[list[int]] = [[] for _ in range(n_pre)]
    pass_start = [0.0] * n_pre
    link_free = [0.0] * n_pre
    busy_p = [0.0] * n_pre
    S = trace.prompt_tokens.tolist()
    O = trace.output_tokens.tolist()
    phase_of = trace.phase.tolist()
    lm_by_phase = [float(x) for x in dep.prefill_batch_tokens]
    layers = float(pre.instance.model.num_layers)
    wire_s_per_token = pre.instance.kv_bytes_per_token_wire / (
        pre.instance.gpus * link.effective_bytes_per_s)
    setup = link.transfer_setup_s
    step = prefill_steps.step
    link_busy = 0.0
    steps_p = 0

    def start_pass(i: int, t: float) -> None:
        q = queues[i]
        lm = lm_by_phase[phase_of[q[0]]]
        batch = passes[i]
        p = nseq = 0
        attn = 0
        while q:
            s = S[q[0]]
            if nseq and p + s > lm:
                break
            p += s
            nseq += 1
            attn += s * s
            batch.append(q.popleft())
        kk = (attn - p * p / nseq) / (2.0 * p)
        dur = step(p, nseq, int(kk) if kk > 0 else 0, 0, 0.0)
        pass_start[i] = t
        heappush(heap, (t + dur, PREFILL_END, i, 0))

    arrivals = trace.arrival_s.tolist()
    every = max(n // PROGRESS_EVERY, 1)
    rot_p = rot_d = 0
    inf = math.inf
    ai = 0
    next_arrival = arrivals[0] if n else inf
    while True:
        if heap and heap[0][0] <= next_arrival:
            t, kind, i, ver = heappop(heap)
            if kind == DECODE:
                decode.on_event(i, ver, t)
            elif kind == KV_ARRIVED:
                rid = i
                first[rid] = t
                if O[rid] <= 1:
                    done[rid] = t
                else:
                    if route is not None:
                        j = route[1][rid]
                    else:
                        j = shortest_queue(counts_d, rot_d)
                        rot_d = j + 1 if j + 1 < len(counts_d) else 0
                    counts_d[j] += 1
                    decode.add(j, rid, t)
            else:  # a prefill pass ends: ship each prompt's KV in order
                batch = passes[i]
                begin = pass_start[i]
                dur = t - begin
                busy_p[i] += dur
                steps_p += 1
                free = link_free[i]
                earliest = begin + dur / layers
                for rid in batch:
                    tx = S[rid] * wire_s_per_token
                    go = max(earliest, free)
                    end = go + tx
                    tail = t + tx / layers
                    free = max(tail, end)
                    link_busy += tx
                    heappush(heap, (free + setup, KV_ARRIVED, rid, 0))
                link_free[i] = free
                counts_p[i] -= len(batch)
                passes[i] = []
                if queues[i]:
                    start_pass(i, t)
        elif ai < n:
            t = next_arrival
            if route is not None:
                i = route[0][ai]
            else:
                i = shortest_queue(counts_p, rot_p)
                rot_p = i + 1 if i + 1 < n_pre else 0
            counts_p[i] += 1
            queues[i].append(ai)
            if not passes[i]:
                start_pass(i, t)
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
    raw.busy_gpu_s = (sum(busy_p) * pre.instance.gpus
                      + decode.busy_seconds() * dec.instance.gpus)
    raw.link_busy_s = link_busy
    raw.steps = steps_p + decode.step_count()
    raw.step_cache_misses = prefill_steps.misses + decode_steps.misses
    return raw
