"""``pd-advisor recommend``: the four acceptance scenarios, formats, streams and exit codes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
ACCEPTANCE = REPO_ROOT / "tests" / "data" / "acceptance"
BAD = REPO_ROOT / "tests" / "data" / "bad"

RunCli = Callable[..., Any]


def recommend_json(run_cli: RunCli, path: Path) -> dict[str, Any]:
    result = run_cli("recommend", path, "--format", "json", exit_code=0)
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def precondition(doc: dict[str, Any], pid: str) -> dict[str, Any]:
    return next(p for p in doc["preconditions"] if p["id"] == pid)


def test_chat_8b_on_one_h100_node_is_chunked_prefill(run_cli: RunCli) -> None:
    doc = recommend_json(run_cli, ACCEPTANCE / "chat-8b-h100.yaml")
    assert doc["verdict"] == "chunked-prefill"
    assert doc["slo_met"] is True
    assert doc["colocated"]["meets_slo"] is True
    assert doc["colocated"]["gpus"] <= 8


def test_70b_over_25gbe_judges_the_kv_at_the_rate_16_a100s_carry(run_cli: RunCli) -> None:
    """8 req/s is ~3× what 16 A100s carry within the SLOs: the KV link is judged at the rate
    the split carries (#14), where 25 GbE keeps up; the verdict stays chunked-prefill (the
    integer split's gain is short) and the overload is reported as overload."""
    doc = recommend_json(run_cli, ACCEPTANCE / "long-prompt-70b-a100-eth.yaml")
    assert doc["verdict"] == "chunked-prefill"
    assert doc["slo_met"] is False
    kv = doc["kv_transfer"]
    assert kv["link_id"] == "eth-25"
    assert kv["at_carried_rate"] is True and kv["rate_rps"] < 8
    assert kv["rate_rps"] == pytest.approx(doc["disaggregated"]["max_goodput_rps"])
    assert "overload" in precondition(doc, "kv-bandwidth")["explanation"]


def test_70b_over_25gbe_at_a_carried_rate_fails_kv_bandwidth(run_cli: RunCli) -> None:
    """Acceptance 3's fleet over 25 GbE at 300 req/s, which its best split still carries:
    the KV link fails. When disaggregation is then the only plan that meets the SLOs it is
    recommended all the same, saying it overrides kv-bandwidth (#28); otherwise the KV link
    is what decides."""
    doc = recommend_json(run_cli, ACCEPTANCE / "prefill-heavy-70b-1024-h100-eth25.yaml")
    kv = precondition(doc, "kv-bandwidth")
    assert kv["passed"] is False and kv["status"] == "fail"
    assert kv["measured"] > kv["threshold"]
    assert doc["kv_transfer"]["link_id"] == "eth-25"
    assert doc["kv_transfer"]["at_carried_rate"] is False
    only_disaggregation = (doc["disaggregated"]["meets_slo"]
                           and not doc["colocated"]["meets_slo"]
                           and not doc["unchunked"]["meets_slo"])
    if only_disaggregation:
        assert doc["verdict"] == "disaggregate"
        assert doc["deciding_rule"] == "meets-slo"
        assert kv["overridden"] is True
        assert "kv-bandwidth" in doc["decision"]["overridden"]
        assert doc["decision"]["rule_verdict"] == "chunked-prefill"
    else:
        assert doc["verdict"] == "chunked-prefill"
        assert doc["deciding_rule"] == "kv-bandwidth"


def test_prefill_heavy_fleet_disaggregates(run_cli: RunCli) -> None:
    doc = recommend_json(run_cli, ACCEPTANCE / "prefill-heavy-70b-1024-h100.yaml")
    assert doc["verdict"] == "disaggregate"
    assert doc["slo_met"] is True
    assert all(p["passed"] for p in doc["preconditions"])
    assert doc["disaggregated"]["prefill_gpus"] > doc["disaggregated"]["decode_gpus"]
    assert doc["disagg_gain"] >= doc["policy"]["min_disagg_gain"]


def test_static_day_night_mix_fails_traffic_mix(run_cli: RunCli) -> None:
    doc = recommend_json(run_cli, ACCEPTANCE / "day-night-70b-1024-h100-static.yaml")
    assert doc["verdict"] == "chunked-prefill"
    mix = precondition(doc, "traffic-mix")
    assert mix["passed"] is False
    assert doc["static_mix_loss"] > doc["policy"]["max_static_mix_loss"]
    assert [p["name"] for p in doc["phases"]] == ["day", "night"]


def test_table_is_the_default_and_reads_top_to_bottom(run_cli: RunCli) -> None:
    result = run_cli("recommend", ACCEPTANCE / "chat-8b-h100.yaml", exit_code=0)
    out = result.stdout
    assert (out.index("VERDICT chunked-prefill") < out.index("Chunked prefill on a colocated pool")
            < out.index("Preconditions") < out.index("Inputs"))
    assert "\x1b[" not in out  # NO_COLOR, not a terminal
    assert result.stderr == ""


def test_columns_is_honoured(run_cli: RunCli) -> None:
    result = run_cli("recommend", ACCEPTANCE / "day-night-70b-1024-h100-static.yaml",
                     env={"COLUMNS": "80"}, exit_code=0)
    assert max(len(line) for line in result.stdout.splitlines()) <= 80


def test_slo_unmet_report_and_json(run_cli: RunCli) -> None:
    path = ACCEPTANCE / "long-prompt-70b-a100-eth.yaml"
    table = run_cli("recommend", path, exit_code=0)
    assert table.stdout.index("NO PLAN MEETS THE SLOs") < table.stdout.index("Inputs")
    assert "no plan meets the SLOs" in table.stderr
    doc = recommend_json(run_cli, path)
    assert doc["slo_met"] is False
    assert doc["gpus_needed"]["colocated"] > 16
    assert doc["colocated"]["max_goodput_rps"] < doc["colocated"]["rate_rps"]


def test_markdown_format(run_cli: RunCli) -> None:
    result = run_cli("recommend", ACCEPTANCE / "chat-8b-h100.yaml", "-f", "markdown",
                     exit_code=0)
    assert result.stdout.startswith("<!-- pd-advisor -->\n")


def test_format_from_environment(run_cli: RunCli) -> None:
    result = run_cli("recommend", ACCEPTANCE / "chat-8b-h100.yaml",
                     env={"PD_ADVISOR_FORMAT": "json"}, exit_code=0)
    assert json.loads(result.stdout)["schema_version"] == 1
    flag_wins = run_cli("recommend", ACCEPTANCE / "chat-8b-h100.yaml", "-f", "markdown",
                        env={"PD_ADVISOR_FORMAT": "json"}, exit_code=0)
    assert flag_wins.stdout.startswith("<!-- pd-advisor -->")


def test_output_file(run_cli: RunCli, tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    result = run_cli("recommend", ACCEPTANCE / "chat-8b-h100.yaml", "-f", "json", "-o", target,
                     exit_code=0)
    assert result.stdout == ""
    assert "wrote" in result.stderr
    assert json.loads(target.read_text(encoding="utf-8"))["verdict"] == "chunked-prefill"
    dash = run_cli("recommend", ACCEPTANCE / "chat-8b-h100.yaml", "-f", "json", "-o", "-",
                   exit_code=0)
    assert json.loads(dash.stdout)["verdict"] == "chunked-prefill"


def test_unwritable_output_exits_2(run_cli: RunCli, tmp_path: Path) -> None:
    result = run_cli("recommend", ACCEPTANCE / "chat-8b-h100.yaml", "-o",
                     tmp_path / "missing-dir" / "r.txt", exit_code=2)
    assert "cannot write" in result.stderr


@pytest.mark.parametrize("fmt", ["table", "json", "markdown"])
def test_input_errors_exit_2_with_every_problem(run_cli: RunCli, fmt: str) -> None:
    path = BAD / "several-problems.yaml"
    result = run_cli("recommend", path, "-f", fmt, exit_code=2)
    assert result.stdout == ""
    problem_lines = [line for line in result.stderr.splitlines()
                     if line.startswith(f"{path}:") and ": error: " in line]
    assert len(problem_lines) >= 2
    assert "Traceback" not in result.stderr


def test_missing_file_exits_2(run_cli: RunCli, tmp_path: Path) -> None:
    result = run_cli("recommend", tmp_path / "nope.yaml", exit_code=2)
    assert "file not found" in result.stderr


def test_check_only_format_is_a_usage_error(run_cli: RunCli) -> None:
    run_cli("recommend", ACCEPTANCE / "chat-8b-h100.yaml", "-f", "sarif", exit_code=2)


@pytest.mark.parametrize(("env", "tty", "expected"), [
    ({}, True, (132, True)),
    ({"NO_COLOR": "1"}, True, (132, False)),
    ({"TERM": "dumb"}, True, (132, False)),
    ({"COLUMNS": "80"}, True, (80, True)),
    ({}, False, (100, False)),
    ({"COLUMNS": "90"}, False, (90, False)),
])
def test_terminal_settings(monkeypatch: pytest.MonkeyPatch, env: dict[str, str], tty: bool,
                           expected: tuple[int, bool]) -> None:
    import os
    import sys

    from advisor.cli import output

    for name in ("NO_COLOR", "COLUMNS", "TERM"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: tty, raising=False)
    monkeypatch.setattr(output.shutil, "get_terminal_size",
                        lambda fallback=(100, 24): os.terminal_size((132, 40)))
    assert output.terminal_settings(to_stdout=True) == expected
    assert output.terminal_settings(to_stdout=False)[1] is False


@pytest.mark.parametrize("name", ["prefill-heavy-70b-34-h100.yaml",
                                  "dynamo-70b-fp8-3k150-16-h100.yaml"])
def test_rounding_does_not_veto_a_split_whose_own_gain_clears(run_cli: RunCli, name: str) -> None:
    """#14: the 34-GPU prefill-heavy point and the 16×H100 3K/150 case. Whole instances lose
    more than max_rounding_loss of the ideal split, but the integer split's own gain clears
    min_disagg_gain and the network and mix pass: disaggregate (conditional first, so a model
    change that moves the numbers fails with the reason)."""
    doc = recommend_json(run_cli, ACCEPTANCE / name)
    assert doc["rounding_loss"] > doc["policy"]["max_rounding_loss"]
    assert doc["disagg_gain"] >= doc["policy"]["min_disagg_gain"]
    assert precondition(doc, "kv-bandwidth")["passed"]
    assert precondition(doc, "traffic-mix")["passed"]
    assert doc["verdict"] == "disaggregate"
    assert doc["deciding_rule"] == "gain"
    assert precondition(doc, "gpu-scale")["passed"]
    assert doc["disagg_ideal_gain"] > doc["disagg_gain"]
    assert "rounding-loss" in {w["id"] for w in doc["warnings"]}
