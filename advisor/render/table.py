"""The terminal report (rich), rendered from the JSON documents.

A recommendation reads top to bottom: a plain "no plan meets the SLOs" panel first when that
is the case; the inputs; colocated vs disaggregated side by side; the P:D allocation; the KV
transfer; interference; the three preconditions; the phases; the declared deployment; and the
verdict panel with reasons, warnings and what to measure next. A check run lists each file
with its status and findings at ``path:line:col``.

Pure: :func:`render_table` returns a string; :func:`print_table` writes into a given console.
Tables use light box characters, wrap at the console width and stay readable at 80 columns
and without colour (``NO_COLOR``, non-TTY logs).
"""

from __future__ import annotations

from collections.abc import Mapping
from io import StringIO
from typing import Any

from rich import box
from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from advisor.render import text as t
from advisor.render.headline import headline

OK = "✓"
BAD = "✗"


# --------------------------------------------------------------------------- building blocks
def _heading(title: str) -> Text:
    return Text(title, style="bold underline")


def _grid() -> Table:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    return grid


def _table(*headers: str, right: tuple[str, ...] = ()) -> Table:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=(0, 1),
                  header_style="bold")
    for header in headers:
        table.add_column(header, justify="right" if header in right else "left",
                         overflow="fold")
    return table


def _bullets(items: list[str], marker: str = "•", style: str = "") -> Table:
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True, style=style)
    grid.add_column(overflow="fold")
    for item in items:
        grid.add_row(marker, item)
    return grid


def _mark(passed: bool | None) -> Text:
    if passed is None:
        return Text(t.DASH)
    return Text(OK, style="green") if passed else Text(BAD, style="bold red")


# --------------------------------------------------------------------------- recommendation
def _slo_unmet(doc: Mapping[str, Any]) -> RenderableType:
    """The first thing shown when no plan meets the SLOs: what is achievable, what it takes."""
    c, d = doc.get("colocated"), doc.get("disaggregated")
    table = _table("", "colocated", "disaggregated", right=("colocated", "disaggregated"))
    pct = f"p{t.num(doc['inputs']['slo']['percentile'])}"
    table.add_row("workload rate (binding phase)", t.rps(c and c["rate_rps"]),
                  t.rps(d and d["rate_rps"]))
    table.add_row("carries within the SLOs", t.rps(c and c["max_goodput_rps"]),
                  t.rps(d and d["max_goodput_rps"]))
    table.add_row(f"{pct} TTFT at the workload rate", t.latency(c, "ttft_ms"),
                  t.latency(d, "ttft_ms"))
    table.add_row(f"{pct} TPOT at the workload rate", t.latency(c, "tpot_ms"),
                  t.latency(d, "tpot_ms"))
    table.add_row(f"best achievable {pct} TTFT (light load)", t.ms((c or {}).get("best_ttft_ms")),
                  t.ms((d or {}).get("best_ttft_ms")))
    table.add_row(f"best achievable {pct} TPOT (light load)", t.ms((c or {}).get("best_tpot_ms")),
                  t.ms((d or {}).get("best_tpot_ms")))
    needed = doc["gpus_needed"]
    table.add_row("GPUs it would take", t.num(needed["colocated"]),
                  t.num(needed["disaggregated"]))
    parts: list[RenderableType] = [Text(doc["summary"]), Text(""), table]
    if c is None and doc.get("excluded"):
        parts.append(Text("No instance shape fits: " + "; ".join(
            f"{e['instance']}: {e['reason']}" for e in doc["excluded"]) + "."))
    body = Group(*parts,
                 Text("The verdict below is the better architecture for these GPUs, not a "
                      "plan that meets the SLOs.", style="italic"))
    return Panel(body, title=Text(f"{BAD} NO PLAN MEETS THE SLOs"), title_align="left",
                 border_style="bold red", box=box.HEAVY)


