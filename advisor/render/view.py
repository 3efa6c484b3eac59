"""The recommendation as sections of plain blocks: what every human format shows, in one order.

:func:`sections` turns a recommendation document into :class:`Section` s — the verdict, the
plans of the binding phase side by side, right-sizing, cost, the P:D splits, fragility, the KV
transfer, interference, the preconditions, the verdict boundaries, the phases, the declared
deployment, warnings, what to measure next, inputs — each made of a few kinds of block
(paragraph, table, label/value rows, list, precondition checks). The table, markdown and HTML
renderers only lay the blocks out, so they show the same sections with the same numbers in
the same words (``tests/render/test_report_properties.py``). Every number is written by
:mod:`advisor.render.numbers`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from advisor.render import numbers as n
from advisor.render import text as t

if TYPE_CHECKING:
    from advisor.render.document import (
        Colocated,
        Disaggregated,
        PhasePlans,
        Precondition,
        Recommendation,
    )
    from advisor.render.document_fields import PlanKind


class Mark(NamedTuple):
    """A table cell that is a pass (✓), a fail (✗) or not applicable (``n/a``)."""

    passed: bool | None


Cell = str | Mark


class Para(NamedTuple):
    """A paragraph; ``tone`` ``note`` (secondary), ``bad``, ``warn`` or ``strong``."""

    text: str
    tone: str = ""


class Grid(NamedTuple):
    """A table: a header row and rows of cells; columns in ``right`` are numbers."""

    headers: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    right: tuple[int, ...] = ()


class Pairs(NamedTuple):
    """Label / value rows."""

    rows: tuple[tuple[str, str], ...]


class Items(NamedTuple):
    """A list; ``marker`` ``bullet``, ``arrow``, ``dot``, ``bad`` or ``warn``."""

    items: tuple[str, ...]
    marker: str = "bullet"


class Check(NamedTuple):
    """One precondition: its outcome, id, measured value, limit, question and explanation."""

    mark: Mark
    id: str
    measured: str
    limit: str
    question: str
    explanation: str


class Checks(NamedTuple):
    rows: tuple[Check, ...]


Block = Para | Grid | Pairs | Items | Checks


class Section(NamedTuple):
    """One section of the report."""

    id: str
    title: str
    blocks: tuple[Block, ...]
    details: bool = False
    """A section of numbers behind the verdict (markdown folds it away)."""


PLAN_LABELS = {"colocated": "colocated (chunked)", "disaggregated": "disaggregated",
               "unchunked": "colocated (whole prompts)"}
PLAN_ORDER: tuple[PlanKind, ...] = ("colocated", "disaggregated", "unchunked")
"""The plans' column order in every table."""


# --------------------------------------------------------------------------- helpers
def title(doc: Recommendation) -> str:
    """The recommendation as a headline (the colocated one says whether it chunks)."""
    if doc["decision"]["recommended"] == "unchunked":
        return "Colocated pool, whole-prompt prefill (chunked prefill off)"
    return t.verdict_title(doc["verdict"])


def _pct_label(doc: Recommendation) -> str:
    return f"p{n.num(doc['inputs']['slo']['percentile'])}"


def _multi(doc: Recommendation) -> bool:
    return len(doc["phases"]) > 1


def _phase(doc: Recommendation, name: str) -> PhasePlans:
    return next(p for p in doc["decision"]["phases"] if p["name"] == name)


def _plan(p: PhasePlans, kind: str) -> Colocated | Disaggregated | None:
    if kind == "colocated":
        return p["colocated"]
    return p["unchunked"] if kind == "unchunked" else p["disaggregated"]


def _shape(plan: Colocated | Disaggregated | None) -> str:
    if plan is None:
        return n.DASH
    if "prefill_tensor_parallel" in plan:
        if plan.get("prefill_gpus") is None:
            return "no split"
        return f"{t.pool_shape(plan, 'prefill')} / {t.pool_shape(plan, 'decode')}"
    return t.plan_shape(plan)


def _latency(plan: Colocated | Disaggregated | None, key: str) -> str:
    return t.latency(plan, key)


