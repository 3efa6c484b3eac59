"""Sweeps: one workload evaluated over a line or a grid of design points (issue #5).

A sweep varies one or two keys (:mod:`advisor.core.analysis.keys`) and reports, per point,
exactly what ``decide(sc, evaluate(sc))`` decides
(:func:`advisor.core.analysis.points.design_points`, the engine's many-point caller). Keys
that change capacities (token lengths, SLOs, burstiness, the inter-node link) get one
capacity context per distinct value; GPU counts and rates varied with them stay vectorised
within it.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from advisor.core.analysis.keys import KEYS, Axis, SweepError, apply_value, key_info, peak_index
from advisor.core.analysis.points import FIELDS, PointsError, design_points
from advisor.core.cost import SECONDS_PER_HOUR
from advisor.core.hardware import LinkSpec
from advisor.core.limits import (
    MAX_SWEEP_POINTS,
    MAX_SWEEP_WORK_S,
    SWEEP_POINT_COST_S,
    SWEEP_STEP_COST_S,
)
from advisor.core.plan.capacities import Capacities
from advisor.core.scenario import Scenario
from advisor.core.verdict.rules import DECIDING_RULES, PRECONDITIONS, VERDICTS, ok_field

BLOCK_POINTS = 65_536
"""Design points evaluated together (#34): ``design_points`` holds several arrays per point and
candidate split, so a whole 10**6-point grid at once peaked at 3.3 GB; in blocks the work
arrays stay those of one block and only the results (about 200 bytes a point) grow with the
grid. The results are the same either way (``tests/sweep/test_blocks.py``)."""

Progress = Callable[[int, int], None]
"""``progress(done, total)`` in design points."""


@dataclass(frozen=True, kw_only=True)
class Crossover:
    """Where the verdict first becomes ``disaggregate`` along the first axis."""

    key: str
    value: Any
    """The smallest value of ``key`` with a disaggregate verdict; None = never in the range."""
    label: str | None
    at: tuple[tuple[str, str], ...] = ()
    """For a grid: the other axis's (key, value label) this row is taken at."""
    from_start: bool = False
    """Whether the verdict is already ``disaggregate`` at the first value."""
    stable_from: Any = None
    """The value from which the verdict stays ``disaggregate`` to the end of the range
    (None if it does not end there); it can lie above ``value`` when the verdict alternates
    (a deciding quantity crossing its threshold back and forth)."""
    stable_label: str | None = None


COST_METRIC = "usd_per_million_output_tokens"
"""Suffix of the per-architecture cost metrics (present when the workload has a GPU price):
every GPU billed, tokens at the goodput per GPU and the peak phase's mean output."""


@dataclass(frozen=True, kw_only=True)
class SweepResult:
    """Metrics of every design point; arrays have shape ``tuple(len(a) for a in axes)``."""

    workload: str | None
    axes: tuple[Axis, ...]
    metrics: Mapping[str, np.ndarray] = field(repr=False)
    policy: Any = None
    seconds: float = 0.0

    @property
    def shape(self) -> tuple[int, ...]:
        """Grid shape."""
        return tuple(len(a) for a in self.axes)

    @property
    def size(self) -> int:
        """Number of design points."""
        return int(np.prod(self.shape))

    def __getitem__(self, name: str) -> np.ndarray:
        return self.metrics[name]

    @property
    def verdict(self) -> np.ndarray:
        """'chunked-prefill' / 'disaggregate' per point."""
        return np.where(self.metrics["disaggregate"], VERDICTS[1], VERDICTS[0])

    def deciding(self, index: tuple[int, ...]) -> str:
        """The rule that decided the verdict at one point (``rules.DECIDING_RULES``)."""
        return DECIDING_RULES[int(self.metrics["deciding_rule"][index])]

    def failing(self, index: tuple[int, ...]) -> tuple[str, ...]:
        """Preconditions that fail at one point, plus 'gain' when only the gain is short."""
        m = self.metrics
        out = [pid for pid in PRECONDITIONS if not bool(m[ok_field(pid)][index])]
        if not out and not bool(m["disaggregate"][index]):
            out.append("gain")
        return tuple(out)

    def crossovers(self) -> tuple[Crossover, ...]:
        """The crossover along the first axis (one per value of the second axis in a grid)."""
        ax = self.axes[0]
        dis = self.metrics["disaggregate"]
        rows: list[tuple[tuple[tuple[str, str], ...], np.ndarray]]
        if len(self.axes) == 1:
            rows = [((), dis)]
        else:
            other = self.axes[1]
            rows = [(((other.key, other.labels[j]),), dis[:, j]) for j in range(len(other))]
        out = []
        for at, line in rows:
            hit = np.flatnonzero(line)
            if hit.size == 0:
                out.append(Crossover(key=ax.key, value=None, label=None, at=at))
                continue
            i = int(hit[0])
            miss = np.flatnonzero(~line)
            last_miss = int(miss[-1]) if miss.size else -1
            stable = last_miss + 1 if last_miss + 1 < line.size else None
            out.append(Crossover(key=ax.key, value=_plain(ax.values[i]), label=ax.labels[i], at=at,
                                 from_start=i == 0,
                                 stable_from=None if stable is None else _plain(ax.values[stable]),
                                 stable_label=None if stable is None else ax.labels[stable]))
        return tuple(out)

    def transitions(self) -> tuple[tuple[int, str], ...]:
        """(index, new verdict) wherever the verdict changes along a 1-D sweep."""
        if len(self.axes) != 1:
            return ()
        dis = self.metrics["disaggregate"]
        change = np.flatnonzero(dis[1:] != dis[:-1]) + 1
        return tuple((int(i), VERDICTS[int(dis[i])]) for i in change)


def _plain(v: Any) -> Any:
    if isinstance(v, LinkSpec):
        return v.id
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    return v


def work_estimate_s(sc: Scenario, axes: Sequence[Axis]) -> tuple[float, int, int]:
    """(estimated CPU seconds, capacity steps, design points) of sweeping ``sc`` over
    ``axes``: a capacity step per distinct combination of the capacity keys' values, each at
    :data:`~advisor.core.limits.SWEEP_STEP_COST_S`, plus every point at
    :data:`~advisor.core.limits.SWEEP_POINT_COST_S` (closed-loop or open-loop costs)."""
    closed = any(ph.concurrency is not None for ph in sc.phases)
    steps = int(np.prod([len(a) for a in axes if KEYS[a.key].capacity] or [1]))
    points = int(np.prod([len(a) for a in axes]))
    kind = "closed" if closed else "open"
    estimate = steps * SWEEP_STEP_COST_S[kind] + points * SWEEP_POINT_COST_S[kind]
    return estimate, steps, points


def check_work(sc: Scenario, axes: Sequence[Axis]) -> None:
    """SweepError when the sweep's estimated work (:func:`work_estimate_s`) is above
    :data:`~advisor.core.limits.MAX_SWEEP_WORK_S` (#33: a closed-loop grid within the point
    limit would have run for about 4.4 hours)."""
    estimate, steps, points = work_estimate_s(sc, axes)
    if estimate <= MAX_SWEEP_WORK_S:
        return
    closed = any(ph.concurrency is not None for ph in sc.phases)
    costly = [a.key for a in axes if KEYS[a.key].capacity]
    fewer = (f"fewer values of {' and '.join(costly)} (each re-runs the capacity step"
             + ("; a closed-loop workload solves its rate again" if closed else "") + ")"
             if costly else "fewer points")
    raise SweepError(
        f"{points:,} design points{f' in {steps:,} capacity steps' if costly else ''}"
        f"{' of a closed-loop workload' if closed else ''} would take about "
        f"{estimate / 60:,.0f} min of CPU; a sweep is limited to {MAX_SWEEP_WORK_S / 60:.0f} "
        f"min of estimated work: use {fewer}")


def _block_inputs(base: Scenario, axes: Sequence[Axis], values: Mapping[int, np.ndarray],
                  index: Sequence[np.ndarray], n: int) -> tuple[np.ndarray, np.ndarray]:
    """The GPU counts (n,) and per-phase rates (n, phases) of ``n`` points of ``base`` whose
    axis-value indices are ``index`` (``values``: the cheap axes' values, by axis; the costly
    axes' values are in ``base``)."""
    G = np.full(n, base.cluster.gpus, dtype=np.int64)
    rates = np.tile(np.array([ph.rate_rps for ph in base.phases], dtype=float), (n, 1))
    for ax_i, axis_values in values.items():
        a = axes[ax_i]
        vals = axis_values[index[ax_i]]
        if a.key == "cluster.gpus":
            G = vals.astype(np.int64)
        else:  # traffic.rate_rps
            peak = peak_index(base.phases)
            r_peak = base.phases[peak].rate_rps
            rates = np.stack([vals.astype(float) if k == peak
                              else ph.rate_rps * (vals.astype(float) / r_peak)
                              for k, ph in enumerate(base.phases)], axis=1)
    return G, rates


def sweep(sc: Scenario, axes: Sequence[Axis], progress: Progress | None = None,
          workload: str | None = None) -> SweepResult:
    """Evaluate ``sc`` at every point of the grid spanned by ``axes`` (one or two)."""
    t0 = time.perf_counter()
    if not 1 <= len(axes) <= 2:
        raise SweepError("a sweep varies one key, or two for a grid")
    if len(axes) == 2 and axes[0].key == axes[1].key:
        raise SweepError(f"{axes[0].key} is varied twice")
    for a in axes:
        key_info(a.key)
        if len(a) == 0:
            raise SweepError(f"{a.key}: no values")
    shape = tuple(len(a) for a in axes)
    total = int(np.prod(shape))
    if total > MAX_SWEEP_POINTS:
        raise SweepError(f"{total:,} design points (at most {MAX_SWEEP_POINTS:,})")
    check_work(sc, axes)
    cheap = [i for i, a in enumerate(axes) if not KEYS[a.key].capacity]
    costly = [i for i, a in enumerate(axes) if KEYS[a.key].capacity]
    flat: dict[str, np.ndarray] = {}
    out_mean = np.zeros(total)  # mean output tokens of the peak phase, per point (cost)
    done = [0]

    def tick(count: int) -> None:
        done[0] += count
        if progress is not None:
            progress(done[0], total)

    if progress is not None:
        progress(0, total)
    cheap_shape = tuple(shape[i] for i in cheap)
    cheap_values = {i: np.array(axes[i].values) for i in cheap}
    per_combo = int(np.prod(cheap_shape, dtype=np.int64))
    # one capacity context per combination of the costly axes' values (in ascending order of
    # their indices), its points evaluated BLOCK_POINTS at a time (#34)
    for combo in itertools.product(*(range(shape[i]) for i in costly)):
        base = sc
        for ax_i, vi in zip(costly, combo, strict=True):
            base = apply_value(base, axes[ax_i].key, axes[ax_i].values[vi])
        caps = Capacities(base)
        for first in range(0, per_combo, BLOCK_POINTS):
            part = np.arange(first, min(first + BLOCK_POINTS, per_combo), dtype=np.int64)
            index: list[np.ndarray] = [np.empty(0, dtype=np.int64)] * len(axes)
            for ax_i, vi in zip(costly, combo, strict=True):
                index[ax_i] = np.full(part.size, vi, dtype=np.int64)
            subs = np.unravel_index(part, cheap_shape) if cheap else ()
            for ax_i, sub in zip(cheap, subs, strict=True):
                index[ax_i] = sub
            sel = np.ravel_multi_index(tuple(index), shape)
            G, rates = _block_inputs(base, axes, cheap_values, index, part.size)
            try:
                res = design_points(caps, G, rates, tick)
            except PointsError as exc:
                raise SweepError(str(exc)) from None
            for name in FIELDS:
                if name not in flat:
                    flat[name] = np.zeros(total, dtype=res[name].dtype)
                flat[name][sel] = res[name]
            out_mean[sel] = base.peak_phase.output_tokens.mean
    price = sc.cluster.usd_per_gpu_hour
    if price is not None:  # USD per million output tokens (core/cost.py), NaN without goodput
        for arch in ("colocated", "disaggregated"):
            tokens_per_gpu_hour = flat[f"{arch}_goodput_per_gpu"] * out_mean * SECONDS_PER_HOUR
            flat[f"{arch}_{COST_METRIC}"] = np.divide(
                price * 1e6, tokens_per_gpu_hour, out=np.full(total, np.nan),
                where=tokens_per_gpu_hour > 0)
    metrics: dict[str, np.ndarray] = {}
    for name in flat:
        arr = flat[name].reshape(shape)
        arr.setflags(write=False)
        metrics[name] = arr
    return SweepResult(workload=workload if workload is not None else sc.name, axes=tuple(axes),
                       metrics=metrics,
                       policy=sc.policy, seconds=time.perf_counter() - t0)
