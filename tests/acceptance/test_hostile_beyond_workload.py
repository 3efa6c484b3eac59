"""Hostile input beyond the workload file (issue #21): one test per finding of the issue.

Each test runs the hostile file or command through the real CLI and checks the exit code and
the substance of the message; the resource limits are measured the way
``test_hostile_input.py`` measures them (a child interpreter, wall time and growth of the
peak resident size per run, after a warm-up).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.acceptance.test_hostile_input import _env, _measure

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = REPO_ROOT / "examples" / "chat-8b-single-node.yaml"
DAY_NIGHT = REPO_ROOT / "examples" / "day-night-shift.yaml"
HF_CONFIG = REPO_ROOT / "tests" / "data" / "ecosystem" / "hf" / "llama-3.1-8b" / "config.json"
BENCH = REPO_ROOT / "tests" / "data" / "ecosystem" / "bench" / "vllm-fixture-a.json"
APPENDED = BENCH.parent / "vllm-appended.json"  # fixture A alone is refused (#18: eff. 1.0)
BENCH_WORKLOAD = BENCH.parent.parent / "workloads" / "llama-8b-h100.yaml"
GPU_PROFILE = REPO_ROOT / "profiles" / "gpus" / "h100-sxm.yaml"

ESCAPES = ("x\x1b]52;c;aGk=\x07\x1b]0;pwned\x07\x1b[8mhidden\x1b[0m "
           "![x](https://evil.example/x.png) [c](javascript:alert(1)) @everyone <img src=x>")


def _cli(*args: object, cwd: Path, env: dict[str, str] | None = None,
         **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
    """``python -m advisor ARGS`` (the console entry point, with its stdout guard)."""
    return subprocess.run([sys.executable, "-m", "advisor", *map(str, args)], cwd=cwd,
                          env={**_env(), **(env or {})}, capture_output=True, timeout=120,
                          check=False, **kwargs)


def _workload(tmp_path: Path, name: str = "w.yaml", **replace: str) -> Path:
    text = EXAMPLE.read_text(encoding="utf-8")
    for old, new in replace.items():
        text = text.replace(old, new)
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _phases(count: int) -> str:
    lines = ["traffic:", "  phases:"]
    for i in range(count):
        lines += [f"    - name: p{i}", f"      share: {1 / count!r}", "      rate_rps: 5",
                  "      prompt_tokens: 500", "      output_tokens: 100"]
    return "\n".join(lines) + "\n"


# ---- (1) bounds ----------------------------------------------------------------------------
def test_phases_are_bounded(tmp_path: Path) -> None:
    """1,000 phases (33 KB) ran recommend past 600 s; now refused at once, within 1 s/100 MB."""
    text = EXAMPLE.read_text(encoding="utf-8")
    head, rest = text.split("traffic:")
    workload = tmp_path / "phases.yaml"
    workload.write_text(head + _phases(1000) + "\n" + rest[rest.index("slo:"):],
                        encoding="utf-8")
    [result], stderr = _measure(tmp_path, [["recommend", str(workload)]])
    assert result["exit"] == 2 and result["seconds"] < 1.0, result
    assert result["growth_bytes"] < 100 * 2**20, result
    assert "traffic.phases: at most 24 entries are accepted, got 1000" in stderr


def test_benchmark_file_of_64_mib_is_refused_quickly(tmp_path: Path) -> None:
    """5,000 appended runs took 311 s; a 64 MiB file of runs is refused after its 65th run."""
    one = json.dumps(json.loads(BENCH.read_text(encoding="utf-8"))) + "\n"
    bench = tmp_path / "appended.json"
    bench.write_text(one * (64 * 2**20 // len(one)), encoding="utf-8")
    assert bench.stat().st_size > 60 * 2**20
    [result], stderr = _measure(tmp_path, [["calibrate", str(bench), "-w", str(EXAMPLE),
                                            "-o", str(tmp_path / "c.yaml")]])
    assert result["exit"] == 2, result
    assert result["seconds"] < 10.0, result  # "well under a minute"
    assert result["growth_bytes"] < 400 * 2**20, result  # the file's bytes and its text
    assert (f"{bench}:65:1: error: more than 64 benchmark runs; pd-advisor fits at most 64"
            in stderr)
    assert not (tmp_path / "c.yaml").exists()


@pytest.mark.thorough  # ~16 s: a 20,000-point sweep twice, memory measured (thorough tier)
def test_sweep_json_memory_does_not_grow_with_points(tmp_path: Path) -> None:
    """20,000 points as JSON grew 130 MB before streaming; now within 50 MB."""
    args = ["sweep", str(EXAMPLE), "--vary", "traffic.rate_rps=1:200:200", "--vary",
            "traffic.prompt_tokens=100:10000:100", "--format"]
    results, stderr = _measure(tmp_path, [[*args, "json", "-o", str(tmp_path / "s.json")],
                                          [*args, "csv", "-o", str(tmp_path / "s.csv")]])
    for result in results:
        assert result["exit"] == 0, (result, stderr)
        assert result["growth_bytes"] < 50 * 2**20, result
    doc = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))
    assert doc["points_total"] == len(doc["points"]) == 20_000
    assert len((tmp_path / "s.csv").read_text(encoding="utf-8").splitlines()) == 20_001


def test_sweep_stream_is_byte_identical(monkeypatch: pytest.MonkeyPatch) -> None:
    """The streamed JSON and CSV equal the whole-document rendering, over several pieces."""
    from advisor.core.analysis.sweep import sweep
    from advisor.loading.catalog import ProfileCatalog
    from advisor.loading.resolve import load_scenario
    from advisor.loading.sweep_spec import axis_from_vary
    from advisor.render import sweep_report as rep

    catalog = ProfileCatalog()
    scenario = load_scenario(EXAMPLE, catalog)
    axes = [axis_from_vary(text, catalog.link)
            for text in ("traffic.rate_rps=1:50:7", "cluster.gpus=2,4,8")]
    result = sweep(scenario, axes, workload=scenario.name)
    monkeypatch.setattr(rep, "CHUNK_POINTS", 4)
    assert len(list(rep.json_chunks(result, "w.yaml", {}))) > 3
    assert "".join(rep.json_chunks(result, "w.yaml", {})) == rep.render_json(
        rep.sweep_document(result, "w.yaml", {}))
    assert "".join(rep.csv_chunks(result)).count("\n") == 22


def test_simulated_requests_are_bounded(run_cli: Any, tmp_path: Path) -> None:
    """--requests 10**10 was a MemoryError, 10**20 a ValueError: now a usage error."""
    for requests in ("10000000000", "99999999999999999999"):
        result = run_cli("simulate", EXAMPLE, "--requests", requests, exit_code=2)
        assert "less than or equal to 10000000" in result.stderr


# ---- (2) outputs ---------------------------------------------------------------------------
def test_parallel_writers_leave_one_whole_file(tmp_path: Path) -> None:
    """8 writers of one -o file: the file is always one writer's complete text."""
    from advisor.cli.output import write_output

    target = tmp_path / "shared.json"
    texts = [json.dumps({"writer": i, "pad": "x" * 200_000}) for i in range(8)]
    for _ in range(5):
        threads = [threading.Thread(target=write_output, args=(t, target)) for t in texts]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert target.read_text(encoding="utf-8") in texts
    assert [p.name for p in tmp_path.iterdir()] == ["shared.json"]  # no temporary left


