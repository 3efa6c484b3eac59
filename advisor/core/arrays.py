"""Small numpy helpers shared by the core."""

from __future__ import annotations

import numpy as np


def unique_sorted(values: np.ndarray) -> np.ndarray:
    """The distinct values of ``values`` (flattened), ascending: ``np.unique(values)``.

    Without ``np.unique``, whose plain form imports ``numpy.ma`` (≈ 10 ms of every cold start)
    to check for masked arrays. NaNs, which the core never passes, would not be merged.
    """
    flat = np.sort(np.ravel(values))
    if flat.size == 0:
        return flat
    keep = np.empty(flat.size, dtype=bool)
    keep[0] = True
    np.not_equal(flat[1:], flat[:-1], out=keep[1:])
    return flat[keep]