def _inputs(doc: Mapping[str, Any]) -> RenderableType:
    inputs = doc["inputs"]
    grid = _grid()
    model = inputs["model"]
    grid.add_row("model", f"{model['name']} ({model['id']}), {inputs['precision']}, "
                          f"{t.engine_text(inputs)}")
    grid.add_row("cluster", t.cluster_text(inputs))
    grid.add_row("links", t.links_text(inputs))
    for phase in inputs["traffic"]:
        label = "traffic" if len(inputs["traffic"]) == 1 else f"phase {phase['name']}"
        share = "" if len(inputs["traffic"]) == 1 else f"{t.pct(phase['share'])} of the day, "
        loop = phase.get("closed_loop")
        rate = t.rps(phase["rate_rps"])
        if loop is not None:
            rate = (f"{loop['concurrency']:,} concurrent clients ≙ {rate} (Little's law on the "
                    f"{loop['plan']} plan's median TTFT {loop['ttft_ms_p50']:,.0f} ms, TPOT "
                    f"{loop['tpot_ms_p50']:,.1f} ms: {loop['e2e_s']:,.2f} s per request)")
        cached = phase.get("prefix_cache_hit_rate") or 0.0
        hits = f", {t.pct(cached)} of prompt tokens from the prefix cache" if cached else ""
        grid.add_row(label, f"{share}{rate}, prompt "
                            f"{t.length_text(phase['prompt_tokens'])}, output "
                            f"{t.length_text(phase['output_tokens'])} tokens{hits}")
    grid.add_row("SLO", t.slo_text(inputs["slo"]))
    grid.add_row("autoscaling", "yes" if inputs["autoscaling"] else "no (static pools)")
    grid.add_row("router", t.router_text(inputs["router"]))
    grid.add_row("deployment", t.deployment_text(inputs.get("deployment")))
    calibration = t.calibration_text(doc.get("calibration"))
    if calibration:
        grid.add_row("calibration", calibration)
    return grid


def _usd(value: float | None) -> str:
    return t.DASH if value is None else f"${value:,.2f}"


