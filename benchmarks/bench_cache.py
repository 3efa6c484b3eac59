"""``check`` on many unchanged files, cold and from the result cache (#34).

    python benchmarks/bench_cache.py [--files N] [--runs N]

Copies one example ``--files`` times (default 100) into a temporary directory and times
``pd-advisor check`` over all of them as a fresh process (wall seconds, median and range of
``--runs``): *cold* (``--no-cache``), *warm* (every file a hit) and *one changed* (one copy
edited before each run: 99 hits, one miss). The cache lives in the temporary directory
(``PD_ADVISOR_CACHE_DIR``), never the user's.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "chat-8b-single-node.yaml"


@dataclass(frozen=True, kw_only=True)
class CacheResult:
    """Wall seconds of each run of ``check`` over ``files`` copies."""

    files: int
    cold: list[float]
    warm: list[float]
    one_changed: list[float]
    one_hit: list[float] = field(default_factory=list)
    """``check`` of one of the copies, a hit: the fixed cost of a process (#34)."""

    @property
    def per_hit_s(self) -> float:
        """What each further unchanged file adds, seconds: (all hits − one hit) / (files − 1)
        of the medians."""
        if not self.one_hit or self.files < 2:
            return float("nan")
        return ((statistics.median(self.warm) - statistics.median(self.one_hit))
                / (self.files - 1))


def _env(cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PD_ADVISOR_PROFILES", "PD_ADVISOR_NO_CACHE")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env["PD_ADVISOR_CACHE_DIR"] = str(cache)
    env["NO_COLOR"] = "1"
    return env


def measure(files: int = 100, runs: int = 5, example: Path = EXAMPLE,
            progress: Callable[[str], None] | None = None) -> CacheResult:
    """Time ``check`` over ``files`` copies of ``example``: cold, warm, one file changed."""
    with tempfile.TemporaryDirectory(prefix="pd-advisor-bench-cache-") as tmp:
        base = Path(tmp)
        copies = [base / f"w{i:04d}.yaml" for i in range(files)]
        for copy in copies:
            shutil.copy(example, copy)
        env = _env(base / "cache")
        argv = [sys.executable, "-m", "advisor", "check", "--format", "none",
                *map(str, copies)]

        def once(*extra: str) -> float:
            t0 = time.perf_counter()
            proc = subprocess.run([*argv, *extra], cwd=base, env=env, check=False,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, timeout=600)
            elapsed = time.perf_counter() - t0
            if proc.returncode not in (0, 1):
                raise RuntimeError(f"check: exit {proc.returncode}\n"
                                   f"{proc.stderr.decode(errors='replace')[-2000:]}")
            return elapsed

        once()  # the bytecode and the cache written
        cold, warm, changed, one = [], [], [], []
        for n in range(max(1, runs)):
            if progress is not None:
                progress(f"cache: round {n + 1} of {runs}")
            cold.append(once("--no-cache"))
            warm.append(once())
            with copies[0].open("a", encoding="utf-8") as handle:
                handle.write(f"# edit {n}\n")
            changed.append(once())
            one.append(_once_one([*argv[:6], str(copies[-1])], base, env))
        return CacheResult(files=files, cold=cold, warm=warm, one_changed=changed, one_hit=one)


def _once_one(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, check=False, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)
    return time.perf_counter() - t0


def summary(result: CacheResult) -> list[tuple[str, str]]:
    """(label, median [min–max] s) of each case."""
    def fig(xs: Sequence[float]) -> str:
        return f"{statistics.median(xs):.2f} s [{min(xs):.2f}–{max(xs):.2f}]"

    n = result.files
    return [(f"check, {n} files, no cache", fig(result.cold)),
            (f"check, {n} files, all hits", fig(result.warm)),
            (f"check, {n} files, one changed", fig(result.one_changed))] + (
        [("check, 1 file, a hit (the process)", fig(result.one_hit)),
         ("each further unchanged file", f"{result.per_hit_s * 1000:.1f} ms")]
        if result.one_hit else [])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    for label, figure in summary(measure(args.files, args.runs)):
        print(f"{label:<32} {figure}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
