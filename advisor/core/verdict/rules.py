"""The rule engine: one registry of preconditions and one verdict, for one design point or many.

Disaggregation pays only when every precondition holds *and* the modelled disaggregated
goodput — of the best *integer* split — beats the best colocated plan, chunked or not, by
``min_disagg_gain`` (docs/model.md §9 gives every threshold's rationale). The preconditions
live in :data:`RULES`, one :class:`Rule` each — its name, the question it answers, what it
measures, its limit and where it applies:

* ``gpu-scale`` — do whole instances keep the specialisation gain? Applies when the ideal
  (fractional) split's gain clears ``min_disagg_gain`` (otherwise there is no gain for
  rounding to eat: not applicable); fails when the best integer split's does not;
* ``kv-bandwidth`` — KV link utilisation ≤ ``max_kv_link_utilization`` and the exposed p95
  transfer ≤ ``max_kv_transfer_share_of_ttft`` of the TTFT SLO, at the rate the split carries;
* ``traffic-mix`` — with static pools, the goodput the split loses as the mix moves
  ≤ ``max_static_mix_loss``: across the declared phases, or (one phase) across the assumed
  drift band ``assumed_mix_drift``; autoscaling passes it.

:func:`judge` applies the registry and the verdict policy to :class:`Measures` — arrays of
design points: one point for ``recommend`` (``decision.measures_of``), many for sweeps and
the boundary searches (``plan.points.design_points``). So the verdict is assembled once, by
one function, whatever the caller. The policy (docs/model.md §9): the rules pick an
architecture; when the plan they pick misses the SLOs at the offered rate but another plan
meets them, the recommendation is that plan, and the rules it overrode are named
(``meets-slo`` decided). "No plan meets the SLOs" only when none does.

No prose here: renderers word every rule (``advisor.render.prose``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from advisor.core.scenario import Policy

Verdict = Literal["chunked-prefill", "disaggregate"]
VERDICTS: tuple[Verdict, Verdict] = ("chunked-prefill", "disaggregate")

PlanKind = Literal["colocated", "unchunked", "disaggregated"]
PLANS: tuple[PlanKind, PlanKind, PlanKind] = ("colocated", "unchunked", "disaggregated")
"""The three plans every report compares: chunked prefill on a colocated pool, the same pool
prefilling whole prompts, and prefill/decode disaggregation (codes 0, 1, 2)."""

Status = Literal["pass", "fail", "n/a"]


@dataclass(frozen=True, kw_only=True)
class Measures:
    """What the rules read at each design point (arrays of one shape, (n,))."""

    applicable: np.ndarray
    """The cluster holds one prefill and one decode instance of the smallest shape that fits
    the model (a model that fits no shape has no split; it is not "not applicable")."""
    has_split: np.ndarray
    """Every phase has an integer split."""
    any_split: np.ndarray
    """Some phase has an integer split (the KV link is sized on those)."""
    colocated_headroom: np.ndarray
    """Worst phase's goodput / rate of the best chunked-prefill colocated plan."""
    unchunked_headroom: np.ndarray
    """The same for the best colocated plan prefilling whole prompts."""
    disaggregated_headroom: np.ndarray
    """The disaggregated plan's (the static split's when pools are static over phases)."""
    split_headroom: np.ndarray
    """Of each phase's own best integer split (per-phase re-allocation)."""
    ideal_headroom: np.ndarray
    """Of each phase's ideal (fractional) split."""
    colocated_meets: np.ndarray
    unchunked_meets: np.ndarray
    disaggregated_meets: np.ndarray
    """Whether each plan meets the SLOs at the offered rate (``results.meets_slo``)."""
    kv_utilization: np.ndarray
    """Worst phase's KV link utilisation (NaN: no split)."""
    kv_transfer_share: np.ndarray
    """Worst exposed p95 KV transfer / TTFT target (NaN: no split or no TTFT target)."""
    mix_loss: np.ndarray
    """What traffic-mix judges (``decision.mix_loss``)."""
    autoscaling: bool


