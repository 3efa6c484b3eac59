"""The repository stands alone: nothing cites the project's internal reference notes.

The facts pd-advisor uses were first gathered in reference notes kept outside the repository
(a GPU/interconnect note, a model-architecture note, an engine note, a performance-model note, a
calibration note and a CLI-conventions note, once reachable as ``../shared/reference/``). A
reader of the repository cannot open them, so docs, profiles, code comments and tests cite the
original public sources (papers, vendor pages, repository files at a commit), collected in
``docs/sources.md``. This test fails on any citation of those notes by file name.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("advisor", "docs", "profiles", "tests", "README.md", "CHANGELOG.md")
"""The directories (recursively) and files whose text is checked."""

_NOTES = ("hardware", "models", "engines", "performance-model", "calibration-modern",
          "cli-conventions")
INTERNAL_CITATION = re.compile(
    r"\b(?:" + "|".join(re.escape(name) for name in _NOTES) + r")\.md\b"
    r"|shared/reference|\.\./shared/")
"""A note's file name (``docs/model.md``, a repository file, does not match) or its folder."""


def _scanned_files() -> list[Path]:
    files: list[Path] = []
    for entry in SCANNED:
        path = ROOT / entry
        if path.is_file():
            files.append(path)
        else:
            files.extend(p for p in sorted(path.rglob("*"))
                         if p.is_file() and "__pycache__" not in p.parts)
    return files


def _citations(text: str) -> list[str]:
    return [match.group(0) for match in INTERNAL_CITATION.finditer(text)]


def test_the_pattern_finds_note_names_and_spares_repository_files() -> None:
    assert _citations("(hard" "ware.md §1.1)") == ["hard" "ware.md"]
    assert _citations("see ../sha" "red/reference/mod" "els.md §2") == [
        "../sha" "red/", "mod" "els.md"]
    assert _citations("(sha" "red/reference/cli-" "conventions.md)") == [
        "sha" "red/reference", "cli-" "conventions.md"]
    assert _citations("performance-" "model.md §5.2; engines" ".md §0.2") == [
        "performance-" "model.md", "engines" ".md"]
    assert _citations("docs/model.md §5; docs/sources.md#kv-transfer; models/llama.yaml") == []


def test_no_file_cites_the_internal_reference_notes() -> None:
    files = _scanned_files()
    assert len(files) > 100  # the scan really covers the tree
    offenders = []
    for path in files:
        if path == Path(__file__).resolve():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # binary files (images) cannot cite anything
        for number, line in enumerate(text.splitlines(), start=1):
            for found in _citations(line):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {found}")
    assert not offenders, "cite the public source (docs/sources.md), not:\n" + "\n".join(
        offenders)
