"""The simulated requests: drawn from the workload's phases, or replayed from a log, in chunks.

The event loops never hold the whole run: a *source* hands them requests in arrival order,
``CHUNK`` at a time (:class:`Batch`), and a request's data lives only while it is in flight
(``feed.Feed``), so memory follows the requests in flight, not the requests simulated.

Drawn requests (:class:`DrawnSource`):

* the phases run one after another in the workload's order, phase i with ``counts[i]``
  requests (``simulate`` sizes them, or splits ``--requests`` over them); each phase starts at
  the previous phase's last arrival, so the backlog one phase leaves is served in the next;
* inter-arrival times are gamma with mean 1/rate and coefficient of variation = burstiness
  (shape 1/cv², scale cv²/rate; cv = 1 is Poisson, cv = 0 is a constant gap);
* prompt and output lengths are drawn from the phase's ``LengthDistribution``: lognormal
  (μ, σ) clipped to [1, max] and rounded to whole tokens, or the constant mean when σ = 0.

Everything comes from one ``numpy.random.default_rng(seed)`` in a fixed order (per chunk:
gaps, prompts, outputs), so a seed fixes the requests. Replayed requests
(:class:`ArraySource`) come from arrays already in memory (a loaded log, bounded by the
trace loader's file-size limit).

Each request carries a *segment*: the stretch of the run it belongs to, with its own
measurement window (``recorder``). A drawn phase is one segment; a replayed log has one
segment per stretch between the phase changes found in it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from advisor.core.distributions import LengthDistribution
from advisor.core.scenario import TrafficPhase

CHUNK = 16_384
"""Requests per batch handed to the event loops."""


@dataclass(frozen=True, kw_only=True)
class Batch:
    """Consecutive requests in arrival order (arrays of one length)."""

    first_id: int
    """Request id of the first row; ids are consecutive."""
    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    segment: np.ndarray
    """Segment index per request (``Source.segment_phase`` maps it to a phase)."""

    @property
    def size(self) -> int:
        """Requests in the batch."""
        return int(self.arrival_s.size)


@dataclass(frozen=True, kw_only=True)
class Trace:
    """Requests in arrival order, held whole (tests, replayed logs)."""

    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    phase: np.ndarray
    """Index into ``phase_names`` per request."""
    phase_names: tuple[str, ...]

    @property
    def requests(self) -> int:
        """Number of requests."""
        return int(self.arrival_s.size)


class Source:
    """Requests in arrival order, in batches; the segments they belong to."""

    requests: int
    segment_phase: tuple[int, ...]
    """Phase index of each segment."""
    phase_names: tuple[str, ...]
    segment_bounds_s: tuple[tuple[float, float], ...] | None
    """(start, end) per segment when known before the run (replayed logs); None when the
    segments start and end with their drawn arrivals."""

    def batches(self) -> Iterator[Batch]:  # pragma: no cover - interface
        """The requests, ``CHUNK`` at a time."""
        raise NotImplementedError


def phase_counts(weights: Sequence[float] | np.ndarray, requests: int) -> list[int]:
    """``requests`` split in proportion to ``weights`` (largest remainder; adds up exactly)."""
    w = np.maximum(np.asarray(weights, dtype=float), 0.0)
    if not np.isfinite(w).all() or w.sum() <= 0:
        w = np.ones(len(w))
    exact = w / w.sum() * requests
    counts = np.floor(exact).astype(np.int64)
    order = np.argsort(-(exact - counts), kind="stable")
    for i in order[: requests - int(counts.sum())]:
        counts[i] += 1
    return [int(c) for c in counts]


def interarrival_s(rng: np.random.Generator, rate_rps: float, cv: float, n: int) -> np.ndarray:
    """``n`` gamma inter-arrival gaps with mean 1/rate and coefficient of variation ``cv``."""
    if n <= 0:
        return np.zeros(0)
    if cv <= 1e-9:
        return np.full(n, 1.0 / rate_rps)
    shape = 1.0 / (cv * cv)
    return rng.gamma(shape, 1.0 / (shape * rate_rps), size=n)


def draw_lengths(rng: np.random.Generator, dist: LengthDistribution, n: int) -> np.ndarray:
    """``n`` whole-token lengths from ``dist`` (at least 1, at most ``max_tokens``)."""
    if dist.sigma <= 0.0:
        values = np.full(n, dist.mean)
    else:
        values = rng.lognormal(dist.mu, dist.sigma, size=n)
    if dist.max_tokens is not None:
        values = np.minimum(values, dist.max_tokens)
    lengths: np.ndarray = np.maximum(np.rint(values), 1.0).astype(np.int64)
    return lengths


class DrawnSource(Source):
    """Requests drawn from ``phases``, phase i with ``counts[i]`` requests (one segment each)."""

    def __init__(self, phases: tuple[TrafficPhase, ...], counts: list[int], seed: int,
                 chunk: int = CHUNK) -> None:
        if len(counts) != len(phases):
            raise ValueError("one request count per phase")
        self.phases = phases
        self.counts = [max(0, int(c)) for c in counts]
        self.seed = seed
        self.chunk = max(1, int(chunk))
        self.requests = sum(self.counts)
        self.segment_phase = tuple(range(len(phases)))
        self.phase_names = tuple(p.name for p in phases)
        self.segment_bounds_s = None

    def batches(self) -> Iterator[Batch]:
        """The requests, phase after phase, ``chunk`` at a time."""
        rng = np.random.default_rng(self.seed)
        start = 0.0
        rid = 0
        for idx, (ph, n) in enumerate(zip(self.phases, self.counts, strict=True)):
            left = n
            while left > 0:
                k = min(left, self.chunk)
                times = start + np.cumsum(interarrival_s(rng, ph.rate_rps, ph.burstiness, k))
                prompts = draw_lengths(rng, ph.prompt_tokens, k)
                outputs = draw_lengths(rng, ph.output_tokens, k)
                yield Batch(first_id=rid, arrival_s=times, prompt_tokens=prompts,
                            output_tokens=outputs, segment=np.full(k, idx, dtype=np.int32))
                start = float(times[-1])
                rid += k
                left -= k


class ArraySource(Source):
    """Requests from a :class:`Trace` held in memory; ``segments`` gives each request's
    segment (default: its phase) with ``segment_phase`` and optional known bounds."""

    def __init__(self, trace: Trace, segments: np.ndarray | None = None,
                 segment_phase: tuple[int, ...] | None = None,
                 segment_bounds_s: tuple[tuple[float, float], ...] | None = None,
                 chunk: int = CHUNK) -> None:
        self.trace = trace
        self.requests = trace.requests
        self.phase_names = trace.phase_names
        if segments is None:
            segments = trace.phase.astype(np.int32)
            segment_phase = tuple(range(len(trace.phase_names)))
        self.segments = np.asarray(segments, dtype=np.int32)
        self.segment_phase = tuple(segment_phase or ())
        self.segment_bounds_s = segment_bounds_s
        self.chunk = max(1, int(chunk))

    def batches(self) -> Iterator[Batch]:
        """The requests, ``chunk`` at a time."""
        tr = self.trace
        for lo in range(0, tr.requests, self.chunk):
            hi = min(lo + self.chunk, tr.requests)
            yield Batch(first_id=lo, arrival_s=tr.arrival_s[lo:hi],
                        prompt_tokens=tr.prompt_tokens[lo:hi],
                        output_tokens=tr.output_tokens[lo:hi], segment=self.segments[lo:hi])


def collect(source: Source) -> Trace:
    """Every request of ``source`` in one :class:`Trace` (tests and small runs only)."""
    parts = list(source.batches())
    seg_phase = np.asarray(source.segment_phase or (0,), dtype=np.int32)
    if not parts:
        empty = np.zeros(0)
        return Trace(arrival_s=empty, prompt_tokens=empty.astype(np.int64),
                     output_tokens=empty.astype(np.int64),
                     phase=empty.astype(np.int16), phase_names=source.phase_names)
    segs = np.concatenate([b.segment for b in parts])
    return Trace(arrival_s=np.concatenate([b.arrival_s for b in parts]),
                 prompt_tokens=np.concatenate([b.prompt_tokens for b in parts]),
                 output_tokens=np.concatenate([b.output_tokens for b in parts]),
                 phase=seg_phase[segs].astype(np.int16), phase_names=source.phase_names)


def share_rate_counts(phases: tuple[TrafficPhase, ...], requests: int) -> list[int]:
    """Requests per phase ∝ share × rate (the number each phase receives in a day)."""
    return phase_counts([max(p.share, 0.0) * max(p.rate_rps, 0.0) for p in phases], requests)


def draw_trace(phases: tuple[TrafficPhase, ...], requests: int, seed: int) -> Trace:
    """The requests of ``phases`` (∝ share × rate) with ``requests`` in total, held whole."""
    return collect(DrawnSource(phases, share_rate_counts(phases, requests), seed))
