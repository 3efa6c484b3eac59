"""Golden renderings of every example: table (100 columns, no colour) and markdown.

Regenerate after an intended change with ``python -m pytest tests/render --update-goldens``
and review the diff; never edit the golden files by hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.render.markdown import render_markdown
from advisor.render.table import render_table
from tests.render.reports import EXAMPLES, REPO_ROOT, report_for

GOLDEN = REPO_ROOT / "tests" / "golden"
WIDTH = 100


def renderings(path: Path) -> dict[Path, str]:
    doc = report_for(path)
    return {GOLDEN / f"{path.stem}.table.txt": render_table(doc, width=WIDTH, color=False),
            GOLDEN / f"{path.stem}.md": render_markdown(doc)}


def test_there_are_examples() -> None:
    assert EXAMPLES, "examples/*.yaml is empty"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_golden(path: Path, update_goldens: bool) -> None:
    for golden, text in renderings(path).items():
        if update_goldens:
            golden.parent.mkdir(parents=True, exist_ok=True)
            golden.write_text(text, encoding="utf-8")
            continue
        assert golden.is_file(), f"{golden.name} missing; run pytest --update-goldens"
        expected = golden.read_text(encoding="utf-8")
        assert text == expected, (f"{golden.relative_to(REPO_ROOT)} differs; if intended, run "
                                  "`python -m pytest tests/render --update-goldens`")


def test_no_stale_goldens() -> None:
    expected = {name for p in EXAMPLES for name in (f"{p.stem}.table.txt", f"{p.stem}.md")}
    present = {p.name for p in GOLDEN.glob("*") if p.is_file()}
    assert present <= expected, f"goldens without an example: {sorted(present - expected)}"
