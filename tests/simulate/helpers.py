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
