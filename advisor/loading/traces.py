"""Request logs in public formats → arrival times and token lengths (``fit``, ``simulate --trace``).

Formats (``--format-trace``; ``auto`` tells them apart by their first line):

* **mooncake** — Mooncake / Kimi traces, JSON Lines, one request a line:
  ``{"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, …]}``;
  ``timestamp`` in milliseconds from the start of the log, ``hash_ids`` the chained hashes of
  the prompt's 512-token blocks (github.com/kvcache-ai/Mooncake, ``FAST25-release/traces``;
  Qin et al., "Mooncake", FAST '25, arXiv:2407.00079).
* **azure** — Azure LLM inference traces 2023/2024, CSV ``TIMESTAMP,ContextTokens,
  GeneratedTokens`` with ``TIMESTAMP`` a date and time (``2023-11-16 18:15:46.6805900``)
  (github.com/Azure/AzurePublicDataset, ``AzureLLMInferenceDataset2023.md``).
* **burstgpt** — BurstGPT, CSV ``Timestamp,Model,Request tokens,Response tokens,Total tokens,
  Log Type`` with ``Timestamp`` in seconds from the start of the log (github.com/HPMLL/BurstGPT).
* **vllm-bench** — ``vllm bench serve --save-result --save-detailed`` JSON: the per-request
  arrays ``start_times`` (s, send time), ``input_lens`` and ``output_lens``, and ``errors``
  (github.com/vllm-project/vllm, ``vllm/benchmarks/serve.py``). Only the arrays needed are
  decoded; the others (texts, inter-token latencies) are skipped without being parsed.

Bounded input: each file is read once into memory, at most ``MAX_TRACE_BYTES`` (64 MiB; a
longer one is refused after reading one byte past the limit, whatever ``stat`` says), before
its format is sniffed, so a pipe or ``/dev/stdin`` is read whole (#33); lines of at most
``MAX_LINE_BYTES`` (1 MiB) in the line formats (mooncake, azure, burstgpt); CR-only line ends
(classic Mac) are read as line ends. A vllm-bench file is one JSON document: its strings are
skipped in linear time without being decoded. Every row is checked — numbers finite,
lengths whole and at least 1 token (a 0-token output is a failed request: remove it from the
log), at most ``MAX_TOKENS`` — and timestamps must not go backwards; every problem is reported as
``path:line:col: error: field: message`` (at most ``MAX_PROBLEMS`` per file) and the file is
rejected with :class:`~advisor.loading.errors.InputError`.

Prefix reuse (mooncake ``hash_ids``): a request's leading blocks whose hash appeared in an
earlier request are reusable from a prefix cache of unbounded size; the measured share is
Σ min(hits × 512, prompt) / Σ prompt (an upper bound for a real, finite cache).
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np

from advisor.core.limits import MAX_REQUEST_LOG_BYTES, MAX_REQUEST_LOG_LINE_BYTES, MAX_TOKENS
from advisor.loading.errors import InputError, InputProblem
from advisor.loading.input_file import InputTooLarge, UnreadableFileError, read_input

TraceFormat = Literal["auto", "mooncake", "azure", "burstgpt", "vllm-bench"]
FORMATS: tuple[str, ...] = ("mooncake", "azure", "burstgpt", "vllm-bench")
MAX_TRACE_BYTES = MAX_REQUEST_LOG_BYTES
MAX_LINE_BYTES = MAX_REQUEST_LOG_LINE_BYTES
MAX_PROBLEMS = 20
MOONCAKE_BLOCK_TOKENS = 512
"""Tokens per ``hash_ids`` block in the Mooncake traces (Mooncake FAST '25 trace release)."""
MIN_REQUESTS = 2
TIME_UNIT_S: dict[str, float | None] = {"mooncake": 0.001, "azure": None, "burstgpt": 1.0,
                                        "vllm-bench": 1.0}
"""The unit of each format's time field (azure: a date and time)."""
_HASH_FLUSH = 1 << 20
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, kw_only=True)
class RequestLog:
    """The requests of one or more logs, in arrival order."""

    paths: tuple[str, ...]
    format: str
    arrival_s: np.ndarray
    """Seconds from the first request (after ``time_scale``)."""
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    prefix_hit_blocks: np.ndarray | None
    """Per request: leading prompt blocks seen in an earlier request (mooncake only)."""
    prefix_blocks: np.ndarray | None
    """Per request: its ``hash_ids`` blocks."""
    block_tokens: int | None
    start_epoch_s: float | None
    """Absolute time of the first request (UTC seconds) when the format has one (azure)."""
    time_unit_s: float | None
    """The unit of the format's time field (0.001: Mooncake's milliseconds; None: a date and
    time, or logs of several units joined)."""
    time_scale: float

    @property
    def requests(self) -> int:
        """Number of requests."""
        return int(self.arrival_s.size)


