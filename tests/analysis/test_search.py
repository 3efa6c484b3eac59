"""The bounded GPU-count search (``advisor.core.analysis.search``) against an exhaustive scan.

* On synthetic predicates: exact within ``near`` of the start and up to ``dense``, exact for a
  predicate that holds on one stretch, and a bounded number of predicate calls and counts
  whatever the distance searched.
* On the model (``gpu_boundaries``): the same first flip as checking every count, on every
  example and on the prefill-heavy workload scaled to 8, 64, 1,024 and 16,384 GPUs (the rate
  with the cluster). The exhaustive scan covers every count down to one GPU and up to the
  search's limit, except above 32,768 GPUs (16,384 GPUs × 2: 65,000 more counts would take
  seconds), where the answer must lie beyond the scanned range and be a genuine flip.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import pytest

from advisor.core.analysis.boundaries import _gpu_limit, gpu_boundaries
from advisor.core.analysis.keys import apply_value
from advisor.core.analysis.points import design_points
from advisor.core.analysis.search import DEFAULT_GRID, CountGrid, bracketed_flip, first_flips
from advisor.core.plan.capacities import Capacities
from advisor.core.plan.evaluate import evaluate
from advisor.core.scenario import Scenario
from advisor.core.verdict.decision import decide
from advisor.core.verdict.rules import VERDICTS
from tests.sweep.helpers import EXAMPLES, PREFILL_HEAVY, scenario

EXHAUSTIVE_MAX_GPUS = 32_768


def _scan(held: np.ndarray, start: int, end: int) -> int | None:
    """The exhaustive answer: ``held[c]`` for every count c; the first from start to end."""
    if end >= start:
        hit = np.flatnonzero(held[start + 1:end + 1])
        return start + 1 + int(hit[0]) if hit.size else None
    hit = np.flatnonzero(held[end:start])
    return end + int(hit[-1]) if hit.size else None


class _Counting:
    def __init__(self, held: np.ndarray) -> None:
        self.held = held
        self.calls = 0
        self.counts = 0

    def __call__(self, counts: np.ndarray) -> np.ndarray:
        self.calls += 1
        self.counts += counts.size
        assert counts.min() >= 1 and counts.max() < self.held.size
        return self.held[counts]


@pytest.mark.parametrize(("start", "end"), [(100_000, 1), (1_000, 100_000), (64, 1), (16, 256),
                                            (50_000, 100_000), (5, 1)])
def test_one_stretch_is_found_exactly(start: int, end: int) -> None:
    """A threshold (held from some count to the end), or a stretch at least two grid steps
    wide, is found at its first count."""
    rng = np.random.default_rng(start + end)
    lo, hi = sorted((start, end))
    for n in range(40):
        a = int(rng.integers(lo, hi + 1))
        b = hi if n % 2 else min(hi, math.ceil(a * DEFAULT_GRID.ratio ** 2) + 2)
        if end < start:  # a stretch below the start: mirror it
            a, b = (lo, a) if n % 2 else (max(lo, math.floor(a / DEFAULT_GRID.ratio ** 2) - 2), a)
        if a <= start <= b:
            continue  # the start itself must not hold
        held = np.zeros(max(start, end) + 2, dtype=bool)
        held[a:b + 1] = True
        pred = _Counting(held)
        assert first_flips(pred, start, [end]) == [_scan(held, start, end)]


def test_near_and_dense_counts_are_exhaustive() -> None:
    rng = np.random.default_rng(7)
    for _ in range(50):
        held = rng.random(100_002) < 0.02
        start = int(rng.integers(300, 100_000))
        held[start] = False
        # only within 64 of the start and below 256: exact however ragged the pattern
        clean = held.copy()
        clean[DEFAULT_GRID.dense + 1:start - DEFAULT_GRID.near] = False
        clean[start + DEFAULT_GRID.near + 1:] = False
        for end in (1, 100_000):
            got = first_flips(_Counting(clean), start, [end])[0]
            assert got == _scan(clean, start, end)


def test_answers_are_genuine_flips_and_the_work_is_bounded() -> None:
    rng = np.random.default_rng(11)
    for _ in range(50):
        held = rng.random(100_002) < 0.001
        start = int(rng.integers(1, 100_001))
        held[start] = False
        pred = _Counting(held)
        up, down = first_flips(pred, start, [100_000, 1])
        # near + grid + refinement rounds: a 2 % step of at most 2,000 counts is one count wide
        # after ⌈log₃₃ 2000⌉ = 3 rounds
        assert pred.calls <= 2 + 3
        grid_counts = 2 * (math.log(100_000) / math.log(DEFAULT_GRID.ratio) + 2)
        assert pred.counts <= 2 * DEFAULT_GRID.near + grid_counts + DEFAULT_GRID.dense + 6 * 32
        for got, end in ((up, 100_000), (down, 1)):
            exact = _scan(held, start, end)
            if got is None:
                continue
            assert held[got]
            before = got - 1 if end > start else got + 1
            assert before == start or not held[before]
            # the exhaustive first flip is never further than what was found
            assert exact is not None and abs(exact - start) <= abs(got - start)


def test_a_coarser_grid_is_a_parameter() -> None:
    held = np.zeros(10_002, dtype=bool)
    held[5_000:] = True
    grid = CountGrid(near=8, ratio=1.5, batch=4, dense=0)
    assert first_flips(_Counting(held), 10, [10_000], grid) == [5_000]


# ---- the model ----------------------------------------------------------------------------
def _scaled(gpus: int) -> Scenario:
    heavy = scenario(PREFILL_HEAVY)
    rate = heavy.phases[0].rate_rps * gpus / heavy.cluster.gpus
    return apply_value(apply_value(heavy, "cluster.gpus", gpus), "traffic.rate_rps", rate)


CASES = {**{p.stem: (lambda p=p: scenario(p)) for p in sorted(EXAMPLES.glob("*.yaml"))},
         **{f"prefill-heavy-{g}-gpus": (lambda g=g: _scaled(g)) for g in (8, 64, 1024, 16_384)}}


@cache
def _exhaustive(name: str) -> tuple[str, np.ndarray, int]:
    """(verdict, whether each count 0…top has the other verdict, top)."""
    sc = CASES[name]()
    caps = Capacities(sc)
    verdict = decide(sc, evaluate(sc, caps)).verdict
    top = min(_gpu_limit(sc, "up"), max(EXHAUSTIVE_MAX_GPUS, sc.cluster.gpus))
    G = np.arange(1, top + 1, dtype=np.int64)
    rates = np.tile([ph.rate_rps for ph in sc.phases], (G.size, 1))
    dis = design_points(caps, G, rates)["disaggregate"]
    other = np.concatenate([[False], dis == (verdict == VERDICTS[0])])  # VERDICTS[0]: chunked
    return verdict, other, top


@pytest.mark.parametrize("name", sorted(CASES))
def test_gpu_boundaries_match_an_exhaustive_scan(name: str) -> None:
    sc = CASES[name]()
    verdict, other, top = _exhaustive(name)
    cur = sc.cluster.gpus
    up, down = gpu_boundaries(sc, verdict, Capacities(sc))
    assert down.flips_at == _scan(other, cur, 1)
    exact_up = _scan(other, cur, top)
    if exact_up is not None or top == _gpu_limit(sc, "up"):
        assert up.flips_at == exact_up
    else:  # beyond the scanned range: a genuine flip
        assert up.flips_at is None or up.flips_at > top
    for b in (up, down):
        assert (b.to is None) == (b.flips_at is None)


def test_the_scaled_workloads_flip() -> None:
    """The comparison above is not vacuous: the scans find flips on both sides."""
    found = [(_scan(o, CASES[n]().cluster.gpus, 1), _scan(o, CASES[n]().cluster.gpus, t))
             for n in CASES for _, o, t in [_exhaustive(n)]]
    assert sum(d is not None for d, _ in found) >= 4
    assert sum(u is not None for _, u in found) >= 2


# ---- the bracketing root finder (the bandwidth boundary) --------------------------------------
@pytest.mark.parametrize("root", [0.0013, 0.7, 2.3, 4.6049, -3.5, -0.001])
@pytest.mark.parametrize("shape", ["linear", "exp", "kinked", "no-margin", "lying-margin"])
def test_bracketed_flip_finds_the_flip_within_tol(root: float, shape: str) -> None:
    end = 4.61 if root > 0 else -4.61
    tol = math.log1p(2e-3)
    toward = 1.0 if end > 0 else -1.0

    def margin(x: float) -> float:
        d = (x - root) * toward  # > 0 on the far side
        return {"linear": d, "exp": math.expm1(3 * d), "kinked": min(d, 0.1 * d + 0.3),
                "no-margin": math.nan, "lying-margin": -d}[shape]

    calls: list[float] = []

    def at(x: float) -> tuple[bool, np.ndarray]:
        calls.append(x)
        return (x - root) * toward >= 0, np.array([margin(x)])

    far, evaluations = bracketed_flip(at, 0.0, end, tol,
                                      (np.array([margin(0.0)]), np.array([margin(end)])))
    assert evaluations == len(calls)
    assert (far - root) * toward >= 0 and abs(far - root) <= tol  # on the far side, within tol
    bisection = math.ceil(math.log2(abs(end) / tol))
    assert evaluations <= 2 * bisection + 1
    if shape == "linear":
        assert evaluations <= 4  # a straight margin: one estimate and a squeeze


def test_bracketed_flip_places_a_kink_where_another_margin_binds() -> None:
    """Two headrooms, linear in x, the far side where both are positive: the flip is found in a
    few evaluations however flat the binding one is at the near end."""
    root, end, tol = -3.6, -4.61, math.log1p(2e-3)

    def at(x: float) -> tuple[bool, np.ndarray]:
        parts = np.array([0.9, (root - x) * 2.0])  # the first never binds near the flip
        return bool(np.min(parts) >= 0), parts

    far, evaluations = bracketed_flip(at, 0.0, end, tol, (at(0.0)[1], at(end)[1]))
    assert far <= root and root - far <= tol and evaluations <= 4
