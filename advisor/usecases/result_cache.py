"""The result cache of ``recommend``, ``check`` and ``sweep`` (#34): an unchanged input is
answered from disk, without loading the model.

Where: ``$PD_ADVISOR_CACHE_DIR``, else ``$XDG_CACHE_HOME/pd-advisor``, else
``~/.cache/pd-advisor``; off with ``--no-cache`` or ``PD_ADVISOR_NO_CACHE=1``. What: the
JSON document a command renders from (a workload's report, a check entry, a sweep's text);
every format renders from it, so a hit prints what a miss would, byte for byte.

The key is the SHA-256 of the tool and model versions, the working directory, the profile
search directories and the names they hold (a new profile may shadow another), the command
and its options, the workload's path and its bytes. The entry also lists every other file the
result was computed from (profiles, calibration overlays, engine profiles, the
``.pd-advisor.yaml`` and the outcome of its search, manifests; logged by
:func:`advisor.loading.input_file.recorded_reads`) with its SHA-256: a hit re-hashes each,
and any change is a miss. Only regular files are trusted; a result that read a pipe is never
stored.

Entries are written to a temporary file in the cache directory and renamed over the entry
(``os.replace``): readers never see half an entry, and parallel CI jobs writing the same key
write the same bytes. Each entry starts with a format line holding the SHA-256 of the rest;
an unreadable, truncated, corrupt or foreign entry is a miss (and is rewritten), never an
error. The directory is kept under :data:`BUDGET_BYTES` by deleting the least recently used
entries (a hit touches its entry); a file another process deleted first is skipped. An
unwritable directory is no cache at all, silently.

Nothing here imports numpy, pydantic or the model: a hit costs a few file reads.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from advisor import __version__
from advisor.loading.config_discovery import find_config
from advisor.loading.input_file import ReadLog
from advisor.loading.input_file import recorded_reads as recorded_reads

MODEL_VERSION = "2"
"""Bump when the model's answers change without a tool version change: old entries miss."""

BUDGET_BYTES = 64 * 1024 * 1024
"""Most bytes the cache directory's entries hold; the least recently used go first."""

MAX_ENTRY_BYTES = BUDGET_BYTES // 8
"""Larger results (a huge sweep's CSV) are not stored."""

MAX_INPUT_BYTES = 64 * 1024 * 1024
"""A dependency larger than this is not re-hashed: a miss."""

DIR_ENV = "PD_ADVISOR_CACHE_DIR"
OFF_ENV = "PD_ADVISOR_NO_CACHE"
MAGIC = b"pd-advisor-cache/1 "
SUFFIX = ".entry"
_PROFILE_KINDS = ("gpus", "interconnects", "models", "engines", "calibrations")

Status = Literal["hit", "miss", "off"]


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """The cache directory (module docstring)."""
    environ = os.environ if env is None else env
    if environ.get(DIR_ENV, "").strip():
        return Path(environ[DIR_ENV]).expanduser()
    xdg = environ.get("XDG_CACHE_HOME", "").strip()
    base = Path(xdg).expanduser() if xdg else Path("~/.cache").expanduser()
    return base / "pd-advisor"


def disabled_by_env(env: Mapping[str, str] | None = None) -> bool:
    """``PD_ADVISOR_NO_CACHE`` set to anything but empty, 0, false, no or off."""
    value = (os.environ if env is None else env).get(OFF_ENV, "").strip().lower()
    return value not in ("", "0", "false", "no", "off")


@dataclass(frozen=True, kw_only=True)
class ResultCache:
    """One command's view of the cache: where it is (None: off) and the key of what every
    entry shares (versions, working directory, profile directories and their names)."""

    directory: Path | None
    context: str = ""
    budget: int = BUDGET_BYTES
    digests: dict[str, str] = field(default_factory=dict)
    """Files already hashed by this command (a check of 100 files shares its profiles)."""
    stored: list[str] = field(default_factory=list)

    @property
    def enabled(self) -> bool:
        return self.directory is not None


def open_cache(search_dirs: Sequence[Path], *, enabled: bool = True,
               env: Mapping[str, str] | None = None) -> ResultCache:
    """The cache for a command whose profiles are looked up in ``search_dirs``; off when
    ``enabled`` is false (``--no-cache``) or the environment says so."""
    if not enabled or disabled_by_env(env):
        return ResultCache(directory=None)
    listing = []
    for root in search_dirs:
        for kind in _PROFILE_KINDS:
            try:
                names = sorted(os.listdir(os.path.join(root, kind)))
            except OSError:
                names = []
            listing.append([os.path.abspath(os.path.join(root, kind)), names])
    try:
        context = _digest({"tool": __version__, "model": MODEL_VERSION, "cwd": os.getcwd(),
                           "profiles": listing})
        directory = cache_dir(env)
    except (OSError, RuntimeError):  # no working directory, no home: no cache
        return ResultCache(directory=None)
    return ResultCache(directory=directory, context=context)


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":"),
                                     ensure_ascii=True).encode()).hexdigest()