def _comparison(doc: Mapping[str, Any]) -> RenderableType:
    c, d, u = doc.get("colocated"), doc.get("disaggregated"), doc.get("unchunked")
    pct = f"p{t.num(doc['inputs']['slo']['percentile'])}"
    table = _table("", "colocated", "disaggregated", "unchunked",
                   right=("colocated", "disaggregated", "unchunked"))

    def cell(plan: Mapping[str, Any] | None, value: str) -> str:
        return t.DASH if plan is None else value

    multi = len(doc["phases"]) > 1

    def at(plan: Mapping[str, Any] | None) -> str:
        if plan is None:
            return t.DASH
        phase = plan.get("phase") if multi else None
        return t.rps(plan["rate_rps"]) + (f" ({phase})" if phase else "")

    table.add_row("workload rate", at(c), at(d), at(u))
    table.add_row("TP (prefill/decode)",
                  cell(c, t.plan_shape(c)),
                  cell(d, f"{t.pool_shape(d, 'prefill')} / "
                          f"{t.pool_shape(d, 'decode')}"),
                  cell(u, t.plan_shape(u)))
    table.add_row("instances",
                  cell(c, t.num(c and c["instances"])),
                  cell(d, f"{t.num(d and d['prefill_instances'])} + "
                          f"{t.num(d and d['decode_instances'])}"),
                  cell(u, t.num(u and u["instances"])))
    table.add_row("GPUs used",
                  cell(c, t.num(c and c["gpus"])),
                  cell(d, f"{t.num(d and d['prefill_gpus'])} + {t.num(d and d['decode_gpus'])}"),
                  cell(u, t.num(u and u["gpus"])))
    table.add_row("token budget", cell(c, t.num(c and c["chunk_tokens"])), t.DASH,
                  cell(u, "whole prompt"))
    table.add_row("goodput", cell(c, t.rps(c and c["max_goodput_rps"])),
                  cell(d, t.rps(d and d["max_goodput_rps"])),
                  cell(u, t.rps(u and u["max_goodput_rps"])))
    table.add_row(f"{pct} TTFT", t.latency(c, "ttft_ms"), t.latency(d, "ttft_ms"),
                  t.latency(u, "ttft_ms"))
    table.add_row(f"{pct} TPOT", t.latency(c, "tpot_ms"), t.latency(d, "tpot_ms"),
                  t.latency(u, "tpot_ms"))
    table.add_row("output tok/s/GPU", cell(c, t.num(c and c["output_tokens_per_s_per_gpu"])),
                  cell(d, t.num(d and d["output_tokens_per_s_per_gpu"])),
                  cell(u, t.num(u and u["output_tokens_per_s_per_gpu"])))
    table.add_row("meets the SLOs", *(_mark(p and p["meets_slo"]) if p else Text(t.DASH)
                                      for p in (c, d, u)))
    cluster = doc["inputs"]["cluster"]
    price = cluster.get("usd_per_gpu_hour")
    if price is not None:
        table.add_row("USD/hour", *(cell(p, _usd(p and p.get("usd_per_hour"))) for p in (c, d, u)))
        table.add_row("USD/M output tokens",
                      *(cell(p, _usd(p and p.get("usd_per_million_output_tokens")))
                        for p in (c, d, u)))
    notes = [("Latencies at the workload's rate (of the binding phase when there are "
             "several); goodput is the largest rate meeting the SLOs.")]
    if price is None:
        notes.append("No GPU price: set cluster.price_per_gpu_hour (USD) in the workload, or "
                     "price_per_gpu_hour_usd in the GPU profile, for USD/hour and USD per "
                     "million output tokens.")
    else:
        source = ("the workload's cluster.price_per_gpu_hour"
                  if cluster.get("price_source") == "workload"
                  else "the GPU profile's public reference price, an estimate")
        notes.append(f"Cost: all {cluster['gpus']:,} GPUs at ${price:,.2f}/GPU-hour ({source}); "
                     "per-token cost at each plan's goodput.")
    gain = doc.get("disagg_gain")
    need = t.pct(doc["policy"]["min_disagg_gain"])
    if doc.get("deciding_rule") == "not-applicable":
        notes.append("Disaggregation is not applicable: the cluster cannot hold one prefill and "
                     "one decode instance.")
    elif doc.get("deciding_rule") == "no-split":
        notes.append("Disaggregation: no prefill/decode split meets the SLOs.")
    elif doc.get("disagg_gain_unbounded"):
        notes.append("Disaggregation gain: unbounded (colocated carries nothing within the SLOs).")
    elif gain is not None and gain < 0:
        notes.append(f"Disaggregation loses {t.pct(-gain)} against the best colocated pool "
                     f"(it would need a {need} gain).")
    elif gain is not None:
        notes.append(f"Disaggregation gain over the best colocated pool: {t.pct(gain)} "
                     f"(needs {need}).")
    return Group(table, Text(" ".join(notes), style="dim"))


def _allocation(doc: Mapping[str, Any]) -> RenderableType | None:
    d = doc.get("disaggregated")
    if d is None:
        return None
    table = _table("", "prefill", "decode", "P:D GPUs", "idle", "goodput", "limited by",
                   right=("P:D GPUs", "idle", "goodput"))
    rows: list[tuple[str, Mapping[str, Any]]] = []
    if d.get("prefill_gpus") is not None:
        rows.append(("best", {**d, "max_goodput_rps": d["max_goodput_rps"]}))
    for i, alt in enumerate(d.get("alternatives", [])[:3]):
        rows.append(("runner-up" if i == 0 else f"#{i + 2}", alt))
    for label, a in rows:
        table.add_row(label,
                      f"{a['prefill_instances']} × {t.pool_shape(a, 'prefill')}",
                      f"{a['decode_instances']} × {t.pool_shape(a, 'decode')}",
                      t.split_text(a["prefill_gpus"], a["decode_gpus"]), t.num(a["idle_gpus"]),
                      t.rps(a["max_goodput_rps"]), a.get("limited_by") or t.DASH)
    lines = [f"Ideal prefill fraction {t.num(d['ideal_prefill_fraction'])} → ideal goodput "
             f"{t.rps(d['ideal_max_goodput_rps'])}"
             + (f"; whole instances lose {t.pct(d['rounding_loss'])} (rounding loss"
                + (f", phase {d['phase']})" if len(doc["phases"]) > 1 and d.get("phase")
                   else ")") if rows else "")
             + "."]
    gains = t.gains_line(doc)
    if gains:
        lines.append(gains)
    if not rows:
        lines.insert(0, "No integer split holds one prefill and one decode instance.")
        return Text(" ".join(lines))
    frag = t.split_fragility(doc)
    parts: list[RenderableType] = [table, Text(" ".join(lines), style="dim")]
    if frag:
        f = doc["fragility"]
        parts.append(Text(f"Fragility (mix drift ±{t.pct(f['drift'])} and neighbouring splits):"))
        parts.append(_bullets(frag, marker="·"))
    return Group(*parts)


