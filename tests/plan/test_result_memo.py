"""``evaluate``'s results kept across rates live in typed memos the capacities own (#27
item 7): no public dictionary filled under ad-hoc keys, and an evaluation at another rate
reuses the rate-free entries and adds only rate-dependent ones."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from advisor.core.plan.capacities import Capacities
from advisor.core.plan.evaluate import evaluate
from advisor.core.plan.result_memo import Memo, RateFreeKey, ResultMemo
from advisor.loading.catalog import ProfileCatalog
from advisor.loading.resolve import load_scenario

ROOT = Path(__file__).resolve().parents[2]


def test_memo_computes_once_and_keeps_the_object() -> None:
    memo: Memo[RateFreeKey, list[int]] = Memo()
    key = RateFreeKey(shape="TP2", chunk_tokens=512, phase="chat",
                      per_instance_goodput_rps=1.5, instances=4)
    calls: list[int] = []
    first = memo.get(key, lambda: calls.append(1) or [1])  # type: ignore[func-returns-value]
    again = memo.get(replace(key), lambda: calls.append(2) or [2])  # type: ignore[func-returns-value]
    assert first is again and calls == [1] and len(memo) == 1 and key in memo
    other = replace(key, instances=5)
    assert memo.get(other, lambda: [3]) == [3] and len(memo) == 2


def test_capacities_expose_no_public_mutable_cache() -> None:
    sc = load_scenario(ROOT / "examples" / "chat-8b-single-node.yaml", ProfileCatalog())
    caps = Capacities(sc)
    evaluate(sc, caps)
    public = {name: value for name, value in vars(caps).items() if not name.startswith("_")}
    assert not any(isinstance(v, (dict, list, set)) for v in public.values()), public
    assert isinstance(caps.results, ResultMemo) and len(caps.results) > 0


def test_another_rate_reuses_the_rate_free_entries() -> None:
    sc = load_scenario(ROOT / "examples" / "chat-8b-single-node.yaml", ProfileCatalog())
    caps = Capacities(sc)
    first = evaluate(sc, caps)
    memo = caps.results
    rate_free, pools = len(memo.rate_free), len(memo.pools)
    plans = len(memo.colocated_plans)
    faster = replace(sc, phases=tuple(replace(p, rate_rps=p.rate_rps * 1.5) for p in sc.phases))
    second = evaluate(faster, caps)
    assert len(memo.rate_free) == rate_free  # capacity and light-load figures: rate-free
    assert len(memo.pools) == pools  # pools at one cluster size do not read the rate
    assert len(memo.colocated_plans) > plans  # a plan's percentiles at the new rate
    assert second == evaluate(faster)  # the shared entries change nothing
    assert first == evaluate(sc)
