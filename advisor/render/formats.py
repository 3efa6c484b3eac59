"""The output formats and the renderer of each, closed with ``assert_never``.

Every renderer takes the canonical JSON document (a recommendation or a check run, the typed
documents of :mod:`advisor.render.document`) and returns text; ``recommend`` offers
:data:`RECOMMEND_FORMATS`, ``check`` all of them.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, assert_never, cast

if TYPE_CHECKING:
    from advisor.render.document import Document

Renderer = Callable[["Document"], str]


class Format(str, enum.Enum):
    """``--format`` choices."""

    table = "table"
    json = "json"
    markdown = "markdown"
    github = "github"
    sarif = "sarif"
    junit = "junit"
    html = "html"


class RecommendFormat(str, enum.Enum):
    """The formats ``recommend`` offers (a recommendation is not a gate)."""

    table = "table"
    json = "json"
    markdown = "markdown"
    html = "html"


@dataclass(frozen=True)
class Figure:
    """The recommendation's figure, for the renderers that show it."""

    svg: str | None = None
    """The ``<svg>`` element the HTML report inlines."""
    path: str | None = None
    """Where ``--plot`` wrote the image, relative to the report's directory (the markdown
    report links it)."""
    note: str | None = None
    """Shown by the HTML report in place of a missing SVG (why it is missing)."""


RECOMMEND_FORMATS: tuple[Format, ...] = tuple(Format(f.value) for f in RecommendFormat)


class EmitEngine(str, enum.Enum):
    """``recommend --emit`` choices: the engine whose launch commands follow the report
    (``advisor.render.launch``)."""

    vllm = "vllm"
    sglang = "sglang"


class Emit(str, enum.Enum):
    """``recommend --emit`` choices: an engine's launch script (``advisor.render.launch``) or
    a Kubernetes manifest (``advisor.render.k8s_*``)."""

    vllm = "vllm"
    sglang = "sglang"
    trtllm = "trtllm"
    dynamo = "dynamo"
    llm_d = "llm-d"
    kserve = "kserve"
    lws = "lws"


def render_json(doc: Document) -> str:
    """The document as indented JSON, floats rounded (``report_json.json_text``)."""
    from advisor.render.report_json import json_text

    return json_text(doc)


def renderer(fmt: Format, width: int = 100, color: bool = False,
             srcroot: str | None = None, figure: Figure | None = None) -> Renderer:
    """The renderer for ``fmt`` (``width`` and ``color`` apply to the table only, ``srcroot``,
    the directory relative workload paths are relative to, to SARIF only, ``figure`` to
    markdown and HTML)."""
    fig = figure or Figure()
    if fmt is Format.table:
        from advisor.render.table import render_table

        return lambda doc: render_table(doc, width=width, color=color)
    if fmt is Format.json:
        return render_json
    if fmt is Format.markdown:
        from advisor.render.markdown import render_markdown

        return lambda doc: render_markdown(doc, figure=fig.path)
    if fmt is Format.github:
        from advisor.render.github import render_github

        return render_github
    if fmt is Format.sarif:
        from advisor.render.sarif import render_sarif

        return lambda doc: render_sarif(doc, srcroot)
    if fmt is Format.junit:
        from advisor.render.junit import render_junit

        return render_junit
    if fmt is Format.html:
        from advisor.render.html import render_html

        return lambda doc: render_html(doc, fig.svg, fig.note)
    assert_never(fmt)


def render(doc: Document, fmt: Format, width: int = 100, color: bool = False,
           srcroot: str | None = None, figure: Figure | None = None) -> str:
    """Render ``doc`` in ``fmt``; outside JSON, control characters in its strings (user
    names, phase names, paths, model ids) are shown escaped (``text.visible``)."""
    if fmt is not Format.json:
        from advisor.render.text import visible_doc

        doc = cast("Document", visible_doc(doc))
    return renderer(fmt, width=width, color=color, srcroot=srcroot, figure=figure)(doc)
