"""CI integration files: the pre-commit hook and the composite GitHub Action (issue #7, item 5;
issue #18, item 3: integrations that resolve without a release).

The hook's ``files:`` pattern is checked against positive and negative example paths, as
check-jsonschema does for its hooks (python-jsonschema/check-jsonschema @ e210bb2,
tests/acceptance/test_hook_file_matches.py). The action's check step is run with bash against
real workloads, with ``pd-advisor`` provided by this checkout; its install step is run as
GitHub runs it, from a copy of this checkout standing in for ``${{ github.action_path }}``, and
the pd-advisor it installs then runs the check step. The README's snippets must name refs that
exist (a branch, or a full commit SHA), not a tag.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor import __version__
from advisor.cli.init_cmd import DEFAULT_OUTPUT

REPO = Path(__file__).resolve().parent.parent.parent
HOOKS = REPO / ".pre-commit-hooks.yaml"
ACTION = REPO / "action.yml"

MATCHES = [
    "workload.yaml", "workload.yml", str(DEFAULT_OUTPUT), "deploy/workload.yaml",
    "services/chat/prod/workload.yml", "chat-8b.workload.yaml", "deploy/rag.workload.yml",
    "chat-8b.pd-advisor.yaml", "a/b/c/prefill-heavy-70b.pd-advisor.yml",
    "day-night-shift.pd-advisor.yaml",
]
DOES_NOT_MATCH = [
    ".pd-advisor.yaml", "deploy/.pd-advisor.yaml",  # project configuration, not a workload
    "docker-compose.yaml", ".github/workflows/ci.yml", ".pre-commit-config.yaml",
    "profiles/gpus/h100-sxm.yaml", "calibration.yaml", "my-workload.yaml", "workloads.yaml",
    "workload.yaml.bak", "workload.json", "workload.yaml/notes.txt", ".workload.yaml",
    "values.pd-advisor.yaml.j2", "README.md",
]


@pytest.fixture(scope="module")
def hook() -> dict[str, Any]:
    hooks = yaml.safe_load(HOOKS.read_text())
    assert isinstance(hooks, list) and len(hooks) == 1
    return hooks[0]


def test_hook_fields(hook: dict[str, Any]) -> None:
    """The fields pre-commit requires (pre-commit/pre-commit @ a9bba55a
    pre_commit/clientlib.py), with the values of the Python hooks of pip-audit and sqlfluff
    (docs/sources.md#ci-conventions)."""
    assert hook["id"] == "pd-advisor-check"
    assert hook["name"] == "pd-advisor check"
    assert hook["entry"] == "pd-advisor check"
    assert hook["language"] == "python"
    assert hook["pass_filenames"] is True and hook["require_serial"] is True
    allowed = {"id", "name", "entry", "language", "files", "exclude", "types", "types_or",
               "args", "pass_filenames", "always_run", "require_serial",
               "minimum_pre_commit_version", "stages", "description", "verbose"}
    assert set(hook) <= allowed


@pytest.mark.parametrize("path", MATCHES)
def test_hook_matches_workload_names(hook: dict[str, Any], path: str) -> None:
    assert re.search(hook["files"], path), path


@pytest.mark.parametrize("path", DOES_NOT_MATCH)
def test_hook_ignores_other_files(hook: dict[str, Any], path: str) -> None:
    assert not re.search(hook["files"], path), path


def test_hook_entry_is_the_console_script() -> None:
    pyproject = (REPO / "pyproject.toml").read_text()
    assert 'pd-advisor = "advisor.__main__:console"' in pyproject


# --------------------------------------------------------------------------- action
@pytest.fixture(scope="module")
def action() -> dict[str, Any]:
    return yaml.safe_load(ACTION.read_text())


def test_action_shape(action: dict[str, Any]) -> None:
    assert action["runs"]["using"] == "composite"
    assert set(action["inputs"]) == {"files", "args", "summary", "sarif"}
    assert action["inputs"]["files"]["required"] is True
    assert action["inputs"]["summary"]["default"] == "true"
    assert set(action["outputs"]) == {"exit-code", "sarif-file"}
    steps = action["runs"]["steps"]
    assert [s["id"] for s in steps] == ["install", "check"]
    assert all(s["shell"] == "bash" for s in steps)
    # inputs reach the scripts through env only (no ${{ }} expansion inside run: scripts)
    for step in steps:
        assert "${{" not in step["run"]
    check = steps[1]["run"]
    for needle in ("--format github", "--format markdown", "GITHUB_STEP_SUMMARY",
                   "--format sarif", 'exit "$code"'):
        assert needle in check
    # installs the action's own checkout, nothing from a package index by version
    install = steps[0]
    assert install["env"] == {"ACTION_PATH": "${{ github.action_path }}"}
    assert 'pip install --quiet "$ACTION_PATH"' in install["run"]
    assert "pd-advisor==" not in install["run"] and "inputs.version" not in ACTION.read_text()


def _bash() -> str:
    path = shutil.which("bash")
    if path is None:
        pytest.skip("bash is not available")
    return path


def _run_check_step(action: dict[str, Any], tmp_path: Path, files: str, sarif: str = "",
                    args: str = "", pd_advisor: Path | None = None,
                    cwd: Path = REPO) -> tuple[int, dict[str, str], str]:
    if pd_advisor is None:
        pd_advisor = tmp_path / "pd-advisor"
        pd_advisor.write_text(
            f"#!/bin/sh\nPYTHONPATH={REPO} exec {sys.executable} -m advisor \"$@\"\n")
        pd_advisor.chmod(0o755)
    outputs, summary = tmp_path / "outputs", tmp_path / "summary.md"
    outputs.write_text("")
    summary.write_text("")
    env = {**os.environ, "PD_ADVISOR_BIN": str(pd_advisor), "INPUT_FILES": files,
           "INPUT_ARGS": args, "INPUT_SUMMARY": "true", "INPUT_SARIF": sarif,
           "GITHUB_OUTPUT": str(outputs), "GITHUB_STEP_SUMMARY": str(summary),
           "RUNNER_TEMP": str(tmp_path)}
    script = action["runs"]["steps"][1]["run"]
    done = subprocess.run([_bash(), "-c", script], check=False, cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)
    values = dict(line.split("=", 1) for line in outputs.read_text().splitlines() if "=" in line)
    return done.returncode, values, summary.read_text()


@pytest.mark.slow
@pytest.mark.thorough  # ~12 s: the action's steps in a fresh venv (thorough tier: .ci/run)
def test_action_passes_the_exit_code_through(action: dict[str, Any], tmp_path: Path) -> None:
    workloads = tmp_path / "w"
    workloads.mkdir()
    good = REPO / "tests" / "data" / "ecosystem" / "workloads" / "llama-8b-h100.yaml"
    (workloads / "good.workload.yaml").write_text(good.read_text())
    # same file, deployed disaggregated although the verdict is chunked prefill: the gate fails
    bad = good.read_text().replace(
        "  mode: colocated\n  chunked_prefill: true\n  tensor_parallel: 1\n",
        "  mode: disaggregated\n  prefill_gpus: 4\n  decode_gpus: 4\n")
    assert bad != good.read_text()
    (workloads / "bad.workload.yaml").write_text(bad)

    code, out, summary = _run_check_step(action, tmp_path, f"{workloads}/good.workload.yaml")
    assert code == 0 and out["exit-code"] == "0" and out["sarif-file"] == ""
    assert "pd-advisor" in summary and "good.workload.yaml" in summary

    sarif = tmp_path / "out.sarif"
    code, out, summary = _run_check_step(action, tmp_path, f"{workloads}/**/*.workload.yaml",
                                         sarif=str(sarif))
    assert code == 1 and out["exit-code"] == "1" and out["sarif-file"] == str(sarif)
    assert "bad.workload.yaml" in summary and '"version": "2.1.0"' in sarif.read_text()

    code, out, _ = _run_check_step(action, tmp_path, f"{workloads}/**/*.workload.yaml",
                                   args="--exit-zero")
    assert code == 0

    (workloads / "broken.workload.yaml").write_text("version: 1\n")
    code, out, _ = _run_check_step(action, tmp_path, f"{workloads}/broken.workload.yaml")
    assert code == 2 and out["exit-code"] == "2"

    code, out, _ = _run_check_step(action, tmp_path, f"{workloads}/none-*.yaml")
    assert code == 2 and out["exit-code"] == "2"


def _checkout_copy(dest: Path) -> Path:
    """A copy of this checkout's sources at ``dest`` (what actions/checkout would place)."""
    shutil.copytree(REPO, dest, ignore=shutil.ignore_patterns(
        ".git", "__pycache__", ".pytest_cache", ".hypothesis", "*.egg-info", "build", "dist",
        ".venv", "venv", ".mypy_cache", ".ruff_cache"))
    return dest


@pytest.mark.thorough  # minutes: the thorough tier (.ci/run's second step)
def test_action_installs_from_its_checkout_and_runs(action: dict[str, Any],
                                                    tmp_path: Path) -> None:
    """The install step, run as the runner runs it with ``ACTION_PATH`` set to a checkout of
    the action (a path with a space, not the working directory), builds and installs
    pd-advisor from that checkout into its own venv (pip fetches the dependencies from the
    package index, as on GitHub); the installed command then runs the check step in a
    separate repository, and its SARIF names the workload relative to that repository."""
    checkout = _checkout_copy(tmp_path / "_actions" / "pd-advisor" / "pd advisor@main")
    runner_temp, workspace = tmp_path / "runner temp", tmp_path / "workspace"
    runner_temp.mkdir()
    (workspace / "deploy").mkdir(parents=True)
    good = REPO / "tests" / "data" / "ecosystem" / "workloads" / "llama-8b-h100.yaml"
    bad = good.read_text().replace(
        "  mode: colocated\n  chunked_prefill: true\n  tensor_parallel: 1\n",
        "  mode: disaggregated\n  prefill_gpus: 4\n  decode_gpus: 4\n")
    (workspace / "deploy" / "bad.workload.yaml").write_text(bad)
    # python3 on PATH is the interpreter running the tests (actions/setup-python's role)
    shims = tmp_path / "bin"
    shims.mkdir()
    (shims / "python3").symlink_to(sys.executable)
    outputs = tmp_path / "install-outputs"
    outputs.write_text("")
    env = {**{k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")},
           "PATH": f"{shims}{os.pathsep}{os.environ.get('PATH', '')}",
           "ACTION_PATH": str(checkout), "RUNNER_TEMP": str(runner_temp),
           "GITHUB_OUTPUT": str(outputs)}
    install = action["runs"]["steps"][0]["run"]
    done = subprocess.run([_bash(), "-c", install], check=False, cwd=workspace, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().splitlines()[-1] == f"pd-advisor {__version__}"
    values = dict(line.split("=", 1) for line in outputs.read_text().splitlines())
    installed = Path(values["bin"])
    assert installed == runner_temp / "pd-advisor-venv" / "bin" / "pd-advisor"
    # an installed copy inside the venv, not the checkout on a path
    where = subprocess.run(
        [str(installed.parent / "python"), "-c", "import advisor; print(advisor.__file__)"],
        check=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    location = Path(where.stdout.strip())
    assert runner_temp in location.parents and checkout not in location.parents
    assert not (checkout / "build").exists()  # the checkout is left as it was

    sarif = workspace / "pd-advisor.sarif"
    code, out, summary = _run_check_step(action, tmp_path, "deploy/**/*.workload.yaml",
                                         sarif="pd-advisor.sarif", pd_advisor=installed,
                                         cwd=workspace)
    assert code == 1 and out["exit-code"] == "1", summary
    assert "bad.workload.yaml" in summary
    log = json.loads(sarif.read_text())
    uris = {loc["physicalLocation"]["artifactLocation"]["uri"]
            for result in log["runs"][0]["results"] for loc in result["locations"]}
    assert uris == {"deploy/bad.workload.yaml"}


REF = re.compile(r"^(main|[0-9a-f]{40})$")
"""A ref that exists without a release: the default branch, or a full commit SHA."""


def test_readme_has_a_complete_workflow() -> None:
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("## Use as a CI gate"):]
    blocks = re.findall(r"```yaml\n(.*?)```", section, re.DOTALL)
    workflow = yaml.safe_load(blocks[0])
    steps = workflow["jobs"]["gate"]["steps"]
    uses = [s.get("uses", "") for s in steps]
    assert any(u.startswith("actions/checkout@") for u in uses)
    assert any(u.startswith("pd-advisor/pd-advisor@") for u in uses)
    assert any(u.startswith("github/codeql-action/upload-sarif@") for u in uses)
    ours = next(s for s in steps if s.get("uses", "").startswith("pd-advisor/pd-advisor@"))
    assert set(ours["with"]) <= set(yaml.safe_load(ACTION.read_text())["inputs"])
    assert REF.match(ours["uses"].split("@", 1)[1]), ours["uses"]
    assert workflow["permissions"] == {"contents": "read"}
    hooks_config = yaml.safe_load(blocks[1])
    repo = hooks_config["repos"][0]
    assert repo["hooks"][0]["id"] == "pd-advisor-check"
    assert REF.match(str(repo["rev"])), repo["rev"]
    # how to pin is said next to the snippets
    assert "commit SHA" in section and "pre-commit autoupdate" in section
    assert "v0.1.0" not in readme


def test_refs_in_the_docs_exist() -> None:
    """No document names a release tag that does not exist, or a hosted schema: action and
    hook refs are ``main``, a full commit SHA or a placeholder (``<commit SHA>``, ``REF``);
    a tag (``@v1.2``, ``rev: v1.2``) only once the repository has it (checked in a git
    checkout); nothing publishes the workload schema at a URL."""
    texts = {p.name: p.read_text(encoding="utf-8")
             for p in [REPO / "README.md", ACTION, HOOKS, *sorted((REPO / "docs").glob("*.md"))]}
    tags_named: set[str] = set()
    for name, text in texts.items():
        for ref in re.findall(r"pd-advisor/pd-advisor@([\w.\-<>]+)", text):
            if not (REF.match(ref) or ref.startswith("<") or ref == "REF"):
                tags_named.add(ref)
        tags_named.update(re.findall(r"\brev: (v?\d[\w.\-]*)", text))
        assert "raw.githubusercontent.com/pd-advisor" not in text, name
    git = shutil.which("git")
    if git is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout: the tags cannot be listed")
    listed = subprocess.run([git, "-C", str(REPO), "tag", "--list"], check=True,
                            capture_output=True, text=True, timeout=60).stdout.split()
    assert tags_named <= set(listed), f"tags named but not in the repository: {tags_named}"
