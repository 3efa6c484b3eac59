"""``pd-advisor calibrate BENCH... --workload WORKLOAD``: fit efficiency factors to benchmarks.

Reads vLLM ``--save-result`` JSON and SGLang ``bench_serving`` JSONL files (format detected
per run), maps every run back to its load, fits the prefill compute efficiency, the decode
bandwidth efficiency and the per-step overhead of the workload's GPU and engine
(:mod:`advisor.core.calibration`), prints a before/after table of predicted against measured
TTFT, TPOT and output throughput per run, and writes a calibration overlay
(:mod:`advisor.loading.calibration_overlay`) the workload can name with
``calibration: FILE``.

The runs are taken to come from one endpoint serving the workload's model on its GPU with
``--tensor-parallel`` GPUs per instance (default: the workload's ``deployment.tensor_parallel``,
else the smallest degree that fits), ``--instances`` instances behind the endpoint (default 1)
and the engine's token budget (``--chunk-tokens``; default: the workload's
``deployment.chunk_tokens``, else the engine's own default for the GPU) — the choices of
:mod:`advisor.usecases.calibrate`, which also runs the fit.

What the result files record about the deployment (model, engine, TP, GPU count, GPU) must
match the workload, else exit 2 with one message per difference naming both sides
(``--allow-mismatch`` turns them into warnings); a fitted efficiency at the GPU's peak (1.0) is
refused, not written. The overlay records what it was fitted on (``fitted_on``). An existing
output file is replaced only with ``--force``.

The table goes to stdout (stderr when the overlay is written to stdout with ``-o -``);
diagnostics go to stderr. Exit 0 after writing the overlay, 2 when anything cannot be used
(bad or partial benchmark files, workload problems, runs that do not match the workload, a
physically impossible fit, nothing the runs constrain, an existing file without ``--force``).
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from advisor.cli.output import (
    fail,
    fail_with_problems,
    message,
    refuse_input_as_output,
    replaces_file,
    shown,
    warn,
    write_output,
)
from advisor.escaping import visible

if TYPE_CHECKING:
    from advisor.core.calibration import BenchmarkRun, CalibrationResult, RunPrediction
    from advisor.loading.bench_results import RunProvenance
    from advisor.usecases.calibrate import Disagreement

DEFAULT_OUTPUT = Path("calibration.yaml")

_FIELD_LABELS = {
    "prefill_compute_efficiency_bf16": "prefill compute efficiency (BF16)",
    "prefill_compute_efficiency_fp8": "prefill compute efficiency (FP8)",
    "decode_bandwidth_efficiency": "decode bandwidth efficiency",
    "step_overhead_s": "per-step overhead",
    "request_overhead_s": "per-request overhead",
}


def _warn(text: str) -> None:
    """One ``warning:`` line: a line break a benchmark file's model id or a file name brought
    into ``text`` is shown escaped (every calibrate message is one line)."""
    warn(shown(text))


def _fail(text: str) -> NoReturn:
    """One ``error:`` line, exit 2 (escaped as :func:`_warn`)."""
    fail(shown(text))


# --------------------------------------------------------------------------- setup
def _load_runs(paths: list[Path]) -> tuple[list[BenchmarkRun], list[RunProvenance], list[str]]:
    """Every run of every file, what the files record about their deployment, and the
    SHA-256 of each file as read: each file is read once (a pipe works); all file problems
    are reported (escaped) before exiting 2."""
    from advisor.core.limits import MAX_BENCHMARK_RUNS
    from advisor.loading.bench_results import BenchResultError, load_file, read_result_text

    runs: list[BenchmarkRun] = []
    records: list[RunProvenance] = []
    digests: list[str] = []
    errors: list[str] = []
    for path in paths:
        try:
            text, digest = read_result_text(path)
            got, recorded = load_file(path, max(MAX_BENCHMARK_RUNS - len(runs), 0), text,
                                      before=len(runs))
        except BenchResultError as exc:  # path:line:col: error: ... when the place is known
            located = re.search(r":\d+:\d+$", exc.source) is not None
            source = shown(exc.source)  # a file name may hold a line break (#33)
            errors.append(f"{source}: error: {exc.message}" if located
                          else f"pd-advisor: error: {source}: {exc.message}")
            continue
        runs.extend(got)
        records.extend(recorded)
        digests.append(digest)
    if errors:
        for error in errors:
            message(error)
        _fail(f"{len(errors)} benchmark file problem{'s' * (len(errors) != 1)}; nothing fitted")
    return runs, records, digests


# --------------------------------------------------------------------------- rendering
def _factor_text(field: str, value: float) -> str:
    return f"{value * 1000:.3f} ms" if field.endswith("_s") else f"{value:.4f}"


def _error_text(predicted: float | None, measured: float | None) -> str:
    if measured is None or measured <= 0:
        return ""
    if predicted is None or not math.isfinite(predicted):
        return "n/a"
    return f"{(predicted - measured) / measured * 100:+.1f}%"


def _value(value: float | None, scale: float) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    shown = value * scale
    return f"{shown:,.1f}" if abs(shown) >= 100 else f"{shown:.4g}"


def render_table(result: CalibrationResult, heading: str) -> str:
    """The factors before/after and every run's predicted vs measured metrics, as text."""
    lines = [heading, ""]
    rows: list[tuple[str, ...]] = [("factor", "before", "after", "fitted")]
    for field in result.fitted_fields:
        rows.append((_FIELD_LABELS[field], _factor_text(field, getattr(result.before, field)),
                     _factor_text(field, getattr(result.after, field)),
                     _fitted_text(result, field)))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for row in rows:
        lines.append("  ".join(c.ljust(w) if i in (0, 3) else c.rjust(w)
                               for i, (c, w) in enumerate(zip(row, widths, strict=True))).rstrip())
    lines.append("")
    table: list[tuple[str, ...]] = [("run", "load", "ISL/OSL", "metric", "measured", "before",
                                     "error", "after", "error")]
    for run, before, after in zip(result.runs, result.predictions_before,
                                  result.predictions_after, strict=True):
        metrics: list[tuple[str, float | None, Any, Any, float]] = [
            (f"TTFT {'p50' if run.ttft_statistic == 'median' else 'mean'} ms", run.ttft_s,
             before.ttft_s, after.ttft_s, 1000.0),
            ("TPOT mean ms", run.tpot_s, before.tpot_s, after.tpot_s, 1000.0),
            ("output tok/s", run.output_tokens_per_s, before.output_tokens_per_s,
             after.output_tokens_per_s, 1.0),
        ]
        first = True
        for name, measured, pred_b, pred_a, scale in metrics:
            if measured is None:
                continue
            table.append((
                visible(run.label) if first else "", _load(run, after) if first else "",
                f"{run.prompt_tokens:,.0f}/{run.output_tokens:,.0f}" if first else "",
                name, _value(measured, scale), _value(pred_b, scale),
                _error_text(pred_b, measured), _value(pred_a, scale),
                _error_text(pred_a, measured)))
            first = False
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    for row in table:
        lines.append("  ".join(c.ljust(w) if i < 4 else c.rjust(w)
                               for i, (c, w) in enumerate(zip(row, widths, strict=True))).rstrip())
    lines.append("")
    lines.append(f"RMS log error over {result.residual_count} measurements: "
                 f"before {result.rms_log_error_before * 100:.1f} %, "
                 f"after {result.rms_log_error_after * 100:.1f} %")
    if any(p.saturated for p in result.predictions_after):
        lines.append("* the model predicts this load saturates the instance (TTFT not fitted)")
    return "\n".join(lines) + "\n"


