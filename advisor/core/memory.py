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


@dataclass(frozen=True, kw_only=True)
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
               + (NCCL_RESERVE_BYTES if instance.gpus > 1 else 0.0)
               + _comm_buffer_bytes(instance))
    ranks = instance.attention_data_parallel
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
    scale = _sequence_scale(instance)  # whole-model bytes → bytes per GPU
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


def _comm_buffer_bytes(instance: Instance) -> float:
    """The all-to-all library's buffers per GPU (DeepEP) of an expert-parallel instance."""
    if instance.layout is not None and instance.engine.expert_parallel is not None:
        return instance.engine.expert_parallel.comm_buffer_bytes
    return 0.0


def _sequence_scale(instance: Instance) -> float:
    """Whole-model KV bytes of one sequence → bytes per GPU: TP duplication over the GPUs
    that hold the sequence (DP attention: a sequence lives on one attention rank)."""
    return (instance.model.kv_duplication_factor(instance.tensor_parallel)
            / (instance.gpus // instance.attention_data_parallel))


def build_instance(model: ModelSpec, gpu: GpuSpec, precision: Precision | str,
                   engine: EngineSpec | str, tensor_parallel: int, pipeline_stages: int,
                   intra_link: LinkSpec, inter_link: LinkSpec | None,
                   layout: ExpertLayout | None = None) -> Instance:
    """An instance with the engine's efficiency factors on this GPU.

    ``engine`` is a resolved engine profile, or an engine name (``EngineSpec.generic``: the
    GPU profile's factors alone, as before engine profiles existed).
    """
    spec = engine if isinstance(engine, EngineSpec) else EngineSpec.generic(engine)
    return Instance(model=model, gpu=gpu, precision=Precision.of(precision), engine=spec,
                    tensor_parallel=tensor_parallel, pipeline_stages=pipeline_stages,
                    intra_link=intra_link, inter_link=inter_link,
                    efficiency=spec.efficiency_for(gpu), layout=layout)


# --------------------------------------------------------------------------- launch check
def launch_kv_budget_bytes_per_gpu(instance: Instance, memory_fraction: float,
                                   max_num_seqs: int) -> float:
    """KV memory per GPU of an instance launched with ``memory_fraction`` and a cap of
    ``max_num_seqs`` running sequences (the logits/sampler buffers are sized by that cap):
    the budget of :func:`plan_memory` with the launch's own numbers."""
    reserve = (instance.engine.reserve_bytes(instance.gpu, instance.model.vocab_size,
                                             max_num_seqs)
               + (NCCL_RESERVE_BYTES if instance.gpus > 1 else 0.0)
               + _comm_buffer_bytes(instance))
    return instance.gpu.memory_bytes * memory_fraction - instance.weight_bytes_per_gpu - reserve


def sequence_kv_bytes_per_gpu(instance: Instance, tokens: float) -> float:
    """KV bytes per GPU of one sequence of ``tokens`` (TP duplication, split over stages;
    under DP attention the sequence lives on one attention rank)."""
    return (instance.model.kv_bytes_per_sequence(tokens, instance.precision)
            * _sequence_scale(instance))


def longest_sequence_tokens(instance: Instance, memory_fraction: float,
                            max_num_seqs: int) -> int:
    """The longest sequence (prompt + output tokens, at most the model's context) whose KV
    fits the instance's launch budget: what vLLM computes as "the estimated maximum model
    length" at start-up. 0 when not even one token fits."""
    budget = launch_kv_budget_bytes_per_gpu(instance, memory_fraction, max_num_seqs)
    low, high = 0, int(instance.model.max_context_tokens)
    if sequence_kv_bytes_per_gpu(instance, high) <= budget:
        return high
    while high - low > 1:  # KV grows monotonically with length (sliding windows included)
        mid = (low + high) // 2
        if sequence_kv_bytes_per_gpu(instance, mid) <= budget:
            low = mid
        else:
            high = mid
    return low


def launch_memory_problem(instance: Instance, memory_fraction: float, max_model_len: int,
                          max_num_seqs: int) -> str:
    """Why an instance launched with these flags fails the start-up memory check (empty when
    it passes): the weights must fit, and so must the KV of one ``max_model_len`` sequence
    (vLLM refuses to start otherwise; SGLang needs its KV pool to hold one full context)."""
    budget = launch_kv_budget_bytes_per_gpu(instance, memory_fraction, max_num_seqs)
    if budget <= 0:
        return (f"weights need {instance.weight_bytes_per_gpu / 1e9:.1f} GB per GPU; nothing "
                f"left for the KV cache at memory fraction {memory_fraction:g}")
    if max_model_len > instance.model.max_context_tokens:
        return (f"max model length {max_model_len} exceeds the model's context of "
                f"{instance.model.max_context_tokens}")
    need = sequence_kv_bytes_per_gpu(instance, max_model_len)
    if need > budget:
        return (f"one {max_model_len}-token sequence needs {need / 1e9:.2f} GB of KV per GPU; "
                f"{budget / 1e9:.2f} GB free")
    return ""
