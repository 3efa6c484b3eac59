"""Prefill–decode interference: how much one prompt inflates the decode step (§5.2).

Unchunked, a prompt of S tokens runs whole between two decode steps, so a decoding
sequence sees one gap of T_dec(B) + T_prefill(S): factor (T_dec + T_prefill)/T_dec — the
"2 to 30×" of the DistServe retrospective and Sarathi-Serve's up to 28.3×. With a token
budget c the prompt is cut into chunks of c − B tokens, each riding in a mixed step with the
B decodes: factor T_mixed(B, c − B)/T_dec (the chunk's attention over earlier chunks is
counted at half the prompt, its mean).
"""

from __future__ import annotations

from advisor.core.instance import Instance, budget_units, cycle_token_budget


def tpot_inflation(inst: Instance, batch: float, context_tokens: float, prompt_tokens: float,
                   chunk_tokens: int) -> tuple[float, float, float]:
    """(unchunked factor, chunked factor, decode step seconds) for one prompt landing in a batch."""
    b = max(batch, 1.0)
    t_dec = float(inst.decode_step_s(b, context_tokens))
    t_pre = float(inst.prefill_time_s(prompt_tokens))
    # one prompt's chunk: its unit's share of the budget (pipeline micro-batch, DP rank)
    room = max(float(cycle_token_budget(inst.params, chunk_tokens))
               - b * float(inst.params.decode_query_tokens), 1.0) / float(
        budget_units(inst.params))
    t_mix = float(inst.step_time_s(prefill_tokens=min(room, prompt_tokens), prefill_seqs=1.0,
                                   prefill_context_tokens=max(prompt_tokens - room, 0.0) / 2.0,
                                   decode_seqs=b, decode_context_tokens=context_tokens))
    return (t_dec + t_pre) / t_dec, t_mix / t_dec, t_dec
