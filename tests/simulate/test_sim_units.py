"""The simulator runs the model's #27 rules on isolated requests: the engine's KV timing and
the router's second hop, a budget split over DP-attention ranks (a prompt advances
budget/ranks tokens a step on its rank), pipeline micro-batches (a prompt in one at a time)."""

from __future__ import annotations

import dataclasses
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from advisor.core.colocated import evaluate_colocated
from advisor.core.disaggregated import kv_path, request_path_s
from advisor.core.distributions import LengthDistribution
from advisor.core.kv_transfer import transfer_seconds
from advisor.core.scenario import Scenario
from advisor.core.simulate import ColocatedSimPlan, DisaggregatedSimPlan, simulate
from advisor.core.simulate.plan import build_deployment
from advisor.loading.catalog import ProfileCatalog
from advisor.loading.resolve import load_scenario

DATA = Path(__file__).resolve().parents[1] / "data"
PROMPT, OUTPUT = 4096, 4


@cache
def _isolated(name: str, engine: str | None = None) -> Scenario:
    """A workload with requests 20 s apart of constant lengths (they never meet)."""
    cat = ProfileCatalog()
    sc = load_scenario(DATA / name, cat)
    ph = dataclasses.replace(sc.phases[0], rate_rps=0.05, burstiness=0.0,
                             prompt_tokens=LengthDistribution.constant(PROMPT),
                             output_tokens=LengthDistribution.constant(OUTPUT))
    sc = dataclasses.replace(sc, phases=(ph,))
    return sc if engine is None else dataclasses.replace(sc, engine=cat.engine(engine))


def test_disaggregated_transfer_after_the_prefill_and_the_second_hop() -> None:
    """vLLM (NixlConnector after the prefill, a sequential proxy): TTFT = the pass + the
    whole transfer + its setup + the request overhead twice, as the model prices it."""
    sc = _isolated("acceptance/prefill-heavy-70b-1024-h100.yaml", "vllm")
    plan = DisaggregatedSimPlan(prefill_tensor_parallel=4, prefill_pipeline_stages=1,
                                prefill_instances=1, decode_tensor_parallel=8,
                                decode_pipeline_stages=1, decode_instances=1)
    res = simulate(sc, "disaggregated", 60, 1, plan=plan)
    dep = build_deployment(sc, "disaggregated", plan)
    pre, dec = dep.pools
    assert dep.link is not None
    path = kv_path(dep.link, pre.instance, dec.instance)
    assert not path.layer_wise and path.nics == 4.0
    t_pre = float(pre.instance.prefill_time_s(PROMPT))
    exposed, _ = transfer_seconds(PROMPT * path.bytes_per_token, dep.link, path.nics, t_pre,
                                  pre.instance.model.num_layers, layer_wise=False)
    ttft = (t_pre + float(exposed) + request_path_s(pre.instance)) * 1000
    assert request_path_s(pre.instance) == pytest.approx(
        2 * pre.instance.efficiency.request_overhead_s)
    assert res.overall.ttft_ms[1].simulated == pytest.approx(ttft, rel=5e-3)


@pytest.mark.parametrize(("plan", "budget"), [
    (ColocatedSimPlan(tensor_parallel=1, pipeline_stages=1, instances=1, chunk_tokens=16384,
                      expert_parallel=32), 16384.0),   # DP attention: 32 ranks
    (ColocatedSimPlan(tensor_parallel=8, pipeline_stages=2, instances=2, chunk_tokens=2048),
     2048.0),                          # two micro-batches
])
def test_colocated_units_isolated_prompt(plan: ColocatedSimPlan, budget: float) -> None:
    """DeepSeek-V3 on 32 H20 (SGLang): the lone prompt's chunks on one DP-attention rank, or
    in one pipeline micro-batch at a time — the simulated TTFT is the model's light-load
    prefill (its pieces of budget/units tokens) plus the request overhead."""
    sc = _isolated("acceptance/deepseek-r1-h20.yaml")
    res = simulate(sc, "chunked", 40, 1, plan=plan)
    pool = build_deployment(sc, "chunked", plan).pools[0]
    inst = pool.instance
    pt = evaluate_colocated(inst, pool.max_sequences[0], sc.phases[0], np.array(1e-9),
                            np.array(budget), 0.5)
    ttft = (float(pt.ttft_prefill_s) + inst.efficiency.request_overhead_s) * 1000
    assert res.overall.ttft_ms[1].simulated == pytest.approx(ttft, rel=0.02)
