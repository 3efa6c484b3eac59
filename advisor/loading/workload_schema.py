"""The workload file format, version 1, as strict pydantic models, and its checks.

The models are the single source of the format: they validate files, and their field
descriptions feed the JSON Schema (``advisor/schemas/workload.schema.json``). Rules:

* unknown keys are errors (``extra="forbid"``) with a "did you mean" suggestion;
* types are strict: ``"16"`` is not an integer, ``yes`` is not a boolean;
* keys may be added within version 1, none renamed or removed.

Checks that span several fields (phase shares, p95 ≥ mean, a disaggregated deployment needing
both pool sizes, ...) are not pydantic validators: they run afterwards on every section that
validated on its own, so that a file with problems in several sections gets all of them
reported, each at the exact key.

The result (:class:`SchemaIssue`s: a ``loc`` and a message) :mod:`.resolve` locates.
"""

from __future__ import annotations

import difflib
import math
import typing
from dataclasses import dataclass, field, fields
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StrictBool,
    StrictInt,
    Tag,
    TypeAdapter,
    ValidationError,
    create_model,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError

from advisor.core.limits import (  # the limits of the model's domain
    MAX_BURSTINESS,
    MAX_GPUS,
    MAX_PHASES,
    MAX_RATE_RPS,
    MAX_TOKENS,
    MIN_RATE_RPS,
)
from advisor.core.scenario import Policy
from advisor.loading import deployment_ref as dref
from advisor.loading import expert_parallel_input as epi
from advisor.loading import speculative_input as spi
from advisor.loading import workload_fields as wf
from advisor.loading.errors import describe

SUPPORTED_VERSIONS: tuple[int, ...] = (1,)  # workload/config format versions read

PHASE_SHARE_TOLERANCE = 1e-6
"""How far the phase shares may add up away from 1."""

Loc = tuple[str | int, ...]


