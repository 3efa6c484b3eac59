"""Textbook queueing formulas the model's own queue (``queueing.gg_c_wait_s``) must reduce to;
the model does not call them, the tests compare against them."""

from __future__ import annotations

import numpy as np

from advisor.core.queueing import erlang_c


def kingman_wait_s(utilization: np.ndarray, mean_service_s: np.ndarray,
                   arrival_cv: np.ndarray | float, service_cv: np.ndarray | float) -> np.ndarray:
    """Mean G/G/1 waiting time in seconds (inf when utilization ≥ 1)."""
    rho = np.asarray(utilization, dtype=float)
    variability = (np.square(arrival_cv) + np.square(service_cv)) / 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        wait = np.where(rho < 1.0, rho / (1.0 - rho) * variability * mean_service_s, np.inf)
    return np.where(rho <= 0.0, 0.0, wait)


def allen_cunneen_wait_s(servers: np.ndarray | int, arrival_rate: np.ndarray,
                         mean_service_s: np.ndarray, arrival_cv: np.ndarray | float,
                         service_cv: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    """Mean G/G/c wait and the probability of waiting (Allen–Cunneen)."""
    c = np.asarray(servers, dtype=float)
    lam = np.asarray(arrival_rate, dtype=float)
    s = np.asarray(mean_service_s, dtype=float)
    a = lam * s
    p_wait = erlang_c(c, a)
    variability = (np.square(arrival_cv) + np.square(service_cv)) / 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        wait = np.where(a < c, p_wait * s / (c - a) * variability, np.inf)
    return np.where(lam <= 0, 0.0, wait), p_wait
