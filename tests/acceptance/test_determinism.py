"""Determinism (issue #8, part 3): byte-identical JSON across runs and hash seeds; one rounding
rule.

Every JSON output — ``recommend`` of each example, ``check`` of all of them, a two-key
``sweep`` and a ``simulate`` of each — is produced in child interpreters started with
``PYTHONHASHSEED`` 0 and 12345 (the default run; the thorough tier, ``-m thorough``, adds 1
and ``random``, issue #13), and compared byte for byte. The children also differ in
everything else of their surroundings (issue #21, :data:`SURROUNDINGS`): locale (a UTF-8 one
against POSIX without UTF-8 mode), ``TZ``, ``COLUMNS`` and working directory; each command's
standard output is a stream in the locale's encoding, captured as bytes. One child per seed
runs every command in-process through the console-script entry point (the children run side
by side), so the test costs one interpreter start-up per seed, not fifty. (The sweep's wall
time is in its table footer only, not in its JSON, for this reason.)
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from advisor.render.report_json import SIGNIFICANT_DIGITS, json_number, json_text, sanitize

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO_ROOT / "examples").glob("*.yaml"))
HASH_SEEDS = ("0", "12345")
THOROUGH_HASH_SEEDS = ("1", "random")
SURROUNDINGS = [
    {"LC_ALL": "C.UTF-8", "LANG": "C.UTF-8", "TZ": "UTC", "COLUMNS": "100"},
    {"LC_ALL": "POSIX", "LANG": "POSIX", "PYTHONUTF8": "0", "TZ": "Asia/Kathmandu",
     "COLUMNS": "41"},
    {"LC_ALL": "C.UTF-8", "PYTHONIOENCODING": "latin-1", "TZ": "America/St_Johns",
     "COLUMNS": "250"},
    {"LC_ALL": "POSIX", "PYTHONUTF8": "0", "TZ": "Pacific/Chatham"},
]
"""Environment of the children, in turn (issue #21); the odd ones also start in another
working directory."""

_CHILD = r'''
import contextlib, io, json, locale, os, sys

from advisor.cli.app import main

out_path, commands = sys.argv[1], json.loads(sys.argv[2])
# standard output as the interpreter would open it here: the locale's (or
# PYTHONIOENCODING's) encoding, over bytes
encoding = (os.environ.get("PYTHONIOENCODING") or locale.getpreferredencoding(False))
outputs = {}
for args in commands:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding=encoding, write_through=True)
    sys.argv = ["pd-advisor", *args]
    with contextlib.redirect_stdout(stream):
        try:
            main()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        sys.stdout.flush()
    outputs[" ".join(args)] = {"exit": code, "stdout": raw.getvalue().decode("utf-8")}
with open(out_path, "w", encoding="utf-8") as handle:
    json.dump(outputs, handle)
'''

def _commands() -> list[list[str]]:
    names = [str(p) for p in EXAMPLES]  # absolute: the children start in different directories
    commands = [["recommend", name, "--format", "json"] for name in names]
    commands.append(["check", *names, "--format", "json"])
    for name in names:
        commands.append(["sweep", name, "--vary", "cluster.gpus=2,4,8",
                         "--vary", "traffic.rate_rps=2,20", "--format", "json"])
        commands.append(["simulate", name, "--requests", "100", "--seed", "7",
                         "--no-progress", "--format", "json"])
    return commands


def _start(seed: str, out: Path, index: int) -> subprocess.Popen[str]:
    """A child running every command with ``PYTHONHASHSEED=seed`` in the ``index``-th
    surroundings (:data:`SURROUNDINGS`), writing to ``out``."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "NO_COLOR": "1",
           "PYTHONHASHSEED": seed}
    for name in ("PD_ADVISOR_PROFILES", "PD_ADVISOR_FORMAT", "LC_ALL", "LANG", "LC_CTYPE",
                 "PYTHONUTF8", "PYTHONIOENCODING", "TZ", "COLUMNS"):
        env.pop(name, None)
    env.update(SURROUNDINGS[index % len(SURROUNDINGS)])
    return subprocess.Popen([sys.executable, "-c", _CHILD, str(out), json.dumps(_commands())],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=out.parent if index % 2 else REPO_ROOT, env=env)


