"""The figure's data (``core.analysis.figure_data``) against the model's and the report's.

At the workload's rate each curve must reproduce the plan's reported percentiles (the same
functions, the same instances): to 1e-4 relative (the colocated fixed point is solved for
many rates at once, which can stop it one iteration away from the scalar solve). The TTFT
parts must sum to the plan's TTFT. Each plan's goodput is the model's, computed once; its
curve meets the SLOs there and misses them 0.5 % past it (the goodput searches stop within
1e-3 of the root, a split's pool-size grid within 0.41 %, docs/model.md §6; the unchunked
search used to stop 1.9 % below on prefill-heavy-70b-ib, #28). The figure's numbers equal
the report document's to 5e-6 relative (the JSON keeps six significant digits).
"""

from __future__ import annotations

import functools
import hashlib
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from advisor.core.analysis.figure_data import (
    COLOCATED,
    DISAGGREGATED,
    TTFT_PARTS,
    UNCHUNKED,
    FigureData,
    LatencyCurve,
    figure_data,
)
from tests.render.reports import EXAMPLES, REPO_ROOT

DAY_NIGHT = REPO_ROOT / "examples" / "day-night-shift.yaml"
PREFILL_HEAVY = REPO_ROOT / "examples" / "prefill-heavy-70b-ib.yaml"


@functools.cache
def _evaluated(path: Path) -> tuple[Any, Any, FigureData, dict[str, Any]]:
    """The scenario, the model, the figure's data and the report document, from one
    evaluation (as ``usecases.recommend.build_recommendation`` makes them)."""
    from advisor.core.plan.capacities import Capacities
    from advisor.core.plan.evaluate import evaluate
    from advisor.core.verdict.decision import decide
    from advisor.loading.catalog import ProfileCatalog
    from advisor.loading.resolve import load_scenario_and_document
    from advisor.render.report_json import build_report

    sc, _ = load_scenario_and_document(path, ProfileCatalog(env={}))
    caps = Capacities(sc)
    model = evaluate(sc, caps)
    decision = decide(sc, model)
    doc = build_report(sc, decision, path.name, hashlib.sha256(path.read_bytes()).hexdigest())
    phase = (model.disaggregated_phase if decision.verdict == "disaggregate"
             else model.colocated_phase)
    return sc, model, figure_data(sc, model, caps, phase), doc


def _plans(model: Any, data: FigureData) -> dict[str, Any]:
    phase = next(p for p in model.phases if p.name == data.phase)
    disagg = (model.disaggregated if model.disaggregated_phase == data.phase
              else phase.disaggregated)
    return {COLOCATED: phase.colocated, UNCHUNKED: phase.unchunked, DISAGGREGATED: disagg}


