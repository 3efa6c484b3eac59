"""Phrases shared by the human-readable renderers: shapes, the workload's inputs, the
declared deployment, and escaping of user strings.

Every function takes values straight from the JSON document (so ``None`` is common) and
returns short, deterministic text; every number is written by :mod:`advisor.render.numbers`
(the one number style); nothing here depends on the locale or the terminal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.escaping import visible as visible
from advisor.escaping import visible_doc as visible_doc
from advisor.render import numbers as n

DASH = n.DASH
"""Shown where a value does not exist."""


def latency(plan: Mapping[str, Any] | None, key: str) -> str:
    """A plan's percentile latency, ``overloaded`` when the plan cannot keep up, ``no split``
    for a disaggregated plan without one (too few GPUs, or no shape meets the SLOs)."""
    if plan is None:
        return DASH
    if "prefill_gpus" in plan and plan["prefill_gpus"] is None:
        return "no split"
    if plan.get("overloaded"):
        return "overloaded"
    return n.ms(plan.get(key))


def shape(tp: int | None, pp: int | None = 1, ep: int | None = None,
          dp_attention: bool | None = None) -> str:
    """An instance shape: ``TP8``, ``TP8×PP2``, ``EP32·DPA`` (expert parallel, DP attention)
    or ``EP8·TP8`` (expert parallel, attention TP)."""
    if tp is None:
        return DASH
    if ep is not None and ep > 1:
        if dp_attention:
            return f"EP{ep}·DPA" + (f"×TP{tp}" if tp > 1 else "")
        return f"EP{ep}·TP{tp}"
    return f"TP{tp}" if not pp or pp == 1 else f"TP{tp}×PP{pp}"


def plan_shape(plan: Mapping[str, Any] | None) -> str:
    """The instance shape of a colocated plan's JSON (``TP8``, ``EP32·DPA``)."""
    if not plan:
        return DASH
    return shape(plan["tensor_parallel"], plan["pipeline_stages"], plan.get("expert_parallel"),
                 plan.get("dp_attention"))


def pool_shape(allocation: Mapping[str, Any] | None, pool: str) -> str:
    """The instance shape of one pool of an allocation's JSON (``pool`` prefill or decode)."""
    if not allocation:
        return DASH
    return shape(allocation[f"{pool}_tensor_parallel"], allocation[f"{pool}_pipeline_stages"],
                 allocation.get(f"{pool}_expert_parallel"),
                 allocation.get(f"{pool}_dp_attention"))


def expert_parallel_lines(doc: Mapping[str, Any]) -> list[tuple[str, str]] | None:
    """(label, text) lines on the plans' expert parallelism: shape, sequences per GPU and
    the all-to-all share of a step; None for dense models (no EP keys in the report)."""
    c, d = doc.get("colocated"), doc.get("disaggregated")
    if not c or "expert_parallel" not in c:
        return None
    lines = []
    if c["expert_parallel"] > 1:
        lines.append(("colocated", f"{c['instances']} × {plan_shape(c)}, "
                                   f"{n.num(c['decode_batch_per_gpu'])} decoding sequences per "
                                   f"GPU, all-to-all {n.pct(c['all_to_all_share'])} of a decode "
                                   f"step, {c['redundant_experts']} redundant experts"))
    else:
        lines.append(("colocated", f"{plan_shape(c)}: experts sharded with TP (no EP)"))
    if d and d.get("prefill_expert_parallel") is not None:
        lines.append(("prefill", f"{d['prefill_instances']} × {pool_shape(d, 'prefill')} in "
                                 f"whole EP groups, all-to-all "
                                 f"{n.pct(d['prefill_all_to_all_share'])} of a p95 prefill"))
        lines.append(("decode", f"{d['decode_instances']} × {pool_shape(d, 'decode')}, "
                                f"{n.num(d['decode_batch_per_gpu'])} sequences per GPU, "
                                f"all-to-all {n.pct(d['decode_all_to_all_share'])} of a step"))
    return lines


def verdict_title(verdict: str) -> str:
    """The verdict as a headline."""
    return {"chunked-prefill": "Chunked prefill on a colocated pool",
            "disaggregate": "Disaggregate prefill and decode"}.get(verdict, verdict)


