"""The calibration table's goals, stated once for the test and the refit tool.

``tests/core/test_calibration.py`` asserts them on the committed profiles;
``tools/refit_engines.py`` rejects a fit that would make one of them fail (#30: "a fit whose
residuals get worse on any engine's held rows is rejected by the fitting tool itself" — and a
fit the calibration test would then reject must not be written either).

Goals (issue #15, #30 item 7), over every point of ``tools/calibration/points.py``:

* the whole table: at least :data:`GOAL_SHARE_WITHIN` of the points within ±:data:`TOLERANCE`
  and a median |error| of at most :data:`GOAL_MEDIAN_ERROR`;
* each engine family (engine profile): no worse than :data:`FAMILY_BASELINE` — at least its
  share within ±25 % and at most its median |error| (rounded to the 0.1 % the table prints).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from typing import Any

TOLERANCE = 0.25
GOAL_SHARE_WITHIN = 0.80
GOAL_MEDIAN_ERROR = 0.15

FAMILY_BASELINE: dict[str, tuple[float, float]] = {
    "sglang": (14 / 24, 0.182), "sglang-0.3": (1.0, 0.041), "trtllm": (36 / 40, 0.064),
    "trtllm-legacy": (1.0, 0.023), "vllm": (40 / 50, 0.064), "vllm-v0": (1.0, 0.129),
}
"""Per engine family (profile): share within ±25 % and median |error| of the table on main
ca772fa, before #30 (``pytest -s tests/core/test_calibration.py`` prints the current ones).
No family may do worse (#30)."""

Row = tuple[Any, float, float]
"""(point, predicted, relative error), as ``tools.calibration.points.errors`` returns them."""


def share_and_median(rows: Iterable[Row]) -> tuple[float, float]:
    """Share of the rows within ±25 % and their median |error|."""
    errs = [abs(e) for *_, e in rows]
    if not errs:
        return 1.0, 0.0
    return sum(e <= TOLERANCE for e in errs) / len(errs), statistics.median(errs)


def summary(rows: list[Row]) -> str:
    """``N points, K within ±25 % (S%), median |error| M%``."""
    share, median = share_and_median(rows)
    inside = round(share * len(rows))
    return (f"{len(rows)} points, {inside} within ±{TOLERANCE:.0%} ({share:.0%}), "
            f"median |error| {median:.1%}")


def family_failure(family: str, rows: list[Row]) -> str | None:
    """Why ``family``'s rows (all of them, documented misses included) miss its baseline, or
    None when they keep it."""
    share, median = share_and_median(rows)
    base_share, base_median = FAMILY_BASELINE[family]
    if share >= base_share - 1e-9 and round(median, 3) <= base_median:
        return None
    return (f"family {family}: {summary(rows)}; baseline {base_share:.0%} within, median "
            f"{base_median:.1%}")


def whole_table_failure(rows: list[Row]) -> str | None:
    """Why the whole table misses the goal, or None when it meets it."""
    share, median = share_and_median(rows)
    if share >= GOAL_SHARE_WITHIN and median <= GOAL_MEDIAN_ERROR:
        return None
    return (f"whole table: {summary(rows)}; goal {GOAL_SHARE_WITHIN:.0%} within, median "
            f"≤ {GOAL_MEDIAN_ERROR:.0%}")


def goal_failures(rows: list[Row]) -> dict[str, str]:
    """Every goal the table misses, keyed by family (``"*"`` for the whole table)."""
    out = {}
    for family in sorted(FAMILY_BASELINE):
        line = family_failure(family, [r for r in rows if r[0].engine == family])
        if line is not None:
            out[family] = line
    whole = whole_table_failure(rows)
    if whole is not None:
        out["*"] = whole
    return out
