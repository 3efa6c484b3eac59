"""``recommend`` searches the verdict boundaries only when its output shows them (#34): every
report format does; ``--format none`` (with ``--emit``, ``--plot`` or alone) does not, and what
it prints is the same as beside a report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from advisor.cli.recommend_cmd import RecommendOutput, shows_boundaries
from advisor.core.analysis import boundaries

ROOT = Path(__file__).resolve().parents[2]
PREFILL = ROOT / "examples" / "prefill-heavy-70b-ib.yaml"


def test_only_format_none_skips_them() -> None:
    assert [f.value for f in RecommendOutput if not shows_boundaries(f)] == ["none"]


def _no_search(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("boundaries searched for an output that does not show them")

    monkeypatch.setattr(boundaries, "searched", refuse)


def test_emit_alone_searches_no_boundary(run_cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    beside = run_cli("recommend", PREFILL, "--format", "json", "--emit", "vllm", exit_code=0)
    assert '"boundaries"' in beside.stdout
    _no_search(monkeypatch)
    alone = run_cli("recommend", PREFILL, "--format", "none", "--emit", "vllm", exit_code=0)
    assert alone.stdout and beside.stdout.endswith("\n" + alone.stdout)


def test_exit_code_alone_searches_no_boundary(run_cli: Any,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    _no_search(monkeypatch)
    assert run_cli("recommend", PREFILL, "--format", "none", exit_code=0).stdout == ""


def test_a_report_still_has_them(run_cli: Any) -> None:
    for fmt in ("table", "markdown"):
        assert "Verdict boundaries" in run_cli("recommend", PREFILL, "--format", fmt,
                                               exit_code=0).stdout
