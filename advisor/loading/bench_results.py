"""Serving-benchmark result files → :class:`~advisor.core.calibration.BenchmarkRun` records.

Two formats, told apart by their keys (vLLM ``vllm/benchmarks/serve.py`` and SGLang
``python/sglang/bench_serving.py`` at the commits in docs/sources.md#benchmark-result-formats):

* **vLLM** ``vllm bench serve --save-result`` (and the older ``benchmark_serving.py``): one JSON
  object per run; ``--append-result`` puts several objects in one file, separated by newlines.
  Marker keys: ``num_prompts``, ``total_token_throughput``, ``burstiness``, ``*_e2el_ms``.
* **SGLang** ``python -m sglang.bench_serving``: JSON Lines, one run per line, appended.
  Marker keys: ``dataset_name``, ``random_input_len``, ``total_output_tokens_retokenized``,
  ``*_e2e_latency_ms``, ``concurrency``.

The traps of these formats (docs/sources.md#benchmark-result-formats) are handled here:

1. units: ``*_ms`` statistics are milliseconds, the per-request arrays (``ttfts``, ``itls``,
   ``latencies``) and ``duration`` are seconds; everything is converted to seconds;
2. an unbounded rate is the string ``"inf"`` (vLLM) or the bare token ``Infinity`` (SGLang,
   accepted by Python's JSON parser);
3. statistic keys are matched by regular expression (:data:`STAT_KEY`), never from a fixed list;
4. per-request arrays are optional; when a file has no TTFT/TPOT statistics but has the
   arrays (old vLLM), the median TTFT and mean TPOT are computed from them;
5. ``request_goodput:`` (old vLLM typo) is simply ignored, like every key not needed;
6. ISL and OSL are recovered from ``total_input_tokens / completed`` and
   ``total_output_tokens / completed`` (vLLM records no lengths; SGLang's ``random_*`` are
   targets, not means);
8. several runs per file (both formats).

Anything unusable (not JSON, truncated, an unknown or pooling format, a missing key, no
completed request, no latency statistics) raises :class:`BenchResultError` naming the file,
the run and the problem.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from advisor.core.calibration import BenchmarkRun
from advisor.core.limits import (
    MAX_BENCHMARK_FILE_BYTES,
    MAX_BENCHMARK_LATENCY_S,
    MAX_BENCHMARK_REQUESTS,
    MAX_BENCHMARK_RUNS,
    MAX_GPUS,
    MAX_RATE_RPS,
    MAX_TOKENS,
)
from advisor.loading.bench_formats import (
    FORMAT_NAMES,
    PARSERS,
    ReportError,
    aiperf_config,
    llmd_deployment,
    report_format,
)
from advisor.loading.input_file import InputTooLarge, UnreadableFileError, read_input, sha256_hex

ResultFormat = Literal["vllm", "sglang"]

STAT_KEY = re.compile(
    r"^(mean|median|std|p\d+(?:\.\d+)?)_(ttft|tpot|itl|e2el|e2e_latency|client_queue_time|"
    r"e2el_including_client_queue)_ms$")
"""Statistic keys of both tools: ``<stat>_<metric>_ms``, parsed by regex because the set depends
on the run's options (docs/sources.md#benchmark-result-formats)."""

SGLANG_STRONG = frozenset({"total_output_tokens_retokenized", "sharegpt_output_len",
                           "accept_length"})
"""Keys only SGLang writes (vLLM's ``--metadata`` could add others, e.g. ``dataset_name``)."""
VLLM_MARKERS = frozenset({"num_prompts", "total_token_throughput", "burstiness", "endpoint_type",
                          "tokenizer_id", "max_concurrent_requests", "request_goodput",
                          "request_goodput:"})
SGLANG_MARKERS = frozenset({"dataset_name", "random_input_len", "random_output_len",
                            "random_range_ratio", "concurrency"})
REQUIRED = ("completed", "duration", "total_input_tokens", "total_output_tokens")
MAX_FILE_BYTES = MAX_BENCHMARK_FILE_BYTES


