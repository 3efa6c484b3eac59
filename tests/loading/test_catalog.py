"""ProfileCatalog and the profile schema: bundled profiles, provenance, lookups, errors."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor.core.engine import EngineSpec
from advisor.core.hardware import GpuSpec, LinkSpec
from advisor.core.model_arch import ModelSpec
from advisor.loading.catalog import (
    KINDS,
    ProfileCatalog,
    ProfileInvalidError,
    ProfileNotFoundError,
    builtin_profiles_dir,
)
from advisor.loading.profile_schema import GpuProfile, LinkProfile, ModelProfile

VALUE_KINDS = {"datasheet", "empirical", "derived", "estimate"}
BUILTIN = builtin_profiles_dir()


@pytest.fixture(scope="module")
def catalog() -> ProfileCatalog:
    """Built-in profiles only (the user's PD_ADVISOR_PROFILES is ignored)."""
    return ProfileCatalog(env={})


def _builtin_files(kind: str) -> list[Path]:
    return sorted((BUILTIN / kind).glob("*.yaml"))


def _write(path: Path, data: dict[str, Any] | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False),
                    encoding="utf-8")
    return path


def _builtin_data(kind: str, profile_id: str) -> dict[str, Any]:
    return yaml.safe_load((BUILTIN / kind / f"{profile_id}.yaml").read_text(encoding="utf-8"))


# ---- the bundled set ----------------------------------------------------------------------
def test_builtin_directory_found() -> None:
    assert (BUILTIN / "gpus" / "h100-sxm.yaml").is_file()


EXPECTED_IDS = {
    "gpus": {"a100-40gb-sxm", "a100-80gb-sxm", "a100-80gb-pcie", "h100-sxm", "h100-pcie",
             "h200-sxm", "b200", "l40s", "l4", "mi300x", "h20", "gb200", "mi325x", "a10g"},
    "interconnects": {"nvlink3", "nvlink4", "nvlink5", "pcie4", "pcie5", "pcie6", "ib-hdr-200",
                      "ib-ndr-400", "ib-xdr-800", "roce-100", "roce-200", "roce-400",
                      "eth-25", "eth-100", "efa-p4d", "efa-p5", "infinity-fabric"},
    "models": {"llama-2-7b", "llama-2-70b", "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b",
               "mistral-7b", "mixtral-8x7b", "mixtral-8x22b", "qwen2.5-7b", "qwen2.5-32b",
               "qwen2.5-72b", "qwen3-8b", "qwen3-32b", "qwen3-235b-a22b", "deepseek-v3",
               "gpt-oss-120b", "gpt-oss-20b", "opt-13b", "opt-66b", "opt-175b",
               "qwen3-30b-a3b"},
    "engines": {"vllm", "vllm-v0", "sglang", "sglang-0.3", "trtllm", "trtllm-legacy"},
}


@pytest.mark.parametrize("kind", KINDS)
def test_expected_profiles_are_bundled(catalog: ProfileCatalog, kind: str) -> None:
    assert EXPECTED_IDS[kind] <= set(catalog.ids(kind))


@pytest.mark.parametrize(("kind", "path"), [(k, p) for k in KINDS for p in _builtin_files(k)],
                         ids=lambda v: v if isinstance(v, str) else v.stem)
def test_every_bundled_profile_loads(catalog: ProfileCatalog, kind: str, path: Path) -> None:
    profile, found = catalog.raw(kind, path.stem)
    assert found == path
    assert profile.id == path.stem
    spec = {"gpus": catalog.gpu, "interconnects": catalog.link, "models": catalog.model,
            "engines": catalog.engine}[kind](path.stem)
    assert isinstance(spec, {"gpus": GpuSpec, "interconnects": LinkSpec,
                             "models": ModelSpec, "engines": EngineSpec}[kind])


