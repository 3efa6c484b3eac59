"""The best colocated plan: the shape and token budget a pool should run (docs/model.md §5).

Of the instance shapes that fit the cluster at least once, the plan maximising the worst
phase's headroom (pool goodput / rate), then the goodput per GPU of the first phase; ties go
to the first (shape, budget) in table order. One implementation for ``evaluate`` (one
cluster size) and ``design_points`` (many).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ColocatedChoices:
    """The best colocated plan per cluster size."""

    found: np.ndarray
    """(n,) whether any shape fits the cluster."""
    shape: np.ndarray
    """(n,) index of the chosen shape (meaningless where not ``found``)."""
    budget: np.ndarray
    """(n,) index of the chosen token-budget column."""


def best_colocated(goods: np.ndarray, counts: np.ndarray, rates: np.ndarray,
                   shape_gpus: np.ndarray) -> ColocatedChoices:
    """The best plan of each cluster size.

    ``goods`` (phases, n, shapes, budgets): per-instance goodput, req/s; ``counts`` (n, shapes):
    instances of each shape the cluster holds; ``rates`` (n, phases): arrival rates;
    ``shape_gpus`` (shapes,): GPUs per instance.
    """
    n = counts.shape[0]
    C = goods.shape[3]
    head = goods[0] * counts[:, :, None] / rates[:, 0][:, None, None]
    for k in range(1, goods.shape[0]):
        head = np.minimum(head, goods[k] * counts[:, :, None] / rates[:, k][:, None, None])
    gpus = counts * shape_gpus[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        per_gpu = goods[0] * counts[:, :, None] / gpus[:, :, None]
    usable = (counts > 0)[:, :, None]
    head_m = np.where(usable, head, -np.inf).reshape(n, -1)
    per_gpu_m = np.where(usable, per_gpu, -np.inf).reshape(n, -1)
    best_head = head_m.max(axis=1)
    tied = head_m == best_head[:, None]
    best_per_gpu = np.where(tied, per_gpu_m, -np.inf).max(axis=1)
    choice = np.argmax(tied & (per_gpu_m == best_per_gpu[:, None]), axis=1)
    found = np.isfinite(best_head) & (counts.max(axis=1) > 0)
    return ColocatedChoices(found, choice // C, choice % C)
