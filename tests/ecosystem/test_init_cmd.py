"""`pd-advisor init` writes a commented workload that validates (issue #7, item 4), and a
schema line that resolves: a path, relative to the workload, to the JSON Schema written beside
it (issue #18, item 3)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft7Validator

from advisor.loading.catalog import ProfileCatalog
from advisor.loading.resolve import load_scenario
from advisor.loading.schema_export import SCHEMA_PATH

MODELINE = "# yaml-language-server: $schema="

HF_DIR = Path(__file__).resolve().parent.parent / "data" / "ecosystem" / "hf"


def _schema_target(path: Path) -> Path | None:
    """The file the first line's ``$schema=`` names, resolved as yaml-language-server does
    (a relative path against the workload's directory); None without a schema line."""
    first = path.read_text(encoding="utf-8").splitlines()[0]
    if not first.startswith(MODELINE):
        assert "$schema" not in path.read_text(encoding="utf-8")
        return None
    ref = first.removeprefix(MODELINE)
    assert "://" not in ref, "a URL: nothing publishes one"
    return (path.parent / ref).resolve()


def _validate_everywhere(path: Path, run_cli: Callable[..., Any]) -> Any:
    """The file passes `pd-advisor validate`, the loader and the committed JSON Schema, and the
    schema its first line names exists, is that schema and validates the file."""
    run_cli("validate", path, exit_code=0)
    document = yaml.safe_load(path.read_text())
    Draft7Validator(json.loads(SCHEMA_PATH.read_text())).validate(document)
    target = _schema_target(path)
    if target is not None:
        assert target.is_file(), f"{path}: schema line names {target}, which does not exist"
        assert target.read_text(encoding="utf-8") == SCHEMA_PATH.read_text(encoding="utf-8")
        Draft7Validator(json.loads(target.read_text(encoding="utf-8"))).validate(document)
    return load_scenario(path, ProfileCatalog(env={}))


def test_default_file(tmp_path: Path, run_cli: Callable[..., Any],
                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = run_cli("init", exit_code=0)
    path = tmp_path / "workload.yaml"
    text = path.read_text()
    assert text.splitlines()[0] == f"{MODELINE}workload.schema.json"
    assert "wrote workload.schema.json" in result.stderr and "wrote workload.yaml" in result.stderr
    assert _schema_target(path) == tmp_path / "workload.schema.json"
    assert (tmp_path / "workload.schema.json").read_text() == run_cli("schema").stdout
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
    assert result.stdout.startswith("# A pd-advisor workload")  # no file to be relative to
    assert "$schema" not in result.stdout and not list(tmp_path.iterdir())
    path = tmp_path / "w.yaml"
    path.write_text("keep me\n")
    result = run_cli("init", "-o", path, exit_code=2)
    assert "exists; pass --force" in result.stderr and path.read_text() == "keep me\n"
    assert not (tmp_path / "workload.schema.json").exists()
    run_cli("init", "-o", path, "--force", exit_code=0)
    assert path.read_text().startswith("# yaml-language-server")


def test_schema_file_beside_the_workload_is_kept_or_needs_force(
        tmp_path: Path, run_cli: Callable[..., Any]) -> None:
    schema = tmp_path / "workload.schema.json"
    run_cli("init", "-o", tmp_path / "a.workload.yaml", exit_code=0)
    written = schema.read_text()
    # a second workload in the same directory shares the schema file
    result = run_cli("init", "-o", tmp_path / "b.workload.yaml", exit_code=0)
    assert "holds this version's schema; kept" in result.stderr
    _validate_everywhere(tmp_path / "b.workload.yaml", run_cli)
    # another schema (an older pd-advisor's, or a file of the user's) is not overwritten
    schema.write_text('{"title": "mine"}\n')
    result = run_cli("init", "-o", tmp_path / "c.workload.yaml", exit_code=2)
    assert "exists with other content" in result.stderr and "--force" in result.stderr
    assert not (tmp_path / "c.workload.yaml").exists()
    assert schema.read_text() == '{"title": "mine"}\n'
    run_cli("init", "-o", tmp_path / "c.workload.yaml", "--force", exit_code=0)
    assert schema.read_text() == written
    _validate_everywhere(tmp_path / "c.workload.yaml", run_cli)


def test_schema_file_elsewhere_and_no_schema(tmp_path: Path,
                                             run_cli: Callable[..., Any]) -> None:
    (tmp_path / "deploy" / "chat").mkdir(parents=True)
    (tmp_path / "schemas").mkdir()
    path = tmp_path / "deploy" / "chat" / "workload.yaml"
    run_cli("init", "-o", path, "--schema-file", tmp_path / "schemas" / "pd.json", exit_code=0)
    assert path.read_text().splitlines()[0] == f"{MODELINE}../../schemas/pd.json"
    assert _schema_target(path) == (tmp_path / "schemas" / "pd.json").resolve()
    _validate_everywhere(path, run_cli)

    bare = tmp_path / "bare.yaml"
    run_cli("init", "-o", bare, "--no-schema", exit_code=0)
    assert _schema_target(bare) is None and not (tmp_path / "workload.schema.json").exists()
    _validate_everywhere(bare, run_cli)

    result = run_cli("init", "-o", "-", "--schema-file", tmp_path / "x.json", exit_code=2)
    assert "--schema-file needs a workload file" in result.stderr
    result = run_cli("init", "-o", tmp_path / "y.yaml", "--schema-file", tmp_path / "x.json",
                     "--no-schema", exit_code=2)
    assert "exclude each other" in result.stderr
    assert not (tmp_path / "x.json").exists() and not (tmp_path / "y.yaml").exists()


def test_unknown_ids_exit_2_with_suggestions(run_cli: Callable[..., Any]) -> None:
    result = run_cli("init", "--model", "llama3", "-o", "-", exit_code=2)
    assert "unknown model profile 'llama3'; did you mean" in result.stderr
    result = run_cli("init", "--gpu", "h100", "-o", "-", exit_code=2)
    assert "unknown GPU profile 'h100'" in result.stderr