class _Model(BaseModel):
    """Base of every format model: strict types, no unknown keys, no inf/nan, immutable."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False)


# --------------------------------------------------------------------------- lengths
class LengthStats(_Model):
    """Statistics of a token-length distribution; a lognormal is fitted to them."""

    mean: float | None = Field(None, ge=1, le=MAX_TOKENS, description="Mean length in tokens.")
    p50: float | None = Field(None, ge=1, le=MAX_TOKENS, description="Median length in tokens.")
    p95: float | None = Field(None, ge=1, le=MAX_TOKENS,
                              description="95th-percentile length in tokens.")
    max: float | None = Field(
        None, ge=1, le=MAX_TOKENS,
        description="Longest length in tokens; the fitted distribution is clipped here.")

    @model_validator(mode="after")
    def _consistent(self) -> LengthStats:
        """The statistics must describe one right-skewed distribution (first problem only)."""
        for issue in length_issues(self, ()):
            raise PydanticCustomError("length_stats", issue.message,
                                      {"field": ".".join(str(p) for p in issue.loc)})
        return self


_TAG_TOKENS = "tokens:int"
_TAG_STATS = "tokens:stats"
_TAG_ENGINE_NAME = "engine:name"
_TAG_ENGINE_REF = "engine:ref"
_UNION_TAGS = frozenset({_TAG_TOKENS, _TAG_STATS, _TAG_ENGINE_NAME, _TAG_ENGINE_REF,
                         dref.BLOCK_TAG, dref.FROM_TAG, *wf.PRECISION_TAGS})


def _length_tag(value: Any) -> str | None:
    """Pick the union member for a length: a number is a constant, a mapping has statistics."""
    if isinstance(value, dict | LengthStats):
        return _TAG_STATS
    if isinstance(value, int | float):
        return _TAG_TOKENS
    return None


TokenLength = Annotated[
    Annotated[StrictInt, Field(ge=1, le=MAX_TOKENS), Tag(_TAG_TOKENS)]
    | Annotated[LengthStats, Tag(_TAG_STATS)],
    Discriminator(
        _length_tag,
        custom_error_type="token_length_type",
        custom_error_message="expected a token count (an integer >= 1) or a mapping with "
                             "mean, p50, p95 and/or max",
    ),
]
"""A token length: an integer (every request has exactly this many tokens) or statistics."""


# --------------------------------------------------------------------------- engine
ENGINE_NAMES = ("vllm", "sglang", "trtllm")


class EngineRef(_Model):
    """An engine at a release: the engine profile whose version family covers it."""

    name: Literal["vllm", "sglang", "trtllm"] = Field(description="Serving engine.")
    version: str | None = Field(
        None, min_length=1, max_length=40, pattern=r"^v?[0-9]+(\.[0-9]+)*",
        description="Release the deployment runs, e.g. \"0.11\" or \"0.5.1.post1\" "
        "(quote it: unquoted 0.10 is the number 0.1). Omitted: the engine's current profile.")


def _engine_tag(value: Any) -> str | None:
    if isinstance(value, dict | EngineRef):
        return _TAG_ENGINE_REF
    if isinstance(value, str):
        return _TAG_ENGINE_NAME
    return None


EngineChoice = Annotated[
    Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[a-z0-9][a-z0-9._-]*$"),
              Tag(_TAG_ENGINE_NAME)]
    | Annotated[EngineRef, Tag(_TAG_ENGINE_REF)],
    Discriminator(
        _engine_tag,
        custom_error_type="engine_type",
        custom_error_message="expected an engine name (vllm, sglang, trtllm, or an engine "
                             "profile id such as vllm-v0) or a mapping {name, version}",
    ),
]
"""An engine: a name or engine-profile id, or ``{name, version}``."""


# --------------------------------------------------------------------------- sections
class Cluster(_Model):
    """The GPUs the deployment may use and how they are connected."""

    gpu: str = Field(min_length=1, description="GPU profile id (see `pd-advisor profiles list`) "
                     "or path to a GPU profile YAML, relative to this file.")
    gpus: StrictInt = Field(ge=1, le=MAX_GPUS, description="Total GPUs the deployment may use.")
    gpus_per_node: StrictInt | None = Field(
        None, ge=1, le=MAX_GPUS, description="GPUs per node; default from the GPU profile.")
    intra_node: str | None = Field(
        None, min_length=1, description="Interconnect profile between GPUs of one node "
        "(e.g. nvlink4); default from the GPU profile.")
    inter_node: str | None = Field(
        None, min_length=1, description="Per-GPU NIC between nodes (e.g. ib-ndr-400). "
        "Omitted means the deployment must fit on one node.")
    nics_per_node: wf.NicsPerNode = None
    price_per_gpu_hour: wf.PricePerGpuHour = None


class TrafficPhase(_Model):
    """One segment of the daily mix; anything it does not give is inherited from `traffic`."""

    name: str = Field(min_length=1, description="Phase name, unique within the workload.")
    share: float = Field(gt=0, le=1, description="Fraction of the day this phase lasts; "
                         "the shares of all phases add up to 1.")
    rate_rps: float | None = Field(None, gt=0, le=MAX_RATE_RPS,
                                   description="Mean arrival rate in this phase, "
                                   "requests/s (default: traffic.rate_rps).")
    concurrency: wf.Concurrency = None
    burstiness: float | None = Field(None, ge=0, le=MAX_BURSTINESS,
                                     description="Coefficient of variation of "
                                     "inter-arrival times (default: traffic.burstiness).")
    prompt_tokens: TokenLength | None = Field(
        None, description="Prompt length in this phase (default: traffic.prompt_tokens).")
    output_tokens: TokenLength | None = Field(
        None, description="Output length in this phase (default: traffic.output_tokens).")


class Traffic(_Model):
    """Arrivals and request lengths; `phases` describes a mix that shifts over the day."""

    rate_rps: wf.TrafficRate = None
    concurrency: wf.Concurrency = None
    requests: wf.BatchRequests = None
    arrival: wf.Arrival = None
    prefix_cache_hit_rate: wf.PrefixHitRate = None
    shared_prefix_tokens: wf.SharedPrefixTokens = None
    burstiness: float = Field(1.0, ge=0, le=MAX_BURSTINESS,
                              description="Coefficient of variation of inter-arrival "
                              "times: 0 = evenly spaced, 1 = Poisson, >1 = bursty.")
    prompt_tokens: TokenLength | None = Field(
        None, description="Prompt length: an integer, or {mean, p50, p95, max}. "
        "Required unless every phase gives its own.")
    output_tokens: TokenLength | None = Field(
        None, description="Output (generated) length: an integer, or {mean, p50, p95, max}. "
        "Required unless every phase gives its own.")
    phases: list[TrafficPhase] | None = Field(
        None, min_length=1, max_length=MAX_PHASES, description="The mix over a day; each "
        f"phase overrides rate, burstiness and lengths. Shares add up to 1. At most "
        f"{MAX_PHASES} phases.")


class Slo(_Model):
    """Latency targets; each is optional."""

    ttft_ms: float | None = Field(None, gt=0, description="Time-to-first-token target, ms.")
    tpot_ms: float | None = Field(None, gt=0, description="Time-per-output-token target "
                                  "(inter-token latency), ms.")
    percentile: float = Field(95.0, ge=50, le=99.9, description="Percentile at which the "
                              "targets must hold (50..99.9).")


class Operations(_Model):
    """How the deployment is operated."""

    autoscaling: StrictBool = Field(False, description="Whether prefill and decode pools can "
                                    "be resized as the traffic mix shifts.")
    router: wf.OperationsRouter = "least-loaded"


class Deployment(_Model):
    """What runs today; `pd-advisor check` judges it against the recommendation."""

    mode: Literal["colocated", "disaggregated"] = Field(
        description="colocated: prefill and decode share each GPU; "
        "disaggregated: separate prefill and decode pools.")
    chunked_prefill: StrictBool = Field(True, description="Whether prefills are split into "
                                        "chunks and batched with decodes.")
    chunk_tokens: StrictInt | None = Field(
        None, ge=1, le=MAX_TOKENS, description="Token budget per step when chunked_prefill is "
        "on (vLLM --max-num-batched-tokens, SGLang --chunked-prefill-size, TensorRT-LLM "
        "max_num_tokens); omitted: the engine's default for the GPU.")
    tensor_parallel: StrictInt | None = Field(
        None, ge=1, description="Tensor-parallel degree of each replica (colocated only).")
    prefill_gpus: StrictInt | None = Field(
        None, ge=1, description="GPUs in the prefill pool (disaggregated only; required).")
    decode_gpus: StrictInt | None = Field(
        None, ge=1, description="GPUs in the decode pool (disaggregated only; required).")
    prefill_tensor_parallel: wf.PrefillTensorParallel = None
    decode_tensor_parallel: wf.DecodeTensorParallel = None
    expert_parallel: epi.ExpertParallel = None
    prefill_expert_parallel: epi.PrefillExpertParallel = None
    decode_expert_parallel: epi.DecodeExpertParallel = None
    max_num_seqs: wf.MaxNumSeqs = None
    max_model_len: wf.MaxModelLen = None
    gpu_memory_utilization: wf.GpuMemoryUtilization = None
    router: wf.DeploymentRouter = None
    speculative: spi.SpeculativeField = None


# --------------------------------------------------------------------------- policy
_POLICY_DESCRIPTIONS: dict[str, str] = {
    "max_rounding_loss": "Share of the ideal split's goodput lost to whole instances above "
                         "which a disaggregate verdict carries a rounding warning (fraction; "
                         "gpu-scale itself compares the ideal and integer gains).",
    "max_kv_link_utilization": "Largest acceptable utilisation of the link that carries KV "
                               "caches from prefill to decode (fraction).",
    "max_kv_transfer_share_of_ttft": "Largest acceptable share of the TTFT target spent moving "
                                     "the KV cache (fraction).",
    "max_static_mix_loss": "Largest acceptable goodput loss from fixed prefill/decode pools "
                           "when the mix shifts between phases (fraction).",
    "min_disagg_gain": "Smallest goodput gain over the colocated pool that justifies "
                       "recommending disaggregation (fraction).",
    "split_tolerance": "How far the deployed prefill:decode split may stray from the "
                       "recommended one before it is flagged (fraction).",
    "memory_fraction": "Share of GPU memory the engine may use for weights and KV cache "
                       "(fraction).",
    "assumed_mix_drift": "Drift of the mean prompt and output lengths (± fraction) a "
                         "single-phase workload without autoscaling is judged under by "
                         "traffic-mix.",
}


def _policy_model() -> type[_Model]:
    """Build ``PolicyOverrides``: one optional key per field of ``core.scenario.Policy``.

    Generated from the dataclass so a new threshold is accepted (and appears in the schema,
    where the drift test notices it) without editing this module.
    """
    hints = typing.get_type_hints(Policy)
    definitions: dict[str, Any] = {}
    for spec in fields(Policy):
        kind = hints[spec.name]
        default = spec.default
        bound: dict[str, float] = {"gt": 0.0} if spec.name == "memory_fraction" else {"ge": 0.0}
        if kind is bool:
            annotation: Any = StrictBool | None
            bound = {}
        elif kind is int:
            annotation = StrictInt | None
        else:
            annotation = float | None
            if spec.name in _POLICY_DESCRIPTIONS:
                bound["le"] = 1.0
        text = _POLICY_DESCRIPTIONS.get(spec.name, f"Override of the `{spec.name}` threshold.")
        definitions[spec.name] = (annotation, Field(
            # Ignored below: Field() overloads cannot match the ge/le bounds passed as **kwargs (a
            # dict[str, float]).
            None, description=f"{text} Default {default}.", **bound))  # type: ignore[call-overload]
    model: type[_Model] = create_model(
        "PolicyOverrides", __base__=_Model,
        __doc__="Overrides of rule thresholds; omitted keys keep their defaults.", **definitions)
    return model


PolicyOverrides = _policy_model()


# --------------------------------------------------------------------------- documents
class WorkloadV1(_Model):
    """A pd-advisor workload: model, hardware, traffic, targets and today's deployment."""

    model_config = ConfigDict(title="pd-advisor workload (version 1)")

    version: Literal[1] = Field(description="Format version; only 1 exists.")
    name: str | None = Field(None, min_length=1, description="A name for reports.")
    model: str = Field(min_length=1, description="Model profile id (see `pd-advisor profiles "
                       "list`), path to a model profile YAML, or path to a Hugging Face "
                       "config.json (or a folder holding one), relative to this file.")
    precision: wf.PrecisionChoice
    engine: EngineChoice = Field(
        "vllm", description="Serving engine: vllm, sglang or trtllm (its current engine "
        "profile), an engine profile id (see `pd-advisor profiles list engines`), or "
        "{name, version} to pick the profile whose version family covers that release.")
    calibration: str | None = Field(
        None, min_length=1, description="Calibration overlay written by `pd-advisor calibrate`, "
        "relative to this file: its efficiency factors replace the GPU profile's for this "
        "workload's engine.")
    cluster: Cluster
    traffic: Traffic
    slo: Slo = Field(default_factory=lambda: Slo.model_validate({}),
                     description="Latency targets (all optional).")
    operations: Operations = Field(default_factory=lambda: Operations.model_validate({}),
                                   description="How the deployment is operated.")
    deployment: dref.choice(Deployment) | None = Field(  # type: ignore[valid-type]  # built
        None, description="What runs today (optional; `pd-advisor check` gates on it): its "
        "keys, or {from: manifest.yaml} to read it from Kubernetes manifests.")
    # Ignored below: PolicyOverrides is built by create_model() at import time, a variable to mypy.
    policy: PolicyOverrides = Field(  # type: ignore[valid-type]
        default_factory=PolicyOverrides,
        description="Overrides of rule thresholds (beats .pd-advisor.yaml, which beats defaults).")