def gain_note(doc: Recommendation) -> str:
    """Disaggregation's gain over the baseline, in the words of the plans table."""
    need = n.pct(doc["policy"]["min_disagg_gain"])
    how = ("whole-prompt prefill" if doc["decision"]["baseline"] == "unchunked"
           else "chunked prefill")
    rule = doc["deciding_rule"]
    gain = doc["disagg_gain"]
    if rule == "not-applicable":
        return ("Disaggregation is not applicable: the cluster cannot hold one prefill and one "
                "decode instance.")
    if rule == "no-split":
        return "Disaggregation: no prefill/decode split meets the SLOs."
    if doc["disagg_gain_unbounded"]:
        return "Disaggregation gain: unbounded (colocated carries nothing within the SLOs)."
    if gain is None:
        return "Disaggregation gain: undefined (no plan carries goodput)."
    what = "its static split" if doc["static_allocation"] and not doc["inputs"]["autoscaling"] \
        and _multi(doc) else "its best integer split"
    return (f"Disaggregation's gain over the best colocated plan ({how}), {what}: "
            f"{n.signed_pct(gain)} (it must clear +{need}).")


# --------------------------------------------------------------------------- sections
def _verdict(doc: Recommendation) -> Section:
    blocks: list[Block] = [Para(doc["summary"], "strong")]
    if doc["decision"].get("knife_edges"):
        blocks.append(Para(knife_edge_text(doc), "warn"))
    blocks += [Para(""), Para("Why", "strong"), Items(tuple(doc["reasons"]))]
    return Section("verdict", title(doc), tuple(blocks))


def knife_edge_text(doc: Recommendation) -> str:
    """``Knife edge: the verdict flips to chunked-prefill at 15 GPUs (−6.2%) …``."""
    parts = []
    for k in doc["decision"].get("knife_edges", []):
        if k["key"] == "cluster.gpus":
            where = f"at {n.gpus(round(k['flips_at']))}"
        else:
            where = (f"{'above' if k['flips_at'] > k['current'] else 'below'} "
                     f"{n.rps(k['flips_at'])}")
        parts.append(f"to {k['to']} {where} ({n.signed_pct(k['change'])})")
    band = n.pct(0.1)
    return (f"Knife edge: the verdict flips within ±{band} of the GPU count or the rate — "
            + "; ".join(parts) + ". Treat it as a close call and measure before committing.")


def _slo_unmet(doc: Recommendation) -> Section:
    pct = _pct_label(doc)
    ph = _phase(doc, doc["decision"]["binding_phase"])
    sizing = {s["plan"]: s for s in doc["decision"]["sizing"]}
    headers = ("", *(PLAN_LABELS[k] for k in PLAN_ORDER))
    plans = [_plan(ph, k) for k in PLAN_ORDER]
    rows: list[tuple[Cell, ...]] = [
        ("offered rate", *(n.rps(ph["rate_rps"]) for _ in PLAN_ORDER)),
        ("carries within the SLOs", *(n.rps(p["max_goodput_rps"]) if p else n.DASH
                                      for p in plans)),
        (f"{pct} TTFT at the offered rate", *(_latency(p, "ttft_ms") for p in plans)),
        (f"{pct} TPOT at the offered rate", *(_latency(p, "tpot_ms") for p in plans)),
        (f"best achievable {pct} TTFT (light load)",
         *(n.ms(p["best_ttft_ms"]) if p else n.DASH for p in plans)),
        (f"best achievable {pct} TPOT (light load)",
         *(n.ms(p["best_tpot_ms"]) if p else n.DASH for p in plans)),
        ("GPUs it would take", *(n.count(sizing[k]["gpus_needed"]) for k in PLAN_ORDER)),
    ]
    where = f" (phase {ph['name']}, the one that binds)" if _multi(doc) else ""
    blocks: list[Block] = [Grid(headers, tuple(rows), (1, 2, 3)),
                           Para(f"Figures at the offered rate{where}. The verdict is the better "
                                "architecture for these GPUs, not a plan that meets the SLOs.",
                                "note")]
    if not any(plans) and doc["excluded"]:
        blocks.insert(0, Para("No instance shape fits: " + "; ".join(
            f"{e['instance']}: {e['reason']}" for e in doc["excluded"]) + "."))
    return Section("slo-unmet", "No plan meets the SLOs", tuple(blocks))


