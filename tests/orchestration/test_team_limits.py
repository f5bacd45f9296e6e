"""oma/runTasks at its limits: a deep dependency chain is checked without
recursion (it once raised RecursionError, -32603, at 1,500 tasks), and more
than MAX_TASKS tasks are InvalidParams naming the limit."""

from __future__ import annotations

from typing import Any

import pytest

from oma_host.cli.client import HostClient, RpcError
from oma_host.core.config import parse_agent_config
from oma_host.core.errors import InvalidParamsError
from oma_host.orchestration.team_specs import MAX_TASKS, Team, parse_tasks

ECHO_TEAM = {"agents": [{"name": "w", "provider": "test", "model": "echo"}], "maxConcurrency": 8}


def reverse_chain(count: int) -> list[dict[str, Any]]:
    """Task i depends on task i+1: every task is listed before what it needs."""
    return [
        {
            "id": f"t{i}",
            "title": f"step {i}",
            "description": "",
            "dependsOn": [f"t{i + 1}"] if i + 1 < count else [],
        }
        for i in range(count)
    ]


def team() -> Team:
    return Team(
        agents={"w": parse_agent_config({"name": "w", "provider": "test", "model": "echo"})}
    )


async def test_more_tasks_than_the_limit_are_invalid_params_naming_it(host: HostClient) -> None:
    with pytest.raises(RpcError) as caught:
        await host.request("oma/runTasks", {"team": ECHO_TEAM, "tasks": reverse_chain(1500)})
    assert caught.value.code == -32602
    assert caught.value.data["type"] == "InvalidParams"
    assert "1500 tasks" in caught.value.message and "limit of 1000" in caught.value.message
    assert MAX_TASKS == 1000


async def test_a_chain_as_long_as_the_limit_in_reverse_order_runs(host: HostClient) -> None:
    result = await host.request(
        "oma/runTasks", {"team": ECHO_TEAM, "tasks": reverse_chain(MAX_TASKS)}, timeout=120
    )
    assert result["success"] is True
    assert len(result["tasks"]) == MAX_TASKS
    assert {task["status"] for task in result["tasks"]} == {"completed"}


def test_a_cycle_at_the_end_of_a_deep_chain_is_named_without_recursion() -> None:
    tasks = reverse_chain(MAX_TASKS)
    tasks[-1]["dependsOn"] = ["t500"]
    with pytest.raises(InvalidParamsError) as caught:
        parse_tasks(tasks, team())
    cycle = " -> ".join(f"t{i}" for i in [*range(500, MAX_TASKS), 500])
    assert str(caught.value) == f"tasks: dependsOn forms a cycle: {cycle}"


def test_shared_dependencies_are_not_cycles() -> None:
    tasks = [
        {"id": "a", "title": "", "description": "", "dependsOn": ["b", "c"]},
        {"id": "b", "title": "", "description": "", "dependsOn": ["d"]},
        {"id": "c", "title": "", "description": "", "dependsOn": ["d"]},
        {"id": "d", "title": "", "description": ""},
    ]
    assert [task.id for task in parse_tasks(tasks, team())] == ["a", "b", "c", "d"]


def test_a_self_dependency_is_a_cycle() -> None:
    tasks = [{"id": "a", "title": "", "description": "", "dependsOn": ["a"]}]
    with pytest.raises(InvalidParamsError, match="cycle: a -> a"):
        parse_tasks(tasks, team())