class ConfigV1(_Model):
    """A ``.pd-advisor.yaml`` project configuration: policy overrides for the workloads below."""

    model_config = ConfigDict(title="pd-advisor project configuration (version 1)")

    version: Literal[1] = Field(description="Format version; only 1 exists.")
    # Ignored below: PolicyOverrides is built by create_model() at import time, a variable to mypy.
    policy: PolicyOverrides = Field(  # type: ignore[valid-type]
        default_factory=PolicyOverrides, description="Overrides of rule thresholds.")


# --------------------------------------------------------------------------- issues
@dataclass(frozen=True)
class SchemaIssue:
    """One problem found by the format checks, located by a pydantic-style path."""

    loc: Loc
    """Path to the node to point at (for a missing key: the mapping that lacks it)."""
    key: str
    """Dotted key shown to the user (empty for the top level)."""
    message: str
    at_key: bool = False
    """Point at the key itself rather than its value (unknown keys)."""


@dataclass
class CheckResult:
    """What checking one document produced."""

    model: BaseModel | None
    """The validated document, or None if any issue was found."""
    sections: dict[str, BaseModel | None] = field(default_factory=dict)
    """Top-level sections that validated on their own (None for an absent optional one),
    usable for further checks even when another section is bad."""
    issues: list[SchemaIssue] = field(default_factory=list)