class BenchResultError(ValueError):
    """A benchmark result file (or one run in it) cannot be used."""

    def __init__(self, source: str, message: str) -> None:
        self.source = source
        self.message = message
        super().__init__(f"{source}: {message}")


def read_result_text(path: Path) -> tuple[str, str]:
    """The text of a result file, read once and bounded
    (:func:`~advisor.loading.input_file.read_input`: at most 64 MiB, a pipe read whole), and
    the SHA-256 of its bytes; :class:`BenchResultError` when it cannot be read."""
    name = str(path)
    try:
        raw = read_input(path, MAX_FILE_BYTES)
    except InputTooLarge:
        raise BenchResultError(name, "file is larger than 64 MiB") from None
    except UnreadableFileError as exc:
        raise BenchResultError(name, exc.message) from None
    try:
        return raw.decode("utf-8-sig"), sha256_hex(raw)
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise BenchResultError(f"{name}:{line}:{col}",
                               f"not UTF-8 text (byte offset {exc.start})") from None


def load_results(path: Path, limit: int = MAX_BENCHMARK_RUNS, text: str | None = None,
                 before: int = 0) -> list[BenchmarkRun]:
    """Every run in one result file (vLLM JSON, possibly appended, or SGLang JSONL); more
    than ``limit`` runs are refused (``before``: runs already read from earlier files, for
    the message). ``text``: the file's content when already read
    (:func:`read_result_text`)."""
    return load_file(path, limit, text, before)[0]


def load_file(path: Path, limit: int = MAX_BENCHMARK_RUNS, text: str | None = None,
              before: int = 0) -> tuple[list[BenchmarkRun], list[RunProvenance]]:
    """:func:`load_results` and :func:`run_provenance` of every run, from one read."""
    name = str(path)
    if text is None:
        text = read_result_text(path)[0]
    try:
        return parse_file(text, path.name, limit, before)
    except BenchResultError as exc:  # name the file as given; labels keep the short name
        raise BenchResultError(name + exc.source[len(path.name):], exc.message) from None


def parse_results(text: str, source: str,
                  limit: int = MAX_BENCHMARK_RUNS) -> list[BenchmarkRun]:
    """Every run in the text of a result file; ``source`` names it in labels and errors."""
    return parse_file(text, source, limit)[0]


def parse_file(text: str, source: str, limit: int = MAX_BENCHMARK_RUNS, before: int = 0
               ) -> tuple[list[BenchmarkRun], list[RunProvenance]]:
    """Every run in the text of a result file and what it records about its deployment;
    ``source`` names it in labels and errors.

    A run that cannot be used is reported at ``source:line:col`` (#21): the value of the key
    the problem names, else the start of the run.
    """
    starts: list[int] = []
    objects = split_objects(text, source, limit, starts, before)
    runs = []
    records = []
    for index, obj in enumerate(objects, 1):
        label = source if len(objects) == 1 else f"{source}#{index}"
        try:
            report = report_format(obj)
            if report is None:
                runs.append(parse_run(obj, label))
                records.append(run_provenance(obj, label))
            else:
                try:
                    runs.extend(PARSERS[report](obj, label))
                except ReportError as exc:
                    raise BenchResultError(label, f"{FORMAT_NAMES[report]}: "
                                                  f"{exc.message}") from None
                records.extend(report_provenance(obj, label))
        except BenchResultError as exc:
            start = starts[index - 1]
            end = starts[index] if index < len(starts) else len(text)
            offset = start
            named = re.search(r"key '([^']+)'", exc.message)
            if named:
                found = re.compile(r'"' + re.escape(named[1]) + r'"\s*:\s*').search(
                    text, start, end)
                offset = found.end() if found else start
            line, col = _line_col(text, offset)
            prefix = f"run {index}: " if len(objects) > 1 else ""
            raise BenchResultError(f"{source}:{line}:{col}", prefix + exc.message) from None
    return runs, records


class _NumberRefused(ValueError):
    def __init__(self, token: str) -> None:
        super().__init__(token)
        self.token = token


def _finite_float(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):
        raise _NumberRefused(token)
    return value


