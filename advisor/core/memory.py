"""Instance candidates and their memory: weights per GPU, KV budget, concurrent sequences.

KV budget per GPU = memory · memory_fraction − weights/GPUs − reserve, where the reserve is
the engine's runtime memory and its logits/sampler buffers (``max_num_seqs × vocab × bytes
per entry``), both from the engine profile (:meth:`EngineSpec.reserve_bytes`; 3.5 GiB of
runtime memory, as NVIDIA's aiconfigurator reserves, for an engine without a profile;
docs/model.md §4), plus NCCL buffers (392 MiB when TP > 1). An instance is excluded, with a
reason, when its weights do not fit, when the longest request does not fit in its KV budget,
or when TP does not divide the attention heads (engines shard whole heads). Under
expert parallelism with DP attention (docs/model.md §4.1) each attention rank holds whole
sequences: the per-sequence KV is charged to one rank, the engine's running-sequence cap
applies per rank, and the all-to-all library's buffers (DeepEP) are reserved too.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.core.engine import EngineSpec
from advisor.core.expert_parallel import ExpertLayout
from advisor.core.hardware import GpuSpec, LinkSpec, Precision
from advisor.core.instance import Instance
from advisor.core.model_arch import ModelSpec

NCCL_RESERVE_BYTES = 392 * 2**20
"""aiconfigurator NCCL buffers at TP4/TP8 (342 MiB at TP2; the larger value is used)."""


@dataclass(frozen=True)
class InstanceMemory:
    """Memory plan of one instance at a workload's context lengths."""

    instance: Instance
    weights_bytes_per_gpu: float
    kv_budget_bytes_per_gpu: float
    kv_bytes_per_token_per_gpu: float
    kv_duplication_factor: float
    max_kv_tokens: float
    max_sequences: int
    """Concurrent sequences at the mean context (memory and engine cap)."""
    fits: bool
    reason: str
    """Why the instance is excluded (empty when it fits)."""


def candidate_sizes(model: ModelSpec, gpu: GpuSpec, gpus_available: int,
                    gpus_per_node: int, multi_node: bool) -> list[tuple[int, int]]:
    """(tensor_parallel, pipeline_stages) pairs to consider.

    TP takes powers of two up to the node size; instances larger than a node use TP = node
    size and 2, 4, … pipeline stages across nodes (only when an inter-node link exists).
    """
    sizes: list[tuple[int, int]] = []
    tp = 1
    while tp <= min(gpus_per_node, gpus_available):
        sizes.append((tp, 1))
        tp *= 2
    if multi_node:
        pp = 2
        while gpus_per_node * pp <= gpus_available and pp <= 16:
            sizes.append((gpus_per_node, pp))
            pp *= 2
    del model, gpu
    return sizes


def plan_memory(instance: Instance, mean_context_tokens: float, max_request_tokens: float,
                memory_fraction: float) -> InstanceMemory:
    """Fit weights and KV cache of ``instance`` into its GPUs."""
    model, gpu = instance.model, instance.gpu
    weights = instance.weight_bytes_per_gpu
    reserve = (instance.engine.reserve_bytes(gpu, model.vocab_size)
               + (NCCL_RESERVE_BYTES if instance.gpus > 1 else 0.0))
    ranks = instance.attention_data_parallel
    if instance.layout is not None and instance.engine.expert_parallel is not None:
        reserve += instance.engine.expert_parallel.comm_buffer_bytes
    budget = gpu.memory_bytes * memory_fraction - weights - reserve
    kv_tok = instance.kv_bytes_per_token_per_gpu
    dup = model.kv_duplication_factor(instance.tensor_parallel)
    reason = ""
    if model.num_attention_heads % instance.tensor_parallel != 0:
        reason = (f"TP{instance.tensor_parallel} does not divide the "
                  f"{model.num_attention_heads} attention heads")
    elif budget <= 0:
        reason = (f"weights need {weights / 1e9:.1f} GB per GPU; only "
                  f"{(gpu.memory_bytes * memory_fraction - reserve) / 1e9:.1f} GB usable")
    max_kv_tokens = max(0.0, budget) / kv_tok
    per_seq_mean = model.kv_bytes_per_sequence(mean_context_tokens, instance.precision)
    per_seq_max = model.kv_bytes_per_sequence(max_request_tokens, instance.precision)
    # whole-model bytes → bytes per GPU (DP attention: a sequence lives on one rank)
    scale = dup / (instance.gpus // ranks)
    if not reason and per_seq_max * scale > budget:
        reason = (f"one {max_request_tokens:,.0f}-token request needs "
                  f"{per_seq_max * scale / 1e9:.1f} GB of KV per GPU; "
                  f"{max(budget, 0) / 1e9:.1f} GB free")
    max_seqs = 0
    if not reason:
        max_seqs = ranks * int(min(budget // max(per_seq_mean * scale, 1.0),
                                   instance.engine.max_num_seqs(gpu)))
        if max_seqs < 1:
            reason = "no room for a single sequence at the mean context"
    return InstanceMemory(instance=instance, weights_bytes_per_gpu=weights,
                          kv_budget_bytes_per_gpu=max(0.0, budget),
                          kv_bytes_per_token_per_gpu=kv_tok,
                          kv_duplication_factor=dup, max_kv_tokens=max_kv_tokens,
                          max_sequences=max_seqs, fits=not reason, reason=reason)


def build_instance(model: ModelSpec, gpu: GpuSpec, precision: Precision,
                   engine: EngineSpec | str, tensor_parallel: int, pipeline_stages: int,
                   intra_link: LinkSpec, inter_link: LinkSpec | None,
                   layout: ExpertLayout | None = None) -> Instance:
    """An instance with the engine's efficiency factors on this GPU.

    ``engine`` is a resolved engine profile, or an engine name (``EngineSpec.generic``: the
    GPU profile's factors alone, as before engine profiles existed).
    """
    spec = engine if isinstance(engine, EngineSpec) else EngineSpec.generic(engine)
    return Instance(model=model, gpu=gpu, precision=precision, engine=spec,
                    tensor_parallel=tensor_parallel, pipeline_stages=pipeline_stages,
                    intra_link=intra_link, inter_link=inter_link,
                    efficiency=spec.efficiency_for(gpu), layout=layout)