def _misses(curve: LatencyCurve, data: FigureData, i: int, q: float,
            rtol: float = 0.0) -> bool:
    """Whether ``curve`` misses an SLO by more than ``rtol`` (or is overloaded) at the rate
    of index ``i``."""
    t, p = curve.ttft_ms[q][i], curve.tpot_ms[q][i]
    if not (math.isfinite(t) and math.isfinite(p)):
        return True
    return bool((data.ttft_slo_ms is not None and t > data.ttft_slo_ms * (1 + rtol))
                or (data.tpot_slo_ms is not None and p > data.tpot_slo_ms * (1 + rtol)))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_curves_reproduce_the_plans_at_the_workload_rate(path: Path) -> None:
    sc, model, data, _ = _evaluated(path)
    plans = _plans(model, data)
    i = int(np.flatnonzero(data.rates_rps == data.rate_rps)[0])
    q = round(sc.slo.quantile, 6)
    assert {c.plan for c in data.curves} == {k for k, p in plans.items() if p is not None}
    for curve in data.curves:
        plan = plans[curve.plan]
        if plan.overloaded:  # the DeepSeek-V3 example's unchunked pool: no latency, NaN
            assert math.isnan(curve.ttft_ms[q][i]) and math.isnan(curve.tpot_ms[q][i])
            continue
        assert curve.ttft_ms[q][i] == pytest.approx(plan.ttft_ms, rel=1e-4), curve.plan
        assert curve.tpot_ms[q][i] == pytest.approx(plan.tpot_ms, rel=1e-4), curve.plan
        for p95, p99 in zip(curve.ttft_ms[0.95], curve.ttft_ms[0.99], strict=True):
            if math.isfinite(p95) and math.isfinite(p99):
                assert p99 >= p95 - 1e-9


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_ttft_parts_sum_to_the_plans_ttft(path: Path) -> None:
    _, model, data, _ = _evaluated(path)
    plans = _plans(model, data)
    assert [d.plan for d in data.ttft] == [c.plan for c in data.curves]
    for d in data.ttft:
        if plans[d.plan].overloaded:  # no TTFT at the workload's rate: no parts, said so
            assert d.parts_ms == {} and d.total_ms is None
            continue
        assert set(d.parts_ms) == set(TTFT_PARTS)
        assert all(v >= 0.0 for v in d.parts_ms.values()), d
        assert sum(d.parts_ms.values()) == pytest.approx(plans[d.plan].ttft_ms, rel=1e-5)
        if d.plan == DISAGGREGATED:
            assert d.parts_ms["decode_step"] == 0.0 and d.parts_ms["kv_transfer"] > 0.0
        else:
            assert d.parts_ms["kv_transfer"] == 0.0 and d.parts_ms["decode_step"] > 0.0


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_each_curve_crosses_the_slo_at_the_plans_goodput(path: Path) -> None:
    """The goodput the figure marks is the model's (one computation, #28), and its curve
    agrees: it meets the SLOs there (to 1e-4: a split's goodput search stops within 1e-4 of
    the root, on either side; day-night-shift's static split is 4e-5 over its TTFT SLO) and
    misses them from 0.5 % past it, on the target the figure says binds where it is not
    overloaded yet (a split's curve with its own prefill pool, #22)."""
    sc, model, data, _ = _evaluated(path)
    plans = _plans(model, data)
    q = round(sc.slo.quantile, 6)
    assert data.rates_rps[-1] >= max(c.goodput_rps for c in data.curves)
    for curve in data.curves:
        expected = plans[curve.plan].max_goodput_rps
        if curve.plan == DISAGGREGATED and data.static_split:
            expected = next(p for p in model.phases if p.name == data.phase).static_goodput_rps
        assert curve.goodput_rps == expected, curve.plan
        at = np.flatnonzero(data.rates_rps == curve.goodput_rps)
        assert at.size == 1, "the goodput is a point of the curve"
        assert not _misses(curve, data, int(at[0]), q, rtol=1e-4), curve.plan
        past = np.flatnonzero(data.rates_rps >= curve.goodput_rps * 1.005)
        assert past.size and all(_misses(curve, data, int(i), q) for i in past), curve.plan
        assert curve.limited_by in {"ttft", "tpot", "overload"}
        first = int(past[0])
        if curve.limited_by == "overload":
            assert math.isnan(curve.ttft_ms[q][first]), curve.plan
        else:  # the target the curve crosses (a steep TTFT may be overloaded 0.5 % on)
            series = curve.ttft_ms if curve.limited_by == "ttft" else curve.tpot_ms
            slo = data.ttft_slo_ms if curve.limited_by == "ttft" else data.tpot_slo_ms
            value = series[q][first]
            assert slo is not None and (math.isnan(value) or value > slo), curve.plan


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_figure_numbers_are_the_reports(path: Path) -> None:
    """#28: what the figure prints is what the report prints — each plan's goodput in the
    figure's phase (the legend reads it from the report document), the TTFT at the workload's
    rate, the splits' GPUs and goodputs, the per-phase goodputs. To 5e-6 relative (the JSON
    keeps six significant digits)."""
    from advisor.render.report_plot import report_goodputs

    sc, _, data, doc = _evaluated(path)
    rel = 5e-6
    stated = report_goodputs(doc, data)
    for curve in data.curves:
        assert stated[curve.plan] == pytest.approx(curve.goodput_rps, rel=rel), curve.plan
    top = {COLOCATED: doc["colocated"], UNCHUNKED: doc["unchunked"],
           DISAGGREGATED: doc["disaggregated"]}
    for d in data.ttft:
        plan = top[d.plan]
        if d.total_ms is not None and (len(sc.phases) == 1 or plan.get("phase") == data.phase):
            assert d.total_ms == pytest.approx(plan["ttft_ms"], rel=rel), d.plan
    if data.splits and not data.static_split:
        dis = doc["disaggregated"]
        for bar, row in zip(data.splits, [dis, *dis["alternatives"][:1]], strict=True):
            assert (bar.prefill_gpus, bar.decode_gpus, bar.idle_gpus) == (
                row["prefill_gpus"], row["decode_gpus"], row["idle_gpus"])
            assert bar.goodput_rps == pytest.approx(row["max_goodput_rps"], rel=rel)
        assert data.ideal_prefill_fraction == pytest.approx(dis["ideal_prefill_fraction"],
                                                            rel=rel)
    assert len(data.phases) == (len(doc["phases"]) if len(sc.phases) > 1 else 0)
    for fig_phase, row in zip(data.phases, doc["phases"], strict=False):
        assert fig_phase.name == row["name"] and fig_phase.rate_rps == row["rate_rps"]
        assert fig_phase.colocated_goodput_rps == pytest.approx(
            row["colocated_max_goodput_rps"], rel=rel)
        assert fig_phase.unchunked_goodput_rps == pytest.approx(
            row["unchunked_max_goodput_rps"], rel=rel)
        assert fig_phase.static_goodput_rps == pytest.approx(row["static_goodput_rps"], rel=rel)
        assert fig_phase.phase_best_goodput_rps == pytest.approx(
            row["disaggregated_max_goodput_rps"], rel=rel)


