"""Sweeps: one workload evaluated over many design points, vectorised (issue #5).

A sweep varies one or two workload keys (:data:`KEYS`) and reports, per point, exactly what
``assess(sc, evaluate(sc))`` would decide — the verdict, both architectures' goodput per GPU,
the rounding loss, the KV link utilisation and which preconditions fail — without running the
scalar model once per point.

How (docs/model.md §5–§9 give the model itself):

* **Capacities once.** Per-instance capacities (colocated goodput per shape and token budget,
  prefill and decode capacity per shape and phase) do not depend on the arrival rate. They
  depend on the cluster size through *which shapes exist* (TP up to the node, TP × PP while
  it fits), *which link carries the KV* (intra-node while the cluster is one node) and two
  pool sizes: the pooled prefill queue's (``prefetch_pooled``) and the colocated prompt
  queue's (the instances the router splits arrivals over, rounded down to a power of two by
  ``colocated.queue_instances``; ``prefetch_coloc``). GPU counts are therefore grouped by
  (regime, shape set); each group's capacities are computed once, with exactly the calls and
  instance stacks ``evaluate`` uses (so the numbers agree bit for bit), the pool-size ones
  once per (shape, pool size) over all groups, and reused for every count and rate.
* **Integer split for many G at once, without enumerating x.** For a prefill/decode shape
  pair, ``goodput(x) = min(a(x), b(x))`` with ``a(x) = min(x·P, x·g_p·L)`` strictly
  increasing and ``b(x) = ⌊(G − x·g_p)/g_d⌋·D`` non-increasing, so ``a ≤ b`` holds on a
  prefix ``x ≤ x*`` and the maximum is ``max(a(x*), b(x*+1))``; values tied with it lie in
  ``{x*} ∪ [x*+1, …)`` (b is constant on a run of x). ``x*`` is bracketed analytically
  (``x₀ = G·D/(A·g_d + D·g_p)``, ``A = min(P, g_p·L)``; floors move it down by at most
  ``δ = g_d·D/(A·g_d + D·g_p)``) and pinned by a vectorised bisection on the exact float
  predicate; the window ``x* … x* + 4`` then holds the maximum and the four smallest x tied
  with it — all that ``allocation.best_allocations`` keeps per pair. Ties across pairs are
  broken as there (idle GPUs, prefill GPUs, pair order). Pairs are pruned first: pair p
  serves at most ``u_p·G`` (``u_p = 1/(g_p/A + g_d/D)``) and the pair with the highest ``u``
  at least ``u·(G − g_d) − A``, so only a prefix of the pairs sorted by ``u`` can win or tie
  (a binary search per G); large clusters cost one or two pairs per point.
  ``allocation._nodes_ok`` is applied to every candidate whose sizes can fail it (it cannot
  fail when every instance is at most a node or whole nodes, which is what the model builds;
  see :func:`_always_packs`). ``tests/sweep`` checks the result against the exact
  enumeration, ties and odd sizes included.
* **Static (all-phase) allocation.** Its score ``Σ share_k · g_k(x)/g_k*`` shares y(x)
  across phases. When ``g_d`` is a multiple of ``g_p`` only the largest x of each y can be
  best, and along those points x is linear in y, so the score is a sum of minima of linear
  functions — concave — and its maximum sits next to a phase crossing ``y_k`` or at an end;
  when ``g_p`` is a multiple of ``g_d``, y is linear in x and the same holds in x. Four
  integers around each crossing plus both ends are evaluated exactly. Pairs of other sizes
  (node sizes that are not powers of two) are enumerated in full. Pairs whose continuous
  bound ``Σ share·u_p·G/g_k*`` is below the score of a known split (each phase's best) are
  skipped. Where the exact score is flat over several x (ties in exact arithmetic, e.g.
  integer capacities), ``evaluate`` picks among them by rounding; the score (mix loss)
  still agrees, the per-phase goodputs of the pick can differ.
* **Rates** scale only goodput/rate headrooms, the colocated plan choice and the KV
  utilisation, all evaluated per point on the group's arrays.

Keys that change capacities (token lengths, SLOs, burstiness, the inter-node link) re-run
the capacity step once per distinct value; everything else (GPU counts and rates varied
with them) stays vectorised.

What agrees with the scalar model (tested to 1e-9, verdicts and preconditions exactly):
goodput per GPU and headroom of both architectures, gain, rounding loss, KV utilisation and
exposed transfer share, static mix loss, the colocated plan and the best split — except on
the exactly flat static scores described above.

The capacity step calls ``evaluate``'s own helpers (``_shapes``, ``_bytes_per_request``) and
the capacity functions with the arguments ``evaluate`` passes; a model change there that makes
capacities depend on the cluster size or the rate in another way breaks the premise above,
and ``tests/sweep/test_agreement.py`` will say so.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from advisor.core import allocation as alloc
from advisor.core import evaluate as ev
from advisor.core.arrays import unique_sorted
from advisor.core.colocated import CHUNK_CANDIDATES, max_rate_meeting, queue_instances
from advisor.core.disaggregated import (
    decode_capacity,
    prefill_capacity,
    prefill_goodputs,
)
from advisor.core.distributions import LengthDistribution
from advisor.core.hardware import LinkSpec
from advisor.core.instance import StackedInstances
from advisor.core.kv_transfer import pool_link, transfer_seconds
from advisor.core.scenario import (
    MAX_BURSTINESS,
    MAX_GPUS,
    MAX_RATE_RPS,
    MAX_TOKENS,
    MIN_RATE_RPS,
    Scenario,
    TrafficPhase,
)

Progress = Callable[[int, int], None]
"""``progress(done, total)`` in design points."""

VERDICTS = ("chunked-prefill", "disaggregate")
PRECONDITIONS = ("gpu-scale", "kv-bandwidth", "traffic-mix")
MAX_POINTS_PER_AXIS = 200_000
MAX_POINTS = 2_000_000
DEFAULT_FLOAT_POINTS = 101
DEFAULT_LOG_POINTS = 64
_WINDOW = np.arange(0, 5, dtype=np.int64)
_BLOCK_ELEMENTS = 400_000
_INT_MAX = np.iinfo(np.int64).max


class SweepError(ValueError):
    """A sweep specification that cannot be evaluated (unknown key, bad range, …)."""


# ---------------------------------------------------------------------------------------------
# keys


@dataclass(frozen=True)
class KeyInfo:
    """One key a sweep can vary."""

    name: str
    kind: str
    """'int', 'float' or 'link' (an interconnect profile id)."""
    capacity: bool
    """Whether changing it re-runs the capacity step (see the module docstring)."""
    unit: str
    minimum: float | None = None
    maximum: float | None = None
    strict_minimum: bool = False
    help: str = ""


KEYS: dict[str, KeyInfo] = {k.name: k for k in (
    KeyInfo("cluster.gpus", "int", False, "GPUs", 1, MAX_GPUS,
            help="GPUs in the cluster"),
    KeyInfo("traffic.rate_rps", "float", False, "req/s", MIN_RATE_RPS, MAX_RATE_RPS,
            help="arrival rate of the peak phase (other phases scale with it)"),
    KeyInfo("traffic.prompt_tokens", "float", True, "tokens", 1.0, MAX_TOKENS,
            help="mean prompt length of the peak phase (distributions keep their shape; "
                 "other phases scale with it)"),
    KeyInfo("traffic.output_tokens", "float", True, "tokens", 1.0, MAX_TOKENS,
            help="mean output length of the peak phase (as prompt_tokens)"),
    KeyInfo("traffic.burstiness", "float", True, "CV", 0.0, MAX_BURSTINESS,
            help="inter-arrival CV of the peak phase (other phases scale with it)"),
    KeyInfo("slo.ttft_ms", "float", True, "ms", 0.0, strict_minimum=True,
            help="TTFT target"),
    KeyInfo("slo.tpot_ms", "float", True, "ms", 0.0, strict_minimum=True,
            help="TPOT target"),
    KeyInfo("slo.percentile", "float", True, "%", 50.0, 99.99,
            help="percentile of the SLO targets"),
    KeyInfo("cluster.inter_node", "link", True, "",
            help="inter-node interconnect profile id"),
    KeyInfo("cluster.inter_node.bandwidth_scale", "float", True, "×", 0.0, strict_minimum=True,
            help="multiplier on the inter-node link's bandwidth"),
)}


def key_info(key: str) -> KeyInfo:
    """The :class:`KeyInfo` of ``key`` (SweepError listing the known keys otherwise)."""
    try:
        return KEYS[key]
    except KeyError:
        raise SweepError(f"cannot vary '{key}'; known keys: {', '.join(KEYS)}") from None


def _peak_index(phases: Sequence[TrafficPhase]) -> int:
    """Index of the highest-rate phase (the first of equals, as ``Scenario.peak_phase``)."""
    best = 0
    for k, ph in enumerate(phases):
        if ph.rate_rps > phases[best].rate_rps:
            best = k
    return best


def _scaled_length(d: LengthDistribution, mean: float) -> LengthDistribution:
    """``d`` stretched to a new mean: same shape (σ), quantiles and max scale with it."""
    f = mean / d.mean
    return LengthDistribution(mean=mean, mu=d.mu + math.log(f), sigma=d.sigma,
                              max_tokens=None if d.max_tokens is None else d.max_tokens * f)


def phase_rates(sc: Scenario, value: float) -> tuple[float, ...]:
    """Per-phase rates when ``traffic.rate_rps`` is ``value``: the peak phase takes it,
    the others keep their ratio to the peak."""
    peak = _peak_index(sc.phases)
    r_peak = sc.phases[peak].rate_rps
    return tuple(value if k == peak else ph.rate_rps * (value / r_peak)
                 for k, ph in enumerate(sc.phases))


def current_value(sc: Scenario, key: str) -> Any:
    """The workload's own value of ``key``."""
    key_info(key)
    peak = sc.phases[_peak_index(sc.phases)]
    if key == "cluster.gpus":
        return sc.cluster.gpus
    if key == "traffic.rate_rps":
        return peak.rate_rps
    if key == "traffic.prompt_tokens":
        return peak.prompt_tokens.mean
    if key == "traffic.output_tokens":
        return peak.output_tokens.mean
    if key == "traffic.burstiness":
        return peak.burstiness
    if key == "slo.ttft_ms":
        return sc.slo.ttft_ms
    if key == "slo.tpot_ms":
        return sc.slo.tpot_ms
    if key == "slo.percentile":
        return sc.slo.percentile
    if key == "cluster.inter_node":
        return None if sc.cluster.inter_node is None else sc.cluster.inter_node.id
    return 1.0  # cluster.inter_node.bandwidth_scale


