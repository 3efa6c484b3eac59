"""Expert parallelism: hand checks of one EP shape (DeepSeek-V3, EP32, FP8 block weights) and
the wide-EP calibration rows (docs/model.md §3.4, §3.5).

Calibration sources (tolerances as the issue sets them):
* E1 — DeepSeek, "DeepSeek-V3/R1 Inference System Overview", open-infra-index
  202502OpenSourceWeek/day_6_one_more_thing_deepseekV3R1_inference_system_overview.md
  (https://github.com/deepseek-ai/open-infra-index): H800 nodes, prefill EP32, decode EP144;
  24 h: 608B input tokens (56.3 % on-disk cache hits), 168B output tokens; ≈73.7k input tok/s
  per prefill node (hits included), ≈14.8k output tok/s per decode node at 20-22 tok/s per user.
* E2/E3 — LMSYS blog "Deploying DeepSeek with PD Disaggregation and Large-scale Expert
  Parallelism on 96 H100 GPUs" (2025-05-05, https://lmsys.org/blog/2025-05-05-large-scale-ep/):
  prefill EP32 57,674 / 54,543 / 50,302 tok/s per node at 1K / 2K / 4K prompts (16,384 tokens
  per device); decode EP72 22,282 tok/s per node at 256 sequences per GPU, 2,000-token inputs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.core.all_to_all import expected_distinct
from advisor.core.expert_parallel import ep_candidate_sizes, expert_layout
from advisor.core.instance import Instance
from advisor.core.memory import build_instance, plan_memory
from advisor.core.precision import Precision
from advisor.loading.catalog import ProfileCatalog

CAT = ProfileCatalog()
MODEL = CAT.model("deepseek-v3")
ENGINE = CAT.engine("sglang")
TERMS = ENGINE.expert_parallel
assert TERMS is not None


def ep_instance(gpu: str, ep: int, intra: str) -> Instance:
    lay = expert_layout(256, ep, 1, 8, TERMS)
    assert lay is not None
    return build_instance(MODEL, CAT.gpu(gpu), "fp8-block", ENGINE, 1, 1, CAT.link(intra),
                          CAT.link("ib-ndr-400"), lay)


# ---- hand checks: DeepSeek-V3 EP32 FP8 ----------------------------------------------------

def test_ep32_layout_holds_nine_experts_per_gpu() -> None:
    # 256 routed + 32 redundant = 288 = 32 × 9 (DeepSeek day 6: "9 routed experts per GPU")
    lay = expert_layout(256, 32, 1, 8, TERMS)
    assert lay is not None
    assert (lay.redundant_experts, lay.experts_per_gpu, lay.attention_data_parallel) == (32, 9, 32)
    # decode EP144: 288 / 144 = 2 routed experts per GPU (day 6: "2 routed experts per GPU")
    lay144 = expert_layout(256, 144, 1, 8, TERMS)
    assert lay144 is not None and lay144.experts_per_gpu == 2


def test_ep32_weights_per_gpu_by_hand() -> None:
    inst = ep_instance("h100-sxm", 32, "nvlink4")
    expert_params = MODEL.routed_expert_params  # 58 layers × 256 × 3·7168·2048
    assert expert_params == pytest.approx(58 * 256 * 3 * 7168 * 2048, rel=1e-3)
    non_expert = MODEL.total_params - expert_params
    # FP8: 1 byte/param; non-expert weights replicated (DP attention), 9 of 256 experts per GPU
    want = non_expert * 1.0 + expert_params * 1.0 * 9 / 256
    assert inst.weight_bytes_per_gpu == pytest.approx(want, rel=1e-9)
    assert 39e9 < inst.weight_bytes_per_gpu < 41e9  # ≈16.9 GB dense + ≈23.0 GB experts


def test_ep32_kv_per_rank_by_hand() -> None:
    inst = ep_instance("h100-sxm", 32, "nvlink4")
    # MLA (512 + 64) × 61 layers × 2 B (fp8-block keeps KV in BF16) = 70,272 B per token, held
    # whole by the one rank that owns the sequence: no TP replication under DP attention
    assert MODEL.kv_bytes_per_token("fp8-block") == 70272
    assert inst.kv_bytes_per_token_per_gpu * 32 == pytest.approx(70272)
    mem = plan_memory(inst, 2000.0, 4000.0, 0.9)
    per_rank = mem.max_sequences // 32
    budget = mem.kv_budget_bytes_per_gpu
    assert per_rank == int(budget // (70272 * 2000))


def test_dispatch_bytes_per_token_by_hand() -> None:
    inst = ep_instance("h100-sxm", 32, "nvlink4")
    q = inst.params
    copy = 7168 * (1 + 2)  # FP8 dispatch + BF16 combine per token copy
    # decode (low-latency kernels): one copy per routed expert off the GPU, 8 × 31/32 — the
    # 8 × 24/32 to other nodes over RDMA, the 8 × 7/32 to the node's GPUs over NVLink, the
    # two legs at once (#29 item 3: before, all 8 × 31/32 at the RDMA rate)
    bw, nvl = 50e9 * 0.85, 450e9 * 0.85
    rdma_s, nvlink_s = 8 * 24 / 32 * copy / bw, 8 * 7 / 32 * copy / nvl
    assert rdma_s > nvlink_s
    assert q.a2a_s_per_decode_token == pytest.approx(58 * rdma_s / 32)
    single = ep_instance("h100-sxm", 8, "nvlink4").params   # one node: NVLink only
    assert single.a2a_s_per_decode_token == pytest.approx(58 * 8 * 7 / 8 * copy / nvl / 8)
    # prefill (normal kernels): one IB copy per distinct remote node among 8 picks over 4 nodes
    remote_nodes = expected_distinct(4, 8) * 3 / 4
    assert remote_nodes == pytest.approx(4 * (1 - 0.75 ** 8) * 0.75)
    assert q.a2a_s_per_prefill_token == pytest.approx(58 * remote_nodes * copy / bw / 32)
    assert q.a2a_latency_s == pytest.approx(58 * 2 * 2e-5)


def test_ep_precision_per_tensor_weights_and_kv_apart() -> None:
    """#16's per-tensor precision on an EP instance: expert and dense weights follow
    ``weights``, the per-rank KV follows ``kv_cache``, FP8 dispatch follows FP8 weights
    whatever the KV format."""
    lay = expert_layout(256, 32, 1, 8, TERMS)
    assert lay is not None

    def inst(precision: Precision) -> Instance:
        return build_instance(MODEL, CAT.gpu("h100-sxm"), precision, ENGINE, 1, 1,
                              CAT.link("nvlink4"), CAT.link("ib-ndr-400"), lay)

    fp8_bf16 = inst(Precision(weights="fp8", kv_cache="bf16"))
    fp8_fp8 = inst(Precision(weights="fp8", kv_cache="fp8"))
    bf16 = inst(Precision(weights="bf16", kv_cache="bf16"))
    assert fp8_bf16.weight_bytes_per_gpu == pytest.approx(fp8_fp8.weight_bytes_per_gpu)
    assert bf16.weight_bytes_per_gpu == pytest.approx(2 * fp8_fp8.weight_bytes_per_gpu)
    # MLA 576 × 61 layers per token, on the one rank that owns the sequence
    assert fp8_bf16.kv_bytes_per_token_per_gpu * 32 == pytest.approx(576 * 61 * 2)
    assert fp8_fp8.kv_bytes_per_token_per_gpu * 32 == pytest.approx(576 * 61 * 1)
    assert bf16.kv_bytes_per_token_per_gpu == pytest.approx(fp8_bf16.kv_bytes_per_token_per_gpu)
    # dispatch: FP8 (1 B) with FP8 weights, BF16 (2 B) without; combine BF16 either way
    per_copy = {p: i.params.a2a_s_per_decode_token for p, i in
                (("fp8/bf16", fp8_bf16), ("fp8/fp8", fp8_fp8), ("bf16", bf16))}
    assert per_copy["fp8/bf16"] == pytest.approx(per_copy["fp8/fp8"])
    assert per_copy["bf16"] == pytest.approx(per_copy["fp8/fp8"] * (2 + 2) / (1 + 2))


def test_ep_sizes_are_bounded_divisors_in_node_units() -> None:
    sizes = ep_candidate_sizes(256, 2048, 8, True, TERMS)
    assert sizes == [8, 16, 24, 32, 48, 64, 72, 96, 128, 144, 256, 288]
    assert ep_candidate_sizes(256, 96, 8, False, TERMS) == [8]


def test_non_ep_instances_unchanged_by_ep_terms() -> None:
    tp = build_instance(MODEL, CAT.gpu("h200-sxm"), "fp8-block", ENGINE, 8, 1,
                        CAT.link("nvlink4"), None)
    q = tp.params
    assert (q.a2a_latency_s, q.a2a_s_per_decode_token, q.step_scale, q.a2a_overlap) == (
        0.0, 0.0, 1.0, 0.0)


# ---- calibration: E2 / E3 (SGLang 96 × H100) ---------------------------------------------

@pytest.mark.parametrize(("prompt", "measured_per_node"),
                         [(1024, 57674.0), (2048, 54543.0), (4096, 50302.0)])
def test_e2_prefill_per_node_within_30pct(prompt: int, measured_per_node: float) -> None:
    inst = ep_instance("h100-sxm", 32, "nvlink4")
    tokens = 32 * 16384  # 16,384 tokens per device per step
    step = float(inst.step_time_s(prefill_tokens=tokens, prefill_seqs=tokens / prompt))
    per_node = 8 * 16384 / step
    assert per_node == pytest.approx(measured_per_node, rel=0.30)


def test_e3_decode_per_node_within_30pct() -> None:
    inst = ep_instance("h100-sxm", 72, "nvlink4")
    mem = plan_memory(inst, 2000.0, 4000.0, 0.9)
    assert mem.max_sequences >= 256 * 72  # 256 sequences per GPU fit in memory
    step = float(inst.decode_step_s(256 * 72, 2000.0))
    assert 8 * 256 / step == pytest.approx(22282.0, rel=0.30)


# ---- calibration: E1 (DeepSeek production, H800) -----------------------------------------

def _e1_rates() -> tuple[float, float]:
    """Model per-node rates: prefill EP32 at 4K prompts (computed tokens), decode EP144 at the
    batch whose step is the production ≈47 ms per token (20-22 tok/s per user)."""
    pre = ep_instance("h800", 32, "nvlink4-h800")
    tokens = 32 * 16384
    prefill_node = 8 * 16384 / float(pre.step_time_s(prefill_tokens=tokens,
                                                      prefill_seqs=tokens / 4096))
    dec = ep_instance("h800", 144, "nvlink4-h800")
    batch = max(b for b in range(1, 400)
                if float(dec.decode_step_s(b * 144, 4989.0)) <= 1 / 21.0)
    decode_node = 8 * batch / float(dec.decode_step_s(batch * 144, 4989.0))
    return prefill_node, decode_node


E1_PREFILL_PER_NODE = 32206.0
"""Disclosed prefill input tok/s per node, cache hits excluded (608B × 43.7 % / 24 h / 95.5
nodes)."""
E1_DECODE_PER_NODE = 14800.0


def test_e1_decode_per_node_within_30pct() -> None:
    # the decode pool runs at its TPOT-bound batch whenever loaded, so its peak is its
    # operating point: EP144 at 20-22 tok/s per user (≈14.1k; +50 % before MLA decode was
    # absorbed, #29 item 1)
    _, decode_node = _e1_rates()
    assert decode_node == pytest.approx(E1_DECODE_PER_NODE, rel=0.30)


def test_e1_pd_split_at_the_disclosed_prefill_rate_within_25pct() -> None:
    """The P:D node split the token mix implies, prefill at its disclosed 24-hour rate (the
    model's prefill figure is a peak, next test) and decode at the model's."""
    _, decode_node = _e1_rates()
    day = 86400.0
    prefill_nodes = 608e9 * (1 - 0.563) / day / E1_PREFILL_PER_NODE  # 95.5
    decode_nodes = 168e9 / day / decode_node
    fraction = prefill_nodes / (prefill_nodes + decode_nodes)
    # disclosure: 95.5 prefill and 131.4 decode nodes → 0.42 of the nodes on prefill
    assert fraction == pytest.approx(95.5 / (95.5 + 131.4), rel=0.25)


@pytest.mark.xfail(strict=True, reason="the model's prefill per node is a peak capacity "
                   "(56.6k tok/s at full 16k-token passes); DeepSeek's 32.2k is a 24-hour "
                   "production average over 95.5 nodes whose load varies (docs/model.md §3.5, "
                   "E1): +76 %. With it the token mix's P:D split is 0.28 of the nodes on "
                   "prefill against the disclosed 0.42 (the test above uses the disclosed rate)")
def test_e1_prefill_per_node_and_split_within_30pct() -> None:
    prefill_node, decode_node = _e1_rates()
    assert prefill_node == pytest.approx(E1_PREFILL_PER_NODE, rel=0.30)
    day = 86400.0
    prefill_nodes = 608e9 * (1 - 0.563) / day / prefill_node
    decode_nodes = 168e9 / day / decode_node
    assert prefill_nodes / (prefill_nodes + decode_nodes) == pytest.approx(
        95.5 / (95.5 + 131.4), rel=0.25)


# ---- dense models unchanged; the DeepSeek-V3 96 x H100 workload uses EP -------------------

def test_dense_model_gets_no_ep_shapes_and_no_ep_keys() -> None:

    from advisor.core.plan.shapes import expert_parallel_instances
    from advisor.loading.resolve import load_scenario
    from advisor.usecases.recommend import build_file_report

    path = Path(__file__).resolve().parents[2] / "examples" / "prefill-heavy-70b-ib.yaml"
    sc = load_scenario(path, ProfileCatalog(env={}))
    assert expert_parallel_instances(sc) == []
    report, _ = build_file_report(path, ProfileCatalog(env={}), boundaries=False)
    assert "expert_parallel" not in report["colocated"]
    assert "prefill_expert_parallel" not in report["disaggregated"]
    assert not [w for w in report["warnings"] if w["id"].startswith("ep-")]


def test_deepseek_96xh100_best_plans_use_ep_in_whole_node_groups() -> None:

    from advisor.usecases.recommend import build_file_report

    path = Path(__file__).resolve().parents[2] / "examples" / "deepseek-v3-96xh100.yaml"
    report, _ = build_file_report(path, ProfileCatalog(env={}), boundaries=False)
    c, d = report["colocated"], report["disaggregated"]
    assert c["expert_parallel"] > 1 and c["dp_attention"]
    assert d["prefill_expert_parallel"] > 1 and d["decode_expert_parallel"] > 1
    for pool in ("prefill", "decode"):  # pools hold whole EP groups of whole nodes
        ep = d[f"{pool}_expert_parallel"]
        assert ep % 8 == 0 and d[f"{pool}_gpus"] == d[f"{pool}_instances"] * ep
    assert 0 < d["decode_all_to_all_share"] < 1 and c["decode_batch_per_gpu"] > 0
    assert report["verdict"] in ("chunked-prefill", "disaggregate")
    assert 0 <= d["rounding_loss"] < 1


def test_moe_on_an_engine_without_ep_terms_is_warned(tmp_path: Path) -> None:
    from advisor.usecases.recommend import build_file_report

    path = tmp_path / "w.yaml"
    path.write_text("version: 1\nmodel: deepseek-v3\nprecision: fp8-block\nengine: trtllm\n"
                    "cluster: {gpu: h200-sxm, gpus: 16, inter_node: ib-ndr-400}\n"
                    "traffic: {rate_rps: 2, prompt_tokens: 1000, output_tokens: 200}\n")
    report, _ = build_file_report(path, ProfileCatalog(env={}), boundaries=False)
    ids = [w["id"] for w in report["warnings"]]
    assert "ep-not-modelled" in ids  # never a silent TP-only answer for an MoE model
    assert report["colocated"] is None or report["colocated"]["expert_parallel"] == 1


def test_capacity_groups_follow_the_ep_sizes_that_fit() -> None:
    # cluster sizes share capacity tables only when they try the same EP sizes
    from advisor.core.plan.capacities import Capacities
    from advisor.loading.resolve import load_scenario

    path = Path(__file__).resolve().parents[2] / "examples" / "deepseek-v3-96xh100.yaml"
    caps = Capacities(load_scenario(path, ProfileCatalog(env={})))
    small = [s.label for s in caps.group_at(256).shapes]
    large = [s.label for s in caps.group_at(2048).shapes]
    assert "EP288·DPA" not in small and "EP288·DPA" in large
    assert "EP256·DPA" in small
