"""Phases that differ only in their rates share one pooled-prefill table and one colocated
goodput table (#34): the report, boundaries included, is the same as with tables per phase,
and the colocated search runs once per distinct phase."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
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


def test_colocated_goodputs_search_once_per_distinct_phase(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "hours.yaml"
    path.write_text(yaml.safe_dump(WORKLOAD, sort_keys=False), encoding="utf-8")
    from advisor.core.plan.shapes import instance_shapes
    from advisor.loading.resolve import load_scenario

    sc = load_scenario(path, ProfileCatalog())
    shapes = instance_shapes(sc)[0][:2]
    pools = np.array([4.0, 8.0])
    calls: list[str] = []
    real = capacities.max_rate_meeting

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(str(args[2].name))  # type: ignore[attr-defined]
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(capacities, "max_rate_meeting", counted)
    shared = capacities.colocated_goodputs(sc, shapes, np.array([512.0, 2048.0]), pools)
    assert calls == ["night", "rag"]  # morning and evening are night at other rates
    calls.clear()
    monkeypatch.setattr(capacities, "pooled_phase_aliases",
                        lambda phases: tuple(range(len(phases))))
    apart = capacities.colocated_goodputs(sc, shapes, np.array([512.0, 2048.0]), pools)
    assert calls == ["night", "morning", "rag", "evening"]
    assert shared.shape == (2, 4, 2)
    assert np.array_equal(shared, apart)