def _walk_numbers(node: Any, where: str, in_architecture: bool = False) -> list[str]:
    """Problems: numbers outside a {value, kind, source} mapping (prices add ``as_of``), or
    missing provenance."""
    problems: list[str] = []
    if isinstance(node, dict):
        if "value" in node:
            if set(node) - {"as_of"} != {"value", "kind", "source"}:  # as_of: prices (#16)
                problems.append(f"{where}: keys {sorted(node)}")
            if node.get("kind") not in VALUE_KINDS:
                problems.append(f"{where}: kind {node.get('kind')!r}")
            source = node.get("source")
            if not isinstance(source, str) or not source.strip():
                problems.append(f"{where}: empty source")
            return problems
        if where.endswith("architecture") or {"kind", "source"} <= set(node):
            # one provenance for the whole block (a model's architecture, an engine's
            # launch-default table and feature list)
            in_architecture = True
            if node.get("kind") not in VALUE_KINDS:
                problems.append(f"{where}: kind {node.get('kind')!r}")
            if not str(node.get("source", "")).strip():
                problems.append(f"{where}: empty source")
        for key, value in node.items():
            problems += _walk_numbers(value, f"{where}.{key}", in_architecture)
    elif isinstance(node, (int, float)) and not isinstance(node, bool) and not in_architecture:
        problems.append(f"{where}: bare number {node!r} without kind/source")
    return problems


@pytest.mark.parametrize(("kind", "path"), [(k, p) for k in KINDS for p in _builtin_files(k)],
                         ids=lambda v: v if isinstance(v, str) else v.stem)
def test_every_number_has_kind_and_source(kind: str, path: Path) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert _walk_numbers(data, path.stem) == []


def test_walker_catches_missing_provenance() -> None:
    bad = {"id": "x", "bw": {"value": 1, "kind": "guess", "source": " "}, "n": 3}
    assert len(_walk_numbers(bad, "x")) == 3


def test_estimates_explain_themselves(catalog: ProfileCatalog) -> None:
    """Every ``kind: estimate`` says why (a source of some length, not just a tag)."""
    for kind in ("gpus", "interconnects"):
        for profile_id in catalog.ids(kind):
            profile, _ = catalog.raw(kind, profile_id)
            for key, number in profile.sourced_items():
                if number.kind == "estimate":
                    assert len(number.source) >= 30, f"{profile_id}.{key}"


# ---- dense peaks, per-direction links (docs/sources.md#dense-and-per-direction) -----------
DENSE_PEAKS_TFLOPS = {
    # id: (BF16 dense, FP8 dense or None)
    "a100-40gb-sxm": (312, None), "a100-80gb-sxm": (312, None), "a100-80gb-pcie": (312, None),
    "h100-sxm": (989, 1979), "h100-pcie": (756.5, 1513), "h200-sxm": (989, 1979),
    "h20": (148, 296), "l40s": (362.05, 733), "l4": (121, 242), "b200": (2250, 4500),
    "gb200": (2500, 5000), "mi300x": (1307.4, 2614.9), "mi325x": (1307.4, 2614.9),
    "a10g": (70, None),
}


@pytest.mark.parametrize(("gpu_id", "peaks"), sorted(DENSE_PEAKS_TFLOPS.items()))
def test_gpu_peaks_are_dense(catalog: ProfileCatalog, gpu_id: str,
                             peaks: tuple[float, float | None]) -> None:
    gpu = catalog.gpu(gpu_id)
    bf16, fp8 = peaks
    assert gpu.bf16_flops_per_s == pytest.approx(bf16 * 1e12)
    if fp8 is None:
        assert gpu.fp8_flops_per_s is None
        assert not gpu.has_fp8_compute
    else:
        assert gpu.fp8_flops_per_s == pytest.approx(fp8 * 1e12)


def test_h100_uses_dense_not_sparse(catalog: ProfileCatalog) -> None:
    assert catalog.gpu("h100-sxm").bf16_flops_per_s == 989e12


@pytest.mark.parametrize(("gpu_id", "tb_per_s", "memory_bytes"), [
    ("a100-80gb-sxm", 2.039, 80 * 2**30), ("h100-sxm", 3.35, 80 * 2**30),
    ("h200-sxm", 4.8, 151_397_597_184), ("b200", 7.7, 180 * 2**30), ("mi300x", 5.3, 192 * 2**30),
    ("l40s", 0.864, 46_068 * 2**20),
])
def test_gpu_memory(catalog: ProfileCatalog, gpu_id: str, tb_per_s: float,
                    memory_bytes: int) -> None:
    gpu = catalog.gpu(gpu_id)
    assert gpu.memory_bandwidth_bytes_per_s == pytest.approx(tb_per_s * 1e12)
    assert gpu.memory_bytes == memory_bytes


