"""Sweeps evaluated in blocks (#34): every metric of every point is the same whatever the block
size, on 1-D sweeps and grids with cheap and capacity keys in either order."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from advisor.core.analysis import sweep as sweep_module
from advisor.core.analysis.sweep import SweepResult, sweep
from advisor.loading.sweep_spec import axis_from_vary
from tests.sweep.helpers import EXAMPLES, THREE_PHASE, catalog, scenario

CASES = [
    (THREE_PHASE, ("cluster.gpus=8:2048:log:40", "traffic.rate_rps=1:1000:log:30")),
    (THREE_PHASE, ("traffic.rate_rps=1:1000:log:30", "cluster.gpus=8:2048:log:40")),
    (EXAMPLES / "prefill-heavy-70b-ib.yaml", ("cluster.gpus=8:300",)),
    (EXAMPLES / "prefill-heavy-70b-ib.yaml", ("slo.ttft_ms=500,2000,4000",
                                              "cluster.gpus=8:64:log:20")),
    (EXAMPLES / "prefill-heavy-70b-ib.yaml", ("cluster.gpus=8:64:log:20",
                                              "cluster.inter_node=ib-ndr-400,eth-25")),
    (EXAMPLES / "day-night-shift.yaml", ("traffic.output_tokens=100,400",
                                         "slo.tpot_ms=30,80")),
    (EXAMPLES / "agents-70b-closed-loop.yaml", ("traffic.concurrency=16,256",)),
]


def _swept(path: Path, vary: tuple[str, ...]) -> SweepResult:
    axes = [axis_from_vary(text, catalog().link) for text in vary]
    return sweep(scenario(path), axes)


@pytest.mark.parametrize(("path", "vary"), CASES,
                         ids=[f"{p.stem}-{'-'.join(v.split('=')[0] for v in vary)}"
                              for p, vary in CASES])
def test_block_size_does_not_change_a_metric(monkeypatch: pytest.MonkeyPatch, path: Path,
                                             vary: tuple[str, ...]) -> None:
    whole = _swept(path, vary)
    monkeypatch.setattr(sweep_module, "BLOCK_POINTS", 7)
    blocks = _swept(path, vary)
    assert whole.shape == blocks.shape
    assert set(whole.metrics) == set(blocks.metrics)
    for name, arr in whole.metrics.items():
        other = blocks.metrics[name]
        assert arr.dtype == other.dtype, name
        assert np.array_equal(arr, other, equal_nan=arr.dtype.kind == "f"), name


def test_progress_reaches_the_total_in_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sweep_module, "BLOCK_POINTS", 10)
    seen: list[tuple[int, int]] = []
    axes = [axis_from_vary("cluster.gpus=8:64:log:9", catalog().link),
            axis_from_vary("traffic.rate_rps=1:100:log:7", catalog().link)]
    sweep(scenario(THREE_PHASE), axes, progress=lambda d, t: seen.append((d, t)))
    assert seen[0] == (0, 63) and seen[-1] == (63, 63)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
