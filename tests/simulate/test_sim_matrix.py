"""The analytic model against the simulator on a matrix of scenarios (issue #6).

13 workloads (tests/data/simulate/s*.yaml: three models plus Mixtral, short and long prompts,
light and heavy load, Poisson and bursty arrivals), each simulated in the colocated chunked and
the disaggregated mode on the analytic model's best plan. The analytic p95 TTFT and TPOT must
be within ±25 % of the simulated ones, or the case is outside for a documented reason:

* ``CLUSTERED_MIXED_STEPS`` (TPOT, analytic below the simulation): the model's TPOT tail is
  the binomial upper quantile of the share of a request's gaps that land on a mixed step; the
  gaps come in runs (a prompt spans ⌈S/room⌉ consecutive steps, bursts cluster prompts), which
  the model now counts as Ō/run independent draws. The cases listed in ``TPOT_CLUSTERED`` were
  outside before that and are inside now; the allowance stays for the idealised runs below.

Every TTFT case is inside but one, ``POOLED_SHORT_BURSTY`` (TTFT, analytic below the
simulation, bounded at −35 %): s08's disaggregated plan has pooled six TP prefill instances
since each split's prefill goodput is taken at its own pool size (before, at the ideal
split's, the best split had four, inside at −5 %). Short prompts at CV > 1 over six
join-the-shortest-queue servers: the pooled G/G/c percentile (Allen–Cunneen mean wait, GI/M/1
tail) gives 283.5 ms against a simulated 387–407 ms (−27 … −30 % over seeds 1, 2, 3, 7 and
8,000–32,000 requests): the burst clusters a G/G/c with independent service does not see
(docs/model.md §7). The colocated prompt queue (docs/model.md §5) depends on the pool
size n the router spreads the traffic over:

* the router (join-the-shortest-queue on outstanding requests) deals a burst out about round
  robin — each arrival raises its instance's count, so the next one goes elsewhere — and
  round robin over n instances turns gamma arrivals of CV c into gamma arrivals of
  CV² = c²/n per instance (Erlang-n for Poisson);
* a backlog drains in full budget steps: the queue's service is a prompt at T_full/room per
  token (utilisation λ·S̄·T_full/room), and the TTFT is the percentile of the *sum* of the
  backlog found and the own prompt (in tokens), run in whole budget steps.

The simulated TTFT p95 at a fixed per-instance load does fall with the instances: s08 at
1/2/4/8 instances 495/331/246/192 ms (model +5/−2/−6/−6 %), s03 221/146/116/92
(+8/+8/−1/−6 %), s11 3368/1930/1272/1048 (+40/+29/+14/−6 %: long prompts at CV 2.5 on one or
two instances are the model's weak side; none in the matrix) — the queue of the previous model
(priced at the mean step time τ/room, the pool's full burstiness at every instance) gave
one figure for all four and was right only about four instances, where its two errors
cancelled; s08, the one bursty case of the matrix on two instances, was 40 % low
(``BURSTY_TAIL``, removed). With Poisson arrivals and constant lengths (asserted to ±30 %) the
chunked TTFT p95 is −6 … +26 % of random routing (random thinning keeps Poisson arrivals
Poisson: a pool of one, ``simulate.analytic.split_instances``) and −37 … +8 % of JSQ: round
robin is the more regular deal, and with constant prompts nothing else varies, so the
long-prompt heavy cases (s05, s09, s12) come out 25–37 % low there. Variants tried on the
way, with their worst matrix case on the previous model's plans: instance-count-free queues
(every price, utilisation and percentile combination) −33 % at best; a pooled G/G/n queue
with full-step price −37 %; round-robin splitting of bursty arrivals only (Poisson left
Poisson) +49 %; random thinning (CV² = 1 + (c² − 1)/n) +49 %.

History: the first model queued every instance separately (G/G/1 at rate/instances), which put
the analytic TTFT 32–224 % above the JSQ simulation; the disaggregated prefill pool is now a
G/G/c queue over its instances (Allen–Cunneen), the colocated prompt "server" is the token
budget rather than the time share of mixed steps, bursty arrivals enter through the GI/M/1
probability of waiting instead of Kingman's c_a² (which put s03 and s11 28–50 % low), and the
colocated queue knows its pool size (above; issue #6).

Run ``pytest -s -m "" tests/simulate/test_sim_matrix.py`` to see the tables. The default run
simulates the five scenarios of ``QUICK`` (three models and Mixtral, Poisson and bursty, short
and long prompts, light and heavy load, a case of each documented allowance); the other eight
run in the thorough tier (``-m thorough``, a separate step of ``.ci/run``) with the same
tolerances (issue #13).

The comparison runs 8,000 requests per case. Separately every case is also run sized from its
workload (issue #19: warm-up and window from the mean residence time, enough completions for
the SLO's percentile) in both modes (the QUICK scenarios in the default run, the rest in the
thorough tier); each must reach steady state, and Little's law over its measurement window
must hold within 5 % (``test_littles_law_in_every_steady_run``; the unchunked mode reaches it
too, worst gap 1.9 % at the time of writing, not run here to keep the suite short).
"""

