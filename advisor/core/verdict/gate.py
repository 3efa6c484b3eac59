"""What ``check`` gates on: the declared deployment against the decision (no prose: the
renderers word each finding, ``advisor.render.prose``).

A finding points at the workload key to change. The gate fails when no plan meets the SLOs,
when the deployed mode contradicts the verdict (or a colocated pool runs without chunked
prefill while the recommendation chunks), when a disaggregated deployment violates a
precondition the recommendation did not knowingly override, when the declared deployment
misses the SLOs at the workload's rate, or when a disaggregated split strays more than
``policy.split_tolerance`` from the split the report recommends (the static split when the
pools are static across phases, else the deployed phase's best).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from advisor.core.results import ModelResult
from advisor.core.scenario import Scenario


@dataclass(frozen=True, kw_only=True)
class Finding:
    """A reason the gate fails."""

    id: str
    """``slo-unmet``, ``mode-contradicts-verdict``, ``chunking-off``, ``precondition-<rule>``,
    ``deployment-infeasible``, ``deployment-misses-slo`` or ``split-off``."""
    key: str
    """The workload key to change (``deployment.mode``)."""
    rule: str | None = None
    """The precondition of a ``precondition-<rule>`` finding."""


def reference_split_prefill_gpus(sc: Scenario, m: ModelResult) -> int | None:
    """Prefill GPUs of the split a disaggregated deployment is measured against: the static
    split when pools are static across phases, else the deployed phase's best split."""
    if len(sc.phases) > 1 and not sc.autoscaling and m.static_allocation is not None:
        return m.static_allocation.prefill_gpus
    pred = m.deployed
    return pred.best_split_prefill_gpus if pred is not None else None


def split_offset(sc: Scenario, m: ModelResult) -> float | None:
    """|declared − recommended prefill GPUs| / cluster GPUs (None: nothing to compare)."""
    dep = sc.deployment
    best = reference_split_prefill_gpus(sc, m)
    if dep is None or dep.mode != "disaggregated" or dep.prefill_gpus is None or best is None:
        return None
    return abs(dep.prefill_gpus - best) / sc.cluster.gpus


def findings(sc: Scenario, m: ModelResult, recommended: str, slo_met: bool,
             failed: Sequence[str], overridden: Sequence[str]) -> tuple[Finding, ...]:
    """The gate's findings for the declared deployment (empty without ``deployment:``);
    ``recommended``: the plan recommended (``rules.PLANS``), ``failed``: the preconditions
    that fail, ``overridden``: those the recommendation set aside to meet the SLOs (a
    deployment that follows it is not faulted for them)."""
    dep, pred = sc.deployment, m.deployed
    if dep is None:
        return ()
    out: list[Finding] = []
    if not slo_met:
        out.append(Finding(id="slo-unmet", key="slo"))
    wants = "disaggregated" if recommended == "disaggregated" else "colocated"
    if dep.mode != wants:
        out.append(Finding(id="mode-contradicts-verdict", key="deployment.mode"))
    elif dep.mode == "colocated" and not dep.chunked_prefill and recommended == "colocated":
        out.append(Finding(id="chunking-off", key="deployment.chunked_prefill"))
    if dep.mode == "disaggregated":
        out += [Finding(id=f"precondition-{rule}", key="deployment.mode", rule=rule)
                for rule in failed if rule not in overridden]
    if pred is not None:
        if not pred.feasible:
            out.append(Finding(id="deployment-infeasible", key="deployment"))
        elif not pred.meets_slo:
            out.append(Finding(id="deployment-misses-slo", key="deployment"))
        off = split_offset(sc, m)
        if off is not None and off > sc.policy.split_tolerance:
            out.append(Finding(id="split-off", key="deployment.prefill_gpus"))
    return tuple(out)