def _kv(doc: Mapping[str, Any]) -> RenderableType | None:
    kv = doc.get("kv_transfer")
    if kv is None:
        return None
    grid = _grid()
    grid.add_row("link", f"{kv['link_id']}, {t.gb_per_s(kv['link_bytes_per_s'])} usable from "
                         "the prefill GPUs")
    grid.add_row("per request", f"{t.megabytes(kv['bytes_per_request_mean'])} mean, "
                                f"{t.megabytes(kv['bytes_per_request_p95'])} p95 "
                                f"({t.num(kv['bytes_per_token'] / 1e3)} kB/token)")
    grid.add_row("demand", f"{t.gb_per_s(kv['demand_bytes_per_s'])} = "
                           f"{t.pct(kv['utilization'])} of the link")
    grid.add_row("transfer", f"{t.ms(kv['transfer_ms'])} exposed for a p95 prompt "
                             f"({t.ms(kv['serialized_transfer_ms'])} without layer overlap), "
                             f"about {t.num(kv['concurrent_transfers'])} in flight")
    return grid


def _expert_parallel(doc: Mapping[str, Any]) -> RenderableType | None:
    lines = t.expert_parallel_lines(doc)
    if lines is None:
        return None
    grid = _grid()
    for label, text in lines:
        grid.add_row(label, text)
    return grid


def _interference(doc: Mapping[str, Any]) -> RenderableType | None:
    c = doc.get("colocated")
    i = c.get("interference") if c else None
    if i is None:
        return None
    grid = _grid()
    grid.add_row("unchunked", f"a p95 prompt ({t.num(i['prompt_tokens'])} tokens) stretches a "
                              f"decode step {t.factor(i['unchunked_tpot_factor'])}")
    grid.add_row("chunked", f"a {t.num(i['chunk_tokens'])}-token budget bounds it at "
                            f"{t.factor(i['chunked_tpot_factor'])} (decode step "
                            f"{t.ms(i['decode_step_ms'])}, batch {t.num(i['decode_batch'])})")
    grid.add_row("safe rate", f"chunked prefill keeps TPOT in the SLO up to "
                              f"{t.rps(i['chunked_safe_rate_rps'])}")
    return grid


def _preconditions(doc: Mapping[str, Any]) -> RenderableType:
    rows: list[RenderableType] = []
    for p in doc["preconditions"]:
        measured, threshold = t.precondition_values(p)
        word = "needs at least" if p.get("bound") == "min" else "limit"
        beyond = p.get("measured") is not None and p.get("threshold") is not None and (
            p["measured"] < p["threshold"] if p.get("bound") == "min"
            else p["measured"] > p["threshold"])
        anyway = "; passes all the same (why below)" if p["passed"] and beyond else ""
        rows.append(Text.assemble(_mark(p["passed"]), " ", (p["id"], "bold"),
                                  f": {measured} measured, {word} {threshold}{anyway}"))
        rows.append(Padding(Text.assemble((p["question"], "italic"), " ", p["explanation"]),
                            (0, 0, 0, 2)))
    return Group(*rows)


def _boundaries(doc: Mapping[str, Any]) -> RenderableType | None:
    bounds = doc.get("boundaries")
    if not bounds:
        return None
    found = [b["description"] for b in bounds if b["flips_at"] is not None]
    none = [b["description"] for b in bounds if b["flips_at"] is None]
    parts: list[RenderableType] = []
    if found:
        parts.append(_bullets(found, marker="→"))
    if none:
        parts.append(Text("Unchanged: " + "; ".join(none) + ".", style="dim"))
    return Group(*parts)