def slo_text(slo: Mapping[str, Any]) -> str:
    """``TTFT ≤ 1,000 ms, TPOT ≤ 50 ms at p95`` (or ``none`` — goodput is raw capacity)."""
    parts = []
    if slo.get("ttft_ms") is not None:
        parts.append(f"TTFT ≤ {n.ms(slo['ttft_ms'])}")
    if slo.get("tpot_ms") is not None:
        parts.append(f"TPOT ≤ {n.ms(slo['tpot_ms'])}")
    if not parts:
        return "none (goodput means raw capacity)"
    return ", ".join(parts) + f" at p{n.num(slo['percentile'])}"


def length_text(length: Mapping[str, Any]) -> str:
    """``1,000 mean / 2,500 p95`` tokens, or one number for a constant length."""
    mean, p95 = length.get("mean"), length.get("p95")
    if mean is None:
        return DASH
    if p95 is None or abs(p95 - mean) < 0.5:
        return f"{n.num(mean)}"
    return f"{n.num(mean)} mean / {n.num(p95)} p95"


def deployment_text(dep: Mapping[str, Any] | None) -> str:
    """One line describing the declared deployment."""
    if dep is None:
        return "not given (`check` needs a deployment: block)"
    chunk = "chunked prefill off"
    if dep.get("chunked_prefill"):
        chunk = (f"chunked prefill, {n.with_article(n.count(dep['chunk_tokens']))}-token budget"
                 if dep.get("chunk_tokens") else "chunked prefill, the engine's default budget")
    limits = "".join(f", {label} {text}" for label, value, text in (
        ("max_num_seqs", dep.get("max_num_seqs"), n.count(dep.get("max_num_seqs"))),
        ("max_model_len", dep.get("max_model_len"), n.count(dep.get("max_model_len"))),
        ("gpu_memory_utilization", dep.get("gpu_memory_utilization"),
         str(dep.get("gpu_memory_utilization")))) if value is not None)
    if dep["mode"] == "colocated":
        tp = shape(dep.get("tensor_parallel") or 1, 1, dep.get("expert_parallel"), True)
        return f"colocated, {tp}, {chunk}{limits}"
    ptp: int | str | None = dep.get("prefill_tensor_parallel")
    dtp: int | str | None = dep.get("decode_tensor_parallel")
    if dep.get("prefill_expert_parallel"):
        ptp = f"EP{dep['prefill_expert_parallel']}·DPA"
    if dep.get("decode_expert_parallel"):
        dtp = f"EP{dep['decode_expert_parallel']}·DPA"
    return (f"disaggregated, {n.count(dep.get('prefill_gpus'))} prefill GPUs"
            f"{f' ({_pool_shape(ptp)})' if ptp else ''} + {n.count(dep.get('decode_gpus'))} "
            f"decode GPUs{f' ({_pool_shape(dtp)})' if dtp else ''}{limits}")


ROUTER_TEXT = {"least-loaded": "least-loaded (join the shortest queue)",
               "round-robin": "round-robin", "random": "random (uniform)",
               "power-of-two": "power-of-two (the less loaded of two random instances)"}


def router_text(router: str) -> str:
    """The router policy the queues assumed, on every pool."""
    return f"{ROUTER_TEXT.get(router, router)} on every pool"


def _pool_shape(value: int | str) -> str:
    """A declared pool's shape: ``TP4`` from a TP degree, or an EP label as given."""
    return value if isinstance(value, str) else shape(value)


def engine_text(inputs: Mapping[str, Any]) -> str:
    """``vLLM V1 engine (vllm, >=0.8)``: the engine profile the numbers use."""
    profile = inputs.get("engine_profile")
    if not profile:
        return str(inputs["engine"])
    return f"{profile['name']} ({profile['id']}, {profile['versions']})"


def calibration_text(calibration: Mapping[str, Any] | None) -> str | None:
    """``cal.yaml: decode bandwidth efficiency 0.71, ... (fitted on llama-3.1-8b, vllm,
    h100-sxm, TP1, bf16; 2 benchmark files)``; None when no overlay is active."""
    if not calibration:
        return None
    fitted = calibration["fitted_on"]
    factors = ", ".join(
        f"{name.removesuffix('_s').replace('_', ' ')} {n.ms(value * 1000)}"
        if name.endswith("_s")
        else f"{name.replace('_', ' ')} {n.num(value, 4)}"
        for name, value in calibration["factors"].items())
    on = ", ".join(str(v) for v in (fitted.get("model"), fitted.get("engine"),
                                   fitted.get("gpu")) if v)
    if fitted.get("tensor_parallel"):
        on += f", TP{fitted['tensor_parallel']}"
    if fitted.get("precision"):
        on += f", {fitted['precision']}"
    files = len(fitted.get("files") or [])
    return (f"{calibration['file']}: {factors} (fitted on {on}; "
            f"{n.counted(files, 'benchmark file')})")


