"""Property-based fuzzing of ``recommend --format json`` and ``check`` with any workload file.

Each example is written to a file and run through the real CLI in-process; the contract it
must meet (exit codes, no traceback, strict and schema-valid JSON without NaN, positive
latencies, located diagnostics, the two commands agreeing) is in :mod:`tests.fuzz.contract`,
the inputs in :mod:`tests.fuzz.strategies`.

Two tiers check the same properties with the same strategies (issue #13):

* the default run (``python -m pytest``): ``TIERS[test][0]`` times the Hypothesis profile's
  ``max_examples`` — 100 under the default ``ci`` profile, so 105 files (each through both
  commands) plus 10 serialisation round trips, ~12 s of CPU (a quarter of the earlier counts,
  since the README command outgrew its 6 minutes; the thorough tier keeps its counts) — and,
  every run, the documents at the bounds of the format (``BOUNDS``: smallest and largest rate,
  burstiness, lengths, SLO targets and percentiles, policy thresholds, both deployment modes at
  their edges, 100,000 GPUs) and the 14 regression files (``test_fuzz_regressions.py``). Workloads
  drawn across the whole scale (up to 100,000 GPUs in 12 phases) are thorough-tier only;
* the thorough tier (``python -m pytest -m thorough``; ``.ci/run`` runs it as its own step):
  ``TIERS[test][1]`` times ``max_examples`` — the counts the default run used before the split,
  2,150 files plus 100 round trips (~2.5 min) — and the costly bound (100,000 GPUs in four
  phases). ``--hypothesis-profile=thorough`` multiplies both tiers by ten, at random seeds,
  for local bug hunts (22,500 files in the thorough tier).

Bugs found are kept as regression files under ``tests/data/fuzz/`` (``test_fuzz_regressions.py``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from advisor.loading.workload_schema import PolicyOverrides, check_workload
from advisor.loading.yaml_source import parse_yaml
from tests.fuzz.contract import check_file
from tests.fuzz.strategies import (
    MAX_BURSTINESS,
    MAX_GPUS,
    MAX_RATE_RPS,
    MAX_TOKENS,
    MIN_RATE_RPS,
    POLICY_KEYS,
    SMALL_GPUS,
    SMALL_PHASES,
    broken_documents,
    extreme_documents,
    mutated_yaml_texts,
    raw_bytes,
    to_yaml,
    workloads,
    yaml_texts,
)

TIERS: dict[str, tuple[float, float]] = {
    # test: (default run, thorough tier), in examples per ``max_examples`` of the profile
    "valid": (0.15, 3),
    "valid-at-scale": (0, 0.5),  # thorough tier only (see the test)
    "broken": (0.3, 6),
    "extreme": (0.15, 3),
    "text": (0.35, 7),
    "bytes": (0.1, 2),
    "round-trip": (0.1, 1),
}
"""Examples of each fuzz test per ``max_examples`` of the profile (valid documents are the
expensive ones: every one is evaluated, with its verdict boundaries). The thorough column is
what the default run drew before issue #13 split the tiers."""

thorough = pytest.mark.thorough


def scaled(test: str, tier: int = 0) -> settings:
    """The active profile with ``max_examples`` multiplied by the test's weight in ``tier``
    (0: the default run, 1: the thorough tier)."""
    profile_examples = settings().max_examples  # a bare settings() is the active profile
    weight = TIERS[test][tier]
    assert weight > 0, f"{test} has no examples in tier {tier}"
    return settings(max_examples=max(1, round(profile_examples * weight)))


