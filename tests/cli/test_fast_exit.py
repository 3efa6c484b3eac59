"""The console script ends the process with ``os._exit`` after flushing (``advisor.__main__``):
the output is complete and the exit codes are the command's, in-process callers still get
``SystemExit``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.__main__ import exit_status
from advisor.cli.app import main, make_app

ROOT = Path(__file__).resolve().parents[2]
CHAT = str(ROOT / "examples" / "chat-8b-single-node.yaml")
ENV = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1"}

_CONSOLE = ("import atexit, sys\n"
            "atexit.register(lambda: sys.stderr.write('interpreter teardown ran\\n'))\n"
            "sys.argv = ['pd-advisor', *sys.argv[1:]]\n"
            "from advisor.__main__ import console\n"
            "console()\n")


def _console(*argv: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-c", _CONSOLE, *argv], cwd=ROOT, env=ENV,
                          capture_output=True, check=False, timeout=120)


def test_the_report_is_complete_and_the_teardown_skipped() -> None:
    proc = _console("recommend", CHAT, "--format", "json")
    in_process = CliRunner().invoke(make_app(), ["recommend", CHAT, "--format", "json"],
                                    env={"COLUMNS": "100", "NO_COLOR": "1"})
    assert proc.returncode == 0 == in_process.exit_code
    assert proc.stdout.decode() == in_process.stdout
    assert b"teardown" not in proc.stderr


def test_exit_codes_are_the_commands(tmp_path: Path) -> None:
    bad = _console("recommend", str(tmp_path / "missing.yaml"))
    assert bad.returncode == 2 and b"file not found" in bad.stderr
    assert _console("--version").returncode == 0
    out = tmp_path / "report.md"
    wrote = _console("recommend", CHAT, "--format", "markdown", "-o", str(out))
    assert wrote.returncode == 0
    assert out.read_text(encoding="utf-8") == CliRunner().invoke(
        make_app(), ["recommend", CHAT, "--format", "markdown"]).stdout


def test_python_dash_m_advisor_is_the_console_script() -> None:
    proc = subprocess.run([sys.executable, "-m", "advisor", "check", CHAT], cwd=ROOT, env=ENV,
                          capture_output=True, check=False, timeout=120)
    in_process = CliRunner().invoke(make_app(), ["check", CHAT],
                                    env={"COLUMNS": "100", "NO_COLOR": "1"})
    assert proc.returncode == in_process.exit_code  # the gate's own code, 0 or 1
    assert proc.returncode in (0, 1)
    assert proc.stdout.decode() == in_process.stdout


def test_in_process_main_still_raises_system_exit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["pd-advisor", "--version"])
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code in (0, None)


def test_exit_status_is_sys_exits(capsys: pytest.CaptureFixture[str]) -> None:
    assert exit_status(None) == 0 and exit_status(2) == 2 and exit_status(256 + 1) == 1
    assert exit_status("boom") == 1
    assert capsys.readouterr().err == "boom\n"
