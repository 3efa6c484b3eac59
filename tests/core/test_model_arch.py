"""ModelSpec derivations against hand-computed and published numbers.

The hand-computed numbers follow docs/sources.md#model-configs and #kv-bytes-per-token [D].

The architectures come from the bundled model profiles, so these tests check the profile
data and the formulas in ``advisor/core/model_arch.py`` together.
"""

from __future__ import annotations

import pytest

from advisor.core.model_arch import MlaSpec, ModelSpec, MoeSpec
from advisor.loading.catalog import ProfileCatalog

GB = 1e9
GIB = 2.0**30
MIB = 2.0**20


@pytest.fixture(scope="module")
def catalog() -> ProfileCatalog:
    """Built-in profiles only (the user's PD_ADVISOR_PROFILES is ignored)."""
    return ProfileCatalog(env={})


def _model(catalog: ProfileCatalog, model_id: str) -> ModelSpec:
    return catalog.model(model_id)


# KV bytes per token at BF16 (FP8 is half), computed by hand from the official config.json
# dimensions with the formulas of docs/sources.md#kv-bytes-per-token [D].
KV_BYTES_PER_TOKEN_BF16 = {
    "llama-2-7b": 524_288,
    "llama-2-70b": 327_680,
    "llama-3.1-8b": 131_072,
    "llama-3.1-70b": 327_680,
    "llama-3.1-405b": 516_096,
    "mistral-7b": 131_072,
    "mixtral-8x7b": 131_072,
    "mixtral-8x22b": 229_376,
    "qwen2.5-7b": 57_344,
    "qwen2.5-32b": 262_144,
    "qwen2.5-72b": 327_680,
    "qwen3-8b": 147_456,
    "qwen3-32b": 262_144,
    "qwen3-235b-a22b": 192_512,
    "deepseek-v3": 70_272,
    "gpt-oss-20b": 49_152,
    "gpt-oss-120b": 73_728,
    "opt-13b": 819_200,
    "opt-66b": 2_359_296,
    "opt-175b": 4_718_592,
}

# Total and active parameters in billions, computed by hand from the official config.json files
# (embeddings + attention + MLP/experts + norms; docs/sources.md#model-configs) [D].
TOTAL_PARAMS_B = {
    "llama-2-7b": 6.74, "llama-2-70b": 68.98, "llama-3.1-8b": 8.03, "llama-3.1-70b": 70.55,
    "llama-3.1-405b": 405.85, "mistral-7b": 7.24, "mixtral-8x7b": 46.70,
    "mixtral-8x22b": 140.62, "qwen2.5-7b": 7.62, "qwen2.5-32b": 32.76, "qwen2.5-72b": 72.71,
    "qwen3-8b": 8.19, "qwen3-32b": 32.76, "qwen3-235b-a22b": 235.09, "deepseek-v3": 671.03,
    "gpt-oss-20b": 20.91, "gpt-oss-120b": 116.83, "opt-13b": 12.85, "opt-66b": 65.72,
    "opt-175b": 174.60,
}
ACTIVE_PARAMS_B = {
    "mixtral-8x7b": 12.88, "mixtral-8x22b": 39.15, "qwen3-235b-a22b": 22.19,
    "deepseek-v3": 37.55, "gpt-oss-20b": 4.19, "gpt-oss-120b": 5.71,
}

