"""SARIF 2.1.0 for a check run (GitHub code scanning, other SARIF viewers).

One run; ``tool.driver.rules`` lists every finding kind the gate can report plus
``input-error``; each finding or input problem is a result located at the offending key of
the workload YAML (``uriBaseId: %SRCROOT%``). No timestamps, so the output is reproducible.
Pure: returns a string.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from advisor.render.report_json import GATE_CHECK_TITLES, as_check, finding_check

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/pd-advisor/pd-advisor"

RULES: dict[str, str] = {
    "slo-unmet": "No plan meets the SLOs at the workload's rate with the GPUs given.",
    "mode-contradicts-verdict": "The deployed mode contradicts the recommendation.",
    "chunking-off": "A colocated deployment runs without chunked prefill.",
    "precondition-gpu-scale": "A disaggregated deployment loses too much to integer rounding.",
    "precondition-kv-bandwidth": "A disaggregated deployment's KV transfer saturates the link.",
    "precondition-traffic-mix": "A disaggregated deployment's static split goes stale.",
    "deployment-misses-slo": "The declared deployment misses the SLOs at the workload's rate.",
    "deployment-infeasible": "The declared deployment cannot run the model.",
    "split-off": "A disaggregated split is too far from the best integer split.",
    "input-error": "The workload file could not be evaluated.",
}
"""Every rule id with its short description (unknown ids get a generic one)."""


def _rule(rule_id: str) -> dict[str, Any]:
    text = RULES.get(rule_id, f"pd-advisor gate finding {rule_id}.")
    check = "input" if rule_id == "input-error" else finding_check(rule_id)
    full = GATE_CHECK_TITLES.get(check, "the workload file parses, validates and resolves")
    return {"id": rule_id, "name": rule_id.replace("-", " ").title().replace(" ", ""),
            "shortDescription": {"text": text},
            "fullDescription": {"text": f"pd-advisor check '{check}': {full}."},
            "defaultConfiguration": {"level": "error"},
            "helpUri": INFORMATION_URI}


def _result(rule_id: str, message: str, path: str, line: int, col: int,
            level: str = "error") -> dict[str, Any]:
    return {"ruleId": rule_id, "level": level, "message": {"text": message},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": path.replace("\\", "/"), "uriBaseId": "%SRCROOT%"},
                "region": {"startLine": max(1, int(line)), "startColumn": max(1, int(col))}}}]}


def build_sarif(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The SARIF log as a dict."""
    if doc.get("kind") != "check":
        doc = as_check(doc)
    results: list[dict[str, Any]] = []
    for f in doc["files"]:
        for finding in f["findings"]:
            results.append(_result(finding["id"], f"{finding['key']}: {finding['message']}",
                                   f["path"], finding["line"], finding["col"]))
        for p in f["problems"]:
            key = f"{p['key']}: " if p.get("key") else ""
            results.append(_result("input-error", key + p["message"], p["path"], p["line"],
                                   p["col"]))
        for w in f["warnings"]:
            results.append(_result(f"warning-{w['id']}", w["message"], f["path"], w["line"],
                                   w["col"], level="warning"))
    rule_ids = list(RULES) + sorted({r["ruleId"] for r in results} - set(RULES))
    rules = [_rule(r) for r in rule_ids]
    for rule in rules:
        if rule["id"].startswith("warning-"):
            rule["defaultConfiguration"]["level"] = "warning"
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": doc["tool"]["name"], "version": doc["tool"]["version"],
                                "informationUri": INFORMATION_URI, "rules": rules}},
            "results": results,
            "invocations": [{"executionSuccessful": doc["status"] != "error"}],
        }],
    }


def render_sarif(doc: Mapping[str, Any]) -> str:
    """The SARIF log as indented JSON text."""
    return json.dumps(build_sarif(doc), indent=2, ensure_ascii=False) + "\n"
