"""Pinned expert parallelism (`deployment.expert_parallel`, `prefill_/decode_expert_parallel`):
bad degrees are reported as path:line:col errors, all at once (docs/model.md §4.1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.loading.catalog import ProfileCatalog
from advisor.loading.errors import InputError
from advisor.loading.resolve import load_scenario

HEAD = """\
version: 1
model: {model}
precision: fp8-block
engine: sglang
cluster: {{gpu: h100-sxm, gpus: {gpus}, inter_node: ib-ndr-400}}
traffic: {{rate_rps: 5, prompt_tokens: 1000, output_tokens: 200}}
deployment:
"""


def _problems(tmp_path: Path, model: str, gpus: int, deployment: str) -> list[str]:
    path = tmp_path / "w.yaml"
    path.write_text(HEAD.format(model=model, gpus=gpus) + deployment)
    with pytest.raises(InputError) as info:
        load_scenario(path, ProfileCatalog(env={}))
    return [f"{p.line}:{p.col}: {p.key}: {p.message}" for p in info.value.problems]


def test_ep_on_a_dense_model(tmp_path: Path) -> None:
    got = _problems(tmp_path, "llama-3.1-70b", 16,
                    "  mode: colocated\n  expert_parallel: 8\n")
    assert got == ["9:20: deployment.expert_parallel: expert parallelism needs a "
                   "mixture-of-experts model; llama-3.1-70b is dense (use tensor_parallel)"]


def test_ep_not_dividing_experts_or_cluster(tmp_path: Path) -> None:
    got = _problems(tmp_path, "deepseek-v3", 96, "  mode: colocated\n  expert_parallel: 40\n")
    assert got == [
        "9:20: deployment.expert_parallel: 40 does not divide the model's 256 routed experts "
        "or 288 (with 32 redundant)",
        "9:20: deployment.expert_parallel: cluster.gpus (96) is not a multiple of 40"]


def test_ep_pools_all_problems_at_once(tmp_path: Path) -> None:
    got = _problems(tmp_path, "deepseek-v3", 96,
                    "  mode: disaggregated\n  prefill_gpus: 30\n  decode_gpus: 60\n"
                    "  prefill_expert_parallel: 12\n  decode_expert_parallel: 24\n"
                    "  decode_tensor_parallel: 8\n  expert_parallel: 8\n")
    assert sorted(got) == sorted([
        "9:17: deployment.prefill_gpus: 30 is not a multiple of prefill_expert_parallel (12): "
        "pools hold whole EP groups",
        "10:16: deployment.decode_gpus: 60 is not a multiple of decode_tensor_parallel (8)",
        "11:28: deployment.prefill_expert_parallel: 12 is not a whole number of nodes of 8 GPUs: "
        "EP groups are modelled over whole nodes",
        "12:27: deployment.decode_expert_parallel: give either decode_tensor_parallel or "
        "decode_expert_parallel: an expert-parallel instance runs data-parallel attention over "
        "its GPUs",
        "14:20: deployment.expert_parallel: applies only to colocated deployments; use "
        "prefill_expert_parallel and decode_expert_parallel",
    ])


def test_pinned_ep_is_predicted(tmp_path: Path) -> None:
    path = Path(__file__).resolve().parents[2] / "examples" / "deepseek-v3-96xh100.yaml"
    sc = load_scenario(path, ProfileCatalog(env={}))
    assert sc.deployment is not None
    assert (sc.deployment.prefill_expert_parallel, sc.deployment.decode_expert_parallel) == (32, 64)
