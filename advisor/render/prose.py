"""The decision in words: every sentence a report says about the verdict, the rules and the
gate, written once from the decision (``core.verdict.decision``) and shown the same in every
format. The rules themselves carry no prose (#28).

Numbers go through :mod:`advisor.render.numbers` (one style: separators, units, articles,
plurals). Plans are named by what they are — "the best colocated plan (chunked prefill)",
"the static split kept for both phases", "the best integer split of phase 'day-chat'" — so a
figure in one sentence is never another one's under the same name.
"""

from __future__ import annotations

import math

from advisor.core.results import ColocatedPlan, DisaggregatedPlan
from advisor.core.scenario import Scenario
from advisor.core.verdict.decision import Decision, RuleOutcome
from advisor.core.verdict.gate import Finding, reference_split_prefill_gpus, split_offset
from advisor.render import numbers as n
from advisor.render.advice import binding_cause, colocated_shape

TITLES = {"chunked-prefill": "Chunked prefill on a colocated pool",
          "disaggregate": "Disaggregate prefill and decode"}
"""The verdicts as headlines."""

PLAN_NAMES = {"colocated": "the colocated plan with chunked prefill",
              "unchunked": "the colocated plan prefilling whole prompts",
              "disaggregated": "disaggregation"}


def title(d: Decision) -> str:
    """The recommendation as a headline (the colocated one says whether it chunks)."""
    if d.recommended == "unchunked":
        return "Colocated pool, whole-prompt prefill (chunked prefill off)"
    return TITLES[d.verdict]


def gain_words(gain: float | None) -> str:
    """A gain as words: ``+75%``, ``a 27% loss``, ``unbounded``, ``undefined``."""
    if gain is None or math.isnan(gain):
        return "undefined (neither architecture carries traffic within the SLOs)"
    if math.isinf(gain):
        return ("unbounded (only disaggregation carries traffic within the SLOs)" if gain > 0
                else "a total loss")
    return f"+{n.pct(gain)}" if gain >= 0 else f"a {n.pct(-gain)} loss"


def baseline(d: Decision) -> str:
    """The plan the gains are measured against, named."""
    how = "whole-prompt prefill" if d.baseline == "unchunked" else "chunked prefill"
    return f"the best colocated plan ({how})"


def _static(sc: Scenario) -> bool:
    return len(sc.phases) > 1 and not sc.autoscaling


def split_name(sc: Scenario) -> str:
    """What the verdict's disaggregated plan is: the static split or the best integer one."""
    if _static(sc):
        return f"the static split kept for {n.phases(len(sc.phases))}"
    return "the best integer split"


def _more(gain: float | None) -> str:
    if gain is not None and math.isinf(gain):
        return "unboundedly more goodput (only disaggregation carries traffic within the SLOs)"
    return f"{n.pct(gain)} more goodput"


def _alloc_text(a_prefill: int, a_decode: int, idle: int) -> str:
    spare = "none idle" if idle == 0 else f"{n.count(idle)} idle"
    return f"{n.split(a_prefill, a_decode)} prefill:decode GPUs, {spare}"


# --------------------------------------------------------------------------- rules
def _not_applicable(sc: Scenario, d: Decision) -> str:
    g = d.model.smallest_instance_gpus or 1
    return (f"{n.gpus(sc.cluster.gpus)} cannot hold one prefill and one decode instance (the "
            f"smallest instance that fits the model takes {n.gpus(g)})")


def _no_split(sc: Scenario, d: Decision) -> str | None:
    if d.deciding_rule == "not-applicable":
        return f"not applicable: {_not_applicable(sc, d)}"
    if not all(p.best_split is not None and p.best_split.allocation is not None
               for p in d.phases) and not any(
            p.best_split is not None and p.best_split.allocation is not None for p in d.phases):
        return "no prefill/decode split carries traffic within the SLOs"
    return None


