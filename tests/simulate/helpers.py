"""Shared loading for the simulator tests: workload files under tests/data/simulate/."""

from __future__ import annotations

import dataclasses
import math
from functools import cache
from pathlib import Path

import numpy as np

from advisor.core.distributions import LengthDistribution
from advisor.core.plan.evaluate import evaluate
from advisor.core.results import ModelResult
from advisor.core.scenario import Scenario
from advisor.core.simulate.arrivals import ArraySource, Trace
from advisor.core.simulate.colocated_sim import KvSpec, run_colocated
from advisor.core.simulate.disaggregated_sim import run_disaggregated
from advisor.core.simulate.feed import Feed
from advisor.core.simulate.metrics import GapStats, RunCounters
from advisor.core.simulate.plan import build_deployment, engine_block_tokens, engine_max_num_seqs
from advisor.core.simulate.recorder import Recorder
from advisor.core.simulate.steptime import StepTimes
from advisor.loading.catalog import ProfileCatalog
from advisor.loading.resolve import load_scenario

DATA = Path(__file__).resolve().parent.parent / "data" / "simulate"
MATRIX = tuple(sorted(p.stem for p in DATA.glob("s[0-9][0-9]-*.yaml")))


PROFILES = DATA / "profiles"
"""Test profiles: a ``vllm`` engine with the step-time constants the matrix was tuned on
(before engine profiles, #15); the matrix checks queueing, not the engine constants."""


@cache
def catalog() -> ProfileCatalog:
    """Built-in profiles (``vllm`` replaced by the test profile), once per session."""
    return ProfileCatalog(extra_dirs=[PROFILES], env={})


@cache
def scenario(name: str) -> Scenario:
    """The scenario of ``tests/data/simulate/<name>.yaml``."""
    return load_scenario(DATA / f"{name}.yaml", catalog())


@cache
def model(name: str) -> ModelResult:
    """The analytic result of a test scenario (cached)."""
    return evaluate(scenario(name))


def idealised(sc: Scenario) -> Scenario:
    """``sc`` with Poisson arrivals and constant prompt/output lengths (the means)."""
    phases = tuple(dataclasses.replace(
        ph, burstiness=1.0, prompt_tokens=LengthDistribution.constant(ph.prompt_tokens.mean),
        output_tokens=LengthDistribution.constant(ph.output_tokens.mean)) for ph in sc.phases)
    return dataclasses.replace(sc, phases=phases)


@dataclasses.dataclass(frozen=True)
class RawRun:
    """Per-request times of one run (tests of the event loops)."""

    arrival_s: np.ndarray
    first_token_s: np.ndarray
    done_s: np.ndarray
    counters: RunCounters
    preemptions: int


