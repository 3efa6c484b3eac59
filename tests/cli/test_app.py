"""The command line wires only the command it runs, and that changes nothing a user sees."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.cli import app as app_module
from advisor.cli import commands

ROOT = Path(__file__).resolve().parents[2]
CHAT = str(ROOT / "examples" / "chat-8b-single-node.yaml")

ARGVS = [
    [], ["--help"], ["--version"], ["bogus"], ["recommnd", CHAT],
    ["recommend", "--help"], ["--debug", "check", "--help"], ["profiles", "list"],
    ["profiles", "show", "h100-sxm"], ["schema", "workload"], ["validate", CHAT],
    ["recommend", CHAT, "--format", "json"], ["check", CHAT], ["check", "--format", "nope", CHAT],
    ["sweep", "--help"], ["simulate", "--help"], ["calibrate", "--help"], ["init", "--help"],
    ["fit", "--help"],
]


@pytest.mark.parametrize("argv", ARGVS, ids=lambda a: " ".join(a) or "(none)")
def test_one_command_app_behaves_like_the_whole_app(argv: list[str]) -> None:
    """Output and exit code are the same whether the app has every command or only the one
    ``invoked_command`` picks (help, usage errors and unknown commands get the whole app)."""
    runner = CliRunner()
    whole = runner.invoke(app_module.make_app(), argv, env={"COLUMNS": "100"})
    slim = runner.invoke(app_module.make_app(app_module.invoked_command(argv)), argv,
                         env={"COLUMNS": "100"})
    assert (slim.exit_code, slim.stdout, slim.stderr) == (
        whole.exit_code, whole.stdout, whole.stderr)


def test_invoked_command() -> None:
    """The first word that is not an option names the command; completion needs them all."""
    assert app_module.invoked_command(["--debug", "check", "x.yaml"]) == "check"
    assert app_module.invoked_command(["profiles", "show", "recommend"]) == "profiles"
    assert app_module.invoked_command(["x.yaml", "recommend"]) is None
    assert app_module.invoked_command(["--help"]) is None
    assert app_module.invoked_command([]) is None
    assert set(commands.NAMES) == {"profiles", "validate", "schema", "recommend", "check",
                                   "simulate", "calibrate", "init", "sweep", "fit"}


def test_completion_gets_every_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(app_module.COMPLETION_ENV, "complete_bash")
    assert app_module.invoked_command(["check"]) is None


def test_a_run_imports_only_its_command() -> None:
    """``pd-advisor check`` does not import the modules of the other commands."""
    code = ("import sys; sys.argv = ['pd-advisor', 'check', sys.argv[1]]\n"
            "from advisor.cli.app import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith('advisor.cli.')))")
    proc = subprocess.run([sys.executable, "-c", code, CHAT], capture_output=True, text=True,
                          cwd=ROOT, check=False, timeout=120)
    loaded = proc.stdout.strip().splitlines()[-1]
    assert "advisor.cli.check_cmd" in loaded
    for other in ("sweep_cmd", "simulate_cmd", "calibrate_cmd", "init_cmd", "profiles_cmd",
                  "schema_cmd", "validate_cmd"):
        assert f"advisor.cli.{other}" not in loaded, loaded
