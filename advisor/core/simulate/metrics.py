"""Run-wide counters the event loops fill: inter-token gaps, busy time, steps.

* Inter-token gaps: one histogram per run, log bins of 2 % width weighted by the number of
  decode tokens a step emits, plus the exact largest gap (the interference tail).
* Busy GPU-seconds, KV-link busy time, engine steps, preemptions.

Per-request figures (TTFT, TPOT, Little's law, goodput) are in ``recorder``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

GAP_MIN_S = 1e-6
GAP_BINS_PER_E = 50.0
"""Histogram resolution: 50 bins per factor e (2 % wide)."""
GAP_BINS = int(GAP_BINS_PER_E * math.log(1e4 / GAP_MIN_S)) + 1


@dataclass
class GapStats:
    """Inter-token gap histogram and the largest gap (seconds)."""

    hist: list[float] = field(default_factory=lambda: [0.0] * GAP_BINS)
    max_s: float = 0.0


@dataclass(kw_only=True)
class RunCounters:
    """What an event loop reports besides the per-request figures."""

    busy_gpu_s: float = 0.0
    """Σ over instances of busy time × GPUs per instance."""
    gpus: int = 0
    link_busy_s: float = 0.0
    """Σ over KV links of the time they carry data."""
    links: int = 0
    """Number of KV-link servers (prefill instances); 0 for colocated modes."""
    steps: int = 0
    step_cache_misses: int = 0
    preemptions: int = 0
    """Requests preempted (KV blocks ran out) and recomputed."""
    start_s: float = 0.0
    end_s: float = 0.0
    """First arrival and the time the run stopped."""
    stopped: str = ""
    """Why the run stopped before every request completed ("" when it drained)."""


def hist_quantile(hist: list[float], q: float) -> float | None:
    """The q-quantile of the gap histogram (bin centre), seconds."""
    w = np.asarray(hist, dtype=float)
    total = w.sum()
    if total <= 0:
        return None
    idx = int(np.searchsorted(np.cumsum(w), q * total, side="left"))
    idx = min(idx, len(w) - 1)
    return GAP_MIN_S * math.exp((idx + 0.5) / GAP_BINS_PER_E)
