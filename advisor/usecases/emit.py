"""``recommend --emit``: the recommended plan as a launch script or a Kubernetes manifest.

The numbers come from one :class:`~advisor.render.launch_plan.LaunchPlan`
(:func:`advisor.usecases.launch.plan_launch`); the flags from one table
(:mod:`advisor.render.engine_flags`), whether the plan is spelled as a bash script
(``vllm``, ``sglang``) or as a manifest (``dynamo``, ``lws``: the workload's engine when it
is vLLM or SGLang, else vLLM; ``kserve``, ``llm-d``: vLLM, the engine their presets run).
Commands for another engine than the workload's say so in their header
(``LaunchPlan.notes``). ``trtllm`` is refused, with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.render.formats import Emit, EmitEngine
from advisor.usecases.launch import (
    LaunchError,
    launch_memory_for_workload,
    plan_launch_for_workload,
)

if TYPE_CHECKING:
    from advisor.loading.catalog import ProfileCatalog

TRTLLM_REFUSAL = (
    "--emit trtllm is refused: TensorRT-LLM's launch options (trtllm-serve's "
    "--extra_llm_api_options file, the cache_transceiver_config of P/D servers and the "
    "disaggregated front server's config) change between releases and pd-advisor has not "
    "verified them for a current release, so it will not write flags that may not start; "
    "the plan's numbers are in the report (--format json), and --emit vllm|sglang|dynamo|"
    "lws|kserve|llm-d write the same plan for vLLM or SGLang (saying that the plan was sized "
    "for TensorRT-LLM)")

MANIFEST_ENGINES: dict[Emit, tuple[EmitEngine, ...]] = {
    Emit.dynamo: (EmitEngine.vllm, EmitEngine.sglang), Emit.lws: (EmitEngine.vllm,
                                                                  EmitEngine.sglang),
    Emit.kserve: (EmitEngine.vllm,), Emit.llm_d: (EmitEngine.vllm,)}
"""The engines each manifest kind can run (the first when the workload's is not one)."""


def emit_engine(emit: Emit, workload_engine: str) -> EmitEngine:
    """The engine whose flags ``emit`` writes for a workload on ``workload_engine``."""
    if emit in (Emit.vllm, Emit.sglang):
        return EmitEngine(emit.value)
    if emit is Emit.trtllm:
        raise LaunchError(TRTLLM_REFUSAL)
    engines = MANIFEST_ENGINES[emit]
    return next((e for e in engines if e.value == workload_engine), engines[0])


def emit_text(report: Mapping[str, Any], emit: Emit, model_ref: Any, workload: Path,
              catalog: ProfileCatalog) -> str:
    """The text ``--emit`` prints; :class:`LaunchError` when it cannot be written."""
    engine = emit_engine(emit, str(report["inputs"].get("engine", "")))
    memory = launch_memory_for_workload(workload, catalog, engine)
    plan = plan_launch_for_workload(report, engine, model_ref, workload, memory)
    if emit in (Emit.vllm, Emit.sglang):
        from advisor.render.launch import render_launch

        return render_launch(plan)
    if emit is Emit.lws:
        from advisor.render.k8s_lws import render_lws

        return render_lws(plan)
    from advisor.render import k8s_operators as ko

    if emit is Emit.dynamo:
        return ko.render_dynamo(plan)
    if emit is Emit.kserve:
        return ko.render_kserve(plan)
    return ko.render_llmd(plan)
