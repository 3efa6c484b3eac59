"""Verdict boundaries: how far each key can move before the recommendation changes.

For the workload as given, :func:`verdict_boundaries` finds, per key, the nearest value that
flips the verdict (``kind='verdict'``), plus the rate up to which chunked prefill keeps the
TPOT SLO (``kind='slo'``). Every verdict is the engine's many-point one
(``advisor.core.analysis.points.design_points``, the rule engine's tests on the capacity tables
``evaluate`` reads), so it is ``decide(sc, evaluate(sc)).verdict`` at that point.
``flips_at`` is None when nothing in the searched range flips it.

* ``cluster.gpus`` — above the current count up to 16× or the largest cluster evaluated
  (``limits.MAX_GPUS``, 100,000; ``up``) and below it down to one GPU (``down``), by the
  bounded search of ``advisor.core.analysis.search`` (both directions in the same calls):
  every count within 64 of the current one and every count up to 256, a 2 % grid beyond,
  and the first grid step with the other verdict narrowed to one count by vectorised
  bisection. ``flips_at`` is a count with the other verdict whose neighbour towards the
  current one still has the current one (the first such count within the exhaustive ranges;
  see the search's resolution beyond). Without an inter-node link the cluster cannot leave
  one node.
* ``cluster.inter_node.bandwidth_scale`` — a multiplier on the inter-node link's bandwidth
  (only when the KV crosses it): towards disaggregation (``up``, 1…100×) when the verdict is
  chunked prefill, away from it (``down``, 1…1/100×) when it is disaggregate. The other end
  of the range is evaluated first; when it flips, a bisection on the multiplier (log scale,
  every step one capacity evaluation) narrows the flip to 0.2 % and ``flips_at`` is the
  bracket end with the other verdict.
* ``traffic.rate_rps`` (``verdict``) — every phase's rate scaled together, up and down
  within 1000× (:func:`rate_boundaries`). The rate moves the verdict in two ways: a plan meets
  the SLOs while its goodput covers the rate (the verdict policy: the headrooms scale as
  1/rate, their ratio, the gain, does not move), and the KV link's utilisation grows with
  the rate carried. One vectorised evaluation scans a log grid plus both sides of every
  plan's headroom; the first bracket with the other verdict in each direction is narrowed
  by nested grids to ~1e-6 of its log-width.
* ``traffic.rate_rps`` (``slo``) — the colocated plan's ``chunked_safe_rate_rps`` (the rate up
  to which chunked prefill keeps the TPOT percentile within the SLO, docs/model.md §5),
  expressed as the peak phase's rate.
* ``policy.min_disagg_gain`` — when the gain alone decides (all preconditions hold), the
  verdict flips at a required gain equal to the modelled one, unless the verdict policy
  keeps the plan that alone meets the SLOs either side of it.

:func:`searched` gives a decision its boundaries and knife edges (``decision.knife_edges``).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from advisor.core.analysis.keys import apply_value, peak_index
from advisor.core.analysis.points import design_points
from advisor.core.analysis.search import DEFAULT_GRID, CountGrid, bracketed_flip, first_flips
from advisor.core.arrays import unique_sorted
from advisor.core.limits import MAX_GPUS
from advisor.core.plan.capacities import Capacities
from advisor.core.results import ModelResult
from advisor.core.scenario import Scenario
from advisor.core.verdict.decision import Boundary, Decision, Direction, with_boundaries
from advisor.core.verdict.rules import RULES, VERDICTS, ok_field

GPU_FACTOR = 16
BANDWIDTH_RANGE = 100.0
BANDWIDTH_TOLERANCE = 2e-3
RATE_RANGE = 1000.0


def _other(verdict: str) -> str:
    return VERDICTS[0] if verdict == VERDICTS[1] else VERDICTS[1]


def _fmt_gpus(n: int) -> str:
    return f"{n:,}"


def _num(x: float) -> str:
    """Three significant digits with thousands separators (1,150; 47.3; 0.0246)."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    digits = max(0, 2 - math.floor(math.log10(abs(x))))
    text = f"{round(x, digits):,.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _gpu_limit(sc: Scenario, direction: Direction) -> int:
    cl = sc.cluster
    if direction == "down":
        return 1
    if cl.inter_node is None:
        return cl.gpus_per_node
    return min(max(cl.gpus * GPU_FACTOR, cl.gpus), MAX_GPUS)