class _Rows:
    """Collected columns and problems of one file."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.t = array("d")
        self.p = array("q")
        self.o = array("q")
        self.problems: list[InputProblem] = []
        self.prev_t = -math.inf
        self.prev_line = 0
        self.full = False

    def problem(self, line: int, key: str, message: str, col: int = 1) -> None:
        if len(self.problems) >= MAX_PROBLEMS:
            self.full = True
            return
        self.problems.append(InputProblem(path=self.path, line=line, col=col, key=key,
                                          message=message))

    def add(self, line: int, t: float, prompt: int, output: int, time_key: str) -> bool:
        if t < self.prev_t:
            self.problem(line, time_key, f"{_g(t)} is earlier than the previous request's "
                         f"{_g(self.prev_t)} (line {self.prev_line}): the log must be in "
                         "arrival order")
            return False
        self.prev_t, self.prev_line = t, line
        self.t.append(t)
        self.p.append(prompt)
        self.o.append(output)
        return True


def _g(x: float) -> str:
    return f"{x:.10g}"


def _tokens(rows: _Rows, line: int, key: str, value: Any, what: str) -> int | None:
    """A whole token count ≥ 1 (a problem otherwise)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        rows.problem(line, key, f"expected a whole number of tokens, got {_shown(value)}")
        return None
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        rows.problem(line, key, f"expected a whole number of tokens, got {_g(value)}")
        return None
    n = int(value)
    if n < 1:
        hint = (" (a failed request? remove it from the log)" if what == "output" else "")
        rows.problem(line, key, f"{n} {what} tokens; every request needs at least 1{hint}")
        return None
    if n > MAX_TOKENS:
        rows.problem(line, key, f"{_shown(n)} tokens is more than {MAX_TOKENS:,}")
        return None
    return n


