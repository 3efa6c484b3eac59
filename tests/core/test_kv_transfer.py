"""KV transfer as engines do it (docs/model.md §6, issue #27 item 5): the connector's timing,
NICs per node, re-sharding between pools of different TP, the router's second hop, the
engines' support flags, offered and carried demand — each by hand."""

from __future__ import annotations

import dataclasses

import pytest

from advisor.core.disaggregated import kv_path, prefill_ttft_parts, request_path_s
from advisor.core.expert_parallel import ExpertLayout, expert_layout
from advisor.core.instance import Instance
from advisor.core.kv_transfer import KvTransferTerms, link_capacity_bytes_per_s, transfer_seconds
from advisor.core.memory import build_instance
from advisor.core.plan.evaluate import evaluate
from advisor.core.scenario import Scenario
from advisor.loading.engine_profile import EngineProfile
from tests.core.helpers import catalog, scenario

GB = 1e9


def test_exposed_after_prefill_versus_layer_wise_by_hand() -> None:
    """2 GB over two IB NDR NICs (2 · 0.7 · 50 GB/s = 70 GB/s): 28.6 ms on the wire. After the
    prefill pass (NixlConnector, TensorRT-LLM) all of it is exposed; layer by layer over a
    300 ms pass of 80 layers only the last layer's share, 28.6/80 ms; both + α = 1 ms."""
    link = catalog().link("ib-ndr-400")
    wire = 2 * GB / (2 * 0.7 * 50 * GB)
    after, serial = transfer_seconds(2 * GB, link, 2, 0.3, 80, layer_wise=False)
    layered, serial_lw = transfer_seconds(2 * GB, link, 2, 0.3, 80, layer_wise=True)
    assert float(after) == pytest.approx(0.001 + wire, rel=1e-12)
    assert float(layered) == pytest.approx(0.001 + wire / 80, rel=1e-12)
    assert float(serial) == float(serial_lw) == pytest.approx(0.001 + wire, rel=1e-12)
    # a pass shorter than the wire time exposes the rest: t_x − T·(L − 1)/L
    short, _ = transfer_seconds(2 * GB, link, 2, 0.01, 80, layer_wise=True)
    assert float(short) == pytest.approx(0.001 + wire - 0.01 * 79 / 80, rel=1e-12)
    # a shared link at U = 0.5 adds the M/D/1 wait U/(2(1 − U))·t_x = t_x/2
    queued, _ = transfer_seconds(2 * GB, link, 2, 0.3, 80, 0.5, layer_wise=False)
    assert float(queued) == pytest.approx(0.001 + 1.5 * wire, rel=1e-12)


def test_engine_profiles_say_how_they_move_the_kv() -> None:
    c = catalog()
    vllm, sglang, trt = c.engine("vllm"), c.engine("sglang"), c.engine("trtllm")
    assert (vllm.kv_transfer.backend, vllm.kv_transfer.timing,
            vllm.kv_transfer.request_path) == ("NixlConnector", "after-prefill", "sequential")
    assert (sglang.kv_transfer.backend, sglang.kv_transfer.timing,
            sglang.kv_transfer.request_path) == ("mooncake", "per-chunk", "parallel")
    assert (trt.kv_transfer.timing, trt.kv_transfer.request_path) == ("after-prefill",
                                                                      "sequential")
    assert not any(e.kv_transfer.layer_wise for e in (vllm, sglang, trt))
    assert KvTransferTerms(timing="layer-wise").layer_wise


def _cluster_link(inter: str, gpus: int = 32, nics: int | None = None) -> Scenario:
    sc = scenario(model="llama-3.1-70b", gpus=gpus, inter_node=inter, precision="fp8")
    return dataclasses.replace(sc, cluster=dataclasses.replace(sc.cluster, nics_per_node=nics))


def test_nics_per_node_set_the_link_capacity_and_the_transfer() -> None:
    """eth-25 is one 25 Gb/s port per node (DistServe's testbed): 16 prefill GPUs (2 nodes) send
    over 2 NICs, 2 · 0.5 · 3.125 GB/s; a TP4 instance's request crosses one NIC. With
    ``cluster.nics_per_node: 8`` (one per GPU) both are 8× and 4× wider."""
    for nics, capacity_gb, per_request in ((None, 2 * 1.5625, 1.0), (8, 16 * 1.5625, 4.0)):
        sc = _cluster_link("eth-25", nics=nics)
        link = sc.cluster.kv_link
        assert float(link_capacity_bytes_per_s(link, 16)) == pytest.approx(capacity_gb * GB)
        inst = build_instance(sc.model, sc.cluster.gpu, sc.precision, catalog().engine("vllm"),
                              4, 1, sc.cluster.intra_node, sc.cluster.inter_node)
        assert kv_path(link, inst).nics == per_request
    # rail-optimised InfiniBand: one per GPU by default
    assert _cluster_link("ib-ndr-400").cluster.kv_link.nics_per_gpu == 1.0
    # one node: the KV crosses NVLink, one link per GPU whatever the NICs
    one = _cluster_link("eth-25", gpus=8)
    assert one.cluster.kv_link is one.cluster.intra_node


