"""Arrivals into the event loops: one request at a time from a source's batches.

``Feed.pop`` hands the next request to the loop and stores its data in the recorder's
in-flight maps; it also takes the samples of the requests in the system, calls ``progress``
once per 1 % of the requests, and stops the run (``stop`` set) when

* the requests in the system pass ``steady.IN_FLIGHT_LIMIT``, or
* the current segment's window shows a clear overload (``steady.CLEAR_GROWTH`` of its
  arrivals piling up over at least ``steady.DETECT_RESIDENCES`` mean residence times).

After the last arrival the loop drains what is in flight — unless the last segment is
overloaded (its measured requests would never all finish), or the drain outlasts
``DRAIN_RESIDENCES`` mean residence times plus the run's length.

Every request is clipped to the longest one an instance can hold (``max_request_tokens``:
prompt + output within the model's context window and one instance's KV cache, as an engine
rejects longer ones); ``clipped`` counts them.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from advisor.core.simulate.arrivals import Source
from advisor.core.simulate.recorder import Recorder
from advisor.core.simulate.steady import (
    CLEAR_GROWTH,
    DETECT_RESIDENCES,
    IN_FLIGHT_LIMIT,
    OVERLOAD_GROWTH,
    conclusive,
    growing,
)

Progress = Callable[[int, int], None]
PROGRESS_EVERY = 100
"""Progress callbacks per run (one per 1 % of the arrivals)."""
CHECK_EVERY = 32
"""Samples between two online overload checks."""
DRAIN_RESIDENCES = 50.0


class Feed:
    """The next arrival, and the run's stop rules (module docstring)."""

    def __init__(self, source: Source, rec: Recorder, progress: Progress | None,
                 max_request_tokens: int, residence_s: list[float],
                 in_flight_limit: int = IN_FLIGHT_LIMIT) -> None:
        self.rec = rec
        self.total = source.requests
        self.progress = progress
        self.every = max(self.total // PROGRESS_EVERY, 1)
        self.max_tokens = max(2, int(max_request_tokens))
        self.residence_s = residence_s
        self.limit = in_flight_limit
        self.arrived = 0
        self.clipped = 0
        self.stop = ""
        self.stop_segment = -1
        """Segment found overloaded when the run stopped for growth (-1 otherwise)."""
        self.exhausted = False
        self.last_arrival = 0.0
        self.first_arrival = math.nan
        self.next_t = math.inf
        self._it = iter(source.batches())
        self._t: list[float] = []
        self._s: list[int] = []
        self._o: list[int] = []
        self._g: list[int] = []
        self._i = 0
        self._n = 0
        self._first = 0
        self._seg = 0
        self._load()

    def _load(self) -> None:
        batch = next(self._it, None)
        if batch is None or batch.size == 0:
            self._n = self._i = 0
            self.exhausted = True
            self.rec.close_all()
            self.next_t = self._drain_until()
            return
        self.rec.on_batch(batch)
        prompt = np.minimum(batch.prompt_tokens, self.max_tokens - 1)
        output = np.minimum(batch.output_tokens, self.max_tokens - prompt)
        self.clipped += int(((prompt != batch.prompt_tokens)
                             | (output != batch.output_tokens)).sum())
        self._t = batch.arrival_s.tolist()
        self._s = prompt.tolist()
        self._o = output.tolist()
        self._g = batch.segment.tolist()
        self._first = batch.first_id
        self._i = 0
        self._n = batch.size
        self.next_t = self._t[0]
        if math.isnan(self.first_arrival):
            self.first_arrival = self._t[0]

    def pop(self) -> int:
        """The next request's id (its data stored in the recorder); the loop then routes it.
        Sets ``stop`` when the run must end (the request is still routed)."""
        i = self._i
        rid = self._first + i
        t = self._t[i]
        rec = self.rec
        rec.A[rid] = t
        rec.S[rid] = self._s[i]
        rec.O[rid] = self._o[i]
        seg = self._g[i]
        rec.G[rid] = seg
        self._seg = seg
        self.last_arrival = t
        self.arrived += 1
        if self.progress is not None and self.arrived % self.every == 0:
            self.progress(self.arrived, self.total)
        if t >= rec.next_sample:
            rec.take_sample(t)
            if len(rec.sample_t) % CHECK_EVERY == 0 and self._clearly_overloaded(t):
                self.stop = "the requests in the system grew without bound"
                self.stop_segment = self._seg
        if len(rec.A) > self.limit:
            self.stop = f"more than {self.limit:,} requests in the system"
        i += 1
        if i < self._n:
            self._i = i
            self.next_t = self._t[i]
        else:
            self._load()
        return rid

    def _clearly_overloaded(self, t: float) -> bool:
        seg = self._seg
        rec = self.rec
        w0 = rec.window(seg)[0]
        if t - w0 < DETECT_RESIDENCES * self.residence_s[seg]:
            return False
        growth, late = rec.growth([seg], now=t)
        return (growth is not None and late is not None and growth > CLEAR_GROWTH
                and late > CLEAR_GROWTH)

    def _drain_until(self) -> float:
        """How long the loop may go on after the last arrival."""
        rec = self.rec
        t = self.last_arrival
        seg = self._seg
        rec.end_s = t
        growth, late = rec.growth([seg], now=t)
        w0 = rec.window(seg)[0]
        if (conclusive(rec.warmup_s[seg], t - w0, self.residence_s[seg])
                and growing(growth, late, OVERLOAD_GROWTH)):
            self.stop = "overloaded at the last arrival: not drained"
            self.stop_segment = seg
            return t
        span = t - (self.first_arrival if not math.isnan(self.first_arrival) else t)
        return t + span + DRAIN_RESIDENCES * max(self.residence_s, default=0.0)

    def finish(self, t_last_event: float, heap_left: bool) -> float:
        """Close the run; the time it stopped."""
        end = max(t_last_event, self.last_arrival)
        if heap_left and self.exhausted and not self.stop:
            self.stop = "the drain after the last arrival took too long"
        self.rec.finish(end)
        if self.progress is not None:
            self.progress(self.total, self.total)
        return end
