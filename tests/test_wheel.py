"""Build the wheel, install it in a fresh venv, and run the CLI from outside the source tree.

Proves the package is self-contained: the built-in profiles travel inside the wheel
(``advisor/profiles``), the console script works, and ``recommend`` and ``check`` give on every
file of ``examples/`` (copied to a directory outside the repository) the same exit code and the
same JSON as the source tree. Also pins what a cold start imports: ``import advisor``,
``--version``, ``--help``, and ``recommend`` and ``check`` on the examples load neither scipy
nor matplotlib.

The dependencies need no download: the fresh venv is given the *running* interpreter's
packages through a ``.pth`` file naming its site-packages directories (``site.getsitepackages()``
and, when enabled, the user site). ``--system-site-packages`` would not do: created from a venv
interpreter, it exposes the *base* interpreter's packages, not the venv's, and the wheel's
dependencies (typer, ...) are missing wherever the base interpreter has none — the README's
test command run in a fresh venv (issue #13). The wheel itself is installed with ``--no-deps``
by the running interpreter's pip (``pip --python``) before the ``.pth`` is written, so pip sees
an empty environment. The wheel is built and installed once per module.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import venv
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((REPO_ROOT / "examples").glob("*.yaml"))
HEAVY = ("scipy", "matplotlib")  # module-name prefixes a cold start must not import
UNNEEDED = ("numpy.ma",)
"""Numpy modules the common path has no use for (``np.unique`` imports the masked arrays,
≈ 10 ms; ``advisor.core.arrays.unique_sorted`` replaces it)."""
NOT_FOR_RECOMMEND = ("advisor.core.analysis.figure_data", "advisor.core.analysis.sweep",
                     "advisor.render.plot", "advisor.render.report_plot",
                     "advisor.loading.hf_config")
"""Modules a table ``recommend`` without ``--plot`` has no use for (issue #20): the figure's
data and drawing (``--plot``, the HTML report), the sweep grid (``sweep``), ``config.json``
models (a model reference naming a ``*.json`` file or a directory)."""
NOT_FOR_CHECK = (*NOT_FOR_RECOMMEND, "advisor.core.analysis.boundaries",
                 "advisor.core.analysis.search", "advisor.core.analysis.points",
                 "advisor.core.analysis", "advisor.core.analysis.keys")
"""``check`` evaluates without the verdict boundaries, so without their searches either."""
SUBCOMMANDS = ("recommend", "check", "sweep", "simulate", "calibrate", "init", "validate",
               "schema", "profiles")

pytestmark = pytest.mark.slow


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


@dataclass(frozen=True)
class Installed:
    """The wheel installed in a fresh venv, and places outside the source tree to run it."""

    env_dir: Path
    python: Path
    cli: Path
    outside: Path  # an empty working directory
    examples: Path  # copies of examples/*.yaml

    def run(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        """``pd-advisor ARGS`` through the venv's console script."""
        return _run([str(self.cli), *args], cwd or self.outside)

    def modules_after(self, argvs: list[list[str]]) -> tuple[list[int], list[str]]:
        """Exit codes of ``main()`` for each argv (run one after another in one fresh venv
        interpreter, output discarded) and every module imported by then. With no argvs, just
        ``import advisor``."""
        out = self.outside / "probe.json"
        out.unlink(missing_ok=True)
        probe = _run([str(self.python), "-c", _PROBE, json.dumps(argvs), str(out)],
                     self.examples)
        if probe.returncode != 0 or not out.exists():
            pytest.fail(f"probe failed (exit {probe.returncode}):\n{probe.stderr[-3000:]}")
        result = json.loads(out.read_text(encoding="utf-8"))
        if not Path(result["file"]).resolve().is_relative_to(self.env_dir.resolve()):
            pytest.fail(f"imported {result['file']}, not the installed wheel")
        return result["codes"], result["modules"]


# Run in the venv's interpreter: argv[1] is a JSON list of argument lists for the console
# entry point (empty: only ``import advisor``), argv[2] the file for the result.
_PROBE = r"""
import contextlib, io, json, sys
argvs, out = json.loads(sys.argv[1]), sys.argv[2]
codes = []
import advisor
if argvs:
    from advisor.cli.app import main
    for args in argvs:
        sys.argv = ["pd-advisor", *args]
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                main()
                codes.append(0)
            except SystemExit as exc:
                codes.append(exc.code if isinstance(exc.code, int) else int(exc.code is not None))
with open(out, "w", encoding="utf-8") as fh:
    json.dump({"codes": codes, "modules": sorted(sys.modules), "file": advisor.__file__}, fh)
"""


def _heavy(modules: list[str]) -> list[str]:
    return [name for name in modules if name.startswith(HEAVY)]


def running_site_packages() -> list[str]:
    """The running interpreter's site-packages directories (a venv's own, plus the base
    interpreter's only if that venv was itself made with ``--system-site-packages``; the user
    site when this interpreter uses it), in ``sys.path`` precedence order."""
    candidates = list(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        candidates.append(site.getusersitepackages())
    return [path for path in dict.fromkeys(candidates) if Path(path).is_dir()]


def _share_running_site_packages(python: Path, cwd: Path) -> Path:
    """Write a ``.pth`` file into the venv of ``python`` naming ``running_site_packages()``.

    Plain path lines: the named directories are appended to ``sys.path`` after the venv's own
    site-packages (so the installed wheel wins over, say, an editable install of the source
    tree), and their own ``.pth`` files are not processed."""
    where = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                 cwd)
    assert where.returncode == 0, where.stderr
    pth = Path(where.stdout.strip()) / "_pd_advisor_test_outer_site.pth"
    pth.write_text("".join(f"{path}\n" for path in running_site_packages()), encoding="utf-8")
    return pth


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    base = tmp_path_factory.mktemp("wheel")
    assert not base.resolve().is_relative_to(REPO_ROOT.resolve())
    outside = base / "cwd"
    outside.mkdir()
    wheel = _build_wheel(base / "dist", outside)

    env_dir = base / "venv"
    venv.EnvBuilder(system_site_packages=False, with_pip=False).create(env_dir)
    bin_dir = env_dir / ("Scripts" if os.name == "nt" else "bin")
    python = bin_dir / "python"
    pip_install = ["install", "--no-deps", "--no-index", str(wheel)]
    install = _run([sys.executable, "-m", "pip", "--python", str(python), *pip_install], outside)
    if install.returncode != 0 and "no such option" in install.stderr:  # pip < 22.3
        assert _run([str(python), "-m", "ensurepip"], outside).returncode == 0
        install = _run([str(python), "-m", "pip", *pip_install], outside)
    assert install.returncode == 0, install.stderr
    _share_running_site_packages(python, outside)

    examples = base / "examples"
    examples.mkdir()
    for path in EXAMPLES:
        shutil.copy2(path, examples / path.name)
    return Installed(env_dir, python, bin_dir / "pd-advisor", outside, examples)


def test_installed_wheel_runs_outside_the_source_tree(installed: Installed) -> None:
    # the installed copy, not the source tree, is imported
    where = _run([str(installed.python), "-c", "import advisor; print(advisor.__file__)"],
                 installed.outside)
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).resolve().is_relative_to(installed.env_dir.resolve())

    version = installed.run("--version")
    assert version.returncode == 0, version.stderr
    assert version.stdout.startswith("pd-advisor ")

    listing = installed.run("profiles", "list")
    assert listing.returncode == 0, listing.stderr
    assert "h100-sxm" in listing.stdout and "llama-3.1-8b" in listing.stdout

    example = (REPO_ROOT / "examples" / "chat-8b-single-node.yaml").resolve()
    validated = installed.run("validate", str(example))
    assert validated.returncode == 0, validated.stderr
    assert "chat-8b-single-node" in validated.stdout and "Traceback" not in validated.stderr

    schema = installed.run("schema")
    assert schema.returncode == 0 and '"$schema"' in schema.stdout

    # the default (table) report of the console script, outside the tree
    table = installed.run("recommend", example.name, cwd=installed.examples)
    assert table.returncode == 0, table.stderr
    assert "chat-8b-single-node" in table.stdout and "Traceback" not in table.stderr