def _number(rows: _Rows, line: int, key: str, value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        rows.problem(line, key, f"expected a number, got {_shown(value)}")
        return None
    if isinstance(value, int) and abs(value) > 10**15:  # 10**400 does not convert to float
        rows.problem(line, key, f"expected a finite time, got {_shown(value)}")
        return None
    x = float(value)
    if not math.isfinite(x) or abs(x) > 1e15:
        rows.problem(line, key, f"expected a finite time, got {_shown(value)}")
        return None
    return x


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# ------------------------------------------------------------------------------ reading
class _TooBig(Exception):
    pass


def _read(path: Path) -> bytes:
    """The log's bytes, read once and bounded (:func:`~advisor.loading.input_file.read_input`):
    a pipe or ``/dev/stdin`` is read whole before the format is sniffed (#33)."""
    try:
        data = read_input(path, MAX_TRACE_BYTES)
    except InputTooLarge as exc:
        raise InputError([InputProblem(path=str(path), line=1, col=1, key="",
                                       message=_too_big(exc.size))]) from None
    except UnreadableFileError as exc:
        raise InputError([InputProblem(path=str(path), line=exc.line, col=exc.col, key="",
                                       message=exc.message)]
                         ) from None
    if b"\n" not in data and b"\r" in data:  # classic Mac line ends: one line per CR
        data = data.replace(b"\r", b"\n")
    return data


def _too_big(size: int | None) -> str:
    shown = f"{size:,} bytes" if size is not None else f"more than {MAX_TRACE_BYTES:,} bytes"
    return (f"the log is {shown}; logs are limited to {MAX_TRACE_BYTES:,} bytes (64 MiB): "
            "split it (e.g. by day) and pass the parts")


def _lines(handle: Any, path: str) -> Iterator[tuple[int, bytes]]:
    """Numbered lines, at most MAX_TRACE_BYTES in all and MAX_LINE_BYTES each."""
    total = 0
    number = 0
    while True:
        line = handle.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        total += len(line)
        if total > MAX_TRACE_BYTES:
            raise _TooBig
        number += 1
        if len(line) > MAX_LINE_BYTES:
            raise InputError([InputProblem(path=path, line=number, col=1, key="",
                                           message=f"line longer than "
                                           f"{MAX_LINE_BYTES:,} bytes")])
        yield number, line


def _text(rows: _Rows, number: int, raw: bytes) -> str | None:
    try:
        return raw.decode("utf-8-sig" if number == 1 else "utf-8")
    except UnicodeDecodeError as exc:
        rows.problem(number, "", f"not UTF-8 text (byte {exc.start + 1})")
        return None


# ------------------------------------------------------------------------------ formats
def _mooncake(handle: Any, rows: _Rows, hashes: _PrefixHits) -> None:
    for number, raw in _lines(handle, rows.path):
        if rows.full:
            break
        text = _text(rows, number, raw)
        if text is None or not text.strip():
            continue
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError) as exc:
            rows.problem(number, "", f"not a JSON object: {str(exc)[:80]}")
            continue
        if not isinstance(obj, dict):
            rows.problem(number, "", "expected a JSON object with timestamp, input_length "
                         "and output_length")
            continue
        missing = [k for k in ("timestamp", "input_length", "output_length") if k not in obj]
        if missing:
            rows.problem(number, missing[0], "missing (a Mooncake trace line has timestamp, "
                         "input_length, output_length and hash_ids)")
            continue
        t = _number(rows, number, "timestamp", obj["timestamp"])
        p = _tokens(rows, number, "input_length", obj["input_length"], "prompt")
        o = _tokens(rows, number, "output_length", obj["output_length"], "output")
        ids = _hash_ids(obj.get("hash_ids", []))
        if ids is None:
            rows.problem(number, "hash_ids", "expected a list of integers")
        if t is None or p is None or o is None or ids is None:
            continue
        if rows.add(number, t / 1000.0, p, o, "timestamp"):
            hashes.add(ids)


def _hash_ids(value: Any) -> np.ndarray | None:
    """The ids as int64 (None unless a flat list of integers within int64)."""
    if not isinstance(value, list):
        return None
    if not value:
        return np.zeros(0, dtype=np.int64)
    try:
        arr = np.asarray(value)
    except (ValueError, OverflowError, TypeError):
        return None
    if arr.ndim != 1 or arr.dtype.kind not in "iu" or (
            arr.dtype.kind == "u" and int(arr.max()) >= 2**63):
        return None
    return arr.astype(np.int64, copy=False)


def _csv_rows(handle: Any, rows: _Rows) -> Iterator[tuple[int, list[str]]]:
    """CSV records (line number, fields) from bounded, UTF-8 lines."""
    def texts() -> Iterator[str]:
        for number, raw in _lines(handle, rows.path):
            text = _text(rows, number, raw)
            yield "" if text is None else text

    reader = csv.reader(texts())
    while True:
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            rows.problem(reader.line_num, "", f"not CSV: {exc}")
            return
        yield reader.line_num, fields


_AZURE = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
_BURST = ("Timestamp", "Request tokens", "Response tokens")


