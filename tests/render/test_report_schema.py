"""The committed output schema is current, valid draft-07, and every JSON output validates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft7Validator

from advisor.render.report_schema import SCHEMA_PATH, main, render_schema, report_schema
from tests.render.reports import ALL_WORKLOADS, REPO_ROOT, check_doc_for, report_for


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def validate(schema: dict[str, Any], doc: Any, definition: str | None = None) -> list[str]:
    target = schema if definition is None else {
        **schema["definitions"][definition], "definitions": schema["definitions"]}
    errors = sorted(Draft7Validator(target).iter_errors(doc), key=lambda e: list(e.path))
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors]


def test_committed_schema_is_current() -> None:
    assert SCHEMA_PATH.read_text(encoding="utf-8") == render_schema(), (
        "run `python -m advisor.render.report_schema --write`")
    assert main(["--check"]) == 0


def test_schema_is_valid_draft_07(schema: dict[str, Any]) -> None:
    Draft7Validator.check_schema(schema)
    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    assert schema == report_schema()


@pytest.mark.parametrize("path", ALL_WORKLOADS, ids=lambda p: p.stem)
def test_recommendation_validates(schema: dict[str, Any], path: Path) -> None:
    doc = report_for(path)
    assert validate(schema, doc, "recommendation") == []
    assert validate(schema, doc) == []


def test_check_run_validates(schema: dict[str, Any]) -> None:
    paths = (*ALL_WORKLOADS, REPO_ROOT / "tests" / "data" / "bad" / "syntax-error.yaml")
    doc = check_doc_for(paths)
    assert {f["status"] for f in doc["files"]} >= {"error"}
    assert validate(schema, doc, "check") == []
    assert validate(schema, doc) == []


def test_schema_rejects_nan_and_renamed_keys(schema: dict[str, Any]) -> None:
    doc = json.loads(json.dumps(report_for(ALL_WORKLOADS[0])))
    doc["colocated"]["max_goodput_rps"] = "NaN"
    assert validate(schema, doc, "recommendation")
    doc = json.loads(json.dumps(report_for(ALL_WORKLOADS[0])))
    doc["verdict_text"] = doc.pop("verdict")
    assert validate(schema, doc, "recommendation")