# 2·N_active GFLOP/token and weights at 2 B/param (GB), dense + MoE, from the parameter counts
# above [D].
FLOPS_PER_TOKEN_G = {
    "llama-2-7b": 13.5, "llama-2-70b": 138.0, "llama-3.1-8b": 16.1, "llama-3.1-70b": 141.1,
    "llama-3.1-405b": 811.7, "mistral-7b": 14.5, "mixtral-8x7b": 25.8, "mixtral-8x22b": 78.3,
    "qwen2.5-7b": 15.2, "qwen2.5-32b": 65.5, "qwen2.5-72b": 145.4, "qwen3-8b": 16.4,
    "qwen3-32b": 65.5, "qwen3-235b-a22b": 44.4, "deepseek-v3": 75.1, "gpt-oss-20b": 8.4,
    "gpt-oss-120b": 11.4, "opt-13b": 25.7, "opt-66b": 131.4, "opt-175b": 349.2,
}
MATMUL_FLOPS_PER_TOKEN_G = {
    "llama-2-7b": 13.2, "llama-2-70b": 137.4, "llama-3.1-8b": 15.0, "llama-3.1-70b": 139.0,
    "llama-3.1-405b": 807.5, "mistral-7b": 14.2, "mixtral-8x7b": 25.5, "mixtral-8x22b": 77.9,
    "qwen2.5-7b": 14.2, "qwen2.5-32b": 64.0, "qwen2.5-72b": 142.9, "qwen3-8b": 15.1,
    "qwen3-32b": 64.0, "qwen3-235b-a22b": 43.1, "deepseek-v3": 73.2, "gpt-oss-20b": 7.2,
    "gpt-oss-120b": 10.3, "opt-13b": 25.2, "opt-66b": 130.5, "opt-175b": 348.0,
}
WEIGHTS_BF16_GB = {
    "llama-2-7b": 13.5, "llama-2-70b": 138.0, "llama-3.1-8b": 16.1, "llama-3.1-70b": 141.1,
    "llama-3.1-405b": 811.7, "mistral-7b": 14.5, "mixtral-8x7b": 93.4, "mixtral-8x22b": 281.2,
    "qwen2.5-7b": 15.2, "qwen2.5-32b": 65.5, "qwen2.5-72b": 145.4, "qwen3-8b": 16.4,
    "qwen3-32b": 65.5, "qwen3-235b-a22b": 470.2, "deepseek-v3": 1342.1, "opt-13b": 25.7,
    "opt-66b": 131.4, "opt-175b": 349.2,
}


def test_every_reference_model_has_a_profile(catalog: ProfileCatalog) -> None:
    assert set(TOTAL_PARAMS_B) <= set(catalog.ids("models"))


# ---- KV bytes ---------------------------------------------------------------------------
@pytest.mark.parametrize(("model_id", "expected"), sorted(KV_BYTES_PER_TOKEN_BF16.items()))
def test_kv_bytes_per_token_matches_models_md_table(catalog: ProfileCatalog, model_id: str,
                                                    expected: int) -> None:
    model = _model(catalog, model_id)
    assert model.kv_bytes_per_token("bf16") == expected
    assert model.kv_bytes_per_token("fp8") == expected // 2


def test_named_kv_sizes(catalog: ProfileCatalog) -> None:
    assert _model(catalog, "llama-3.1-70b").kv_bytes_per_token("bf16") == 327_680
    assert _model(catalog, "llama-3.1-8b").kv_bytes_per_token("bf16") == 131_072
    assert _model(catalog, "deepseek-v3").kv_bytes_per_token("bf16") == 70_272
    assert _model(catalog, "opt-66b").kv_bytes_per_token("bf16") == 2_359_296


@pytest.mark.parametrize("model_id", ["llama-2-70b", "llama-3.1-70b"])
def test_70b_request_of_8192_tokens_is_2_68_gb(catalog: ProfileCatalog, model_id: str) -> None:
    kv = _model(catalog, model_id).kv_bytes_per_sequence(8192, "bf16")
    assert kv / GB == pytest.approx(2.68, abs=0.01)
    assert kv / GIB == pytest.approx(2.50, abs=1e-9)