@pytest.mark.parametrize(("gpu_id", "bf16", "fp8"), [
    ("h100-sxm", 295, 591), ("h200-sxm", 206, 412), ("l40s", 419, 848), ("mi300x", 247, 493),
    ("a100-80gb-sxm", 153, 153), ("b200", 292, 584), ("h20", 37, 74),
])
def test_ridge_points_match_hardware_table(catalog: ProfileCatalog, gpu_id: str, bf16: float,
                                           fp8: float) -> None:
    gpu = catalog.gpu(gpu_id)
    assert gpu.ridge_point_flops_per_byte("bf16") == pytest.approx(bf16, abs=1)
    assert gpu.ridge_point_flops_per_byte("fp8") == pytest.approx(fp8, abs=1)


@pytest.mark.parametrize(("link_id", "gb_per_s"), [
    ("nvlink3", 300), ("nvlink4", 450), ("nvlink5", 900), ("pcie4", 32), ("pcie5", 64),
    ("pcie6", 128), ("ib-hdr-200", 25), ("ib-ndr-400", 50), ("ib-xdr-800", 100),
    ("roce-100", 12.5), ("roce-200", 25), ("roce-400", 50), ("eth-25", 3.125),
    ("eth-100", 12.5), ("efa-p4d", 12.5), ("efa-p5", 12.5), ("infinity-fabric", 64),
])
def test_link_bandwidth_is_per_direction_bytes(catalog: ProfileCatalog, link_id: str,
                                               gb_per_s: float) -> None:
    assert catalog.link(link_id).bandwidth_bytes_per_s == pytest.approx(gb_per_s * 1e9)


@pytest.mark.parametrize(("link_id", "per_node", "node_gb_per_s"), [
    ("ib-ndr-400", 8, 400), ("roce-400", 8, 400), ("ib-xdr-800", 8, 800),
    ("eth-25", 1, 3.125),           # DistServe's testbed: one 25 Gb/s link per node
    ("eth-100", 1, 12.5), ("efa-p4d", 4, 50), ("efa-p5", 32, 400),
])
def test_nics_per_node_defaults(catalog: ProfileCatalog, link_id: str, per_node: int,
                                node_gb_per_s: float) -> None:
    """One NIC per GPU for the rail-optimised RDMA fabrics, per node for plain Ethernet; the
    EFA profiles keep their per-node totals (AWS: 4 x 100G on p4d, 32 x 100G on p5)."""
    link = catalog.link(link_id)
    assert link.default_nics_per_node(8) == per_node
    assert per_node * link.bandwidth_bytes_per_s == pytest.approx(node_gb_per_s * 1e9)


def test_link_efficiencies(catalog: ProfileCatalog) -> None:
    assert catalog.link("nvlink4").efficiency == 0.65
    assert catalog.link("ib-ndr-400").efficiency == 0.7
    # plain TCP reaches a smaller share of line rate than RDMA
    for tcp in ("eth-25", "eth-100"):
        assert catalog.link(tcp).efficiency < catalog.link("roce-100").efficiency


def test_gpu_link_ids_resolve(catalog: ProfileCatalog) -> None:
    links = set(catalog.ids("interconnects"))
    for gpu_id in catalog.ids("gpus"):
        profile = catalog.raw("gpus", gpu_id)[0]
        assert profile.intra_node in links, gpu_id
        assert profile.host_link in links, gpu_id


