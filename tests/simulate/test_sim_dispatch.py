"""The simulator's routers: each policy picks instances the way its name says (#27)."""

from __future__ import annotations

from collections import Counter

import pytest

from advisor.core.simulate.dispatch import Router


def _picks(policy: str, counts: list[int], draws: int, seed: int = 0) -> list[int]:
    router = Router(policy, counts, seed, 0)  # type: ignore[arg-type]
    return [router() for _ in range(draws)]


def test_round_robin_deals_in_turn_whatever_the_load() -> None:
    assert _picks("round-robin", [5, 0, 9], 7) == [0, 1, 2, 0, 1, 2, 0]


def test_least_loaded_takes_the_fewest_and_rotates_ties() -> None:
    assert _picks("least-loaded", [3, 1, 2, 1], 3) == [1, 3, 1]
    assert _picks("least-loaded", [0, 0, 0], 4) == [0, 1, 2, 0]


def test_random_is_uniform_and_seeded() -> None:
    picks = _picks("random", [0] * 4, 40_000)
    share = Counter(picks)
    assert all(abs(share[i] / 40_000 - 0.25) < 0.01 for i in range(4))
    assert picks[:50] == _picks("random", [0] * 4, 50)
    assert picks[:50] != _picks("random", [0] * 4, 50, seed=1)


def test_power_of_two_takes_the_less_loaded_of_two_distinct() -> None:
    counts = [0, 10, 10, 10]
    picks = Counter(_picks("power-of-two", counts, 30_000))
    # instance 0 wins whenever it is drawn: in 1 − (3/4 · 2/3) = 1/2 of the pairs
    assert abs(picks[0] / 30_000 - 0.5) < 0.02
    # the most loaded instance never wins against a less loaded one
    counts = [1, 2, 3]
    assert 2 not in set(_picks("power-of-two", counts, 2_000))


def test_one_instance_and_unknown_policies() -> None:
    assert _picks("power-of-two", [7], 3) == [0, 0, 0]
    with pytest.raises(ValueError, match="unknown router 'jsq'"):
        Router("jsq", [0, 0], 0, 0)  # type: ignore[arg-type]
