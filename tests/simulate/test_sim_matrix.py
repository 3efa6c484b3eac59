"""The analytic model against the simulator on a matrix of scenarios (issue #6).

13 workloads (tests/data/simulate/s*.yaml: three models plus Mixtral, short and long prompts,
light and heavy load, Poisson and bursty arrivals), each simulated in the colocated chunked and
the disaggregated mode on the analytic model's best plan. The analytic p95 TTFT and TPOT must
be within ±25 % of the simulated ones, or the case is outside for a documented reason:

* ``BURSTY_TAIL`` (TTFT, analytic below the simulation; s08: short prompts, gamma arrivals of
  CV 2.5, two colocated instances): the queue term takes the arrival burstiness from the
  GI/M/1 solution (``queueing.gg_c_wait_s``), which brought the other bursty cases inside.
  What is left is mostly the instance count, which the per-instance model cannot see (the
  per-instance goodput is reused across cluster sizes and rates by the sweep, so it may not
  depend on them). The simulated TTFT p95 at a fixed per-instance load falls steeply with
  the instances the router spreads a burst over — s08 at 1/2/4/8 instances: 495/331/246/192
  ms (analytic 197 throughout), s11 3368/1930/1272/1048 (analytic 1462), s03 221/146/116/92
  (analytic 115) — and s08 is the only bursty case of the matrix on two instances. The
  model is in effect calibrated to about four: two of its approximations cancel there.
  (1) It prices a queued token at the mean step time per budget slot (τ/room), but a
  backlog drains in full budget steps (T_full/room, 2.4–3.5·τ/room in the bursty cases);
  (2) each instance sees the pool's full arrival burstiness, but a router splits bursts.
  Fixing (1) alone — T_full/room as the queue's service, utilisation λ·S̄·T_full/room, and
  the p95 of the *sum* (backlog tokens + own prompt, priced in whole budget steps) instead
  of the sum of the p95s — reproduces a single instance (no routing): within −5 … +19 % on
  11 of the 13 workloads run on one instance at the same per-instance rate (s06 +62 %,
  s11 +40 %), where the present model is 0 … −60 % low. On the matrix's pools it is then
  +8 … +272 % high; with (2) as well (bursts split round-robin, per-instance c_a² = c²/n)
  the four bursty cases come within −2 … +12 % (the Poisson long-prompt heavy ones stay
  53–68 % high: the router pools those too), but that needs n in the model. Every
  instance-count-free variant tried (price τ, T_full, the mixed step or their geometric
  mean; utilisation from the step share or the time share; sum of percentiles, percentile
  of the sum in seconds or in tokens; the first budget of backlog riding along in the next
  step, with a busy period's full-step residual) either leaves s08 below −25 % or puts s11,
  s06 or s03 above +25 %; the closest (the last) has s08 −33 % and s09, the other heavy
  case on two instances, −30 %.
* ``CLUSTERED_MIXED_STEPS`` (TPOT, analytic below the simulation): the model's TPOT tail is
  the binomial upper quantile of the share of a request's gaps that land on a mixed step; the
  gaps come in runs (a prompt spans ⌈S/room⌉ consecutive steps, bursts cluster prompts), which
  the model now counts as Ō/run independent draws. The cases listed in ``TPOT_CLUSTERED`` were
  outside before that and are inside now; the allowance stays for the idealised runs below.

History: the first model queued every instance separately (G/G/1 at rate/instances), which put
the analytic TTFT 32–224 % above the JSQ simulation; the disaggregated prefill pool is now a
G/G/c queue over its instances (Allen–Cunneen), the colocated prompt "server" is the token
budget (utilisation λ·S̄·τ/room) rather than the time share of mixed steps, and bursty arrivals
enter through the GI/M/1 probability of waiting instead of Kingman's c_a² (which put s03 and
s11 28–50 % low).

Run ``pytest -s tests/simulate/test_sim_matrix.py`` to see the tables.
"""

from __future__ import annotations

import pytest

from advisor.core.simulate import ColocatedSimPlan, SimulationResult, simulate
from tests.simulate.helpers import MATRIX, idealised, model, scenario

REQUESTS = 8000
SEED = 7
TOLERANCE = 0.25

BURSTY_TAIL = "BURSTY_TAIL"
CLUSTERED_MIXED_STEPS = "CLUSTERED_MIXED_STEPS"

TTFT_BURSTY = {
    # short prompts, gamma(CV 2.5) arrivals, two colocated instances (measured −40 % at the
    # time of writing; the other bursty cases, on four instances, are inside: see the
    # docstring for the instance-count dependence the per-instance model cannot see)
    ("s08-32b-short-bursty", "chunked"),
}

TPOT_CLUSTERED = {
    # (scenario, mode): bursty or long-prompt heavy cases whose TPOT p95 spread exceeds the
    # binomial one (measured −20 … −46 % at the time of writing).
    ("s06-8b-long-bursty", "chunked"),
    ("s06-8b-long-bursty", "disaggregated"),
    ("s08-32b-short-bursty", "chunked"),
    ("s11-70b-long-bursty", "chunked"),
    ("s12-70b-long-heavy", "chunked"),
}
IDEAL_TPOT_CLUSTERED = {
    # With Poisson arrivals and constant lengths only the queue busy periods cluster.
    ("s05-8b-long-heavy", "unchunked"),
    ("s09-32b-long-heavy", "unchunked"),
    ("s12-70b-long-heavy", "chunked"),
    ("s12-70b-long-heavy", "unchunked"),
}


def _queue_instances(res: SimulationResult) -> int:
    plan = res.plan
    if isinstance(plan, ColocatedSimPlan):
        return plan.instances
    return plan.prefill_instances


def _pct(x: float | None) -> str:
    return "   n/a" if x is None else f"{x * 100:+5.0f}%"


