"""Phases of a request log: stretches whose arrival rate or request mix differ, kept only
where a test on the data says they differ.

Pure numpy (scipy's two-sample Anderson–Darling test, imported when a split is tested) on the
log's *busy clock* (``trace_timing.busy_clock``: idle gaps cut out), so idle periods are not
phases.

**Candidates** come from binary segmentation (Scott & Knott, Biometrics 30(3), 1974; Killick
& Eckley, "changepoint: An R Package for Changepoint Analysis", J. Stat. Softw. 58(3), 2014,
§2) on a cost that adds

* the arrival counts: a Poisson process with rate C/D on each stretch (C requests over D
  seconds, log-likelihood C·ln(C/D) − C), divided by the dispersion φ of bursty arrivals
  (counts of a renewal process of CV c vary c² times as much as Poisson counts; φ = max(c², ¼)
  with c the median CV of the gaps within ``BINS`` equal time bins, which a rate step does not
  inflate, or the caller's estimate for quantised timestamps);
* the mix: Gaussian log-likelihoods of ln(prompt) and ln(output) around each stretch's mean,
  with the median within-bin variance.

**Tests.** A candidate split at request k of a stretch [a, b) is kept only when

* each side holds at least ``MIN_SEGMENT_REQUESTS`` requests and lasts at least the
  minimum phase length (``min_phase_s`` of busy time, default ``MIN_PHASE_S``);
* the penalised likelihood ratio of the whole cost exceeds ``PENALTY`` · ln(n) (several times
  the Bayesian information criterion's penalty: real logs drift), and
* the rate differs — the rate term alone exceeds that penalty (a change-point test on the
  overdispersed Poisson counts) and the rates differ by ``MIN_RATE_STEP`` — **or** a length
  differs — the two-sample Anderson–Darling test (Scholz & Stephens, "K-Sample
  Anderson–Darling Tests", JASA 82(399), 1987; ``scipy.stats.anderson_ksamp``) rejects one
  population at ``ALPHA`` on ln(prompt) or ln(output), and its geometric mean moves by
  ``MIN_MIX_STEP``.

Stretches are then grouped into phases: a stretch joins the first phase it does not differ
from by the same rule (rates compared by a two-rate z test with the dispersion φ, since the
stretches are given rather than searched; lengths by the Anderson–Darling test) — the busy
hours of two days, say; otherwise it starts a new phase.
"""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import dataclass

import numpy as np

from advisor.core.distributions import normal_quantile

BINS = 48
"""Equal time bins for the robust dispersion and variance estimates."""
MIN_SEGMENT_REQUESTS = 200
MIN_PHASE_S = 600.0
"""Default minimum phase length (busy seconds): a swing shorter than ten minutes is load
variation the pool must absorb (its burstiness), not a mix to allocate for — re-allocating
takes minutes (an engine loads its weights and warms up before it serves)."""
MAX_SEGMENTS = 16
PENALTY = 10.0
ALPHA = 0.001
"""Significance level of the length and rate tests (scipy's Anderson–Darling p-value is
floored at 0.001: 'reject' means the statistic is beyond its 0.1 % critical value)."""
MIN_RATE_STEP = math.log(1.2)
"""Smallest rate change that makes a new phase: 20 %."""
MIN_MIX_STEP = math.log(1.2)
"""Smallest change of a mean length (geometric) that makes a new phase: 20 %."""
TESTS_TEXT = (f"a split is kept when the penalised likelihood ratio of rate and mix exceeds "
              f"{PENALTY:g}·ln(n) and either the rate term alone does with a "
              f"{math.expm1(MIN_RATE_STEP) * 100:.0f} % rate step, or a two-sample "
              f"Anderson–Darling test rejects one length population at {ALPHA:g} with a "
              f"{math.expm1(MIN_MIX_STEP) * 100:.0f} % step of its geometric mean")
"""The rule in words (the fit's report)."""


@dataclass(frozen=True)
class Segmentation:
    """Where the stretches start and which phase each belongs to."""

    starts: tuple[int, ...]
    """First request of every stretch (0 first)."""
    phase_of: tuple[int, ...]
    """Phase index of every stretch."""
    dispersion: float
    """φ used for the rate tests."""
    tests: tuple[str, ...]
    """What decided each kept split, in the order found (``rate``, ``prompt``, ``output``)."""


