"""The rule engine (#14): gpu-scale compares the ideal and integer gains, KV at the carried
rate, traffic-mix under the assumed drift band, the deciding rule and reasons that are true.

The two acceptance cases of #14 are pinned to what the model says today *and* to the
condition the issue states (the integer gain clears ``min_disagg_gain`` and the network and
mix pass), so a later model change that moves the numbers fails with the reason visible.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.core.analysis.points import evaluate_points
from advisor.core.plan.evaluate import evaluate
from advisor.core.scenario import Policy
from advisor.core.verdict.rules import (
    DECIDING_RULES,
    Assessment,
    assess,
    deciding_rule,
    gpu_scale_passes,
)
from advisor.loading.resolve import load_scenario
from tests.fuzz.strategies import to_yaml, workloads
from tests.sweep.helpers import EXAMPLES, catalog

ROOT = Path(__file__).resolve().parents[2]
ACCEPTANCE = ROOT / "tests" / "data" / "acceptance"


def _assess(path: Path, **changes: Any) -> Assessment:
    sc = load_scenario(path, catalog())
    if changes:
        sc = replace(sc, **changes)
    return assess(sc, evaluate(sc))


def _pre(a: Assessment, pid: str) -> Any:
    return next(p for p in a.preconditions if p.id == pid)


# --------------------------------------------------------------------------- gpu-scale


def test_gpu_scale_fails_only_when_rounding_eats_a_winning_gain() -> None:
    pol = Policy(min_disagg_gain=0.1)
    ideal = np.array([0.5, 0.5, 0.05, 0.5, np.nan, 0.12])
    integer = np.array([0.4, 0.05, 0.02, -0.3, np.nan, 0.1])
    assert gpu_scale_passes(ideal, integer, pol).tolist() == [True, False, True, False, True,
                                                              True]


@pytest.mark.parametrize("name", ["prefill-heavy-70b-34-h100.yaml",
                                  "dynamo-70b-fp8-3k150-16-h100.yaml"])
def test_the_issue_cases_disaggregate_when_the_integer_gain_clears(name: str) -> None:
    """#14's two cases: rounding above max_rounding_loss no longer vetoes a split whose own
    (integer) gain clears min_disagg_gain."""
    a = _assess(ACCEPTANCE / name)
    min_gain = load_scenario(ACCEPTANCE / name, catalog()).policy.min_disagg_gain
    assert a.rounding_loss is not None and a.rounding_loss > Policy().max_rounding_loss
    # the issue's condition, then the pin
    conditions = (a.disagg_gain is not None and a.disagg_gain >= min_gain
                  and _pre(a, "kv-bandwidth").passed and _pre(a, "traffic-mix").passed)
    assert conditions, (a.disagg_gain, [(p.id, p.passed) for p in a.preconditions])
    assert a.verdict == "disaggregate"
    assert a.deciding_rule == "gain"
    assert _pre(a, "gpu-scale").passed
    assert "rounding-loss" in {w.id for w in a.warnings}
    assert a.ideal_gain is not None and a.ideal_gain > a.disagg_gain


def test_rounding_that_turns_a_win_into_a_loss_is_the_headline() -> None:
    """bursty-32b: the ideal split would clear the threshold, the integer one does not."""
    a = _assess(EXAMPLES / "bursty-32b-16gpu.yaml")
    assert a.deciding_rule == "gpu-scale"
    assert not _pre(a, "gpu-scale").passed
    assert a.ideal_gain is not None and a.ideal_gain >= 0.1 > (a.disagg_gain or 0.0)
    assert a.reasons[0] == a.headline_reason
    assert "ideal split" in a.headline_reason and "integer split" in a.headline_reason


# --------------------------------------------------------------------------- kv-bandwidth


def test_overloaded_kv_is_judged_at_the_carried_rate() -> None:
    a = _assess(ACCEPTANCE / "dynamo-70b-fp8-3k150-16-h100-overloaded.yaml")
    d = a.model.disaggregated
    assert d is not None and d.kv_transfer is not None
    kv = d.kv_transfer
    assert kv.at_carried_rate and kv.rate_rps == pytest.approx(d.max_goodput_rps)
    assert kv.rate_rps < 400 / 10
    assert kv.demand_bytes_per_s == pytest.approx(kv.rate_rps * kv.bytes_per_request_mean)
    pre = _pre(a, "kv-bandwidth")
    assert pre.passed
    assert "overload, not a network limit" in pre.explanation
    assert not a.slo_met  # the overload is reported as overload


# --------------------------------------------------------------------------- traffic-mix


def test_single_phase_static_pools_are_judged_under_the_drift_band() -> None:
    sc = load_scenario(EXAMPLES / "chat-8b-single-node.yaml", catalog())
    assert len(sc.phases) == 1 and not sc.autoscaling
    m = evaluate(sc)
    a = assess(sc, m)
    mix = _pre(a, "traffic-mix")
    assert m.fragility is not None and len(m.fragility.drifted) == 2
    assert mix.measured == pytest.approx(m.fragility.drift_loss) and mix.measured > 0
    assert mix.passed == (mix.measured <= sc.policy.max_static_mix_loss)
    # no drift band: nothing can go stale
    calm = replace(sc, policy=replace(sc.policy, assumed_mix_drift=0.0))
    assert _pre(assess(calm, evaluate(calm)), "traffic-mix").measured == 0.0
    # autoscaling follows the drift
    auto = replace(sc, autoscaling=True)
    assert _pre(assess(auto, evaluate(auto)), "traffic-mix").passed


def test_a_wider_band_never_loses_less() -> None:
    sc = load_scenario(EXAMPLES / "bursty-32b-16gpu.yaml", catalog())
    losses = []
    for drift in (0.1, 0.25, 0.4):
        s = replace(sc, policy=replace(sc.policy, assumed_mix_drift=drift))
        f = evaluate(s).fragility
        assert f is not None
        losses.append(f.drift_loss)
    assert losses[0] <= losses[2] + 1e-9


def test_fragility_reports_the_neighbouring_splits() -> None:
    a = _assess(ACCEPTANCE / "dynamo-70b-fp8-3k150-16-h100.yaml")
    f = a.model.fragility
    assert f is not None
    best = a.model.disaggregated
    assert best is not None and best.allocation is not None
    labels = {v.label for v in f.neighbours}
    assert labels == {"one prefill instance fewer", "one prefill instance more"}
    for v in f.neighbours:
        assert v.goodput_rps <= best.max_goodput_rps + 1e-9  # the best split is the best
        assert v.prefill_gpus != best.allocation.prefill_gpus


# --------------------------------------------------------------------------- reasons


def test_an_impossible_tpot_names_the_binding_cause() -> None:
    """1 ms TPOT on 8B: no decode shape reaches it even at batch 1 — not "8 GPUs cannot hold
    two instances"."""
    sc = load_scenario(EXAMPLES / "chat-8b-single-node.yaml", catalog())
    sc = replace(sc, slo=replace(sc.slo, tpot_ms=1.0))
    m = evaluate(sc)
    a = assess(sc, m)
    assert not a.slo_met
    assert a.deciding_rule == "no-split"
    assert "TPOT" in a.reasons[0] and "batch 1" in a.reasons[0]
    assert m.tpot_floor_ms is not None and m.tpot_floor_ms > 1.0
    assert "cannot hold" not in a.reasons[0]
    assert "TPOT" in a.summary