def test_efficiency_defaults(catalog: ProfileCatalog) -> None:
    """The published starting points (A100 BF16 prefill MFU 0.6 from TensorRT-LLM @ 138f96d4
    performance.md S2/S3; Hopper FP8 0.45 from TensorRT-LLM @ 00f37686 perf-overview T1-T4;
    docs/sources.md#efficiency-defaults), and sane ranges after calibration."""
    a100 = catalog.gpu("a100-80gb-sxm").efficiency
    assert a100.prefill_compute_efficiency_bf16 == 0.6
    assert catalog.gpu("h100-sxm").efficiency.prefill_compute_efficiency_fp8 == 0.45
    for gpu_id in catalog.ids("gpus"):
        gpu = catalog.gpu(gpu_id)
        for eff in [gpu.efficiency, *gpu.engine_efficiency.values()]:
            assert 0.3 <= eff.prefill_compute_efficiency_bf16 <= 0.8, gpu_id
            assert 0.3 <= eff.prefill_compute_efficiency_fp8 <= 0.8, gpu_id
            assert 0.4 <= eff.decode_bandwidth_efficiency <= 0.9, gpu_id
            assert 0.0 < eff.step_overhead_s <= 0.05, gpu_id
        if not gpu.has_fp8_compute:  # FP8 efficiency unused: kept equal to BF16
            assert (gpu.efficiency.prefill_compute_efficiency_fp8
                    == gpu.efficiency.prefill_compute_efficiency_bf16)


# ---- lookups ------------------------------------------------------------------------------
def test_specs_are_cached(catalog: ProfileCatalog) -> None:
    assert catalog.gpu("h100-sxm") is catalog.gpu("h100-sxm")
    assert catalog.raw("models", "llama-3.1-70b")[0] is catalog.raw("models", "llama-3.1-70b")[0]


def test_loading_everything_is_fast() -> None:
    fresh = ProfileCatalog(env={})
    start = time.perf_counter()
    for kind in KINDS:
        for profile_id in fresh.ids(kind):
            fresh.raw(kind, profile_id)[0].to_spec()
    assert time.perf_counter() - start < 3.0


def test_user_dir_overrides_builtin(tmp_path: Path) -> None:
    data = _builtin_data("gpus", "h100-sxm")
    data["memory_bandwidth_bytes_per_s"]["value"] = 3.0e12
    data["memory_bandwidth_bytes_per_s"]["source"] = "my measurement"
    _write(tmp_path / "gpus" / "h100-sxm.yaml", data)

    via_arg = ProfileCatalog(extra_dirs=[tmp_path], env={})
    assert via_arg.gpu("h100-sxm").memory_bandwidth_bytes_per_s == 3.0e12
    assert via_arg.origin(via_arg.path_of("gpus", "h100-sxm")) == str(tmp_path)
    assert via_arg.origin(via_arg.path_of("gpus", "h200-sxm")) == "built-in"

    via_env = ProfileCatalog(env={"PD_ADVISOR_PROFILES": str(tmp_path)})
    assert via_env.gpu("h100-sxm").memory_bandwidth_bytes_per_s == 3.0e12

    builtin = ProfileCatalog(env={})
    assert builtin.gpu("h100-sxm").memory_bandwidth_bytes_per_s == 3.35e12


def test_search_order_arg_then_env(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    for root, name in ((first, "First"), (second, "Second")):
        data = _builtin_data("interconnects", "ib-ndr-400")
        data["name"] = name
        _write(root / "interconnects" / "ib-ndr-400.yaml", data)
    env = {"PD_ADVISOR_PROFILES": os.pathsep.join([str(second), str(tmp_path / "missing")])}
    assert ProfileCatalog(extra_dirs=[first], env=env).link("ib-ndr-400").name == "First"
    assert ProfileCatalog(env=env).link("ib-ndr-400").name == "Second"
    env2 = {"PD_ADVISOR_PROFILES": os.pathsep.join([str(first), str(second)])}
    assert ProfileCatalog(env=env2).link("ib-ndr-400").name == "First"


def test_user_dir_adds_new_ids(tmp_path: Path) -> None:
    data = _builtin_data("models", "llama-3.1-8b")
    data["id"] = "my-8b"
    _write(tmp_path / "models" / "my-8b.yaml", data)
    catalog = ProfileCatalog(extra_dirs=[tmp_path], env={})
    assert "my-8b" in catalog.ids("models")
    assert "llama-3.1-8b" in catalog.ids("models")
    assert catalog.model("my-8b").kv_bytes_per_token("bf16") == 131_072


def test_path_reference(tmp_path: Path, catalog: ProfileCatalog) -> None:
    data = _builtin_data("models", "llama-3.1-8b")
    data["id"] = "anything-goes"  # ids need not match the file name for path references
    path = _write(tmp_path / "custom.yaml", data)
    model = catalog.model(str(path))
    assert model.id == "anything-goes"
    profile, found = catalog.raw("models", str(path))
    assert isinstance(profile, ModelProfile)
    assert found == path.resolve()
    # a built-in file named by path also works
    assert catalog.gpu(str(BUILTIN / "gpus" / "l4.yaml")).id == "l4"


def test_relative_path_reference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 catalog: ProfileCatalog) -> None:
    _write(tmp_path / "link.yml", _builtin_data("interconnects", "nvlink4"))
    monkeypatch.chdir(tmp_path)
    assert catalog.link("link.yml").bandwidth_bytes_per_s == 4.5e11


