"""Bad-input matrix: every malformed workload exits 2 with exact ``path:line:col`` problems.

Each case names a file under ``tests/data/bad/`` and the exact problem lines ``validate``
must print on stderr (``LINE:COL: error: key: message`` after the path), nothing on stdout,
and never a traceback. Most cases run in-process through ``CliRunner``; a few run the real
``python -m advisor`` in a subprocess.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
BAD = REPO_ROOT / "tests" / "data" / "bad"

# file -> problem lines after "<path>:" (the config-dir case also names its config file)
CASES: dict[str, list[str]] = {
    "syntax-error.yaml": [
        ("10:16: error: invalid YAML: did not find expected ',' or '}' "
        "(while parsing a flow mapping at line 9)"),
    ],
    "tab-indent.yaml": [
        "3:1: error: invalid YAML: tab character; YAML indentation must use spaces",
    ],
    "duplicate-key.yaml": [
        "7:3: error: cluster: duplicate key 'gpus' (first defined at line 6)",
    ],
    "non-string-key.yaml": [
        "12:3: error: slo: key '95' is read as a number; keys must be strings (put it in quotes)",
    ],
    "unknown-key.yaml": [
        "8:3: error: traffic.rate_rsp: unknown key 'rate_rsp'; did you mean 'rate_rps'?",
    ],
    "unknown-key-no-match.yaml": [
        "13:3: error: slo.color: unknown key 'color'; allowed keys: ttft_ms, tpot_ms, percentile",
    ],
    "wrong-type.yaml": [
        "6:9: error: cluster.gpus: must be a valid integer, got '8' (string)",
    ],
    "yaml11-boolean.yaml": [
        ("12:16: error: operations.autoscaling: must be a valid boolean, got 'yes' (string); "
        "write true or false"),
    ],
    "non-positive.yaml": [
        "6:9: error: cluster.gpus: must be greater than or equal to 1, got 0 (integer)",
        "8:13: error: traffic.rate_rps: must be greater than 0, got 0 (integer)",
        "12:12: error: slo.ttft_ms: must be greater than 0, got -500 (integer)",
    ],
    "p95-below-mean.yaml": [
        ("9:36: error: traffic.prompt_tokens.p95: p95 (1500) is below mean (2000); "
        "p95 must be >= mean"),
    ],
    "phase-shares.yaml": [
        "11:5: error: traffic.phases: phase shares add up to 0.9; they must add up to 1",
    ],
    "phase-inheritance.yaml": [
        ("14:7: error: traffic.phases.1: missing required key 'rate_rps' (traffic.rate_rps is "
        "not set, so every phase must give it)"),
        "14:13: error: traffic.phases.1.name: duplicate phase name 'day' (also phase 0)",
    ],
    "unknown-profile.yaml": [
        ("5:8: error: cluster.gpu: unknown GPU profile 'h100-sx'; "
        "did you mean: h100-sxm, h200-sxm, h100-pcie?"),
    ],
    "missing-model-file.yaml": [
        ("2:8: error: model: no model profile file at 'models/custom-model.yaml' (looked for "
        f"{BAD / 'models' / 'custom-model.yaml'})"),
    ],
    "unknown-engine-version.yaml": [
        ("4:31: error: engine.version: no vllm engine profile covers version '0.3.3' "
         "(families: vllm >=0.8; vllm-v0 >=0.4,<0.8)"),
    ],
    "unknown-engine.yaml": [
        "4:9: error: engine: unknown engine profile 'vlm'; did you mean: vllm, vllm-v0?",
    ],
    "missing-version.yaml": [
        "2:1: error: missing required key 'version' (supported: 1)",
    ],
    "unsupported-version.yaml": [
        "1:10: error: version 3 is not supported; supported versions are 1",
    ],
    "version-string.yaml": [
        "1:10: error: version must be an integer (supported: 1), got '1' (string)",
    ],
    "top-level-list.yaml": [
        ("1:1: error: the top level of a workload file must be a mapping of keys "
        "(version, name, model, precision, ...), got a list"),
    ],
    "empty.yaml": [
        "1:1: error: file is empty; expected a YAML mapping that starts with 'version: 1'",
    ],
    "comments-only.yaml": [
        "1:1: error: file is empty; expected a YAML mapping that starts with 'version: 1'",
    ],
    "not-utf8.yaml": [
        "2:10: error: file is not valid UTF-8 (byte 0xe9 at offset 20)",
    ],
    "missing-required-key.yaml": [
        "5:3: error: cluster: missing required key 'gpu'",
    ],
    "multi-node-no-nic.yaml": [
        ("6:9: error: cluster.gpus: 16 GPUs span 2 nodes of 8, but cluster.inter_node is not "
        "set; name the per-GPU NIC (e.g. ib-ndr-400) or use at most 8 GPUs"),
    ],
    "nics-per-node.yaml": [
        ("7:18: error: cluster.nics_per_node: counts the NICs of cluster.inter_node, which is "
         "not set; name the inter-node link (e.g. eth-25) or drop nics_per_node"),
    ],
    "nics-per-node-range.yaml": [
        "8:18: error: cluster.nics_per_node: must be greater than or equal to 1, got 0 (integer)",
    ],
    "different-tp-unsupported.yaml": [
        ("18:27: error: deployment.decode_tensor_parallel: 4 differs from the prefill pool's "
         "TP 2, which vLLM V0 engine (vllm-v0, >=0.4,<0.8) cannot transfer KV between (its "
         "profile's supports.different_tp_across_pools is false); use the same TP on both "
         "pools"),
    ],
    "deployment-too-big.yaml": [
        ("14:17: error: deployment.prefill_gpus: prefill_gpus + decode_gpus = 24 exceeds "
        "cluster.gpus (16)"),
    ],
    "disaggregated-incomplete.yaml": [
        "13:3: error: deployment: missing required key 'decode_gpus' (mode is disaggregated)",
        ("15:20: error: deployment.tensor_parallel: applies only to colocated deployments; use "
        "prefill_tensor_parallel and decode_tensor_parallel"),
    ],
    "tensor-parallel.yaml": [
        ("13:20: error: deployment.tensor_parallel: must be a power of two (1, 2, 4, 8, ...), "
        "got 6"),
    ],
    "prompt-beyond-context.yaml": [
        ("9:37: error: traffic.prompt_tokens.p95: prompt p95 60000 exceeds the context window "
        "of qwen3-32b (40960 tokens)"),
    ],
    "several-problems.yaml": [
        "3:12: error: precision: must be 'bf16', 'fp16', 'fp8', 'fp8-block', 'fp4', 'mxfp4' or "
        "'int4', got 'bf17' (string)",
        "7:3: error: cluster: duplicate key 'gpus' (first defined at line 6)",
        "9:13: error: traffic.rate_rps: must be greater than 0, got -3 (integer)",
        ("10:36: error: traffic.prompt_tokens.p95: p95 (500) is below mean (1000); "
        "p95 must be >= mean"),
        "13:3: error: slo.tpot: unknown key 'tpot'; did you mean 'tpot_ms'?",
        "14:15: error: slo.percentile: must be less than or equal to 99.9, got 100 (integer)",
        "15:1: error: polcy: unknown key 'polcy'; did you mean 'policy'?",
    ],
    # hostile YAML (tests/acceptance/test_hostile_input.py measures time and memory)
    "alias-bomb.yaml": [
        ("8:8: error: f.0: alias '*e' takes the document past 100,000 nodes once expanded "
         "(each use of an alias counts every node it stands for); refusing an alias bomb"),
    ],
    "merge-key-bomb.yaml": [
        ("8:33: error: e.<<.5: alias '*d' takes the document past 100,000 nodes once expanded "
         "(each use of an alias counts every node it stands for); refusing an alias bomb"),
    ],
    "recursive-alias.yaml": [
        ("7:9: error: cluster.self: alias '*cluster' refers to the node anchored '&cluster' "
         "that contains it; recursive structures are not allowed"),
    ],
    "custom-tag.yaml": [
        ("3:8: error: model: tag '!model' is not allowed; only plain data is read (strings, "
         "numbers, true/false, null, lists and mappings); remove the tag"),
        ("5:40: error: traffic.prompt_tokens: tag '!!binary' is not allowed; only plain data is "
         "read (strings, numbers, true/false, null, lists and mappings); remove the tag"),
    ],
    "python-tag.yaml": [
        ("3:8: error: model: tag '!!python/object/apply:os.system' is not allowed: Python "
         "objects are never loaded; only plain data is read (strings, numbers, true/false, "
         "null, lists and mappings); remove the tag"),
    ],
    "deep-nesting.yaml": [
        "3:107: error: model.0.0.0.0.0.0.0…: the document nests deeper than 100 levels",
    ],
}

SUBPROCESS_CASES = ("syntax-error.yaml", "unknown-profile.yaml", "several-problems.yaml")


def _problem_lines(stderr: str) -> list[str]:
    """stderr without the final summary line."""
    return [line for line in stderr.splitlines() if not line.startswith("pd-advisor: checked")]


def _expected(path: Path, tails: list[str]) -> list[str]:
    return [f"{path}:{tail}" for tail in tails]


def test_matrix_is_large_enough() -> None:
    """The brief asks for at least 18 malformed files on disk."""
    on_disk = sorted(p.name for p in BAD.glob("*.yaml"))
    assert len(on_disk) >= 18
    assert set(CASES) <= set(on_disk)


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_file(run_cli, name: str) -> None:
    """Exit 2, exact located problems on stderr, nothing on stdout, no traceback."""
    path = BAD / name
    result = run_cli("validate", path, exit_code=2)
    assert _problem_lines(result.stderr) == _expected(path, CASES[name])
    assert result.stdout == ""
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("name", SUBPROCESS_CASES)
def test_bad_file_subprocess(name: str, tmp_path: Path) -> None:
    """The real entry point (``python -m advisor``) behaves the same."""
    path = BAD / name
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "NO_COLOR": "1"}
    env.pop("PD_ADVISOR_PROFILES", None)
    proc = subprocess.run([sys.executable, "-m", "advisor", "validate", str(path)],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120,
                          check=False)
    assert proc.returncode == 2, proc.stderr
    assert _problem_lines(proc.stderr) == _expected(path, CASES[name])
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr


def test_file_not_found_subprocess(tmp_path: Path) -> None:
    """A missing file is a located problem (1:1), exit 2."""
    missing = tmp_path / "nope.yaml"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "NO_COLOR": "1"}
    proc = subprocess.run([sys.executable, "-m", "advisor", "validate", str(missing)],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120,
                          check=False)
    assert proc.returncode == 2
    assert _problem_lines(proc.stderr) == [f"{missing}:1:1: error: file not found"]
    assert "Traceback" not in proc.stderr


def test_file_not_found_relative_path(run_cli, tmp_path: Path, monkeypatch) -> None:
    """The path is reported as the user typed it."""
    monkeypatch.chdir(tmp_path)
    result = run_cli("validate", "missing.yaml", exit_code=2)
    assert _problem_lines(result.stderr) == ["missing.yaml:1:1: error: file not found"]


def test_directory_instead_of_file(run_cli, tmp_path: Path) -> None:
    result = run_cli("validate", tmp_path, exit_code=2)
    assert _problem_lines(result.stderr) == [f"{tmp_path}:1:1: error: is a directory, not a file"]


def test_file_over_one_mib_is_refused(run_cli, tmp_path: Path) -> None:
    """Big files are refused before parsing (no YAML bomb reaches the parser)."""
    path = tmp_path / "huge.yaml"
    path.write_text("version: 1\n" + "# padding\n" * 110_000, encoding="utf-8")
    size = path.stat().st_size
    assert size > 1024 * 1024
    result = run_cli("validate", path, exit_code=2)
    assert _problem_lines(result.stderr) == [
        (f"{path}:1:1: error: file is too large ({size:,} bytes); the limit is 1 MiB "
        "(1,048,576 bytes)")]


def test_bad_project_config(run_cli) -> None:
    """Problems in .pd-advisor.yaml are located in that file and reported with the workload's."""
    workload = BAD / "config-dir" / "workload.yaml"
    config = BAD / "config-dir" / ".pd-advisor.yaml"
    result = run_cli("validate", workload, exit_code=2)
    lines = _problem_lines(result.stderr)
    assert lines[0] == (f"{workload}:12:20: error: policy.split_tolerance: must be less than or "
                        "equal to 1, got 2 (integer)")
    # the config file is shown relative to the working directory when it lies below it
    config_lines = [line.split(":", 1)[1] for line in lines[1:]]
    assert config_lines == [
        "3:20: error: policy.min_disagg_gain: must be less than or equal to 1, got 1.5 (number)",
        ("4:3: error: policy.max_rounding_los: unknown key 'max_rounding_los'; "
        "did you mean 'max_rounding_loss'?"),
    ]
    assert all(Path(line.split(":", 1)[0]).resolve() == config.resolve() for line in lines[1:])
    assert "Traceback" not in result.stderr