def _gpu_scale(sc: Scenario, d: Decision, r: RuleOutcome) -> str:
    bar = n.pct(r.limit)
    if d.deciding_rule == "not-applicable":
        return f"not applicable: {_not_applicable(sc, d)}"
    worst = max((p for p in d.phases if p.best_split is not None),
                key=lambda p: p.best_split.rounding_loss if p.best_split else 1.0, default=None)
    plan = worst.best_split if worst is not None else None
    if plan is None or plan.allocation is None or any(
            p.best_split is None or p.best_split.allocation is None for p in d.phases):
        return ("not applicable: no prefill/decode split carries traffic within the SLOs in "
                f"{n.phases(len(d.phases))}, so there is no gain to keep")
    if r.status == "n/a":
        return (f"not applicable: even the ideal (fractional) split carries only "
                f"{gain_words(d.ideal_gain)} against {baseline(d)}, short of the +{bar} bar, "
                "so there is no specialisation gain for whole instances to eat")
    a = plan.allocation
    where = f" of phase '{worst.name}'" if worst is not None and len(d.phases) > 1 else ""
    alloc = _alloc_text(a.prefill_gpus, a.decode_gpus, a.idle_gpus)
    return (f"the ideal (fractional) split would carry {gain_words(d.ideal_gain)} against "
            f"{baseline(d)}, the best integer split{where} ({alloc}) "
            f"{gain_words(d.split_gain)}; whole instances lose "
            f"{n.pct(plan.rounding_loss)} of the ideal goodput. It fails only when the ideal "
            f"gain clears the +{bar} bar and the integer one does not")


def _kv_bandwidth(sc: Scenario, d: Decision, r: RuleOutcome) -> str:
    transfers = [(p.disaggregated.kv_transfer, p.name) for p in d.phases
                 if p.disaggregated is not None and p.disaggregated.kv_transfer is not None]
    if r.status == "n/a" or not transfers:
        return "not applicable: no disaggregated plan exists, so no KV transfer could be sized"
    kv, phase = max(transfers, key=lambda t: t[0].utilization)
    where = f" in phase '{phase}'" if len(d.phases) > 1 else ""
    at = ""
    if kv.at_carried_rate:
        at = (f" at the {n.rps(kv.rate_rps)} the split carries within the SLOs (the "
              "workload's rate is beyond it: that is overload, not a network limit)")
    text = (f"KV demand{where} {n.gb_per_s(kv.demand_bytes_per_s)}{at} over {kv.link_id} "
            f"({n.gb_per_s(kv.link_bytes_per_s)} usable from the prefill GPUs) is "
            f"{n.pct(kv.utilization)} utilisation (limit {n.pct(r.limit)})")
    if sc.slo.ttft_ms:
        worst_ms = max(t.transfer_ms for t, _ in transfers)
        text += (f"; a p95 prompt's exposed transfer takes {n.ms(worst_ms)}, "
                 f"{n.pct(worst_ms / sc.slo.ttft_ms)} of the TTFT SLO "
                 f"(limit {n.pct(sc.policy.max_kv_transfer_share_of_ttft)})")
    return text


def _traffic_mix(sc: Scenario, d: Decision, r: RuleOutcome) -> str:
    m = d.model
    limit = n.pct(r.limit)
    if r.status == "n/a":
        return "not applicable: no prefill/decode split to go stale"
    loss = d.mix_loss
    if len(sc.phases) == 1:
        drift = sc.policy.assumed_mix_drift
        band = (f"a ±{n.pct(drift)} drift of the mean prompt and output lengths "
                "(policy.assumed_mix_drift)")
        a = d.phases[0].disaggregated.allocation if d.phases[0].disaggregated else None
        split = f" the {n.split(a.prefill_gpus, a.decode_gpus)} split" if a else " the split"
        if sc.autoscaling:
            kept = m.fragility.drift_loss if m.fragility is not None else 0.0
            return (f"passes with autoscaling, which re-sizes the pools as the mix drifts; kept "
                    f"fixed,{split} would lose {n.pct(kept)} across {band}")
        text = (f"with static pools,{split} loses up to {n.pct(loss)} of the goodput "
                f"re-splitting reaches across {band}")
        f = m.fragility
        if f is not None and f.drifted:
            worst = max(f.drifted, key=lambda v: v.loss)
            text += (f"; worst at prompts {n.signed_pct(worst.prompt_scale - 1)} / outputs "
                     f"{n.signed_pct(worst.output_scale - 1)}: {n.rps(worst.goodput_rps)} of "
                     f"{n.rps(worst.best_goodput_rps)}")
        return text + f"; limit {limit}"
    every = n.phases(len(sc.phases))
    if sc.autoscaling:
        return (f"passes with autoscaling, which re-balances the pools per phase (one split "
                f"kept for {every} would lose {n.pct(m.static_mix_loss)})")
    text = (f"with static pools the best split kept for {every} loses {n.pct(loss)} of the "
            f"goodput per-phase re-allocation reaches (limit {limit})")
    if m.static_allocation is not None:
        a = m.static_allocation
        text += f"; the static split is {n.split(a.prefill_gpus, a.decode_gpus)}"
    return text


