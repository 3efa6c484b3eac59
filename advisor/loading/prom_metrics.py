"""Prometheus metrics of vLLM or SGLang → the series ``fit --metrics`` fits (#31).

Two inputs:

* **scrapes of ``/metrics``** — the Prometheus text exposition format (prometheus.io/docs/
  instrumenting/exposition_formats: ``name{label="v",…} value [timestamp_ms]``, ``# TYPE``
  and ``# HELP`` lines), one file per scrape, in time order. The scrape times are the
  samples' timestamps when the file has them, else ``--interval`` seconds apart;
* a **Prometheus ``query_range`` export** — the JSON of ``/api/v1/query_range`` (``{"status":
  "success", "data": {"resultType": "matrix", "result": [{"metric": {"__name__": …, "le":
  …}, "values": [[t, "v"], …]}]}}``), e.g. of ``{__name__=~"vllm:.*"}``: one scrape per
  timestamp.

Every series is summed over its label sets (engines, pods, ``finished_reason``), histogram
buckets per ``le``. The metric names are the engines' own: vLLM V1
(vllm-project/vllm ``vllm/v1/metrics/loggers.py``: ``vllm:request_success_total``,
``vllm:request_prompt_tokens`` and ``vllm:request_generation_tokens`` (histograms, buckets
1-2-5 up to the context), ``vllm:prompt_tokens_total``, ``vllm:generation_tokens_total``,
``vllm:time_to_first_token_seconds``, ``vllm:inter_token_latency_seconds`` (before 0.11
``vllm:time_per_output_token_seconds``), ``vllm:request_time_per_output_token_seconds``,
``vllm:e2e_request_latency_seconds``) and SGLang (sgl-project/sglang
``python/sglang/srt/metrics/collector.py``: ``sglang:prompt_tokens_total``,
``sglang:generation_tokens_total``, ``sglang:num_requests_total``, the token histograms
``sglang:prompt_tokens_histogram`` and ``sglang:generation_tokens_histogram`` (only with
``--collect-tokens-histogram``; without them the means come from the token counters),
``sglang:time_to_first_token_seconds``, ``sglang:inter_token_latency_seconds`` (earlier
``sglang:time_per_output_token_seconds``), ``sglang:e2e_request_latency_seconds``).

Bounded input (``MAX_METRICS_BYTES`` per file, lines of at most ``MAX_LINE_BYTES``); every
problem ``path:line:col: error: key: message``, all of them, then :class:`InputError`.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from advisor.core.limits import MAX_REQUEST_LOG_BYTES, MAX_REQUEST_LOG_LINE_BYTES
from advisor.core.metrics_fit import HistogramSeries, MetricSeries
from advisor.loading.errors import InputError, InputProblem

MAX_METRICS_BYTES = MAX_REQUEST_LOG_BYTES
MAX_LINE_BYTES = MAX_REQUEST_LOG_LINE_BYTES
MAX_PROBLEMS = 20

NAMES: dict[str, dict[str, tuple[str, ...]]] = {
    "vllm": {
        "requests": ("vllm:request_success_total",),
        "prompt_hist": ("vllm:request_prompt_tokens",),
        "output_hist": ("vllm:request_generation_tokens",),
        "prompt_tokens": ("vllm:prompt_tokens_total",),
        "output_tokens": ("vllm:generation_tokens_total",),
        "ttft": ("vllm:time_to_first_token_seconds",),
        "itl": ("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"),
        "tpot": ("vllm:request_time_per_output_token_seconds",),
        "e2e": ("vllm:e2e_request_latency_seconds",),
    },
    "sglang": {
        "requests": ("sglang:num_requests_total",),
        "prompt_hist": ("sglang:prompt_tokens_histogram",),
        "output_hist": ("sglang:generation_tokens_histogram",),
        "prompt_tokens": ("sglang:prompt_tokens_total",),
        "output_tokens": ("sglang:generation_tokens_total",),
        "ttft": ("sglang:time_to_first_token_seconds",),
        "itl": ("sglang:inter_token_latency_seconds", "sglang:time_per_output_token_seconds"),
        "tpot": (),
        "e2e": ("sglang:e2e_request_latency_seconds",),
    },
}
"""The series each role is read from, first present wins."""

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(?:\s+(-?\d+))?\s*$")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')


@dataclass
class _Scrape:
    path: str
    time_s: float | None
    values: dict[tuple[str, str], float]
    """(name, le or "") → value summed over the other labels."""


def _labels(text: str) -> dict[str, str] | None:
    out: dict[str, str] = {}
    pos = 0
    while pos < len(text):
        m = _LABEL.match(text, pos)
        if m is None or m.end() == pos:
            return None if text[pos:].strip() else out
        out[m.group(1)] = m.group(2)
        pos = m.end()
    return out


def _number(text: str) -> float | None:
    low = text.lower()
    if low in ("+inf", "inf"):
        return math.inf
    if low in ("-inf", "nan"):
        return None
    try:
        return float(text)
    except ValueError:
        return None


def read_exposition(path: Path) -> _Scrape:
    """One scrape in the text exposition format (module docstring)."""
    shown = str(path)
    data = _read(path)
    problems: list[InputProblem] = []
    values: dict[tuple[str, str], float] = defaultdict(float)
    stamps: list[float] = []
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError([InputProblem(path=shown, line=1, col=1, key="",
                                       message=f"not UTF-8 text (byte {exc.start})")]
                         ) from None
    for number, line in enumerate(text.splitlines(), 1):
        if len(problems) >= MAX_PROBLEMS:
            break
        if len(line) > MAX_LINE_BYTES:
            problems.append(InputProblem(path=shown, line=number, col=1, key="",
                                         message="line longer than "
                                         f"{MAX_LINE_BYTES:,} bytes"))
            continue
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        m = _SAMPLE.match(stripped)
        labels = _labels(m.group(3) or "") if m else None
        value = _number(m.group(4)) if m else None
        if m is None or labels is None:
            problems.append(InputProblem(path=shown, line=number, col=1, key="",
                                         message="not a Prometheus sample line "
                                         "(name{label=\"value\"} value [timestamp])"))
            continue
        name = m.group(1)
        if value is None or (math.isinf(value) and not name.endswith("_bucket")):
            if name.split(":", 1)[0] in ("vllm", "sglang"):
                col = line.find(m.group(4)) + 1
                problems.append(InputProblem(path=shown, line=number, col=col, key=name,
                                             message=("expected a finite number, got "
                                                      f"{m.group(4)!r}")))
            continue
        if value < 0 and name.split(":", 1)[0] in ("vllm", "sglang"):
            col = line.find(m.group(4)) + 1
            problems.append(InputProblem(path=shown, line=number, col=col, key=name,
                                         message=f"a count below 0 ({m.group(4)})"))
            continue
        values[(name, labels.get("le", "") if name.endswith("_bucket") else "")] += value
        if m.group(5):
            stamps.append(int(m.group(5)) / 1000.0)
    if problems:
        raise InputError(problems)
    if not any(n.split(":", 1)[0] in ("vllm", "sglang") for n, _ in values):
        raise InputError([InputProblem(path=shown, line=1, col=1, key="",
                                       message="no vllm:* or sglang:* metrics: "
                                       "expected a scrape of a vLLM or SGLang /metrics "
                                       "endpoint")])
    return _Scrape(shown, max(stamps) if stamps else None, dict(values))


def read_query_range(path: Path) -> list[_Scrape]:
    """A Prometheus ``query_range`` JSON export → one scrape per timestamp."""
    shown = str(path)
    data = _read(path)
    try:
        doc = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise InputError([InputProblem(path=shown, line=1, col=1, key="",
                                       message=f"not UTF-8 text (byte {exc.start})")]
                         ) from None
    except json.JSONDecodeError as exc:
        hint = " (truncated?)" if exc.pos >= len(data) - 2 else ""
        raise InputError([InputProblem(path=shown, line=exc.lineno, col=exc.colno, key="",
                                       message=f"not JSON: {exc.msg}{hint}")]) from None
    result = doc.get("data", {}).get("result") if isinstance(doc, dict) else None
    if not isinstance(result, list) or doc.get("data", {}).get("resultType") != "matrix":
        raise InputError([InputProblem(path=shown, line=1, col=1, key="data.result",
                                       message="expected a Prometheus "
                                       "query_range answer: data.resultType matrix with "
                                       "data.result series")])
    by_time: dict[float, dict[tuple[str, str], float]] = defaultdict(lambda: defaultdict(float))
    for i, series in enumerate(result):
        metric = series.get("metric") if isinstance(series, dict) else None
        values = series.get("values") if isinstance(series, dict) else None
        if not isinstance(metric, dict) or not isinstance(values, list) or not isinstance(
                metric.get("__name__"), str):
            raise InputError([InputProblem(path=shown, line=1, col=1, key=f"data.result[{i}]",
                                           message="expected "
                                           "{metric: {__name__, …}, values: [[t, v], …]}")])
        name = metric["__name__"]
        le = str(metric.get("le", "")) if name.endswith("_bucket") else ""
        for pair in values:
            if not (isinstance(pair, list) and len(pair) == 2):
                raise InputError([InputProblem(path=shown, line=1, col=1,
                                               key=f"data.result[{i}].values",
                                               message="expected [timestamp, \"value\"] pairs")])
            value = _number(str(pair[1]))
            stamp = pair[0]
            if value is None or isinstance(stamp, bool) or not isinstance(stamp, int | float):
                raise InputError([InputProblem(path=shown, line=1, col=1,
                                               key=f"data.result[{i}].values",
                                               message=f"not a number: {pair!r:.40}")])
            by_time[float(stamp)][(name, le)] += value
    return [_Scrape(f"{shown}@{t:g}", t, dict(v)) for t, v in sorted(by_time.items())]


def _read(path: Path) -> bytes:
    shown = str(path)
    try:
        with path.open("rb") as handle:
            data: bytes = handle.read(MAX_METRICS_BYTES + 1)
    except OSError as exc:
        raise InputError([InputProblem(path=shown, line=1, col=1, key="",
                                       message=f"cannot read: {exc.strerror or exc}")]
                         ) from None
    if len(data) > MAX_METRICS_BYTES:
        raise InputError([InputProblem(path=shown, line=1, col=1, key="",
                                       message=f"larger than {MAX_METRICS_BYTES:,} "
                                       "bytes")])
    return data


def _engine(scrapes: list[_Scrape]) -> str:
    names = {n for s in scrapes for n, _ in s.values}
    return "vllm" if any(n.startswith("vllm:") for n in names) else "sglang"


def _pick(scrapes: list[_Scrape], names: tuple[str, ...]) -> str | None:
    for name in names:
        if all((name, "") in s.values or any(k[0] == name + "_bucket" for k in s.values)
               or (name + "_count", "") in s.values for s in scrapes):
            return name
    return None


def _histogram(scrapes: list[_Scrape], name: str) -> HistogramSeries | None:
    les = sorted({le for s in scrapes for (n, le) in s.values if n == name + "_bucket"},
                 key=lambda x: _number(x) or 0.0)
    if not les:
        return None
    bounds = np.array([_number(x) if _number(x) is not None else math.inf for x in les])
    counts = np.array([[s.values.get((name + "_bucket", le), 0.0) for le in les]
                       for s in scrapes])
    sums = np.array([s.values.get((name + "_sum", ""), 0.0) for s in scrapes])
    return HistogramSeries(bounds=bounds, counts=counts, sums=sums)


def series_of(scrapes: list[_Scrape], interval_s: float | None) -> MetricSeries:
    """The counters and histograms ``fit_metrics`` reads, from scrapes in time order."""
    first = scrapes[0].path.split("@", 1)[0]
    if len(scrapes) < 2:
        raise InputError([InputProblem(path=first, line=1, col=1, key="",
                                       message="one scrape holds totals since the "
                                       "server started; rates need two or more (scrapes some "
                                       "time apart, or a query_range export)")])
    if all(s.time_s is not None for s in scrapes):
        times = np.array([s.time_s for s in scrapes], dtype=float)
    elif interval_s is not None:
        times = np.arange(len(scrapes)) * float(interval_s)
    else:
        raise InputError([InputProblem(path=first, line=1, col=1, key="",
                                       message="the scrapes carry no timestamps: give "
                                       "--interval SECONDS (the time between consecutive "
                                       "scrapes)")])
    bad = [s for s, d in zip(scrapes[1:], np.diff(times), strict=True) if d <= 0]
    if bad:
        raise InputError([InputProblem(path=bad[0].path.split("@", 1)[0], line=1, col=1, key="",
                                       message="scrapes must "
                                       "be given in time order, at distinct times")])
    engine = _engine(scrapes)
    roles = NAMES[engine]
    latency = {}
    for role in ("ttft", "itl", "tpot", "e2e"):
        name = _pick(scrapes, roles[role])
        hist = _histogram(scrapes, name) if name else None
        if hist is not None:
            latency[role] = hist
    req_name = _pick(scrapes, roles["requests"])
    if req_name is not None:
        requests = np.array([s.values.get((req_name, ""), 0.0) for s in scrapes])
    elif "e2e" in latency:
        requests = latency["e2e"].counts[:, -1]
    else:
        raise InputError([InputProblem(path=first, line=1, col=1, key=roles["requests"][0],
                                       message="missing (and no "
                                       "end-to-end latency histogram to count requests with)")])

    def counter(role: str) -> np.ndarray | None:
        name = _pick(scrapes, roles[role])
        return None if name is None else np.array([s.values.get((name, ""), 0.0)
                                                   for s in scrapes])

    prompt_h = next((h for n in roles["prompt_hist"] if (h := _histogram(scrapes, n))), None)
    output_h = next((h for n in roles["output_hist"] if (h := _histogram(scrapes, n))), None)
    if prompt_h is None and counter("prompt_tokens") is None:
        raise InputError([InputProblem(path=first, line=1, col=1, key=(roles["prompt_hist"] or
                                                     roles["prompt_tokens"])[0],
                                       message=("missing: no token histogram or counter to "
                                                "measure the prompt lengths with"))])
    return MetricSeries(times_s=times, requests=requests, prompt=prompt_h, output=output_h,
                        prompt_tokens=counter("prompt_tokens"),
                        output_tokens=counter("output_tokens"), latency=latency,
                        engine=engine)


def load_metrics(paths: list[Path], interval_s: float | None = None) -> MetricSeries:
    """Scrapes (text exposition, one per file) or one ``query_range`` export → the series;
    every problem of every file in one :class:`InputError`."""
    scrapes: list[_Scrape] = []
    problems: list[InputProblem] = []
    for path in paths:
        try:
            head = _read(path)[:64].lstrip()
            if head.startswith(b"{"):
                scrapes += read_query_range(path)
            else:
                scrapes.append(read_exposition(path))
        except InputError as exc:
            problems += exc.problems
    if problems:
        raise InputError(problems)
    return series_of(scrapes, interval_s)


def describe(series: MetricSeries) -> dict[str, Any]:
    """Which series were read (for the report)."""
    return {"engine": series.engine, "scrapes": int(series.times_s.size),
            "token_histograms": series.prompt is not None,
            "latency_histograms": sorted(series.latency)}
