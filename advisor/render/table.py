"""The terminal report (rich), rendered from the JSON documents.

A recommendation reads top to bottom: the one-line verdict, a plain "no plan meets the SLOs"
panel first when no plan does, the verdict panel (what to run and why), then the sections of
:mod:`advisor.render.view` — the same ones, in the same order and words, as the markdown and
HTML reports. A check run lists each file with its status and findings at ``path:line:col``,
and its totals once.

Pure: :func:`render_table` returns a string; :func:`print_table` writes into a given console.
Tables use light box characters, wrap at the console width and stay readable at 80 columns
and without colour (``NO_COLOR``, non-TTY logs).
"""

from __future__ import annotations

from io import StringIO
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from advisor.render import text as t
from advisor.render import view as v
from advisor.render.headline import headline

if TYPE_CHECKING:
    from advisor.render.document import CheckRun, Document, Recommendation

OK = "✓"
BAD = "✗"
NA = "n/a"
MARKERS = {"bullet": "•", "arrow": "→", "dot": "·", "bad": BAD, "warn": "!"}
MARKER_STYLES = {"bad": "bold red", "warn": "yellow"}
TONES = {"note": "dim", "bad": "bold red", "warn": "bold yellow", "strong": "bold"}


# --------------------------------------------------------------------------- blocks
def _mark(mark: v.Mark) -> Text:
    if mark.passed is None:
        return Text(NA)
    return Text(OK, style="green") if mark.passed else Text(BAD, style="bold red")


def _cell(value: v.Cell) -> Text | str:
    return _mark(value) if isinstance(value, v.Mark) else value


def _grid(block: v.Grid) -> Table:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=(0, 1),
                  header_style="bold")
    for i, header in enumerate(block.headers):
        table.add_column(header, justify="right" if i in block.right else "left",
                         overflow="fold")
    for row in block.rows:
        table.add_row(*(_cell(c) for c in row))
    return table


def _pairs(block: v.Pairs) -> Table:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    for label, value in block.rows:
        grid.add_row(label, value)
    return grid


def _items(block: v.Items) -> Table:
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True, style=MARKER_STYLES.get(block.marker, ""))
    grid.add_column(overflow="fold")
    for item in block.items:
        grid.add_row(MARKERS[block.marker], item)
    return grid


def _checks(block: v.Checks) -> Group:
    rows: list[RenderableType] = []
    for c in block.rows:
        values = ("not applicable" if c.mark.passed is None
                  else f"{c.measured} measured, limit {c.limit}")
        rows.append(Text.assemble(_mark(c.mark), " ", (c.id, "bold"), f": {values}"))
        rows.append(Padding(Text.assemble((c.question, "italic"), " ", c.explanation),
                            (0, 0, 0, 2)))
    return Group(*rows)


def _block(block: v.Block) -> RenderableType:
    if isinstance(block, v.Para):
        return Text(block.text, style=TONES.get(block.tone, ""))
    if isinstance(block, v.Grid):
        return _grid(block)
    if isinstance(block, v.Pairs):
        return _pairs(block)
    if isinstance(block, v.Items):
        return _items(block)
    return _checks(block)


# --------------------------------------------------------------------------- recommendation
def _panel(section: v.Section, style: str, heavy: bool = False) -> Panel:
    return Panel(Group(*(_block(b) for b in section.blocks)), title=Text(section.title),
                 title_align="left", border_style=style, box=box.HEAVY if heavy else box.ROUNDED)


def recommendation_renderables(doc: Recommendation) -> list[RenderableType]:
    """The report as a list of renderables, in reading order."""
    path = doc["input"]["path"]
    met = doc["decision"]["any_plan_meets"]
    out: list[RenderableType] = [
        Text.assemble(("pd-advisor", "bold"), " · ", (doc["name"] or path, "bold"),
                      f" ({path})" if doc["name"] else ""),
        Text(headline(doc).line(), style="bold red" if not met else "bold")]
    for section in v.sections(doc):
        if section.id == "slo-unmet":
            out += [Text(""), _panel(section._replace(title=f"{BAD} NO PLAN MEETS THE SLOs"),
                                     "bold red", heavy=True)]
        elif section.id == "verdict":
            out += [Text(""), _panel(section, "green" if met else "red")]
        else:
            out += [Text(""), Text(section.title, style="bold underline"),
                    *(_block(b) for b in section.blocks)]
    return out


# --------------------------------------------------------------------------- check run
def check_renderables(doc: CheckRun) -> list[RenderableType]:
    """A check run: one block per file, then the totals (once)."""
    out: list[RenderableType] = []
    labels = {"pass": (f"{OK} PASS", "bold green"), "fail": (f"{BAD} FAIL", "bold red"),
              "error": (f"{BAD} ERROR", "bold red")}
    for f in doc["files"]:
        label, style = labels[f["status"]]
        head = Text.assemble((label, style), "  ", (f["path"], "bold"))
        report = f["report"]
        if report is not None:
            head.append(f"  verdict {report['verdict']}")
            deployed = report.get("deployed")
            if deployed:
                head.append(f", deployed {deployed['mode']}")
            if report["calibration"]:
                head.append(f", calibrated with {report['calibration']['file']}")
        out.append(head)
        items: list[str] = []
        for finding in f["findings"]:
            where = finding.get("path", f["path"])
            items.append(f"{where}:{finding['line']}:{finding['col']}: {finding['key']}: "
                         f"[{finding['id']}] {finding['message']}")
        for problem in f["problems"]:
            key = f"{problem['key']}: " if problem["key"] else ""
            items.append(f"{problem['path']}:{problem['line']}:{problem['col']}: {key}"
                         f"{problem['message']}")
        if items:
            out.append(Padding(_items(v.Items(tuple(items), "bad")), (0, 0, 0, 2)))
        if f["warnings"]:
            out.append(Padding(_items(v.Items(tuple(
                f"[{w['id']}] " + (f"{w['path']}:{w['line']}: " if "path" in w else "")
                + w["message"] for w in f["warnings"]), "warn")), (0, 0, 0, 2)))
    out += [Text(""), Text(t.check_totals(doc), style="bold")]
    return out


# --------------------------------------------------------------------------- entry points
def print_table(doc: Document, console: Console) -> None:
    """Write the report for ``doc`` (a recommendation or a check run) into ``console``.

    One ``print`` of the whole report (a :class:`Group` renders its parts one below the other,
    as one ``print`` each would, without the per-call set-up)."""
    items = (check_renderables(doc) if doc["kind"] == "check"
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


def render_table(doc: Document, width: int = 100, color: bool = False) -> str:
    """The report as text, ``width`` columns wide (ANSI colours only with ``color``)."""
    buffer = StringIO()
    print_table(doc, make_console(buffer, width, color))
    text = buffer.getvalue()
    if color:
        return text
    return "\n".join(line.rstrip() for line in text.split("\n"))
