"""Workload file → :class:`~advisor.core.scenario.Scenario`, reporting every problem at once.

:func:`load_scenario` reads the file (at most 1 MiB of UTF-8), parses it keeping positions,
validates it against the version-1 format, looks up the GPU, interconnect and model profiles,
runs the checks that need several sections or a profile (a multi-node cluster without
``inter_node``, deployment larger than the cluster, tensor-parallel degree against the
model's heads, prompts longer than the context window), merges the policy overrides, and
applies every default. Anything wrong anywhere ends in one :class:`InputError` whose problems
are located ``path:line:col`` and sorted.

Policy precedence: the workload's ``policy:`` beats the nearest ``.pd-advisor.yaml`` (found by
:func:`find_config` in :func:`config_search_dirs`: up to the repository root, else the home
directory, else the workload's own directory only), which beats the defaults of
:class:`~advisor.core.scenario.Policy`. The scenario's ``extras["config"]`` names the config
file when it set a policy key (the report's ``input.policy_files``).
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.core import scenario as core
from advisor.core.distributions import LengthDistribution
from advisor.core.solve.closed_loop import ClosedLoopError, solve_closed_loop
from advisor.core.solve.finite_batch_rate import FiniteBatchError, solve_finite_batch
from advisor.core.token_budget import deployment_token_budget
from advisor.loading import model_ids
from advisor.loading import speculative_input as spi
from advisor.loading import workload_fields as wf
from advisor.loading import workload_schema as ws
from advisor.loading.catalog import (
    EngineVersionError,
    ProfileCatalog,
    ProfileInvalidError,
    ProfileNotFoundError,
)
from advisor.loading.config_discovery import find_config
from advisor.loading.errors import InputError, InputProblem
from advisor.loading.expert_parallel_input import expert_parallel_issues
from advisor.loading.input_file import sha256_hex
from advisor.loading.yaml_source import (
    MAX_YAML_BYTES,
    UnreadableFileError,
    YamlDocument,
    parse_yaml,
    read_yaml_bytes,
    yaml_text,
)

if TYPE_CHECKING:
    from advisor.loading.manifests import ManifestDeployment, ManifestRef

MAX_FILE_BYTES = MAX_YAML_BYTES
"""Largest workload or config file read (1 MiB); bigger ones are refused unread."""

_KIND_LABEL = {"gpus": "GPU profile", "interconnects": "interconnect profile",
               "models": "model profile", "engines": "engine profile"}


# --------------------------------------------------------------------------- files
def read_document(path: Path, display: str | None = None, text: str | None = None
                  ) -> YamlDocument:
    """Read and parse one YAML file; raise :class:`InputError` for anything that stops it.

    ``display`` is the name used in problem reports (default: ``str(path)``). The file is
    read once by :func:`~advisor.loading.yaml_source.read_yaml_bytes` (at most 1 MiB; a pipe
    read whole; a missing file, a directory or a symbolic-link loop is named as such), hashed
    (``YamlDocument.sha256``) and parsed with the limits of
    :func:`~advisor.loading.yaml_source.compose_guarded` (alias expansion, nesting depth,
    recursive aliases, tags). ``text``, when given, is parsed instead of reading ``path``
    (``fit`` validates the workload it is about to write).
    """
    name = str(path) if display is None else display
    digest = ""
    if text is None:
        try:
            raw = read_yaml_bytes(path, MAX_FILE_BYTES)
            text = yaml_text(raw)
        except UnreadableFileError as exc:
            raise InputError([InputProblem(path=name, line=exc.line, col=exc.col, key="",
                                           message=exc.message)]
                             ) from None
        digest = sha256_hex(raw)
    document = parse_yaml(text, name)
    document.sha256 = digest
    if document.root is None:
        raise InputError([InputProblem(
            path=name, line=1, col=1, key="",
            message="file is empty; expected a YAML mapping that starts with 'version: 1'")])
    return document


def _display_path(path: Path) -> str:
    """A path relative to the working directory when it lies below it, else absolute."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _problems(document: YamlDocument, issues: Iterable[ws.SchemaIssue]) -> list[InputProblem]:
    """Locate schema issues in the document they came from."""
    located = []
    for issue in issues:
        line, col = document.locate(issue.loc, at_key=issue.at_key)
        located.append(InputProblem(path=document.path, line=line, col=col, key=issue.key,
                                    message=issue.message))
    return located