def apply_value(sc: Scenario, key: str, value: Any) -> Scenario:
    """``sc`` with ``key`` set to ``value`` (the meaning of every key is defined here).

    ``cluster.inter_node`` takes a :class:`LinkSpec`. Traffic keys set the peak phase's value
    and scale the other phases by the same factor, so a phase mix keeps its proportions.
    """
    info = key_info(key)
    if info.kind != "link":
        _check_number(info, value)
    cl = sc.cluster
    if key == "cluster.gpus":
        return replace(sc, cluster=replace(cl, gpus=int(value)))
    if key == "traffic.rate_rps":
        rates = phase_rates(sc, float(value))
        return replace(sc, phases=tuple(replace(ph, rate_rps=r)
                                        for ph, r in zip(sc.phases, rates)))
    peak = _peak_index(sc.phases)
    if key in ("traffic.prompt_tokens", "traffic.output_tokens"):
        attr = key.split(".")[1]
        base = getattr(sc.phases[peak], attr).mean
        v = float(value)
        phases = tuple(replace(ph, **{attr: _scaled_length(
            getattr(ph, attr), v if k == peak else getattr(ph, attr).mean * (v / base))})
            for k, ph in enumerate(sc.phases))
        return replace(sc, phases=phases)
    if key == "traffic.burstiness":
        v = float(value)
        base = sc.phases[peak].burstiness
        return replace(sc, phases=tuple(
            replace(ph, burstiness=v if (k == peak or base <= 0) else ph.burstiness * (v / base))
            for k, ph in enumerate(sc.phases)))
    if key == "slo.ttft_ms":
        return replace(sc, slo=replace(sc.slo, ttft_ms=float(value)))
    if key == "slo.tpot_ms":
        return replace(sc, slo=replace(sc.slo, tpot_ms=float(value)))
    if key == "slo.percentile":
        return replace(sc, slo=replace(sc.slo, percentile=float(value)))
    if key == "cluster.inter_node":
        if not isinstance(value, LinkSpec):
            raise SweepError("cluster.inter_node takes a resolved interconnect profile")
        return replace(sc, cluster=replace(cl, inter_node=value))
    # cluster.inter_node.bandwidth_scale
    if cl.inter_node is None:
        raise SweepError("cluster.inter_node.bandwidth_scale needs an inter-node link "
                         "(the workload has none)")
    link = cl.inter_node
    return replace(sc, cluster=replace(cl, inter_node=replace(
        link, bandwidth_bytes_per_s=link.bandwidth_bytes_per_s * float(value))))


def _check_number(info: KeyInfo, value: Any) -> None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise SweepError(f"{info.name}: '{value}' is not a number") from None
    if not math.isfinite(v):
        raise SweepError(f"{info.name}: {value} is not finite")
    if info.kind == "int" and v != int(v):
        raise SweepError(f"{info.name} takes whole numbers, not {value:g}")
    low = info.minimum
    if low is not None and (v < low or (info.strict_minimum and v <= low)):
        op = ">" if info.strict_minimum else "≥"
        raise SweepError(f"{info.name} must be {op} {info.minimum:g} (got {v:g})")
    if info.maximum is not None and v > info.maximum:
        raise SweepError(f"{info.name} must be ≤ {info.maximum:g} (got {v:g})")


# ---------------------------------------------------------------------------------------------
# specs and axes


@dataclass(frozen=True)
class Axis:
    """One varied key and its values (ascending for numbers; as given for link ids)."""

    key: str
    values: tuple[Any, ...]
    """Numbers, or :class:`LinkSpec` for ``cluster.inter_node``."""
    labels: tuple[str, ...]
    log: bool = False
    """Whether the values were spaced logarithmically (plots use a log axis)."""

    @property
    def numeric(self) -> bool:
        """Whether values are numbers."""
        return KEYS[self.key].kind != "link"

    def __len__(self) -> int:
        return len(self.values)


def _label(value: Any) -> str:
    if isinstance(value, LinkSpec):
        return value.id
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return f"{float(value):.6g}"


def parse_spec(key: str, spec: str) -> tuple[tuple[Any, ...], bool]:
    """Values of ``key`` from SPEC: ``8,16,32`` (a list), ``8:4096`` (a range: every integer
    for integer keys, else 101 evenly spaced points), ``8:4096:N`` (N evenly spaced points),
    ``8:4096:log`` (64 log-spaced points; integers rounded and deduplicated) or
    ``8:4096:log:N``. Returns (values, log). Link ids come back as strings."""
    info = key_info(key)
    text = spec.strip()
    if not text:
        raise SweepError(f"{key}: empty value list")
    if info.kind == "link":
        if ":" in text:
            raise SweepError(f"{key} takes a list of interconnect ids, not a range")
        ids = [t.strip() for t in text.split(",")]
        if any(not t for t in ids):
            raise SweepError(f"{key}: empty item in '{spec}'")
        return tuple(dict.fromkeys(ids)), False
    if ":" not in text:
        try:
            vals = [float(t) for t in text.split(",")]
        except ValueError:
            raise SweepError(f"{key}: '{spec}' is not a list of numbers") from None
        log = False
    else:
        parts = [p.strip() for p in text.split(":")]
        if len(parts) < 2 or len(parts) > 4:
            raise SweepError(f"{key}: '{spec}' is not A:B, A:B:N, A:B:log or A:B:log:N")
        try:
            a, b = float(parts[0]), float(parts[1])
        except ValueError:
            raise SweepError(f"{key}: '{spec}' has a bound that is not a number") from None
        if not (math.isfinite(a) and math.isfinite(b)) or b < a:
            raise SweepError(f"{key}: range '{spec}' must go from low to high")
        log = len(parts) >= 3 and parts[2].lower() == "log"
        count: int | None = None
        count_text = (parts[3] if log and len(parts) == 4
                      else parts[2] if not log and len(parts) == 3 else None)
        if len(parts) == 4 and not log:
            raise SweepError(f"{key}: '{spec}' is not A:B, A:B:N, A:B:log or A:B:log:N")
        if count_text is not None:
            if not count_text.isdigit() or int(count_text) < 1:
                raise SweepError(f"{key}: point count '{count_text}' must be a positive integer")
            count = int(count_text)
        if log:
            if a <= 0:
                raise SweepError(f"{key}: a log range needs a positive lower bound")
            vals = list(np.geomspace(a, b, count or DEFAULT_LOG_POINTS))
        elif count is None and info.kind == "int":
            if a != int(a) or b != int(b):
                raise SweepError(f"{key} takes whole numbers")
            n = int(b) - int(a) + 1
            if n > MAX_POINTS_PER_AXIS:
                raise SweepError(f"{key}: {n:,} points (at most {MAX_POINTS_PER_AXIS:,})")
            vals = list(range(int(a), int(b) + 1))
        else:
            vals = list(np.linspace(a, b, count or DEFAULT_FLOAT_POINTS))
        if log or count is not None:
            # keep the given ends exact (geomspace/linspace may round them)
            vals[0], vals[-1] = a, b
    if info.kind == "int":
        if ":" in text:
            vals = [float(round(v)) for v in vals]
        out: tuple[Any, ...] = tuple(sorted({int(v) for v in vals if _int_ok(info, v)}))
    else:
        out = tuple(sorted({float(v) for v in vals}))
    for v in out:
        _check_number(info, v)
    if len(out) > MAX_POINTS_PER_AXIS:
        raise SweepError(f"{key}: {len(out):,} points (at most {MAX_POINTS_PER_AXIS:,})")
    return out, log


def _int_ok(info: KeyInfo, v: float) -> bool:
    if v != int(v):
        raise SweepError(f"{info.name} takes whole numbers, not {v:g}")
    return True


def make_axis(key: str, spec: str, links: Mapping[str, LinkSpec] | None = None) -> Axis:
    """An :class:`Axis` from a key and SPEC; ``links`` resolves interconnect ids."""
    values, log = parse_spec(key, spec)
    if KEYS[key].kind == "link":
        if links is None:
            raise SweepError(f"{key}: no interconnect profiles to resolve the ids with")
        resolved = []
        for v in values:
            if v not in links:
                raise SweepError(f"{key}: unknown interconnect '{v}'")
            resolved.append(links[v])
        values = tuple(resolved)
    return Axis(key, values, tuple(_label(v) for v in values), log)


