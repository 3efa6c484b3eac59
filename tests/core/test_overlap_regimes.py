"""The step's compute/memory combination by regime (#30 item 2; docs/model.md §3).

Each kernel class — the weight GEMMs with the weight stream, the attention kernels with the
KV traffic — takes R(C, M) = max(C, M, γ·(C + M)), γ = 1 − ω/2, ω = the engine profile's
``compute_memory_overlap`` (the overlap at the ridge point C = M). Away from the ridge, past
r = C/M = (2 − ω)/ω (or below its inverse), one of the two hides the other (T = max); near
it a share γ of their sum is paid. The classes run one after the other.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from advisor.core.decode_lines import decode_step_lines
from advisor.core.memory import build_instance
from advisor.core.step_params import roofline
from tools.calibration.points import Context

# ---- the combination by hand ------------------------------------------------------------------


def test_pure_compute_bound_is_the_compute_time() -> None:
    """ω = 0.5: γ = 0.75, the band edge r = (2 − 0.5)/0.5 = 3. C = 10, M = 1 (r = 10): the
    ridge line 0.75·11 = 8.25 < 10, so T = C = 10: the weight stream hides under the math."""
    assert roofline(10.0, 1.0, 0.5) == 10.0
    assert roofline(np.array([10.0]), np.array([1.0]), 0.5)[0] == 10.0


def test_memory_bound_decode_is_the_memory_time() -> None:
    """ω = 0.5, C = 1, M = 10 (r = 0.1, decode at small batch): T = M = 10."""
    assert roofline(1.0, 10.0, 0.5) == 10.0


def test_mixed_regime_pays_a_share_of_the_sum() -> None:
    """ω = 0.5 at the ridge, C = M = 4: γ·(C + M) = 0.75·8 = 6 = max + (1 − ω)·min = 4 + 2.
    C = 6, M = 3 (r = 2, inside the band): 0.75·9 = 6.75 = 6 + 0.75 of M exposed. At the band
    edge C = 9, M = 3 (r = 3): 0.75·12 = 9 = C, where the max takes over."""
    assert roofline(4.0, 4.0, 0.5) == 6.0
    assert roofline(6.0, 3.0, 0.5) == pytest.approx(6.75, abs=1e-15)
    assert roofline(9.0, 3.0, 0.5) == 9.0


def test_the_two_ends_are_the_sum_and_the_max() -> None:
    """ω = 0: C + M at every ratio (the fitted profiles); ω = 1: max(C, M) (no profile)."""
    for c, m in ((10.0, 1.0), (4.0, 4.0), (1.0, 10.0)):
        assert roofline(c, m, 0.0) == c + m
        assert roofline(c, m, 1.0) == max(c, m)


# ---- properties over r -----------------------------------------------------------------------

ratios = st.floats(min_value=1e-3, max_value=1e3)
overlaps = st.floats(min_value=0.0, max_value=1.0)


@given(r=ratios, omega=overlaps, step=st.floats(min_value=1e-6, max_value=1.0))
def test_monotone_and_bounded_in_the_ratio(r: float, omega: float, step: float) -> None:
    """With M = 1: T(r) lies between max(C, M) and C + M, never falls as C grows (r·(1 +
    step)) or as M grows at fixed C, and the overlap ω(r) = 1 − (T − max)/min never falls as
    r moves away from the ridge."""
    t = roofline(r, 1.0, omega)
    assert max(r, 1.0) <= t <= r + 1.0 + 1e-12
    r2 = r * (1.0 + step)
    assert roofline(r2, 1.0, omega) >= t
    assert roofline(r, 1.0 + step, omega) >= t
    exposed = (t - max(r, 1.0)) / min(r, 1.0)
    exposed2 = (roofline(r2, 1.0, omega) - max(r2, 1.0)) / min(r2, 1.0)
    if r >= 1.0:
        assert exposed2 <= exposed + 1e-9
    elif r2 <= 1.0:
        assert exposed2 >= exposed - 1e-9


@given(r=ratios, omega=overlaps)
def test_continuous_across_the_regime_boundaries(r: float, omega: float) -> None:
    """No jump anywhere, the band edges r = (2 − ω)/ω and its inverse included: T is
    1-Lipschitz in C and in M (a change δ in either moves T by at most δ)."""
    delta = 1e-9 * max(r, 1.0)
    assert abs(roofline(r + delta, 1.0, omega) - roofline(r, 1.0, omega)) <= delta * (1 + 1e-6)
    assert abs(roofline(r, 1.0 + delta, omega) - roofline(r, 1.0, omega)) <= delta * (1 + 1e-6)
    if omega > 1e-3:  # the edges within the ratios drawn
        edge = (2.0 - omega) / omega
        for at in (edge, 1.0 / edge):
            lo = roofline(at * (1 - 1e-12), 1.0, omega)
            hi = roofline(at * (1 + 1e-12), 1.0, omega)
            assert 0.0 <= hi - lo <= 1e-9 * max(at, 1.0)


def test_overlap_by_ratio_is_the_documented_ramp() -> None:
    """ω(r) = 1 − (T − max)/min: ω at the ridge, rising linearly in r to 1 at the band edge
    (ω = 0.5: ω(1) = 0.5, ω(2) = 0.75, ω(3) = 1, ω(10) = 1; the same at 1/r)."""
    for r, want in ((1.0, 0.5), (2.0, 0.75), (3.0, 1.0), (10.0, 1.0)):
        for c, m in ((r, 1.0), (1.0, r)):
            t = roofline(c, m, 0.5)
            assert 1.0 - (t - max(c, m)) / min(c, m) == pytest.approx(want, abs=1e-12)


# ---- the issue's example ---------------------------------------------------------------------


def _trtllm_70b_tp2(overlap: float | None = None):  # type: ignore[no-untyped-def]
    ctx = Context.load()
    c = ctx.catalog
    engine = ctx.engines["trtllm"]
    if overlap is not None:
        engine = dataclasses.replace(engine, compute_memory_overlap=overlap)
    gpu = c.gpu("h100-sxm")
    return build_instance(c.model("llama-3.1-70b"), gpu, "fp8", engine, 2, 1,
                          c.link(gpu.intra_node_link_id), None)


def test_issue_example_500_token_prompt_on_70b_tp2() -> None:
    """#30: a 500-token prompt on Llama-3.1-70B FP8, TP2 on H100 (TensorRT-LLM profile).

    By hand: weights per GPU 34,751,516,672 B at 3.35 TB/s × η_w 0.71 = 2.3785 TB/s →
    M_w = 14.61 ms; GEMMs 2 × 69,503,033,344 × 500 FLOPs over 2 × 1,979 TFLOP/s × MFU 0.58 =
    2.2956 PFLOP/s → C = 30.28 ms; r = C/M_w = 2.07. The issue's "+15 ms it does not pay" is
    M_w. It is not charged only where r is past the band edge, ω ≥ 2/(1 + r) = 0.65; the
    fitted ω of every current profile is 0 (docs/model.md §3: the points near r ≈ 1–8 pay the
    sum), so the step still carries it. At ω = 0.3 (SGLang's rejected fit) 0.85·(C + M_w) is
    paid: 6.73 ms of it no longer charged."""
    m_w = 34_751_516_672 / (3.35e12 * 0.71)
    c = 2 * 69_503_033_344 * 500 / (2 * 1979e12 * 0.58)
    assert m_w == pytest.approx(14.611e-3, rel=1e-4)
    assert c == pytest.approx(30.276e-3, rel=1e-4)
    assert c / m_w == pytest.approx(2.072, abs=1e-3)

    fitted = _trtllm_70b_tp2()
    assert fitted.engine.compute_memory_overlap == 0.0
    t_fitted = float(fitted.prefill_time_s(500))
    t_max = float(_trtllm_70b_tp2(1.0).prefill_time_s(500))
    # the attention kernels' min(C_attn, M_kv) is the rest of the gap (16 µs at 500 tokens)
    assert t_fitted - t_max == pytest.approx(m_w, abs=0.05e-3)

    edge = 2.0 / (1.0 + c / m_w)
    assert edge == pytest.approx(0.651, abs=1e-3)
    t_edge = float(_trtllm_70b_tp2(edge + 1e-9).prefill_time_s(500))
    assert t_fitted - t_edge == pytest.approx(m_w, abs=0.05e-3)
    t_03 = float(_trtllm_70b_tp2(0.3).prefill_time_s(500))
    assert t_fitted - t_03 == pytest.approx(0.15 * (c + m_w), abs=0.05e-3)
    assert 0.15 * (c + m_w) == pytest.approx(6.73e-3, abs=0.01e-3)


# ---- the closed form's lines at a fractional overlap -------------------------------------------


@pytest.mark.parametrize("overlap", [0.0, 0.3, 0.5, 1.0])
def test_decode_lines_match_the_step_at_any_overlap(overlap: float) -> None:
    """The unchunked closed form's lines (GEMM roofline: cc·B, m0, γ·(m0 + cc·B); attention
    per sequence) equal the step-time formula from small-batch decode to past the ridge."""
    inst = _trtllm_70b_tp2(overlap)
    lines = decode_step_lines(inst.model, inst.params, 3000.0)
    batch = np.array([1.0, 16.0, 150.0, 300.0, 600.0, 2000.0, 8000.0])
    np.testing.assert_allclose(lines.at(batch), inst.decode_step_s(batch, 3000.0), rtol=1e-12)
    assert math.isfinite(float(lines.at(1.0)))


@pytest.mark.parametrize("overlap", [0.0, 0.5, 1.0])
def test_unchunked_closed_form_is_the_fixed_point_at_any_overlap(overlap: float) -> None:
    """The unchunked steady state read off the three lines satisfies Little's law with the
    step-time formula itself, B = λ·Ō·τ(B), on both sides of the GEMMs' ridge (B ≈ 200 on
    this instance), and a larger ω never needs a larger batch for the same rate."""
    from advisor.core.colocated import evaluate_colocated
    from tests.core.helpers import scenario

    phase = scenario(model="llama-3.1-70b", precision="fp8", prompt=100,
                     output=1000).peak_phase
    rates = np.array([0.5, 4.0, 7.0, 9.0])  # ω = 0.5: B ≈ 8, 80, 244, 639
    point = evaluate_colocated(_trtllm_70b_tp2(overlap), 4096, phase, rates, None, 0.95)
    ok = ~point.overloaded
    assert ok.sum() >= 3
    little = rates * phase.output_tokens.mean * point.tpot_mean_s
    np.testing.assert_allclose(point.batch[ok], little[ok], rtol=1e-9)
    if overlap > 0.0:
        less = evaluate_colocated(_trtllm_70b_tp2(overlap / 2), 4096, phase, rates, None,
                                  0.95)
        assert np.all(point.batch[ok] <= less.batch[ok] * (1 + 1e-12))