# --------------------------------------------------------------------------- entry points
def load_scenario(path: Path, catalog: ProfileCatalog) -> core.Scenario:
    """Read, validate and resolve one workload file.

    Raises :class:`InputError` with every problem found in the workload, its
    ``.pd-advisor.yaml`` and the profiles it names.
    """
    return load_scenario_and_document(path, catalog)[0]


def load_scenario_and_document(path: Path, catalog: ProfileCatalog, text: str | None = None
                               ) -> tuple[core.Scenario, YamlDocument]:
    """:func:`load_scenario`, with the parsed workload (for locating keys in reports);
    ``text``, when given, is the workload's content (``path`` names it and places it)."""
    loaded = load_workload(path, catalog, text=text)
    return loaded.scenario, loaded.document


@dataclasses.dataclass(frozen=True, kw_only=True)
class LoadedWorkload:
    """A workload's scenario, its parsed YAML and, when its deployment comes from Kubernetes
    manifests, that deployment with the manifest position of each key."""

    scenario: core.Scenario
    document: YamlDocument
    manifest: ManifestDeployment | None = None


def load_workload(path: Path, catalog: ProfileCatalog,
                  manifests: Sequence[ManifestRef] | None = None,
                  text: str | None = None) -> LoadedWorkload:
    """:func:`load_scenario_and_document`; the deployment read from ``manifests`` (default:
    the ones ``deployment.from`` names, if any); a problem with a deployment key is located
    at the manifest line its value came from."""
    document = read_document(path, text=text)
    block = document.data.get("deployment") if isinstance(document.data, dict) else None
    if manifests is None and not (isinstance(block, dict) and "from" in block):
        scenario, document = _load(path, catalog, document)
        return LoadedWorkload(scenario=scenario, document=document)
    from advisor.loading.paired import attach_manifests, relocate  # only when asked for

    document, paired = attach_manifests(document, path, manifests)
    try:
        scenario, document = _load(path, catalog, document)
    except InputError as exc:
        raise InputError(relocate(exc.problems, paired)) from None
    return LoadedWorkload(scenario=scenario, document=document, manifest=paired)


def _load(path: Path, catalog: ProfileCatalog, document: YamlDocument
          ) -> tuple[core.Scenario, YamlDocument]:
    problems: list[InputProblem] = list(document.problems)
    check = ws.check_workload(document.data)
    problems += _problems(document, check.issues)

    config_policy, config_path, config_problems = _load_config(path)
    problems += config_problems

    resolver = _ProfileResolver(document, catalog, path.resolve().parent)
    profiles = resolver.resolve(check)
    problems += resolver.problems
    problems += _problems(document, _cross_issues(check, profiles))

    if problems or check.model is None:
        raise InputError(problems)
    extras = {"source": str(path)}
    if config_path is not None:
        extras["config"] = str(config_path)
        # Ignored below: check() returns the validated model as BaseModel; it is a WorkloadV1.
        own = _overrides(check.model.policy)  # type: ignore[attr-defined]
        taken = sorted(key for key in config_policy if key not in own)
        if taken:  # the config file changed the policy: the report names it (#33)
            extras["policy_file"] = _display_path(config_path)
            extras["policy_file_keys"] = ",".join(taken)
    # Ignored below: check() returns the validated model as BaseModel; for a workload it is a
    # WorkloadV1.
    scenario = _build(check.model, profiles, config_policy, extras, document)  # type: ignore[arg-type]
    try:
        scenario = solve_finite_batch(solve_closed_loop(scenario))
    except (ClosedLoopError, FiniteBatchError) as exc:
        line, col = document.locate(("traffic",))
        raise InputError([InputProblem(path=document.path, line=line, col=col, key="traffic",
                                       message=str(exc))]) from None
    return scenario, document


