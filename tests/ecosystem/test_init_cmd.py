"""`pd-advisor init` writes a commented workload that validates (issue #7, item 4)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft7Validator

from advisor.cli.init_cmd import SCHEMA_URL
from advisor.loading.catalog import ProfileCatalog
from advisor.loading.resolve import load_scenario
from advisor.loading.schema_export import SCHEMA_PATH

HF_DIR = Path(__file__).resolve().parent.parent / "data" / "ecosystem" / "hf"


def _validate_everywhere(path: Path, run_cli: Callable[..., Any]) -> Any:
    """The file passes `pd-advisor validate`, the loader and the committed JSON Schema."""
    run_cli("validate", path, exit_code=0)
    Draft7Validator(json.loads(SCHEMA_PATH.read_text())).validate(yaml.safe_load(path.read_text()))
    return load_scenario(path, ProfileCatalog(env={}))


def test_default_file(tmp_path: Path, run_cli: Callable[..., Any],
                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = run_cli("init", exit_code=0)
    path = tmp_path / "workload.yaml"
    text = path.read_text()
    assert text.splitlines()[0] == f"# yaml-language-server: $schema={SCHEMA_URL}"
    assert SCHEMA_URL.endswith("/advisor/schemas/workload.schema.json")
    assert "wrote workload.yaml" in result.stderr
    scenario = _validate_everywhere(path, run_cli)
    assert scenario.model.id == "llama-3.1-8b" and scenario.cluster.gpu.id == "h100-sxm"
    assert scenario.cluster.gpus == 8 and scenario.precision == "bf16"
    assert scenario.deployment is not None and scenario.deployment.tensor_parallel == 1
    # commented: most lines explain themselves
    body = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    assert sum("#" in line for line in body) >= len(body) * 0.6
    # the file is a real input: recommend and check run on it
    run_cli("recommend", path, "--format", "json", exit_code=0)
    assert run_cli("check", path).exit_code in (0, 1)


@pytest.mark.parametrize(("model", "gpu", "gpus", "precision", "tp"), [
    # 141 GB of BF16 weights: TP2 leaves 70.5 GB per GPU against 77.3 GB usable, less vLLM's
    # 3.5 GiB runtime reserve and 3.5 GB of sampler buffers for 1,024 sequences x 128,256
    # vocabulary entries (#15): no KV room, so TP4
    ("llama-3.1-70b", "h100-sxm", 8, "bf16", 4),
    ("opt-13b", "a100-80gb-sxm", 4, "bf16", 1),
    ("deepseek-v3", "h200-sxm", 8, "fp8", 8),
])
def test_model_and_gpu_choices(tmp_path: Path, run_cli: Callable[..., Any], model: str, gpu: str,
                               gpus: int, precision: str, tp: int) -> None:
    path = tmp_path / "w.yaml"
    run_cli("init", "--model", model, "--gpu", gpu, "--gpus", gpus, "-o", path, exit_code=0)
    scenario = _validate_everywhere(path, run_cli)
    assert (scenario.model.id, scenario.cluster.gpu.id, scenario.cluster.gpus) == (model, gpu,
                                                                                  gpus)
    assert scenario.precision == precision
    assert scenario.deployment.tensor_parallel == tp
    # request lengths fit the context window (OPT: 2,048 tokens)
    phase = scenario.phases[0]
    assert phase.prompt_tokens.quantile(0.95) + phase.output_tokens.quantile(0.95) <= \
        scenario.model.max_context_tokens


def test_multi_node_gets_a_nic_and_a_note_when_nothing_fits(
        tmp_path: Path, run_cli: Callable[..., Any]) -> None:
    path = tmp_path / "w.yaml"
    run_cli("init", "--model", "deepseek-v3", "--gpus", "16", "-o", path, exit_code=0)
    text = path.read_text()
    assert "\n  inter_node: ib-ndr-400" in text
    assert "# NOTE: the model does not fit one node's GPUs" in text
    scenario = _validate_everywhere(path, run_cli)
    assert scenario.deployment.tensor_parallel is None


def test_config_json_model(tmp_path: Path, run_cli: Callable[..., Any]) -> None:
    path = tmp_path / "sub" / "w.yaml"
    path.parent.mkdir()
    run_cli("init", "--model", HF_DIR / "qwen3-8b", "-o", path, exit_code=0)
    scenario = _validate_everywhere(path, run_cli)
    assert scenario.model.kv_bytes_per_token("bf16") == 147_456


def test_stdout_and_overwrite_rules(tmp_path: Path, run_cli: Callable[..., Any]) -> None:
    result = run_cli("init", "-o", "-", exit_code=0)
    assert result.stdout.startswith("# yaml-language-server: $schema=")
    path = tmp_path / "w.yaml"
    path.write_text("keep me\n")
    result = run_cli("init", "-o", path, exit_code=2)
    assert "exists; pass --force" in result.stderr and path.read_text() == "keep me\n"
    run_cli("init", "-o", path, "--force", exit_code=0)
    assert path.read_text().startswith("# yaml-language-server")


def test_unknown_ids_exit_2_with_suggestions(run_cli: Callable[..., Any]) -> None:
    result = run_cli("init", "--model", "llama3", "-o", "-", exit_code=2)
    assert "unknown model profile 'llama3'; did you mean" in result.stderr
    result = run_cli("init", "--gpu", "h100", "-o", "-", exit_code=2)
    assert "unknown GPU profile 'h100'" in result.stderr
