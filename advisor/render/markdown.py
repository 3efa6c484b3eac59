"""Markdown for PR comments and ``$GITHUB_STEP_SUMMARY``, rendered from the JSON documents.

Every document starts with the hidden marker ``<!-- pd-advisor -->`` so a bot can find and
update its own comment. The verdict, the SLO status and the preconditions are visible; the
numbers behind them sit in ``<details>`` blocks. Pure: returns a string.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.render import text as t
from advisor.render.headline import headline

MARKER = "<!-- pd-advisor -->"
"""First line of every markdown document."""

COMMENT_BUDGET = 60_000
"""Characters a check run's markdown may use for folded full reports (GitHub comments hold
65,536); the summary and the findings are always included."""

OK = "✅"
BAD = "❌"


_INERT = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "|": "\\|", "\r": " ",
                        "\n": " ", "[": "\\[", "]": "\\]", "@": "@\u2060"})
"""Markdown that a user string must not carry into a PR comment (#21): raw HTML, table
breaks, link and image brackets, and @-mentions (a word joiner after ``@`` keeps the text and
stops GitHub from notifying anyone)."""


def cell(value: object) -> str:
    """Text safe inside a GFM table cell or a list item: no pipes, newlines, raw HTML, links,
    images, bare URLs or @-mentions."""
    text = str(value).translate(_INERT)
    # GitHub links bare URLs too: a word joiner after the scheme (or "www") stops that
    for scheme in ("://", "www."):
        text = text.replace(scheme, scheme[0] + "\u2060" + scheme[1:])
    return text


def _table(headers: list[str], rows: list[list[str]], right: tuple[int, ...] = ()) -> list[str]:
    """A GFM table; the columns whose indexes are in ``right`` are right-aligned."""
    align = ["---:" if i in right else "---" for i in range(len(headers))]
    out = ["| " + " | ".join(headers) + " |", "| " + " | ".join(align) + " |"]
    out += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return out


def _details(summary: str, body: list[str]) -> list[str]:
    return ["<details>", f"<summary>{cell(summary)}</summary>", "", *body, "", "</details>", ""]


def _mark(passed: bool | None) -> str:
    return t.DASH if passed is None else (OK if passed else BAD)


# --------------------------------------------------------------------------- recommendation
def _slo_unmet(doc: Mapping[str, Any]) -> list[str]:
    c, d = doc.get("colocated"), doc.get("disaggregated")
    pct = f"p{t.num(doc['inputs']['slo']['percentile'])}"
    needed = doc["gpus_needed"]
    lines = ["> [!CAUTION]", f"> **No plan meets the SLOs.** {cell(doc['summary'])}", ">"]
    lines += ["> " + row for row in _table(
        ["", "colocated", "disaggregated"],
        [["workload rate (binding phase)", t.rps(c and c["rate_rps"]), t.rps(d and d["rate_rps"])],
         ["carries within the SLOs", t.rps(c and c["max_goodput_rps"]),
          t.rps(d and d["max_goodput_rps"])],
         [f"{pct} TTFT at the workload rate", t.latency(c, "ttft_ms"), t.latency(d, "ttft_ms")],
         [f"{pct} TPOT at the workload rate", t.latency(c, "tpot_ms"), t.latency(d, "tpot_ms")],
         [f"best achievable {pct} TTFT (light load)", t.ms((c or {}).get("best_ttft_ms")),
          t.ms((d or {}).get("best_ttft_ms"))],
         [f"best achievable {pct} TPOT (light load)", t.ms((c or {}).get("best_tpot_ms")),
          t.ms((d or {}).get("best_tpot_ms"))],
         ["GPUs it would take", t.num(needed["colocated"]), t.num(needed["disaggregated"])]],
        right=(1, 2))]
    lines += [">", ("> The verdict below is the better architecture for these GPUs, not a plan "
                   "that meets the SLOs."), ""]
    return lines


def _comparison(doc: Mapping[str, Any]) -> list[str]:
    c, d = doc.get("colocated"), doc.get("disaggregated")
    pct = f"p{t.num(doc['inputs']['slo']['percentile'])}"

    def v(plan: Mapping[str, Any] | None, text: str) -> str:
        return t.DASH if plan is None else text

    rows = [
        ["TP (prefill / decode)", v(c, t.plan_shape(c)),
         v(d, f"{t.pool_shape(d, 'prefill')} / "
              f"{t.pool_shape(d, 'decode')}")],
        ["instances", v(c, t.num(c and c["instances"])),
         v(d, f"{t.num(d and d['prefill_instances'])} + {t.num(d and d['decode_instances'])}")],
        ["GPUs used", v(c, t.num(c and c["gpus"])),
         v(d, f"{t.num(d and d['prefill_gpus'])} + {t.num(d and d['decode_gpus'])}")],
        ["token budget", v(c, t.num(c and c["chunk_tokens"])), t.DASH],
        ["goodput", v(c, t.rps(c and c["max_goodput_rps"])),
         v(d, t.rps(d and d["max_goodput_rps"]))],
        [f"{pct} TTFT", t.latency(c, "ttft_ms"), t.latency(d, "ttft_ms")],
        [f"{pct} TPOT", t.latency(c, "tpot_ms"), t.latency(d, "tpot_ms")],
        ["output tokens/s/GPU", v(c, t.num(c and c["output_tokens_per_s_per_gpu"])),
         v(d, t.num(d and d["output_tokens_per_s_per_gpu"]))],
        ["meets the SLOs", _mark(c["meets_slo"] if c else None),
         _mark(d["meets_slo"] if d else None)],
    ]
    if doc["inputs"]["cluster"].get("usd_per_gpu_hour") is not None:  # cost (#16)
        for label, key in (("USD/hour", "usd_per_hour"),
                           ("USD/M output tokens", "usd_per_million_output_tokens")):
            rows.append([label, *(v(p, t.DASH if not p or p.get(key) is None
                                    else f"${p[key]:,.2f}") for p in (c, d))])
    return [*_table(["", "colocated (chunked)", "disaggregated"], rows, right=(1, 2)), ""]


def _preconditions(doc: Mapping[str, Any]) -> list[str]:
    rows = []
    for p in doc["preconditions"]:
        measured, threshold = t.precondition_values(p)
        threshold = ("≥ " if p.get("bound") == "min" else "≤ ") + threshold
        rows.append([_mark(p["passed"]), f"`{p['id']}`", measured, threshold,
                     p["explanation"]])
    return [*_table(["", "precondition", "measured", "threshold", "explanation"], rows,
                    right=(2, 3)), ""]


def _details_blocks(doc: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    rows = t.input_rows(doc)
    out += _details("Inputs", _table(["", ""], rows))

    d = doc.get("disaggregated")
    if d is not None:
        alloc_rows = []
        if d.get("prefill_gpus") is not None:
            alloc_rows.append(("best", d))
        alloc_rows += [("runner-up" if i == 0 else f"#{i + 2}", a)
                       for i, a in enumerate(d.get("alternatives", [])[:3])]
        body = _table(["", "prefill", "decode", "P:D GPUs", "idle", "goodput", "limited by"],
                      [[label, f"{a['prefill_instances']} × {t.pool_shape(a, 'prefill')}",
                        f"{a['decode_instances']} × {t.pool_shape(a, 'decode')}",
                        t.split_text(a["prefill_gpus"], a["decode_gpus"]),
                        t.num(a["idle_gpus"]), t.rps(a["max_goodput_rps"]),
                        a.get("limited_by") or t.DASH] for label, a in alloc_rows],
                      right=(3, 4, 5))
        rounding = (f"; rounding loss {t.pct(d['rounding_loss'])}"
                    if d.get("prefill_gpus") is not None else "; no integer split")
        body += ["", (f"Ideal prefill fraction {t.num(d['ideal_prefill_fraction'])}, ideal "
                     f"goodput {t.rps(d['ideal_max_goodput_rps'])}{rounding}.")]
        gains = t.gains_line(doc)
        if gains:
            body += ["", gains]
        frag = t.split_fragility(doc)
        if frag:
            body += ["", f"Fragility (mix drift ±{t.pct(doc['fragility']['drift'])} and "
                         "neighbouring splits):", ""] + [f"- {line}" for line in frag]
        out += _details("P:D allocation", body)

    ep_lines = t.expert_parallel_lines(doc)
    if ep_lines is not None:
        out += _details("Expert parallelism", [f"- {label}: {text}" for label, text in ep_lines])

    kv = doc.get("kv_transfer")
    if kv is not None:
        out += _details("KV transfer", [
            f"- link: {cell(kv['link_id'])}, {t.gb_per_s(kv['link_bytes_per_s'])} usable",
            (f"- per request: {t.megabytes(kv['bytes_per_request_mean'])} mean, "
            f"{t.megabytes(kv['bytes_per_request_p95'])} p95"),
            (f"- demand: {t.gb_per_s(kv['demand_bytes_per_s'])} = "
            f"{t.pct(kv['utilization'])} of the link"),
            f"- exposed transfer of a p95 prompt: {t.ms(kv['transfer_ms'])}"])

    c = doc.get("colocated")
    i = c.get("interference") if c else None
    if i is not None:
        out += _details("Interference (colocated)", [
            (f"- unchunked: a p95 prompt ({t.num(i['prompt_tokens'])} tokens) stretches a "
            f"decode step {t.factor(i['unchunked_tpot_factor'])}"),
            (f"- chunked: a {t.num(i['chunk_tokens'])}-token budget bounds it at "
            f"{t.factor(i['chunked_tpot_factor'])}"),
            f"- safe rate: {t.rps(i['chunked_safe_rate_rps'])}"])

    if len(doc["phases"]) > 1:
        body = _table(["phase", "share", "rate req/s", "colocated req/s", "disagg. req/s",
                       "P frac", "P:D", "rounding"],
                      [[p["name"], t.pct(p["share"]), t.num(p["rate_rps"]),
                        t.num(p["colocated_max_goodput_rps"]),
                        t.num(p["disaggregated_max_goodput_rps"]),
                        t.num(p["ideal_prefill_fraction"]),
                        t.split_text(p["prefill_gpus"], p["decode_gpus"]),
                        t.pct(p["rounding_loss"])] for p in doc["phases"]],
                      right=(1, 2, 3, 4, 5, 7))
        body += ["", (f"A static split loses {t.pct(doc['static_mix_loss'])} against per-phase "
                     "re-allocation.")]
        out += _details("Phases", body)
    return out


def _deployed(doc: Mapping[str, Any], heading: str) -> list[str]:
    dep = doc.get("deployed")
    if dep is None:
        return []
    lines = [f"{heading} Declared deployment", "",
             *(cell(sentence) for sentence in t.deployed_sentences(dep))]
    lines.append("")
    if dep["findings"]:
        lines += [f"- {BAD} **{cell(f['id'])}** (`{cell(f['key'])}`): {cell(f['message'])}"
                  for f in dep["findings"]]
    else:
        lines.append(f"{OK} The gate passes.")
    return [*lines, ""]


def headline_line(doc: Mapping[str, Any]) -> str:
    """The one-line verdict (verdict, gain, deciding reason), escaped."""
    head = headline(doc)
    unmet = " (no plan meets the SLOs)" if not head.slo_met else ""
    reason = f" · because {cell(head.reason)}" if head.reason else ""
    return f"**Verdict: `{head.verdict}`**{unmet} · {cell(head.gain)}{reason}"


def recommendation_body(doc: Mapping[str, Any], level: int = 2, figure: str | None = None,
                        details: bool = True) -> list[str]:
    """The recommendation without the marker; headings start at ``level``. ``figure`` is
    the path (or URL) of the ``--plot`` image to show under the verdict; ``details=False``
    leaves out the folded detail blocks."""
    h = "#" * level
    name = f" · {cell(doc['name'])}" if doc.get("name") else ""
    lines = [f"{h} pd-advisor: {t.verdict_title(doc['verdict'])}", "", headline_line(doc), "",
             f"`{cell(doc['input']['path'])}`{name}", ""]
    if not doc["slo_met"]:
        lines += _slo_unmet(doc)
    lines += [cell(doc["summary"]), ""]
    if figure:
        lines += [f"![latency-load curves, P:D split and TTFT parts]({_link(figure)})", ""]
    lines += [f"{h}# Why", "", *(f"- {cell(r)}" for r in doc["reasons"]), ""]
    lines += [f"{h}# Colocated vs disaggregated", "", *_comparison(doc)]
    lines += [f"{h}# Preconditions for disaggregation", "", *_preconditions(doc)]
    lines += _deployed(doc, f"{h}#")
    if doc["warnings"]:
        lines += [f"{h}# Warnings", ""]
        lines += [f"- ⚠️ **{cell(w['id'])}**: {cell(w['message'])}" for w in doc["warnings"]]
        lines.append("")
    if doc["measure_next"]:
        lines += [f"{h}# Measure next", ""] + [f"- {cell(m)}" for m in doc["measure_next"]]
        lines.append("")
    if details:
        lines += _details_blocks(doc)
    return lines


def _link(target: str) -> str:
    """A link target safe inside ``(...)``: spaces and parentheses percent-encoded."""
    from urllib.parse import quote

    return quote(target, safe="/:.#?=&%~+-_@!,;")


def _fit_comment(lines: list[str]) -> list[str]:
    """``lines`` within :data:`COMMENT_BUDGET` characters (GitHub rejects comments over
    65,536): cut at a line boundary with a note when they are not."""
    if sum(len(line) + 1 for line in lines) <= COMMENT_BUDGET:
        return lines
    note = ["", "_Report cut to fit a PR comment; `pd-advisor recommend --format html` or "
                "`--format json` has all of it._"]
    out: list[str] = []
    used = sum(len(line) + 1 for line in note)
    for line in lines:
        line = line if len(line) <= COMMENT_BUDGET // 4 else line[:COMMENT_BUDGET // 4] + "…"
        if used + len(line) + 1 > COMMENT_BUDGET:
            break
        out.append(line)
        used += len(line) + 1
    return out + note


# --------------------------------------------------------------------------- check run
def check_body(doc: Mapping[str, Any]) -> list[str]:
    """A check run: summary table, then each file's findings and its report folded away."""
    counts = doc["counts"]
    status = {"pass": f"{OK} passed", "fail": f"{BAD} failed",
              "error": f"{BAD} could not evaluate"}[doc["status"]]
    lines = [f"## pd-advisor check: {status}", "",
             (f"{counts['files']} file{'s' * (counts['files'] != 1)}: {counts['passed']} "
             f"passed, {counts['failed']} failed, {counts['errors']} could not be evaluated."), ""]
    rows = []
    labels = {"pass": f"{OK} pass", "fail": f"{BAD} fail", "error": f"{BAD} error"}
    for f in doc["files"]:
        report = f.get("report") or {}
        deployed = report.get("deployed") or {}
        rows.append([f"`{f['path']}`", labels[f["status"]], f["verdict"] or t.DASH,
                     deployed.get("mode") or t.DASH,
                     str(len(f["findings"]) + len(f["problems"]))])
    lines += _table(["file", "status", "verdict", "deployed", "findings"], rows, right=(4,))
    lines.append("")
    cut = []
    for f in doc["files"]:
        if not f["findings"] and not f["problems"] and not f["warnings"]:
            continue
        if sum(len(line) + 1 for line in lines) > COMMENT_BUDGET - 4_000:
            cut.append(f["path"])  # the notes below and the table above still fit
            continue
        lines += [f"### `{cell(f['path'])}`", ""]
        for finding in f["findings"]:
            where = cell(finding.get("path", f["path"]))
            lines.append(f"- {BAD} `{where}:{finding['line']}:{finding['col']}` "
                         f"**{cell(finding['id'])}** (`{cell(finding['key'])}`): "
                         f"{cell(finding['message'])}")
        for p in f["problems"]:
            key = f" (`{cell(p['key'])}`)" if p.get("key") else ""
            lines.append(f"- {BAD} `{cell(p['path'])}:{p['line']}:{p['col']}`{key}: "
                         f"{cell(p['message'])}")
        for w in f["warnings"]:
            lines.append(f"- ⚠️ **{cell(w['id'])}**: {cell(w['message'])}")
        lines.append("")
    if cut:
        lines += [f"Findings of {len(cut)} more file{'s' * (len(cut) != 1)} left out to fit a "
                  "PR comment; run `pd-advisor check FILE` for them.", ""]
    omitted = []
    for f in doc["files"]:
        if f.get("report") is None:
            continue
        block = _details(f"Full report: {f['path']}", recommendation_body(f["report"], 3))
        if sum(len(line) + 1 for line in lines + block) > COMMENT_BUDGET:
            omitted.append(f["path"])
            continue
        lines += block
    if omitted:
        lines.append(f"Full reports of {len(omitted)} file{'s' * (len(omitted) != 1)} left out "
                     "to fit a PR comment; run `pd-advisor recommend FILE` for them.")
    return lines


def render_markdown(doc: Mapping[str, Any], figure: str | None = None) -> str:
    """The markdown document for a recommendation or a check run, marker first (within a PR
    comment's size: the folded details go first, then the tail is cut with a note).
    ``figure``: the ``--plot`` image a recommendation shows under its verdict."""
    if doc.get("kind") == "check":
        body = check_body(doc)
    else:
        body = recommendation_body(doc, figure=figure)
        if sum(len(line) + 1 for line in body) > COMMENT_BUDGET:
            body = [*recommendation_body(doc, figure=figure, details=False),
                    "_Details left out to fit a PR comment; `--format html` or `--format json` "
                    "has them._"]
        body = _fit_comment(body)
    while body and body[-1] == "":
        body.pop()
    return "\n".join([MARKER, *body]) + "\n"