def load_many(paths: Sequence[Path], catalog: ProfileCatalog) -> list[core.Scenario | InputError]:
    """Load several workloads; each entry is the scenario or the error for that file."""
    results: list[core.Scenario | InputError] = []
    for path in paths:
        try:
            results.append(load_scenario(path, catalog))
        except InputError as exc:
            results.append(exc)
    return results


def _load_config(workload: Path) -> tuple[dict[str, Any], Path | None, list[InputProblem]]:
    """Policy overrides from the nearest ``.pd-advisor.yaml`` (and its problems, if any)."""
    config_path = find_config(workload)
    if config_path is None:
        return {}, None, []
    try:
        document = read_document(config_path, _display_path(config_path))
    except InputError as exc:
        return {}, config_path, exc.problems
    check = ws.check_config(document.data)
    problems = list(document.problems) + _problems(document, check.issues)
    if problems or check.model is None:
        return {}, config_path, problems
    # Ignored below: check_config() returns the validated model as BaseModel; it is a ConfigV1 with
    # .policy.
    return _overrides(check.model.policy), config_path, []  # type: ignore[attr-defined]


def _overrides(policy: Any) -> dict[str, Any]:
    """The keys a policy section actually sets."""
    return {name: value for name, value in policy.model_dump().items() if value is not None}


# --------------------------------------------------------------------------- profiles
@dataclasses.dataclass(kw_only=True)
class _Profiles:
    """Profile lookups that succeeded (None where absent or failed)."""

    model: Any = None
    gpu: Any = None
    intra_node: Any = None
    inter_node: Any = None
    engine: Any = None
    calibration: core.AppliedCalibration | None = None
    draft_model: Any = None
    """The ``deployment.speculative.draft_model`` of a draft-model deployment."""


_POSITION_RE = re.compile(r"^(\d+):(\d+): (.*)$", re.DOTALL)