def test_published_kv_sanity_checks(catalog: ProfileCatalog) -> None:
    """Published KV sizes, each with its public source (docs/sources.md#kv-bytes-per-token)."""
    llama70 = _model(catalog, "llama-3.1-70b")
    # Mooncake README: 40 GB = KV of 128k tokens of Llama-3-70B (40.0 GiB).
    assert llama70.kv_bytes_per_sequence(128 * 1024, "bf16") / GIB == pytest.approx(40.0)
    # Mooncake vLLM PD doc: Qwen3-8B, 32,768 tokens = "4.50 GB" (GiB).
    qwen8 = _model(catalog, "qwen3-8b")
    assert qwen8.kv_bytes_per_sequence(32768, "bf16") / GIB == pytest.approx(4.50)
    # Mooncake SGLang doc: Qwen3-235B, 32,768 tokens = 12.62e9 B with TP8 duplication.
    qwen235 = _model(catalog, "qwen3-235b-a22b")
    moved = qwen235.kv_bytes_per_token_per_gpu("bf16", 8) * 8 * 32768
    assert moved / GB == pytest.approx(12.62, abs=0.005)
    # DistServe: OPT-66B, 512 tokens = 1.13 GB (1.125 GiB); OPT-175B = 4.5 MB/token.
    assert _model(catalog, "opt-66b").kv_bytes_per_sequence(512, "bf16") / GIB == \
        pytest.approx(1.125)
    assert _model(catalog, "opt-175b").kv_bytes_per_token("bf16") / MIB == pytest.approx(4.5)
    # Databricks: Llama-2-70B, seq 1024, batch 64 = 20 GiB.
    llama2 = _model(catalog, "llama-2-70b")
    assert 64 * llama2.kv_bytes_per_sequence(1024, "bf16") / GIB == pytest.approx(20.0)
    # DeepSeek-V3 MLA cache is 4.66x smaller than Llama-70B's.
    ratio = llama70.kv_bytes_per_token("bf16") / _model(catalog, "deepseek-v3").kv_bytes_per_token(
        "bf16")
    assert ratio == pytest.approx(4.66, abs=0.005)


def test_sliding_window_kv(catalog: ProfileCatalog) -> None:
    """gpt-oss grows by its full-attention layers only; Mistral caps at 4,096
    (docs/sources.md#kv-bytes-per-token)."""
    gpt = _model(catalog, "gpt-oss-120b")
    fixed_bytes = 128 * 18 * 2048  # window layers: <= 128 tokens x 18 layers x 2,048 B
    for tokens in (1024, 8192, 131072):
        assert gpt.kv_bytes_per_sequence(tokens, "bf16") == 36_864 * tokens + fixed_bytes
    assert fixed_bytes / 1e6 == pytest.approx(4.7, abs=0.05)
    gpt20 = _model(catalog, "gpt-oss-20b")
    assert gpt20.kv_bytes_per_sequence(8192, "bf16") == 24_576 * 8192 + 128 * 12 * 2048
    # Below the window every layer holds every token.
    assert gpt.kv_bytes_per_sequence(100, "bf16") == 73_728 * 100

    mistral = _model(catalog, "mistral-7b")
    assert mistral.kv_bytes_per_sequence(8192, "bf16") / GB == pytest.approx(0.54, abs=0.005)
    assert mistral.kv_bytes_per_sequence(2048, "bf16") == 131_072 * 2048


# ---- parameters -------------------------------------------------------------------------
@pytest.mark.parametrize(("model_id", "expected_b"), sorted(TOTAL_PARAMS_B.items()))
def test_total_params_within_1pct_of_reference(catalog: ProfileCatalog, model_id: str,
                                               expected_b: float) -> None:
    assert _model(catalog, model_id).total_params / 1e9 == pytest.approx(expected_b, rel=0.01)


@pytest.mark.parametrize(("model_id", "expected_b"), sorted(ACTIVE_PARAMS_B.items()))
def test_moe_active_params_within_3pct_of_reference(catalog: ProfileCatalog, model_id: str,
                                                    expected_b: float) -> None:
    model = _model(catalog, model_id)
    assert model.is_moe
    assert model.active_params / 1e9 == pytest.approx(expected_b, rel=0.03)


def test_dense_models_have_active_equal_total(catalog: ProfileCatalog) -> None:
    for model_id in catalog.ids("models"):
        model = _model(catalog, model_id)
        if not model.is_moe:
            assert model.active_params == model.total_params


def test_total_params_within_2pct_of_published(catalog: ProfileCatalog) -> None:
    checked = 0
    for model_id in catalog.ids("models"):
        model = _model(catalog, model_id)
        if model.published_total_params is not None:
            assert model.total_params == pytest.approx(model.published_total_params, rel=0.02), \
                model_id
            checked += 1
    assert checked >= 15