def _columns(rows: _Rows, header: list[str], wanted: tuple[str, ...], name: str) -> list[int]:
    cleaned = [h.strip() for h in header]
    missing = [w for w in wanted if w not in cleaned]
    if missing:
        rows.problem(1, "", f"missing column{'s' * (len(missing) > 1)} "
                     f"{', '.join(missing)} of a {name} log; the header has "
                     f"{', '.join(_shown(h) for h in cleaned[:8]) or 'nothing'}")
        return []
    return [cleaned.index(w) for w in wanted]


_STAMP = re.compile(r"^\s*(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?\s*$")


def _azure_time(text: str) -> float | None:
    m = _STAMP.match(text)
    if m is None:
        return None
    try:
        dt = datetime.fromisoformat(f"{m.group(1)} {m.group(2)}").replace(tzinfo=UTC)
    except ValueError:
        return None
    frac = m.group(3) or "0"
    scale: int = 10 ** len(frac)  # int ** int is typed int | float
    return (dt - _EPOCH).total_seconds() + int(frac) / scale


def _csv(handle: Any, rows: _Rows, fmt: str) -> float | None:
    """Azure or BurstGPT rows; the absolute time of the first request (azure)."""
    wanted, name = (_AZURE, "Azure LLM inference") if fmt == "azure" else (_BURST, "BurstGPT")
    cols: list[int] = []
    first_abs: float | None = None
    for number, fields in _csv_rows(handle, rows):
        if rows.full:
            break
        if not cols:
            cols = _columns(rows, fields, wanted, name)
            if not cols:
                return None
            continue
        if not fields or (len(fields) == 1 and not fields[0].strip()):
            continue
        if len(fields) <= max(cols):
            rows.problem(number, "", f"{len(fields)} fields; the header has more")
            continue
        raw_t, raw_p, raw_o = (fields[c].strip() for c in cols)
        if fmt == "azure":
            t = _azure_time(raw_t)
            if t is None:
                rows.problem(number, wanted[0], f"expected a date and time like "
                             f"2023-11-16 18:15:46.6805900, got {_shown(raw_t)}")
        else:
            t = _number(rows, number, wanted[0], _parse_number(raw_t))
        p = _tokens(rows, number, wanted[1], _parse_number(raw_p), "prompt")
        o = _tokens(rows, number, wanted[2], _parse_number(raw_o), "output")
        if t is None or p is None or o is None:
            continue
        if first_abs is None and fmt == "azure":
            first_abs = t
        rows.add(number, t, p, o, wanted[0])
    if not cols and not rows.problems:
        rows.problem(1, "", "empty log")
    return first_abs


def _parse_number(text: str) -> Any:
    if len(text) > 40:
        return text
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


# strings as "unrolled loops" ([^"\\]* runs between escapes): linear time and constant memory
# per string; the alternation (?:[^"\\]|\\.)* took ~125 bytes of regex stack per character
# (a 16 MiB string: 2 GB, #33)
_SKIP = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_SCALAR = re.compile(rb'[^,}\]\s]*')
_WS = re.compile(rb'\s*')
_VLLM_KEYS = ("start_times", "input_lens", "output_lens", "errors")


def _position(data: bytes, offset: int) -> tuple[int, int]:
    line = data.count(b"\n", 0, offset) + 1
    col = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
    return line, col


def _skip_value(data: bytes, pos: int) -> int:
    """The end of the JSON value at ``pos`` (no parsing; raises ValueError when unclosed)."""
    c = data[pos:pos + 1]
    if c == b'"':
        m = _STRING.match(data, pos)
        if m is None:
            raise ValueError("unterminated string")
        return m.end()
    if c in (b"[", b"{"):
        depth = 0
        for m in _SKIP.finditer(data, pos):
            tok = m.group()
            if tok in (b"[", b"{"):
                depth += 1
            elif tok in (b"]", b"}"):
                depth -= 1
                if depth == 0:
                    return m.end()
        raise ValueError("unclosed array or object")
    m = _SCALAR.match(data, pos)
    return m.end() if m else pos