class _ProfileResolver:
    """Looks up every profile a workload names, collecting problems instead of raising."""

    def __init__(self, document: YamlDocument, catalog: ProfileCatalog, base_dir: Path) -> None:
        self.document = document
        self.catalog = catalog
        self.base_dir = base_dir
        self.problems: list[InputProblem] = []

    def resolve(self, check: ws.CheckResult) -> _Profiles:
        """Look up model, GPU and links (from the raw data, so it works with schema errors)."""
        data: dict[str, Any] = self.document.data if isinstance(self.document.data, dict) else {}
        cluster: dict[str, Any] = data["cluster"] if isinstance(data.get("cluster"), dict) else {}
        found = _Profiles()
        found.model = self._lookup("models", data.get("model"), ("model",))
        found.gpu = self._lookup("gpus", cluster.get("gpu"), ("cluster", "gpu"))
        found.engine = self._engine(data.get("engine", "vllm"))
        spec = (data.get("deployment") or {}).get("speculative") if isinstance(
            data.get("deployment"), dict) else None
        if isinstance(spec, dict) and spec.get("method") == "draft-model":
            found.draft_model = self._lookup("models", spec.get("draft_model"),
                                             (*spi.SPEC_LOC, "draft_model"))
        if found.gpu is not None and isinstance(data.get("calibration"), str):
            found.gpu, found.calibration = self._calibrated(
                found.gpu, data["calibration"], found.engine, found.model,
                data.get("precision") if isinstance(data.get("precision"), str) else None)
        found.inter_node = self._lookup("interconnects", cluster.get("inter_node"),
                                        ("cluster", "inter_node"))
        intra = cluster.get("intra_node")
        if intra is not None:
            found.intra_node = self._lookup("interconnects", intra, ("cluster", "intra_node"))
        elif found.gpu is not None:
            try:
                found.intra_node = self.catalog.link(found.gpu.intra_node_link_id)
            except (ProfileNotFoundError, ProfileInvalidError) as exc:
                link_id = found.gpu.intra_node_link_id
                self._add(("cluster", "gpu"),
                          f"the GPU profile's default intra-node link '{link_id}' cannot be "
                          f"loaded ({_first_line(exc)}); set cluster.intra_node")
        return found

    def _lookup(self, kind: str, ref: Any, loc: ws.Loc) -> Any:
        """One profile, or None (with a problem recorded) if it cannot be loaded."""
        if not isinstance(ref, str) or not ref:
            return None  # absent or wrongly typed: the schema check reports it
        target = ref
        if _looks_like_path(ref):
            candidate = Path(ref).expanduser()
            target_path = candidate if candidate.is_absolute() else self.base_dir / candidate
            holds_config = kind == "models" and (target_path / "config.json").is_file()
            if not (target_path.is_file() or holds_config):
                if kind == "models" and model_ids.looks_like_repo_id(ref):
                    return self._model_by_id(ref, loc, str(target_path))
                self._add(loc, f"no {_KIND_LABEL[kind]} file at '{ref}' (looked for {target_path})")
                return None
            target = str(target_path)
        elif kind == "models" and model_ids.profile_for(ref, self.catalog.ids("models")) not in (
                None, ref):
            return self._model_by_id(ref, loc, None)
        try:
            if kind == "models":
                return self.catalog.model(target)
            if kind == "gpus":
                return self.catalog.gpu(target)
            return self.catalog.link(target)
        except ProfileNotFoundError as exc:
            self._add(loc, str(exc))
        except ProfileInvalidError as exc:
            self._add(loc, f"{_KIND_LABEL[kind]} '{ref}' is invalid (see the problems reported "
                           f"for {_display_path(exc.path)})")
            self.problems += _profile_problems(exc)
        return None

    def _model_by_id(self, ref: str, loc: ws.Loc, looked_for: str | None) -> Any:
        """The built-in profile a Hugging Face id names (:mod:`advisor.loading.model_ids`),
        or None with a problem suggesting the closest profiles and the config.json route."""
        ids = self.catalog.ids("models")
        profile_id = model_ids.profile_for(ref, ids)
        if profile_id is None:
            self._add(loc, model_ids.unknown_model_message(ref, ids, looked_for))
            return None
        return self._lookup("models", profile_id, loc)

    def _engine(self, ref: Any) -> Any:
        """The engine profile a workload's ``engine:`` names (None, with a problem, if none).

        A string is an engine name (its current profile) or an engine-profile id; a mapping
        ``{name, version}`` picks the profile whose version family covers the release.
        """
        name, version = ref, None
        loc: ws.Loc = ("engine",)
        if isinstance(ref, dict):
            name, version = ref.get("name"), ref.get("version")
            if version is not None:
                loc = ("engine", "version")
            if not isinstance(version, str | None):
                return None  # the schema check reports it
        if not isinstance(name, str) or not name:
            return None
        try:
            if version is None and isinstance(ref, str):
                return self.catalog.engine(name)
            return self.catalog.engine_for(name, version)
        except EngineVersionError as exc:
            self._add(loc, str(exc))
        except ProfileNotFoundError as exc:
            self._add(loc, str(exc))
        except ProfileInvalidError as exc:
            self._add(loc, f"engine profile '{name}' is invalid (see the problems reported "
                           f"for {_display_path(exc.path)})")
            self.problems += _profile_problems(exc)
        return None

    def _calibrated(self, gpu: Any, ref: str, engine: Any, model: Any, precision: str | None
                    ) -> tuple[Any, core.AppliedCalibration | None]:
        """``gpu`` with the overlay's factors applied and what was applied (unchanged and
        None, with a problem, on failure or when the overlay does not match the workload)."""
        from advisor.loading.calibration_overlay import (
            apply_overlay,
            load_overlay,
            overlay_mismatch,
        )

        path = Path(ref).expanduser()
        path = path if path.is_absolute() else self.base_dir / path
        if not path.is_file():
            self._add(("calibration",), f"no calibration file at '{ref}' (looked for {path})")
            return gpu, None
        try:
            overlay = load_overlay(path)
        except ProfileInvalidError as exc:
            self._add(("calibration",), f"calibration '{ref}' is invalid (see the problems "
                                        f"reported for {_display_path(exc.path)})")
            self.problems += _profile_problems(exc)
            return gpu, None
        if engine is None:
            return gpu, None  # the engine problem is reported already
        mismatch = overlay_mismatch(overlay, gpu.id, engine.name,
                                    model.id if model is not None else None, precision)
        if mismatch:
            self._add(("calibration",), mismatch)
            return gpu, None
        applied = core.AppliedCalibration(file=ref, fitted_on=overlay.fitted_on_dict(),
                                          factors=overlay.factors())
        return apply_overlay(gpu, overlay, engine.efficiency_for(gpu)), applied

    def _add(self, loc: ws.Loc, message: str) -> None:
        line, col = self.document.locate(loc)
        self.problems.append(InputProblem(path=self.document.path, line=line, col=col,
                                          key=ws.dotted(loc), message=message))


