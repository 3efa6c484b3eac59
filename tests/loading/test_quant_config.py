"""A config.json ``quantization_config`` read as the weight format of each layer group
(#29 item 2; docs/model.md §1.1). Fixtures: tests/data/quant/README.md."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from advisor.core.precision import GroupFormats, Precision
from advisor.loading.catalog import ProfileCatalog, ProfileInvalidError
from advisor.loading.errors import InputError
from advisor.loading.resolve import load_scenario

DATA = Path(__file__).resolve().parent.parent / "data"
QUANT = DATA / "quant"
HF = DATA / "ecosystem" / "hf"


@pytest.fixture(scope="module")
def catalog() -> ProfileCatalog:
    return ProfileCatalog(env={})


def _formats(catalog: ProfileCatalog, path: Path) -> GroupFormats | None:
    return catalog.model(str(path)).checkpoint_formats


def test_modelopt_nvfp4_deepseek(catalog: ProfileCatalog) -> None:
    """nvidia/DeepSeek-V3-0324-FP4: attention and LM head excluded, experts and the dense
    layers (dense FFNs, shared experts) NVFP4."""
    assert _formats(catalog, QUANT / "deepseek-v3-nvfp4") == GroupFormats(
        experts="fp4", attention="bf16", dense="fp4", lm_head="bf16")


def test_modelopt_nvfp4_weight_bytes(catalog: ProfileCatalog) -> None:
    m = catalog.model(str(QUANT / "deepseek-v3-nvfp4"))
    fp4, bf16 = 4.5 / 8, 2.0
    hand = (m.attention_group_params * bf16
            + (m.dense_group_params + m.routed_expert_params) * fp4
            + (m.lm_head_params + m.embedding_params) * bf16)
    assert m.weight_bytes("fp4") == pytest.approx(hand, rel=1e-12)
    # the checkpoint's 16-bit attention makes it 11.41 G × (2 − 0.5625) B larger than fp4
    builtin = catalog.model("deepseek-v3")
    assert m.weight_bytes("fp4") - builtin.weight_bytes("fp4") == pytest.approx(
        m.attention_group_params * (bf16 - fp4), rel=1e-9)


def test_compressed_tensors_int4_kimi(catalog: ProfileCatalog) -> None:
    """nvidia/Kimi-K2.5-NVFP4 (text_config): int4 experts, everything the ignore list names
    (attention, shared experts, the dense layer's FFN, LM head) 16 bit."""
    assert _formats(catalog, QUANT / "kimi-k2-int4") == GroupFormats(
        experts="int4", attention="bf16", dense="bf16", lm_head="bf16")


def test_mxfp4_gpt_oss(catalog: ProfileCatalog) -> None:
    """openai/gpt-oss-120b: MXFP4 experts; attention, router, embeddings, LM head BF16."""
    assert _formats(catalog, HF / "gpt-oss-120b") == GroupFormats(
        experts="mxfp4", attention="bf16", dense="bf16", lm_head="bf16")


def test_fp8_block_deepseek(catalog: ProfileCatalog) -> None:
    """deepseek-ai/DeepSeek-V3: 128×128 block FP8 on every linear layer and expert; the LM
    head stays 16 bit (vLLM's Fp8Config quantises linear and MoE layers only)."""
    assert _formats(catalog, HF / "deepseek-v3") == GroupFormats(
        experts="fp8-block", attention="fp8-block", dense="fp8-block", lm_head="bf16")


def test_no_quantization_config_no_formats(catalog: ProfileCatalog) -> None:
    assert _formats(catalog, HF / "llama-3.1-8b") is None


def _write(tmp_path: Path, quant: Any, base: Path = HF / "llama-3.1-8b") -> Path:
    data = json.loads((base / "config.json").read_text())
    data["quantization_config"] = quant
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data, indent=2))
    return path


def _ct(weights: dict[str, Any], ignore: list[str] | None = None) -> dict[str, Any]:
    return {"quant_method": "compressed-tensors", "ignore": ignore or ["lm_head"],
            "config_groups": {"group_0": {"targets": ["Linear"], "weights": weights}}}


@pytest.mark.parametrize(("weights", "fmt"), [
    ({"num_bits": 4, "type": "float", "group_size": 16}, "fp4"),
    ({"num_bits": 4, "type": "float", "group_size": 32}, "mxfp4"),
    ({"num_bits": 4, "type": "int", "group_size": 128}, "int4"),
    ({"num_bits": 8, "type": "float", "strategy": "channel"}, "fp8"),
    ({"num_bits": 8, "type": "float", "strategy": "block"}, "fp8-block"),
])
def test_compressed_tensors_formats_dense_model(tmp_path: Path, catalog: ProfileCatalog,
                                                weights: dict[str, Any], fmt: str) -> None:
    """A dense model: no experts group; lm_head ignored → 16 bit."""
    got = _formats(catalog, _write(tmp_path, _ct(weights)))
    assert got == GroupFormats(attention=fmt, dense=fmt, lm_head="bf16")


