"""Calibration overlays: efficiency factors fitted by ``pd-advisor calibrate``.

An overlay is a small YAML file a workload names with ``calibration: calibration.yaml``
(relative to the workload). Its ``efficiency`` block has the keys and the
``{value, kind, source}`` form of a GPU profile's ``engines.<engine>`` block; applied to a
workload, its values replace the GPU profile's factors for the overlay's engine (the other
keys keep the profile's value). Format, version 1::

    version: 1
    gpu: h100-sxm                 # GPU profile id the runs were measured on
    engine: vllm                  # engine whose factors the overlay replaces
    precision: bf16               # what was served
    model: llama-3.1-8b           # model profile id served
    tensor_parallel: 1            # GPUs per instance in the runs
    chunk_tokens: 8192            # informative: the token budget assumed in the fit
    fitted_on:                    # what the factors were fitted on (shown by recommend/check)
      model: llama-3.1-8b
      engine: vllm
      gpu: h100-sxm
      tensor_parallel: 1
      precision: bf16
      files: [{path: bench.json, sha256: ...}]
    efficiency:
      prefill_compute_efficiency_bf16: {value: 0.48, kind: empirical, source: "..."}
      decode_bandwidth_efficiency:     {value: 0.71, kind: empirical, source: "..."}
      step_overhead_s:                 {value: 0.0042, kind: empirical, source: "..."}
    fit: {...}                    # informative: runs, errors before/after

A workload whose GPU, engine, model or precision differs from the overlay's is an input
error (:func:`overlay_mismatch`): the factors were measured for that combination only. A
different tensor parallelism is allowed (the model prices TP communication itself) and shown.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError

from advisor.core.hardware import EfficiencyFactors, GpuSpec
from advisor.escaping import visible
from advisor.loading.catalog import load_yaml_text
from advisor.loading.profile_errors import ProfileInvalidError
from advisor.loading.profile_schema import EngineEfficiencyBlock, ProfileId
from advisor.loading.yaml_source import key_position

FORMAT_VERSION = 1


class InputFile(BaseModel):
    """One benchmark file a calibration was fitted to."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    sha256: str