def _looks_like_path(ref: str) -> bool:
    """Whether a profile reference names a file rather than an id."""
    return (ref.lower().endswith((".yaml", ".yml", ".json")) or "/" in ref or os.sep in ref
            or (os.altsep is not None and os.altsep in ref))


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _profile_problems(exc: ProfileInvalidError) -> list[InputProblem]:
    """The catalog's ``LINE:COL: message`` strings as problems located in the profile file."""
    name = _display_path(exc.path)
    located = []
    for text in exc.problems:
        match = _POSITION_RE.match(text)
        if match:
            located.append(InputProblem(path=name, line=int(match[1]), col=int(match[2]), key="",
                                        message=match[3]))
        else:
            located.append(InputProblem(path=name, line=1, col=1, key="", message=text))
    return located


# --------------------------------------------------------------------------- cross checks
def _cross_issues(check: ws.CheckResult, profiles: _Profiles) -> list[ws.SchemaIssue]:
    """Checks that need two sections, or a section and a profile."""
    issues: list[ws.SchemaIssue] = []
    # Ignored below: sections are typed BaseModel | None; each key holds its own section model.
    cluster: ws.Cluster | None = check.sections.get("cluster")  # type: ignore[assignment]
    deployment: ws.Deployment | None = check.sections.get("deployment")  # type: ignore[assignment]
    traffic: ws.Traffic | None = check.sections.get("traffic")  # type: ignore[assignment]

    def at(loc: ws.Loc, message: str) -> None:
        issues.append(ws.SchemaIssue(loc, ws.dotted(loc), message))

    if cluster is not None and profiles.gpu is not None:
        per_node = cluster.gpus_per_node or profiles.gpu.gpus_per_node
        nodes = core.nodes_spanned(cluster.gpus, per_node)
        if nodes > 1 and cluster.inter_node is None:
            at(("cluster", "gpus"), f"{cluster.gpus} GPUs span {nodes} nodes of {per_node}, but "
                                    "cluster.inter_node is not set; name the per-GPU NIC "
                                    f"(e.g. ib-ndr-400) or use at most {per_node} GPUs")
    if cluster is not None and cluster.nics_per_node is not None and cluster.inter_node is None:
        at(("cluster", "nics_per_node"), "counts the NICs of cluster.inter_node, which is not "
                                         "set; name the inter-node link (e.g. eth-25) or drop "
                                         "nics_per_node")
    if deployment is not None and cluster is not None:
        tp = deployment.tensor_parallel
        if deployment.mode == "colocated" and tp is not None and wf.is_power_of_two(tp):
            if tp > cluster.gpus:
                at(("deployment", "tensor_parallel"),
                   f"{tp} exceeds cluster.gpus ({cluster.gpus})")
            elif cluster.gpus % tp:
                at(("deployment", "tensor_parallel"),
                   f"cluster.gpus ({cluster.gpus}) is not a multiple of {tp}")
        if (deployment.mode == "disaggregated" and deployment.prefill_gpus is not None
                and deployment.decode_gpus is not None):
            total = deployment.prefill_gpus + deployment.decode_gpus
            if total > cluster.gpus:
                at(("deployment", "prefill_gpus"),
                   f"prefill_gpus + decode_gpus = {total} exceeds cluster.gpus ({cluster.gpus})")
    if deployment is not None and profiles.model is not None:
        heads = profiles.model.num_attention_heads
        for name in ("tensor_parallel", "prefill_tensor_parallel", "decode_tensor_parallel"):
            tp = getattr(deployment, name)
            if tp is not None and wf.is_power_of_two(tp) and heads % tp:
                at(("deployment", name), f"{tp} does not divide the model's {heads} attention "
                                         "heads")
    if (deployment is not None and deployment.mode == "disaggregated"
            and profiles.engine is not None):
        ptp = deployment.prefill_tensor_parallel or deployment.tensor_parallel
        dtp = deployment.decode_tensor_parallel or deployment.tensor_parallel
        if ptp is not None and dtp is not None and not profiles.engine.can_pair(ptp, dtp):
            at(("deployment", "decode_tensor_parallel"),
               f"{dtp} differs from the prefill pool's TP {ptp}, which "
               f"{profiles.engine.label} cannot transfer KV between (its profile's "
               "supports.different_tp_across_pools is false); use the same TP on both pools")
    if deployment is not None:
        issues += [ws.SchemaIssue(loc, ws.dotted(loc), message)
                   for loc, message in expert_parallel_issues(deployment, cluster, profiles)]
    if deployment is not None and deployment.speculative is not None:
        batch = traffic is not None and traffic.requests is not None
        issues += [ws.SchemaIssue(loc, ws.dotted(loc), message) for loc, message
                   in spi.speculative_issues(deployment.speculative, profiles.engine, batch)]
    if traffic is not None and profiles.model is not None:
        issues += _context_issues(traffic, profiles.model)
    if traffic is not None and traffic.shared_prefix_tokens is not None:
        issues += _prefix_issues(traffic)
    limit = deployment.max_model_len if deployment is not None else None
    if limit is not None and profiles.model is not None:
        context = profiles.model.max_context_tokens
        if limit > context:
            at(("deployment", "max_model_len"), f"{limit} exceeds the context window of "
                                                f"{profiles.model.id} ({context} tokens)")
        elif traffic is not None:
            issues += [ws.SchemaIssue(i.loc, i.key, i.message.replace(
                           f"the context window of {profiles.model.id} ({limit} tokens)",
                           f"deployment.max_model_len ({limit})"))
                       for i in _context_issues(traffic, profiles.model, limit)]
    precision = check.sections.get("precision")
    if precision is not None and profiles.gpu is not None:
        for loc, message in wf.precision_issues(precision, profiles.gpu, profiles.model):
            at(loc, message)
    return issues


