"""Property-based fuzzing of ``recommend --format json`` and ``check`` with any workload file.

Each example is written to a file and run through the real CLI in-process; the contract it
must meet (exit codes, no traceback, strict and schema-valid JSON without NaN, positive
latencies, located diagnostics, the two commands agreeing) is in :mod:`tests.fuzz.contract`,
the inputs in :mod:`tests.fuzz.strategies`.

Example counts scale with the Hypothesis profile (``tests/conftest.py``): ``WEIGHTS`` times
its ``max_examples`` — 100 under the default ``ci`` profile (2,150 files, each run through
both commands, plus 100 serialisation round trips; ~80 s on a 2-core machine), 1,000 under
``--hypothesis-profile=thorough`` (22,500). Bugs found are kept as regression files under
``tests/data/fuzz/`` (``test_fuzz_regressions.py``).
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

WEIGHTS: dict[str, float] = {
    "valid": 3,
    "valid-at-scale": 0.5,
    "broken": 6,
    "extreme": 3,
    "text": 7,
    "bytes": 2,
    "round-trip": 1,
}
"""Examples of each fuzz test per ``max_examples`` of the profile (valid documents are the
expensive ones: every one is evaluated, with its verdict boundaries)."""


def scaled(test: str) -> settings:
    """The active profile with ``max_examples`` multiplied by the test's weight."""
    profile_examples = settings().max_examples  # a bare settings() is the active profile
    return settings(max_examples=max(1, round(profile_examples * WEIGHTS[test])))


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


@scaled("valid")
@given(data=st.data())
def test_valid_workloads(workload_file: Path, data: st.DataObject) -> None:
    """Valid workloads of up to 64 GPUs and 3 phases: evaluated, and the contract holds."""
    resolvable = data.draw(st.booleans(), label="resolvable")
    doc = data.draw(workloads(resolvable=resolvable, max_gpus=SMALL_GPUS,
                              max_phases=SMALL_PHASES), label="workload")
    _evaluate_valid(workload_file, doc, resolvable)


@scaled("valid-at-scale")
@given(data=st.data())
def test_valid_workloads_at_scale(workload_file: Path, data: st.DataObject) -> None:
    """Valid workloads across the whole space: up to 100,000 GPUs and 12 phases."""
    resolvable = data.draw(st.booleans(), label="resolvable")
    doc = data.draw(workloads(resolvable=resolvable), label="workload")
    _evaluate_valid(workload_file, doc, resolvable)


@scaled("broken")
@given(doc=broken_documents())
def test_broken_documents(workload_file: Path, doc: Any) -> None:
    """Wrong types, missing, renamed and unknown keys, junk values, unicode, deep nesting."""
    workload_file.write_text(to_yaml(doc), encoding="utf-8")
    check_file(workload_file)


@scaled("extreme")
@given(doc=extreme_documents())
def test_extreme_numbers(workload_file: Path, doc: Any) -> None:
    """One number at or beyond a bound: refused at its key, or evaluated; never a crash."""
    workload_file.write_text(to_yaml(doc), encoding="utf-8")
    check_file(workload_file)


@scaled("text")
@given(text=st.one_of(yaml_texts(), mutated_yaml_texts()))
def test_yaml_text(workload_file: Path, text: str) -> None:
    """Random YAML-ish text and valid files with characters deleted, inserted or moved."""
    workload_file.write_text(text, encoding="utf-8", newline="")
    check_file(workload_file)


@scaled("bytes")
@given(raw=raw_bytes())
def test_raw_bytes(workload_file: Path, raw: bytes) -> None:
    """Files that are not valid UTF-8, or hold a BOM, NUL or a lone CR."""
    workload_file.write_bytes(raw)
    check_file(workload_file)
