"""Markdown for PR comments and ``$GITHUB_STEP_SUMMARY``, rendered from the JSON documents.

Every document starts with the hidden marker ``<!-- pd-advisor -->`` so a bot can find and
update its own comment. The sections are :mod:`advisor.render.view`'s, as in every human
format: the verdict, the plans, right-sizing, the preconditions and what to do are visible;
the numbers behind them sit in ``<details>`` blocks. Pure: returns a string.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor.render import numbers as n
from advisor.render import text as t
from advisor.render import view as v
from advisor.render.headline import headline

if TYPE_CHECKING:
    from advisor.render.document import CheckRun, Document, Recommendation

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


# --------------------------------------------------------------------------- recommendation
MARKS = {True: OK, False: BAD, None: "n/a"}
MARKERS = {"bullet": "-", "arrow": "- →", "dot": "-", "bad": f"- {BAD}", "warn": "- ⚠️"}


def _cell(value: v.Cell) -> str:
    return MARKS[value.passed] if isinstance(value, v.Mark) else value


def _block(block: v.Block, quote: bool = False) -> list[str]:
    if isinstance(block, v.Para):
        if not block.text:
            return []
        text = cell(block.text)
        if block.tone == "strong":
            text = f"**{text}**"
        elif block.tone == "note":
            text = f"_{text}_"
        elif block.tone == "warn":
            text = f"> [!WARNING]\n> {text}"
        return [text, ""]
    if isinstance(block, v.Grid):
        return [*_table(list(block.headers), [[_cell(c) for c in row] for row in block.rows],
                        right=block.right), ""]
    if isinstance(block, v.Pairs):
        return [*_table(["", ""], [[label, value] for label, value in block.rows]), ""]
    if isinstance(block, v.Items):
        return [*(f"{MARKERS[block.marker]} {cell(item)}" for item in block.items), ""]
    rows = [[MARKS[c.mark.passed], f"`{c.id}`", c.measured, c.limit,
             f"_{c.question}_ {c.explanation}"] for c in block.rows]
    return [*_table(["", "precondition", "measured", "limit", "explanation"], rows,
                    right=(2, 3)), ""]


def _section(section: v.Section, h: str) -> list[str]:
    body = [line for b in section.blocks for line in _block(b)]
    if section.id == "slo-unmet":
        return ["> [!CAUTION]", f"> **{cell(section.title)}.**", ">",
                *(f"> {line}" if line else ">" for line in body), ""]
    if section.details:
        return _details(section.title, body)
    return [f"{h} {cell(section.title)}", "", *body]


def headline_line(doc: Recommendation) -> str:
    """The one-line verdict (verdict, gain, deciding reason), escaped."""
    head = headline(doc)
    unmet = " (no plan meets the SLOs)" if not head.slo_met else ""
    reason = f" · because {cell(head.reason)}" if head.reason else ""
    return f"**Verdict: `{head.verdict}`**{unmet} · {cell(head.gain)}{reason}"


def recommendation_body(doc: Recommendation, level: int = 2, figure: str | None = None,
                        details: bool = True) -> list[str]:
    """The recommendation without the marker; headings start at ``level``. ``figure`` is
    the path (or URL) of the ``--plot`` image to show under the verdict; ``details=False``
    leaves out the folded detail sections (their titles stay, with a note)."""
    h = "#" * level
    name = f" · {cell(doc['name'])}" if doc["name"] else ""
    lines = [headline_line(doc), "", f"`{cell(doc['input']['path'])}`{name}", ""]
    for section in v.sections(doc):
        if section.id == "verdict":
            lines = [f"{h} pd-advisor: {cell(section.title)}", "", *lines,
                     *(line for b in section.blocks for line in _block(b))]
            if figure:
                lines += [f"![latency-load curves, P:D split and TTFT parts]({_link(figure)})",
                          ""]
            continue
        if section.details and not details:
            lines += _details(section.title, ["_Left out to fit a PR comment._"])
            continue
        lines += _section(section, h + "#")
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
def check_body(doc: CheckRun) -> list[str]:
    """A check run: summary table, then each file's findings and its report folded away."""
    status = {"pass": f"{OK} passed", "fail": f"{BAD} failed",
              "error": f"{BAD} could not evaluate"}[doc["status"]]
    lines = [f"## pd-advisor check: {status}", "", f"{t.check_totals(doc)}.", ""]
    rows = []
    labels = {"pass": f"{OK} pass", "fail": f"{BAD} fail", "error": f"{BAD} error"}
    for f in doc["files"]:
        report = f["report"]
        deployed = report.get("deployed") if report is not None else None
        rows.append([f"`{f['path']}`", labels[f["status"]], f["verdict"] or n.DASH,
                     deployed["mode"] if deployed else n.DASH,
                     n.count(len(f["findings"]) + len(f["problems"]))])
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
            key = f" (`{cell(p['key'])}`)" if p["key"] else ""
            lines.append(f"- {BAD} `{cell(p['path'])}:{p['line']}:{p['col']}`{key}: "
                         f"{cell(p['message'])}")
        for w in f["warnings"]:
            lines.append(f"- ⚠️ **{cell(w['id'])}**: {cell(w['message'])}")
        lines.append("")
    if cut:
        lines += [f"Findings of {n.counted(len(cut), 'more file')} left out to fit a PR "
                  "comment; run `pd-advisor check FILE` for them.", ""]
    omitted = []
    for f in doc["files"]:
        report = f["report"]
        if report is None:
            continue
        block = _details(f"Full report: {f['path']}", recommendation_body(report, 3))
        if sum(len(line) + 1 for line in lines + block) > COMMENT_BUDGET:
            omitted.append(f["path"])
            continue
        lines += block
    if omitted:
        lines.append(f"Full reports of {n.counted(len(omitted), 'file')} left out to fit a PR "
                     "comment; run `pd-advisor recommend FILE` for them.")
    return lines


def render_markdown(doc: Document, figure: str | None = None) -> str:
    """The markdown document for a recommendation or a check run, marker first (within a PR
    comment's size: the folded details go first, then the tail is cut with a note).
    ``figure``: the ``--plot`` image a recommendation shows under its verdict."""
    if doc["kind"] == "check":
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
