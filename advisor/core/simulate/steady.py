"""How long to simulate, and whether a run reached steady state (issue #19).

A run starts empty, so its first requests see a lighter system than the workload's; and a
pool that cannot keep up never has a steady state at all. ``simulate`` therefore sizes every
phase from the workload and judges every phase it measured:

**Sizing** (``size_phase``), from the phase's mean residence time W — the time a request
spends in the system, from the analytic model's median TTFT and TPOT on the simulated plan
(W ≈ TTFT₅₀ + (Ō − 1)·TPOT₅₀), or, where the model calls the plan overloaded, the service
time alone (prefill of the mean prompt plus Ō − 1 decode steps at the memory-limited batch):

* warm-up = ``WARMUP_RESIDENCES`` · W: by Little's law L = λ·W the system holds about L
  requests in steady state, and it takes about W to fill (every request in it arrived within
  the last few W);
* measurement window = the longer of ``MEASURE_RESIDENCES`` · W · max(1, (1 + c²)/2) (so the
  window's edges, a few W of requests straddling them, are a small part of it; Little's law
  over a window is off by the difference between the requests in the system at its two
  edges over L·window/W, and that difference swings with the arrivals' burstiness c — the
  (c_a² + c_s²)/2 of Kingman's formula with c_s = 1) and the time for
  ``COUNT_MARGIN`` · ``TAIL_SAMPLES``/(1 − q) arrivals, q the SLO's percentile (the one a
  verdict rests on; p95 by default: 1,000 requests), so that percentile rests on at least
  ``TAIL_SAMPLES`` requests beyond it (the p99 shown beside it on at least 10 at p95);
* requests needed = rate × (warm-up + window).

**Judgement** (``assess``), from what the run measured (W from the simulation itself):

* overloaded: the requests in the system grew by more than ``OVERLOAD_GROWTH`` of the
  arrivals over the window, and by more than half that over its second half (a queue
  growing without bound; KV memory full and the waiting queue growing counts here), or the
  run was stopped for growth (``CLEAR_GROWTH``: a quarter of the arrivals piling up over at
  least ``DETECT_RESIDENCES`` · W of the window) or for the ``IN_FLIGHT_LIMIT``;
* not reached: a warm-up shorter than ``MIN_WARMUP_RESIDENCES`` · W, a window shorter than
  ``MIN_MEASURE_RESIDENCES`` · W, fewer completions than the percentiles need, measured
  requests left unfinished, or Little's law (L against λ·W over the window) off by more than
  ``LITTLE_GUARD``;
* reached otherwise. The thresholds accepted are looser than the ones sized for (2 against 3
  residences of warm-up, 5 against 20 of window) because W is only estimated beforehand.

No goodput and no "meets the SLOs" are reported for a phase that did not reach steady state.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from advisor.core.limits import MAX_REQUESTS_IN_FLIGHT, MAX_SIMULATED_REQUESTS
from advisor.core.simulate.recorder import WindowFigures

WARMUP_RESIDENCES = 3.0
MEASURE_RESIDENCES = 20.0
MIN_WARMUP_RESIDENCES = 2.0
MIN_MEASURE_RESIDENCES = 5.0
DETECT_RESIDENCES = 2.0
TAIL_SAMPLES = 50
COUNT_MARGIN = 1.25
"""The window is sized for this many times the completions needed (arrivals are random)."""
OVERLOAD_GROWTH = 0.05
CLEAR_GROWTH = 0.25
LITTLE_GUARD = 0.10
MAX_REQUESTS = MAX_SIMULATED_REQUESTS
IN_FLIGHT_LIMIT = MAX_REQUESTS_IN_FLIGHT


@dataclass(frozen=True, kw_only=True)
class PhaseSizing:
    """How long one phase must run (see the module docstring)."""

    residence_s: float
    """Estimated mean time in the system."""
    residence_basis: str
    """"analytic" (the model's median TTFT and TPOT) or "service" (overloaded plan)."""
    warmup_s: float
    measured_s: float
    completions_needed: int
    requests_needed: int


@dataclass(frozen=True, kw_only=True)
class SteadyState:
    """Whether one phase's measurement describes a steady state."""

    reached: bool
    overloaded: bool
    warmup_s: float
    measured_s: float
    littles_law_gap: float | None
    requests_needed: int
    completions: int
    """Measured requests completed."""
    completions_needed: int
    growth: float | None
    """Growth of the requests in the system over the window, as a share of the arrivals."""
    reasons: tuple[str, ...]
    """Why it was not reached (empty when reached)."""


def completions_needed(top_quantile: float) -> int:
    """Completions for ``TAIL_SAMPLES`` beyond the ``top_quantile`` (0 < q < 1)."""
    q = min(max(top_quantile, 0.5), 0.9999)
    return math.ceil(TAIL_SAMPLES / (1.0 - q) - 1e-9)


def size_phase(rate_rps: float, burstiness: float, residence_s: float, basis: str,
               top_quantile: float) -> PhaseSizing:
    """The warm-up, window and requests of a phase at ``rate_rps`` (arrival CV
    ``burstiness``) with mean residence ``residence_s``."""
    w = float(residence_s)
    w = min(max(w, 1e-6), 1e7) if math.isfinite(w) else 1e7
    need = completions_needed(top_quantile)
    warm = WARMUP_RESIDENCES * w
    spread = max(1.0, (1.0 + burstiness * burstiness) / 2.0)
    window = max(MEASURE_RESIDENCES * w * spread, COUNT_MARGIN * need / rate_rps)
    requests = int(min(math.ceil(rate_rps * (warm + window)), 10**15))
    return PhaseSizing(residence_s=w, residence_basis=basis, warmup_s=warm, measured_s=window,
                       completions_needed=need, requests_needed=max(requests, need))


def conclusive(warmup_s: float, measured_s: float, residence_s: float) -> bool:
    """Whether a window is long enough to tell a growing queue from a filling system."""
    return (warmup_s >= MIN_WARMUP_RESIDENCES * residence_s
            and measured_s >= DETECT_RESIDENCES * residence_s)


def growing(growth: float | None, late: float | None, threshold: float) -> bool:
    """Growth above ``threshold`` over the window and above half of it over its second half."""
    return (growth is not None and late is not None and growth > threshold
            and late > threshold / 2)


def assess(sizing: PhaseSizing, fig: WindowFigures, stop_reason: str,
           stopped_for_growth: bool) -> SteadyState:
    """Judge one phase's measurement (module docstring); ``stopped_for_growth``: the run was
    stopped early because this phase's requests in the system grew without bound."""
    reasons: list[str] = []
    w = fig.little.mean_time_in_system_s if fig.completed else sizing.residence_s
    w = max(w, 1e-9)
    growth, late = fig.growth, fig.late_growth
    overloaded = stopped_for_growth or (
        conclusive(fig.warmup_s, fig.measured_s, sizing.residence_s)
        and growing(growth, late, OVERLOAD_GROWTH))
    gap = fig.little.relative_error if fig.arrivals and fig.completed else None
    if overloaded:
        shown = (f"by {growth * 100:.0f} % of the arrivals" if growth is not None
                 else "without bound")
        reasons.append(f"the requests in the system grew {shown} over the measurement window"
                       + (f" (run stopped: {stop_reason})" if stop_reason else ""))
        return SteadyState(reached=False, overloaded=True, warmup_s=fig.warmup_s,
                           measured_s=fig.measured_s, littles_law_gap=gap,
                           requests_needed=sizing.requests_needed, completions=fig.completed,
                           completions_needed=sizing.completions_needed, growth=growth,
                           reasons=tuple(reasons))
    if fig.warmup_s < MIN_WARMUP_RESIDENCES * w:
        reasons.append(f"warm-up {fig.warmup_s:,.3g} s is shorter than "
                       f"{MIN_WARMUP_RESIDENCES:g} mean residence times ({w:,.3g} s each)")
    if fig.measured_s < MIN_MEASURE_RESIDENCES * w:
        reasons.append(f"measurement window {fig.measured_s:,.3g} s is shorter than "
                       f"{MIN_MEASURE_RESIDENCES:g} mean residence times ({w:,.3g} s each)")
    if fig.completed < sizing.completions_needed:
        reasons.append(f"{fig.completed:,} measured completions; the percentiles need "
                       f"{sizing.completions_needed:,}")
    if fig.arrivals > fig.completed:
        reasons.append(f"{fig.arrivals - fig.completed:,} measured requests had not "
                       "completed when the run stopped" + (f" ({stop_reason})" if stop_reason
                                                           else ""))
    if growth is not None and growing(growth, late, OVERLOAD_GROWTH):
        reasons.append(f"the requests in the system were still growing ({growth * 100:.0f} % "
                       "of the arrivals over the window): too short a run to tell a filling "
                       "system from an overloaded one")
    if gap is not None and gap > LITTLE_GUARD:
        reasons.append(f"Little's law is off by {gap * 100:.0f} % over the window")
    return SteadyState(reached=not reasons, overloaded=False, warmup_s=fig.warmup_s,
                       measured_s=fig.measured_s, littles_law_gap=gap,
                       requests_needed=sizing.requests_needed, completions=fig.completed,
                       completions_needed=sizing.completions_needed, growth=growth,
                       reasons=tuple(reasons))
