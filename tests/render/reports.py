"""Reports of every example and acceptance workload, computed once per test session.

Paths in the reports are relative to the repository root (``examples/chat-8b-single-node.yaml``)
so that renderings are the same on every machine.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO_ROOT / "examples").glob("*.yaml"))
ACCEPTANCE = sorted((REPO_ROOT / "tests" / "data" / "acceptance").glob("*.yaml"))
ALL_WORKLOADS = EXAMPLES + ACCEPTANCE


def relative(path: Path) -> str:
    """``path`` relative to the repository root, with forward slashes."""
    return path.relative_to(REPO_ROOT).as_posix()


@functools.cache
def report_for(path: Path) -> dict[str, Any]:
    """The recommendation document of one workload (cached)."""
    from advisor.loading.catalog import ProfileCatalog
    from advisor.usecases.recommend import build_file_report

    report, _ = build_file_report(path, ProfileCatalog(env={}), display=relative(path))
    return report


@functools.cache
def check_doc_for(paths: tuple[Path, ...]) -> dict[str, Any]:
    """The check-run document of several workloads, with YAML positions (cached)."""
    from advisor.loading.catalog import ProfileCatalog
    from advisor.loading.errors import InputError
    from advisor.render.report_json import build_check, check_entry, check_error_entry
    from advisor.usecases.recommend import build_file_report, locator

    entries = []
    for path in paths:
        try:
            report, document = build_file_report(path, ProfileCatalog(env={}),
                                                 display=relative(path))
        except InputError as exc:
            shown = [dataclasses.replace(p, path=relative(path)) for p in exc.problems]
            entries.append(check_error_entry(relative(path), shown))
        else:
            entries.append(check_entry(report, locator(document)))
    return build_check(entries)