def dotted(loc: Loc) -> str:
    """``('traffic', 'phases', 0, 'share')`` → ``traffic.phases.0.share``."""
    return ".".join(str(part) for part in loc)


def check_workload(data: Any) -> CheckResult:
    """Validate a workload document (plain data); report every problem found."""
    return _check(WorkloadV1, data, "workload", _WORKLOAD_SECTION_CHECKS)


def check_config(data: Any) -> CheckResult:
    """Validate a ``.pd-advisor.yaml`` document (plain data)."""
    return _check(ConfigV1, data, "configuration", {})


def _check(model_cls: type[BaseModel], data: Any, what: str,
           section_checks: dict[str, Any]) -> CheckResult:
    """Version gate, pydantic validation, then cross-field checks per valid section."""
    if not isinstance(data, dict):
        keys = ", ".join(list(model_cls.model_fields)[:4])
        return CheckResult(None, issues=[SchemaIssue(
            (), "", f"the top level of a {what} file must be a mapping of keys ({keys}, ...), "
                    f"got {describe(data)}")])
    issues: list[SchemaIssue] = []
    supported = ", ".join(str(v) for v in SUPPORTED_VERSIONS)
    if "version" not in data:
        issues.append(SchemaIssue(
            (), "", f"missing required key 'version' (supported: {supported})"))
        data = {"version": SUPPORTED_VERSIONS[-1], **data}
    else:
        version = data["version"]
        if isinstance(version, bool) or not isinstance(version, int):
            return CheckResult(None, issues=[SchemaIssue(
                ("version",), "", f"version must be an integer (supported: {supported}), "
                                  f"got {describe(version)}")])
        if version not in SUPPORTED_VERSIONS:
            return CheckResult(None, issues=[SchemaIssue(
                ("version",), "",
                f"version {version} is not supported; supported versions are {supported}")])

    model: BaseModel | None = None
    try:
        model = model_cls.model_validate(data)
    except ValidationError as exc:
        issues.extend(_translate(error, model_cls) for error in exc.errors())

    sections: dict[str, BaseModel | None] = {}
    for name, info in model_cls.model_fields.items():
        if name == "version":
            continue
        section = _validate_section(model, name, info, data)
        if section is _INVALID:
            continue
        sections[name] = section
        check = section_checks.get(name)
        if check is not None and section is not None:
            issues.extend(check(section, (name,)))
    if sections.get("operations") is not None and "deployment" in sections:
        issues.extend(SchemaIssue(at, dotted(at), message) for at, message
                      in wf.router_issues(sections["operations"], sections["deployment"]))
    return CheckResult(model if not issues else None, sections, issues)