_EXPLAIN = {"gpu-scale": _gpu_scale, "kv-bandwidth": _kv_bandwidth,
            "traffic-mix": _traffic_mix}


def limit_text(r: RuleOutcome) -> str:
    """``limit 50%`` or ``needs at least +10%``."""
    value = n.pct(r.limit) if r.unit == "fraction" else f"{n.num(r.limit)} {r.unit}"
    return f"needs at least {value}" if r.bound == "min" else f"limit {value}"


def measured_text(r: RuleOutcome) -> str:
    """The measured value in the rule's unit (``n/a`` where it does not apply)."""
    if r.status == "n/a" or r.measured is None:
        return "n/a"
    if r.unit == "fraction":
        return n.signed_pct(r.measured) if r.bound == "min" else n.pct(r.measured)
    return f"{n.num(r.measured)} {r.unit}"


def explanation(sc: Scenario, d: Decision, r: RuleOutcome) -> str:
    """What a precondition measured and why it passes, fails or does not apply; a rule
    without its own wording gets the measured value against its limit."""
    word = _EXPLAIN.get(r.id)
    if word is not None:
        text = word(sc, d, r)
    elif r.status == "n/a":
        text = "not applicable at this design point"
    else:
        text = f"{measured_text(r)} measured, {limit_text(r)}"
    if r.overridden:
        text += ("; set aside: disaggregation is the only plan that meets the SLOs at the "
                 "offered rate")
    return text


def rule_brief(r: RuleOutcome) -> str:
    """``traffic-mix fails (15% measured, limit 10%)``."""
    verb = {"pass": "passes", "fail": "fails", "n/a": "does not apply"}[r.status]
    if r.status == "n/a":
        return f"{r.id} {verb}"
    return f"{r.id} {verb} ({measured_text(r)} measured, {limit_text(r)})"


# --------------------------------------------------------------------------- the verdict
def _meets_slo_reason(sc: Scenario, d: Decision) -> str:
    phase = d.phase(d.binding_phase)
    where = f" in phase '{phase.name}'" if len(d.phases) > 1 else ""
    if d.verdict == "disaggregate":
        best = max((p for p in (phase.colocated, phase.unchunked) if p is not None),
                   key=lambda p: p.max_goodput_rps, default=None)
        carried = (f"the best colocated plan carries {n.rps(best.max_goodput_rps)} of the "
                   f"{n.rps(phase.rate_rps)} offered{where}" if best is not None
                   else "no colocated plan fits")
        set_aside = [d.rule(r) for r in d.overridden if r != "gain"]
        parts = [rule_brief(r) for r in set_aside]
        if "gain" in d.overridden:
            parts.append(f"the gain, {gain_words(d.gain)}, is short of the "
                         f"+{n.pct(sc.policy.min_disagg_gain)} it must clear")
        aside = "; set aside: " + "; ".join(parts) if parts else ""
        return (f"disaggregation is the only plan that meets the SLOs at the offered rate: "
                f"{carried}{aside}")
    return ("only the colocated plan meets the SLOs at the offered rate: disaggregation "
            f"carries {n.rps(phase.disaggregated.max_goodput_rps if phase.disaggregated else 0)}"
            f" of the {n.rps(phase.rate_rps)} offered{where}")


