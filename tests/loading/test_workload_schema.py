"""The version-1 workload models and their checks (on plain data, no files)."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from advisor.core.scenario import Policy
from advisor.loading import workload_schema as ws
from advisor.loading.errors import describe

GOOD: dict[str, Any] = {
    "version": 1,
    "model": "llama-3.1-70b",
    "precision": "bf16",
    "cluster": {"gpu": "h100-sxm", "gpus": 16, "inter_node": "ib-ndr-400"},
    "traffic": {
        "rate_rps": 12,
        "prompt_tokens": {"mean": 2000, "p95": 6000},
        "output_tokens": {"mean": 300, "p95": 900},
        "phases": [
            {"name": "day", "share": 0.6, "rate_rps": 20, "prompt_tokens": 800},
            {"name": "night", "share": 0.4, "prompt_tokens": {"mean": 6000, "p95": 12000}},
        ],
    },
    "slo": {"ttft_ms": 2000, "tpot_ms": 60},
    "operations": {"autoscaling": False},
    "deployment": {"mode": "colocated", "chunk_tokens": 2048, "tensor_parallel": 4,
                   "prefill_gpus": None},
    "policy": {"min_disagg_gain": 0.2},
}


def _with(path: str, value: Any) -> dict[str, Any]:
    """GOOD with one dotted key replaced (``...`` deletes it)."""
    data = copy.deepcopy(GOOD)
    *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
    node: Any = data
    for part in parents:
        node = node[part]
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return data


def _issues(data: Any) -> list[tuple[str, str]]:
    return [(issue.key, issue.message) for issue in ws.check_workload(data).issues]


def test_good_workload_validates() -> None:
    result = ws.check_workload(GOOD)
    assert result.issues == []
    assert isinstance(result.model, ws.WorkloadV1)
    assert result.model.engine == "vllm"
    assert result.model.traffic.burstiness == 1.0
    assert result.model.slo.percentile == 95
    assert result.model.deployment.chunked_prefill is True


def test_minimal_workload_gets_defaults() -> None:
    data = {"version": 1, "model": "m", "precision": "fp8",
            "cluster": {"gpu": "g", "gpus": 1},
            "traffic": {"rate_rps": 1, "prompt_tokens": 10, "output_tokens": 5}}
    result = ws.check_workload(data)
    assert result.issues == []
    model = result.model
    assert model.slo == ws.Slo() and model.operations.autoscaling is False
    assert model.deployment is None and model.policy.model_dump() == dict.fromkeys(
        model.policy.model_dump())


@pytest.mark.parametrize(("path", "value", "expected"), [
    ("traffic.rate_rps", 0, ("traffic.rate_rps", "must be greater than 0, got 0 (integer)")),
    ("traffic.burstiness", -0.5,
     ("traffic.burstiness", "must be greater than or equal to 0, got -0.5 (number)")),
    ("cluster.gpus", 0, ("cluster.gpus", "must be greater than or equal to 1, got 0 (integer)")),
    ("cluster.gpus", 8.0, ("cluster.gpus", "must be an integer, got 8.0 (a number with a decimal "
                                           "point); write 8")),
    ("cluster.gpus", True, ("cluster.gpus", "must be a valid integer, got true (boolean)")),
    ("slo.ttft_ms", 0, ("slo.ttft_ms", "must be greater than 0, got 0 (integer)")),
    ("slo.tpot_ms", -1, ("slo.tpot_ms", "must be greater than 0, got -1 (integer)")),
    ("slo.percentile", 49, ("slo.percentile",
                            "must be greater than or equal to 50, got 49 (integer)")),
    ("slo.percentile", 99.95, ("slo.percentile",
                               "must be less than or equal to 99.9, got 99.95 (number)")),
    ("slo.ttft_ms", float("inf"), ("slo.ttft_ms", "must be a finite number, got inf (number)")),
    ("traffic.prompt_tokens", 0, ("traffic.prompt_tokens",
                                  "must be greater than or equal to 1, got 0 (integer)")),
    ("traffic.prompt_tokens", "1k", ("traffic.prompt_tokens",
                                     ("expected a token count (an integer >= 1) or a mapping "
                                     "with mean, p50, p95 and/or max"))),
    ("traffic.prompt_tokens.mean", 0.5, ("traffic.prompt_tokens.mean",
                                         "must be greater than or equal to 1, got 0.5 (number)")),
    ("operations.autoscaling", "no", ("operations.autoscaling",
                                      ("must be a valid boolean, got 'no' (string); "
                                      "write true or false"))),
    ("operations.autoscaling", 1, ("operations.autoscaling",
                                   "must be a valid boolean, got 1 (integer)")),
    ("precision", "int3", ("precision", "must be 'bf16', 'fp16', 'fp8', 'fp8-block', 'fp4', "
                                        "'mxfp4' or 'int4', got 'int3' (string)")),
    ("precision", {"weights": "fp6"}, ("precision.weights", "must be 'bf16', 'fp16', 'fp8', "
                                       "'fp8-block', 'fp4', 'mxfp4' or 'int4', got 'fp6' "
                                       "(string)")),
    ("precision", {"weights": "fp8", "kv_cache": "int4"},
     ("precision.kv_cache", "must be 'bf16', 'fp16' or 'fp8', got 'int4' (string)")),
    ("precision", 8, ("precision", "expected a precision word (bf16, fp16, fp8, fp8-block, "
                                   "fp4, mxfp4, int4) or a mapping {weights, kv_cache, experts, "
                                   "attention, dense, lm_head}")),
    ("traffic.concurrency", 0, ("traffic.concurrency",
                                "must be greater than or equal to 1, got 0 (integer)")),
    ("traffic.prefix_cache_hit_rate", 1.0, ("traffic.prefix_cache_hit_rate",
                                            "must be less than 1, got 1 (number)")),
    ("traffic.prefix_cache_hit_rate", -0.1, ("traffic.prefix_cache_hit_rate",
                                             "must be greater than or equal to 0, got -0.1 "
                                             "(number)")),
    ("traffic.shared_prefix_tokens", -1, ("traffic.shared_prefix_tokens",
                                          "must be greater than or equal to 0, got -1 "
                                          "(integer)")),
    ("deployment.max_num_seqs", 0, ("deployment.max_num_seqs",
                                    "must be greater than or equal to 1, got 0 (integer)")),
    ("deployment.max_model_len", "4k", ("deployment.max_model_len",
                                        "must be a valid integer, got '4k' (string)")),
    ("deployment.gpu_memory_utilization", 1.2, ("deployment.gpu_memory_utilization",
                                                "must be less than or equal to 1, got 1.2 "
                                                "(number)")),
    ("cluster.price_per_gpu_hour", 0, ("cluster.price_per_gpu_hour",
                                       "must be greater than 0, got 0 (integer)")),
    ("engine", {"name": "tgi"}, ("engine.name", "must be 'vllm', 'sglang' or 'trtllm', got "
                                                "'tgi' (string)")),
    ("engine", {"name": "vllm", "version": 0.1}, (
        "engine.version", 'must be a valid string, got 0.1 (number); quote the release, e.g. '
                          'version: "0.10"')),
    ("cluster", 8, ("cluster", "expected a mapping, got 8 (integer)")),
    ("traffic.phases", {}, ("traffic.phases", "expected a list, got a mapping")),
    ("traffic.phases", [], ("traffic.phases", "must not be empty")),
    ("traffic.phases.0.share", 0, ("traffic.phases.0.share",
                                   "must be greater than 0, got 0 (integer)")),
    ("model", "", ("model", "must not be empty")),
    ("cluster.gpu", ..., ("cluster", "missing required key 'gpu'")),
    ("deployment.mode", ..., ("deployment", "missing required key 'mode'")),
    ("policy.memory_fraction", 0, ("policy.memory_fraction",
                                   "must be greater than 0, got 0 (integer)")),
    ("policy.max_rounding_loss", 1.5, ("policy.max_rounding_loss",
                                       "must be less than or equal to 1, got 1.5 (number)")),
])
def test_field_problems(path: str, value: Any, expected: tuple[str, str]) -> None:
    assert expected in _issues(_with(path, value))


@pytest.mark.parametrize(("path", "key", "message"), [
    ("slo.tpot", "slo.tpot", "unknown key 'tpot'; did you mean 'tpot_ms'?"),
    ("polcy", "polcy", "unknown key 'polcy'; did you mean 'policy'?"),
    ("cluster.gpus_per_nod", "cluster.gpus_per_nod",
     "unknown key 'gpus_per_nod'; did you mean 'gpus_per_node'?"),
    ("traffic.phases.1.rate", "traffic.phases.1.rate",
     "unknown key 'rate'; did you mean 'rate_rps'?"),
    ("traffic.prompt_tokens.p99", "traffic.prompt_tokens.p99",
     "unknown key 'p99'; did you mean 'p95'?"),
    ("policy.min_disag_gain", "policy.min_disag_gain",
     "unknown key 'min_disag_gain'; did you mean 'min_disagg_gain'?"),
    ("operations.owner", "operations.owner",
     "unknown key 'owner'; allowed keys: autoscaling, router"),
])
def test_unknown_keys_suggest_the_closest(path: str, key: str, message: str) -> None:
    issues = ws.check_workload(_with(path, 1)).issues
    assert [(i.key, i.message, i.at_key) for i in issues] == [(key, message, True)]


def test_version_missing_is_reported_and_the_rest_still_checked() -> None:
    data = _with("version", ...)
    data["slo"]["ttft_ms"] = -1
    assert _issues(data) == [
        ("", "missing required key 'version' (supported: 1)"),
        ("slo.ttft_ms", "must be greater than 0, got -1 (integer)"),
    ]


@pytest.mark.parametrize(("version", "message"), [
    (3, "version 3 is not supported; supported versions are 1"),
    (0, "version 0 is not supported; supported versions are 1"),
    ("1", "version must be an integer (supported: 1), got '1' (string)"),
    (1.0, "version must be an integer (supported: 1), got 1 (number)"),
    (True, "version must be an integer (supported: 1), got true (boolean)"),
])
def test_bad_versions_stop_checking(version: Any, message: str) -> None:
    data = _with("version", version)
    data["slo"]["ttft_ms"] = -1  # not reported: the format of another version is unknown
    result = ws.check_workload(data)
    assert [(i.loc, i.key, i.message) for i in result.issues] == [(("version",), "", message)]


@pytest.mark.parametrize("data", [[1, 2], "text", 5, None])
def test_top_level_must_be_a_mapping(data: Any) -> None:
    (issue,) = ws.check_workload(data).issues
    assert issue.loc == () and issue.message.startswith(
        "the top level of a workload file must be a mapping of keys (version, name, model, ")


# ---- lengths -------------------------------------------------------------------------------
@pytest.mark.parametrize(("stats", "key", "message"), [
    ({"mean": 2000, "p95": 1500}, "p95", "p95 (1500) is below mean (2000); p95 must be >= mean"),
    ({"p50": 800, "p95": 700}, "p95", "p95 (700) is below p50 (800); p95 must be >= p50"),
    ({"mean": 800, "p50": 900}, "p50", ("p50 (900) is above mean (800); lengths are modelled as "
                                       "right-skewed (lognormal), which needs mean >= p50")),
    ({"mean": 800, "p95": 2000, "max": 1000}, "max",
     "max (1000) is below p95 (2000); max must be >= p95"),
    ({"mean": 800, "max": 700}, "max", "max (700) is below mean (800); max must be >= mean"),
    ({"p95": 3000}, "p95",
     "p95 alone does not define a length distribution; give mean or p50 as well"),
    ({"p95": 3000, "max": 5000}, "p95",
     "p95 alone does not define a length distribution; give mean or p50 as well"),
])
def test_length_statistics_must_be_consistent(stats: dict, key: str, message: str) -> None:
    issues = ws.check_workload(_with("traffic.output_tokens", stats)).issues
    assert [(i.loc, i.key, i.message) for i in issues] == [
        (("traffic", "output_tokens", key), f"traffic.output_tokens.{key}", message)]


def test_length_needs_a_central_statistic() -> None:
    assert _issues(_with("traffic.output_tokens", {"max": 100})) == [
        ("traffic.output_tokens", "give at least one of mean, p50, p95")]


def test_length_problems_are_found_even_when_a_sibling_is_bad() -> None:
    data = _with("traffic.rate_rps", -1)
    data["traffic"]["phases"][1]["prompt_tokens"] = {"mean": 10, "p95": 5}
    assert _issues(data) == [
        ("traffic.rate_rps", "must be greater than 0, got -1 (integer)"),
        ("traffic.phases.1.prompt_tokens.p95", "p95 (5) is below mean (10); p95 must be >= mean"),
    ]


@pytest.mark.parametrize("stats", [
    {"mean": 1000}, {"p50": 900}, {"mean": 1000, "p50": 900}, {"p50": 900, "p95": 3000},
    {"mean": 1000, "p50": 900, "p95": 3000, "max": 8000}, {"mean": 1000, "max": 1000},
])
def test_consistent_statistics_are_accepted(stats: dict) -> None:
    assert _issues(_with("traffic.output_tokens", stats)) == []


# ---- bounds ------------------------------------------------------------------------------------
@pytest.mark.parametrize(("path", "value", "message"), [
    ("cluster.gpus", 100_001, "must be less than or equal to 100000, got 100001 (integer)"),
    ("cluster.gpus", 10 ** 30,
     "must be less than or equal to 100000, got 100000000000... (a 31-digit integer)"),
    ("traffic.rate_rps", 2e9, "must be less than or equal to 1000000000, got 2e+09 (number)"),
    ("traffic.phases.1.rate_rps", 1e-9,
     "1e-09 requests/s is below the smallest rate evaluated, 1e-06 (one request every 12 days)"),
    ("traffic.burstiness", 1e200, "must be less than or equal to 1000, got 1e+200 (number)"),
    ("traffic.phases.0.prompt_tokens", 10_000_001,
     "must be less than or equal to 10000000, got 10000001 (integer)"),
    ("deployment.chunk_tokens", 10 ** 12,
     "must be less than or equal to 10000000, got 1000000000000 (integer)"),
])
def test_numbers_beyond_what_the_model_evaluates_are_refused(path: str, value: Any,
                                                             message: str) -> None:
    assert _issues(_with(path, value)) == [(path, message)]


@pytest.mark.parametrize(("path", "value"), [
    ("cluster.gpus", 100_000), ("traffic.rate_rps", 1e9), ("traffic.phases.0.rate_rps", 1e-6),
    ("traffic.burstiness", 1000.0), ("traffic.output_tokens", 10_000_000),
    ("traffic.prompt_tokens", {"mean": 10_000_000}),
])
def test_numbers_at_the_bounds_are_accepted(path: str, value: Any) -> None:
    assert _issues(_with(path, value)) == []


# ---- traffic and phases --------------------------------------------------------------------
def test_phase_shares_must_add_up_to_one() -> None:
    data = _with("traffic.phases.1.share", 0.3)
    assert _issues(data) == [("traffic.phases",
                              "phase shares add up to 0.9; they must add up to 1")]


def test_phase_shares_within_tolerance() -> None:
    data = _with("traffic.phases", [
        {"name": n, "share": 1 / 3} for n in ("a", "b", "c")])
    assert _issues(data) == []


def test_phase_names_unique() -> None:
    assert _issues(_with("traffic.phases.1.name", "day")) == [
        ("traffic.phases.1.name", "duplicate phase name 'day' (also phase 0)")]


def test_phases_inherit_or_must_give_rate_and_lengths() -> None:
    data = _with("traffic.rate_rps", ...)
    del data["traffic"]["output_tokens"]
    data["traffic"]["phases"][1]["output_tokens"] = 100
    result = ws.check_workload(data)
    assert sorted((i.key, i.message) for i in result.issues) == [
        ("traffic.phases.0", ("missing required key 'output_tokens' (traffic.output_tokens is "
                             "not set, so every phase must give it)")),
        ("traffic.phases.1", ("missing required key 'rate_rps' (traffic.rate_rps is not set, "
                             "so every phase must give it)")),
    ]


def test_without_phases_base_values_are_required() -> None:
    data = _with("traffic", {"burstiness": 2})
    assert _issues(data) == [
        ("traffic", "missing required key 'rate_rps'"),
        ("traffic", "missing required key 'prompt_tokens'"),
        ("traffic", "missing required key 'output_tokens'"),
    ]


# ---- deployment ----------------------------------------------------------------------------
def test_disaggregated_needs_both_pools() -> None:
    data = _with("deployment", {"mode": "disaggregated", "prefill_gpus": 8})
    assert _issues(data) == [
        ("deployment", "missing required key 'decode_gpus' (mode is disaggregated)")]


def test_pool_keys_only_for_disaggregated() -> None:
    data = _with("deployment", {"mode": "colocated", "decode_gpus": 8,
                                "prefill_tensor_parallel": 2})
    assert _issues(data) == [
        ("deployment.decode_gpus", "applies only to disaggregated deployments (mode is colocated)"),
        ("deployment.prefill_tensor_parallel",
         "applies only to disaggregated deployments (mode is colocated)"),
    ]


def test_tensor_parallel_power_of_two_and_pool_fit() -> None:
    data = _with("deployment", {"mode": "disaggregated", "prefill_gpus": 4, "decode_gpus": 12,
                                "prefill_tensor_parallel": 8, "decode_tensor_parallel": 8})
    assert _issues(data) == [
        ("deployment.prefill_tensor_parallel", "8 exceeds prefill_gpus (4)"),
        ("deployment.decode_gpus", "12 is not a multiple of decode_tensor_parallel (8)"),
    ]
    assert _issues(_with("deployment.tensor_parallel", 3)) == [
        ("deployment.tensor_parallel", "must be a power of two (1, 2, 4, 8, ...), got 3")]


# ---- sections, config, policy --------------------------------------------------------------
def test_valid_sections_are_kept_when_another_is_bad() -> None:
    result = ws.check_workload(_with("slo.ttft_ms", -1))
    assert result.model is None
    assert isinstance(result.sections["cluster"], ws.Cluster)
    assert isinstance(result.sections["traffic"], ws.Traffic)
    assert "slo" not in result.sections


def test_policy_overrides_cover_every_policy_field() -> None:
    names = [f.name for f in dataclasses.fields(Policy)]
    assert list(ws.PolicyOverrides.model_fields) == names
    for name in names:
        description = ws.PolicyOverrides.model_fields[name].description
        assert description and "Override of the" not in description, name


def test_config_document() -> None:
    result = ws.check_config({"version": 1, "policy": {"split_tolerance": 0.2}})
    assert result.issues == [] and result.model.policy.split_tolerance == 0.2
    assert [(i.key, i.message) for i in ws.check_config({"version": 1, "polic": {}}).issues] == [
        ("polic", "unknown key 'polic'; did you mean 'policy'?")]
    assert ws.check_config([]).issues[0].message.startswith(
        "the top level of a configuration file must be a mapping")


@pytest.mark.parametrize(("value", "text"), [
    (None, "null"), (True, "true (boolean)"), (3, "3 (integer)"), (2.5, "2.5 (number)"),
    ("x" * 50, "'" + "x" * 37 + "...' (string)"), ({}, "a mapping"), ([], "a list"),
])
def test_describe(value: Any, text: str) -> None:
    assert describe(value) == text


@pytest.mark.parametrize("path", ["operations.router", "deployment.router"])
def test_router_names_the_policies(path: str) -> None:
    assert _issues(_with(path, "jsq")) == [(path, "must be 'least-loaded', 'round-robin', "
                                                  "'random' or 'power-of-two', got 'jsq' (string)")]
    assert _issues(_with(path, "power-of-two")) == []
