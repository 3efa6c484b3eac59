"""The analytic model against the simulator on a matrix of cases, under one tolerance (#6, #27).

Every case is a workload (tests/data/simulate/s*.yaml: Llama 3.1 8B/70B, Qwen2.5 32B,
Mixtral, Qwen3-235B-A22B; short, long and heavy-tailed prompts (lognormal CV ≈ 3.7 in s14 and
s15); light and heavy load; Poisson and bursty arrivals up to CV 3; 1 to 64 instances behind
one router), a router policy (the workload's, ``least-loaded``, unless the case names another:
each of the four is in the matrix) and the two architectures' plans (the analytic model's best
colocated chunked and disaggregated plans, or explicit expert-parallel ones, s17). On each
side the simulator runs the plan with the same router on every pool, and the model's figures
for exactly that plan and router (``simulate.analytic.predict``) must be within

* ``TOLERANCE_LATENCY`` (±30 %) for the p95 TTFT and the p95 TPOT at the workload's rate;
* ``TOLERANCE_GOODPUT`` (±20 %) for the goodput — the largest rate meeting the SLO: the
  model's (bisected on its predictions, ``helpers.analytic_goodput``) G must be such that the
  simulated plan meets the SLO at 0.8·G and misses it at 1.2·G —

the same tolerances for both architectures, stated once, with no per-case or per-side
allowance. A case the model misses is a strict xfail (``MISSES``) whose reason gives the
measured decomposition; fixing it means fixing the model.

Run ``pytest -s -m "" -p no:xdist tests/simulate/test_sim_matrix.py`` to see the table
(case × side × metric: analytic, simulated, error). The default run simulates ``QUICK``; the
rest run in the thorough tier (``-m thorough``, a separate step of ``.ci/run``).
"""

from __future__ import annotations

import dataclasses
from functools import cache

import pytest

from advisor.core.scenario import Scenario
from advisor.core.simulate import ColocatedSimPlan, SimulationResult, simulate
from advisor.core.simulate.plan import DisaggregatedSimPlan, default_plan
from tests.simulate.helpers import (
    MATRIX,
    analytic_goodput,
    at_rate,
    idealised,
    meets_slo_simulated,
    model,
    scenario,
)

REQUESTS = 8000
SEED = 7
LITTLE_TOLERANCE = 0.05
TOLERANCE_LATENCY = 0.30
"""p95 TTFT and p95 TPOT, analytic against simulated, both architectures (#27)."""
TOLERANCE_GOODPUT = 0.20
"""Goodput, analytic against simulated, both architectures (#27)."""
IDEAL_CHUNKED_TTFT = 0.30
"""Chunked colocated TTFT p95 in the idealised runs (measured −6 … +26 % at the time of
writing)."""


@dataclasses.dataclass(frozen=True)
class Case:
    """One matrix case: a workload, the router every pool runs, optional explicit plans."""

    name: str
    router: str | None = None
    colocated: ColocatedSimPlan | None = None
    disaggregated: DisaggregatedSimPlan | None = None

    @property
    def id(self) -> str:
        return self.name if self.router is None else f"{self.name}+{self.router}"


EP_COLOCATED = ColocatedSimPlan(tensor_parallel=1, pipeline_stages=1, instances=2,
                                chunk_tokens=2048, expert_parallel=8)
EP_DISAGGREGATED = DisaggregatedSimPlan(prefill_tensor_parallel=1, prefill_pipeline_stages=1,
                                        prefill_instances=1, decode_tensor_parallel=1,
                                        decode_pipeline_stages=1, decode_instances=1,
                                        prefill_expert_parallel=8,
                                        decode_expert_parallel=8)

CASES = ([Case(n) for n in MATRIX if not n.startswith("s17")]
         + [Case("s03-8b-short-bursty", r) for r in ("round-robin", "random", "power-of-two")]
         + [Case("s16-8b-64-bursty", r) for r in ("round-robin", "random", "power-of-two")]
         + [Case("s17-235b-a22b-ep", None, EP_COLOCATED, EP_DISAGGREGATED)])
QUICK = {"s03-8b-short-bursty", "s09-32b-long-heavy", "s13-mixtral-short-medium",
         "s03-8b-short-bursty+round-robin", "s15-8b-heavytail-one"}