class FittedOn(BaseModel):
    """What a calibration was fitted on."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str
    engine: Literal["vllm", "sglang", "trtllm"]
    gpu: ProfileId
    tensor_parallel: StrictInt = Field(ge=1)
    precision: Literal["bf16", "fp8", "fp8-block"]
    files: list[InputFile]


class CalibrationOverlay(BaseModel):
    """A calibration overlay file (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: Literal[1]
    gpu: ProfileId
    engine: Literal["vllm", "sglang", "trtllm"]
    precision: Annotated[str, Field(min_length=1, max_length=64)] | None = None
    model: str | None = None
    tensor_parallel: StrictInt | None = Field(None, ge=1)
    chunk_tokens: StrictInt | None = Field(None, ge=1)
    fitted_on: FittedOn | None = None
    efficiency: EngineEfficiencyBlock
    fit: dict[str, Any] | None = None

    def factors(self) -> dict[str, float]:
        """The plain values the overlay sets (``field -> value``)."""
        return {name: number.value for name, number in self.efficiency if number is not None}

    def fitted_on_dict(self) -> dict[str, Any]:
        """``fitted_on`` as plain data (from the top-level keys for an overlay without it)."""
        if self.fitted_on is not None:
            return self.fitted_on.model_dump()
        return {"model": self.model, "engine": self.engine, "gpu": self.gpu,
                "tensor_parallel": self.tensor_parallel, "precision": self.precision,
                "files": list((self.fit or {}).get("files") or [])}


def load_overlay(path: Path) -> CalibrationOverlay:
    """Read and validate an overlay; problems raise :class:`ProfileInvalidError`."""
    data, text = load_yaml_text(path)
    if not isinstance(data, dict):
        raise ProfileInvalidError(path, [("1:1: expected a mapping (a calibration overlay written "
                                         "by `pd-advisor calibrate`)")])
    try:
        overlay = CalibrationOverlay.model_validate(data)
    except ValidationError as exc:
        problems = []
        for error in exc.errors(include_url=False):
            loc = [p for p in error["loc"] if not (isinstance(p, str) and "[" in p)]
            dotted = ".".join(str(p) for p in loc) or "(top level)"
            pos = key_position(text, loc)
            message = f"{dotted}: {error['msg']}"
            problems.append(f"{pos[0]}:{pos[1]}: {message}" if pos else message)
        raise ProfileInvalidError(path, problems) from None
    if not overlay.factors():
        raise ProfileInvalidError(path, ["efficiency: sets no factor"])
    return overlay


def apply_overlay(gpu: GpuSpec, overlay: CalibrationOverlay,
                  base: EfficiencyFactors | None = None) -> GpuSpec:
    """``gpu`` with the overlay's factors replacing those of the overlay's engine.

    ``base`` is what the engine runs with before the overlay (its engine profile's factors on
    this GPU); default: the GPU profile's factors for the engine.
    """
    start = base if base is not None else gpu.efficiency_for(overlay.engine)
    merged: EfficiencyFactors = dataclasses.replace(start, **overlay.factors())
    engines = {**gpu.engine_efficiency, overlay.engine: merged}
    return dataclasses.replace(gpu, engine_efficiency=engines)


def overlay_mismatch(overlay: CalibrationOverlay, gpu_id: str, engine: str,
                     model_id: str | None = None, precision: str | None = None) -> str | None:
    """Why an overlay does not apply to a workload's GPU, engine, model and precision (None
    when it does; a side the overlay does not record is not compared)."""
    if overlay.gpu != gpu_id:
        return (f"the calibration was fitted on GPU '{overlay.gpu}', but the workload uses "
                f"'{gpu_id}'; calibrate on this GPU or remove the key")
    if overlay.engine != engine:
        return (f"the calibration is for engine '{overlay.engine}', but the workload's engine is "
                f"'{engine}'")
    fitted = overlay.fitted_on_dict()
    if model_id is not None and fitted.get("model") and fitted["model"] != model_id:
        return (f"the calibration was fitted on model '{fitted['model']}', but the workload "
                f"serves '{model_id}'; calibrate with this model's runs or remove the key")
    if precision is not None and fitted.get("precision") and fitted["precision"] != precision:
        return (f"the calibration was fitted at precision '{fitted['precision']}', but the "
                f"workload runs '{precision}'; calibrate at this precision or remove the key")
    return None


def render_overlay(*, gpu: str, engine: str, precision: str, model: str, tensor_parallel: int,
                   chunk_tokens: int | None, factors: Mapping[str, float], source: str,
                   fit: Mapping[str, Any], files: Sequence[Mapping[str, str]] = ()) -> str:
    """The YAML text of an overlay (a commented header, then the validated document)."""
    import yaml

    efficiency = {
        name: {"value": _rounded(name, value), "kind": "empirical", "source": source}
        for name, value in factors.items()}
    document: dict[str, Any] = {
        "version": FORMAT_VERSION, "gpu": gpu, "engine": engine, "precision": precision,
        "model": model, "tensor_parallel": tensor_parallel, "chunk_tokens": chunk_tokens,
        "fitted_on": {"model": model, "engine": engine, "gpu": gpu,
                      "tensor_parallel": tensor_parallel, "precision": precision,
                      "files": [dict(f) for f in files]},
        "efficiency": efficiency, "fit": dict(fit)}
    CalibrationOverlay.model_validate(document)  # never write a file we could not read back
    header = ("# pd-advisor calibration overlay, written by `pd-advisor calibrate`.\n"
              "# Reference it from a workload with `calibration: <this file>` (relative to the\n"
              f"# workload): its factors replace the {visible(gpu)} profile's factors for engine "
              f"{visible(engine)}.\n")
    # allow_unicode=False: a file name's control or bidirectional characters are written as
    # YAML escapes, never raw (#33); the values load back the same
    body = yaml.safe_dump(document, sort_keys=False, allow_unicode=False, width=100)
    return header + body


def _rounded(name: str, value: float) -> float:
    """4 decimals for efficiencies, microseconds for overheads."""
    return round(float(value), 6 if name.endswith("_s") else 4)


def input_files(files: Sequence[tuple[Path, str]]) -> list[dict[str, str]]:
    """``[{path, sha256}]`` of the benchmark files an overlay was fitted to: each path with
    the SHA-256 of the bytes that were read from it (#33: never read again, so a pipe's
    hash is of what it delivered)."""
    return [{"path": str(path), "sha256": digest} for path, digest in files]
