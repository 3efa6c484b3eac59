"""What ``fit`` measures in a request log (``advisor.core.trace_fit``): frozen results."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from advisor.core.trace_timing import Burstiness, IdlePeriods, Quantisation


@dataclass(frozen=True, kw_only=True)
class LengthSummary:
    """Statistics of one length (tokens)."""

    mean: float
    p50: float
    p95: float
    max: float
    count: int


@dataclass(frozen=True)
class GoodnessOfFit:
    """KS distances of the fitted distributions to the log (``trace_gof``)."""

    prompt_ks: float
    output_ks: float
    gaps_ks: float | None
    """None with coarse timestamps or too few gaps."""
    length_correlation: float | None
    """Spearman's ρ between prompt and output lengths."""


@dataclass(frozen=True, kw_only=True)
class FittedPhase:
    """One phase found in the log."""

    name: str
    share: float
    """Its stretches' busy time over the log's busy time."""
    duration_s: float
    """Busy seconds of its stretches."""
    requests: int
    rate_rps: float
    burstiness: float
    """The CV written (``detail`` says how it was measured)."""
    gaps: int
    prompt: LengthSummary
    output: LengthSummary
    prefix_reuse: float | None
    """Share of prompt tokens that are a prefix seen earlier (None without hash ids)."""
    stretches: tuple[tuple[float, float], ...]
    """(start, end) seconds from the log's first request."""
    detail: Burstiness
    fit: GoodnessOfFit


@dataclass(frozen=True, eq=False, kw_only=True)
class FittedTraffic:
    """The fitted traffic of a log."""

    requests: int
    duration_s: float
    """First to last request."""
    rate_rps: float
    """Requests per busy second (idle gaps cut out)."""
    burstiness: float
    """CV inside busy periods (as the phases measure it)."""
    prompt: LengthSummary
    output: LengthSummary
    prefix_reuse: float | None
    prefix_block_reuse: float | None
    """Share of hash blocks seen earlier."""
    block_tokens: int | None
    phases: tuple[FittedPhase, ...]
    segment: np.ndarray
    """Replay segment per request: a stretch cut at the idle gaps inside it."""
    segment_phase: tuple[int, ...]
    segment_bounds_s: tuple[tuple[float, float], ...]
    quantisation: Quantisation
    idle: IdlePeriods
    span_rate_rps: float
    """Requests over the whole span (idle periods included)."""
    span_burstiness: float
    """CV of every gap as logged (idle gaps included)."""
    burst_detail: Burstiness
    min_phase_s: float
    phase_tests: tuple[str, ...]
    """What decided each split (``rate``, ``prompt``, ``output``)."""
    time_scale: float = 1.0
    """The factor the log's clock was multiplied by."""
    time_unit_s: float | None = None
    """The unit of the log's time field (0.001: milliseconds), when it has one."""
    notes: tuple[str, ...] = field(default=())
    limits: tuple[str, ...] = field(default=())
    """What the workload format cannot represent, with the figures (``trace_gof``)."""
