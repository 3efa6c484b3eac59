"""Event loop of a colocated pool (chunked or unchunked prefill).

Requests come from a ``feed.Feed``; the instances are one ``engine.EnginePool`` (continuous
batching over a paged KV cache, see there). Routing is join-the-shortest-queue on outstanding
requests (ties rotate), or a seeded uniform draw per request (``RandomRouter``, diagnostics:
the per-instance independent queue the analytic model assumes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from heapq import heappop

import numpy as np

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


class RandomRouter:
    """A uniform instance per request from ``numpy.random.default_rng([seed, 1, pool])``."""

    CHUNK = 16_384

    def __init__(self, seed: int, pool: int, instances: int) -> None:
        self._rng = np.random.default_rng([seed, 1, pool])
        self._k = instances
        self._buf: list[int] = []
        self._i = 0

    def __call__(self) -> int:
        if self._i >= len(self._buf):
            self._buf = self._rng.integers(0, self._k, size=self.CHUNK).tolist()
            self._i = 0
        i = self._buf[self._i]
        self._i += 1
        return i


def shortest_queue(counts: list[int], rotate: int) -> int:
    """Index of the smallest count; ties go to the first at or after ``rotate``."""
    m = min(counts)
    try:
        return counts.index(m, rotate)
    except ValueError:
        return counts.index(m)


def run_colocated(feed: Feed, steps: StepTimes, instances: int, gpus_per_instance: int,
                  chunk_tokens: int | None, kv: KvSpec, prefill_cap_tokens: int,
                  gaps: GapStats, route: RandomRouter | None = None) -> RunCounters:
    """Simulate the feed's requests on ``instances`` colocated instances (chunk None =
    unchunked)."""
    rec = feed.rec
    heap: list[Event] = []
    counts = [0] * instances
    pool = EnginePool(rec, steps, instances, "chunked" if chunk_tokens else "unchunked",
                      chunk_tokens, kv.capacity_blocks, kv.block_tokens, kv.max_num_seqs,
                      prefill_cap_tokens, heap, 0, counts, gaps)
    on_event = pool.on_event
    add = pool.add
    pop = feed.pop
    rotate = 0
    single = instances == 1
    t = feed.next_t if math.isfinite(feed.next_t) else 0.0
    start = t
    while True:
        if heap and heap[0][0] <= feed.next_t:
            t, _, i, ver = heappop(heap)
            on_event(i, ver, t)
        elif not feed.exhausted:
            t = feed.next_t
            rid = pop()
            if single:
                i = 0
            elif route is not None:
                i = route()
            else:
                i = shortest_queue(counts, rotate)
                rotate = i + 1 if i + 1 < instances else 0
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
