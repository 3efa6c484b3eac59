"""``--format html``: one self-contained HTML file for design reviews.

Verdict first (the headline: verdict, gain, deciding reason), then the plans, the figure
(inline SVG, given by the caller; a note when matplotlib is missing), the preconditions with
their measured values, the verdict boundaries, warnings and the measurement plan, and the
detail (inputs, P:D allocation, KV transfer, phases, declared deployment). CSS is inline;
there are no scripts and nothing is fetched. Every string from the document goes through
``html.escape``; the SVG comes from matplotlib, which escapes the text it draws.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Any

from advisor.render import text as t
from advisor.render.headline import headline

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;max-width:1200px;
margin:1.5em auto;padding:0 1em;color:#1a1a1a;line-height:1.45}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.15em;margin-top:1.6em;
border-bottom:1px solid #ccc;padding-bottom:.2em}
.verdict{border:3px solid #1b6e1b;border-radius:8px;padding:.8em 1.1em;background:#f3faf3}
.verdict.unmet{border-color:#b00020;background:#fdf2f3}
.headline{font-size:1.1em;font-weight:600}.path{color:#555;font-family:monospace}
table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid #ccc;padding:.25em .6em;
text-align:left;vertical-align:top}td.n,th.n{text-align:right}th{background:#f2f2f2}
.ok{color:#1b6e1b;font-weight:700}.bad{color:#b00020;font-weight:700}
.note{color:#555;font-size:.92em}figure{margin:1em 0}figure svg{max-width:100%;height:auto}
li{margin:.2em 0}code{background:#f2f2f2;padding:0 .2em}
"""
OK, BAD = "✔", "✘"


def e(value: object) -> str:
    """Escape text for HTML (quotes too)."""
    return escape(str(value), quote=True)