def _inputs(doc: Recommendation) -> Section:
    return Section("inputs", "Inputs", (Pairs(tuple(t.input_rows(doc))),), details=True)


def _plans(doc: Recommendation) -> Section:
    d = doc["decision"]
    ph = _phase(doc, d["binding_phase"])
    pct = _pct_label(doc)
    plans = [_plan(ph, k) for k in PLAN_ORDER]

    def cell(plan: Colocated | Disaggregated | None, text: str) -> str:
        return n.DASH if plan is None else text

    c, dis, u = ph["colocated"], ph["disaggregated"], ph["unchunked"]

    def coloc(plan: Colocated | None, key: str) -> str:
        return n.DASH if plan is None else n.count(plan[key])  # type: ignore[literal-required]

    def split(key: str) -> str:
        if dis is None:
            return n.DASH
        return (f"{n.count(dis[f'prefill_{key}'])} + "  # type: ignore[literal-required]
                f"{n.count(dis[f'decode_{key}'])}")  # type: ignore[literal-required]

    def budget(plan: Colocated | None) -> str:
        if plan is None:
            return n.DASH
        return n.count(plan["chunk_tokens"]) if plan["chunked"] else "whole prompt"

    rows: list[tuple[Cell, ...]] = [
        ("recommended", *("yes" if k == d["recommended"] else "" for k in PLAN_ORDER)),
        ("offered rate", *(cell(p, n.rps(ph["rate_rps"])) for p in plans)),
        ("TP (prefill / decode)", *(_shape(p) for p in plans)),
        ("instances", coloc(c, "instances"), split("instances"), coloc(u, "instances")),
        ("GPUs used", coloc(c, "gpus"), split("gpus"), coloc(u, "gpus")),
        ("token budget", budget(c), n.DASH, budget(u)),
        ("goodput", *(cell(p, n.rps(p["max_goodput_rps"] if p else None)) for p in plans)),
        (f"{pct} TTFT", *(_latency(p, "ttft_ms") for p in plans)),
        (f"{pct} TPOT", *(_latency(p, "tpot_ms") for p in plans)),
        ("output tokens/s/GPU", *(cell(p, n.num(p["output_tokens_per_s_per_gpu"] if p else None))
                                  for p in plans)),
        ("meets the SLOs", *(Mark(p["meets_slo"]) if p else Mark(None) for p in plans)),
    ]
    where = (f" in phase {ph['name']}, the one binding the recommended plan (every phase: "
             "Phases)" if _multi(doc) else "")
    note = (f"Latencies at the offered rate{where}; goodput is the largest rate meeting the "
            f"SLOs. {gain_note(doc)}")
    title_ = "Plans at the offered rate" + (f" — phase {ph['name']}" if _multi(doc) else "")
    return Section("plans", title_, (Grid(("", *(PLAN_LABELS[k] for k in PLAN_ORDER)),
                                          tuple(rows), (1, 2, 3)), Para(note, "note")))


