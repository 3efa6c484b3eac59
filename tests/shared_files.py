"""Where the tests find ``../shared`` (public traces, benchmark records, upstream Kubernetes
schemas), read in place and never copied into the repository.

``../shared`` is the folder beside the repository root (present in CI). ``PD_ADVISOR_SHARED``
names another location (a worktree elsewhere). Tests that need it use ``requires_shared`` and
are skipped, with the reason, where it is absent.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DIR = Path(os.environ.get("PD_ADVISOR_SHARED") or REPO_ROOT.parent / "shared")


def shared_path(*parts: str) -> Path:
    """A path under ``../shared``; the test is skipped with a reason when it is absent."""
    path = SHARED_DIR.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent (../shared beside the repository, or PD_ADVISOR_SHARED)")
    return path


requires_shared = pytest.mark.skipif(not SHARED_DIR.is_dir(),
                                     reason=f"{SHARED_DIR} is absent (../shared beside the "
                                            "repository, or PD_ADVISOR_SHARED)")