from __future__ import annotations

from functools import cache

import pytest

from advisor.core.simulate import ColocatedSimPlan, SimulationResult, simulate
from tests.simulate.helpers import MATRIX, idealised, model, scenario

REQUESTS = 8000
SEED = 7
LITTLE_TOLERANCE = 0.05
TOLERANCE = 0.25
IDEAL_CHUNKED_TTFT = 0.30
"""Chunked colocated TTFT p95 in the idealised runs (measured −6 … +26 % at the time of
writing)."""

CLUSTERED_MIXED_STEPS = "CLUSTERED_MIXED_STEPS"
POOLED_SHORT_BURSTY = "POOLED_SHORT_BURSTY"
TTFT_POOLED_BURSTY = {("s08-32b-short-bursty", "disaggregated")}
"""TTFT cases allowed below the simulation (module docstring), at most by ALLOWANCE_BOUND."""
ALLOWANCE_BOUND = 0.35

QUICK = ("s03-8b-short-bursty", "s08-32b-short-bursty", "s09-32b-long-heavy",
         "s10-70b-short-heavy", "s13-mixtral-short-medium")
"""The scenarios simulated in the default run; the thorough tier simulates the rest."""
TIERS = [pytest.param(QUICK, id="quick"),
         pytest.param(tuple(name for name in MATRIX if name not in QUICK), id="rest",
                      marks=pytest.mark.thorough)]

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


def _verdict(diff: float | None, allowed: str | None, analytic_high: bool,
             bound: float = 1.0) -> tuple[bool, str]:
    """(acceptable, label) for one relative difference (analytic − simulated) / simulated."""
    if diff is None:
        return False, "MISSING"
    if abs(diff) <= TOLERANCE:
        return True, "ok"
    if allowed is None or abs(diff) > bound:
        return False, "OUTSIDE"
    right_way = diff > 0 if analytic_high else diff < 0
    return right_way, allowed if right_way else f"{allowed}?wrong-direction"


def _row(name: str, res: SimulationResult, tpot_allowed: set[tuple[str, str]]
         ) -> tuple[bool, str]:
    ph = res.overall
    ttft, tpot = ph.ttft_ms[1], ph.tpot_ms[1]
    pooled = POOLED_SHORT_BURSTY if (name, res.mode) in TTFT_POOLED_BURSTY else None
    ok1, v1 = _verdict(ttft.relative_diff, pooled, analytic_high=False, bound=ALLOWANCE_BOUND)
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
    assert set(QUICK) < set(MATRIX)


@cache
def sized(name: str, mode: str) -> SimulationResult:
    """The matrix run of ``name`` in ``mode``, sized from the workload (cached)."""
    return simulate(scenario(name), mode, None, SEED, model=model(name))  # type: ignore[arg-type]


