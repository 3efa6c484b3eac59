"""The refit tool's rejection rule (#30): a fit that worsens any engine family's held rows, or
breaks a goal of the calibration table that held before it, is reported and not written
(tools/refit_engines.py, tools/calibration/goals.py). The synthetic fits run on the 8 points of
the ``trtllm-legacy`` family (first-token latencies: cheap to predict)."""

from __future__ import annotations

import pytest

from tools import refit_engines
from tools.calibration.goals import goal_failures
from tools.calibration.points import POINTS, Context, errors
from tools.refit_engines import FitResult, family_summaries, fitted_spec, worsened_families

FAMILY = "trtllm-legacy"


@pytest.fixture(scope="module")
def ctx() -> Context:
    return Context.load()


def _synthetic(ctx: Context, step_overhead_s: float) -> FitResult:
    """A 'fit' that moves the family's step overhead to ``step_overhead_s``."""
    now = ctx.engines[FAMILY].step_overhead_s
    assert now is not None
    return FitResult(FAMILY, ["step_overhead_s"], [now], [step_overhead_s], [True], [], [], "")


def test_a_fit_that_worsens_a_family_is_rejected(ctx: Context) -> None:
    before = family_summaries(ctx, [FAMILY])
    worse = _synthetic(ctx, 0.05)  # 12 ms -> 50 ms per step: every first token far too slow
    after = family_summaries(ctx.with_engine(fitted_spec(ctx, worse)), [FAMILY])
    [line] = worsened_families(before, after)
    assert line.startswith(f"{FAMILY}: RMS log error") and after[FAMILY].rms > before[FAMILY].rms
    unchanged = _synthetic(ctx, ctx.engines[FAMILY].step_overhead_s or 0.0)
    assert worsened_families(before, family_summaries(
        ctx.with_engine(fitted_spec(ctx, unchanged)), [FAMILY])) == []


def test_the_tool_writes_nothing_and_fails_on_a_rejected_fit(
        ctx: Context, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(refit_engines, "POINTS", [p for p in POINTS if p.engine == FAMILY])
    monkeypatch.setattr(refit_engines, "fit_engine",
                        lambda c, engine_id, names, nfev: _synthetic(c, 0.05))
    monkeypatch.setattr(refit_engines, "report", lambda result: "")
    path = ctx.catalog.path_of("engines", FAMILY)
    text = path.read_text(encoding="utf-8")
    assert refit_engines.main(["--engine", FAMILY, "--write"]) == 1
    assert path.read_text(encoding="utf-8") == text
    assert "REJECTED" in capsys.readouterr().out


def test_a_fit_the_calibration_test_would_reject_is_rejected_by_the_tool(ctx: Context) -> None:
    """SGLang's overlap fitted from a start at 0.7 lands at ω = 0.30 (stop 39's refit): its
    held rows improve (RMS log error 0.142 → 0.136, so the held-row rule alone accepted it) but
    the family's median |error| over all its rows rises above its baseline, which
    tests/core/test_calibration.py rejects. The tool applies the same goals
    (tools/calibration/goals.py) and rejects it too; ω = 0 (the committed value) is accepted."""
    family = "sglang"
    now = ctx.engines[family].compute_memory_overlap
    assert now == 0.0
    fit = FitResult(family, ["compute_memory_overlap"], [now], [0.30], [True], [], [], "")
    after = ctx.with_engine(fitted_spec(ctx, fit))
    assert worsened_families(family_summaries(ctx, [family]),
                             family_summaries(after, [family])) == []  # the old rule: accepted
    [line] = refit_engines.rejection_reasons(ctx, fit)
    assert line.startswith("family sglang:") and "baseline" in line
    goal = goal_failures(errors(POINTS, after))[family]
    assert goal == line
    same = FitResult(family, ["compute_memory_overlap"], [now], [now], [True], [], [], "")
    assert refit_engines.rejection_reasons(ctx, same) == []