def gpu_boundaries(sc: Scenario, verdict: str, caps: Capacities | None = None,
                   grid: CountGrid = DEFAULT_GRID) -> tuple[Boundary, Boundary]:
    """The nearest GPU counts above and below the current one with the other verdict.

    ``search.first_flips`` over the many-point verdict (``design_points``), both directions
    in the same calls: every count within ``grid.near`` (64) of the current one, beyond that a
    grid of counts ``grid.ratio`` (2 %) apart, and the first grid step whose end has the other
    verdict narrowed by vectorised bisection to one count. (A flip and flip-back that both
    fall between two grid counts beyond the first 64 is not seen; the verdict settles as the
    rounding loss fades with scale.)
    """
    cur = sc.cluster.gpus
    caps = caps or Capacities(sc)
    want = verdict == VERDICTS[0]  # True: looking for disaggregate
    rates = np.array([ph.rate_rps for ph in sc.phases])

    def flipped(G: np.ndarray) -> np.ndarray:
        verdicts: np.ndarray = design_points(caps, G, np.tile(rates, (G.size, 1)))["disaggregate"]
        return np.asarray(verdicts == want)

    limits = (_gpu_limit(sc, "up"), _gpu_limit(sc, "down"))
    up, down = first_flips(flipped, cur, limits, grid)
    return (_gpu_result(sc, verdict, "up", limits[0], up, grid),
            _gpu_result(sc, verdict, "down", limits[1], down, grid))


def gpu_boundary(sc: Scenario, verdict: str, direction: Direction,
                 caps: Capacities | None = None) -> Boundary:
    """:func:`gpu_boundaries` in one direction."""
    up, down = gpu_boundaries(sc, verdict, caps)
    return up if direction == "up" else down


def _gpu_result(sc: Scenario, verdict: str, direction: Direction, limit: int,
                found: int | None, grid: CountGrid) -> Boundary:
    cur = sc.cluster.gpus
    to = _other(verdict)
    what = "disaggregation would pay" if to == "disaggregate" else "chunked prefill would win"
    if found is None:
        rng = (f"{_fmt_gpus(cur + 1)}–{_fmt_gpus(limit)}" if direction == "up"
               else f"{_fmt_gpus(limit)}–{_fmt_gpus(cur - 1)}")
        text = (f"no GPU count in {rng} changes the verdict" if (
            (direction == "up" and limit > cur) or (direction == "down" and cur > 1))
            else "no other GPU count to try in this direction")
        text += _resolution(cur, direction, limit, grid)
        if direction == "up" and sc.cluster.inter_node is None:
            text += " (without an inter-node link the cluster stays on one node)"
        return Boundary(key="cluster.gpus", current=cur, flips_at=None, direction=direction,
                        description=text, kind="verdict", to=None)
    if direction == "up":
        text = f"{what} from {_fmt_gpus(found)} GPUs (now {_fmt_gpus(cur)})"
    else:
        keeps = ("disaggregation keeps paying" if verdict == "disaggregate"
                 else "chunked prefill stays ahead")
        then = "chunked prefill wins" if to == "chunked-prefill" else "disaggregation would pay"
        text = f"{keeps} down to {_fmt_gpus(found + 1)} GPUs; at {_fmt_gpus(found)} {then}"
    return Boundary(key="cluster.gpus", current=cur, flips_at=found, direction=direction,
                    description=text, kind="verdict", to=to)


