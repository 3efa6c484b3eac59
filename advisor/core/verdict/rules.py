"""The rule engine: three preconditions, the verdict, warnings, what to measure, gate findings.

Disaggregation pays only when all three preconditions hold *and* the modelled disaggregated
goodput — of the best *integer* split — beats the best chunked-prefill colocated goodput by
``min_disagg_gain`` (docs/sources.md#decision-rules; docs/model.md §9 gives every threshold's
rationale):

* ``gpu-scale`` — does integer allocation eat the specialisation gain? It fails when the
  ideal (fractional) split's gain clears ``min_disagg_gain`` but the best integer split's
  does not; a split whose integer gain clears it is never vetoed for rounding
  (``max_rounding_loss`` only raises a warning). Not applicable (fails) when the cluster
  cannot hold one prefill and one decode instance;
* ``kv-bandwidth`` — KV link utilisation ≤ max_kv_link_utilization and the exposed p95
  transfer ≤ max_kv_transfer_share_of_ttft of the TTFT SLO, at the rate the split carries;
* ``traffic-mix`` — with static pools, the goodput the split loses as the mix moves
  ≤ max_static_mix_loss: across the declared phases, or (one phase) across the assumed drift
  band ``assumed_mix_drift``; autoscaling passes it.

The rule that decided (:data:`DECIDING_RULES`) heads the reasons (#14).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from advisor.core.results import ModelResult
from advisor.core.scenario import Policy, Scenario
from advisor.core.verdict.advice import Advisory, advisories, binding_cause, measure_next
from advisor.core.verdict.moe_warnings import moe_warnings

__all__ = ["Advisory", "Assessment", "Finding", "Precondition", "assess"]

Verdict = Literal["chunked-prefill", "disaggregate"]
VERDICTS: tuple[Verdict, Verdict] = ("chunked-prefill", "disaggregate")
PRECONDITIONS = ("gpu-scale", "kv-bandwidth", "traffic-mix")
DECIDING_RULES = ("gain", "gpu-scale", "kv-bandwidth", "traffic-mix", "not-applicable",
                  "no-split")
"""What decided a verdict: ``gain`` (disaggregation's integer gain cleared the threshold, or
fell short of it on its own), a precondition that turned a winning gain into a loss,
``not-applicable`` (the cluster cannot hold two pools) or ``no-split`` (no prefill/decode
split meets the SLOs at all)."""

@dataclass(frozen=True)
class Precondition:
    """One precondition: a measured value against a threshold."""

    id: str
    question: str
    passed: bool
    measured: float | None
    threshold: float
    unit: str
    explanation: str
    bound: Literal["max", "min"] = "max"
    """Whether ``threshold`` is an upper (``max``) or a lower (``min``) bound on ``measured``."""


@dataclass(frozen=True)
class Finding:
    """A reason the ``check`` gate fails, pointing at the workload key to change."""

    id: str
    key: str
    message: str


@dataclass(frozen=True)
class Assessment:
    """Verdict, reasons and numbers for one scenario (what every renderer shows)."""

    verdict: Verdict
    slo_met: bool
    summary: str
    reasons: tuple[str, ...]
    warnings: tuple[Advisory, ...]
    measure_next: tuple[str, ...]
    preconditions: tuple[Precondition, ...]
    disagg_gain: float | None
    """Disaggregated goodput / colocated goodput − 1 (binding phases, the best integer
    split); None if undefined."""
    findings: tuple[Finding, ...]
    """Gate findings for the declared deployment (empty without ``deployment:``)."""
    model: ModelResult
    deciding_rule: str = "gain"
    """The rule that decided the verdict (one of :data:`DECIDING_RULES`)."""
    headline_reason: str = ""
    """The deciding reason in one sentence (``reasons[0]``)."""
    ideal_gain: float | None = None
    """The gain the ideal (fractional) split would have; None if undefined."""
    rounding_loss: float | None = None
    """Share of the ideal split's goodput whole instances lose (worst phase); None without a
    split."""
    mix_loss: float | None = None
    """What ``traffic-mix`` measured: the static split's loss across the declared phases, or
    (one phase) across the assumed drift band."""


def _pct(x: float) -> str:
    """A fraction as a percentage, ``34%`` or ``4.6%`` (same style as the renderers)."""
    return f"{x * 100:.0f}%" if abs(x) >= 0.195 else f"{x * 100:.1f}%"


def gain_text(gain: float | None) -> str:
    """A gain as words: ``+75%``, ``a 27% loss``, ``unbounded``, ``undefined``."""
    if gain is None or math.isnan(gain):
        return "undefined (neither architecture carries traffic within the SLOs)"
    if math.isinf(gain):
        return ("unbounded (only disaggregation carries traffic within the SLOs)" if gain > 0
                else "a total loss")
    return f"+{_pct(gain)}" if gain >= 0 else f"a {_pct(-gain)} loss"


# --------------------------------------------------------------------------- the thresholds
# One definition of each test, on numbers or numpy arrays alike: ``assess`` applies them to
# one model result, ``advisor.core.analysis.points`` to many design points at once.


def gpu_scale_passes(ideal_gain: np.ndarray | float, integer_gain: np.ndarray | float,
                     policy: Policy) -> np.ndarray:
    """gpu-scale: fails only where the ideal split's gain clears ``min_disagg_gain`` and the
    integer split's does not (whole instances eat the gain). NaN gains clear nothing."""
    ideal = np.asarray(ideal_gain, dtype=float)
    integer = np.asarray(integer_gain, dtype=float)
    ideal_clears = ~np.isnan(ideal) & (ideal >= policy.min_disagg_gain)
    integer_clears = ~np.isnan(integer) & (integer >= policy.min_disagg_gain)
    return np.asarray(~ideal_clears | integer_clears, dtype=bool)


