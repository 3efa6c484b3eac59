"""Rendering of a sweep: a JSON document, CSV rows and a terminal table. Pure (no I/O).

:func:`sweep_document` turns a :class:`~advisor.core.analysis.sweep.SweepResult` into plain
data (the JSON format); the table and CSV renderers read the result directly. Non-finite numbers
(an undefined gain, no KV link without a split) are ``null`` in JSON and empty in CSV.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from io import StringIO
from typing import Any

import numpy as np
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from advisor.core.analysis.sweep import SweepResult
from advisor.core.verdict.rules import DECIDING_RULES, PRECONDITIONS, RULES, VERDICTS, ok_field

SCHEMA_VERSION = 1
COLUMNS = ("verdict", "deciding_rule", "colocated_goodput_per_gpu",
           "disaggregated_goodput_per_gpu", "gain", "ideal_gain", "rounding_loss", "mix_loss",
           "kv_utilization", "kv_transfer_share_of_ttft", "static_mix_loss",
           *(ok_field(r.id) for r in RULES), "failing", "prefill_gpus",
           "decode_gpus", "colocated_tensor_parallel", "colocated_instances",
           "colocated_chunk_tokens")
DEFAULT_MAX_ROWS = 40
SHORT = {"gpu-scale": "scale", "kv-bandwidth": "kv", "traffic-mix": "mix", "gain": "gain"}
"""Table abbreviations of the failing preconditions."""
MAX_TRANSITIONS_SHOWN = 12


def _num(x: Any) -> float | int | None:
    """A JSON-safe number (None for NaN/inf)."""
    if x is None:
        return None
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    v = float(x)
    return v if math.isfinite(v) else None


def _value(v: Any) -> Any:
    if hasattr(v, "id") and not isinstance(v, (int, float, str)):
        return v.id
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        f = float(v)
        return int(f) if f.is_integer() and abs(f) < 2**53 else f
    return v


def _indices(result: SweepResult) -> Iterator[tuple[int, ...]]:
    return (tuple(int(i) for i in idx) for idx in np.ndindex(*result.shape))


CHUNK_POINTS = 4096
"""Design points per piece of streamed CSV or JSON (#21: the text of a sweep is never held
whole, so its memory does not grow with the number of points)."""


CSV_CHUNK_POINTS = 16_384
"""Rows per piece of streamed CSV: the column-wise writer formats each distinct value of a
column once per piece, so longer pieces repeat less work (about 5 MB of text a piece)."""


def point_dict(result: SweepResult, index: tuple[int, ...]) -> dict[str, Any]:
    """One design point as plain data."""
    m = result.metrics
    out: dict[str, Any] = {a.key: _value(a.values[i])
                           for a, i in zip(result.axes, index, strict=True)}
    out["verdict"] = VERDICTS[int(m["disaggregate"][index])]
    out["deciding_rule"] = result.deciding(index)
    for name in ("colocated_goodput_per_gpu", "disaggregated_goodput_per_gpu", "gain",
                 "ideal_gain", "rounding_loss", "kv_utilization", "kv_transfer_share_of_ttft",
                 "static_mix_loss", "mix_loss"):
        out[name] = _num(m[name][index])
    for arch in ("colocated", "disaggregated"):  # None without a GPU price
        name = f"{arch}_usd_per_million_output_tokens"
        out[name] = _num(m[name][index]) if name in m else None
    out["failing"] = list(result.failing(index))
    pg, dg = int(m["prefill_gpus"][index]), int(m["decode_gpus"][index])
    out["split"] = {"prefill_gpus": pg, "decode_gpus": dg} if pg or dg else None
    tp = int(m["colocated_tensor_parallel"][index])
    out["colocated"] = ({"tensor_parallel": tp, "instances": int(m["colocated_instances"][index]),
                         "chunk_tokens": int(m["colocated_chunk_tokens"][index])} if tp else None)
    return out


def sweep_document(result: SweepResult, workload: str,
                   current: Mapping[str, Any] | None = None,
                   points: bool = True) -> dict[str, Any]:
    """The canonical JSON document of a sweep (without its points unless ``points``)."""
    current = current or {}
    crossovers = []
    for c in result.crossovers():
        crossovers.append({"key": c.key, "value": _value(c.value) if c.value is not None else None,
                           "at": dict(c.at) or None, "from_start": c.from_start,
                           "stable_from": (_value(c.stable_from) if c.stable_from is not None
                                           else None)})
    transitions = []
    if len(result.axes) == 1:
        ax = result.axes[0]
        transitions = [{"at": _value(ax.values[i]), "verdict": v}
                       for i, v in result.transitions()]
    pol = result.policy
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "sweep",
        "workload": workload,
        "name": result.workload,
        "axes": [{"key": a.key, "values": [_value(v) for v in a.values], "log": a.log,
                  "current": _value(current.get(a.key))} for a in result.axes],
        "points_total": result.size,
        "policy": None if pol is None else {
            "max_rounding_loss": pol.max_rounding_loss,
            "max_kv_link_utilization": pol.max_kv_link_utilization,
            "max_kv_transfer_share_of_ttft": pol.max_kv_transfer_share_of_ttft,
            "max_static_mix_loss": pol.max_static_mix_loss,
            "min_disagg_gain": pol.min_disagg_gain,
            "assumed_mix_drift": pol.assumed_mix_drift},
        "crossover": crossovers,
        "transitions": transitions,
        "points": [point_dict(result, idx) for idx in _indices(result)] if points else [],
    }


def json_chunks(result: SweepResult, workload: str,
                current: Mapping[str, Any] | None = None) -> Iterator[str]:
    """:func:`render_json` of :func:`sweep_document`, byte for byte, in pieces of
    :data:`CHUNK_POINTS` points: the points are never all held at once."""
    from advisor.escaping import json_escaped
    from advisor.render.report_json import sanitize

    marker = "\u0000points\u0000"
    doc = sweep_document(result, workload, current, points=False)
    text = render_json({**doc, "points": [marker]})
    quoted = json.dumps(marker)
    head, tail = text.split(quoted)  # "points" is the last key: its items sit at 4 spaces
    yield head
    piece: list[str] = []
    for n, idx in enumerate(_indices(result)):
        item = json_escaped(json.dumps(sanitize(point_dict(result, idx)), indent=2,
                                       ensure_ascii=False, allow_nan=False))
        piece.append((",\n    " if n else "") + item.replace("\n", "\n    "))
        if len(piece) == CHUNK_POINTS:
            yield "".join(piece)
            piece = []
    yield "".join(piece) + tail


def render_json(doc: Mapping[str, Any]) -> str:
    """The document as indented JSON, floats rounded (``report_json.json_text``)."""
    from advisor.render.report_json import json_text

    return json_text(doc)


def render_csv(result: SweepResult) -> str:
    """One row per design point, a header first."""
    return "".join(csv_chunks(result))


def csv_chunks(result: SweepResult) -> Iterator[str]:
    """:func:`render_csv` in pieces of :data:`CSV_CHUNK_POINTS` rows (memory independent of
    the number of points).

    Column-wise (#34): each piece formats every column of its rows at once (numbers through
    ``repr``/``str`` of Python floats and ints, each distinct value once; ``true``/``false``,
    the verdict, deciding rule and failing preconditions through lookup tables) and joins the
    rows; the bytes are those of the ``csv`` module's row-by-row writer
    (``tests/sweep/test_csv_writer.py`` compares them), several times faster."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow([a.key for a in result.axes] + list(COLUMNS))
    head = buf.getvalue()
    m = {name: arr.reshape(-1) for name, arr in result.metrics.items()}
    axis_fields = [_csv_fields([_value(v) for v in a.values]) for a in result.axes]
    total, shape = result.size, result.shape
    for start in range(0, total, CSV_CHUNK_POINTS):
        stop = min(start + CSV_CHUNK_POINTS, total)
        where = np.unravel_index(np.arange(start, stop), shape)
        cols: list[list[str]] = [fields[i].tolist() for fields, i in zip(axis_fields, where,
                                                                         strict=True)]
        for name in COLUMNS:
            cols.append(_csv_column(result, m, name, start, stop))
        body = "\n".join(map(",".join, zip(*cols, strict=True))) + "\n"
        yield head + body if start == 0 else body


