"""Upstream Kubernetes schemas from the shared test data (``shared_path("k8s", ...)``),
read in place (never copied here).

``schemas.index.json`` there maps ``(apiVersion, kind)`` to the openAPIV3Schema of
each CRD (Dynamo DynamoGraphDeployment, KServe LLMInferenceService, LeaderWorkerSet,
DisaggregatedSet) extracted as JSON Schema, and names the llm-d-modelservice chart's
``values.schema.json``; PROVENANCE.md there gives each upstream repository, commit and licence.

:func:`problems` validates a document as the API server would see it: Draft 7 validation
(these are structural schemas) after filling in the schema's defaults, plus a strict pass
that reports fields the schema does not declare (plain JSON Schema lets them pass; the API
server prunes them or, with ``--validate=strict``, rejects them). Helm values are merged over
the chart's default ``values.yaml`` first, as Helm does before validating.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft7Validator

from tests.shared_files import shared_path

LLMD_VALUES = "llm-d-modelservice values"


@cache
def _index() -> dict[tuple[str, str], Path]:
    root = shared_path("k8s")
    entries = json.loads((root / "schemas.index.json").read_text(encoding="utf-8"))
    return {(e["apiVersion"], e["kind"]): root / e["schema"] for e in entries if "kind" in e}


@cache
def _schema(path: Path) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return schema


def schema_for(doc: dict[str, Any]) -> dict[str, Any] | None:
    """The upstream schema of a Kubernetes object (None: a kind without one, a Service)."""
    path = _index().get((str(doc.get("apiVersion")), str(doc.get("kind"))))
    return None if path is None else _schema(path)


def unknown_fields(inst: Any, schema: Any, path: str = "$") -> list[str]:
    """Paths of keys a structural schema does not declare."""
    out: list[str] = []
    if isinstance(inst, dict) and isinstance(schema, dict):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        if props is not None and not schema.get("x-kubernetes-preserve-unknown-fields"):
            for key, value in inst.items():
                if key in props:
                    out += unknown_fields(value, props[key], f"{path}.{key}")
                elif isinstance(extra, dict):
                    out += unknown_fields(value, extra, f"{path}.{key}")
                elif extra is not True:
                    out.append(f"{path}.{key}")
        elif isinstance(extra, dict):
            for key, value in inst.items():
                out += unknown_fields(value, extra, f"{path}.{key}")
    elif isinstance(inst, list) and isinstance(schema, dict) and isinstance(schema.get("items"),
                                                                            dict):
        for i, value in enumerate(inst):
            out += unknown_fields(value, schema["items"], f"{path}[{i}]")
    return out


def with_defaults(inst: Any, schema: Any) -> Any:
    """``inst`` with the schema's ``default`` values filled in (as the API server does)."""
    inst = copy.deepcopy(inst)

    def fill(node: Any, sub: Any) -> None:
        if isinstance(node, dict) and isinstance(sub, dict):
            props = sub.get("properties") or {}
            for key, child in props.items():
                if key not in node and isinstance(child, dict) and "default" in child:
                    node[key] = copy.deepcopy(child["default"])
            for key, value in node.items():
                if key in props:
                    fill(value, props[key])
                elif isinstance(sub.get("additionalProperties"), dict):
                    fill(value, sub["additionalProperties"])
        elif isinstance(node, list) and isinstance(sub, dict) and isinstance(sub.get("items"),
                                                                             dict):
            for value in node:
                fill(value, sub["items"])

    fill(inst, schema)
    return inst


def helm_merge(base: Any, over: Any) -> Any:
    """Helm's values merge: maps merge, null deletes, anything else replaces."""
    if not isinstance(base, dict) or not isinstance(over, dict):
        return over
    out = dict(base)
    for key, value in over.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = helm_merge(out[key], value)
        else:
            out[key] = value
    return out


def _errors(schema: dict[str, Any], inst: Any) -> list[str]:
    return [f"{e.json_path}: {e.message[:200]}"
            for e in sorted(Draft7Validator(schema).iter_errors(inst), key=lambda e: e.json_path)]


def problems(doc: dict[str, Any], kind: str | None = None) -> list[str]:
    """Why ``doc`` would not be accepted (empty: it would); ``kind`` = :data:`LLMD_VALUES`
    for llm-d-modelservice values."""
    if kind == LLMD_VALUES:
        root = shared_path("k8s", "helm", "llm-d-modelservice")
        defaults = yaml.safe_load((root / "values.yaml").read_text(encoding="utf-8"))
        return _errors(_schema(root / "values.schema.json"), helm_merge(defaults, doc))
    schema = schema_for(doc)
    if schema is None:
        return []
    return (_errors(schema, with_defaults(doc, schema))
            + [f"{p}: not declared by the schema" for p in unknown_fields(doc, schema)])