def _central_tokens(length: Any) -> float | None:
    """A length's central value (the constant, else its p50 or mean)."""
    if length is None:
        return None
    if isinstance(length, int):
        return float(length)
    return next((float(v) for v in (length.p50, length.mean) if v is not None), None)


def _prefix_issues(traffic: ws.Traffic) -> list[ws.SchemaIssue]:
    """A shared prefix must leave tokens to compute in a typical prompt of every phase."""
    shared = traffic.shared_prefix_tokens
    lengths = [("traffic", _central_tokens(traffic.prompt_tokens))]
    lengths += [(f"phase '{p.name}'", _central_tokens(p.prompt_tokens))
                for p in traffic.phases or () if p.prompt_tokens is not None]
    for where, central in lengths:
        if central is not None and shared is not None and shared >= central:
            loc: ws.Loc = ("traffic", "shared_prefix_tokens")
            return [ws.SchemaIssue(loc, ws.dotted(loc), (
                f"{shared} shared tokens cover the typical prompt of {where} ({central:g} "
                "tokens); a cached prefix must be shorter than the prompts (engines compute "
                "at least the last token)"))]
    return []


def _context_issues(traffic: ws.Traffic, model: Any,
                    limit: int | None = None) -> list[ws.SchemaIssue]:
    """Prompts that cannot fit in the model's context window (or in ``limit`` tokens)."""
    limit = model.max_context_tokens if limit is None else limit
    places: list[tuple[ws.Loc, Any]] = [(("traffic", "prompt_tokens"), traffic.prompt_tokens)]
    for index, phase in enumerate(traffic.phases or ()):
        places.append((("traffic", "phases", index, "prompt_tokens"), phase.prompt_tokens))
    issues = []
    for loc, length in places:
        if length is None:
            continue
        if isinstance(length, int):
            bound, label, where = length, "prompt length", loc
        else:
            stat = next((s for s in ("max", "p95", "mean", "p50")
                         if getattr(length, s) is not None), None)
            if stat is None:
                continue
            bound, label, where = getattr(length, stat), f"prompt {stat}", (*loc, stat)
        if bound > limit:
            issues.append(ws.SchemaIssue(
                where, ws.dotted(where), f"{label} {bound:g} exceeds the context window of "
                                         f"{model.id} ({limit} tokens)"))
    return issues


