"""Speculative decoding as a deployment property (docs/model.md §3.6, #30).

A decode step of a speculating engine drafts ``k`` tokens per running sequence, then verifies
them in one pass of the target model over ``k + 1`` query tokens per sequence (the last
accepted token and the ``k`` drafts): the verify batch of B sequences is B·(k + 1) tokens.
With a per-token acceptance ``a`` (each draft accepted with probability ``a`` given the ones
before it were), a step emits on average

    τ = (1 − a^(k+1)) / (1 − a)        (τ = k + 1 at a = 1)

tokens per sequence (Leviathan, Kalman and Matias, "Fast Inference from Transformers via
Speculative Decoding", ICML 2023, eq. 1), or ``accepted_tokens_per_step`` when the workload
gives it (vLLM's "mean acceptance length", SGLang's ``accept_length``). The TPOT is the step
over τ.

The draft's cost, added to the verify pass (sequential kernels, compute and memory summed):

* ``eagle3`` and ``mtp``: ``k`` passes of one decoder layer of the target's width and the
  target's LM head (an EAGLE-3 head is one decoder layer on the fused hidden states; a
  DeepSeek MTP module is one transformer block sharing the embedding and the head) — an
  ESTIMATE of the head's size (EAGLE-3 heads use a smaller draft vocabulary);
* ``draft-model``: ``k`` decode passes of the draft model, on the target's TP;
* ``ngram``: no GPU work (the proposer matches n-grams of the context on the CPU).

Each draft pass streams its weights once per step, multiplies 2·N parameters per sequence
and reads its own KV over the context. Pure: the loading layer resolves the method, the
acceptance (a sourced default per method: ``DEFAULT_ACCEPTANCE``) and the draft model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np

from advisor.core.hardware import Precision
from advisor.core.model_arch import ModelSpec

SpeculativeMethod = Literal["eagle3", "mtp", "ngram", "draft-model"]
SPECULATIVE_METHODS: tuple[SpeculativeMethod, ...] = get_args(SpeculativeMethod)


@dataclass(frozen=True, kw_only=True)
class DefaultAcceptance:
    """A method's default per-token acceptance rate and where it comes from."""

    acceptance_rate: float
    kind: str
    """``empirical`` (a published measurement) or ``estimate``."""
    source: str


DEFAULT_ACCEPTANCE: dict[str, DefaultAcceptance] = {
    "mtp": DefaultAcceptance(
        acceptance_rate=0.85, kind="empirical",
        source="DeepSeek-AI, 'DeepSeek-V3 Technical Report', arXiv:2412.19437, §5.4.3: the "
               "acceptance rate of the second (MTP) token is 85-90 % across generation "
               "topics (1.8x TPS); the low end"),
    "eagle3": DefaultAcceptance(
        acceptance_rate=0.75, kind="estimate",
        source="ESTIMATE from Li et al., 'EAGLE-3: Scaling up Inference Acceleration of Large "
               "Language Models via Training-Time Test', arXiv:2503.01840: average acceptance "
               "length ~6 tokens with tree drafts on MT-bench (LLaMA-3.1-8B); a chain of k "
               "drafts with a = 0.75 gives 3.05 tokens at k = 4"),
    "draft-model": DefaultAcceptance(
        acceptance_rate=0.6, kind="estimate",
        source="ESTIMATE inside the range Leviathan et al., 'Fast Inference from Transformers "
               "via Speculative Decoding', ICML 2023 (arXiv:2211.17192) measures for small "
               "draft models of the same family (alpha about 0.5-0.8)"),
    "ngram": DefaultAcceptance(
        acceptance_rate=0.3, kind="estimate",
        source="ESTIMATE: prompt-lookup (n-gram) drafts are accepted only where the output "
               "repeats the context (summarisation, code edits, RAG); no workload-independent "
               "figure is published"),
}


def expected_tokens_per_step(acceptance_rate: float, draft_tokens: int) -> float:
    """τ = (1 − a^(k+1))/(1 − a), the mean tokens a verify step emits per sequence (k + 1
    at a = 1; 1 at a = 0)."""
    a, k = float(acceptance_rate), int(draft_tokens)
    if a >= 1.0:
        return float(k + 1)
    return (1.0 - a ** (k + 1)) / (1.0 - a)


@dataclass(frozen=True, kw_only=True)
class SpeculativeDecoding:
    """How a deployment speculates (``deployment.speculative``)."""

    method: SpeculativeMethod
    draft_tokens: int
    """k: draft tokens proposed per sequence and step."""
    acceptance_rate: float | None = None
    """Per-token acceptance a in [0, 1]; None when ``accepted_tokens_per_step`` is given."""
    accepted_tokens_per_step_given: float | None = None
    """Mean tokens per verify step as the workload gives it (1 ≤ τ ≤ k + 1), else None."""
    acceptance_source: str = "workload"
    """``workload`` or ``default`` (the method's ``DEFAULT_ACCEPTANCE``)."""
    draft_model: ModelSpec | None = None
    """The draft model (``draft-model`` method), resolved from its profile."""
    draft_model_id: str | None = None
    """The draft's checkpoint as the workload names it (``draft-model``, ``eagle3``: emitted
    as the engines' draft path)."""

    @property
    def tokens_per_step(self) -> float:
        """τ: mean tokens emitted per sequence and verify step."""
        if self.accepted_tokens_per_step_given is not None:
            return float(self.accepted_tokens_per_step_given)
        return expected_tokens_per_step(self.acceptance_rate or 0.0, self.draft_tokens)

    @property
    def verify_tokens_per_sequence(self) -> int:
        """k + 1: query tokens per sequence in the verify pass."""
        return self.draft_tokens + 1


