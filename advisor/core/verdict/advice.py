"""What a report advises beyond the verdict: engine-specific warnings, what to measure next
and the binding cause when no plan meets the SLOs (#14).

Warnings name the failure modes of the workload's own engine (SGLang issues on SGLang only);
"measure next" follows the verdict (a colocated verdict is not asked to measure the KV path it
does not have) and adds the quantity that decided it when that quantity is an input the user
can measure. Every engine fact carries its public source.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.core.results import ModelResult
from advisor.core.scenario import Scenario

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
    """A failure mode of disaggregated serving worth knowing before adopting it (a report's
    ``warnings``)."""

    id: str
    message: str


def _pct(x: float) -> str:
    return f"{x * 100:.0f}%" if abs(x) >= 0.195 else f"{x * 100:.1f}%"


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
                    f"about {in_flight:,.0f} KV transfers in flight and {decode_conc:,.0f} "
                    f"concurrent decoding requests; ≥ {KV_CONCURRENCY_WARN} concurrent requests "
                    "have broken SGLang PD transfers (sgl-project/sglang#9266) — load-test the "
                    "transfer path at this concurrency"))
        out.append(Advisory(
            "prompt-limit",
            f"prompts up to {longest:,.0f} tokens: set the same maximum input length on prefill "
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
            f"prompts up to {longest:,.0f} tokens: TensorRT-LLM's disaggregated example sets "
            "cache_transceiver_config.max_num_tokens to "
            f"{TRTLLM_EXAMPLE_TRANSCEIVER_TOKENS:,} on the context and generation servers; "
            "size it for your prompts on both sides (TensorRT-LLM examples/disaggregated/"
            "README.md)"))
    return out


def advisories(sc: Scenario, m: ModelResult, disaggregated: bool,
               rounding_loss: float | None) -> tuple[Advisory, ...]:
    """Warnings for a disaggregated verdict or a declared disaggregated deployment."""
    dep = sc.deployment
    relevant = disaggregated or (dep is not None and dep.mode == "disaggregated")
    if not relevant or m.disaggregated is None:
        return ()
    plan = m.disaggregated
    out = _engine_advisories(sc, m)
    kv = plan.kv_transfer
    if kv is not None and kv.link_id.startswith("nvlink"):
        out.append(Advisory("kv-over-tcp",
                            "KV is planned over NVLink, but a UCX-based transfer (NIXL, "
                            "TensorRT-LLM's UCX transceiver) without an RDMA NIC falls back to "
                            "TCP through host memory even on one node; check the transfer "
                            "backend really uses NVLink"))
    if rounding_loss is not None and rounding_loss > sc.policy.max_rounding_loss:
        still = ("the gain still clears the threshold, but " if disaggregated else "")
        out.append(Advisory("rounding-loss",
                            f"whole instances lose {_pct(rounding_loss)} of the ideal split's "
                            f"goodput (above policy.max_rounding_loss "
                            f"{_pct(sc.policy.max_rounding_loss)}); {still}a few GPUs more or "
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
                            f"{_pct(m.static_mix_loss)} against per-phase re-allocation; enable "
                            "autoscaling with damping"))
    return tuple(out)


def measure_next(sc: Scenario, m: ModelResult, disaggregated: bool,
                 deciding_rule: str) -> tuple[str, ...]:
    """What to measure to confirm the verdict: the recommended architecture's latencies
    first, then the input that decided it."""
    out: list[str] = []
    pct = f"p{sc.slo.percentile:g}"
    c, d = m.colocated, m.disaggregated
    colocated_line = None
    if c is not None:
        slo = f" vs the {sc.slo.tpot_ms:g} ms SLO" if sc.slo.tpot_ms else ""
        tpot = f"{c.tpot_ms:.1f} ms" if c.tpot_ms is not None else "overloaded"
        shape = f"TP{c.tensor_parallel}"
        if c.expert_parallel > 1:  # #17: the EP shape, not its attention TP
            shape = f"EP{c.expert_parallel}" + ("·DPA" if c.dp_attention
                                                else f"·TP{c.tensor_parallel}")
        colocated_line = (f"{pct} TPOT under chunked prefill (token budget {c.chunk_tokens}, "
                          f"{shape}) at {c.rate_rps:g} req/s: the model "
                          f"predicts {tpot}{slo}")
    if disaggregated and d is not None:
        if d.ttft_ms is not None and d.kv_transfer is not None:
            kv = d.kv_transfer
            prefill_ms = d.ttft_ms - kv.transfer_ms - kv.second_hop_ms
            hop = f", router hop {kv.second_hop_ms:.1f} ms" if kv.second_hop_ms > 0 else ""
            out.append(f"prefill share of TTFT: the model predicts {prefill_ms:.0f} ms of "
                       f"prefill and queueing in a {pct} TTFT of {d.ttft_ms:.0f} ms "
                       f"(KV transfer {kv.transfer_ms:.1f} ms{hop})")
        if d.kv_transfer is not None:
            kv = d.kv_transfer
            n = max(round(kv.concurrent_transfers), 1)
            out.append(f"KV transfer reliability at about {n} concurrent "
                       f"transfer{'s' if n != 1 else ''} of "
                       f"{kv.bytes_per_request_mean / 1e6:,.0f} MB "
                       f"({_pct(kv.utilization)} of {kv.link_id})")
        if colocated_line is not None:
            out.append("the baseline the gain is measured against — " + colocated_line)
        return tuple(out)
    if colocated_line is not None:
        out.append(colocated_line)
    if c is not None and sc.slo.ttft_ms:
        ttft = f"{c.ttft_ms:.0f} ms" if c.ttft_ms is not None else "overloaded"
        out.append(f"{pct} TTFT under chunked prefill at {c.rate_rps:g} req/s: the model "
                   f"predicts {ttft} vs the {sc.slo.ttft_ms:g} ms SLO")
    if deciding_rule == "kv-bandwidth" and d is not None and d.kv_transfer is not None:
        kv = d.kv_transfer
        out.append(f"the KV bandwidth really available from a prefill GPU over {kv.link_id}: "
                   f"the model assumes {kv.link_bytes_per_s / 1e9:,.1f} GB/s usable from the "
                   "prefill GPUs; more would change the verdict")
    elif deciding_rule == "traffic-mix":
        if len(sc.phases) == 1:
            out.append("how far the mean prompt and output lengths drift over a week: the "
                       f"verdict assumes ±{_pct(sc.policy.assumed_mix_drift)} "
                       "(policy.assumed_mix_drift)")
        else:
            out.append("the phases' real shares and mixes: a static split loses "
                       f"{_pct(m.static_mix_loss)} across the declared ones")
    return tuple(out)


def binding_cause(sc: Scenario, m: ModelResult) -> str:
    """Why no plan meets the SLOs, as the cause that binds first: no shape fits the model,
    a latency target below what any shape reaches alone, or a rate beyond the GPUs."""
    if m.smallest_instance_gpus is None:
        why = m.excluded[-1].reason if m.excluded else "no instance shape fits"
        label = m.excluded[-1].label if m.excluded else ""
        n = sc.cluster.gpus
        return (f"the model does not fit any instance shape of {n:,} {sc.cluster.gpu.id} "
                f"GPU{'s' if n != 1 else ''} (largest tried, {label}: {why})")
    pct = f"p{sc.slo.percentile:g}"
    if (sc.slo.tpot_ms is not None and m.tpot_floor_ms is not None
            and m.tpot_floor_ms > sc.slo.tpot_ms):
        return (f"no decode shape reaches the {sc.slo.tpot_ms:g} ms TPOT target even at batch 1 "
                f"(the fastest, {m.tpot_floor_shape}, takes {m.tpot_floor_ms:.1f} ms per token)")
    if (sc.slo.ttft_ms is not None and m.ttft_floor_ms is not None
            and m.ttft_floor_ms > sc.slo.ttft_ms):
        return (f"no shape prefills a {pct} prompt within the {sc.slo.ttft_ms:g} ms TTFT target "
                f"even alone (the fastest, {m.ttft_floor_shape}, takes "
                f"{m.ttft_floor_ms:.0f} ms)")
    best = max((p.max_goodput_rps for p in (m.colocated, m.disaggregated) if p is not None),
               default=0.0)
    if best <= 0:
        parts = []
        for name, p in (("colocated", m.colocated), ("disaggregated", m.disaggregated)):
            if p is not None and p.best_tpot_ms is not None and sc.slo.tpot_ms is not None:
                parts.append(f"{name} {p.best_tpot_ms:.1f} ms")
        floor = f" (best {pct} TPOT at light load: {', '.join(parts)})" if parts else ""
        return (f"no plan meets the latency targets at any rate on {sc.cluster.gpus} GPUs; "
                f"queueing and batching push the percentiles past them{floor}")
    rate = max(ph.rate_rps for ph in sc.phases)
    need = [n for n in (m.colocated_gpus_needed, m.disaggregated_gpus_needed) if n is not None]
    more = f"; about {min(need):,} GPUs would" if need else ""
    return (f"the rate is beyond the GPUs: the best plan carries {best:,.1f} req/s within the "
            f"SLOs, the workload offers {rate:g} req/s{more}")
