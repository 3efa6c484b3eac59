"""Property-based fuzzing of request logs and benchmark files as an attacker sends them (#33).

Beyond the content fuzzing of ``test_fuzz_simulate_fit`` (logs) and ``test_fuzz_inputs``
(benchmark files), every example here also draws a hostile *file name* (terminal escapes,
bidirectional overrides, YAML that would add keys, a leading dash, a number, ``$…$``) and a
hostile *delivery* (a regular file or a pipe, ``/dev/fd/N``; CR-only line ends), and
benchmark runs carry hostile provenance (``model_id``, ``gpu``, ``engine``, ``tp`` as Unicode
digits, thousands of digits, negative, or with control characters). The contract, through the
real CLI in-process with ``--debug``:

* exit 0 or 2 only, never a traceback or an internal error;
* no character the escaping rule escapes (``advisor.escaping.visible``) in stdout or stderr:
  every output line is printable;
* on exit 2 every diagnostic located or one ``pd-advisor: error:`` line, and no output file;
* on exit 0 a written workload has only the workload format's top-level keys, loads back, and
  its bytes are printable ASCII; a written overlay loads back, and its ``fitted_on.files``
  holds the SHA-256 of the bytes that were read.

The outcomes are counted by exit code and printed at the end of the module (``-s``); the
default tier runs ``WEIGHTS`` × the profile's examples (12 logs and 10 benchmark files under
``ci``), the ``thorough`` tier twenty times as many.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.loading.calibration_overlay import load_overlay
from tests.fuzz.contract import PROBLEM_RE, CliRun, assert_no_crash
from tests.fuzz.test_fuzz_simulate_fit import fit_inputs, run_bounded

REPO_ROOT = Path(__file__).resolve().parents[2]
ECO = REPO_ROOT / "tests" / "data" / "ecosystem"
BENCH = ECO / "bench" / "vllm-appended.json"
BENCH_WORKLOAD = ECO / "workloads" / "llama-8b-h100.yaml"
WEIGHTS = {"log": 0.12, "bench": 0.1}
THOROUGH_FACTOR = 20
WORKLOAD_KEYS = {"version", "name", "model", "precision", "engine", "cluster", "traffic", "slo",
                 "operations"}

COUNTS: Counter[str] = Counter()
"""Examples run per surface and exit code (shrinking included); ``tests/conftest.py`` prints
them in the terminal summary (``fuzz examples by exit code``), in a run without xdist workers."""


def scaled(kind: str, thorough: bool) -> settings:
    weight = WEIGHTS[kind] * (THOROUGH_FACTOR if thorough else 1)
    return settings(max_examples=max(1, round(settings().max_examples * weight)))


PIECES = ["\x1b]0;pwned\x07", "\x1b[2J", "\x1b[8m", "\u202e", "\u2066", "\u200b", "\x85",
          "\u2028", "\n", "\r", "\t", "\x7f", "\x9b", "policy: {min_disagg_gain: 0}", "#",
          ": ", "'", '"', "$\\frac{a}{$", "--trust-remote-code", "-", "2024", "1e3", "yes",
          "~", "null", "é", "中文", "🙂", " ", "log", "[red]x[/]", "%s", "{}", "\\"]
names = st.lists(st.sampled_from(PIECES), min_size=1, max_size=5).map("".join).filter(
    lambda n: n not in (".", "..") and len(n.encode()) < 200)
file_names = names.filter(lambda n: "/" not in n)
"""A name for a file in one directory (``[red]x[/]`` would name a file in a folder ``[red]x[``)."""


def _printable(text: str) -> bool:
    return all(line.isprintable() for line in text.split("\n"))


def _check_streams(done: CliRun) -> None:
    assert_no_crash(done)
    assert done.exit_code in (0, 2), done.describe()
    assert _printable(done.stdout) and _printable(done.stderr), done.describe()


def _check_failure(done: CliRun) -> None:
    lines = done.stderr.splitlines()
    assert lines, done.describe()
    if any(line.startswith("Usage:") for line in lines):  # an option's value (Click)
        return
    assert lines[-1].startswith("pd-advisor: error: "), done.describe()
    for line in lines[:-1]:
        assert PROBLEM_RE.match(line) or line.startswith("pd-advisor: "), (line, done.describe())


class _Pipe:
    """A pipe whose read end is passed as ``/dev/fd/N`` while a thread writes ``data``."""

    def __init__(self, data: bytes) -> None:
        self.read, self.write = os.pipe()
        self.thread = threading.Thread(target=self._feed, args=(data,), daemon=True)

    def _feed(self, data: bytes) -> None:
        try:
            os.write(self.write, data) if len(data) < 65536 else self._chunks(data)
        except OSError:  # the reader stopped early: nothing to deliver
            pass
        finally:
            os.close(self.write)

    def _chunks(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.write, view[:65536]):]

    def __enter__(self) -> str:
        self.thread.start()
        return f"/dev/fd/{self.read}"

    def __exit__(self, *exc: object) -> None:
        os.close(self.read)  # a writer blocked on a full pipe gets EPIPE and ends
        self.thread.join(30)


# ---- request logs ----------------------------------------------------------------------------
def _fuzz_logs(root: Path, thorough: bool) -> None:
    @scaled("log", thorough)
    @given(fit_inputs(), file_names, st.sampled_from(["file", "pipe"]), st.booleans(),
           st.booleans())
    def run(drawn: tuple[bytes, list[str]], name: str, delivery: str, cr_only: bool,
            write: bool) -> None:
        body, options = drawn
        if cr_only:
            body = body.replace(b"\r\n", b"\n").replace(b"\n", b"\r")
        for entry in root.iterdir():
            entry.unlink()
        out = root / "out.yaml"
        extra = ["-o", str(out)] if write else []
        if delivery == "file":
            log = root / name
            log.write_bytes(body)
            done = run_bounded("fit", str(log), *options, *extra)
        else:
            with _Pipe(body) as path:
                done = run_bounded("fit", path, *options, *extra)
        _check_streams(done)
        COUNTS[f"request log ({delivery}): fit exit {done.exit_code}"] += 1
        if done.exit_code == 2:
            assert not out.exists(), done.describe()
            _check_failure(done)
            return
        if write:
            raw = out.read_bytes()
            # printable (a hostile file name is escaped in the header comment); non-ASCII
            # letters of a name (é) and the report's own dashes stay readable
            assert _printable(raw.decode()), raw[:400]
            data = yaml.safe_load(raw)
            assert set(data) <= WORKLOAD_KEYS, sorted(data)
            assert isinstance(data["name"], str)

    run()


def test_fuzz_hostile_request_logs(tmp_path_factory: pytest.TempPathFactory) -> None:
    _fuzz_logs(tmp_path_factory.mktemp("hostile-logs"), thorough=False)


@pytest.mark.thorough
def test_fuzz_hostile_request_logs_thorough(tmp_path_factory: pytest.TempPathFactory) -> None:
    _fuzz_logs(tmp_path_factory.mktemp("hostile-logs-t"), thorough=True)


# ---- benchmark files -------------------------------------------------------------------------
def _runs() -> list[dict[str, Any]]:
    text, decoder, pos = BENCH.read_text(encoding="utf-8"), json.JSONDecoder(), 0
    runs: list[dict[str, Any]] = []
    while pos < len(text):
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos < len(text):
            obj, pos = decoder.raw_decode(text, pos)
            runs.append(obj)
    return runs


RUNS = _runs()
PROVENANCE = {"model_id": names.map(lambda n: f"meta-llama/{n}"), "gpu": names,
              "engine": names, "backend": names,
              "tp": st.one_of(st.sampled_from(["²", "٢", "1" * 5000, "-1", "0", "1.5", " 1 ",
                                               "1", "4"]), st.integers(-5, 10**6), names),
              "num_gpus": st.one_of(st.integers(-5, 10**6), names)}
MEASURES = ["median_ttft_ms", "mean_ttft_ms", "mean_tpot_ms", "output_throughput",
            "request_throughput", "duration", "completed"]
numbers = st.one_of(st.sampled_from([0, -1, 1e-300, 1e300, 10**400, 0.5, 2, 1e9, 1e12]),
                    st.floats(-1e6, 1e6, allow_nan=False))


@st.composite
def bench_files(draw: st.DrawFn) -> str:
    runs = []
    for run in RUNS[:draw(st.integers(1, len(RUNS)))]:
        run = dict(run)
        for key in draw(st.lists(st.sampled_from(sorted(PROVENANCE)), max_size=3, unique=True)):
            run[key] = draw(PROVENANCE[key])
        for key in draw(st.lists(st.sampled_from(MEASURES), max_size=2, unique=True)):
            run[key] = draw(numbers)
        if draw(st.integers(0, 4)) == 0:
            run[draw(names)] = draw(names)  # an unknown key, with a hostile name
        runs.append(run)
    return "".join(json.dumps(run) + "\n" for run in runs)


def _fuzz_bench(root: Path, thorough: bool) -> None:
    @scaled("bench", thorough)
    @given(bench_files(), file_names, st.sampled_from(["file", "pipe"]))
    def run(text: str, name: str, delivery: str) -> None:
        for entry in root.iterdir():
            entry.unlink()
        overlay = root / "overlay.yaml"
        data = text.encode()
        args = ["-w", str(BENCH_WORKLOAD), "-o", str(overlay), "--allow-mismatch"]
        if delivery == "file":
            bench = root / name
            bench.write_bytes(data)
            done = run_bounded("calibrate", str(bench), *args)
        else:
            with _Pipe(data) as path:
                done = run_bounded("calibrate", path, *args)
        _check_streams(done)
        COUNTS[f"benchmark file ({delivery}): calibrate exit {done.exit_code}"] += 1
        if done.exit_code == 2:
            assert not overlay.exists(), done.describe()
            _check_failure(done)
            return
        raw = overlay.read_bytes()
        assert _printable(raw.decode()), raw[:400]
        fitted_on = load_overlay(overlay).fitted_on
        assert fitted_on is not None
        assert [f.sha256 for f in fitted_on.files] == [hashlib.sha256(data).hexdigest()]

    run()


def test_fuzz_hostile_benchmark_files(tmp_path_factory: pytest.TempPathFactory) -> None:
    _fuzz_bench(tmp_path_factory.mktemp("hostile-bench"), thorough=False)


@pytest.mark.thorough
def test_fuzz_hostile_benchmark_files_thorough(tmp_path_factory: pytest.TempPathFactory
                                               ) -> None:
    _fuzz_bench(tmp_path_factory.mktemp("hostile-bench-t"), thorough=True)