def cluster_text(inputs: Mapping[str, Any]) -> str:
    """``8 × NVIDIA H100 SXM (1 node of 8)``."""
    cl = inputs["cluster"]
    nodes = cl["nodes"]
    return (f"{n.count(cl['gpus'])} × {cl['gpu']['name']} ({n.counted(nodes, 'node')} "
            f"of {cl['gpus_per_node']})")


def links_text(inputs: Mapping[str, Any]) -> str:
    """``nvlink4 in a node, ib-ndr-400 between nodes``."""
    cl = inputs["cluster"]
    text = f"{cl['intra_node']['id']} in a node"
    if cl.get("inter_node"):
        text += f", {cl['inter_node']['id']} per GPU between nodes"
    return text


def deployed_sentences(dep: Mapping[str, Any]) -> list[str]:
    """The declared deployment in plain sentences (each renderer escapes them): what it is,
    then why it cannot run or what the model predicts for it."""
    lines = [f"{deployment_text(dep)}."]
    if not dep["feasible"]:
        return [*lines, f"It cannot run: {dep['reason']}"]
    pct = f"p{n.num(dep['percentile'])}"
    lat = ("overloaded" if dep["overloaded"] else
           f"{pct} TTFT {n.ms(dep['ttft_ms'])}, TPOT {n.ms(dep['tpot_ms'])}")
    phase = f" (phase {dep['phase']})" if dep.get("phase") not in (None, "all") else ""
    return [*lines, f"Predicted: {lat} at {n.rps(dep['rate_rps'])}{phase}; carries "
                    f"{n.rps(dep['max_goodput_rps'])} within the SLOs."]


def input_rows(doc: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The report's inputs as (label, text) rows (plain text; each renderer escapes them)."""
    inputs = doc["inputs"]
    model = inputs["model"]
    rows = [("model", f"{model['name']} ({model['id']}), {inputs['precision']}, "
                      f"{engine_text(inputs)}"),
            ("cluster", cluster_text(inputs)), ("links", links_text(inputs))]
    for p in inputs["traffic"]:
        one = len(inputs["traffic"]) == 1
        label = "traffic" if one else f"phase {p['name']}"
        share = "" if one else f"{n.pct(p['share'])} of the day, "
        rate = n.rps(p["rate_rps"])
        loop = p.get("closed_loop")
        if loop is not None:
            rate = (f"{n.counted(loop['concurrency'], 'concurrent client')} ≙ {rate} (Little's "
                    f"law on the {loop['plan']} plan's median TTFT {n.ms(loop['ttft_ms_p50'])}, "
                    f"TPOT {n.ms(loop['tpot_ms_p50'])}: {n.seconds(loop['e2e_s'])} per "
                    "request)")
        batch = p.get("finite_batch")
        if batch is not None:
            rate = (f"a batch of {n.counted(batch['requests'], 'request')} at once ≙ {rate} ("
                    + "; ".join(f"{b['plan']}: makespan {n.seconds(b['makespan_s'])}, TTFT "
                                f"p50/p95 {n.ms(b['ttft_ms']['p50'])}/"
                                f"{n.ms(b['ttft_ms']['p95'])}, TPOT p50 "
                                f"{n.ms(b['tpot_ms']['p50'])}" for b in batch["plans"]) + ")")
        cached = p.get("prefix_cache_hit_rate") or 0.0
        hits = f", {n.pct(cached)} of prompt tokens from the prefix cache" if cached else ""
        rows.append((label, f"{share}{rate}, prompt {length_text(p['prompt_tokens'])}, output "
                            f"{length_text(p['output_tokens'])} tokens{hits}"))
    rows += [("SLO", slo_text(inputs["slo"])),
             ("autoscaling", "yes" if inputs["autoscaling"] else "no (static pools)"),
             ("router", router_text(inputs["router"])),
             ("deployment", deployment_text(inputs.get("deployment")))]
    calibration = calibration_text(doc.get("calibration"))
    if calibration:
        rows.append(("calibration", calibration))
    return rows


def check_totals(doc: Mapping[str, Any]) -> str:
    """A check run's totals, said once: ``4 files: 3 passed, 1 failed, 0 could not be
    evaluated``."""
    c = doc["counts"]
    return (f"{n.counted(c['files'], 'file')}: {n.count(c['passed'])} passed, "
            f"{n.count(c['failed'])} failed, {n.count(c['errors'])} could not be evaluated")
