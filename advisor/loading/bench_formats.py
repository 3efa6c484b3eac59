"""Benchmark reports beyond vLLM and SGLang results (#31): the llm-d benchmark report,
GuideLLM, inference-perf and AIPerf / GenAI-Perf, each → :class:`BenchmarkRun` records and
what they say about the deployment.

Read from the schemas as their tools write them (field names checked against the sources named
below; docs/sources.md#benchmark-report-formats):

* **llm-d benchmark report** (schema 0.2 / 0.2.1; PyPI ``llmd-benchmark-report`` 0.2.1,
  ``schema_v0_2.py``, github.com/llm-d/llm-d-benchmark): ``results.request_performance
  .aggregate`` — ``requests.{total, failures, input_length.mean, output_length.mean}``,
  ``latency.{time_to_first_token, time_per_output_token, inter_token_latency}`` (``units``
  s or ms; ``mean``, ``p50``), ``throughput.{output_token_rate, request_rate}.mean``;
  ``scenario.load.standardized.{rate_qps, concurrency}`` (``Infinity``: no cap);
  ``run.time.duration`` (ISO 8601, ``PT49.97S``); and the deployment:
  ``scenario.stack[].standardized`` of ``kind: inference_engine`` — ``model.name``, ``role``,
  ``replicas``, ``accelerator.{model, count, parallelism.tp}``. Read from the documented
  schema, without the package: it would be a sound dependency (a 96 KB wheel needing only
  pydantic, PyYAML and numpy, which pd-advisor has), but its models validate one schema
  revision strictly and pd-advisor reads a dozen fields, so no extra is added.
* **GuideLLM** ``benchmarks.json`` (github.com/vllm-project/guidellm; fields as
  ``llmd-benchmark-report``'s ``import_guidellm`` reads them): ``benchmarks[]`` each with
  ``duration``, ``config.strategy.{type_, rate, streams, max_concurrency}`` and
  ``metrics.{request_totals.successful, time_to_first_token_ms, time_per_output_token_ms,
  inter_token_latency_ms, prompt_token_count, output_token_count}.successful.{mean, median}``.
  Strategies: ``synchronous`` = 1 client, ``concurrent`` = ``streams`` clients,
  ``throughput`` = as fast as ``max_concurrency`` allows (no cap: a finite batch),
  ``constant`` = evenly spaced at ``rate`` (CV 0), ``poisson``/``async`` = Poisson at ``rate``.
* **inference-perf** ``stage_N_lifecycle_metrics.json`` (github.com/kubernetes-sigs/
  inference-perf, ``inference_perf/reportgen/base.py``): ``load_summary.{count,
  requested_rate, achieved_rate}``, ``successes.{count, latency.{time_to_first_token,
  time_per_output_token, inter_token_latency}.{mean, median}, prompt_len.mean,
  output_len.mean, throughput.{output_tokens_per_sec, requests_per_sec}}`` (seconds);
  arrivals taken as Poisson (the tool's default load type).
* **AIPerf** ``profile_export_aiperf.json`` and its predecessor **GenAI-Perf**
  ``profile_export_genai_perf.json`` (github.com/ai-dynamo/aiperf,
  ``docs/tutorials/working-with-profile-exports.md``; triton-inference-server/perf_analyzer
  genai-perf ``docs/files.md``): metrics ``{unit, avg, p50, …}`` — ``time_to_first_token``,
  ``inter_token_latency``, ``request_throughput``, ``output_token_throughput``,
  ``input_sequence_length``, ``output_sequence_length``, ``request_count``,
  ``benchmark_duration``; ``input_config.loadgen.{concurrency, request_rate}`` (AIPerf) or
  ``input_config.{concurrency, request_rate}`` (GenAI-Perf), and the model
  (``endpoint.model_names`` / ``model``).

Every problem is a :class:`~advisor.loading.bench_results.BenchResultError` naming the key
(the caller locates it in the file).
"""

from __future__ import annotations

import math
import re
from typing import Any, Literal