def _csv_fields(values: Sequence[Any]) -> np.ndarray:
    """Each value as the ``csv`` module writes it within a row (quoted when it must be)."""
    out = []
    for v in values:
        if isinstance(v, float):
            out.append(repr(v))
        elif isinstance(v, str):
            buf = io.StringIO()
            csv.writer(buf, lineterminator="\n").writerow([v, ""])
            out.append(buf.getvalue()[:-2])  # less the empty field's "," and the newline
        else:
            out.append(str(v))
    return np.array(out, dtype=object)


_FAILING_FIELDS = tuple(
    ";".join([pid for k, pid in enumerate(PRECONDITIONS) if code >> k & 1]
             + (["gain"] if code >> len(PRECONDITIONS) else []))
    for code in range(2 ** (len(PRECONDITIONS) + 1)))
"""The ``failing`` field by code: bit k, precondition k fails; the top bit, only the gain is
short (``SweepResult.failing``)."""


def _csv_column(result: SweepResult, m: Mapping[str, np.ndarray], name: str, start: int,
                stop: int) -> list[str]:
    """Rows ``start``–``stop`` of one CSV column, as the row writer formats them."""
    if name == "verdict":
        table = np.array(VERDICTS, dtype=object)
        return list(table[m["disaggregate"][start:stop].astype(np.intp)])
    if name == "deciding_rule":
        return list(np.array(DECIDING_RULES, dtype=object)[m["deciding_rule"][start:stop]])
    if name == "failing":
        code = np.zeros(stop - start, dtype=np.intp)
        for k, pid in enumerate(PRECONDITIONS):
            code |= (~m[ok_field(pid)][start:stop].astype(bool)).astype(np.intp) << k
        gain_short = (code == 0) & ~m["disaggregate"][start:stop].astype(bool)
        code |= gain_short.astype(np.intp) << len(PRECONDITIONS)
        return list(np.array(_FAILING_FIELDS, dtype=object)[code])
    arr = m[name][start:stop]
    if arr.dtype.kind == "b":
        return list(np.where(arr, "true", "false").astype(object))
    if arr.dtype.kind in "iu":
        keys, inverse = np.unique(arr, return_inverse=True)
        return list(np.array(list(map(str, keys.tolist())), dtype=object)[inverse])
    # each distinct value formatted once (a grid repeats most columns along one axis); told
    # apart by their bits, so that 0.0 and -0.0 keep their own text
    bits = np.ascontiguousarray(arr, dtype=np.float64).view(np.int64)
    keys, inverse = np.unique(bits, return_inverse=True)
    text = [repr(v) if math.isfinite(v) else "" for v in keys.view(np.float64).tolist()]
    return list(np.array(text, dtype=object)[inverse])


