"""Where a workload's project configuration file, ``.pd-advisor.yaml``, is looked for (#33).

:func:`find_config` returns the nearest one in :func:`config_search_dirs`: from the
workload's directory upwards, stopping at the repository root, the home directory or a mount
point (the rule is stated in the README's "Workload format" section).
"""

from __future__ import annotations

import os
from pathlib import Path

from advisor.loading.input_file import note_config

CONFIG_FILE_NAME = ".pd-advisor.yaml"
"""The project configuration file :func:`find_config` looks for."""

_ROOT_MARKERS = (".git", ".hg")
"""A directory holding one of these is a project root: the config search stops there."""


def config_search_dirs(path: Path) -> list[Path]:
    """The directories :func:`find_config` searches for a workload at ``path``, nearest first.

    From the workload's directory upwards, and no further than the first of (#33):

    * the repository root: a directory holding ``.git`` or ``.hg`` (searched, like black's
      ``find_project_root``);
    * the user's home directory, when the workload lies below it (searched);
    * a mount point: the search never crosses into another file system.

    Outside a repository and outside the home directory only the workload's own directory
    is searched: a ``.pd-advisor.yaml`` left in ``/tmp`` or ``/`` changes nothing below it.
    """
    directory = path.resolve().parent
    chain = [directory, *directory.parents]
    root = next((i for i, d in enumerate(chain)
                 if any(_exists(d / marker) for marker in _ROOT_MARKERS)), None)
    home = _home()
    if root is None and home is not None and home in chain:
        root = chain.index(home)
    searched = chain[:1 if root is None else root + 1]
    device = _device(directory)
    return [d for i, d in enumerate(searched) if i == 0 or _device(d) == device]


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:
        return False


def _home() -> Path | None:
    try:
        return Path.home().resolve()
    except (OSError, RuntimeError, KeyError):
        return None


def _device(directory: Path) -> int | None:
    try:
        return os.stat(directory).st_dev
    except OSError:
        return None


def find_config(path: Path) -> Path | None:
    """The nearest ``.pd-advisor.yaml`` in :func:`config_search_dirs` of a workload, or None."""
    found = next((directory / CONFIG_FILE_NAME for directory in config_search_dirs(path)
                  if (directory / CONFIG_FILE_NAME).is_file()), None)
    note_config(path, found)  # a dependency of the result (a result cache)
    return found
