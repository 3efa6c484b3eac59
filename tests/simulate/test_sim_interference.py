"""Unchunked prefill stalls running decodes for a whole prompt; chunked prefill bounds the gap.

The analytic interference bound (``Interference`` of the chunked plan) says a p95 prompt
prefilled whole turns one token gap into (T_dec + T_prefill(p95)) / T_dec decode steps — an
order of magnitude here — while a 512-token budget keeps it at T_mixed / T_dec.
"""

from __future__ import annotations

from advisor.core.simulate import simulate
from tests.simulate.helpers import model, scenario

NAME = "interference-8b"


def test_unchunked_tpot_tail_matches_the_interference_bound() -> None:
    sc, r = scenario(NAME), model(NAME)
    assert r.colocated is not None and r.colocated.interference is not None
    bound = r.colocated.interference
    assert bound.unchunked_tpot_factor >= 10  # the scenario is built for this
    unchunked = simulate(sc, "unchunked", 5000, 3, model=r)
    chunked = simulate(sc, "chunked", 5000, 3, model=r)
    step = unchunked.token_gaps.decode_step_ms
    # unchunked: a long prompt stalls the batch for at least the p95 prompt's prefill
    assert unchunked.token_gaps.max_ms >= bound.unchunked_tpot_factor * step
    assert unchunked.token_gaps.max_ms >= 10 * unchunked.token_gaps.p50_ms
    # chunked: no gap exceeds a few mixed steps of the budget
    assert chunked.token_gaps.max_ms <= 2 * bound.chunked_tpot_factor * step
    assert chunked.token_gaps.max_ms * 10 < unchunked.token_gaps.max_ms
    # the per-request tail follows: unchunked TPOT p99 above chunked
    assert unchunked.overall.tpot_ms[2].simulated > chunked.overall.tpot_ms[2].simulated
    assert unchunked.token_gaps.p99_ms > 2 * chunked.token_gaps.p99_ms
