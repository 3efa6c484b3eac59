"""``python -m advisor`` and the ``pd-advisor`` console script.

:func:`console` runs the command line (:func:`advisor.cli.app.main`) and then ends the process
with ``os._exit`` once stdout and stderr are flushed, instead of tearing the interpreter down
module by module (60–90 ms on a 2-core machine after a ``recommend``, longer than writing
the report). Nothing is lost by skipping the teardown: every command has written and closed
its files before it returns (``advisor.cli.output.write_output``; the data is then the
kernel's, which ``os._exit`` does not discard), and no code of pd-advisor relies on ``atexit``
handlers, finalizers or logging shut-down. A failed flush of stdout (a full disk) is reported
and exits 2; a reader that went away (a closed pipe) keeps the command's own exit code.

In-process callers — tests, ``typer.testing.CliRunner`` on :data:`advisor.cli.app.app`, or
:func:`advisor.cli.app.main` itself — are unaffected: they get ``SystemExit`` as usual.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from typing import NoReturn

EXIT_ERROR = 2

THREAD_LIMITS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
"""Thread-pool sizes of numpy's BLAS (OpenBLAS, OpenMP, MKL), each 1 unless the user set it
(#34): OpenBLAS starts a thread per core when numpy is imported, which took a third of
``import numpy`` on a 2-core machine, and the model never multiplies large matrices."""


def limit_threads() -> None:
    """Default each of :data:`THREAD_LIMITS` to 1, keeping a value the user set; before numpy
    is imported (the BLAS libraries read them when they load)."""
    for name in THREAD_LIMITS:
        os.environ.setdefault(name, "1")


def exit_status(code: object) -> int:
    """The process exit status ``sys.exit(code)`` would give (None 0, an int itself, anything
    else printed on stderr and 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    sys.stderr.write(f"{code}\n")
    return 1


def exit_now(code: object) -> NoReturn:
    """Flush stdout and stderr, then end the process with ``code``'s status, skipping the
    interpreter's teardown."""
    status = exit_status(code)
    try:
        sys.stdout.flush()
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            sys.stderr.write(f"pd-advisor: error: cannot write the output: "
                             f"{exc.strerror or exc}\n")
            status = status or EXIT_ERROR
    except ValueError:  # stdout closed by the caller
        pass
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    os._exit(status)


def console() -> NoReturn:
    """The ``pd-advisor`` console script (and ``python -m advisor``): the thread limits
    (:func:`limit_threads`), the command line, then :func:`exit_now`."""
    limit_threads()
    from advisor.cli.app import main

    try:
        main()
    except SystemExit as exc:
        exit_now(exc.code)
    exit_now(0)


if __name__ == "__main__":
    console()
