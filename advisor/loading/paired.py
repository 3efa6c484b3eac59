"""A workload whose ``deployment:`` is read from Kubernetes manifests.

``deployment: {from: deploy/dgd.yaml}`` (or a list of files, and ``values_kind: llm-d`` for
Helm values that cannot be told apart by their keys) replaces the hand-kept block by the plan
the manifests deploy (:mod:`advisor.loading.manifests`); ``pd-advisor check MANIFEST`` does the
same from the other side, for a manifest whose ``# pd-advisor: workload=PATH`` comment names
its workload. :func:`attach_manifests` returns the workload document with the manifests'
``deployment:`` block in place of the reference, and :func:`relocate` moves a problem about a
``deployment`` key to the manifest line it was read from.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from advisor.loading.deployment_ref import DeploymentRef
from advisor.loading.errors import InputError, InputProblem
from advisor.loading.manifests import (
    ManifestDeployment,
    ManifestRef,
    as_deployment,
    merge,
    read_manifest,
)
from advisor.loading.yaml_source import YamlDocument


def display(path: Path) -> str:
    """``path`` relative to the working directory when it lies below it."""
    try:
        return os.path.relpath(path) if not os.path.relpath(path).startswith("..") else str(path)
    except ValueError:
        return str(path)


def manifest_refs(document: YamlDocument, workload: Path) -> list[ManifestRef] | None:
    """The manifests a workload's ``deployment: {from: ...}`` names (None: it names none);
    a malformed reference is an :class:`InputError` at its key."""
    data = document.data if isinstance(document.data, dict) else {}
    block = data.get("deployment")
    if not isinstance(block, dict) or "from" not in block:
        return None
    try:
        ref = DeploymentRef.model_validate(block)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            loc = ("deployment", *error["loc"])
            line, col = document.locate(loc, at_key=error["type"] == "extra_forbidden")
            message = ("only from and values_kind may stand next to from (the manifests give "
                       "the rest)" if error["type"] == "extra_forbidden" else error["msg"])
            problems.append(InputProblem(path=document.path, line=line, col=col,
                                         key=".".join(str(p) for p in loc), message=message))
        raise InputError(problems) from None
    paths = [ref.from_] if isinstance(ref.from_, str) else list(ref.from_)
    base = workload.parent
    return [ManifestRef(path=(p if p.is_absolute() else base / p), display=display(
        p if p.is_absolute() else base / p), values_kind=ref.values_kind)
            for p in (Path(item).expanduser() for item in paths)]


def attach_manifests(document: YamlDocument, workload: Path,
                     refs: Sequence[ManifestRef] | None = None
                     ) -> tuple[YamlDocument, ManifestDeployment | None]:
    """The workload document with its ``deployment:`` read from ``refs`` (default: the
    manifests its ``deployment.from`` names), and that deployment; unchanged when neither
    names one."""
    if refs is None:
        refs = manifest_refs(document, workload)
    if not refs:
        return document, None
    plans, problems = [], []
    for ref in refs:
        try:
            plans.append(read_manifest(ref))
        except InputError as exc:
            problems += exc.problems
    if problems:
        raise InputError(problems)
    paired = as_deployment(merge(plans))
    data: dict[str, Any] = dict(document.data) if isinstance(document.data, dict) else {}
    data["deployment"] = paired.data
    return (YamlDocument(path=document.path, root=document.root, data=data,
                         problems=list(document.problems)), paired)


def relocate(problems: Iterable[InputProblem],
             paired: ManifestDeployment | None) -> list[InputProblem]:
    """Problems about ``deployment`` keys at the manifest line their value was read from."""
    if paired is None:
        return list(problems)
    out = []
    for problem in problems:
        key = problem.key
        if key == "deployment" or key.startswith("deployment."):
            where = paired.where.get(key) or paired.where["deployment"]
            out.append(InputProblem(path=where.path, line=where.line, col=where.col, key=key,
                                    message=f"{problem.message} (read from the manifest)"))
        else:
            out.append(problem)
    return out