def _bounded_int(token: str) -> int:
    if len(token.lstrip("-")) > 308:  # past the floating-point range (and slow to convert)
        raise _NumberRefused(token)
    return int(token)


def _line_col(text: str, offset: int) -> tuple[int, int]:
    return text.count("\n", 0, offset) + 1, offset - (text.rfind("\n", 0, offset) + 1) + 1


def split_objects(text: str, source: str, limit: int = MAX_BENCHMARK_RUNS,
                  starts: list[int] | None = None, before: int = 0) -> list[dict[str, Any]]:
    """The JSON objects of a file: one, several appended (vLLM), or one per line (SGLang).

    Read one object at a time and no further than object ``limit + 1`` (refused: more runs
    than :data:`MAX_BENCHMARK_RUNS` with the ``before`` runs of earlier files); numbers beyond
    the floating-point range (``1e400``, ``10**400``) are refused at their line and column.
    ``starts``, when given, receives the offset in ``text`` where each object starts.
    """
    decoder = json.JSONDecoder(parse_float=_finite_float, parse_int=_bounded_int)
    objects: list[dict[str, Any]] = []
    position = 0
    length = len(text)
    while True:
        while position < length and text[position].isspace():
            position += 1
        if position >= length:
            break
        if len(objects) >= limit:
            line, col = _line_col(text, position)
            total = limit + before
            earlier = (f" ({before} in the files before this one, {len(objects)} here)"
                       if before else "")
            raise BenchResultError(f"{source}:{line}:{col}", (
                f"more than {total} benchmark runs{earlier}; pd-advisor fits at most {total} "
                "(the limit is for all files together): calibrate on a subset"))
        start = position
        try:
            obj, position = decoder.raw_decode(text, position)
        except _NumberRefused as exc:
            offset = text.find(exc.token, start)
            line, col = _line_col(text, max(offset, start))
            raise BenchResultError(f"{source}:{line}:{col}", (
                f"the number {exc.token[:24]}{'...' * (len(exc.token) > 24)} is beyond the "
                "floating-point range")) from None
        except json.JSONDecodeError as exc:
            where = f"line {exc.lineno} column {exc.colno}"
            hint = (": the file ends inside a JSON object (truncated, or still being written?)"
                    if not text.rstrip().endswith("}") else "")
            raise BenchResultError(f"{source}:{exc.lineno}:{exc.colno}",
                                   f"invalid JSON at {where} ({exc.msg}){hint}") from None
        except RecursionError:
            line = text.count("\n", 0, position) + 1
            raise BenchResultError(f"{source}:{line}:1", f"invalid JSON at line {line}: nested "
                                   "too deeply for a benchmark result") from None
        if not isinstance(obj, dict):
            line, col = _line_col(text, start)
            raise BenchResultError(f"{source}:{line}:{col}", (
                f"expected a JSON object per run, got {type(obj).__name__} "
                f"(run {len(objects) + 1})"))
        objects.append(obj)
        if starts is not None:
            starts.append(start)
    if not objects:
        raise BenchResultError(f"{source}:1:1", "file is empty; expected vLLM --save-result "
                                                "JSON or SGLang bench_serving JSONL")
    return objects


def detect_format(obj: dict[str, Any]) -> ResultFormat | None:
    """``vllm`` or ``sglang`` from the keys of one run (None when neither fits)."""
    keys = set(obj)
    if keys & SGLANG_STRONG or any(k.endswith("_e2e_latency_ms") for k in keys):
        return "sglang"
    if keys & VLLM_MARKERS or any(k.endswith("_e2el_ms") for k in keys):
        return "vllm"
    if keys & SGLANG_MARKERS:
        return "sglang"
    return None


def _number(obj: dict[str, Any], key: str, label: str, allow_inf: bool = False) -> float:
    value = obj.get(key)
    if isinstance(value, str) and allow_inf and value.strip().lower() in ("inf", "infinity"):
        return math.inf
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BenchResultError(label, f"key '{key}' must be a number, got {value!r}")
    number = float(value)
    if math.isnan(number) or (math.isinf(number) and not allow_inf) or number < 0:
        raise BenchResultError(label, f"key '{key}' must be a finite number >= 0, got {value!r}")
    return number


