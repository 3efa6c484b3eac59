"""One decision per workload, computed once: what every report shows, in every format.

:func:`decide` turns a model result into a :class:`Decision`: the verdict and the rule that
decided it (``rules.judge``, the same function the sweeps and boundary searches apply to
many points), the recommended plan — one that meets the SLOs whenever some plan does — and
what it overrode, the plans of every phase side by side (each column from that phase), the
P:D splits of one phase ranked by one quantity (the best first by construction), the GPUs
each plan needs at the offered rate and its headroom, and, when the boundaries are searched,
the knife edges: a verdict that flips within ±:data:`KNIFE_EDGE` of the GPU count or the
rate says so, with the flip points. No prose: ``advisor.render`` words it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from advisor.core.results import (
    AllocationSummary,
    ColocatedPlan,
    DisaggregatedPlan,
    ModelResult,
    PhaseResult,
    meets_slo,
)
from advisor.core.scenario import Scenario
from advisor.core.verdict.gate import Finding, findings
from advisor.core.verdict.rules import (
    DECIDING_RULES,
    OVERRIDABLE,
    PLANS,
    RULES,
    VERDICTS,
    Measures,
    PlanKind,
    Status,
    Verdict,
    judge,
)

KNIFE_EDGE = 0.10
"""A verdict that flips within this share of the current GPU count or rate is knife-edge
(#28: ±10 %; the modelling error of a step time alone is of that order, docs/model.md §10)."""

OVER_PROVISIONED = 2.0
"""Headroom (goodput / offered rate) from which a plan is called over-provisioned: at least
half of what it carries is unused at the offered rate."""


@dataclass(frozen=True, kw_only=True)
class RuleOutcome:
    """One precondition at the workload's design point."""

    id: str
    question: str
    status: Status
    passed: bool
    """Whether it stands in disaggregation's way (``n/a``: passes where a split exists)."""
    measured: float | None
    """None where the rule does not apply."""
    limit: float
    unit: str
    bound: Literal["max", "min"]
    overridden: bool
    """The recommendation set this failing precondition aside to meet the SLOs."""


@dataclass(frozen=True, kw_only=True)
class PhasePlans:
    """The three plans in one phase (every figure of one column from this phase)."""

    name: str
    share: float
    rate_rps: float
    colocated: ColocatedPlan | None
    unchunked: ColocatedPlan | None
    disaggregated: DisaggregatedPlan | None
    """The split the verdict judges here: the static split when pools are static across
    phases, else this phase's best."""
    best_split: DisaggregatedPlan | None
    """This phase's own best integer split (per-phase re-allocation)."""

    def plan(self, kind: PlanKind) -> ColocatedPlan | DisaggregatedPlan | None:
        """The plan of ``kind`` in this phase."""
        if kind == "colocated":
            return self.colocated
        return self.unchunked if kind == "unchunked" else self.disaggregated


@dataclass(frozen=True, kw_only=True)
class Sizing:
    """One plan against the offered rate: what it needs and how much it has to spare."""

    plan: PlanKind
    exists: bool
    gpus: int
    """The cluster's GPUs (every plan is given all of them)."""
    gpus_needed: int | None
    """Fewest GPUs carrying every phase's rate within the SLOs (None: no count does)."""
    headroom: float
    """Worst phase's goodput / offered rate (≥ 1: carries it)."""
    binding_phase: str
    meets_slo: bool

    @property
    def over_provisioned(self) -> bool:
        """Carries at least :data:`OVER_PROVISIONED` times the offered rate."""
        return self.exists and self.headroom >= OVER_PROVISIONED


@dataclass(frozen=True, kw_only=True)
class SplitRow:
    """One integer split in the P:D table of :attr:`Decision.split_phase`."""

    role: Literal["best", "runner-up", "alternative", "static"]
    """``best`` is the phase's best integer split, then its runners-up in goodput order;
    ``static`` the split kept for every phase (its goodput in this phase)."""
    allocation: AllocationSummary


Direction = Literal["up", "down"]
BoundaryKind = Literal["verdict", "slo"]


@dataclass(frozen=True, kw_only=True)
class Boundary:
    """The nearest value of ``key`` (in ``direction``) at which the verdict flips (found by
    ``advisor.core.analysis.boundaries``)."""

    key: str
    current: float | None
    flips_at: float | None
    """None when nothing in the searched range flips it."""
    direction: Direction
    description: str
    kind: BoundaryKind = "verdict"
    to: str | None = None
    """The verdict beyond ``flips_at`` (kind 'verdict')."""


@dataclass(frozen=True, kw_only=True)
class KnifeEdge:
    """A flip of the verdict close to the workload's design point."""

    key: str
    """``cluster.gpus`` or ``traffic.rate_rps`` (the peak phase's rate, all scaled)."""
    current: float
    flips_at: float
    to: Verdict

    @property
    def change(self) -> float:
        """flips_at / current − 1."""
        return self.flips_at / self.current - 1.0


@dataclass(frozen=True, kw_only=True)
class Decision:
    """Everything decided for one workload (what every renderer shows)."""

    verdict: Verdict
    rule_verdict: Verdict
    """What the preconditions and the gain alone decide (before the SLO policy)."""
    recommended: PlanKind
    deciding_rule: str
    """One of ``rules.DECIDING_RULES``."""
    overridden: tuple[str, ...]
    """What the SLO policy set aside: ``gain`` and/or precondition ids."""
    slo_met: bool
    """The recommended plan meets the SLOs at the offered rate (in every phase)."""
    any_plan_meets: bool
    binding_phase: str
    """The phase that binds the recommended plan (lowest headroom)."""
    baseline: Literal["colocated", "unchunked"]
    """The best colocated plan, chunked or not: the one the gains are measured against."""
    gain: float | None
    """Disaggregation's gain (the verdict's: a static split's when pools are static); None
    undefined (nothing carries traffic), +inf only disaggregation does."""
    split_gain: float | None
    """Each phase's own best integer split's gain (per-phase re-allocation)."""
    ideal_gain: float | None
    rules: tuple[RuleOutcome, ...]
    rounding_loss: float | None
    """Share of the ideal split's goodput whole instances lose, worst phase's best split."""
    rounding_phase: str | None
    mix_loss: float
    phases: tuple[PhasePlans, ...]
    sizing: tuple[Sizing, ...]
    """Per plan, in ``rules.PLANS`` order."""
    split_phase: str
    """The phase the P:D table shows (the one binding the disaggregated plan)."""
    splits: tuple[SplitRow, ...]
    findings: tuple[Finding, ...]
    model: ModelResult
    boundaries: tuple[Boundary, ...] | None = None
    """None when not searched (``check``)."""
    knife_edges: tuple[KnifeEdge, ...] = ()

    def phase(self, name: str) -> PhasePlans:
        """The plans of phase ``name``."""
        return next(p for p in self.phases if p.name == name)

    def size(self, kind: PlanKind) -> Sizing:
        """The right-sizing of plan ``kind``."""
        return self.sizing[PLANS.index(kind)]

    def rule(self, rule_id: str) -> RuleOutcome:
        """The outcome of precondition ``rule_id``."""
        return next(r for r in self.rules if r.id == rule_id)

    @property
    def recommended_plan(self) -> ColocatedPlan | DisaggregatedPlan | None:
        """The recommended plan in its binding phase."""
        return self.phase(self.binding_phase).plan(self.recommended)


# --------------------------------------------------------------------------- measures
def mix_loss(sc: Scenario, m: ModelResult) -> float:
    """What traffic-mix judges: the static split's loss across the declared phases, or (one
    phase, static pools) the chosen split's worst loss across the assumed drift band; 0 for
    one phase with autoscaling (nothing static to judge)."""
    if len(sc.phases) > 1:
        return m.static_mix_loss
    if sc.autoscaling or m.fragility is None:
        return 0.0
    return m.fragility.drift_loss


def applicable(sc: Scenario, m: ModelResult) -> bool:
    """The cluster holds one prefill and one decode instance of the smallest shape that fits
    the model (a model that fits no shape has no split: the cause is its size)."""
    g = m.smallest_instance_gpus
    return g is None or 2 * g <= sc.cluster.gpus


def _has(p: PhaseResult) -> bool:
    return p.disaggregated is not None and p.disaggregated.allocation is not None


def measures_of(sc: Scenario, m: ModelResult) -> Measures:
    """The rules' inputs at the workload's one design point (arrays of one)."""
    def one(x: float | bool) -> np.ndarray:
        return np.array([x])

    kvs = [kv for p in m.phases if (plan := p.static or p.disaggregated) is not None
           and (kv := plan.kv_transfer) is not None]
    util = max((kv.utilization for kv in kvs), default=math.nan)
    share = (max(kv.transfer_ms for kv in kvs) / sc.slo.ttft_ms
             if kvs and sc.slo.ttft_ms else math.nan)
    split_head = min((p.disaggregated.max_goodput_rps if p.disaggregated else 0.0)
                      / p.rate_rps for p in m.phases)
    return Measures(
        applicable=one(applicable(sc, m)), has_split=one(all(_has(p) for p in m.phases)),
        any_split=one(any(_has(p) for p in m.phases)),
        colocated_headroom=one(m.colocated_headroom if m.colocated else 0.0),
        unchunked_headroom=one(m.unchunked_headroom if m.unchunked else 0.0),
        disaggregated_headroom=one(m.disaggregated_headroom),
        split_headroom=one(split_head), ideal_headroom=one(m.disaggregated_ideal_headroom),
        colocated_meets=one(m.colocated is not None and meets_slo(m.colocated, sc.slo)),
        unchunked_meets=one(m.unchunked is not None and meets_slo(m.unchunked, sc.slo)),
        disaggregated_meets=one(m.disaggregated is not None
                                and meets_slo(m.disaggregated, sc.slo)),
        kv_utilization=one(util), kv_transfer_share=one(share), mix_loss=one(mix_loss(sc, m)),
        autoscaling=sc.autoscaling)


def _finite(x: float) -> float | None:
    """None for NaN (undefined); infinities kept (an unbounded gain)."""
    return None if math.isnan(x) else float(x)


# --------------------------------------------------------------------------- plans
def _phase_plans(m: ModelResult) -> tuple[PhasePlans, ...]:
    return tuple(PhasePlans(
        name=p.name, share=p.share, rate_rps=p.rate_rps, colocated=p.colocated,
        unchunked=p.unchunked, disaggregated=p.static if p.static is not None
        else p.disaggregated, best_split=p.disaggregated) for p in m.phases)


def _headroom_of(plan: ColocatedPlan | DisaggregatedPlan | None, rate: float) -> float:
    return plan.max_goodput_rps / rate if plan is not None and rate > 0 else 0.0


def _sizing(sc: Scenario, m: ModelResult, phases: tuple[PhasePlans, ...]) -> tuple[Sizing, ...]:
    needed = {"colocated": m.colocated_gpus_needed, "unchunked": m.unchunked_gpus_needed,
              "disaggregated": m.disaggregated_gpus_needed}
    out = []
    for kind in PLANS:
        heads = [(_headroom_of(p.plan(kind), p.rate_rps), p.name) for p in phases]
        head, phase = min(heads)
        plan = next((p.plan(kind) for p in phases if p.name == phase), None)
        exists = all(p.plan(kind) is not None for p in phases) and (
            kind != "disaggregated" or all(p.disaggregated is not None
                                           and p.disaggregated.allocation is not None
                                           for p in phases))
        out.append(Sizing(plan=kind, exists=exists, gpus=sc.cluster.gpus,
                          gpus_needed=needed[kind], headroom=float(head), binding_phase=phase,
                          meets_slo=plan is not None and meets_slo(plan, sc.slo)))
    return tuple(out)


def _splits(phase: PhasePlans) -> tuple[SplitRow, ...]:
    """The phase's best split and its runners-up (goodput order, so the best first), with
    the static split kept for every phase after them when there is one."""
    rows: list[SplitRow] = []
    best = phase.best_split
    if best is not None and best.allocation is not None:
        rows.append(SplitRow(role="best", allocation=best.allocation))
        rows += [SplitRow(role="runner-up" if i == 0 else "alternative", allocation=a)
                 for i, a in enumerate(best.alternatives)]
    static = phase.disaggregated
    if static is not best and static is not None and static.allocation is not None:
        rows.append(SplitRow(role="static", allocation=static.allocation))
    return tuple(rows)


def _worst_rounding(m: ModelResult) -> tuple[float | None, str | None]:
    worst = [(p.disaggregated.rounding_loss, p.name) for p in m.phases
             if p.disaggregated is not None and p.disaggregated.allocation is not None]
    if not worst:
        return None, None
    loss, name = max(worst, key=lambda w: w[0])
    return loss, name


# --------------------------------------------------------------------------- the decision
def decide(sc: Scenario, m: ModelResult) -> Decision:
    """The decision for the workload ``sc`` from its model result ``m`` (without boundaries:
    ``advisor.core.analysis.boundaries.with_boundaries`` adds them and the knife edges)."""
    j = judge(measures_of(sc, m), sc.policy)
    verdict = VERDICTS[int(j.disaggregate[0])]
    recommended = PLANS[int(j.recommended[0])]
    overridden = tuple(name for k, name in enumerate(OVERRIDABLE) if bool(j.overridden[k, 0]))
    rules = tuple(RuleOutcome(
        id=r.id, question=r.question, status=j.status(k), passed=bool(j.passed[k, 0]),
        measured=_finite(float(j.measured[k, 0])), limit=float(r.limit(sc.policy)),
        unit=r.unit, bound=r.bound, overridden=r.id in overridden)
        for k, r in enumerate(RULES))
    phases = _phase_plans(m)
    sizing = _sizing(sc, m, phases)
    rule = DECIDING_RULES[int(j.deciding[0])]
    slo_met = bool(j.slo_met[0])
    failed = [r.id for r in rules if r.status == "fail"]
    rounding, rounding_phase = _worst_rounding(m)
    gain = _finite(float(j.gains.gain[0]))
    decision = Decision(
        verdict=verdict, rule_verdict=VERDICTS[int(j.rule_disaggregate[0])],
        recommended=recommended, deciding_rule=rule, overridden=overridden, slo_met=slo_met,
        any_plan_meets=bool(j.any_meets[0]),
        binding_phase=sizing[PLANS.index(recommended)].binding_phase,
        baseline="unchunked" if m.unchunked_headroom > m.colocated_headroom else "colocated",
        gain=gain, split_gain=_finite(float(j.gains.split_gain[0])),
        ideal_gain=_finite(float(j.gains.ideal_gain[0])), rules=rules,
        rounding_loss=rounding, rounding_phase=rounding_phase, mix_loss=mix_loss(sc, m),
        phases=phases, sizing=sizing, split_phase=m.disaggregated_phase,
        splits=_splits(next(p for p in phases if p.name == m.disaggregated_phase)),
        findings=findings(sc, m, recommended, slo_met, failed, overridden), model=m)
    return decision


def with_boundaries(d: Decision, bounds: tuple[Boundary, ...]) -> Decision:
    """``d`` with its verdict boundaries and the knife edges among them."""
    return replace(d, boundaries=bounds, knife_edges=knife_edges(bounds))


def knife_edges(bounds: tuple[Boundary, ...]) -> tuple[KnifeEdge, ...]:
    """The verdict flips within ±:data:`KNIFE_EDGE` of the GPU count or the rate."""
    out = []
    for b in bounds:
        if (b.kind != "verdict" or b.key not in ("cluster.gpus", "traffic.rate_rps")
                or b.flips_at is None or not b.current or b.to is None):
            continue
        if abs(b.flips_at / b.current - 1.0) <= KNIFE_EDGE + 1e-12:
            to = VERDICTS[VERDICTS.index(b.to)]  # b.to is a verdict
            out.append(KnifeEdge(key=b.key, current=float(b.current), flips_at=float(b.flips_at),
                                 to=to))
    return tuple(out)