def test_missing_path(catalog: ProfileCatalog, tmp_path: Path) -> None:
    with pytest.raises(ProfileNotFoundError) as info:
        catalog.gpu(str(tmp_path / "nope.yaml"))
    assert "nope.yaml" in str(info.value)


def test_unknown_id_suggests_close_matches(catalog: ProfileCatalog) -> None:
    with pytest.raises(ProfileNotFoundError) as info:
        catalog.model("llama-3.1-7b")
    err = info.value
    assert isinstance(err, LookupError)
    assert err.kind == "models" and err.ref == "llama-3.1-7b"
    assert "llama-3.1-70b" in err.suggestions
    assert str(err).startswith("unknown model profile 'llama-3.1-7b'; did you mean: ")

    with pytest.raises(ProfileNotFoundError) as info:
        catalog.gpu("h100")
    assert set(info.value.suggestions) >= {"h100-sxm", "h100-pcie"}
    assert "unknown GPU profile 'h100'" in str(info.value)


def test_unknown_id_without_matches(catalog: ProfileCatalog) -> None:
    with pytest.raises(ProfileNotFoundError) as info:
        catalog.link("qqqqqqqq")
    assert info.value.suggestions == []
    assert "unknown interconnect profile 'qqqqqqqq'" in str(info.value)


def test_unknown_kind_is_rejected(catalog: ProfileCatalog) -> None:
    with pytest.raises(ValueError, match="unknown profile kind"):
        catalog.ids("cpus")


def test_kind_of(catalog: ProfileCatalog, tmp_path: Path) -> None:
    assert catalog.kind_of("h100-sxm") == ["gpus"]
    assert catalog.kind_of("nvlink4") == ["interconnects"]
    assert catalog.kind_of("no-such") == []
    path = _write(tmp_path / "thing.yaml", _builtin_data("models", "opt-13b"))
    assert catalog.kind_of(str(path)) == ["models"]


def test_engine_overrides_merge_with_defaults(tmp_path: Path) -> None:
    data = _builtin_data("gpus", "h100-sxm")
    data["engines"] = {"trtllm": {"step_overhead_s": {
        "value": 0.002, "kind": "empirical", "source": "test"}}}
    _write(tmp_path / "gpus" / "h100-sxm.yaml", data)
    gpu = ProfileCatalog(extra_dirs=[tmp_path], env={}).gpu("h100-sxm")
    trt = gpu.efficiency_for("trtllm")
    assert trt.step_overhead_s == 0.002
    assert trt.decode_bandwidth_efficiency == gpu.efficiency.decode_bandwidth_efficiency
    assert gpu.efficiency_for("vllm") == gpu.efficiency


# ---- malformed profiles ---------------------------------------------------------------------
def _invalid(tmp_path: Path, kind: str, text: str, name: str = "bad") -> ProfileInvalidError:
    _write(tmp_path / kind / f"{name}.yaml", text)
    catalog = ProfileCatalog(extra_dirs=[tmp_path], env={})
    with pytest.raises(ProfileInvalidError) as info:
        catalog.raw(kind, name)
    return info.value


def test_invalid_value_names_file_key_and_line(tmp_path: Path) -> None:
    text = (BUILTIN / "gpus" / "h100-sxm.yaml").read_text(encoding="utf-8")
    text = text.replace("id: h100-sxm", "id: bad").replace(
        "    value: 0.6\n", "    value: fast\n")
    err = _invalid(tmp_path, "gpus", text)
    message = str(err)
    assert str(tmp_path / "gpus" / "bad.yaml") in message
    assert "efficiency.decode_bandwidth_efficiency.value" in message
    assert err.path == tmp_path / "gpus" / "bad.yaml"
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "value: fast" in ln)
    assert any(p.startswith(f"{line}:") for p in err.problems), err.problems


