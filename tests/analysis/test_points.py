"""Many design points (``design_points``, the sweep) agree with one (``evaluate`` + ``decide``,
what ``recommend`` runs), point for point.

Numbers to 1e-9, verdicts and preconditions exactly: as a property over generated workloads
(the documents the fuzz tests feed the CLI), and on a random sample of design points of every
example workload (and the three-phase benchmark workload) for every sweepable key.
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings

from advisor.core.analysis.keys import Axis, apply_value
from advisor.core.analysis.points import PointsError, evaluate_points
from advisor.core.analysis.sweep import sweep
from advisor.loading.resolve import load_scenario
from tests.fuzz.strategies import to_yaml, workloads
from tests.sweep.helpers import (
    PREFILL_HEAVY,
    THREE_PHASE,
    WORKLOADS,
    axis_from_values,
    catalog,
    mismatches,
    reference,
    scenario,
)


@settings(max_examples=20)  # ~9 s at 40: halved for the README command's 6 minutes
@given(doc=workloads(resolvable=True, max_gpus=2048, max_phases=3))
def test_recommend_and_sweep_agree_on_generated_workloads(doc: dict[str, Any]) -> None:
    """The property: at a workload's own design point, the sweep's verdict, goodputs,
    headrooms, gain, rounding loss, KV utilisation and preconditions are recommend's."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "workload.yaml"
        path.write_text(to_yaml(doc), encoding="utf-8")
        sc = load_scenario(path, catalog())
    res = sweep(sc, [axis_from_values("cluster.gpus", [sc.cluster.gpus])])
    ref = reference(sc)
    assert str(res.verdict[0]) == ref["verdict"]
    problems = mismatches(res.metrics, (0,), sc)
    assert not problems, "\n".join(problems)


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
    res = sweep(sc, [axis_from_values("cluster.gpus", gpus)])
    problems = []
    for i, g in enumerate(res.axes[0].values):
        for p in mismatches(res.metrics, (i,), apply_value(sc, "cluster.gpus", g)):
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
        axis = Axis(key, tuple(catalog().link(v) for v in values), values)
    else:
        axis = axis_from_values(key, values)
    res = sweep(sc, [axis])
    problems = []
    for i, v in enumerate(axis.values):
        for p in mismatches(res.metrics, (i,), apply_value(sc, key, v)):
            problems.append(f"{key} = {axis.labels[i]}: {p}")
    assert not problems, "\n".join(problems)


def test_a_grid_agrees_with_the_scalar_model() -> None:
    """cluster.gpus × traffic.rate_rps: the allocation once per count, rates per point."""
    sc = scenario(PREFILL_HEAVY)
    gpus = axis_from_values("cluster.gpus", [24, 160, 1000])
    rates = axis_from_values("traffic.rate_rps", [30.0, 300.0, 9000.0])
    res = sweep(sc, [gpus, rates])
    assert res.shape == (3, 3)
    problems = []
    for i, g in enumerate(gpus.values):
        for j, r in enumerate(rates.values):
            point = apply_value(apply_value(sc, "cluster.gpus", g), "traffic.rate_rps", r)
            problems += [f"{g} GPUs, {r} req/s: {p}"
                         for p in mismatches(res.metrics, (i, j), point)]
    assert not problems, "\n".join(problems)


def test_the_split_shown_is_the_one_evaluate_reports() -> None:
    sc = scenario(PREFILL_HEAVY)
    gpus = [9, 56, 175, 1024, 3001]
    res = evaluate_points(sc, gpus)
    for i, g in enumerate(gpus):
        ref = reference(apply_value(sc, "cluster.gpus", g))
        assert (int(res["prefill_gpus"][i]), int(res["decode_gpus"][i])) == ref["split"]
        tp, n, chunk = ref["colocated_plan"]
        assert (int(res["colocated_tensor_parallel"][i]), int(res["colocated_instances"][i]),
                int(res["colocated_chunk_tokens"][i])) == (tp, n, chunk)


def test_a_multi_node_count_without_an_inter_node_link_is_refused() -> None:
    sc = scenario(Path(__file__).resolve().parents[2] / "examples" / "chat-8b-single-node.yaml")
    with pytest.raises(PointsError, match="inter_node"):
        evaluate_points(sc, [8, 16])


def test_results_are_read_only_arrays_of_the_grid_shape() -> None:
    sc = scenario(PREFILL_HEAVY)
    res = sweep(sc, [axis_from_values("cluster.gpus", [8, 16, 32])])
    assert res.shape == (3,) and res.size == 3
    assert all(np.asarray(a).shape == (3,) for a in res.metrics.values())
    with pytest.raises(ValueError, match="read-only"):
        res.metrics["rounding_loss"][0] = 0.0