from advisor.core.calibration import BenchmarkRun
from advisor.core.limits import MAX_BENCHMARK_LATENCY_S, MAX_RATE_RPS, MAX_TOKENS

ReportFormat = Literal["llm-d", "guidellm", "inference-perf", "aiperf"]
FORMAT_NAMES: dict[str, str] = {
    "llm-d": "llm-d benchmark report", "guidellm": "GuideLLM report",
    "inference-perf": "inference-perf lifecycle metrics",
    "aiperf": "AIPerf / GenAI-Perf profile export"}


class ReportError(ValueError):
    """A report (or one run in it) cannot be used; ``message`` names the key."""

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


def report_format(obj: dict[str, Any]) -> ReportFormat | None:
    """Which of these formats one JSON object is (None: none of them)."""
    if "version" in obj and "run" in obj and ("scenario" in obj or "results" in obj):
        return "llm-d"
    if isinstance(obj.get("benchmarks"), list) and (
            "metadata" in obj or "args" in obj or "config" in obj
            or any(isinstance(b, dict) and "metrics" in b for b in obj["benchmarks"])):
        return "guidellm"
    if "load_summary" in obj and ("successes" in obj or "failures" in obj):
        return "inference-perf"
    ttft = obj.get("time_to_first_token")
    if (isinstance(ttft, dict) and "unit" in ttft) or (
            isinstance(obj.get("request_throughput"), dict) and "input_config" in obj):
        return "aiperf"
    return None


