"""What a simulation run records, in memory that does not grow with the requests simulated.

A request's data lives in the recorder's in-flight maps (arrival, lengths, segment, first
token) from its arrival to its completion; completed requests are buffered and folded, every
``FLUSH`` completions, into fixed-size accumulators:

* **measurement windows**, one per segment: [segment start + warm-up, last arrival of the
  segment] (a drawn phase is one segment; ``steady.size_run`` sets the warm-up). A request is
  *measured* when it arrives inside its segment's window;
* per phase: log-binned histograms of TTFT and TPOT of the measured requests (``LogHistogram``:
  2,000 bins per factor e, so a percentile read at its bin's centre is within 0.025 % of the
  exact order statistic), their count and how many meet the SLO targets;
* per window: Little's law — L = ∫N dt / span, the time-average number of requests in the
  system (every request's [arrival, completion] overlap with the window, requests still in
  flight when the run stops counted up to the stop), λ = arrivals in the window / span,
  W = mean time in the system of the measured requests — and completions, output tokens and
  decode time (each request's [first token, completion] overlap) inside the window;
* a sample of N(t), the requests in the system, and of the decode batch (Σ over instances of
  the requests decoding) on a fixed time grid (``SAMPLES`` per expected run), from which
  ``growth`` measures how fast the system fills — the least-squares slope of N over a window
  divided by the window's arrival rate (0 in steady state; 1 − capacity/rate when the queue
  grows without bound) — and the mean decode batch over a window is read (a preempted
  request waiting for its recompute is in the system but not in the batch).

TTFT = first token − arrival + the engine's per-request overhead (the analytic model adds the
same constant). TPOT = (completion − first token)/(O − 1) for O ≥ 2 output tokens.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from advisor.core.simulate.arrivals import Batch

FLUSH = 16_384
"""Completed requests buffered before they are folded into the accumulators."""
BINS_PER_E = 2000.0
"""Histogram resolution: bins per factor e (0.05 % wide)."""
HIST_FLOOR_MS = 1e-3
"""Values below this (ms) share the first bin."""
SAMPLES = 2048
"""Samples of N(t) per expected run duration."""


class LogHistogram:
    """Counts of positive values in logarithmic bins; the bin array spans the bins seen."""

    __slots__ = ("counts", "lo", "n")

    def __init__(self) -> None:
        self.lo = 0
        self.counts = np.zeros(0, dtype=np.int64)
        self.n = 0

    def add(self, values_ms: np.ndarray) -> None:
        """Count ``values_ms`` (finite, any sign; non-positive go to the first bin)."""
        if values_ms.size == 0:
            return
        v = np.maximum(values_ms, HIST_FLOOR_MS)
        bins = np.floor(np.log(v / HIST_FLOOR_MS) * BINS_PER_E).astype(np.int64)
        lo, hi = int(bins.min()), int(bins.max())
        if self.counts.size == 0:
            self.lo = lo
            self.counts = np.zeros(hi - lo + 1, dtype=np.int64)
        else:
            new_lo = min(lo, self.lo)
            new_hi = max(hi, self.lo + self.counts.size - 1)
            if new_lo < self.lo or new_hi >= self.lo + self.counts.size:
                grown = np.zeros(new_hi - new_lo + 1, dtype=np.int64)
                grown[self.lo - new_lo:self.lo - new_lo + self.counts.size] = self.counts
                self.counts, self.lo = grown, new_lo
        self.counts += np.bincount(bins - self.lo, minlength=self.counts.size)
        self.n += int(values_ms.size)

    def quantile(self, q: float) -> float | None:
        """The q-quantile (0 ≤ q ≤ 1) read at its bin's centre, ms; None when empty.

        The order statistic of rank q·(n − 1) (0-based), as ``numpy.percentile`` ranks."""
        if self.n == 0:
            return None
        rank = q * (self.n - 1)
        idx = int(np.searchsorted(np.cumsum(self.counts), math.floor(rank) + 1, side="left"))
        idx = min(idx, self.counts.size - 1)
        return HIST_FLOOR_MS * math.exp((self.lo + idx + 0.5) / BINS_PER_E)


@dataclass(frozen=True)
class LittleCheck:
    """Little's law over measurement windows: L against λ·W."""

    window_s: float
    """Total length of the windows."""
    mean_in_system: float
    """L: time-average number of requests in the system over the windows."""
    arrival_rate_rps: float
    """λ: arrivals in the windows / their length."""
    mean_time_in_system_s: float
    """W: mean time in the system of the requests arriving in the windows (completed)."""

    @property
    def relative_error(self) -> float:
        """|L − λ·W| / L (0 for an empty window)."""
        lw = self.arrival_rate_rps * self.mean_time_in_system_s
        if self.mean_in_system <= 0.0:
            return 0.0 if lw <= 0.0 else 1.0
        return abs(self.mean_in_system - lw) / self.mean_in_system