def _right_sizing(doc: Recommendation) -> Section:
    d = doc["decision"]
    sizing = {s["plan"]: s for s in d["sizing"]}
    gpus_total = doc["inputs"]["cluster"]["gpus"]
    rows: list[tuple[Cell, ...]] = []
    for kind in PLAN_ORDER:
        s = sizing[kind]
        ph = _phase(doc, s["binding_phase"])
        plan = _plan(ph, kind)
        phase = (ph["name"],) if _multi(doc) else ()
        if not s["exists"] or plan is None:
            rows.append((PLAN_LABELS[kind], *phase, n.DASH, n.DASH, n.DASH, n.DASH, "no plan"))
            continue
        need = s["gpus_needed"]
        if s["over_provisioned"]:
            note = "over-provisioned"
        elif s["headroom"] < 1:
            note = "short" if need is not None else "short at any size"
        else:
            note = "carries it"
        rows.append((PLAN_LABELS[kind], *phase, n.rps(plan["max_goodput_rps"]),
                     n.rps(ph["rate_rps"]), n.factor(s["headroom"]), n.count(need), note))
    rec = sizing[d["recommended"]]
    if _multi(doc):  # each plan in the phase that binds it
        grid = Grid(("plan", "binding phase", "carries", "offered", "headroom", "GPUs needed",
                     ""), tuple(rows), (2, 3, 4, 5))
    else:
        grid = Grid(("plan", "carries", "offered", "headroom", "GPUs needed", ""), tuple(rows),
                    (1, 2, 3, 4))
    blocks: list[Block] = [grid, Para(
        f"Every plan is given all {n.gpus(gpus_total)}; GPUs needed: the fewest that carry "
        "every phase's rate within the SLOs; over-provisioned: carrying at least twice the "
        "offered rate.", "note")]
    ph = _phase(doc, rec["binding_phase"])
    plan = _plan(ph, d["recommended"])
    if rec["exists"] and plan is not None:
        where = f" in phase {ph['name']}" if _multi(doc) else ""
        text = (f"The recommended plan carries {n.rps(plan['max_goodput_rps'])} on "
                f"{n.gpus(gpus_total)} against the {n.rps(ph['rate_rps'])} offered{where}: "
                f"{n.factor(rec['headroom'])} the rate")
        need = rec["gpus_needed"]
        if rec["over_provisioned"] and need is not None:
            text += f" — over-provisioned; {n.gpus(need)} would carry it"
        elif rec["headroom"] < 1 and need is not None:
            text += f" — short; about {n.gpus(need)} would carry it"
        blocks.append(Para(text + ".", "strong" if rec["over_provisioned"] else ""))
    return Section("right-sizing", "Right-sizing", tuple(blocks))


def _cost(doc: Recommendation) -> Section:
    cluster = doc["inputs"]["cluster"]
    price = cluster["usd_per_gpu_hour"]
    if price is None:
        return Section("cost", "Cost", (Para(
            "No GPU price: set cluster.price_per_gpu_hour (USD) in the workload, or "
            "price_per_gpu_hour_usd in the GPU profile, for USD/hour and USD per million "
            "output tokens.", "note"),), details=True)
    ph = _phase(doc, doc["decision"]["binding_phase"])
    plans = [_plan(ph, k) for k in PLAN_ORDER]
    rows: tuple[tuple[Cell, ...], ...] = (
        ("USD/hour", *(n.usd(p["usd_per_hour"]) if p else n.DASH for p in plans)),
        ("USD/M output tokens", *(n.usd(p["usd_per_million_output_tokens"]) if p else n.DASH
                                  for p in plans)))
    source = ("the workload's cluster.price_per_gpu_hour"
              if cluster["price_source"] == "workload"
              else "the GPU profile's public reference price, an estimate")
    note = (f"All {n.gpus(cluster['gpus'])} billed at {n.usd(price)}/GPU-hour ({source}); "
            "per-token cost at each plan's goodput.")
    return Section("cost", "Cost", (Grid(("", *(PLAN_LABELS[k] for k in PLAN_ORDER)), rows,
                                         (1, 2, 3)), Para(note, "note")), details=True)


def _split_cells(a: dict[str, object]) -> tuple[str, ...]:
    return (f"{a['prefill_instances']} × {t.pool_shape(a, 'prefill')}",
            f"{a['decode_instances']} × {t.pool_shape(a, 'decode')}",
            n.split(a["prefill_gpus"], a["decode_gpus"]),  # type: ignore[arg-type]
            n.count(a["idle_gpus"]),  # type: ignore[arg-type]
            n.rps(a["max_goodput_rps"]),  # type: ignore[arg-type]
            str(a.get("limited_by") or n.DASH))


