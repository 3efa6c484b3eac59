"""Fit the step-time model's efficiency factors to measured serving benchmarks.

Pure: the caller parses the benchmark files (``advisor.loading.bench_results``) and passes
:class:`BenchmarkRun` records plus the instance that served them; nothing here reads files.

**Prediction of one run.** A benchmark drives one serving endpoint (``instances`` identical
engine instances behind it, default 1) at a constant ISL/OSL (the run's means). The run's load
becomes a per-instance arrival rate λ for the colocated model
(:func:`advisor.core.colocated.evaluate_colocated`, chunked with the engine's token budget):

* a finite ``--request-rate`` without a binding concurrency cap: λ = rate, or the model's
  overload boundary when the rate exceeds it (the run is then predicted *saturated*);
* ``--max-concurrency N`` (closed loop): Little's law, N = λ · E2E(λ) with
  E2E = TTFT + (OSL − 1) · TPOT predicted at λ; solved on nested log-spaced grids (λ·E2E is
  non-decreasing in λ), capped by a finite request rate and by the overload boundary;
* an unbounded rate without a cap (everything sent at t = 0) is a **finite batch** (#30): its
  ``completed`` requests at once on the instances (``advisor.core.finite_batch``: the batch's
  median TTFT, mean TPOT and output throughput = completed · OSL / makespan), not a queue.

Predicted metrics are the ones the benchmark tools report: the median TTFT (the model's
TTFT at quantile 0.5; the mean when the file has no median), the mean TPOT (the model's mean
time per output token τ), and the output throughput = completed · OSL / duration, the
duration being completed/λ plus one request's E2E for an open loop (sends end at
num_prompts/rate, then the last request finishes) and completed/λ for a closed loop.

**Fit.** Three factors of :class:`~advisor.core.hardware.EfficiencyFactors` are fitted with
``scipy.optimize.least_squares`` (trust-region reflective, bounded): the prefill compute
efficiency of the precision served, the decode bandwidth efficiency and the per-step overhead.
Where the engine profile keeps a separate KV-read efficiency, it moves in proportion to the
decode bandwidth efficiency (:func:`with_fitted`).
Residuals are log(predicted / measured) of every available metric of every run (TTFT is
left out where the model predicts saturation: its queue then depends on the run's length), plus
a weak prior (weight :data:`PRIOR_WEIGHT`) pulling each factor towards its starting value so
that a factor the runs do not constrain stays where it was. A factor is *constrained* when a
100 % change of it moves the data residuals by at least :data:`MIN_SENSITIVITY` (in log units).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from advisor.core.colocated import ColocatedPoint, evaluate_colocated, rate_upper_bound
from advisor.core.distributions import LengthDistribution
from advisor.core.finite_batch import colocated_batch
from advisor.core.hardware import EfficiencyFactors
from advisor.core.instance import Instance
from advisor.core.memory import plan_memory
from advisor.core.scenario import TrafficPhase

TTFT_QUANTILE = 0.5
"""TTFT is compared as a median (benchmark files always carry one, SB-early included)."""

PRIOR_WEIGHT = 0.01
"""Weight of the log-distance of each factor from its starting value (a tie-breaker)."""

MIN_SENSITIVITY = 0.01
"""Smallest data-residual change (log units) per 100 % change of a factor to call it fitted."""

AT_PEAK = 0.999
"""A fitted efficiency at or above this share of its upper bound (1, the GPU's peak) is at its
bound: shown so in the table and refused as physically impossible (usecases.calibrate)."""

OVERLOAD_PENALTY = 5.0
"""Residual of a metric the model cannot predict at a run's load (e^5 ≈ 150× off)."""

BOUNDS: dict[str, tuple[float, float]] = {
    "prefill_compute_efficiency": (0.02, 1.0),
    "decode_bandwidth_efficiency": (0.02, 1.0),
    "step_overhead_ms": (0.0, 100.0),
    "request_overhead_ms": (0.0, 500.0),
}
"""Bounds of the fitted parameters (efficiencies are fractions; the overhead is in ms)."""

_GRID_POINTS = 48
_GRID_PASSES = 3
_RATE_DECADES = 9.0


@dataclass(frozen=True, kw_only=True)
class BenchmarkRun:
    """One measured benchmark run, reduced to what the model is compared against."""

    label: str
    """Where the run comes from (``file.json`` or ``file.jsonl#3``)."""
    prompt_tokens: float
    """Mean input length (total input tokens / completed requests)."""
    output_tokens: float
    """Mean output length (total output tokens / completed requests)."""
    request_rate_rps: float
    """Offered arrival rate, requests/s; ``math.inf`` when unbounded."""
    max_concurrency: float | None
    """Client-side cap on in-flight requests (None = no cap)."""
    arrival_cv: float
    """Coefficient of variation of inter-arrival gaps (1 = Poisson)."""
    completed: int
    """Requests that finished successfully."""
    ttft_s: float | None
    """Measured TTFT (median, or mean when ``ttft_statistic`` says so), seconds."""
    ttft_statistic: str
    """``median`` or ``mean``."""
    tpot_s: float | None
    """Measured mean TPOT, seconds."""
    output_tokens_per_s: float | None
    """Measured output throughput, tokens/s."""
    mean_concurrency: float | None = None
    """Measured mean number of in-flight requests (used for unbounded bursts)."""

    @property
    def load_label(self) -> str:
        """The load as a person would state it: ``2 req/s``, ``conc 16``, ``burst``."""
        if self.max_concurrency is not None:
            text = f"conc {self.max_concurrency:g}"
            if math.isfinite(self.request_rate_rps):
                text += f" @ {self.request_rate_rps:g} req/s"
            return text
        if math.isfinite(self.request_rate_rps):
            return f"{self.request_rate_rps:g} req/s"
        return "burst"


@dataclass(frozen=True, kw_only=True)
class RunPrediction:
    """The model's numbers for one run under one set of factors."""

    rate_rps: float
    """Predicted per-instance arrival (= completion) rate, requests/s."""
    ttft_s: float | None
    tpot_s: float | None
    output_tokens_per_s: float | None
    """Whole endpoint (all instances)."""
    saturated: bool
    """The load exceeds what the model says the instance can sustain."""


@dataclass(frozen=True, kw_only=True)
class CalibrationResult:
    """Factors before and after the fit, and every run's predictions under both."""

    before: EfficiencyFactors
    after: EfficiencyFactors
    prefill_key: str
    """The prefill efficiency field that was fitted (``..._bf16`` or ``..._fp8``)."""
    constrained: dict[str, bool]
    """Per fitted field: whether the runs pin it down (unconstrained ones stay near the prior)."""
    at_bound: dict[str, bool]
    """Per fitted field: whether the fit stopped at one of :data:`BOUNDS`."""
    runs: tuple[BenchmarkRun, ...]
    predictions_before: tuple[RunPrediction, ...]
    predictions_after: tuple[RunPrediction, ...]
    rms_log_error_before: float
    rms_log_error_after: float
    residual_count: int
    """Data residuals (metrics compared), prior terms excluded."""
    success: bool
    message: str

    @property
    def fitted_fields(self) -> tuple[str, ...]:
        """The four fitted field names of :class:`EfficiencyFactors`."""
        return (self.prefill_key, "decode_bandwidth_efficiency", "step_overhead_s",
                "request_overhead_s")


def prefill_field(instance: Instance) -> str:
    """The efficiency field that governs this instance's prefill (precision and GPU)."""
    if instance.gpu.compute_format(instance.precision) != "bf16":
        return "prefill_compute_efficiency_fp8"
    return "prefill_compute_efficiency_bf16"


def max_sequences_for(instance: Instance, run: BenchmarkRun, memory_fraction: float) -> int:
    """Concurrent sequences the instance holds at the run's lengths (at least 1)."""
    ctx = run.prompt_tokens + run.output_tokens / 2.0
    mem = plan_memory(instance, ctx, run.prompt_tokens + run.output_tokens, memory_fraction)
    return max(mem.max_sequences, 1)


def kv_tokens_for(instance: Instance, run: BenchmarkRun, memory_fraction: float) -> float:
    """Tokens of one instance's KV cache at the run's lengths (the memory plan's budget)."""
    ctx = run.prompt_tokens + run.output_tokens / 2.0
    mem = plan_memory(instance, ctx, run.prompt_tokens + run.output_tokens, memory_fraction)
    return float(mem.max_kv_tokens)


def _phase(run: BenchmarkRun) -> TrafficPhase:
    return TrafficPhase(name=run.label, share=1.0, rate_rps=1.0, burstiness=run.arrival_cv,
                        prompt_tokens=LengthDistribution.constant(max(run.prompt_tokens, 1.0)),
                        output_tokens=LengthDistribution.constant(max(run.output_tokens, 1.0)))


def _e2e(point: ColocatedPoint, osl: float) -> np.ndarray:
    """Predicted end-to-end latency per rate (inf where overloaded)."""
    e2e = np.asarray(point.ttft_q_s, dtype=float) + max(osl - 1.0, 0.0) * np.asarray(
        point.tpot_mean_s, dtype=float)
    return np.where(np.asarray(point.overloaded) | ~np.isfinite(e2e), np.inf, e2e)


def _solve_rate(inst: Instance, seqs: int, phase: TrafficPhase, chunk: float | None,
                osl: float, in_flight: float | None) -> tuple[float, bool]:
    """Per-instance rate where λ·E2E(λ) reaches ``in_flight`` (None: the overload boundary).

    Returns (rate, saturated): saturated when the boundary comes first.
    """
    chunk_arr = None if chunk is None else np.array(float(chunk))
    upper = rate_upper_bound(inst, phase)
    lo, hi = math.log(upper) - _RATE_DECADES * math.log(10.0), math.log(upper)
    g_lo = g_hi = math.inf
    for _ in range(_GRID_PASSES):
        grid = np.exp(np.linspace(lo, hi, _GRID_POINTS))
        point = evaluate_colocated(inst, seqs, phase, grid, chunk_arr, TTFT_QUANTILE)
        g = grid * _e2e(point, osl)
        reached = ~np.isfinite(g) if in_flight is None else g >= in_flight
        if not reached.any():
            return float(grid[-1]), False
        idx = int(np.argmax(reached))
        if idx == 0:
            return float(grid[0]), bool(~np.isfinite(g[0]))
        lo, hi = math.log(grid[idx - 1]), math.log(grid[idx])
        g_lo, g_hi = float(g[idx - 1]), float(g[idx])
    if in_flight is None or not math.isfinite(g_hi):
        return math.exp(lo), in_flight is None or in_flight > g_lo
    share = (in_flight - g_lo) / max(g_hi - g_lo, 1e-300)
    return math.exp(lo + (hi - lo) * min(max(share, 0.0), 1.0)), False


def is_finite_batch(run: BenchmarkRun) -> bool:
    """A run that sent every request at t = 0 (an unbounded rate without a concurrency cap)."""
    return run.max_concurrency is None and not math.isfinite(run.request_rate_rps)


def predict_batch_run(instance: Instance, run: BenchmarkRun, chunk_tokens: int | None,
                      kv_tokens: float, instances: int = 1) -> RunPrediction:
    """A finite-batch run (``is_finite_batch``): its ``completed`` requests sent at once to
    ``instances`` instances (``advisor.core.finite_batch``): the batch's median (or mean)
    TTFT, mean TPOT and output throughput = completed · OSL / makespan."""
    osl = max(run.output_tokens, 1.0)
    prompt = LengthDistribution.constant(max(run.prompt_tokens, 1.0))
    fig = colocated_batch(instance, instances, int(instance.engine.max_num_seqs(instance.gpu)),
                          kv_tokens, run.completed, prompt, LengthDistribution.constant(osl),
                          chunk_tokens, float(instance.model.max_context_tokens), None, 0.5)
    ttft = (fig.ttft_ms[0] if run.ttft_statistic == "median" else fig.ttft_mean_ms) / 1000.0
    return RunPrediction(rate_rps=fig.throughput_rps / instances, ttft_s=ttft,
                         tpot_s=fig.tpot_mean_ms / 1000.0 if osl > 1 else None,
                         output_tokens_per_s=fig.output_tokens_per_s, saturated=False)


def predict_run(instance: Instance, run: BenchmarkRun, chunk_tokens: int | None,
                max_sequences: int, instances: int = 1,
                kv_tokens: float | None = None) -> RunPrediction:
    """The model's TTFT, TPOT and throughput for one run (see the module docstring);
    ``kv_tokens`` (an instance's KV cache) is needed for a finite batch."""
    if is_finite_batch(run) and kv_tokens is not None:
        return predict_batch_run(instance, run, chunk_tokens, kv_tokens, instances)
    phase = _phase(run)
    osl = max(run.output_tokens, 1.0)
    chunk_arr = None if chunk_tokens is None else np.array(float(chunk_tokens))
    per_rate = run.request_rate_rps / instances
    closed = run.max_concurrency is not None or not math.isfinite(per_rate)

    def at(rate: float) -> ColocatedPoint:
        return evaluate_colocated(instance, max_sequences, phase, np.array(rate), chunk_arr,
                                  TTFT_QUANTILE)

    saturated = False
    if closed:
        n = run.max_concurrency if run.max_concurrency is not None else run.mean_concurrency
        n = max(float(n or 1.0), 1e-9) / instances
        rate, saturated = _solve_rate(instance, max_sequences, phase, chunk_tokens, osl, n)
        if math.isfinite(per_rate) and per_rate < rate:
            rate, saturated, closed = per_rate, False, False
    else:
        rate = per_rate
        if bool(at(rate).overloaded):
            rate, saturated = _solve_rate(instance, max_sequences, phase, chunk_tokens, osl,
                                          None)[0], True
    point = at(rate)
    if bool(point.overloaded):
        return RunPrediction(rate_rps=rate, ttft_s=None, tpot_s=None, output_tokens_per_s=None,
                             saturated=True)
    ttft = float(point.ttft_q_s)
    tpot = float(point.tpot_mean_s)
    e2e = ttft + (osl - 1.0) * tpot
    total_rate = rate * instances
    duration = run.completed / total_rate + (0.0 if closed or saturated else e2e)
    throughput = run.completed * osl / duration if duration > 0 else None
    return RunPrediction(rate_rps=rate, ttft_s=ttft, tpot_s=tpot if osl > 1 else None,
                         output_tokens_per_s=throughput, saturated=saturated)


def _log_error(predicted: float | None, measured: float | None) -> float | None:
    """log(predicted / measured); None when nothing is measured; a penalty when unpredicted."""
    if measured is None or measured <= 0:
        return None
    if predicted is None or not math.isfinite(predicted) or predicted <= 0:
        return OVERLOAD_PENALTY
    return math.log(predicted / measured)


def run_residuals(run: BenchmarkRun, pred: RunPrediction) -> list[float]:
    """Fixed-length residuals (TTFT, TPOT, throughput) of one run; 0 where not compared."""
    ttft = None if pred.saturated else _log_error(pred.ttft_s, run.ttft_s)
    tpot = _log_error(pred.tpot_s, run.tpot_s) if run.output_tokens > 1 else None
    thr = _log_error(pred.output_tokens_per_s, run.output_tokens_per_s)
    return [0.0 if r is None else r for r in (ttft, tpot, thr)]


def _compared(run: BenchmarkRun) -> int:
    """How many metrics a run contributes."""
    return (sum(v is not None and v > 0 for v in (run.ttft_s, run.output_tokens_per_s))
            + int(run.tpot_s is not None and run.tpot_s > 0 and run.output_tokens > 1))


def with_factors(instance: Instance, factors: EfficiencyFactors) -> Instance:
    """The same instance under other efficiency factors."""
    return dataclasses.replace(instance, efficiency=factors)


def with_fitted(base: EfficiencyFactors, **values: float) -> EfficiencyFactors:
    """``base`` with fitted values; a new weight-streaming efficiency scales a separate KV-read
    efficiency in proportion (their ratio is the engine profile's: runs of one model cannot
    tell the weight efficiency from the fixed step cost otherwise, both are per step)."""
    updates = dict(values)
    decode = updates.get("decode_bandwidth_efficiency")
    if decode is not None and base.kv_bandwidth_efficiency is not None:
        updates["kv_bandwidth_efficiency"] = min(
            1.0, base.kv_bandwidth_efficiency * decode / base.decode_bandwidth_efficiency)
    return dataclasses.replace(base, **updates)


def _factors(base: EfficiencyFactors, prefill_key: str,
             x: Sequence[float] | np.ndarray) -> EfficiencyFactors:
    return with_fitted(base, **{prefill_key: float(x[0]),
                                "decode_bandwidth_efficiency": float(x[1]),
                                "step_overhead_s": float(x[2]) / 1000.0,
                                "request_overhead_s": float(x[3]) / 1000.0})


def _rms(values: Sequence[float], count: int) -> float:
    return math.sqrt(sum(v * v for v in values) / max(count, 1))


def fit_efficiency(instance: Instance, runs: Sequence[BenchmarkRun], chunk_tokens: int | None,
                   memory_fraction: float, instances: int = 1) -> CalibrationResult:
    """Fit prefill compute efficiency, decode bandwidth efficiency and step overhead.

    ``instance`` carries the starting factors (the GPU profile's, for its engine);
    ``chunk_tokens`` is the engine's token budget (None = unchunked); ``instances`` is how
    many identical instances served each run's endpoint.
    """
    if not runs:
        raise ValueError("no benchmark runs to fit")
    runs = tuple(runs)
    key = prefill_field(instance)
    base = instance.efficiency
    names = ("prefill_compute_efficiency", "decode_bandwidth_efficiency", "step_overhead_ms",
             "request_overhead_ms")
    lower = np.array([BOUNDS[n][0] for n in names])
    upper = np.array([BOUNDS[n][1] for n in names])
    x0 = np.clip([getattr(base, key), base.decode_bandwidth_efficiency,
                  base.step_overhead_s * 1000.0, base.request_overhead_s * 1000.0],
                 lower, upper)
    seqs = [max_sequences_for(instance, run, memory_fraction) for run in runs]
    kv = [kv_tokens_for(instance, run, memory_fraction) for run in runs]
    count = sum(_compared(run) for run in runs)

    def predictions(x: Sequence[float] | np.ndarray) -> list[RunPrediction]:
        inst = with_factors(instance, _factors(base, key, x))
        return [predict_run(inst, run, chunk_tokens, s, instances, v)
                for run, s, v in zip(runs, seqs, kv, strict=True)]

    def data_residuals(x: Sequence[float] | np.ndarray) -> list[float]:
        return [r for run, pred in zip(runs, predictions(x), strict=True)
                for r in run_residuals(run, pred)]

    def residuals(x: np.ndarray) -> np.ndarray:
        prior = [PRIOR_WEIGHT * math.log(x[0] / x0[0]), PRIOR_WEIGHT * math.log(x[1] / x0[1]),
                 PRIOR_WEIGHT * (x[2] - x0[2]) / max(x0[2], 1.0),
                 PRIOR_WEIGHT * (x[3] - x0[3]) / max(x0[3], 1.0)]
        return np.array(data_residuals(x) + prior)

    before = predictions(x0)
    rms_before = _rms(data_residuals(x0), count)
    solution = optimize.least_squares(residuals, x0, bounds=(lower, upper), method="trf",
                                      diff_step=1e-3, x_scale="jac", max_nfev=300)
    x = solution.x
    after = predictions(x)
    jac = np.asarray(solution.jac)[: 3 * len(runs)]
    scale = np.array([x[0], x[1], max(x[2], 1.0), max(x[3], 1.0)])
    sensitivity = np.linalg.norm(jac * scale[None, :], axis=0)
    fields = (key, "decode_bandwidth_efficiency", "step_overhead_s", "request_overhead_s")
    constrained = {f: bool(s >= MIN_SENSITIVITY) for f, s in zip(fields, sensitivity, strict=True)}
    at_bound = {f: bool(min(v - lo, hi - v) <= 1e-6 * max(hi, 1.0)
                        or (not f.endswith("_s") and v >= AT_PEAK * hi))
                for f, v, lo, hi in zip(fields, x, lower, upper, strict=True)}
    return CalibrationResult(
        before=_factors(base, key, x0), after=_factors(base, key, x), prefill_key=key,
        constrained=constrained, at_bound=at_bound, runs=runs, predictions_before=tuple(before),
        predictions_after=tuple(after), rms_log_error_before=rms_before,
        rms_log_error_after=_rms(data_residuals(x), count), residual_count=count,
        success=bool(solution.success), message=str(solution.message))