def _optional(obj: dict[str, Any], key: str, label: str) -> float | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _measured(obj: dict[str, Any], key: str, label: str) -> float | None:
    """An optional measurement (a throughput, a mean concurrency): None when absent or not a
    number, else it must be > 0 (#33: an overlay was once fitted to a throughput of 0)."""
    value = _optional(obj, key, label)
    if value is not None and value <= 0:
        raise BenchResultError(label, f"key '{key}' must be > 0 (a measurement), got {value!r}")
    return value


def statistics_of(obj: dict[str, Any], label: str = "") -> dict[str, dict[str, float]]:
    """``{metric: {stat: seconds}}`` from every ``<stat>_<metric>_ms`` key (e2e → e2el).

    A negative latency is an error (#33). A statistic of exactly 0 is left out: the
    benchmark tools write 0 when nothing was measured (vLLM ``vllm/benchmarks/serve.py``,
    ``mean_ttft_ms=np.mean(ttfts or 0) * 1000``: no TTFT without streaming, no TPOT for
    one-token outputs), so it is never fitted as a measurement."""
    found: dict[str, dict[str, float]] = {}
    for key, value in obj.items():
        match = STAT_KEY.match(key)
        if not match or isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if not math.isfinite(value):
            continue
        stat, metric = match.groups()
        metric = "e2el" if metric == "e2e_latency" else metric
        if value < 0:
            raise BenchResultError(label, f"key '{key}' must be >= 0 ms (a latency), got "
                                          f"{value!r}")
        if value == 0 and stat != "std":  # vLLM writes np.mean(ttfts or 0): not measured
            continue
        seconds = float(value) / 1000.0
        if seconds > MAX_BENCHMARK_LATENCY_S:
            raise BenchResultError(label, _latency_problem(key, seconds))
        found.setdefault(metric, {})[stat] = seconds
    return found


def _latency_problem(key: str, seconds: float) -> str:
    return (f"key '{key}' holds a latency of {seconds:.6g} s; at most "
            f"{MAX_BENCHMARK_LATENCY_S:,.0f} s is accepted (a unit or export error?)")


def _latencies(obj: dict[str, Any], key: str, label: str) -> list[float]:
    """The positive numbers of the per-request array ``key`` (seconds), each bounded."""
    values = [float(t) for t in obj[key] if isinstance(t, int | float)
              and not isinstance(t, bool) and t > 0]
    for value in values:
        if value > MAX_BENCHMARK_LATENCY_S:
            raise BenchResultError(label, _latency_problem(key, value))
    return values


def _array_stats(obj: dict[str, Any], label: str = "") -> dict[str, dict[str, float]]:
    """Median TTFT and mean TPOT from the per-request arrays (seconds), when present."""
    out: dict[str, dict[str, float]] = {}
    ttfts = obj.get("ttfts")
    if isinstance(ttfts, list):
        values = _latencies(obj, "ttfts", label)
        if values:
            out["ttft"] = {"median": statistics.median(values), "mean": statistics.fmean(values)}
    itls = obj.get("itls")
    if isinstance(itls, list):
        per_request = [statistics.fmean(g) for g in itls
                       if isinstance(g, list) and g and all(
                           isinstance(x, int | float) and not isinstance(x, bool)
                           and abs(x) <= MAX_BENCHMARK_LATENCY_S for x in g)]
        if per_request:
            out["tpot"] = {"mean": statistics.fmean(per_request)}
    latencies = obj.get("latencies")
    if isinstance(latencies, list):
        values = _latencies(obj, "latencies", label)
        if values:
            out["e2el"] = {"mean": statistics.fmean(values)}
    return out


