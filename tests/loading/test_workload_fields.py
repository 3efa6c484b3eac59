"""Bad input for the #16 workload keys: every problem located ``path:line:col``, all at once,
exit 2 from the CLI, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.loading.catalog import ProfileCatalog
from advisor.loading.errors import InputError
from advisor.loading.resolve import load_scenario

BASE = """\
version: 1
model: llama-3.1-8b
precision: {precision}
cluster:
  gpu: {gpu}
  gpus: 8
traffic:
{traffic}
  prompt_tokens: 1000
  output_tokens: 200
deployment:
  mode: colocated
{deployment}
"""


def _problems(tmp_path: Path, precision: str = "bf16", gpu: str = "h100-sxm",
              traffic: str = "  rate_rps: 5",
              deployment: str = "") -> list[tuple[int, int, str, str]]:
    path = tmp_path / "w.yaml"
    path.write_text(BASE.format(precision=precision, gpu=gpu, traffic=traffic,
                                deployment=deployment))
    with pytest.raises(InputError) as info:
        load_scenario(path, ProfileCatalog())
    return [(p.line, p.col, p.key, p.message) for p in info.value.problems]


def test_rate_and_concurrency_together(tmp_path: Path) -> None:
    (problem,) = _problems(tmp_path, traffic="  rate_rps: 5\n  concurrency: 32")
    assert problem[:3] == (9, 16, "traffic.concurrency")
    assert "either rate_rps (open loop) or concurrency (closed loop), not both" in problem[3]


def test_neither_rate_nor_concurrency(tmp_path: Path) -> None:
    (problem,) = _problems(tmp_path, traffic="  burstiness: 1.0")
    assert problem[:3] == (8, 3, "traffic")
    assert "missing required key 'rate_rps'" in problem[3]


def test_phase_with_both(tmp_path: Path) -> None:
    traffic = ("  concurrency: 8\n  phases:\n    - {name: a, share: 1.0, rate_rps: 2, "
               "concurrency: 4}")
    (problem,) = _problems(tmp_path, traffic=traffic)
    assert problem[2] == "traffic.phases.0.concurrency" and "not both" in problem[3]


@pytest.mark.parametrize(("value", "message"), [
    ("1.0", "must be less than 1, got 1 (number)"),
    ("1.5", "must be less than 1, got 1.5 (number)"),
    ("-0.2", "must be greater than or equal to 0, got -0.2 (number)"),
    ("high", "must be a valid number, got 'high' (string)"),
])
def test_hit_rate_outside_zero_one(tmp_path: Path, value: str, message: str) -> None:
    (problem,) = _problems(tmp_path, traffic=f"  rate_rps: 5\n  prefix_cache_hit_rate: {value}")
    assert problem == (9, 26, "traffic.prefix_cache_hit_rate", message)


def test_shared_prefix_problems_all_reported(tmp_path: Path) -> None:
    both = _problems(tmp_path, traffic="  rate_rps: 5\n  prefix_cache_hit_rate: 0.5\n"
                                       "  shared_prefix_tokens: 200")
    assert [p[2] for p in both] == ["traffic.shared_prefix_tokens"]
    assert "not both" in both[0][3]
    (too_long,) = _problems(tmp_path, traffic="  rate_rps: 5\n  shared_prefix_tokens: 1000")
    assert too_long[:3] == (9, 25, "traffic.shared_prefix_tokens")
    assert "must be shorter than the prompts" in too_long[3]


def test_unknown_weight_format_and_fp4_before_blackwell(tmp_path: Path) -> None:
    (unknown,) = _problems(tmp_path, precision="{weights: int3, kv_cache: bf16}")
    assert unknown[:3] == (3, 22, "precision.weights")
    assert "got 'int3'" in unknown[3]
    (fp4,) = _problems(tmp_path, precision="{weights: fp4, kv_cache: fp8}")
    assert fp4[:3] == (3, 22, "precision.weights")
    assert "need FP4 tensor cores (NVIDIA Blackwell" in fp4[3]
    (word,) = _problems(tmp_path, precision="fp4", gpu="a100-80gb-sxm")
    assert word[:3] == (3, 12, "precision")


def test_fp4_on_blackwell_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(BASE.format(precision="{weights: fp4, kv_cache: fp8}", gpu="b200",
                                traffic="  rate_rps: 5", deployment=""))
    sc = load_scenario(path, ProfileCatalog())
    assert (sc.precision.weights, sc.precision.kv_cache) == ("fp4", "fp8")


def test_engine_limits(tmp_path: Path) -> None:
    over = _problems(tmp_path, deployment="  max_model_len: 200000")
    assert over == [(13, 18, "deployment.max_model_len",
                     "200000 exceeds the context window of llama-3.1-8b (131072 tokens)")]
    short = _problems(tmp_path, deployment="  max_model_len: 512")
    assert short == [(9, 18, "traffic.prompt_tokens",
                      "prompt length 1000 exceeds deployment.max_model_len (512)")]
    several = _problems(tmp_path, deployment="  max_num_seqs: 0\n  gpu_memory_utilization: 2")
    assert [p[2] for p in several] == ["deployment.max_num_seqs",
                                       "deployment.gpu_memory_utilization"]


def test_cli_reports_every_new_problem_and_exits_2(run_cli, tmp_path: Path) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(BASE.format(
        precision="{weights: fp4, kv_cache: int8}", gpu="h100-sxm",
        traffic="  rate_rps: 5\n  concurrency: 8\n  prefix_cache_hit_rate: 1",
        deployment="  max_num_seqs: -1"))
    result = run_cli("recommend", path, exit_code=2)
    lines = [line for line in result.stderr.splitlines() if line.startswith(f"{path}:")]
    # (rate_rps + concurrency is a cross-field check: it runs once the traffic section is
    # valid on its own, as every cross-field check does)
    assert [line.split(": error: ")[1].split(":")[0] for line in lines] == [
        "precision.kv_cache", "traffic.prefix_cache_hit_rate", "deployment.max_num_seqs"]
    assert "Traceback" not in result.stderr


def test_init_template_offers_every_new_key_and_they_validate(tmp_path: Path) -> None:
    """The `init` template comments each #16 key; uncommented (one of each alternative), the
    file validates and the values arrive in the scenario."""
    from advisor.cli.init_cmd import render_workload

    catalog = ProfileCatalog()
    text = render_workload(model_ref="llama-3.1-8b", model=catalog.model("llama-3.1-8b"),
                           gpu_ref="h100-sxm", gpu=catalog.gpu("h100-sxm"), gpus=8,
                           precision="bf16", tensor_parallel=1, fits=True)
    for key in ("precision: {weights", "price_per_gpu_hour", "concurrency",
                "prefix_cache_hit_rate", "shared_prefix_tokens", "max_num_seqs",
                "max_model_len", "gpu_memory_utilization"):
        assert f"# {key}" in text, key
    edited = (text.replace("precision: bf16 ", "# precision: bf16 ")
              .replace("# precision: {weights", "precision: {weights")
              .replace("  rate_rps: 10 ", "  # rate_rps: 10 ")
              .replace("# price_per_gpu_hour", "price_per_gpu_hour")
              .replace("# concurrency", "concurrency")
              .replace("# prefix_cache_hit_rate", "prefix_cache_hit_rate")
              .replace("# max_num_seqs", "max_num_seqs")
              .replace("# max_model_len", "max_model_len")
              .replace("# gpu_memory_utilization", "gpu_memory_utilization"))
    path = tmp_path / "workload.yaml"
    path.write_text(edited)
    sc = load_scenario(path, catalog)
    phase = sc.phases[0]
    assert (sc.precision.weights, sc.precision.kv_cache) == ("fp8", "bf16")
    assert sc.cluster.usd_per_gpu_hour == 2.5
    assert phase.concurrency == 64 and phase.closed_loop is not None
    assert phase.prefix_cache_hit_rate == 0.3
    assert sc.deployment is not None and sc.deployment.max_model_len == 32768
    assert sc.engine.max_num_seqs(sc.cluster.gpu) == 256 and sc.policy.memory_fraction == 0.9
