"""Refit an engine profile's constants to the published calibration points.

    python tools/refit_engines.py [--engine ID ...] [--write] [--max-nfev N]

For each engine profile (default: every profile with points in
``tools/calibration/points.py``), ``scipy.optimize.least_squares`` (trust-region reflective,
bounded) minimises the log errors ``log(predicted / published)`` of that engine's points over
the profile's fitted constants (:data:`PARAMETERS`; documented misses, ``MISSES``, are left
out: rows the model cannot express must not drag the constants the other rows agree on), plus
a weak prior (weight
:data:`PRIOR_WEIGHT`) that keeps a constant no point constrains at its current value. It
prints every constant before and after, whether the points constrain it (a 100 % change moves
the residuals by at least :data:`MIN_SENSITIVITY` in log units), and every point's error
before and after. ``--write`` rewrites the ``value:`` lines of the fitted constants in
``profiles/engines/<id>.yaml`` (rounded to 2 significant digits; sources are left alone; a
constant the points do not constrain is written where the fit left it, near its prior).

The rejection rule: a fit is written only if (a) no engine family's held rows (its points
outside ``MISSES``) get worse — neither their RMS log error rises by more than
:data:`RMS_TOLERANCE` nor fewer of them stay within ±25 % — and (b) it makes none of the
calibration table's goals fail that held before it (``tools/calibration/goals.py``: each
family's share within ±25 % and median |error| against its baseline, the whole table's 80 % /
15 %; the same functions ``tests/core/test_calibration.py`` asserts, so a fit the tool writes
is one the test accepts). A rejected fit is reported with the families it worsens, nothing is
written, and the script exits with status 1.

Adding a measurement: append one ``Point`` to ``tools/calibration/points.py`` and run this
script; ``pytest -s tests/core/test_calibration.py`` then shows the new table.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import re
import sys
from pathlib import Path

import numpy as np
from scipy import optimize

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from advisor.core.engine import EngineSpec  # noqa: E402
from tools.calibration.goals import TOLERANCE, goal_failures  # noqa: E402
from tools.calibration.points import MISSES, POINTS, Context, Point, errors  # noqa: E402

PRIOR_WEIGHT = 0.02
"""Weight of each constant's relative distance from its current value."""

RMS_TOLERANCE = 1e-3
"""Rise of a family's RMS log error (over its held rows) that rejects a fit."""

MIN_SENSITIVITY = 0.02
"""Residual change (log units, norm over points) per 100 % change that counts as constrained."""

PARAMETERS: dict[str, tuple[str, float, float]] = {
    # EngineSpec field: (YAML path in the profile, lower bound, upper bound)
    "step_overhead_s": ("step_overhead_s", 0.0, 0.02),
    "request_overhead_s": ("request_overhead_s", 0.0, 0.2),
    "weight_bandwidth_efficiency": ("efficiency.weight_bandwidth_efficiency", 0.3, 0.95),
    "kv_bandwidth_efficiency": ("efficiency.kv_bandwidth_efficiency", 0.2, 0.95),
    "prefill_compute_efficiency_bf16": ("efficiency.prefill_compute_efficiency_bf16", 0.2, 0.9),
    "prefill_compute_efficiency_fp8": ("efficiency.prefill_compute_efficiency_fp8", 0.2, 0.9),
    "allreduce_overhead_s": ("collectives.allreduce_overhead_s", 0.0, 2e-4),
    "allreduce_overhead_per_doubling_s": ("collectives.allreduce_overhead_per_doubling_s",
                                          0.0, 2e-4),
    "moe_layer_overhead_s": ("moe.layer_overhead_s", 0.0, 5e-4),
    "lowbit_moe_efficiency": ("moe.lowbit_efficiency", 0.1, 1.0),
    "compute_memory_overlap": ("compute_memory_overlap", 0.0, 1.0),
}
"""Constants the refit may move, where the profile states them. Bandwidth efficiencies stop
at 0.95: no kernel streams HBM at the datasheet rate."""


@dataclasses.dataclass
class FitResult:
    """One engine's fit."""

    engine: str
    names: list[str]
    before: list[float]
    after: list[float]
    constrained: list[bool]
    rows_before: list[tuple[Point, float, float]]
    rows_after: list[tuple[Point, float, float]]
    message: str

    def rms(self, rows: list[tuple[Point, float, float]]) -> float:
        """Root-mean-square log error of the rows."""
        logs = [_log_error(pred, p.published) for p, pred, _ in rows]
        return math.sqrt(sum(v * v for v in logs) / max(len(logs), 1))


