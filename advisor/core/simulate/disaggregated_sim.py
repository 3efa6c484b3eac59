"""Event loop of a disaggregated deployment: prefill pool → KV link → decode pool.

* **Prefill instances** (the router's policy on queued + in-pass prompts): when idle and
  prompts wait, a pass takes them in arrival order up to the saturating token count L_m (at
  least one prompt; a longer prompt runs alone). A pass lasts ``step_time_s`` of its tokens.
  A prompt's KV stays on the prefill instance only until it is shipped; its memory is not
  limited here (the decode side is where KV accumulates).
* **KV link**: each prefill instance ships its requests' KV over the NICs of its route
  (``disaggregated.kv_path``: the narrower of its sending and the decode shape's receiving
  NICs, the decode shape's wire bytes), one request after another (a FIFO server of
  bandwidth n · η · B; the analytic model's M/D/1 wait on the same server). A layer-wise
  connector may start once the pass has produced the first layer (pass start + T/L) and
  cannot end before the last layer plus its share (pass end + t_x/L), so an unqueued
  transfer exposes max(t_x/L, t_x − T·(L−1)/L) after the pass; any other connector starts
  when the pass ends and exposes t_x, as the analytic model has it. The fixed setup α and
  the router's second hop (``disaggregated.request_path_s``) are latency and do not hold
  the link.
* **Decode instances** (the router's policy on admitted + waiting requests): a request
  whose KV has arrived emits its first token then, and joins the decode batch at the next step
  boundary when its blocks fit (``engine.EnginePool`` in decode mode: paged KV, preemption
  and recompute on the decode instance).
"""

from __future__ import annotations

import math
from collections import deque
from heapq import heappop, heappush

from advisor.core.disaggregated import kv_path
from advisor.core.scenario import RouterPolicy
from advisor.core.simulate.colocated_sim import KvSpec
from advisor.core.simulate.dispatch import Router
from advisor.core.simulate.engine import EnginePool, Event
from advisor.core.simulate.feed import Feed
from advisor.core.simulate.metrics import GapStats, RunCounters
from advisor.core.simulate.plan import Deployment
from advisor.core.simulate.steptime import StepTimes

PREFILL_END, KV_ARRIVED, DECODE = 0, 1, 2


def run_disaggregated(feed: Feed, dep: Deployment, prefill_steps: StepTimes,
                      decode_steps: StepTimes, kv: KvSpec, gaps: GapStats,
                      policy: RouterPolicy = "least-loaded", seed: int = 0) -> RunCounters:
    """Simulate the feed's requests on the prefill and decode pools of ``dep``, both routed
    by ``policy`` (random draws seeded by ``seed``, one stream per pool)."""
    pre, dec = dep.pools
    link = dep.link
    if link is None:
        raise ValueError("a disaggregated deployment needs a KV link")
    rec = feed.rec
    heap: list[Event] = []
    counts_d = [0] * dec.instances
    decode = EnginePool(rec, decode_steps, dec.instances, "decode", None, kv.capacity_blocks,
                        kv.block_tokens, kv.max_num_seqs, 0, heap, DECODE, counts_d, gaps)

    n_pre = pre.instances
    counts_p = [0] * n_pre
    route_p = Router(policy, counts_p, seed, 0)
    route_d = Router(policy, counts_d, seed, 1)
    queues: list[deque[int]] = [deque() for _ in range(n_pre)]
    passes: list[list[int]] = [[] for _ in range(n_pre)]
    pass_start = [0.0] * n_pre
    # one FIFO link per attention rank (DP attention: a sequence's KV leaves its own rank's
    # NICs; one lane otherwise), requests dealt to them in turn
    lanes = pre.instance.attention_data_parallel
    link_free = [[0.0] * lanes for _ in range(n_pre)]
    lane_next = [0] * n_pre
    busy_p = [0.0] * n_pre
    S = rec.S
    osl = rec.O
    F = rec.F
    G = rec.G
    seg_phase = [int(x) for x in rec.seg_phase.tolist()]
    lm_by_phase = [float(x) for x in dep.prefill_batch_tokens]
    layers = float(pre.instance.model.num_layers)
    path = kv_path(link, pre.instance, dec.instance)
    wire_s_per_token = path.bytes_per_token / (path.nics * link.effective_bytes_per_s)
    # a layer-wise connector starts after the first layer and ends a layer's share after
    # the pass; any other starts at the pass end
    first_layer = 1.0 / layers if path.layer_wise else 1.0
    last_layer = 1.0 / layers if path.layer_wise else 1.0
    hop = pre.instance.engine.kv_transfer.second_hop_s(
        pre.instance.efficiency.request_overhead_s)
    setup = link.transfer_setup_s + hop
    step = prefill_steps.step
    link_busy = 0.0
    steps_p = 0

    def start_pass(i: int, t: float) -> None:
        q = queues[i]
        lm = lm_by_phase[seg_phase[G[q[0]]]]
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
        # a split budget (DP-attention ranks, micro-batches) spreads the pass's prompts over
        # its units, a prompt whole in one (``instance.busiest_unit_share``)
        dur = step(p, nseq, int(kk) if kk > 0 else 0, 0, 0.0)
        pass_start[i] = t
        heappush(heap, (t + dur, PREFILL_END, i, 0))

    pop = feed.pop
    t = feed.next_t if math.isfinite(feed.next_t) else 0.0
    start = t
    while True:
        if heap and heap[0][0] <= feed.next_t:
            t, kind, i, ver = heappop(heap)
            if kind == DECODE:
                decode.on_event(i, ver, t)
            elif kind == KV_ARRIVED:
                rid = i
                F[rid] = t
                if osl[rid] <= 1:
                    rec.done(rid, t)
                else:
                    j = route_d()
                    counts_d[j] += 1
                    decode.add(j, rid, t)
            else:  # a prefill pass ends: ship each prompt's KV in order
                batch = passes[i]
                begin = pass_start[i]
                dur = t - begin
                busy_p[i] += dur
                steps_p += 1
                lanes_i = link_free[i]
                earliest = begin + dur * first_layer
                for rid in batch:
                    lane = lane_next[i]
                    lane_next[i] = lane + 1 if lane + 1 < lanes else 0
                    tx = S[rid] * wire_s_per_token
                    go = max(earliest, lanes_i[lane])
                    end = go + tx
                    tail = t + tx * last_layer
                    free = max(tail, end)
                    lanes_i[lane] = free
                    link_busy += tx
                    heappush(heap, (free + setup, KV_ARRIVED, rid, 0))
                counts_p[i] -= len(batch)
                passes[i] = []
                if queues[i]:
                    start_pass(i, t)
        elif not feed.exhausted:
            t = feed.next_t
            rid = pop()
            i = route_p()
            counts_p[i] += 1
            queues[i].append(rid)
            if not passes[i]:
                start_pass(i, t)
            if feed.stop:
                break
        else:
            break
    end = feed.finish(t, bool(heap))
    return RunCounters(
        busy_gpu_s=sum(busy_p) * pre.instance.gpus + decode.busy_seconds() * dec.instance.gpus,
        gpus=dep.gpus, link_busy_s=link_busy, links=n_pre * lanes,
        steps=steps_p + decode.step_count(),
        step_cache_misses=prefill_steps.misses + decode_steps.misses,
        preemptions=decode.preemptions, start_s=start, end_s=end, stopped=feed.stop)
