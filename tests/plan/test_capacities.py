"""The capacity tables: the pooled prefill search over many pool sizes at once."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from advisor.core.disaggregated import (
    prefill_capacity,
    prefill_goodputs,
    prefill_ttft,
    saturating_tokens,
)
from advisor.core.plan.shapes import instance_shapes
from tests.sweep.helpers import THREE_PHASE, scenario


def test_pooled_prefill_search_equals_the_scalar_one() -> None:
    """``prefill_goodputs`` over many pool sizes at once = one pool size at a time, and each
    goodput is the SLO root: TTFT meets the SLO there and misses it 2e-4 of the instance's
    capacity above (the nested grids resolve 1/23³ ≈ 8e-5 of it)."""
    sc = scenario(THREE_PHASE)
    shapes, _ = instance_shapes(sc)
    link = sc.cluster.kv_link
    assert link is sc.cluster.inter_node
    ttft = sc.slo.ttft_ms / 1000.0
    checked = 0
    for shape in shapes[:3]:
        inst = shape.instance
        for phase in sc.phases:
            servers = np.array([1, 2, 3, 7, 64, 500, 1601])
            got = prefill_goodputs(inst, phase, sc.slo.quantile, ttft, link, servers)
            caps = [prefill_capacity(inst, phase, sc.slo.quantile, ttft, link, int(n))
                    for n in servers]
            assert got.tolist() == [cap.goodput_rps for cap in caps]
            step = 2e-4 * caps[0].max_rate_rps
            lm = saturating_tokens(inst, phase.prompt_tokens.mean)
            for n, rate in zip(servers, got, strict=True):
                if rate <= 0:
                    continue
                at, above = prefill_ttft(inst, phase, np.array([rate, rate + step]),
                                         sc.slo.quantile, link, 0.0, lm, int(n))[0]
                assert at <= ttft < above
                checked += 1
    assert checked > 10


def _splits_of(model: Any) -> Iterator[tuple[str, Any, float]]:
    """Every integer split the model reports: (phase, allocation, its goodput there)."""
    for phase in model.phases:
        d = phase.disaggregated
        if d is None or d.allocation is None:
            continue
        for a in (d.allocation, *d.alternatives):
            yield phase.name, a, a.max_goodput_rps
        if model.static_allocation is not None and phase.static_goodput_rps is not None:
            yield phase.name, model.static_allocation, phase.static_goodput_rps


def _is_prefill_shape(shape: Any, a: Any) -> bool:
    """Whether ``shape`` is the split's prefill instance (expert-parallel fields where the
    model has them)."""
    inst = shape.instance
    return (inst.tensor_parallel == a.prefill_tensor_parallel
            and inst.pipeline_stages == a.prefill_pipeline_stages
            and shape.gpus * a.prefill_instances == a.prefill_gpus
            and getattr(inst, "expert_parallel", 1) == getattr(a, "prefill_expert_parallel", 1)
            and (getattr(inst, "attention_data_parallel", 1) > 1)
            == getattr(a, "prefill_dp_attention", False)
            and getattr(inst, "redundant_experts", 0)
            == getattr(a, "prefill_redundant_experts", 0))


def test_a_splits_goodput_never_exceeds_what_its_own_pooled_queue_carries() -> None:
    """#22, property: whatever a split's size, its reported goodput is at most x·P(x), P(x)
    the per-instance TTFT-SLO goodput with its own x prefill instances behind one pooled
    queue (``prefill_goodputs(servers=[x])``), and x·P at the table's pool size (the
    largest tabulated ≤ x) where prefill limits it — over every example workload, the
    three-phase benchmark and every cluster size from 8 to 96 GPUs: best splits, runners-up
    and static splits alike."""
    from advisor.core.plan.capacities import Capacities, prefill_pool_grid
    from advisor.core.plan.evaluate import evaluate
    from tests.render.reports import EXAMPLES

    checked = 0
    workloads = [scenario(p) for p in (*EXAMPLES, THREE_PHASE)]
    for base in workloads:
        if base.slo.ttft_ms is None:
            continue
        sizes = (8, 24, 40, 96) if base.cluster.gpus <= 96 else (base.cluster.gpus,)
        for gpus in sizes:
            sc = replace(base, cluster=base.cluster.with_gpus(gpus))
            if sc.cluster.inter_node is None and gpus > sc.cluster.gpus_per_node:
                continue
            model = evaluate(sc, Capacities(sc))
            link = sc.cluster.kv_link
            ttft = sc.slo.ttft_ms / 1000.0
            for name, a, good in _splits_of(model):
                ph = next(p for p in sc.phases if p.name == name)
                shape = next(s for s in instance_shapes(sc)[0] if _is_prefill_shape(s, a))
                x = a.prefill_instances
                grid = prefill_pool_grid(gpus // model.smallest_instance_gpus)  # the table's sizes
                own, tabulated = prefill_goodputs(shape.instance, ph, sc.slo.quantile, ttft, link,
                                                  np.array([x, grid[grid <= x][-1]]))
                assert good <= x * own * (1 + 1e-12), (sc.cluster.gpus, name, a)
                if a.limited_by == "prefill":
                    assert good == pytest.approx(x * tabulated, rel=1e-9), (name, a)
                checked += 1
    assert checked > 40


def test_drift_corners_are_built_once_and_read_alike_by_every_caller() -> None:
    """#20: the drift band's corner capacities are built once per ``Capacities`` and shared
    by ``evaluate``'s fragility and every design-point call of the boundary searches (and,
    with the link swapped, by the bandwidth search), with the numbers of fresh tables."""
    from advisor.core.analysis.points import design_points
    from advisor.core.plan.capacities import Capacities
    from advisor.core.plan.drift import corner_capacities
    from advisor.core.plan.evaluate import evaluate
    from tests.sweep.helpers import PREFILL_HEAVY

    sc = scenario(PREFILL_HEAVY)
    assert len(sc.phases) == 1 and sc.policy.assumed_mix_drift > 0
    caps = Capacities(sc)
    first = evaluate(sc, caps)
    corners = corner_capacities(caps, (0,))
    assert len(corners) == 2
    assert [c is d for c, d in zip(corners, corner_capacities(caps, (0,)), strict=True)] \
        == [True, True]
    G = np.array([sc.cluster.gpus - 64, sc.cluster.gpus, sc.cluster.gpus + 300])
    rates = np.full((G.size, 1), sc.phases[0].rate_rps)
    shared = [design_points(caps, G, rates) for _ in range(2)]
    fresh = design_points(Capacities(sc), G, rates)
    for got in shared:
        assert sorted(got) == sorted(fresh)
        for key in fresh:
            np.testing.assert_array_equal(got[key], fresh[key], err_msg=key)
    assert evaluate(sc, caps) == first == evaluate(sc)
    assert corner_capacities(caps, (0,))[0] is corners[0]  # still the same tables

    slower = replace(sc.cluster.inter_node, bandwidth_bytes_per_s=(
        sc.cluster.inter_node.bandwidth_bytes_per_s / 8))
    swapped = caps.with_inter_node(slower)
    for corner in corner_capacities(swapped, (0,)):
        assert corner.sc.cluster.inter_node == slower
    other = replace(sc, cluster=replace(sc.cluster, inter_node=slower))
    got, want = design_points(swapped, G, rates), design_points(Capacities(other), G, rates)
    for key in want:
        np.testing.assert_array_equal(got[key], want[key], err_msg=key)
