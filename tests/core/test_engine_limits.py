"""Engine limits (#16): deployment.max_num_seqs, max_model_len and gpu_memory_utilization are
honoured by the memory plan and by ``--emit``."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.core.memory import plan_memory
from advisor.core.plan.shapes import instance_shapes
from advisor.loading.catalog import ProfileCatalog
from advisor.loading.resolve import load_scenario

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "chat-8b-single-node.yaml"
LIMITS = ("  max_num_seqs: 48\n  max_model_len: 100000\n  gpu_memory_utilization: 0.8\n")


def _workload(tmp_path: Path, limits: str = LIMITS) -> Path:
    text = EXAMPLE.read_text().replace("  tensor_parallel: 1 ", limits + "  tensor_parallel: 1 ", 1)
    path = tmp_path / "w.yaml"
    path.write_text(text)
    return path


def test_limits_reach_the_model(tmp_path: Path) -> None:
    sc = load_scenario(_workload(tmp_path), ProfileCatalog())
    assert sc.policy.memory_fraction == 0.8
    assert sc.engine.max_num_seqs(sc.cluster.gpu) == 48
    shapes, _ = instance_shapes(sc)
    tp1 = next(s for s in shapes if s.instance.tensor_parallel == 1)
    assert tp1.max_sequences["all"] == 48  # memory would allow far more at 1.3k tokens
    # memory is planned for one 100k-token request (vLLM refuses to start otherwise), at 0.8
    mem = plan_memory(tp1.instance, 1150.0, 100_000.0, 0.8)
    default = plan_memory(tp1.instance, 1150.0, 100_000.0, 0.9)
    assert mem.kv_budget_bytes_per_gpu == pytest.approx(
        default.kv_budget_bytes_per_gpu - 0.1 * sc.cluster.gpu.memory_bytes, rel=1e-9)


def test_max_model_len_beyond_memory_excludes_the_shape(tmp_path: Path) -> None:
    """Llama-3.1-8B on one H100 at 0.8: 131,072 tokens of KV need 17.2 GB — still fits; at
    gpu_memory_utilization 0.3 (25.8 GB: 16 GB of weights and the runtime reserve leave
    about 6 GB) it does not."""
    sc = load_scenario(_workload(tmp_path, "  max_model_len: 131072\n"
                                           "  gpu_memory_utilization: 0.3\n"), ProfileCatalog())
    _, excluded = instance_shapes(sc)
    assert any(e.label == "TP1" and "131,072-token request" in e.reason for e in excluded)


def test_emit_uses_the_declared_limits(run_cli, tmp_path: Path) -> None:
    path = _workload(tmp_path)
    out = run_cli("recommend", path, "--emit", "vllm", "--format", "none", exit_code=0).stdout
    assert "--max-num-seqs 48" in out
    assert "--max-model-len 100000" in out
    assert "--gpu-memory-utilization 0.8" in out
    sgl = run_cli("recommend", path, "--emit", "sglang", "--format", "none", exit_code=0).stdout
    assert "--max-running-requests 48" in sgl
    assert "--context-length 100000" in sgl
    assert "--mem-fraction-static 0.8" in sgl
