"""Generate the workload JSON Schema from the pydantic models, draft-07 compatible.

Pydantic emits JSON Schema 2020-12 (sub-models under ``$defs``); editors validate YAML with
draft-07 (yaml-language-server), which only knows ``definitions``. So the sub-models move to
``definitions``, every ``$ref`` points there, and ``$schema`` names draft-07. The models avoid
tuple fields, so no ``prefixItems`` appears (checked here anyway).

The committed copy lives at ``advisor/schemas/workload.schema.json``::

    python -m advisor.loading.schema_export            # print
    python -m advisor.loading.schema_export --write    # regenerate the committed copy
    python -m advisor.loading.schema_export --check    # exit 1 if the committed copy drifted
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DRAFT_07 = "http://json-schema.org/draft-07/schema#"
"""The ``$schema`` URI of JSON Schema draft-07."""

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schemas" / "workload.schema.json"
"""The committed schema, shipped inside the package."""

_DRAFT_2020_ONLY = ("$defs", "prefixItems", "$dynamicRef", "$dynamicAnchor",
                    "unevaluatedProperties", "unevaluatedItems", "dependentRequired",
                    "dependentSchemas")


def workload_schema() -> dict[str, Any]:
    """The JSON Schema of a version-1 workload file, as a draft-07 document."""
    from advisor.loading.workload_schema import WorkloadV1

    generated = WorkloadV1.model_json_schema(ref_template="#/definitions/{model}")
    definitions = generated.pop("$defs", {})
    schema: dict[str, Any] = {"$schema": DRAFT_07, **generated}
    if definitions:
        schema["definitions"] = definitions
    leftovers = sorted(_keywords(schema) & set(_DRAFT_2020_ONLY))
    if leftovers:
        raise RuntimeError(f"generated schema uses keywords draft-07 lacks: {', '.join(leftovers)}")
    return schema


def _keywords(node: Any) -> set[str]:
    """Every object key used anywhere in a JSON document (property names included)."""
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            found.add(key)
            found |= _keywords(value)
    elif isinstance(node, list):
        for item in node:
            found |= _keywords(item)
    return found


def render_schema() -> str:
    """The schema as committed: 2-space indented JSON with a final newline."""
    return json.dumps(workload_schema(), indent=2, ensure_ascii=False) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Print, write or check the committed schema; returns the exit code."""
    from advisor.schema_files import schema_file_main

    return schema_file_main(argv, "python -m advisor.loading.schema_export",
                            __doc__.splitlines()[0], SCHEMA_PATH, render_schema(), "the models")


if __name__ == "__main__":
    sys.exit(main())
