"""``--format html``: one self-contained HTML file for design reviews.

Verdict first (the headline: verdict, gain, deciding reason), then the sections of
:mod:`advisor.render.view` — the same as every human format: the plans (with the figure under
them: inline SVG given by the caller, a note when matplotlib is missing), right-sizing, the
preconditions, the verdict boundaries, the declared deployment, warnings, what to measure,
inputs, cost, the P:D splits, fragility, the KV transfer, interference, phases. CSS is inline;
there are no scripts and nothing is fetched. Every string from the document goes through
``html.escape``; the SVG comes from matplotlib, which escapes the text it draws.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape
from typing import TYPE_CHECKING

from advisor.render import numbers as n
from advisor.render import text as t
from advisor.render import view as v
from advisor.render.headline import headline

if TYPE_CHECKING:
    from advisor.render.document import CheckRun, Document, Recommendation

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
.warn{border-left:4px solid #b8860b;padding-left:.6em}.strong{font-weight:600}
.note{color:#555;font-size:.92em}figure{margin:1em 0}figure svg{max-width:100%;height:auto}
li{margin:.2em 0}code{background:#f2f2f2;padding:0 .2em}
"""
OK, BAD = "✔", "✘"


def e(value: object) -> str:
    """Escape text for HTML (quotes too)."""
    return escape(str(value), quote=True)


MARKS = {True: f'<span class="ok">{OK}</span>', False: f'<span class="bad">{BAD}</span>',
         None: "n/a"}


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


def _cell(value: v.Cell) -> str:
    return MARKS[value.passed] if isinstance(value, v.Mark) else e(value)


TONES = {"note": ' class="note"', "warn": ' class="warn"', "bad": ' class="bad"',
         "strong": ' class="strong"'}


def _block(block: v.Block) -> str:
    if isinstance(block, v.Para):
        return f"<p{TONES.get(block.tone, '')}>{e(block.text)}</p>" if block.text else ""
    if isinstance(block, v.Grid):
        return _table([e(h) for h in block.headers], [[_cell(c) for c in row]
                                                      for row in block.rows], block.right)
    if isinstance(block, v.Pairs):
        return _table(["", ""], [[e(a), e(b)] for a, b in block.rows])
    if isinstance(block, v.Items):
        return _list(block.items)
    return _table(["", "precondition", "measured", "limit", "explanation"],
                  [[MARKS[c.mark.passed], f"<code>{e(c.id)}</code>", e(c.measured), e(c.limit),
                    f"<em>{e(c.question)}</em> {e(c.explanation)}"] for c in block.rows],
                  numeric=(2, 3))


def _section(section: v.Section) -> str:
    body = "".join(_block(b) for b in section.blocks)
    return f'<section id="{e(section.id)}"><h2>{e(section.title)}</h2>{body}</section>'


# --------------------------------------------------------------------------- recommendation
def _verdict(doc: Recommendation, section: v.Section) -> str:
    head = headline(doc)
    unmet = "" if head.slo_met else " unmet"
    name = doc["name"] or doc["input"]["path"]
    parts = [f'<div class="verdict{unmet}" id="verdict">',
             f"<h1>{e(section.title)}</h1>",
             f'<p class="headline">Verdict: <code>{e(head.verdict)}</code>'
             + ("" if head.slo_met else ' <span class="bad">(no plan meets the SLOs)</span>')
             + f" · {e(head.gain)}"
             + (f" · because {e(head.reason)}" if head.reason else "") + "</p>",
             f'<p class="path">{e(name)} — {e(doc["input"]["path"])}</p>',
             *(_block(b) for b in section.blocks), "</div>"]
    return "".join(parts)


def _figure(svg: str | None, note: str | None) -> str:
    if svg:
        return ('<figure role="img" aria-label="latency-load curves, P:D allocation and '
                f'TTFT decomposition">{svg}</figure>')
    return f'<p class="note">{e(note or "The figure is not available.")}</p>'


def recommendation_html(doc: Recommendation, svg: str | None, note: str | None) -> str:
    """The body of a recommendation report: the sections of ``advisor.render.view`` (the
    verdict box first, the figure under the plans)."""
    out: list[str] = []
    for section in v.sections(doc):
        if section.id == "verdict":
            out.append(_verdict(doc, section))
            continue
        out.append(_section(section))
        if section.id == "plans":
            out.append(f'<section id="figure"><h2>Latency against load, P:D split, TTFT</h2>'
                       f"{_figure(svg, note)}</section>")
    return "".join(out)


# --------------------------------------------------------------------------- check run
def check_html(doc: CheckRun) -> str:
    """A check run: the totals, one row per file, then each file's findings."""
    labels = {"pass": MARKS[True] + " pass", "fail": MARKS[False] + " fail",
              "error": MARKS[False] + " error"}
    out = [f"<h1>pd-advisor check: {e(doc['status'])}</h1>",
           f"<p>{e(t.check_totals(doc))}.</p>",
           _table(["file", "status", "verdict", "findings"],
                  [[f"<code>{e(f['path'])}</code>", labels[f["status"]],
                    e(f["verdict"] or n.DASH),
                    e(n.count(len(f["findings"]) + len(f["problems"])))] for f in doc["files"]],
                  numeric=(3,))]
    for f in doc["files"]:
        items = [f"{x.get('path', f['path'])}:{x['line']}:{x['col']}: [{x['id']}] "
                 f"{x['message']}"
                 for x in f["findings"]]
        items += [f"{p['path']}:{p['line']}:{p['col']}: {p['message']}" for p in f["problems"]]
        items += [f"warning [{w['id']}] {w['message']}" for w in f["warnings"]]
        if items:
            out.append(f"<section><h2>{e(f['path'])}</h2>{_list(items)}</section>")
    return "".join(out)


def render_html(doc: Document, svg: str | None = None,
                figure_note: str | None = None) -> str:
    """The whole HTML document for a recommendation (with ``svg``, the figure's ``<svg>``
    element, or ``figure_note`` in its place) or a check run."""
    if doc["kind"] == "check":
        title = "pd-advisor check"
        body = check_html(doc)
        version, sha = doc["tool"]["version"], ""
    else:
        title = f"pd-advisor: {doc['name'] or doc['input']['path']}: {doc['verdict']}"
        body = recommendation_html(doc, svg, figure_note)
        version, sha = doc["tool"]["version"], doc["input"]["sha256"][:16]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{e(title)}</title><style>{CSS}</style></head>"
            f"<body>{body}<footer class=\"note\"><p>pd-advisor "
            f"{e(version)} · input sha256 {e(sha)}</p></footer></body></html>\n")
