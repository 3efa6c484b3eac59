"""The rule engine: three preconditions, the verdict, warnings, what to measure, gate findings.

Disaggregation pays only when all three preconditions hold *and* the modelled disaggregated
goodput beats the best chunked-prefill colocated goodput by ``min_disagg_gain``
(performance-model.md §12.3; docs/model.md §9 gives every threshold's rationale):

* ``gpu-scale`` — rounding loss of the best integer P:D split (worst phase) ≤ max_rounding_loss;
* ``kv-bandwidth`` — KV link utilisation ≤ max_kv_link_utilization and the exposed p95
  transfer ≤ max_kv_transfer_share_of_ttft of the TTFT SLO;
* ``traffic-mix`` — with static pools, the goodput a static split loses across phases
  ≤ max_static_mix_loss (passes with one phase or with autoscaling).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from advisor.core.results import ModelResult
from advisor.core.scenario import Policy, Scenario
from advisor.core.verdict.moe_warnings import moe_warnings

Verdict = Literal["chunked-prefill", "disaggregate"]
VERDICTS: tuple[Verdict, Verdict] = ("chunked-prefill", "disaggregate")
PRECONDITIONS = ("gpu-scale", "kv-bandwidth", "traffic-mix")

KV_CONCURRENCY_WARN = 64
"""Concurrent KV transfers at which SGLang PD has failed (SGLang #9266; performance-model.md §13)."""


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


@dataclass(frozen=True)
class Advisory:
    """A failure mode of disaggregated serving worth knowing before adopting it (a report's
    ``warnings``)."""

    id: str
    message: str


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
    """Disaggregated goodput / colocated goodput − 1 (binding phases); None if undefined."""
    findings: tuple[Finding, ...]
    """Gate findings for the declared deployment (empty without ``deployment:``)."""
    model: ModelResult


def _pct(x: float) -> str:
    """A fraction as a percentage, ``34%`` or ``4.6%`` (same style as the renderers)."""
    return f"{x * 100:.0f}%" if abs(x) >= 0.195 else f"{x * 100:.1f}%"


# --------------------------------------------------------------------------- the thresholds
# One definition of each test, on numbers or numpy arrays alike: ``assess`` applies them to
# one model result, ``advisor.core.plan.points`` to many design points at once.


def gpu_scale_passes(rounding_loss: np.ndarray | float, policy: Policy) -> np.ndarray:
    """gpu-scale: the worst phase's rounding loss is within ``max_rounding_loss``."""
    return np.asarray(rounding_loss) <= policy.max_rounding_loss


def kv_bandwidth_passes(utilization: np.ndarray | float, transfer_share: np.ndarray | float | None,
                        policy: Policy) -> np.ndarray:
    """kv-bandwidth: the KV link utilisation is within ``max_kv_link_utilization`` and the
    exposed p95 transfer's share of the TTFT target (None: no TTFT target) within
    ``max_kv_transfer_share_of_ttft``."""
    ok = np.asarray(utilization) <= policy.max_kv_link_utilization
    if transfer_share is None:
        return ok
    return ok & (np.asarray(transfer_share) <= policy.max_kv_transfer_share_of_ttft)


def traffic_mix_passes(phases: int, autoscaling: bool, static_mix_loss: np.ndarray | float,
                       policy: Policy) -> np.ndarray:
    """traffic-mix: one phase, autoscaling, or a static split within ``max_static_mix_loss``."""
    return (phases == 1) | autoscaling | (np.asarray(static_mix_loss)
                                          <= policy.max_static_mix_loss)


def disaggregation_gain(disaggregated_headroom: np.ndarray | float,
                        colocated_headroom: np.ndarray | float) -> np.ndarray:
    """Disaggregated over colocated headroom − 1; +inf where only disaggregation carries
    traffic, NaN where neither does (undefined)."""
    d = np.asarray(disaggregated_headroom, dtype=float)
    c = np.asarray(colocated_headroom, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(c > 0, d / np.where(c > 0, c, 1.0) - 1.0,
                        np.where(d > 0, np.inf, np.nan))


def disaggregates(preconditions_pass: np.ndarray | bool, gain: np.ndarray | float,
                  policy: Policy) -> np.ndarray:
    """The verdict: disaggregate when every precondition holds and the gain (NaN:
    undefined) clears ``min_disagg_gain``."""
    g = np.asarray(gain, dtype=float)
    return np.asarray(preconditions_pass) & ~np.isnan(g) & (g >= policy.min_disagg_gain)


# --------------------------------------------------------------------------- preconditions


def _gpu_scale(sc: Scenario, m: ModelResult) -> Precondition:
    limit = sc.policy.max_rounding_loss
    worst = max(m.phases, key=lambda p: p.disaggregated.rounding_loss if p.disaggregated else 1.0)
    plan = worst.disaggregated
    if plan is None or plan.allocation is None:
        return Precondition("gpu-scale", "enough GPUs for a clean integer P:D allocation?", False,
                            1.0, limit, "fraction",
                            f"{sc.cluster.gpus} GPUs cannot hold one prefill and one decode "
                            "instance of any shape that fits the model")
    a = plan.allocation
    where = f" in phase '{worst.name}'" if len(m.phases) > 1 else ""
    text = (f"at {sc.cluster.gpus} GPUs the best split{where} is {a.prefill_gpus}:{a.decode_gpus}"
            f" (prefill:decode GPUs, {a.idle_gpus} idle) against an ideal prefill fraction of "
            f"{plan.ideal_prefill_fraction:.2f}; whole instances lose {_pct(plan.rounding_loss)} "
            f"of the ideal goodput (limit {_pct(limit)})")
    return Precondition("gpu-scale", "enough GPUs for a clean integer P:D allocation?",
                        bool(gpu_scale_passes(plan.rounding_loss, sc.policy)),
                        plan.rounding_loss, limit, "fraction", text)


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
    text = (f"KV demand {kv.demand_bytes_per_s / 1e9:,.2f} GB/s over {kv.link_id} "
            f"({kv.link_bytes_per_s / 1e9:,.1f} GB/s usable from the prefill GPUs) is "
            f"{_pct(kv.utilization)} utilisation (limit {_pct(limit)})")
    if share is not None:
        text += (f"; a p95 prompt's exposed transfer takes {kv.transfer_ms:.1f} ms, "
                 f"{_pct(share)} of the TTFT SLO (limit {_pct(sc.policy.max_kv_transfer_share_of_ttft)})")
    return Precondition("kv-bandwidth", "does the network sustain the KV production rate?",
                        bool(kv_bandwidth_passes(kv.utilization, share, sc.policy)),
                        kv.utilization, limit, "fraction", text)


def _traffic_mix(sc: Scenario, m: ModelResult) -> Precondition:
    limit = sc.policy.max_static_mix_loss
    q = "can the pools follow a shifting mix?"
    if len(sc.phases) == 1:
        return Precondition("traffic-mix", q, True, 0.0, limit, "fraction",
                            "one traffic phase: a fixed P:D ratio does not go stale")
    if sc.autoscaling:
        return Precondition("traffic-mix", q, True, m.static_mix_loss, limit, "fraction",
                            f"autoscaling re-balances the pools per phase (a static split would "
                            f"lose {_pct(m.static_mix_loss)})")
    text = (f"with static pools the best split for all {len(sc.phases)} phases loses "
            f"{_pct(m.static_mix_loss)} of the goodput per-phase re-allocation reaches "
            f"(limit {_pct(limit)})")
    if m.static_allocation is not None:
        a = m.static_allocation
        text += f"; the static split is {a.prefill_gpus}:{a.decode_gpus}"
    passed = bool(traffic_mix_passes(len(sc.phases), sc.autoscaling, m.static_mix_loss,
                                     sc.policy))
    return Precondition("traffic-mix", q, passed, m.static_mix_loss, limit, "fraction", text)


def _advisories(sc: Scenario, m: ModelResult, verdict: Verdict) -> tuple[Advisory, ...]:
    dep = sc.deployment
    moe = tuple(Advisory(i, msg) for i, msg in moe_warnings(sc, m))
    relevant = verdict == "disaggregate" or (dep is not None and dep.mode == "disaggregated")
    if not relevant or m.disaggregated is None:
        return moe
    out: list[Advisory] = list(moe)
    plan = m.disaggregated
    kv = plan.kv_transfer
    if kv is not None:
        in_flight = kv.concurrent_transfers
        decode_conc = plan.decode_batch * (plan.allocation.decode_instances if plan.allocation else 1)
        if in_flight >= KV_CONCURRENCY_WARN or decode_conc >= KV_CONCURRENCY_WARN:
            out.append(Advisory("kv-concurrency",
                               f"about {in_flight:,.0f} KV transfers in flight and {decode_conc:,.0f} "
                               f"concurrent decoding requests; ≥ {KV_CONCURRENCY_WARN} concurrent "
                               "requests have broken SGLang PD transfers (sgl-project/sglang#9266) — "
                               "load-test the transfer path at this concurrency"))
        if kv.link_id.startswith("nvlink"):
            out.append(Advisory("kv-over-tcp",
                               "KV is planned over NVLink, but NIXL/UCX without an RDMA NIC falls "
                               "back to TCP through host memory even on one node; check the "
                               "transfer backend really uses NVLink"))
    longest = max(p.prompt_tokens.upper_tokens for p in sc.phases)
    out.append(Advisory("prompt-limit",
                       f"prompts up to {longest:,.0f} tokens: set the same maximum input length on "
                       "prefill and decode; longer prompts than the prefill side accepts have "
                       "produced silent garbage on the decode side (sgl-project/sglang#30233)"))
    if plan.allocation is not None and plan.allocation.prefill_instances < 2:
        out.append(Advisory("no-prefill-fallback",
                           "a single prefill instance: when it fails every request stalls; "
                           "keep a colocated fallback path"))
    else:
        out.append(Advisory("no-prefill-fallback",
                           "if the prefill pool fails, decode instances starve; plan a fallback "
                           "(colocated serving) and alert on prefill queue depth"))
    if len(sc.phases) > 1 and not sc.autoscaling:
        out.append(Advisory("static-ratio",
                           f"a static P:D ratio under a shifting mix loses {_pct(m.static_mix_loss)} "
                           "against per-phase re-allocation; enable autoscaling with damping"))
    return tuple(out)


def _measure_next(sc: Scenario, m: ModelResult) -> tuple[str, ...]:
    out = []
    c = m.colocated
    if c is not None:
        slo = f" vs the {sc.slo.tpot_ms:g} ms SLO" if sc.slo.tpot_ms else ""
        tpot = f"{c.tpot_ms:.1f} ms" if c.tpot_ms is not None else "overloaded"
        out.append(f"p{sc.slo.percentile:g} TPOT under chunked prefill (token budget "
                   f"{c.chunk_tokens}, TP{c.tensor_parallel}) at {c.rate_rps:g} req/s: the model "
                   f"predicts {tpot}{slo}")
    d = m.disaggregated
    if d is not None and d.ttft_ms is not None and d.kv_transfer is not None:
        prefill_ms = d.ttft_ms - d.kv_transfer.transfer_ms
        out.append(f"prefill share of TTFT: the model predicts {prefill_ms:.0f} ms of prefill "
                   f"and queueing in a p{sc.slo.percentile:g} TTFT of {d.ttft_ms:.0f} ms "
                   f"(KV transfer {d.kv_transfer.transfer_ms:.1f} ms)")
    if d is not None and d.kv_transfer is not None:
        kv = d.kv_transfer
        n = max(round(kv.concurrent_transfers), 1)
        out.append(f"KV transfer reliability at about {n} concurrent "
                   f"transfer{'s' if n != 1 else ''} of {kv.bytes_per_request_mean / 1e6:,.0f} MB "
                   f"({_pct(kv.utilization)} of {kv.link_id})")
    return tuple(out)


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
                if sc.slo.ttft_ms is not None and pred.ttft_ms is not None and pred.ttft_ms > sc.slo.ttft_ms:
                    parts.append(f"p{sc.slo.percentile:g} TTFT {pred.ttft_ms:.0f} ms > {sc.slo.ttft_ms:g} ms")
                if sc.slo.tpot_ms is not None and pred.tpot_ms is not None and pred.tpot_ms > sc.slo.tpot_ms:
                    parts.append(f"p{sc.slo.percentile:g} TPOT {pred.tpot_ms:.1f} ms > {sc.slo.tpot_ms:g} ms")
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


def assess(sc: Scenario, m: ModelResult) -> Assessment:
    """Apply the rules to a model result."""
    pre = (_gpu_scale(sc, m), _kv_bandwidth(sc, m), _traffic_mix(sc, m))
    c, d = m.colocated, m.disaggregated
    raw_gain = float(disaggregation_gain(m.disaggregated_headroom, m.colocated_headroom))
    gain = None if math.isnan(raw_gain) else raw_gain
    all_pass = all(p.passed for p in pre)
    gain_ok = gain is not None and gain >= sc.policy.min_disagg_gain
    verdict = VERDICTS[int(bool(disaggregates(all_pass, raw_gain, sc.policy)))]
    coloc_ok = c is not None and c.meets(sc.slo)
    disagg_ok = d is not None and d.meets(sc.slo)
    slo_met = disagg_ok if verdict == "disaggregate" else coloc_ok

    reasons: list[str] = []
    gain_txt = "n/a" if gain is None else ("unbounded" if gain == float("inf") else _pct(gain))
    for p in pre:
        if not p.passed:
            reasons.append(f"{p.id} fails: {p.explanation}")
    if all_pass and not gain_ok:
        reasons.append(f"all three preconditions hold, but disaggregation's modelled gain of "
                       f"{gain_txt} is below the {_pct(sc.policy.min_disagg_gain)} it must clear")
    elif not all_pass:
        reasons.append(f"the modelled specialisation gain of disaggregation is {gain_txt}; "
                       "chunked prefill on a colocated pool avoids the KV hop and the split")
    else:
        reasons.append(f"all three preconditions hold and disaggregation carries {gain_txt} more "
                       f"goodput than the best chunked-prefill pool")
    if c is not None and c.interference is not None:
        i = c.interference
        reasons.append(f"a p95 prompt ({i.prompt_tokens:,.0f} tokens) landing in the decode "
                       f"batch stretches that decode step {i.unchunked_tpot_factor:.1f}× unchunked; "
                       f"with the {i.chunk_tokens:,}-token budget each chunk stretches it "
                       f"{i.chunked_tpot_factor:.1f}×")

    if not slo_met:
        other_ok = disagg_ok if verdict == "chunked-prefill" else coloc_ok
        if not coloc_ok and not disagg_ok:
            phase = next((p for p in sc.phases if p.name == m.colocated_phase), sc.phases[0])
            where = f" in phase '{phase.name}'" if len(sc.phases) > 1 else ""
            summary = (f"No plan meets the SLOs at {phase.rate_rps:g} req/s{where} "
                       f"on {sc.cluster.gpus} GPUs.")
        else:
            summary = (f"The recommended {verdict} plan misses the SLOs on {sc.cluster.gpus} GPUs"
                       + (" (only the other architecture meets them, but it fails a precondition)."
                          if other_ok else "."))
        need = m.colocated_gpus_needed if verdict == "chunked-prefill" else m.disaggregated_gpus_needed
        if need is not None:
            summary += f" It would take about {need} GPUs."
    elif verdict == "disaggregate":
        a = d.allocation if d else None
        split = f" with a {a.prefill_gpus}:{a.decode_gpus} split" if a else ""
        summary = (f"Disaggregate{split}: all three preconditions hold and it carries "
                   f"{gain_txt} more goodput than chunked prefill.")
    else:
        failing = [p.id for p in pre if not p.passed]
        why = (f"{', '.join(failing)} fail{'s' if len(failing) == 1 else ''}" if failing
               else f"disaggregation gains only {gain_txt}")
        shape = (f"TP{c.tensor_parallel}" + (f"×PP{c.pipeline_stages}" if c.pipeline_stages > 1 else "")
                 if c is not None else "")
        if c is not None and c.expert_parallel > 1:
            shape = f"EP{c.expert_parallel}" + ("·DPA" if c.dp_attention else
                                                f"·TP{c.tensor_parallel}")
        plan = (f" ({c.instances} × {shape}, token budget {c.chunk_tokens:,})"
                if c is not None else "")
        summary = f"Chunked prefill on a colocated pool{plan}: {why}."

    findings = _findings(sc, m, verdict, pre, slo_met)
    return Assessment(verdict=verdict, slo_met=slo_met, summary=summary, reasons=tuple(reasons),
                      warnings=_advisories(sc, m, verdict), measure_next=_measure_next(sc, m),
                      preconditions=pre, disagg_gain=gain, findings=findings, model=m)
