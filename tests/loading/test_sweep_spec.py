"""``--vary`` SPEC text: lists, ranges, log ranges, and the refusals (the model's domain)."""

from __future__ import annotations

import pytest

from advisor.core.analysis.keys import SweepError
from advisor.loading.catalog import ProfileCatalog
from advisor.loading.sweep_spec import (
    DEFAULT_FLOAT_POINTS,
    DEFAULT_LOG_POINTS,
    axis_from_vary,
    parse_spec,
)


@pytest.mark.parametrize(("spec", "expected"), [
    ("8,16,32", (8, 16, 32)),
    ("32,8,16,8", (8, 16, 32)),
    ("8:12", (8, 9, 10, 11, 12)),
    ("8:64:4", (8, 27, 45, 64)),
    ("8:4096:log:10", (8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)),
])
def test_gpu_specs(spec: str, expected: tuple[int, ...]) -> None:
    assert parse_spec("cluster.gpus", spec)[0] == expected


def test_float_specs() -> None:
    values, log = parse_spec("traffic.rate_rps", "1:100")
    assert len(values) == DEFAULT_FLOAT_POINTS and values[0] == 1 and values[-1] == 100
    assert not log
    values, log = parse_spec("slo.tpot_ms", "10:1000:log")
    assert len(values) == DEFAULT_LOG_POINTS and log
    assert values[0] == 10 and values[-1] == 1000
    assert parse_spec("cluster.inter_node", "ib-ndr-400,roce-400")[0] == ("ib-ndr-400",
                                                                             "roce-400")


@pytest.mark.parametrize(("key", "spec", "message"), [
    ("cluster.gpu", "8", "cannot vary"),
    ("cluster.gpus", "8:4:log", "low to high"),
    ("cluster.gpus", "0,8", "≥ 1"),
    ("cluster.gpus", "8.5", "whole numbers"),
    ("cluster.gpus", "a,b", "not a list of numbers"),
    ("cluster.gpus", "1e400", "not finite"),  # was an internal OverflowError (fuzz)
    ("traffic.rate_rps", "nan,1", "not finite"),
    ("traffic.rate_rps", "0:10", "≥ 1e-06"),
    ("traffic.rate_rps", "1:10:log:0", "positive integer"),
    ("slo.percentile", "50:100", "≤ 99.99"),
    ("cluster.inter_node", "a:b", "not a range"),
    # the model's domain, as the workload format limits it (issue #8 fuzzing)
    ("traffic.burstiness", "1e200", "≤ 1000"),
    ("cluster.gpus", "8,200000", "≤ 100000"),
    ("traffic.rate_rps", "1e-7,1", "≥ 1e-06"),
    ("traffic.prompt_tokens", "1e400", "not finite"),
    ("traffic.output_tokens", "100,2e7", "≤ 1e\\+07"),
])
def test_bad_specs(key: str, spec: str, message: str) -> None:
    with pytest.raises(SweepError, match=message):
        parse_spec(key, spec)


def test_vary_text_resolves_interconnect_ids() -> None:
    catalog = ProfileCatalog(env={})
    axis = axis_from_vary("cluster.inter_node=ib-ndr-400,roce-400", catalog.link)
    assert axis.key == "cluster.inter_node" and axis.labels == ("ib-ndr-400", "roce-400")
    assert axis.values == (catalog.link("ib-ndr-400"), catalog.link("roce-400"))
    with pytest.raises(SweepError, match=r"cluster\.inter_node: .*no-such-link"):
        axis_from_vary("cluster.inter_node=no-such-link", catalog.link)
    with pytest.raises(SweepError, match="is not KEY=SPEC"):
        axis_from_vary("cluster.gpus", catalog.link)


def test_one_key_may_hold_every_point_of_a_sweep() -> None:
    """#34: one axis is capped at the sweep's own point limit, and a count beyond it is
    refused before any value is built (10**12 points would need terabytes)."""
    from advisor.core.limits import MAX_SWEEP_POINTS, MAX_SWEEP_POINTS_PER_AXIS

    assert MAX_SWEEP_POINTS_PER_AXIS == MAX_SWEEP_POINTS
    for count in (MAX_SWEEP_POINTS + 1, 10**12):
        with pytest.raises(SweepError, match=f"{count:,} points"):
            parse_spec("traffic.rate_rps", f"1:2:{count}")
        with pytest.raises(SweepError, match=f"{count:,} points"):
            parse_spec("traffic.rate_rps", f"1:2:log:{count}")
