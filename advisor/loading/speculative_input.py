"""``deployment.speculative``: the workload block, its located checks and the core record
(docs/model.md §3.6, #30)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from advisor.core.speculative import (
    DEFAULT_ACCEPTANCE,
    SPECULATIVE_METHODS,
    SpeculativeDecoding,
    SpeculativeMethod,
)

MAX_DRAFT_TOKENS = 64
"""Largest k accepted (engines' tree drafts top out in the tens: SGLang's EAGLE examples use
up to 64 draft tokens)."""

Loc = tuple[str | int, ...]
SPEC_LOC: Loc = ("deployment", "speculative")


class Speculative(BaseModel):
    """Speculative decoding the deployment runs (docs/model.md §3.6)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False)

    method: SpeculativeMethod = Field(
        description="eagle3 (an EAGLE-3 draft head), mtp (the model's multi-token-prediction "
        "layers, DeepSeek-V3 style), ngram (prompt lookup, no draft model) or draft-model "
        "(a smaller model of the same tokenizer).")
    draft_tokens: StrictInt = Field(
        ge=1, le=MAX_DRAFT_TOKENS, description="k: draft tokens proposed per sequence and step "
        "(vLLM num_speculative_tokens, SGLang --speculative-num-steps).")
    acceptance_rate: float | None = Field(
        None, ge=0.0, le=1.0, description="Per-token acceptance a in [0, 1]; a step emits "
        "(1 - a^(k+1))/(1 - a) tokens. Omitted (with accepted_tokens_per_step): the method's "
        "sourced default (docs/model.md §3.6).")
    accepted_tokens_per_step: float | None = Field(
        None, ge=1.0, le=MAX_DRAFT_TOKENS + 1, description="Mean tokens per verify step, the "
        "bonus token included (vLLM's mean acceptance length, SGLang's accept_length), "
        "instead of acceptance_rate; at most draft_tokens + 1.")
    draft_model: StrictStr | None = Field(
        None, min_length=1, description="The draft: a model profile id or Hugging Face id "
        "(draft-model: required, its step is costed), or the EAGLE-3 head's checkpoint "
        "(eagle3: emitted as the engines' draft path only).")


SpeculativeField = Annotated[Speculative | None, Field(
    None, description="Speculative decoding the deployment runs on every decoding instance "
    "(colocated and the decode pool): method, draft_tokens and the acceptance "
    "(docs/model.md §3.6). Omitted: none.")]


def speculative_issues(spec: Speculative, engine: Any, batch: bool) -> list[tuple[Loc, str]]:
    """Problems of a ``deployment.speculative`` block with the engine profile it runs on
    (None: not resolved) and whether the traffic is a finite batch."""
    issues: list[tuple[Loc, str]] = []
    k = spec.draft_tokens
    if spec.acceptance_rate is not None and spec.accepted_tokens_per_step is not None:
        issues.append(((*SPEC_LOC, "accepted_tokens_per_step"),
                       "give either acceptance_rate or accepted_tokens_per_step, not both"))
    if spec.accepted_tokens_per_step is not None and spec.accepted_tokens_per_step > k + 1:
        issues.append(((*SPEC_LOC, "accepted_tokens_per_step"),
                       f"{spec.accepted_tokens_per_step:g} exceeds draft_tokens + 1 = {k + 1} "
                       "(a step emits at most the k drafts and one token of its own)"))
    if spec.method == "draft-model" and spec.draft_model is None:
        issues.append((SPEC_LOC, "missing required key 'draft_model' (method is draft-model: "
                                 "the draft's step is part of the step time)"))
    if spec.method in ("mtp", "ngram") and spec.draft_model is not None:
        issues.append(((*SPEC_LOC, "draft_model"),
                       f"has no meaning with method {spec.method} (no separate draft model)"))
    supported = getattr(getattr(engine, "supports", None), "speculative_methods", None)
    if supported is not None and spec.method not in supported:
        runs = ", ".join(supported) if supported else "no speculative decoding"
        issues.append(((*SPEC_LOC, "method"),
                       f"{spec.method} is not supported by {engine.label} (its profile's "
                       f"supports.speculative_methods: {runs})"))
    if batch:
        issues.append((SPEC_LOC, "finite batches (traffic.requests) are not evaluated with "
                                 "speculative decoding yet; give traffic.rate_rps or "
                                 "concurrency, or drop deployment.speculative"))
    return issues


def to_core(spec: Speculative, draft: Any) -> SpeculativeDecoding:
    """The core record, the method's default acceptance where the workload gives none;
    ``draft`` is the draft model's spec (draft-model) or None."""
    rate, given, source = spec.acceptance_rate, spec.accepted_tokens_per_step, "workload"
    if rate is None and given is None:
        rate, source = DEFAULT_ACCEPTANCE[spec.method].acceptance_rate, "default"
    return SpeculativeDecoding(
        method=spec.method, draft_tokens=spec.draft_tokens,
        acceptance_rate=None if rate is None else float(rate),
        accepted_tokens_per_step_given=None if given is None else float(given),
        acceptance_source=source, draft_model=draft if spec.method == "draft-model" else None,
        draft_model_id=spec.draft_model)


__all__ = ["SPECULATIVE_METHODS", "Speculative", "SpeculativeField", "speculative_issues",
           "to_core"]
