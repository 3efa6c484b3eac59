"""Workload file → Scenario: defaults, phases, policy precedence, profiles, cross checks."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest

from advisor.core.scenario import Policy, Scenario
from advisor.loading.catalog import ProfileCatalog
from advisor.loading.config_discovery import find_config
from advisor.loading.errors import InputError
from advisor.loading.resolve import load_many, load_scenario, read_document

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = REPO_ROOT / "examples"

BASE = """\
version: 1
model: {model}
precision: bf16
cluster:
  gpu: h100-sxm
  gpus: {gpus}
{cluster_extra}traffic:
  rate_rps: 10
  prompt_tokens: 1000
  output_tokens: 300
{tail}"""


@pytest.fixture
def catalog() -> ProfileCatalog:
    """Built-in profiles only (ignores $PD_ADVISOR_PROFILES)."""
    return ProfileCatalog(env={})


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project root (holds .git) so the config search never leaves the tmp dir."""
    (tmp_path / ".git").mkdir()
    return tmp_path


def _write(directory: Path, text: str, name: str = "w.yaml") -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _workload(directory: Path, *, model: str = "llama-3.1-8b", gpus: int = 8,
              cluster_extra: str = "", tail: str = "") -> Path:
    return _write(directory, BASE.format(model=model, gpus=gpus, cluster_extra=cluster_extra,
                                         tail=tail))


def _messages(exc: InputError) -> list[str]:
    return [f"{p.line}:{p.col}: {p.key}: {p.message}" for p in exc.problems]


# ---- examples -------------------------------------------------------------------------------
@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_every_example_resolves(path: Path, catalog: ProfileCatalog) -> None:
    scenario = load_scenario(path, catalog)
    assert isinstance(scenario, Scenario)
    assert math.isclose(sum(p.share for p in scenario.phases), 1.0)
    assert scenario.deployment is not None


def test_single_phase_defaults(catalog: ProfileCatalog) -> None:
    s = load_scenario(EXAMPLES / "chat-8b-single-node.yaml", catalog)
    assert s.name == "chat-8b-single-node" and s.model.id == "llama-3.1-8b"
    assert s.precision == "bf16" and s.engine.name == "vllm" and s.engine.id == "vllm"
    assert s.cluster.gpu.id == "h100-sxm" and s.cluster.gpus == 8
    assert s.cluster.gpus_per_node == 8  # from the GPU profile
    assert s.cluster.intra_node.id == "nvlink4"  # from the GPU profile
    assert s.cluster.inter_node is None and s.cluster.nodes == 1
    (phase,) = s.phases
    assert (phase.name, phase.share, phase.rate_rps, phase.burstiness) == ("all", 1.0, 10.0, 1.0)
    assert math.isclose(phase.prompt_tokens.mean, 1000)
    assert phase.prompt_tokens.quantile(0.5) == pytest.approx(800, rel=0.1)
    assert phase.prompt_tokens.p95 == pytest.approx(2500, rel=0.1)
    assert s.slo.ttft_ms == 500 and s.slo.tpot_ms == 25 and s.slo.percentile == 95
    assert s.autoscaling is False and s.router == "least-loaded"
    assert s.deployment.mode == "colocated" and s.deployment.tensor_parallel == 1
    assert s.chunk_tokens == 512
    assert s.policy == Policy()
    assert s.extras["source"] == str(EXAMPLES / "chat-8b-single-node.yaml")


def test_phases_inherit_and_override(catalog: ProfileCatalog) -> None:
    s = load_scenario(EXAMPLES / "day-night-shift.yaml", catalog)
    day, night = s.phases
    assert (day.name, day.share, day.rate_rps, day.burstiness) == ("day-chat", 0.6, 20.0, 1.0)
    assert (night.name, night.share, night.rate_rps, night.burstiness) == (
        "night-rag", 0.4, 4.0, 1.5)
    assert day.prompt_tokens.sigma == 0.0 and day.prompt_tokens.mean == 800  # constant
    assert night.prompt_tokens.sigma > 0 and night.prompt_tokens.mean == pytest.approx(6000)
    assert night.output_tokens.mean == 150
    assert s.deployment.mode == "disaggregated" and s.deployment.chunked_prefill is False
    assert s.chunk_tokens is None  # chunked prefill off: nothing pinned
    assert s.cluster.inter_node.id == "ib-ndr-400" and s.cluster.nodes == 4


