"""Shared loading for the simulator tests: workload files under tests/data/simulate/."""

from __future__ import annotations

import dataclasses
from functools import cache
from pathlib import Path

from advisor.core.distributions import LengthDistribution
from advisor.core.plan.evaluate import evaluate
from advisor.core.results import ModelResult
from advisor.core.scenario import Scenario
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