def test_modelopt_partial_exclusion_takes_the_majority(tmp_path: Path,
                                                       catalog: ProfileCatalog) -> None:
    """o_proj alone excluded: 1 of 4 attention projections → the group stays fp4; q, k, v
    excluded: 3 of 4 → 16 bit (docs/model.md §1.1: the majority of the group's modules)."""
    one = {"quant_method": "modelopt", "quant_algo": "NVFP4", "ignore": ["*o_proj"]}
    (tmp_path / "one").mkdir()
    (tmp_path / "three").mkdir()
    assert _formats(catalog, _write(tmp_path / "one", one)).attention == "fp4"
    three = {**one, "ignore": ["*q_proj", "*k_proj", "*v_proj"]}
    assert _formats(catalog, _write(tmp_path / "three", three)).attention == "bf16"


def test_unknown_method_is_not_read(tmp_path: Path, catalog: ProfileCatalog) -> None:
    awq = {"quant_method": "awq", "bits": 4, "group_size": 128}
    assert _formats(catalog, _write(tmp_path, awq)) is None


@pytest.mark.parametrize(("quant", "key", "message"), [
    (_ct({"num_bits": 8, "type": "int"}), "quantization_config.config_groups.group_0.weights",
     "8-bit int weights are not a format pd-advisor models"),
    ({"quant_method": "modelopt", "quant_algo": "W4A8_AWQ"}, "quantization_config.quant_algo",
     "'W4A8_AWQ' is not read"),
    ({"quant_method": "fp8", "modules_to_not_convert": "lm_head"},
     "quantization_config.modules_to_not_convert", "expected a list of module names"),
    ({"quant_method": "mxfp4"}, "quantization_config.quant_method",
     "mxfp4 quantises the routed experts of an MoE model"),
])
def test_bad_quantization_config_is_located(tmp_path: Path, catalog: ProfileCatalog,
                                            quant: dict[str, Any], key: str,
                                            message: str) -> None:
    path = _write(tmp_path, quant)
    with pytest.raises(ProfileInvalidError) as info:
        catalog.model(str(path))
    (problem,) = info.value.problems
    assert f": {key}: {message}" in problem
    line, col = problem.split(":")[:2]
    text = path.read_text().splitlines()
    leaf = key.rsplit(".", 1)[-1]
    assert f'"{leaf}"' in text[int(line) - 1] and int(col) > 1


WORKLOAD = """\
version: 1
model: {model}
precision: {precision}
cluster:
  gpu: {gpu}
  gpus: 8
traffic:
  rate_rps: 2
  prompt_tokens: 1000
  output_tokens: 200
deployment:
  mode: colocated
"""


def _workload(tmp_path: Path, model: Path | str, precision: str, gpu: str) -> Path:
    path = tmp_path / "w.yaml"
    path.write_text(WORKLOAD.format(model=model, precision=precision, gpu=gpu))
    return path


def test_checkpoint_formats_reach_the_scenario(tmp_path: Path, catalog: ProfileCatalog) -> None:
    sc = load_scenario(_workload(tmp_path, QUANT / "deepseek-v3-nvfp4", "fp4", "b200"),
                       catalog)
    p = sc.model.formats(sc.precision)
    assert (p.experts, p.attention, p.dense, p.lm_head) == ("fp4", "bf16", "fp4", "bf16")


def test_workload_group_keys_reach_the_scenario(tmp_path: Path,
                                                catalog: ProfileCatalog) -> None:
    sc = load_scenario(_workload(tmp_path, "deepseek-v3",
                                 "{weights: fp4, kv_cache: bf16, attention: fp8, dense: fp8}",
                                 "b200"), catalog)
    assert sc.precision == Precision(weights="fp4", kv_cache="bf16", attention="fp8", dense="fp8")


def _problems(path: Path, catalog: ProfileCatalog) -> list[tuple[int, int, str, str]]:
    with pytest.raises(InputError) as info:
        load_scenario(path, catalog)
    return [(p.line, p.col, p.key, p.message) for p in info.value.problems]


