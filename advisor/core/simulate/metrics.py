"""What a simulation run records, and the figures computed from it.

The event loops fill a :class:`RawRun` (per-request first-token and completion times, busy
time, KV-link busy time, a histogram of inter-token gaps); everything reported is derived here
with numpy, so the loops stay lean:

* TTFT = first token − arrival + the engine's per-request overhead (the analytic model adds
  the same constant); the first token is the end of the step that finishes the prompt
  (colocated) or the end of the KV transfer (disaggregated).
* TPOT = (last token − first token)/(O − 1) per request with O ≥ 2 output tokens, its
  percentiles across requests (as the analytic model defines it).
* Percentiles skip the first ``warmup`` share of requests (the system starts empty).
* Goodput = share of (measured) requests meeting both SLO targets.
* Little's law on a window [10 %, 90 %] of the arrival span: the time-average number of
  requests in the system over the window versus (arrivals in the window / window length) ×
  their mean time in the system.
* Inter-token gaps: one histogram per run, log bins of 2 % width weighted by the number of
  decode tokens a step emits, plus the exact largest gap (the interference tail).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

GAP_MIN_S = 1e-6
GAP_BINS_PER_E = 50.0
"""Histogram resolution: 50 bins per factor e (2 % wide)."""
GAP_BINS = int(GAP_BINS_PER_E * math.log(1e4 / GAP_MIN_S)) + 1
LITTLE_WINDOW = (0.1, 0.9)


@dataclass
class RawRun:
    """Mutable record an event loop fills (times in seconds)."""

    first_token_s: np.ndarray
    done_s: np.ndarray
    busy_gpu_s: float = 0.0
    """Σ over instances of busy time × GPUs per instance."""
    gpus: int = 0
    link_busy_s: float = 0.0
    """Σ over KV links of the time they carry data."""
    links: int = 0
    """Number of KV-link servers (prefill instances); 0 for colocated modes."""
    gap_hist: list[float] = field(default_factory=lambda: [0.0] * GAP_BINS)
    gap_max_s: float = 0.0
    steps: int = 0
    step_cache_misses: int = 0


def hist_quantile(hist: list[float], q: float) -> float | None:
    """The q-quantile of the gap histogram (bin centre), seconds."""
    w = np.asarray(hist, dtype=float)
    total = w.sum()
    if total <= 0:
        return None
    idx = int(np.searchsorted(np.cumsum(w), q * total, side="left"))
    idx = min(idx, len(w) - 1)
    return GAP_MIN_S * math.exp((idx + 0.5) / GAP_BINS_PER_E)


def percentile(values: np.ndarray, pct: float) -> float | None:
    """``pct``-th percentile (linear interpolation), None when empty."""
    if values.size == 0:
        return None
    return float(np.percentile(values, pct))


@dataclass(frozen=True)
class LittleCheck:
    """Little's law on the simulated trace: L against λ·W over one window."""

    window_s: tuple[float, float]
    mean_in_system: float
    """L: time-average number of requests in the system over the window."""
    arrival_rate_rps: float
    """λ: arrivals in the window / window length."""
    mean_time_in_system_s: float
    """W: mean time in the system of the requests arriving in the window."""

    @property
    def relative_error(self) -> float:
        """|L − λ·W| / L."""
        lw = self.arrival_rate_rps * self.mean_time_in_system_s
        return abs(self.mean_in_system - lw) / max(self.mean_in_system, 1e-12)


def little_check(arrival_s: np.ndarray, done_s: np.ndarray) -> LittleCheck:
    """L versus λ·W on the window [10 %, 90 %] of the arrival span."""
    a0, a1 = float(arrival_s[0]), float(arrival_s[-1])
    w0 = a0 + LITTLE_WINDOW[0] * (a1 - a0)
    w1 = a0 + LITTLE_WINDOW[1] * (a1 - a0)
    span = max(w1 - w0, 1e-12)
    overlap = np.clip(np.minimum(done_s, w1) - np.maximum(arrival_s, w0), 0.0, None)
    in_window = (arrival_s >= w0) & (arrival_s < w1)
    n = int(in_window.sum())
    w = float(np.mean(done_s[in_window] - arrival_s[in_window])) if n else 0.0
    return LittleCheck(window_s=(w0, w1), mean_in_system=float(overlap.sum()) / span,
                       arrival_rate_rps=n / span, mean_time_in_system_s=w)