def _regular_bytes(path: str) -> bytes | None:
    """The bytes of a regular file (never a pipe: reading one would consume it), or None."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with open(path, "rb") as handle:
            data = handle.read(MAX_INPUT_BYTES + 1)
    except (OSError, ValueError):
        return None
    return data if len(data) <= MAX_INPUT_BYTES else None


def entry_key(cache: ResultCache, command: str, workload: Path,
              options: Mapping[str, Any]) -> str | None:
    """The key of one result, or None (no cache, or a workload that is not a regular file)."""
    if cache.directory is None:
        return None
    data = _regular_bytes(str(workload))
    if data is None:
        return None
    try:
        return _digest({"context": cache.context, "command": command, "options": options,
                        "path": str(workload), "abspath": os.path.abspath(workload),
                        "workload": hashlib.sha256(data).hexdigest()})
    except (OSError, ValueError):
        return None


def _file_digest(cache: ResultCache, path: str) -> str | None:
    if path not in cache.digests:
        data = _regular_bytes(path)
        if data is None:
            return None
        cache.digests[path] = hashlib.sha256(data).hexdigest()
    return cache.digests[path]


def _entry_path(cache: ResultCache, key: str) -> Path:
    assert cache.directory is not None
    return cache.directory / f"{key}{SUFFIX}"


def lookup(cache: ResultCache, key: str | None) -> Any | None:
    """The payload stored under ``key`` when every input it was computed from is unchanged;
    None otherwise (a miss: absent, unreadable, corrupt, foreign or stale)."""
    if key is None or cache.directory is None:
        return None
    path = _entry_path(cache, key)
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_ENTRY_BYTES + 1024)
        header, _, body = raw.partition(b"\n")
        if header != MAGIC + hashlib.sha256(body).hexdigest().encode():
            return None
        entry = json.loads(body)
        if not isinstance(entry, dict) or entry.get("key") != key:
            return None
        files, configs = entry["files"], entry["configs"]
        if any(_file_digest(cache, name) != digest for name, digest in files.items()):
            return None
        for workload, found in configs.items():
            now = find_config(Path(workload))
            if ("" if now is None else os.path.abspath(now)) != found:
                return None
        payload = entry["payload"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None
    with contextlib.suppress(OSError):  # recently used: the last to be evicted
        os.utime(path)
    return payload


def store(cache: ResultCache, key: str | None, payload: Any, log: ReadLog) -> bool:
    """Write ``payload`` under ``key`` with the inputs ``log`` names; False (and nothing
    written) when it cannot be trusted or written. Never raises for the cache's sake."""
    if key is None or cache.directory is None:
        return False
    if any(not digest for digest in log.files.values()):
        return False  # read a pipe or a device: not reproducible from files
    try:
        body = json.dumps({"key": key, "files": log.files, "configs": log.configs,
                           "payload": payload}, allow_nan=False, ensure_ascii=False,
                          separators=(",", ":")).encode("utf-8")
    except (TypeError, ValueError):  # not plain JSON data, or NaN/inf: computed again
        return False
    if len(body) > MAX_ENTRY_BYTES:
        return False
    data = MAGIC + hashlib.sha256(body).hexdigest().encode() + b"\n" + body
    try:
        cache.directory.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=cache.directory, prefix=".tmp-", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(temp, _entry_path(cache, key))
        except BaseException:
            _remove(temp)
            raise
    except OSError:
        return False
    cache.digests.update(log.files)
    cache.stored.append(key)
    return True


def _remove(path: str | Path) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def trim(cache: ResultCache) -> int:
    """Delete the least recently used entries until the directory holds at most the budget;
    the number deleted. Files that vanish meanwhile (another job's trim) are skipped."""
    if cache.directory is None:
        return 0
    entries = []
    try:
        with os.scandir(cache.directory) as scan:
            for item in scan:
                try:
                    info = item.stat(follow_symlinks=False)
                except OSError:
                    continue
                if item.name.endswith(".part") and info.st_mtime < time.time() - 3600:
                    _remove(cache.directory / item.name)  # left by a killed writer
                if not item.name.endswith(SUFFIX):
                    continue
                entries.append((max(info.st_mtime, info.st_atime), item.name, info.st_size))
    except OSError:
        return 0
    total = sum(size for _, _, size in entries)
    removed = 0
    for _, name, size in sorted(entries):
        if total <= cache.budget:
            break
        _remove(cache.directory / name)
        total -= size
        removed += 1
    return removed


def through(cache: ResultCache, command: str, workload: Path, options: Mapping[str, Any],
            compute: Callable[[], tuple[Any, bool]],
            keys: Sequence[str] = ()) -> tuple[Any, Status]:
    """The payload for ``workload``: from the cache on a hit (a mapping holding ``keys``),
    else ``compute()`` (the payload, and whether it may be stored), its inputs logged and
    the result stored."""
    key = entry_key(cache, command, workload, options)
    payload = lookup(cache, key)
    if isinstance(payload, dict) and all(k in payload for k in keys):
        return payload, "hit"
    with recorded_reads() as log:
        payload, keep = compute()
    if keep:
        store(cache, key, payload, log)
    return payload, "off" if key is None else "miss"