def parse_run(obj: dict[str, Any], label: str) -> BenchmarkRun:
    """One run object → :class:`BenchmarkRun` (raises :class:`BenchResultError`)."""
    fmt = detect_format(obj)
    if fmt is None:
        shown = ", ".join(sorted(obj)[:8]) + (", ..." if len(obj) > 8 else "")
        raise BenchResultError(label, "neither a vLLM --save-result JSON nor an SGLang "
                                      f"bench_serving JSONL record (keys: {shown or 'none'})")
    if "total_input_sequences" in obj or ("total_output_tokens" not in obj
                                          and "input_sequence_throughput" in obj):
        raise BenchResultError(label, "a pooling (embedding/rerank) benchmark: it generates no "
                                      "tokens, so it cannot calibrate TTFT or TPOT")
    missing = [key for key in REQUIRED if key not in obj]
    if missing:
        raise BenchResultError(label, f"missing key{'s' * (len(missing) > 1)} "
                                      f"{', '.join(repr(k) for k in missing)} "
                                      f"({fmt} result; partial or edited file?)")
    completed = _number(obj, "completed", label)
    if completed < 1:
        raise BenchResultError(label, "no request completed (completed = 0); nothing to fit")
    if completed > MAX_BENCHMARK_REQUESTS or not completed.is_integer():
        raise BenchResultError(label, f"key 'completed' must be a whole number of requests up "
                                      f"to {MAX_BENCHMARK_REQUESTS:,}, got {completed:.6g}")
    duration = _number(obj, "duration", label)
    if duration <= 0:
        raise BenchResultError(label, "duration must be > 0 seconds")
    if duration > MAX_BENCHMARK_LATENCY_S:
        raise BenchResultError(label, f"key 'duration' is {duration:.6g} s; at most "
                                      f"{MAX_BENCHMARK_LATENCY_S:,.0f} s is accepted")
    if completed / duration > MAX_RATE_RPS:
        raise BenchResultError(label, f"key 'duration': {completed:.6g} requests in "
                                      f"{duration:.6g} s is {completed / duration:.6g} req/s, "
                                      f"above the largest rate accepted ({MAX_RATE_RPS:.0e})")
    isl = _number(obj, "total_input_tokens", label) / completed
    osl = _number(obj, "total_output_tokens", label) / completed
    if isl < 1 or osl < 1:
        raise BenchResultError(label, f"mean input/output length {isl:.3g}/{osl:.3g} tokens per "
                                      "request; expected at least 1 each")
    if max(isl, osl) > MAX_TOKENS:
        raise BenchResultError(label, f"mean input/output length {isl:.3g}/{osl:.3g} tokens per "
                                      f"request; at most {MAX_TOKENS:,} each is accepted")
    rate = _number(obj, "request_rate", label, allow_inf=True) if "request_rate" in obj \
        else math.inf
    if rate == 0:
        raise BenchResultError(label, "request_rate is 0")
    if math.isfinite(rate) and rate > MAX_RATE_RPS:
        raise BenchResultError(label, f"request_rate {rate:.6g} is above the largest rate "
                                      f"accepted, {MAX_RATE_RPS:.0e} requests/s")
    concurrency = obj.get("max_concurrency")
    if concurrency is not None:
        concurrency = _number(obj, "max_concurrency", label)
        if concurrency < 1:
            raise BenchResultError(label, "max_concurrency must be >= 1")

    stats = _array_stats(obj, label)
    for metric, values in statistics_of(obj, label).items():
        stats.setdefault(metric, {}).update(values)
    ttft = stats.get("ttft", {})
    tpot = stats.get("tpot") or stats.get("itl") or {}
    ttft_stat = "median" if "median" in ttft else "p50" if "p50" in ttft else "mean"
    ttft_s = ttft.get(ttft_stat)
    tpot_s = tpot.get("mean", tpot.get("median"))
    if ttft_s is None and tpot_s is None:
        raise BenchResultError(label, "no TTFT or TPOT statistics (mean_/median_/pNN_ttft_ms, "
                                      "..._tpot_ms); run the benchmark with a tokenizer and "
                                      "--percentile-metrics including ttft,tpot")

    request_throughput = _measured(obj, "request_throughput", label) or completed / duration
    output_throughput = _measured(obj, "output_throughput", label)
    if output_throughput is None:
        output_throughput = completed * osl / duration

    # mean requests in flight: SGLang records it; vLLM by Little's law
    # (docs/sources.md#benchmark-result-formats)
    mean_concurrency = _measured(obj, "concurrency", label) if fmt == "sglang" else None
    if mean_concurrency is None:
        e2e = stats.get("e2el", {}).get("mean")
        if e2e is None and ttft_s is not None and tpot_s is not None:
            e2e = ttft.get("mean", ttft_s) + (osl - 1.0) * tpot_s
        if e2e is not None:
            mean_concurrency = request_throughput * e2e

    burstiness = _optional(obj, "burstiness", label) if fmt == "vllm" else None
    arrival_cv = 1.0
    if burstiness is not None and burstiness > 0:
        arrival_cv = 1.0 / math.sqrt(burstiness)
    if not math.isfinite(rate) and concurrency is None and mean_concurrency is None:
        raise BenchResultError(label, "unbounded request rate without max_concurrency, and no "
                                      "latency statistics to recover the mean concurrency")
    return BenchmarkRun(
        label=label, prompt_tokens=isl, output_tokens=osl, request_rate_rps=rate,
        max_concurrency=concurrency, arrival_cv=arrival_cv, completed=int(completed),
        ttft_s=ttft_s, ttft_statistic="median" if ttft_stat != "mean" else "mean",
        tpot_s=tpot_s, output_tokens_per_s=output_throughput,
        mean_concurrency=mean_concurrency)