def test_a_one_gpu_cluster_is_not_applicable() -> None:
    sc = load_scenario(EXAMPLES / "chat-8b-single-node.yaml", catalog())
    sc = replace(sc, cluster=replace(sc.cluster, gpus=1), deployment=None)
    a = assess(sc, evaluate(sc))
    assert a.deciding_rule == "not-applicable"
    assert "not applicable" in a.reasons[0]
    assert "overloaded" not in a.reasons[0]


def test_a_gain_lost_anyway_heads_the_reasons_as_a_loss() -> None:
    """day-night-shift with autoscaling and a tiny band: disaggregation loses goodput on its
    own; the headline says so as a loss, not as a negative gain or a precondition."""
    sc = load_scenario(EXAMPLES / "day-night-shift.yaml", catalog())
    sc = replace(sc, cluster=replace(sc.cluster, gpus=8), autoscaling=True)
    a = assess(sc, evaluate(sc))
    if a.disagg_gain is None or a.disagg_gain >= 0 or a.deciding_rule != "gain":
        pytest.skip(f"the model no longer makes disaggregation lose here ({a.disagg_gain})")
    assert a.verdict == "chunked-prefill"
    assert "loses goodput" in a.reasons[0]
    assert "-" not in a.reasons[0].split(":")[0]
    assert all("-%" not in r and "gains only -" not in r for r in (*a.reasons, a.summary))


def test_a_precondition_that_decides_heads_the_reasons() -> None:
    a = _assess(EXAMPLES / "day-night-shift.yaml")
    assert a.deciding_rule == "traffic-mix"
    assert a.reasons[0].startswith("traffic-mix fails")
    assert a.headline_reason == a.reasons[0]


def test_measure_next_follows_the_verdict() -> None:
    coloc = _assess(EXAMPLES / "bursty-32b-16gpu.yaml")
    assert coloc.verdict == "chunked-prefill"
    assert not any("KV transfer" in s or "prefill share of TTFT" in s
                   for s in coloc.measure_next)
    assert any("under chunked prefill" in s for s in coloc.measure_next)
    dis = _assess(ACCEPTANCE / "dynamo-70b-fp8-3k150-16-h100.yaml")
    assert dis.verdict == "disaggregate"
    assert dis.measure_next[0].startswith("prefill share of TTFT")