def test_split_bars_are_the_models_best_and_runner_up() -> None:
    sc, model, data, _ = _evaluated(PREFILL_HEAVY)
    best, runner = data.splits
    assert (best.role, runner.role) == ("best", "runner-up")
    a, alt = model.disaggregated.allocation, model.disaggregated.alternatives[0]
    assert (best.prefill_gpus, best.decode_gpus, best.idle_gpus) == (
        a.prefill_gpus, a.decode_gpus, a.idle_gpus)
    assert (runner.prefill_gpus, runner.decode_gpus, runner.idle_gpus) == (
        alt.prefill_gpus, alt.decode_gpus, alt.idle_gpus)
    assert best.prefill_gpus + best.decode_gpus + best.idle_gpus == sc.cluster.gpus
    assert data.ideal_prefill_fraction == model.disaggregated.ideal_prefill_fraction
    assert data.phases == () and not data.static_split


def test_a_static_split_is_drawn_beside_the_phases_own_best_split() -> None:
    """day-night-shift (static pools, two phases): the figure's phase is the one binding the
    verdict; its disaggregated plan is the static split with that phase's goodput under it,
    beside the best split of the phase alone (not a runner-up of another phase's)."""
    sc, model, data, _ = _evaluated(DAY_NIGHT)
    assert data.static_split
    phase = next(p for p in model.phases if p.name == data.phase)
    static, own = data.splits
    assert (static.role, own.role) == ("static", "phase-best")
    assert (static.prefill_gpus, static.decode_gpus) == (
        model.static_allocation.prefill_gpus, model.static_allocation.decode_gpus)
    assert static.goodput_rps == phase.static_goodput_rps
    assert (own.prefill_gpus, own.decode_gpus) == (
        phase.disaggregated.allocation.prefill_gpus, phase.disaggregated.allocation.decode_gpus)
    assert own.goodput_rps == phase.disaggregated.max_goodput_rps >= static.goodput_rps
    assert [p.name for p in data.phases] == [p.name for p in sc.phases]
    for fig_phase, p in zip(data.phases, model.phases, strict=True):
        assert fig_phase.static_goodput_rps == p.static_goodput_rps
        assert fig_phase.colocated_goodput_rps == p.colocated.max_goodput_rps
        assert fig_phase.static_goodput_rps <= fig_phase.phase_best_goodput_rps + 1e-9


def test_no_slo_means_the_limit_is_overload() -> None:
    _, model, data, _ = _evaluated(REPO_ROOT / "tests" / "data" / "check" / "no-slo.yaml")
    assert data.ttft_slo_ms is None and data.tpot_slo_ms is None
    plans = _plans(model, data)
    for curve in data.curves:
        assert curve.limited_by == "overload"
        assert curve.goodput_rps == plans[curve.plan].max_goodput_rps > 0


def test_nothing_fits_gives_empty_panels() -> None:
    _, _, data, _ = _evaluated(REPO_ROOT / "tests" / "data" / "check" / "does-not-fit.yaml")
    assert data.curves == () and data.splits == () and data.ttft == ()