_INVALID: Any = object()


def _validate_section(model: BaseModel | None, name: str, info: FieldInfo,
                      data: dict[str, Any]) -> Any:
    """The validated value of one top-level key (its default if absent), or ``_INVALID``."""
    if model is not None:
        return getattr(model, name)
    if name not in data:
        if info.is_required():
            return _INVALID
        return info.get_default(call_default_factory=True)
    annotation: Any = info.annotation
    if info.metadata:  # Field constraints such as min_length travel as metadata
        annotation = Annotated[(annotation, *info.metadata)]
    adapter: TypeAdapter[Any] = TypeAdapter(annotation)
    try:
        return adapter.validate_python(data[name], strict=True)
    except ValidationError:
        return _INVALID


# --------------------------------------------------------------------------- translation
def _translate(error: Any, model_cls: type[BaseModel]) -> SchemaIssue:
    """Turn one pydantic error into a user-facing issue."""
    loc: Loc = tuple(part for part in error["loc"] if part not in _UNION_TAGS)
    kind = error["type"]
    sub_key = (error.get("ctx") or {}).get("field")
    if sub_key:  # a model-level check naming the key it is about
        loc += tuple(sub_key.split("."))
    value = error.get("input")
    if kind == "missing":
        parent = loc[:-1]
        return SchemaIssue(parent, dotted(parent), f"missing required key '{loc[-1]}'")
    if kind == "extra_forbidden":
        allowed = _allowed_keys(model_cls, loc[:-1])
        return SchemaIssue(loc, dotted(loc), _unknown_key_message(str(loc[-1]), allowed),
                           at_key=True)
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return SchemaIssue(loc, dotted(loc), f"expected a mapping, got {describe(value)}")
    if kind == "list_type":
        return SchemaIssue(loc, dotted(loc), f"expected a list, got {describe(value)}")
    if kind in ("too_short", "string_too_short") and not value:
        return SchemaIssue(loc, dotted(loc), "must not be empty")
    if kind == "too_long" and isinstance(value, list):  # e.g. more phases than MAX_PHASES
        limit = (error.get("ctx") or {}).get("max_length")
        return SchemaIssue(loc, dotted(loc), f"at most {limit} entries are accepted, got "
                                             f"{len(value)}")
    message = str(error["msg"])
    if "url" in error and not isinstance(value, dict | list):  # built-in: say what was found
        if message.startswith("Input should be "):
            message = "must be " + message[len("Input should be "):]
        message = f"{message}, got {describe(value)}"
        if (kind == "int_type" and isinstance(value, float) and math.isfinite(value)
                and value.is_integer()):  # 8.0: say why 8 is refused (#21)
            message = (f"must be an integer, got {value!r} (a number with a decimal point); "
                       f"write {int(value)}")
        if kind == "bool_type" and isinstance(value, str) and value.lower() in _YAML11_BOOLS:
            message += "; write true or false"
        if (kind == "string_type" and loc and loc[-1] == "version"
                and isinstance(value, int | float) and not isinstance(value, bool)):
            message += '; quote the release, e.g. version: "0.10"'
    return SchemaIssue(loc, dotted(loc), message)