def test_resharding_runs_at_the_narrower_side_and_ships_the_decode_heads() -> None:
    """Llama-3.1-70B (8 KV heads) over IB: TP2 → TP8 and TP8 → TP2 both move the KV over the
    2 NICs of the TP2 side; equal TP over all 8. DeepSeek-V3 (MLA: every TP rank holds the
    latent) from TP8 prefill to a DP-attention decode rank ships one copy, not eight."""
    c = catalog()
    link = c.link("ib-ndr-400")
    eng = c.engine("vllm")

    def inst(model: str, tp: int, layout: ExpertLayout | None = None) -> Instance:
        m = c.model(model)
        return build_instance(m, c.gpu("h100-sxm"), "fp8-block" if m.moe else "fp8", eng, tp, 1,
                              c.link("nvlink4"), link, layout)

    tp2, tp8 = inst("llama-3.1-70b", 2), inst("llama-3.1-70b", 8)
    assert kv_path(link, tp2, tp8).nics == 2.0 == kv_path(link, tp8, tp2).nics
    assert kv_path(link, tp8, tp8).nics == 8.0
    assert kv_path(link, tp2, tp8).bytes_per_token == tp8.kv_bytes_per_token_wire
    # the narrower side sets the transfer: 4× the equal-TP time on the wire
    bytes_ = 8000 * tp8.kv_bytes_per_token_wire
    wide = transfer_seconds(bytes_, link, kv_path(link, tp8, tp8).nics, 0.5, 80,
                            layer_wise=False)[1]
    narrow = transfer_seconds(bytes_, link, kv_path(link, tp8, tp2).nics, 0.5, 80,
                              layer_wise=False)[1]
    assert float(narrow) - 0.001 == pytest.approx(4 * (float(wide) - 0.001))
    terms = c.engine("sglang").expert_parallel
    assert terms is not None
    lay = expert_layout(256, 32, 1, 8, terms)
    mla_tp8, mla_dpa = inst("deepseek-v3", 8), inst("deepseek-v3", 1, lay)
    route = kv_path(link, mla_tp8, mla_dpa)
    assert route.bytes_per_token == pytest.approx(mla_tp8.kv_bytes_per_token_wire / 8)
    assert (route.sender_nics, route.receiver_nics) == (8.0, 1.0)


def test_the_routers_second_hop_is_charged_on_a_sequential_path() -> None:
    """vLLM's proxies send the request to decode after the prefill answered: the decode
    server's front end (21 ms, vLLM's per-request cost) again; SGLang's router posts to both
    pools at once: once."""
    c = catalog()
    sc = _cluster_link("ib-ndr-400")
    for engine, times in (("vllm", 2.0), ("sglang", 1.0), ("trtllm", 2.0)):
        inst = build_instance(sc.model, sc.cluster.gpu, sc.precision, c.engine(engine), 4, 1,
                              sc.cluster.intra_node, sc.cluster.inter_node)
        assert request_path_s(inst) == pytest.approx(times * inst.efficiency.request_overhead_s)
    assert c.engine("vllm").efficiency_for(sc.cluster.gpu).request_overhead_s == 0.021


def test_prefill_ttft_carries_the_route() -> None:
    """The prefill TTFT's exposed part is the route's: its bytes, its NICs, its timing."""
    c = catalog()
    sc = _cluster_link("ib-ndr-400")
    eng = c.engine("vllm")
    args = (sc.model, sc.cluster.gpu, sc.precision, eng)
    tp2 = build_instance(*args, 2, 1, sc.cluster.intra_node, sc.cluster.inter_node)
    tp8 = build_instance(*args, 8, 1, sc.cluster.intra_node, sc.cluster.inter_node)
    ph, link = sc.phases[0], sc.cluster.kv_link
    own, _, exposed, _ = prefill_ttft_parts(tp8, ph, 1e-6, 0.95, link, path=kv_path(link, tp8,
                                                                                    tp2))
    by_hand, _ = transfer_seconds(ph.prompt_tokens.quantile(0.95) * tp2.kv_bytes_per_token_wire,
                                  link, 2, own, 80, layer_wise=False)
    assert float(exposed) == pytest.approx(float(by_hand), rel=1e-12)