def _phases(doc: Mapping[str, Any]) -> RenderableType | None:
    phases = doc["phases"]
    if len(phases) < 2:
        return None
    table = _table("phase", "share", "rate", "colocated", "disagg.", "P frac", "P:D",
                   "rounding", right=("share", "rate", "colocated", "disagg.", "P frac",
                                      "rounding"))
    for p in phases:
        table.add_row(p["name"], t.pct(p["share"]), t.num(p["rate_rps"]),
                      t.num(p["colocated_max_goodput_rps"]),
                      t.num(p["disaggregated_max_goodput_rps"]),
                      t.num(p["ideal_prefill_fraction"]),
                      t.split_text(p["prefill_gpus"], p["decode_gpus"]),
                      t.pct(p["rounding_loss"]))
    note = ("Rates and goodputs in req/s. A static split fixed across phases loses "
            f"{t.pct(doc['static_mix_loss'])} against per-phase re-allocation")
    static = doc.get("static_allocation")
    if static:
        note += f" (static split {t.split_text(static['prefill_gpus'], static['decode_gpus'])})"
    return Group(table, Text(note + ".", style="dim"))


def _deployed(doc: Mapping[str, Any]) -> RenderableType | None:
    dep = doc.get("deployed")
    if dep is None:
        return None
    pct = f"p{t.num(dep['percentile'])}"
    grid = _grid()
    grid.add_row("declared", t.deployment_text(dep))
    if not dep["feasible"]:
        grid.add_row("prediction", f"cannot run: {dep['reason']}")
    else:
        lat = ("overloaded" if dep["overloaded"] else
               f"{pct} TTFT {t.ms(dep['ttft_ms'])}, TPOT {t.ms(dep['tpot_ms'])}")
        phase = f", phase {dep['phase']}" if len(doc["phases"]) > 1 else ""
        grid.add_row("prediction", f"{lat} at {t.rps(dep['rate_rps'])}{phase}; carries "
                                   f"{t.rps(dep['max_goodput_rps'])} within the SLOs")
    grid.add_row("gate", Text.assemble(_mark(not dep["findings"]),
                                       " passes" if not dep["findings"] else
                                       f" fails ({len(dep['findings'])} finding"
                                       f"{'s' * (len(dep['findings']) != 1)})"))
    parts: list[RenderableType] = [grid]
    if dep["findings"]:
        parts.append(_bullets([f"[{f['id']}] {f['message']}" for f in dep["findings"]],
                              marker=BAD, style="bold red"))
    return Group(*parts)


def _verdict(doc: Mapping[str, Any]) -> RenderableType:
    parts: list[RenderableType] = []
    headline = Text(t.verdict_title(doc["verdict"]), style="bold")
    if not doc["slo_met"]:
        headline.append("  (no plan meets the SLOs)", style="bold red")
    parts += [headline, Text(doc["summary"]), Text("")]
    parts += [Text("Why", style="bold"), _bullets(list(doc["reasons"]))]
    if doc["warnings"]:
        parts += [Text(""), Text("Warnings", style="bold yellow"),
                  _bullets([f"[{w['id']}] {w['message']}" for w in doc["warnings"]],
                           marker="!", style="yellow")]
    if doc["measure_next"]:
        parts += [Text(""), Text("Measure next", style="bold"),
                  _bullets(list(doc["measure_next"]), marker="→")]
    style = "red" if not doc["slo_met"] else "green"
    return Panel(Group(*parts), title=Text(f"verdict: {doc['verdict']}"), title_align="left",
                 border_style=style, box=box.ROUNDED)


