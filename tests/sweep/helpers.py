"""Shared loading and the scalar reference for the sweep, points and boundary tests."""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from advisor.core.analysis.keys import Axis, SweepError, check_value, key_info, value_label
from advisor.core.plan.evaluate import evaluate
from advisor.core.scenario import Scenario
from advisor.core.verdict.decision import decide
from advisor.core.verdict.rules import DECIDING_RULES, PLANS
from advisor.loading.catalog import ProfileCatalog
from advisor.loading.resolve import load_scenario

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
THREE_PHASE = ROOT / "benchmarks" / "three-phase.yaml"
PREFILL_HEAVY = EXAMPLES / "prefill-heavy-70b-ib.yaml"
WORKLOADS = (*sorted(EXAMPLES.glob("*.yaml")), THREE_PHASE)

RTOL = 1e-9
NUMBERS = ("colocated_goodput_per_gpu", "disaggregated_goodput_per_gpu", "colocated_headroom",
           "disaggregated_headroom", "rounding_loss", "static_mix_loss", "mix_loss",
           "unchunked_goodput_per_gpu", "unchunked_headroom")
FLAGS = ("disaggregate", "gpu_scale_ok", "kv_bandwidth_ok", "traffic_mix_ok", "slo_met")


@cache
def catalog() -> ProfileCatalog:
    """Built-in profiles, once per session."""
    return ProfileCatalog()


@cache
def scenario(path: Path) -> Scenario:
    """A workload file, resolved once per session."""
    return load_scenario(path, catalog())


def reference_point(sc: Scenario) -> dict[str, Any]:
    """The design-point metrics from ``evaluate`` + ``decide`` (one scalar evaluation)."""
    m = evaluate(sc)
    d = decide(sc, m)
    G = sc.cluster.gpus
    worst_loss = max((p.disaggregated.rounding_loss if p.disaggregated else 1.0) for p in m.phases)
    kvs = [plan.kv_transfer for p in m.phases
           if (plan := p.static or p.disaggregated) and plan.kv_transfer]
    return {
        "verdict": d.verdict,
        "disaggregate": d.verdict == "disaggregate",
        "colocated_goodput_per_gpu": (m.colocated.max_goodput_rps / G) if m.colocated else 0.0,
        "unchunked_goodput_per_gpu": (m.unchunked.max_goodput_rps / G) if m.unchunked else 0.0,
        "disaggregated_goodput_per_gpu": (m.disaggregated.max_goodput_rps / G
                                          if m.disaggregated else 0.0),
        "colocated_headroom": m.colocated_headroom,
        "unchunked_headroom": m.unchunked_headroom,
        "disaggregated_headroom": m.disaggregated_headroom,
        "gain": d.gain,
        "rounding_loss": worst_loss,
        "kv_utilization": max(k.utilization for k in kvs) if kvs else None,
        "static_mix_loss": m.static_mix_loss,
        "mix_loss": d.mix_loss,
        "ideal_gain": d.ideal_gain,
        "deciding_rule": d.deciding_rule,
        "recommended": d.recommended,
        "slo_met": d.slo_met,
        "gpu_scale_ok": d.rule("gpu-scale").passed,
        "kv_bandwidth_ok": d.rule("kv-bandwidth").passed,
        "traffic_mix_ok": d.rule("traffic-mix").passed,
        "phase_goodputs": tuple(p.disaggregated.max_goodput_rps if p.disaggregated else 0.0
                                for p in m.phases),
        "colocated_plan": ((m.colocated.tensor_parallel, m.colocated.instances,
                            m.colocated.chunk_tokens) if m.colocated else None),
        "split": ((m.disaggregated.allocation.prefill_gpus, m.disaggregated.allocation.decode_gpus)
                  if m.disaggregated and m.disaggregated.allocation else None),
    }


@cache
def reference(sc: Scenario) -> dict[str, Any]:
    """:func:`reference_point` of one scenario, cached."""
    return reference_point(sc)


def close(a: float, b: float | None) -> bool:
    """Equal to RTOL (NaN and None both mean 'undefined')."""
    if b is None or (isinstance(b, float) and math.isnan(b)):
        return a is None or math.isnan(a)
    if math.isinf(b) or math.isinf(a):
        return a == b
    return math.isclose(a, b, rel_tol=RTOL, abs_tol=1e-12)


def mismatches(metrics: dict[str, Any], index: Any, sc: Scenario) -> list[str]:
    """Where the sweep's point ``index`` disagrees with the scalar model at ``sc``."""
    ref = reference(sc)
    out = []
    for name in NUMBERS:
        got = float(metrics[name][index])
        if not close(got, ref[name]):
            out.append(f"{name}: sweep {got!r} != evaluate {ref[name]!r}")
    for name in FLAGS:
        if bool(metrics[name][index]) != bool(ref[name]):
            out.append(f"{name}: sweep {bool(metrics[name][index])} != {bool(ref[name])}")
    ku = ref["kv_utilization"]
    got = float(metrics["kv_utilization"][index])
    if not close(got, ku):
        out.append(f"kv_utilization: sweep {got!r} != evaluate {ku!r}")
    for name in ("gain", "ideal_gain"):
        want = ref[name]
        if not close(float(metrics[name][index]), want):
            out.append(f"{name}: sweep {float(metrics[name][index])!r} != evaluate {want!r}")
    rule = DECIDING_RULES[int(metrics["deciding_rule"][index])]
    if rule != ref["deciding_rule"]:
        out.append(f"deciding_rule: sweep {rule} != decide {ref['deciding_rule']}")
    plan = PLANS[int(metrics["recommended"][index])]
    if plan != ref["recommended"]:
        out.append(f"recommended: sweep {plan} != decide {ref['recommended']}")
    return out


def axis_from_values(key: str, values: Sequence[Any], log: bool = False) -> Axis:
    """An :class:`Axis` from values directly (numbers sorted, deduplicated and checked against
    the key's domain)."""
    info = key_info(key)
    if info.kind == "link":
        vals = tuple(values)
    elif info.kind == "int":
        vals = tuple(sorted({int(v) for v in values}))
    else:
        vals = tuple(sorted({float(v) for v in values}))
    for v in vals:
        if info.kind != "link":
            check_value(info, v)
    if not vals:
        raise SweepError(f"{key}: no values")
    return Axis(key, vals, tuple(value_label(v) for v in vals), log)