# --------------------------------------------------------------------------- provenance
ENGINE_OF_BACKEND = {"vllm": "vllm", "sglang": "sglang", "sglang-oai": "sglang",
                     "sglang-native": "sglang", "sglang-oai-chat": "sglang", "trt": "trtllm",
                     "trtllm": "trtllm", "tensorrt-llm": "trtllm"}
"""The serving engine a client ``backend`` implies (vLLM's ``openai``/``openai-chat`` and
SGLang's other backends name an API, not an engine)."""
MODEL_KEYS = ("model_id", "model", "model_path")
ENGINE_KEYS = ("engine", "server_engine")
TP_KEYS = ("tp", "tp_size", "tensor_parallel", "tensor_parallel_size")
GPUS_KEYS = ("gpus", "num_gpus", "gpu_count", "world_size")
GPU_KEYS = ("gpu", "gpu_name", "gpu_model")
"""Keys read for provenance: the tools' own (``model_id``, ``backend``) and the ones users add
with ``vllm bench serve --metadata engine=vllm tp=2 gpus=2 gpu=H100``
(values saved as strings; docs/sources.md#benchmark-result-formats)."""


@dataclass(frozen=True, kw_only=True)
class RunProvenance:
    """What a result file records about the deployment that produced one run (None where it
    records nothing)."""

    label: str
    model: str | None
    engine: str | None
    engine_key: str | None
    """The key the engine was read from (``backend`` or a metadata key)."""
    tensor_parallel: int | None
    gpus: int | None
    gpu: str | None
    replicas: int | None = None
    """Engine instances behind the endpoint, when the file says (llm-d report, or the
    ``prefill_replicas``/``decode_replicas`` keys llm-d benchmark automation adds)."""
    disaggregated: bool = False
    """The file says prefill and decode ran on separate replicas."""


def _text(obj: dict[str, Any], keys: tuple[str, ...]) -> tuple[str, str] | None:
    for key in keys:
        value = obj.get(key)
        if isinstance(value, str) and value.strip():
            return key, value.strip()
    return None


def _count(obj: dict[str, Any], keys: tuple[str, ...], label: str) -> int | None:
    """The first of ``keys`` that is present: a whole number of GPUs from 1 to
    :data:`MAX_GPUS`, written as a number or as ASCII digits (``--metadata tp=2`` saves
    strings); anything else there is an error (#33: ``"²"`` and 5,000 digits once crashed)."""
    for key in keys:
        value = obj.get(key)
        if value is None or (isinstance(value, str) and not value.strip()):
            continue
        text = value.strip() if isinstance(value, str) else None
        if text is not None and text.isascii() and text.isdecimal() and len(text) <= 6:
            value = int(text)
        if (isinstance(value, int) and not isinstance(value, bool)
                and 1 <= value <= MAX_GPUS):
            return value
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        raise BenchResultError(label, f"key '{key}' must be a whole number of GPUs from 1 to "
                                      f"{MAX_GPUS:,}, got {shown}")
    return None


