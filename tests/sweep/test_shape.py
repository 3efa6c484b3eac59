"""The qualitative shape of a GPU-count sweep of the large prefill-heavy example."""

from __future__ import annotations

from itertools import pairwise

import numpy as np

from advisor.core.sweep.grid import sweep
from advisor.core.sweep.keys import apply_value
from advisor.loading.sweep_spec import make_axis
from tests.sweep.helpers import PREFILL_HEAVY, mismatches, scenario


def test_prefill_heavy_gpu_sweep_shape() -> None:
    sc = scenario(PREFILL_HEAVY)
    res = sweep(sc, [make_axis("cluster.gpus", "8:4096")])
    g = np.array(res.axes[0].values)
    loss = res["rounding_loss"]
    dis = res["disaggregate"]

    # rounding loss is high at 8–16 GPUs and falls, as an envelope, with scale
    assert loss[(g >= 8) & (g <= 16)].max() > 0.3
    envelope = [loss[(g >= lo) & (g < 2 * lo)].max() for lo in (8, 32, 128, 512, 2048)]
    assert all(a > b for a, b in pairwise(envelope)), envelope
    assert envelope[-1] < sc.policy.max_rounding_loss

    # chunked prefill at small counts; disaggregate somewhere above, for good at the top
    assert not dis[g <= 32].any()
    cross = res.crossovers()[0]
    assert cross.value is not None and cross.value > 32
    assert cross.stable_from is not None and dis[g >= cross.stable_from].all()
    assert not dis[g == cross.stable_from - 1].any()

    # and those verdicts are the scalar model's
    for value in (cross.value - 1, cross.value, cross.stable_from - 1, cross.stable_from):
        i = int(np.flatnonzero(g == value)[0])
        assert not mismatches(res.metrics, (i,), apply_value(sc, "cluster.gpus", value))
