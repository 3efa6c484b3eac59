"""Per-instance capacities of a scenario, computed once and shared by every caller.

Per-instance capacities — colocated goodput per shape and token budget, prefill and decode
capacity per shape and phase — do not depend on the arrival rate. They depend on the cluster
size only through *which shapes exist* (TP up to the node, TP × PP while it fits), *which
link carries the KV* (intra-node while the cluster is one node) and two pool sizes: the
pooled prefill queue's (the prefill instances behind one router: the ideal split's,
:meth:`Capacities.prefill_pool_sizes`, and each integer split's own,
:meth:`Capacities.split_prefill_rates`) and the colocated prompt queue's (the instances the
router splits arrivals over, ``colocated.queue_instances``, tabulated on
:func:`colocated_pool_sizes`' grid). So cluster sizes are grouped by (regime, shape set)
(:meth:`Capacities.group_codes`); each :class:`CapacityGroup` is computed once, the
pool-size dependent goodputs once per (shape, pool size) over all groups
(:meth:`Capacities.prefetch_pooled`, :meth:`Capacities.prefetch_colocated`), and all of
them are reused for every cluster size and rate. ``evaluate`` (one cluster size),
``evaluate_points`` (many) and the boundary searches read the same tables, so they agree by
construction.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from advisor.core.arrays import unique_sorted
from advisor.core.colocated import CHUNK_CANDIDATES, max_rate_meeting, queue_instances
from advisor.core.disaggregated import (
    DecodeCapacity,
    PrefillCapacity,
    decode_capacity,
    prefill_capacity,
    prefill_goodputs,
)
from advisor.core.hardware import LinkSpec
from advisor.core.instance import Instance, StackedInstances
from advisor.core.kv_transfer import kv_nics, link_capacity_bytes_per_s
from advisor.core.plan.result_memo import ResultMemo
from advisor.core.plan.shapes import Shape, ep_sizes_upto, instance_shapes
from advisor.core.plan.split import PoolOption, PoolRates, constant_rates, ideal_split
from advisor.core.results import ExcludedInstance
from advisor.core.scenario import Scenario, TrafficPhase, instances_in_cluster

POOL_EXACT_SIZES = 64
"""Prefill pool sizes tabulated one by one (Erlang B's finite sum, docs/model.md §7)."""
POOL_STEPS_PER_DOUBLING = 16
"""Beyond them, pool sizes on a geometric grid of 2^(1/16) (4.4 % apart): a split of x
instances reads the largest size ≤ x (per-instance goodput grows with the pool, so this is
the conservative side; between neighbouring grid sizes past 64 it moves at most 0.41 % in
the example workloads and benchmarks/three-phase.yaml, 72 → 76 TP2 instances of its
long-prompt phase, and under 0.13 % in every other case)."""


def prefill_pool_grid(max_servers: int) -> np.ndarray:
    """The prefill pool sizes tabulated up to ``max_servers``: 1…64, then ⌊64·2^(j/16)⌋."""
    top = max(int(max_servers), 1)
    exact = np.arange(1, min(top, POOL_EXACT_SIZES) + 1, dtype=np.int64)
    if top <= POOL_EXACT_SIZES:
        return exact
    steps = int(np.ceil(np.log2(top / POOL_EXACT_SIZES) * POOL_STEPS_PER_DOUBLING)) + 1
    geo = np.floor(POOL_EXACT_SIZES * 2.0 ** (np.arange(1, steps + 1)
                                             / POOL_STEPS_PER_DOUBLING)).astype(np.int64)
    return unique_sorted(np.concatenate([exact, geo[geo <= top], [top]]))


COLOCATED_EXACT_SIZES = 32
"""Colocated pool sizes tabulated one by one."""
COLOCATED_STEPS_PER_DOUBLING = 4
"""Beyond them, colocated pool sizes on a 2^(1/4) grid (19 % apart). The per-instance colocated
goodput is non-decreasing in the pool size (tests/core/test_colocated_pool.py), so reading
the largest grid size ≤ n is the conservative side; the loss against the exact size is at
most 0.31 % in benchmarks/three-phase.yaml at 1,024 GPUs (45 TP8×PP2 instances read 38) and
0.12 % in the examples (n from 1 to 1,024, every shape and phase). The 64 exact sizes and
16 steps per doubling used before cost 2.75× the tables over 1…8,192 instances, which a
boundary search over large clusters asks for at once."""


def colocated_pool_sizes(counts: np.ndarray) -> np.ndarray:
    """The pool size the colocated goodput tables hold for ``counts`` instances: the count
    itself up to ``COLOCATED_EXACT_SIZES``, beyond it the largest size ≤ it of the
    2^(1/``COLOCATED_STEPS_PER_DOUBLING``) grid from there (``colocated.queue_instances`` is
    the exact size)."""
    n = np.asarray(queue_instances(counts), dtype=float)
    with np.errstate(divide="ignore"):
        j = np.floor(np.log2(np.maximum(n, 1.0) / COLOCATED_EXACT_SIZES)
                     * COLOCATED_STEPS_PER_DOUBLING + 1e-9)
    grid = np.floor(COLOCATED_EXACT_SIZES * 2.0 ** (j / COLOCATED_STEPS_PER_DOUBLING))
    out: np.ndarray = np.where(n <= COLOCATED_EXACT_SIZES, n, np.minimum(grid, n))
    return out


def seconds(ms: float | None) -> float | None:
    """Milliseconds (an SLO target) as seconds; None stays None."""
    return None if ms is None else ms / 1000.0


def kv_bytes_per_request(inst: Instance, phase: TrafficPhase) -> float:
    """KV bytes one mean-length prompt ships from a prefill instance (every TP rank its
    shard, ``kv_bytes_per_token_wire``)."""
    return phase.prompt_tokens.mean * inst.kv_bytes_per_token_wire


def link_rate_per_prefill_gpu(shapes: Sequence[Shape], phase: TrafficPhase,
                              link: LinkSpec) -> float:
    """Requests/s one prefill GPU's share of the NICs can ship over ``link`` (the KV-link
    floor on the prefill GPUs): bytes per request per GPU at the shape that ships the fewest
    (TP duplication differs per shape; the ideal split uses the best one). 0 without
    shapes."""
    if not shapes:
        return 0.0
    wire = min(kv_bytes_per_request(s.instance, phase) / s.gpus for s in shapes)
    return float(link_capacity_bytes_per_s(link, 1.0)) / max(wire * 1.0, 1.0)


def prefill_sizing_fraction(capacities: Sequence[PrefillCapacity], shapes: Sequence[Shape],
                            decode: Sequence[PoolOption], link_rate: float,
                            compatible: np.ndarray | None = None) -> float:
    """Prefill share of the GPUs that sizes the pooled prefill queue: the ideal split of the
    prefill capacities at full utilisation against the decode goodputs."""
    full = [PoolOption(s.gpus, c.max_rate_rps, s.label)
            for s, c in zip(shapes, capacities, strict=True)]
    return ideal_split(full, list(decode), link_rate, compatible)[1]


def compatible_pairs(shapes: Sequence[Shape]) -> np.ndarray | None:
    """(prefill shape, decode shape) pairs the engine can run as one P/D deployment
    (``EngineSpec.can_pair``: equal attention TP unless it supports different TP across
    pools); None when every pair can."""
    if not shapes:
        return None
    engine = shapes[0].instance.engine
    tp = [s.instance.tensor_parallel for s in shapes]
    ok = np.array([[engine.can_pair(a, b) for b in tp] for a in tp], dtype=bool)
    return None if ok.all() else ok


def colocated_goodputs(sc: Scenario, shapes: Sequence[Shape], chunks: np.ndarray | None,
                       pools: np.ndarray) -> np.ndarray:
    """(shapes, phases, budgets) per-instance colocated goodput of each shape with its
    prompt-queue pool size ``pools`` (one per shape), every token budget in ``chunks``
    (None: unchunked, one column), one vectorised search per phase."""
    stack = StackedInstances([s.instance for s in shapes], ndim=3)
    per_phase: list[np.ndarray] = []
    solved: dict[tuple[int, tuple[float, ...]], np.ndarray] = {}
    for ph, alias in zip(sc.phases, pooled_phase_aliases(sc.phases), strict=True):
        seqs = np.array([s.max_sequences[ph.name] for s in shapes], dtype=float)
        # a phase equal to an earlier one but for its name, share and rate (and with the
        # same batch limits) has the same goodput table: the rate is what the search solves
        key = (alias, tuple(seqs.tolist()))
        if key not in solved:
            g = max_rate_meeting(stack, seqs, ph, chunks, sc.slo.quantile,
                                 seconds(sc.slo.ttft_ms), seconds(sc.slo.tpot_ms),
                                 instances=pools, router=sc.router)
            solved[key] = np.asarray(g, dtype=float).reshape(len(shapes), -1)
        per_phase.append(solved[key])
    return np.stack(per_phase, axis=1)


@dataclass(kw_only=True)
class PhaseCapacities:
    """One phase's per-shape capacities in a :class:`CapacityGroup`."""

    prefill: list[PrefillCapacity]
    """Per shape, with a single-instance prefill queue (when ``pooled``, the goodput of
    ``Capacities.pooled_prefill`` replaces theirs, which is then the raw capacity)."""
    decode: list[DecodeCapacity]
    prefill_rates: np.ndarray
    """Single-queue prefill goodput per shape, req/s."""
    decode_rates: np.ndarray
    """Decode goodput per shape, req/s."""
    link_rate: float
    """KV link rate per prefill GPU (:func:`link_rate_per_prefill_gpu`)."""
    ideal_per_gpu: float
    """Of the single-queue split (the final one unless ``pooled``)."""
    mean_bytes: np.ndarray
    p95_bytes: np.ndarray
    own_prefill_s: np.ndarray
    """Prefill pass of a p95 prompt, per shape (the exposed-transfer overlap)."""
    pooled: bool = False
    """Whether prefill goodputs are redone for pooled queues sized from the cluster (a TTFT
    SLO and a positive ideal prefill fraction)."""
    prefill_fraction: float = 0.0
    pairs: tuple[np.ndarray, np.ndarray] = field(
        default_factory=lambda: (np.zeros(0, np.int64), np.zeros(0, np.int64)))
    """(prefill index, decode index) of the shape pairs with non-zero rates (prefill-major;
    with pooled queues every prefill shape, whose rate depends on the cluster size)."""


@dataclass(kw_only=True)
class CapacityGroup:
    """Capacities shared by every cluster size with the same shape set and KV link."""

    shapes: list[Shape]
    excluded: list[ExcludedInstance]
    gpus: np.ndarray
    """GPUs per instance of each shape."""
    link: LinkSpec
    """The KV link (``Cluster.kv_link``)."""
    phases: list[PhaseCapacities]
    chunks: np.ndarray | None
    """Token budgets searched (the pinned one, or ``CHUNK_CANDIDATES``); None without shapes."""
    kv_nics: np.ndarray | None = None
    """NICs one sequence's KV crosses the link through on an instance of each shape (its
    share of the node's NICs; DP attention: one rank's); None = gpus."""
    kv_bytes_per_token: np.ndarray | None = None
    """Wire bytes per prompt token a decode instance of each shape receives (its TP
    duplication); None = not tabulated."""
    compatible: np.ndarray | None = None
    """(prefill shape, decode shape) pairs the engine can deploy (:func:`compatible_pairs`);
    None = all."""

    def wire_bytes_per_token(self, decode: np.ndarray) -> np.ndarray:
        """Wire bytes per prompt token of a split whose decode shape is ``decode``
        (``disaggregated.kv_path``)."""
        assert self.kv_bytes_per_token is not None
        return np.asarray(self.kv_bytes_per_token[decode], dtype=float)

    def pair_nics(self, prefill: np.ndarray, decode: np.ndarray) -> np.ndarray:
        """NICs a split's KV transfer runs over: the narrower of the prefill shape's sending
        and the decode shape's receiving NICs (``disaggregated.kv_path``)."""
        nics = self.gpus.astype(float) if self.kv_nics is None else self.kv_nics
        return np.asarray(np.minimum(nics[prefill], nics[decode]), dtype=float)


def _stage_link(inst: Instance) -> LinkSpec | None:
    """The link an instance's pipeline stages talk over (None: one stage, no such link)."""
    return inst.inter_link if inst.pipeline_stages > 1 else None


class Capacities:
    """Capacity tables for one scenario (its cluster size and rates are free to vary).

    The per-instance caches are keyed by the instance shape, the phase and every link the
    entry depends on (the KV link of prefill entries, the pipeline-stage link of instances
    spanning nodes), so :meth:`with_inter_node` can share them between scenarios that differ
    only in the inter-node link.
    """

    def __init__(self, sc: Scenario, shared: Capacities | None = None) -> None:
        self.sc = sc
        self._groups: dict[int, CapacityGroup] = {}
        self._derived: dict[Hashable, Capacities] = {}
        self._results = ResultMemo()
        self._pooled_phase = pooled_phase_aliases(sc.phases)
        """Per phase, the first phase whose pooled prefill tables it shares (#34)."""
        if shared is None:
            self._coloc: dict[tuple[Any, ...], tuple[np.ndarray, np.ndarray]] = {}
            self._prefill: dict[tuple[Any, ...], PrefillCapacity] = {}
            self._decode: dict[tuple[Any, ...], DecodeCapacity] = {}
            self._pooled: dict[tuple[Any, ...], tuple[np.ndarray, np.ndarray]] = {}
        else:
            self._coloc, self._prefill = shared._coloc, shared._prefill
            self._decode, self._pooled = shared._decode, shared._pooled

    def derived(self, key: Hashable, build: Callable[[], Capacities]) -> Capacities:
        """The capacities of a scenario derived from this one by its traffic alone (a drift
        corner), built by ``build`` on the first call with ``key`` and the same object on every
        later one, so that searches evaluating many points fill its tables once."""
        if key not in self._derived:
            self._derived[key] = build()
        return self._derived[key]

    def with_inter_node(self, link: LinkSpec) -> Capacities:
        """The capacities of this scenario with ``link`` as its inter-node link, sharing every
        cached entry that does not depend on it (instances within one node, decode and
        colocated capacities of single-stage instances)."""
        sc = self.sc
        out = Capacities(replace(sc, cluster=replace(sc.cluster, inter_node=link)), self)
        # the derived scenarios differ only in traffic: theirs with the same link, sharing too
        out._derived = {key: caps.with_inter_node(link) for key, caps in self._derived.items()}
        return out

    @property
    def results(self) -> ResultMemo:
        """``evaluate``'s results on this scenario kept across evaluations at several rates,
        one typed memo per kind (``result_memo``). Never shared (links differ under
        :meth:`with_inter_node`)."""
        return self._results

    # ---- groups of cluster sizes --------------------------------------------------------
    def group_codes(self, gpus: np.ndarray) -> np.ndarray:
        """A code per cluster size: equal codes share shapes and KV link (a group)."""
        cl = self.sc.cluster
        G = np.asarray(gpus, dtype=np.int64)
        gpn = cl.gpus_per_node
        # G is the array of GPU counts (ruff's SIM300 takes the capital for a constant)
        multi = (G > gpn) if cl.inter_node is not None else np.zeros(G.shape, dtype=bool)  # noqa: SIM300
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
        n_ep = np.zeros(G.shape, dtype=np.int64)  # expert-parallel sizes that fit (MoE only)
        for size in ep_sizes_upto(self.sc, int(G.max(initial=0))):
            n_ep += (size <= G) & (multi | (size <= gpn))
        return n_ep * 1_000_000 + multi.astype(np.int64) * 10_000 + n_tp * 100 + n_pp

    def group_at(self, gpus: int) -> CapacityGroup:
        """The group of one cluster size."""
        code = int(self.group_codes(np.array([gpus], dtype=np.int64))[0])
        return self.group(code, gpus)

    def group(self, code: int, gpus: int) -> CapacityGroup:
        """The group ``code`` (from :meth:`group_codes`), built at ``gpus`` GPUs, a cluster
        size of the group, the first time it is asked for."""
        if code in self._groups:
            return self._groups[code]
        sc = self.sc
        cluster = sc.cluster.with_gpus(gpus)
        shapes, excluded = instance_shapes(replace(sc, cluster=cluster))
        link = cluster.kv_link
        compatible = compatible_pairs(shapes)
        phases = []
        for k, ph in enumerate(sc.phases):
            raw = [self._prefill_cap(s, k, ph, link, with_slo=False) for s in shapes]
            dc = [self._decode_cap(s, k, ph) for s in shapes]
            decode = [PoolOption(s.gpus, c.goodput_rps, s.label)
                      for s, c in zip(shapes, dc, strict=True)]
            link_rate = link_rate_per_prefill_gpu(shapes, ph, link)
            frac = prefill_sizing_fraction(raw, shapes, decode, link_rate, compatible)
            pooled = sc.slo.ttft_ms is not None and frac > 0
            # a single-queue TTFT goodput only where the queue is not pooled (raw = the
            # capacity without a TTFT SLO)
            pc = (raw if pooled or sc.slo.ttft_ms is None
                  else [self._prefill_cap(s, k, ph, link, with_slo=True) for s in shapes])
            prefill = [PoolOption(s.gpus, c.goodput_rps, s.label)
                       for s, c in zip(shapes, pc, strict=True)]
            per_gpu, _, _, _ = ideal_split(prefill, decode, link_rate, compatible)
            s95 = ph.prompt_tokens.quantile(0.95)
            # pooled: prefill rates change with the cluster size; zero ones are skipped per size
            ii = [i for i, o in enumerate(prefill) if pooled or o.rate_rps > 0]
            jj = [j for j, o in enumerate(decode) if o.rate_rps > 0]
            pairs = (np.array([i for i in ii for j in jj
                               if compatible is None or compatible[i, j]], dtype=np.int64),
                     np.array([j for i in ii for j in jj
                               if compatible is None or compatible[i, j]], dtype=np.int64))
            phases.append(PhaseCapacities(
                prefill=pc, decode=dc,
                prefill_rates=np.array([o.rate_rps for o in prefill], dtype=float),
                decode_rates=np.array([o.rate_rps for o in decode], dtype=float),
                link_rate=float(link_rate), ideal_per_gpu=float(per_gpu),
                mean_bytes=np.array([kv_bytes_per_request(s.instance, ph) for s in shapes],
                                    dtype=float),
                p95_bytes=np.array([s95 * s.instance.kv_bytes_per_token_wire for s in shapes],
                                   dtype=float),
                own_prefill_s=np.array([float(s.instance.prefill_time_s(
                    ph.computed_prompt_tokens.quantile(0.95))) for s in shapes], dtype=float),
                pooled=pooled, prefill_fraction=float(frac), pairs=pairs))
        chunks = (np.array([float(sc.chunk_tokens)] if sc.chunk_tokens else CHUNK_CANDIDATES)
                  if shapes else None)
        grp = CapacityGroup(shapes=shapes, excluded=excluded,
                            gpus=np.array([s.gpus for s in shapes], dtype=np.int64),
                            link=link, phases=phases, chunks=chunks,
                            kv_nics=kv_nics(link,
                                            np.array([s.instance.kv_sender_gpus for s in shapes],
                                                   dtype=float)),
                            kv_bytes_per_token=np.array(
                                [s.instance.kv_bytes_per_token_wire for s in shapes],
                                dtype=float), compatible=compatible)
        self._groups[code] = grp
        return grp

    # ---- prefill and decode -------------------------------------------------------------
    def _prefill_cap(self, shape: Shape, k: int, ph: TrafficPhase, link: LinkSpec,
                     with_slo: bool) -> PrefillCapacity:
        """One prefill instance alone: its capacity, and its TTFT-SLO goodput ``with_slo``."""
        key = (shape.label, k, link, _stage_link(shape.instance), with_slo)
        if key not in self._prefill:
            ttft = seconds(self.sc.slo.ttft_ms) if with_slo else None
            self._prefill[key] = prefill_capacity(shape.instance, ph, self.sc.slo.quantile,
                                                  ttft, link)
        return self._prefill[key]

    def _decode_cap(self, shape: Shape, k: int, ph: TrafficPhase) -> DecodeCapacity:
        key = (shape.label, k, _stage_link(shape.instance))
        if key not in self._decode:
            self._decode[key] = decode_capacity(shape.instance, shape.max_sequences[ph.name],
                                                ph, seconds(self.sc.slo.tpot_ms))
        return self._decode[key]

    def prefill_pool_sizes(self, grp: CapacityGroup, k: int, gpus: np.ndarray) -> np.ndarray:
        """(n, shapes) prefill pool sizes: ``max(1, ⌊G·f⌋ // g)`` instances per shape, f the
        single-queue ideal prefill fraction (the limit a large pooled queue approaches)."""
        f = grp.phases[k].prefill_fraction
        G = np.asarray(gpus, dtype=np.int64)
        return np.asarray(
            np.maximum(1, np.floor_divide(G[:, None] * f, grp.gpus[None, :]).astype(np.int64)))

    def prefetch_pooled(self, work: Sequence[tuple[CapacityGroup, np.ndarray]],
                        phase: int | None = None) -> None:
        """Run the pooled prefill searches of several groups together: one vectorised search
        per (shape, phase, link) over every pool size any of them needs (the ideal split's,
        and the grid of :func:`prefill_pool_grid` up to the largest split's); of one
        ``phase`` only when given (a caller reading one phase need not check all of them:
        with 24 phases that check was most of a recommendation, #34)."""
        sc = self.sc
        need: dict[tuple[Any, ...], tuple[Instance, int, LinkSpec, list[np.ndarray]]] = {}
        for grp, G in work:
            grid = self._pool_grid(grp, G)
            for k, pc in enumerate(grp.phases):
                if not pc.pooled or not grp.shapes or (phase is not None and k != phase):
                    continue
                servers = self.prefill_pool_sizes(grp, k, G)
                for j, shape in enumerate(grp.shapes):
                    alias = self._pooled_phase[k]
                    base = (shape.label, alias, grp.link, _stage_link(shape.instance))
                    cols = need.setdefault(base, (shape.instance, alias, grp.link, []))[3]
                    # a split has at most G // g instances of this shape
                    cols.extend([servers[:, j], grid[grid <= max(int(G.max()) // shape.gpus, 1)]])
        for base, (inst, k, link, cols) in need.items():
            missing = _missing(cols, self._pooled.get(base))
            if missing.size == 0:
                continue
            got = prefill_goodputs(inst, sc.phases[k], sc.slo.quantile, seconds(sc.slo.ttft_ms),
                                   link, missing, router=sc.router)
            self._pooled[base] = _merged(self._pooled.get(base), missing, got)

    def pooled_prefill(self, grp: CapacityGroup, k: int, gpus: np.ndarray) -> np.ndarray:
        """(n, shapes) prefill goodput per instance, req/s, with the pool sizes of
        :meth:`prefill_pool_sizes` at each cluster size."""
        self.prefetch_pooled([(grp, gpus)], k)
        servers = self.prefill_pool_sizes(grp, k, gpus)
        out = np.zeros(servers.shape)
        for j, shape in enumerate(grp.shapes):
            vals, res = self._pooled[(shape.label, self._pooled_phase[k], grp.link,
                                      _stage_link(shape.instance))]
            out[:, j] = res[np.searchsorted(vals, servers[:, j])]
        return out

    def _pool_grid(self, grp: CapacityGroup, gpus: np.ndarray) -> np.ndarray:
        """The pool sizes a split of the group can have at cluster sizes ``gpus``."""
        G = np.asarray(gpus, dtype=np.int64)
        if not grp.shapes or G.size == 0:
            return np.ones(1, dtype=np.int64)
        return prefill_pool_grid(int(G.max()) // int(grp.gpus.min()))

    def split_prefill_rates(self, grp: CapacityGroup, k: int, gpus: np.ndarray) -> PoolRates:
        """Phase k's prefill goodput per instance by the split's own pool size (every split
        of x prefill instances of a shape at cluster sizes ``gpus``): a (shapes, sizes)
        table over :func:`prefill_pool_grid`, or rates that do not depend on the pool size
        when the queue is not pooled (no TTFT SLO)."""
        pc = grp.phases[k]
        if not (pc.pooled and grp.shapes):
            return constant_rates(pc.prefill_rates)
        G = np.asarray(gpus, dtype=np.int64)
        self.prefetch_pooled([(grp, G)], k)
        grid = self._pool_grid(grp, G)
        out = np.zeros((len(grp.shapes), grid.size))
        for j, shape in enumerate(grp.shapes):
            vals, res = self._pooled[(shape.label, self._pooled_phase[k], grp.link,
                                      _stage_link(shape.instance))]
            top = grid[grid <= max(int(G.max()) // shape.gpus, 1)]
            out[j, :top.size] = res[np.searchsorted(vals, top)]
            out[j, top.size:] = out[j, top.size - 1]       # sizes no split of it reaches
        # per-instance goodput never falls as the pool grows (guards the searches' grid noise)
        return PoolRates(grid, np.maximum.accumulate(out, axis=1))

    def prefill_rates(self, grp: CapacityGroup, k: int, gpus: np.ndarray) -> np.ndarray:
        """Phase k's prefill goodput per instance at the *ideal* split's pool size: (n, shapes)
        from pooled queues at each cluster size, or the (shapes,) single-queue rates when the
        queue is not pooled. Integer splits use :meth:`split_prefill_rates`."""
        if grp.phases[k].pooled and grp.shapes:
            return self.pooled_prefill(grp, k, gpus)
        return grp.phases[k].prefill_rates

    # ---- colocated ----------------------------------------------------------------------
    def colocated_pools(self, grp: CapacityGroup, gpus: np.ndarray) -> np.ndarray:
        """(n, shapes) pool sizes of the colocated prompt queue at each cluster size."""
        G = np.asarray(gpus, dtype=np.int64)
        counts = instances_in_cluster(G[:, None], grp.gpus[None, :],
                                      self.sc.cluster.gpus_per_node)
        return colocated_pool_sizes(counts)

    def prefetch_colocated(self, work: Sequence[tuple[CapacityGroup, np.ndarray]]) -> None:
        """Run the colocated goodput searches of several groups together: one vectorised
        search per phase over every (shape, queue pool size) any of them needs (the prompt
        queue depends on the pool size the router splits arrivals over, read on
        :func:`colocated_pool_sizes`' grid), for every token budget and for whole prompts."""
        need: dict[tuple[Any, ...], tuple[Shape, np.ndarray | None, list[np.ndarray]]] = {}
        for grp, G in work:
            if not grp.shapes or grp.chunks is None:
                continue
            pools = self.colocated_pools(grp, G)
            for j, shape in enumerate(grp.shapes):
                for budgets in (grp.chunks, None):  # chunked, then whole prompts
                    key = (shape.label, _stage_link(shape.instance), budgets is not None)
                    need.setdefault(key, (shape, budgets, []))[2].append(pools[:, j])
        for chunked in (True, False):
            todo = []
            for key, (shape, chunks, cols) in need.items():
                missing = _missing(cols, self._coloc.get(key))
                if key[2] is chunked and missing.size:
                    todo.append((key, shape, chunks, missing))
            if not todo:
                continue
            chunks = todo[0][2]
            shapes = [shape for _, shape, _, miss in todo for _ in miss]
            pools = np.concatenate([miss for *_, miss in todo])
            goods = colocated_goodputs(self.sc, shapes, chunks, pools)  # (combos, phases, chunks)
            start = 0
            for key, _, _, miss in todo:
                self._coloc[key] = _merged(self._coloc.get(key), miss,
                                           goods[start:start + miss.size])
                start += miss.size

    def colocated(self, grp: CapacityGroup, gpus: np.ndarray, chunked: bool = True
                  ) -> np.ndarray:
        """(phases, n, shapes, budgets) per-instance colocated goodput, req/s, at each
        cluster size's prompt-queue pool size: one column per token budget of ``grp.chunks``,
        or (``chunked`` False) one column prefilling whole prompts."""
        G = np.asarray(gpus, dtype=np.int64)
        self.prefetch_colocated([(grp, G)])
        pools = self.colocated_pools(grp, G)
        assert grp.chunks is not None
        columns = grp.chunks.size if chunked else 1
        out = np.zeros((len(self.sc.phases), G.size, len(grp.shapes), columns))
        for j, shape in enumerate(grp.shapes):
            vals, res = self._coloc[(shape.label, _stage_link(shape.instance), chunked)]
            out[:, :, j, :] = res[np.searchsorted(vals, pools[:, j])].transpose(1, 0, 2)
        return out


def pooled_phase_aliases(phases: Sequence[TrafficPhase]) -> tuple[int, ...]:
    """Per phase, the index of the first phase with the same pooled-prefill inputs: equal in
    every field but the name, the share and the rate (a pooled prefill search reads the prompt
    lengths, the prefix-cache hit rate and the burstiness; the rate is what it solves for), so
    phases that differ only in their rates, as hours of one day often do, share one table
    (#34)."""
    keys = [replace(ph, name="", share=0.0, rate_rps=0.0) for ph in phases]
    return tuple(next(j for j in range(k + 1) if keys[j] == keys[k]) for k in range(len(keys)))


def _missing(needed: Sequence[np.ndarray], known: tuple[np.ndarray, np.ndarray] | None
             ) -> np.ndarray:
    """The distinct pool sizes in ``needed`` that the (sizes, results) table ``known`` lacks."""
    values = unique_sorted(np.concatenate(needed))
    if known is None:
        return values
    sizes = known[0]  # sorted and distinct (``_merged``): a binary search, not a set difference
    at = np.minimum(np.searchsorted(sizes, values), sizes.size - 1)
    return np.asarray(values[sizes[at] != values])


def _merged(known: tuple[np.ndarray, np.ndarray] | None, sizes: np.ndarray,
            results: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The table ``known`` with ``sizes`` → ``results`` added, sorted by size (for
    ``np.searchsorted`` lookups)."""
    if known is not None:
        sizes, results = np.concatenate([known[0], sizes]), np.concatenate([known[1], results])
    order = np.argsort(sizes, kind="stable")
    return sizes[order], results[order]
