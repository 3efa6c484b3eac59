"""The simulator's routers: one instance per arriving request, by the workload's policy.

Every pool — colocated instances, prefill instances, decode instances — is fronted by a
:class:`Router` of the same policy (``Scenario.router``, docs/model.md §7), looking at the same
kind of figure: the requests outstanding at each instance (``counts``, kept by the event loop:
raised on dispatch, lowered when the instance is done with the request — a colocated instance at
completion, a prefill instance when its pass ends, a decode instance at completion).

* ``least-loaded``: the instance with the fewest outstanding requests (join-the-shortest-queue);
  ties go to the first at or after the instance after the last pick (rotating, so a tie among
  idle instances is dealt out in turn);
* ``round-robin``: instances in turn, whatever their load;
* ``random``: a uniform instance;
* ``power-of-two``: two distinct uniform instances, the one with fewer outstanding requests
  (ties: the first drawn) — the "power of two choices" (Mitzenmacher, IEEE TPDS 2001).

Random draws come from ``numpy.random.default_rng([seed, 1, pool])`` in blocks, so a run is
reproducible from its seed and the pools draw independent streams.
"""

from __future__ import annotations

import numpy as np

from advisor.core.scenario import ROUTER_POLICIES, RouterPolicy

BLOCK = 16_384
"""Random draws fetched at a time."""


def shortest_queue(counts: list[int], rotate: int) -> int:
    """Index of the smallest count; ties go to the first at or after ``rotate``."""
    m = min(counts)
    try:
        return counts.index(m, rotate)
    except ValueError:
        return counts.index(m)


class Router:
    """Picks the instance of a pool for each arrival (module docstring)."""

    def __init__(self, policy: RouterPolicy, counts: list[int], seed: int, pool: int) -> None:
        if policy not in ROUTER_POLICIES:
            raise ValueError(f"unknown router {policy!r}; expected one of "
                             f"{', '.join(ROUTER_POLICIES)}")
        self.policy = policy
        self._counts = counts
        self._k = len(counts)
        self._next = 0
        self._rng = np.random.default_rng([seed, 1, pool])
        self._buf: list[int] = []
        self._i = 0

    def _draw(self) -> int:
        if self._i >= len(self._buf):
            self._buf = self._rng.integers(0, self._k, size=BLOCK).tolist()
            self._i = 0
        i = self._buf[self._i]
        self._i += 1
        return i

    def __call__(self) -> int:
        k = self._k
        if k == 1:
            return 0
        policy = self.policy
        if policy == "least-loaded":
            i = shortest_queue(self._counts, self._next)
            self._next = i + 1 if i + 1 < k else 0
            return i
        if policy == "round-robin":
            i = self._next
            self._next = i + 1 if i + 1 < k else 0
            return i
        if policy == "random":
            return self._draw()
        a = self._draw()
        b = self._draw()
        while b == a:
            b = self._draw()
        counts = self._counts
        return b if counts[b] < counts[a] else a
