"""The step-time function's scalar fast path gives the same bits as its array path."""

from __future__ import annotations

import numpy as np
import pytest

from advisor.core.instance import Instance, StackedInstances, step_time
from advisor.core.memory import build_instance
from tests.core.helpers import catalog

# every built-in model (dense, GQA, MLA, MoE, sliding-window) on one GPU profile, with and
# without tensor parallelism, and a two-stage instance whose stages talk over InfiniBand
SHAPES = [(model, tp, pp) for model in sorted(catalog().ids("models"))
          for tp, pp in ((1, 1), (8, 1), (8, 2))]


def _instance(model: str, tp: int, pp: int) -> Instance:
    c = catalog()
    gpu = c.gpu("h200-sxm")
    return build_instance(c.model(model), gpu, "bf16", "vllm", tp, pp,
                          c.link(gpu.intra_node_link_id), c.link("ib-ndr-400") if pp > 1 else None)


def _inputs(rng: np.random.Generator, n: int) -> np.ndarray:
    """(n, 5) step inputs: prefill tokens/seqs/context, decode seqs/context, with zeros,
    fractions and large values mixed in."""
    cols = [rng.choice([0.0, 1.0, 17.0, 512.0, 8192.0, 65536.0, 3.7], n) * rng.uniform(0.5, 2, n)
            for _ in range(5)]
    x = np.stack(cols, axis=1)
    x[rng.random((n, 5)) < 0.2] = 0.0
    return x


@pytest.mark.parametrize(("model", "tp", "pp"), SHAPES)
def test_scalar_path_equals_array_path(model: str, tp: int, pp: int) -> None:
    """For 300 random steps, Python-float inputs (the fast path) and one-element arrays (the
    numpy path) give identical float64 values; so do ``prefill_time_s`` and
    ``decode_step_s``, and a stack of one instance."""
    inst = _instance(model, tp, pp)
    rng = np.random.default_rng(abs(hash((model, tp, pp))) % 2**32)
    rows = _inputs(rng, 300)
    scalar = np.array([inst.step_time_s(*map(float, row)) for row in rows])
    arrays = np.array([float(step_time(inst.model, inst.params, *(np.array([v]) for v in row))[0])
                       for row in rows])
    np.testing.assert_array_equal(scalar, arrays)
    together = step_time(inst.model, inst.params, *rows.T)
    np.testing.assert_array_equal(scalar, together)
    stacked = StackedInstances([inst], ndim=2).step_time_s(*rows.T)[0]
    np.testing.assert_array_equal(scalar, stacked)
    for s, n in ((1000.0, 1.0), (8192.0, 3.0), (1.0, 0.5)):
        assert inst.prefill_time_s(s, n) == inst.prefill_time_s(np.array(s), np.array(n))
    for b, ctx in ((1.0, 1000.0), (37.5, 4096.0)):
        assert inst.decode_step_s(b, ctx) == float(inst.decode_step_s(np.array([b]), ctx)[0])


def test_non_finite_inputs_take_the_array_path() -> None:
    """NaN and infinity keep numpy's semantics (NaN propagates through the max)."""
    inst = _instance("llama-3.1-8b", 1, 1)
    with np.errstate(all="ignore"):
        _check_non_finite(inst)


def _check_non_finite(inst: Instance) -> None:
    assert np.isnan(inst.step_time_s(prefill_tokens=float("nan")))
    for row in ([float("inf"), 1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, float("inf"), 10.0],
                [5.0, float("nan"), 0.0, 1.0, 1.0]):
        want = step_time(inst.model, inst.params, *(np.array(v) for v in row))
        np.testing.assert_equal(inst.step_time_s(*row), want)
