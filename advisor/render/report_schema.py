"""The JSON Schema (draft-07) of pd-advisor's JSON output, ``schema_version`` 1, generated
from the typed documents (:mod:`advisor.render.document`).

One file describes both documents: ``definitions.recommendation`` (``recommend --format
json``) and ``definitions.check`` (``check --format json``); the root accepts either, told
apart by ``kind``. Objects forbid unknown keys, so a renderer, the builder and the schema
cannot drift apart silently (they are one set of types; a test validates every example's
output). Generated with pydantic's ``TypeAdapter`` only when asked for — ``pd-advisor schema
--report``, the tests — never on the report path (building the adapter takes ~0.1 s).

The committed copy lives at ``advisor/schemas/report.schema.json``::

    python -m advisor.render.report_schema            # print
    python -m advisor.render.report_schema --write    # regenerate the committed copy
    python -m advisor.render.report_schema --check    # exit 1 if the committed copy drifted
"""

from __future__ import annotations

import json
import re
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DRAFT_07 = "http://json-schema.org/draft-07/schema#"
SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schemas" / "report.schema.json"
"""The committed schema, shipped inside the package."""

Schema = dict[str, Any]

NAMES = {"Recommendation": "recommendation", "CheckRun": "check", "Colocated": "colocated",
         "Disaggregated": "disaggregated", "Allocation": "allocation",
         "KvTransfer": "kv_transfer", "SplitVariant": "split_variant", "Phase": "phase",
         "Deployed": "deployed", "Boundary": "boundary", "Finding": "finding",
         "LocatedFinding": "located_finding", "Interference": "interference"}
"""Definition names of schema v1 (kept: CI jobs may reference them); the other types get
their name in snake_case."""


def _snake(name: str) -> str:
    return NAMES.get(name) or re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _rename(node: Any, names: dict[str, str]) -> Any:
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                value = "#/definitions/" + names[value.rsplit("/", 1)[1]]
            out[key] = _rename(value, names)
        return out
    if isinstance(node, list):
        return [_rename(v, names) for v in node]
    return node


def report_schema() -> Schema:
    """The whole schema document, generated from :mod:`advisor.render.document`."""
    from pydantic import TypeAdapter
    from pydantic.json_schema import GenerateJsonSchema

    from advisor.render import document

    class _NoTitles(GenerateJsonSchema):
        def field_title_should_be_set(self, schema: Any) -> bool:
            return False

        def typed_dict_schema(self, schema: Any) -> Any:
            out = super().typed_dict_schema(schema)
            out.pop("title", None)
            return out

    config = {"extra": "forbid", "use_attribute_docstrings": True}
    for value in vars(document).values():
        if isinstance(value, type) and issubclass(value, dict) and value is not dict:
            value.__pydantic_config__ = config  # type: ignore[attr-defined]  # pydantic's
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        generated = TypeAdapter(document.Document).json_schema(schema_generator=_NoTitles)
    defs = generated.pop("$defs")
    names = {name: _snake(name) for name in defs}
    return {
        "$schema": DRAFT_07,
        "title": "pd-advisor JSON output (schema_version 1)",
        "description": "Units are in key names (_ms, _rps, _bytes_per_s); fractions are "
                       "fractions; null where a value does not exist; never NaN.",
        "oneOf": _rename(generated, names)["anyOf"],
        "definitions": {names[k]: _rename(v, names) for k, v in sorted(
            defs.items(), key=lambda kv: names[kv[0]])},
    }


def render_schema() -> str:
    """The schema as committed: 2-space indented JSON with a final newline."""
    return json.dumps(report_schema(), indent=2, ensure_ascii=False) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Print, write or check the committed schema; returns the exit code."""
    from advisor.schema_files import schema_file_main

    return schema_file_main(argv, "python -m advisor.render.report_schema",
                            __doc__.splitlines()[0], SCHEMA_PATH, render_schema(),
                            "advisor/render/document.py")


if __name__ == "__main__":
    sys.exit(main())