@dataclass(frozen=True, kw_only=True)
class DraftCost:
    """The draft passes of one step, linear in the decode batch B and its context:
    ``fixed_s + per_sequence_s·B + kv_bytes_per_token·B·ctx / (BW·η_kv)``."""

    fixed_s: float = 0.0
    """Weight streaming of the k draft passes (once per step)."""
    per_sequence_s: float = 0.0
    """Compute of the k draft passes per sequence."""
    kv_bytes_per_token_per_gpu: float = 0.0
    """KV bytes the k draft passes read per context token and sequence, per GPU."""


def draft_cost(spec: SpeculativeDecoding | None, model: ModelSpec, precision: Precision,
               *, tensor_parallel: int, weight_bytes_per_s: float, compute_flops_per_s: float,
               expert_shards: int | None = None) -> DraftCost:
    """The draft's cost on an instance of ``tensor_parallel`` GPUs (per attention rank)
    whose weights stream at ``weight_bytes_per_s`` per GPU and whose GEMMs run at
    ``compute_flops_per_s``; an MoE layer's experts are split over ``expert_shards`` GPUs
    (the EP degree; default ``tensor_parallel``). Module docstring."""
    if spec is None or spec.method == "ngram":
        return DraftCost()
    k, tp = float(spec.draft_tokens), float(tensor_parallel)
    prec = Precision.of(precision)
    if spec.method == "draft-model":
        draft = spec.draft_model
        assert draft is not None, "a draft-model method carries its resolved draft model"
        bytes_per_gpu = (draft.weight_bytes(prec) - draft.gathered_embedding_bytes(prec)) / tp
        params = draft.matmul_params_per_token
        kv = draft.kv_bytes_per_token_per_gpu(prec, tensor_parallel)
    else:  # one decoder layer of the target's and the LM head, per draft pass
        head_params = float(model.vocab_size * model.hidden_size)
        head_bytes = head_params * prec.weight_bytes_per_param
        experts = model.expert_weight_bytes(prec)
        dense = (model.weight_bytes(prec) - experts - model.gathered_embedding_bytes(prec)
                 - (0.0 if model.tie_word_embeddings else head_bytes))
        expert_layer = experts / model.num_moe_layers if model.num_moe_layers else 0.0
        shards = float(expert_shards or tensor_parallel)
        bytes_per_gpu = (dense / model.num_layers + head_bytes) / tp + expert_layer / shards
        params = (model.matmul_params_per_token - model.lm_head_params) / model.num_layers \
            + head_params
        kv = model.kv_bytes_per_token_per_gpu(prec, tensor_parallel) / model.num_layers
    return DraftCost(fixed_s=k * bytes_per_gpu / weight_bytes_per_s,
                     per_sequence_s=k * 2.0 * params / compute_flops_per_s,
                     kv_bytes_per_token_per_gpu=k * kv)


def step_terms(spec: SpeculativeDecoding | None, model: ModelSpec, precision: Precision,
               *, tensor_parallel: int, weight_bytes_per_s: float, compute_flops_per_s: float,
               expert_shards: int | None = None) -> dict[str, float]:
    """The step-time constants (``instance.StepParams`` fields) of ``spec`` on an instance
    (:func:`draft_cost`); empty without speculation (the fields' defaults)."""
    if spec is None:
        return {}
    cost = draft_cost(spec, model, precision, tensor_parallel=tensor_parallel,
                      weight_bytes_per_s=weight_bytes_per_s,
                      compute_flops_per_s=compute_flops_per_s, expert_shards=expert_shards)
    return {"decode_query_tokens": float(spec.verify_tokens_per_sequence),
            "decode_tokens_per_step": spec.tokens_per_step,
            "draft_fixed_s": cost.fixed_s, "draft_s_per_seq": cost.per_sequence_s,
            "draft_kv_bytes_per_token_per_gpu": cost.kv_bytes_per_token_per_gpu}


def draft_step_s(fixed_s: Any, per_sequence_s: Any, kv_bytes_per_token: Any,
                 kv_read_bytes_per_s: Any, decode_seqs: Any, keys: Any) -> Any:
    """Seconds of a step's draft passes with ``decode_seqs`` sequences reading ``keys`` keys
    each (0 when the step has no decodes, or without speculation)."""
    if (isinstance(fixed_s, float | int) and fixed_s == 0.0
            and isinstance(per_sequence_s, float | int) and per_sequence_s == 0.0):
        return 0.0
    return (fixed_s * np.where(np.asarray(decode_seqs) > 0, 1.0, 0.0)
            + per_sequence_s * decode_seqs
            + kv_bytes_per_token * decode_seqs * keys / kv_read_bytes_per_s)