_GPU_COUNT = re.compile(r"^\s*(\d+)\s*[x×]\s*(\S.*)$")


def _replicas(obj: dict[str, Any]) -> tuple[int | None, bool]:
    """Replicas from ``prefill_replicas`` + ``decode_replicas`` (strings or numbers)."""
    counts = {}
    for key in ("prefill_replicas", "decode_replicas"):
        value = obj.get(key)
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value.strip())
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            counts[key] = value
    if not counts:
        return None, False
    prefill = counts.get("prefill_replicas", 0)
    return prefill + counts.get("decode_replicas", 0) or None, prefill > 0


def report_provenance(obj: dict[str, Any], label: str) -> list[RunProvenance]:
    """Provenance of the runs of an llm-d, GuideLLM, inference-perf or AIPerf report."""
    fmt = report_format(obj)
    if fmt == "llm-d":
        dep = llmd_deployment(obj)
        roles = dep["roles"]
        replicas = sum(roles.values()) or None
        gpus = replicas * dep["gpus_per_replica"] if replicas and dep["gpus_per_replica"] \
            else None
        return [RunProvenance(label=label, model=dep["model"], engine="vllm",
                              engine_key="scenario.stack (llm-d, vLLM)",
                              tensor_parallel=dep["tp"], gpus=gpus, gpu=dep["gpu"],
                              replicas=replicas, disaggregated=roles.get("prefill", 0) > 0)]
    if fmt == "aiperf":
        _c, _r, model = aiperf_config(obj)
        return [RunProvenance(label=label, model=model if isinstance(model, str) else None,
                              engine=None, engine_key=None,
                              tensor_parallel=None, gpus=None, gpu=None)]
    if fmt == "guidellm":
        count = len(obj.get("benchmarks") or [])
        return [RunProvenance(label=f"{label}[{i}]", model=None, engine=None, engine_key=None,
                              tensor_parallel=None, gpus=None, gpu=None)
                for i in range(count)]
    return [RunProvenance(label=label, model=None, engine=None, engine_key=None,
                          tensor_parallel=None, gpus=None, gpu=None)]


def run_provenance(obj: dict[str, Any], label: str) -> RunProvenance:
    """The model, engine, TP, GPU count, GPU and replicas one run object records."""
    model = _text(obj, MODEL_KEYS)
    engine = _text(obj, ENGINE_KEYS)
    engine_name = engine[1].lower() if engine else None
    engine_key = engine[0] if engine else None
    if engine_name is None:
        backend = _text(obj, ("backend", "endpoint_type"))
        if backend and backend[1].lower() in ENGINE_OF_BACKEND:
            engine_name, engine_key = ENGINE_OF_BACKEND[backend[1].lower()], backend[0]
    else:
        engine_name = ENGINE_OF_BACKEND.get(engine_name, engine_name)
    gpu = _text(obj, GPU_KEYS)
    gpu_name = gpu[1] if gpu else None
    gpus = _count(obj, GPUS_KEYS, label)
    if gpu_name is not None and (m := _GPU_COUNT.match(gpu_name)):  # "4xNVIDIA_L40S"
        gpus = gpus or int(m.group(1))
        gpu_name = m.group(2)
    replicas, split = _replicas(obj)
    return RunProvenance(label=label, model=model[1] if model else None, engine=engine_name,
                         engine_key=engine_key, tensor_parallel=_count(obj, TP_KEYS, label),
                         gpus=gpus, gpu=gpu_name, replicas=replicas, disaggregated=split)


def load_provenance(path: Path, text: str | None = None) -> list[RunProvenance]:
    """:func:`run_provenance` of every run of a file (``text``: its content when already
    read, :func:`read_result_text`)."""
    return load_file(path, MAX_BENCHMARK_RUNS, text)[1]
