"""The domain the model is evaluated on: one place for every limit.

The workload format (``advisor.loading.workload_schema``), ``sweep --vary`` (the sweep keys
and their parser) and the verdict-boundary searches all refuse or stop at these values, so
nothing downstream overflows and every part of the tool agrees on what it can evaluate.
"""

from __future__ import annotations

MAX_GPUS = 100_000
"""Largest cluster (and node) evaluated, and the top of the GPU-count boundary search. The
integer prefill:decode split scales with the GPU count: 100,000 GPUs take ~3 s and ~300 MB
in a sweep of every count, a million ~20 s and ~2 GB, and int64 arithmetic overflows long
before 10**30."""

MIN_RATE_RPS = 1e-6
"""Smallest arrival rate accepted, requests/s (one request every 12 days). The workload
format checks it apart from its "must be greater than 0", so zero and negative rates keep
that plain message."""

MAX_RATE_RPS = 1e9
"""Largest arrival rate accepted, requests/s: beyond it capacity/rate ratios and the KV
demand (rate × bytes) leave the floating-point range."""

MAX_BURSTINESS = 1000.0
"""Largest coefficient of variation of inter-arrival times (the queueing squares it)."""

MAX_TOKENS = 10_000_000
"""Longest token length (prompt, output, any statistic) and token budget accepted: ten
million, far past every context window, while token counts still convert to floats
(10**400 does not)."""

MAX_SWEEP_POINTS_PER_AXIS = 200_000
"""Values one sweep axis may hold."""

MAX_SWEEP_POINTS = 2_000_000
"""Design points one sweep may evaluate (the product of its axes)."""

MAX_CONCURRENCY = 10_000_000
"""Largest closed-loop client count (``traffic.concurrency``) accepted: workload and sweeps."""
