"""Build the wheel, install it in a fresh venv, and run the CLI from outside the source tree.

Proves the package is self-contained: the built-in profiles travel inside the wheel
(``advisor/profiles``) and the console script works. The venv uses ``--system-site-packages``
so the dependencies need no download; the wheel itself is installed with ``--no-deps``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


def _run(args: list[str], cwd: Path, **kwargs: object) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PD_ADVISOR_PROFILES")}
    env["NO_COLOR"] = "1"
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False,
                          timeout=600, **kwargs)  # type: ignore[call-overload]


def _build_wheel(dist: Path, cwd: Path) -> Path:
    """``python -m build --wheel --no-isolation``, else ``pip wheel`` without build isolation,
    else (hatchling not installed here) ``pip wheel`` with isolation, which fetches the backend."""
    attempts = [
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist),
         str(REPO_ROOT)],
        [sys.executable, "-m", "pip", "wheel", str(REPO_ROOT), "--no-deps",
         "--no-build-isolation", "-w", str(dist)],
        [sys.executable, "-m", "pip", "wheel", str(REPO_ROOT), "--no-deps", "-w", str(dist)],
    ]
    logs = []
    for command in attempts:
        proc = _run(command, cwd)
        wheels = sorted(dist.glob("pd_advisor-*.whl"))
        if proc.returncode == 0 and wheels:
            return wheels[-1]
        logs.append(f"$ {' '.join(command)}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    pytest.fail("could not build the wheel (is hatchling installed?):\n" + "\n".join(logs))


@pytest.mark.slow
def test_installed_wheel_runs_outside_the_source_tree(tmp_path: Path) -> None:
    outside = tmp_path / "cwd"
    outside.mkdir()
    wheel = _build_wheel(tmp_path / "dist", outside)

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(system_site_packages=True, with_pip=True).create(env_dir)
    bin_dir = env_dir / ("Scripts" if os.name == "nt" else "bin")
    python = bin_dir / "python"
    install = _run([str(python), "-m", "pip", "install", "--no-deps", "--no-index",
                    "--force-reinstall", str(wheel)], outside)
    assert install.returncode == 0, install.stderr

    # the installed copy, not the source tree, is imported
    where = _run([str(python), "-c", "import advisor, sys; print(advisor.__file__)"], outside)
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).resolve().is_relative_to(env_dir.resolve())

    cli = bin_dir / "pd-advisor"
    version = _run([str(cli), "--version"], outside)
    assert version.returncode == 0, version.stderr
    assert version.stdout.startswith("pd-advisor ")

    listing = _run([str(cli), "profiles", "list"], outside)
    assert listing.returncode == 0, listing.stderr
    assert "h100-sxm" in listing.stdout and "llama-3.1-8b" in listing.stdout

    example = (REPO_ROOT / "examples" / "chat-8b-single-node.yaml").resolve()
    validated = _run([str(cli), "validate", str(example)], outside)
    assert validated.returncode == 0, validated.stderr
    assert "chat-8b-single-node" in validated.stdout and "Traceback" not in validated.stderr

    schema = _run([str(cli), "schema"], outside)
    assert schema.returncode == 0 and '"$schema"' in schema.stdout