_YAML11_BOOLS = frozenset({"yes", "no", "y", "n", "on", "off"})


def _unknown_key_message(key: str, allowed: list[str]) -> str:
    """``unknown key 'x'; did you mean 'y'?`` (or the list of allowed keys)."""
    close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
    if close:
        return f"unknown key '{key}'; did you mean '{close[0]}'?"
    return f"unknown key '{key}'; allowed keys: {', '.join(allowed)}"


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """Pydantic model classes mentioned in a type annotation (through unions, lists, Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found: list[type[BaseModel]] = []
    for arg in typing.get_args(annotation):
        found.extend(_models_in(arg))
    return found


def _allowed_keys(model_cls: type[BaseModel], loc: Loc) -> list[str]:
    """The field names of the model found at ``loc`` inside ``model_cls``."""
    current: type[BaseModel] | None = model_cls
    for part in loc:
        if current is None:
            break
        if isinstance(part, int):
            continue
        info = current.model_fields.get(part)
        candidates = _models_in(info.annotation) if info is not None else []
        current = candidates[0] if candidates else None
    return list(current.model_fields) if current is not None else []


# --------------------------------------------------------------------------- cross-field checks
def _fmt(value: float) -> str:
    """A number as written by a person (2000, not 2000.0)."""
    return f"{value:g}"


def length_issues(length: Any, loc: Loc) -> list[SchemaIssue]:
    """Consistency of one length's statistics (nothing to check for a constant).

    A distribution needs a central statistic (mean or p50; docs/model.md §2 fits nothing to
    p95 alone). The empty-mapping case is reported at ``loc``; the others at the offending
    statistic.
    """
    if not isinstance(length, LengthStats):
        return []
    issues: list[SchemaIssue] = []
    mean, p50, p95, top = length.mean, length.p50, length.p95, length.max
    if mean is None and p50 is None and p95 is None:
        issues.append(SchemaIssue(loc, dotted(loc), "give at least one of mean, p50, p95"))
        return issues
    if mean is None and p50 is None:  # a tail alone fixes neither the centre nor the spread
        issues.append(SchemaIssue((*loc, "p95"), dotted((*loc, "p95")),
                                  "p95 alone does not define a length distribution; give mean "
                                  "or p50 as well"))
    if mean is not None and p50 is not None and p50 > mean:
        issues.append(SchemaIssue((*loc, "p50"), dotted((*loc, "p50")),
                                  f"p50 ({_fmt(p50)}) is above mean ({_fmt(mean)}); lengths are "
                                  "modelled as right-skewed (lognormal), which needs mean >= p50"))
    if p95 is not None:
        for label, stat in (("mean", mean), ("p50", p50)):
            if stat is not None and p95 < stat:
                issues.append(SchemaIssue((*loc, "p95"), dotted((*loc, "p95")),
                                          f"p95 ({_fmt(p95)}) is below {label} ({_fmt(stat)}); "
                                          f"p95 must be >= {label}"))
                break
    if top is not None:
        given = [(label, stat) for label, stat in (("p95", p95), ("mean", mean), ("p50", p50))
                 if stat is not None]
        for label, stat in given:
            if top < stat:
                issues.append(SchemaIssue((*loc, "max"), dotted((*loc, "max")),
                                          f"max ({_fmt(top)}) is below {label} ({_fmt(stat)}); "
                                          f"max must be >= {label}"))
                break
    return issues


def traffic_issues(traffic: Traffic, loc: Loc) -> list[SchemaIssue]:
    """The smallest rate, phase shares and names, inheritance of rate and lengths.

    (The consistency of each length's statistics is checked by :class:`LengthStats` itself.)
    """
    issues: list[SchemaIssue] = [SchemaIssue(at, dotted(at), message)
                                 for at, message in wf.traffic_issues(traffic, loc)]
    rated = [((*loc, "rate_rps"), traffic.rate_rps)] + [
        ((*loc, "phases", index, "rate_rps"), phase.rate_rps)
        for index, phase in enumerate(traffic.phases or ())]
    for rate_loc, rate in rated:
        if rate is not None and rate < MIN_RATE_RPS:
            issues.append(SchemaIssue(rate_loc, dotted(rate_loc),
                                      f"{_fmt(rate)} requests/s is below the smallest rate "
                                      f"evaluated, {_fmt(MIN_RATE_RPS)} (one request every 12 "
                                      "days)"))
    inherited = ("rate_rps", "prompt_tokens", "output_tokens")
    if not traffic.phases:
        for name in inherited:
            if name == "rate_rps" and not wf.missing_arrivals(traffic):
                continue
            if getattr(traffic, name) is None:
                issues.append(SchemaIssue(loc, dotted(loc), f"missing required key '{name}'"))
        return issues
    total = math.fsum(phase.share for phase in traffic.phases)
    # the 1e-12 absorbs the binary rounding of decimal shares, so that sums of 1.000001 and
    # 0.999999 are treated alike (#21)
    if abs(total - 1.0) > PHASE_SHARE_TOLERANCE + 1e-12:
        issues.append(SchemaIssue((*loc, "phases"), dotted((*loc, "phases")),
                                  f"phase shares add up to {total:.6g}; they must add up to 1"))
    first_index: dict[str, int] = {}
    for index, phase in enumerate(traffic.phases):
        phase_loc = (*loc, "phases", index)
        if phase.name in first_index:
            issues.append(SchemaIssue((*phase_loc, "name"), dotted((*phase_loc, "name")),
                                      f"duplicate phase name '{phase.name}' "
                                      f"(also phase {first_index[phase.name]})"))
        else:
            first_index[phase.name] = index
        for name in inherited:
            if name == "rate_rps" and not wf.phase_arrivals_missing(phase, traffic):
                continue
            if getattr(phase, name) is None and getattr(traffic, name) is None:
                issues.append(SchemaIssue(phase_loc, dotted(phase_loc),
                                          f"missing required key '{name}' (traffic.{name} is not "
                                          "set, so every phase must give it)"))
    return issues


def deployment_issues(deployment: Deployment, loc: Loc) -> list[SchemaIssue]:
    """Keys that belong to the other mode, pool sizes, tensor-parallel degrees."""
    issues: list[SchemaIssue] = []

    def at(name: str, message: str) -> None:
        issues.append(SchemaIssue((*loc, name), dotted((*loc, name)), message))

    pool_keys = ("prefill_gpus", "decode_gpus", *epi.POOL_DEGREE_KEYS)
    misplaced: set[str] = set()
    if deployment.mode == "colocated":
        for name in pool_keys:
            if getattr(deployment, name) is not None:
                at(name, "applies only to disaggregated deployments (mode is colocated)")
                misplaced.add(name)
    else:
        for name in ("tensor_parallel", "expert_parallel"):
            if getattr(deployment, name) is not None:
                at(name, "applies only to colocated deployments; use "
                         f"prefill_{name} and decode_{name}")
                misplaced.add(name)
        for name in ("prefill_gpus", "decode_gpus"):
            if getattr(deployment, name) is None:
                issues.append(SchemaIssue(loc, dotted(loc), f"missing required key '{name}' "
                                                            "(mode is disaggregated)"))
    for name, message in epi.ep_key_issues(deployment, misplaced):
        at(name, message)
    for name in ("tensor_parallel", "prefill_tensor_parallel", "decode_tensor_parallel"):
        degree = getattr(deployment, name)
        if degree is not None and name not in misplaced and not wf.is_power_of_two(degree):
            at(name, f"must be a power of two (1, 2, 4, 8, ...), got {degree}")
    if deployment.mode == "disaggregated":
        for pool in ("prefill", "decode"):
            gpus = getattr(deployment, f"{pool}_gpus")
            degree = getattr(deployment, f"{pool}_tensor_parallel")
            if gpus is None or degree is None or not wf.is_power_of_two(degree):
                continue
            if degree > gpus:
                at(f"{pool}_tensor_parallel", f"{degree} exceeds {pool}_gpus ({gpus})")
            elif gpus % degree:
                at(f"{pool}_gpus", f"{gpus} is not a multiple of {pool}_tensor_parallel ({degree})")
    return issues


_WORKLOAD_SECTION_CHECKS = {"traffic": traffic_issues, "deployment": deployment_issues}
