"""Delegation's bounds as the core keeps them (:class:`Lineage`) and the
check of an agents file's delegates. The tool itself is tested through the
real host in tests/llm/test_delegate_tool.py and
tests/acp_server/test_delegate.py; what a delegate's run adds to its
caller's spending in tests/llm/test_delegation.py."""

from __future__ import annotations

import pytest

from oma_host.core.config import DelegationConfig, parse_agent_config
from oma_host.core.delegation import Lineage, check_delegate_graph
from oma_host.core.errors import InvalidParamsError


def test_three_levels_go_beneath_a_run_by_default() -> None:
    root = Lineage.root(None)
    first = root.child(None)
    second = first.child(None)
    third = second.child(None)
    assert [lineage.refusal() is None for lineage in (root, first, second)] == [True] * 3
    assert (third.depth, third.room) == (3, 0)
    refusal = third.refusal()
    assert refusal is not None and refusal.startswith("this run is 3 delegation(s) deep")


def test_a_delegate_keeps_the_smaller_room_its_own_or_its_callers() -> None:
    root = Lineage.root(DelegationConfig(max_depth=5))
    shallow = root.child(DelegationConfig(max_depth=1))
    assert shallow.room == 1
    assert shallow.child(None).room == 0
    assert (
        Lineage.root(DelegationConfig(max_depth=2)).child(DelegationConfig(max_depth=9)).room == 1
    )


def test_the_tree_shares_one_count_of_delegations() -> None:
    root = Lineage.root(DelegationConfig(max_calls=3))
    left = root.child(None)
    left.child(None)
    root.child(None)
    assert root.made == 3 and left.made == 3
    refusal = left.refusal()
    assert refusal is not None and "3 delegations have been made" in refusal


def test_delegates_are_named_and_checked_for_loops_together() -> None:
    configs = [
        parse_agent_config({"name": "lead", "model": "m", "delegates": ["a", "b"]}),
        parse_agent_config({"name": "a", "model": "m", "delegates": ["b"]}),
        parse_agent_config({"name": "b", "model": "m"}),
    ]
    check_delegate_graph(configs)  # a diamond is no loop
    looped = [*configs[:2], parse_agent_config({"name": "b", "model": "m", "delegates": ["a"]})]
    with pytest.raises(InvalidParamsError, match=r"\$\[1\]\.delegates: .* a -> b -> a"):
        check_delegate_graph(looped)
    with pytest.raises(InvalidParamsError, match=r"\$\[0\]\.delegates\[1\]: no agent named 'b'"):
        check_delegate_graph(configs[:2])


def test_a_delegate_twice_in_the_list_is_refused() -> None:
    with pytest.raises(InvalidParamsError, match=r"config\.delegates\[1\]: 'a' is listed twice"):
        parse_agent_config({"name": "lead", "model": "m", "delegates": ["a", "a"]})
