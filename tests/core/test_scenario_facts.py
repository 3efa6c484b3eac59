"""Facts derived once, on the cluster and the scenario: KV link, nodes, instances, hashing."""

from __future__ import annotations

import dataclasses

import numpy as np

from advisor.core.scenario import instances_in_cluster, nodes_spanned
from tests.core.helpers import scenario


def test_the_kv_link_is_intra_node_on_one_node_else_the_nic() -> None:
    one = scenario(gpus=8, inter_node="ib-ndr-400").cluster
    two = scenario(gpus=16, inter_node="ib-ndr-400").cluster
    alone = scenario(gpus=8).cluster
    assert one.single_node and one.kv_link is one.intra_node and not one.spans_nodes
    assert not two.single_node and two.kv_link is two.inter_node and two.spans_nodes
    assert alone.kv_link is alone.intra_node and not alone.spans_nodes


def test_nodes_and_instances() -> None:
    cl = scenario(gpus=20, inter_node="ib-ndr-400").cluster  # 8 per node: 2 full + 4
    assert cl.nodes == nodes_spanned(20, 8) == 3
    assert [cl.instances_of(g) for g in (1, 2, 4, 8, 16)] == [20, 10, 5, 2, 1]
    got = instances_in_cluster(np.array([[7], [8], [20], [64]]), np.array([[1, 4, 8, 16]]), 8)
    assert got.tolist() == [[7, 1, 0, 0], [8, 2, 1, 0], [20, 5, 2, 1], [64, 16, 8, 4]]


def test_equal_scenarios_hash_equal() -> None:
    a = scenario(rate=12.0)
    b = dataclasses.replace(a, extras={"source": "elsewhere.yaml"})
    c = dataclasses.replace(a, extras=dict(a.extras))
    assert a == c and hash(a) == hash(c) and len({a, c}) == 1
    assert a != b  # extras differ: not equal (hashes may still collide)
    assert hash(scenario(rate=12.0)) == hash(scenario(rate=12.0))