# --------------------------------------------------------------------------- helpers
def _get(obj: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def _num(value: Any, key: str, *, allow_inf: bool = False, required: bool = False
         ) -> float | None:
    """A finite number ≥ 0 (``Infinity`` / ``"inf"`` when allowed), else a problem."""
    if value is None:
        if required:
            raise ReportError(f"key '{key}' is missing")
        return None
    if isinstance(value, str) and allow_inf and value.strip().lower() in ("inf", "infinity"):
        return math.inf
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ReportError(f"key '{key}' must be a number, got {value!r:.40}")
    x = float(value)
    if math.isnan(x) or x < 0 or (math.isinf(x) and not allow_inf):
        raise ReportError(f"key '{key}' must be a finite number >= 0, got {value!r:.40}")
    return x


def _seconds(value: float | None, unit: Any, key: str) -> float | None:
    if value is None:
        return None
    scale = {"s": 1.0, "sec": 1.0, "seconds": 1.0, "s/token": 1.0, "ms": 1e-3,
             "ms/token": 1e-3, "us": 1e-6, "ns": 1e-9}.get(str(unit or "s").strip().lower())
    if scale is None:
        raise ReportError(f"key '{key}' has unit {unit!r}; expected s or ms")
    seconds = value * scale
    if seconds > MAX_BENCHMARK_LATENCY_S:
        raise ReportError(f"key '{key}' holds a latency of {seconds:.6g} s; at most "
                          f"{MAX_BENCHMARK_LATENCY_S:,.0f} s is accepted (a unit error?)")
    return seconds


def _lengths(isl: float | None, osl: float | None, where: str) -> tuple[float, float]:
    if isl is None or osl is None:
        raise ReportError(f"key '{where}' has no mean input and output length")
    if not (1 <= isl <= MAX_TOKENS and 1 <= osl <= MAX_TOKENS):
        raise ReportError(f"key '{where}': mean input/output length {isl:.4g}/{osl:.4g} "
                          f"tokens; each must be 1 to {MAX_TOKENS:,}")
    return isl, osl


def _rate(value: float | None, key: str) -> float:
    if value is None:
        return math.inf
    if value == 0:
        raise ReportError(f"key '{key}' is 0 requests/s")
    if math.isfinite(value) and value > MAX_RATE_RPS:
        raise ReportError(f"key '{key}' {value:.6g} is above {MAX_RATE_RPS:.0e} requests/s")
    return value


def _run(label: str, isl: float, osl: float, rate: float, cap: float | None, cv: float,
         completed: float, ttft: float | None, ttft_stat: str, tpot: float | None,
         out_tps: float | None, where: str) -> BenchmarkRun:
    if completed < 1:
        raise ReportError(f"key '{where}': no request completed; nothing to fit")
    if ttft is None and tpot is None:
        raise ReportError(f"key '{where}' has no TTFT or TPOT statistics")
    if cap is not None and cap < 1:
        raise ReportError(f"key '{where}': a concurrency below 1")
    mean_conc = None
    if not math.isfinite(rate) and cap is None and out_tps and ttft and tpot:
        mean_conc = out_tps / osl * (ttft + (osl - 1.0) * tpot)
    return BenchmarkRun(label=label, prompt_tokens=isl, output_tokens=osl,
                        request_rate_rps=rate, max_concurrency=cap, arrival_cv=cv,
                        completed=int(completed), ttft_s=ttft, ttft_statistic=ttft_stat,
                        tpot_s=tpot, output_tokens_per_s=out_tps, mean_concurrency=mean_conc)


_DURATION = re.compile(r"^P(?:T)?(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?$")


def _iso_seconds(text: Any) -> float | None:
    if not isinstance(text, str):
        return None
    m = _DURATION.match(text.strip())
    if m is None or not any(m.groups()):
        return None
    h, mi, s = (float(g) if g else 0.0 for g in m.groups())
    return h * 3600 + mi * 60 + s


# --------------------------------------------------------------------------- llm-d
def _llmd_stat(block: Any, key: str, stat: str) -> float | None:
    if not isinstance(block, dict):
        return None
    return _seconds(_num(block.get(stat), key), block.get("units"), key)


def parse_llmd(obj: dict[str, Any], label: str) -> list[BenchmarkRun]:
    """One run from an llm-d benchmark report (module docstring)."""
    agg = _get(obj, "results.request_performance.aggregate")
    if not isinstance(agg, dict):
        raise ReportError("key 'aggregate' (results.request_performance.aggregate) is missing")
    req = agg.get("requests") or {}
    total = _num(req.get("total"), "total", required=True) or 0.0
    failures = _num(req.get("failures"), "failures") or 0.0
    isl, osl = _lengths(_num(_get(req, "input_length.mean"), "input_length"),
                        _num(_get(req, "output_length.mean"), "output_length"), "requests")
    lat = agg.get("latency") or {}
    ttft_block = lat.get("time_to_first_token")
    ttft = _llmd_stat(ttft_block, "time_to_first_token", "p50")
    stat = "median"
    if ttft is None:
        ttft, stat = _llmd_stat(ttft_block, "time_to_first_token", "mean"), "mean"
    tpot = (_llmd_stat(lat.get("time_per_output_token"), "time_per_output_token", "mean")
            or _llmd_stat(lat.get("inter_token_latency"), "inter_token_latency", "mean"))
    out_tps = _num(_get(agg, "throughput.output_token_rate.mean"), "output_token_rate")
    load = _get(obj, "scenario.load.standardized") or {}
    rate = _rate(_num(load.get("rate_qps"), "rate_qps", allow_inf=True), "rate_qps")
    cap = _num(load.get("concurrency"), "concurrency", allow_inf=True)
    cap = None if cap is None or not math.isfinite(cap) else cap
    return [_run(label, isl, osl, rate, cap, 1.0, total - failures, ttft, stat, tpot, out_tps,
                 "aggregate")]


def llmd_deployment(obj: dict[str, Any]) -> dict[str, Any]:
    """What an llm-d report says about the engines: model, replicas per role, accelerator
    and TP (the ``inference_engine`` components of ``scenario.stack``)."""
    out: dict[str, Any] = {"model": None, "roles": {}, "gpu": None, "tp": None,
                           "gpus_per_replica": None}
    for comp in _get(obj, "scenario.stack") or []:
        std = comp.get("standardized") if isinstance(comp, dict) else None
        if not isinstance(std, dict) or std.get("kind") != "inference_engine":
            continue
        role = str(std.get("role") or "both")
        replicas = std.get("replicas")
        if isinstance(replicas, int) and not isinstance(replicas, bool) and replicas >= 0:
            out["roles"][role] = out["roles"].get(role, 0) + replicas
        name = _get(std, "model.name")
        if isinstance(name, str) and name.strip():
            out["model"] = name.strip()
        acc = std.get("accelerator") or {}
        if isinstance(acc.get("model"), str):
            out["gpu"] = acc["model"]
        tp = _get(acc, "parallelism.tp")
        if isinstance(tp, int) and not isinstance(tp, bool) and tp >= 1:
            out["tp"] = tp
        count = acc.get("count")
        if isinstance(count, int) and not isinstance(count, bool) and count >= 1:
            out["gpus_per_replica"] = count
    return out


# --------------------------------------------------------------------------- GuideLLM
def _guide_metric(metrics: dict[str, Any], name: str, stat: str, where: str) -> float | None:
    block = _get(metrics, f"{name}.successful")
    if not isinstance(block, dict):
        return None
    return _num(block.get(stat), f"{name}")


def parse_guidellm(obj: dict[str, Any], label: str) -> list[BenchmarkRun]:
    """One run per entry of ``benchmarks`` (module docstring)."""
    runs = []
    benches = obj.get("benchmarks") or []
    if not benches:
        raise ReportError("key 'benchmarks' is empty")
    for i, bench in enumerate(benches):
        where = f"benchmarks[{i}]"
        if not isinstance(bench, dict) or not isinstance(bench.get("metrics"), dict):
            raise ReportError(f"key 'metrics' of {where} is missing")
        m = bench["metrics"]
        done = _num(_get(m, "request_totals.successful"), "request_totals", required=True)
        isl, osl = _lengths(_guide_metric(m, "prompt_token_count", "mean", where),
                            _guide_metric(m, "output_token_count", "mean", where),
                            "prompt_token_count")
        ttft_ms = _guide_metric(m, "time_to_first_token_ms", "median", where)
        stat = "median"
        if ttft_ms is None:
            ttft_ms, stat = _guide_metric(m, "time_to_first_token_ms", "mean", where), "mean"
        tpot_ms = (_guide_metric(m, "time_per_output_token_ms", "mean", where)
                   or _guide_metric(m, "inter_token_latency_ms", "mean", where))
        duration = _num(bench.get("duration"), "duration")
        if duration is None and isinstance(bench.get("start_time"), int | float) \
                and isinstance(bench.get("end_time"), int | float):
            duration = float(bench["end_time"]) - float(bench["start_time"])
        out_tps = (done or 0.0) * osl / duration if duration and duration > 0 else None
        strat = _get(bench, "config.strategy") or {}
        kind = str(strat.get("type_") or strat.get("type") or "")
        rate, cap, cv = math.inf, None, 1.0
        if kind == "synchronous":
            cap = 1.0
        elif kind == "concurrent":
            cap = _num(strat.get("streams", strat.get("max_concurrency")), "streams",
                       required=True)
        elif kind == "throughput":
            cap = _num(strat.get("max_concurrency"), "max_concurrency")
        elif kind in ("constant", "poisson", "async"):
            rate = _rate(_num(strat.get("rate"), "rate", required=True), "rate")
            cv = 0.0 if kind == "constant" else 1.0
        else:
            raise ReportError(f"key 'strategy' of {where}: type_ {kind!r} is not one of "
                              "synchronous, concurrent, throughput, constant, poisson, async")
        runs.append(_run(f"{label}[{i}]", isl, osl, rate, cap, cv, done or 0.0,
                         _seconds(ttft_ms, "ms", "time_to_first_token_ms"), stat,
                         _seconds(tpot_ms, "ms", "time_per_output_token_ms"), out_tps, where))
    return runs


# --------------------------------------------------------------------------- inference-perf
def parse_inference_perf(obj: dict[str, Any], label: str) -> list[BenchmarkRun]:
    """One run from a stage's lifecycle metrics (module docstring)."""
    ok = obj.get("successes")
    if not isinstance(ok, dict):
        raise ReportError("key 'successes' is missing (every request failed?)")
    done = _num(ok.get("count"), "count", required=True) or 0.0
    isl, osl = _lengths(_num(_get(ok, "prompt_len.mean"), "prompt_len"),
                        _num(_get(ok, "output_len.mean"), "output_len"), "successes")
    lat = ok.get("latency") or {}
    ttft = _num(_get(lat, "time_to_first_token.median"), "time_to_first_token")
    stat = "median"
    if ttft is None:
        ttft, stat = _num(_get(lat, "time_to_first_token.mean"), "time_to_first_token"), "mean"
    tpot = (_num(_get(lat, "time_per_output_token.mean"), "time_per_output_token")
            or _num(_get(lat, "inter_token_latency.mean"), "inter_token_latency"))
    out_tps = _num(_get(ok, "throughput.output_tokens_per_sec"), "output_tokens_per_sec")
    load = obj.get("load_summary") or {}
    rate = _rate(_num(load.get("requested_rate"), "requested_rate", allow_inf=True),
                 "requested_rate")
    cap = _num(load.get("concurrency"), "concurrency", allow_inf=True)
    cap = None if not cap or not math.isfinite(cap) else cap
    return [_run(label, isl, osl, rate, cap, 1.0, done, _seconds(ttft, "s", "time_to_first_token"),
                 stat, _seconds(tpot, "s", "time_per_output_token"), out_tps, "successes")]


# --------------------------------------------------------------------------- AIPerf
def _ai(obj: dict[str, Any], name: str, stat: str = "avg") -> float | None:
    block = obj.get(name)
    if not isinstance(block, dict):
        return None
    value = _num(block.get(stat), name)
    unit = str(block.get("unit") or "")
    if value is not None and unit in ("ms", "sec", "s"):
        return _seconds(value, unit, name)
    return value


def aiperf_config(obj: dict[str, Any]) -> tuple[Any, Any, Any]:
    """(concurrency, request rate, model) of an AIPerf or GenAI-Perf ``input_config``."""
    cfg = obj.get("input_config")
    cfg = cfg if isinstance(cfg, dict) else {}
    loadgen = cfg.get("loadgen")
    load: dict[str, Any] = loadgen if isinstance(loadgen, dict) else cfg
    names: Any = _get(cfg, "endpoint.model_names") or cfg.get("model")
    model = names[0] if isinstance(names, list) and names else (names or None)
    return load.get("concurrency"), load.get("request_rate"), model


def parse_aiperf(obj: dict[str, Any], label: str) -> list[BenchmarkRun]:
    """One run from a profile export (module docstring)."""
    done = _ai(obj, "request_count")
    duration = _ai(obj, "benchmark_duration")
    throughput = _ai(obj, "request_throughput")
    if done is None and throughput is not None and duration:
        done = throughput * duration
    if done is None:
        raise ReportError("key 'request_count' is missing (and no request_throughput × "
                          "benchmark_duration to recover it)")
    isl, osl = _lengths(_ai(obj, "input_sequence_length"), _ai(obj, "output_sequence_length"),
                        "output_sequence_length")
    ttft = _ai(obj, "time_to_first_token", "p50")
    stat = "median"
    if ttft is None:
        ttft, stat = _ai(obj, "time_to_first_token"), "mean"
    tpot = _ai(obj, "inter_token_latency")
    out_tps = _ai(obj, "output_token_throughput")
    if out_tps is None and duration:
        out_tps = done * osl / duration
    concurrency, rate_value, _model = aiperf_config(obj)
    cap = _num(concurrency, "concurrency") if concurrency not in (None, 0) else None
    rate = _rate(_num(rate_value, "request_rate", allow_inf=True), "request_rate")
    if cap is None and not math.isfinite(rate):
        cap = 1.0  # the tools' default load: one request at a time
    return [_run(label, isl, osl, rate, cap, 1.0, done, ttft, stat, tpot, out_tps,
                 "time_to_first_token")]


PARSERS = {"llm-d": parse_llmd, "guidellm": parse_guidellm,
           "inference-perf": parse_inference_perf, "aiperf": parse_aiperf}
