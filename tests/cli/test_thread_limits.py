"""``pd-advisor`` and ``python -m advisor`` default numpy's BLAS thread pools to one thread
before numpy loads, and keep a value the user set (#34). Each run is a fresh process whose
``sitecustomize`` records, as the process ends (``os._exit``), the environment and whether
numpy was loaded."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.__main__ import THREAD_LIMITS

ROOT = Path(__file__).resolve().parents[2]
CHAT = str(ROOT / "examples" / "chat-8b-single-node.yaml")

_SITECUSTOMIZE = """\
import json, os, sys
NAMES = THREAD_LIMITS_PLACEHOLDER
_exit = os._exit
def _record(status):
    with open(os.environ["RECORD_TO"], "w", encoding="utf-8") as f:
        json.dump({"env": {k: os.environ.get(k) for k in NAMES},
                   "numpy": "numpy" in sys.modules}, f)
    _exit(status)
os._exit = _record
""".replace("THREAD_LIMITS_PLACEHOLDER", repr(THREAD_LIMITS))


def _run(argv: list[str], tmp_path: Path, **env: str) -> dict[str, object]:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(_SITECUSTOMIZE, encoding="utf-8")
    record = tmp_path / "record.json"
    base = {k: v for k, v in os.environ.items() if k not in THREAD_LIMITS}
    base.update(PYTHONPATH=os.pathsep.join([str(site), str(ROOT)]), RECORD_TO=str(record),
                PD_ADVISOR_NO_CACHE="1", NO_COLOR="1", **env)
    proc = subprocess.run([*argv, "recommend", CHAT, "--format", "none"], cwd=ROOT, env=base,
                          capture_output=True, check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    out: dict[str, object] = json.loads(record.read_text(encoding="utf-8"))
    return out


def _entry_points() -> list[list[str]]:
    points = [[sys.executable, "-m", "advisor"]]
    script = shutil.which("pd-advisor", path=str(Path(sys.executable).parent))
    if script is not None:
        points.append([script])
    return points


@pytest.mark.parametrize("argv", _entry_points(), ids=lambda a: "-m advisor" if len(a) > 1
                         else "console script")
def test_thread_pools_default_to_one(argv: list[str], tmp_path: Path) -> None:
    got = _run(argv, tmp_path)
    assert got == {"env": dict.fromkeys(THREAD_LIMITS, "1"), "numpy": True}


@pytest.mark.parametrize("argv", _entry_points(), ids=lambda a: "-m advisor" if len(a) > 1
                         else "console script")
def test_a_users_value_is_kept(argv: list[str], tmp_path: Path) -> None:
    got = _run(argv, tmp_path, OPENBLAS_NUM_THREADS="3", OMP_NUM_THREADS="2")
    assert got["env"] == {"OPENBLAS_NUM_THREADS": "3", "OMP_NUM_THREADS": "2",
                          "MKL_NUM_THREADS": "1"}


def test_numpy_is_not_loaded_before_the_limits() -> None:
    """The entry module and the package import nothing that loads numpy (the limits come
    first in ``console``)."""
    code = ("import sys, advisor.__main__; "
            "print('numpy' in sys.modules, 'advisor.cli.app' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, check=True, timeout=60)
    assert proc.stdout.split() == ["False", "False"]