class _KeepingRecorder(Recorder):
    """A recorder that also keeps every request's times (tests only: memory grows)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.kept: dict[int, tuple[float, float, float]] = {}

    def done(self, rid: int, t: float) -> None:
        self.kept[rid] = (self.A[rid], self.F[rid], t)
        super().done(rid, t)


def raw_run(sc: Scenario, mode: str, plan: object, trace: Trace,
            max_num_seqs: int | None = None, kv_tokens: int | None = None) -> RawRun:
    """Run ``trace`` on ``plan`` through the event loop, keeping every request's times."""
    dep = build_deployment(sc, mode, plan)  # type: ignore[arg-type]
    source = ArraySource(trace)
    nseg = len(source.segment_phase)
    duration = float(trace.arrival_s[-1] - trace.arrival_s[0]) or 1.0
    rec = _KeepingRecorder(source.segment_phase, len(trace.phase_names), [0.0] * nseg, 0.0,
                           None, None, duration)
    pool = dep.pools[-1]
    block = engine_block_tokens(pool.instance)
    tokens = kv_tokens if kv_tokens is not None else pool.kv_tokens
    kv = KvSpec(tokens // block, block, max_num_seqs or engine_max_num_seqs(pool.instance))
    longest = (kv.capacity_blocks - 1) * block
    # no stop rules: an infinite residence never looks overloaded, and the drain is unbounded
    feed = Feed(source, rec, None, longest, [math.inf] * nseg, in_flight_limit=10**9)
    top = float((trace.prompt_tokens + trace.output_tokens).max())
    gaps = GapStats()
    if mode == "disaggregated":
        pre, dec = dep.pools
        counters = run_disaggregated(feed, dep, StepTimes(pre.instance, top),
                                     StepTimes(dec.instance, top), kv, gaps)
    else:
        p = dep.pools[0]
        counters = run_colocated(feed, StepTimes(p.instance, top), p.instances, p.instance.gpus,
                                 plan.chunk_tokens, kv, 10**7, gaps)  # type: ignore[attr-defined]
    n = trace.requests
    first = np.full(n, np.nan)
    done = np.full(n, np.nan)
    for rid, (_, f, d) in rec.kept.items():
        first[rid], done[rid] = f, d
    return RawRun(trace.arrival_s, first, done, counters, counters.preemptions)


def at_rate(sc: Scenario, factor: float) -> Scenario:
    """``sc`` with every phase's rate multiplied by ``factor``."""
    return dataclasses.replace(sc, phases=tuple(
        dataclasses.replace(ph, rate_rps=ph.rate_rps * factor) for ph in sc.phases))


def meets_slo_simulated(sc: Scenario, mode: str, plan: object, requests: int, seed: int,
                        router: str | None = None) -> tuple[bool, float | None, float | None]:
    """(meets, simulated TTFT and TPOT at the SLO percentile, ms) of ``plan`` serving ``sc``:
    a run stopped before its requests completed (overload) misses."""
    from advisor.core.simulate import simulate

    res = simulate(sc, mode, requests, seed, plan=plan, router=router)  # type: ignore[arg-type]
    ttft, tpot = res.overall.at_slo_percentile
    t1, t2 = ttft.simulated, tpot.simulated
    ok = not res.stopped and t1 is not None and t2 is not None and \
        (sc.slo.ttft_ms is None or t1 <= sc.slo.ttft_ms) and \
        (sc.slo.tpot_ms is None or t2 <= sc.slo.tpot_ms)
    return bool(ok), t1, t2


def simulated_goodput(sc: Scenario, mode: str, plan: object, lo_rps: float, hi_rps: float,
                      requests: int, seed: int, steps: int = 6,
                      router: str | None = None) -> float:
    """The largest rate (req/s, bisected in log rate between ``lo_rps`` and ``hi_rps``) at
    which the simulated ``plan`` meets the SLO; ``lo_rps`` when even that misses."""
    base = sc.phases[0].rate_rps
    lo, hi = math.log(lo_rps), math.log(hi_rps)
    for _ in range(steps):
        mid = (lo + hi) / 2.0
        ok, _, _ = meets_slo_simulated(at_rate(sc, math.exp(mid) / base), mode, plan, requests,
                                       seed, router)
        lo, hi = (mid, hi) if ok else (lo, mid)
    return math.exp(lo)


def analytic_goodput(sc: Scenario, mode: str, plan: object, hi_rps: float,
                     steps: int = 40) -> float:
    """The largest rate (req/s) at which the analytic model's prediction of ``plan`` (the
    figures the simulator prints beside its own, ``simulate.analytic.predict``, with the
    workload's router) meets the SLO at its percentile: bisection in log rate below
    ``hi_rps`` (0 when even a thousandth of it misses)."""
    from advisor.core.simulate.analytic import predict

    def ok(rate: float) -> bool:
        s = at_rate(sc, rate / sc.phases[0].rate_rps)
        dep = build_deployment(s, mode, plan)  # type: ignore[arg-type]
        p = predict(dep, s.phases[0], 0, s.slo.quantile, s.router)
        return (not p.overloaded and p.slo_ttft_ms is not None and p.slo_tpot_ms is not None
                and (s.slo.ttft_ms is None or p.slo_ttft_ms <= s.slo.ttft_ms)
                and (s.slo.tpot_ms is None or p.slo_tpot_ms <= s.slo.tpot_ms))

    lo, hi = math.log(hi_rps) - math.log(1000.0), math.log(hi_rps)
    if not ok(math.exp(lo)):
        return 0.0
    for _ in range(steps):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if ok(math.exp(mid)) else (lo, mid)
    return math.exp(lo)