def test_output_over_an_input_is_refused(run_cli: Any, tmp_path: Path) -> None:
    workload = _workload(tmp_path)
    before = workload.read_bytes()
    link = tmp_path / "link.yaml"
    link.symlink_to(workload)
    for args in (["recommend", workload, "-o", workload], ["check", workload, "-o", link],
                 ["sweep", workload, "--vary", "traffic.rate_rps=5,10", "-o", workload],
                 ["calibrate", BENCH, "-w", workload, "-o", workload]):
        result = run_cli(*args, exit_code=2)
        assert "it is an input of this run" in result.stderr, result.stderr
    assert workload.read_bytes() == before


@pytest.mark.parametrize("command", [["profiles", "list"], ["schema"], ["validate"],
                                     ["recommend"], ["check", "--exit-zero"]])
def test_closed_pipe_exits_0_and_dev_full_exits_2(tmp_path: Path, command: list[str]) -> None:
    """A reader that stopped: exit 0, silent (was 1). /dev/full: one line, exit 2."""
    args = [*command, EXAMPLE] if command[0] in ("validate", "recommend", "check") else command
    proc = subprocess.Popen([sys.executable, "-m", "advisor", *map(str, args)], cwd=tmp_path,
                            env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the first write
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, stderr
    assert "Traceback" not in stderr and "error" not in stderr, stderr
    with open("/dev/full", "wb") as full:
        done = subprocess.run([sys.executable, "-m", "advisor", *map(str, args)], cwd=tmp_path,
                              env=_env(), stdout=full, stderr=subprocess.PIPE, timeout=120,
                              check=False)
    assert done.returncode == 2
    assert done.stderr.decode().splitlines()[-1] == (
        "pd-advisor: error: cannot write the output (standard output): No space left on device")


# ---- (3) safe text -------------------------------------------------------------------------
def test_escape_sequences_and_markdown_injection_are_neutralised(tmp_path: Path) -> None:
    workload = _workload(tmp_path, **{"name: chat-8b-single-node":
                                      "name: " + json.dumps(ESCAPES)})
    outputs = {
        "recommend": _cli("recommend", workload, cwd=tmp_path),
        "validate": _cli("validate", workload, cwd=tmp_path),
        "sweep": _cli("sweep", workload, "--vary", "traffic.rate_rps=5,10", cwd=tmp_path),
        "check": _cli("check", workload, "--format", "github", "--exit-zero", cwd=tmp_path),
    }
    for command, proc in outputs.items():
        text = proc.stdout.decode()
        assert proc.returncode == 0, (command, proc.stderr)
        assert not any(c in text for c in "\x1b\x07"), command
    assert "\\x1b]52;c;aGk=\\x07" in outputs["recommend"].stdout.decode()
    markdown = _cli("recommend", workload, "--format", "markdown", cwd=tmp_path).stdout.decode()
    assert "\x1b" not in markdown and "@everyone" not in markdown
    assert "![x](" not in markdown and "[c](" not in markdown and "<img" not in markdown
    assert "https://evil" not in markdown  # no bare link either
    assert "\\[c\\](javascript:alert(1))" in markdown  # shown, inert


@pytest.mark.parametrize("char", ["\x1c", "\x1b", "\u2028"])
def test_a_usage_error_shows_control_characters_escaped(run_cli: Any, char: str) -> None:
    """A value echoed by a usage error (a ``--vary`` SPEC) cannot inject a line or an escape
    sequence (found by the thorough sweep-options fuzz: ``cluster.gpus=0\\x1c0``)."""
    result = run_cli("sweep", EXAMPLE, "--format", "json", "--vary",
                     f"cluster.gpus=0{char}0", exit_code=2)
    assert result.stderr.count("\n") == 1 and char not in result.stderr
    assert "is not a list of numbers" in result.stderr
    assert repr(char)[1:-1] in result.stderr  # shown as its escape


@pytest.mark.thorough  # ~11 s: eight subprocesses under four locales (thorough tier)
def test_json_is_the_same_bytes_in_every_locale(tmp_path: Path) -> None:
    """POSIX locale without UTF-8 mode failed with UnicodeEncodeError; latin-1 changed bytes."""
    workload = _workload(tmp_path, **{"name: chat-8b-single-node": 'name: "naïve × café"'})
    runs = [_cli(command, workload, "--format", "json", cwd=tmp_path, env=env)
            for command in ("recommend", "check")
            for env in ({}, {"LC_ALL": "POSIX", "LANG": "POSIX", "PYTHONUTF8": "0"},
                        {"PYTHONIOENCODING": "latin-1"}, {"PYTHONIOENCODING": "ascii"})]
    for proc in runs:
        assert proc.returncode in (0, 1), proc.stderr
    assert len({proc.stdout for proc in runs[:4]}) == 1
    assert len({proc.stdout for proc in runs[4:]}) == 1
    assert "naïve × café" in runs[0].stdout.decode("utf-8")


# ---- (4) located errors --------------------------------------------------------------------
@pytest.mark.parametrize(("value", "message"), [
    ("Infinity", "18:24: error: Infinity: NaN and Infinity are not JSON numbers"),
    ("NaN", "18:24: error: NaN: NaN and Infinity are not JSON numbers"),
    ("1" + "0" * 400, "18:24: error: 100000000000000000000000...: the number is beyond the "
                      "floating-point range"),
    ("1e300", "18:24: error: num_hidden_layers: must be at most 10,000 (80 times the deepest "
              "published model), got 1e+300"),
])
def test_hostile_config_json_is_located(run_cli: Any, tmp_path: Path, value: str,
                                        message: str) -> None:
    config = tmp_path / "cfg" / "config.json"
    config.parent.mkdir()
    config.write_text(HF_CONFIG.read_text(encoding="utf-8").replace(
        '"num_hidden_layers": 32', f'"num_hidden_layers": {value}'), encoding="utf-8")
    workload = _workload(tmp_path, **{"model: llama-3.1-8b": f"model: {config}"})
    for command in ("recommend", "check"):
        result = run_cli(command, workload, exit_code=2)
        assert f"{config}:{message}" in result.stderr, result.stderr
        assert "internal error" not in result.stderr + result.stdout


@pytest.mark.parametrize(("old", "new", "message"), [
    ('"mean_ttft_ms": 51.5', '"mean_ttft_ms": 1' + "0" * 400,
     "9:18: error: the number 100000000000000000000000... is beyond the floating-point range"),
    ('"latencies": [1.3764, 1.4215, 1.494, 1.3921]', '"latencies": [1e308, 1e308, 1e308]',
     "key 'latencies' holds a latency of 1e+308 s; at most 1,000,000 s is accepted"),
    ('"median_ttft_ms": 50.0', '"median_ttft_ms": 1e300',
     "key 'median_ttft_ms' holds a latency of 1e+297 s; at most 1,000,000 s is accepted"),
])
def test_hostile_benchmark_files_are_refused(run_cli: Any, tmp_path: Path, old: str, new: str,
                                             message: str) -> None:
    bench = tmp_path / "bench.json"
    bench.write_text(BENCH.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
    result = run_cli("calibrate", bench, "-w", EXAMPLE, "-o", tmp_path / "c.yaml", exit_code=2)
    assert message in result.stderr, result.stderr
    assert not (tmp_path / "c.yaml").exists()  # no overlay from an impossible measurement


@pytest.mark.parametrize(("old", "new", "message"), [
    ("value: 3.35e+12", "value: 5.0e-324", "20:3: error: memory_bandwidth_bytes_per_s.value: "
     "Input should be greater than or equal to 10000000000"),  # was an IndexError
    ("value: 8\n", "value: 9223372036854775808\n", "24:3: error: gpus_per_node.value: Input "
     "should be less than or equal to 100000"),  # an OverflowError, found by fuzzing
])
def test_profile_override_outside_the_physical_range(run_cli: Any, tmp_path: Path, old: str,
                                                     new: str, message: str) -> None:
    (tmp_path / "gpus").mkdir()
    (tmp_path / "gpus" / "h100-sxm.yaml").write_text(GPU_PROFILE.read_text(
        encoding="utf-8").replace(old, new), encoding="utf-8")
    result = run_cli("recommend", EXAMPLE, "--profiles", tmp_path, exit_code=2)
    assert f"{tmp_path / 'gpus' / 'h100-sxm.yaml'}:{message}" in result.stderr, result.stderr


def test_overlay_with_an_impossible_factor_is_refused(run_cli: Any, tmp_path: Path) -> None:
    """A calibration overlay whose per-request overhead is 10**9 s was accepted (the fit
    writes only the factors the runs constrain; these runs constrain the per-request one)."""
    overlay = tmp_path / "cal.yaml"
    run_cli("calibrate", BENCH, APPENDED, "-w", BENCH_WORKLOAD, "-o", overlay, exit_code=0)
    text = overlay.read_text(encoding="utf-8")
    lines = text.splitlines()
    row = next(i for i, line in enumerate(lines) if line.strip() == "request_overhead_s:") + 1
    lines[row] = "    value: 1.0e+9"
    overlay.write_text("\n".join(lines) + "\n", encoding="utf-8")
    workload = _workload(tmp_path, **{"operations:": "calibration: cal.yaml\noperations:"})
    result = run_cli("validate", workload, exit_code=2)
    assert (f"{overlay}:{row + 1}:5: error: efficiency.request_overhead_s.value: Input should "
            "be less than or equal to 10") in result.stderr, result.stderr


def test_symlink_loop_in_a_profile_directory(run_cli: Any, tmp_path: Path) -> None:
    """A loop broke every command; now only a command using it fails (located), and
    ``profiles list`` warns."""
    (tmp_path / "gpus").mkdir()
    (tmp_path / "gpus" / "a.yaml").symlink_to("b.yaml")
    (tmp_path / "gpus" / "b.yaml").symlink_to("a.yaml")
    run_cli("recommend", EXAMPLE, "--profiles", tmp_path, "--format", "json", exit_code=0)
    listing = run_cli("profiles", "list", "gpus", "--profiles", tmp_path, exit_code=0)
    assert "pd-advisor: warning: invalid profile" in listing.stderr
    assert "symbolic link loop" in listing.stderr
    workload = _workload(tmp_path, **{"gpu: h100-sxm ": "gpu: a "})
    result = run_cli("recommend", workload, "--profiles", tmp_path, exit_code=2)
    assert (f"{tmp_path / 'gpus' / 'a.yaml'}:1:1: error: symbolic link loop"
            in result.stderr), result.stderr


# ---- (5) exit contract ---------------------------------------------------------------------
def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a running process (Linux ``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_sigint_says_interrupted_and_exits_130(tmp_path: Path) -> None:
    # SIGINT back to its default in the child: a test run started as a background job of a
    # non-interactive shell inherits SIGINT ignored, and Python then never raises
    # KeyboardInterrupt (the simulation would run its 5,000,000 requests to the end).
    proc = subprocess.Popen([sys.executable, "-m", "advisor", "simulate", str(EXAMPLE),
                             "--requests", "5000000"], cwd=tmp_path, env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        # Imports done, simulating: wait for CPU time, not wall time (a loaded machine
        # stretches the imports' wall time; a cold start takes under 1.5 s of CPU).
        deadline = time.monotonic() + 120.0
        while _cpu_seconds(proc.pid) < 3.0 and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()  # never leave a 5,000,000-request simulation behind
    assert proc.returncode == 130
    assert stderr.decode().splitlines()[-1] == "pd-advisor: interrupted"


def test_init_out_of_range_is_a_usage_error(run_cli: Any, tmp_path: Path) -> None:
    result = run_cli("init", "--gpus", "100001", "-o", tmp_path / "w.yaml", exit_code=2)
    assert "less than or equal to 100000" in result.stderr
    assert "internal error" not in result.stderr and "/tmp" not in result.stderr
    assert not (tmp_path / "w.yaml").exists()


def test_phase_share_tolerance_is_symmetric(run_cli: Any, tmp_path: Path) -> None:
    text = DAY_NIGHT.read_text(encoding="utf-8")
    for night, ok in (("0.400001", True), ("0.399999", True), ("0.4000011", False),
                      ("0.3999989", False)):
        path = tmp_path / f"w-{night}.yaml"
        path.write_text(text.replace("share: 0.4 ", f"share: {night} "), encoding="utf-8")
        result = run_cli("validate", path, exit_code=0 if ok else 2)
        assert ok or "phase shares add up to" in result.stderr


def test_integer_valued_float_is_named(run_cli: Any, tmp_path: Path) -> None:
    workload = _workload(tmp_path, **{"  gpus: 8 ": "  gpus: 8.0 "})
    result = run_cli("validate", workload, exit_code=2)
    assert ("cluster.gpus: must be an integer, got 8.0 (a number with a decimal point); "
            "write 8") in result.stderr


def test_format_environment_variable(run_cli: Any) -> None:
    """PD_ADVISOR_FORMAT=github (a check format) broke recommend; it now applies to check."""
    result = run_cli("recommend", EXAMPLE, env={"PD_ADVISOR_FORMAT": "github"}, exit_code=0)
    assert result.stdout.startswith("pd-advisor")  # the table
    check = run_cli("check", EXAMPLE, "--exit-zero", env={"PD_ADVISOR_FORMAT": "github"},
                    exit_code=0)
    assert check.stdout.startswith("::")


def test_calibrate_hint_is_relative_to_the_workload(run_cli: Any, tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    workload = tmp_path / "sub" / "w.yaml"
    workload.write_text(BENCH_WORKLOAD.read_text(encoding="utf-8"), encoding="utf-8")
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        result = run_cli("calibrate", BENCH, APPENDED, "-w", "sub/w.yaml", "-o", "cal.yaml",
                         exit_code=0)
    finally:
        os.chdir(cwd)
    assert "add `calibration: ../cal.yaml` to sub/w.yaml" in result.stderr
    assert workload.exists()

