"""Inputs the fuzzer broke the CLI with, kept as files under ``tests/data/fuzz/``.

Each file runs through the whole contract of :mod:`tests.fuzz.contract` (both commands, every
renderer) and must give the exit code and the diagnostic listed in ``CASES``. A file without
an entry fails, so a new regression cannot be added without saying what it expects.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fuzz.contract import check_file, invoke

FUZZ_DATA = Path(__file__).resolve().parents[1] / "data" / "fuzz"
FILES = sorted(FUZZ_DATA.glob("*.yaml"))


class Expected:
    """What ``recommend --format json`` must do with a regression file: its exit code, and
    lines (after ``path:``) that must be on stderr."""

    def __init__(self, exit_code: int, *stderr_lines: str) -> None:
        self.exit_code = exit_code
        self.stderr_lines = stderr_lines


CASES: dict[str, Expected] = {
    "p95-alone.yaml": Expected(
        2, "9:24: error: traffic.prompt_tokens.p95: p95 alone does not define a length "
           "distribution; give mean or p50 as well"),
    "blank-key.yaml": Expected(
        2, "8:1: error: ' ': unknown key ' '; allowed keys: version, name, model, precision, "
           "engine, calibration, cluster, traffic, slo, operations, deployment, policy"),
    "control-character-key.yaml": Expected(
        2, "8:1: error: '\\x08': unknown key '\\x08'; allowed keys: version, name, model, "
           "precision, engine, calibration, cluster, traffic, slo, operations, deployment, "
           "policy"),
    "line-break-key.yaml": Expected(
        2, "4:8: error: model: unknown model profile 'llama-3.1-8b\\u2028'; did you mean: "
           "llama-3.1-8b, llama-3.1-70b, llama-3.1-405b?",
        "8:7: error: 'slo.ttft\\nms': unknown key 'ttft\\nms'; did you mean 'ttft_ms'?"),
    "deep-nesting.yaml": Expected(2),
    "gpus-beyond-int64.yaml": Expected(
        2, "6:32: error: cluster.gpus: must be less than or equal to 100000, got "
           "100000000000... (a 31-digit integer)"),
    "gpus-near-int64.yaml": Expected(
        2, "6:32: error: cluster.gpus: must be less than or equal to 100000, got "
           "4611686018427387904 (integer)"),
    "gpus-trillion.yaml": Expected(
        2, "6:32: error: cluster.gpus: must be less than or equal to 100000, got "
           "1000000000000 (integer)"),
    "gpus-per-node-huge.yaml": Expected(
        2, "5:74: error: cluster.gpus_per_node: must be less than or equal to 100000, got "
           "100000000000... (a 31-digit integer)"),
    "rate-overflow.yaml": Expected(
        2, "7:21: error: traffic.rate_rps: must be less than or equal to 1000000000, got "
           "1e+308 (number)"),
    "rate-underflow.yaml": Expected(
        2, "7:21: error: traffic.rate_rps: 1e-308 requests/s is below the smallest rate "
           "evaluated, 1e-06 (one request every 12 days)"),
    "burstiness-overflow.yaml": Expected(
        2, "7:38: error: traffic.burstiness: must be less than or equal to 1000, got 1e+200 "
           "(number)"),
    "prompt-beyond-float.yaml": Expected(
        2, "7:58: error: traffic.prompt_tokens: must be less than or equal to 10000000, got "
           "100000000000... (a 401-digit integer)"),
    "chunk-beyond-float.yaml": Expected(
        2, "8:65: error: deployment.chunk_tokens: must be less than or equal to 10000000, got "
           "100000000000... (a 401-digit integer)"),
}


def test_every_file_has_an_expectation() -> None:
    assert sorted(path.name for path in FILES) == sorted(CASES)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_regression(path: Path) -> None:
    """The contract holds, with the recorded exit code and diagnostics."""
    expected = CASES[path.name]
    check_file(path)
    run = invoke("recommend", str(path), "--format", "json")
    assert run.exit_code == expected.exit_code, run.describe()
    lines = run.stderr.splitlines()
    for line in expected.stderr_lines:
        assert f"{path}:{line}" in lines, run.describe()
