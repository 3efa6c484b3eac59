"""Speculative decoding (docs/model.md §3.6, #30): hand arithmetic of the step time and the
TPOT at acceptance 0 (no gain, the draft and the verify pass paid) and at acceptance 1 (k + 1
tokens a step), and the same rules on the colocated pool and the disaggregated decode pool."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from advisor.core.colocated import evaluate_colocated
from advisor.core.disaggregated import decode_capacity
from advisor.core.engine import EngineSpec
from advisor.core.instance import Instance
from advisor.core.memory import build_instance
from advisor.core.speculative import (
    DEFAULT_ACCEPTANCE,
    SPECULATIVE_METHODS,
    SpeculativeDecoding,
    expected_tokens_per_step,
)
from tests.core.helpers import catalog, scenario

K = 3
CTX = 1000.0
"""Decode context of the hand-computed steps."""


def _instance(spec: SpeculativeDecoding | None, model: str = "llama-3.1-8b") -> Instance:
    c = catalog()
    gpu = c.gpu("h100-sxm")
    engine = dataclasses.replace(EngineSpec.generic("vllm"), speculative=spec)
    return build_instance(c.model(model), gpu, "bf16", engine, 1, 1,
                          c.link(gpu.intra_node_link_id), None)


def _eagle3(acceptance: float) -> SpeculativeDecoding:
    return SpeculativeDecoding(method="eagle3", draft_tokens=K, acceptance_rate=acceptance)


def _by_hand(inst: Instance, batch: float, verify: float, draft: bool) -> float:
    """The decode step of ``batch`` sequences with ``verify`` query tokens each (TP1, a dense
    model, the generic engine: max(C, M) + step overhead, no communication), plus the k
    passes of one decoder layer and the LM head when ``draft``."""
    m, g, e = inst.model, inst.gpu, inst.efficiency
    bw_w = g.memory_bandwidth_bytes_per_s * e.decode_bandwidth_efficiency
    bw_kv = g.memory_bandwidth_bytes_per_s * e.kv_read_efficiency
    flops = g.peak_flops_per_s("bf16") * inst.prefill_mfu
    attn = inst.attention_flops_per_gpu_s
    kv_token = m.kv_bytes_per_token("bf16")  # 2·L·kv_heads·head_dim·2 B
    aw = m.num_layers * m.attention_width
    weights = m.weight_bytes("bf16") - m.gathered_embedding_bytes("bf16")
    tokens = batch * verify
    compute = 2 * m.matmul_params_per_token * tokens / flops + 4 * aw * tokens * CTX / attn
    memory = weights / bw_w + kv_token * (batch * CTX + tokens) / bw_kv
    step = max(compute, memory) + e.step_overhead_s
    if draft:
        head = m.vocab_size * m.hidden_size  # 2 B each in BF16
        layer = (m.weight_bytes("bf16") - m.gathered_embedding_bytes("bf16") - 2 * head) \
            / m.num_layers
        step += K * (layer + 2 * head) / bw_w
        step += K * 2 * ((m.matmul_params_per_token - head) / m.num_layers + head) * batch / flops
        step += K * kv_token / m.num_layers * batch * CTX / bw_kv
    return step


def test_tokens_per_step_leviathan() -> None:
    """τ = (1 − a^(k+1))/(1 − a): 1 at a = 0, k + 1 at a = 1, 1.85 for one MTP draft at 0.85."""
    assert expected_tokens_per_step(0.0, K) == 1.0
    assert expected_tokens_per_step(1.0, K) == K + 1
    assert expected_tokens_per_step(0.5, K) == pytest.approx(1.875)
    assert expected_tokens_per_step(0.85, 1) == pytest.approx(1.85)
    assert expected_tokens_per_step(1.0 - 1e-9, K) == pytest.approx(K + 1, rel=1e-6)
    given = SpeculativeDecoding(method="mtp", draft_tokens=2, accepted_tokens_per_step_given=2.4)
    assert given.tokens_per_step == 2.4
    assert set(DEFAULT_ACCEPTANCE) == set(SPECULATIVE_METHODS)
    assert all(0.0 <= d.acceptance_rate <= 1.0 and d.source for d in DEFAULT_ACCEPTANCE.values())


@pytest.mark.parametrize("batch", [1.0, 64.0])
def test_acceptance_zero_pays_the_draft_and_gains_nothing(batch: float) -> None:
    """At a = 0 a step emits one token: the TPOT is the whole speculative step — the verify
    pass over B·(k + 1) tokens plus the draft — above the plain step."""
    plain, spec = _instance(None), _instance(_eagle3(0.0))
    t_plain = float(plain.decode_step_s(batch, CTX))
    assert t_plain == pytest.approx(_by_hand(plain, batch, 1.0, draft=False), rel=1e-12)
    t_spec = float(spec.decode_step_s(batch, CTX))
    assert t_spec == pytest.approx(_by_hand(spec, batch, K + 1, draft=True), rel=1e-12)
    assert float(spec.decode_token_s(batch, CTX)) == t_spec
    assert t_spec > t_plain


@pytest.mark.parametrize("batch", [1.0, 64.0])
def test_acceptance_one_emits_k_plus_one_tokens(batch: float) -> None:
    """At a = 1 the same step emits k + 1 tokens: TPOT = step / (k + 1)."""
    spec = _instance(_eagle3(1.0))
    t_spec = float(spec.decode_step_s(batch, CTX))
    assert t_spec == pytest.approx(_by_hand(spec, batch, K + 1, draft=True), rel=1e-12)
    assert float(spec.decode_token_s(batch, CTX)) == pytest.approx(t_spec / (K + 1), rel=1e-12)
    assert float(spec.decode_token_s(batch, CTX)) < float(_instance(None).decode_step_s(batch, CTX))


def test_ngram_has_no_draft_and_draft_model_pays_its_model() -> None:
    """n-gram drafts cost no GPU time (the verify pass only); a draft model's k passes stream
    its weights k times."""
    ngram = _instance(SpeculativeDecoding(method="ngram", draft_tokens=K, acceptance_rate=0.0))
    assert float(ngram.decode_step_s(1.0, CTX)) == pytest.approx(
        _by_hand(ngram, 1.0, K + 1, draft=False), rel=1e-12)
    draft = catalog().model("llama-3.1-8b")
    big = _instance(SpeculativeDecoding(method="draft-model", draft_tokens=K, acceptance_rate=0.0,
                                        draft_model=draft), model="llama-3.1-70b")
    q = big.params
    bw_w = big.gpu.memory_bandwidth_bytes_per_s * big.efficiency.decode_bandwidth_efficiency
    streamed = draft.weight_bytes("bf16") - draft.gathered_embedding_bytes("bf16")
    assert q.draft_fixed_s == pytest.approx(K * streamed / bw_w, rel=1e-12)


def test_lines_match_the_step() -> None:
    """The decode step's lines in B (the unchunked closed form) carry the verify tokens and
    the draft: T(B) = maxᵢ(aᵢ + bᵢ·B) + r0 + rr·B."""
    from advisor.core.decode_lines import decode_step_lines

    spec = _instance(_eagle3(0.6))
    lines = decode_step_lines(spec.model, spec.params, CTX)
    for b in (1.0, 7.0, 300.0):
        assert float(lines.at(b)) == pytest.approx(float(spec.decode_step_s(b, CTX)),
                                               rel=1e-12)


def test_both_architectures_by_the_same_rule() -> None:
    """The colocated pool at light load and the disaggregated decode pool's SLO batch both
    read the speculative TPOT: a = 0 costs TPOT and batch, a = 1 gains both."""
    sc = scenario(rate=0.01, prompt=1000, output=300, tpot_ms=30.0)
    phase = sc.peak_phase
    tpots, batches = {}, {}
    for label, spec in (("none", None), ("a0", _eagle3(0.0)), ("a1", _eagle3(1.0))):
        inst = _instance(spec)
        point = evaluate_colocated(inst, 256, phase, 0.01, 2048, 0.95)
        tpots[label] = float(point.tpot_q_s)
        batches[label] = decode_capacity(inst, 1024, phase, 0.030).slo_batch
    assert tpots["a0"] > tpots["none"] > tpots["a1"]
    assert batches["a0"] < batches["none"] < batches["a1"]
    assert np.isfinite(list(tpots.values())).all()


def test_moe_and_expert_parallel_take_the_verify_tokens() -> None:
    """An MoE step (the array path) charges the verify tokens too: MTP at a = 0 is slower than
    no speculation, at a = 1 twice as fast per token at k = 1 minus the draft."""
    c = catalog()
    gpu = c.gpu("h100-sxm")

    def inst(spec: SpeculativeDecoding | None) -> Instance:
        engine = dataclasses.replace(EngineSpec.generic("vllm"), speculative=spec)
        return build_instance(c.model("qwen3-30b-a3b"), gpu, "bf16", engine, 2, 1,
                              c.link(gpu.intra_node_link_id), None)

    plain = float(inst(None).decode_token_s(8.0, CTX))
    slow = float(inst(SpeculativeDecoding(method="mtp", draft_tokens=1,
                                          acceptance_rate=0.0)).decode_token_s(8.0, CTX))
    fast = float(inst(SpeculativeDecoding(method="mtp", draft_tokens=1,
                                          acceptance_rate=1.0)).decode_token_s(8.0, CTX))
    assert slow > plain > fast
    assert fast == pytest.approx(slow / 2.0, rel=1e-12)