@pytest.fixture(scope="session")
def workload_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The file every example is written to, in a directory marked as a project root.

    The ``.git`` marker stops the search for a ``.pd-advisor.yaml`` above the file, so a
    stray configuration in the temporary directory's parents cannot change the results.
    """
    directory = tmp_path_factory.mktemp("fuzz")
    (directory / ".git").mkdir()
    return directory / "workload.yaml"


def _depth(value: Any) -> int:
    """How deeply lists and mappings nest in ``value`` (0 for a scalar)."""
    if isinstance(value, dict | list):
        items = value.values() if isinstance(value, dict) else value
        return 1 + max((_depth(item) for item in items), default=0)
    return 0


def _nan_free(value: Any) -> Any:
    """``value`` with NaN replaced by a marker, so that equal documents compare equal."""
    if isinstance(value, float) and math.isnan(value):
        return "<nan>"
    if isinstance(value, dict):
        return {key: _nan_free(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_nan_free(item) for item in value]
    return value


@scaled("round-trip")
@given(doc=broken_documents())
def test_to_yaml_round_trips(doc: Any) -> None:
    """The harness is honest: what the fuzzer writes is what pd-advisor reads (within the
    nesting pd-advisor accepts)."""
    _round_trip(doc)


@thorough
@scaled("round-trip", 1)
@given(doc=broken_documents())
def test_to_yaml_round_trips_thorough(doc: Any) -> None:
    """``test_to_yaml_round_trips`` on the thorough tier's examples."""
    _round_trip(doc)


def _round_trip(doc: Any) -> None:
    assume(_depth(doc) <= 90)
    document = parse_yaml(to_yaml(doc), "fuzz.yaml")
    assert document.problems == []
    assert _nan_free(document.data) == _nan_free(doc)


def test_strategies_know_every_policy_key() -> None:
    """The generated ``policy:`` overrides cover every threshold the format accepts."""
    assert set(POLICY_KEYS) == set(PolicyOverrides.model_fields)


def _evaluate_valid(workload_file: Path, doc: dict[str, Any], resolvable: bool) -> None:
    """Run both commands on a valid document; a resolvable one must be evaluated."""
    assert check_workload(doc).issues == []
    workload_file.write_text(to_yaml(doc), encoding="utf-8")
    report, check_doc = check_file(workload_file)
    if not resolvable:
        return
    assert report is not None, "a valid, resolvable workload was not evaluated"
    inputs = report["inputs"]
    assert inputs["model"]["id"] == doc["model"]
    assert inputs["cluster"]["gpus"] == doc["cluster"]["gpus"]
    assert len(inputs["traffic"]) == len(doc["traffic"].get("phases", [None]))
    if "deployment" in doc:
        assert check_doc["status"] in ("pass", "fail")
    else:  # nothing to gate
        assert check_doc["status"] == "error"


# ---- the bounds of the format, every run ------------------------------------------------------
def _phases(count: int) -> list[dict[str, Any]]:
    """``count`` phases of equal share, rates from 1e-3 up by decades, prompts from 1 token
    up by powers of two, outputs down from 4,096 tokens."""
    return [{"name": f"phase-{index}", "share": 1 / count, "rate_rps": 10.0 ** (index - 3),
             "prompt_tokens": 2 ** index, "output_tokens": max(1, 4096 >> index)}
            for index in range(count)]


