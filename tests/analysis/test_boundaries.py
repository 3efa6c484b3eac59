"""Verdict boundaries are honest: just beyond ``flips_at`` the scalar model gives the other
verdict, just before it the same one."""

from __future__ import annotations

from dataclasses import replace
from functools import cache

import pytest

from advisor.core.analysis.boundaries import Boundary, verdict_boundaries
from advisor.core.analysis.keys import apply_value
from advisor.core.plan.evaluate import evaluate
from advisor.core.scenario import Scenario
from advisor.core.verdict.decision import decide
from tests.sweep.helpers import EXAMPLES, PREFILL_HEAVY, catalog, scenario

EPS = {"cluster.inter_node.bandwidth_scale": 5e-3, "traffic.rate_rps": 1e-4,
       "policy.min_disagg_gain": 1e-6}


def _eth25_per_gpu(sc: Scenario) -> Scenario:
    """The prefill-heavy fleet on 25 GbE with one port per GPU (8 per node, not the profile's
    one per node) and a layer-wise connector (its exposed transfer stays short): a slow link
    whose utilisation alone decides, near its limit."""
    sc = apply_value(sc, "cluster.inter_node", catalog().link("eth-25"))
    engine = replace(sc.engine, kv_transfer=replace(sc.engine.kv_transfer, timing="layer-wise"))
    return replace(sc, cluster=replace(sc.cluster, nics_per_node=8), engine=engine)


def _variants() -> dict[str, Scenario]:
    heavy = scenario(PREFILL_HEAVY)
    return {
        "prefill-heavy": heavy,
        "prefill-heavy-100-gpus": apply_value(heavy, "cluster.gpus", 100),
        # a slow link at a higher rate: only the KV link stands in the way
        "prefill-heavy-eth-25": apply_value(_eth25_per_gpu(heavy), "traffic.rate_rps", 800.0),
        # the same below the KV-link boundary: a rate increase (carried by the split) makes
        # the link fail (#14: beyond the split's goodput the KV is judged at what it carries)
        "prefill-heavy-eth-25-400": apply_value(_eth25_per_gpu(heavy), "traffic.rate_rps",
                                                400.0),
        "bursty": scenario(EXAMPLES / "bursty-32b-16gpu.yaml"),
        "day-night": scenario(EXAMPLES / "day-night-shift.yaml"),
    }


VARIANTS = _variants()


def _all(sc: Scenario) -> tuple[Boundary, ...]:
    d = decide(sc, evaluate(sc))
    return verdict_boundaries(sc, d.verdict, d.gain)


@cache
def _boundaries(name: str) -> tuple[Boundary, ...]:
    return _all(VARIANTS[name])


def _verdict(sc: Scenario) -> str:
    return decide(sc, evaluate(sc)).verdict


def _at(sc: Scenario, key: str, value: float) -> Scenario:
    if key == "policy.min_disagg_gain":
        return replace(sc, policy=replace(sc.policy, min_disagg_gain=value))
    return apply_value(sc, key, value)


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_verdict_boundaries_are_honest(name: str) -> None:
    sc = VARIANTS[name]
    current = _verdict(sc)
    checked = 0
    for b in _boundaries(name):
        if b.kind != "verdict" or b.flips_at is None:
            continue
        assert b.to is not None and b.to != current, b
        if b.key == "cluster.gpus":
            beyond = int(b.flips_at)
            before = beyond - 1 if b.direction == "up" else beyond + 1
        else:
            eps = EPS[b.key]
            up = b.direction == "up"
            beyond = b.flips_at * (1 + eps if up else 1 - eps)
            before = b.flips_at * (1 - eps if up else 1 + eps)
        assert _verdict(_at(sc, b.key, beyond)) == b.to, (b, beyond)
        assert _verdict(_at(sc, b.key, before)) == current, (b, before)
        checked += 1
    if name.startswith("prefill-heavy"):
        assert checked >= 1


def test_the_cases_cover_every_kind_of_flip() -> None:
    found = {(b.key, b.direction) for name in VARIANTS for b in _boundaries(name)
             if b.flips_at is not None and b.kind == "verdict"}
    assert {("cluster.gpus", "up"), ("cluster.gpus", "down"),
            ("cluster.inter_node.bandwidth_scale", "up"),
            ("cluster.inter_node.bandwidth_scale", "down"),
            ("traffic.rate_rps", "up"), ("traffic.rate_rps", "down")} <= found, found


@pytest.mark.parametrize("name", ["prefill-heavy", "bursty", "day-night"])
def test_tpot_safe_rate_is_honest(name: str) -> None:
    sc = VARIANTS[name]
    (b,) = [b for b in _boundaries(name) if b.kind == "slo"]
    assert b.key == "traffic.rate_rps" and b.flips_at is not None
    assert b.direction == ("up" if b.flips_at >= b.current else "down")
    for factor, within in ((1 - 2e-3, True), (1 + 2e-3, False)):
        m = evaluate(apply_value(sc, "traffic.rate_rps", b.flips_at * factor))
        c = m.colocated
        assert c is not None
        ok = c.tpot_ms is not None and c.tpot_ms <= sc.slo.tpot_ms
        assert ok == within, (factor, c.tpot_ms)


def test_nothing_in_range_is_null() -> None:
    nulls = [b for name in VARIANTS for b in _boundaries(name) if b.flips_at is None]
    assert nulls
    for b in nulls:
        assert b.to is None
        assert b.description.startswith("no "), b
    chat = _all(scenario(EXAMPLES / "chat-8b-single-node.yaml"))
    up = next(b for b in chat if b.key == "cluster.gpus" and b.direction == "up")
    assert up.flips_at is None and "one node" in up.description
    assert not any(b.key == "cluster.inter_node.bandwidth_scale" for b in chat)
