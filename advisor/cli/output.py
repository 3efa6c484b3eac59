"""Terminal and output plumbing shared by every command.

Outputs are never half-written (#21) and never destroy what they land on (#33):

* ``-o FILE`` (and ``--plot FILE``) that is a regular file, or does not exist, is written to a
  temporary file in FILE's directory and renamed over it once complete
  (:func:`write_file_atomically`): a reader sees the old file or the new one, never a part;
* a symbolic link is followed: its target is written (atomically, in the target's
  directory) and the link stays a link, as a shell's ``>`` does;
* a FIFO, a character device (``/dev/null``, ``/dev/stdout``) or a socket is written through,
  in place: a rename would replace the device with a regular file (as root, ``-o /dev/null``
  once did), and no rename can make a write into a pipe atomic;
* a file that is an input of the same run is never an output
  (:func:`refuse_input_as_output`), and two outputs of one run never name the same file
  (:func:`refuse_same_outputs`); both exit 2 before any work.

Every message on stderr goes through :func:`message` (the escaping rule of
:func:`advisor.escaping.visible`, line by line), so a path or an id from a user file cannot
reach the terminal raw. Standard output is guarded once, in
:func:`guard_stdout` (installed by ``advisor.cli.app.main``): a reader that stopped (closed
pipe, ``| head -1``) ends the run with exit 0 and no message; any other write error
(``/dev/full``) is one line, exit 2. Reports are written as UTF-8 bytes whatever the
locale, so the same input gives the same bytes everywhere.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

import typer

EXIT_ERROR = 2
DEFAULT_WIDTH = 100
"""Table width off a terminal (CI logs, files) unless ``COLUMNS`` says otherwise."""

_debug = {"enabled": False}


def link_from(output: Path | None, target: Path) -> str:
    """``target`` as a link in a report written to ``output``: relative to the directory the
    report is written in (standard output: the working directory), with forward slashes —
    an absolute path never loads once the report is a PR comment or moves with its figure
    (#28). Absolute only where no relative path exists (another drive)."""
    base = (os.getcwd() if output is None or str(output) == "-"
            else os.path.dirname(os.path.abspath(output)))
    try:
        relative = os.path.relpath(os.path.abspath(target), base)
    except ValueError:
        return Path(os.path.abspath(target)).as_posix()
    return Path(relative).as_posix()


def message(text: str) -> None:
    """Write ``text`` and a line break on stderr, each of its lines escaped
    (:func:`advisor.escaping.visible`): its own line breaks are kept. A user value put into
    ``text`` goes through :func:`shown` first, so a line break in it (a file name holding
    ``\\n``) cannot start a line of its own."""
    from advisor.escaping import visible

    sys.stderr.write("\n".join(visible(line) for line in text.split("\n")) + "\n")


def shown(value: object) -> str:
    """A user value (a path, a name) for a message: :func:`advisor.escaping.visible`, so it
    stays on its line."""
    from advisor.escaping import visible

    return visible(str(value))


def warn(text: str) -> None:
    """``pd-advisor: warning: TEXT`` on stderr (escaped, :func:`message`)."""
    message(f"pd-advisor: warning: {text}")


def fail(text: str) -> NoReturn:
    """Print ``pd-advisor: error: ...`` on stderr and exit 2; control characters a user value
    brought into the message are shown escaped (:func:`message`)."""
    message(f"pd-advisor: error: {text}")
    raise typer.Exit(EXIT_ERROR)


def fail_with_problems(path: Path, problems: Sequence[Any], outcome: str) -> NoReturn:
    """Print every input problem (``path:line:col: error: ...``) on stderr, then
    ``pd-advisor: error: PATH: N problems; OUTCOME`` (e.g. "nothing evaluated"), exit 2."""
    for problem in problems:
        message(problem.format())
    count = len(problems)
    fail(f"{shown(path)}: {count} problem{'s' * (count != 1)}; {outcome}")


def console_text(text: object) -> str:
    """A user string (name, path, id) for a rich console: control characters escaped
    (``render.text.visible``) and rich markup inert (#21)."""
    from rich.markup import escape

    from advisor.escaping import visible

    return escape(visible(str(text)))


def set_debug(enabled: bool) -> None:
    """Record the root command's ``--debug`` (tracebacks for internal errors) and capture the
    libraries' warnings: numpy's ``RuntimeWarning``, matplotlib's ``UserWarning`` and log
    messages reach stderr only with ``--debug`` (#33: a layout warning on every plot). The
    tool's own warnings are ``pd-advisor: warning:`` lines (:func:`warn`), never these."""
    import logging
    import warnings

    _debug["enabled"] = bool(enabled)
    warnings.simplefilter("default" if enabled else "ignore")
    logging.getLogger("matplotlib").setLevel(logging.WARNING if enabled else logging.CRITICAL)


def debug_enabled() -> bool:
    """Whether ``--debug`` was given to the root command."""
    return _debug["enabled"]


def terminal_settings(to_stdout: bool) -> tuple[int, bool]:
    """(width, colour) for tables: honours ``COLUMNS`` and ``NO_COLOR``.

    Colour only on a terminal, without ``NO_COLOR`` and with ``TERM`` not ``dumb``; the width
    is ``COLUMNS`` when set, else the terminal's, else :data:`DEFAULT_WIDTH`.
    """
    tty = to_stdout and sys.stdout.isatty()
    color = tty and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) >= 40:
        return int(columns), color
    if tty:
        return shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns, color
    return DEFAULT_WIDTH, color


