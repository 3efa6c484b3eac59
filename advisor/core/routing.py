"""The dispatch model of every instance pool: how the router's policy turns a pool's arrivals
into one instance's prompt-queue wait (docs/model.md §7.2).

Every pool — colocated instances, prefill instances — calls :func:`dispatch_wait_s` with the
same inputs: the policy (``Scenario.router``), the pool size n (exact), the rate and arrival
CV each instance is offered on average, the service mean and CV of the queue, and the share of
the router's count that is that queue (``count_share``). Real routers and the simulator
(``simulate/dispatch.py``) count the requests *outstanding* at each instance; what that count
holds is a physical property of the pool, not of the architecture label:

* a prefill instance holds a request from dispatch until its prefill pass ends: its count
  *is* its prompt queue (``count_share`` = 1);
* a colocated instance holds a request until its last token: its count is mostly decoding
  requests (``count_share`` = prompts queued or in prefill / all outstanding, L_p/(L_p + B)),
  so balancing the count only partly balances the prompt queue.

Per policy (c the pool's arrival CV, c_s the service CV, ρ the per-instance utilisation):

* ``round-robin``: each instance gets every n-th arrival — gamma arrivals of CV c become
  gamma arrivals of CV² = c²/n (Erlang thinning) — and queues alone: G/G/1
  (``queueing.gg_c_wait_s``) at that CV.
* ``random``: Bernoulli thinning — the inter-arrival CV² of a renewal stream kept with
  probability 1/n is 1 + (c² − 1)/n — and a G/G/1 per instance.
* ``least-loaded`` (join the shortest count): where the count is the queue (share 1) the
  pool behaves as one G/G/c queue (Allen–Cunneen with the GI/M/1 arrival term), the standard
  approximation of JSQ; where the count is mostly other work (share → 0) each arrival still
  raises its instance's count, so a burst is dealt out about round robin (per-instance
  G/G/1 at CV² = c²/n). In between the mean wait and P(wait) are interpolated linearly,
  W = (1 − s)·W_rr + s·W_pool (ESTIMATE: an approximation checked against the simulator,
  tests/simulate/test_sim_matrix.py).
* ``power-of-two`` (the lower count of two distinct uniform instances): Mitzenmacher's
  supermarket model (IEEE TPDS 12(10), 2001): as n → ∞ with Poisson arrivals and
  exponential service the share of instances holding ≥ i requests is ρ^(2^i − 1), so an
  arrival waits with probability ρ² and the mean wait is Σ_{i≥1} ρ^(2^(i+1) − 2) service
  times, against ρ/(1 − ρ) for random dispatch. The random-routing G/G/1 wait (the same
  thinned arrivals) is scaled by that ratio — by its share-th power where the count is only
  partly the queue — and P(wait) by ρ^s. With two instances the two choices are both
  instances (JSQ); for n instances the wait is (1 − 1/(n−1))·W_sm + W_JSQ/(n−1)
  (ESTIMATE: the weight of the finite pool, checked against the simulator).

One instance is a G/G/1 queue under every policy. Waits are +inf at ρ ≥ 1 (overload; the
callers map it). Everything broadcasts over numpy arrays.
"""

from __future__ import annotations

import numpy as np

from advisor.core.arrays import clip
from advisor.core.queueing import gg_c_wait_s
from advisor.core.scenario import ROUTER_POLICIES, RouterPolicy

SUPERMARKET_TERMS = 8
"""Terms of the supermarket model's wait series Σ ρ^(2^(i+1) − 2): the 8th is ρ^510, below
1e-11 of the first for ρ ≤ 0.95 (and ρ ≥ 0.999 is overload territory)."""


def _blend(a: np.ndarray, b: np.ndarray, weight: np.ndarray | float) -> np.ndarray:
    """(1 − w)·a + w·b for non-negative a, b (+inf kept; the end weights give a or b exactly).

    Linear, not geometric: a pooled queue's wait on many servers is astronomically small
    (Erlang C), and a geometric mean would let any share of it wipe the other term out."""
    w = clip(np.asarray(weight, dtype=float), 0.0, 1.0)
    with np.errstate(invalid="ignore"):
        out = (1.0 - w) * a + w * b
    out = np.where(np.isinf(a) | np.isinf(b), np.inf, out)
    return np.where(w <= 0.0, a, np.where(w >= 1.0, b, out))