def _robust_scales(t: np.ndarray, lx: np.ndarray, ly: np.ndarray) -> tuple[float, float, float]:
    """(dispersion φ, var ln prompt, var ln output): medians over equal time bins."""
    span = float(t[-1] - t[0])
    edges = t[0] + span * np.arange(BINS + 1) / BINS
    idx = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, BINS - 1)
    cvs, vx, vy = [], [], []
    for b in range(BINS):
        sel = idx == b
        if sel.sum() < 20:
            continue
        g = np.diff(t[sel])
        if g.size >= 10 and g.mean() > 0:
            cvs.append(float(g.std() / g.mean()))
        vx.append(float(lx[sel].var()))
        vy.append(float(ly[sel].var()))
    cv = float(np.median(cvs)) if cvs else 1.0
    var_x = float(np.median(vx)) if vx else float(lx.var())
    var_y = float(np.median(vy)) if vy else float(ly.var())
    return max(cv * cv, 0.25), max(var_x, 1e-4), max(var_y, 1e-4)


class _Cost:
    """Prefix sums for the segment log-likelihood (module docstring)."""

    def __init__(self, t: np.ndarray, lx: np.ndarray, ly: np.ndarray, phi: float, vx: float,
                 vy: float) -> None:
        self.t = t
        self.n = t.size
        self.cx = np.concatenate(([0.0], np.cumsum(lx)))
        self.cx2 = np.concatenate(([0.0], np.cumsum(lx * lx)))
        self.cy = np.concatenate(([0.0], np.cumsum(ly)))
        self.cy2 = np.concatenate(([0.0], np.cumsum(ly * ly)))
        self.phi, self.vx, self.vy = phi, vx, vy

    def end_time(self, b: np.ndarray | int) -> np.ndarray:
        """A stretch [a, b) ends where request b arrives (the last one at the log's end)."""
        end: np.ndarray = self.t[np.minimum(np.asarray(b), self.n - 1)]
        return end

    def duration(self, a: np.ndarray | int, b: np.ndarray | int) -> np.ndarray:
        d: np.ndarray = np.maximum(self.end_time(b) - self.t[np.asarray(a)], 1e-9)
        return d

    def rate_loglik(self, a: np.ndarray | int, b: np.ndarray | int) -> np.ndarray:
        c = (np.asarray(b) - np.asarray(a)).astype(float)
        out: np.ndarray = (c * np.log(np.maximum(c, 1e-12) / self.duration(a, b)) - c) / self.phi
        return out

    def loglik(self, a: np.ndarray | int, b: np.ndarray | int) -> np.ndarray:
        a = np.asarray(a)
        b = np.asarray(b)
        c = np.maximum((b - a).astype(float), 1.0)
        sx, sx2 = self.cx[b] - self.cx[a], self.cx2[b] - self.cx2[a]
        sy, sy2 = self.cy[b] - self.cy[a], self.cy2[b] - self.cy2[a]
        sse_x = sx2 - sx * sx / c
        sse_y = sy2 - sy * sy / c
        out: np.ndarray = (self.rate_loglik(a, b) - sse_x / (2 * self.vx)
                           - sse_y / (2 * self.vy))
        return out

    def stats(self, a: int, b: int) -> tuple[float, float, float]:
        """(ln rate, mean ln prompt, mean ln output) of [a, b)."""
        c = b - a
        d = float(self.duration(a, b))
        return (math.log(c / d), (self.cx[b] - self.cx[a]) / c, (self.cy[b] - self.cy[a]) / c)


def lengths_differ(x1: np.ndarray, x2: np.ndarray) -> bool:
    """The two-sample Anderson–Darling test rejects one population at ``ALPHA``."""
    from scipy import stats

    if x1.size < 2 or x2.size < 2 or (np.ptp(x1) == 0 and np.ptp(x2) == 0
                                      and x1[0] == x2[0]):
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns when it floors or caps the p-value
        result = stats.anderson_ksamp([x1, x2])
    return bool(result.pvalue <= ALPHA)


def rates_differ(c1: float, d1: float, c2: float, d2: float, phi: float) -> bool:
    """Two given stretches' rates differ: |r₁ − r₂| / √(φ·r̂·(1/D₁ + 1/D₂)) beyond the
    two-sided ``ALPHA`` quantile (r̂ the pooled rate; overdispersed Poisson counts)."""
    pooled = (c1 + c2) / (d1 + d2)
    if pooled <= 0:
        return False
    z = abs(c1 / d1 - c2 / d2) / math.sqrt(phi * pooled * (1.0 / d1 + 1.0 / d2))
    return z > normal_quantile(1.0 - ALPHA / 2.0)