"""The cases simulated in the default run (a few quick ones: bursty and Poisson, long and
short, dense MoE, one non-default router, heavy tails on one instance); the thorough tier
simulates the rest."""

_S16 = ("64 colocated TP1 instances (chunk 512), CV-3 arrivals: the model's colocated TTFT is "
        "high near saturation on a wide pool — analytic goodput G = {g} req/s bound by TTFT "
        "(p95 480 ms at G vs the 500 ms SLO), simulated p95 TTFT at 1.2·G {sim} ms, so the "
        "simulated goodput is above 1.2·G; the disaggregated side is inside")
MISSES: dict[str, str] = {
    "s14-32b-heavytail-bursty": (
        "heavy-tailed prompts (CV 3.7) at CV-3 arrivals, 4 × TP4 colocated (chunk 4096) and "
        "7 × TP2 + 1 × TP2 disaggregated at 20 req/s: colocated p95 TTFT analytic 1,016 vs "
        "simulated 678 ms (+50 %: the prompt queue — round-robin-like G/G/1 per instance at "
        "CV² = 9/4 with service CV 3.7 — is pessimistic); colocated goodput: analytic 30.3 "
        "req/s bound by TPOT (50.0 ms at G), simulated p95 TPOT 52.8 ms already at 0.8·G (the "
        "chunked TPOT tail is low: item 2, mixed steps carrying long prompts cluster); "
        "disaggregated p95 TTFT analytic 396 vs simulated 611 ms (−35 %: the pooled G/G/7 of "
        "JSQ over a count that does not see prompt sizes is optimistic for heavy-tailed "
        "service)"),
    "s15-8b-heavytail-one": (
        "one instance (nothing to route), Poisson arrivals, heavy-tailed prompts (CV 3.7), "
        "chunk 4096: at 4 req/s p95 TTFT −7 % and TPOT −29 % (inside), but the analytic "
        "goodput 10.6 req/s (TTFT-bound, 999 ms at G) is high: simulated p95 TTFT 1,972 ms "
        "at 0.8·G — the G/G/1 prompt queue with service CV 3.7 near saturation (ρ ≈ 0.7) "
        "understates the backlog's tail (exponential tail with the Kingman-type mean)"),
    "s17-235b-a22b-ep": (
        "Qwen3-235B-A22B fp8, explicit EP8 plans (DP attention), SGLang terms: colocated "
        "inside (TTFT +6 %, TPOT −1 %, goodput inside); disaggregated (one EP8 prefill, one "
        "EP8 decode: nothing to route) p95 TTFT analytic 454 vs simulated 1,352 ms (−66 %): "
        "analytic own pass 265 ms + pass in progress and queue 188 ms + transfer 1 ms at "
        "busy share ρ = 0.23 (L_m 16,384 over 8 ranks); the simulator's EP8 prefill passes "
        "queue far longer (simulated TTFT 15.6 s at 0.8·G = 37 req/s, analytic goodput "
        "46.6) — the prefill pass model of a split budget (§6, ``_unit_passes``) is the "
        "off term, not the router"),
    "s16-8b-64-bursty": _S16.format(g="1,426", sim="395"),
    "s16-8b-64-bursty+round-robin": (
        _S16.format(g="1,423", sim="374") + "; at the rate (600 req/s) round robin's "
        "per-instance queue (CV² = 9/64) is +39 % colocated (158 vs 113 ms) and +32 % on the "
        "prefill pool (122 vs 92 ms): Erlang-thinned arrivals are more regular than the GI/M/1 "
        "arrival term gives credit for at CV < 0.4"),
    "s16-8b-64-bursty+random": _S16.format(g="1,258", sim="442"),
    "s16-8b-64-bursty+power-of-two": _S16.format(g="1,268", sim="352"),
}
"""Cases the model misses, by id: the reason with the measured decomposition (strict xfail,
8,000 requests, seed 7; the model, not the tolerance, is what a fix changes)."""


def _pct(x: float | None) -> str:
    return "    n/a" if x is None else f"{x * 100:+6.0f}%"


def _rel(analytic: float | None, simulated: float | None) -> float | None:
    if analytic is None or simulated is None or simulated <= 0:
        return None
    return (analytic - simulated) / simulated


