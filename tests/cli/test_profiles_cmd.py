"""``pd-advisor profiles list|show`` through the real Typer app (``run_cli`` in conftest)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from advisor.loading.catalog import builtin_profiles_dir

RunCli = Callable[..., Any]


def _no_traceback(result: Any) -> None:
    assert "Traceback" not in result.stdout
    assert "Traceback" not in result.stderr


def test_list_all_kinds(run_cli: RunCli) -> None:
    result = run_cli("profiles", "list", exit_code=0)
    out = result.stdout
    for expected in ("GPU profiles", "Interconnect profiles", "Model profiles",
                     "h100-sxm", "989", "nvlink4", "450", "llama-3.1-70b", "327,680"):
        assert expected in out
    assert result.stderr == ""


def test_list_models_only(run_cli: RunCli) -> None:
    out = run_cli("profiles", "list", "models", exit_code=0).stdout
    assert "llama-3.1-70b" in out
    assert "deepseek-v3" in out
    assert "70,272" in out
    assert "70.55" in out  # total params, billions
    assert "h100-sxm" not in out
    assert "GPU profiles" not in out


def test_list_gpus_and_interconnects(run_cli: RunCli) -> None:
    gpus = run_cli("profiles", "list", "gpus", exit_code=0).stdout
    assert "mi300x" in gpus and "1,307.4" in gpus
    assert "llama" not in gpus
    links = run_cli("profiles", "list", "interconnects", exit_code=0).stdout
    assert "ib-ndr-400" in links and "eth-25" in links and "3.125" in links


def test_list_rejects_unknown_kind(run_cli: RunCli) -> None:
    result = run_cli("profiles", "list", "cpus", exit_code=2)
    _no_traceback(result)


def test_show_model(run_cli: RunCli) -> None:
    result = run_cli("profiles", "show", "llama-3.1-70b", exit_code=0)
    out = result.stdout
    assert "327,680" in out or "327680" in out  # KV bytes/token at BF16
    assert "163,840" in out  # FP8
    assert "total_params" in out and "70.55" in out
    assert "active_params" in out
    assert "weight_bytes_bf16" in out and "141.1" in out
    assert "flops_per_token" in out
    assert "num_kv_heads" in out
    assert "model card: 70B" in out  # published count with its source
    assert "datasheet" in out


def test_show_moe_mla_model(run_cli: RunCli) -> None:
    out = run_cli("profiles", "show", "deepseek-v3", exit_code=0).stdout
    assert "70,272" in out
    assert "mla.kv_lora_rank" in out
    assert "moe.num_experts" in out
    assert "671" in out


def test_show_gpu(run_cli: RunCli) -> None:
    out = run_cli("profiles", "show", "h100-sxm", exit_code=0).stdout
    assert "989" in out and "TFLOP/s" in out
    assert "3,350" in out and "GB/s" in out
    assert "ridge_point_bf16" in out and "295.2" in out
    assert "ridge_point_fp8" in out and "590.7" in out
    assert "decode_bandwidth_efficiency" in out
    assert "aiconfigurator" in out  # sources are shown
    assert "nvlink4" in out


def test_show_ampere_gpu_without_fp8(run_cli: RunCli) -> None:
    out = run_cli("profiles", "show", "a100-80gb-sxm", "--kind", "gpus", exit_code=0).stdout
    assert "no FP8 tensor cores" in out
    assert "none" in out


def test_show_link(run_cli: RunCli) -> None:
    out = run_cli("profiles", "show", "nvlink4", exit_code=0).stdout
    assert "450" in out
    assert "effective_bytes_per_s" in out and "292.5" in out
    assert "scale-up" in out


def test_show_by_path(run_cli: RunCli) -> None:
    path = builtin_profiles_dir() / "models" / "opt-66b.yaml"
    out = run_cli("profiles", "show", str(path), exit_code=0).stdout
    assert "2,359,296" in out


def test_unknown_id_exits_2_with_suggestions(run_cli: RunCli) -> None:
    result = run_cli("profiles", "show", "llama-3.1-7b", "--kind", "models", exit_code=2)
    _no_traceback(result)
    assert result.stdout == ""
    assert result.stderr.startswith(
        "pd-advisor: error: unknown model profile 'llama-3.1-7b'; did you mean: ")
    assert "llama-3.1-70b" in result.stderr


def test_unknown_id_any_kind(run_cli: RunCli) -> None:
    result = run_cli("profiles", "show", "h100", exit_code=2)
    _no_traceback(result)
    assert "pd-advisor: error: unknown profile 'h100'" in result.stderr
    assert "h100-sxm" in result.stderr


def test_missing_file_exits_2(run_cli: RunCli, tmp_path: Path) -> None:
    result = run_cli("profiles", "show", str(tmp_path / "nope.yaml"), exit_code=2)
    _no_traceback(result)
    assert "pd-advisor: error:" in result.stderr


def _user_dir(tmp_path: Path) -> Path:
    data = yaml.safe_load((builtin_profiles_dir() / "gpus" / "h100-sxm.yaml").read_text(
        encoding="utf-8"))
    data["name"] = "My tuned H100"
    data["memory_bandwidth_bytes_per_s"] = {"value": 3.0e12, "kind": "empirical",
                                            "source": "measured by us"}
    (tmp_path / "gpus").mkdir(parents=True)
    (tmp_path / "gpus" / "h100-sxm.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    return tmp_path


def test_profiles_option_overrides_builtin(run_cli: RunCli, tmp_path: Path) -> None:
    user = _user_dir(tmp_path)
    out = run_cli("profiles", "show", "h100-sxm", "--profiles", user, exit_code=0).stdout
    assert "measured by us" in out and "3,000" in out
    listing = run_cli("profiles", "list", "gpus", "--profiles", user, exit_code=0).stdout
    assert "My tuned H100" in listing
    assert "built-in" in listing  # origin column appears with user directories


def test_env_var_overrides_builtin(run_cli: RunCli, tmp_path: Path) -> None:
    user = _user_dir(tmp_path)
    out = run_cli("profiles", "show", "h100-sxm", env={"PD_ADVISOR_PROFILES": str(user)},
                  exit_code=0).stdout
    assert "measured by us" in out


def test_profiles_option_must_be_a_directory(run_cli: RunCli, tmp_path: Path) -> None:
    result = run_cli("profiles", "list", "--profiles", tmp_path / "missing", exit_code=2)
    _no_traceback(result)


def test_invalid_profile_exits_2_naming_file_and_key(run_cli: RunCli, tmp_path: Path) -> None:
    text = (builtin_profiles_dir() / "interconnects" / "nvlink4.yaml").read_text(
        encoding="utf-8").replace("value: 0.65", "value: 6.5")
    (tmp_path / "interconnects").mkdir()
    bad = tmp_path / "interconnects" / "nvlink4.yaml"
    bad.write_text(text, encoding="utf-8")
    result = run_cli("profiles", "show", "nvlink4", "--profiles", tmp_path, exit_code=2)
    _no_traceback(result)
    assert f"{bad}:" in result.stderr
    assert "efficiency.value" in result.stderr
    # listing is not using it: a warning, the valid profiles listed, exit 0 (#21)
    listing = run_cli("profiles", "list", "interconnects", "--profiles", tmp_path, exit_code=0)
    assert "nvlink5" in listing.stdout
    assert "pd-advisor: warning: " in listing.stderr
    assert "efficiency.value" in listing.stderr


def test_profiles_help(run_cli: RunCli) -> None:
    out = run_cli("profiles", "--help", exit_code=0).stdout
    assert "list" in out and "show" in out


def test_show_path_of_unknown_kind_asks_for_kind(run_cli: RunCli, tmp_path: Path) -> None:
    odd = tmp_path / "odd.yaml"
    odd.write_text("id: odd\nfoo: 1\n", encoding="utf-8")
    result = run_cli("profiles", "show", odd, exit_code=2)
    assert "pass --kind" in result.stderr
    result = run_cli("profiles", "show", odd, "--kind", "models", exit_code=2)
    assert f"{odd}:2:1: foo: Extra inputs are not permitted" in result.stderr


# ---- engine profiles (#15) -------------------------------------------------------------------
def test_list_engines(run_cli: RunCli) -> None:
    result = run_cli("profiles", "list", "engines", exit_code=0)
    out = result.stdout
    assert "Engine profiles" in out
    for expected in ("vllm-v0", ">=0.4,<0.8", "sglang-0.3", "trtllm-legacy", "vLLM V1 engine",
                     "2,048"):
        assert expected in out
    assert "h100-sxm" not in out and result.stderr == ""
    assert "Engine profiles" in run_cli("profiles", "list", exit_code=0).stdout


def test_show_engine_by_name(run_cli: RunCli) -> None:
    """``profiles show vllm`` is the current vLLM family, every number sourced."""
    out = run_cli("profiles", "show", "vllm", exit_code=0).stdout
    assert "engine profile 'vllm'" in out and "versions >=0.8" in out
    for expected in ("step_overhead_s", "request_overhead_s", "weight_bandwidth_efficiency",
                     "kv_bandwidth_efficiency", "allreduce_overhead_s", "layer_overhead_s",
                     "logits_bytes_per_entry", "launch defaults", "16,384", "8,192", "a100",
                     "NixlConnector", "DP attention", "token_budget.a100-80gb-sxm",
                     "allreduce_software_tp8"):
        assert expected in out, expected
    legacy = run_cli("profiles", "show", "trtllm-legacy", exit_code=0).stdout
    assert ">=0.5,<0.17" in legacy and "TensorRT-LLM 0.5-0.16" in legacy


def test_profiles_option_overrides_and_adds_engines(run_cli: RunCli, tmp_path: Path) -> None:
    source = (builtin_profiles_dir() / "engines" / "vllm.yaml").read_text(encoding="utf-8")
    (tmp_path / "engines").mkdir()
    (tmp_path / "engines" / "vllm.yaml").write_text(
        source.replace("name: vLLM V1 engine", "name: vLLM site build"), encoding="utf-8")
    (tmp_path / "engines" / "vllm-next.yaml").write_text(
        source.replace("id: vllm\n", "id: vllm-next\n").replace('">=0.8"', '">=0.30"'),
        encoding="utf-8")
    listing = run_cli("profiles", "list", "engines", "--profiles", tmp_path, exit_code=0).stdout
    assert "vLLM site build" in listing and "vllm-next" in listing and "built-in" in listing
    out = run_cli("profiles", "show", "vllm", "--profiles", tmp_path, exit_code=0).stdout
    assert "vLLM site build" in out and str(tmp_path) in out


def test_engine_profile_missing_source_exits_2(run_cli: RunCli, tmp_path: Path) -> None:
    text = (builtin_profiles_dir() / "engines" / "sglang.yaml").read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    index = next(i for i, line in enumerate(lines) if line.startswith("request_overhead_s:"))
    del lines[index + 3]  # its source line
    (tmp_path / "engines").mkdir()
    bad = tmp_path / "engines" / "sglang.yaml"
    bad.write_text("".join(lines), encoding="utf-8")
    result = run_cli("profiles", "show", "sglang", "--profiles", tmp_path, exit_code=2)
    _no_traceback(result)
    assert f"{bad}:{index + 1}:1: request_overhead_s.source: Field required" in result.stderr