@dataclasses.dataclass(frozen=True)
class FamilySummary:
    """One engine family's held rows: how many, how many within ±25 %, RMS log error."""

    points: int
    within: int
    rms: float


def family_summaries(ctx: Context, families: list[str] | None = None
                     ) -> dict[str, FamilySummary]:
    """Every family's (engine profile's) held rows — its points outside ``MISSES`` — as
    :class:`FamilySummary`, keyed by engine profile id."""
    wanted = families or sorted({p.engine for p in POINTS})
    out = {}
    for family in wanted:
        rows = errors([p for p in POINTS if p.engine == family and p.id not in MISSES], ctx)
        logs = [_log_error(pred, p.published) for p, pred, _ in rows]
        out[family] = FamilySummary(
            points=len(rows), within=sum(abs(e) <= TOLERANCE for *_, e in rows),
            rms=math.sqrt(sum(v * v for v in logs) / max(len(logs), 1)))
    return out


def worsened_families(before: dict[str, FamilySummary], after: dict[str, FamilySummary]
                      ) -> list[str]:
    """Why a fit is rejected: one line per family whose held rows got worse (empty: none)."""
    lines = []
    for family, old in before.items():
        new = after[family]
        if new.rms > old.rms + RMS_TOLERANCE or new.within < old.within:
            lines.append(f"{family}: RMS log error {old.rms:.3f} -> {new.rms:.3f}, within "
                         f"±25 % {old.within}/{old.points} -> {new.within}/{new.points}")
    return lines


def new_goal_failures(before: Context, after: Context) -> list[str]:
    """Goals of the calibration table (every point, every family) that hold under ``before``
    and fail under ``after`` — one line each (empty: the fit keeps every goal that held)."""
    held = goal_failures(errors(POINTS, before))
    now = goal_failures(errors(POINTS, after))
    return [line for key, line in now.items() if key not in held]


def rejection_reasons(ctx: Context, result: FitResult) -> list[str]:
    """Why ``result`` must not be written: the families whose held rows it worsens, then the
    calibration goals it breaks (empty: accepted)."""
    after = ctx.with_engine(fitted_spec(ctx, result))
    worse = worsened_families(family_summaries(ctx), family_summaries(after))
    return worse + new_goal_failures(ctx, after)


def fitted_spec(ctx: Context, result: FitResult) -> EngineSpec:
    """The engine profile with the fit's constants."""
    return dataclasses.replace(ctx.engines[result.engine],
                               **dict(zip(result.names, result.after, strict=True)))


def _log_error(predicted: float, published: float) -> float:
    if not math.isfinite(predicted) or predicted <= 0:
        return 5.0
    return math.log(predicted / published)


def fitted_names(spec: EngineSpec, profile_text: str) -> list[str]:
    """The constants this profile marks as fitted: its YAML states the key and the key's
    ``source`` starts with ``fitted`` (estimates and values taken from another fit stay)."""
    names = []
    for name, (path, _, _) in PARAMETERS.items():
        if getattr(spec, name) is None:
            continue
        span = _value_span(profile_text, path)
        if span is None:
            continue
        source = re.compile(r"^\s*source:\s*\"?(\S+)", re.M).search(profile_text, span[1])
        if source is not None and source.group(1).lower().startswith("fitted"):
            names.append(name)
    return names