def _vllm(handle: Any, rows: _Rows) -> None:
    data = handle.read(MAX_TRACE_BYTES + 1)
    if len(data) > MAX_TRACE_BYTES:
        raise _TooBig
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    found: dict[str, tuple[Any, int]] = {}
    try:
        # Ignored below (every _WS.match): _WS (whitespace*) matches the empty string, so match()
        # never returns None.
        pos = _WS.match(data, 0).end()  # type: ignore[union-attr]
        if data[pos:pos + 1] != b"{":
            raise ValueError("expected a JSON object")
        pos += 1
        while True:
            pos = _WS.match(data, pos).end()  # type: ignore[union-attr]
            if data[pos:pos + 1] == b"}":
                break
            m = _STRING.match(data, pos)
            if m is None:
                raise ValueError("expected a key")
            key = json.loads(m.group().decode("utf-8"))
            pos = _WS.match(data, m.end()).end()  # type: ignore[union-attr]
            if data[pos:pos + 1] != b":":
                raise ValueError("expected ':'")
            pos = _WS.match(data, pos + 1).end()  # type: ignore[union-attr]
            end = _skip_value(data, pos)
            if key in _VLLM_KEYS:
                found[key] = (json.loads(data[pos:end].decode("utf-8")), pos)
            pos = _WS.match(data, end).end()  # type: ignore[union-attr]
            sep = data[pos:pos + 1]
            if sep == b",":
                pos += 1
            elif sep == b"}":
                break
            else:
                raise ValueError("expected ',' or '}'")
    except (ValueError, RecursionError, UnicodeDecodeError) as exc:
        line, col = _position(data, min(pos, len(data)))
        rows.problem(line, "", f"not a vllm bench serve result: {str(exc)[:80]}", col)
        return
    if "start_times" not in found:
        rows.problem(1, "start_times", "missing: replaying a vllm bench serve result needs its "
                     "per-request send times (a recent vllm bench serve with --save-result "
                     "--save-detailed)")
        return
    arrays = {}
    for key in ("start_times", "input_lens", "output_lens"):
        value, at = found.get(key, (None, 0))
        line, col = _position(data, at)
        if not isinstance(value, list):
            rows.problem(line, key, "expected the per-request list (--save-detailed)", col)
            return
        arrays[key] = (value, line, col)
    n = len(arrays["start_times"][0])
    for key, (value, line, col) in arrays.items():
        if len(value) != n:
            rows.problem(line, key, f"{len(value)} entries; start_times has {n}", col)
            return
    errors, _ = found.get("errors", ([""] * n, 0))
    for i in range(n):
        if rows.full:
            break
        line, col = arrays["start_times"][1:]
        t = _number(rows, line, f"start_times[{i}]", arrays["start_times"][0][i])
        p = _tokens(rows, line, f"input_lens[{i}]", arrays["input_lens"][0][i], "prompt")
        raw_o = arrays["output_lens"][0][i]
        if raw_o == 0 and isinstance(errors, list) and i < len(errors) and errors[i]:
            rows.problem(line, f"output_lens[{i}]", f"0 output tokens: the request failed "
                         f"({_shown(errors[i])}); rerun the benchmark or drop it", col)
            continue
        o = _tokens(rows, line, f"output_lens[{i}]", raw_o, "output")
        if t is None or p is None or o is None:
            continue
        rows.add(line, t, p, o, f"start_times[{i}]")


