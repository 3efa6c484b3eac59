"""The committed workload JSON Schema: no drift, valid draft-07, and the examples conform."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft7Validator

from advisor.loading.schema_export import SCHEMA_PATH, main, render_schema
from advisor.loading.yaml_source import parse_yaml

REPO_ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((REPO_ROOT / "examples").glob("*.yaml"))


@pytest.fixture(scope="module")
def schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def test_committed_schema_matches_the_models() -> None:
    """Regenerate with `python -m advisor.loading.schema_export --write` when this fails."""
    assert SCHEMA_PATH.read_text(encoding="utf-8") == render_schema()
    assert main(["--check"]) == 0


def test_schema_is_draft_07(schema: dict) -> None:
    Draft7Validator.check_schema(schema)
    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    text = json.dumps(schema)
    assert "$defs" not in text and "prefixItems" not in text
    refs = set(_values(schema, "$ref"))
    assert refs and all(ref.startswith("#/definitions/") for ref in refs)
    assert {ref.rsplit("/", 1)[1] for ref in refs} <= set(schema["definitions"])


def _values(node: object, key: str) -> list:
    found = []
    if isinstance(node, dict):
        for k, v in node.items():
            if k == key:
                found.append(v)
            found += _values(v, key)
    elif isinstance(node, list):
        for item in node:
            found += _values(item, key)
    return found


def test_schema_forbids_unknown_keys_everywhere(schema: dict) -> None:
    objects = [schema, *schema["definitions"].values()]
    assert all(obj.get("additionalProperties") is False for obj in objects)


def test_schema_fields_are_described(schema: dict) -> None:
    for definition in [schema, *schema["definitions"].values()]:
        for name, prop in definition["properties"].items():
            assert prop.get("description") or "$ref" in prop, name


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_conform(schema: dict, path: Path) -> None:
    instance = parse_yaml(path.read_text(encoding="utf-8"), str(path)).data
    errors = sorted(Draft7Validator(schema).iter_errors(instance), key=str)
    assert errors == [], [e.message for e in errors]


def test_there_are_at_least_four_examples() -> None:
    names = {p.name for p in EXAMPLES}
    assert {"chat-8b-single-node.yaml", "bursty-32b-16gpu.yaml", "prefill-heavy-70b-ib.yaml",
            "day-night-shift.yaml"} <= names


def test_schema_rejects_what_the_models_reject(schema: dict) -> None:
    instance = parse_yaml((REPO_ROOT / "examples" / "chat-8b-single-node.yaml")
                          .read_text(encoding="utf-8"), "x").data
    instance["slo"]["tbt_ms"] = 5
    instance["cluster"]["gpus"] = "8"
    assert len(list(Draft7Validator(schema).iter_errors(instance))) == 2


def test_schema_command(run_cli, tmp_path: Path) -> None:
    result = run_cli("schema", exit_code=0)
    assert result.stdout == render_schema()
    out = tmp_path / "w.schema.json"
    run_cli("schema", "-o", out, exit_code=0)
    assert out.read_text(encoding="utf-8") == render_schema()
