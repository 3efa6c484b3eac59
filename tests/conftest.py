"""Shared test fixtures: a stable terminal for every test, and ``run_cli`` around CliRunner."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

REPO_ROOT = Path(__file__).resolve().parent.parent

# ---- Hypothesis profiles ---------------------------------------------------------------------
# "ci" (the default) is deterministic: the same examples on every run. "thorough" draws ten
# times as many, at random, for local bug hunts (add --hypothesis-seed=N to replay a run):
#     python -m pytest tests/fuzz -m "" --hypothesis-profile=thorough
# Tests that set max_examples themselves keep it; the fuzz tests scale theirs with the
# profile's, per tier (tests/fuzz/test_fuzz_cli.py). The profile is independent of the
# `thorough` marker: `-m thorough` selects the thorough test tier (pyproject.toml).
settings.register_profile("ci", max_examples=100, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=1000, deadline=None, derandomize=False,
                          suppress_health_check=[HealthCheck.too_slow], print_blob=True)
settings.load_profile("ci")  # the pytest option --hypothesis-profile=NAME overrides this


@pytest.fixture(autouse=True, scope="session")
def _no_result_cache() -> Any:
    """No result cache for the session's fixtures either: a module-scoped fixture's child
    processes start before :func:`_stable_terminal` applies (#34)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PD_ADVISOR_NO_CACHE", "1")
        patch.delenv("PD_ADVISOR_CACHE_DIR", raising=False)
        yield


@pytest.fixture(autouse=True)
def _stable_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """No colour, fixed widths, no forced terminal (Typer forces one under GitHub Actions),
    and no result cache: no test answers from another's cache (tests/usecases/
    test_result_cache.py turns it on, in its own directory)."""
    monkeypatch.setenv("PD_ADVISOR_NO_CACHE", "1")
    monkeypatch.delenv("PD_ADVISOR_CACHE_DIR", raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.setenv("TERMINAL_WIDTH", "3000")
    monkeypatch.setenv("_TYPER_FORCE_DISABLE_TERMINAL", "1")
    for name in ("GITHUB_ACTIONS", "FORCE_COLOR", "PY_COLORS", "PD_ADVISOR_PROFILES"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def run_cli() -> Callable[..., Any]:
    """Invoke the real Typer app in-process; ``exit_code=`` asserts the exit code.

    Returns the Click ``Result`` (``exit_code``, ``stdout`` and ``stderr`` kept apart).
    Exceptions propagate (``catch_exceptions=False``) so a crash shows its traceback.
    """
    from typer.testing import CliRunner

    from advisor.cli.app import app

    runner = CliRunner()

    def run(*args: object, exit_code: int | None = None,
            env: dict[str, str] | None = None) -> Any:
        result = runner.invoke(app, [str(arg) for arg in args], env=env,
                               catch_exceptions=False)
        if exit_code is not None:
            assert result.exit_code == exit_code, (
                f"exit {result.exit_code} != {exit_code}\n--- stdout\n{result.stdout}"
                f"\n--- stderr\n{result.stderr}")
        return result

    return run


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The hostile-surface fuzz tests' examples by surface and exit code (#33), when they ran."""
    import sys

    # imported by file (no __init__.py), so under its basename or its dotted path
    counts = next((module.COUNTS for name, module in list(sys.modules.items())
                   if name.endswith("test_fuzz_hostile_surfaces") and hasattr(module, "COUNTS")),
                  None)
    if counts:
        terminalreporter.section("fuzz examples by exit code (#33)")
        for outcome, count in sorted(counts.items()):
            terminalreporter.write_line(f"{outcome}: {count}")


# ---- golden files (render tests) -------------------------------------------------------------
def pytest_addoption(parser: pytest.Parser) -> None:
    """``--update-goldens`` rewrites tests/golden/* from the current renderers."""
    parser.addoption("--update-goldens", action="store_true", default=False,
                     help="regenerate the golden report files under tests/golden/")


@pytest.fixture
def update_goldens(request: pytest.FixtureRequest) -> bool:
    """Whether the run was asked to regenerate golden files."""
    return bool(request.config.getoption("--update-goldens"))
