"""Build scenarios and instances for core tests straight from the shipped profiles."""

from __future__ import annotations

from functools import lru_cache

from advisor.core.distributions import LengthDistribution
from advisor.core.engine import EngineSpec
from advisor.core.instance import Instance
from advisor.core.memory import build_instance
from advisor.core.scenario import Cluster, Policy, Scenario, Slo, TrafficPhase
from advisor.loading.catalog import ProfileCatalog


@lru_cache(maxsize=1)
def catalog() -> ProfileCatalog:
    """The built-in profiles (cached for the test session)."""
    return ProfileCatalog()


def instance(model: str, gpu: str, tp: int, precision: str = "bf16",
             engine: str = "vllm") -> Instance:
    """One instance of ``model`` on ``tp`` GPUs."""
    c = catalog()
    g = c.gpu(gpu)
    return build_instance(c.model(model), g, precision, engine, tp, 1, c.link(g.intra_node_link_id),
                          None)


def length(value: float | LengthDistribution) -> LengthDistribution:
    """An int becomes a constant length."""
    return value if isinstance(value, LengthDistribution) else LengthDistribution.constant(value)


def scenario(model: str = "llama-3.1-8b", gpu: str = "h100-sxm", gpus: int = 8,
             rate: float = 10.0, prompt: float | LengthDistribution = 1000,
             output: float | LengthDistribution = 300, ttft_ms: float | None = None,
             tpot_ms: float | None = None, inter_node: str | None = None,
             precision: str = "bf16", burstiness: float = 1.0,
             phases: tuple[TrafficPhase, ...] | None = None, autoscaling: bool = True,
             chunk_tokens: int | None = None) -> Scenario:
    """A resolved scenario without going through a workload file (the engine: vLLM as the GPU
    profile alone describes it, ``EngineSpec.generic``, as before engine profiles)."""
    c = catalog()
    g = c.gpu(gpu)
    if phases is None:
        phases = (TrafficPhase(name="all", share=1.0, rate_rps=rate, burstiness=burstiness,
                               prompt_tokens=length(prompt), output_tokens=length(output)),)
    cluster = Cluster(gpu=g, gpus=gpus, gpus_per_node=g.gpus_per_node,
                      intra_node=c.link(g.intra_node_link_id),
                      inter_node=c.link(inter_node) if inter_node else None)
    return Scenario(model=c.model(model), precision=precision,
                    engine=EngineSpec.generic("vllm"), cluster=cluster,
                    phases=phases, slo=Slo(ttft_ms, tpot_ms, 95.0), autoscaling=autoscaling,
                    deployment=None, policy=Policy(), chunk_tokens=chunk_tokens)