def _allocation(doc: Recommendation) -> Section | None:
    d = doc["decision"]
    ph = _phase(doc, d["split_phase"])
    plan = ph["disaggregated"] if ph["best_split"] is None else ph["best_split"]
    if plan is None:
        return None
    labels = {"best": "best", "runner-up": "runner-up", "static": "static (every phase)"}
    rows: list[tuple[Cell, ...]] = []
    k = 2
    for r in d["splits"]:
        label = labels.get(r["role"])
        if label is None:
            k += 1
            label = f"#{k}"
        rows.append((label, *_split_cells(dict(r))))
    where = f" of phase {ph['name']}" if _multi(doc) else ""
    lines = [f"Ideal prefill fraction {n.num(plan['ideal_prefill_fraction'])}{where} → ideal "
             f"goodput {n.rps(plan['ideal_max_goodput_rps'])}."]
    rounding = d["rounding"]
    if rounding["loss"] is not None:
        worst = f" (worst phase, {rounding['phase']})" if _multi(doc) else ""
        lines.append(f"Whole instances lose {n.pct(rounding['loss'])} of the ideal split's "
                     f"goodput{worst}.")
    g = d["gains"]
    if rows and not doc["disagg_gain_unbounded"]:
        static = any(r["role"] == "static" for r in d["splits"])
        text = (f"Gain over the best colocated plan: ideal split {_gain(g['ideal'])}, each "
                f"phase's best integer split {_gain(g['per_phase_splits'])}")
        text += (f", the static split kept for {n.phases(len(doc['phases']))} "
                 f"{_gain(g['verdict'])} (the verdict's)." if static else ".")
        lines.append(text)
    title_ = "P:D splits" + (f" — phase {ph['name']}" if _multi(doc) else "")
    if not rows:
        return Section("allocation", title_, (Para(
            "No integer split holds one prefill and one decode instance. " + " ".join(lines)),),
            details=True)
    return Section("allocation", title_, (
        Grid(("", "prefill", "decode", "P:D GPUs", "idle", "goodput", "limited by"),
             tuple(rows), (3, 4, 5)),
        Para("Splits ranked by goodput (ties: more headroom, then fewer GPUs); the static split "
             "is shown at its goodput in this phase. " + " ".join(lines), "note")), details=True)


def _gain(g: float | None) -> str:
    if g is None:
        return "undefined"
    return f"a {n.pct(-g)} loss" if g < 0 else n.signed_pct(g)


def _fragility(doc: Recommendation) -> Section | None:
    f = doc["fragility"]
    if not f:
        return None
    out = []
    for v in f["drifted"]:
        out.append(f"prompts {n.signed_pct(v['prompt_scale'] - 1)}, outputs "
                   f"{n.signed_pct(v['output_scale'] - 1)}: {n.rps(v['goodput_rps'])} of the "
                   f"{n.rps(v['best_goodput_rps'])} a re-split reaches "
                   f"({n.pct(v['loss'])} lost)")
    for v in f["neighbours"]:
        out.append(f"{v['label']} ({n.split(v['prefill_gpus'], v['decode_gpus'])}): "
                   f"{n.rps(v['goodput_rps'])} ({n.pct(v['loss'])} below the best split)")
    return Section("fragility", "Fragility of the split", (
        Para(f"The chosen split under a ±{n.pct(f['drift'])} drift of the mean prompt and "
             "output lengths, and its neighbouring splits:", "note"),
        Items(tuple(out), "dot")), details=True)


_TIMING = {"layer-wise": "layer by layer during the prefill pass",
           "per-chunk": "after each prefill chunk, the last one after the pass",
           "after-prefill": "after the prefill pass"}


