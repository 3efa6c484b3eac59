"""The vectorised sweep reproduces ``assess(sc, evaluate(sc))`` point for point.

Numbers to 1e-9, verdicts and preconditions exactly, on a random sample of design points of
every example workload (and the three-phase benchmark workload), for every sweepable key.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from advisor.core import sweep as sw
from tests.sweep.helpers import (
    PREFILL_HEAVY,
    THREE_PHASE,
    WORKLOADS,
    catalog,
    mismatches,
    reference,
    scenario,
)


def _gpu_sample(path: Path, k: int, seed: int) -> list[int]:
    sc = scenario(path)
    top = 4096 if sc.cluster.inter_node is not None else sc.cluster.gpus_per_node
    rng = random.Random(seed)
    fixed = [1, sc.cluster.gpus_per_node, sc.cluster.gpus]
    return sorted({g for g in fixed if g <= top} | {rng.randint(1, top) for _ in range(k)})


@pytest.mark.parametrize("path", WORKLOADS, ids=lambda p: p.stem)
def test_gpu_counts_agree_with_the_scalar_model(path: Path) -> None:
    sc = scenario(path)
    gpus = _gpu_sample(path, 4, seed=len(path.stem))
    res = sw.sweep(sc, [sw.axis_from_values("cluster.gpus", gpus)])
    problems = []
    for i, g in enumerate(res.axes[0].values):
        for p in mismatches(res.metrics, (i,), sw.apply_value(sc, "cluster.gpus", g)):
            problems.append(f"{g} GPUs: {p}")
    assert not problems, "\n".join(problems)


CAPACITY_CASES = [
    (PREFILL_HEAVY, "traffic.rate_rps", (40.0, 5000.0)),
    (PREFILL_HEAVY, "traffic.prompt_tokens", (2000.0,)),
    (PREFILL_HEAVY, "traffic.output_tokens", (900.0,)),
    (PREFILL_HEAVY, "slo.tpot_ms", (12.0, 35.0)),
    (PREFILL_HEAVY, "slo.ttft_ms", (800.0,)),
    (PREFILL_HEAVY, "slo.percentile", (90.0,)),
    (PREFILL_HEAVY, "traffic.burstiness", (3.0,)),
    (PREFILL_HEAVY, "cluster.inter_node", ("eth-25",)),
    (PREFILL_HEAVY, "cluster.inter_node.bandwidth_scale", (0.05,)),
    (THREE_PHASE, "traffic.rate_rps", (90.0,)),
    (THREE_PHASE, "traffic.prompt_tokens", (2500.0,)),
]


@pytest.mark.parametrize(("path", "key", "values"), CAPACITY_CASES,
                         ids=[f"{p.stem}-{k}" for p, k, _ in CAPACITY_CASES])
def test_every_key_agrees_with_the_scalar_model(path: Path, key: str,
                                                values: tuple) -> None:
    sc = scenario(path)
    if key == "cluster.inter_node":
        axis = sw.Axis(key, tuple(catalog().link(v) for v in values), values)
    else:
        axis = sw.axis_from_values(key, values)
    res = sw.sweep(sc, [axis])
    problems = []
    for i, v in enumerate(axis.values):
        for p in mismatches(res.metrics, (i,), sw.apply_value(sc, key, v)):
            problems.append(f"{key} = {axis.labels[i]}: {p}")
    assert not problems, "\n".join(problems)


def test_a_grid_agrees_with_the_scalar_model() -> None:
    """cluster.gpus × traffic.rate_rps: the allocation once per count, rates per point."""
    sc = scenario(PREFILL_HEAVY)
    gpus = sw.axis_from_values("cluster.gpus", [24, 160, 1000])
    rates = sw.axis_from_values("traffic.rate_rps", [30.0, 300.0, 9000.0])
    res = sw.sweep(sc, [gpus, rates])
    assert res.shape == (3, 3)
    problems = []
    for i, g in enumerate(gpus.values):
        for j, r in enumerate(rates.values):
            point = sw.apply_value(sw.apply_value(sc, "cluster.gpus", g), "traffic.rate_rps", r)
            problems += [f"{g} GPUs, {r} req/s: {p}"
                         for p in mismatches(res.metrics, (i, j), point)]
    assert not problems, "\n".join(problems)


def test_the_split_shown_is_evaluates_best_split() -> None:
    sc = scenario(PREFILL_HEAVY)
    gpus = [9, 56, 175, 1024, 3001]
    res = sw.evaluate_points(sc, gpus)
    for i, g in enumerate(gpus):
        ref = reference(sw.apply_value(sc, "cluster.gpus", g))
        assert (int(res["prefill_gpus"][i]), int(res["decode_gpus"][i])) == ref["split"]
        tp, n, chunk = ref["colocated_plan"]
        assert (int(res["colocated_tensor_parallel"][i]), int(res["colocated_instances"][i]),
                int(res["colocated_chunk_tokens"][i])) == (tp, n, chunk)


def test_a_multi_node_count_without_an_inter_node_link_is_refused() -> None:
    sc = scenario(Path(__file__).resolve().parents[2] / "examples" / "chat-8b-single-node.yaml")
    with pytest.raises(sw.SweepError, match="inter_node"):
        sw.evaluate_points(sc, [8, 16])


def test_results_are_read_only_arrays_of_the_grid_shape() -> None:
    sc = scenario(PREFILL_HEAVY)
    res = sw.sweep(sc, [sw.axis_from_values("cluster.gpus", [8, 16, 32])])
    assert res.shape == (3,) and res.size == 3
    assert all(np.asarray(a).shape == (3,) for a in res.metrics.values())
    with pytest.raises(ValueError):
        res.metrics["rounding_loss"][0] = 0.0