def _fitted_text(result: CalibrationResult, field: str) -> str:
    if not result.constrained[field]:
        return "no (not constrained by the runs; not written)"
    return "yes, at its bound (check the runs)" if result.at_bound[field] else "yes"


def _load(run: BenchmarkRun, pred: RunPrediction) -> str:
    return run.load_label + (" *" if pred.saturated else "")


# --------------------------------------------------------------------------- command
def register(app: typer.Typer) -> None:
    """Attach the ``calibrate`` command to ``app``."""

    @app.command("calibrate")
    def calibrate(
        results: Annotated[list[Path], typer.Argument(
            metavar="BENCH...", help="vLLM --save-result JSON or SGLang bench_serving JSONL "
                                     "files (format detected per run).", show_default=False)],
        workload: Annotated[Path, typer.Option(
            "--workload", "-w", metavar="WORKLOAD", show_default=False,
            help="Workload YAML naming the model, GPU, precision and engine that served the "
                 "runs.")],
        output: Annotated[Path, typer.Option(
            "-o", "--output", metavar="FILE",
            help="Where to write the calibration overlay ('-' = stdout; the table then goes "
                 "to stderr).")] = DEFAULT_OUTPUT,
        tensor_parallel: Annotated[int | None, typer.Option(
            "--tensor-parallel", min=1, show_default=False,
            help="GPUs per instance (default: deployment.tensor_parallel, else the smallest "
                 "that fits).")] = None,
        chunk_tokens: Annotated[int | None, typer.Option(
            "--chunk-tokens", min=1, show_default=False,
            help="Engine token budget per step (default: deployment.chunk_tokens, else the "
                 "engine's default for the GPU).")] = None,
        instances: Annotated[int | None, typer.Option(
            "--instances", min=1, show_default=False,
            help="Identical instances behind the benchmarked endpoint (default: the "
                 "replicas the files record, else 1).")] = None,
        profiles: Annotated[list[Path] | None, typer.Option(
            "--profiles", metavar="DIR", show_default=False,
            help="Extra profile directory (gpus/, interconnects/, models/); repeatable.")] = None,
        allow_mismatch: Annotated[bool, typer.Option(
            "--allow-mismatch",
            help="Fit even when the result files record a model, engine, TP or GPU count "
                 "other than the workload's (a warning each instead of exit 2).")] = False,
        force: Annotated[bool, typer.Option(
            "--force", help="Replace an existing output file.")] = False,
    ) -> None:
        """Fit the GPU's efficiency factors for the workload's engine to benchmark results.

        Prints predicted vs measured TTFT, TPOT and throughput per run before and after the
        fit, and writes a calibration overlay for `calibration:` in the workload. Exit codes:
        0 written, 2 could not calibrate.
        """
        from advisor.loading.catalog import ProfileCatalog
        from advisor.loading.errors import InputError
        from advisor.loading.resolve import load_scenario
        from advisor.usecases.calibrate import (
            CalibrationSetupError,
            calibrate,
            instances_from,
            provenance_mismatches,
            served_model_note,
        )

        to_stdout = str(output) == "-"
        refuse_input_as_output(output, [workload, *results])
        if not to_stdout and replaces_file(output) and not force:
            _fail(f"{shown(output)} exists; pass --force to replace it or -o to write elsewhere")
        try:
            scenario = load_scenario(workload, ProfileCatalog(extra_dirs=profiles or ()))
        except InputError as exc:
            fail_with_problems(workload, exc.problems, "nothing fitted")
        runs, records, digests = _load_runs(results)
        given_tp = tensor_parallel
        dep = scenario.deployment
        if given_tp is None and dep is not None and dep.mode == "colocated":
            given_tp = dep.tensor_parallel
        config_file, config_name = _model_config(workload)
        model_named, model_note, served = served_model_note(records, config_name, config_file)
        instances, instances_note, replica_problems = instances_from(records, instances)
        for note in (model_note, f"fitted with {instances_note}" if instances_note else ""):
            if note:
                message(f"pd-advisor: note: {shown(note)}")  # a model id may hold anything
        mismatches, fit_tp = provenance_mismatches(scenario, records, str(workload), given_tp,
                                                   instances, model_named)
        mismatches = replica_problems + mismatches
        if mismatches and not allow_mismatch:
            for problem in mismatches:
                message(f"pd-advisor: error: {shown(problem)}")
            _fail(f"{len(mismatches)} difference{'s' * (len(mismatches) != 1)} between the "
                  "benchmark files and the workload; nothing fitted (pass --allow-mismatch to "
                  "fit anyway)")
        for problem in mismatches:
            _warn(f"{problem} (--allow-mismatch)")
        try:
            done = calibrate(scenario, runs, results, fit_tp, chunk_tokens, instances, digests)
        except CalibrationSetupError as exc:
            _fail(str(exc))
        inst, result = done.instance, done.result

        heading = (f"Calibration of {scenario.engine.id} on {scenario.cluster.gpu.id}: "
                   f"{served or scenario.model.id}, {scenario.precision}, "
                   f"TP{inst.tensor_parallel}"
                   f"{f' x {instances} instances' if instances > 1 else ''}, token budget "
                   f"{done.token_budget}; {len(runs)} run{'s' * (len(runs) != 1)} from "
                   f"{len(results)} file{'s' * (len(results) != 1)}")
        table_stream = sys.stderr if to_stdout else sys.stdout
        table_stream.write(render_table(result, visible(heading)))
        table_stream.flush()
        if not result.success:
            _warn(f"the fit did not converge ({result.message}); the factors are the best found")
        if done.refused:
            reasons = []
            if done.impossible:
                reasons.append("the fitted factors are outside physical bounds: "
                               + "; ".join(done.impossible))
            if done.worse:
                reasons.append("the fit raises the error on the files it was fitted to: "
                               + "; ".join(done.worse))
            d = done.disagreement
            if d is not None:
                table_stream.write(render_disagreement(d, results, workload))
                if d.accepted:
                    _fail("; ".join(reasons) + f". {d.file} disagrees with the other files "
                          "(above): fitted without it they are served within the physical "
                          "bounds; nothing written")
                reasons.append(f"{d.file} is the file the fit misses most (above), and the "
                               "others are not served within the bounds without it either")
            from advisor.usecases.calibrate import file_errors

            per_file = ", ".join(f"{name} {b * 100:.1f} % -> {a * 100:.1f} %"
                                 for name, (b, a) in file_errors(result).items())
            reasons.append(f"RMS log error per file, before -> after: {per_file}")
            _fail("; ".join(reasons) + ". The runs are not what this model can be served "
                  f"as on {scenario.cluster.gpu.id} at TP{inst.tensor_parallel}: check that "
                  "they come from this model, GPU, precision, TP and instance count (prefix "
                  "caching or speculative decoding also make runs faster than the model); "
                  "nothing written")
        if not done.kept:
            _fail("the runs constrain none of the factors (every metric is insensitive to "
                  "them); nothing written")
        if done.dropped:
            _warn(f"not written (the runs do not constrain them): {', '.join(done.dropped)}")
        write_output(done.overlay, None if to_stdout else output, inputs=[workload, *results],
                     wrote=f"; add `calibration: {_relative_to(output, workload)}` to "
                     f"{workload} (the path is relative to the workload file)")