class OutputFailed(BaseException):
    """Standard output could not be written: ``reader_gone`` when the reader closed the pipe.

    A ``BaseException`` so that neither the commands' guards nor Click's own handling of
    ``OSError`` (which exits 1 on a broken pipe) intercept it before ``app.main``.
    """

    def __init__(self, error: OSError) -> None:
        super().__init__(error)
        self.error = error
        self.reader_gone = isinstance(error, BrokenPipeError) or error.errno == errno.EPIPE


class GuardedStream:
    """A text stream whose write and flush errors become :class:`OutputFailed`."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return int(self._stream.write(text))
        except OSError as exc:
            raise OutputFailed(exc) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            raise OutputFailed(exc) from None

    def write_bytes(self, data: bytes) -> None:
        """``data`` (UTF-8) as they are after any text already written; as text to a stream
        without bytes underneath (a ``StringIO`` in tests)."""
        try:
            _write_utf8(self._stream, data)
        except OSError as exc:
            raise OutputFailed(exc) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def guard_stdout() -> None:
    """Route standard output through :class:`GuardedStream` (once, from ``app.main``).

    Characters the locale's encoding cannot represent are written as backslash escapes
    instead of failing (reports themselves are written as UTF-8 bytes).
    """
    if sys.stdout is None or isinstance(sys.stdout, GuardedStream):
        return
    with contextlib.suppress(AttributeError, ValueError, OSError):
        # Ignored below: TextIO has no reconfigure(); the real stdout is a TextIOWrapper
        # (AttributeError suppressed).
        sys.stdout.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
    sys.stdout = GuardedStream(sys.stdout)


def finish_stdout(failure: OutputFailed | None = None) -> int | None:
    """Flush standard output; after a failed write, the exit code (0: the reader stopped,
    2: any other error, with one line on stderr), else None."""
    if failure is None:
        try:
            if sys.stdout is not None:
                sys.stdout.flush()
            return None
        except OutputFailed as exc:
            failure = exc
        except OSError as exc:
            failure = OutputFailed(exc)
    try:  # nothing more can reach the reader: later flushes (at exit) must not fail again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.__stdout__.fileno() if sys.__stdout__ else 1)
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass
    if failure.reader_gone:
        return 0
    reason = failure.error.strerror or str(failure.error)
    sys.stderr.write(f"pd-advisor: error: cannot write the output (standard output): "
                     f"{reason}\n")
    return EXIT_ERROR


def _write_utf8(stream: Any, data: bytes) -> None:
    buffer = getattr(stream, "buffer", None)
    stream.flush()
    if buffer is None:  # a text-only stream (tests capturing text)
        stream.write(data.decode("utf-8"))
        stream.flush()
        return
    buffer.write(data)
    buffer.flush()


def _write_stdout(text: str | Iterable[str]) -> None:
    if not isinstance(text, str):
        for piece in text:
            _write_stdout(piece)
        return
    data = text.encode("utf-8")
    if isinstance(sys.stdout, GuardedStream):
        sys.stdout.write_bytes(data)
    else:
        _write_utf8(sys.stdout, data)


def _same_file(a: Path, b: Path) -> bool:
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
        return os.path.realpath(a) == os.path.realpath(b)
    except (OSError, ValueError):
        return False


def refuse_input_as_output(output: Path | None, inputs: Iterable[Path | None]) -> None:
    """Exit 2 when ``output`` is one of this run's input files (it would be replaced)."""
    if output is None or str(output) == "-":
        return
    for path in inputs:
        if path is not None and str(path) != "-" and _same_file(output, Path(path)):
            fail(f"refusing to write {shown(output)}: it is an input of this run ({shown(path)}); "
                 "choose another -o FILE")