_ALL_POLICY_AT = dict.fromkeys(POLICY_KEYS, 0.0) | {"memory_fraction": 1e-6}
BOUNDS: dict[str, tuple[dict[str, Any], bool]] = {
    # name: (document, resolvable)
    "smallest": ({
        "version": 1, "model": "llama-3.1-8b", "precision": "bf16",
        "cluster": {"gpu": "l4", "gpus": 1},
        "traffic": {"rate_rps": MIN_RATE_RPS, "burstiness": 0.0, "prompt_tokens": 1,
                    "output_tokens": 1}}, True),
    "largest-rate-burstiness-lengths-and-tightest-slo": ({
        "version": 1, "model": "llama-3.1-8b", "precision": "fp8", "engine": "sglang",
        "cluster": {"gpu": "b200", "gpus": 8},
        "traffic": {"rate_rps": MAX_RATE_RPS, "burstiness": MAX_BURSTINESS,
                    "prompt_tokens": {"mean": 131072, "p50": 131072},  # the context window
                    "output_tokens": {"mean": MAX_TOKENS, "p50": 1, "p95": MAX_TOKENS,
                                      "max": MAX_TOKENS}},
        "slo": {"ttft_ms": 1e-3, "tpot_ms": 1e9, "percentile": 99.9}}, True),
    "disaggregated-one-prefill-gpu-policy-at-zero": ({
        "version": 1, "model": "llama-3.1-70b", "precision": "bf16",
        "cluster": {"gpu": "h100-sxm", "gpus": 16, "gpus_per_node": 8, "inter_node": "eth-25"},
        "traffic": {"rate_rps": 5, "prompt_tokens": {"mean": 4000, "p95": 12000},
                    "output_tokens": 300},
        "deployment": {"mode": "disaggregated", "chunked_prefill": True, "chunk_tokens": 1,
                       "prefill_gpus": 1, "decode_gpus": 15, "prefill_tensor_parallel": 1,
                       "decode_tensor_parallel": 1},
        "policy": _ALL_POLICY_AT}, True),
    "colocated-largest-chunk-one-gpu-nodes-policy-at-one": ({
        "version": 1, "model": "mixtral-8x7b", "precision": "fp8",
        "cluster": {"gpu": "mi300x", "gpus": 8, "gpus_per_node": 1, "inter_node": "roce-400"},
        "traffic": {"rate_rps": 1, "prompt_tokens": 32768, "output_tokens": 1},
        "deployment": {"mode": "colocated", "chunked_prefill": True, "chunk_tokens": MAX_TOKENS,
                       "tensor_parallel": 8},
        "policy": dict.fromkeys(POLICY_KEYS, 1.0)}, True),
    "most-gpus-loosest-percentile": ({
        "version": 1, "model": "llama-3.1-405b", "precision": "bf16", "engine": "trtllm",
        "cluster": {"gpu": "h100-sxm", "gpus": MAX_GPUS, "inter_node": "ib-ndr-400"},
        "traffic": {"rate_rps": 1000, "burstiness": 2.0, "prompt_tokens": 2000,
                    "output_tokens": 300},
        "slo": {"ttft_ms": 2000, "tpot_ms": 60, "percentile": 50},
        "operations": {"autoscaling": False}}, True),
    "lengths-beyond-the-context-window": ({
        "version": 1, "model": "llama-3.1-8b", "precision": "bf16",
        "cluster": {"gpu": "h100-sxm", "gpus": 64, "gpus_per_node": 8},
        "traffic": {"rate_rps": 1, "prompt_tokens": MAX_TOKENS, "output_tokens": MAX_TOKENS}},
        False),
}
"""Valid documents at the bounds of the format (and of the profiles' context windows), run
through the whole contract every run; hypothesis reaches them only by chance."""

THOROUGH_BOUNDS: dict[str, tuple[dict[str, Any], bool]] = {
    "most-gpus-in-four-phases": ({
        **BOUNDS["most-gpus-loosest-percentile"][0],
        "traffic": {"burstiness": 2.0, "phases": _phases(4)}}, True),
}
"""Bounds too costly for every run (seconds each: the verdict boundaries of 100,000 GPUs)."""


@pytest.mark.parametrize("name", sorted(BOUNDS))
def test_workloads_at_the_bounds(workload_file: Path, name: str) -> None:
    """The contract on the documents at the bounds of the format."""
    doc, resolvable = BOUNDS[name]
    _evaluate_valid(workload_file, doc, resolvable)


@thorough
@pytest.mark.parametrize("name", sorted(THOROUGH_BOUNDS))
def test_workloads_at_the_bounds_thorough(workload_file: Path, name: str) -> None:
    """The contract on the costly documents at the bounds of the format."""
    doc, resolvable = THOROUGH_BOUNDS[name]
    _evaluate_valid(workload_file, doc, resolvable)


# ---- generated documents ---------------------------------------------------------------------
def _valid(workload_file: Path, data: st.DataObject, **bounds: int) -> None:
    resolvable = data.draw(st.booleans(), label="resolvable")
    doc = data.draw(workloads(resolvable=resolvable, **bounds), label="workload")
    _evaluate_valid(workload_file, doc, resolvable)


