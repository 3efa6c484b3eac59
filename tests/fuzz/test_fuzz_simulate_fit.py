"""Property-based fuzzing of the ``simulate`` and ``fit`` command lines (issues #19 and #21).

Any combination of options — request counts at and far beyond the documented bounds, any seed,
modes, formats, time scales (NaN, infinities, zero, huge), replayed logs that are missing,
directories or hostile — and any log content (valid rows of every format mixed with junk,
non-finite and overflowing numbers, nesting, binary) must give:

* exit 0 or 2, never a traceback or an internal error (the CLI runs in-process with
  ``--debug``, so an exception escapes with its traceback);
* on exit 2, every diagnostic located (``path:line:col: error: ...``) or a usage error, and no
  ``-o`` file written;
* on exit 0, JSON that parses strictly (no NaN or Infinity), text without ``nan``/``inf``, and
  a written workload that validates;
* bounded time and memory per example (``TIME_BUDGET_S``; peak resident growth under
  ``MEMORY_BUDGET_BYTES`` where Linux can measure it).

The budget of examples scales with the Hypothesis profile (``tests/conftest.py``): 15
``simulate`` and 50 ``fit`` examples under ``ci`` in the default run (~20 s of CPU) and as
many others in the thorough tier, ten times that under the ``thorough`` profile.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, seed, settings
from hypothesis import strategies as st

from advisor.core.simulate.steady import MAX_REQUESTS
from advisor.loading.catalog import ProfileCatalog
from advisor.loading.resolve import load_scenario
from tests.fuzz.contract import (
    PROBLEM_RE,
    CliRun,
    assert_no_crash,
    invoke,
    non_finite_word,
    parse_json,
)
from tests.traces.planted import PlantedPhase, make, write

DATA = Path(__file__).resolve().parents[1] / "data"
WORKLOAD = DATA / "simulate" / "s07-32b-short-light.yaml"
TIME_BUDGET_S = 60.0
MEMORY_BUDGET_BYTES = 400 * 2**20
WEIGHTS = {"simulate": 0.15, "fit": 0.5}
TIERS = [0, pytest.param(1, marks=pytest.mark.thorough, id="thorough")]
"""The default run draws half the examples it drew before the README command outgrew its
6 minutes; the thorough tier draws as many others (another seed), so ``.ci/run`` runs the
full count."""
SMALL = (PlantedPhase(6.0, 100.0, 800.0, 150.0), PlantedPhase(12.0, 50.0, 2500.0, 300.0))


def scaled(test: str, tier: int = 0) -> Callable[[Any], Any]:
    """The active profile's ``max_examples`` times the test's weight; in the thorough tier
    drawn from seed 1 rather than the test's own (derandomized) seed, so that the two tiers
    run different examples."""
    chosen = settings(max_examples=max(1, round(settings().max_examples * WEIGHTS[test])))
    if tier == 0:
        return chosen
    return lambda test_fn: seed(1)(chosen(test_fn))


def _peak_bytes() -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


def _resident() -> int:
    with open("/proc/self/statm", encoding="ascii") as handle:
        import os

        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def run_bounded(*args: str) -> CliRun:
    """``invoke`` with the time and memory budgets checked."""
    measured = _reset_peak()
    before = _resident() if measured else 0
    start = time.perf_counter()
    run = invoke(*args)
    elapsed = time.perf_counter() - start
    assert elapsed < TIME_BUDGET_S, f"{elapsed:.1f} s\n{run.describe()}"
    if measured:
        peak = _peak_bytes()
        if peak is not None:
            assert peak - before < MEMORY_BUDGET_BYTES, (peak - before, run.describe())
    return run


def check_exit(run: CliRun, json_out: bool) -> None:
    assert_no_crash(run)
    assert run.exit_code in (0, 2), run.describe()
    if run.exit_code == 2:
        lines = run.stderr.splitlines()
        assert lines, run.describe()
        usage = any(line.startswith("Usage:") for line in lines)
        if not usage:
            assert lines[-1].startswith("pd-advisor: error: "), run.describe()
            for line in lines[:-1]:
                assert PROBLEM_RE.match(line), f"{line!r}\n{run.describe()}"
        return
    if json_out:
        doc = parse_json(run.stdout)
        assert "NaN" not in json.dumps(doc)
    else:
        context = non_finite_word(run.stdout, [])
        assert context is None, f"...{context}...\n{run.describe()}"


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("fuzzlogs")
    planted = make(phases=SMALL, seed=5)
    out = {"good": write(planted, "burstgpt", root / "good.csv"),
           "directory": root,
           "missing": root / "missing.jsonl"}
    bad = root / "bad.jsonl"
    bad.write_text('{"timestamp": 5, "input_length": 1, "output_length": 1}\n'
                   '{"timestamp": 1, "input_length": 1, "output_length": 1}\n', encoding="utf-8")
    out["bad"] = bad
    return out


_VALID_INTS = st.integers(100, 1500).map(str)
_INTS = st.one_of(_VALID_INTS, _VALID_INTS, _VALID_INTS, st.integers(-10**25, 99).map(str),
                  st.integers(MAX_REQUESTS + 1, 10**25).map(str),
                  st.sampled_from(["1e3", "0x10", "", "NaN", "١٠٠٠"]))
_VALID_FLOATS = st.floats(1e-3, 1e3).map(repr)
_FLOATS = st.one_of(_VALID_FLOATS, _VALID_FLOATS,
                    st.floats(allow_nan=True, allow_infinity=True).map(repr),
                    st.sampled_from(["nan", "inf", "-inf", "0", "1e-300", "1e300", "0.5", "2",
                                     "x"]))


@st.composite
def simulate_args(draw: st.DrawFn, logs: dict[str, Path]) -> tuple[list[str], bool]:
    args = ["simulate", str(WORKLOAD)]
    trace = draw(st.sampled_from([None, None, None, None, "good", "good", "good", "bad",
                                  "missing", "directory"]))
    if trace is not None:
        args += ["--trace", str(logs[trace])]
        if draw(st.integers(0, 3)) == 0:
            args += ["--format-trace", draw(st.sampled_from(
                ["auto", "burstgpt", "burstgpt", "mooncake", "azure", "vllm-bench", "csv"]))]
        if draw(st.booleans()):
            args += ["--time-scale", draw(_FLOATS)]
    if draw(st.booleans()) and (trace is None or draw(st.integers(0, 3)) == 0):
        args += ["--requests", draw(_INTS)]
    if draw(st.booleans()):
        valid_seed = st.integers(0, 10**25).map(str)
        args += ["--seed", draw(st.one_of(valid_seed, valid_seed,
                                          st.integers(-10**25, 10**25).map(str),
                                          st.sampled_from(["", "seed", "1.5"])))]
    if draw(st.booleans()):
        args += ["--mode", draw(st.sampled_from(["chunked", "unchunked", "disaggregated", "all",
                                                 "chunked", "disaggregated", "sideways", ""]))]
    fmt = draw(st.sampled_from([None, "table", "json", "json", "xml"]))
    if fmt is not None:
        args += ["--format", fmt]
    if draw(st.booleans()):
        args.append("--no-progress")
    return args, fmt == "json"


@pytest.fixture(scope="module")
def warm() -> None:
    """Import and evaluate once, outside the time budget of the first example."""
    invoke("simulate", str(WORKLOAD), "-n", "100", "-m", "disaggregated")


@pytest.mark.parametrize("tier", TIERS)
def test_simulate_options(logs: dict[str, Path], warm: None, tier: int) -> None:
    @scaled("simulate", tier)
    @given(simulate_args(logs))
    def run(drawn: tuple[list[str], bool]) -> None:
        args, json_out = drawn
        check_exit(run_bounded(*args), json_out)

    run()


# ------------------------------------------------------------------------------ fit
def _good_line(flavour: str, t: float, prompt: int, output: int, ids: list[int]) -> str:
    if flavour == "mooncake":
        return json.dumps({"timestamp": round(t * 1000), "input_length": prompt,
                           "output_length": output, "hash_ids": ids})
    if flavour == "burstgpt":
        return f"{t:.3f},ChatGPT,{prompt},{output},{prompt + output},Conversation log"
    s = int(t)
    frac = f"{t - s:.7f}"[2:]
    return (f"2023-11-16 {s // 3600 % 24:02d}:{s // 60 % 60:02d}:{s % 60:02d}.{frac},"
            f"{prompt},{output}")


@st.composite
def _good_lines(draw: st.DrawFn, flavour: str) -> list[str]:
    """Rows in arrival order (gaps ≥ 0), lengths from 1 token to past a context window."""
    n = draw(st.integers(0, 400))
    gaps = draw(st.lists(st.floats(0, 5, allow_nan=False), min_size=n, max_size=n))
    lengths = st.one_of(st.integers(1, 4000), st.integers(1, 10**7))
    lines, t = [], 0.0
    for gap in gaps:
        t = min(t + gap, 80_000.0)
        lines.append(_good_line(flavour, t, draw(lengths), draw(lengths),
                                draw(st.lists(st.integers(0, 40), max_size=4))))
    return lines


_HEADERS = {"burstgpt": "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type",
            "azure": "TIMESTAMP,ContextTokens,GeneratedTokens", "mooncake": None}
_JUNK_VALUES = st.one_of(
    st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400", "-1", "0", "null", "true", '""',
                     "9" * 5000, "[" * 3000, "{}", "[]", '"x"', "1.5", "-0"]),
    st.integers(-10**30, 10**30).map(str), st.floats().map(repr))
_JUNK_LINES = st.one_of(
    st.text(max_size=60),
    st.builds(lambda a, b, c: f'{{"timestamp": {a}, "input_length": {b}, "output_length": {c}}}',
              _JUNK_VALUES, _JUNK_VALUES, _JUNK_VALUES),
    st.builds(lambda a, b, c: f"{a},ChatGPT,{b},{c},0,x", _JUNK_VALUES, _JUNK_VALUES,
              _JUNK_VALUES),
    st.builds(lambda a, b, c: f"{a},{b},{c}", _JUNK_VALUES, _JUNK_VALUES, _JUNK_VALUES),
    st.just(""), st.just("\x00\x1b[2J\u202e"))


@st.composite
def fit_inputs(draw: st.DrawFn) -> tuple[bytes, list[str]]:
    flavour = draw(st.sampled_from(sorted(_HEADERS)))
    good = draw(_good_lines(flavour))
    junk = draw(st.one_of(st.just([]), st.lists(_JUNK_LINES, max_size=6)))
    lines = good[:]
    for item in junk:
        lines.insert(draw(st.integers(0, len(lines))), item)
    header = _HEADERS[flavour]
    if header is not None and draw(st.integers(0, 4)):
        lines.insert(0, header)
    body = "\n".join(lines).encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 9)) == 0:
        body = draw(st.binary(max_size=400))
    options: list[str] = []
    if draw(st.integers(0, 3)) == 0:
        options += ["--format-trace", draw(st.sampled_from(
            ["auto", "mooncake", "azure", "burstgpt", "vllm-bench"]))]
    if draw(st.integers(0, 3)) == 0:
        options += ["--time-scale", draw(_FLOATS)]
    options += ["--format", draw(st.sampled_from(["table", "json", "yaml"]))]
    return body, options


@pytest.mark.parametrize("tier", TIERS)
def test_fit_inputs(tmp_path_factory: pytest.TempPathFactory, tier: int) -> None:
    root = tmp_path_factory.mktemp("fitfuzz")
    catalog = ProfileCatalog()

    @scaled("fit", tier)
    @given(fit_inputs(), st.booleans())
    def run(drawn: tuple[bytes, list[str]], write_file: bool) -> None:
        body, options = drawn
        log = root / "log.txt"
        log.write_bytes(body)
        out = root / "out.yaml"
        if out.exists():
            out.unlink()
        args = ["fit", str(log), *options]
        if write_file:
            args += ["-o", str(out)]
        result = run_bounded(*args)
        check_exit(result, "json" in options)
        if result.exit_code == 2:
            assert not out.exists(), result.describe()
            for line in result.stderr.splitlines()[:-1]:
                match = PROBLEM_RE.match(line)
                if match:
                    assert match["path"] == str(log), line
        elif write_file:
            scenario = load_scenario(out, catalog)
            for ph in scenario.phases:
                assert math.isfinite(ph.rate_rps) and ph.rate_rps > 0
        assert sorted(p.name for p in root.iterdir()) in (["log.txt"], ["log.txt", "out.yaml"])

    run()
