"""The README a newcomer reads (#28, item 6): two set-up commands that CI runs, the required
keys of the workload format marked as the loader requires them, the profile lists current.

The profile lists are generated (``python tools/readme.py``; never edited by hand), and
:func:`test_profile_lists_are_current` regenerates them and compares. The required keys are
found by the loader itself: each key of the README's example is removed in turn, and it is
required exactly when the workload is then refused for missing it.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import yaml

from advisor.loading.workload_schema import check_workload
from tools import readme as readme_tool

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
CI = REPO / ".ci" / "run"
VENV = "python -m venv .venv && . .venv/bin/activate && "


def _section(text: str, heading: str) -> str:
    start = text.index(f"\n{heading}\n")
    end = text.find("\n## ", start + len(heading) + 2)
    return text[start:end if end >= 0 else len(text)]


def test_setup_is_two_commands_and_ci_runs_the_test_one() -> None:
    """Exactly two set-up commands, each whole on a fresh machine (a venv first); `.ci/run`
    runs the second as written, so what the README promises is what CI proves."""
    section = _section(README.read_text(encoding="utf-8"), "## Set up")
    blocks = [b.strip() for b in re.findall(r"```(?:bash|sh)\n(.*?)```", section, re.DOTALL)]
    assert len(blocks) == 2 and all("\n" not in b for b in blocks), blocks
    run, test = blocks
    assert run.startswith(VENV + "pip install . && pd-advisor recommend examples/"), run
    assert (REPO / run.rsplit(" ", 1)[1]).is_file(), run
    assert test == VENV + "pip install '.[test]' && python -m pytest", test
    ci_lines = [line.strip() for line in CI.read_text(encoding="utf-8").splitlines()]
    assert test in ci_lines, ".ci/run must run the README's test command as written"
    assert re.search(r"about \d+ minutes\s+on 2 cores", section), "how long the tests take"


def _example() -> tuple[dict[str, Any], list[str]]:
    """The README's example workload, parsed, and its lines."""
    section = _section(README.read_text(encoding="utf-8"), "## Workload format (version 1)")
    found = re.search(r"```yaml\n(.*?)```", section, re.DOTALL)
    assert found is not None
    return yaml.safe_load(found.group(1)), found.group(1).splitlines()


def _marked(lines: list[str]) -> set[tuple[str, ...]]:
    """Keys whose comment starts with ``required``, as paths from their indentation."""
    out: set[tuple[str, ...]] = set()
    stack: list[tuple[int, str]] = []
    for line in lines:
        m = re.match(r"^( *)([a-z_]+):(.*)$", line)
        if not m:
            continue
        indent, key, rest = len(m.group(1)), m.group(2), m.group(3)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = (*(k for _, k in stack), key)
        stack.append((indent, key))
        comment = rest.split("#", 1)[1].strip() if "#" in rest else ""
        if comment.startswith("required"):
            out.add(path)
    return out


def _paths(node: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every mapping key of the document (not inside lists)."""
    if not isinstance(node, dict):
        return []
    out = []
    for key, value in node.items():
        out.append((*prefix, key))
        out += _paths(value, (*prefix, key))
    return out


def test_required_keys_are_marked_as_the_loader_requires_them() -> None:
    """A key of the README's example is marked ``# required`` exactly when removing it gets
    the workload refused for missing it (without ``traffic.phases``, which may give the
    rate and lengths in the traffic's place, as the README says)."""
    data, lines = _example()
    assert check_workload(data).issues == [], "the README's example must be a valid workload"
    del data["traffic"]["phases"]
    required = set()
    for path in _paths(data):
        trimmed = copy.deepcopy(data)
        node = trimmed
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]
        messages = [i.message for i in check_workload(trimmed).issues]
        if any(m.startswith(f"missing required key '{path[-1]}'") for m in messages):
            required.add(path)
    assert {("version",), ("model",), ("cluster", "gpus"), ("traffic", "rate_rps")} <= required
    assert _marked(lines) == required


def test_profile_lists_are_current() -> None:
    """The README's profile lists are what `python tools/readme.py` generates from the
    built-in profiles now (run it after adding a profile)."""
    text = README.read_text(encoding="utf-8")
    assert readme_tool.stale(text) == [], "README.md is stale: run python tools/readme.py"
    # and the check can fail: a list without one of the profiles is stale
    assert "`h100-sxm`, " in text
    assert readme_tool.stale(text.replace("`h100-sxm`, ", "", 1)) == ["profiles"]
    assert readme_tool.regenerate(text) == text
