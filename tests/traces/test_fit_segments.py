"""``fit`` segments a log before it summarises (issue #31): planted idle periods, whole-second
timestamps and request populations are found (several seeds), and every fitted distribution
carries a goodness-of-fit figure.

Planted (tests/traces/planted.py): busy periods at 5 req/s, gap CV 1.5, separated by 12 idle
gaps of 60–217 s (the shape of the issue's Azure code trace); arrivals at 10 req/s of CV 1 and
2 logged as whole seconds in a millisecond field (the Mooncake conversation trace's 90 % zero
gaps); 15 minutes of chat then 15 of documents at one rate, against 30 minutes of chat.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from advisor.core.distributions import LengthDistribution
from advisor.core.trace_fit import fit_traffic
from advisor.core.trace_gof import length_ks
from tests.traces.planted import (
    lognormal_lengths,
    make_idle,
    make_populations,
    make_whole_seconds,
    write,
)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_planted_idle_periods_are_cut_out(seed: int) -> None:
    log = make_idle(seed)
    fit = fit_traffic(log.arrival_s, log.prompt, log.output)
    assert fit.idle.count == log.idle_s.size == 12
    np.testing.assert_allclose(np.sort(fit.idle.gaps_s), np.sort(log.idle_s), rtol=0.02,
                               atol=3.0)  # a planted gap plus the busy gap it replaces
    span = float(log.arrival_s[-1])
    assert fit.idle.duty_cycle == pytest.approx(1 - log.idle_s.sum() / span, abs=0.01)
    # inside the busy periods: the planted rate and CV; over the span: an artefact
    assert fit.rate_rps == pytest.approx(log.rate_rps, rel=0.05)
    assert fit.burstiness == pytest.approx(log.cv, rel=0.1)
    assert [ph.burstiness for ph in fit.phases] == pytest.approx([log.cv], rel=0.1)
    assert fit.span_burstiness > 5 * log.cv
    assert any(limit.startswith("idle periods: 12 gaps") for limit in fit.limits)
    # the replay measures each busy period on its own
    assert len(fit.segment_bounds_s) == 13


def test_no_idle_period_in_steady_bursty_traffic() -> None:
    """The fence is a multiple of the busy gaps: at CV 2.5 no gap of 20 logs of 10⁴ is idle
    beyond the expected false alarms (α = 0.01 per log)."""
    from advisor.core.trace_timing import idle_periods
    from tests.traces.planted import gamma_times

    found = sum(idle_periods(gamma_times(np.random.default_rng(s), 10.0, 2.5, 10_000)).count
                for s in range(20))
    assert found <= 2


@pytest.mark.parametrize(("seed", "cv"), [(0, 1.0), (1, 1.0), (2, 2.0), (3, 2.0)])
def test_whole_second_timestamps_are_detected(seed: int, cv: float) -> None:
    logged, _true, true_cv = make_whole_seconds(seed, cv=cv)
    n = logged.size
    fit = fit_traffic(logged, np.full(n, 500), np.full(n, 100), time_unit_s=0.001)
    q = fit.quantisation
    assert q.tick_s == 1.0 and q.coarse
    assert q.zero_gap_share > 0.6 and q.distinct < n / 5
    b = fit.burst_detail
    assert b.method == "dispersion" and b.lower is not None
    assert b.lower < true_cv < b.gaps_cv  # the truth lies within the bounds reported
    assert fit.burstiness == pytest.approx(true_cv, rel=0.15)  # the estimate written
    assert b.gaps_cv > 1.4 * true_cv  # the gaps as logged: mostly quantisation
    assert len(fit.phases) == 1
    text = next(limit for limit in fit.limits if limit.startswith("quantised timestamps"))
    assert "whole seconds in a millisecond field (1,000 of its units)" in text


def test_fine_timestamps_are_not_called_coarse() -> None:
    """Millisecond timestamps of gaps ~100 ms: a tick that moves the CV by well under 5 %."""
    _logged, true, _cv = make_whole_seconds(5, cv=1.5)
    t = np.round(true - true[0], 3)
    fit = fit_traffic(t, np.full(t.size, 500), np.full(t.size, 100))
    assert fit.quantisation.tick_s == pytest.approx(0.001) and not fit.quantisation.coarse
    assert fit.burst_detail.method == "gaps"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_two_populations_are_two_phases_one_is_one(seed: int) -> None:
    t, p, o = make_populations(seed, two=True)
    fit = fit_traffic(t, p, o)
    assert len(fit.phases) == 2 and fit.phase_tests in (("prompt",), ("output",))
    assert fit.phases[0].prompt.mean == pytest.approx(800, rel=0.05)
    assert fit.phases[1].prompt.mean == pytest.approx(4000, rel=0.05)
    assert [ph.share for ph in fit.phases] == pytest.approx([0.5, 0.5], abs=0.02)
    t, p, o = make_populations(seed, two=False)
    assert len(fit_traffic(t, p, o).phases) == 1


def test_a_phase_shorter_than_the_minimum_is_not_split_off() -> None:
    t, p, o = make_populations(0, two=True, minutes=5.0)  # two stretches of 300 s
    assert len(fit_traffic(t, p, o).phases) == 1  # default minimum: 600 s
    assert len(fit_traffic(t, p, o, min_phase_s=120.0).phases) == 2


def test_goodness_of_fit_separates_one_lognormal_from_two_populations() -> None:
    rng = np.random.default_rng(9)
    one = lognormal_lengths(rng, 1000.0, 0.6, 5000)
    two = np.concatenate((lognormal_lengths(rng, 200.0, 0.3, 2500),
                          lognormal_lengths(rng, 4000.0, 0.3, 2500)))
    for x, good in ((one, True), (two, False)):
        dist = LengthDistribution.fit(mean=float(x.mean()), p50=float(np.median(x)),
                                      p95=float(np.percentile(x, 95)), max_tokens=float(x.max()))
        ks = length_ks(x, dist)
        assert (ks < 0.05) if good else (ks > 0.2), ks
    t = np.cumsum(rng.exponential(0.2, 5000))
    fit = fit_traffic(t - t[0], rng.permutation(two), np.full(5000, 100))
    assert len(fit.phases) == 1  # interleaved, not a phase: the fit says what it cannot hold
    assert fit.phases[0].fit.prompt_ks > 0.2
    assert any(limit.startswith("prompt lengths that are not one lognormal")
               for limit in fit.limits)
    assert fit.phases[0].fit.gaps_ks is not None and fit.phases[0].fit.gaps_ks < 0.03


def test_fit_check_replays_the_log_on_the_recommended_plan(run_cli: Callable[..., Any],
                                                           tmp_path: Path) -> None:
    from tests.traces.planted import PlantedPhase, make

    planted = make(phases=(PlantedPhase(6.0, 200.0, 1200.0, 150.0),), seed=2, cv=1.0)
    log = write(planted, "burstgpt", tmp_path / "log.csv")
    out = run_cli("fit", log, "--check", exit_code=0).stdout
    head = next(line for line in out.splitlines() if line.startswith("Check: "))
    assert "recommended plan (chunked-prefill: chunked" in head
    rows = [line.split() for line in out.splitlines() if line.split()[1:2] == ["TTFT"]
            or line.split()[:1] == ["TTFT"]]
    assert len(rows) == 3
    doc = json.loads(run_cli("fit", log, "--check", "-f", "json", exit_code=0).stdout)
    replay = doc["check"]["replay"]
    assert doc["check"]["verdict"] == "chunked-prefill" and replay["mode"] == "chunked"
    p95 = replay["phases"][0]["ttft_ms"]["p95"]
    assert p95["simulated"] > 0 and p95["analytic"] > 0
    assert doc["not_represented"] == [] and doc["idle"]["gaps"] == 0
