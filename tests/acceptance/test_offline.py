"""Offline (issue #8, part 4): no command touches the network.

A child interpreter starts with a ``sitecustomize.py`` on ``PYTHONPATH`` that replaces
``socket.socket``, ``socket.create_connection``, ``socket.socketpair`` and the resolver
functions (``getaddrinfo``, ``gethostbyname``, ...) with versions that record the attempt
and raise. The child checks that the block is in force, then runs every command that reads
files or profiles — recommend (each example, with ``--emit``), check, validate, profiles
list/show (a built-in id and a Hugging Face ``config.json``), sweep, simulate, calibrate,
init and schema — in-process through the console-script entry point, and reports each exit
code and the attempts recorded. A command that tried the network and swallowed the error
would still show up in the attempts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(str(p.relative_to(REPO_ROOT)) for p in (REPO_ROOT / "examples").glob("*.yaml"))
ECOSYSTEM = "tests/data/ecosystem"

SITECUSTOMIZE = '''\
"""Test harness: every network entry point of the socket module records and raises."""
import socket

ATTEMPTS = []


class NetworkDisabledError(OSError):
    """Raised instead of opening a socket or resolving a name."""


def _blocked(name):
    def refuse(*args, **kwargs):
        ATTEMPTS.append(name)
        raise NetworkDisabledError(f"network access is disabled ({name})")
    return refuse


class _NoSocket(socket.socket):  # a class, so modules that subclass socket.socket import
    def __init__(self, *args, **kwargs):
        ATTEMPTS.append("socket.socket")
        raise NetworkDisabledError("network access is disabled (socket.socket)")


socket.socket = _NoSocket
for _name in ("create_connection", "create_server", "socketpair", "fromfd", "getaddrinfo",
              "gethostbyname", "gethostbyname_ex", "gethostbyaddr", "getnameinfo"):
    setattr(socket, _name, _blocked("socket." + _name))
'''

_CHILD = r'''
import contextlib, io, json, socket, sys

import sitecustomize

for probe in (lambda: socket.socket(), lambda: socket.create_connection(("127.0.0.1", 9)),
              lambda: socket.getaddrinfo("pypi.org", 443)):
    try:
        probe()
    except OSError:
        pass
    else:
        raise SystemExit("the network block is not in force")
probes = len(sitecustomize.ATTEMPTS)

from advisor.cli.app import main

out_path, commands = sys.argv[1], json.loads(sys.argv[2])
results = []
for args in commands:
    sys.argv = ["pd-advisor", *args]
    before = len(sitecustomize.ATTEMPTS)
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            main()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    results.append({"args": args, "exit": code, "stderr": stderr.getvalue(),
                    "stdout_chars": len(stdout.getvalue()),
                    "attempts": sitecustomize.ATTEMPTS[before:]})
with open(out_path, "w", encoding="utf-8") as handle:
    json.dump({"probes": probes, "results": results}, handle)
'''


def _commands(tmp_path: Path) -> list[tuple[list[str], int]]:
    """(arguments, expected exit code) of every command run offline."""
    commands: list[tuple[list[str], int]] = []
    for example in EXAMPLES:
        commands.append((["recommend", example, "--format", "json"], 0))
    commands += [
        (["recommend", EXAMPLES[0], "--emit", "vllm"], 0),
        (["recommend", EXAMPLES[0], "--format", "markdown"], 0),
        (["check", *EXAMPLES, "--format", "sarif", "--exit-zero"], 0),
        (["validate", *EXAMPLES], 0),
        (["profiles", "list"], 0),
        (["profiles", "show", "h100-sxm"], 0),
        (["profiles", "show", f"{ECOSYSTEM}/hf/llama-3.1-8b/config.json"], 0),
        (["sweep", EXAMPLES[0], "--vary", "traffic.rate_rps=1:40:5", "--format", "json"], 0),
        (["simulate", EXAMPLES[0], "--requests", "100", "--no-progress", "--format", "json"], 0),
        # fixture A alone needs the GPU's peak prefill efficiency (refused since #18)
        (["calibrate", f"{ECOSYSTEM}/bench/vllm-fixture-a.json",
          f"{ECOSYSTEM}/bench/vllm-appended.json",
          "--workload", f"{ECOSYSTEM}/workloads/llama-8b-h100.yaml",
          "-o", str(tmp_path / "calibration.yaml")], 0),
        (["init", "--model", "llama-3.1-8b", "-o", str(tmp_path / "workload.yaml")], 0),
        (["schema", "-o", str(tmp_path / "workload.schema.json")], 0),
    ]
    return commands


@pytest.fixture(scope="module")
def offline_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[tuple[list[str], int]],
                                                                   dict[str, Any]]:
    tmp_path = tmp_path_factory.mktemp("offline")
    site_dir = tmp_path / "site"
    site_dir.mkdir()
    (site_dir / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    commands = _commands(tmp_path)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site_dir), str(REPO_ROOT)]),
           "NO_COLOR": "1"}
    for name in ("PD_ADVISOR_PROFILES", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
                 "https_proxy"):
        env.pop(name, None)
    out = tmp_path / "results.json"
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(out), json.dumps([args for args, _ in commands])],
        capture_output=True, text=True, cwd=REPO_ROOT, env=env, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    return commands, json.loads(out.read_text(encoding="utf-8"))


@pytest.mark.thorough  # a child runs every command, network blocked: ~16 s
def test_the_network_block_is_in_force(offline_run: tuple[Any, dict[str, Any]]) -> None:
    """The child's own probes (socket, connect, resolve) were refused and recorded."""
    _, report = offline_run
    assert report["probes"] == 3


@pytest.mark.thorough  # a child runs every command, network blocked: ~16 s
def test_every_command_succeeds_without_network(
        offline_run: tuple[list[tuple[list[str], int]], dict[str, Any]]) -> None:
    commands, report = offline_run
    assert len(report["results"]) == len(commands)
    for (args, expected), result in zip(commands, report["results"], strict=True):
        assert result["args"] == args
        assert result["exit"] == expected, (args, result["stderr"])
        assert result["attempts"] == [], (args, result["attempts"])
        assert "Traceback" not in result["stderr"], args
        assert "network access is disabled" not in result["stderr"], args
    # the commands that print to stdout printed something
    printed = {" ".join(r["args"][:2]): r["stdout_chars"] for r in report["results"]}
    assert printed["profiles list"] > 0 and printed["profiles show"] > 0