class _Segmenter:
    def __init__(self, t: np.ndarray, prompt: np.ndarray, output: np.ndarray,
                 dispersion: float | None, min_phase_s: float) -> None:
        self.t = t
        self.lx = np.log(np.maximum(prompt, 1).astype(float))
        self.ly = np.log(np.maximum(output, 1).astype(float))
        phi, vx, vy = _robust_scales(t, self.lx, self.ly)
        if dispersion is not None:
            phi = max(dispersion, 0.25)
        self.cost = _Cost(t, self.lx, self.ly, phi, vx, vy)
        self.threshold = PENALTY * math.log(t.size)
        self.min_phase_s = min_phase_s

    def candidate(self, a: int, b: int) -> tuple[float, int] | None:
        """The best split of [a, b) that leaves both sides long enough (None: none does)."""
        m = MIN_SEGMENT_REQUESTS
        if b - a < 2 * m:
            return None
        ks = np.arange(a + m, b - m + 1)
        cost = self.cost
        long_enough = ((cost.duration(a, ks) >= self.min_phase_s)
                       & (cost.duration(ks, b) >= self.min_phase_s))
        if not long_enough.any():
            return None
        gain = cost.loglik(a, ks) + cost.loglik(ks, b) - cost.loglik(a, b)
        gain = np.where(long_enough, gain, -np.inf)
        best = int(np.argmax(gain))
        return float(gain[best]), int(ks[best])

    def decide(self, a: int, k: int, b: int) -> str | None:
        """What makes the split at k differ (``rate``, ``prompt``, ``output``), or None."""
        cost = self.cost
        s1, s2 = cost.stats(a, k), cost.stats(k, b)
        rate_gain = float(cost.rate_loglik(a, k) + cost.rate_loglik(k, b)
                          - cost.rate_loglik(a, b))
        if rate_gain > self.threshold and abs(s1[0] - s2[0]) > MIN_RATE_STEP:
            return "rate"
        for name, lx, i in (("prompt", self.lx, 1), ("output", self.ly, 2)):
            if abs(s1[i] - s2[i]) > MIN_MIX_STEP and lengths_differ(lx[a:k], lx[k:b]):
                return name
        return None

    def same_phase(self, first: list[tuple[int, int]], second: tuple[int, int]) -> bool:
        """Whether a stretch does not differ from a phase's stretches (module docstring)."""
        cost = self.cost
        a2, b2 = second
        c1 = float(sum(b - a for a, b in first))
        d1 = float(sum(float(cost.duration(a, b)) for a, b in first))
        c2, d2 = float(b2 - a2), float(cost.duration(a2, b2))
        if (abs(math.log((c1 / d1) / (c2 / d2))) > MIN_RATE_STEP
                and rates_differ(c1, d1, c2, d2, cost.phi)):
            return False
        for lx in (self.lx, self.ly):
            x1 = np.concatenate([lx[a:b] for a, b in first])
            x2 = lx[a2:b2]
            if abs(float(x1.mean() - x2.mean())) > MIN_MIX_STEP and lengths_differ(x1, x2):
                return False
        return True


def segment(t: np.ndarray, prompt: np.ndarray, output: np.ndarray,
            dispersion: float | None = None, min_phase_s: float = MIN_PHASE_S) -> Segmentation:
    """Stretches and phases of a log (arrays in arrival order, ``t`` the busy clock; module
    docstring). ``dispersion`` replaces the binned estimate of φ (quantised timestamps)."""
    n = t.size
    if n < 2 * MIN_SEGMENT_REQUESTS or t[-1] <= t[0]:
        return Segmentation((0,), (0,), 1.0, ())
    seg = _Segmenter(t, prompt, output, dispersion, min_phase_s)
    bounds = [0, n]
    found: dict[tuple[int, int], tuple[float, int] | None] = {}
    verdicts: dict[tuple[int, int, int], str | None] = {}
    tests: list[str] = []
    while len(bounds) - 1 < MAX_SEGMENTS:
        best: tuple[float, int, str] | None = None
        for a, b in itertools.pairwise(bounds):
            if (a, b) not in found:
                found[(a, b)] = seg.candidate(a, b)
            cand = found[(a, b)]
            if cand is None or cand[0] <= seg.threshold or (best is not None
                                                             and cand[0] <= best[0]):
                continue
            key = (a, cand[1], b)
            if key not in verdicts:
                verdicts[key] = seg.decide(a, cand[1], b)
            why = verdicts[key]
            if why is not None:
                best = (cand[0], cand[1], why)
        if best is None:
            break
        bounds = sorted({*bounds, best[1]})
        tests.append(best[2])
    stretches = list(itertools.pairwise(bounds))
    groups: list[list[tuple[int, int]]] = []
    phase_of: list[int] = []
    for st in stretches:
        for p, members in enumerate(groups):
            if seg.same_phase(members, st):
                phase_of.append(p)
                members.append(st)
                break
        else:
            phase_of.append(len(groups))
            groups.append([st])
    return Segmentation(tuple(bounds[:-1]), tuple(phase_of), seg.cost.phi, tuple(tests))