def test_phase_inherits_base_values(project: Path, catalog: ProfileCatalog) -> None:
    path = _write(project, """\
version: 1
model: llama-3.1-8b
precision: fp8
cluster: {gpu: h100-sxm, gpus: 8}
traffic:
  rate_rps: 5
  burstiness: 2
  prompt_tokens: {mean: 1000, p50: 900, p95: 2000, max: 4000}
  output_tokens: 100
  phases:
    - {name: a, share: 0.25}
    - {name: b, share: 0.75, rate_rps: 7, output_tokens: 50}
""")
    a, b = load_scenario(path, catalog).phases
    assert (a.rate_rps, a.burstiness, a.output_tokens.mean) == (5.0, 2.0, 100.0)
    assert (b.rate_rps, b.burstiness, b.output_tokens.mean) == (7.0, 2.0, 50.0)
    assert a.prompt_tokens == b.prompt_tokens and a.prompt_tokens.max_tokens == 4000


# ---- policy and .pd-advisor.yaml ----------------------------------------------------------
def test_policy_precedence(project: Path, catalog: ProfileCatalog) -> None:
    _write(project, "version: 1\npolicy:\n  min_disagg_gain: 0.3\n  split_tolerance: 0.2\n",
           ".pd-advisor.yaml")
    path = _workload(project / "team", tail="policy:\n  split_tolerance: 0.05\n")
    s = load_scenario(path, catalog)
    assert s.policy.min_disagg_gain == 0.3  # from .pd-advisor.yaml
    assert s.policy.split_tolerance == 0.05  # the workload wins
    assert s.policy.max_rounding_loss == Policy().max_rounding_loss  # default
    assert s.extras["config"] == str(project / ".pd-advisor.yaml")


