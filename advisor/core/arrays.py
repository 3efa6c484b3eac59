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


def clip(values: np.ndarray | float, low: np.ndarray | float,
         high: np.ndarray | float) -> np.ndarray:
    """``np.clip(values, low, high)`` as ``np.minimum(np.maximum(values, low), high)``.

    The same values (numpy documents the two as equivalent; NaN stays NaN), at half the cost
    for the small arrays of the capacity searches, where ``np.clip``'s dispatch dominates.
    """
    return np.minimum(np.maximum(values, low), high)