# --------------------------------------------------------------------------- building
def _length(spec: Any) -> LengthDistribution:
    """An integer is a constant length; statistics are fitted (docs/model.md §2)."""
    if isinstance(spec, int):
        return LengthDistribution.constant(spec)
    return LengthDistribution.fit(mean=spec.mean, p50=spec.p50, p95=spec.p95,
                                  max_tokens=spec.max)


def _hit_rate(traffic: ws.Traffic, prompt: LengthDistribution) -> float:
    """The prefix-cache hit rate: given, or a shared prefix's share of the mean prompt."""
    if traffic.prefix_cache_hit_rate is not None:
        return float(traffic.prefix_cache_hit_rate)
    if traffic.shared_prefix_tokens:
        return prompt.mean_capped(float(traffic.shared_prefix_tokens)) / prompt.mean
    return 0.0


def _batch(traffic: ws.Traffic) -> int | None:
    """The finite batch's requests (``core.solve.finite_batch_rate`` solves its rate)."""
    return None if traffic.requests is None else int(traffic.requests)


def _arrivals(own: Any, traffic: ws.Traffic) -> tuple[float, int | None]:
    """(rate, concurrency) of a phase: its own arrival key replaces the traffic's. A closed
    loop's rate is solved from its concurrency by ``core.solve.closed_loop.solve_closed_loop``,
    which :func:`load_scenario` runs on every scenario it builds; the 1 req/s given here is
    never evaluated (the solver probes rates of its own)."""
    source: Any = own if own is not None and (own.rate_rps is not None
                                              or own.concurrency is not None) else traffic
    if source.concurrency is not None:
        return 1.0, int(source.concurrency)
    if source.rate_rps is None:  # a finite batch: its rate is solved from the makespan
        return 1.0, None
    return float(source.rate_rps), None  # validated: one of the two is set


