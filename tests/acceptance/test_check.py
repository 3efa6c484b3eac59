"""``pd-advisor check``: the exit-code matrix, in several formats, plus annotation positions.

0 every file passes; 1 a file fails the gate (0 with ``--exit-zero``); 2 a file could not be
evaluated (bad input, no ``deployment:``), which wins over 1 and survives ``--exit-zero``.
The exit code never depends on ``--format``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
ACCEPTANCE = REPO_ROOT / "tests" / "data" / "acceptance"
CHECK = REPO_ROOT / "tests" / "data" / "check"
BAD = REPO_ROOT / "tests" / "data" / "bad"
FORMATS = ["table", "json", "markdown", "github", "sarif", "junit"]
EXIT_ZERO_FORMATS = ("table", "github", "sarif")

RunCli = Callable[..., Any]


@pytest.fixture(scope="module")
def disaggregated_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The prefill-heavy fleet deployed at the best split, and with a split far off it.

    Built from the recommendation itself, so the files follow the model when it changes.
    """
    from tests.render.reports import report_for

    source = ACCEPTANCE / "prefill-heavy-70b-1024-h100.yaml"
    best = report_for(source)["disaggregated"]
    assert report_for(source)["verdict"] == "disaggregate"
    data = yaml.safe_load(source.read_text(encoding="utf-8"))
    gpus = data["cluster"]["gpus"]
    deployment = {"mode": "disaggregated", "prefill_gpus": best["prefill_gpus"],
                  "decode_gpus": best["decode_gpus"],
                  "prefill_tensor_parallel": best["prefill_tensor_parallel"],
                  "decode_tensor_parallel": best["decode_tensor_parallel"]}
    # move prefill GPUs by ~15 % of the cluster (tolerance: 10 %), in whole instances
    step = best["prefill_tensor_parallel"]
    shift = -(-int(0.15 * gpus) // step) * step
    off = dict(deployment, prefill_gpus=best["prefill_gpus"] - shift)
    assert off["prefill_gpus"] >= step
    directory = tmp_path_factory.mktemp("disagg")
    out = {}
    for name, dep in (("best-split", deployment), ("split-off", off)):
        path = directory / f"{name}.yaml"
        path.write_text(yaml.safe_dump({**data, "deployment": dep}, sort_keys=False),
                        encoding="utf-8")
        out[name] = path
    return out


def case_files(name: str, generated: dict[str, Path]) -> list[Path]:
    cases: dict[str, list[Path]] = {
        "pass-colocated": [ACCEPTANCE / "chat-8b-h100.yaml"],
        "pass-disaggregated": [generated["best-split"]],
        "contradicting-mode": [CHECK / "mode-contradicts.yaml"],
        "contradicting-mode-colocated": [ACCEPTANCE / "prefill-heavy-70b-1024-h100.yaml"],
        "misses-slo": [CHECK / "misses-slo.yaml"],
        "no-plan-meets-slo": [ACCEPTANCE / "long-prompt-70b-a100-eth.yaml"],
        "chunking-off": [CHECK / "chunking-off.yaml"],
        "does-not-fit": [CHECK / "does-not-fit.yaml"],
        "no-slo": [CHECK / "no-slo.yaml"],
        "split-off": [generated["split-off"]],
        "bad-file": [BAD / "syntax-error.yaml"],
        "missing-file": [CHECK / "does-not-exist.yaml"],
        "missing-deployment": [CHECK / "no-deployment.yaml"],
        "mixed-error-wins": [ACCEPTANCE / "chat-8b-h100.yaml", CHECK / "misses-slo.yaml",
                             BAD / "syntax-error.yaml"],
        "mixed-fail": [ACCEPTANCE / "chat-8b-h100.yaml", CHECK / "misses-slo.yaml"],
        "mixed-pass": [ACCEPTANCE / "chat-8b-h100.yaml",
                       ACCEPTANCE / "day-night-70b-1024-h100-static.yaml"],
    }
    return cases[name]


TOTALS = re.compile(r"\d+ files?[:,] \d+ passed, \d+ failed, \d+ could not be evaluated")
"""The check totals line (the table's last line, or stderr's for the other formats)."""

# case -> (exit code, exit code with --exit-zero)
MATRIX: dict[str, tuple[int, int]] = {
    "pass-colocated": (0, 0),
    "pass-disaggregated": (0, 0),
    "contradicting-mode": (1, 0),
    "contradicting-mode-colocated": (1, 0),
    "misses-slo": (1, 0),
    "no-plan-meets-slo": (1, 0),
    "chunking-off": (1, 0),
    "does-not-fit": (1, 0),
    "no-slo": (0, 0),
    "split-off": (1, 0),
    "bad-file": (2, 2),
    "missing-file": (2, 2),
    "missing-deployment": (2, 2),
    "mixed-error-wins": (2, 2),
    "mixed-fail": (1, 0),
    "mixed-pass": (0, 0),
}


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("case", list(MATRIX))
def test_exit_code_matrix(run_cli: RunCli, disaggregated_files: dict[str, Path], case: str,
                          fmt: str) -> None:
    files = case_files(case, disaggregated_files)
    code, code_exit_zero = MATRIX[case]
    result = run_cli("check", *files, "--format", fmt, exit_code=code)
    assert "Traceback" not in result.stderr
    assert result.stdout.strip(), "a complete report is always printed"
    totals = [line for line in (result.stdout + result.stderr).splitlines()
              if TOTALS.search(line)]
    assert len(totals) == 1, f"the totals are printed once, where they are read: {totals}"
    if fmt in EXIT_ZERO_FORMATS:
        run_cli("check", *files, "--format", fmt, "--exit-zero", exit_code=code_exit_zero)


@pytest.mark.parametrize(("case", "finding"), [
    ("contradicting-mode", "mode-contradicts-verdict"),
    ("misses-slo", "deployment-misses-slo"),
    ("no-plan-meets-slo", "slo-unmet"),
    ("chunking-off", "chunking-off"),
    ("does-not-fit", "deployment-infeasible"),
    ("split-off", "split-off"),
])
def test_each_failure_reports_its_finding(run_cli: RunCli, disaggregated_files: dict[str, Path],
                                          case: str, finding: str) -> None:
    files = case_files(case, disaggregated_files)
    doc = json.loads(run_cli("check", *files, "-f", "json", exit_code=1).stdout)
    assert finding in [f["id"] for f in doc["files"][0]["findings"]]


def test_best_split_has_no_findings(run_cli: RunCli,
                                    disaggregated_files: dict[str, Path]) -> None:
    doc = json.loads(run_cli("check", disaggregated_files["best-split"], "-f", "json",
                             exit_code=0).stdout)
    entry = doc["files"][0]
    assert entry["status"] == "pass" and entry["findings"] == []
    assert entry["warnings"], "a disaggregated deployment carries its failure-mode warnings"


def test_missing_deployment_names_the_keys_to_add(run_cli: RunCli) -> None:
    result = run_cli("check", CHECK / "no-deployment.yaml", exit_code=2)
    for key in ("deployment.mode", "deployment.prefill_gpus", "deployment.decode_gpus",
                "deployment.tensor_parallel"):
        assert key in result.stderr


def test_input_problems_go_to_stderr(run_cli: RunCli) -> None:
    path = BAD / "several-problems.yaml"
    result = run_cli("check", path, "-f", "json", exit_code=2)
    lines = [line for line in result.stderr.splitlines() if line.startswith(f"{path}:")]
    doc = json.loads(result.stdout)
    assert len(lines) == len(doc["files"][0]["problems"]) >= 2


def test_github_annotations_point_at_the_key(run_cli: RunCli) -> None:
    path = CHECK / "mode-contradicts.yaml"
    out = run_cli("check", path, "-f", "github", exit_code=1).stdout
    lines = path.read_text(encoding="utf-8").splitlines()
    match = re.search(r"::error file=([^,]+),line=(\d+),col=(\d+),title=([^:]+)::(.*)", out)
    assert match is not None
    file, line, col = match.group(1), int(match.group(2)), int(match.group(3))
    assert file == str(path).replace(":", "%3A").replace(",", "%2C")
    assert lines[line - 1][col - 1:].startswith("mode:")
    assert out.startswith("::group::") and "::endgroup::" in out


def test_github_annotation_for_bad_yaml_uses_the_problem_position(run_cli: RunCli) -> None:
    out = run_cli("check", BAD / "syntax-error.yaml", "-f", "github", exit_code=2).stdout
    assert ",line=10,col=16," in out


def test_sarif_and_junit_are_well_formed(run_cli: RunCli) -> None:
    import xml.etree.ElementTree as ET

    files = [ACCEPTANCE / "chat-8b-h100.yaml", CHECK / "misses-slo.yaml"]
    sarif = json.loads(run_cli("check", *files, "-f", "sarif", exit_code=1).stdout)
    assert sarif["version"] == "2.1.0"
    assert [r["ruleId"] for r in sarif["runs"][0]["results"]] == ["deployment-misses-slo"]
    junit = run_cli("check", *files, "-f", "junit", exit_code=1).stdout
    root = ET.fromstring(junit.split("\n", 1)[1])
    assert root.get("failures") == "1"
    assert len(root.findall("testsuite")) == 2


def test_markdown_has_marker_and_summary(run_cli: RunCli) -> None:
    out = run_cli("check", ACCEPTANCE / "chat-8b-h100.yaml", "-f", "markdown",
                  exit_code=0).stdout
    assert out.startswith("<!-- pd-advisor -->\n## pd-advisor check: ")


def test_output_file_keeps_the_exit_code(run_cli: RunCli, tmp_path: Path) -> None:
    target = tmp_path / "check.sarif"
    run_cli("check", CHECK / "misses-slo.yaml", "-f", "sarif", "-o", target, exit_code=1)
    assert json.loads(target.read_text(encoding="utf-8"))["version"] == "2.1.0"


def test_format_from_environment(run_cli: RunCli) -> None:
    result = run_cli("check", ACCEPTANCE / "chat-8b-h100.yaml",
                     env={"PD_ADVISOR_FORMAT": "junit"}, exit_code=0)
    assert result.stdout.startswith("<?xml")
