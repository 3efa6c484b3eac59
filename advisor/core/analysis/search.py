"""The searches behind the verdict boundaries, written once and apart from what they look for.

:func:`first_flips` walks the integers from a start count towards one or more ends and returns,
per end, the nearest count at which a vectorised predicate holds (for the boundaries: "the
verdict differs from the current one"). Its work does not grow with the distance searched:

1. **near** — every count within ``near`` (64) of the start, exhaustively;
2. **grid** — beyond that, a geometric grid of counts ``ratio`` (2 %) apart out to the end (the
   end itself included; every integer where the grid is denser than one count), plus every
   count up to ``dense`` (256), where integer rounding makes the verdict flip most often;
3. **refine** — in the first grid step whose far end holds, a vectorised bisection: up to
   ``batch`` (32) evenly spaced counts of the bracket at a time, keeping the sub-bracket from
   the last count that does not hold to the first that does, until the bracket is one count
   wide (a bracket of at most ``batch`` counts is evaluated whole).

Every stage asks the predicate once for all ends together, so a search costs at most
``2 + ⌈log₃₃(step)⌉`` predicate calls of at most a few hundred counts, whatever the distance.

Resolution: within ``near`` of the start and up to ``dense`` the answer is the exhaustive
one. Beyond, the
predicate is sampled every ``ratio``: a stretch where it holds that starts and ends between
two neighbouring grid counts is not seen, and inside the first grid step that ends holding,
the count returned is one where it starts to hold (the count before it does not), which is the
first one whenever it holds on one stretch only in that step. ``tests/analysis/test_search.py``
checks the answers against an exhaustive scan on every example and on workloads at 8 to 16,384
GPUs.

:func:`bracketed_flip` narrows a bracket of a continuous key (the inter-node bandwidth
multiplier) to a tolerance with a safeguarded root finder on margins that come with each
evaluation; the bracket is kept by the evaluations' side, so the answer is a genuine flip.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from advisor.core.arrays import unique_sorted

Predicate = Callable[[np.ndarray], np.ndarray]
"""Counts (int64, any order) → whether each holds (bool array of the same length)."""


@dataclass(frozen=True)
class CountGrid:
    """The resolution of :func:`first_flips`."""

    near: int = 64
    """Counts within this distance of the start are all checked."""
    ratio: float = 1.02
    """Beyond, neighbouring grid counts are this factor apart."""
    batch: int = 32
    """Counts per bracket per refining call."""
    dense: int = 256
    """Every count up to this one is on the grid (where integer rounding makes the predicate
    change most often)."""


DEFAULT_GRID = CountGrid()


def _grid_distances(start: int, end: int, grid: CountGrid) -> np.ndarray:
    """Sorted distinct distances from ``start`` of the grid counts between ``start ± near``
    and ``end`` (both included): geometric, plus every count up to ``grid.dense``."""
    near = grid.near
    span = abs(end - start)
    if span <= near:
        return np.zeros(0, dtype=np.int64)
    first = start + (near if end > start else -near)
    steps = max(2, math.ceil(abs(math.log(max(end, 1) / max(first, 1)))
                             / math.log(grid.ratio)) + 1)
    counts = np.round(np.geomspace(max(first, 1), max(end, 1), steps)).astype(np.int64)
    low, high = min(first, end), max(first, end)
    dense = np.arange(max(low, 1), min(high, grid.dense) + 1, dtype=np.int64)
    dist = unique_sorted(np.abs(np.concatenate([counts, dense]) - start))
    return dist[(dist > near) & (dist <= span)]


def _ask(flipped: Predicate, start: int, signs: Sequence[int],
         distances: Sequence[np.ndarray]) -> list[np.ndarray]:
    """One predicate call for every direction's distances; the answers split back."""
    sizes = [d.size for d in distances]
    if sum(sizes) == 0:
        return [np.zeros(0, dtype=bool) for _ in distances]
    counts = np.concatenate([start + s * d for s, d in zip(signs, distances, strict=True)])
    held = np.asarray(flipped(counts.astype(np.int64)), dtype=bool)
    return np.split(held, np.cumsum(sizes)[:-1])