def _mark(passed: bool | None) -> str:
    if passed is None:
        return t.DASH
    return f'<span class="ok">{OK}</span>' if passed else f'<span class="bad">{BAD}</span>'


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]],
           numeric: Sequence[int] = ()) -> str:
    """A table; cells are HTML already (escape before)."""
    head = "".join(f'<th{" class=n" if i in numeric else ""}>{h}</th>'
                   for i, h in enumerate(headers))
    body = "".join("<tr>" + "".join(f'<td{" class=n" if i in numeric else ""}>{c}</td>'
                                    for i, c in enumerate(row)) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _list(items: Iterable[str]) -> str:
    return "<ul>" + "".join(f"<li>{e(i)}</li>" for i in items) + "</ul>"


def _section(title: str, body: str) -> str:
    return f"<section><h2>{e(title)}</h2>{body}</section>"


# --------------------------------------------------------------------------- recommendation
def _verdict(doc: Mapping[str, Any]) -> str:
    head = headline(doc)
    unmet = "" if head.slo_met else " unmet"
    name = doc.get("name") or doc["input"]["path"]
    parts = [f'<div class="verdict{unmet}" id="verdict">',
             f"<h1>{e(head.title)}</h1>",
             f'<p class="headline">Verdict: <code>{e(head.verdict)}</code>'
             + ("" if head.slo_met else ' <span class="bad">(no plan meets the SLOs)</span>')
             + f" · {e(head.gain)}"
             + (f" · because {e(head.reason)}" if head.reason else "") + "</p>",
             f"<p>{e(doc['summary'])}</p>",
             f'<p class="path">{e(name)} — {e(doc["input"]["path"])}</p>']
    if len(doc["reasons"]) > 1:
        parts.append("<p><strong>Why</strong></p>" + _list(doc["reasons"]))
    parts.append("</div>")
    return "".join(parts)


def _slo_unmet(doc: Mapping[str, Any]) -> str:
    """When no plan meets the SLOs: what is achievable and what it would take."""
    c, d = doc.get("colocated"), doc.get("disaggregated")
    pct = f"p{t.num(doc['inputs']['slo']['percentile'])}"
    needed = doc["gpus_needed"]
    rows = [["workload rate (binding phase)", t.rps(c and c["rate_rps"]),
             t.rps(d and d["rate_rps"])],
            ["carries within the SLOs", t.rps(c and c["max_goodput_rps"]),
             t.rps(d and d["max_goodput_rps"])],
            [f"{pct} TTFT at the workload rate", t.latency(c, "ttft_ms"),
             t.latency(d, "ttft_ms")],
            [f"{pct} TPOT at the workload rate", t.latency(c, "tpot_ms"),
             t.latency(d, "tpot_ms")],
            [f"best achievable {pct} TTFT (light load)", t.ms((c or {}).get("best_ttft_ms")),
             t.ms((d or {}).get("best_ttft_ms"))],
            [f"best achievable {pct} TPOT (light load)", t.ms((c or {}).get("best_tpot_ms")),
             t.ms((d or {}).get("best_tpot_ms"))],
            ["GPUs it would take", t.num(needed["colocated"]), t.num(needed["disaggregated"])]]
    note = ("The verdict is the better architecture for these GPUs, not a plan that meets "
            "the SLOs.")
    return (_table(["", "colocated", "disaggregated"], [[e(x) for x in r] for r in rows],
                   numeric=(1, 2)) + f'<p class="note">{e(note)}</p>')


def _plans(doc: Mapping[str, Any]) -> str:
    plans = [("colocated (chunked)", doc.get("colocated")),
             ("disaggregated", doc.get("disaggregated")),
             ("colocated (unchunked)", doc.get("unchunked"))]
    pct = f"p{t.num(doc['inputs']['slo']['percentile'])}"

    def v(plan: Mapping[str, Any] | None, text: str) -> str:
        return t.DASH if plan is None else e(text)

    def shape(plan: Mapping[str, Any] | None) -> str:
        if plan is None:
            return t.DASH
        if "prefill_tensor_parallel" in plan:
            return e(f"{t.pool_shape(plan, 'prefill')} / {t.pool_shape(plan, 'decode')}")
        return e(t.plan_shape(plan))

    def gpus(plan: Mapping[str, Any] | None) -> str:
        if plan is None:
            return t.DASH
        if "prefill_gpus" in plan:
            return e(f"{t.num(plan['prefill_gpus'])} + {t.num(plan['decode_gpus'])}")
        return e(t.num(plan["gpus"]))

    def budget(plan: Mapping[str, Any] | None) -> str:
        if plan is None or "prefill_gpus" in plan:
            return t.DASH
        return e(t.num(plan["chunk_tokens"])) if plan.get("chunked") else "whole prompt"

    rows = []
    for label, p in plans:
        rows.append([e(label), shape(p), gpus(p), budget(p),
                     v(p, t.rps(p and p["max_goodput_rps"])),
                     e(t.latency(p, "ttft_ms")), e(t.latency(p, "tpot_ms")),
                     v(p, t.num(p and p["output_tokens_per_s_per_gpu"])),
                     _mark(p["meets_slo"]) if p else t.DASH])
    table = _table(["plan", "TP (prefill / decode)", "GPUs", "token budget", "goodput",
                    f"{pct} TTFT", f"{pct} TPOT", "output tok/s/GPU", "meets the SLOs"],
                   rows, numeric=(2, 3, 4, 5, 6, 7))
    note = ("Latencies at the workload's rate (of the binding phase when there are several); "
            "goodput is the largest rate meeting the SLOs.")
    return table + f'<p class="note">{e(note)}</p>'


def _preconditions(doc: Mapping[str, Any]) -> str:
    rows = []
    for p in doc["preconditions"]:
        measured, threshold = t.precondition_values(p)
        rows.append([_mark(p["passed"]), f"<code>{e(p['id'])}</code>", e(measured),
                     e(threshold), f"<em>{e(p['question'])}</em> {e(p['explanation'])}"])
    return _table(["", "precondition", "measured", "limit", "explanation"], rows,
                  numeric=(2, 3))


def _boundaries(doc: Mapping[str, Any]) -> str | None:
    bounds = doc.get("boundaries")
    if not bounds:
        return None
    found = [b["description"] for b in bounds if b["flips_at"] is not None]
    none = [b["description"] for b in bounds if b["flips_at"] is None]
    out = _list(found) if found else ""
    if none:
        out += f'<p class="note">Unchanged: {e("; ".join(none))}.</p>'
    return out


def _inputs(doc: Mapping[str, Any]) -> str:
    return _table(["", ""], [[e(a), e(b)] for a, b in t.input_rows(doc)])


def _allocation(doc: Mapping[str, Any]) -> str | None:
    d = doc.get("disaggregated")
    if d is None:
        return None
    rows: list[tuple[str, Mapping[str, Any]]] = []
    if d.get("prefill_gpus") is not None:
        rows.append(("best", d))
    rows += [("runner-up" if i == 0 else f"#{i + 2}", a)
             for i, a in enumerate(d.get("alternatives", [])[:3])]
    table = _table(["", "prefill", "decode", "P:D GPUs", "idle", "goodput", "limited by"],
                   [[e(label),
                     e(f"{a['prefill_instances']} × {t.pool_shape(a, 'prefill')}"),
                     e(f"{a['decode_instances']} × {t.pool_shape(a, 'decode')}"),
                     e(t.split_text(a["prefill_gpus"], a["decode_gpus"])),
                     e(t.num(a["idle_gpus"])), e(t.rps(a["max_goodput_rps"])),
                     e(a.get("limited_by") or t.DASH)] for label, a in rows],
                   numeric=(3, 4, 5))
    note = (f"Ideal prefill fraction {t.num(d['ideal_prefill_fraction'])}, ideal goodput "
            f"{t.rps(d['ideal_max_goodput_rps'])}; rounding loss {t.pct(d['rounding_loss'])}.")
    return table + f'<p class="note">{e(note)}</p>'


def _kv(doc: Mapping[str, Any]) -> str | None:
    kv = doc.get("kv_transfer")
    if kv is None:
        return None
    return _list([
        f"link: {kv['link_id']}, {t.gb_per_s(kv['link_bytes_per_s'])} usable from the "
        "prefill GPUs",
        f"per request: {t.megabytes(kv['bytes_per_request_mean'])} mean, "
        f"{t.megabytes(kv['bytes_per_request_p95'])} p95",
        f"demand: {t.gb_per_s(kv['demand_bytes_per_s'])} = {t.pct(kv['utilization'])} of "
        "the link",
        f"exposed transfer of a p95 prompt: {t.ms(kv['transfer_ms'])} "
        f"({t.ms(kv['serialized_transfer_ms'])} without layer overlap)"])


def _phases(doc: Mapping[str, Any]) -> str | None:
    if len(doc["phases"]) < 2:
        return None
    table = _table(["phase", "share", "rate req/s", "colocated req/s", "disagg. req/s",
                    "static split req/s", "P frac", "P:D", "rounding"],
                   [[e(p["name"]), e(t.pct(p["share"])), e(t.num(p["rate_rps"])),
                     e(t.num(p["colocated_max_goodput_rps"])),
                     e(t.num(p["disaggregated_max_goodput_rps"])),
                     e(t.num(p.get("static_goodput_rps"))),
                     e(t.num(p["ideal_prefill_fraction"])),
                     e(t.split_text(p["prefill_gpus"], p["decode_gpus"])),
                     e(t.pct(p["rounding_loss"]))] for p in doc["phases"]],
                   numeric=(1, 2, 3, 4, 5, 6, 8))
    return table + (f'<p class="note">A static split loses {e(t.pct(doc["static_mix_loss"]))}'
                    " against per-phase re-allocation.</p>")


def _deployed(doc: Mapping[str, Any]) -> str | None:
    dep = doc.get("deployed")
    if dep is None:
        return None
    lines = [f"<p>{e(sentence)}</p>" for sentence in t.deployed_sentences(dep)]
    if dep["findings"]:
        lines.append("<ul>" + "".join(
            f'<li>{_mark(False)} <strong>{e(f["id"])}</strong> (<code>{e(f["key"])}</code>): '
            f'{e(f["message"])}</li>' for f in dep["findings"]) + "</ul>")
    else:
        lines.append(f"<p>{_mark(True)} The gate passes.</p>")
    return "".join(lines)


def _figure(svg: str | None, note: str | None) -> str:
    if svg:
        return ('<figure role="img" aria-label="latency-load curves, P:D allocation and '
                f'TTFT decomposition">{svg}</figure>')
    return f'<p class="note">{e(note or "The figure is not available.")}</p>'


def recommendation_html(doc: Mapping[str, Any], svg: str | None, note: str | None) -> str:
    """The body of a recommendation report."""
    out = [_verdict(doc)]
    if not doc["slo_met"]:
        out.append(_section("No plan meets the SLOs", _slo_unmet(doc)))
    out += [_section("Plans", _plans(doc)),
           _section("Latency against load, P:D split, TTFT", _figure(svg, note)),
           _section("Preconditions for disaggregation", _preconditions(doc))]
    bounds = _boundaries(doc)
    if bounds:
        out.append(_section("Verdict boundaries", bounds))
    if doc["warnings"]:
        out.append(_section("Warnings", "<ul>" + "".join(
            f"<li><strong>{e(w['id'])}</strong>: {e(w['message'])}</li>"
            for w in doc["warnings"]) + "</ul>"))
    if doc["measure_next"]:
        out.append(_section("Measurement plan", _list(doc["measure_next"])))
    ep_lines = t.expert_parallel_lines(doc)
    for title, body in (("Inputs", _inputs(doc)), ("P:D allocation", _allocation(doc)),
                        ("Expert parallelism",
                         _list(f"{label}: {text}" for label, text in ep_lines)
                         if ep_lines else None),
                        ("KV transfer", _kv(doc)), ("Phases", _phases(doc)),
                        ("Declared deployment", _deployed(doc))):
        if body:
            out.append(_section(title, body))
    if doc.get("excluded"):
        out.append(_section("Excluded instance shapes", _list(
            f"{x['instance']}: {x['reason']}" for x in doc["excluded"])))
    return "".join(out)


# --------------------------------------------------------------------------- check run
def check_html(doc: Mapping[str, Any]) -> str:
    """A check run: the totals, one row per file, then each file's findings."""
    counts = doc["counts"]
    labels = {"pass": _mark(True) + " pass", "fail": _mark(False) + " fail",
              "error": _mark(False) + " error"}
    out = [f"<h1>pd-advisor check: {e(doc['status'])}</h1>",
           f"<p>{counts['files']} files: {counts['passed']} passed, {counts['failed']} failed, "
           f"{counts['errors']} could not be evaluated.</p>",
           _table(["file", "status", "verdict", "findings"],
                  [[f"<code>{e(f['path'])}</code>", labels[f["status"]],
                    e(f.get("verdict") or t.DASH),
                    str(len(f["findings"]) + len(f["problems"]))] for f in doc["files"]],
                  numeric=(3,))]
    for f in doc["files"]:
        items = [f"{x.get('path', f['path'])}:{x['line']}:{x['col']}: [{x['id']}] "
                 f"{x['message']}"
                 for x in f["findings"]]
        items += [f"{p['path']}:{p['line']}:{p['col']}: {p['message']}" for p in f["problems"]]
        items += [f"warning [{w['id']}] {w['message']}" for w in f["warnings"]]
        if items:
            out.append(_section(f["path"], _list(items)))
    return "".join(out)


def render_html(doc: Mapping[str, Any], svg: str | None = None,
                figure_note: str | None = None) -> str:
    """The whole HTML document for a recommendation (with ``svg``, the figure's ``<svg>``
    element, or ``figure_note`` in its place) or a check run."""
    if doc.get("kind") == "check":
        title = "pd-advisor check"
        body = check_html(doc)
    else:
        head = headline(doc)
        title = f"pd-advisor: {doc.get('name') or doc['input']['path']}: {head.verdict}"
        body = recommendation_html(doc, svg, figure_note)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{e(title)}</title><style>{CSS}</style></head>"
            f"<body>{body}<footer class=\"note\"><p>pd-advisor "
            f"{e(doc.get('tool', {}).get('version', ''))} · input sha256 "
            f"{e(doc.get('input', {}).get('sha256', '')[:16])}</p></footer></body></html>\n")
