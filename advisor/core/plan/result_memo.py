"""``evaluate``'s results kept across evaluations of one scenario (#27 item 7).

The closed-loop solve, the verdict boundaries and the drift band evaluate one scenario at many
arrival rates; the capacity tables (:class:`~advisor.core.plan.capacities.Capacities`) do not
depend on the rate, and neither do some of ``evaluate``'s own results (a colocated plan's
rate-free figures, the TPOT-safe rate, a phase's pools at one cluster size). Those are kept
here, each kind in its own :class:`Memo` under a key that names every input it reads beyond the
tables — a frozen dataclass per kind, so a lookup cannot be filed under an ad-hoc tuple or
confused with another kind's. The :class:`~advisor.core.plan.capacities.Capacities` of the
scenario owns one :class:`ResultMemo` (``Capacities.results``); it is never shared between
scenarios (their links differ under ``Capacities.with_inter_node``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from advisor.core.colocated import ColocatedPoint
from advisor.core.disaggregated import DecodeCapacity, PrefillCapacity
from advisor.core.plan.split import PoolOption, PoolRates, SplitResult
from advisor.core.results import ColocatedPlan, Fragility

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Memo(Generic[K, V]):
    """One kind of result, by key: computed on the first lookup, the same object after."""

    def __init__(self) -> None:
        self._entries: dict[K, V] = {}

    def get(self, key: K, compute: Callable[[], V]) -> V:
        """The entry under ``key``, from ``compute()`` the first time."""
        if key not in self._entries:
            self._entries[key] = compute()
        return self._entries[key]

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries


@dataclass(frozen=True, kw_only=True)
class ColocatedPlanKey:
    """A colocated plan of one shape and token budget in one phase at one rate."""

    shape: str
    chunk_tokens: int | None
    phase: str
    per_instance_goodput_rps: float
    rate_rps: float
    cluster_gpus: int


@dataclass(frozen=True, kw_only=True)
class RateFreeKey:
    """A colocated plan's figures that do not depend on the offered rate: its raw capacity
    and its percentiles at the goodput and at a light load."""

    shape: str
    chunk_tokens: int | None
    phase: str
    per_instance_goodput_rps: float
    instances: int


@dataclass(frozen=True, kw_only=True)
class SafeRateKey:
    """The per-instance rate a chunked plan keeps within the TPOT SLO."""

    shape: str
    chunk_tokens: int
    phase: str
    instances: int


@dataclass(frozen=True, kw_only=True)
class PoolsKey:
    """A phase's prefill and decode pools and best split at one cluster size."""

    phase_index: int
    cluster_gpus: int


@dataclass(frozen=True, kw_only=True)
class FragilityKey:
    """The shown split of the binding phase under the drift band's corners."""

    phase_index: int
    allocation: Hashable
    cluster_gpus: int


@dataclass(frozen=True, kw_only=True)
class PhasePools:
    """One phase's prefill and decode pools at the scenario's cluster size and its best
    integer split (``evaluate._phase_pools``)."""

    prefill: list[PoolOption]
    decode: list[PoolOption]
    prefill_caps: list[PrefillCapacity]
    decode_caps: list[DecodeCapacity]
    link_rate_per_prefill_gpu: float
    split: SplitResult
    own_pool: PoolRates
    """Prefill goodput per instance by the split's own pool size (every integer split)."""


RateFree = tuple[Any, ColocatedPoint]
"""(raw per-instance capacity, req/s — an array from the rate search; the colocated point at
the goodput and at a light load)."""


class ResultMemo:
    """Every kind of ``evaluate`` result kept across rates, one :class:`Memo` each."""

    def __init__(self) -> None:
        self.colocated_plans: Memo[ColocatedPlanKey, ColocatedPlan] = Memo()
        self.rate_free: Memo[RateFreeKey, RateFree] = Memo()
        self.safe_rates: Memo[SafeRateKey, Any] = Memo()
        """Per-instance TPOT-safe rate, req/s (an array from the rate search)."""
        self.pools: Memo[PoolsKey, PhasePools] = Memo()
        self.fragility: Memo[FragilityKey, Fragility | None] = Memo()

    def __len__(self) -> int:
        """Entries of every kind."""
        return sum(len(m) for m in (self.colocated_plans, self.rate_free, self.safe_rates,
                                    self.pools, self.fragility))