def fit_engine(ctx: Context, engine_id: str, names: list[str], max_nfev: int) -> FitResult:
    """Least-squares fit of ``names`` over the engine's points."""
    points = [p for p in POINTS if p.engine == engine_id and p.id not in MISSES]
    base = ctx.engines[engine_id]
    x0 = np.array([float(getattr(base, n)) for n in names])
    lower = np.array([PARAMETERS[n][1] for n in names])
    upper = np.array([PARAMETERS[n][2] for n in names])
    x0 = np.clip(x0, lower, upper)
    scale = np.maximum(np.abs(x0), (upper - lower) * 0.01)

    def spec_at(x: np.ndarray) -> EngineSpec:
        return dataclasses.replace(base, **{n: float(v) for n, v in zip(names, x, strict=True)})

    def data(x: np.ndarray) -> list[float]:
        rows = errors(points, ctx.with_engine(spec_at(x)))
        return [_log_error(pred, p.published) for p, pred, _ in rows]

    def residuals(x: np.ndarray) -> np.ndarray:
        prior = PRIOR_WEIGHT * (x - x0) / scale
        return np.concatenate([np.array(data(x)), prior])

    rows_before = errors(points, ctx)
    if names:
        solution = optimize.least_squares(residuals, x0, bounds=(lower, upper), method="trf",
                                          x_scale=scale, diff_step=1e-3, max_nfev=max_nfev)
        x = solution.x
        jac = np.asarray(solution.jac)[: len(points)]
        sens = np.linalg.norm(jac * np.maximum(np.abs(x), scale)[None, :], axis=0)
        constrained = [bool(s >= MIN_SENSITIVITY) for s in sens]
        message = str(solution.message)
    else:
        x, constrained, message = x0, [], "nothing to fit"
    rows_after = errors(points, ctx.with_engine(spec_at(x)))
    return FitResult(engine_id, names, list(x0), list(x), constrained, rows_before,
                     rows_after, message)


def _value_span(text: str, path: str) -> tuple[int, int] | None:
    """Character span of the number after ``value:`` of a dotted key in a profile's YAML."""
    position = 0
    indent = -1
    for part in path.split("."):
        match = re.compile(rf"^(\s*){re.escape(part)}:\s*$", re.M).search(text, position)
        if match is None or len(match.group(1)) <= indent:
            return None
        indent, position = len(match.group(1)), match.end()
    match = re.compile(r"^\s*value:\s*(\S+)\s*$", re.M).search(text, position)
    return None if match is None else match.span(1)


def _rounded(value: float) -> str:
    if abs(value) < 1e-9:  # below a nanosecond or a billionth: nothing the model resolves
        return "0.0"
    text = f"{value:.2g}"
    return text if ("e" in text or "." in text) else text + ".0"


def write_profile(path: Path, result: FitResult) -> None:
    """Rewrite the fitted constants' ``value:`` lines of one profile."""
    text = path.read_text(encoding="utf-8")
    for name, value in zip(result.names, result.after, strict=True):
        span = _value_span(text, PARAMETERS[name][0])
        if span is not None:
            text = text[:span[0]] + _rounded(value) + text[span[1]:]
    path.write_text(text, encoding="utf-8")


def report(result: FitResult) -> str:
    """The fit as text: constants, then points."""
    lines = [f"== {result.engine}: {len(result.rows_before)} points; {result.message}",
             f"{'constant':<36} {'before':>12} {'after':>12}  constrained"]
    for name, b, a, c in zip(result.names, result.before, result.after,
                             result.constrained or [False] * len(result.names), strict=True):
        lines.append(f"{name:<36} {b:>12.4g} {a:>12.4g}  {'yes' if c else 'no (prior)'}")
    lines.append(f"{'point':<36} {'published':>10} {'before':>9} {'after':>9}")
    for (p, _, eb), (_, pa, ea) in zip(result.rows_before, result.rows_after, strict=True):
        lines.append(f"{p.id:<36} {p.published:>10.1f} {eb:>+9.1%} {ea:>+9.1%}  "
                     f"({pa:.1f} {p.unit})")
    inside = sum(abs(e) <= 0.25 for *_, e in result.rows_after)
    lines.append(f"RMS log error {result.rms(result.rows_before):.3f} -> "
                 f"{result.rms(result.rows_after):.3f}; within ±25 %: {inside}/"
                 f"{len(result.rows_after)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", action="append", help="engine profile id (repeatable)")
    parser.add_argument("--write", action="store_true", help="rewrite the profile values")
    parser.add_argument("--max-nfev", type=int, default=200)
    args = parser.parse_args(argv)
    ctx = Context.load()
    engines = args.engine or sorted({p.engine for p in POINTS})
    status = 0
    for engine_id in engines:
        path = ctx.catalog.path_of("engines", engine_id)
        names = fitted_names(ctx.engines[engine_id], path.read_text(encoding="utf-8"))
        result = fit_engine(ctx, engine_id, names, args.max_nfev)
        print(report(result))
        rejected = rejection_reasons(ctx, result)
        if rejected:
            print(f"REJECTED: the {engine_id} fit worsens")
            print("\n".join(f"  {line}" for line in rejected))
            status = 1
            continue
        if args.write:
            write_profile(path, result)
            ctx = Context.load()
            print(f"wrote {path}")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