def supermarket_wait_ratio(utilization: np.ndarray) -> np.ndarray:
    """Mean wait of power-of-two dispatch over random dispatch's, n → ∞, M/M/1 instances:
    [Σ_{i≥1} ρ^(2^(i+1) − 2)] / [ρ/(1 − ρ)] (Mitzenmacher 2001); 1 at ρ → 0 is not the limit
    (it is ρ(1 − ρ) → 0), so light load gives a small ratio, as it should."""
    rho = clip(np.asarray(utilization, dtype=float), 1e-12, 1.0 - 1e-12)
    series = np.zeros_like(rho)
    for i in range(1, SUPERMARKET_TERMS + 1):
        series = series + rho ** (2.0 ** (i + 1) - 2.0)
    return np.asarray(series * (1.0 - rho) / rho, dtype=float)


def dispatch_wait_s(policy: RouterPolicy, instances: np.ndarray | float,
                    arrival_rate: np.ndarray, mean_service_s: np.ndarray | float,
                    arrival_cv: np.ndarray | float, service_cv: np.ndarray | float,
                    count_share: np.ndarray | float = 1.0,
                    round_robin: tuple[np.ndarray, np.ndarray] | None = None
                    ) -> tuple[np.ndarray, np.ndarray]:
    """(mean wait, P(wait > 0)) of one instance's queue in a pool of ``instances`` behind a
    ``policy`` router (module docstring). ``arrival_rate`` is the rate each instance is
    offered (the pool's over n), ``arrival_cv`` the pool's arrival CV, ``count_share`` the
    share of the router's per-instance count that is this queue (1: the count is the queue,
    a prefill pool; a colocated pool's is mostly decoding requests). The percentile code takes
    the two numbers (``queueing.wait_quantile_s``, ``queueing.backlog_quantile_tokens``).
    ``round_robin``, when given, is this pool's round-robin (mean wait, P(wait)) at the same
    inputs, already computed by the caller (the colocated count share needs it): least-loaded
    dispatch reuses it instead of computing it again."""
    if policy not in ROUTER_POLICIES:
        raise ValueError(f"unknown router {policy!r}")
    lam = np.asarray(arrival_rate, dtype=float)
    s = np.asarray(mean_service_s, dtype=float)
    n = np.maximum(np.round(np.asarray(instances, dtype=float)), 1.0)
    c2 = np.square(np.asarray(arrival_cv, dtype=float))
    share = clip(np.asarray(count_share, dtype=float), 0.0, 1.0)
    if policy == "round-robin":
        return gg_c_wait_s(1, lam, s, np.sqrt(c2 / n), service_cv)
    rand_cv = np.sqrt(np.maximum(1.0 + (c2 - 1.0) / n, 0.0))
    if policy == "random":
        return gg_c_wait_s(1, lam, s, rand_cv, service_cv)
    w_jsq, p_jsq = _least_loaded(n, lam, s, c2, service_cv, share, round_robin)
    if policy == "least-loaded":
        return w_jsq, p_jsq
    # power-of-two: the supermarket limit from random dispatch, weighted towards JSQ on few
    w_rand, p_rand = gg_c_wait_s(1, lam, s, rand_cv, service_cv)
    rho = clip(lam * s, 0.0, 1.0)
    w_sm = w_rand * np.power(supermarket_wait_ratio(rho), share)
    p_sm = p_rand * np.power(np.maximum(rho, 1e-12), share)
    with np.errstate(divide="ignore"):
        to_jsq = np.where(n > 1.0, 1.0 / np.maximum(n - 1.0, 1.0), 1.0)
    wait = _blend(w_sm, w_jsq, to_jsq)
    p = _blend(p_sm, p_jsq, to_jsq)
    return wait, p


def _least_loaded(n: np.ndarray, lam: np.ndarray, s: np.ndarray, c2: np.ndarray,
                  service_cv: np.ndarray | float, share: np.ndarray,
                  round_robin: tuple[np.ndarray, np.ndarray] | None = None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Join-the-shortest-count: G/G/1 at the round-robin CV where the count is other work,
    the pooled G/G/n where it is the queue, linear in between (module docstring)."""
    if np.all(n <= 1.0):
        return gg_c_wait_s(1, lam, s, np.sqrt(c2), service_cv)
    servers = np.broadcast_to(n, np.broadcast(n, lam).shape)
    w_pool, p_pool = gg_c_wait_s(servers, lam * servers, s, np.sqrt(c2), service_cv)
    if np.all(share >= 1.0):  # the count is the queue (a prefill pool): the pooled queue
        return w_pool, p_pool
    w_rr, p_rr = (gg_c_wait_s(1, lam, s, np.sqrt(c2 / n), service_cv) if round_robin is None
                  else round_robin)
    return _blend(w_rr, w_pool, share), _blend(p_rr, p_pool, share)