def axis_from_values(key: str, values: Sequence[Any], log: bool = False) -> Axis:
    """An :class:`Axis` from values directly (numbers sorted and deduplicated)."""
    info = key_info(key)
    if info.kind == "link":
        vals = tuple(values)
    elif info.kind == "int":
        vals = tuple(sorted({int(v) for v in values}))
    else:
        vals = tuple(sorted({float(v) for v in values}))
    for v in vals:
        if info.kind != "link":
            _check_number(info, v)
    if not vals:
        raise SweepError(f"{key}: no values")
    return Axis(key, vals, tuple(_label(v) for v in vals), log)


# ---------------------------------------------------------------------------------------------
# the vectorised integer split


def _goodput(x: np.ndarray, g: np.ndarray, gp: np.ndarray, gd: np.ndarray, p: np.ndarray,
             d: np.ndarray, link: float) -> tuple[np.ndarray, np.ndarray]:
    """(goodput, y) of x prefill instances, as ``allocation.best_allocations`` computes it."""
    y = (g - x * gp) // gd
    pre = x * p
    dec = y * d
    if link > 0:
        return np.minimum(np.minimum(pre, dec), (x * gp) * link), y
    return np.minimum(pre, dec), y


def _prefill_side(x: np.ndarray, gp: np.ndarray, p: np.ndarray, link: float) -> np.ndarray:
    pre = x * p
    return np.minimum(pre, (x * gp) * link) if link > 0 else pre


def _crossing(g: np.ndarray, gp: np.ndarray, gd: np.ndarray, p: np.ndarray, d: np.ndarray,
              link: float, max_x: np.ndarray) -> np.ndarray:
    """x* = the largest x in [1, max_x] with a(x) ≤ b(x) (0 if none), element-wise.

    Bracketed analytically, then bisected on the exact float predicate; the bracket is
    verified and widened to the whole range where rounding made it wrong."""
    a_rate = np.minimum(p, gp * link) if link > 0 else p
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        denom = a_rate * gd + d * gp
        x0 = g * d / denom
        delta = gd * d / denom
        x0 = np.where(np.isfinite(x0), x0, max_x + 1.0)
        delta = np.where(np.isfinite(delta), delta, max_x + 1.0)
    lo = np.clip(np.floor(x0 - delta) - 1.0, 0, np.maximum(max_x, 0)).astype(np.int64)
    hi = np.clip(np.floor(x0) + 2.0, 1, np.maximum(max_x, 0) + 1).astype(np.int64)
    hi = np.maximum(hi, lo + 1)

    def pred(x: np.ndarray) -> np.ndarray:
        y = (g - x * gp) // gd
        return _prefill_side(x, gp, p, link) <= y * d

    bad_lo = (lo >= 1) & ~pred(np.maximum(lo, 1))
    lo = np.where(bad_lo, 0, lo)
    bad_hi = (hi <= max_x) & pred(np.minimum(hi, np.maximum(max_x, 1)))
    hi = np.where(bad_hi, max_x + 1, hi)
    while True:
        open_ = hi - lo > 1
        if not open_.any():
            break
        mid = (lo + hi) // 2
        ok = pred(np.where(open_, mid, np.maximum(lo, 1)))
        lo = np.where(open_ & ok, mid, lo)
        hi = np.where(open_ & ~ok, mid, hi)
    return lo


def _always_packs(size: np.ndarray, gpus_per_node: int) -> np.ndarray:
    """Sizes for which ``allocation._nodes_ok`` cannot fail.

    When every instance is at most a node or a whole number of nodes, any x prefill and
    y = ⌊(G − x·g_p)/g_d⌋ decode instances pack: the whole-node instances use
    (x·g_p + y·g_d)/node ≤ ⌊G/node⌋ nodes for their share, and the small ones fit in what
    is left (x·g_p + y·g_d ≤ G). The shapes the model builds (TP ≤ node, node × PP) are
    all of this kind; ``_nodes_ok`` is still applied to any other size.
    """
    return (size <= gpus_per_node) | (size % gpus_per_node == 0)


@dataclass(frozen=True)
class Splits:
    """Best integer splits for many cluster sizes (one phase)."""

    goodput: np.ndarray
    """Best integer goodput, req/s (0 where no split exists)."""
    pair: np.ndarray
    """Index into the pair list (-1 where no split exists)."""
    x: np.ndarray
    y: np.ndarray


