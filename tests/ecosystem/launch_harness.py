"""Run an ``--emit`` launch script with recording stubs (shared by the launch tests).

bash runs the script with stub ``vllm``/``python``/``sglang``/``vllm-router`` functions (via
``BASH_ENV``) that record their argv, an empty ``PATH`` and a ``command_not_found_handle``
that records anything else the script tries to run; the stubs' argv is what the engines would
receive.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

HOSTILE = "/data/we ird'q\"$(stub_pwned)`stub_pwned`\nx/model"

STUBS = r"""
STUB_N=0
record() { local f="$STUB_LOG/$BASHPID.$((++STUB_N))" name
           { for name in CUDA_VISIBLE_DEVICES VLLM_NIXL_SIDE_CHANNEL_HOST \
                         VLLM_NIXL_SIDE_CHANNEL_PORT UCX_NET_DEVICES; do
                 if [[ -n ${!name-} ]]; then printf 'ENV:%s=%s\0' "$name" "${!name}"; fi
             done
             printf '%s\0' "$@"; } > "$f"; }
vllm() { record vllm "$@"; }
python() { record python "$@"; }
sglang() { record sglang "$@"; }
vllm-router() { record vllm-router "$@"; }
stub_pwned() { printf 'PWNED\0' > "$STUB_LOG/pwned.$BASHPID"; }
command_not_found_handle() { printf 'UNEXPECTED\0%s\0' "$1" > "$STUB_LOG/unexpected.$BASHPID"
                             return 127; }
"""


def run_script(script: str, tmp_path: Path, args: list[str], hosts: int,
               node_rank: int | None = None, keep_env: bool = False) -> list[list[str]]:
    """Run ``script`` with the stubs; the argv of every stub call (first word: the stub),
    sorted (background processes record in any order). ``keep_env``: each argv starts with
    the ``NAME=value`` engine variables the call saw."""
    (tmp_path / "launch.sh").write_text(script)
    (tmp_path / "stubs.sh").write_text(STUBS)
    (tmp_path / "hosts.txt").write_text("".join(f"host-{i}.example\n" for i in range(hosts)))
    log = tmp_path / "calls"
    if log.exists():
        for old in log.iterdir():
            old.unlink()
    log.mkdir(exist_ok=True)
    empty = tmp_path / "empty-path"
    empty.mkdir(exist_ok=True)
    env = {"PATH": str(empty), "BASH_ENV": str(tmp_path / "stubs.sh"),
           "STUB_LOG": str(log), "HOSTS_FILE": str(tmp_path / "hosts.txt")}
    if node_rank is not None:
        env["NODE_RANK"] = str(node_rank)
    result = subprocess.run(["/bin/bash", str(tmp_path / "launch.sh"), *args], env=env,
                            cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    names = sorted(p.name for p in log.iterdir())
    assert not [n for n in names if n.startswith(("pwned", "unexpected"))], [
        (log / n).read_text() for n in names]
    calls = sorted((log / n).read_bytes().decode().split("\0")[:-1] for n in names)
    return [[w.removeprefix("ENV:") for w in call if keep_env or not w.startswith("ENV:")]
            for call in calls]


def flag(argv: list[str], name: str) -> str | None:
    """The value after option ``name`` (None when absent)."""
    return argv[argv.index(name) + 1] if name in argv else None


def layout_ranks(script: str) -> list[int]:
    """The first node rank of every node layout of the script."""
    return [int(m.group(1)) for m in re.finditer(r"if \(\( rank >= (\d+) &&", script)]


def script_nodes(script: str) -> int:
    found = re.search(r"the plan has nodes 0\.\.(\d+)", script)
    assert found
    return int(found.group(1)) + 1


def emitted_servers(script: str, tmp_path: Path, keep_env: bool = False,
                    every_node: bool = False) -> tuple[list[list[str]], list[list[str]]]:
    """(server argv lists over one node of every layout — or every node —, router argv
    lists)."""
    hosts = script_nodes(script)
    servers: list[list[str]] = []
    for rank in range(hosts) if every_node else layout_ranks(script):
        servers += run_script(script, tmp_path, [], hosts, node_rank=rank, keep_env=keep_env)
    routers = (run_script(script, tmp_path, ["router"], hosts)
               if "start_router()" in script else [])
    return servers, routers