def disaggregation_gain(disaggregated_headroom: np.ndarray | float,
                        colocated_headroom: np.ndarray | float) -> np.ndarray:
    """Disaggregated over colocated headroom − 1; +inf where only disaggregation carries
    traffic, NaN where neither does (undefined)."""
    d = np.asarray(disaggregated_headroom, dtype=float)
    c = np.asarray(colocated_headroom, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(c > 0, d / np.where(c > 0, c, 1.0) - 1.0,
                        np.where(d > 0, np.inf, np.nan))


@dataclass(frozen=True, kw_only=True)
class Gains:
    """Disaggregation's gains over the best colocated plan, chunked or not (NaN: undefined)."""

    gain: np.ndarray
    """The verdict's: the disaggregated plan (a static split's when pools are static)."""
    split_gain: np.ndarray
    """Each phase's own best integer split (per-phase re-allocation)."""
    ideal_gain: np.ndarray
    """The ideal (fractional) split's."""


def gains(m: Measures) -> Gains:
    """The three gains, each over the best colocated headroom (chunked or unchunked)."""
    base = np.maximum(m.colocated_headroom, m.unchunked_headroom)
    return Gains(gain=disaggregation_gain(m.disaggregated_headroom, base),
                 split_gain=disaggregation_gain(m.split_headroom, base),
                 ideal_gain=disaggregation_gain(m.ideal_headroom, base))


def clears(gain: np.ndarray, policy: Policy) -> np.ndarray:
    """Where ``gain`` (NaN: undefined, clearing nothing) reaches ``min_disagg_gain``."""
    g = np.asarray(gain, dtype=float)
    return np.asarray(~np.isnan(g) & (g >= policy.min_disagg_gain), dtype=bool)


# --------------------------------------------------------------------------- the registry
@dataclass(frozen=True, kw_only=True)
class Rule:
    """One precondition of disaggregation."""

    id: str
    question: str
    unit: str
    bound: Literal["max", "min"]
    """Whether ``limit`` is an upper (``max``) or lower (``min``) bound on the measured value."""
    limit: Callable[[Policy], float]
    measured: Callable[[Measures, Gains], np.ndarray]
    """The value judged at each point (NaN where there is none)."""
    applies: Callable[[Measures, Gains, Policy], np.ndarray]
    passes: Callable[[Measures, Gains, Policy], np.ndarray]
    """Judged where the rule applies."""
    holds_without_split: bool = False
    """``passed`` where the rule does not apply and no split exists (v1 reports)."""
    explains_shortfall: bool = False
    """When it fails it is *why* the gain falls short, so it decides before the gain does."""


def _kv_passes(m: Measures, g: Gains, p: Policy) -> np.ndarray:
    ok = ~(m.kv_utilization > p.max_kv_link_utilization)
    share = m.kv_transfer_share
    return np.asarray(ok & (np.isnan(share) | (share <= p.max_kv_transfer_share_of_ttft)))


RULES: tuple[Rule, ...] = (
    Rule(id="gpu-scale", question="do whole instances keep the specialisation gain?",
         unit="fraction", bound="min", limit=lambda p: p.min_disagg_gain,
         measured=lambda m, g: g.split_gain,
         applies=lambda m, g, p: m.applicable & m.has_split & clears(g.ideal_gain, p),
         passes=lambda m, g, p: clears(g.split_gain, p), explains_shortfall=True),
    Rule(id="kv-bandwidth", question="does the network sustain the KV production rate?",
         unit="fraction", bound="max", limit=lambda p: p.max_kv_link_utilization,
         measured=lambda m, g: m.kv_utilization,
         applies=lambda m, g, p: m.any_split, passes=_kv_passes),
    Rule(id="traffic-mix", question="can the pools follow a shifting mix?",
         unit="fraction", bound="max", limit=lambda p: p.max_static_mix_loss,
         measured=lambda m, g: m.mix_loss, applies=lambda m, g, p: m.any_split,
         passes=lambda m, g, p: m.autoscaling | (m.mix_loss <= p.max_static_mix_loss),
         holds_without_split=True),
)
"""Every precondition, in the order reports list them and the verdict consults them."""

PRECONDITIONS: tuple[str, ...] = tuple(r.id for r in RULES)
DECIDING_RULES: tuple[str, ...] = ("gain", *PRECONDITIONS, "not-applicable", "no-split",
                                   "meets-slo")
"""What decided a verdict: ``gain`` (disaggregation's integer gain cleared the threshold, or
fell short of it on its own), a precondition that turned a winning gain into a loss,
``not-applicable`` (the cluster cannot hold two pools), ``no-split`` (no prefill/decode split
meets the SLOs at all) or ``meets-slo`` (the rules' pick misses the SLOs and the
recommendation is the plan that meets them)."""
OVERRIDABLE: tuple[str, ...] = ("gain", *PRECONDITIONS)
"""What the SLO policy can override: the gain threshold and each precondition."""


def ok_field(rule_id: str) -> str:
    """The design-point field of a rule's outcome: ``gpu_scale_ok``."""
    return rule_id.replace("-", "_") + "_ok"


@dataclass(frozen=True, kw_only=True)
class Judgement:
    """The verdict at each design point (arrays: (n,), or (rules, n) per rule)."""

    gains: Gains
    applies: np.ndarray
    passes: np.ndarray
    """Where the rule applies, whether it holds (meaningless elsewhere)."""
    passed: np.ndarray
    """The reported outcome: where a rule does not apply, True when a split exists (it
    stands in nothing's way), else its ``holds_without_split``."""
    measured: np.ndarray
    """NaN where the rule does not apply."""
    rule_disaggregate: np.ndarray
    """What the preconditions and the gain alone decide."""
    disaggregate: np.ndarray
    """The verdict, after the SLO policy."""
    recommended: np.ndarray
    """Index into :data:`PLANS` of the recommended plan."""
    deciding: np.ndarray
    """Index into :data:`DECIDING_RULES`."""
    overridden: np.ndarray
    """(overridable, n): what the SLO policy set aside, :data:`OVERRIDABLE` order."""
    slo_met: np.ndarray
    """The recommended plan meets the SLOs."""
    any_meets: np.ndarray
    """Some plan meets the SLOs."""

    def status(self, rule: int, point: int = 0) -> Status:
        """``pass``, ``fail`` or ``n/a`` of rule index ``rule`` at one point."""
        if not bool(self.applies[rule, point]):
            return "n/a"
        return "pass" if bool(self.passes[rule, point]) else "fail"


def judge(m: Measures, policy: Policy) -> Judgement:
    """The registry's preconditions, the gain and the verdict policy at every point."""
    g = gains(m)
    n = np.asarray(m.has_split).shape
    applies = np.array([np.broadcast_to(r.applies(m, g, policy), n) for r in RULES],
                       dtype=bool).reshape(len(RULES), *n)
    passes = np.array([np.broadcast_to(r.passes(m, g, policy), n) for r in RULES],
                      dtype=bool).reshape(len(RULES), *n)
    split = m.applicable & m.has_split
    fallback = np.array([split | r.holds_without_split for r in RULES], dtype=bool
                        ).reshape(len(RULES), *n)
    passed = np.where(applies, passes, fallback)
    with np.errstate(invalid="ignore"):
        measured = np.where(applies, np.array([np.broadcast_to(
            np.asarray(r.measured(m, g), dtype=float), n) for r in RULES]).reshape(
                len(RULES), *n), np.nan)
    all_pass = passed.all(axis=0)
    rule_d = all_pass & clears(g.gain, policy)

    # the deciding rule, later assignments winning: the first failing precondition of a
    # winning gain; a per-phase gain short anyway; a rule that explains the shortfall
    failed = applies & ~passes
    code = np.zeros(n, dtype=np.int64)
    for k in reversed(range(len(RULES))):
        if not RULES[k].explains_shortfall:
            code = np.where(failed[k], 1 + k, code)
    code = np.where(~clears(g.split_gain, policy), 0, code)
    for k in reversed(range(len(RULES))):
        if RULES[k].explains_shortfall:
            code = np.where(failed[k], 1 + k, code)
    code = np.where(~m.has_split, DECIDING_RULES.index("no-split"), code)
    code = np.where(~m.applicable, DECIDING_RULES.index("not-applicable"), code)

    # the verdict policy: a plan that meets the SLOs whenever one does
    c_meets, u_meets, d_meets = (np.asarray(x, dtype=bool) for x in (
        m.colocated_meets, m.unchunked_meets, m.disaggregated_meets))
    coloc_meets = c_meets | u_meets
    to_d = ~rule_d & ~coloc_meets & d_meets
    to_c = rule_d & ~d_meets & coloc_meets
    disaggregate = (rule_d & ~to_c) | to_d
    unchunked_best = m.unchunked_headroom > m.colocated_headroom
    coloc = np.where(c_meets & ~u_meets, 0, np.where(u_meets & ~c_meets, 1,
                                                     np.where(unchunked_best, 1, 0)))
    recommended = np.where(disaggregate, 2, coloc).astype(np.int64)
    overridden = np.zeros((len(OVERRIDABLE), *n), dtype=bool)
    overridden[0] = (to_d & ~clears(g.gain, policy)) | to_c
    overridden[1:] = to_d & ~passed
    code = np.where(to_d | to_c, DECIDING_RULES.index("meets-slo"), code)
    slo_met = np.where(disaggregate, d_meets, coloc_meets)
    return Judgement(gains=g, applies=applies, passes=passes, passed=passed, measured=measured,
                     rule_disaggregate=rule_d, disaggregate=disaggregate,
                     recommended=recommended, deciding=code, overridden=overridden,
                     slo_met=np.asarray(slo_met, dtype=bool),
                     any_meets=np.asarray(coloc_meets | d_meets, dtype=bool))