def test_the_search_pairs_only_equal_tp_where_the_engine_cannot_reshard() -> None:
    """prefill-heavy (8k prompts, 20 ms TPOT) splits into TP2 prefill and TP8 decode; on an
    engine whose profile says ``different_tp_across_pools: false`` every split the search
    reports pairs equal TPs."""
    base = scenario(model="llama-3.1-70b", gpus=64, inter_node="ib-ndr-400", precision="fp8",
                    rate=20, prompt=8000, output=256, ttft_ms=3000, tpot_ms=20)
    free = dataclasses.replace(base, engine=catalog().engine("vllm"))
    pinned = dataclasses.replace(free, engine=dataclasses.replace(
        free.engine, supports=dataclasses.replace(free.engine.supports,
                                                  different_tp_across_pools=False)))
    assert free.engine.can_pair(2, 8) and not pinned.engine.can_pair(2, 8)
    d_free, d_pinned = evaluate(free).disaggregated, evaluate(pinned).disaggregated
    assert d_free is not None and d_pinned is not None
    a_free = d_free.allocation
    assert a_free is not None and a_free.prefill_tensor_parallel != a_free.decode_tensor_parallel
    for a in (d_pinned.allocation, *d_pinned.alternatives):
        assert a is not None and a.prefill_tensor_parallel == a.decode_tensor_parallel


def test_offered_and_carried_demand_side_by_side() -> None:
    """Beyond the split's goodput the KV is judged at what it carries (``demand_bytes_per_s``,
    unchanged meaning) and reported at what the workload offers beside it."""
    sc = dataclasses.replace(scenario(model="llama-3.1-70b", gpus=16, inter_node="ib-ndr-400",
                                      precision="fp8", rate=500, prompt=4000, output=128,
                                      ttft_ms=2000, tpot_ms=50),
                             engine=catalog().engine("vllm"))
    d = evaluate(sc).disaggregated
    assert d is not None and d.kv_transfer is not None
    kv = d.kv_transfer
    assert kv.at_carried_rate and kv.rate_rps < 500
    assert kv.demand_bytes_per_s == pytest.approx(kv.rate_rps * kv.bytes_per_request_mean)
    assert kv.offered_demand_bytes_per_s == pytest.approx(500 * kv.bytes_per_request_mean)
    assert kv.offered_utilization == pytest.approx(
        kv.utilization * kv.offered_demand_bytes_per_s / kv.demand_bytes_per_s)


def test_an_engine_profile_names_its_transfer_backends() -> None:
    """``kv_transfer.backend`` must be one of the supported backends, and the timing must
    name each of them."""
    base = {"id": "x", "engine": "vllm", "name": "x", "versions": ">=0.8",
            "step_overhead_s": {"value": 0.0, "kind": "estimate", "source": "s"},
            "request_overhead_s": {"value": 0.0, "kind": "estimate", "source": "s"},
            "launch_defaults": {"source": "s", "kind": "estimate", "fallback_tokens": 8192,
                                "fallback_max_num_seqs": 256},
            "memory": {"runtime_reserve_bytes": {"value": 0, "kind": "estimate", "source": "s"},
                       "logits_bytes_per_entry": {"value": 0, "kind": "estimate",
                                                  "source": "s"}},
            "supports": {"source": "s", "kind": "estimate", "pd_transfer_backends": ["A", "B"],
                         "different_tp_across_pools": True, "expert_parallel": False,
                         "dp_attention": False}}
    good = {"source": "s", "kind": "estimate", "backend": "A",
            "timing": {"A": "after-prefill", "B": "layer-wise"}, "request_path": "sequential"}
    spec = EngineProfile.model_validate({**base, "kv_transfer": good}).to_spec()
    assert spec.kv_transfer == KvTransferTerms(backend="A", timing="after-prefill",
                                               request_path="sequential")
    with pytest.raises(ValueError, match="is not one of"):
        EngineProfile.model_validate({**base, "kv_transfer": {**good, "backend": "C"}})
    with pytest.raises(ValueError, match="missing"):
        EngineProfile.model_validate({**base,
                                      "kv_transfer": {**good, "timing": {"A": "per-chunk"}}})
    # without the block: the conservative side
    assert EngineProfile.model_validate(base).to_spec().kv_transfer == KvTransferTerms()