def _verdict(diff: float | None, allowed: str | None, analytic_high: bool) -> tuple[bool, str]:
    """(acceptable, label) for one relative difference (analytic − simulated) / simulated."""
    if diff is None:
        return False, "MISSING"
    if abs(diff) <= TOLERANCE:
        return True, "ok"
    if allowed is None:
        return False, "OUTSIDE"
    right_way = diff > 0 if analytic_high else diff < 0
    return right_way, allowed if right_way else f"{allowed}?wrong-direction"


def _row(name: str, res: SimulationResult, tpot_allowed: set[tuple[str, str]]
         ) -> tuple[bool, str]:
    ph = res.overall
    ttft, tpot = ph.ttft_ms[1], ph.tpot_ms[1]
    bursty = BURSTY_TAIL if (name, res.mode) in TTFT_BURSTY else None
    ok1, v1 = _verdict(ttft.relative_diff, bursty, analytic_high=False)
    clustered = CLUSTERED_MIXED_STEPS if (name, res.mode) in tpot_allowed else None
    ok2, v2 = _verdict(tpot.relative_diff, clustered, analytic_high=False)
    line = (f"{name:26s} {res.mode:13s} {_queue_instances(res):3d} "
            f"{ttft.simulated:9.1f} {ttft.analytic or float('nan'):9.1f} "
            f"{_pct(ttft.relative_diff)} {v1:22s} "
            f"{tpot.simulated:7.1f} {tpot.analytic or float('nan'):7.1f} "
            f"{_pct(tpot.relative_diff)} {v2}")
    return ok1 and ok2, line


HEADER = (f"{'scenario':26s} {'mode':13s} {'n':>3s} {'TTFT95sim':>9s} {'TTFT95ana':>9s} "
          f"{'diff':>6s} {'verdict':22s} {'TPOT95s':>7s} {'TPOT95a':>7s} {'diff':>6s} verdict")


def test_matrix_has_enough_scenarios() -> None:
    assert len(MATRIX) >= 12
    models = {scenario(n).model.name for n in MATRIX}
    assert len(models) >= 3
    assert {p.burstiness > 1.0 for n in MATRIX for p in scenario(n).phases} == {True, False}


def test_analytic_percentiles_against_simulation() -> None:
    lines, bad = [HEADER], []
    for name in MATRIX:
        for mode in ("chunked", "disaggregated"):
            res = simulate(scenario(name), mode, REQUESTS, SEED, model=model(name))
            ok, line = _row(name, res, TPOT_CLUSTERED)
            lines.append(line)
            if not ok:
                bad.append(line)
            # finite-window Little's law: edge error O(L / requests); 2 % is checked on longer
            # runs in test_sim_engine.py
            assert res.little.relative_error < 0.05, (name, mode, res.little)
    print("\nanalytic vs simulated p95 (ms), JSQ routing, "
          f"{REQUESTS} requests, seed {SEED}; n = instances sharing the prompt queue\n"
          + "\n".join(lines))
    assert not bad, "outside ±25 % without a documented reason:\n" + "\n".join(bad)


def test_model_assumptions_reproduced() -> None:
    """Poisson, constant lengths, and the routing each queue model assumes (colocated:
    independent per-instance prompt queues = random routing; disaggregated prefill: one pooled
    queue = join-the-shortest-queue).

    Unchunked and disaggregated TTFT p95 and every TPOT p50 then agree within ±25 % (TPOT p95
    only where mixed steps do not cluster): step times and the mean-field model match the
    simulator. Known limit, printed but not asserted: with *constant* prompt lengths the
    chunked colocated TTFT p95 comes out 15–57 % below the simulation — the chunked prompt
    queue (the token budget as one server) is too optimistic on its own; with realistic
    length spreads the q-quantile prompt and the quantile sum make up for it (main matrix).
    """
    lines, bad = [HEADER], []
    for name in MATRIX:
        sc = idealised(scenario(name))
        for mode in ("chunked", "unchunked", "disaggregated"):
            routing = "jsq" if mode == "disaggregated" else "random"
            res = simulate(sc, mode, 5000, SEED, model=model(name), routing=routing)
            ok, line = _row(name, res, IDEAL_TPOT_CLUSTERED)
            if mode == "chunked":  # TTFT not asserted (see the docstring); TPOT still is
                tpot = res.overall.tpot_ms[1].relative_diff
                ok = tpot is not None and (abs(tpot) <= TOLERANCE
                                           or (name, mode) in IDEAL_TPOT_CLUSTERED)
            median = res.overall.tpot_ms[0].relative_diff
            ok = ok and median is not None and abs(median) <= 0.1
            lines.append(f"{line}  TPOT50 {_pct(median)}")
            if not ok:
                bad.append(line)
    print("\nidealised (Poisson, constant lengths, model's routing), 5000 requests\n"
          + "\n".join(lines))
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("name", ["s02-8b-short-heavy", "s12-70b-long-heavy"])
def test_prefill_pool_is_one_queue(name: str) -> None:
    """Join-the-shortest-queue pools the prefill instances: the simulated TTFT is lower than
    with random routing, and the analytic G/G/c figure is closer to JSQ than to random."""
    sc, r = scenario(name), model(name)
    jsq = simulate(sc, "disaggregated", 5000, SEED, model=r)
    rnd = simulate(sc, "disaggregated", 5000, SEED, model=r, routing="random")
    analytic = jsq.overall.ttft_ms[1].analytic
    assert analytic is not None
    assert jsq.overall.ttft_ms[1].simulated < rnd.overall.ttft_ms[1].simulated
    assert abs(analytic - jsq.overall.ttft_ms[1].simulated) < abs(
        analytic - rnd.overall.ttft_ms[1].simulated)