def test_venv_sees_the_running_interpreters_packages(installed: Installed) -> None:
    """The dependencies come from the interpreter running pytest, never from its base
    interpreter (a venv made with ``--system-site-packages`` from a venv interpreter sees the
    base's packages and, where the base has no typer, cannot run the CLI: issue #13)."""
    probe = _run([str(installed.python), "-c",
                  "import json, sys, typer, yaml; print(json.dumps([sys.path, typer.__file__]))"],
                 installed.outside)
    assert probe.returncode == 0, probe.stderr
    inner_path, typer_file = json.loads(probe.stdout)
    shared = running_site_packages()
    assert any(Path(typer_file).resolve().is_relative_to(Path(d).resolve()) for d in shared)
    env_dir = installed.env_dir.resolve()
    outer_path = {str(Path(entry).resolve()) for entry in sys.path if entry}
    foreign = [entry for entry in inner_path if entry
               and str(Path(entry).resolve()) not in outer_path
               and not Path(entry).resolve().is_relative_to(env_dir)]
    assert foreign == [], f"the venv sees directories the running interpreter does not: {foreign}"


def _same_as_source_tree(installed: Installed, run_cli: Callable[..., Any],
                         monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    """Run ``pd-advisor ARGS --format json`` with the installed wheel and with the source tree
    (in process), both in the directory of the example copies; assert the same exit code and
    the same JSON document, and return the exit code."""
    wheel = installed.run(*args, "--format", "json", cwd=installed.examples)
    assert "Traceback" not in wheel.stderr, wheel.stderr
    monkeypatch.chdir(installed.examples)
    tree = run_cli(*args, "--format", "json")
    assert wheel.returncode == tree.exit_code, (wheel.stderr, tree.stderr)
    assert json.loads(wheel.stdout) == json.loads(tree.stdout)
    return wheel.returncode


# One example in the default run (a split verdict, every table), the others in the thorough
# tier: ~3 s each, twelve in all (the README command's 6 minutes).
PER_EXAMPLE = [pytest.param(p.name, marks=() if p.name == "prefill-heavy-70b-ib.yaml"
                            else pytest.mark.thorough) for p in EXAMPLES]


@pytest.mark.parametrize("example", PER_EXAMPLE)
def test_installed_recommend_matches_source_tree(
        installed: Installed, run_cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch,
        example: str) -> None:
    assert _same_as_source_tree(installed, run_cli, monkeypatch, "recommend", example) == 0


@pytest.mark.parametrize("example", PER_EXAMPLE)
def test_installed_check_matches_source_tree(
        installed: Installed, run_cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch,
        example: str) -> None:
    # 0 = the deployment passes every gate, 1 = a gate failed; 2 would be a crash
    assert _same_as_source_tree(installed, run_cli, monkeypatch, "check", example) in (0, 1)


@pytest.mark.parametrize("argvs", [
    pytest.param([], id="import-advisor"),
    pytest.param([["--version"]], id="version"),
    pytest.param([["--help"]], id="help"),
    pytest.param([[name, "--help"] for name in SUBCOMMANDS], id="subcommand-help"),
])
def test_cold_start_imports_no_scipy_or_matplotlib(installed: Installed,
                                                   argvs: list[list[str]]) -> None:
    codes, modules = installed.modules_after(argvs)
    assert codes == [0] * len(argvs)
    assert "advisor" in modules
    assert _heavy(modules) == []


@pytest.mark.parametrize("command", ["recommend", "check"])
def test_recommend_and_check_import_no_scipy(installed: Installed, command: str) -> None:
    """The common path (and the CI gate) evaluates without scipy or matplotlib (issue #8),
    closed-loop workloads (``traffic.concurrency``, #16) included: their rate is solved by
    ``advisor.core.roots.brentq``, not scipy's (#20)."""
    closed_loop = [p for p in EXAMPLES if "concurrency:" in p.read_text(encoding="utf-8")]
    assert len(EXAMPLES) >= 5 and closed_loop
    codes, modules = installed.modules_after(
        [[command, p.name, "--format", "json"] for p in EXAMPLES])
    allowed = (0,) if command == "recommend" else (0, 1)
    assert all(code in allowed for code in codes), codes
    assert _heavy(modules) == []
    assert [name for name in modules if name in UNNEEDED or name.startswith(
        tuple(f"{prefix}." for prefix in UNNEEDED))] == []


@pytest.mark.parametrize("command", ["recommend", "check"])
def test_table_recommend_and_check_load_only_what_they_need(installed: Installed,
                                                           command: str) -> None:
    """The default (table) ``recommend`` of every example, and ``check`` of them one by one
    and all at once, leave the modules they have no use for unimported (issue #20: a
    regression guard on what the cold path loads, not a timing)."""
    names = [p.name for p in EXAMPLES]
    argvs = ([["recommend", name] for name in names] if command == "recommend"
             else [["check", name] for name in names] + [["check", *names]])
    codes, modules = installed.modules_after(argvs)
    allowed = (0,) if command == "recommend" else (0, 1)
    assert all(code in allowed for code in codes), codes
    assert "advisor.render.table" in modules  # the table was rendered
    unneeded = NOT_FOR_RECOMMEND if command == "recommend" else NOT_FOR_CHECK
    assert sorted(set(unneeded) & set(modules)) == []
