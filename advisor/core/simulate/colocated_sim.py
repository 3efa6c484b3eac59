"""Event loop of a colocated pool (chunked or unchunked prefill).

Requests come from a ``feed.Feed``; the instances are one ``engine.EnginePool`` (continuous
batching over a paged KV cache, see there). Each arrival goes to the instance the router's
policy picks (``dispatch.Router``: least-loaded, round-robin, random or power-of-two on the
requests outstanding at each instance).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from heapq import heappop

from advisor.core.scenario import RouterPolicy
from advisor.core.simulate.dispatch import Router
from advisor.core.simulate.engine import EnginePool, Event
from advisor.core.simulate.feed import Feed
from advisor.core.simulate.metrics import GapStats, RunCounters
from advisor.core.simulate.steptime import StepTimes


@dataclass(frozen=True)
class KvSpec:
    """One instance's KV cache as the scheduler sees it."""

    capacity_blocks: int
    block_tokens: int
    max_num_seqs: int


def run_colocated(feed: Feed, steps: StepTimes, instances: int, gpus_per_instance: int,
                  chunk_tokens: int | None, kv: KvSpec, prefill_cap_tokens: int,
                  gaps: GapStats, policy: RouterPolicy = "least-loaded", seed: int = 0
                  ) -> RunCounters:
    """Simulate the feed's requests on ``instances`` colocated instances (chunk None =
    unchunked), routed by ``policy`` (random draws seeded by ``seed``)."""
    rec = feed.rec
    heap: list[Event] = []
    counts = [0] * instances
    pool = EnginePool(rec, steps, instances, "chunked" if chunk_tokens else "unchunked",
                      chunk_tokens, kv.capacity_blocks, kv.block_tokens, kv.max_num_seqs,
                      prefill_cap_tokens, heap, 0, counts, gaps)
    on_event = pool.on_event
    add = pool.add
    pop = feed.pop
    route = Router(policy, counts, seed, 0)
    t = feed.next_t if math.isfinite(feed.next_t) else 0.0
    start = t
    while True:
        if heap and heap[0][0] <= feed.next_t:
            t, _, i, ver = heappop(heap)
            on_event(i, ver, t)
        elif not feed.exhausted:
            t = feed.next_t
            rid = pop()
            i = route()
            counts[i] += 1
            add(i, rid, t)
            if feed.stop:
                break
        else:
            break
    end = feed.finish(t, bool(heap))
    return RunCounters(busy_gpu_s=pool.busy_seconds() * gpus_per_instance,
                       gpus=instances * gpus_per_instance, steps=pool.step_count(),
                       step_cache_misses=steps.misses, preemptions=pool.preemptions,
                       start_s=start, end_s=end, stopped=feed.stop)