class _PrefixHits:
    """Leading ``hash_ids`` blocks of each request already seen in an earlier request,
    computed in batches against a sorted array of the ids seen so far (memory: the distinct
    ids, 8 bytes each; time: sorting)."""

    def __init__(self) -> None:
        self.seen = np.zeros(0, dtype=np.int64)
        self.pending: list[np.ndarray] = []
        self.pending_ids = 0
        self.lengths: list[int] = []
        self.hits = array("q")
        self.blocks = array("q")
        self.any = False

    def add(self, ids: np.ndarray) -> None:
        if ids.size:
            self.any = True
            self.pending.append(ids)
            self.pending_ids += int(ids.size)
        self.lengths.append(int(ids.size))
        if self.pending_ids >= _HASH_FLUSH:
            self.flush()

    def flush(self) -> None:
        if not self.lengths:
            return
        ids = np.concatenate(self.pending) if self.pending else np.zeros(0, dtype=np.int64)
        lengths = np.asarray(self.lengths, dtype=np.int64)
        self.pending, self.pending_ids, self.lengths = [], 0, []
        hits = np.zeros(lengths.size, dtype=np.int64)
        if ids.size:
            order = np.argsort(ids, kind="stable")
            ordered = ids[order]
            first_sorted = np.empty(ids.size, dtype=bool)
            first_sorted[0] = True
            np.not_equal(ordered[1:], ordered[:-1], out=first_sorted[1:])
            first = np.empty(ids.size, dtype=bool)
            first[order] = first_sorted
            if self.seen.size:
                at = np.minimum(np.searchsorted(self.seen, ids), self.seen.size - 1)
                before = self.seen[at] == ids
            else:
                before = np.zeros(ids.size, dtype=bool)
            # seen in an earlier batch, or earlier in this one
            seen_flag = before | ~first
            starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
            nonempty = lengths > 0
            pos = np.arange(ids.size)
            miss_pos = np.where(seen_flag, ids.size + 1, pos)
            first_miss = np.minimum.reduceat(miss_pos, starts[nonempty])
            hits[nonempty] = np.minimum(first_miss - starts[nonempty], lengths[nonempty])
            merged = np.concatenate((self.seen, ordered[first_sorted]))
            merged.sort(kind="stable")
            keep = np.empty(merged.size, dtype=bool)
            keep[0] = True
            np.not_equal(merged[1:], merged[:-1], out=keep[1:])
            self.seen = merged[keep]
        self.hits.extend(hits.tolist())
        self.blocks.extend(lengths.tolist())


def _first_line(data: bytes) -> str:
    """The first non-blank line of ``data`` (at most ``MAX_LINE_BYTES``), as text."""
    text = data[:MAX_LINE_BYTES + 1].decode("utf-8-sig", errors="replace").lstrip()
    return text.split("\n", 1)[0].strip()


def sniff_format(source: Path | bytes) -> str | None:
    """The format of a log from its first line (None when it is none of them); ``source`` is
    the bytes already read (or a path, read once)."""
    if isinstance(source, Path):
        try:
            source = read_input(source, MAX_TRACE_BYTES)
        except UnreadableFileError:
            return None
    first = _first_line(source)
    if first.startswith("{"):
        try:
            obj = json.loads(first)
        except (ValueError, RecursionError):  # nested past the parser's depth: not a log line
            obj = None
        if isinstance(obj, dict) and ("input_length" in obj or "hash_ids" in obj):
            return "mooncake"
        head = source[:65_536]
        if any(f'"{k}"'.encode() in head for k in ("start_times", "input_lens", "num_prompts",
                                                   "request_throughput")):
            return "vllm-bench"
        return "mooncake" if isinstance(obj, dict) else None
    try:
        header = next(csv.reader(io.StringIO(first)), [])
    except csv.Error:  # e.g. a lone carriage return inside the first line: not a CSV header
        header = []
    names = {h.strip() for h in header}
    if {"ContextTokens", "GeneratedTokens"} <= names:
        return "azure"
    if {"Request tokens", "Response tokens"} <= names:
        return "burstgpt"
    return None