def first_flips(flipped: Predicate, start: int, ends: Sequence[int],
                grid: CountGrid = DEFAULT_GRID) -> list[int | None]:
    """Per end, the count nearest ``start`` in ``(start, end]`` (or ``[end, start)``) at which
    ``flipped`` holds, at the resolution of ``grid`` (module docstring); None when no count
    checked holds. ``start`` itself is not checked."""
    signs = [1 if end >= start else -1 for end in ends]
    spans = [abs(end - start) for end in ends]
    found: list[int | None] = [None] * len(ends)

    # 1. near: every count
    near = [np.arange(1, min(grid.near, span) + 1, dtype=np.int64) for span in spans]
    open_: list[int] = []
    for i, held in enumerate(_ask(flipped, start, signs, near)):
        hit = np.flatnonzero(held)
        if hit.size:
            found[i] = start + signs[i] * int(near[i][hit[0]])
        elif spans[i] > grid.near:
            open_.append(i)

    # 2. grid: the first grid count that holds, and the one before it
    brackets: dict[int, tuple[int, int]] = {}  # direction → (lo, hi]: lo does not hold, hi does
    dists = [_grid_distances(start, ends[i], grid) for i in open_]
    for i, d, held in zip(open_, dists, _ask(flipped, start, [signs[i] for i in open_], dists),
                          strict=True):
        hit = np.flatnonzero(held)
        if hit.size:
            k = int(hit[0])
            brackets[i] = (int(d[k - 1]) if k else grid.near, int(d[k]))

    # 3. refine each bracket (all of them in one call per round)
    while brackets:
        todo = list(brackets)
        samples = []
        for i in todo:
            lo, hi = brackets[i]
            if hi - lo - 1 <= grid.batch:
                samples.append(np.arange(lo + 1, hi, dtype=np.int64))
            else:
                samples.append(unique_sorted(np.round(
                    np.linspace(lo, hi, grid.batch + 2)[1:-1]).astype(np.int64)))
        for i, s, held in zip(todo, samples, _ask(flipped, start, [signs[i] for i in todo],
                                                  samples), strict=True):
            lo, hi = brackets[i]
            hit = np.flatnonzero(held)
            if hit.size:
                k = int(hit[0])
                lo, hi = (int(s[k - 1]) if k else lo), int(s[k])
            elif s.size:
                lo = int(s[-1])
            if hi - lo <= 1:  # always so once the whole bracket was sampled
                del brackets[i]
                found[i] = start + signs[i] * hi
            else:
                brackets[i] = (lo, hi)
    return found


SideAndMargin = Callable[[float], tuple[bool, np.ndarray]]
"""x → (whether x is on the far side, the margins: components whose ``combine`` is > 0
roughly where x is on the far side; NaN where unknown)."""


def _estimate(a: float, b: float, fa: np.ndarray, fb: np.ndarray,
              combine: Callable[[np.ndarray], np.ndarray]) -> float | None:
    """Where ``combine`` of the margins, each interpolated linearly between ``a`` and ``b``,
    crosses zero (None: the ends do not straddle it). Exact for margins linear in x, and a
    kink where another component binds is placed where the lines cross, not smeared as one
    straight line through both ends would."""
    t = np.linspace(0.0, 1.0, 257)
    with np.errstate(invalid="ignore", over="ignore"):
        model = combine(fa[None, :] + t[:, None] * (fb - fa)[None, :])
    if not (np.all(np.isfinite(model)) and model[0] <= 0.0 <= model[-1] and model[0] < model[-1]):
        return None
    k = max(1, int(np.argmax(model > 0.0)) if np.any(model > 0.0) else t.size - 1)
    lo, hi = float(model[k - 1]), float(model[k])
    frac = (t[k - 1] + (t[k] - t[k - 1]) * (-lo / (hi - lo))) if hi > lo else t[k]
    return a + float(frac) * (b - a)


def bracketed_flip(at: SideAndMargin, near: float, far: float, tol: float,
                   margins: tuple[np.ndarray, np.ndarray] | None = None,
                   combine: Callable[[np.ndarray], np.ndarray] = lambda v: np.min(v, axis=-1),
                   ) -> tuple[float, int]:
    """Narrow ``[near, far]`` (``near`` on the near side, ``far`` on the far side; either
    order) to ``tol``; return the end on the far side and the evaluations made.

    Where the margins at the ends straddle zero, the root of ``combine`` of the margins each
    interpolated linearly (:func:`_estimate`; with Illinois' halving of an end kept twice
    running), moved to at least ``tol`` from either end (Brent's rule: a root within ``tol``
    of an end then closes the bracket in one step); else a bisection, and bisection only once
    the steps outnumber bisection's own count (so never more than about twice its
    evaluations, and a handful where the margins are smooth). The bracket is kept by the side
    ``at`` reports, never by the margins, so the answer is a genuine flip whatever their
    accuracy. ``margins``: the ends' margins when known.
    """
    a, b = near, far  # a: near side, b: far side
    nan = np.array([math.nan])
    fa, fb = (np.atleast_1d(np.asarray(m, dtype=float)) for m in (margins or (nan, nan)))
    budget = max(1, math.ceil(math.log2(max(abs(b - a) / tol, 1.0))))
    evaluations = 0
    kept = 0  # -1: b replaced last (a kept), +1: a replaced last (b kept)
    while abs(b - a) > tol:
        x = (a + b) / 2.0
        est = _estimate(a, b, fa, fb, combine) if evaluations < budget else None
        if est is not None and abs(b - a) > 2.0 * tol:  # at least tol from either end
            x = min(max(est, min(a, b) + tol), max(a, b) - tol)
        far_side, fx = at(x)
        fx = np.atleast_1d(np.asarray(fx, dtype=float))
        evaluations += 1
        if far_side:
            b, fb = x, fx
            if kept == -1:
                fa = fa / 2.0  # Illinois: a kept twice running
            kept = -1
        else:
            a, fa = x, fx
            if kept == 1:
                fb = fb / 2.0
            kept = 1
    return b, evaluations
