"""The cost model pinned to published measurements of serving engines, both eras.

The points, their sources and setups, and how each kind is predicted are in
``tools/calibration/points.py`` (one row per published figure; each names the engine profile
of the version measured: the 2023-24 points select the older profiles ``vllm-v0``,
``sglang-0.3`` and ``trtllm-legacy``). The engine constants were fitted to them with
``python tools/refit_engines.py``.

Goal (issue #15), asserted over the whole table: at least 80 % of the points within ±25 % and
a median |error| of at most 15 %. Every point not listed in ``MISSES`` (a documented miss with
its cause) is pinned within ±25 %; every listed miss is asserted to stay outside (if one comes
inside, move it to the pinned set). Run ``pytest -s tests/core/test_calibration.py`` to see
the table with each point's source and error.
"""

from __future__ import annotations

import pytest

from advisor.core.memory import build_instance
from tools.calibration.goals import (
    FAMILY_BASELINE,
    TOLERANCE,
    family_failure,
    summary,
    whole_table_failure,
)
from tools.calibration.points import MISSES, NOT_APPLICABLE, POINTS, Context, Point, errors

Row = tuple[Point, float, float]


@pytest.fixture(scope="module")
def ctx() -> Context:
    return Context.load()


@pytest.fixture(scope="module")
def table(ctx: Context) -> list[Row]:
    return errors(POINTS, ctx)


def test_print_calibration_table(table: list[Row]) -> None:
    """Point, engine profile, predicted, published, error, status, source (``pytest -s``)."""
    print()
    print(f"{'point':<36} {'engine':<13} {'unit':<5} {'predicted':>10} {'published':>10} "
          f"{'error':>8}  status  source")
    for point, pred, err in table:
        status = "miss  " if point.id in MISSES else (
            "ok    " if abs(err) <= TOLERANCE else "FAIL  ")
        print(f"{point.id:<36} {point.engine:<13} {point.unit:<5} {pred:>10.1f} "
              f"{point.published:>10.1f} {err:>+8.1%}  {status}  {point.source}")
    for era in ("2025-26", "2023-24"):
        print(f"era {era}: {summary([r for r in table if r[0].era == era])}")
    for family in sorted(FAMILY_BASELINE):
        print(f"family {family}: {summary([r for r in table if r[0].engine == family])}")
    print(f"whole table: {summary(table)}")
    print("documented misses:")
    for point_id, cause in MISSES.items():
        print(f"  {point_id}: {cause}")
    print("not applicable (not pinned):")
    for rows, reason in NOT_APPLICABLE.items():
        print(f"  {rows}: {reason}")
    assert len(table) == len(POINTS)


def test_whole_table_meets_the_goal(table: list[Row]) -> None:
    """≥ 80 % of all points within ±25 % and median |error| ≤ 15 % (issue #15; the goal is
    stated once, in tools/calibration/goals.py, which the refit tool applies too)."""
    assert whole_table_failure(table) is None, summary(table)


@pytest.mark.parametrize("family", sorted(FAMILY_BASELINE))
def test_no_engine_family_is_worse_than_before(family: str, table: list[Row]) -> None:
    """Each family keeps at least its share within ±25 % and at most its median |error| of
    before #30 (rounded to the 0.1 % the table prints)."""
    rows = [r for r in table if r[0].engine == family]
    assert family_failure(family, rows) is None


def test_point_ids_are_unique_and_misses_exist() -> None:
    ids = [p.id for p in POINTS]
    assert len(ids) == len(set(ids))
    assert set(MISSES) <= set(ids)


@pytest.mark.parametrize("point", [p for p in POINTS if p.id not in MISSES],
                         ids=lambda p: p.id)
def test_pinned_point_within_tolerance(point: Point, table: list[Row]) -> None:
    _, pred, err = next(r for r in table if r[0] is point)
    assert abs(err) <= TOLERANCE, (f"{point.id}: predicted {pred:.1f} {point.unit}, published "
                                   f"{point.published} ({point.source})")