def _kv(doc: Recommendation) -> Section | None:
    """Link and NICs, bytes, carried and offered demand, the exposed transfer as the engine's
    connector moves it, and the router's second hop."""
    kv = doc["kv_transfer"]
    if kv is None:
        return None
    demand = f"{n.gb_per_s(kv['demand_bytes_per_s'])} = {n.pct(kv['utilization'])} of the link"
    if kv["at_carried_rate"]:
        demand += (f" at the {n.rps(kv['rate_rps'])} the split carries; the workload offers "
                   f"{n.gb_per_s(kv['offered_demand_bytes_per_s'])} = "
                   f"{n.pct(kv['offered_utilization'])}")
    nics = min(kv["sender_nics"], kv["receiver_nics"])
    reshard = ("" if kv["sender_nics"] == kv["receiver_nics"] else
               f" (the narrower of {n.num(kv['sender_nics'])} sending and "
               f"{n.num(kv['receiver_nics'])} receiving)")
    hop = (f"the router sends the request to decode after the prefill answered: its front end "
           f"adds {n.ms(kv['second_hop_ms'])} to the TTFT" if kv["request_path"] == "sequential"
           else "the router sends the request to both pools at once (no second hop)")
    rows = (("link", f"{kv['link_id']}, {n.num(kv['nics_per_node'])} ports per node, "
                     f"{n.gb_per_s(kv['link_bytes_per_s'])} usable from the prefill GPUs"),
            ("per request", f"{n.megabytes(kv['bytes_per_request_mean'])} mean, "
                            f"{n.megabytes(kv['bytes_per_request_p95'])} p95 "
                            f"({n.kilobytes(kv['bytes_per_token'])} per token)"),
            ("demand", demand),
            ("transfer", f"{n.ms(kv['transfer_ms'])} exposed for a p95 prompt over "
                         f"{n.counted(nics, 'port')}{reshard}: "
                         f"{kv['backend'] or 'the connector'} moves the KV "
                         f"{_TIMING[kv['timing']]} ({n.ms(kv['serialized_transfer_ms'])} "
                         f"serialized); {n.counted(kv['concurrent_transfers'], 'KV transfer')} "
                         "in flight on average"),
            ("router", hop))
    return Section("kv-transfer", "KV transfer", (Pairs(rows),), details=True)


def _interference(doc: Recommendation) -> Section | None:
    c = doc["colocated"]
    i = c["interference"] if c else None
    if i is None:
        return None
    rows = (("unchunked", f"a p95 prompt ({n.tokens(i['prompt_tokens'])}) stretches a decode "
                          f"step {n.factor(i['unchunked_tpot_factor'])}"),
            ("chunked", f"{n.with_article(n.count(i['chunk_tokens']))}-token budget bounds it "
                        f"at {n.factor(i['chunked_tpot_factor'])} (decode step "
                        f"{n.ms(i['decode_step_ms'])}, batch {n.num(i['decode_batch'])})"),
            ("safe rate", f"chunked prefill keeps TPOT in the SLO up to "
                          f"{n.rps(i['chunked_safe_rate_rps'])}"))
    return Section("interference", "Interference (colocated)", (Pairs(rows),), details=True)


def _expert_parallel(doc: Recommendation) -> Section | None:
    lines = t.expert_parallel_lines(doc)
    if lines is None:
        return None
    return Section("expert-parallelism", "Expert parallelism", (Pairs(tuple(lines)),),
                   details=True)


def check(p: Precondition) -> Check:
    """One precondition as a :class:`Check` (its status: pass, fail or n/a)."""
    status = p["status"]
    mark = Mark(None if status == "n/a" else status == "pass")
    if status == "n/a" or p["measured"] is None:
        measured = "n/a"
    elif p["unit"] == "fraction":
        measured = n.signed_pct(p["measured"]) if p["bound"] == "min" else n.pct(p["measured"])
    else:
        measured = f"{n.num(p['measured'])} {p['unit']}"
    value = n.pct(p["threshold"]) if p["unit"] == "fraction" else (
        f"{n.num(p['threshold'])} {p['unit']}")
    limit = f"≥ {value}" if p["bound"] == "min" else f"≤ {value}"
    return Check(mark, p["id"], measured, limit, p["question"], p["explanation"])


def _preconditions(doc: Recommendation) -> Section:
    return Section("preconditions", "Preconditions for disaggregation",
                   (Checks(tuple(check(p) for p in doc["preconditions"])),))


