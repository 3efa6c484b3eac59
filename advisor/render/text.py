"""Number and phrase formatting shared by the human-readable renderers.

Every function takes values straight from the JSON document (so ``None`` is common) and
returns short, deterministic text; nothing here depends on the locale or the terminal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.escaping import visible as visible
from advisor.escaping import visible_doc as visible_doc

DASH = "–"
"""Shown where a value does not exist."""


def num(x: float | None, digits: int = 3) -> str:
    """A number with thousands separators and about ``digits`` significant digits.

    Integers and numbers of at least ``10**(digits-1)`` show no decimals (``1,024``,
    ``181``); smaller ones keep ``digits`` significant digits (``18.1``, ``2.61``, ``0.524``).
    """
    if x is None:
        return DASH
    if (isinstance(x, int) and not isinstance(x, bool)) or float(x).is_integer():
        return f"{int(x):,}"
    ax = abs(x)
    if ax >= 10 ** (digits - 1):
        return f"{x:,.0f}"
    if ax == 0:
        return "0"
    if ax >= 1:
        return f"{x:.{digits - len(str(int(ax)))}f}"
    return f"{x:.{digits}g}"


def pct(x: float | None) -> str:
    """A fraction as a percentage: 0.046 → ``4.6%``, 0.34 → ``34%``."""
    if x is None:
        return DASH
    v = x * 100
    if abs(v) >= 9.95:
        return f"{v:.0f}%"
    if abs(v) >= 0.095 or v == 0:
        return f"{v:.1f}%"
    return f"{v:.2f}%"


def ms(x: float | None) -> str:
    """A latency in ms (``–`` when it does not exist)."""
    if x is None:
        return DASH
    if x >= 100:
        return f"{x:,.0f} ms"
    return f"{x:.1f} ms"


def rps(x: float | None) -> str:
    """A request rate."""
    return DASH if x is None else f"{num(x)} req/s"


def gb_per_s(x: float | None) -> str:
    """Bytes/s as GB/s."""
    return DASH if x is None else f"{num(x / 1e9)} GB/s"


def megabytes(x: float | None) -> str:
    """Bytes as MB."""
    return DASH if x is None else f"{num(x / 1e6)} MB"


def factor(x: float | None) -> str:
    """A multiplier: ``7.2×``."""
    return DASH if x is None else f"{x:.1f}×"


def latency(plan: Mapping[str, Any] | None, key: str) -> str:
    """A plan's percentile latency, ``overloaded`` when the plan cannot keep up, ``no split``
    for a disaggregated plan without one (too few GPUs, or no shape meets the SLOs)."""
    if plan is None:
        return DASH
    if "prefill_gpus" in plan and plan["prefill_gpus"] is None:
        return "no split"
    if plan.get("overloaded"):
        return "overloaded"
    return ms(plan.get(key))


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
                                   f"{num(c['decode_batch_per_gpu'])} decoding sequences per "
                                   f"GPU, all-to-all {pct(c['all_to_all_share'])} of a decode "
                                   f"step, {c['redundant_experts']} redundant experts"))
    else:
        lines.append(("colocated", f"{plan_shape(c)}: experts sharded with TP (no EP)"))
    if d and d.get("prefill_expert_parallel") is not None:
        lines.append(("prefill", f"{d['prefill_instances']} × {pool_shape(d, 'prefill')} in "
                                 f"whole EP groups, all-to-all "
                                 f"{pct(d['prefill_all_to_all_share'])} of a p95 prefill"))
        lines.append(("decode", f"{d['decode_instances']} × {pool_shape(d, 'decode')}, "
                                f"{num(d['decode_batch_per_gpu'])} sequences per GPU, "
                                f"all-to-all {pct(d['decode_all_to_all_share'])} of a step"))
    return lines


def verdict_title(verdict: str) -> str:
    """The verdict as a headline."""
    return {"chunked-prefill": "Chunked prefill on a colocated pool",
            "disaggregate": "Disaggregate prefill and decode"}.get(verdict, verdict)


def slo_text(slo: Mapping[str, Any]) -> str:
    """``TTFT ≤ 1000 ms, TPOT ≤ 50 ms at p95`` (or ``none`` — goodput is raw capacity)."""
    parts = []
    if slo.get("ttft_ms") is not None:
        parts.append(f"TTFT ≤ {num(slo['ttft_ms'])} ms")
    if slo.get("tpot_ms") is not None:
        parts.append(f"TPOT ≤ {num(slo['tpot_ms'])} ms")
    if not parts:
        return "none (goodput means raw capacity)"
    return ", ".join(parts) + f" at p{num(slo['percentile'])}"


def length_text(length: Mapping[str, Any]) -> str:
    """``1,000 mean / 2,500 p95`` tokens, or one number for a constant length."""
    mean, p95 = length.get("mean"), length.get("p95")
    if mean is None:
        return DASH
    if p95 is None or abs(p95 - mean) < 0.5:
        return f"{num(mean)}"
    return f"{num(mean)} mean / {num(p95)} p95"


def split_text(prefill_gpus: int | None, decode_gpus: int | None) -> str:
    """``896:128`` (prefill:decode GPUs)."""
    if prefill_gpus is None or decode_gpus is None:
        return DASH
    return f"{prefill_gpus}:{decode_gpus}"


def split_fragility(doc: Mapping[str, Any]) -> list[str]:
    """Lines on the chosen split's fragility: its goodput at the drift band's corners and of
    its neighbouring splits (empty without a split)."""
    f = doc.get("fragility")
    if not f:
        return []
    out = []
    for v in f["drifted"]:
        out.append(f"{v['label']}: {rps(v['goodput_rps'])} of the {rps(v['best_goodput_rps'])} "
                   f"a re-split reaches ({pct(v['loss'])} lost)")
    for v in f["neighbours"]:
        out.append(f"{v['label']} ({split_text(v['prefill_gpus'], v['decode_gpus'])}): "
                   f"{rps(v['goodput_rps'])} ({pct(v['loss'])} below the best split)")
    return out


def gains_line(doc: Mapping[str, Any]) -> str | None:
    """Integer and ideal gains and the rounding loss between them (None without a split)."""
    if doc.get("rounding_loss") is None:
        return None
    def said(g: float | None) -> str:
        if g is None:
            return "undefined"
        return f"a {pct(-g)} loss" if g < 0 else f"+{pct(g)}"

    gain, ideal = doc.get("disagg_gain"), doc.get("disagg_ideal_gain")
    if doc.get("disagg_gain_unbounded"):
        return None
    return (f"Gain over the best colocated pool: integer split {said(gain)}, ideal split "
            f"{said(ideal)}; whole instances lose {pct(doc['rounding_loss'])} of the ideal "
            "goodput.")


def precondition_values(p: Mapping[str, Any]) -> tuple[str, str]:
    """(measured, threshold) of a precondition in its unit."""
    if p.get("unit") == "fraction":
        return pct(p.get("measured")), pct(p.get("threshold"))
    unit = f" {p['unit']}" if p.get("unit") else ""
    return num(p.get("measured")) + unit, num(p.get("threshold")) + unit


def deployment_text(dep: Mapping[str, Any] | None) -> str:
    """One line describing the declared deployment."""
    if dep is None:
        return "not given (`check` needs a deployment: block)"
    chunk = "chunked prefill off"
    if dep.get("chunked_prefill"):
        chunk = (f"chunked prefill, {num(dep['chunk_tokens'])}-token budget"
                 if dep.get("chunk_tokens") else "chunked prefill, the engine's default budget")
    limits = "".join(f", {label} {value:g}" for label, value in (
        ("max_num_seqs", dep.get("max_num_seqs")), ("max_model_len", dep.get("max_model_len")),
        ("gpu_memory_utilization", dep.get("gpu_memory_utilization"))) if value is not None)
    if dep["mode"] == "colocated":
        tp = shape(dep.get("tensor_parallel") or 1, 1, dep.get("expert_parallel"), True)
        return f"colocated, {tp}, {chunk}{limits}"
    ptp: int | str | None = dep.get("prefill_tensor_parallel")
    dtp: int | str | None = dep.get("decode_tensor_parallel")
    if dep.get("prefill_expert_parallel"):
        ptp = f"EP{dep['prefill_expert_parallel']}·DPA"
    if dep.get("decode_expert_parallel"):
        dtp = f"EP{dep['decode_expert_parallel']}·DPA"
    return (f"disaggregated, {dep.get('prefill_gpus')} prefill GPUs"
            f"{f' ({_pool_shape(ptp)})' if ptp else ''} + {dep.get('decode_gpus')} decode GPUs"
            f"{f' ({_pool_shape(dtp)})' if dtp else ''}{limits}")


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
        f"{name.removesuffix('_s').replace('_', ' ')} {value * 1000:.3g} ms"
        if name.endswith("_s")
        else f"{name.replace('_', ' ')} {value:.4g}"
        for name, value in calibration["factors"].items())
    on = ", ".join(str(v) for v in (fitted.get("model"), fitted.get("engine"),
                                   fitted.get("gpu")) if v)
    if fitted.get("tensor_parallel"):
        on += f", TP{fitted['tensor_parallel']}"
    if fitted.get("precision"):
        on += f", {fitted['precision']}"
    files = len(fitted.get("files") or [])
    return (f"{calibration['file']}: {factors} (fitted on {on}; {files} benchmark "
            f"file{'s' * (files != 1)})")


def cluster_text(inputs: Mapping[str, Any]) -> str:
    """``8 × NVIDIA H100 SXM (1 node of 8)``."""
    cl = inputs["cluster"]
    nodes = cl["nodes"]
    return (f"{num(cl['gpus'])} × {cl['gpu']['name']} ({num(nodes)} node{'s' * (nodes != 1)} "
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
    pct = f"p{num(dep['percentile'])}"
    lat = ("overloaded" if dep["overloaded"] else
           f"{pct} TTFT {ms(dep['ttft_ms'])}, TPOT {ms(dep['tpot_ms'])}")
    return [*lines, f"Predicted: {lat} at {rps(dep['rate_rps'])}; carries "
                    f"{rps(dep['max_goodput_rps'])} within the SLOs."]


def input_rows(doc: Mapping[str, Any]) -> list[list[str]]:
    """The report's inputs as [label, text] rows (plain text; each renderer escapes them)."""
    inputs = doc["inputs"]
    model = inputs["model"]
    rows = [["model", f"{model['name']} ({model['id']}), {inputs['precision']}, "
                      f"{engine_text(inputs)}"],
            ["cluster", cluster_text(inputs)], ["links", links_text(inputs)]]
    for p in inputs["traffic"]:
        label = "traffic" if len(inputs["traffic"]) == 1 else f"phase {p['name']}"
        share = "" if len(inputs["traffic"]) == 1 else f"{pct(p['share'])} of the day, "
        rows.append([label, f"{share}{rps(p['rate_rps'])}, prompt "
                            f"{length_text(p['prompt_tokens'])}, output "
                            f"{length_text(p['output_tokens'])} tokens"])
    rows += [["SLO", slo_text(inputs["slo"])],
             ["autoscaling", "yes" if inputs["autoscaling"] else "no (static pools)"],
             ["router", router_text(inputs["router"])],
             ["deployment", deployment_text(inputs.get("deployment"))]]
    calibration = calibration_text(doc.get("calibration"))
    if calibration:
        rows.append(["calibration", calibration])
    return rows