def _resolution(cur: int, direction: Direction, limit: int, grid: CountGrid) -> str:
    """Which counts a search that found nothing checked, when not every one."""
    pct = f"{(grid.ratio - 1) * 100:g}%"
    if direction == "up":
        every = min(limit, max(cur + grid.near, grid.dense))
        return "" if every >= limit else f" (every count to {_fmt_gpus(every)}, then a {pct} grid)"
    every = cur - grid.near
    if every <= grid.dense + 1:
        return ""
    return (f" (every count to {_fmt_gpus(every)}, a {pct} grid to "
            f"{_fmt_gpus(grid.dense)}, then every count)")


def bandwidth_boundary(sc: Scenario, verdict: str,
                       caps: Capacities | None = None) -> Boundary | None:
    """The inter-node bandwidth multiplier at which the verdict flips (None: not applicable).

    Every multiplier is one design-point evaluation; the capacities that do not depend on
    the inter-node link (``Capacities.with_inter_node``) are computed once for all of them.
    """
    cl = sc.cluster
    if cl.inter_node is None or cl.single_node:
        return None
    key = "cluster.inter_node.bandwidth_scale"
    direction: Direction = "up" if verdict == VERDICTS[0] else "down"
    end = BANDWIDTH_RANGE if direction == "up" else 1.0 / BANDWIDTH_RANGE
    to = _other(verdict)

    caps = caps or Capacities(sc)
    rates = np.array([[ph.rate_rps for ph in sc.phases]])
    want = to == VERDICTS[1]  # the far side: disaggregate (True) or not

    def at(log_scale: float) -> tuple[bool, np.ndarray]:
        """(the verdict there is ``to``, the log headrooms of disaggregation)."""
        scaled = apply_value(sc, key, math.exp(log_scale)).cluster.inter_node
        assert scaled is not None
        res = design_points(caps.with_inter_node(scaled), np.array([cl.gpus], dtype=np.int64),
                            rates)
        return bool(res["disaggregate"][0]) == want, _disaggregate_margins(sc, res)

    link = cl.inter_node.id
    far_side, far_margin = at(math.log(end))
    if not far_side:
        span = (f"1–{BANDWIDTH_RANGE:g}×" if direction == "up"
                else f"{1 / BANDWIDTH_RANGE:g}–1×")
        return Boundary(key=key, current=1.0, flips_at=None, direction=direction,
                        description=f"no bandwidth of {link} in {span} changes the verdict",
                        kind="verdict", to=None)
    # the current link: its capacity tables are the ones evaluate built (cheap)
    here = design_points(caps, np.array([cl.gpus], dtype=np.int64), rates)
    # far side disaggregate: every headroom positive (min > 0); chunked: one negative
    hi, _ = bracketed_flip(at, 0.0, math.log(end), math.log1p(BANDWIDTH_TOLERANCE),
                           (_disaggregate_margins(sc, here), far_margin),
                           _min if want else _minus_min)
    flips = math.exp(hi)
    gbps = cl.inter_node.bandwidth_bytes_per_s * flips / 1e9
    if direction == "up":
        text = (f"{'disaggregation would pay' if to == 'disaggregate' else 'the verdict flips'} "
                f"with ≥ {_num(flips)}× the inter-node bandwidth ({_num(gbps)} GB/s per GPU "
                f"instead of {link}'s {_num(cl.inter_node.bandwidth_bytes_per_s / 1e9)})")
    else:
        text = (f"{'chunked prefill would win' if to == 'chunked-prefill' else 'the verdict flips'}"
                f" with ≤ {_num(flips)}× the inter-node bandwidth ({_num(gbps)} GB/s per GPU "
                f"instead of {link}'s {_num(cl.inter_node.bandwidth_bytes_per_s / 1e9)})")
    return Boundary(key=key, current=1.0, flips_at=flips, direction=direction, description=text,
                    kind="verdict", to=to)


def _min(v: np.ndarray) -> np.ndarray:
    return np.asarray(np.min(v, axis=-1))


def _minus_min(v: np.ndarray) -> np.ndarray:
    return np.asarray(-np.min(v, axis=-1))


