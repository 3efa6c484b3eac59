"""Property-based fuzzing of every input beside the workload file (issue #21).

Four input kinds, each through the real CLI in-process (``--debug``: an exception escapes
with its traceback), within the time and memory budget of ``test_fuzz_simulate_fit``:

* a Hugging Face ``config.json`` named by the workload's ``model:`` — the Llama 3.1 8B config
  with fields replaced by any JSON value (huge and overflowing integers, NaN, infinities,
  ``1e300``, strings, lists, null), deleted, or the text cut short — through ``check``;
* benchmark result files — vLLM JSON (one run or several appended) and SGLang JSONL with
  statistics, counts and per-request arrays replaced the same way — through ``calibrate``;
* profile overrides — the H100 profile in a ``--profiles`` directory with any of its sourced
  numbers replaced (``5e-324``, ``1e308``, negative, ``.inf``, ``.nan``, strings) — through
  ``check``;
* ``sweep`` options — one or two ``--vary KEY=SPEC`` with lists and ranges of hostile
  numbers (NaN, infinities, ``1e400``, negative, zero) and small point counts.

The contract: the command's exit codes only, never a traceback or an internal error; JSON
that parses strictly with no NaN or Infinity (the full ``check`` contract of
:mod:`tests.fuzz.contract` for the first and third kinds); on exit 2 every diagnostic located
(``path:line:col: error: ...``) or a one-line ``pd-advisor: error:``; no overlay written by a
failed ``calibrate`` and a written one that loads back with factors in their ranges.

Examples per kind in the default run: ``WEIGHTS`` times the profile's ``max_examples`` (100
under ``ci``: 20 configs, 15 benchmark files, 15 profiles, 10 sweeps, ~15 s of CPU); the
``thorough`` marker runs ten times as many.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.loading.calibration_overlay import load_overlay
from tests.fuzz.contract import (
    PROBLEM_RE,
    CliRun,
    assert_no_crash,
    check_check,
    parse_json,
)
from tests.fuzz.test_fuzz_simulate_fit import run_bounded

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = REPO_ROOT / "examples" / "chat-8b-single-node.yaml"
HF_CONFIG = REPO_ROOT / "tests" / "data" / "ecosystem" / "hf" / "llama-3.1-8b" / "config.json"
BENCH = REPO_ROOT / "tests" / "data" / "ecosystem" / "bench"
GPU_PROFILE = REPO_ROOT / "profiles" / "gpus" / "h100-sxm.yaml"
WEIGHTS = {"config": 0.2, "bench": 0.15, "profile": 0.15, "sweep": 0.1}
THOROUGH_FACTOR = 10  # the thorough tier's counts as before the default's were halved

HOSTILE_NUMBERS = [0, -1, 1, 2**31, 2**63, 10**30, 10**400, -(10**400), 5e-324, 1e-300,
                   1e300, 1e308, -1e308, math.inf, -math.inf, math.nan, 0.5, 8.0]

json_values = st.one_of(
    st.sampled_from(HOSTILE_NUMBERS),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8), st.booleans(), st.none(),
    st.lists(st.sampled_from(HOSTILE_NUMBERS), max_size=4),
)


COUNTS: Counter[str] = Counter()
"""Examples run per input kind and outcome (printed at the end of the module with ``-s``)."""


def event(outcome: str) -> None:
    COUNTS[outcome] += 1


@pytest.fixture(scope="module", autouse=True)
def _report_counts() -> Iterator[None]:
    yield
    for outcome, count in sorted(COUNTS.items()):
        sys.stderr.write(f"fuzz examples: {outcome}: {count}\n")


def scaled(kind: str, thorough: bool = False) -> settings:
    """The active profile's ``max_examples`` times the kind's weight (five times as many in
    the thorough tier)."""
    weight = WEIGHTS[kind] * (THOROUGH_FACTOR if thorough else 1)
    return settings(max_examples=max(1, round(settings().max_examples * weight)))


def _json_text(value: Any) -> str:
    """JSON as the tools write it, NaN/Infinity tokens included."""
    return json.dumps(value, allow_nan=True)


@st.composite
def mutated(draw: st.DrawFn, base: dict[str, Any], keys: list[str]) -> dict[str, Any]:
    """``base`` with some of ``keys`` replaced by any JSON value or deleted."""
    doc = dict(base)
    for key in draw(st.lists(st.sampled_from(keys), min_size=1, max_size=4, unique=True)):
        if draw(st.booleans()) and key in doc:
            del doc[key]
        else:
            doc[key] = draw(json_values)
    return doc


# ---- config.json ---------------------------------------------------------------------------
CONFIG = json.loads(HF_CONFIG.read_text(encoding="utf-8"))


@st.composite
def config_texts(draw: st.DrawFn) -> str:
    text = _json_text(draw(mutated(CONFIG, [*CONFIG, "model_type", "head_dim",
                                           "num_local_experts", "num_experts_per_tok"])))
    if draw(st.integers(0, 9)) == 0:  # cut short
        text = text[:draw(st.integers(0, len(text)))]
    return text


@pytest.fixture(scope="module")
def config_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    directory = tmp_path_factory.mktemp("fuzz-config")
    (directory / ".git").mkdir()
    config = directory / "cfg" / "config.json"
    config.parent.mkdir()
    workload = directory / "workload.yaml"
    workload.write_text(EXAMPLE.read_text(encoding="utf-8").replace(
        "model: llama-3.1-8b", f"model: {config}"), encoding="utf-8")
    return workload, config


def _fuzz_config(files: tuple[Path, Path], thorough: bool) -> None:
    workload, config = files

    @scaled("config", thorough)
    @given(config_texts())
    def run(text: str) -> None:
        config.write_text(text, encoding="utf-8")
        lines = workload.read_text(encoding="utf-8").count("\n") + 1
        done = run_bounded("check", str(workload), "--format", "json")
        doc = check_check(done, workload, lines)
        event(f"config.json: check exit {done.exit_code}")
        if doc["status"] == "error":
            assert any(line.startswith(f"{config}:") for line in done.stderr.splitlines()), (
                done.describe())

    run()


def test_fuzz_config_json(config_files: tuple[Path, Path]) -> None:
    _fuzz_config(config_files, thorough=False)


@pytest.mark.thorough
def test_fuzz_config_json_thorough(config_files: tuple[Path, Path]) -> None:
    _fuzz_config(config_files, thorough=True)


# ---- benchmark results ---------------------------------------------------------------------
VLLM = json.loads((BENCH / "vllm-fixture-a.json").read_text(encoding="utf-8"))
SGLANG = json.loads((BENCH / "sglang-fixture-b.jsonl").read_text(
    encoding="utf-8").splitlines()[0])


@st.composite
def bench_texts(draw: st.DrawFn) -> str:
    base = draw(st.sampled_from([VLLM, SGLANG]))
    runs = draw(st.lists(mutated(base, [*base, "ttfts", "itls", "max_concurrency"]),
                         min_size=1, max_size=3))
    return "\n".join(_json_text(run) for run in runs) + "\n"


def _check_calibrate(done: CliRun, overlay: Path) -> None:
    assert_no_crash(done)
    assert done.exit_code in (0, 2), done.describe()
    if done.exit_code == 2:
        assert not overlay.exists(), done.describe()
        for line in done.stderr.splitlines():
            assert (PROBLEM_RE.match(line) or line.startswith("pd-advisor: ")), (
                f"{line!r}\n{done.describe()}")
        return
    factors = load_overlay(overlay).factors()
    for name, value in factors.items():
        assert math.isfinite(value) and value >= 0, (name, value)
    assert not re.search(r"(?<![\w.])(nan|inf)(?!\w)", done.stdout, re.IGNORECASE), done.stdout


@pytest.fixture(scope="module")
def bench_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz-bench")


def _fuzz_bench(directory: Path, thorough: bool) -> None:
    @scaled("bench", thorough)
    @given(bench_texts())
    def run(text: str) -> None:
        bench = directory / "bench.json"
        overlay = directory / "overlay.yaml"
        overlay.unlink(missing_ok=True)
        bench.write_text(text, encoding="utf-8")
        done = run_bounded("calibrate", str(bench), "-w", str(EXAMPLE), "-o", str(overlay))
        _check_calibrate(done, overlay)
        event(f"benchmark file: calibrate exit {done.exit_code}")

    run()


def test_fuzz_benchmark_results(bench_dir: Path) -> None:
    _fuzz_bench(bench_dir, thorough=False)


@pytest.mark.thorough
def test_fuzz_benchmark_results_thorough(bench_dir: Path) -> None:
    _fuzz_bench(bench_dir, thorough=True)


# ---- profile overrides ---------------------------------------------------------------------
PROFILE = yaml.safe_load(GPU_PROFILE.read_text(encoding="utf-8"))
SOURCED = [key for key, value in PROFILE.items() if isinstance(value, dict) and "value" in value]
EFFICIENCY = list(PROFILE["efficiency"])


@st.composite
def profile_texts(draw: st.DrawFn) -> str:
    doc = json.loads(json.dumps(PROFILE))
    for key in draw(st.lists(st.sampled_from(SOURCED + EFFICIENCY), min_size=1, max_size=3,
                             unique=True)):
        block = doc[key] if key in doc else doc["efficiency"][key]
        if draw(st.booleans()):  # plausible: the shipped value scaled
            block["value"] = block["value"] * draw(st.sampled_from([0.1, 0.5, 0.9, 1.1, 2.0]))
        else:
            block["value"] = draw(json_values)
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)


@pytest.fixture(scope="module")
def profile_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("fuzz-profiles")
    (directory / "gpus").mkdir()
    return directory


def _fuzz_profiles(directory: Path, thorough: bool) -> None:
    lines = EXAMPLE.read_text(encoding="utf-8").count("\n") + 1

    @scaled("profile", thorough)
    @given(profile_texts())
    def run(text: str) -> None:
        (directory / "gpus" / "h100-sxm.yaml").write_text(text, encoding="utf-8")
        done = run_bounded("check", str(EXAMPLE), "--format", "json", "--profiles",
                           str(directory))
        check_check(done, EXAMPLE, lines)
        event(f"profile override: check exit {done.exit_code}")

    run()


def test_fuzz_profile_overrides(profile_dir: Path) -> None:
    _fuzz_profiles(profile_dir, thorough=False)


@pytest.mark.thorough
def test_fuzz_profile_overrides_thorough(profile_dir: Path) -> None:
    _fuzz_profiles(profile_dir, thorough=True)


# ---- sweep options -------------------------------------------------------------------------
SWEEP_KEYS = ["cluster.gpus", "traffic.rate_rps", "traffic.prompt_tokens",
              "traffic.output_tokens", "traffic.burstiness", "slo.ttft_ms", "slo.tpot_ms",
              "slo.percentile", "cluster.inter_node", "cluster.inter_node.bandwidth_scale",
              "traffic.rate", "", "x" * 300]
NUMBER_TEXT = st.one_of(
    st.sampled_from(["0", "-1", "1", "2", "8", "0.5", "1e400", "-1e400", "nan", "inf",
                     "-inf", "1e-320", "99999999999999999999", "", "x", "1_000", "0x10"]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-(10**6), max_value=10**6).map(str),
)


PLAUSIBLE = {"cluster.gpus": "1,2,4,8", "traffic.rate_rps": "1:40:5",
             "traffic.prompt_tokens": "100:20000:log:4", "traffic.output_tokens": "50,500",
             "traffic.burstiness": "0.5,1,4", "slo.ttft_ms": "100:5000:3",
             "slo.tpot_ms": "10,50", "slo.percentile": "50,90,99",
             "cluster.inter_node": "ib-ndr-400,roce-100",
             "cluster.inter_node.bandwidth_scale": "0.1,1,10"}
"""Small valid specs, so that a share of the examples is evaluated."""


@st.composite
def vary_specs(draw: st.DrawFn) -> str:
    key = draw(st.sampled_from(SWEEP_KEYS))
    kind = draw(st.integers(0, 5))
    if kind >= 4 and key in PLAUSIBLE:
        spec = PLAUSIBLE[key]
    elif kind == 0:
        spec = ",".join(draw(st.lists(NUMBER_TEXT, min_size=1, max_size=5)))
    elif kind == 1:
        spec = f"{draw(NUMBER_TEXT)}:{draw(NUMBER_TEXT)}:{draw(st.integers(-1, 8))}"
    elif kind == 2:
        spec = f"{draw(NUMBER_TEXT)}:{draw(NUMBER_TEXT)}:log:{draw(st.integers(-1, 8))}"
    else:
        spec = draw(st.text(max_size=12))
    return f"{key}={spec}"


@st.composite
def sweep_args(draw: st.DrawFn) -> tuple[list[str], bool]:
    varies = draw(st.lists(vary_specs(), min_size=1, max_size=2,
                           unique_by=lambda text: text.split("=")[0]))
    fmt = draw(st.sampled_from(["json", "csv", "table"]))
    args = ["sweep", str(EXAMPLE), "--format", fmt, "--no-progress"]
    for vary in varies:
        args += ["--vary", vary]
    return args, fmt == "json"


def _fuzz_sweep(thorough: bool) -> None:
    @scaled("sweep", thorough)
    @given(sweep_args())
    def run(drawn: tuple[list[str], bool]) -> None:
        args, json_out = drawn
        done = run_bounded(*args)
        assert_no_crash(done)
        assert done.exit_code in (0, 2), done.describe()
        event(f"sweep options: exit {done.exit_code}")
        if done.exit_code == 2:
            lines = done.stderr.splitlines()
            assert lines and (lines[-1].startswith("pd-advisor: error: ")
                              or any(line.startswith("Usage:") for line in lines)), (
                done.describe())
        elif json_out:
            assert "NaN" not in json.dumps(parse_json(done.stdout))
        else:
            assert not re.search(r"(?<![\w.])nan(?!\w)", done.stdout, re.IGNORECASE), (
                done.describe())

    run()


def test_fuzz_sweep_options() -> None:
    _fuzz_sweep(thorough=False)


@pytest.mark.thorough
def test_fuzz_sweep_options_thorough() -> None:
    _fuzz_sweep(thorough=True)