def load_trace(path: Path, fmt: str = "auto", time_scale: float = 1.0) -> RequestLog:
    """Read one log (module docstring); raises ``InputError`` with every problem found."""
    shown = str(path)
    data = _read(path)
    if fmt == "auto":
        sniffed = sniff_format(data)
        if sniffed is None:
            raise InputError([InputProblem(path=shown, line=1, col=1, key="",
                                           message="cannot tell the log's format from "
                                           "its first line; give --format-trace "
                                           f"({', '.join(FORMATS)})")])
        fmt = sniffed
    if fmt not in FORMATS:
        raise InputError([InputProblem(path=shown, line=1, col=1, key="",
                                       message=f"unknown format {fmt!r}")])
    rows = _Rows(shown)
    hashes = _PrefixHits()
    start_abs = None
    handle = io.BytesIO(data)
    try:
        if fmt == "mooncake":
            _mooncake(handle, rows, hashes)
        elif fmt == "vllm-bench":
            _vllm(handle, rows)
        else:
            start_abs = _csv(handle, rows, fmt)
    except _TooBig:
        raise InputError([InputProblem(path=shown, line=1, col=1, key="",
                                       message=_too_big(None))]) from None
    if rows.full:
        rows.problems.append(InputProblem(path=shown, line=rows.problems[-1].line, col=1, key="",
                                          message=f"stopped after {MAX_PROBLEMS} problems"))
    if not rows.problems and len(rows.t) < MIN_REQUESTS:
        rows.problem(1, "", f"{len(rows.t)} request{'s' * (len(rows.t) != 1)}; a log needs at "
                     f"least {MIN_REQUESTS}")
    if rows.problems:
        raise InputError(rows.problems)
    t = np.frombuffer(rows.t, dtype=float).copy()
    t0 = float(t[0])
    arrival = (t - t0) * time_scale
    hits = blocks = None
    if hashes.any:
        hashes.flush()
        hits = np.frombuffer(hashes.hits, dtype=np.int64).copy()
        blocks = np.frombuffer(hashes.blocks, dtype=np.int64).copy()
    return RequestLog(paths=(shown,), format=fmt, arrival_s=arrival,
                      prompt_tokens=np.frombuffer(rows.p, dtype=np.int64).copy(),
                      output_tokens=np.frombuffer(rows.o, dtype=np.int64).copy(),
                      prefix_hit_blocks=hits, prefix_blocks=blocks,
                      block_tokens=MOONCAKE_BLOCK_TOKENS if hits is not None else None,
                      start_epoch_s=start_abs, time_unit_s=TIME_UNIT_S[fmt],
                      time_scale=time_scale)


def load_traces(paths: list[Path], fmt: str = "auto", time_scale: float = 1.0) -> RequestLog:
    """Read every log and join them: by absolute time when each has one (azure), else one
    after another (each log starting one mean gap after the previous one's last request).
    All problems of all files in one ``InputError``."""
    logs: list[RequestLog] = []
    problems: list[InputProblem] = []
    for path in paths:
        try:
            logs.append(load_trace(path, fmt, time_scale))
        except InputError as exc:
            problems.extend(exc.problems)
    if problems:
        raise InputError(problems)
    if len(logs) == 1:
        return logs[0]
    formats = {log.format for log in logs}
    absolute = all(log.start_epoch_s is not None for log in logs)
    parts_t = []
    offset = 0.0
    base = min(log.start_epoch_s or 0.0 for log in logs) if absolute else 0.0
    for log in logs:
        if absolute:
            parts_t.append(log.arrival_s + ((log.start_epoch_s or 0.0) - base) * time_scale)
        else:
            parts_t.append(log.arrival_s + offset)
            span = float(log.arrival_s[-1])
            offset += span + span / max(log.requests - 1, 1)
    t = np.concatenate(parts_t)
    order = np.argsort(t, kind="stable")
    with_hits = all(log.prefix_hit_blocks is not None for log in logs)

    def cat(name: str) -> np.ndarray:
        return np.concatenate([getattr(log, name) for log in logs])[order]

    return RequestLog(
        paths=tuple(p for log in logs for p in log.paths), format="+".join(sorted(formats)),
        arrival_s=t[order], prompt_tokens=cat("prompt_tokens"), output_tokens=cat("output_tokens"),
        prefix_hit_blocks=cat("prefix_hit_blocks") if with_hits else None,
        prefix_blocks=cat("prefix_blocks") if with_hits else None,
        block_tokens=MOONCAKE_BLOCK_TOKENS if with_hits else None,
        start_epoch_s=base if absolute else None,
        time_unit_s=units.pop() if len(units := {log.time_unit_s for log in logs}) == 1
        else None,
        time_scale=time_scale)