def test_fp4_group_before_blackwell_is_located(tmp_path: Path, catalog: ProfileCatalog) -> None:
    path = _workload(tmp_path, "deepseek-v3", "{weights: fp8, kv_cache: bf16, experts: fp4}",
                     "h200-sxm")
    (problem,) = _problems(path, catalog)
    assert problem[:3] == (3, 52, "precision.experts")  # the value fp4
    assert "fp4 (NVFP4) weights (experts) need FP4 tensor cores" in problem[3]


def test_unknown_group_format_is_located(tmp_path: Path, catalog: ProfileCatalog) -> None:
    path = _workload(tmp_path, "deepseek-v3", "{weights: fp8, kv_cache: bf16, dense: fp6}",
                     "h200-sxm")
    (problem,) = _problems(path, catalog)
    assert problem[:3] == (3, 50, "precision.dense")  # the value fp6
    assert "got 'fp6'" in problem[3]


def test_unknown_group_is_located(tmp_path: Path, catalog: ProfileCatalog) -> None:
    path = _workload(tmp_path, "deepseek-v3", "{weights: fp8, kv_cache: bf16, mlp: fp8}",
                     "h200-sxm")
    (problem,) = _problems(path, catalog)
    assert problem[2] == "precision.mlp"
    assert "unknown key 'mlp'" in problem[3]


def test_fp4_checkpoint_before_blackwell_is_located_at_the_model(
        tmp_path: Path, catalog: ProfileCatalog) -> None:
    """An NVFP4 checkpoint on an H200 with a workload that says fp8: the checkpoint's fp4
    experts and dense layers are named at ``model``; setting the groups clears it."""
    path = _workload(tmp_path, QUANT / "deepseek-v3-nvfp4", "fp8", "h200-sxm")
    problems = _problems(path, catalog)
    assert [p[:3] for p in problems] == [(2, 8, "model"), (2, 8, "model")]
    assert "weights (experts, as the model's checkpoint stores them)" in problems[0][3]
    assert "weights (dense, as the model's checkpoint stores them)" in problems[1][3]
    fixed = _workload(tmp_path, QUANT / "deepseek-v3-nvfp4",
                      "{weights: fp8, kv_cache: bf16, experts: fp8, dense: fp8}", "h200-sxm")
    sc = load_scenario(fixed, catalog)
    assert sc.model.formats(sc.precision).attention == "bf16"


def test_bad_group_exits_2_with_a_located_line(run_cli, tmp_path: Path) -> None:
    path = _workload(tmp_path, "deepseek-v3", "{weights: fp8, kv_cache: bf16, experts: fp4}",
                     "h200-sxm")
    result = run_cli("validate", path, exit_code=2)
    assert f"{path}:3:52: error: precision.experts: fp4 (NVFP4) weights (experts)" in (
        result.stderr)
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_validate_shows_the_formats_in_force(run_cli, tmp_path: Path) -> None:
    path = _workload(tmp_path, QUANT / "deepseek-v3-nvfp4",
                     "{weights: fp4, kv_cache: bf16, dense: fp8}", "b200")
    result = run_cli("validate", path, exit_code=0)
    shown = " ".join(result.stdout.split())
    assert "fp4, experts fp4, attention bf16, dense fp8, lm-head bf16" in shown


def test_json_report_gives_each_groups_formats(run_cli, tmp_path: Path) -> None:
    """The NVFP4 checkpoint on B200 with FP8 dense layers: the groups in ``precision_tensors``
    (stored format, compute format: 16-bit attention computes in 16 bit), valid against the
    report schema; a one-word precision on a built-in profile has no ``groups``."""
    import jsonschema

    from advisor.render.report_schema import SCHEMA_PATH

    schema = json.loads(SCHEMA_PATH.read_text())
    path = _workload(tmp_path, QUANT / "deepseek-v3-nvfp4",
                     "{weights: fp4, kv_cache: bf16, dense: fp8}", "b200")
    doc = json.loads(run_cli("recommend", path, "--format", "json", exit_code=0).stdout)
    jsonschema.validate(doc, schema)
    groups = doc["inputs"]["precision_tensors"]["groups"]
    assert groups == {"experts": {"weights": "fp4", "compute": "fp4"},
                      "attention": {"weights": "bf16", "compute": "bf16"},
                      "dense": {"weights": "fp8", "compute": "fp8"},
                      "lm_head": {"weights": "bf16", "compute": "bf16"}}
    plain = _workload(tmp_path, "deepseek-v3", "fp4", "b200")
    doc = json.loads(run_cli("recommend", plain, "--format", "json", exit_code=0).stdout)
    assert "groups" not in doc["inputs"]["precision_tensors"]
