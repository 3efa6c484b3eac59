"""The keys a sweep (or a verdict boundary) can vary, what each one means, and the axes of values.

:func:`apply_value` defines every key on a resolved scenario; :data:`KEYS` says which keys
change per-instance capacities (the capacity step is re-run once per distinct value) and
which only the cluster size or rates (vectorised). The text form of an axis (``8:4096:log``)
is parsed by ``advisor.loading.sweep_spec``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from advisor.core.distributions import LengthDistribution
from advisor.core.hardware import LinkSpec
from advisor.core.limits import (
    MAX_BURSTINESS,
    MAX_CONCURRENCY,
    MAX_GPUS,
    MAX_RATE_RPS,
    MAX_TOKENS,
    MIN_RATE_RPS,
)
from advisor.core.scenario import Scenario, TrafficPhase
from advisor.core.solve.closed_loop import solve_closed_loop


class SweepError(ValueError):
    """A sweep specification that cannot be evaluated (unknown key, bad range, …)."""


@dataclass(frozen=True, kw_only=True)
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
    KeyInfo(name="cluster.gpus", kind="int", capacity=False, unit="GPUs", minimum=1,
            maximum=MAX_GPUS,
            help="GPUs in the cluster"),
    KeyInfo(name="traffic.rate_rps", kind="float", capacity=False, unit="req/s",
            minimum=MIN_RATE_RPS, maximum=MAX_RATE_RPS,
            help="arrival rate of the peak phase (other phases scale with it)"),
    KeyInfo(name="traffic.concurrency", kind="int", capacity=True, unit="clients", minimum=1,
            maximum=MAX_CONCURRENCY,
            help="closed-loop clients of the peak phase (other closed-loop phases scale with "
                 "it); each value's equivalent rate is solved again (Little's law)"),
    KeyInfo(name="traffic.prompt_tokens", kind="float", capacity=True, unit="tokens", minimum=1.0,
            maximum=MAX_TOKENS,
            help="mean prompt length of the peak phase (distributions keep their shape; "
                 "other phases scale with it)"),
    KeyInfo(name="traffic.output_tokens", kind="float", capacity=True, unit="tokens", minimum=1.0,
            maximum=MAX_TOKENS,
            help="mean output length of the peak phase (as prompt_tokens)"),
    KeyInfo(name="traffic.burstiness", kind="float", capacity=True, unit="CV", minimum=0.0,
            maximum=MAX_BURSTINESS,
            help="inter-arrival CV of the peak phase (other phases scale with it)"),
    KeyInfo(name="slo.ttft_ms", kind="float", capacity=True, unit="ms", minimum=0.0,
            strict_minimum=True,
            help="TTFT target"),
    KeyInfo(name="slo.tpot_ms", kind="float", capacity=True, unit="ms", minimum=0.0,
            strict_minimum=True,
            help="TPOT target"),
    KeyInfo(name="slo.percentile", kind="float", capacity=True, unit="%", minimum=50.0,
            maximum=99.99,
            help="percentile of the SLO targets"),
    KeyInfo(name="cluster.inter_node", kind="link", capacity=True, unit="",
            help="inter-node interconnect profile id"),
    KeyInfo(name="cluster.inter_node.bandwidth_scale", kind="float", capacity=True, unit="×",
            minimum=0.0, strict_minimum=True,
            help="multiplier on the inter-node link's bandwidth"),
)}


def key_info(key: str) -> KeyInfo:
    """The :class:`KeyInfo` of ``key`` (SweepError listing the known keys otherwise)."""
    try:
        return KEYS[key]
    except KeyError:
        raise SweepError(f"cannot vary '{key}'; known keys: {', '.join(KEYS)}") from None


def peak_index(phases: Sequence[TrafficPhase]) -> int:
    """Index of the highest-rate phase (the first of equals, as ``Scenario.peak_phase``)."""
    best = 0
    for k, ph in enumerate(phases):
        if ph.rate_rps > phases[best].rate_rps:
            best = k
    return best


def scaled_length(d: LengthDistribution, mean: float) -> LengthDistribution:
    """``d`` stretched to a new mean: same shape (σ), quantiles and max scale with it."""
    f = mean / d.mean
    return LengthDistribution(mean=mean, mu=d.mu + math.log(f), sigma=d.sigma,
                              max_tokens=None if d.max_tokens is None else d.max_tokens * f)


def phase_rates(sc: Scenario, value: float) -> tuple[float, ...]:
    """Per-phase rates when ``traffic.rate_rps`` is ``value``: the peak phase takes it,
    the others keep their ratio to the peak."""
    peak = peak_index(sc.phases)
    r_peak = sc.phases[peak].rate_rps
    return tuple(value if k == peak else ph.rate_rps * (value / r_peak)
                 for k, ph in enumerate(sc.phases))


def current_value(sc: Scenario, key: str) -> Any:
    """The workload's own value of ``key``."""
    key_info(key)
    peak = sc.phases[peak_index(sc.phases)]
    if key == "cluster.gpus":
        return sc.cluster.gpus
    if key == "traffic.rate_rps":
        return peak.rate_rps
    if key == "traffic.concurrency":
        return peak.concurrency
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
        check_value(info, value)
    cl = sc.cluster
    if key == "cluster.gpus":
        return replace(sc, cluster=replace(cl, gpus=int(value)))
    if key == "traffic.rate_rps":
        rates = phase_rates(sc, float(value))
        return replace(sc, phases=tuple(replace(ph, rate_rps=r)
                                        for ph, r in zip(sc.phases, rates, strict=True)))
    peak = peak_index(sc.phases)
    if key == "traffic.concurrency":
        base_n = sc.phases[peak].concurrency or int(value)
        clients = tuple(int(value) if k == peak else (
            None if ph.concurrency is None else max(1, round(ph.concurrency * int(value) / base_n)))
            for k, ph in enumerate(sc.phases))
        return solve_closed_loop(replace(sc, phases=tuple(
            replace(ph, concurrency=n, closed_loop=None)
            for ph, n in zip(sc.phases, clients, strict=True))))
    if key in ("traffic.prompt_tokens", "traffic.output_tokens"):
        attr = key.split(".")[1]
        base = getattr(sc.phases[peak], attr).mean
        v = float(value)
        def scaled(ph: TrafficPhase, k: int) -> TrafficPhase:
            old = getattr(ph, attr)
            new = scaled_length(old, v if k == peak else old.mean * (v / base))
            if attr == "prompt_tokens":
                return replace(ph, prompt_tokens=new)
            return replace(ph, output_tokens=new)

        phases = tuple(scaled(ph, k) for k, ph in enumerate(sc.phases))
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


def check_value(info: KeyInfo, value: Any) -> None:
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
# axes


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


def value_label(value: Any) -> str:
    if isinstance(value, LinkSpec):
        return value.id
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return f"{float(value):.6g}"