# ---------------------------------------------------------------------------------------------
# table


def _fmt(x: Any, kind: str) -> str:
    if x is None:
        return "—"
    v = float(x)
    if not math.isfinite(v):
        return "∞" if v > 0 else "—"
    if kind == "pct":
        return f"{v * 100:.0f}%" if abs(v) >= 0.095 else f"{v * 100:.1f}%"
    if kind == "rate":
        return f"{v:.4g}"
    return f"{v:g}"


def crossover_lines(doc: Mapping[str, Any]) -> list[str]:
    """The crossover(s) in words."""
    lines = []
    for c in doc["crossover"]:
        where = ""
        if c["at"]:
            where = " at " + ", ".join(f"{k} = {v}" for k, v in c["at"].items())
        stable = c.get("stable_from")
        tail = ""
        if stable is not None and stable != c["value"]:
            tail = f" (it alternates; disaggregate throughout from {_show(stable)})"
        elif c["value"] is not None and stable is None:
            tail = " (not to the end of the range)"
        if c["value"] is None:
            lines.append(f"crossover{where}: never in this range (chunked prefill throughout)")
        elif c["from_start"]:
            lines.append(f"crossover{where}: disaggregate already at the first value, "
                         f"{c['key']} = {_show(c['value'])}{tail}")
        else:
            lines.append(f"crossover{where}: disaggregate from {c['key']} = "
                         f"{_show(c['value'])}{tail}")
    return lines


