"""Model profiles derived from a Hugging Face config.json (issue #7, item 1).

The fixtures under tests/data/ecosystem/hf/<profile id>/config.json carry the architecture
fields of the official config files (docs/sources.md#model-configs) in their shape (nothing
is downloaded). Each must derive exactly the built-in profile of the same model.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from advisor.core.model_arch import ModelSpec
from advisor.loading import hf_config
from advisor.loading.catalog import ProfileCatalog, ProfileInvalidError, ProfileNotFoundError
from advisor.loading.errors import InputError
from advisor.loading.resolve import load_scenario

HF_DIR = Path(__file__).resolve().parent.parent / "data" / "ecosystem" / "hf"
FIXTURES = sorted(p.name for p in HF_DIR.iterdir() if (p / "config.json").is_file())

# model_type of every fixture: together they cover every supported architecture
MODEL_TYPES = {
    "llama-3.1-8b": "llama", "llama-2-7b": "llama", "mistral-7b": "mistral",
    "qwen2.5-7b": "qwen2", "qwen3-8b": "qwen3", "qwen3-32b": "qwen3",
    "mixtral-8x7b": "mixtral", "qwen3-235b-a22b": "qwen3_moe", "deepseek-v3": "deepseek_v3",
    "gpt-oss-20b": "gpt_oss", "gpt-oss-120b": "gpt_oss", "opt-13b": "opt",
}


@pytest.fixture(scope="module")
def catalog() -> ProfileCatalog:
    return ProfileCatalog(env={})


def _architecture_only(spec: ModelSpec) -> ModelSpec:
    """The spec without the fields a config.json cannot know (names, published counts) and
    the one a built-in profile does not carry: the checkpoint's formats per layer group (a
    built-in profile is the architecture, served from any checkpoint of it; a config.json
    is one checkpoint, tested in tests/loading/test_quant_config.py)."""
    return dataclasses.replace(spec, id="-", name="-", published_total_params=None,
                               published_active_params=None, checkpoint_formats=None)


def _config(name: str) -> dict[str, Any]:
    return json.loads((HF_DIR / name / "config.json").read_text())


def _write(tmp_path: Path, data: dict[str, Any], name: str = "config.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def test_fixtures_cover_every_supported_architecture() -> None:
    assert sorted(FIXTURES) == sorted(MODEL_TYPES)
    assert {_config(n)["model_type"] for n in FIXTURES} == set(hf_config.SUPPORTED_ARCHITECTURES)
    assert set(hf_config._MAPPERS) == set(hf_config.SUPPORTED_ARCHITECTURES)


@pytest.mark.parametrize("name", FIXTURES)
def test_config_derives_the_builtin_profile(catalog: ProfileCatalog, name: str) -> None:
    derived = _architecture_only(catalog.model(str(HF_DIR / name / "config.json")))
    builtin = catalog.model(name)
    assert derived == _architecture_only(builtin)
    # the derived quantities, spelled out (they follow from the equality above)
    assert derived.total_params == pytest.approx(builtin.total_params, rel=1e-12)
    assert derived.active_params == pytest.approx(builtin.active_params, rel=1e-12)
    for precision in ("bf16", "fp8"):
        assert derived.kv_bytes_per_token(precision) == builtin.kv_bytes_per_token(precision)
        assert derived.weight_bytes(precision) == pytest.approx(builtin.weight_bytes(precision))
    assert derived.kv_bytes_per_sequence(8192, "bf16") == builtin.kv_bytes_per_sequence(8192,
                                                                                       "bf16")


@pytest.mark.parametrize(("name", "kv_bytes"), [
    ("llama-3.1-8b", 131_072), ("llama-2-7b", 524_288), ("qwen2.5-7b", 57_344),
    ("qwen3-8b", 147_456), ("qwen3-235b-a22b", 192_512), ("deepseek-v3", 70_272),
    ("gpt-oss-120b", 73_728), ("opt-13b", 819_200)])
def test_kv_bytes_per_token_match_models_md(catalog: ProfileCatalog, name: str,
                                            kv_bytes: int) -> None:
    """BF16 bytes per token: 2 · layers · kv_heads · head_dim · 2, or (kv_lora_rank +
    qk_rope_head_dim) · layers · 2 for MLA (docs/sources.md#kv-bytes-per-token)."""
    assert catalog.model(str(HF_DIR / name)).kv_bytes_per_token("bf16") == kv_bytes


def test_folder_and_file_refs_are_equivalent(catalog: ProfileCatalog) -> None:
    folder = catalog.model(str(HF_DIR / "mixtral-8x7b"))
    file = catalog.model(str(HF_DIR / "mixtral-8x7b" / "config.json"))
    assert folder == file
    assert catalog.kind_of(str(HF_DIR / "mixtral-8x7b")) == ["models"]


def test_profile_keeps_the_source_and_a_valid_id(catalog: ProfileCatalog) -> None:
    profile, path = catalog.raw("models", str(HF_DIR / "llama-3.1-8b"))
    assert path == (HF_DIR / "llama-3.1-8b" / "config.json").resolve()
    assert profile.id == "meta-llama-llama-3.1-8b"
    assert profile.name == "meta-llama/Llama-3.1-8B"
    assert str(path) in profile.architecture.source
    assert "model_type llama" in profile.architecture.source
    assert profile.architecture.kind == "datasheet"


def test_name_falls_back_to_the_folder(tmp_path: Path, catalog: ProfileCatalog) -> None:
    folder = tmp_path / "My Model_v2"
    folder.mkdir()
    data = _config("qwen3-8b")
    data["_name_or_path"] = "/local/checkpoints/x"
    _write(folder, data)
    profile, _ = catalog.raw("models", str(folder))
    assert profile.name == "My Model_v2"
    assert profile.id == "my-model_v2"


def test_model_type_recovered_from_architectures(tmp_path: Path) -> None:
    data = _config("llama-3.1-8b")
    del data["model_type"]
    profile = hf_config.load_hf_profile(_write(tmp_path, data))
    assert profile.architecture.num_kv_heads == 8


def test_unsupported_architecture_names_field_and_choices(tmp_path: Path) -> None:
    path = _write(tmp_path, {"model_type": "bert", "hidden_size": 768})
    with pytest.raises(ProfileInvalidError) as info:
        hf_config.load_hf_profile(path)
    text = str(info.value)
    assert "model_type: 'bert' is not supported" in text
    for arch in hf_config.SUPPORTED_ARCHITECTURES:
        assert arch in text


def test_missing_model_type_and_unknown_class(tmp_path: Path) -> None:
    path = _write(tmp_path, {"architectures": ["BertModel"]})
    with pytest.raises(ProfileInvalidError, match=r"model_type: missing.*supported architectures"):
        hf_config.load_hf_profile(path)


def test_every_missing_field_is_reported(tmp_path: Path) -> None:
    data = _config("qwen3-235b-a22b")
    for key in ("num_hidden_layers", "num_experts", "moe_intermediate_size"):
        del data[key]
    data["hidden_size"] = "4096"
    with pytest.raises(ProfileInvalidError) as info:
        hf_config.load_hf_profile(_write(tmp_path, data))
    problems = info.value.problems
    assert any(p.startswith("num_hidden_layers: missing required field") for p in problems)
    assert any(p.startswith("num_experts: missing") for p in problems)
    assert any(p.startswith("moe_intermediate_size: missing") for p in problems)
    # a field that is present is placed at its value's line:col (#21)
    assert any(re.fullmatch(r"\d+:\d+: hidden_size: expected a whole number.*", p)
               for p in problems), problems
    assert all("(model_type qwen3_moe)" in p for p in problems)


@pytest.mark.parametrize(("text", "message"), [
    ("{\"model_type\": \"llama\",", "invalid JSON"),
    ("[1, 2]", "expected a JSON object"),
])
def test_bad_json(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(text)
    with pytest.raises(ProfileInvalidError, match=message):
        hf_config.load_hf_profile(path)


def test_layer_mix_that_cannot_be_modelled(tmp_path: Path) -> None:
    data = _config("qwen3-235b-a22b")
    data["mlp_only_layers"] = [10]
    with pytest.raises(ProfileInvalidError, match="mlp_only_layers: dense layers after"):
        hf_config.load_hf_profile(_write(tmp_path, data))
    data["mlp_only_layers"] = [0, 1]  # leading dense layers are fine
    profile = hf_config.load_hf_profile(_write(tmp_path, data))
    assert profile.architecture.moe.first_dense_layers == 2


def test_sliding_window_variants(tmp_path: Path) -> None:
    mistral = _config("mistral-7b")
    mistral["sliding_window"] = None  # v0.2+: full attention
    assert hf_config.load_hf_profile(_write(tmp_path, mistral)).architecture.\
        sliding_window_layers == 0
    qwen = _config("qwen2.5-7b")
    qwen.update(use_sliding_window=True, sliding_window=4096, max_window_layers=20)
    arch = hf_config.load_hf_profile(_write(tmp_path, qwen)).architecture
    assert (arch.sliding_window_tokens, arch.sliding_window_layers) == (4096, 8)


def test_gpt_oss_without_mxfp4_keeps_16_bit_experts(tmp_path: Path) -> None:
    data = _config("gpt-oss-20b")
    del data["quantization_config"]
    assert hf_config.load_hf_profile(_write(tmp_path, data)).architecture.moe.\
        expert_weight_bytes_per_param is None


def test_config_ref_that_does_not_exist(catalog: ProfileCatalog) -> None:
    with pytest.raises(ProfileNotFoundError, match=r"no model profile file at 'missing\.json'"):
        catalog.model("missing.json")


def test_workload_model_may_be_a_config_folder(tmp_path: Path, catalog: ProfileCatalog) -> None:
    checkpoint = tmp_path / "ckpt"
    checkpoint.mkdir()
    (checkpoint / "config.json").write_text((HF_DIR / "qwen3-8b" / "config.json").read_text())
    for ref in ("./ckpt", "ckpt/config.json"):  # a bare name is an id, not a folder
        workload = tmp_path / "w.yaml"
        workload.write_text(f"version: 1\nmodel: {ref}\nprecision: bf16\n"
                            "cluster: {gpu: h100-sxm, gpus: 8}\n"
                            "traffic: {rate_rps: 2, prompt_tokens: 1000, output_tokens: 200}\n")
        scenario = load_scenario(workload, catalog)
        assert _architecture_only(scenario.model) == _architecture_only(catalog.model("qwen3-8b"))


def test_workload_with_an_unsupported_config_is_an_input_error(tmp_path: Path,
                                                                catalog: ProfileCatalog) -> None:
    (tmp_path / "bert").mkdir()
    _write(tmp_path / "bert", {"model_type": "bert"})
    workload = tmp_path / "w.yaml"
    workload.write_text("version: 1\nmodel: bert\nprecision: bf16\n"
                        "cluster: {gpu: h100-sxm, gpus: 8}\n"
                        "traffic: {rate_rps: 2, prompt_tokens: 1000, output_tokens: 200}\n")
    # an id-like ref is an id: point at the folder with a path
    workload.write_text(workload.read_text().replace("model: bert", "model: ./bert"))
    with pytest.raises(InputError) as info:
        load_scenario(workload, catalog)
    text = info.value.format()
    assert "model: model profile './bert' is invalid" in text
    assert "model_type: 'bert' is not supported" in text


def test_profiles_show_prints_the_derived_profile(run_cli: Callable[..., Any]) -> None:
    result = run_cli("profiles", "show", HF_DIR / "deepseek-v3" / "config.json", exit_code=0)
    out = result.stdout
    assert "model profile 'deepseek-v3'" in out
    assert "model_type deepseek_v3" in out
    assert "mla.kv_lora_rank" in out
    assert "70,272" in out  # KV bytes per token at BF16: (512 + 64) · 61 · 2 (MLA)
    assert "671" in out


def test_profiles_show_unsupported_config_exits_2(tmp_path: Path,
                                                  run_cli: Callable[..., Any]) -> None:
    path = _write(tmp_path, {"model_type": "t5"})
    result = run_cli("profiles", "show", path, exit_code=2)
    assert "model_type: 't5' is not supported; supported architectures: deepseek_v3" in \
        result.stderr


REUSED_DIR = HF_DIR.parent / "hf-reused"
"""Checkpoints that reuse a supported architecture under their own ``model_type`` (no
built-in twin): Kimi-K2-Instruct's config.json fields (moonshotai/Kimi-K2-Instruct on the
Hugging Face Hub; model_type ``kimi_k2``, architectures ``DeepseekV3ForCausalLM``)."""


def test_a_reused_architecture_is_read_by_its_class(catalog: ProfileCatalog) -> None:
    path = REUSED_DIR / "kimi-k2" / "config.json"
    spec = catalog.model(str(path))
    # the Kimi K2 model card: 1 T total parameters, 32 B activated (rounded figures)
    assert spec.total_params == pytest.approx(1.0e12, rel=0.05)
    assert spec.active_params == pytest.approx(32e9, rel=0.05)
    assert spec.moe is not None and spec.moe.num_experts == 384
    assert spec.mla is not None and spec.num_attention_heads == 64
    # MLA: (kv_lora_rank + rope dim) × layers × 2 bytes, as DeepSeek-V3's
    assert spec.kv_bytes_per_token("bf16") == (512 + 64) * 61 * 2
    profile, _ = catalog.raw("models", str(path))
    assert ("model_type kimi_k2, read as deepseek_v3 by its architectures "
            "['DeepseekV3ForCausalLM']") in profile.architecture.source


def test_an_unknown_type_of_an_unknown_class_is_refused(tmp_path: Path) -> None:
    data = _config("deepseek-v3")
    data["model_type"] = "kimi_k2"
    data["architectures"] = ["KimiForCausalLM"]
    with pytest.raises(ProfileInvalidError, match=r"model_type: 'kimi_k2' is not supported"):
        hf_config.load_hf_profile(_write(tmp_path, data))


def test_a_supported_type_wins_over_its_architectures(tmp_path: Path) -> None:
    data = _config("qwen3-8b")
    data["architectures"] = ["LlamaForCausalLM"]
    profile = hf_config.load_hf_profile(_write(tmp_path, data))
    assert "model_type qwen3;" in profile.architecture.source