def test_all_problems_are_reported(tmp_path: Path) -> None:
    data = _builtin_data("interconnects", "nvlink4")
    data["id"] = "bad"
    data["efficiency"]["value"] = 1.5
    data["bandwidth_bytes_per_s"]["kind"] = "guess"
    data["colour"] = "green"
    del data["latency_s"]
    err = _invalid(tmp_path, "interconnects", yaml.safe_dump(data, sort_keys=False))
    joined = "\n".join(err.problems)
    for key in ("efficiency.value", "bandwidth_bytes_per_s.kind", "colour", "latency_s"):
        assert key in joined
    assert len(err.problems) == 4


def test_blank_source_is_rejected(tmp_path: Path) -> None:
    data = _builtin_data("interconnects", "pcie4")
    data["id"] = "bad"
    data["latency_s"]["source"] = "  "
    err = _invalid(tmp_path, "interconnects", yaml.safe_dump(data))
    assert "latency_s.source" in str(err)


def test_duplicate_key_is_rejected(tmp_path: Path) -> None:
    text = (BUILTIN / "interconnects" / "pcie5.yaml").read_text(encoding="utf-8")
    text = text.replace("id: pcie5", "id: bad") + "scope: host\n"
    err = _invalid(tmp_path, "interconnects", text)
    assert "duplicate key 'scope'" in str(err)


def test_yaml_syntax_error(tmp_path: Path) -> None:
    err = _invalid(tmp_path, "models", "id: bad\nname: [unclosed\n")
    assert "YAML error" in str(err)
    assert err.problems[0][0].isdigit()


def test_non_mapping_file(tmp_path: Path) -> None:
    err = _invalid(tmp_path, "models", "- just\n- a list\n")
    assert "expected a mapping" in str(err)


def test_id_must_match_file_name(tmp_path: Path) -> None:
    data = _builtin_data("gpus", "l4")
    err = _invalid(tmp_path, "gpus", yaml.safe_dump(data), name="my-l4")
    assert "id: 'l4' does not match the file name 'my-l4.yaml'" in str(err)


def test_model_consistency_checks(tmp_path: Path) -> None:
    data = _builtin_data("models", "deepseek-v3")
    data["id"] = "bad"
    del data["architecture"]["mla"]
    err = _invalid(tmp_path, "models", yaml.safe_dump(data))
    assert "architecture" in str(err) and "mla" in str(err)

    data = _builtin_data("models", "gpt-oss-20b")
    data["id"] = "bad2"
    data["architecture"]["sliding_window_layers"] = 30
    err = _invalid(tmp_path, "models", yaml.safe_dump(data), name="bad2")
    assert "sliding_window_layers" in str(err)

    data = _builtin_data("models", "llama-3.1-8b")
    data["id"] = "bad3"
    data["architecture"]["num_layers"] = 32.5
    err = _invalid(tmp_path, "models", yaml.safe_dump(data), name="bad3")
    assert "architecture.num_layers" in str(err)


def test_numeric_strings_and_null_fp8(tmp_path: Path) -> None:
    """PyYAML reads ``1e12`` as a string: accept it. ``null`` FP8 means no FP8 compute."""
    text = (BUILTIN / "gpus" / "h100-sxm.yaml").read_text(encoding="utf-8")
    text = text.replace("id: h100-sxm", "id: odd").replace("value: 9.89e+14", "value: 989e12")
    text = text.replace("value: 1.979e+15", "value: null")
    _write(tmp_path / "gpus" / "odd.yaml", text)
    gpu = ProfileCatalog(extra_dirs=[tmp_path], env={}).gpu("odd")
    assert gpu.bf16_flops_per_s == 989e12
    assert gpu.fp8_flops_per_s is None
    assert gpu.peak_flops_per_s("fp8") == 989e12


def test_profile_models_forbid_extra_keys() -> None:
    for model in (GpuProfile, LinkProfile, ModelProfile):
        assert model.model_config.get("extra") == "forbid"
