"""``pd-advisor check`` on Kubernetes manifests (issue #32, item 1).

A Dynamo manifest and llm-d-modelservice values, each paired with the same workload (Llama 3.1
70B FP8 at 6 req/s on 32 H100s, where the best split is 24:8) by a
``# pd-advisor: workload=`` comment: the deployment at that split passes (exit 0); the one
whose replicas put 8 GPUs on prefill fails (exit 1) with the split finding at the prefill
pool's ``replicas:`` line of the manifest, in the table, the GitHub annotations and SARIF. A
malformed manifest and one of an unknown kind are located errors (exit 2); so is a manifest
that names no workload, and one whose GPU type contradicts the workload's.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "data" / "k8s"
RunCli = Callable[..., Any]


def test_dynamo_manifest_at_the_best_split_passes_and_a_skewed_one_fails(
        run_cli: RunCli) -> None:
    ok, skewed = DATA / "llama70b-dgd.yaml", DATA / "llama70b-dgd-skewed.yaml"
    result = run_cli("check", ok, skewed, "-f", "json", exit_code=1)
    doc = json.loads(result.stdout)
    good, bad = doc["files"]
    assert (good["status"], bad["status"]) == ("pass", "fail")
    [split] = [f for f in bad["findings"] if f["id"] == "split-off"]
    assert (split["path"], split["line"]) == (str(skewed), 22)  # prefill replicas: 4
    assert good["manifest"]["kind"] == "DynamoGraphDeployment nvidia.com/v1beta1"
    assert {p["role"]: p["replicas"] for p in good["manifest"]["pools"]} == {
        "prefill": 12, "decode": 4}
    from advisor.render.github import render_github
    from advisor.render.sarif import build_sarif

    annotations = render_github(doc)
    assert f"::error file={skewed},line=22,col=15,title=pd-advisor split-off::" in annotations
    sarif = build_sarif(doc, srcroot="/")
    [result_] = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "split-off"]
    location = result_["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"].endswith("tests/data/k8s/llama70b-dgd-skewed.yaml")
    assert location["region"]["startLine"] == 22


def test_llmd_values_pass_and_fail_at_their_lines(run_cli: RunCli) -> None:
    short = DATA / "llama70b-llmd-values-short.yaml"
    run_cli("check", DATA / "llama70b-llmd-values.yaml", exit_code=0)
    result = run_cli("check", short, "-f", "github", "--values-kind", "llm-d", exit_code=1)
    assert f"::error file={short},line=27,col=13,title=pd-advisor split-off::" in result.stdout
    assert f"::warning file={short},line=8," in result.stdout  # the router gap, named


def test_malformed_and_unknown_manifests_are_located_errors(run_cli: RunCli,
                                                            tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("# pd-advisor: workload=w.yaml\napiVersion: v1\nkind: [Deployment\n")
    result = run_cli("check", bad, exit_code=2)
    assert f"{bad}:4:1: error: invalid YAML" in result.stderr
    odd = tmp_path / "odd.yaml"
    odd.write_text("# pd-advisor: workload=w.yaml\napiVersion: example.com/v1\nkind: Widget\n")
    result = run_cli("check", odd, "-f", "github", exit_code=2)
    assert f"{odd}:3:7: error: kind: unknown kind 'Widget'" in result.stderr
    assert f"::error file={odd},line=3,col=7" in result.stdout


def test_a_manifest_must_name_its_workload(run_cli: RunCli, tmp_path: Path) -> None:
    text = (DATA / "llama70b-dgd.yaml").read_text(encoding="utf-8")
    lonely = tmp_path / "lonely.yaml"
    lonely.write_text(text.replace("# pd-advisor: workload=llama70b-workload.yaml\n", ""))
    result = run_cli("check", lonely, exit_code=2)
    assert "names no workload: add a comment '# pd-advisor: workload=" in result.stderr
    other = tmp_path / "a100.yaml"
    other.write_text(text.replace("NVIDIA-H100-80GB-HBM3", "NVIDIA-A100-SXM4-80GB").replace(
        "workload=llama70b-workload.yaml", f"workload={DATA / 'llama70b-workload.yaml'}"))
    result = run_cli("check", other, exit_code=2)
    assert (f"{other}:26:35: error: spec.components.1.podTemplate.spec.nodeSelector."
            "nvidia.com/gpu.product: the manifest selects NVIDIA-A100-SXM4-80GB") in result.stderr