@pytest.mark.parametrize(("engine", "present", "absent"), [
    ("sglang", {"kv-concurrency", "prompt-limit", "bootstrap-port"}, {"experimental"}),
    ("vllm", {"experimental", "nixl-ports"}, {"prompt-limit", "kv-concurrency"}),
    ("trtllm", {"cache-transceiver"}, {"prompt-limit", "kv-concurrency", "experimental"}),
])
def test_warnings_are_the_engines_own(engine: str, present: set[str], absent: set[str]) -> None:
    sc = load_scenario(EXAMPLES / "prefill-heavy-70b-ib.yaml", catalog())
    sc = replace(sc, engine=replace(sc.engine, name=engine))
    a = assess(sc, evaluate(sc))
    assert a.verdict == "disaggregate"
    ids = {w.id for w in a.warnings}
    assert present <= ids, ids
    assert not (absent & ids), ids
    sglang_cited = any("sgl-project" in w.message for w in a.warnings)
    assert sglang_cited == (engine == "sglang")


# --------------------------------------------------------------------------- properties


def test_deciding_rule_order() -> None:
    pol = Policy(min_disagg_gain=0.1)
    t, f = True, False
    cases = [  # applicable, has split, split gain, gain, gpu, kv, mix -> rule
        ((f, f, np.nan, np.nan, f, f, t), "not-applicable"),
        ((t, f, np.nan, np.nan, f, f, t), "no-split"),
        ((t, t, 0.05, 0.05, f, t, t), "gpu-scale"),
        ((t, t, -0.2, -0.2, t, f, f), "gain"),
        ((t, t, 0.5, 0.5, t, f, f), "kv-bandwidth"),
        ((t, t, 0.5, 0.2, t, t, f), "traffic-mix"),
        ((t, t, 0.5, 0.05, t, t, t), "gain"),
        ((t, t, 0.5, 0.5, t, t, t), "gain"),
    ]
    for args, want in cases:
        assert DECIDING_RULES[int(deciding_rule(*args, policy=pol))] == want, args


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=workloads(resolvable=True, max_gpus=2048, max_phases=3),
       min_gain=st.sampled_from([0.05, 0.1, 0.3]))
def test_a_clear_integer_win_with_network_and_mix_passing_is_never_vetoed(
        doc: dict[str, Any], min_gain: float) -> None:
    """#14's property: no point with an integer gain ≥ 2 × min_disagg_gain whose
    kv-bandwidth and traffic-mix pass is chunked-prefill (here over generated workloads, at
    their own size and a spread of GPU counts, through the sweep's many-point path, which
    tests/analysis/test_points.py ties to recommend's)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "workload.yaml"
        path.write_text(to_yaml(doc), encoding="utf-8")
        sc = load_scenario(path, catalog())
    sc = replace(sc, policy=replace(sc.policy, min_disagg_gain=min_gain))
    gpn = sc.cluster.gpus_per_node
    top = sc.cluster.gpus if sc.cluster.inter_node is None else max(sc.cluster.gpus, 4 * gpn)
    gpus = sorted({1, 2, 3, max(1, top // 3), max(1, top // 2), top})
    if sc.cluster.inter_node is None:
        gpus = [g for g in gpus if g <= gpn] or [sc.cluster.gpus]
    res = evaluate_points(sc, gpus)
    clear = (np.nan_to_num(res["gain"], nan=-1.0) >= 2 * min_gain) & res["kv_bandwidth_ok"] \
        & res["traffic_mix_ok"]
    assert res["disaggregate"][clear].all(), {
        "gpus": np.asarray(gpus)[clear & ~res["disaggregate"]].tolist()}
    a = assess(sc, evaluate(sc))
    if (a.disagg_gain is not None and a.disagg_gain >= 2 * min_gain
            and _pre(a, "kv-bandwidth").passed and _pre(a, "traffic-mix").passed):
        assert a.verdict == "disaggregate"


def test_a_model_that_fits_no_gpu_names_its_size(tmp_path: Path) -> None:
    """#14's example: a 405B model on one L4 — the binding cause is that it does not fit, not
    the cluster's size for two pools."""
    path = tmp_path / "w.yaml"
    path.write_text("version: 1\nmodel: llama-3.1-405b\nprecision: bf16\n"
                    "cluster: {gpu: l4, gpus: 1}\n"
                    "traffic: {rate_rps: 1, prompt_tokens: 1000, output_tokens: 200}\n"
                    "slo: {ttft_ms: 2000, tpot_ms: 50}\n", encoding="utf-8")
    a = _assess(path)
    assert not a.slo_met
    assert a.deciding_rule == "no-split"
    assert "does not fit" in a.reasons[0] and "weights need" in a.reasons[0]
    assert "does not fit" in a.summary
