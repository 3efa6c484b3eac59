"""Router policies as the routers name them (#27 item 1 / #32): every name pd-advisor writes
reads back as a policy of the model, and the one it writes for each model policy is the
same policy wherever the router has it."""
from __future__ import annotations

import pytest

from advisor.core.router_names import model_policy, router_note, router_policy
from advisor.core.scenario import ROUTER_POLICIES

KINDS = ("vllm-router", "sglang-router", "dynamo")
STAGES = ("colocated", "prefill", "decode")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("policy", ROUTER_POLICIES)
@pytest.mark.parametrize("stage", STAGES)
def test_what_is_written_reads_back(kind: str, policy: str, stage: str) -> None:
    name = router_policy(kind, policy, stage, 4)  # type: ignore[arg-type]
    back = model_policy(name)
    assert back.policy is not None
    same = back.policy == policy
    note = router_note(kind, policy, {stage: name})  # type: ignore[arg-type]
    # a note exactly where the router runs something else than the model evaluated
    assert (note is None) == same or policy == "least-loaded"
    if policy == "least-loaded":
        assert note is not None and "join the shortest queue" in note


@pytest.mark.parametrize("kind", KINDS)
def test_one_worker_gets_round_robin(kind: str) -> None:
    for policy in ("power-of-two", "least-loaded"):
        name = router_policy(kind, policy, "decode", 1)  # type: ignore[arg-type]
        assert name in ("round_robin", "round-robin", "cache_aware")
    assert router_policy("vllm-router", "power-of-two", "decode", 2) == "power_of_two"


def test_policies_the_model_cannot_represent_are_said() -> None:
    for name in ("consistent_hash", "direct", "manual", "bucket"):
        reading = model_policy(name)
        assert reading.policy is None and reading.note
    assert model_policy("cache_aware").policy == "least-loaded"
    assert "prefix" in (model_policy("cache_aware").note or "")
    assert model_policy("round_robin").note is None


def test_a_one_worker_stage_is_not_called_load_aware() -> None:
    """vLLM Router, 4 prefill and 1 decode worker under least-loaded: decode runs round_robin,
    and the note says why rather than calling round_robin a load-aware policy."""
    chosen = {stage: router_policy("vllm-router", "least-loaded", stage, n)
              for stage, n in (("prefill", 4), ("decode", 1))}
    assert chosen == {"prefill": "cache_aware", "decode": "round_robin"}
    note = router_note("vllm-router", "least-loaded", chosen)  # type: ignore[arg-type]
    assert note is not None
    assert "(decode: one worker, so no load to weigh)" in note, note
