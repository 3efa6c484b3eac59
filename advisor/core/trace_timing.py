"""The timing of a request log before it is summarised: quantised timestamps, idle periods,
and the burstiness inside busy periods.

Pure numpy on arrival times (seconds from the first request, in arrival order);
``advisor.core.trace_fit`` calls these before it looks for phases.

**Quantised timestamps.** The *tick* is the largest of 1 µs, 10 µs, …, 100 s and 60 s (each
× the log's time scale) of which every timestamp is a whole multiple (to a few units in the
last place of a double). Within a tick nothing can be seen, so the burstiness is bounded,
not measured: from below by the requests of each tick spread evenly over it (the most
regular arrivals consistent with the counts), from above by the gaps as logged (every request
at its tick's start). The tick is *coarse* when these bounds are more than
``COARSE_CV_SPREAD`` of the logged CV apart: the gaps are then partly quantisation, not
arrivals (a log of whole seconds holding ten requests a second has ~90 % zero gaps and bounds
0.35–3.0 around a true CV of 1); the share of zero gaps and the distinct timestamps are
reported either way. The figure written is the one the counts do show:
the index of dispersion D = Var(N)/E(N) of the counts N in windows of whole ticks holding at
least ``DISPERSION_WINDOW_ARRIVALS`` arrivals on average; for a renewal process of gap CV c,
D → c² as the window grows (Cox & Lewis, "The Statistical Analysis of Series of Events",
1966, §4.5), so c ≈ √D, clipped to the bounds.

**Idle periods.** A gap is *idle* when it lies beyond the largest gap the busy periods'
own tail makes plausible in a log of this length — a peaks-over-threshold rule (Pickands,
"Statistical inference using extreme order statistics", Ann. Statist. 3(1), 1975; Davison &
Smith, "Models for exceedances over high thresholds", JRSS B 52(3), 1990). Over the tail
threshold u (the busy gaps' 99th percentile, or the 90th in a log of fewer than
``MIN_TAIL_GAPS`` / 0.01 gaps) the N_u excesses are taken as exponential with their mean β
(the tail of gamma, Weibull and lognormal-like gaps; a heavier, Pareto-like tail has a larger
mean excess and so a farther fence), and the fence is u + β·ln(N_u/α) with α =
``IDLE_ALPHA``: a busy gap crosses it with probability α/N_u, so the whole log is expected to
call α busy gaps idle. The busy gaps are the ones not yet called idle (iterated until nothing
changes: idle gaps first inflate β, then drop out of it). For gamma gaps of mean m the fence
is ~20 m at CV 0.5, ~30 m at CV 1 (n = 10⁴) and ~330 m at CV 4.6; it is a multiple of the
busy gaps whatever their scale. Idle gaps are cut out of the log's clock (each replaced by one
mean busy gap) before phases, rates and burstiness are measured; the fit reports the *duty
cycle* (busy time / span) and the idle share.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

TICK_UNITS_S = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.1, 1.0, 10.0, 60.0, 100.0)
"""Candidate timestamp resolutions (before the time scale)."""
COARSE_CV_SPREAD = 0.05
"""The tick is coarse when the CV bounds it leaves are this far apart (share of the CV)."""
IDLE_ALPHA = 0.01
"""Expected busy gaps called idle in a whole log (the fence's false-alarm count)."""
MIN_TAIL_GAPS = 50
"""Excesses over the tail threshold needed to estimate their mean."""
DISPERSION_WINDOW_ARRIVALS = 20.0
"""Mean arrivals per counting window for the dispersion estimate of a quantised log's CV."""
MIN_DISPERSION_WINDOWS = 8


@dataclass(frozen=True, kw_only=True)
class Quantisation:
    """How finely the log's timestamps are written."""

    tick_s: float | None
    """The largest candidate resolution every timestamp is a multiple of (seconds, after the
    time scale); None when none is (finer than 1 µs, or irregular)."""
    distinct: int
    """Distinct timestamps."""
    requests: int
    zero_gap_share: float
    """Share of the gaps that are exactly 0."""
    coarse: bool
    """The tick is coarse against the gaps (module docstring): the burstiness is bounded."""


@dataclass(frozen=True, kw_only=True)
class IdlePeriods:
    """The idle gaps of a log (module docstring)."""

    gap_index: np.ndarray
    """Index i of every idle gap (between requests i and i + 1)."""
    gaps_s: np.ndarray
    """Their lengths."""
    fence_s: float | None
    """Gaps longer than this are idle (None: too few gaps to test)."""
    idle_s: float
    """Total length of the idle gaps."""
    span_s: float
    """First to last request."""
    mean_busy_gap_s: float
    """Mean gap inside busy periods."""

    @property
    def count(self) -> int:
        """Number of idle gaps."""
        return int(self.gap_index.size)

    @property
    def duty_cycle(self) -> float:
        """Busy time / span (1 without idle gaps)."""
        return 1.0 if self.span_s <= 0 else max(0.0, 1.0 - self.idle_s / self.span_s)


@dataclass(frozen=True, kw_only=True)
class Burstiness:
    """The burstiness (CV of inter-arrival gaps) of a stretch of busy time."""

    value: float
    """The figure written: the gaps' CV, or for coarse timestamps the dispersion estimate."""
    gaps_cv: float
    """CV of the gaps as logged (an upper bound when the timestamps are coarse)."""
    lower: float | None
    """Coarse timestamps: the CV with each tick's requests spread evenly over it."""
    method: str
    """``gaps`` or ``dispersion``."""
    gaps: int
    windows: int = 0
    """Counting windows of the dispersion estimate."""


def tick_of(t: np.ndarray, time_scale: float = 1.0) -> float | None:
    """The largest candidate tick (× ``time_scale``) every timestamp is a multiple of."""
    if t.size < 2:
        return None
    span = float(np.max(np.abs(t)))
    for unit in sorted(TICK_UNITS_S, reverse=True):
        u = unit * time_scale
        if u > span and span > 0:
            continue
        k = t / u
        tol = 1e-6 + 4e-16 * span / u
        if float(np.max(np.abs(k - np.rint(k)))) <= tol:
            return u
    return None


def quantisation(t: np.ndarray, busy: np.ndarray, gap_ok: np.ndarray,
                 time_scale: float = 1.0) -> Quantisation:
    """The tick, distinct timestamps and zero gaps of ``t``; the tick is coarse when
    spreading each tick's requests over it moves the CV of the busy gaps (``busy``: the busy
    clock, ``gap_ok``: the gaps inside busy periods) by more than ``COARSE_CV_SPREAD``."""
    g = np.diff(t)
    zero = float((g == 0).mean()) if g.size else 0.0
    tick = tick_of(t, time_scale)
    coarse = False
    if tick is not None:
        logged = _cv(np.diff(busy)[gap_ok])
        even = _cv(np.diff(spread_ticks(busy, tick))[gap_ok])
        coarse = logged - min(even, logged) > COARSE_CV_SPREAD * logged
    return Quantisation(tick_s=tick, distinct=int(np.unique(t).size), requests=int(t.size),
                        zero_gap_share=zero, coarse=bool(coarse))


def _fence(gaps: np.ndarray) -> float | None:
    """u + β·ln(N_u/α) over the busy ``gaps`` (module docstring); None when too few."""
    for q in (99.0, 90.0):
        u = float(np.percentile(gaps, q))
        excess = gaps[gaps > u] - u
        if excess.size >= MIN_TAIL_GAPS:
            return u + float(excess.mean()) * math.log(excess.size / IDLE_ALPHA)
    return None


def idle_periods(t: np.ndarray) -> IdlePeriods:
    """The idle gaps of ``t``: beyond the busy gaps' peaks-over-threshold fence, iterated
    (module docstring)."""
    g = np.diff(t)
    span = float(t[-1] - t[0]) if t.size else 0.0
    idle = np.zeros(g.size, dtype=bool)
    fence: float | None = None
    for _ in range(32):
        fence = _fence(g[~idle])
        if fence is None:
            break
        now = g > fence
        if np.array_equal(now, idle):
            break
        idle = now
    idle_s = float(g[idle].sum())
    busy_n = int(g.size - idle.sum())
    mean_busy = (span - idle_s) / busy_n if busy_n > 0 else 0.0
    return IdlePeriods(gap_index=np.flatnonzero(idle), gaps_s=g[idle], fence_s=fence,
                       idle_s=idle_s, span_s=span, mean_busy_gap_s=mean_busy)


def spread_ticks(t: np.ndarray, tick_s: float) -> np.ndarray:
    """The times with the requests of each tick spread evenly over it: k requests stamped v
    go to v + tick·(j + ½)/k, j = 0…k − 1 (arrival order kept)."""
    _, start, counts = np.unique(t, return_index=True, return_counts=True)
    k = np.repeat(counts, counts)
    j = np.arange(t.size) - np.repeat(start, counts)
    return t + tick_s * (j + 0.5) / k


def busy_clock(t: np.ndarray, idle: IdlePeriods) -> np.ndarray:
    """The log's clock with every idle gap shortened to one mean busy gap."""
    if idle.count == 0:
        return t.copy()
    g = np.diff(t)
    cut = np.zeros(g.size)
    cut[idle.gap_index] = g[idle.gap_index] - idle.mean_busy_gap_s
    return t - np.concatenate(([0.0], np.cumsum(cut)))


def _cv(g: np.ndarray) -> float:
    if g.size < 2 or g.mean() <= 0:
        return 1.0
    return float(g.std() / g.mean())


def _dispersion_cv(t: np.ndarray, stretch: np.ndarray, tick_s: float,
                   mean_gap_s: float) -> tuple[float | None, int]:
    """√(index of dispersion) of arrivals in windows of whole ticks, each stretch counted on
    its own (its first and last windows, partial, left out)."""
    ticks = max(1, math.ceil(DISPERSION_WINDOW_ARRIVALS * mean_gap_s / tick_s))
    width = ticks * tick_s
    parts = []
    for s in np.unique(stretch).tolist():
        ts = t[stretch == s]
        if ts.size < 2:
            continue
        counts = np.bincount(np.floor((ts - ts[0]) / width + 1e-9).astype(np.int64))
        parts.append(counts[1:-1])
    counts = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    if counts.size < MIN_DISPERSION_WINDOWS or counts.mean() <= 0:
        return None, int(counts.size)
    return math.sqrt(float(counts.var(ddof=1) / counts.mean())), int(counts.size)


def burstiness(t: np.ndarray, same: np.ndarray, stretch: np.ndarray, quant: Quantisation,
               spread: np.ndarray | None = None) -> Burstiness:
    """The burstiness of the gaps ``np.diff(t)[same]`` (the gaps inside busy stretches).

    ``t`` is the busy clock as logged, ``stretch`` each request's stretch (the dispersion
    windows of coarse timestamps never cross one); ``spread`` the same clock with each tick
    spread evenly (``spread_ticks``, used when ``quant.coarse``)."""
    g = np.diff(t)[same]
    logged = _cv(g)
    if not quant.coarse or quant.tick_s is None or spread is None:
        return Burstiness(value=logged, gaps_cv=logged, lower=None, method="gaps",
                          gaps=int(g.size))
    lower = min(_cv(np.diff(spread)[same]), logged)
    mean_gap = float(g.mean()) if g.size else 0.0
    est, windows = _dispersion_cv(t, stretch, quant.tick_s, mean_gap)
    if est is None:
        return Burstiness(value=logged, gaps_cv=logged, lower=lower, method="gaps",
                          gaps=int(g.size), windows=windows)
    return Burstiness(value=min(max(est, lower), logged), gaps_cv=logged, lower=lower,
                      method="dispersion", gaps=int(g.size), windows=windows)