def headline_reason(sc: Scenario, d: Decision) -> str:
    """The reason that decided, as one sentence."""
    need = n.pct(sc.policy.min_disagg_gain)
    rule = d.deciding_rule
    what = split_name(sc)
    if rule == "meets-slo":
        return _meets_slo_reason(sc, d)
    if rule == "not-applicable":
        return f"disaggregation is not applicable: {_not_applicable(sc, d)}"
    if rule == "no-split":
        return f"no prefill/decode split meets the SLOs: {binding_cause(sc, d.model)}"
    if rule == "gpu-scale":
        return (f"whole instances turn disaggregation's win into a loss: the ideal split would "
                f"carry {gain_words(d.ideal_gain)} against {baseline(d)}, the best integer "
                f"split only {gain_words(d.split_gain)} (it must clear +{need})")
    if d.verdict == "disaggregate":
        return (f"disaggregation's {what.removeprefix('the ')} carries {_more(d.gain)} than "
                f"{baseline(d)} (it must clear {need} more) and every precondition holds")
    if rule == "gain":
        g = d.gain
        if g is not None and g < 0:
            return (f"disaggregation loses goodput: {what} carries {n.pct(-g)} less than "
                    f"{baseline(d)}")
        return (f"disaggregation's {what.removeprefix('the ')} carries only {gain_words(g)} "
                f"against {baseline(d)}, short of the +{need} it must clear")
    r = d.rule(rule)
    if _static(sc):
        return (f"{rule} fails: re-allocated per phase the splits would carry "
                f"{gain_words(d.split_gain)} against {baseline(d)}, but {explanation(sc, d, r)}")
    return f"{rule} fails and turns a {gain_words(d.split_gain)} gain into a no: " + (
        explanation(sc, d, r))


def _plan_phrase(d: Decision) -> str:
    """The recommended plan as an instruction: ``Run 4 × TP8 with an 8,192-token budget``."""
    plan = d.recommended_plan
    if isinstance(plan, DisaggregatedPlan) and plan.allocation is not None:
        a = plan.allocation
        pre = _pool(a.prefill_tensor_parallel, a.prefill_pipeline_stages,
                    a.prefill_expert_parallel, a.prefill_dp_attention)
        dec = _pool(a.decode_tensor_parallel, a.decode_pipeline_stages,
                    a.decode_expert_parallel, a.decode_dp_attention)
        return (f"Run {n.gpus(a.prefill_gpus)} of prefill ({a.prefill_instances} × {pre}) and "
                f"{n.gpus(a.decode_gpus)} of decode ({a.decode_instances} × {dec}), "
                f"{n.with_article(n.split(a.prefill_gpus, a.decode_gpus))} split")
    if isinstance(plan, ColocatedPlan):
        shape = f"{plan.instances} × {colocated_shape(plan)}"
        if plan.chunked and plan.chunk_tokens:
            return f"Run {shape} with {n.with_article(n.count(plan.chunk_tokens))}-token budget"
        return f"Run {shape} prefilling whole prompts"
    return "No plan to run"


def _pool(tp: int, pp: int, ep: int, dpa: bool) -> str:
    if ep > 1:
        return f"EP{ep}·DPA" + (f"×TP{tp}" if tp > 1 and dpa else "") if dpa else f"EP{ep}·TP{tp}"
    return f"TP{tp}" + (f"×PP{pp}" if pp > 1 else "")


def summary(sc: Scenario, d: Decision) -> str:
    """One paragraph: what to run and why (never a repeat of the title)."""
    m = d.model
    if not d.any_plan_meets:
        phase = d.phase(d.binding_phase)
        where = f" in phase '{phase.name}'" if len(sc.phases) > 1 else ""
        return (f"No plan meets the SLOs at {n.rps(phase.rate_rps)}{where} on "
                f"{n.gpus(sc.cluster.gpus)}: {binding_cause(sc, m)}.")
    head = _plan_phrase(d)
    if d.deciding_rule == "meets-slo":
        return f"{head}: {_meets_slo_reason(sc, d)}."
    if d.verdict == "disaggregate":
        return (f"{head}: every precondition holds and it carries {_more(d.gain)} than "
                f"{baseline(d)}.")
    reason = headline_reason(sc, d)
    if d.deciding_rule in ("kv-bandwidth", "traffic-mix"):
        r = d.rule(d.deciding_rule)
        reason = rule_brief(r) + (f", although re-allocated per phase the splits would carry "
                                  f"{gain_words(d.split_gain)}" if _static(sc)
                                  else f" and turns a {gain_words(d.split_gain)} gain into a no")
    return f"{head}: {reason}."


