"""SARIF output validates against the SARIF 2.1.0 JSON Schema, with locations GitHub code
scanning can place (issue #18, item 3).

The schema is the OASIS one, shipped as test data (``tests/data/sarif/README.md`` says where it
comes from). Validation checks formats too: ``artifactLocation.uri`` must be an RFC 3986 URI
reference (``rfc3986-validator``, a test dependency, gives ``jsonschema`` that check). Workload
paths are percent-encoded and relative to ``%SRCROOT%``, the directory ``check`` runs in.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from jsonschema import Draft4Validator, FormatChecker

from advisor.render.sarif import artifact_location, build_sarif
from tests.render.reports import ACCEPTANCE, EXAMPLES, REPO_ROOT, check_doc_for

SCHEMA_FILE = REPO_ROOT / "tests" / "data" / "sarif" / "sarif-schema-2.1.0.json"
SCHEMA_SHA256 = "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e"
OASIS_ID = ("https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/"
            "sarif-schema-2.1.0.json")
CHECK = REPO_ROOT / "tests" / "data" / "check"
RELATIVE_URI = re.compile(r"^(?:[A-Za-z0-9\-._~/]|%[0-9A-F]{2})+$")
"""A relative URI as written: RFC 3986 unreserved characters, ``/`` and percent-escapes."""

WEIRD_NAMES = {
    "we,ird:na%me.yaml": "we%2Cird%3Ana%25me.yaml",
    "dir with space/#1 ünï.yaml": "dir%20with%20space/%231%20%C3%BCn%C3%AF.yaml",
    "deploy/plain-name_1.0~x.yaml": "deploy/plain-name_1.0~x.yaml",
}
"""File name (relative to the run's directory) → the URI SARIF must carry."""


@pytest.fixture(scope="module")
def validator() -> Draft4Validator:
    assert "uri-reference" in FormatChecker().checkers, (
        "jsonschema cannot check uri-reference: install the test extra (rfc3986-validator)")
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    Draft4Validator.check_schema(schema)
    return Draft4Validator(schema, format_checker=FormatChecker())


def _errors(validator: Draft4Validator, log: dict[str, Any]) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}"
            for e in validator.iter_errors(log)]


def _locations(log: dict[str, Any]) -> list[dict[str, str]]:
    return [loc["physicalLocation"]["artifactLocation"]
            for result in log["runs"][0]["results"] for loc in result["locations"]]


def test_schema_file_is_the_oasis_schema() -> None:
    data = SCHEMA_FILE.read_bytes()
    assert hashlib.sha256(data).hexdigest() == SCHEMA_SHA256
    schema = json.loads(data)
    assert schema["id"] == OASIS_ID
    assert schema["$schema"] == "http://json-schema.org/draft-04/schema#"


def test_validation_can_fail(validator: Draft4Validator) -> None:
    """Controls: the validator rejects a wrong version, an unknown key, and the raw file name
    the issue found in pd-advisor's output (``%me`` is no percent-escape)."""
    log = build_sarif(check_doc_for((CHECK / "misses-slo.yaml",)))
    assert _errors(validator, log) == []
    assert _errors(validator, {**log, "version": "2.0.0"})
    assert _errors(validator, {**log, "extra": 1})
    raw = json.loads(json.dumps(log))
    _locations(raw)[0]["uri"] = "we,ird:na%me.yaml"
    assert any("uri-reference" in e for e in _errors(validator, raw))
    _locations(raw)[0]["uri"] = "a b.yaml"
    assert _errors(validator, raw)


@pytest.mark.parametrize("srcroot", [None, REPO_ROOT], ids=["no-root", "repo-root"])
def test_every_example_validates(validator: Draft4Validator, srcroot: Path | None) -> None:
    """Examples, acceptance workloads and a file with a YAML error (an input-error result)."""
    bad = REPO_ROOT / "tests" / "data" / "bad" / "syntax-error.yaml"
    log = build_sarif(check_doc_for((*EXAMPLES, *ACCEPTANCE, bad)), srcroot)
    assert _errors(validator, log) == []
    assert {r["ruleId"] for r in log["runs"][0]["results"]} >= {"input-error"}
    for location in _locations(log):
        assert location == {"uri": location["uri"], "uriBaseId": "%SRCROOT%"}
        assert RELATIVE_URI.match(location["uri"]), location


@pytest.mark.parametrize(("name", "uri"), list(WEIRD_NAMES.items()))
def test_artifact_location_encoding(name: str, uri: str, tmp_path: Path) -> None:
    assert artifact_location(name, None) == {"uri": uri, "uriBaseId": "%SRCROOT%"}
    assert artifact_location(name, tmp_path) == {"uri": uri, "uriBaseId": "%SRCROOT%"}
    assert artifact_location(str(tmp_path / name), tmp_path) == {"uri": uri,
                                                                  "uriBaseId": "%SRCROOT%"}
    assert unquote(uri) == name and RELATIVE_URI.match(uri)


def test_artifact_location_outside_the_root(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    outside = tmp_path / "other dir" / "w.yaml"
    expected = {"uri": outside.as_uri()}
    assert expected["uri"].startswith("file:///") and "other%20dir" in expected["uri"]
    assert artifact_location(str(outside), root) == expected
    assert artifact_location("../other dir/w.yaml", root) == expected
    assert artifact_location("sub/../w.yaml", root) == {"uri": "w.yaml",
                                                         "uriBaseId": "%SRCROOT%"}
    # a symlinked directory inside the root still counts as inside
    (root / "real").mkdir(parents=True)
    (tmp_path / "link").symlink_to(root / "real")
    assert artifact_location(str(tmp_path / "link" / "w.yaml"), root) == {
        "uri": "real/w.yaml", "uriBaseId": "%SRCROOT%"}


def test_check_writes_valid_sarif_relative_to_the_working_directory(
        validator: Draft4Validator, tmp_path: Path, run_cli: Callable[..., Any],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``pd-advisor check -f sarif`` run in a repository: files named oddly, given relative
    and absolute, one outside the repository and one that does not parse."""
    root = tmp_path / "repo"
    for name in WEIRD_NAMES:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(CHECK / "misses-slo.yaml", root / name)  # one finding each
    (root / "broken [1].yaml").write_text("version: 1\nmodel: [\n", encoding="utf-8")
    outside = tmp_path / "elsewhere" / "w.yaml"
    outside.parent.mkdir()
    shutil.copy(CHECK / "misses-slo.yaml", outside)
    monkeypatch.chdir(root)
    names = list(WEIRD_NAMES)
    argv = [names[0], root / names[1], names[2], "broken [1].yaml", outside]
    result = run_cli("check", *argv, "-f", "sarif", exit_code=2)
    log = json.loads(result.stdout)
    assert _errors(validator, log) == []
    by_uri = {loc["uri"]: loc for loc in _locations(log)}
    for uri in WEIRD_NAMES.values():
        assert by_uri[uri] == {"uri": uri, "uriBaseId": "%SRCROOT%"}
    assert by_uri["broken%20%5B1%5D.yaml"]["uriBaseId"] == "%SRCROOT%"
    assert by_uri[outside.as_uri()] == {"uri": outside.as_uri()}
    assert len(by_uri) == len(argv)
    assert not any(str(tmp_path) in loc["uri"] for loc in _locations(log)
                   if "uriBaseId" in loc)
    # the same run with -o FILE writes the same log
    target = root / "out.sarif"
    run_cli("check", *argv, "-f", "sarif", "-o", target, exit_code=2)
    assert json.loads(target.read_text(encoding="utf-8")) == log
