"""``--emit`` and the engine (issue #32, items 2 and 4): no engine's flags on another
engine's plan without saying so, ``--emit trtllm`` refused with the reason, and SGLang servers
sharing a node each get their own ``--engine-info-bootstrap-port`` (``sglang==0.5.23``
``srt/arg_groups/fields/model.py``: "Must be set explicitly when running multiple instances on
the same node")."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from advisor.render.formats import Emit, EmitEngine
from advisor.render.launch import launch_commands
from advisor.render.launch_plan import LaunchPlan, Pool
from advisor.usecases.emit import TRTLLM_REFUSAL, emit_engine
from advisor.usecases.launch import LaunchError, place
from tests.ecosystem.launch_harness import emitted_servers, flag


def _plan(engine: EmitEngine, pools: tuple[Pool, ...]) -> LaunchPlan:
    slots = tuple(place([(p.role, p.instances, p.gpus_per_instance) for p in pools], 8))
    return LaunchPlan(engine=engine, mode="disaggregated", checkpoint="m", gpu="h100-sxm",
                      gpus_per_node=8, memory_fraction=0.9, max_model_len=8192,
                      max_model_len_note="test", fp8=False, pools=pools, slots=slots,
                      nodes=len({n for s in slots for n in s.nodes}), kv_link=None,
                      slo_met=True, notes=("The workload runs trtllm; these are sglang flags.",))


def test_sglang_servers_on_one_node_get_their_own_engine_info_ports() -> None:
    plan = _plan(EmitEngine.sglang, (Pool(role="prefill", instances=4, tensor_parallel=1,
                                          pipeline_stages=1, token_budget=8192,
                                          running_sequences=64),
                                     Pool(role="decode", instances=2, tensor_parallel=2,
                                          pipeline_stages=1, token_budget=None,
                                          running_sequences=128)))
    lines = launch_commands(plan)
    servers, _ = emitted_servers("\n".join(lines) + "\n", Path(tempfile.mkdtemp()),
                                 every_node=True)
    ports = [flag(argv, "--engine-info-bootstrap-port") for argv in servers]
    assert len(servers) == 6 and len(set(ports)) == 6  # six servers on one 8-GPU node
    assert any("NOTE: The workload runs trtllm" in line for line in lines)


def test_trtllm_is_refused_with_the_reason_and_manifests_name_their_engine() -> None:
    with pytest.raises(LaunchError) as caught:
        emit_engine(Emit.trtllm, "trtllm")
    assert str(caught.value) == TRTLLM_REFUSAL and "not verified" in TRTLLM_REFUSAL
    assert emit_engine(Emit.dynamo, "sglang") is EmitEngine.sglang
    assert emit_engine(Emit.lws, "trtllm") is EmitEngine.vllm  # with the NOTE of plan_launch
    assert emit_engine(Emit.kserve, "sglang") is EmitEngine.vllm  # KServe's presets run vLLM