def recommendation_renderables(doc: Mapping[str, Any]) -> list[RenderableType]:
    """The report as a list of renderables, in reading order."""
    path = doc["input"]["path"]
    out: list[RenderableType] = [
        Text.assemble(("pd-advisor", "bold"), " · ", (doc.get("name") or path, "bold"),
                      f" ({path})" if doc.get("name") else ""),
        Text(headline(doc).line(), style="bold red" if not doc["slo_met"] else "bold")]
    if not doc["slo_met"]:
        out.append(_slo_unmet(doc))
    sections: list[tuple[str, RenderableType | None]] = [
        ("Inputs", _inputs(doc)),
        ("Colocated vs disaggregated (best plans found)", _comparison(doc)),
        ("P:D allocation", _allocation(doc)),
        ("Expert parallelism", _expert_parallel(doc)),
        ("KV transfer", _kv(doc)),
        ("Interference (colocated)", _interference(doc)),
        ("Preconditions for disaggregation", _preconditions(doc)),
        ("Verdict boundaries", _boundaries(doc)),
        ("Phases", _phases(doc)),
        ("Declared deployment", _deployed(doc)),
    ]
    for title_text, body in sections:
        if body is not None:
            out += [Text(""), _heading(title_text), body]
    if doc.get("excluded"):
        out += [Text(""), Text("Excluded instance shapes: " + "; ".join(
            f"{e['instance']}: {e['reason']}" for e in doc["excluded"]), style="dim")]
    out += [Text(""), _verdict(doc)]
    return out


# --------------------------------------------------------------------------- check run
def check_renderables(doc: Mapping[str, Any]) -> list[RenderableType]:
    """A check run: one block per file, then the totals."""
    out: list[RenderableType] = []
    labels = {"pass": (f"{OK} PASS", "bold green"), "fail": (f"{BAD} FAIL", "bold red"),
              "error": (f"{BAD} ERROR", "bold red")}
    for f in doc["files"]:
        label, style = labels[f["status"]]
        head = Text.assemble((label, style), "  ", (f["path"], "bold"))
        report = f.get("report")
        if report is not None:
            head.append(f"  verdict {report['verdict']}")
            if report.get("deployed"):
                head.append(f", deployed {report['deployed']['mode']}")
            if report.get("calibration"):
                head.append(f", calibrated with {report['calibration']['file']}")
        out.append(head)
        items: list[str] = []
        for finding in f["findings"]:
            where = finding.get("path", f["path"])
            items.append(f"{where}:{finding['line']}:{finding['col']}: {finding['key']}: "
                         f"[{finding['id']}] {finding['message']}")
        for problem in f["problems"]:
            key = f"{problem['key']}: " if problem.get("key") else ""
            items.append(f"{problem['path']}:{problem['line']}:{problem['col']}: {key}"
                         f"{problem['message']}")
        if items:
            out.append(Padding(_bullets(items, marker=BAD, style="red"), (0, 0, 0, 2)))
        if f["warnings"]:
            out.append(Padding(_bullets([
                f"[{w['id']}] " + (f"{w['path']}:{w['line']}: " if "path" in w else "")
                + w["message"] for w in f["warnings"]], marker="!", style="yellow"),
                (0, 0, 0, 2)))
    counts = doc["counts"]
    out += [Text(""), Text(
        f"{counts['files']} file{'s' * (counts['files'] != 1)}: {counts['passed']} passed, "
        f"{counts['failed']} failed, {counts['errors']} could not be evaluated",
        style="bold")]
    return out


# --------------------------------------------------------------------------- entry points
def print_table(doc: Mapping[str, Any], console: Console) -> None:
    """Write the report for ``doc`` (a recommendation or a check run) into ``console``.

    One ``print`` of the whole report (a :class:`Group` renders its parts one below the other,
    as one ``print`` each would, without the per-call set-up)."""
    items = (check_renderables(doc) if doc.get("kind") == "check"
             else recommendation_renderables(doc))
    console.print(Group(*items))


def make_console(file: Any, width: int, color: bool) -> Console:
    """A console for reports: fixed width, no highlighting, colour only when asked.

    Markup is off so that text from the document (``[kv-concurrency] ...``, names with
    brackets) is printed as is.
    """
    return Console(file=file, width=width, no_color=not color, force_terminal=color,
                   color_system="standard" if color else None, highlight=False, emoji=False,
                   markup=False, soft_wrap=False, legacy_windows=False)


def render_table(doc: Mapping[str, Any], width: int = 100, color: bool = False) -> str:
    """The report as text, ``width`` columns wide (ANSI colours only with ``color``)."""
    buffer = StringIO()
    print_table(doc, make_console(buffer, width, color))
    text = buffer.getvalue()
    if color:
        return text
    return "\n".join(line.rstrip() for line in text.split("\n"))
