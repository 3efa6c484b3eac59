"""Phases that differ only in their rates share one pooled-prefill table (#34): the report,
boundaries included, is the same as with a table per phase."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from advisor.core.plan import capacities
from advisor.loading.catalog import ProfileCatalog
from advisor.usecases.recommend import build_recommendation

_PHASE = {"prompt_tokens": {"mean": 3000, "p95": 8000}, "output_tokens": {"mean": 300,
                                                                        "p95": 800}}
WORKLOAD = {
    "version": 1, "name": "hours", "model": "llama-3.1-70b", "precision": "fp8",
    "engine": "vllm", "cluster": {"gpu": "h100-sxm", "gpus": 64, "inter_node": "ib-ndr-400"},
    "traffic": {"burstiness": 1.0, "phases": [
        {"name": "night", "share": 0.25, "rate_rps": 6, **_PHASE},
        {"name": "morning", "share": 0.25, "rate_rps": 14, **_PHASE},
        {"name": "rag", "share": 0.25, "rate_rps": 4, "burstiness": 1.5,
         "prompt_tokens": {"mean": 7000, "p95": 14000, "max": 16000},
         "output_tokens": {"mean": 200, "p95": 500}},
        {"name": "evening", "share": 0.25, "rate_rps": 10, **_PHASE}]},
    "slo": {"ttft_ms": 3000, "tpot_ms": 50, "percentile": 95},
    "operations": {"autoscaling": False}}


def _report(path: Path) -> str:
    rec = build_recommendation(path, ProfileCatalog(), display="hours.yaml")
    return json.dumps(rec.report, sort_keys=True, default=str)


def test_shared_tables_give_the_same_report(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "hours.yaml"
    path.write_text(yaml.safe_dump(WORKLOAD, sort_keys=False), encoding="utf-8")
    from advisor.loading.resolve import load_scenario

    sc = load_scenario(path, ProfileCatalog())
    assert capacities.pooled_phase_aliases(sc.phases) == (0, 0, 2, 0)
    shared = _report(path)
    monkeypatch.setattr(capacities, "pooled_phase_aliases",
                        lambda phases: tuple(range(len(phases))))
    assert _report(path) == shared
