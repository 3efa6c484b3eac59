"""What ``simulate`` returns: frozen results, each simulated figure beside the analytic one."""

from __future__ import annotations

from dataclasses import dataclass

from advisor.core.scenario import RouterPolicy
from advisor.core.simulate.plan import Mode, Plan
from advisor.core.simulate.recorder import LittleCheck
from advisor.core.simulate.steady import SteadyState


@dataclass(frozen=True)
class Compared:
    """A simulated figure beside the analytic one."""

    simulated: float | None
    analytic: float | None

    @property
    def relative_diff(self) -> float | None:
        """(analytic − simulated) / simulated; None when either is missing."""
        if self.simulated is None or self.analytic is None or self.simulated == 0:
            return None
        return (self.analytic - self.simulated) / self.simulated


@dataclass(frozen=True, kw_only=True)
class PhaseStats:
    """Figures for one phase (or the whole run)."""

    name: str
    requests: int
    """Requests measured (arrived in the measurement windows and completed)."""
    rate_rps: float
    """Offered rate."""
    ttft_ms: tuple[Compared, Compared, Compared]
    """p50, p95, p99."""
    tpot_ms: tuple[Compared, Compared, Compared]
    goodput_share: float | None
    """Share of measured requests meeting every SLO target (None without targets, and when
    the phase did not reach steady state)."""
    throughput_rps: Compared
    """Completions per second over the measurement windows; analytic = the offered rate
    (None when the model calls the point overloaded)."""
    output_tokens_per_s: float
    analytic_overloaded: bool | None
    decode_batch: Compared
    """Mean decode batch per (decode) instance over the windows: time-average of the
    simulation against the model's fixed point."""
    at_slo_percentile: tuple[Compared, Compared]
    """(TTFT, TPOT) in ms at the SLO's percentile."""
    analytic_meets_slo: bool | None
    """Whether the model predicts the SLO met (None without targets or analytic figures)."""
    steady_state: SteadyState | None
    """None for the whole run of a workload with several phases."""
    little: LittleCheck


@dataclass(frozen=True)
class TokenGaps:
    """Time between consecutive output tokens of the running decodes, ms."""

    p50_ms: float | None
    p99_ms: float | None
    max_ms: float
    decode_step_ms: float
    """A decode-only step at the mean batch and context (the no-interference gap)."""


@dataclass(frozen=True)
class KvCache:
    """The paged KV cache of one (decode) instance, as simulated."""

    capacity_tokens: int
    block_tokens: int
    max_num_seqs: int
    preemptions: int
    """Requests preempted (blocks ran out) and recomputed, whole run."""


@dataclass(frozen=True, kw_only=True)
class SimulationResult:
    """One simulated mode on one plan, beside the analytic prediction for that plan."""

    scenario: str | None
    mode: Mode
    plan: Plan
    gpus: int
    requests: int
    """Requests that arrived in the run."""
    requests_planned: int
    """Requests the run was sized for (or given)."""
    sized: bool
    """Whether the run length came from the workload (no ``requests`` given)."""
    seed: int
    router: RouterPolicy
    """The policy every pool's router ran (and the analytic column assumed)."""
    slo_percentile: float
    ttft_slo_ms: float | None
    tpot_slo_ms: float | None
    phases: tuple[PhaseStats, ...]
    overall: PhaseStats
    """The whole run (analytic figures and steady state only when there is one phase)."""
    reached: bool
    """Every phase reached steady state."""
    stopped: str
    """Why the run stopped before its requests completed ("" when it drained)."""
    gpu_busy_share: float
    """Σ busy GPU-seconds / (GPUs × simulated time)."""
    kv_link_utilization: Compared | None
    """Disaggregated only: link busy time / (links × simulated time) against the model's U."""
    kv_cache: KvCache
    token_gaps: TokenGaps
    little: LittleCheck
    """Over every measurement window."""
    simulated_seconds: float
    steps: int
    step_cache_misses: int
    clipped_requests: int
    """Requests cut to the longest an instance holds (context window and KV cache)."""
    source: str
    """"drawn" (from the workload's distributions) or "trace" (replayed log)."""