def _boundaries(doc: Recommendation) -> Section | None:
    bounds = doc.get("boundaries")
    if not bounds:
        return None
    found = tuple(b["description"] for b in bounds if b["flips_at"] is not None)
    none = [b["description"] for b in bounds if b["flips_at"] is None]
    blocks: list[Block] = []
    if found:
        blocks.append(Items(found, "arrow"))
    if none:
        blocks.append(Para("Unchanged: " + "; ".join(none) + ".", "note"))
    return Section("boundaries", "Verdict boundaries", tuple(blocks))


def _phases(doc: Recommendation) -> Section | None:
    if not _multi(doc):
        return None
    rows: list[tuple[Cell, ...]] = []
    for p in doc["phases"]:
        plans = _phase(doc, p["name"])
        dis = plans["disaggregated"]
        best = plans["best_split"] or dis
        rows.append((p["name"], n.pct(p["share"]), n.rps(p["rate_rps"]),
                     *(n.rps(x["max_goodput_rps"]) if x else n.DASH
                       for x in (plans["colocated"], dis, plans["unchunked"])),
                     n.split(best["prefill_gpus"], best["decode_gpus"]) if best else n.DASH,
                     n.pct(p["rounding_loss"])))
    static = doc["static_allocation"]
    note = ("Goodput of each plan in each phase (the disaggregated column: the split the verdict "
            "judges there"
            + (", the static split kept for every phase" if static and not doc["inputs"][
                "autoscaling"] else "") + "); P:D is each phase's own best split. A static split "
            f"loses {n.pct(doc['static_mix_loss'])} against per-phase re-allocation"
            + (f" (static split {n.split(static['prefill_gpus'], static['decode_gpus'])})"
               if static else "") + ".")
    return Section("phases", "Phases", (
        Grid(("phase", "share", "rate", *(PLAN_LABELS[k] for k in PLAN_ORDER), "best P:D",
              "rounding"), tuple(rows), (1, 2, 3, 4, 5, 7)), Para(note, "note")), details=True)


def _deployed(doc: Recommendation) -> Section | None:
    dep = doc.get("deployed")
    if dep is None:
        return None
    sentences = t.deployed_sentences(dep)
    findings = tuple(f"[{f['id']}] {f['message']}" for f in dep["findings"])
    gate = ("the gate passes" if not findings else
            f"the gate fails ({n.counted(len(findings), 'finding')})")
    rows = (("declared", sentences[0].removesuffix(".")),
            ("prediction", sentences[1].removeprefix("Predicted: ").removesuffix(".")),
            ("gate", gate))
    blocks: list[Block] = [Pairs(rows)]
    if findings:
        blocks.append(Items(findings, "bad"))
    return Section("deployment", "Declared deployment", tuple(blocks))


def _warnings(doc: Recommendation) -> Section | None:
    if not doc["warnings"]:
        return None
    return Section("warnings", "Warnings", (Items(tuple(
        f"[{w['id']}] {w['message']}" for w in doc["warnings"]), "warn"),))


def _measure_next(doc: Recommendation) -> Section | None:
    if not doc["measure_next"]:
        return None
    return Section("measure-next", "Measure next", (Items(tuple(doc["measure_next"]), "arrow"),))


def _excluded(doc: Recommendation) -> Section | None:
    if not doc["excluded"]:
        return None
    return Section("excluded", "Excluded instance shapes", (Items(tuple(
        f"{e['instance']}: {e['reason']}" for e in doc["excluded"])),), details=True)


def sections(doc: Recommendation) -> list[Section]:
    """The report's sections in reading order (those with something to show)."""
    out: list[Section | None] = [
        _verdict(doc), None if doc["decision"]["any_plan_meets"] else _slo_unmet(doc),
        _plans(doc), _right_sizing(doc), _preconditions(doc),
        _boundaries(doc), _deployed(doc), _warnings(doc), _measure_next(doc), _inputs(doc),
        _cost(doc), _allocation(doc), _fragility(doc), _expert_parallel(doc), _kv(doc),
        _interference(doc), _phases(doc), _excluded(doc)]
    return [s for s in out if s is not None]


def section_titles(doc: Recommendation) -> list[str]:
    """The titles every human format shows, in order."""
    return [s.title for s in sections(doc)]