def _misses(runs: tuple[BenchmarkRun, ...], preds: tuple[RunPrediction, ...]) -> list[str]:
    lines = []
    for run, pred in zip(runs, preds, strict=True):
        for name, measured, predicted, scale in (
                (f"TTFT {'p50' if run.ttft_statistic == 'median' else 'mean'}", run.ttft_s,
                 pred.ttft_s, 1000.0),
                ("TPOT mean", run.tpot_s, pred.tpot_s, 1000.0),
                ("output tok/s", run.output_tokens_per_s, pred.output_tokens_per_s, 1.0)):
            if measured is None:
                continue
            unit = "" if scale == 1.0 else " ms"
            lines.append(f"  {run.label} ({run.load_label}): {name} measured "
                         f"{_value(measured, scale)}{unit}, predicted "
                         f"{_value(predicted, scale)}{unit} "
                         f"({_error_text(predicted, measured)})")
    return lines


def render_disagreement(d: Disagreement, results: list[Path], workload: Path) -> str:
    """The file the refused fit misses most, and what the others say without it."""
    fit = d.result
    factors = ", ".join(f"{_FIELD_LABELS[f]} {_factor_text(f, getattr(fit.after, f))}"
                        for f in fit.fitted_fields)
    lines = ["", f"{d.file} is the file the fit misses most; at the refused factors:"]
    lines += _misses(d.runs, d.full_predictions)
    if d.accepted:
        lines.append(f"Fitted without it ({', '.join(d.others)}), the RMS log error goes "
                     f"{fit.rms_log_error_before * 100:.1f} % -> "
                     f"{fit.rms_log_error_after * 100:.1f} % within the physical bounds "
                     f"({factors}); at those factors {d.file} is off by:")
        lines += _misses(d.runs, d.predictions)
        kept = [str(p) for p in results if p.name in d.others]
        lines.append(f"  calibrate on the others: pd-advisor calibrate {' '.join(kept)} -w "
                     f"{workload}")
    elif d.others:
        lines.append(f"Without it ({', '.join(d.others)}) the fit is refused too: "
                     + "; ".join(d.problems or ("fewer than two files remain",)))
    return "\n".join(lines) + "\n"


def _model_config(workload: Path) -> tuple[str | None, str | None]:
    """(the config.json the workload's ``model:`` names, its ``_name_or_path``) — (None,
    None) when the model is a profile id."""
    import json

    from advisor.loading.catalog import config_path

    try:
        import yaml

        doc = yaml.safe_load(workload.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError):
        return None, None
    ref = doc.get("model") if isinstance(doc, dict) else None
    if not isinstance(ref, str):
        return None, None
    base = Path(ref).expanduser()
    path = config_path(str(base if base.is_absolute() else workload.parent / base)) \
        or config_path(ref)
    if path is None:
        return None, None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return str(path), None
    name = data.get("_name_or_path") if isinstance(data, dict) else None
    named = name.strip() if isinstance(name, str) and name.strip() and not name.startswith(
        ("/", ".")) else None
    return str(path), named


def _relative_to(output: Path, workload: Path) -> str:
    """``output`` as the workload's ``calibration:`` key names it: relative to the workload
    file's directory (#21: not to the working directory)."""
    import os

    try:
        return Path(os.path.relpath(output.resolve(), workload.resolve().parent)).as_posix()
    except ValueError:  # another drive (Windows)
        return str(output.resolve())
