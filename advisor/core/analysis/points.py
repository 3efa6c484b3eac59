"""Many design points at once: the headline metrics of ``evaluate`` + ``decide``.

A design point is a cluster size and per-phase arrival rates of one scenario. For each,
:func:`design_points` gives what ``decide(sc, evaluate(sc))`` decides — the verdict, both
architectures' goodput per GPU and headroom, the gain, the rounding loss, the KV link
utilisation, which preconditions fail, the colocated plan and the split shown — without
building the detailed plans:

* capacities and goodput tables come from :class:`~advisor.core.plan.capacities.Capacities`
  (the same tables ``evaluate`` reads), grouped by shape set;
* per cluster size, each phase's best integer split (``split.best_splits``) and, with
  several phases, the best static split (``static.static_allocation``);
* per point (rates enter only here), goodput/rate headrooms, the colocated plan choice
  (``evaluate``'s order: worst-phase headroom, then goodput per GPU), the KV utilisation and
  exposed transfer, and the preconditions and verdict by the rule engine's own tests
  (``advisor.core.verdict.rules``).

``tests/analysis/test_points.py`` checks every field against ``evaluate`` + ``assess`` on
generated workloads.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from advisor.core.arrays import unique_sorted
from advisor.core.kv_transfer import (
    link_capacity_bytes_per_s,
    link_utilization,
    transfer_seconds,
)
from advisor.core.plan.best import best_colocated
from advisor.core.plan.capacities import Capacities, CapacityGroup
from advisor.core.plan.drift import corner_capacities, drift_loss
from advisor.core.plan.split import PoolRates, best_splits, ideal_goodput_per_gpu
from advisor.core.plan.static import static_allocation
from advisor.core.scenario import Policy, Scenario, instances_in_cluster
from advisor.core.verdict.rules import RULES, Measures, judge, ok_field


class PointsError(ValueError):
    """Design points the scenario cannot be evaluated at."""


FIELDS = ("disaggregate", "colocated_goodput_per_gpu", "disaggregated_goodput_per_gpu",
          "colocated_headroom", "disaggregated_headroom", "gain", "rounding_loss",
          "kv_utilization", "kv_transfer_share_of_ttft", "static_mix_loss",
          *(ok_field(r.id) for r in RULES), "colocated_tensor_parallel",
          "colocated_instances", "colocated_chunk_tokens", "prefill_gpus", "decode_gpus",
          "ideal_gain", "mix_loss", "deciding_rule", "unchunked_goodput_per_gpu",
          "unchunked_headroom", "recommended", "slo_met")
"""``<rule>_ok``: each precondition's reported outcome (``rules.ok_field``); ``gain``: over
the best colocated plan, chunked or not; ``ideal_gain``: the ideal (fractional) split's;
``mix_loss``: what traffic-mix measured (the static loss across phases, or one phase's loss
across the assumed drift band); ``deciding_rule``: index into ``rules.DECIDING_RULES``;
``recommended``: index into ``rules.PLANS``; ``slo_met``: the recommended plan carries the
rate within the SLOs (every phase's headroom ≥ 1)."""


def design_points(caps: Capacities, gpus: np.ndarray, rates: np.ndarray,
                  progress: Callable[[int], None] | None = None,
                  policy: Policy | None = None) -> dict[str, np.ndarray]:
    """The :data:`FIELDS` of design points of ``caps.sc``: cluster sizes ``gpus`` (n,) with
    per-phase arrival rates ``rates`` (n, phases); ``progress(count)`` after each group;
    ``policy``: thresholds other than the scenario's (the capacities do not depend on them,
    only the rules' verdict does)."""
    G = np.asarray(gpus, dtype=np.int64).ravel()
    rates = np.asarray(rates, dtype=float)
    cl = caps.sc.cluster
    n = G.size
    out = {
        "disaggregate": np.zeros(n, dtype=bool),
        "colocated_goodput_per_gpu": np.zeros(n), "disaggregated_goodput_per_gpu": np.zeros(n),
        "colocated_headroom": np.zeros(n), "disaggregated_headroom": np.zeros(n),
        "gain": np.full(n, np.nan), "rounding_loss": np.ones(n),
        "kv_utilization": np.full(n, np.nan), "kv_transfer_share_of_ttft": np.full(n, np.nan),
        "static_mix_loss": np.zeros(n), **{ok_field(r.id): np.zeros(n, dtype=bool) for r in RULES},
        "colocated_tensor_parallel": np.zeros(n, dtype=np.int64),
        "colocated_instances": np.zeros(n, dtype=np.int64),
        "colocated_chunk_tokens": np.zeros(n, dtype=np.int64),
        "prefill_gpus": np.zeros(n, dtype=np.int64), "decode_gpus": np.zeros(n, dtype=np.int64),
        "ideal_gain": np.full(n, np.nan), "mix_loss": np.zeros(n),
        "deciding_rule": np.zeros(n, dtype=np.int64), "unchunked_goodput_per_gpu": np.zeros(n),
        "unchunked_headroom": np.zeros(n), "recommended": np.zeros(n, dtype=np.int64),
        "slo_met": np.zeros(n, dtype=bool),
    }
    if n == 0:
        return out
    # G is the array of GPU counts (ruff's SIM300 takes the capital for a constant)
    if cl.inter_node is None and (G > cl.gpus_per_node).any():  # noqa: SIM300
        raise PointsError(f"{int(G.max())} GPUs span several {cl.gpus_per_node}-GPU nodes, but "
                         "the workload has no cluster.inter_node link")
    codes = caps.group_codes(G)
    work = []
    for code in unique_sorted(codes):
        idx = np.flatnonzero(codes == code)
        work.append((caps.group(int(code), int(G[idx].min())), idx))
    caps.prefetch_pooled([(grp, unique_sorted(G[idx])) for grp, idx in work])
    caps.prefetch_colocated([(grp, unique_sorted(G[idx])) for grp, idx in work])
    sc = caps.sc
    drifts = (corner_capacities(caps, (0,)) if len(sc.phases) == 1 and not sc.autoscaling
              else [])
    for grp, idx in work:
        code = int(codes[idx[0]])
        corners = [(dc, dc.group(code, int(G[idx].min()))) for dc in drifts]
        _group_points(caps, grp, G[idx], rates[idx], idx, out, corners, policy)
        if progress is not None:
            progress(idx.size)
    return out


def _group_points(caps: Capacities, grp: CapacityGroup, G: np.ndarray, rates: np.ndarray,
                  idx: np.ndarray, out: dict[str, np.ndarray],
                  corners: list[tuple[Capacities, CapacityGroup]],
                  policy: Policy | None) -> None:
    sc = caps.sc
    cl = sc.cluster
    pol = policy or sc.policy
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
    prefill_rates: list[PoolRates] = []
    ideal = np.zeros((ug.size, K))
    for k in range(K):
        pc = grp.phases[k]
        rates_k = caps.prefill_rates(grp, k, ug)     # the ideal split's pool: (u, S), or (S,)
        if rates_k.ndim == 2:
            ideal[:, k] = ideal_goodput_per_gpu(grp.gpus, rates_k, pc.decode_rates,
                                                pc.link_rate, grp.compatible)
        else:
            ideal[:, k] = pc.ideal_per_gpu
        own = caps.split_prefill_rates(grp, k, ug)   # each split's own pool
        prefill_rates.append(own)
        pi, pj = pc.pairs
        if pi.size == 0:
            continue
        sp = best_splits(ug, grp.gpus[pi], own.take(pi), grp.gpus[pj], pc.decode_rates[pj],
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
            ug, grp.gpus, prefill_rates, [pc.decode_rates for pc in grp.phases],
            [pc.link_rate for pc in grp.phases], [d_good[:, k] for k in range(K)], shares, gpn,
            known=[(d_pre[:, k], d_dec[:, k], d_x[:, k]) for k in range(K)],
            compatible=grp.compatible)
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

    # rounding loss: the first phase with the largest; gpu-scale is judged with the gains
    lp = loss[inv]
    worst = np.argmax(lp, axis=1)
    out["rounding_loss"][idx] = lp[rows, worst]
    has_split = np.asarray(exists[inv].all(axis=1), dtype=bool)
    smallest = int(grp.gpus.min()) if S > 0 else 0
    # a model that fits no shape has no split (the cause is its size), not "not applicable"
    applicable = (np.greater_equal(G, 2 * smallest) if S > 0
                  else np.ones(G.size, dtype=bool))
    ideal_head = (ideal_total[inv] / r).min(axis=1)
    split_head = (d_good[inv] / r).min(axis=1)

    # kv-bandwidth over the phases that have a split: the split the verdict judges (the
    # static one when pools are static across phases, else each phase's best), each over its
    # pair's KV route (disaggregated.kv_path: the decode shape's wire bytes, the narrower
    # side's NICs)
    util = np.full((G.size, K), -np.inf)
    tms = np.full((G.size, K), -np.inf)
    link = grp.link
    layer_wise = sc.engine.kv_transfer.layer_wise
    static_here = (use_static & s_found[inv]) if st is not None else np.zeros(G.size, bool)
    for k in range(K):
        pc = grp.phases[k]
        ex = exists[inv, k]
        if not ex.any() or S == 0:
            continue
        ph = sc.phases[k]
        pi = np.maximum(d_pre[inv, k], 0)
        di = np.maximum(d_dec[inv, k], 0)
        x_k = d_x[inv, k]
        good_k = d_good[inv, k]
        if st is not None:
            pi = np.where(static_here, np.maximum(st.prefill_option[inv], 0), pi)
            di = np.where(static_here, np.maximum(st.decode_option[inv], 0), di)
            x_k = np.where(static_here, st.x[inv], x_k)
            good_k = np.where(static_here, st.goods[inv, k], good_k)
        pgpus = x_k * grp.gpus[pi]
        bpt = grp.wire_bytes_per_token(di)
        nics = grp.pair_nics(pi, di)
        # KV at the rate the split carries (the workload's when it carries nothing)
        carried = np.where(good_k > 0, np.minimum(r[:, k], good_k), r[:, k])
        u = link_utilization(carried * ph.prompt_tokens.mean * bpt,
                             link_capacity_bytes_per_s(link, pgpus))
        exposed, _ = transfer_seconds(ph.prompt_tokens.quantile(0.95) * bpt, link, nics,
                                      pc.own_prefill_s[pi], sc.model.num_layers,
                                      np.minimum(u, 0.999), layer_wise=layer_wise)
        util[:, k] = np.where(ex, u, -np.inf)
        tms[:, k] = np.where(ex, exposed * 1000, -np.inf)
    any_plan = np.asarray(exists[inv].any(axis=1), dtype=bool)
    u_worst = util.max(axis=1)
    share = np.full(G.size, np.nan)
    if sc.slo.ttft_ms:
        share = np.where(any_plan, tms.max(axis=1) / sc.slo.ttft_ms, np.nan)
    out["kv_transfer_share_of_ttft"][idx] = share
    u_worst = np.where(any_plan, u_worst, np.nan)
    out["kv_utilization"][idx] = u_worst

    # traffic-mix: across the phases, or one phase's split across the assumed drift band
    sl = static_loss[inv]
    out["static_mix_loss"][idx] = sl
    mix = sl
    if K == 1 and corners and S > 0:
        drift = drift_loss(grp, corners, 0, ug, d_pre[:, 0], d_dec[:, 0], d_x[:, 0], d_y[:, 0])
        mix = np.where(exists[inv, 0], drift[inv], 0.0)
    out["mix_loss"][idx] = mix

    # --- colocated: the best plan (max worst-phase headroom, then goodput per GPU), chunked
    # (its plan shown) and prefilling whole prompts
    c_head = np.zeros(G.size)
    u_head = np.zeros(G.size)
    if S > 0:
        counts = instances_in_cluster(G[:, None], grp.gpus[None, :], gpn).astype(float)  # (n, S)
        for chunked in (True, False):
            goods = caps.colocated(grp, G, chunked)                           # (K, n, S, C)
            best = best_colocated(goods, counts, r, grp.gpus)
            si, ci, has_c = best.shape, best.budget, best.found
            n_inst = counts[rows, si]
            tot = np.stack([goods[k][rows, si, ci] * n_inst for k in range(K)], axis=1)  # (n, K)
            head_k = tot / r
            bind = np.argmin(head_k, axis=1)
            head = np.where(has_c, head_k[rows, bind], 0.0)
            per_gpu = np.where(has_c, tot[rows, bind] / G, 0.0)
            if not chunked:
                u_head = head
                out["unchunked_goodput_per_gpu"][idx] = per_gpu
                continue
            c_head = head
            out["colocated_goodput_per_gpu"][idx] = per_gpu
            tp = np.array([s.instance.tensor_parallel for s in grp.shapes], dtype=np.int64)
            out["colocated_tensor_parallel"][idx] = np.where(has_c, tp[si], 0)
            out["colocated_instances"][idx] = np.where(has_c, n_inst.astype(np.int64), 0)
            assert grp.chunks is not None  # there are shapes
            out["colocated_chunk_tokens"][idx] = np.where(has_c, grp.chunks[ci].astype(np.int64),
                                                          0)
    out["colocated_headroom"][idx] = c_head
    out["unchunked_headroom"][idx] = u_head

    # --- the verdict, by the rule engine (the one ``recommend`` applies to one point)
    j = judge(Measures(
        applicable=applicable, has_split=has_split, any_split=any_plan,
        colocated_headroom=c_head, unchunked_headroom=u_head, disaggregated_headroom=d_head,
        split_headroom=split_head, ideal_headroom=ideal_head,
        colocated_meets=c_head >= 1.0, unchunked_meets=u_head >= 1.0,
        disaggregated_meets=has_split & (d_head >= 1.0), kv_utilization=u_worst,
        kv_transfer_share=share, mix_loss=mix, autoscaling=sc.autoscaling), pol)
    out["gain"][idx] = j.gains.gain
    out["ideal_gain"][idx] = j.gains.ideal_gain
    for k, rule in enumerate(RULES):
        out[ok_field(rule.id)][idx] = j.passed[k]
    out["disaggregate"][idx] = j.disaggregate
    out["deciding_rule"][idx] = j.deciding
    out["recommended"][idx] = j.recommended
    out["slo_met"][idx] = j.slo_met


def evaluate_points(sc: Scenario, gpus: Sequence[int] | np.ndarray,
                    rates: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """:func:`design_points` of ``sc`` at cluster sizes ``gpus`` (and per-phase ``rates``,
    shape (n, phases); default the workload's)."""
    G = np.asarray(gpus, dtype=np.int64).ravel()
    if rates is None:
        rates = np.tile(np.array([ph.rate_rps for ph in sc.phases], dtype=float), (G.size, 1))
    return design_points(Capacities(sc), G, np.asarray(rates, dtype=float))