def _show(v: Any) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:,.6g}"
    return str(v)


def _pick_rows(n: int, keep: Sequence[int], max_rows: int) -> list[int]:
    """Row indices to show: the ends, verdict changes (each with the row before it; an even
    selection when there are too many) with at most half the rows, then an even fill."""
    if n <= max_rows:
        return list(range(n))
    chosen = {0, n - 1}
    keep = sorted(set(keep))
    pairs = max(0, (max_rows // 2 - 2) // 2)
    if len(keep) > pairs > 0:
        keep = [keep[int(j)] for j in np.linspace(0, len(keep) - 1, pairs).round()]
    elif pairs == 0:
        keep = []
    for k in keep:
        chosen.update(j for j in (k - 1, k) if 0 <= j < n)
    room = max_rows - len(chosen)
    if room > 0:
        for j in np.linspace(0, n - 1, room + 2).round().astype(int)[1:-1]:
            chosen.add(int(j))
    return sorted(chosen)[:max_rows] if len(chosen) > max_rows else sorted(chosen)


def render_table(result: SweepResult, doc: Mapping[str, Any], width: int = 100,
                 color: bool = False, max_rows: int = DEFAULT_MAX_ROWS) -> str:
    """A terminal report: header, crossover, the points (or the verdict map of a grid)."""
    buf = StringIO()
    console = Console(file=buf, width=width, color_system="standard" if color else None,
                      force_terminal=color, no_color=not color, highlight=False)
    axes = result.axes
    from advisor.render.text import visible

    title = visible(f"pd-advisor sweep — {result.workload or doc['workload']} "
                    f"({doc['workload']})")
    console.print(Text(title, style="bold"))
    for a, meta in zip(axes, doc["axes"], strict=True):
        cur = meta.get("current")
        span = (f"{_show(_value(a.values[0]))} … {_show(_value(a.values[-1]))}"
                if a.numeric and len(a) > 1 else ", ".join(a.labels))
        console.print(f"{a.key}: {len(a):,} value{'s' * (len(a) != 1)} ({span})"
                      + (f"; the workload has {_show(cur)}" if cur is not None else ""))
    console.print(f"{result.size:,} design point{'s' * (result.size != 1)} in "
                  f"{result.seconds:.2f} s")
    for line in crossover_lines(doc):
        console.print(Text(line, style="bold"))
    if len(axes) == 1:
        trans = result.transitions()
        if trans:
            shown = [f"{axes[0].labels[i]} → {v}" for i, v in trans[:MAX_TRANSITIONS_SHOWN]]
            more = len(trans) - MAX_TRANSITIONS_SHOWN
            console.print("verdict changes: " + "; ".join(shown)
                          + (f"; … {more} more" if more > 0 else ""))
        _point_table(console, result, [i for i, _ in trans], max_rows)
    else:
        _verdict_map(console, result, width)
    if len(axes) == 1:
        console.print(Text("coloc, disagg: goodput per GPU (req/s per cluster GPU within the "
                           "SLOs, binding phase); gain: disagg/coloc − 1; rounding: loss of the "
                           "integer split; KV: link utilisation; P:D: prefill:decode GPUs; "
                           "fails: scale = gpu-scale, kv = kv-bandwidth, mix = traffic-mix "
                           "(gain: only the gain is short); decided by: the rule that decided "
                           "the verdict (gain: the integer split's gain against the threshold; "
                           "a precondition: it turned a winning gain into chunked prefill)",
                           style="dim"))
    return buf.getvalue()


def _point_table(console: Console, result: SweepResult, keep: Sequence[int],
                 max_rows: int) -> None:
    ax = result.axes[0]
    m = result.metrics
    rows = _pick_rows(len(ax), keep, max_rows)
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for name, justify in ((ax.key.rsplit(".", 1)[-1], "right"), ("verdict", "left"),
                          ("decided by", "left"),
                          ("coloc", "right"), ("disagg", "right"), ("gain", "right"),
                          ("rounding", "right"), ("KV", "right"), ("P:D", "right"),
                          ("fails", "left")):
        # Ignored below: justify is one of rich's JustifyMethod literals, read from the tuple above
        # as str.
        table.add_column(name, justify=justify,  # type: ignore[arg-type]
                         no_wrap=name != "fails", overflow="fold",
                         min_width=10 if name == "fails" else None)
    last = None
    for i in rows:
        if last is not None and i > last + 1:
            table.add_row("…", "", "", "", "", "", "", "", "", "")
        idx = (i,)
        pg, dg = int(m["prefill_gpus"][idx]), int(m["decode_gpus"][idx])
        dis = bool(m["disaggregate"][idx])
        table.add_row(_show(_value(ax.values[i])) if ax.numeric else ax.labels[i],
                      Text(VERDICTS[int(dis)], style="green" if dis else ""),
                      result.deciding(idx),
                      _fmt(m["colocated_goodput_per_gpu"][idx], "rate"),
                      _fmt(m["disaggregated_goodput_per_gpu"][idx], "rate"),
                      _fmt(m["gain"][idx], "pct"),
                      _fmt(m["rounding_loss"][idx], "pct"),
                      _fmt(m["kv_utilization"][idx], "pct"),
                      f"{pg:,}:{dg:,}" if pg or dg else "—",
                      " ".join(SHORT.get(f, f) for f in result.failing(idx)) or "—")
        last = i
    console.print(table)
    if len(rows) < len(ax):
        console.print(Text(f"{len(rows)} of {len(ax):,} points shown (every point: "
                           "--format csv or json, or --max-rows)", style="dim"))


def _verdict_map(console: Console, result: SweepResult, width: int) -> None:
    """Rows: the second key; columns: the first key; D = disaggregate, · = chunked prefill."""
    ax0, ax1 = result.axes
    dis = result.metrics["disaggregate"]
    label_w = max(len(ax1.key), max(len(s) for s in ax1.labels)) + 1
    room = max(10, width - label_w - 2)
    cols = list(range(len(ax0)))
    if len(cols) > room:
        cols = sorted(set(np.linspace(0, len(ax0) - 1, room).round().astype(int).tolist()))
    console.print(f"verdict map: D = disaggregate, · = chunked prefill; columns: {ax0.key} "
                  f"({ax0.labels[cols[0]]} … {ax0.labels[cols[-1]]}"
                  + (f", {len(cols)} of {len(ax0)} columns" if len(cols) < len(ax0) else "")
                  + ")")
    console.print(Text(f"{ax1.key:>{label_w}}", style="dim"))
    for j in range(len(ax1) - 1, -1, -1):
        cells = "".join("D" if dis[i, j] else "·" for i in cols)
        line = Text(f"{ax1.labels[j]:>{label_w}} ")
        for ch in cells:
            line.append(ch, style="green" if ch == "D" else "dim")
        console.print(line)