def _plan(case: Case, sc: Scenario, mode: str) -> object | None:
    explicit = case.colocated if mode == "chunked" else case.disaggregated
    if explicit is not None:
        return explicit
    try:
        return default_plan(sc, mode, model(case.name))  # type: ignore[arg-type]
    except ValueError:
        return None


@cache
def side(case: Case, mode: str) -> tuple[list[str], list[str]]:
    """(table lines, failures) of one case on one side."""
    sc = scenario(case.name)
    if case.router is not None:
        sc = dataclasses.replace(sc, router=case.router)  # type: ignore[arg-type]
    plan = _plan(case, sc, mode)
    label = f"{case.id:34s} {mode:13s}"
    if plan is None:
        return [f"{label} (no plan: the model finds none, nothing to compare)"], []
    res: SimulationResult = simulate(sc, mode, REQUESTS, SEED, plan=plan,  # type: ignore[arg-type]
                                     router=sc.router)
    ttft, tpot = res.overall.at_slo_percentile
    lines, bad = [], []
    for metric, c in (("p95 TTFT ms", ttft), ("p95 TPOT ms", tpot)):
        err = _rel(c.analytic, c.simulated)
        ok = err is not None and abs(err) <= TOLERANCE_LATENCY
        lines.append(f"{label} {metric:12s} {c.analytic or float('nan'):9.1f} "
                     f"{c.simulated or float('nan'):9.1f} {_pct(err)}  {'ok' if ok else 'OUTSIDE'}")
        if not ok:
            bad.append(lines[-1])
    hi = 20.0 * sc.phases[0].rate_rps
    good = analytic_goodput(sc, mode, plan, hi)
    if good > 0:
        low_ok = meets_slo_simulated(at_rate(sc, (1 - TOLERANCE_GOODPUT) * good
                                             / sc.phases[0].rate_rps), mode, plan, REQUESTS,
                                     SEED, sc.router)
        high_ok = meets_slo_simulated(at_rate(sc, (1 + TOLERANCE_GOODPUT) * good
                                              / sc.phases[0].rate_rps), mode, plan, REQUESTS,
                                      SEED, sc.router)
        ok = low_ok[0] and not high_ok[0]
        sim = ("inside" if ok else "sim goodput < 0.8 G" if not low_ok[0]
               else "sim goodput > 1.2 G")
        lines.append(f"{label} {'goodput rps':12s} {good:9.2f} {sim:>19s}  "
                     f"{'ok' if ok else 'OUTSIDE'} (sim at 0.8/1.2 G: TTFT "
                     f"{low_ok[1] or float('nan'):.0f}/{high_ok[1] or float('nan'):.0f} ms, "
                     f"TPOT {low_ok[2] or float('nan'):.1f}/{high_ok[2] or float('nan'):.1f} ms)")
        if not ok:
            bad.append(lines[-1])
    return lines, bad


HEADER = (f"{'case':34s} {'side':13s} {'metric':12s} {'analytic':>9s} {'simulated':>9s} "
          f"{'error':>7s}")


def _params() -> list[object]:
    out = []
    for case in CASES:
        marks = []
        if case.id not in QUICK:
            marks.append(pytest.mark.thorough)
        if case.id in MISSES:
            marks.append(pytest.mark.xfail(strict=True, reason=MISSES[case.id]))
        out.append(pytest.param(case, id=case.id, marks=marks))
    return out


def test_matrix_has_enough_cases() -> None:
    assert len(MATRIX) >= 16
    models = {scenario(n).model.name for n in MATRIX}
    assert len(models) >= 4
    assert {c.router or "least-loaded" for c in CASES} == {
        "least-loaded", "round-robin", "random", "power-of-two"}
    assert max(p.burstiness for n in MATRIX for p in scenario(n).phases) >= 3.0
    assert max(p.prompt_tokens.cv for n in MATRIX for p in scenario(n).phases) >= 3.0
    assert any(c.colocated is not None and c.colocated.expert_parallel for c in CASES)
    assert {c.id for c in CASES} > QUICK


@pytest.mark.parametrize("case", _params())
def test_analytic_against_simulation(case: Case) -> None:
    """Both sides of one case within the one tolerance (module docstring)."""
    lines, bad = [HEADER], []
    for mode in ("chunked", "disaggregated"):
        got, wrong = side(case, mode)
        lines += got
        bad += wrong
    print(f"\n{REQUESTS} requests, seed {SEED}, router {case.router or 'least-loaded'}\n"
          + "\n".join(lines))
    assert not bad, "outside the tolerance:\n" + "\n".join(bad)