def test_active_params_match_published_in_either_convention(catalog: ProfileCatalog) -> None:
    """Vendors count active params with or without the input embedding (NVIDIA NeMo gpt-oss
    page: 3.6 B / 5.1 B active = ours less the 0.58 B embedding; docs/sources.md#model-configs)."""
    checked = 0
    for model_id in catalog.ids("models"):
        model = _model(catalog, model_id)
        published = model.published_active_params
        if published is None:
            continue
        errors = [abs(candidate / published - 1)
                  for candidate in (model.active_params, model.matmul_params_per_token)]
        assert min(errors) <= 0.03, model_id
        checked += 1
    assert checked >= 5


@pytest.mark.parametrize(("model_id", "expected_g"), sorted(FLOPS_PER_TOKEN_G.items()))
def test_flops_per_token(catalog: ProfileCatalog, model_id: str, expected_g: float) -> None:
    model = _model(catalog, model_id)
    assert 2 * model.active_params / 1e9 == pytest.approx(expected_g, rel=0.01)
    expected_matmul_g = MATMUL_FLOPS_PER_TOKEN_G[model_id]
    if model.tie_word_embeddings:
        # The hand-computed table subtracts the vocab table even when it is tied (OPT), although
        # the rule is "lm_head stays in": with tied weights the table IS the lm_head matmul,
        # so ModelSpec keeps 2·vocab·hidden FLOPs for it.
        expected_matmul_g += 2 * model.vocab_size * model.hidden_size / 1e9
    assert 2 * model.matmul_params_per_token / 1e9 == pytest.approx(expected_matmul_g, rel=0.01)


@pytest.mark.parametrize(("model_id", "expected_gb"), sorted(WEIGHTS_BF16_GB.items()))
def test_weight_bytes(catalog: ProfileCatalog, model_id: str, expected_gb: float) -> None:
    model = _model(catalog, model_id)
    assert model.weight_bytes("bf16") / GB == pytest.approx(expected_gb, rel=0.01)
    assert model.weight_bytes("fp8") / GB == pytest.approx(expected_gb / 2, rel=0.01)


def test_gpt_oss_experts_keep_their_mxfp4_size(catalog: ProfileCatalog) -> None:
    model = _model(catalog, "gpt-oss-120b")
    experts = model.routed_expert_params
    rest = model.total_params - experts
    assert model.weight_bytes("bf16") == pytest.approx(rest * 2 + experts * 0.53125)
    assert model.weight_bytes("fp8") == pytest.approx(rest * 1 + experts * 0.53125)
    assert model.expert_weight_bytes("bf16") == pytest.approx(experts * 0.53125)


# ---- tensor-parallel KV duplication (docs/sources.md#kv-bytes-per-token, TP > kv_heads) ----
TP_TABLE = {
    # model: [(factor, per-GPU bytes/token) for TP 1, 2, 4, 8, 16]
    "qwen2.5-7b": [(1, 57_344), (1, 28_672), (1, 14_336), (2, 14_336), (4, 14_336)],
    "qwen3-235b-a22b": [(1, 192_512), (1, 96_256), (1, 48_128), (2, 48_128), (4, 48_128)],
    "llama-2-70b": [(1, 327_680), (1, 163_840), (1, 81_920), (1, 40_960), (2, 40_960)],
    "llama-3.1-70b": [(1, 327_680), (1, 163_840), (1, 81_920), (1, 40_960), (2, 40_960)],
    "qwen2.5-72b": [(1, 327_680), (1, 163_840), (1, 81_920), (1, 40_960), (2, 40_960)],
    "llama-3.1-405b": [(1, 516_096), (1, 258_048), (1, 129_024), (1, 64_512), (2, 64_512)],
    "llama-3.1-8b": [(1, 131_072), (1, 65_536), (1, 32_768), (1, 16_384), (2, 16_384)],
    "mistral-7b": [(1, 131_072), (1, 65_536), (1, 32_768), (1, 16_384), (2, 16_384)],
    "mixtral-8x7b": [(1, 131_072), (1, 65_536), (1, 32_768), (1, 16_384), (2, 16_384)],
    "mixtral-8x22b": [(1, 229_376), (1, 114_688), (1, 57_344), (1, 28_672), (2, 28_672)],
    "qwen3-8b": [(1, 147_456), (1, 73_728), (1, 36_864), (1, 18_432), (2, 18_432)],
    "qwen2.5-32b": [(1, 262_144), (1, 131_072), (1, 65_536), (1, 32_768), (2, 32_768)],
    "qwen3-32b": [(1, 262_144), (1, 131_072), (1, 65_536), (1, 32_768), (2, 32_768)],
    "gpt-oss-20b": [(1, 49_152), (1, 24_576), (1, 12_288), (1, 6_144), (2, 6_144)],
    "gpt-oss-120b": [(1, 73_728), (1, 36_864), (1, 18_432), (1, 9_216), (2, 9_216)],
    "deepseek-v3": [(1, 70_272), (2, 70_272), (4, 70_272), (8, 70_272), (16, 70_272)],
}
TP_CASES = [(model_id, tp, factor, per_gpu)
            for model_id, row in TP_TABLE.items()
            for tp, (factor, per_gpu) in zip((1, 2, 4, 8, 16), row, strict=True)]


