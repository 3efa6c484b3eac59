"""Every input file is read once, bounded, into memory (#33): the one reader the loaders share.

:func:`read_input` reads at most ``limit + 1`` bytes of a path, in one pass, whatever the path
is: a regular file, a pipe or ``/dev/stdin`` (``cat log | pd-advisor fit /dev/stdin``), a
FIFO, or process substitution (``<(zcat log.gz)``). Nothing reads the file a second time —
format sniffing, parsing and hashing (``input.sha256``, an overlay's ``fitted_on.files``) all
work on the bytes returned — so a pipe is read whole and the hash is of what was read. A
larger input is refused after ``limit + 1`` bytes, so a huge file costs neither time nor
memory; ``stat`` is never trusted for the size (``/proc`` files and pipes report 0).

What it refuses, each as :class:`UnreadableFileError` with a message in the user's terms: a
missing file (and a broken symbolic link, naming its target), a symbolic-link loop, a
directory, a file it may not read, a file over the limit, and — with ``regular_only``, for
files found by listing a directory (profiles) — anything but a regular file: opening a FIFO
there would wait forever for a writer (``profiles list`` once hung).

:func:`long_line` finds the first line longer than a limit (line-oriented formats: JSON Lines
and CSV request logs), for a located ``path:line:1`` error.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO


@dataclass(frozen=True, kw_only=True)
class ReadLog:
    """What a result depended on: ``files``, absolute path → SHA-256 of what was read ("" for
    anything but a regular file, which a result cache cannot trust); ``configs``, absolute
    workload path → the ``.pd-advisor.yaml`` found for it ("" for none)."""

    files: dict[str, str] = field(default_factory=dict)
    configs: dict[str, str] = field(default_factory=dict)


_LOGS: list[ReadLog] = []
"""The open :func:`recorded_reads` logs (innermost last)."""
_SEEN: dict[str, str] = {}
"""Every file read while a log was open, for :func:`note_read` (a profile the catalog
keeps in memory is a dependency of each workload that uses it)."""


@contextmanager
def recorded_reads() -> Iterator[ReadLog]:
    """Log every file :func:`read_input` reads (and :func:`note_read` names), and every
    config file search (:func:`note_config`), in the block: the inputs a result depends on
    (``usecases/result_cache.py``)."""
    log = ReadLog()
    _LOGS.append(log)
    try:
        yield log
    finally:
        _LOGS.remove(log)


def note_read(path: Path) -> None:
    """Log ``path`` as read again (its bytes already in memory) in the open logs."""
    name = os.path.abspath(path)
    for log in _LOGS:
        log.files[name] = _SEEN.get(name, "")


def note_config(workload: Path, found: Path | None) -> None:
    """Log the outcome of a config file search for ``workload`` in the open logs."""
    for log in _LOGS:
        log.configs[os.path.abspath(workload)] = "" if found is None else os.path.abspath(found)


def _record(path: Path, data: bytes, regular: bool) -> None:
    name = os.path.abspath(path)
    _SEEN[name] = hashlib.sha256(data).hexdigest() if regular else ""
    for log in _LOGS:
        log.files[name] = _SEEN[name]


class UnreadableFileError(Exception):
    """An input that cannot be read as asked: missing, a directory, too large, not UTF-8...
    (``line``/``col``: where, when the problem has a place in the file)."""

    def __init__(self, message: str, line: int = 1, col: int = 1) -> None:
        self.message = message
        self.line = line
        self.col = col
        super().__init__(message)


class InputTooLarge(UnreadableFileError):
    """An input over its limit; ``size`` is its size in bytes when ``stat`` knows it (a regular
    file), else None (a pipe: more than the limit was read)."""

    def __init__(self, size: int | None, limit: int) -> None:
        shown = f"{size:,} bytes" if size is not None else f"more than {size_label(limit)}"
        super().__init__(f"file is too large ({shown}); the limit is {size_label(limit)} "
                         f"({limit:,} bytes)")
        self.size = size
        self.limit = limit


def size_label(size_bytes: int) -> str:
    """``1 MiB`` for whole mebibytes, else the byte count."""
    mib = 1024 * 1024
    return f"{size_bytes // mib} MiB" if size_bytes % mib == 0 else f"{size_bytes:,} bytes"


def _stat_failure(path: Path, exc: OSError) -> str:
    """Why ``stat`` failed, in the user's terms."""
    if exc.errno == errno.ELOOP:
        return "symbolic link loop: the path never reaches a file (too many levels of links)"
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        if path.is_symlink():
            return f"file not found (broken symbolic link to '{os.readlink(path)}')"
        return "file not found"
    return f"cannot read file: {exc.strerror or exc}"


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_input(path: Path, limit: int, *, regular_only: bool = False) -> bytes:
    """The bytes of ``path``, read once: at most ``limit`` (module docstring); raises
    :class:`UnreadableFileError` saying why not."""
    try:
        info = os.stat(path)
    except (OSError, ValueError) as exc:
        if isinstance(exc, ValueError):  # an embedded NUL byte
            raise UnreadableFileError("file not found (the name holds a NUL byte)") from None
        raise UnreadableFileError(_stat_failure(path, exc)) from None
    if stat.S_ISDIR(info.st_mode):
        raise UnreadableFileError("is a directory, not a file")
    regular = stat.S_ISREG(info.st_mode)
    if regular_only and not regular:
        raise UnreadableFileError(f"is {_kind(info.st_mode)}, not a regular file; only "
                                  "regular files are read here")
    if regular and info.st_size > limit:  # refused unread
        raise InputTooLarge(info.st_size, limit)
    try:
        with open(path, "rb") as handle:
            data = _read_at_most(handle, limit + 1, info.st_size if regular else 0)
    except OSError as exc:
        raise UnreadableFileError(f"cannot read file: {exc.strerror or exc}") from None
    if len(data) > limit:  # grew since stat, or a pipe, or /proc (stat says 0)
        raise InputTooLarge(None, limit)
    if _LOGS:
        _record(path, data, regular)
    return data


_CHUNK = 1 << 20


def _read_at_most(handle: BinaryIO, most: int, expected: int) -> bytes:
    """At most ``most`` bytes, until the end of the input: memory follows what is there
    (``read(most)`` allocates ``most`` bytes up front, 64 MiB for every log); the first read
    asks for the size ``stat`` gave (+1), then chunks of 1 MiB (a pipe, a file that grew)."""
    chunks = [handle.read(min(most, expected + 1 if expected > 0 else _CHUNK))]
    size = len(chunks[0])
    while size < most:
        chunk = handle.read(min(_CHUNK, most - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def sha256_hex(data: bytes) -> str:
    """The SHA-256 of what was read, as recorded in reports (``input.sha256``)."""
    return hashlib.sha256(data).hexdigest()


def long_line(data: bytes, limit: int) -> int | None:
    """The 1-based number of the first line of ``data`` longer than ``limit`` bytes (its
    line break not counted), or None. Linear in ``data``; nothing is copied."""
    if len(data) <= limit:
        return None
    start = 0
    number = 1
    size = len(data)
    while start < size:
        end = data.find(b"\n", start)
        if end < 0:
            end = size
        if end - start > limit:
            return number
        start = end + 1
        number += 1
    return None
