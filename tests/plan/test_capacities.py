"""The capacity tables: the pooled prefill search over many pool sizes at once."""

from __future__ import annotations

import numpy as np

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
