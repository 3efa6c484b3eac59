"""Model architectures and the quantities derived from them.

Parameter counts, FLOPs per token, weight bytes and KV-cache bytes per token for dense,
MoE, GQA/MHA and MLA transformers. Formulas: docs/model.md §1 (from
docs/sources.md#model-configs and #kv-bytes-per-token).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from advisor.core.precision import GroupFormats, Precision

AttentionKind = Literal["mha", "gqa", "mla"]
MlpKind = Literal["gated", "plain"]

WEIGHT_BYTES_PER_PARAM = {"bf16": 2.0, "fp8": 1.0, "fp8-block": 1.0}
"""Weight storage per parameter of the one-word precisions of the first format (all formats:
:data:`advisor.core.precision.WEIGHT_BYTES_PER_PARAM`)."""
KV_BYTES_PER_ELEMENT = {"bf16": 2.0, "fp8": 1.0, "fp8-block": 2.0}
"""KV-cache storage per element of those one-word precisions: ``fp8`` means FP8 weights *and*
KV; ``fp8-block`` checkpoints are served with ``--kv-cache-dtype auto``, a 16-bit KV cache."""
BYTES_PER_ELEMENT = WEIGHT_BYTES_PER_PARAM
"""Former name of :data:`WEIGHT_BYTES_PER_PARAM` (bf16 = 2, fp8 = 1)."""

UNQUANTISED_BYTES_PER_PARAM = 2.0
"""The input embedding and the LM head of 4-bit checkpoints stay in 16 bit."""


@dataclass(frozen=True, kw_only=True)
class MoeSpec:
    """Mixture-of-experts fields."""

    num_experts: int
    experts_per_token: int
    moe_intermediate_size: int
    shared_experts: int = 0
    first_dense_layers: int = 0
    """Leading layers with a dense FFN instead of experts (DeepSeek ``first_k_dense_replace``)."""
    expert_bias: bool = False
    router_bias: bool = False
    expert_weight_bytes_per_param: float | None = None
    """Storage size of expert weights when the checkpoint fixes it (gpt-oss MXFP4 = 4.25/8)."""


@dataclass(frozen=True, kw_only=True)
class MlaSpec:
    """Multi-head latent attention fields (DeepSeek-V2/V3)."""

    kv_lora_rank: int
    q_lora_rank: int | None
    qk_rope_head_dim: int
    qk_nope_head_dim: int
    v_head_dim: int


@dataclass(frozen=True, kw_only=True)
class ModelSpec:
    """A transformer's architecture, enough to derive params, FLOPs and KV bytes."""

    id: str
    name: str
    num_layers: int
    hidden_size: int
    intermediate_size: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    max_context_tokens: int
    attention: AttentionKind
    mlp: MlpKind = "gated"
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    mlp_bias: bool = False
    qk_norm: bool = False
    norm_has_bias: bool = False
    learned_position_embeddings: int = 0
    sliding_window_tokens: int | None = None
    sliding_window_layers: int = 0
    """Number of layers that use ``sliding_window_tokens`` (0 = none)."""
    moe: MoeSpec | None = None
    mla: MlaSpec | None = None
    published_total_params: float | None = None
    published_active_params: float | None = None
    checkpoint_formats: GroupFormats | None = None
    """The weight format of each layer group as the checkpoint stores it (config.json
    ``quantization_config``); None: the workload's ``precision`` decides every group."""

    # ---- parameter counts -------------------------------------------------------------
    @cached_property
    def embedding_params(self) -> float:
        """Input embedding table (plus learned positions); a gather, not a matmul."""
        return float(self.vocab_size * self.hidden_size
                     + self.learned_position_embeddings * self.hidden_size)

    @cached_property
    def lm_head_params(self) -> float:
        """Output projection (zero extra parameters when tied to the embedding)."""
        return 0.0 if self.tie_word_embeddings else float(self.vocab_size * self.hidden_size)

    def _attention_params_per_layer(self) -> float:
        h = self.hidden_size
        if self.mla is not None:
            m = self.mla
            qk_dim = m.qk_nope_head_dim + m.qk_rope_head_dim
            if m.q_lora_rank:
                q = (h * m.q_lora_rank + m.q_lora_rank
                     + m.q_lora_rank * self.num_attention_heads * qk_dim)
            else:
                q = h * self.num_attention_heads * qk_dim
            kv_a = h * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank
            kv_b = m.kv_lora_rank * self.num_attention_heads * (m.qk_nope_head_dim + m.v_head_dim)
            o = self.num_attention_heads * m.v_head_dim * h
            return float(q + kv_a + kv_b + o)
        q_dim = self.num_attention_heads * self.head_dim
        kv_dim = self.num_kv_heads * self.head_dim
        params = h * q_dim + 2 * h * kv_dim + q_dim * h
        if self.attention_bias:
            params += q_dim + 2 * kv_dim + h
        if self.qk_norm:
            params += 2 * self.head_dim
        return float(params)

    def _ffn_params(self, inter: int) -> float:
        h = self.hidden_size
        if self.mlp == "gated":
            params = 3 * h * inter
            if self.mlp_bias:
                params += 2 * inter + h
        else:
            params = 2 * h * inter
            if self.mlp_bias:
                params += inter + h
        return float(params)

    def _norm_params_per_layer(self) -> float:
        return float(2 * self.hidden_size * (2 if self.norm_has_bias else 1))

    @property
    def num_moe_layers(self) -> int:
        """Layers whose FFN is a mixture of experts."""
        return 0 if self.moe is None else self.num_layers - self.moe.first_dense_layers

    @property
    def num_dense_layers(self) -> int:
        """Layers whose FFN is dense."""
        return self.num_layers - self.num_moe_layers

    def _expert_params(self) -> float:
        """Parameters of one routed expert."""
        assert self.moe is not None
        p = self._ffn_params(self.moe.moe_intermediate_size)
        if self.moe.expert_bias:
            p += 2 * self.moe.moe_intermediate_size + self.hidden_size
        return p

    def _router_params(self) -> float:
        assert self.moe is not None
        return float(self.hidden_size * self.moe.num_experts
                     + (self.moe.num_experts if self.moe.router_bias else 0))

    @cached_property
    def routed_expert_params(self) -> float:
        """All routed-expert weights of the model."""
        if self.moe is None:
            return 0.0
        return self.num_moe_layers * self.moe.num_experts * self._expert_params()

    def _layer_params_common(self) -> float:
        return self._attention_params_per_layer() + self._norm_params_per_layer()

    @cached_property
    def total_params(self) -> float:
        """All parameters (embeddings included, untied lm_head counted once more)."""
        total = self.num_layers * self._layer_params_common()
        total += self.num_dense_layers * self._ffn_params(self.intermediate_size)
        if self.moe is not None:
            per_layer = (self.moe.num_experts * self._expert_params()
                         + self.moe.shared_experts
                         * self._ffn_params(self.moe.moe_intermediate_size)
                         + self._router_params())
            total += self.num_moe_layers * per_layer
        total += self.embedding_params + self.lm_head_params
        total += self.hidden_size * (2 if self.norm_has_bias else 1)  # final norm
        return float(total)

    @cached_property
    def active_params(self) -> float:
        """Parameters used per token (top-k routed experts plus shared ones), embeddings
        included."""
        if self.moe is None:
            return self.total_params
        inactive = (self.num_moe_layers * (self.moe.num_experts - self.moe.experts_per_token)
                    * self._expert_params())
        return self.total_params - inactive

    @cached_property
    def matmul_params_per_token(self) -> float:
        """Active parameters that take part in matmuls: the embedding gather is excluded."""
        embed_gather = self.embedding_params if not self.tie_word_embeddings else (
            self.learned_position_embeddings * self.hidden_size)
        return self.active_params - embed_gather

    @cached_property
    def routed_matmul_params_per_token(self) -> float:
        """The top-k routed experts' parameters one token multiplies (0 for dense models):
        the part of :attr:`matmul_params_per_token` expert parallelism shards."""
        if self.moe is None:
            return 0.0
        return float(self.num_moe_layers * self.moe.experts_per_token * self._expert_params())

    @property
    def attention_width(self) -> int:
        """Query heads × head dim (the width of QK^T and AV matmuls)."""
        if self.mla is not None:
            return self.num_attention_heads * (self.mla.qk_nope_head_dim
                                               + self.mla.qk_rope_head_dim)
        return self.num_attention_heads * self.head_dim

    @cached_property
    def prefill_attention_flops_per_pair(self) -> float:
        """Attention FLOPs of one (query, key) pair of a prefill, all layers:
        2 · heads · (d_qk + d_v) · L — QKᵀ over the query/key width and PV over the value
        width (FlashMLA's deep dive, deepseek-ai/FlashMLA ``docs/20250422-new-kernel-deep-
        dive.md``: FLOPs ≈ 2·h_q·s_q·s_k·(d_k + d_v)). MHA/GQA: d_qk = d_v = head_dim, so
        4 · heads · head_dim · L. MLA prefill runs the decompressed (MHA) form: d_qk =
        qk_nope + qk_rope (192 on DeepSeek-V3), d_v = v_head_dim (128) (docs/model.md §3)."""
        if self.mla is not None:
            m = self.mla
            width = m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim
            return float(2 * self.num_attention_heads * width * self.num_layers)
        return float(4 * self.attention_width * self.num_layers)

    @cached_property
    def decode_attention_flops_per_key(self) -> float:
        """Attention FLOPs of one decode query token against one cached key, all layers.
        MHA/GQA: as a prefill pair. MLA decode runs *absorbed* (W_UK folded into the query,
        W_UV after the attention — how FlashMLA, CUTLASS MLA and FlashInfer MLA run
        DeepSeek-V3/R1 decode in SGLang, vLLM and TensorRT-LLM): every head attends in the
        latent, d_k = kv_lora_rank + qk_rope (576), d_v = kv_lora_rank (512), so
        2 · heads · (2·kv_lora_rank + qk_rope) · L — 2.8× the decompressed form's on
        DeepSeek-V3 (FlashMLA deep dive, above; docs/model.md §3)."""
        if self.mla is not None:
            m = self.mla
            width = 2 * m.kv_lora_rank + m.qk_rope_head_dim
            return float(2 * self.num_attention_heads * width * self.num_layers)
        return self.prefill_attention_flops_per_pair

    # ---- layer groups (docs/model.md §1.1) -------------------------------------------------
    @cached_property
    def attention_group_params(self) -> float:
        """Attention projections of every layer (q/k/v/o; MLA's down and up projections)."""
        return self.num_layers * self._attention_params_per_layer()

    @cached_property
    def dense_group_params(self) -> float:
        """Everything that is neither attention, routed experts, embedding nor LM head: the
        dense FFN layers, shared experts, routers and norms."""
        return (self.total_params - self.attention_group_params - self.routed_expert_params
                - self.embedding_params - self.lm_head_params)

    @cached_property
    def lm_head_matmul_params(self) -> float:
        """Parameters of the LM-head matmul (vocab × hidden; the embedding table when tied)."""
        return float(self.vocab_size * self.hidden_size)

    def matmul_params_by_group(self) -> dict[str, float]:
        """Matmul parameters one token multiplies, per layer group: the top-k routed experts,
        the attention projections, the LM head and the rest (dense)."""
        experts = self.routed_matmul_params_per_token
        attention = self.attention_group_params
        head = self.lm_head_matmul_params
        return {"experts": experts, "attention": attention,
                "dense": self.matmul_params_per_token - experts - attention - head,
                "lm_head": head}

    def formats(self, precision: Precision | str) -> Precision:
        """The precision with the groups it leaves unset taken from the checkpoint."""
        return Precision.of(precision).with_checkpoint(self.checkpoint_formats)

    # ---- bytes ---------------------------------------------------------------------------
    def _embedding_and_head_params(self) -> float:
        return self.embedding_params + self.lm_head_params

    def _expert_bytes_per_param(self, p: Precision) -> float:
        b = p.group_bytes_per_param("experts")
        if self.moe is not None and self.moe.expert_weight_bytes_per_param is not None:
            b = min(b, self.moe.expert_weight_bytes_per_param)
        return b

    def _embedding_bytes_per_param(self, p: Precision) -> float:
        """The input embedding: 16 bit under 4-bit weights, else the weights' format; a tied
        table is the LM head and takes its format."""
        if self.tie_word_embeddings:
            return p.group_bytes_per_param("lm_head")
        return UNQUANTISED_BYTES_PER_PARAM if p.four_bit else p.weight_bytes_per_param

    def weight_bytes(self, precision: Precision | str) -> float:
        """Bytes of all weights at ``precision`` (docs/model.md §1.1): the weight format's bytes
        per parameter (bf16/fp16 2, fp8 1, fp4 0.5625, mxfp4 0.53125, int4 0.5195); 4-bit
        formats keep the input embedding and LM head in 16 bit. With layer groups in formats
        of their own (the precision's or the checkpoint's), the sum over the groups of their
        parameters × their bytes per parameter.

        Expert weights whose checkpoint format fixes their size (gpt-oss MXFP4) keep it.
        """
        p = self.formats(precision)
        if not p.uniform:
            return (self.attention_group_params * p.group_bytes_per_param("attention")
                    + self.dense_group_params * p.group_bytes_per_param("dense")
                    + self.routed_expert_params * self._expert_bytes_per_param(p)
                    + self.lm_head_params * p.group_bytes_per_param("lm_head")
                    + self.embedding_params * self._embedding_bytes_per_param(p))
        b = p.weight_bytes_per_param
        if self.moe is not None and self.moe.expert_weight_bytes_per_param is not None:
            experts = self.routed_expert_params
            total = (self.total_params - experts) * b + experts * min(
                b, self.moe.expert_weight_bytes_per_param)
        else:
            total = self.total_params * b
        if p.four_bit:
            total += self._embedding_and_head_params() * (UNQUANTISED_BYTES_PER_PARAM - b)
        return total

    def gathered_embedding_bytes(self, precision: Precision | str) -> float:
        """Bytes of the input-embedding table a step only gathers rows of (not streamed):
        the untied vocab × hidden table (a tied one is read whole as the LM head)."""
        if self.tie_word_embeddings:
            return 0.0
        p = self.formats(precision)
        return float(self.vocab_size * self.hidden_size) * self._embedding_bytes_per_param(p)

    def expert_weight_bytes(self, precision: Precision | str) -> float:
        """Bytes of the routed-expert weights alone (0 for dense models)."""
        if self.moe is None:
            return 0.0
        return self.routed_expert_params * self._expert_bytes_per_param(self.formats(precision))

    def kv_bytes_per_token(self, precision: Precision | str) -> float:
        """KV-cache bytes per token for the whole model, no TP duplication.

        MHA/GQA: 2 · L · kv_heads · head_dim · bytes.  MLA: (kv_lora_rank + rope_dim) · L · bytes.
        Sliding-window layers are counted as full layers here (upper bound); see
        ``kv_bytes_per_sequence`` for the window-aware size.
        """
        b = Precision.of(precision).kv_bytes_per_element
        if self.mla is not None:
            return float((self.mla.kv_lora_rank + self.mla.qk_rope_head_dim) * self.num_layers * b)
        return float(2 * self.num_layers * self.num_kv_heads * self.head_dim * b)

    def kv_bytes_per_sequence(self, tokens: float, precision: Precision | str) -> float:
        """KV bytes one sequence of ``tokens`` holds, honouring sliding-window layers."""
        per_layer_token = self.kv_bytes_per_token(precision) / self.num_layers
        full_layers = self.num_layers - self.sliding_window_layers
        window = self.sliding_window_tokens or tokens
        return per_layer_token * (full_layers * tokens
                                  + self.sliding_window_layers * min(tokens, window))

    def kv_duplication_factor(self, tensor_parallel: int) -> float:
        """How many copies of each KV head a TP group stores (docs/sources.md#kv-bytes-per-token).

        GQA/MHA: max(TP, kv_heads) / kv_heads.  MLA under attention TP: the latent is
        replicated on every rank, so the factor is TP.
        """
        if self.mla is not None:
            return float(tensor_parallel)
        return max(tensor_parallel, self.num_kv_heads) / self.num_kv_heads

    def kv_bytes_per_token_per_gpu(self, precision: Precision | str,
                                   tensor_parallel: int) -> float:
        """KV bytes per token that one GPU of a TP group stores."""
        return (self.kv_bytes_per_token(precision) * self.kv_duplication_factor(tensor_parallel)
                / tensor_parallel)

    @property
    def lowbit_experts(self) -> bool:
        """Whether the routed experts are stored in 4-bit blocks (MXFP4/NVFP4: < 1 B/param)."""
        return (self.moe is not None and self.moe.expert_weight_bytes_per_param is not None
                and self.moe.expert_weight_bytes_per_param < 1.0)

    @property
    def window_layer_share(self) -> float:
        """Share of layers whose attention is limited to ``sliding_window_tokens``."""
        if not self.sliding_window_tokens:
            return 0.0
        return self.sliding_window_layers / self.num_layers

    def moe_touched_fraction(self, tokens: float) -> float:
        """Share of routed experts a batch of ``tokens`` touches (uniform routing).

        1 − (1 − k/E)^tokens (docs/sources.md#kv-bytes-per-token, an assumption); 1.0 for
        dense models.
        """
        if self.moe is None:
            return 1.0
        k, e = self.moe.experts_per_token, self.moe.num_experts
        return 1.0 - math.pow(1.0 - k / e, max(tokens, 1.0))

    @property
    def is_moe(self) -> bool:
        """Whether the model has routed experts."""
        return self.moe is not None