@dataclass(frozen=True, kw_only=True)
class WindowFigures:
    """What the recorder measured over one phase's windows (or the whole run's)."""

    warmup_s: float
    measured_s: float
    """Total length of the measurement windows."""
    arrivals: int
    """Requests arriving in the windows."""
    completed: int
    """Of those, completed before the run stopped."""
    ttft: LogHistogram
    tpot: LogHistogram
    good: int
    """Completed measured requests meeting every SLO target."""
    completions_in_window: int
    output_tokens_in_window: float
    decode_seconds_in_window: float
    """Σ over requests of [first token, completion] inside the windows."""
    mean_decode_batch: float | None
    """Time-average of the pool's decode batch over the windows (samples; None without)."""
    little: LittleCheck
    growth: float | None
    """Least-squares slope of the requests in the system over the windows / arrival rate
    (None with fewer than 8 samples in the windows)."""
    late_growth: float | None
    """The same over the second half of the windows."""


class Recorder:
    """In-flight request data, completion buffers and the accumulators (module docstring)."""

    def __init__(self, segment_phase: tuple[int, ...], phases: int,
                 warmup_s: list[float], overhead_s: float, ttft_slo_ms: float | None,
                 tpot_slo_ms: float | None, expected_duration_s: float,
                 bounds_s: tuple[tuple[float, float], ...] | None = None) -> None:
        nseg = len(segment_phase)
        self.seg_phase = np.asarray(segment_phase, dtype=np.int64)
        self.phases = phases
        self.warmup_s = [max(0.0, float(w)) for w in warmup_s]
        self.overhead_s = overhead_s
        self.ttft_slo_ms = ttft_slo_ms
        self.tpot_slo_ms = tpot_slo_ms
        # in-flight request data
        self.A: dict[int, float] = {}
        self.S: dict[int, int] = {}
        self.O: dict[int, int] = {}
        self.G: dict[int, int] = {}
        self.F: dict[int, float] = {}
        self._buf: list[tuple[float, float, float, int, int]] = []
        self.completed = 0
        # segments
        self.start = [math.nan] * nseg
        self.last = [math.nan] * nseg
        self.closed = [False] * nseg
        self.known_bounds = bounds_s is not None
        if bounds_s is not None:
            for s, (b0, b1) in enumerate(bounds_s):
                self.start[s], self.last[s], self.closed[s] = float(b0), float(b1), True
        self.arrivals_total = np.zeros(nseg, dtype=np.int64)
        self.arrivals_in = np.zeros(nseg, dtype=np.int64)
        self.area = np.zeros(nseg)
        self.w_sum = np.zeros(nseg)
        self.w_n = np.zeros(nseg, dtype=np.int64)
        self.done_in = np.zeros(nseg, dtype=np.int64)
        self.tokens_in = np.zeros(nseg)
        self.decode_in = np.zeros(nseg)
        self.ttft = [LogHistogram() for _ in range(phases)]
        self.tpot = [LogHistogram() for _ in range(phases)]
        self.good = np.zeros(phases, dtype=np.int64)
        self.ttft_all = LogHistogram()
        self.tpot_all = LogHistogram()
        self.good_all = 0
        # samples of N(t)
        self.sample_dt = max(float(expected_duration_s), 1e-9) / SAMPLES
        self.next_sample = 0.0
        self.sample_t: list[float] = []
        self.sample_n: list[int] = []
        self.sample_b: list[int] = []
        self.batch_probe: Callable[[], int] | None = None
        """The pool's decode batch now (set by the event loop)."""
        self.end_s = 0.0

    # ------------------------------------------------------------------ windows
    def window(self, seg: int) -> tuple[float, float]:
        """[w0, w1] of a segment; w1 = inf while arrivals may still come."""
        w0 = self.start[seg] + self.warmup_s[seg]
        w1 = self.last[seg] if self.closed[seg] else math.inf
        return w0, w1

    def on_batch(self, batch: Batch) -> None:
        """Note the segments' first and last arrivals and the arrivals in their windows."""
        segs = batch.segment
        times = batch.arrival_s
        present = np.unique(segs)
        top = int(present.max())
        if not self.known_bounds:
            for s in range(top):
                self.closed[s] = True
        for s in present.tolist():
            t = times[segs == s]
            if math.isnan(self.start[s]):
                self.start[s] = float(t[0])
            if not self.known_bounds:
                self.last[s] = float(t[-1])
            w0, w1 = self.window(s)
            self.arrivals_total[s] += t.size
            self.arrivals_in[s] += int(((t >= w0) & (t <= w1)).sum())

    def close_all(self) -> None:
        """No more arrivals: every segment's window is final."""
        for s in range(len(self.closed)):
            self.closed[s] = True

    # ------------------------------------------------------------------ requests
    def done(self, rid: int, t: float) -> None:
        """Request ``rid`` completed at ``t`` (its first token is in ``F``)."""
        self._buf.append((self.A.pop(rid), self.F.pop(rid), t, self.O.pop(rid), self.G.pop(rid)))
        del self.S[rid]
        if len(self._buf) >= FLUSH:
            self.flush()

    def take_sample(self, t: float) -> None:
        """Record the requests in the system at ``t`` (called when ``t ≥ next_sample``)."""
        self.sample_t.append(t)
        self.sample_n.append(len(self.A))
        self.sample_b.append(self.batch_probe() if self.batch_probe is not None else 0)
        steps = math.floor((t - self.next_sample) / self.sample_dt) + 1
        self.next_sample += steps * self.sample_dt

    def flush(self) -> None:
        """Fold the buffered completions into the accumulators."""
        if not self._buf:
            return
        arr = np.asarray(self._buf, dtype=float)
        self._buf = []
        self.completed += arr.shape[0]
        a, f, d, o = arr[:, 0], arr[:, 1], arr[:, 2], arr[:, 3]
        g = arr[:, 4].astype(np.int64)
        self._fold_windows(a, f, d, o, g, finished=True)
        ttft = (f - a + self.overhead_s) * 1000.0
        multi = o > 1
        tpot = np.full(a.size, np.nan)
        tpot[multi] = (d[multi] - f[multi]) / (o[multi] - 1.0) * 1000.0
        w0 = np.array([self.window(s)[0] for s in range(len(self.start))])
        w1 = np.array([self.window(s)[1] for s in range(len(self.start))])
        measured = (a >= w0[g]) & (a <= w1[g])
        nseg = len(self.start)
        self.w_sum += np.bincount(g[measured], weights=(d - a)[measured], minlength=nseg)
        self.w_n += np.bincount(g[measured], minlength=nseg)
        ok = np.ones(a.size, dtype=bool)
        if self.ttft_slo_ms is not None:
            ok &= ttft <= self.ttft_slo_ms
        if self.tpot_slo_ms is not None:
            ok &= ~(tpot > self.tpot_slo_ms)
        phase = self.seg_phase[g]
        for p in np.unique(phase[measured]).tolist():
            sel = measured & (phase == p)
            self.ttft[p].add(ttft[sel])
            tp = tpot[sel & multi]
            self.tpot[p].add(tp)
            self.good[p] += int((ok & sel).sum())
        self.ttft_all.add(ttft[measured])
        self.tpot_all.add(tpot[measured & multi])
        self.good_all += int((ok & measured).sum())

    def _fold_windows(self, a: np.ndarray, f: np.ndarray, d: np.ndarray, o: np.ndarray,
                      g: np.ndarray, finished: bool) -> None:
        """Add the requests' overlaps with every window they touch (``d`` = their completion,
        or the stop time for requests still in flight)."""
        if a.size == 0:
            return
        lo_a, hi_d = float(a.min()), float(d.max())
        multi = o > 1
        has_first = ~np.isnan(f)
        for s in range(len(self.start)):
            if math.isnan(self.start[s]):
                continue
            w0, w1 = self.window(s)
            if w0 > hi_d or w1 < lo_a or w1 < w0:
                continue
            self.area[s] += float(np.clip(np.minimum(d, w1) - np.maximum(a, w0), 0.0, None).sum())
            dec = multi & has_first
            if dec.any():
                self.decode_in[s] += float(np.clip(np.minimum(d[dec], w1)
                                                   - np.maximum(f[dec], w0), 0.0, None).sum())
            if finished:
                inside = (d >= w0) & (d < w1)
                self.done_in[s] += int(inside.sum())
                self.tokens_in[s] += float(o[inside].sum())

    def finish(self, t_end: float) -> None:
        """The run stopped at ``t_end``: flush, and count the requests still in flight up to
        it (their residence is unknown; they stay out of W and the percentiles)."""
        self.flush()
        self.end_s = t_end
        if self.A:
            rids = list(self.A)
            a = np.array([self.A[r] for r in rids])
            f = np.array([self.F.get(r, math.nan) for r in rids])
            o = np.array([self.O[r] for r in rids], dtype=float)
            g = np.array([self.G[r] for r in rids], dtype=np.int64)
            self._fold_windows(a, f, np.full(a.size, t_end), o, g, finished=False)

    @property
    def in_flight(self) -> int:
        """Requests in the system now."""
        return len(self.A)

    # ------------------------------------------------------------------ growth
    def growth(self, segs: list[int], now: float | None = None) -> tuple[float | None,
                                                                        float | None]:
        """(growth over the windows of ``segs``, growth over their second half); see the
        module docstring. ``now`` limits open windows (during the run)."""
        t = np.asarray(self.sample_t)
        n = np.asarray(self.sample_n, dtype=float)
        if t.size == 0:
            return None, None
        full: list[tuple[np.ndarray, np.ndarray]] = []
        late: list[tuple[np.ndarray, np.ndarray]] = []
        arrivals = 0
        span = 0.0
        for s in segs:
            if math.isnan(self.start[s]):
                continue
            w0, w1 = self.window(s)
            top = min(w1, now if now is not None else self.end_s or w1)
            if top <= w0:
                continue
            sel = (t >= w0) & (t <= top)
            full.append((t[sel], n[sel]))
            mid = w0 + 0.5 * (top - w0)
            late.append((t[sel & (t >= mid)], n[sel & (t >= mid)]))
            arrivals += int(self.arrivals_in[s])
            span += top - w0
        if not full or span <= 0 or arrivals <= 0:
            return None, None
        rate = arrivals / span
        return _slope(full, rate), _slope(late, rate)

    def figures(self, phase: int | None) -> WindowFigures:
        """The measured figures of a phase (None: every segment, the whole run)."""
        segs = [s for s in range(len(self.start))
                if phase is None or int(self.seg_phase[s]) == phase]
        spans, warm = [], 0.0
        for s in segs:
            if math.isnan(self.start[s]):
                spans.append(0.0)
                continue
            w0, w1 = self.window(s)
            spans.append(max(0.0, min(w1, self.last[s]) - w0))
            warm = max(warm, self.warmup_s[s])
        idx = np.asarray(segs, dtype=np.int64)
        span = float(sum(spans))
        arrivals = int(self.arrivals_in[idx].sum()) if segs else 0
        completed = int(self.w_n[idx].sum()) if segs else 0
        w_sum = float(self.w_sum[idx].sum()) if segs else 0.0
        area = float(self.area[idx].sum()) if segs else 0.0
        safe = max(span, 1e-12)
        little = LittleCheck(window_s=span, mean_in_system=area / safe if span > 0 else 0.0,
                             arrival_rate_rps=arrivals / safe if span > 0 else 0.0,
                             mean_time_in_system_s=w_sum / completed if completed else 0.0)
        growth, late = self.growth(segs)
        batch = self._mean_batch(segs)
        if phase is None:
            ttft, tpot, good = self.ttft_all, self.tpot_all, self.good_all
        else:
            ttft, tpot, good = self.ttft[phase], self.tpot[phase], int(self.good[phase])
        return WindowFigures(
            warmup_s=warm, measured_s=span, arrivals=arrivals, completed=completed,
            ttft=ttft, tpot=tpot, good=good,
            completions_in_window=int(self.done_in[idx].sum()) if segs else 0,
            output_tokens_in_window=float(self.tokens_in[idx].sum()) if segs else 0.0,
            decode_seconds_in_window=float(self.decode_in[idx].sum()) if segs else 0.0,
            mean_decode_batch=batch, little=little, growth=growth, late_growth=late)


    def _mean_batch(self, segs: list[int]) -> float | None:
        """Mean sampled decode batch inside the windows of ``segs``."""
        t = np.asarray(self.sample_t)
        b = np.asarray(self.sample_b, dtype=float)
        sel = np.zeros(t.size, dtype=bool)
        for s in segs:
            if math.isnan(self.start[s]):
                continue
            w0, w1 = self.window(s)
            sel |= (t >= w0) & (t <= w1)
        return float(b[sel].mean()) if sel.sum() >= 8 else None


def _slope(parts: list[tuple[np.ndarray, np.ndarray]], rate: float) -> float | None:
    """Pooled least-squares slope of N(t) over several windows (each centred on its own
    means), divided by ``rate``; None with fewer than 8 samples."""
    sxx = sxy = 0.0
    count = 0
    for t, n in parts:
        if t.size < 2:
            continue
        tc = t - t.mean()
        sxx += float((tc * tc).sum())
        sxy += float((tc * (n - n.mean())).sum())
        count += int(t.size)
    if count < 8 or sxx <= 0.0 or rate <= 0.0:
        return None
    return sxy / sxx / rate