def test_find_config_walks_up_and_stops_at_the_project_root(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    workload = _workload(root / "a" / "b")
    assert find_config(workload) is None
    _write(tmp_path, "version: 1\n", ".pd-advisor.yaml")  # above the root: never used
    assert find_config(workload) is None
    _write(root, "version: 1\n", ".pd-advisor.yaml")  # at the root: used
    assert find_config(workload) == root / ".pd-advisor.yaml"
    _write(root / "a", "version: 1\n", ".pd-advisor.yaml")  # nearer one wins
    assert find_config(workload) == root / "a" / ".pd-advisor.yaml"


def test_find_config_stops_at_mercurial_root(tmp_path: Path) -> None:
    _write(tmp_path, "version: 1\n", ".pd-advisor.yaml")
    (tmp_path / "hg" / ".hg").mkdir(parents=True)
    assert find_config(_workload(tmp_path / "hg" / "x")) is None


def test_bad_config_problems_are_located_in_the_config(project: Path,
                                                       catalog: ProfileCatalog) -> None:
    config = _write(project, "version: 1\npolicy:\n  memory_fraction: 0\n", ".pd-advisor.yaml")
    path = _workload(project)
    with pytest.raises(InputError) as info:
        load_scenario(path, catalog)
    (problem,) = info.value.problems
    assert Path(problem.path).resolve() == config.resolve()
    assert (problem.line, problem.col, problem.key) == (3, 20, "policy.memory_fraction")


def test_config_with_unsupported_version(project: Path, catalog: ProfileCatalog) -> None:
    _write(project, "version: 2\n", ".pd-advisor.yaml")
    with pytest.raises(InputError) as info:
        load_scenario(_workload(project), catalog)
    assert [p.format().split(":", 1)[1] for p in info.value.problems] == [
        "1:10: error: version 2 is not supported; supported versions are 1"]


# ---- profiles -----------------------------------------------------------------------------
def test_model_path_is_relative_to_the_workload(project: Path, catalog: ProfileCatalog,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    target = project / "team" / "models" / "my-8b.yaml"
    target.parent.mkdir(parents=True)
    shutil.copy(REPO_ROOT / "profiles" / "models" / "llama-3.1-8b.yaml", target)
    path = _workload(project / "team", model="models/my-8b.yaml")
    monkeypatch.chdir(project)  # not the workload's directory
    assert load_scenario(path, catalog).model.num_layers == 32


def test_unknown_ids_get_suggestions_at_their_keys(project: Path,
                                                   catalog: ProfileCatalog) -> None:
    path = _workload(project, model="lama-3.1-8b", gpus=16,
                     cluster_extra="  inter_node: ib-ndr\n  intra_node: nvlnk4\n")
    with pytest.raises(InputError) as info:
        load_scenario(path, catalog)
    messages = _messages(info.value)
    assert messages[0].startswith("2:8: model: unknown model profile 'lama-3.1-8b'; "
                                  "did you mean: llama-3.1-8b")
    assert messages[1].startswith("7:15: cluster.inter_node: unknown interconnect profile "
                                  "'ib-ndr'; did you mean: ")
    assert messages[2].startswith("8:15: cluster.intra_node: unknown interconnect profile "
                                  "'nvlnk4'; did you mean: nvlink4")


def test_profile_lookups_still_run_when_the_schema_fails(project: Path,
                                                         catalog: ProfileCatalog) -> None:
    path = _workload(project, model="nope", tail="slo: {ttft_ms: -1}\n")
    with pytest.raises(InputError) as info:
        load_scenario(path, catalog)
    keys = [p.key for p in info.value.problems]
    assert keys == ["model", "slo.ttft_ms"]


def test_user_profiles_directory(tmp_path: Path, project: Path) -> None:
    models = tmp_path / "extra" / "models"
    models.mkdir(parents=True)
    text = (REPO_ROOT / "profiles" / "models" / "llama-3.1-8b.yaml").read_text(encoding="utf-8")
    (models / "in-house-8b.yaml").write_text(
        text.replace("id: llama-3.1-8b", "id: in-house-8b"), encoding="utf-8")
    catalog = ProfileCatalog(extra_dirs=[tmp_path / "extra"], env={})
    assert load_scenario(_workload(project, model="in-house-8b"), catalog).model.id == "in-house-8b"


# ---- cross checks -------------------------------------------------------------------------
def test_gpus_per_node_override_requires_a_nic(project: Path, catalog: ProfileCatalog) -> None:
    path = _workload(project, cluster_extra="  gpus_per_node: 4\n")
    with pytest.raises(InputError) as info:
        load_scenario(path, catalog)
    assert _messages(info.value) == [
        ("6:9: cluster.gpus: 8 GPUs span 2 nodes of 4, but cluster.inter_node is not set; "
        "name the per-GPU NIC (e.g. ib-ndr-400) or use at most 4 GPUs")]


def test_tensor_parallel_must_divide_heads(project: Path, catalog: ProfileCatalog) -> None:
    path = _workload(project, model="qwen2.5-32b", gpus=16,
                     cluster_extra="  inter_node: ib-ndr-400\n",
                     tail="deployment:\n  mode: colocated\n  tensor_parallel: 16\n")
    with pytest.raises(InputError) as info:
        load_scenario(path, catalog)
    assert _messages(info.value) == [
        "14:20: deployment.tensor_parallel: 16 does not divide the model's 40 attention heads"]


def test_tensor_parallel_larger_than_cluster(project: Path, catalog: ProfileCatalog) -> None:
    path = _workload(project, tail="deployment:\n  mode: colocated\n  tensor_parallel: 16\n")
    with pytest.raises(InputError) as info:
        load_scenario(path, catalog)
    assert _messages(info.value) == [
        "13:20: deployment.tensor_parallel: 16 exceeds cluster.gpus (8)"]


def test_constant_prompt_beyond_context(project: Path, catalog: ProfileCatalog) -> None:
    path = _write(project, BASE.format(model="qwen3-32b", gpus=8, cluster_extra="", tail="")
                  .replace("prompt_tokens: 1000", "prompt_tokens: 50000"))
    with pytest.raises(InputError) as info:
        load_scenario(path, catalog)
    assert _messages(info.value) == [
        ("9:18: traffic.prompt_tokens: prompt length 50000 exceeds the context window of "
        "qwen3-32b (40960 tokens)")]


def test_problems_from_all_stages_are_sorted(project: Path, catalog: ProfileCatalog) -> None:
    path = _write(project, """\
version: 1
model: llama-3.1-8b
precision: bf16
cluster:
  gpu: h100-sxm
  gpus: 16
  gpus: 16
traffic:
  rate_rps: 0
  prompt_tokens: 1000
  output_tokens: 300
""")
    with pytest.raises(InputError) as info:
        load_scenario(path, catalog)
    assert [(p.line, p.key) for p in info.value.problems] == [
        (6, "cluster.gpus"), (7, "cluster"), (9, "traffic.rate_rps")]


# ---- files --------------------------------------------------------------------------------
def test_byte_order_mark_is_accepted(project: Path, catalog: ProfileCatalog) -> None:
    path = _workload(project)
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert load_scenario(path, catalog).model.id == "llama-3.1-8b"


def test_read_document_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        read_document(tmp_path / "missing.yaml", display="shown.yaml")
    assert info.value.format() == "shown.yaml:1:1: error: file not found"


def test_load_many_keeps_order_and_errors(project: Path, catalog: ProfileCatalog) -> None:
    good = _workload(project)
    results = load_many([good, project / "missing.yaml", good], catalog)
    assert isinstance(results[0], Scenario) and isinstance(results[2], Scenario)
    assert isinstance(results[1], InputError)


# ---- engine profiles (#15) -----------------------------------------------------------------
@pytest.mark.parametrize(("engine", "profile"), [
    ("vllm", "vllm"), ("vllm-v0", "vllm-v0"), ('{name: vllm, version: "0.6.3"}', "vllm-v0"),
    ('{name: vllm, version: "0.11"}', "vllm"), ('{name: sglang, version: "0.3.0"}', "sglang-0.3"),
    ('{name: sglang, version: "0.5.1.post1"}', "sglang"), ('{name: trtllm, version: "1.0"}',
                                                           "trtllm"),
    ('{name: trtllm, version: "0.5"}', "trtllm-legacy"), ("{name: sglang}", "sglang"),
])
def test_engine_selects_its_profile(tmp_path: Path, catalog: ProfileCatalog, engine: str,
                                    profile: str) -> None:
    text = (EXAMPLES / "chat-8b-single-node.yaml").read_text(encoding="utf-8")
    lines = [f"engine: {engine}" if line.startswith("engine:") else line
             for line in text.splitlines()]
    path = tmp_path / "w.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    scenario = load_scenario(path, catalog)
    assert scenario.engine.id == profile
    assert scenario.engine.name == profile.split("-")[0]


# ---- the router (#27) -----------------------------------------------------------------------
@pytest.mark.parametrize(("tail", "router"), [
    ("", "least-loaded"),
    ("operations:\n  router: random\n", "random"),
    ("deployment:\n  mode: colocated\n  router: power-of-two\n", "power-of-two"),
    ("operations:\n  router: round-robin\ndeployment:\n  mode: colocated\n", "round-robin"),
    ("operations:\n  router: round-robin\ndeployment:\n  mode: colocated\n"
     "  router: round-robin\n", "round-robin"),
])
def test_router_from_operations_or_deployment(project: Path, catalog: ProfileCatalog,
                                              tail: str, router: str) -> None:
    """The scenario's router is the deployment's, else operations' (default least-loaded)."""
    s = load_scenario(_workload(project, tail=tail), catalog)
    assert s.router == router


def test_router_given_twice_must_agree(project: Path, catalog: ProfileCatalog) -> None:
    path = _workload(project, tail="operations:\n  router: random\n"
                                   "deployment:\n  mode: colocated\n  router: round-robin\n")
    with pytest.raises(InputError) as err:
        load_scenario(path, catalog)
    assert _messages(err.value) == [
        "15:11: deployment.router: round-robin contradicts operations.router (random); "
        "give the router in one place"]
