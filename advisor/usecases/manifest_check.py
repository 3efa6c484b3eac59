"""``check`` on Kubernetes manifests: pair a manifest with its workload, and put every
finding about the deployment at the manifest line it is about.

:func:`pairing` tells a workload from a manifest; a manifest names its workload with a
``# pd-advisor: workload=PATH`` comment. :func:`manifest_findings` builds the file's check
entry from the recommendation of the paired workload: gate findings on ``deployment.*`` keys
are located in the manifest (a split that strays from the best one points at the prefill
pool's ``replicas:``), the manifest's gaps (values it does not give, a GPU type it does not
select) become warnings at their lines, and what the manifest contradicts in the workload is
said plainly: a colocated pool of another size than ``cluster.gpus`` fails the gate; a GPU
type, engine or model other than the workload's is an input problem (the model would be
judging another deployment).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from advisor.loading.errors import InputError, InputProblem
from advisor.loading.manifest_plan import gpu_profile_for_label
from advisor.loading.manifests import (
    ManifestRef,
    looks_like_manifest,
    read_documents,
    read_manifest,
    workload_for,
)
from advisor.loading.paired import display

if TYPE_CHECKING:
    from advisor.loading.manifest_plan import Where
    from advisor.loading.manifests import ManifestDeployment
    from advisor.loading.yaml_source import YamlDocument
    from advisor.render.document import FileEntry, ManifestSource, Recommendation


def pairing(path: Path, values_kind: str | None = None
            ) -> tuple[Path, list[ManifestRef] | None]:
    """(workload, manifests) for a file given to ``check``: a workload stands for itself
    (its ``deployment.from``, if any, is read when it loads); a manifest for the workload its
    annotation names."""
    ref = ManifestRef(path=path, display=str(path), values_kind=values_kind)
    try:
        _, docs = read_documents(ref)
    except InputError:
        return path, None  # the workload loader reports it (as it always has)
    if values_kind is None and not any(looks_like_manifest(d.document.data) for d in docs):
        return path, None  # a workload (or not YAML of either kind: the loader says why)
    plan = read_manifest(ref)
    workload = workload_for(plan, path)
    if workload is None:
        w = plan.where
        raise InputError([InputProblem(path=w.path, line=1, col=1, key="", message=(
            "this manifest names no workload: add a comment '# pd-advisor: workload="
            "path/to/workload.yaml' (the traffic and SLOs to gate it against), or name the "
            "manifest in a workload's deployment: {from: ...} and check the workload"))])
    if not workload.is_file():
        w = plan.facts["workload"].where
        raise InputError([InputProblem(path=w.path, line=w.line, col=w.col, key="", message=(
            f"the workload this manifest names ({display(workload)}) is not a file"))])
    return workload, [ref]


def manifest_findings(report: Recommendation, document: YamlDocument,
                      paired: ManifestDeployment, entry_path: str,
                      workload_locate: Callable[[str], tuple[int, int]]) -> FileEntry:
    """The check entry of a workload whose deployment was read from manifests
    (``workload_locate``: a key's position in the workload file)."""
    from advisor.render.report_json import check_entry, check_error_entry

    where = paired.where
    plan = paired.plan

    def manifest_where(key: str) -> Where | None:
        if key == "deployment" or key.startswith("deployment."):
            return where.get(key) or where["deployment"]
        return None

    def locate(key: str) -> tuple[int, int]:
        w = manifest_where(key)
        return (w.line, w.col) if w is not None else workload_locate(key)

    def place(key: str) -> str:
        w = manifest_where(key)
        return w.path if w is not None else document.path

    problems = _contradictions(report, paired)
    if problems:
        entry = check_error_entry(entry_path, problems)
        entry["manifest"] = _source(paired)
        return entry
    entry = check_entry(report, locate, place)
    entry["path"] = entry_path
    inputs = report["inputs"]
    if paired.data["mode"] == "colocated":
        pool = plan.pools[0]
        total, gpus = pool.total_gpus, int(inputs["cluster"]["gpus"])
        if total is not None and total != gpus:
            w = pool.facts["replicas"].where
            entry["findings"].append({
                "id": "manifest-gpus", "check": "deployment-slo", "key": "deployment",
                "message": (f"the manifest deploys {pool.value('replicas')} replicas x "
                            f"{pool.value('gpus')} GPUs = {total} GPUs; the workload plans "
                            f"cluster.gpus = {gpus} (the gate judges {gpus})"),
                "line": w.line, "col": w.col, "path": w.path})
    for gap in (*plan.gaps, *paired.notes):
        w = gap.where
        entry["warnings"].append({"id": "manifest-gap", "key": "deployment",
                                  "message": f"{gap.what}: {gap.why}", "line": w.line,
                                  "col": w.col, "path": w.path})
    entry["status"] = "fail" if entry["findings"] else "pass"
    entry["manifest"] = _source(paired)
    return entry


def _contradictions(report: Recommendation, paired: ManifestDeployment) -> list[InputProblem]:
    """What the manifest says that the workload contradicts (GPU type, engine, model)."""
    from advisor.loading.model_ids import HF_IDS, profile_for

    plan = paired.plan
    inputs = report["inputs"]
    out: list[InputProblem] = []

    def problem(w: Where, message: str) -> None:
        out.append(InputProblem(path=w.path, line=w.line, col=w.col, key=w.key, message=message))

    product = plan.facts.get("gpu_product")
    gpu = inputs["cluster"]["gpu"]["id"]
    if product is not None:
        profile = gpu_profile_for_label(str(product.value))
        if profile is not None and profile != gpu:
            problem(product.where, f"the manifest selects {product.value} ({profile}); the "
                    f"workload's cluster.gpu is {gpu}: the gate would judge other GPUs")
    engine = plan.facts.get("engine")
    if engine is not None and str(engine.value) != inputs["engine"]:
        problem(engine.where, f"the manifest runs {engine.value}; the workload's engine is "
                f"{inputs['engine']}: the gate would judge another engine")
    model = plan.facts.get("model")
    if model is not None:
        named = profile_for(str(model.value), HF_IDS)
        ours = inputs["model"]["id"]
        if named is not None and named != ours:
            problem(model.where, f"the manifest serves {model.value} ({named}); the "
                    f"workload's model is {ours}: the gate would judge another model")
    return out


def _source(paired: ManifestDeployment) -> ManifestSource:
    plan = paired.plan
    return {
        "paths": sorted({plan.path, *(p.where.path for p in plan.pools)}),
        "kind": plan.kind, "name": plan.name,
        "facts": {k: {"value": f.value, "path": f.where.path, "line": f.where.line,
                      "source": f.source} for k, f in plan.facts.items()},
        "pools": [{"role": p.role, "name": p.name, "path": p.where.path, "line": p.where.line,
                   **{k: f.value for k, f in p.facts.items()}} for p in plan.pools],
        "gaps": [{"what": g.what, "path": g.where.path, "line": g.where.line,
                  "col": g.where.col, "message": g.why} for g in (*plan.gaps, *paired.notes)],
    }