def refuse_same_outputs(outputs: Mapping[str, Path | None]) -> None:
    """Exit 2 when two outputs of one run (``{option: path}``, e.g. ``{"-o": ..., "--plot":
    ...}``) name the same file: the second would replace the first. Standard output (``-``)
    and character devices (``/dev/null``: writing it twice loses nothing) are exempt."""
    named = [(option, path) for option, path in outputs.items()
             if path is not None and str(path) != "-"]
    for i, (first, a) in enumerate(named):
        for second, b in named[i + 1:]:
            if _same_file(a, b) and not _is_char_device(a):
                fail(f"{first} {shown(a)} and {second} {shown(b)} name the same file: the "
                     "second would replace the first; give each output its own file")


def _is_char_device(path: Path) -> bool:
    try:
        return stat.S_ISCHR(os.stat(path).st_mode)
    except OSError:
        return False


def replaces_file(output: Path) -> bool:
    """Whether writing ``output`` would replace an existing regular file (its link target
    included): what ``--force`` guards; a FIFO or a device is written through, not replaced."""
    try:
        return stat.S_ISREG(os.stat(output).st_mode)
    except (OSError, ValueError):
        return False


def output_destination(output: Path) -> tuple[Path, bool]:
    """Where a write to ``output`` lands, and whether it is written in place.

    A symbolic link is followed to its target (written as a regular file would be, even
    when the link is dangling: the target is created); a FIFO, device or socket is written
    in place (True); a regular file or a new name is replaced atomically (False). A
    directory raises ``IsADirectoryError``.
    """
    try:
        info = os.stat(output)
    except FileNotFoundError:
        info = None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory", str(output))
    if info is not None and not stat.S_ISREG(info.st_mode):
        return output, True
    if os.path.islink(output):
        return Path(os.path.realpath(output)), False
    return output, False


def write_file_atomically(data: bytes | Iterable[bytes], output: Path) -> None:
    """Write ``data`` to ``output`` (:func:`output_destination`): through a temporary file in
    the destination's directory, renamed over it once complete, so readers see the old file
    or the new one, never a part; written in place into a FIFO or a device. The file keeps
    the mode of the file it replaces (a new one gets the usual 0666 & ~umask)."""
    destination, in_place = output_destination(output)
    pieces = [data] if isinstance(data, bytes) else data
    if in_place:
        with open(destination, "wb") as handle:
            for piece in pieces:
                handle.write(piece)
        return
    directory = destination.parent if str(destination.parent) else Path(".")
    try:
        mode = stat.S_IMODE(os.stat(destination).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(prefix=f".{destination.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            for piece in pieces:
                handle.write(piece)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, destination)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_file(data: bytes | Iterable[bytes], output: Path, wrote: str = "") -> None:
    """:func:`write_file_atomically`, then ``pd-advisor: wrote FILE`` (and ``wrote``) on
    stderr; exit 2 with ``cannot write FILE: why`` when it fails (nothing replaced)."""
    try:
        write_file_atomically(data, output)
    except OSError as exc:
        fail(f"cannot write {shown(output)}: {exc.strerror or exc}")
    message(f"pd-advisor: wrote {shown(output)}{wrote}")


def write_output(text: str | Iterable[str], output: Path | None, wrote: str = "",
                 inputs: Iterable[Path | None] = ()) -> None:
    """Write a report (text, or its pieces in order) to stdout or ``output`` as UTF-8
    (exit 2 if the file cannot be written or is one of ``inputs``, the run's input files).

    ``wrote`` is appended to the ``pd-advisor: wrote FILE`` line on stderr.
    """
    if output is None or str(output) == "-":
        _write_stdout(text)
        return
    refuse_input_as_output(output, inputs)
    write_file(text.encode("utf-8") if isinstance(text, str)
               else (piece.encode("utf-8") for piece in text), output, wrote)
