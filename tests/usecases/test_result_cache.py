"""The result cache of recommend, check and sweep (#34): keyed by every input, byte-identical
on a hit, never trusted when unreadable, bounded, and never in the way."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from advisor.loading.input_file import ReadLog
from advisor.usecases import result_cache as rc

REPO = Path(__file__).resolve().parents[2]
CHAT = REPO / "examples" / "chat-8b-single-node.yaml"
H100 = REPO / "profiles" / "gpus" / "h100-sxm.yaml"

Run = Callable[..., Any]


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The cache on, in this test's own directory; the workload copied beside it."""
    directory = tmp_path / "cache"
    monkeypatch.setenv(rc.DIR_ENV, str(directory))
    monkeypatch.delenv(rc.OFF_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    shutil.copy(CHAT, tmp_path / "chat.yaml")
    return directory


def _entries(directory: Path) -> list[Path]:
    return sorted(directory.glob(f"*{rc.SUFFIX}")) if directory.is_dir() else []


def _check(run_cli: Run, *args: object) -> tuple[dict[str, Any], list[str]]:
    """check --format json: the document and each file's cache status."""
    doc = json.loads(run_cli("check", "chat.yaml", "--format", "json", *args).stdout)
    return doc, [entry["cache"] for entry in doc["files"]]


def test_cache_dir_precedence(tmp_path: Path) -> None:
    assert rc.cache_dir({rc.DIR_ENV: str(tmp_path), "XDG_CACHE_HOME": "/x"}) == tmp_path
    assert rc.cache_dir({"XDG_CACHE_HOME": "/x"}) == Path("/x/pd-advisor")
    assert rc.cache_dir({}) == Path("~/.cache/pd-advisor").expanduser()
    assert rc.disabled_by_env({rc.OFF_ENV: "1"})
    assert not rc.disabled_by_env({rc.OFF_ENV: "0"})
    assert not rc.open_cache([], env={rc.OFF_ENV: "yes"}).enabled


def test_the_suite_runs_without_a_cache(run_cli: Run, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """tests/conftest.py turns the cache off for every test: nothing is read or written."""
    assert rc.disabled_by_env()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    doc = json.loads(run_cli("check", CHAT, "--format", "json").stdout)
    assert [entry["cache"] for entry in doc["files"]] == ["off"]
    assert not (tmp_path / "pd-advisor").exists()


def test_check_miss_then_hit_skips_the_model(run_cli: Run, cache_dir: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    first, status = _check(run_cli)
    assert status == ["miss"]
    assert len(_entries(cache_dir)) == 1

    def no_model(*args: object, **kwargs: object) -> None:
        raise AssertionError("a hit evaluated the model")

    monkeypatch.setattr("advisor.core.plan.evaluate.evaluate", no_model)
    second, status = _check(run_cli)
    assert status == ["hit"]
    first["files"][0]["cache"] = "hit"
    assert second == first


@pytest.mark.parametrize("fmt", ["table", "json", "markdown", "html", "none"])
def test_recommend_hit_is_byte_identical(run_cli: Run, cache_dir: Path, fmt: str) -> None:
    off = run_cli("recommend", "chat.yaml", "-f", fmt, "--no-cache", exit_code=0).stdout
    miss = run_cli("recommend", "chat.yaml", "-f", fmt, exit_code=0).stdout
    assert _entries(cache_dir)
    hit = run_cli("recommend", "chat.yaml", "-f", fmt, exit_code=0).stdout
    assert miss == off
    assert hit == miss


def test_html_without_matplotlib_is_another_entry(run_cli: Run, cache_dir: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The HTML report's figure depends on matplotlib: without it, the note, not the SVG
    a run with it stored."""
    pytest.importorskip("matplotlib")
    assert "<svg" in run_cli("recommend", "chat.yaml", "-f", "html", exit_code=0).stdout
    monkeypatch.setitem(__import__("sys").modules, "matplotlib", None)
    for _ in range(2):
        text = run_cli("recommend", "chat.yaml", "-f", "html", exit_code=0).stdout
        assert "<svg" not in text and "pd-advisor[plot]" in text
    assert len(_entries(cache_dir)) == 1  # a note is never stored


@pytest.mark.parametrize("example", sorted((REPO / "examples").glob("*.yaml")),
                         ids=lambda path: path.stem)
def test_every_example_answers_the_same_from_the_cache(run_cli: Run, cache_dir: Path,
                                                       example: Path) -> None:
    """The report survives its JSON round trip: every number, list and key as computed."""
    for fmt in ("json", "table", "markdown"):
        miss = run_cli("recommend", example, "-f", fmt, exit_code=0).stdout
        assert run_cli("recommend", example, "-f", fmt, exit_code=0).stdout == miss
        assert run_cli("recommend", example, "-f", fmt, "--no-cache",
                       exit_code=0).stdout == miss
    assert len(_entries(cache_dir)) == 1


@pytest.mark.parametrize("fmt", ["table", "json", "markdown", "github", "sarif", "junit"])
def test_check_hit_is_byte_identical(run_cli: Run, cache_dir: Path, fmt: str) -> None:
    miss = run_cli("check", "chat.yaml", "-f", fmt)
    hit = run_cli("check", "chat.yaml", "-f", fmt)
    assert hit.exit_code == miss.exit_code
    assert (hit.stdout.replace('"cache": "hit"', '"cache": "miss"') == miss.stdout)
    assert hit.stderr == miss.stderr


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_sweep_hit_is_byte_identical(run_cli: Run, cache_dir: Path, fmt: str) -> None:
    args = ("sweep", "chat.yaml", "--vary", "traffic.rate_rps=5,10,20", "-f", fmt)
    miss = run_cli(*args, exit_code=0).stdout
    assert len(_entries(cache_dir)) == 1
    assert run_cli(*args, exit_code=0).stdout == miss
    assert run_cli(*args, "--no-cache", exit_code=0).stdout == miss
    run_cli("sweep", "chat.yaml", "--vary", "traffic.rate_rps=5,10", "-f", fmt, exit_code=0)
    assert len(_entries(cache_dir)) == 2  # other options, another entry


def test_a_sweep_table_is_not_cached(run_cli: Run, cache_dir: Path) -> None:
    """It says how long the sweep took: a cached one would say how long it took once."""
    run_cli("sweep", "chat.yaml", "--vary", "traffic.rate_rps=5,10", exit_code=0)
    assert not cache_dir.exists()


def test_a_changed_profile_is_a_miss(run_cli: Run, cache_dir: Path, tmp_path: Path) -> None:
    profiles = tmp_path / "profiles"
    (profiles / "gpus").mkdir(parents=True)
    local = profiles / "gpus" / "h100-sxm.yaml"
    shutil.copy(H100, local)
    assert _check(run_cli, "--profiles", profiles)[1] == ["miss"]
    assert _check(run_cli, "--profiles", profiles)[1] == ["hit"]
    local.write_text(local.read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
    assert _check(run_cli, "--profiles", profiles)[1] == ["miss"]
    assert _check(run_cli, "--profiles", profiles)[1] == ["hit"]
    assert _check(run_cli)[1] == ["miss"]  # the built-in profile: another answer


def test_a_new_profile_that_shadows_is_a_miss(run_cli: Run, cache_dir: Path,
                                              tmp_path: Path) -> None:
    profiles = tmp_path / "profiles"
    assert _check(run_cli, "--profiles", profiles)[1] == ["miss"]
    (profiles / "gpus").mkdir(parents=True)
    shutil.copy(H100, profiles / "gpus" / "h100-sxm.yaml")
    assert _check(run_cli, "--profiles", profiles)[1] == ["miss"]


def test_a_changed_workload_or_config_is_a_miss(run_cli: Run, cache_dir: Path,
                                                tmp_path: Path) -> None:
    assert _check(run_cli)[1] == ["miss"]
    workload = tmp_path / "chat.yaml"
    workload.write_text(workload.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert _check(run_cli)[1] == ["miss"]
    config = tmp_path / ".pd-advisor.yaml"
    config.write_text("version: 1\npolicy:\n  min_disagg_gain: 0.9\n", encoding="utf-8")
    assert _check(run_cli)[1] == ["miss"]  # a config file appeared
    assert _check(run_cli)[1] == ["hit"]
    config.write_text("version: 1\npolicy:\n  min_disagg_gain: 0.8\n", encoding="utf-8")
    assert _check(run_cli)[1] == ["miss"]


def test_a_changed_tool_or_model_version_is_a_miss(run_cli: Run, cache_dir: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    assert _check(run_cli)[1] == ["miss"]
    assert _check(run_cli)[1] == ["hit"]
    monkeypatch.setattr(rc, "__version__", "99.0.0")
    assert _check(run_cli)[1] == ["miss"]
    monkeypatch.setattr(rc, "MODEL_VERSION", "99")
    assert _check(run_cli)[1] == ["miss"]


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty", "checksum", "foreign",
                                    "directory"])
def test_a_corrupt_entry_is_a_miss_and_rewritten(run_cli: Run, cache_dir: Path,
                                                 damage: str) -> None:
    expected = run_cli("check", "chat.yaml", "-f", "table").stdout
    [entry] = _entries(cache_dir)
    good = entry.read_bytes()
    if damage == "garbage":
        entry.write_bytes(b"\x00\xffnot an entry")
    elif damage == "truncated":
        entry.write_bytes(good[: len(good) // 2])
    elif damage == "empty":
        entry.write_bytes(b"")
    elif damage == "checksum":  # the body changed, the header did not
        entry.write_bytes(good + b" ")  # still JSON, and not what was written
    elif damage == "foreign":  # a well-formed entry of another key
        body = good.partition(b"\n")[2]
        data = json.loads(body)
        data["key"] = "0" * 64
        body = json.dumps(data).encode()
        entry.write_bytes(rc.MAGIC + hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
    else:  # not even a file: a miss, and the result is still printed
        entry.unlink()
        entry.mkdir()
    assert _check(run_cli)[1] == ["miss"]
    assert run_cli("check", "chat.yaml", "-f", "table").stdout == expected
    if damage != "directory":
        assert entry.read_bytes() == good  # rewritten
        assert _check(run_cli)[1] == ["hit"]


def test_no_cache_writes_nothing(run_cli: Run, cache_dir: Path,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    run_cli("recommend", "chat.yaml", "--no-cache", exit_code=0)
    run_cli("recommend", "chat.yaml", "-f", "html", "--no-cache", exit_code=0)
    assert _check(run_cli, "--no-cache")[1] == ["off"]
    run_cli("sweep", "chat.yaml", "--vary", "traffic.rate_rps=5,10", "--no-cache", exit_code=0)
    assert not cache_dir.exists()
    monkeypatch.setenv(rc.OFF_ENV, "1")
    run_cli("recommend", "chat.yaml", exit_code=0)
    assert _check(run_cli)[1] == ["off"]
    assert not cache_dir.exists()


def test_an_unwritable_cache_dir_still_answers(run_cli: Run, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory", encoding="utf-8")
    monkeypatch.setenv(rc.DIR_ENV, str(blocker / "cache"))  # cannot be created, even by root
    monkeypatch.delenv(rc.OFF_ENV, raising=False)
    expected = run_cli("recommend", CHAT, "-f", "json", "--no-cache", exit_code=0).stdout
    for _ in range(2):
        result = run_cli("recommend", CHAT, "-f", "json", exit_code=0)
        assert result.stdout == expected
        assert result.stderr == ""
        doc = json.loads(run_cli("check", CHAT, "-f", "json").stdout)
        assert [entry["cache"] for entry in doc["files"]] == ["miss"]


def test_a_pipe_is_never_cached(run_cli: Run, cache_dir: Path, tmp_path: Path) -> None:
    """A workload that is not a regular file is not read for a key (it would be consumed)."""
    cache = rc.open_cache([])
    assert rc.entry_key(cache, "check", tmp_path, {}) is None  # a directory
    assert not rc.store(cache, "k" * 64, {}, ReadLog(files={"/dev/stdin": ""}))
    assert not cache_dir.exists()


def test_the_size_bound_evicts_the_least_recently_used(tmp_path: Path) -> None:
    cache = rc.ResultCache(directory=tmp_path, budget=10_000)
    for i in range(8):
        key = f"{i:064d}"
        assert rc.store(cache, key, {"text": "x" * 2_000}, ReadLog())
        os.utime(tmp_path / f"{key}{rc.SUFFIX}", (1_000 + i, 1_000 + i))
    rc.lookup(cache, f"{0:064d}")  # a hit: used now, kept
    removed = rc.trim(cache)
    left = {p.name[:64] for p in _entries(tmp_path)}
    assert removed == 4
    assert sum(p.stat().st_size for p in _entries(tmp_path)) <= 10_000
    assert left == {f"{i:064d}" for i in (0, 5, 6, 7)}
    assert rc.BUDGET_BYTES == 64 * 1024 * 1024


def test_eviction_tolerates_vanishing_files(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Another job's trim deletes the same files first: nothing fails."""
    cache = rc.ResultCache(directory=tmp_path, budget=0)
    for i in range(3):
        rc.store(cache, f"{i:064d}", {"n": i}, ReadLog())
    real_unlink = os.unlink

    def racing_unlink(path: Any) -> None:
        real_unlink(path)
        real_unlink(path)  # the second delete finds nothing

    monkeypatch.setattr(os, "unlink", racing_unlink)
    assert rc.trim(cache) == 3
    assert not _entries(tmp_path)
    assert rc.trim(rc.ResultCache(directory=tmp_path / "missing")) == 0


def test_writes_are_atomic_and_leave_no_temporary_files(cache_dir: Path) -> None:
    cache = rc.open_cache([])
    for _ in range(2):  # the same key twice, as two parallel jobs would
        assert rc.store(cache, "a" * 64, {"n": 1}, ReadLog())
    assert [p.name for p in cache_dir.iterdir()] == [f"{'a' * 64}{rc.SUFFIX}"]
    assert rc.lookup(cache, "a" * 64) == {"n": 1}


def test_nan_is_never_stored(cache_dir: Path) -> None:
    cache = rc.open_cache([])
    assert not rc.store(cache, "b" * 64, {"x": float("nan")}, ReadLog())
    assert not _entries(cache_dir)


def test_parallel_writers_and_trims_are_harmless(tmp_path: Path) -> None:
    """Parallel CI jobs: the same keys written, read and evicted at once; no error, and a
    read is either a miss or the payload written."""
    import threading

    errors: list[BaseException] = []

    def job(n: int) -> None:
        cache = rc.ResultCache(directory=tmp_path, budget=4_000)
        try:
            for i in range(40):
                key = f"{i % 5:064d}"
                rc.store(cache, key, {"i": i % 5, "pad": "x" * 500}, ReadLog())
                got = rc.lookup(cache, key)
                assert got is None or got["i"] == i % 5
                rc.trim(cache)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=job, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert not list(tmp_path.glob("*.part"))
