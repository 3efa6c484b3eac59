"""What a report advises beyond the verdict: engine-specific warnings, what to measure next
and the binding cause when no plan meets the SLOs (#14), worded from the decision.

Warnings name the failure modes of the workload's own engine (SGLang issues on SGLang only)
and what the cost model cannot represent for a mixture-of-experts deployment (docs/model.md
§10); "measure next" follows the recommended plan (a colocated recommendation is not asked to
measure the KV path it does not have) and adds the quantity that decided it when that
quantity is an input the user can measure. Every engine fact carries its public source.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.core.results import ColocatedPlan, DisaggregatedPlan, ModelResult, PhaseResult
from advisor.core.scenario import Scenario
from advisor.core.verdict.decision import Decision
from advisor.render import numbers as n

KV_CONCURRENCY_WARN = 64
"""Concurrent KV transfers at which SGLang PD has failed (sgl-project/sglang#9266)."""
TRTLLM_EXAMPLE_TRANSCEIVER_TOKENS = 2048
"""``cache_transceiver_config.max_num_tokens`` in TensorRT-LLM's disaggregated example
(NVIDIA/TensorRT-LLM ``examples/disaggregated/README.md``)."""
SGLANG_BOOTSTRAP_PORT = 8998
"""SGLang's default ``--disaggregation-bootstrap-port`` (sgl-project/sglang
``docs/advanced_features/pd_disaggregation.md``)."""


@dataclass(frozen=True)
class Advisory:
    """A failure mode worth knowing before adopting the plan (a report's ``warnings``)."""

    id: str
    message: str


def _engine_advisories(sc: Scenario, m: ModelResult) -> list[Advisory]:
    """The deployment engine's own known failure modes of disaggregated serving."""
    out: list[Advisory] = []
    plan = m.disaggregated
    engine = sc.engine.name
    longest = max(p.prompt_tokens.upper_tokens for p in sc.phases)
    if engine == "sglang":
        kv = plan.kv_transfer if plan is not None else None
        if kv is not None and plan is not None:
            in_flight = kv.concurrent_transfers
            decode_conc = plan.decode_batch * (plan.allocation.decode_instances
                                               if plan.allocation else 1)
            if in_flight >= KV_CONCURRENCY_WARN or decode_conc >= KV_CONCURRENCY_WARN:
                out.append(Advisory(
                    "kv-concurrency",
                    f"about {n.counted(round(in_flight), 'KV transfer')} in flight and "
                    f"{n.counted(round(decode_conc), 'concurrent decoding request')}; "
                    f"≥ {KV_CONCURRENCY_WARN} concurrent requests have broken SGLang PD "
                    "transfers (sgl-project/sglang#9266) — load-test the transfer path at "
                    "this concurrency"))
        out.append(Advisory(
            "prompt-limit",
            f"prompts up to {n.tokens(longest)}: set the same maximum input length on prefill "
            "and decode; longer prompts than the prefill side accepts have produced silent "
            "garbage on the decode side in SGLang PD (sgl-project/sglang#30233)"))
        out.append(Advisory(
            "bootstrap-port",
            "every SGLang prefill server needs its own --disaggregation-bootstrap-port (default "
            f"{SGLANG_BOOTSTRAP_PORT}) when several share a host, and the router must be given "
            "it when it is not the default (SGLang docs, pd_disaggregation.md)"))
    elif engine == "vllm":
        out.append(Advisory(
            "experimental",
            "vLLM documents disaggregated prefill as experimental and states it does not "
            "improve throughput by itself (vLLM docs, features/disagg_prefill.md); the gain "
            "modelled here comes from sizing the pools separately — confirm it with a load test "
            "before moving traffic"))
        out.append(Advisory(
            "nixl-ports",
            "with NixlConnector give every worker on a host its own "
            "VLLM_NIXL_SIDE_CHANNEL_PORT and set VLLM_NIXL_SIDE_CHANNEL_HOST when prefill and "
            "decode run on different machines; kv_role is ignored and the proxy decides which "
            "instance prefills (vLLM docs, features/nixl_connector_usage.md)"))
    elif engine == "trtllm":
        out.append(Advisory(
            "cache-transceiver",
            f"prompts up to {n.tokens(longest)}: TensorRT-LLM's disaggregated example sets "
            "cache_transceiver_config.max_num_tokens to "
            f"{n.count(TRTLLM_EXAMPLE_TRANSCEIVER_TOKENS)} on the context and generation "
            "servers; size it for your prompts on both sides (TensorRT-LLM "
            "examples/disaggregated/README.md)"))
    return out


def _moe_advisories(sc: Scenario, m: ModelResult) -> list[Advisory]:
    """What the model cannot represent for a mixture-of-experts deployment (empty for dense
    models): never a silent TP-only answer for a model engines serve with expert
    parallelism."""
    model, eng = sc.model, sc.engine
    if model.moe is None:
        return []
    if eng.expert_parallel is None or not eng.supports.expert_parallel:
        return [Advisory(
            "ep-not-modelled",
            f"{model.name} is a mixture-of-experts model, but the engine profile {eng.id} has "
            "no expert-parallel terms: only TP/PP plans were tried. Wide expert parallelism "
            "with DP attention can deliver several times the output per GPU (docs/model.md "
            "§3.4); use an engine profile with EP (sglang, vllm)")]
    out: list[Advisory] = []
    if not sc.cluster.spans_nodes and sc.cluster.gpus > sc.cluster.gpus_per_node:
        out.append(Advisory("ep-single-node",
                            "no inter-node link is given: expert-parallel groups were limited "
                            "to one node; set cluster.inter_node to let EP span nodes"))
    uses_ep = (m.colocated is not None and m.colocated.expert_parallel > 1) or (
        m.disaggregated is not None and m.disaggregated.allocation is not None
        and max(m.disaggregated.allocation.prefill_expert_parallel,
                m.disaggregated.allocation.decode_expert_parallel) > 1)
    if uses_ep:
        mtp = ("" if sc.engine.speculative is not None else
               "multi-token prediction (speculative decoding raises decode tokens per step), ")
        out.append(Advisory(
            "ep-left-out",
            f"expert-parallel plans leave out {mtp}KV-cache hits on disk (prefill work saved) "
            "and dynamic expert imbalance beyond the fixed EPLB factor; see docs/model.md §10"))
    return out


def advisories(sc: Scenario, d: Decision) -> tuple[Advisory, ...]:
    """The warnings of a decision: the MoE model's, then — for a disaggregate verdict or a
    declared disaggregated deployment — disaggregated serving's."""
    m = d.model
    out = _moe_advisories(sc, m)
    disaggregated = d.verdict == "disaggregate"
    dep = sc.deployment
    relevant = disaggregated or (dep is not None and dep.mode == "disaggregated")
    if not relevant or m.disaggregated is None:
        return tuple(out)
    plan = m.disaggregated
    out += _engine_advisories(sc, m)
    for rule in d.overridden:
        if rule != "gain":
            out.append(Advisory(
                "precondition-overridden",
                f"{rule} fails, and the recommendation sets it aside: disaggregation is the "
                "only plan that meets the SLOs at the offered rate; see the precondition"))
    kv = plan.kv_transfer
    if kv is not None and kv.link_id.startswith("nvlink"):
        out.append(Advisory("kv-over-tcp",
                            "KV is planned over NVLink, but a UCX-based transfer (NIXL, "
                            "TensorRT-LLM's UCX transceiver) without an RDMA NIC falls back to "
                            "TCP through host memory even on one node; check the transfer "
                            "backend really uses NVLink"))
    if d.rounding_loss is not None and d.rounding_loss > sc.policy.max_rounding_loss:
        still = ("the gain still clears the threshold, but " if disaggregated else "")
        out.append(Advisory("rounding-loss",
                            f"whole instances lose {n.pct(d.rounding_loss)} of the ideal split's "
                            f"goodput (above policy.max_rounding_loss "
                            f"{n.pct(sc.policy.max_rounding_loss)}); {still}a few GPUs more or "
                            "fewer may split more cleanly"))
    if plan.allocation is not None and plan.allocation.prefill_instances < 2:
        out.append(Advisory("no-prefill-fallback",
                            "a single prefill instance: when it fails every request stalls; "
                            "keep a colocated fallback path"))
    else:
        out.append(Advisory("no-prefill-fallback",
                            "if the prefill pool fails, decode instances starve; plan a "
                            "fallback (colocated serving) and alert on prefill queue depth"))
    if len(sc.phases) > 1 and not sc.autoscaling:
        out.append(Advisory("static-ratio",
                            f"a static P:D ratio under a shifting mix loses "
                            f"{n.pct(m.static_mix_loss)} against per-phase re-allocation; "
                            "enable autoscaling with damping"))
    return tuple(out)


def colocated_shape(c: ColocatedPlan) -> str:
    """``TP4``, ``TP8×PP2``, ``EP32·DPA``, ``EP8·TP8``: a colocated plan's instance shape."""
    if c.expert_parallel > 1:
        return f"EP{c.expert_parallel}" + ("·DPA" if c.dp_attention else f"·TP{c.tensor_parallel}")
    return f"TP{c.tensor_parallel}" + (f"×PP{c.pipeline_stages}" if c.pipeline_stages > 1 else "")


def _budget(c: ColocatedPlan) -> str:
    return (f"token budget {n.count(c.chunk_tokens)}" if c.chunked and c.chunk_tokens
            else "whole-prompt prefill")


def measure_next(sc: Scenario, d: Decision) -> tuple[str, ...]:
    """What to measure to confirm the recommendation: its latencies first, then the input
    that decided it."""
    out: list[str] = []
    pct = f"p{n.num(sc.slo.percentile)}"
    m = d.model
    phase = d.phase(d.binding_phase)
    c = phase.unchunked if d.recommended == "unchunked" else phase.colocated
    dis = phase.disaggregated
    colocated_line = None
    if c is not None:
        slo = f" vs the {n.ms(sc.slo.tpot_ms)} SLO" if sc.slo.tpot_ms else ""
        tpot = n.ms(c.tpot_ms) if c.tpot_ms is not None else "overloaded"
        how = "chunked prefill" if c.chunked else "whole-prompt prefill"
        colocated_line = (f"{pct} TPOT under {how} ({_budget(c)}, {colocated_shape(c)}) at "
                          f"{n.rps(c.rate_rps)}: the model predicts {tpot}{slo}")
    if d.verdict == "disaggregate" and dis is not None:
        if dis.ttft_ms is not None and dis.kv_transfer is not None:
            kv = dis.kv_transfer
            prefill_ms = dis.ttft_ms - kv.transfer_ms - kv.second_hop_ms
            hop = f", router hop {n.ms(kv.second_hop_ms)}" if kv.second_hop_ms > 0 else ""
            out.append(f"prefill share of TTFT: the model predicts {n.ms(prefill_ms)} of "
                       f"prefill and queueing in a {pct} TTFT of {n.ms(dis.ttft_ms)} "
                       f"(KV transfer {n.ms(kv.transfer_ms)}{hop})")
        if dis.kv_transfer is not None:
            kv = dis.kv_transfer
            k = max(round(kv.concurrent_transfers), 1)
            out.append(f"KV transfer reliability at about {n.counted(k, 'concurrent transfer')} "
                       f"of {n.megabytes(kv.bytes_per_request_mean)} "
                       f"({n.pct(kv.utilization)} of {kv.link_id})")
        if colocated_line is not None:
            out.append("the baseline the gain is measured against — " + colocated_line)
        return tuple(out)
    if colocated_line is not None:
        out.append(colocated_line)
    if c is not None and sc.slo.ttft_ms:
        ttft = n.ms(c.ttft_ms) if c.ttft_ms is not None else "overloaded"
        how = "chunked prefill" if c.chunked else "whole-prompt prefill"
        out.append(f"{pct} TTFT under {how} at {n.rps(c.rate_rps)}: the model predicts {ttft} "
                   f"vs the {n.ms(sc.slo.ttft_ms)} SLO")
    if d.deciding_rule == "kv-bandwidth" and m.disaggregated is not None and (
            m.disaggregated.kv_transfer is not None):
        kv = m.disaggregated.kv_transfer
        out.append(f"the KV bandwidth really available from a prefill GPU over {kv.link_id}: "
                   f"the model assumes {n.gb_per_s(kv.link_bytes_per_s)} usable from the "
                   "prefill GPUs; more would change the verdict")
    elif d.deciding_rule == "traffic-mix":
        if len(sc.phases) == 1:
            out.append("how far the mean prompt and output lengths drift over a week: the "
                       f"verdict assumes ±{n.pct(sc.policy.assumed_mix_drift)} "
                       "(policy.assumed_mix_drift)")
        else:
            out.append("the phases' real shares and mixes: a static split loses "
                       f"{n.pct(m.static_mix_loss)} across the declared ones")
    return tuple(out)


def binding_cause(sc: Scenario, m: ModelResult) -> str:
    """Why no plan meets the SLOs, as the cause that binds first: no shape fits the model,
    a latency target below what any shape reaches alone, or a rate beyond the GPUs."""
    if m.smallest_instance_gpus is None:
        why = m.excluded[-1].reason if m.excluded else "no instance shape fits"
        label = m.excluded[-1].label if m.excluded else ""
        return (f"the model does not fit any instance shape of {n.count(sc.cluster.gpus)} "
                f"{sc.cluster.gpu.id} {n.plural(sc.cluster.gpus, 'GPU')} (largest tried, "
                f"{label}: {why})")
    pct = f"p{n.num(sc.slo.percentile)}"
    if (sc.slo.tpot_ms is not None and m.tpot_floor_ms is not None
            and m.tpot_floor_ms > sc.slo.tpot_ms):
        return (f"no decode shape reaches the {n.ms(sc.slo.tpot_ms)} TPOT target even at "
                f"batch 1 (the fastest, {m.tpot_floor_shape}, takes {n.ms(m.tpot_floor_ms)} "
                "per token)")
    if (sc.slo.ttft_ms is not None and m.ttft_floor_ms is not None
            and m.ttft_floor_ms > sc.slo.ttft_ms):
        return (f"no shape prefills a {pct} prompt within the {n.ms(sc.slo.ttft_ms)} TTFT "
                f"target even alone (the fastest, {m.ttft_floor_shape}, takes "
                f"{n.ms(m.ttft_floor_ms)})")
    plans = (m.colocated, m.unchunked, m.disaggregated)
    best = max((p.max_goodput_rps for p in plans if p is not None), default=0.0)
    if best <= 0:
        parts = []
        for name, p in (("colocated", m.colocated), ("disaggregated", m.disaggregated)):
            if p is not None and p.best_tpot_ms is not None and sc.slo.tpot_ms is not None:
                parts.append(f"{name} {n.ms(p.best_tpot_ms)}")
        floor = f" (best {pct} TPOT at light load: {', '.join(parts)})" if parts else ""
        return (f"no plan meets the latency targets at any rate on {n.gpus(sc.cluster.gpus)}; "
                f"queueing and batching push the percentiles past them{floor}")
    # the plan closest to carrying the rate, in the phase that binds it
    _, plan = max(((m.colocated_headroom, m.colocated), (m.unchunked_headroom, m.unchunked),
                      (m.disaggregated_headroom, m.disaggregated)),
                     key=lambda hp: hp[0] if hp[1] is not None else -1.0)
    assert plan is not None
    where = ""
    if len(sc.phases) > 1:
        phase = min(m.phases, key=lambda p: _carried(p, plan) / p.rate_rps)
        where = f" in phase '{phase.name}'"
        carried, rate = _carried(phase, plan), phase.rate_rps
    else:
        carried, rate = plan.max_goodput_rps, sc.phases[0].rate_rps
    need = [k for k in (m.colocated_gpus_needed, m.unchunked_gpus_needed,
                        m.disaggregated_gpus_needed) if k is not None]
    more = f"; about {n.gpus(min(need))} would" if need else ""
    return (f"the rate is beyond the GPUs: the best plan carries {n.rps(carried)} within the "
            f"SLOs{where}, where the workload offers {n.rps(rate)}{more}")


def _carried(phase: PhaseResult, like: ColocatedPlan | DisaggregatedPlan) -> float:
    """Goodput in ``phase`` of the plan of the same kind as ``like`` (the phase's view)."""
    plan: ColocatedPlan | DisaggregatedPlan | None
    if isinstance(like, DisaggregatedPlan):
        plan = phase.static if phase.static is not None else phase.disaggregated
    else:
        plan = phase.colocated if like.chunked else phase.unchunked
    return plan.max_goodput_rps if plan is not None else 0.0