def best_splits(gpus: np.ndarray, prefill_gpus: np.ndarray, prefill_rate: np.ndarray,
                decode_gpus: np.ndarray, decode_rate: np.ndarray, link_rate: float,
                gpus_per_node: int) -> Splits:
    """``allocation.best_allocations(...)[0]`` for every cluster size in ``gpus`` at once.

    The pair list is given as parallel arrays (one entry per prefill/decode shape pair, in
    ``best_allocations``' order: prefill-major). ``prefill_rate`` is per pair, or per
    (cluster size, pair) when it depends on the cluster size (pooled prefill queues); pairs
    with a zero rate are skipped, as ``best_allocations`` skips them. Same goodput, same x,
    y and pair, same tie-breaking.

    Pruning: pair p serves at most ``u_p·G`` (its fractional per-GPU rate ``u_p = 1/(g_p/A +
    g_d/D)``) and at least ``u_p·(G − g_d) − A`` (its x just below the crossing). Only pairs
    whose upper bound reaches the best lower bound can win or tie. With rates shared by all
    cluster sizes the pairs sorted by ``u`` make that a prefix, found by a binary search.
    """
    G = np.asarray(gpus, dtype=np.int64).ravel()
    gp = np.asarray(prefill_gpus, dtype=np.int64)
    gd = np.asarray(decode_gpus, dtype=np.int64)
    P = np.asarray(prefill_rate, dtype=float)
    D = np.asarray(decode_rate, dtype=float)
    n, m = G.size, gp.size
    good = np.zeros(n)
    pair = np.full(n, -1, dtype=np.int64)
    bx = np.zeros(n, dtype=np.int64)
    by = np.zeros(n, dtype=np.int64)
    if n == 0 or m == 0:
        return Splits(good, pair, bx, by)
    link = float(link_rate)
    if P.ndim == 2:
        block = max(1, _BLOCK_ELEMENTS // m)
        for s in range(0, n, block):
            sl = slice(s, min(n, s + block))
            Gb, Pb = G[sl], P[sl]
            with np.errstate(divide="ignore", invalid="ignore"):
                a_rate = np.minimum(Pb, gp * link) if link > 0 else Pb
                u = np.where((Pb > 0) & (D > 0), 1.0 / (gp / a_rate + gd / D), -np.inf)
                lower = np.where(np.isfinite(u), u * (Gb[:, None] - gd) - a_rate, 0.0)
            lower = np.maximum(lower.max(axis=1), 0.0) * (1.0 - 1e-9)
            keep = np.isfinite(u) & ~(u * Gb[:, None] * (1.0 + 1e-9) < lower[:, None])
            rows, cols = np.nonzero(keep)
            r = _solve_pairs(Gb, rows, cols, gp, gd, Pb[rows, cols], D, link, gpus_per_node)
            good[sl], pair[sl], bx[sl], by[sl] = r
        return Splits(good, pair, bx, by)
    a_rate = np.minimum(P, gp * link) if link > 0 else P
    u = 1.0 / (gp / a_rate + gd / D)
    order = np.argsort(-u, kind="stable")
    b = int(order[0])
    lower = np.maximum(0.0, u[b] * (G - gd[b]) - a_rate[b]) * (1.0 - 1e-9)
    neg_u = -u[order]
    count = np.searchsorted(neg_u, -lower / (G * (1.0 + 1e-9)), side="right")
    count = np.maximum(count, 1)
    block = max(1, _BLOCK_ELEMENTS // max(1, int(count.mean())))
    for s in range(0, n, block):
        sl = slice(s, min(n, s + block))
        cnt = count[sl]
        rows = np.repeat(np.arange(cnt.size), cnt)
        starts = np.cumsum(cnt) - cnt
        cols = order[np.arange(int(cnt.sum())) - np.repeat(starts, cnt)]
        r = _solve_pairs(G[sl], rows, cols, gp, gd, P[cols], D, link, gpus_per_node)
        good[sl], pair[sl], bx[sl], by[sl] = r
    return Splits(good, pair, bx, by)


def _solve_pairs(G: np.ndarray, rows: np.ndarray, cols: np.ndarray, gp: np.ndarray,
                 gd: np.ndarray, eP: np.ndarray, D: np.ndarray, link: float, gpn: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Best split per cluster size among candidate (size ``rows``, pair ``cols``) elements
    (rows ascending); ``eP`` is each element's prefill rate."""
    n, m = G.size, gp.size
    good = np.zeros(n)
    pair = np.full(n, -1, dtype=np.int64)
    bx = np.zeros(n, dtype=np.int64)
    by = np.zeros(n, dtype=np.int64)
    g = G[rows]
    emax = (g - gd[cols]) // gp[cols]
    feas = emax >= 1
    rows, cols, g, emax, eP = rows[feas], cols[feas], g[feas], emax[feas], eP[feas]
    if rows.size == 0:
        return good, pair, bx, by
    egp, egd, eD = gp[cols], gd[cols], D[cols]
    xs = _crossing(g, egp, egd, eP, eD, link, emax)
    win = xs[:, None] + _WINDOW                                # (e, 5)
    wg, wy = _goodput(win, g[:, None], egp[:, None], egd[:, None], eP[:, None], eD[:, None], link)
    valid = (win >= 1) & (win <= emax[:, None]) & (wy >= 1)
    packs = ~(_always_packs(egp, gpn) & _always_packs(egd, gpn))
    if packs.any():
        valid[packs] &= alloc._nodes_ok(win[packs], egp[packs][:, None], wy[packs],
                                        egd[packs][:, None], g[packs][:, None], gpn)
    wg = np.where(valid, wg, -1.0)
    pmax = wg.max(axis=1)
    tie = valid & (wg == pmax[:, None])
    kept = tie & (np.cumsum(tie, axis=1) <= 4)                # best_allocations keeps 4 per pair
    seg_start = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
    seg_rows = rows[seg_start]
    seg = np.repeat(np.arange(seg_start.size), np.diff(np.r_[seg_start, rows.size]))
    best = np.maximum.reduceat(pmax, seg_start)
    has = best >= 0
    elig = kept & (wg == best[seg][:, None]) & has[seg][:, None]
    # best_allocations sorts by (−goodput, idle GPUs, prefill GPUs), stable in pair order
    idle = g[:, None] - win * egp[:, None] - wy * egd[:, None]
    big = int(G.max()) + 1
    key = np.where(elig, ((idle * big + win * egp[:, None]) * m + cols[:, None]), _INT_MAX)
    emin = key.min(axis=1)
    kmin = np.minimum.reduceat(emin, seg_start)
    hit = elig & (key == kmin[seg][:, None])
    e, w = np.nonzero(hit)
    target = seg_rows[seg[e]]
    good[target] = wg[e, w]
    pair[target] = cols[e]
    bx[target] = win[e, w]
    by[target] = wy[e, w]
    return good, pair, bx, by


def static_allocation(gpus: np.ndarray, shape_gpus: np.ndarray, prefill: Sequence[np.ndarray],
                      decode: Sequence[np.ndarray], links: Sequence[float],
                      best: Sequence[np.ndarray], shares: Sequence[float], gpus_per_node: int,
                      known: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]] = ()
                      ) -> StaticAllocations:
    """``evaluate._static_allocation`` for many cluster sizes at once.

    ``prefill[k]``/``decode[k]`` are phase k's per-shape capacities (prefill: per shape, or
    per (cluster size, shape) with pooled prefill queues), ``best[k]`` (n,) its best integer
    goodput per cluster size, ``links[k]`` its KV link rate per prefill GPU. ``known`` are
    feasible allocations (prefill shape, decode shape, x; −1 = none) per cluster size, e.g.
    each phase's best split: their scores bound the optimum from below,
    and pairs whose continuous upper bound Σ share·G/(g_p/A + g_d/D)/best is lower cannot
    win or tie, so they are skipped.
    """
    G = np.asarray(gpus, dtype=np.int64)
    g = np.asarray(shape_gpus, dtype=np.int64)
    s, n, K = g.size, G.size, len(prefill)
    ii, jj = np.meshgrid(np.arange(s), np.arange(s), indexing="ij")
    ii, jj = ii.ravel(), jj.ravel()                             # prefill-major, as evaluate
    m = ii.size
    pair_score = np.full((n, m), -1.0)
    pair_goods = np.zeros((n, m, K))
    pair_x = np.zeros((n, m), dtype=np.int64)
    Pk = [np.broadcast_to(np.asarray(prefill[k], dtype=float), (n, s)) for k in range(K)]
    Dk = [np.asarray(decode[k], dtype=float) for k in range(K)]
    bk = [np.asarray(b, dtype=float) for b in best]
    if n and m:
        gp, gd = g[ii], g[jj]
        Gc = G[:, None]
        feasible = gp + gd <= Gc                                           # (n, m)
        # bounds: the score of the known allocations below, a continuous relaxation above
        lb = np.full(n, -np.inf)
        for pi, pj, px in known:
            ok = pi >= 0
            if not ok.any():
                continue
            pi0, pj0 = np.maximum(pi, 0), np.maximum(pj, 0)
            sc_k, _ = _static_score(np.maximum(px, 1), G, g[pi0], g[pj0],
                                    [p[np.arange(n), pi0] for p in Pk], [d[pj0] for d in Dk],
                                    links, bk, shares, gpus_per_node)
            lb = np.maximum(lb, np.where(ok, sc_k, -np.inf))
        ub = np.zeros((n, m))
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            for k in range(K):
                pk = Pk[k][:, ii]
                a = np.minimum(pk, gp * links[k]) if links[k] > 0 else pk
                d = Dk[k][jj]
                cont = np.where((a > 0) & (d > 0), Gc / (gp / a + gd / d), 0.0)
                b_ = bk[k][:, None]
                ub = ub + shares[k] * np.where(b_ > 0, cont / np.where(b_ > 0, b_, 1.0), 0.0)
        keep = feasible & ~(ub * (1.0 + 1e-9) + 1e-12 < lb[:, None])
        cls_y = gd % gp == 0
        regular = cls_y | (gp % gd == 0)
        rows, cols = np.nonzero(keep & regular[None, :])
        step = max(1, _BLOCK_ELEMENTS // (2 + 4 * K))
        for st in range(0, rows.size, step):
            r_, c_ = rows[st:st + step], cols[st:st + step]
            Ge = G[r_][:, None]
            egp, egd = gp[c_][:, None], gd[c_][:, None]
            eP = [p[r_, ii[c_]][:, None] for p in Pk]
            eD = [d[jj][c_][:, None] for d in Dk]
            x = _static_candidates(Ge, egp, egd, cls_y[c_][:, None], eP, eD, links)
            sc_, gk = _static_score(x, Ge, egp, egd, eP, eD, links,
                                    [b[r_][:, None] for b in bk], shares, gpus_per_node)
            c = np.argmax(sc_, axis=1)                      # first x with the pair's best score
            e = np.arange(r_.size)
            pair_score[r_, c_] = sc_[e, c]
            pair_goods[r_, c_] = gk[:, e, c].T
            pair_x[r_, c_] = x[e, c]
        for pidx in np.flatnonzero(~regular):   # sizes that do not divide each other: every x
            sel = np.flatnonzero(keep[:, pidx])
            if sel.size == 0:
                continue
            xmax = max(1, (int(G[sel].max()) - int(gd[pidx])) // int(gp[pidx]))
            x = np.arange(1, xmax + 1, dtype=np.int64)[None, :]
            Ge = G[sel][:, None]
            sc_, gk = _static_score(x, Ge, gp[pidx], gd[pidx],
                                    [p[sel, ii[pidx]][:, None] for p in Pk],
                                    [d[jj[pidx]] for d in Dk], links,
                                    [b[sel][:, None] for b in bk], shares, gpus_per_node)
            c = np.argmax(sc_, axis=1)
            e = np.arange(sel.size)
            pair_score[sel, pidx] = sc_[e, c]
            pair_goods[sel, pidx] = np.broadcast_to(gk, (K,) + sc_.shape)[:, e, c].T
            pair_x[sel, pidx] = np.broadcast_to(x, sc_.shape)[e, c]
    # evaluate keeps the first pair whose score is strictly higher than all before it
    rows_n = np.arange(n)
    if m:
        j = np.argmax(pair_score, axis=1)
        score, goods, bx = pair_score[rows_n, j], pair_goods[rows_n, j], pair_x[rows_n, j]
    else:
        j = np.zeros(n, dtype=np.int64)
        score, goods, bx = np.full(n, -1.0), np.zeros((n, K)), np.zeros(n, dtype=np.int64)
    found = score >= 0
    pi = np.where(found, ii[j] if m else 0, -1)
    pj = np.where(found, jj[j] if m else 0, -1)
    x = np.where(found, bx, 0)
    gp_c = g[np.maximum(pi, 0)] if s else np.ones(n, dtype=np.int64)
    gd_c = g[np.maximum(pj, 0)] if s else np.ones(n, dtype=np.int64)
    y = np.where(found, (G - x * gp_c) // gd_c, 0)
    return StaticAllocations(score, goods, found, pi, pj, x, y)


@dataclass(frozen=True)
class StaticAllocations:
    """Best static (all-phase) allocation per cluster size."""

    score: np.ndarray
    """Σ share · goodput/best; −1 where no pair fits (static mix loss = 1 − score)."""
    goods: np.ndarray
    """(n, phases) goodput of the static split in each phase."""
    found: np.ndarray
    prefill_option: np.ndarray
    decode_option: np.ndarray
    x: np.ndarray
    y: np.ndarray


def _static_candidates(G: np.ndarray, gp: np.ndarray, gd: np.ndarray, cls_y: np.ndarray,
                       P: Sequence[np.ndarray], D: Sequence[np.ndarray],
                       links: Sequence[float]) -> np.ndarray:
    """Candidate x per (cluster size, pair) row, ascending: four integers around each
    phase's crossing (in y when g_d is a multiple of g_p, else in x) and both ends."""
    max_x = (G - gd) // gp
    y_max = (G - gp) // gd
    q_p = G // gp
    q_d = G // gd
    r_y = np.maximum(gd // gp, 1)
    r_x = np.maximum(gp // gd, 1)
    offs = np.arange(-1, 3, dtype=np.int64)
    cands = [np.ones_like(max_x), np.maximum(max_x, 1)]
    for k in range(len(P)):
        a = np.minimum(P[k], gp * links[k]) if links[k] > 0 else P[k]
        d = D[k]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            yk = np.nan_to_num(a * q_p / (a * r_y + d), nan=1.0, posinf=1.0, neginf=1.0)
            xk = np.nan_to_num(d * q_d / (a + d * r_x), nan=1.0, posinf=1.0, neginf=1.0)
        yy = np.clip(np.floor(yk).astype(np.int64) + offs, 1, np.maximum(y_max, 1))
        xx = np.clip(np.floor(xk).astype(np.int64) + offs, 1, np.maximum(max_x, 1))
        cands.append(np.where(cls_y, (G - yy * gd) // gp, xx))
    return np.sort(np.concatenate(cands, axis=-1), axis=-1)


def _static_score(x: np.ndarray, G: np.ndarray, gp: Any, gd: Any, P: Sequence[Any],
                  D: Sequence[Any], links: Sequence[float], best: Sequence[np.ndarray],
                  shares: Sequence[float], gpn: int) -> tuple[np.ndarray, np.ndarray]:
    """Scores (−1 where invalid) and per-phase goods (K, …) exactly as evaluate computes."""
    y = (G - x * gp) // gd
    ok = (x >= 1) & (y >= 1)
    gp_a, gd_a = np.asarray(gp, dtype=np.int64), np.asarray(gd, dtype=np.int64)
    if not (_always_packs(gp_a, gpn).all() and _always_packs(gd_a, gpn).all()):
        ok &= alloc._nodes_ok(x, gp_a, y, gd_a, G, gpn)
    score = np.zeros(np.broadcast_shapes(x.shape, G.shape))
    goods = []
    for k in range(len(P)):
        link = (x * gp) * links[k] if links[k] > 0 else np.inf
        gk = np.minimum(np.minimum(x * P[k], y * D[k]), link)
        goods.append(np.broadcast_to(gk, score.shape))
        bk = best[k]
        with np.errstate(divide="ignore", invalid="ignore"):
            term = np.where(bk > 0, gk / np.where(bk > 0, bk, 1.0), 0.0)
        score = score + shares[k] * term
    return np.where(ok, score, -1.0), np.stack(goods)


# ---------------------------------------------------------------------------------------------
# per-group capacities


@dataclass
class _PhaseCaps:
    prefill: np.ndarray
    """Per shape, with a single-instance prefill queue."""
    decode: np.ndarray
    link_rate: float
    ideal_per_gpu: float
    """Of the single-queue split (the final one unless ``pooled``)."""
    mean_bytes: np.ndarray
    p95_bytes: np.ndarray
    own_prefill_s: np.ndarray
    pooled: bool = False
    """Whether prefill capacities are redone for pooled queues sized from the cluster
    (``evaluate._phase_pools``: a TTFT SLO and a positive ideal prefill fraction)."""
    prefill_fraction: float = 0.0


@dataclass
class _Group:
    """Capacities shared by every cluster size with the same shape set and KV link."""

    shapes: list
    gpus: np.ndarray
    link: LinkSpec
    phases: list[_PhaseCaps]
    chunks: np.ndarray | None
    pairs: list[tuple[np.ndarray, np.ndarray]]
    """Per phase: (prefill index, decode index) of the pairs with non-zero rates."""


def _stage_link(inst: Any) -> LinkSpec | None:
    """The link an instance's pipeline stages talk over (None: one stage, no such link)."""
    return inst.inter_link if inst.pipeline_stages > 1 else None


class _Capacities:
    """Capacity caches for one scenario (every key but cluster.gpus and rates applied).

    The per-instance caches are keyed by the instance shape, the phase and every link the
    entry depends on (the KV link of prefill entries, the pipeline-stage link of instances
    spanning nodes), so :meth:`with_inter_node` can share them between scenarios that differ
    only in the inter-node link.
    """

    def __init__(self, sc: Scenario, shared: _Capacities | None = None) -> None:
        self.sc = sc
        self._groups: dict[tuple, _Group] = {}
        if shared is None:
            self._coloc: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
            self._prefill: dict[tuple, Any] = {}
            self._decode: dict[tuple, Any] = {}
            self._pooled: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
        else:
            self._coloc, self._prefill = shared._coloc, shared._prefill
            self._decode, self._pooled = shared._decode, shared._pooled

    def with_inter_node(self, link: LinkSpec) -> _Capacities:
        """The capacities of this scenario with ``link`` as its inter-node link, sharing every
        cached entry that does not depend on it (instances within one node, decode and
        colocated capacities of single-stage instances)."""
        sc = self.sc
        return _Capacities(replace(sc, cluster=replace(sc.cluster, inter_node=link)), self)

    def group_codes(self, G: np.ndarray) -> np.ndarray:
        """A code per cluster size: equal codes share shapes and link (see _Group)."""
        cl = self.sc.cluster
        gpn = cl.gpus_per_node
        multi = (G > gpn) if cl.inter_node is not None else np.zeros(G.shape, dtype=bool)
        n_tp = np.zeros(G.shape, dtype=np.int64)
        tp = 1
        while tp <= gpn:
            n_tp += (tp <= G)
            tp *= 2
        n_pp = np.zeros(G.shape, dtype=np.int64)
        pp = 2
        while pp <= 16:
            n_pp += multi & (gpn * pp <= G)
            pp *= 2
        return multi.astype(np.int64) * 10_000 + n_tp * 100 + n_pp

    def group(self, code: int, g_rep: int) -> _Group:
        if code in self._groups:
            return self._groups[code]
        sc = self.sc
        cl = sc.cluster
        rep = replace(sc, cluster=replace(cl, gpus=int(g_rep)))
        shapes, _ = ev._shapes(rep)
        link = pool_link(cl.intra_node, cl.inter_node, g_rep <= cl.gpus_per_node)
        gpus = np.array([s.instance.gpus for s in shapes], dtype=np.int64)
        phases, pairs = [], []
        for k, ph in enumerate(sc.phases):
            pc = [self._prefill_cap(s, k, ph, link) for s in shapes]
            dc = [self._decode_cap(s, k, ph) for s in shapes]
            prefill = [alloc.PoolOption(s.instance.gpus, c.goodput_rps, s.label)
                       for s, c in zip(shapes, pc)]
            decode = [alloc.PoolOption(s.instance.gpus, c.goodput_rps, s.label)
                      for s, c in zip(shapes, dc)]
            link_rate = 0.0
            if shapes:
                wire = min(ev._bytes_per_request(s.instance, ph) / s.instance.gpus for s in shapes)
                link_rate = link.effective_bytes_per_s / max(wire * 1.0, 1.0)
            per_gpu, _, _, _ = alloc.ideal_split(prefill, decode, link_rate)
            frac = ev.prefill_sizing_fraction(pc, shapes, decode, link_rate)
            pooled = sc.slo.ttft_ms is not None and frac > 0
            s95 = ph.prompt_tokens.quantile(0.95)
            phases.append(_PhaseCaps(
                prefill=np.array([o.rate_rps for o in prefill], dtype=float),
                decode=np.array([o.rate_rps for o in decode], dtype=float),
                link_rate=float(link_rate), ideal_per_gpu=float(per_gpu),
                mean_bytes=np.array([ph.prompt_tokens.mean * s.instance.kv_bytes_per_token_wire
                                     for s in shapes], dtype=float),
                p95_bytes=np.array([s95 * s.instance.kv_bytes_per_token_wire for s in shapes],
                                   dtype=float),
                own_prefill_s=np.array([float(s.instance.prefill_time_s(s95)) for s in shapes],
                                       dtype=float),
                pooled=pooled, prefill_fraction=float(frac)))
            # pooled: prefill rates change with the cluster size; zero ones are skipped per size
            ii = [i for i, o in enumerate(prefill) if pooled or o.rate_rps > 0]
            jj = [j for j, o in enumerate(decode) if o.rate_rps > 0]
            pi = np.array([i for i in ii for _ in jj], dtype=np.int64)
            pj = np.array([j for _ in ii for j in jj], dtype=np.int64)
            pairs.append((pi, pj))
        chunks = (np.array([float(sc.chunk_tokens)] if sc.chunk_tokens else CHUNK_CANDIDATES)
                  if shapes else None)
        grp = _Group(shapes, gpus, link, phases, chunks, pairs)
        self._groups[code] = grp
        return grp

    def _prefill_cap(self, shape: Any, k: int, ph: TrafficPhase, link: LinkSpec) -> Any:
        key = (shape.label, k, link, _stage_link(shape.instance))
        if key not in self._prefill:
            self._prefill[key] = prefill_capacity(shape.instance, ph, self.sc.slo.quantile,
                                                  ev._s(self.sc.slo.ttft_ms), link)
        return self._prefill[key]

    def _servers(self, grp: _Group, k: int, G: np.ndarray) -> np.ndarray:
        """(n, shapes) prefill pool sizes as ``evaluate._phase_pools`` sizes them."""
        f = grp.phases[k].prefill_fraction
        return np.maximum(1, np.floor_divide(G[:, None] * f, grp.gpus[None, :]).astype(np.int64))

    def prefetch_pooled(self, work: Sequence[tuple[_Group, np.ndarray]]) -> None:
        """Run the pooled prefill searches of several groups together: one vectorised search
        per (shape, phase, link) over every pool size any of them needs."""
        sc = self.sc
        need: dict[tuple, tuple[Any, int, LinkSpec, list[np.ndarray]]] = {}
        for grp, G in work:
            for k, pc in enumerate(grp.phases):
                if not pc.pooled or not grp.shapes:
                    continue
                servers = self._servers(grp, k, G)
                for j, shape in enumerate(grp.shapes):
                    base = (shape.label, k, grp.link, _stage_link(shape.instance))
                    need.setdefault(base, (shape.instance, k, grp.link, []))[3].append(
                        servers[:, j])
        for base, (inst, k, link, cols) in need.items():
            missing = _missing(cols, self._pooled.get(base))
            if missing.size == 0:
                continue
            got = prefill_goodputs(inst, sc.phases[k], sc.slo.quantile, ev._s(sc.slo.ttft_ms),
                                   link, missing)
            self._pooled[base] = _merged(self._pooled.get(base), missing, got)

    def pooled_prefill(self, grp: _Group, k: int, G: np.ndarray) -> np.ndarray:
        """(n, shapes) prefill goodput per instance with the pool sizes ``evaluate`` uses:
        ``max(1, ⌊G·f⌋ // g)`` instances per shape, f the single-queue ideal prefill fraction.
        """
        self.prefetch_pooled([(grp, G)])
        servers = self._servers(grp, k, G)
        out = np.zeros(servers.shape)
        link = grp.link
        for j, shape in enumerate(grp.shapes):
            vals, res = self._pooled[(shape.label, k, link, _stage_link(shape.instance))]
            out[:, j] = res[np.searchsorted(vals, servers[:, j])]
        return out

    def _decode_cap(self, shape: Any, k: int, ph: TrafficPhase) -> Any:
        key = (shape.label, k, _stage_link(shape.instance))
        if key not in self._decode:
            self._decode[key] = decode_capacity(shape.instance, shape.max_sequences[ph.name], ph,
                                                ev._s(self.sc.slo.tpot_ms))
        return self._decode[key]

    def _coloc_pools(self, grp: _Group, G: np.ndarray) -> np.ndarray:
        """(n, shapes) pool sizes of the colocated prompt queue, as ``evaluate`` takes them."""
        counts = _instances_in_cluster(G, grp.gpus, self.sc.cluster.gpus_per_node)
        return queue_instances(counts)

    def prefetch_coloc(self, work: Sequence[tuple[_Group, np.ndarray]]) -> None:
        """Run the colocated goodput searches of several groups together: one vectorised
        search per phase over every (shape, queue pool size) any of them needs (the prompt
        queue depends on the pool size the router splits arrivals over; ``queue_instances``
        keeps ⌊log₂ n⌋ + 1 of them per shape)."""
        sc = self.sc
        need: dict[tuple, tuple[Any, np.ndarray, list[np.ndarray]]] = {}
        for grp, G in work:
            if not grp.shapes or grp.chunks is None:
                continue
            pools = self._coloc_pools(grp, G)
            for j, shape in enumerate(grp.shapes):
                key = (shape.label, _stage_link(shape.instance))
                need.setdefault(key, (shape, grp.chunks, []))[2].append(pools[:, j])
        todo = []
        for key, (shape, chunks, cols) in need.items():
            missing = _missing(cols, self._coloc.get(key))
            if missing.size:
                todo.append((key, shape, chunks, missing))
        if not todo:
            return
        chunks = todo[0][2]
        shapes = [shape for _, shape, _, miss in todo for _ in miss]
        pools = np.concatenate([miss for *_, miss in todo])
        stack = StackedInstances([s.instance for s in shapes], ndim=3)
        per_phase = []
        for ph in sc.phases:
            seqs = np.array([s.max_sequences[ph.name] for s in shapes], dtype=float)
            g = max_rate_meeting(stack, seqs, ph, chunks, sc.slo.quantile,
                                 ev._s(sc.slo.ttft_ms), ev._s(sc.slo.tpot_ms), instances=pools)
            per_phase.append(np.asarray(g, dtype=float).reshape(len(shapes), -1))
        goods = np.stack(per_phase, axis=1)  # (combinations, phases, chunks)
        start = 0
        for key, _, _, miss in todo:
            self._coloc[key] = _merged(self._coloc.get(key), miss,
                                       goods[start:start + miss.size])
            start += miss.size

    def coloc_goods(self, grp: _Group, G: np.ndarray) -> np.ndarray:
        """(phases, n, shapes, chunks) per-instance colocated goodput at each cluster size's
        pool sizes, with the instance stack evaluate uses."""
        self.prefetch_coloc([(grp, G)])
        pools = self._coloc_pools(grp, G)
        assert grp.chunks is not None
        out = np.zeros((len(self.sc.phases), G.size, len(grp.shapes), grp.chunks.size))
        for j, shape in enumerate(grp.shapes):
            vals, res = self._coloc[(shape.label, _stage_link(shape.instance))]
            out[:, :, j, :] = res[np.searchsorted(vals, pools[:, j])].transpose(1, 0, 2)
        return out


def _missing(needed: Sequence[np.ndarray], known: tuple[np.ndarray, np.ndarray] | None
             ) -> np.ndarray:
    """The distinct pool sizes in ``needed`` that the (sizes, results) table ``known`` lacks."""
    values = unique_sorted(np.concatenate(needed))
    return values if known is None else np.setdiff1d(values, known[0], assume_unique=True)


def _merged(known: tuple[np.ndarray, np.ndarray] | None, sizes: np.ndarray,
            results: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The table ``known`` with ``sizes`` → ``results`` added, sorted by size (for
    ``np.searchsorted`` lookups)."""
    if known is not None:
        sizes, results = np.concatenate([known[0], sizes]), np.concatenate([known[1], results])
    order = np.argsort(sizes, kind="stable")
    return sizes[order], results[order]


def _ideal_per_gpu(gpus: np.ndarray, prefill: np.ndarray, decode: np.ndarray,
                   link_rate: float) -> np.ndarray:
    """``allocation.ideal_split(...)[0]`` per row of (n, shapes) prefill rates."""
    with np.errstate(divide="ignore", invalid="ignore"):
        pre = gpus / prefill
        if link_rate > 0:
            pre = np.maximum(pre, 1.0 / link_rate)
        dec = gpus / decode
        per = 1.0 / (pre[:, :, None] + dec[None, None, :])
    valid = (prefill > 0)[:, :, None] & (decode > 0)[None, None, :]
    per = np.where(valid, per, 0.0).reshape(prefill.shape[0], -1)
    return np.maximum(per.max(axis=1, initial=0.0), 0.0)


def _instances_in_cluster(G: np.ndarray, inst_gpus: np.ndarray, gpn: int) -> np.ndarray:
    """``evaluate._instances_in_cluster`` for (n,) cluster sizes × (s,) shapes."""
    Gc = G[:, None]
    full = Gc // gpn
    rem = Gc - full * gpn
    small = full * (gpn // np.maximum(inst_gpus, 1)) + rem // np.maximum(inst_gpus, 1)
    big = full // np.maximum(inst_gpus // gpn, 1)
    return np.where(inst_gpus <= gpn, small, big)


# ---------------------------------------------------------------------------------------------
# design points


FIELDS = ("disaggregate", "colocated_goodput_per_gpu", "disaggregated_goodput_per_gpu",
          "colocated_headroom", "disaggregated_headroom", "gain", "rounding_loss",
          "kv_utilization", "kv_transfer_share_of_ttft", "static_mix_loss", "gpu_scale_ok",
          "kv_bandwidth_ok", "traffic_mix_ok", "colocated_tensor_parallel",
          "colocated_instances", "colocated_chunk_tokens", "prefill_gpus", "decode_gpus")


def _points(caps: _Capacities, G: np.ndarray, rates: np.ndarray,
            progress: Callable[[int], None] | None = None) -> dict[str, np.ndarray]:
    """Evaluate design points (cluster sizes G (n,), per-phase rates (n, K)) of one scenario."""
    sc = caps.sc
    cl = sc.cluster
    pol = sc.policy
    K = len(sc.phases)
    n = G.size
    out = {
        "disaggregate": np.zeros(n, dtype=bool),
        "colocated_goodput_per_gpu": np.zeros(n), "disaggregated_goodput_per_gpu": np.zeros(n),
        "colocated_headroom": np.zeros(n), "disaggregated_headroom": np.zeros(n),
        "gain": np.full(n, np.nan), "rounding_loss": np.ones(n),
        "kv_utilization": np.full(n, np.nan), "kv_transfer_share_of_ttft": np.full(n, np.nan),
        "static_mix_loss": np.zeros(n), "gpu_scale_ok": np.zeros(n, dtype=bool),
        "kv_bandwidth_ok": np.zeros(n, dtype=bool), "traffic_mix_ok": np.zeros(n, dtype=bool),
        "colocated_tensor_parallel": np.zeros(n, dtype=np.int64),
        "colocated_instances": np.zeros(n, dtype=np.int64),
        "colocated_chunk_tokens": np.zeros(n, dtype=np.int64),
        "prefill_gpus": np.zeros(n, dtype=np.int64), "decode_gpus": np.zeros(n, dtype=np.int64),
    }
    if n == 0:
        return out
    if cl.inter_node is None and (G > cl.gpus_per_node).any():
        raise SweepError(f"{int(G.max())} GPUs span several {cl.gpus_per_node}-GPU nodes, but "
                         "the workload has no cluster.inter_node link")
    codes = caps.group_codes(G)
    work = []
    for code in unique_sorted(codes):
        idx = np.flatnonzero(codes == code)
        work.append((caps.group(int(code), int(G[idx].min())), idx))
    caps.prefetch_pooled([(grp, unique_sorted(G[idx])) for grp, idx in work])
    caps.prefetch_coloc([(grp, unique_sorted(G[idx])) for grp, idx in work])
    for grp, idx in work:
        _group_points(caps, grp, G[idx], rates[idx], idx, out)
        if progress is not None:
            progress(idx.size)
    del K, pol
    return out


def _group_points(caps: _Capacities, grp: _Group, G: np.ndarray, rates: np.ndarray,
                  idx: np.ndarray, out: dict[str, np.ndarray]) -> None:
    sc = caps.sc
    cl = sc.cluster
    pol = sc.policy
    K = len(sc.phases)
    gpn = cl.gpus_per_node
    shares = [ph.share for ph in sc.phases]
    ug, inv = np.unique(G, return_inverse=True)
    S = len(grp.shapes)

    # --- disaggregated: per-phase best split and static allocation, per cluster size
    d_good = np.zeros((ug.size, K))
    d_pre = np.full((ug.size, K), -1, dtype=np.int64)
    d_x = np.zeros((ug.size, K), dtype=np.int64)
    d_y = np.zeros((ug.size, K), dtype=np.int64)
    d_dec = np.full((ug.size, K), -1, dtype=np.int64)
    prefill_rates: list[np.ndarray] = []
    ideal = np.zeros((ug.size, K))
    for k in range(K):
        pc = grp.phases[k]
        if pc.pooled and S > 0:
            rates_k = caps.pooled_prefill(grp, k, ug)                       # (u, S)
            ideal[:, k] = _ideal_per_gpu(grp.gpus, rates_k, pc.decode, pc.link_rate)
        else:
            rates_k = pc.prefill
            ideal[:, k] = pc.ideal_per_gpu
        prefill_rates.append(rates_k)
        pi, pj = grp.pairs[k]
        if pi.size == 0:
            continue
        sp = best_splits(ug, grp.gpus[pi], rates_k[..., pi], grp.gpus[pj], pc.decode[pj],
                         pc.link_rate, gpn)
        has = sp.pair >= 0
        d_good[:, k] = sp.goodput
        d_pre[:, k] = np.where(has, pi[np.maximum(sp.pair, 0)], -1)
        d_dec[:, k] = np.where(has, pj[np.maximum(sp.pair, 0)], -1)
        d_x[:, k], d_y[:, k] = sp.x, sp.y
    exists = d_pre >= 0
    ideal_total = ideal * ug[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        loss = np.where(ideal_total <= 0, 1.0,
                        np.maximum(0.0, np.minimum(1.0, 1.0 - d_good / ideal_total)))
    loss = np.where(exists, loss, 1.0)
    use_static = K > 1 and not sc.autoscaling
    if K > 1 and S > 0:
        st = static_allocation(
            ug, grp.gpus, prefill_rates, [pc.decode for pc in grp.phases],
            [pc.link_rate for pc in grp.phases], [d_good[:, k] for k in range(K)], shares, gpn,
            known=[(d_pre[:, k], d_dec[:, k], d_x[:, k]) for k in range(K)])
        s_goods, s_found = st.goods, st.found
        static_loss = np.where(st.score < 0, 0.0, np.maximum(0.0, 1.0 - st.score))
    else:
        st = None
        s_goods = np.zeros((ug.size, K))
        s_found = np.zeros(ug.size, dtype=bool)
        static_loss = np.zeros(ug.size)

    # --- per point (rates enter here)
    r = rates
    rows = np.arange(G.size)
    gpu_goods = np.where(use_static & s_found[:, None], s_goods, d_good)[inv]      # (n, K)
    d_head_k = gpu_goods / r
    d_bind = np.argmin(d_head_k, axis=1)
    d_head = d_head_k[rows, d_bind]
    out["disaggregated_headroom"][idx] = d_head
    out["disaggregated_goodput_per_gpu"][idx] = gpu_goods[rows, d_bind] / G
    # the split shown: the static one when pools are static, else the binding phase's best
    if S > 0:
        if use_static and st is not None:
            has_s = s_found[inv]
            pgpus = np.where(has_s, st.x[inv] * grp.gpus[np.maximum(st.prefill_option[inv], 0)], 0)
            dgpus = np.where(has_s, st.y[inv] * grp.gpus[np.maximum(st.decode_option[inv], 0)], 0)
        else:
            pre_i, dec_i = d_pre[inv, d_bind], d_dec[inv, d_bind]
            has_b = pre_i >= 0
            pgpus = np.where(has_b, d_x[inv, d_bind] * grp.gpus[np.maximum(pre_i, 0)], 0)
            dgpus = np.where(has_b, d_y[inv, d_bind] * grp.gpus[np.maximum(dec_i, 0)], 0)
        out["prefill_gpus"][idx] = pgpus
        out["decode_gpus"][idx] = dgpus

    # gpu-scale: the first phase with the largest rounding loss
    lp = loss[inv]
    worst = np.argmax(lp, axis=1)
    out["rounding_loss"][idx] = lp[rows, worst]
    out["gpu_scale_ok"][idx] = exists[inv][rows, worst] & (lp[rows, worst] <= pol.max_rounding_loss)

    # kv-bandwidth over the phases that have a split
    util = np.full((G.size, K), -np.inf)
    tms = np.full((G.size, K), -np.inf)
    link = grp.link
    for k in range(K):
        pc = grp.phases[k]
        ex = exists[inv, k]
        if not ex.any() or S == 0:
            continue
        pi = np.maximum(d_pre[inv, k], 0)
        pgpus = d_x[inv, k] * grp.gpus[pi]
        demand = r[:, k] * pc.mean_bytes[pi]
        capacity = pgpus * link.effective_bytes_per_s
        with np.errstate(divide="ignore", invalid="ignore"):
            u = np.where(capacity > 0, demand / np.where(capacity > 0, capacity, 1.0), np.inf)
        exposed, _ = transfer_seconds(pc.p95_bytes[pi], link, grp.gpus[pi], pc.own_prefill_s[pi],
                                      sc.model.num_layers, np.minimum(u, 0.999))
        util[:, k] = np.where(ex, u, -np.inf)
        tms[:, k] = np.where(ex, exposed * 1000, -np.inf)
    any_plan = exists[inv].any(axis=1)
    u_worst = util.max(axis=1)
    ok_util = u_worst <= pol.max_kv_link_utilization
    if sc.slo.ttft_ms:
        share = tms.max(axis=1) / sc.slo.ttft_ms
        ok_share = share <= pol.max_kv_transfer_share_of_ttft
        out["kv_transfer_share_of_ttft"][idx] = np.where(any_plan, share, np.nan)
    else:
        ok_share = np.ones(G.size, dtype=bool)
    out["kv_utilization"][idx] = np.where(any_plan, u_worst, np.nan)
    out["kv_bandwidth_ok"][idx] = any_plan & ok_util & ok_share

    # traffic-mix
    sl = static_loss[inv]
    out["static_mix_loss"][idx] = sl
    out["traffic_mix_ok"][idx] = (K == 1) | sc.autoscaling | (sl <= pol.max_static_mix_loss)

    # --- colocated: the plan evaluate picks (max worst-phase headroom, then goodput per GPU)
    c_head = np.zeros(G.size)
    if S > 0:
        counts = _instances_in_cluster(G, grp.gpus, gpn).astype(float)           # (n, S)
        goods = caps.coloc_goods(grp, G)                                      # (K, n, S, C)
        C = goods.shape[3]
        head = None
        for k in range(K):
            hk = goods[k] * counts[:, :, None] / r[:, k][:, None, None]
            head = hk if head is None else np.minimum(head, hk)
        gpus_f = counts * grp.gpus[None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            per_gpu = goods[0] * counts[:, :, None] / gpus_f[:, :, None]
        usable = (counts > 0)[:, :, None]
        head_m = np.where(usable, head, -np.inf).reshape(G.size, -1)
        pg_m = np.where(usable, per_gpu, -np.inf).reshape(G.size, -1)
        hmax = head_m.max(axis=1)
        cand = head_m == hmax[:, None]
        pmax = np.where(cand, pg_m, -np.inf).max(axis=1)
        choice = np.argmax(cand & (pg_m == pmax[:, None]), axis=1)
        si, ci = choice // C, choice % C
        n_inst = counts[rows, si]
        tot = np.stack([goods[k][rows, si, ci] * n_inst for k in range(K)], axis=1)  # (n, K)
        c_head_k = tot / r
        c_bind = np.argmin(c_head_k, axis=1)
        c_head = c_head_k[rows, c_bind]
        has_c = np.isfinite(hmax) & (counts.max(axis=1) > 0)
        c_head = np.where(has_c, c_head, 0.0)
        out["colocated_goodput_per_gpu"][idx] = np.where(has_c, tot[rows, c_bind] / G, 0.0)
        tp = np.array([s.instance.tensor_parallel for s in grp.shapes], dtype=np.int64)
        out["colocated_tensor_parallel"][idx] = np.where(has_c, tp[si], 0)
        out["colocated_instances"][idx] = np.where(has_c, n_inst.astype(np.int64), 0)
        out["colocated_chunk_tokens"][idx] = np.where(has_c, grp.chunks[ci].astype(np.int64), 0)
    out["colocated_headroom"][idx] = c_head

    # --- verdict (rules.assess)
    with np.errstate(divide="ignore", invalid="ignore"):
        gain = np.where(c_head > 0, d_head / np.where(c_head > 0, c_head, 1.0) - 1.0,
                        np.where(d_head > 0, np.inf, np.nan))
    out["gain"][idx] = gain
    gain_ok = ~np.isnan(gain) & (gain >= pol.min_disagg_gain)
    out["disaggregate"][idx] = (out["gpu_scale_ok"][idx] & out["kv_bandwidth_ok"][idx]
                                & out["traffic_mix_ok"][idx] & gain_ok)


# ---------------------------------------------------------------------------------------------
# results


@dataclass(frozen=True)
class Crossover:
    """Where the verdict first becomes ``disaggregate`` along the first axis."""

    key: str
    value: Any
    """The smallest value of ``key`` with a disaggregate verdict; None = never in the range."""
    label: str | None
    at: tuple[tuple[str, str], ...] = ()
    """For a grid: the other axis's (key, value label) this row is taken at."""
    from_start: bool = False
    """Whether the verdict is already ``disaggregate`` at the first value."""
    stable_from: Any = None
    """The value from which the verdict stays ``disaggregate`` to the end of the range
    (None if it does not end there); it can lie above ``value`` when the verdict alternates
    (rounding loss jumps from one GPU count to the next)."""
    stable_label: str | None = None


@dataclass(frozen=True)
class SweepResult:
    """Metrics of every design point; arrays have shape ``tuple(len(a) for a in axes)``."""

    workload: str | None
    axes: tuple[Axis, ...]
    metrics: Mapping[str, np.ndarray] = field(repr=False)
    policy: Any = None
    seconds: float = 0.0

    @property
    def shape(self) -> tuple[int, ...]:
        """Grid shape."""
        return tuple(len(a) for a in self.axes)

    @property
    def size(self) -> int:
        """Number of design points."""
        return int(np.prod(self.shape))

    def __getitem__(self, name: str) -> np.ndarray:
        return self.metrics[name]

    @property
    def verdict(self) -> np.ndarray:
        """'chunked-prefill' / 'disaggregate' per point."""
        return np.where(self.metrics["disaggregate"], VERDICTS[1], VERDICTS[0])

    def failing(self, index: tuple[int, ...]) -> tuple[str, ...]:
        """Preconditions that fail at one point, plus 'gain' when only the gain is short."""
        m = self.metrics
        out = [pid for pid, name in zip(PRECONDITIONS, ("gpu_scale_ok", "kv_bandwidth_ok",
                                                        "traffic_mix_ok"))
               if not bool(m[name][index])]
        if not out and not bool(m["disaggregate"][index]):
            out.append("gain")
        return tuple(out)

    def crossovers(self) -> tuple[Crossover, ...]:
        """The crossover along the first axis (one per value of the second axis in a grid)."""
        ax = self.axes[0]
        dis = self.metrics["disaggregate"]
        if len(self.axes) == 1:
            rows = [((), dis)]
        else:
            other = self.axes[1]
            rows = [(((other.key, other.labels[j]),), dis[:, j]) for j in range(len(other))]
        out = []
        for at, line in rows:
            hit = np.flatnonzero(line)
            if hit.size == 0:
                out.append(Crossover(ax.key, None, None, at))
                continue
            i = int(hit[0])
            miss = np.flatnonzero(~line)
            last_miss = int(miss[-1]) if miss.size else -1
            stable = last_miss + 1 if last_miss + 1 < line.size else None
            out.append(Crossover(ax.key, _plain(ax.values[i]), ax.labels[i], at, i == 0,
                                 None if stable is None else _plain(ax.values[stable]),
                                 None if stable is None else ax.labels[stable]))
        return tuple(out)

    def transitions(self) -> tuple[tuple[int, str], ...]:
        """(index, new verdict) wherever the verdict changes along a 1-D sweep."""
        if len(self.axes) != 1:
            return ()
        dis = self.metrics["disaggregate"]
        change = np.flatnonzero(dis[1:] != dis[:-1]) + 1
        return tuple((int(i), VERDICTS[int(dis[i])]) for i in change)


def _plain(v: Any) -> Any:
    if isinstance(v, LinkSpec):
        return v.id
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    return v


def sweep(sc: Scenario, axes: Sequence[Axis], progress: Progress | None = None,
          workload: str | None = None) -> SweepResult:
    """Evaluate ``sc`` at every point of the grid spanned by ``axes`` (one or two)."""
    import time

    t0 = time.perf_counter()
    if not 1 <= len(axes) <= 2:
        raise SweepError("a sweep varies one key, or two for a grid")
    if len(axes) == 2 and axes[0].key == axes[1].key:
        raise SweepError(f"{axes[0].key} is varied twice")
    for a in axes:
        key_info(a.key)
        if len(a) == 0:
            raise SweepError(f"{a.key}: no values")
    shape = tuple(len(a) for a in axes)
    total = int(np.prod(shape))
    if total > MAX_POINTS:
        raise SweepError(f"{total:,} design points (at most {MAX_POINTS:,})")
    cheap = [i for i, a in enumerate(axes) if not KEYS[a.key].capacity]
    costly = [i for i, a in enumerate(axes) if KEYS[a.key].capacity]
    metrics = {name: None for name in FIELDS}
    flat: dict[str, np.ndarray] = {}
    grids = np.meshgrid(*[np.arange(len(a)) for a in axes], indexing="ij")
    flat_idx = [g.ravel() for g in grids]
    done = [0]

    def tick(count: int) -> None:
        done[0] += count
        if progress is not None:
            progress(done[0], total)

    if progress is not None:
        progress(0, total)
    # one capacity context per combination of the costly axes' values
    if costly:
        combos = np.stack([flat_idx[i] for i in costly], axis=1)
        uniq, inverse = np.unique(combos, axis=0, return_inverse=True)
        inverse = inverse.ravel()
    else:
        uniq, inverse = np.zeros((1, 0), dtype=np.int64), np.zeros(total, dtype=np.int64)
    for u, combo in enumerate(uniq):
        base = sc
        for ax_i, vi in zip(costly, combo):
            base = apply_value(base, axes[ax_i].key, axes[ax_i].values[int(vi)])
        sel = np.flatnonzero(inverse == u)
        G = np.full(sel.size, base.cluster.gpus, dtype=np.int64)
        rates = np.tile(np.array([ph.rate_rps for ph in base.phases], dtype=float), (sel.size, 1))
        for ax_i in cheap:
            a = axes[ax_i]
            vals = np.array(a.values)[flat_idx[ax_i][sel]]
            if a.key == "cluster.gpus":
                G = vals.astype(np.int64)
            else:  # traffic.rate_rps
                peak = _peak_index(base.phases)
                r_peak = base.phases[peak].rate_rps
                rates = np.stack([vals.astype(float) if k == peak
                                  else ph.rate_rps * (vals.astype(float) / r_peak)
                                  for k, ph in enumerate(base.phases)], axis=1)
        res = _points(_Capacities(base), G, rates, tick)
        for name in FIELDS:
            if name not in flat:
                flat[name] = np.zeros(total, dtype=res[name].dtype)
            flat[name][sel] = res[name]
    for name in FIELDS:
        arr = flat[name].reshape(shape)
        arr.setflags(write=False)
        metrics[name] = arr
    return SweepResult(workload if workload is not None else sc.name, tuple(axes), metrics,
                       sc.policy, time.perf_counter() - t0)


def evaluate_points(sc: Scenario, gpus: Sequence[int] | np.ndarray,
                    rates: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """The per-point metrics of ``sc`` at cluster sizes ``gpus`` (and per-phase ``rates``,
    shape (n, phases); default the workload's) — the vectorised kernel without a grid."""
    G = np.asarray(gpus, dtype=np.int64).ravel()
    if rates is None:
        rates = np.tile(np.array([ph.rate_rps for ph in sc.phases], dtype=float), (G.size, 1))
    return _points(_Capacities(sc), G, np.asarray(rates, dtype=float))


# ---------------------------------------------------------------------------------------------
# the scalar reference


def reference_point(sc: Scenario) -> dict[str, Any]:
    """The same metrics from ``evaluate`` + ``assess`` (one scalar evaluation; for tests and
    for checking a sweep point)."""
    from advisor.core.evaluate import evaluate
    from advisor.core.rules import assess

    m = evaluate(sc)
    a = assess(sc, m)
    pre = {p.id: p for p in a.preconditions}
    G = sc.cluster.gpus
    worst_loss = max((p.disaggregated.rounding_loss if p.disaggregated else 1.0) for p in m.phases)
    kvs = [p.disaggregated.kv_transfer for p in m.phases
           if p.disaggregated and p.disaggregated.kv_transfer]
    return {
        "verdict": a.verdict,
        "disaggregate": a.verdict == "disaggregate",
        "colocated_goodput_per_gpu": (m.colocated.max_goodput_rps / G) if m.colocated else 0.0,
        "disaggregated_goodput_per_gpu": (m.disaggregated.max_goodput_rps / G
                                          if m.disaggregated else 0.0),
        "colocated_headroom": m.colocated_headroom,
        "disaggregated_headroom": m.disaggregated_headroom,
        "gain": a.disagg_gain,
        "rounding_loss": worst_loss,
        "kv_utilization": max(k.utilization for k in kvs) if kvs else None,
        "static_mix_loss": m.static_mix_loss,
        "gpu_scale_ok": pre["gpu-scale"].passed,
        "kv_bandwidth_ok": pre["kv-bandwidth"].passed,
        "traffic_mix_ok": pre["traffic-mix"].passed,
        "phase_goodputs": tuple(p.disaggregated.max_goodput_rps if p.disaggregated else 0.0
                                for p in m.phases),
        "colocated_plan": ((m.colocated.tensor_parallel, m.colocated.instances,
                            m.colocated.chunk_tokens) if m.colocated else None),
        "split": ((m.disaggregated.allocation.prefill_gpus, m.disaggregated.allocation.decode_gpus)
                  if m.disaggregated and m.disaggregated.allocation else None),
    }