def kv_bandwidth_passes(utilization: np.ndarray | float, transfer_share: np.ndarray | float | None,
                        policy: Policy) -> np.ndarray:
    """kv-bandwidth: the KV link utilisation is within ``max_kv_link_utilization`` and the
    exposed p95 transfer's share of the TTFT target (None: no TTFT target) within
    ``max_kv_transfer_share_of_ttft``."""
    ok = np.asarray(utilization) <= policy.max_kv_link_utilization
    if transfer_share is None:
        return ok
    return ok & (np.asarray(transfer_share) <= policy.max_kv_transfer_share_of_ttft)


def traffic_mix_passes(autoscaling: bool, mix_loss: np.ndarray | float,
                       policy: Policy) -> np.ndarray:
    """traffic-mix: autoscaling, or a static split whose loss as the mix moves (across the
    phases, or the assumed drift band of one phase) is within ``max_static_mix_loss``."""
    return autoscaling | (np.asarray(mix_loss) <= policy.max_static_mix_loss)


def disaggregation_gain(disaggregated_headroom: np.ndarray | float,
                        colocated_headroom: np.ndarray | float) -> np.ndarray:
    """Disaggregated over colocated headroom − 1; +inf where only disaggregation carries
    traffic, NaN where neither does (undefined)."""
    d = np.asarray(disaggregated_headroom, dtype=float)
    c = np.asarray(colocated_headroom, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(c > 0, d / np.where(c > 0, c, 1.0) - 1.0,
                        np.where(d > 0, np.inf, np.nan))


def deciding_rule(applicable: np.ndarray | bool, has_split: np.ndarray | bool,
                  split_gain: np.ndarray | float, gain: np.ndarray | float,
                  gpu_scale_ok: np.ndarray | bool, kv_ok: np.ndarray | bool,
                  mix_ok: np.ndarray | bool, policy: Policy) -> np.ndarray:
    """Index into :data:`DECIDING_RULES` of what decided each verdict.

    In order: not applicable (no room for two pools); no split meeting the SLOs; rounding
    that turned a winning ideal gain into a loss (``gpu-scale``); a gain short of
    ``min_disagg_gain`` anyway (``split_gain``: the per-phase best integer splits'); the first
    failing precondition of a winning gain; the final ``gain`` (a static split's, with
    several phases) short or clearing the threshold.
    """
    def short(x: np.ndarray | float) -> np.ndarray:
        v = np.asarray(x, dtype=float)
        return np.asarray(np.isnan(v) | (v < policy.min_disagg_gain), dtype=bool)

    code = np.where(~np.asarray(mix_ok), 3, 0)
    code = np.where(~np.asarray(kv_ok), 2, code)
    code = np.where(short(split_gain), 0, code)
    code = np.where(~np.asarray(gpu_scale_ok), 1, code)
    code = np.where(~np.asarray(has_split), 5, code)
    return np.asarray(np.where(~np.asarray(applicable), 4, code), dtype=np.int64)


def disaggregates(preconditions_pass: np.ndarray | bool, gain: np.ndarray | float,
                  policy: Policy) -> np.ndarray:
    """The verdict: disaggregate when every precondition holds and the gain (NaN:
    undefined) clears ``min_disagg_gain``."""
    g = np.asarray(gain, dtype=float)
    verdict: np.ndarray = np.asarray(preconditions_pass) & ~np.isnan(g) & (
        g >= policy.min_disagg_gain)
    return verdict


# --------------------------------------------------------------------------- preconditions


def _gpus(n: int) -> str:
    return f"{n:,} GPU{'s' if n != 1 else ''}"


def _more(gain: float) -> str:
    """``75% more goodput`` (or unbounded)."""
    if math.isinf(gain):
        return "unboundedly more goodput (only disaggregation carries traffic within the SLOs)"
    return f"{_pct(gain)} more goodput"


def _applicable(sc: Scenario, m: ModelResult) -> bool:
    """Whether the cluster holds one prefill and one decode instance of the smallest shape
    that fits the model (a model that fits no shape is no split, not "not applicable": the
    cause is the model's size)."""
    g = m.smallest_instance_gpus
    return g is None or 2 * g <= sc.cluster.gpus


def _has_split(m: ModelResult) -> bool:
    return all(p.disaggregated is not None and p.disaggregated.allocation is not None
               for p in m.phases)


def _worst_rounding(m: ModelResult) -> float | None:
    plans = [p.disaggregated for p in m.phases
             if p.disaggregated is not None and p.disaggregated.allocation is not None]
    return max((d.rounding_loss for d in plans), default=None)


def _gpu_scale(sc: Scenario, m: ModelResult, gain: float, ideal: float) -> Precondition:
    q = "do whole instances keep the specialisation gain?"
    limit = sc.policy.min_disagg_gain
    if not _applicable(sc, m):
        g = m.smallest_instance_gpus or 1
        why = f"the smallest instance that fits the model takes {g} GPU{'s' if g > 1 else ''}"
        return Precondition("gpu-scale", q, False, None, limit, "fraction",
                            f"not applicable: {sc.cluster.gpus} GPU"
                            f"{'s' if sc.cluster.gpus != 1 else ''} cannot hold one prefill and "
                            f"one decode instance ({why})", "min")
    if not _has_split(m):
        return Precondition("gpu-scale", q, False, None, limit, "fraction",
                            "no prefill/decode split carries traffic within the SLOs, so there "
                            "is no gain to keep", "min")
    worst = max(m.phases, key=lambda p: p.disaggregated.rounding_loss if p.disaggregated else 1.0)
    plan = worst.disaggregated
    assert plan is not None and plan.allocation is not None
    a = plan.allocation
    where = f" in phase '{worst.name}'" if len(m.phases) > 1 else ""
    text = (f"the ideal (fractional) split would carry {gain_text(ideal)} against the best "
            f"chunked-prefill pool, the best integer split{where} "
            f"({a.prefill_gpus}:{a.decode_gpus} prefill:decode GPUs, {a.idle_gpus} idle) "
            f"{gain_text(gain)}; whole instances lose {_pct(plan.rounding_loss)} of the ideal "
            f"goodput. It fails only when the ideal gain clears the {_pct(limit)} threshold and "
            "the integer one does not")
    passed = bool(gpu_scale_passes(ideal, gain, sc.policy))
    measured = None if math.isnan(gain) else gain
    return Precondition("gpu-scale", q, passed, measured, limit, "fraction", text, "min")


def _kv_bandwidth(sc: Scenario, m: ModelResult) -> Precondition:
    limit = sc.policy.max_kv_link_utilization
    transfers = [kv for p in m.phases
                 if p.disaggregated is not None and (kv := p.disaggregated.kv_transfer) is not None]
    if not transfers:
        return Precondition("kv-bandwidth", "does the network sustain the KV production rate?",
                            False, None, limit, "fraction",
                            "no disaggregated plan exists, so no KV transfer could be sized")
    kv = max(transfers, key=lambda t: t.utilization)
    share = None
    if sc.slo.ttft_ms:
        share = max(t.transfer_ms for t in transfers) / sc.slo.ttft_ms
    at = ""
    if kv.at_carried_rate:
        at = (f" at the {kv.rate_rps:,.1f} req/s the split carries within the SLOs (the "
              "workload's rate is beyond it: that is overload, not a network limit)")
    text = (f"KV demand {kv.demand_bytes_per_s / 1e9:,.2f} GB/s{at} over {kv.link_id} "
            f"({kv.link_bytes_per_s / 1e9:,.1f} GB/s usable from the prefill GPUs) is "
            f"{_pct(kv.utilization)} utilisation (limit {_pct(limit)})")
    if share is not None:
        text += (f"; a p95 prompt's exposed transfer takes {kv.transfer_ms:.1f} ms, "
                 f"{_pct(share)} of the TTFT SLO "
                 f"(limit {_pct(sc.policy.max_kv_transfer_share_of_ttft)})")
    return Precondition("kv-bandwidth", "does the network sustain the KV production rate?",
                        bool(kv_bandwidth_passes(kv.utilization, share, sc.policy)),
                        kv.utilization, limit, "fraction", text)


def mix_loss(sc: Scenario, m: ModelResult) -> float:
    """What traffic-mix judges: the static split's loss across the declared phases, or (one
    phase, static pools) the chosen split's worst loss across the assumed drift band; 0 for
    one phase with autoscaling (nothing static to judge)."""
    if len(sc.phases) > 1:
        return m.static_mix_loss
    if sc.autoscaling or m.fragility is None:
        return 0.0
    return m.fragility.drift_loss


def _drift_detail(m: ModelResult) -> str:
    f = m.fragility
    if f is None or not f.drifted:
        return ""
    worst = max(f.drifted, key=lambda v: v.loss)
    return (f"; worst at prompts {_signed(worst.prompt_scale)} / outputs "
            f"{_signed(worst.output_scale)}: {worst.goodput_rps:,.1f} of "
            f"{worst.best_goodput_rps:,.1f} req/s")


def _signed(scale: float) -> str:
    return f"{(scale - 1.0) * 100:+.0f}%"


def _traffic_mix(sc: Scenario, m: ModelResult) -> Precondition:
    limit = sc.policy.max_static_mix_loss
    q = "can the pools follow a shifting mix?"
    loss = mix_loss(sc, m)
    drift = sc.policy.assumed_mix_drift
    if len(sc.phases) == 1 and sc.autoscaling and m.fragility is not None:
        loss = m.fragility.drift_loss  # shown, not judged
    if len(sc.phases) == 1:
        band = (f"a ±{_pct(drift)} drift of the mean prompt and output lengths "
                "(policy.assumed_mix_drift)")
        split = ""
        if m.fragility is not None and m.disaggregated and m.disaggregated.allocation:
            a = m.disaggregated.allocation
            split = f" the {a.prefill_gpus}:{a.decode_gpus} split"
        if sc.autoscaling:
            return Precondition("traffic-mix", q, True, loss, limit, "fraction",
                                f"autoscaling re-sizes the pools as the mix drifts (kept "
                                f"fixed,{split or ' the split'} would lose {_pct(loss)} "
                                f"across {band})")
        if m.fragility is None:
            return Precondition("traffic-mix", q, True, loss, limit, "fraction",
                                "no prefill/decode split to go stale")
        text = (f"with static pools,{split} loses up to {_pct(loss)} of the goodput "
                f"re-splitting reaches across {band}{_drift_detail(m)}; limit {_pct(limit)}")
        return Precondition("traffic-mix", q, bool(traffic_mix_passes(False, loss, sc.policy)),
                            loss, limit, "fraction", text)
    if sc.autoscaling:
        return Precondition("traffic-mix", q, True, loss, limit, "fraction",
                            f"autoscaling re-balances the pools per phase (a static split would "
                            f"lose {_pct(loss)})")
    text = (f"with static pools the best split for all {len(sc.phases)} phases loses "
            f"{_pct(loss)} of the goodput per-phase re-allocation reaches "
            f"(limit {_pct(limit)})")
    if m.static_allocation is not None:
        a = m.static_allocation
        text += f"; the static split is {a.prefill_gpus}:{a.decode_gpus}"
    passed = bool(traffic_mix_passes(sc.autoscaling, loss, sc.policy))
    return Precondition("traffic-mix", q, passed, loss, limit, "fraction", text)


def _findings(sc: Scenario, m: ModelResult, verdict: Verdict, pre: tuple[Precondition, ...],
              slo_met: bool) -> tuple[Finding, ...]:
    dep, pred = sc.deployment, m.deployed
    if dep is None:
        return ()
    out: list[Finding] = []
    if not slo_met:
        out.append(Finding("slo-unmet", "slo",
                           "no plan meets the SLOs at the workload's rate with the GPUs given"))
    wants = "colocated" if verdict == "chunked-prefill" else "disaggregated"
    if dep.mode != wants:
        out.append(Finding("mode-contradicts-verdict", "deployment.mode",
                           f"deployment.mode is {dep.mode}, but the verdict is {verdict}"))
    elif dep.mode == "colocated" and not dep.chunked_prefill:
        out.append(Finding("chunking-off", "deployment.chunked_prefill",
                           "chunked prefill is off: an unchunked prompt inflates TPOT by "
                           f"{m.colocated.interference.unchunked_tpot_factor:.0f}×"
                           if m.colocated and m.colocated.interference else
                           "chunked prefill is off; the verdict is chunked-prefill"))
    if dep.mode == "disaggregated":
        for p in pre:
            if not p.passed:
                out.append(Finding(f"precondition-{p.id}", "deployment.mode",
                                   f"disaggregated deployment violates {p.id}: {p.explanation}"))
    if pred is not None:
        if not pred.feasible:
            out.append(Finding("deployment-infeasible", "deployment", pred.reason))
        elif not pred.meets_slo:
            if pred.overloaded:
                what = (f"overloaded at {pred.rate_rps:g} req/s (phase '{pred.phase}'); it carries "
                        f"{pred.max_goodput_rps:.1f} req/s within the SLOs")
            else:
                parts = []
                pct = f"p{sc.slo.percentile:g}"
                if (sc.slo.ttft_ms is not None and pred.ttft_ms is not None
                        and pred.ttft_ms > sc.slo.ttft_ms):
                    parts.append(f"{pct} TTFT {pred.ttft_ms:.0f} ms > {sc.slo.ttft_ms:g} ms")
                if (sc.slo.tpot_ms is not None and pred.tpot_ms is not None
                        and pred.tpot_ms > sc.slo.tpot_ms):
                    parts.append(f"{pct} TPOT {pred.tpot_ms:.1f} ms > {sc.slo.tpot_ms:g} ms")
                if not parts:
                    parts.append(f"carries only {pred.max_goodput_rps:.1f} req/s within the SLOs")
                what = "; ".join(parts) + f" at {pred.rate_rps:g} req/s (phase '{pred.phase}')"
            out.append(Finding("deployment-misses-slo", "deployment",
                               f"the declared deployment misses the SLO: {what}"))
        if (dep.mode == "disaggregated" and pred.best_split_prefill_gpus is not None
                and dep.prefill_gpus is not None):
            off = abs(dep.prefill_gpus - pred.best_split_prefill_gpus) / sc.cluster.gpus
            if off > sc.policy.split_tolerance:
                out.append(Finding("split-off", "deployment.prefill_gpus",
                                   f"{dep.prefill_gpus} prefill GPUs is {_pct(off)} of the cluster "
                                   f"away from the best split's {pred.best_split_prefill_gpus} "
                                   f"(tolerance {_pct(sc.policy.split_tolerance)})"))
    return tuple(out)


def _headline(sc: Scenario, m: ModelResult, rule: str, gain: float, ideal: float,
              split_gain: float, pre: tuple[Precondition, ...], verdict: Verdict) -> str:
    """The reason that decided, as one sentence."""
    need = _pct(sc.policy.min_disagg_gain)
    by_id = {p.id: p for p in pre}
    if rule == "not-applicable":
        return f"disaggregation is {by_id['gpu-scale'].explanation}"
    if rule == "no-split":
        return f"no prefill/decode split meets the SLOs: {binding_cause(sc, m)}"
    if rule == "gpu-scale":
        return (f"whole instances turn disaggregation's win into a loss: the ideal split would "
                f"carry {gain_text(ideal)} against the best chunked-prefill pool, the best "
                f"integer split only {gain_text(gain)} (it must clear +{need})")
    if verdict == "disaggregate":
        return (f"disaggregation's best integer split carries {_more(gain)} than the best "
                f"chunked-prefill pool (it must clear {need} more) and all three "
                "preconditions hold")
    if rule == "gain":
        g = None if math.isnan(gain) else gain
        if g is not None and g < 0:
            return (f"disaggregation loses goodput: its best integer split carries "
                    f"{_pct(-g)} less than the best chunked-prefill pool")
        return (f"disaggregation's best integer split carries only {gain_text(g)} against "
                f"the best chunked-prefill pool, short of the +{need} it must clear")
    p = by_id[rule]
    return (f"{rule} fails and turns a {_pct(split_gain)} gain into a no: {p.explanation}")


def assess(sc: Scenario, m: ModelResult) -> Assessment:
    """Apply the rules to a model result."""
    c, d = m.colocated, m.disaggregated
    raw_gain = float(disaggregation_gain(m.disaggregated_headroom, m.colocated_headroom))
    raw_ideal = float(disaggregation_gain(m.disaggregated_ideal_headroom, m.colocated_headroom))
    split_gain = float(disaggregation_gain(m.disaggregated_best_headroom, m.colocated_headroom))
    pre = (_gpu_scale(sc, m, split_gain, raw_ideal), _kv_bandwidth(sc, m), _traffic_mix(sc, m))
    gain = None if math.isnan(raw_gain) else raw_gain
    all_pass = all(p.passed for p in pre)
    verdict = VERDICTS[int(bool(disaggregates(all_pass, raw_gain, sc.policy)))]
    applicable, has_split = _applicable(sc, m), _has_split(m)
    rule = DECIDING_RULES[int(deciding_rule(applicable, has_split, split_gain, raw_gain,
                                            pre[0].passed, pre[1].passed, pre[2].passed,
                                            sc.policy))]
    coloc_ok = c is not None and c.meets(sc.slo)
    disagg_ok = d is not None and d.meets(sc.slo)
    slo_met = disagg_ok if verdict == "disaggregate" else coloc_ok

    headline = _headline(sc, m, rule, split_gain if rule == "gpu-scale" else raw_gain,
                         raw_ideal, split_gain, pre, verdict)
    reasons: list[str] = [headline]
    if applicable and has_split:
        for p in pre:
            if not p.passed and p.id != rule:
                reasons.append(f"{p.id} fails too: {p.explanation}")
    if c is not None and c.interference is not None:
        i = c.interference
        reasons.append(f"a p95 prompt ({i.prompt_tokens:,.0f} tokens) landing in the decode "
                       f"batch stretches that decode step "
                       f"{i.unchunked_tpot_factor:.1f}× unchunked; "
                       f"with the {i.chunk_tokens:,}-token budget each chunk stretches it "
                       f"{i.chunked_tpot_factor:.1f}×")

    if not slo_met:
        other_ok = disagg_ok if verdict == "chunked-prefill" else coloc_ok
        if not coloc_ok and not disagg_ok:
            phase = next((p for p in sc.phases if p.name == m.colocated_phase), sc.phases[0])
            where = f" in phase '{phase.name}'" if len(sc.phases) > 1 else ""
            summary = (f"No plan meets the SLOs at {phase.rate_rps:g} req/s{where} "
                       f"on {_gpus(sc.cluster.gpus)}: {binding_cause(sc, m)}.")
        else:
            summary = (f"The recommended {verdict} plan misses the SLOs on {sc.cluster.gpus} GPUs"
                       + (" (only the other architecture meets them, but it fails a precondition)."
                          if other_ok else "."))
            need = (m.colocated_gpus_needed if verdict == "chunked-prefill"
                    else m.disaggregated_gpus_needed)
            if need is not None:
                summary += f" It would take about {need} GPUs."
    elif verdict == "disaggregate":
        a = d.allocation if d else None
        split = f" with a {a.prefill_gpus}:{a.decode_gpus} split" if a else ""
        summary = (f"Disaggregate{split}: all three preconditions hold and it carries "
                   f"{_more(raw_gain)} than chunked prefill.")
    else:
        # a precondition's full explanation follows in the reasons
        why = headline.split(": ", 1)[0] if rule in ("kv-bandwidth", "traffic-mix") else headline
        shape = (f"TP{c.tensor_parallel}"
                 + (f"×PP{c.pipeline_stages}" if c.pipeline_stages > 1 else "")
                 if c is not None else "")
        if c is not None and c.expert_parallel > 1:
            shape = f"EP{c.expert_parallel}" + ("·DPA" if c.dp_attention else
                                                f"·TP{c.tensor_parallel}")
        plan = (f" ({c.instances} × {shape}, token budget {c.chunk_tokens:,})"
                if c is not None else "")
        summary = f"Chunked prefill on a colocated pool{plan}: {why}."

    rounding = _worst_rounding(m)
    findings = _findings(sc, m, verdict, pre, slo_met)
    return Assessment(verdict=verdict, slo_met=slo_met, summary=summary, reasons=tuple(reasons),
                      warnings=(*(Advisory(i, msg) for i, msg in moe_warnings(sc, m)),
                                *advisories(sc, m, verdict == "disaggregate", rounding)),
                      measure_next=measure_next(sc, m, verdict == "disaggregate", rule),
                      preconditions=pre, disagg_gain=gain, findings=findings, model=m,
                      deciding_rule=rule, headline_reason=headline,
                      ideal_gain=None if math.isnan(raw_ideal) else raw_ideal,
                      rounding_loss=rounding, mix_loss=mix_loss(sc, m))