def test_several_files_report_each_and_exit_2(run_cli) -> None:
    """A good and a bad file: the good one is summarised on stdout, the bad one fails the run."""
    good = REPO_ROOT / "examples" / "chat-8b-single-node.yaml"
    bad = BAD / "unknown-key.yaml"
    result = run_cli("validate", good, bad, exit_code=2)
    assert "chat-8b-single-node" in result.stdout
    assert _problem_lines(result.stderr) == _expected(bad, CASES["unknown-key.yaml"])
    assert result.stderr.splitlines()[-1] == (
        "pd-advisor: checked 2 files: 1 valid, 1 with 1 problem")


def test_unknown_profiles_dir_profile_is_invalid(run_cli, tmp_path: Path) -> None:
    """A broken user profile (via --profiles) is reported in its own file, and at the key."""
    models = tmp_path / "profiles" / "models"
    models.mkdir(parents=True)
    (models / "my-model.yaml").write_text("id: my-model\nname: [unclosed\n", encoding="utf-8")
    workload = tmp_path / "w.yaml"
    workload.write_text(
        (BAD.parent.parent.parent / "examples" / "chat-8b-single-node.yaml")
        .read_text(encoding="utf-8").replace("model: llama-3.1-8b ", "model: my-model     "),
        encoding="utf-8")
    result = run_cli("validate", workload, "--profiles", tmp_path / "profiles", exit_code=2)
    lines = _problem_lines(result.stderr)
    assert lines[0].startswith(f"{workload}:9:8: error: model: model profile 'my-model' is invalid")
    assert any("my-model.yaml:3:1: error: YAML error" in line for line in lines[1:]), lines
    assert "Traceback" not in result.stderr


def test_engine_profile_without_a_source(run_cli) -> None:
    """A user engine profile missing a ``source`` is located in that profile file (#15)."""
    root = BAD / "engine-profiles"
    workload = root / "workload.yaml"
    profile = root / "engines" / "vllm.yaml"
    result = run_cli("validate", workload, "--profiles", root, exit_code=2)
    try:  # the profile is named relative to the working directory when below it
        shown: Path = profile.relative_to(Path.cwd())
    except ValueError:
        shown = profile
    assert _problem_lines(result.stderr) == [
        (f"{workload}:4:9: error: engine: engine profile 'vllm' is invalid (see the problems "
         f"reported for {shown})"),
        f"{shown}:10:1: error: request_overhead_s.source: Field required",
        f"{shown}:20:3: error: memory.logits_bytes_per_entry.source: Field required",
    ]
    assert result.stdout == "" and "Traceback" not in result.stderr
