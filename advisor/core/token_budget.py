"""The one rule for a chunked deployment's token budget (docs/model.md §5).

A declared chunked deployment (``deployment.chunked_prefill: true``) runs the token budget it
states (``deployment.chunk_tokens``); when it states none, it runs what the engine does when
the flag is omitted: the engine's default budget for the GPU (:func:`engine_default_budget`).
``recommend``, ``check``, ``calibrate``, ``validate`` and ``--emit`` all take the budget from
:func:`deployment_token_budget`. A recommendation without a deployment searches the budgets
256…16384 instead (``colocated.CHUNK_CANDIDATES``) and reports the one it chose.

The defaults are data, not code: each engine profile's ``launch_defaults`` (a table of GPU
memory tiers, first match wins, each row sourced in ``profiles/engines/<id>.yaml``;
:meth:`advisor.core.engine.EngineSpec.default_token_budget`; docs/model.md §3.2). The GPU
profile's memory capacity stands in for the total the engine reads from the device, a little
lower; no built-in GPU lies near a threshold. For the current families: vLLM ``vllm serve``
``--max-num-batched-tokens`` (vLLM 0.33.0) 16384 from 160 GiB, 8192 from 70 GiB except A100s,
else 2048; SGLang ``--chunked-prefill-size`` (SGLang 0.5.23) 2048 below 20 GiB, 4096 to
60 GiB, 8192 to 160 GiB, 16384 above; TensorRT-LLM ``max_num_tokens`` 8192.
"""

from __future__ import annotations

from advisor.core.engine import EngineSpec
from advisor.core.hardware import GpuSpec
from advisor.core.scenario import Deployment


def engine_default_budget(engine: EngineSpec, gpu: GpuSpec) -> int:
    """The token budget per step ``engine`` runs on ``gpu`` when its launch command sets
    none (its profile's launch defaults)."""
    return engine.default_token_budget(gpu)


def deployment_token_budget(deployment: Deployment | None, engine: EngineSpec,
                            gpu: GpuSpec) -> int | None:
    """The token budget a declared deployment runs: its ``chunk_tokens``, else the engine's
    default for the GPU; None without a deployment or with chunked prefill off."""
    if deployment is None or not deployment.chunked_prefill:
        return None
    if deployment.chunk_tokens is not None:
        return deployment.chunk_tokens
    return engine_default_budget(engine, gpu)