def _disaggregate_margins(sc: Scenario, res: dict[str, np.ndarray]) -> np.ndarray:
    """How far the design point ``res`` (one point of ``design_points``) is inside the
    disaggregate verdict (smallest component > 0) or outside it (< 0): the log headrooms
    ``ln(limit/value)`` of the preconditions and ``ln((1 + gain)/(1 + min_disagg_gain))``
    (logs: the KV utilisation is inversely proportional to the link's bandwidth, so they are
    close to linear in the log multiplier the search moves along); NaN where undefined. A
    guide for the bandwidth search's interpolation only: the verdict itself always comes from
    ``res['disaggregate']``."""
    pol = sc.policy
    # (value, limit) with ln(limit/value) the headroom: the gain's is ln((1 + g)/(1 + min))
    pairs = [(1.0 + pol.min_disagg_gain, 1.0 + float(res["gain"][0])),
             (float(res["rounding_loss"][0]), pol.max_rounding_loss)]
    for value, limit in ((float(res["kv_utilization"][0]), pol.max_kv_link_utilization),
                         (float(res["kv_transfer_share_of_ttft"][0]),
                          pol.max_kv_transfer_share_of_ttft)):
        # NaN: not applicable (no KV link, no TTFT target): no constraint
        pairs.append((value, limit) if not math.isnan(value) else (0.0, 1.0))
    if len(sc.phases) > 1 and not sc.autoscaling:
        pairs.append((float(res["static_mix_loss"][0]), pol.max_static_mix_loss))
    value, limit = np.array(pairs).T
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(limit) - np.log(value)
    return np.where(np.isnan(out) | np.isneginf(out), np.nan, np.minimum(out, 1e3))


_RATE_GRID = 32
"""Scales per pass of a rate bracket's refinement (one vectorised evaluation per pass)."""
_RATE_PASSES = 4
"""Passes: the bracket shrinks 31× a pass, to ~1e-6 of its log-width after four."""
_RATE_SCAN = 96
"""Log-spaced scales across 1/RATE_RANGE…RATE_RANGE in the first evaluation."""


def _rate_verdicts(caps: Capacities, sc: Scenario, scales: np.ndarray) -> np.ndarray:
    """The many-point verdict (disaggregate?) with every phase's rate × each scale."""
    scales = np.asarray(scales, dtype=float)
    rates = scales[:, None] * np.array([ph.rate_rps for ph in sc.phases])[None, :]
    res = design_points(caps, np.full(scales.size, sc.cluster.gpus, dtype=np.int64), rates)
    return np.asarray(res["disaggregate"], dtype=bool)


def _rate_candidates(caps: Capacities, sc: Scenario) -> np.ndarray:
    """Scales to try first: a log grid over the range, and just either side of each plan's
    headroom (where a plan starts or stops meeting the SLOs: the verdict policy's flips)."""
    res = design_points(caps, np.array([sc.cluster.gpus], dtype=np.int64),
                        np.array([[ph.rate_rps for ph in sc.phases]]))
    heads = [float(res[f][0]) for f in ("colocated_headroom", "unchunked_headroom",
                                        "disaggregated_headroom")]
    near = [h * f for h in heads if h > 0 for f in (1 - 1e-9, 1 + 1e-9)]
    grid = np.exp(np.linspace(-math.log(RATE_RANGE), math.log(RATE_RANGE), _RATE_SCAN))
    scales = np.concatenate([grid, near, [1.0]])
    scales = scales[(scales >= 1 / RATE_RANGE) & (scales <= RATE_RANGE)]
    return unique_sorted(scales)