def _phases(traffic: ws.Traffic) -> tuple[core.TrafficPhase, ...]:
    """The phases with inherited values filled in (one phase 'all' when none are given)."""
    if not traffic.phases:
        rate, clients = _arrivals(None, traffic)
        prompt_dist = _length(traffic.prompt_tokens)
        return (core.TrafficPhase(
            name="all", share=1.0, rate_rps=rate,
            burstiness=float(traffic.burstiness),
            prompt_tokens=prompt_dist,
            output_tokens=_length(traffic.output_tokens),
            prefix_cache_hit_rate=_hit_rate(traffic, prompt_dist), concurrency=clients,
            batch_requests=_batch(traffic)),)
    phases = []
    for phase in traffic.phases:
        rate, clients = _arrivals(phase, traffic)
        burstiness = phase.burstiness if phase.burstiness is not None else traffic.burstiness
        prompt = phase.prompt_tokens if phase.prompt_tokens is not None else traffic.prompt_tokens
        output = phase.output_tokens if phase.output_tokens is not None else traffic.output_tokens
        prompt_dist = _length(prompt)
        phases.append(core.TrafficPhase(
            name=phase.name, share=float(phase.share), rate_rps=rate,
            burstiness=float(burstiness), prompt_tokens=prompt_dist,
            output_tokens=_length(output), prefix_cache_hit_rate=_hit_rate(traffic, prompt_dist),
            concurrency=clients))
    return tuple(phases)


def with_max_num_seqs(engine: Any, max_num_seqs: int | None) -> Any:
    """The engine spec with a launch's running-sequence cap replacing its defaults (every
    memory tier and the fallback), so memory plans, the logits reserve and ``--emit`` all
    use it."""
    if max_num_seqs is None:
        return engine
    tiers = tuple(dataclasses.replace(t, max_num_seqs=max_num_seqs)
                  for t in engine.token_budget_tiers)
    return dataclasses.replace(engine, token_budget_tiers=tiers, default_max_num_seqs=max_num_seqs)


def _build(model: ws.WorkloadV1, profiles: _Profiles, config_policy: dict[str, Any],
           extras: dict[str, str], document: YamlDocument) -> core.Scenario:
    """Apply defaults and assemble the frozen scenario."""
    cluster = model.cluster
    deployment = None
    engine = profiles.engine
    limits: dict[str, Any] = {}
    block: Any = model.deployment  # a Deployment: a reference was replaced when reading
    if block is not None:
        fields = block.model_dump(exclude={"speculative"})
        spec = (None if block.speculative is None
                else spi.to_core(block.speculative, profiles.draft_model))
        deployment = core.Deployment(**fields, speculative=spec)
        engine = dataclasses.replace(with_max_num_seqs(engine, deployment.max_num_seqs),
                                     speculative=spec)
        if deployment.gpu_memory_utilization is not None:
            limits["memory_fraction"] = deployment.gpu_memory_utilization
    policy = core.Policy(**{**config_policy, **_overrides(model.policy), **limits})
    try:
        phases = _phases(model.traffic)
    except (ValueError, ArithmeticError) as exc:  # a fit the statistics do not allow
        line, col = document.locate(("traffic",))
        raise InputError([InputProblem(path=document.path, line=line, col=col, key="traffic",
                                       message=f"cannot fit the length statistics: {exc}")]
                         ) from None
    return core.Scenario(
        model=profiles.model,
        precision=wf.precision_spec(model.precision),
        engine=engine,
        cluster=core.Cluster(
            gpu=profiles.gpu,
            gpus=cluster.gpus,
            gpus_per_node=cluster.gpus_per_node or profiles.gpu.gpus_per_node,
            intra_node=profiles.intra_node,
            inter_node=profiles.inter_node,
            price_per_gpu_hour=cluster.price_per_gpu_hour,
            nics_per_node=cluster.nics_per_node,
        ),
        phases=phases,
        slo=core.Slo(ttft_ms=model.slo.ttft_ms, tpot_ms=model.slo.tpot_ms,
                     percentile=float(model.slo.percentile)),
        autoscaling=model.operations.autoscaling,
        router=(deployment.router if deployment is not None and deployment.router is not None
                else model.operations.router),
        deployment=deployment,
        policy=policy,
        name=model.name,
        chunk_tokens=deployment_token_budget(deployment, engine, profiles.gpu),
        extras=extras,
        calibration=profiles.calibration,
    )