TIERS = [pytest.param(tuple(sorted(QUICK & set(MATRIX))), id="quick"),
         pytest.param(tuple(n for n in MATRIX if n not in QUICK), id="rest",
                      marks=pytest.mark.thorough)]


@cache
def sized(name: str, mode: str) -> SimulationResult:
    """The matrix run of ``name`` in ``mode``, sized from the workload (cached)."""
    return simulate(scenario(name), mode, None, SEED, model=model(name))  # type: ignore[arg-type]


@pytest.mark.parametrize("names", TIERS)
def test_littles_law_in_every_steady_run(names: tuple[str, ...]) -> None:
    """Issue #19: a run that reports steady state obeys Little's law (L against λ·W over its
    measurement window) within 5 % — over the whole matrix, every run sized from its workload,
    and every one of them reaching steady state."""
    rows, bad, unreached = [], [], []
    for name in names:
        for mode in ("chunked", "disaggregated"):
            if _plan(Case(name), scenario(name), mode) is None:
                continue  # s15: one GPU, no split to simulate
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


IDEAL_TOLERANCE = 0.25
"""Unchunked and disaggregated TTFT p95 and TPOT in the idealised runs (a diagnostic of the
step times and the mean-field model, not the matrix's tolerance)."""
IDEAL_TPOT_CLUSTERED = {
    # With Poisson arrivals and constant lengths only the queue busy periods cluster.
    ("s05-8b-long-heavy", "unchunked"),
    ("s09-32b-long-heavy", "unchunked"),
    ("s12-70b-long-heavy", "chunked"),
    ("s12-70b-long-heavy", "unchunked"),
}
IDEAL = tuple(n for n in MATRIX if n < "s14")
"""The idealised diagnostic runs on the issue-#6 workloads (s14–s17 test routing and tails)."""
IDEAL_TIERS = [pytest.param(tuple(n for n in IDEAL if n in QUICK), id="quick"),
               pytest.param(tuple(n for n in IDEAL if n not in QUICK), id="rest",
                            marks=pytest.mark.thorough)]


@pytest.mark.parametrize("names", IDEAL_TIERS)
def test_model_assumptions_reproduced(names: tuple[str, ...]) -> None:
    """Poisson, constant lengths, and a routing each queue model has a figure for (colocated:
    random routing — Bernoulli thinning keeps Poisson arrivals Poisson, so each instance queues
    as if alone; disaggregated prefill: join-the-shortest-queue, whose count is the prompt
    queue: one pooled queue).

    Unchunked and disaggregated TTFT p95 and every TPOT p50 then agree within ±25 % (TPOT p95
    only where mixed steps do not cluster): step times and the mean-field model match the
    simulator. The chunked colocated TTFT p95 (−6 … +26 %) is held to ``IDEAL_CHUNKED_TTFT``:
    with constant prompts and Poisson arrivals at each instance the percentile of backlog
    plus prompt rests on the exponential backlog tail alone, which overstates s08's.
    """
    lines, bad = [], []
    for name in names:
        sc = idealised(scenario(name))
        for mode in ("chunked", "unchunked", "disaggregated"):
            router = "least-loaded" if mode == "disaggregated" else "random"
            res = simulate(sc, mode, 5000, SEED, model=model(name), router=router)
            ttft = res.overall.ttft_ms[1].relative_diff
            tpot = res.overall.tpot_ms[1].relative_diff
            median = res.overall.tpot_ms[0].relative_diff
            ttft_bound = IDEAL_CHUNKED_TTFT if mode == "chunked" else IDEAL_TOLERANCE
            ok = (ttft is not None and abs(ttft) <= ttft_bound
                  and tpot is not None and (abs(tpot) <= IDEAL_TOLERANCE
                                            or (name, mode) in IDEAL_TPOT_CLUSTERED)
                  and median is not None and abs(median) <= 0.1)
            lines.append(f"{name:26s} {mode:13s} TTFT95 {_pct(ttft)} TPOT95 {_pct(tpot)} "
                         f"TPOT50 {_pct(median)} {'ok' if ok else 'OUTSIDE'}")
            if not ok:
                bad.append(lines[-1])
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