def reasons(sc: Scenario, d: Decision) -> tuple[str, ...]:
    """Why, the deciding reason first: other failing preconditions, then interference."""
    out = [headline_reason(sc, d)]
    if d.deciding_rule not in ("not-applicable", "no-split"):
        for r in d.rules:
            if r.status == "fail" and r.id != d.deciding_rule and not r.overridden:
                out.append(f"{r.id} fails too: {explanation(sc, d, r)}")
    c = d.model.colocated
    if c is not None and c.interference is not None:
        i = c.interference
        out.append(f"a p95 prompt ({n.tokens(i.prompt_tokens)}) landing in the decode batch "
                   f"stretches that decode step {n.factor(i.unchunked_tpot_factor)} unchunked; "
                   f"with {n.with_article(n.count(i.chunk_tokens))}-token budget each chunk "
                   f"stretches it {n.factor(i.chunked_tpot_factor)}")
    return tuple(out)


# --------------------------------------------------------------------------- the gate
def finding_message(sc: Scenario, d: Decision, f: Finding) -> str:
    """A gate finding in words."""
    dep, m = sc.deployment, d.model
    pred = m.deployed
    assert dep is not None
    if f.id == "slo-unmet":
        return "no plan meets the SLOs at the workload's rate with the GPUs given"
    if f.id == "mode-contradicts-verdict":
        wants = PLAN_NAMES[d.recommended]
        return (f"deployment.mode is {dep.mode}, but the verdict is {d.verdict} "
                f"(the recommendation: {wants})")
    if f.id == "chunking-off":
        c = m.colocated
        if c is not None and c.interference is not None:
            return ("chunked prefill is off: an unchunked p95 prompt stretches a decode step "
                    f"{n.factor(c.interference.unchunked_tpot_factor)}")
        return "chunked prefill is off; the recommendation chunks"
    if f.id.startswith("precondition-") and f.rule is not None:
        return (f"the disaggregated deployment violates {f.rule}: "
                f"{explanation(sc, d, d.rule(f.rule))}")
    if f.id == "deployment-infeasible" and pred is not None:
        return pred.reason
    if f.id == "deployment-misses-slo" and pred is not None:
        where = f" (phase '{pred.phase}')" if len(sc.phases) > 1 else ""
        if pred.overloaded:
            what = (f"overloaded at {n.rps(pred.rate_rps)}{where}; it carries "
                    f"{n.rps(pred.max_goodput_rps)} within the SLOs")
        else:
            parts = []
            pct = f"p{n.num(sc.slo.percentile)}"
            if (sc.slo.ttft_ms is not None and pred.ttft_ms is not None
                    and pred.ttft_ms > sc.slo.ttft_ms):
                parts.append(f"{pct} TTFT {n.ms(pred.ttft_ms)} > {n.ms(sc.slo.ttft_ms)}")
            if (sc.slo.tpot_ms is not None and pred.tpot_ms is not None
                    and pred.tpot_ms > sc.slo.tpot_ms):
                parts.append(f"{pct} TPOT {n.ms(pred.tpot_ms)} > {n.ms(sc.slo.tpot_ms)}")
            if not parts:
                parts.append(f"carries only {n.rps(pred.max_goodput_rps)} within the SLOs")
            what = "; ".join(parts) + f" at {n.rps(pred.rate_rps)}{where}"
        return f"the declared deployment misses the SLO: {what}"
    if f.id == "split-off":
        best = reference_split_prefill_gpus(sc, m)
        off = split_offset(sc, m) or 0.0
        which = ("the static split's" if len(sc.phases) > 1 and not sc.autoscaling
                 else "the best split's")
        return (f"{n.count(dep.prefill_gpus or 0)} prefill GPUs is {n.pct(off)} of the cluster "
                f"away from {which} {n.count(best or 0)} (tolerance "
                f"{n.pct(sc.policy.split_tolerance)})")
    return f.id