def rate_boundaries(sc: Scenario, verdict: str, caps: Capacities | None = None
                    ) -> tuple[Boundary, Boundary]:
    """The nearest rates above and below the workload's (every phase scaled together, shown
    as the peak phase's) at which the verdict flips, within RATE_RANGE× either way.

    The rates move the verdict through the plans' headrooms (a plan meets the SLOs while
    its goodput covers the rate: the verdict policy) and the KV link (utilisation grows with
    the rate carried); the gain and the mix loss do not move. One evaluation scans a log
    grid plus both sides of every headroom; the first bracket with the other verdict in each
    direction is refined by nested grids (``_RATE_PASSES`` × ``_RATE_GRID`` scales, both
    directions per evaluation) to ~1e-6 of its log-width; ``flips_at`` has the other verdict.
    """
    caps = caps or Capacities(sc)
    key = "traffic.rate_rps"
    peak = sc.phases[peak_index(sc.phases)].rate_rps
    want = verdict == VERDICTS[0]  # True: looking for disaggregate
    scales = _rate_candidates(caps, sc)
    flipped = _rate_verdicts(caps, sc, scales) == want
    brackets: dict[Direction, tuple[float, float] | None] = {}
    up = np.flatnonzero(flipped & (scales > 1.0))
    down = np.flatnonzero(flipped & (scales < 1.0))
    # (inside: the current verdict, outside: the other)
    brackets["up"] = ((float(scales[up[0] - 1]), float(scales[up[0]])) if up.size else None)
    brackets["down"] = ((float(scales[down[-1] + 1]), float(scales[down[-1]])) if down.size
                        else None)
    for _ in range(_RATE_PASSES):
        open_ = [(d, b) for d, b in brackets.items() if b is not None]
        if not open_:
            break
        grids = [np.exp(np.linspace(math.log(b[0]), math.log(b[1]), _RATE_GRID)) for _, b in open_]
        got = _rate_verdicts(caps, sc, np.concatenate(grids)) == want
        for n, ((d, _), grid) in enumerate(zip(open_, grids, strict=True)):
            hit = got[n * _RATE_GRID:(n + 1) * _RATE_GRID]
            k = int(np.argmax(hit))
            if k > 0 and hit[k]:
                brackets[d] = (float(grid[k - 1]), float(grid[k]))
    to = _other(verdict)
    out = []
    directions: tuple[Direction, Direction] = ("up", "down")
    for direction in directions:
        b = brackets[direction]
        if b is None:
            span = (f"{_num(peak)}–{_num(peak * RATE_RANGE)} req/s" if direction == "up"
                    else f"{_num(peak / RATE_RANGE)}–{_num(peak)} req/s")
            out.append(Boundary(key=key, current=peak, flips_at=None, direction=direction,
                                description=f"no rate in {span} changes the verdict",
                                kind="verdict", to=None))
            continue
        flips = peak * b[1]
        word = "above" if direction == "up" else "below"
        then = "disaggregation would pay" if to == "disaggregate" else "chunked prefill wins"
        out.append(Boundary(key=key, current=peak, flips_at=flips, direction=direction,
                            description=f"{word} {_num(flips)} req/s (now {_num(peak)}) {then}",
                            kind="verdict", to=to))
    return out[0], out[1]


def tpot_rate_boundary(sc: Scenario, m: ModelResult) -> Boundary | None:
    """The rate up to which chunked prefill keeps the TPOT SLO (kind 'slo')."""
    c = m.colocated
    if sc.slo.tpot_ms is None or c is None or c.interference is None:
        return None
    safe = c.interference.chunked_safe_rate_rps
    if safe is None:
        return None
    phase = next((p for p in sc.phases if p.name == m.colocated_phase), sc.phases[0])
    peak = sc.phases[peak_index(sc.phases)].rate_rps
    flips = safe * (peak / phase.rate_rps) if phase.rate_rps > 0 else safe
    where = f" in phase '{phase.name}'" if len(sc.phases) > 1 else ""
    if safe <= 0:
        text = (f"chunked prefill (TP{c.tensor_parallel}, token budget {c.chunk_tokens:,}) "
                f"misses the {_num(sc.slo.tpot_ms)} ms TPOT SLO at any rate{where}")
        return Boundary(key="traffic.rate_rps", current=peak, flips_at=None, direction="up",
                        description=text, kind="slo", to=None)
    # flips_at is the peak phase's rate (the key's); the text gives the binding phase's own
    text = (f"chunked prefill stays within the {_num(sc.slo.tpot_ms)} ms TPOT SLO up to "
            f"{_num(safe)} req/s{where} (now {_num(phase.rate_rps)})")
    return Boundary(key="traffic.rate_rps", current=peak, flips_at=flips,
                    direction="up" if flips >= peak else "down", description=text,
                    kind="slo", to=None)