def _run_children(seeds: tuple[str, ...], directory: Path,
                  first: int = 0) -> list[dict[str, Any]]:
    """The outputs of every command, once per hash seed (the children run side by side), in
    the surroundings from ``first`` on."""
    outs = [directory / f"run-{seed}.json" for seed in seeds]
    children = [_start(seed, out, first + i)
                for i, (seed, out) in enumerate(zip(seeds, outs, strict=True))]
    results = []
    for child, out in zip(children, outs, strict=True):
        _, stderr = child.communicate(timeout=300)
        assert child.returncode == 0, stderr
        assert "Traceback" not in stderr
        results.append(json.loads(out.read_text(encoding="utf-8")))
    return results


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The outputs of every command, once per seed of ``HASH_SEEDS``."""
    return _run_children(HASH_SEEDS, tmp_path_factory.mktemp("determinism"))


def _assert_identical(first: dict[str, Any], seeds: tuple[str, ...],
                      others: list[dict[str, Any]]) -> None:
    for seed, other in zip(seeds, others, strict=True):
        assert other.keys() == first.keys()
        for command, result in first.items():
            mine, theirs = result["stdout"], other[command]["stdout"]
            assert theirs.encode() == mine.encode(), (seed, command)
            assert other[command]["exit"] == result["exit"]


@pytest.mark.thorough  # children run every command under two hash seeds: ~18 s
def test_every_command_produced_json(runs: list[dict[str, Any]]) -> None:
    first = runs[0]
    assert len(first) == len(_commands())
    for command, result in first.items():
        assert result["exit"] in (0, 1), command  # check exits 1: two examples fail the gate
        doc = json.loads(result["stdout"])
        # the simulation document is at version 2 since issue #19 (steady_state, kv_cache)
        expected = 2 if command.startswith("simulate") else 1
        assert doc["schema_version"] == expected, command


@pytest.mark.thorough  # children run every command under two hash seeds: ~18 s
def test_json_is_byte_identical_across_runs_and_hash_seeds(runs: list[dict[str, Any]]) -> None:
    _assert_identical(runs[0], HASH_SEEDS[1:], runs[1:])


@pytest.mark.thorough
def test_json_is_byte_identical_across_more_hash_seeds(
        runs: list[dict[str, Any]], tmp_path_factory: pytest.TempPathFactory) -> None:
    """The same comparison against children with the seeds of ``THOROUGH_HASH_SEEDS``."""
    more = _run_children(THOROUGH_HASH_SEEDS, tmp_path_factory.mktemp("determinism-more"),
                         first=len(HASH_SEEDS))
    _assert_identical(runs[0], THOROUGH_HASH_SEEDS, more)


def _floats(value: Any) -> list[float]:
    if isinstance(value, float):
        return [value]
    if isinstance(value, dict):
        return [f for v in value.values() for f in _floats(v)]
    if isinstance(value, list):
        return [f for v in value for f in _floats(v)]
    return []


def test_every_float_in_every_json_output_is_rounded(runs: list[dict[str, Any]]) -> None:
    """No float is written with more than six significant digits, nor as -0.0."""
    seen = 0
    for command, result in runs[0].items():
        for number in _floats(json.loads(result["stdout"])):
            assert json_number(number) == number, (command, number)
            assert not (number == 0 and math.copysign(1.0, number) < 0), command
            seen += 1
    assert seen > 1000


# ---- the rule itself ------------------------------------------------------------------------
@pytest.mark.parametrize(("value", "written"), [
    (0.1 + 0.2, "0.3"), (0.08192875127430543, "0.0819288"), (1 / 3, "0.333333"),
    (2 / 3, "0.666667"), (123456789.0, "123457000.0"), (1.0, "1.0"), (0.05, "0.05"),
    (-0.0, "0.0"), (-1e-300, "-1e-300"), (6.02214076e23, "6.02214e+23"),
    (1.23456789e-7, "1.23457e-07"), (float("nan"), "null"), (float("inf"), "null"),
])
def test_rounding_rule(value: float, written: str) -> None:
    assert SIGNIFICANT_DIGITS == 6
    assert json.dumps(sanitize(value)) == written


def test_rounding_is_idempotent_and_leaves_integers_alone() -> None:
    values = [0.1 * k for k in range(1000)] + [math.pi * 10.0**e for e in range(-20, 21)]
    for value in values:
        once = json_number(value)
        assert once is not None and json_number(once) == once
    assert sanitize({"a": 2**60 + 1, "b": True, "c": [1, 2.5]}) == {"a": 2**60 + 1, "b": True,
                                                                     "c": [1, 2.5]}


def test_json_text_is_the_single_writer() -> None:
    """recommend/check, sweep and simulate all write through ``json_text``."""
    from advisor.render import formats, simulate_report, sweep_report

    doc = {"x": 0.1 + 0.2, "y": [float("nan"), -0.0], "z": "é"}
    expected = '{\n  "x": 0.3,\n  "y": [\n    null,\n    0.0\n  ],\n  "z": "é"\n}\n'
    assert json_text(doc) == expected
    assert formats.render_json(doc) == expected
    assert sweep_report.render_json(doc) == expected
    assert simulate_report.render_json(doc) == expected