@scaled("valid")
@given(data=st.data())
def test_valid_workloads(workload_file: Path, data: st.DataObject) -> None:
    """Valid workloads of up to 64 GPUs and 3 phases: evaluated, and the contract holds."""
    _valid(workload_file, data, max_gpus=SMALL_GPUS, max_phases=SMALL_PHASES)


@thorough
@scaled("valid", 1)
@given(data=st.data())
def test_valid_workloads_thorough(workload_file: Path, data: st.DataObject) -> None:
    """``test_valid_workloads`` on the thorough tier's examples."""
    _valid(workload_file, data, max_gpus=SMALL_GPUS, max_phases=SMALL_PHASES)


@thorough
@scaled("valid-at-scale", 1)
@given(data=st.data())
def test_valid_workloads_at_scale(workload_file: Path, data: st.DataObject) -> None:
    """Valid workloads across the whole space: up to 100,000 GPUs and 12 phases.

    Thorough tier only: one such example costs up to seconds (14 s for 100,000 GPUs in three
    phases, the verdict boundaries searching the GPU count); the default run evaluates
    100,000 GPUs through ``BOUNDS`` and every other dimension through
    ``test_valid_workloads``."""
    _valid(workload_file, data)


def _write_and_check(workload_file: Path, doc: Any) -> None:
    workload_file.write_text(to_yaml(doc), encoding="utf-8")
    check_file(workload_file)


@scaled("broken")
@given(doc=broken_documents())
def test_broken_documents(workload_file: Path, doc: Any) -> None:
    """Wrong types, missing, renamed and unknown keys, junk values, unicode, deep nesting."""
    _write_and_check(workload_file, doc)


@thorough
@scaled("broken", 1)
@given(doc=broken_documents())
def test_broken_documents_thorough(workload_file: Path, doc: Any) -> None:
    """``test_broken_documents`` on the thorough tier's examples."""
    _write_and_check(workload_file, doc)


@scaled("extreme")
@given(doc=extreme_documents())
def test_extreme_numbers(workload_file: Path, doc: Any) -> None:
    """One number at or beyond a bound: refused at its key, or evaluated; never a crash."""
    _write_and_check(workload_file, doc)


@thorough
@scaled("extreme", 1)
@given(doc=extreme_documents())
def test_extreme_numbers_thorough(workload_file: Path, doc: Any) -> None:
    """``test_extreme_numbers`` on the thorough tier's examples."""
    _write_and_check(workload_file, doc)


def _check_text(workload_file: Path, text: str) -> None:
    workload_file.write_text(text, encoding="utf-8", newline="")
    check_file(workload_file)


@scaled("text")
@given(text=st.one_of(yaml_texts(), mutated_yaml_texts()))
def test_yaml_text(workload_file: Path, text: str) -> None:
    """Random YAML-ish text and valid files with characters deleted, inserted or moved."""
    _check_text(workload_file, text)


@thorough
@scaled("text", 1)
@given(text=st.one_of(yaml_texts(), mutated_yaml_texts()))
def test_yaml_text_thorough(workload_file: Path, text: str) -> None:
    """``test_yaml_text`` on the thorough tier's examples."""
    _check_text(workload_file, text)


def _check_bytes(workload_file: Path, raw: bytes) -> None:
    workload_file.write_bytes(raw)
    check_file(workload_file)


@scaled("bytes")
@given(raw=raw_bytes())
def test_raw_bytes(workload_file: Path, raw: bytes) -> None:
    """Files that are not valid UTF-8, or hold a BOM, NUL or a lone CR."""
    _check_bytes(workload_file, raw)


@thorough
@scaled("bytes", 1)
@given(raw=raw_bytes())
def test_raw_bytes_thorough(workload_file: Path, raw: bytes) -> None:
    """``test_raw_bytes`` on the thorough tier's examples."""
    _check_bytes(workload_file, raw)