@pytest.mark.parametrize("point_id", sorted(MISSES))
def test_documented_miss_is_still_outside(point_id: str, table: list[Row]) -> None:
    """A documented miss that starts to fit should be moved into the pinned set."""
    _, _, err = next(r for r in table if r[0].id == point_id)
    assert abs(err) > TOLERANCE, f"{point_id} now within ±25 % ({err:+.1%}): pin it"


def test_older_points_select_older_engine_profiles(ctx: Context) -> None:
    """The 2023-24 open-source and v0.5 points run on their own version families."""
    chosen = {p.id: p.engine for p in POINTS}
    assert chosen["O2 vLLM v0.6"] == ctx.catalog.engine_for("vllm", "0.6.0").id == "vllm-v0"
    assert chosen["O1 SGLang v0.3"] == ctx.catalog.engine_for("sglang", "0.3.0").id
    assert chosen["S1 ISL2048"] == ctx.catalog.engine_for("trtllm", "0.5").id
    assert chosen["T1 128/128"] == ctx.catalog.engine_for("trtllm", "1.0").id == "trtllm"
    assert ctx.catalog.engine_for("vllm", "0.11").id == "vllm"


# ---- shapes ---------------------------------------------------------------------------------
def test_shape_h200_vs_h100(table: list[Row]) -> None:
    """Prefill-heavy: H200 ≈ H100 (published 1.03); decode-heavy: H200 faster (published 1.31)."""
    by_id = {p.id: pred for p, pred, _ in table}
    assert by_id["T2 2048/128"] / by_id["T1 2048/128"] == pytest.approx(1.0, abs=0.1)
    assert by_id["T2 2048/2048"] / by_id["T1 2048/2048"] > 1.15


def _instance(ctx: Context, model: str, gpu_id: str, precision: str, engine: str, tp: int):
    gpu = ctx.catalog.gpu(gpu_id)
    return build_instance(ctx.catalog.model(model), gpu, precision, ctx.engines[engine], tp, 1,
                          ctx.catalog.link(gpu.intra_node_link_id), None)


@pytest.mark.parametrize("engine", ["trtllm-legacy", "trtllm", "vllm", "sglang"])
def test_shape_short_prompts_are_overhead_dominated(ctx: Context, engine: str) -> None:
    """A 128-token prefill on 4xH100 costs far more than its FLOPs (fixed costs dominate)."""
    inst = _instance(ctx, "llama-2-70b", "h100-sxm", "fp8", engine, 4)
    flops_s = 2 * inst.model.matmul_params_per_token * 128 / (4 * inst.gpu.peak_flops_per_s("fp8"))
    assert float(inst.prefill_time_s(128)) > 3 * flops_s


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_shape_large_batch_decode_becomes_compute_bound(ctx: Context, engine: str) -> None:
    """Decode step time is flat at small batch and grows ~linearly past the ridge point."""
    inst = _instance(ctx, "llama-3.1-8b", "h100-sxm", "bf16", engine, 1)
    t1, t8 = float(inst.decode_step_s(1, 0)), float(inst.decode_step_s(8, 0))
    t2k, t4k = float(inst.decode_step_s(2048, 0)), float(inst.decode_step_s(4096, 0))
    assert t8 / t1 < 1.05  # memory-bound: weights dominate
    assert t4k / t2k == pytest.approx(2.0, rel=0.15)  # compute-bound: linear in batch


def test_shape_v1_engines_have_small_fixed_costs(ctx: Context) -> None:
    """Llama-3.1-8B BF16 on one H100 at batch 1: V1's step is weight streaming plus < 1 ms
    (published ITL 6.44 ms), the V0-era engine's is several ms more."""
    v1 = _instance(ctx, "llama-3.1-8b", "h100-sxm", "bf16", "vllm", 1)
    v0 = _instance(ctx, "llama-3.1-8b", "h100-sxm", "bf16", "vllm-v0", 1)
    assert float(v1.decode_step_s(1, 1024)) * 1000 == pytest.approx(6.49, rel=0.15)
    assert float(v0.decode_step_s(1, 1024)) > float(v1.decode_step_s(1, 1024)) + 0.004
