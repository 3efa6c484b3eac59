"""SARIF 2.1.0 for a check run (GitHub code scanning, other SARIF viewers).

One run; ``tool.driver.rules`` lists every finding kind the gate can report plus
``input-error``; each finding or input problem is a result located at the offending key of
the workload YAML. No timestamps, so the output is reproducible. Pure: returns a string.

Artifact locations follow SARIF 2.1.0 §3.4 (artifactLocation): ``uri`` is an RFC 3986 URI
reference. A workload inside the source root (the directory ``check`` ran in, the repository
root under GitHub Actions, which resolves ``%SRCROOT%`` against the checkout) is written as a
path relative to it with ``uriBaseId: "%SRCROOT%"``; a workload outside it as an absolute
``file:`` URI without a base. Each path segment is percent-encoded as UTF-8 except the RFC 3986
unreserved characters (``A-Z a-z 0-9 - . _ ~``), so ``we,ird:na%me.yaml`` becomes
``we%2Cird%3Ana%25me.yaml`` (a ``:`` in a first segment would otherwise read as a scheme).
"""

from __future__ import annotations

import json
import os
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from advisor.escaping import json_escaped
from advisor.render.report_json import GATE_CHECK_TITLES, as_check, finding_check

if TYPE_CHECKING:
    from advisor.render.document import Document

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
    "manifest-gpus": "A colocated manifest deploys another number of GPUs than the workload "
                     "plans.",
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


def _inside(path: str, root: str) -> str | None:
    """``path`` (absolute) relative to ``root`` (absolute), or None when it lies outside."""
    try:
        relative = os.path.relpath(path, root)
    except ValueError:  # another drive (Windows)
        return None
    parts = PurePath(relative).parts
    return None if relative == os.curdir or (parts and parts[0] == os.pardir) else relative


def artifact_location(path: str, srcroot: str | os.PathLike[str] | None) -> dict[str, str]:
    """The ``artifactLocation`` of ``path`` as given on the command line.

    With ``srcroot`` (an absolute directory), relative paths are taken relative to it; a path
    inside it becomes a relative URI with ``uriBaseId: %SRCROOT%``, one outside it an absolute
    ``file:`` URI. Without ``srcroot``, relative paths stay relative to ``%SRCROOT%``.
    """
    given = Path(path)
    if srcroot is None:
        if not given.is_absolute():
            return {"uri": quote(given.as_posix()), "uriBaseId": "%SRCROOT%"}
        return {"uri": given.as_uri()}
    root = os.path.normpath(os.fspath(srcroot))
    absolute = os.path.normpath(os.path.join(root, given))
    relative = _inside(absolute, root)
    if relative is None and os.path.realpath(absolute) != absolute:  # symlinked directories
        relative = _inside(os.path.realpath(absolute), os.path.realpath(root))
    if relative is None:
        return {"uri": Path(absolute).as_uri()}
    return {"uri": quote(PurePath(relative).as_posix()), "uriBaseId": "%SRCROOT%"}


def _result(rule_id: str, message: str, location: dict[str, str], line: int, col: int,
            level: str = "error") -> dict[str, Any]:
    return {"ruleId": rule_id, "level": level, "message": {"text": message},
            "locations": [{"physicalLocation": {
                "artifactLocation": location,
                "region": {"startLine": max(1, int(line)), "startColumn": max(1, int(col))}}}]}


def build_sarif(report: Document,
                srcroot: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The SARIF log as a dict; ``srcroot`` is the directory relative paths are relative to
    (the working directory of the run; see :func:`artifact_location`)."""
    doc = report if report["kind"] == "check" else as_check(report)

    def where(path: str) -> dict[str, str]:
        return artifact_location(path, srcroot)
    results: list[dict[str, Any]] = []
    for f in doc["files"]:
        for finding in f["findings"]:
            results.append(_result(finding["id"], f"{finding['key']}: {finding['message']}",
                                   where(finding.get("path", f["path"])), finding["line"],
                                   finding["col"]))
        for p in f["problems"]:
            key = f"{p['key']}: " if p["key"] else ""
            results.append(_result("input-error", key + p["message"], where(p["path"]),
                                   p["line"], p["col"]))
        for w in f["warnings"]:
            results.append(_result(f"warning-{w['id']}", w["message"],
                                   where(w.get("path", f["path"])),
                                   w["line"], w["col"], level="warning"))
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


def render_sarif(doc: Document, srcroot: str | os.PathLike[str] | None = None) -> str:
    """The SARIF log as indented JSON text."""
    return json_escaped(json.dumps(build_sarif(doc, srcroot), indent=2, ensure_ascii=False)) + "\n"
