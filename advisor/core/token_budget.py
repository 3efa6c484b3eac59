"""The one rule for a chunked deployment's token budget (docs/model.md §5).

A declared chunked deployment (``deployment.chunked_prefill: true``) runs the token budget it
states (``deployment.chunk_tokens``); when it states none, it runs what the engine does when
the flag is omitted: the engine's default budget for the GPU (:func:`engine_default_budget`).
``recommend``, ``check``, ``calibrate``, ``validate`` and ``--emit`` all take the budget from
:func:`deployment_token_budget`. A recommendation without a deployment searches the budgets
256…16384 instead (``colocated.CHUNK_CANDIDATES``) and reports the one it chose.

The defaults, by GPU memory (the profile's capacity stands in for the total the engine reads
from the device, a little lower; no built-in GPU lies near a threshold):

* vLLM ``vllm serve`` (``--max-num-batched-tokens``; vLLM 0.33.0 ``vllm/engine/arg_utils.py``,
  the usage-context defaults of ``_set_default_args``): ≥ 160 GiB → 16384; ≥ 70 GiB and a
  device name without "a100" → 8192 (A100s are kept on the small tier: larger budgets lowered
  their throughput, vLLM PR #17885, https://github.com/vllm-project/vllm/pull/17885); else
  2048. (The ``LLM`` Python class has larger defaults; the advisor plans servers.)
* SGLang (``--chunked-prefill-size``; SGLang 0.5.23 ``python/sglang/srt/server_args.py`` and
  its ``arg_groups/memory_hook.py``): < 20 GiB → 2048; 20–60 GiB → 4096; 60–160 GiB → 8192;
  ≥ 160 GiB → 16384. Older releases differ below 60 GiB: 0.5.2–0.5.18 give 2048 at
  20–35 GiB, and 0.5.2 gives 8192 at 35–60 GiB.
* TensorRT-LLM (``max_num_tokens``): 8192 on every GPU (TensorRT-LLM ``BuildConfig`` and the
  ``trtllm-serve --max_num_tokens`` default).

Each engine's rule is a table (:data:`DEFAULT_TOKEN_BUDGETS`), so an engine profile can carry
it instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from advisor.core.hardware import GpuSpec
from advisor.core.scenario import Deployment

GIB = 2**30


@dataclass(frozen=True)
class BudgetTier:
    """GPUs with at least ``min_memory_gib`` GiB (and a name without any of ``unless_named``)
    get ``tokens``."""

    min_memory_gib: float
    tokens: int
    unless_named: tuple[str, ...] = ()

    def applies(self, gpu: GpuSpec) -> bool:
        """Whether ``gpu`` falls in this tier."""
        name = f"{gpu.id} {gpu.name}".lower()
        return (gpu.memory_bytes >= self.min_memory_gib * GIB
                and not any(word in name for word in self.unless_named))


DEFAULT_TOKEN_BUDGETS: Mapping[str, tuple[BudgetTier, ...]] = {
    "vllm": (BudgetTier(160, 16384), BudgetTier(70, 8192, ("a100",)), BudgetTier(0, 2048)),
    "sglang": (BudgetTier(160, 16384), BudgetTier(60, 8192), BudgetTier(20, 4096),
               BudgetTier(0, 2048)),
    "trtllm": (BudgetTier(0, 8192),),
}
"""Per engine, its default token budget by GPU (first tier that applies; see the module
docstring for the sources)."""


def engine_default_budget(engine: str, gpu: GpuSpec) -> int:
    """The token budget per step ``engine`` runs on ``gpu`` when its launch command sets
    none."""
    return next(t.tokens for t in DEFAULT_TOKEN_BUDGETS[engine] if t.applies(gpu))


def deployment_token_budget(deployment: Deployment | None, engine: str,
                            gpu: GpuSpec) -> int | None:
    """The token budget a declared deployment runs: its ``chunk_tokens``, else the engine's
    default for the GPU; None without a deployment or with chunked prefill off."""
    if deployment is None or not deployment.chunked_prefill:
        return None
    if deployment.chunk_tokens is not None:
        return deployment.chunk_tokens
    return engine_default_budget(engine, gpu)