def gain_boundary(sc: Scenario, verdict: str, gain: float | None,
                  caps: Capacities | None = None) -> Boundary | None:
    """When the preconditions hold, the required gain at which the verdict flips (None when
    no required gain flips it: the gain is undefined or not ahead, a precondition fails, or
    the verdict policy keeps the plan that alone meets the SLOs either side of it)."""
    if gain is None or not math.isfinite(gain) or gain <= 0:
        return None
    caps = caps or Capacities(sc)
    G = np.array([sc.cluster.gpus], dtype=np.int64)
    rates = np.array([[ph.rate_rps for ph in sc.phases]])
    res = design_points(caps, G, rates)
    if not all(bool(res[ok_field(r.id)][0]) for r in RULES):
        return None
    cur = sc.policy.min_disagg_gain
    to = _other(verdict)
    # the verdict just beyond the modelled gain, by the rules and the SLO policy
    beyond = gain * (1 + 1e-9) if verdict == VERDICTS[1] else gain * (1 - 1e-9)
    there = design_points(caps, G, rates, policy=replace(sc.policy, min_disagg_gain=beyond))
    if VERDICTS[int(bool(there["disaggregate"][0]))] != to:
        return None
    if verdict == VERDICTS[0]:
        text = (f"all preconditions hold: disaggregation would pay if a gain of "
                f"{gain * 100:.1f}% were enough (policy.min_disagg_gain {cur * 100:g}%)")
        return Boundary(key="policy.min_disagg_gain", current=cur, flips_at=gain, direction="down",
                        description=text, kind="verdict", to=to)
    text = (f"disaggregation's modelled gain is {gain * 100:.1f}%: a required gain above that "
            f"(now {cur * 100:g}%) would keep chunked prefill")
    return Boundary(key="policy.min_disagg_gain", current=cur, flips_at=gain, direction="up",
                    description=text, kind="verdict", to=to)


def verdict_boundaries(sc: Scenario, verdict: str, gain: float | None,
                       m: ModelResult | None = None, caps: Capacities | None = None
                       ) -> tuple[Boundary, ...]:
    """Every boundary above for the workload as given, whose ``verdict`` and ``gain`` the
    decision found (``m``: its evaluate() result, reused for the TPOT-safe rate, computed
    when not given; ``caps``: the scenario's capacity tables, e.g. the ones ``evaluate`` was
    given, shared by every search)."""
    caps = caps if caps is not None else Capacities(sc)
    if m is None:
        from advisor.core.plan.evaluate import evaluate

        m = evaluate(sc, caps)
    out: list[Boundary] = list(gpu_boundaries(sc, verdict, caps))
    bw = bandwidth_boundary(sc, verdict, caps)
    if bw is not None:
        out.append(bw)
    out += rate_boundaries(sc, verdict, caps)
    slo = tpot_rate_boundary(sc, m)
    if slo is not None:
        out.append(slo)
    g = gain_boundary(sc, verdict, gain, caps)
    if g is not None:
        out.append(g)
    return tuple(out)


def summary(boundaries: tuple[Boundary, ...]) -> str:
    """One sentence joining the boundaries that exist, for reports."""
    parts = [b.description for b in boundaries if b.flips_at is not None]
    return "; ".join(parts)


def searched(sc: Scenario, d: Decision, caps: Capacities | None = None) -> Decision:
    """The decision ``d`` of ``sc`` with its verdict boundaries and knife edges (``caps``: the
    capacity tables its model result was computed on, shared by every search)."""
    return with_boundaries(d, verdict_boundaries(sc, d.verdict, d.gain, d.model, caps))