@pytest.mark.parametrize("names", TIERS)
def test_analytic_percentiles_against_simulation(names: tuple[str, ...]) -> None:
    lines, bad = [HEADER], []
    for name in names:
        for mode in ("chunked", "disaggregated"):
            res = simulate(scenario(name), mode, REQUESTS, SEED, model=model(name))
            ok, line = _row(name, res, TPOT_CLUSTERED)
            lines.append(line)
            if not ok:
                bad.append(line)
    print("\nanalytic vs simulated p95 (ms), JSQ routing, "
          f"{REQUESTS} requests, seed {SEED}; n = instances sharing the prompt queue\n"
          + "\n".join(lines))
    assert not bad, "outside ±25 % without a documented reason:\n" + "\n".join(bad)


@pytest.mark.parametrize("names", TIERS)
def test_littles_law_in_every_steady_run(names: tuple[str, ...]) -> None:
    """Issue #19: a run that reports steady state obeys Little's law (L against λ·W over its
    measurement window) within 5 % — over the whole matrix, every run sized from its workload,
    and every one of them reaching steady state."""
    rows, bad, unreached = [], [], []
    for name in names:
        for mode in ("chunked", "disaggregated"):
            res = sized(name, mode)
            st = res.overall.steady_state
            assert st is not None and st.littles_law_gap is not None
            rows.append(f"{name:26s} {mode:13s} {res.requests:7,d} requests  "
                        f"gap {st.littles_law_gap * 100:5.2f} %  reached {st.reached}")
            if not st.reached:
                unreached.append((name, mode, st.reasons))
            elif st.littles_law_gap > LITTLE_TOLERANCE:
                bad.append(rows[-1])
    print("\nLittle's law over the measurement window, sized runs\n" + "\n".join(rows))
    assert not bad, "\n".join(bad)
    assert not unreached, unreached


@pytest.mark.parametrize("names", TIERS)
def test_model_assumptions_reproduced(names: tuple[str, ...]) -> None:
    """Poisson, constant lengths, and a routing each queue model has a figure for (colocated:
    random routing — independent per-instance prompt queues, Poisson arrivals at each, which
    the analytic column takes as a pool of one, ``split_instances``; disaggregated prefill:
    one pooled queue = join-the-shortest-queue).

    Unchunked and disaggregated TTFT p95 and every TPOT p50 then agree within ±25 % (TPOT p95
    only where mixed steps do not cluster): step times and the mean-field model match the
    simulator. The chunked colocated TTFT p95 (−6 … +26 %; it was 15–57 % low while a queued
    token was priced at the mean step time) is held to the looser ``IDEAL_CHUNKED_TTFT``:
    with constant prompts and Poisson arrivals at each instance the percentile of backlog
    plus prompt rests on the exponential backlog tail alone, which overstates s08's.
    """
    lines, bad = [HEADER], []
    for name in names:
        sc = idealised(scenario(name))
        for mode in ("chunked", "unchunked", "disaggregated"):
            router = "least-loaded" if mode == "disaggregated" else "random"
            res = simulate(sc, mode, 5000, SEED, model=model(name), router=router)
            ok, line = _row(name, res, IDEAL_TPOT_CLUSTERED)
            if mode == "chunked":  # TTFT to IDEAL_CHUNKED_TTFT (see the docstring)
                tpot = res.overall.tpot_ms[1].relative_diff
                ttft = res.overall.ttft_ms[1].relative_diff
                ok = (tpot is not None and (abs(tpot) <= TOLERANCE
                                            or (name, mode) in IDEAL_TPOT_CLUSTERED)
                      and ttft is not None and abs(ttft) <= IDEAL_CHUNKED_TTFT)
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
    rnd = simulate(sc, "disaggregated", 5000, SEED, model=r, router="random")
    analytic = jsq.overall.ttft_ms[1].analytic
    assert analytic is not None
    assert jsq.overall.ttft_ms[1].simulated < rnd.overall.ttft_ms[1].simulated
    assert abs(analytic - jsq.overall.ttft_ms[1].simulated) < abs(
        analytic - rnd.overall.ttft_ms[1].simulated)