@pytest.mark.parametrize(("model_id", "tp", "factor", "per_gpu"), TP_CASES)
def test_tp_duplication_table(catalog: ProfileCatalog, model_id: str, tp: int, factor: int,
                              per_gpu: int) -> None:
    model = _model(catalog, model_id)
    assert model.kv_duplication_factor(tp) == factor
    assert model.kv_bytes_per_token_per_gpu("bf16", tp) == per_gpu


@pytest.mark.parametrize("model_id", ["opt-13b", "opt-66b", "opt-175b"])
def test_opt_has_no_duplication_up_to_tp16(catalog: ProfileCatalog, model_id: str) -> None:
    model = _model(catalog, model_id)
    for tp in (1, 2, 4, 8, 16):
        assert model.kv_duplication_factor(tp) == 1
        assert model.kv_bytes_per_token_per_gpu("bf16", tp) == model.kv_bytes_per_token(
            "bf16") / tp


# ---- MoE touched fraction (docs/sources.md#kv-bytes-per-token, MoE expert traffic) -------
@pytest.mark.parametrize(("model_id", "batch", "percent"), [
    ("deepseek-v3", 1, 3.1), ("deepseek-v3", 8, 22.4), ("deepseek-v3", 64, 86.9),
    ("gpt-oss-120b", 32, 63.8), ("qwen3-235b-a22b", 16, 64.4), ("gpt-oss-20b", 4, 41.4),
    ("mixtral-8x7b", 8, 90.0),
])
def test_moe_touched_fraction(catalog: ProfileCatalog, model_id: str, batch: int,
                              percent: float) -> None:
    fraction = _model(catalog, model_id).moe_touched_fraction(batch)
    assert 100 * fraction == pytest.approx(percent, abs=0.06)


def test_dense_touched_fraction_is_one(catalog: ProfileCatalog) -> None:
    assert _model(catalog, "llama-3.1-8b").moe_touched_fraction(1) == 1.0


# ---- direct construction (no profiles) --------------------------------------------------
def test_handmade_mla_moe_spec() -> None:
    """A DeepSeek-V3-shaped spec built in code gives the reference numbers."""
    spec = ModelSpec(
        id="ds", name="ds", num_layers=61, hidden_size=7168, intermediate_size=18432,
        num_attention_heads=128, num_kv_heads=128, head_dim=128, vocab_size=129280,
        max_context_tokens=163840, attention="mla",
        moe=MoeSpec(num_experts=256, experts_per_token=8, moe_intermediate_size=2048,
                    shared_experts=1, first_dense_layers=3),
        mla=MlaSpec(kv_lora_rank=512, q_lora_rank=1536, qk_rope_head_dim=64,
                    qk_nope_head_dim=128, v_head_dim=128),
    )
    assert spec.kv_bytes_per_token("bf16") == 70_272
    assert spec.num_moe_layers == 58
    assert spec.num_dense_layers == 3
    assert spec.total_params / 1e9 == pytest.approx(671.03, rel=1e-3)
    assert spec.active_params / 1e9 == pytest.approx(37.55, rel=1e-3)
    assert spec.attention_width == 128 * 192
