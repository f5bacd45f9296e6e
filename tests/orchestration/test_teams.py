"""oma/runTasks and oma/runTeam: a task DAG with parallel branches and a
failing node, text-only tasks and goals, and a coordinator-planned team run
against the provider simulator."""

from __future__ import annotations

import json
from typing import Any

import pytest

from oma_host.cli.client import HostClient, RpcError
from oma_host.testing.simulator import Reply, Simulator


def worker(name: str, script: str) -> dict[str, Any]:
    return {"name": name, "backend": {"kind": "process", "command": "sh", "args": ["-c", script]}}


TEAM = {
    "agents": [
        worker("echoer", 'sleep 0.3; printf "done: "; cat'),
        worker("failer", "echo broken >&2; exit 4"),
    ],
    "sharedMemory": True,
    "maxConcurrency": 2,
}


def progress(client: HostClient) -> list[dict[str, Any]]:
    return [n["params"] for n in client.notifications if n["method"] == "oma/progress"]


async def test_dag_runs_branches_in_parallel_and_skips_what_a_failure_blocks(
    host: HostClient,
) -> None:
    tasks = [
        {"id": "a", "title": "A", "description": "first branch", "assignee": "echoer"},
        {"id": "b", "title": "B", "description": "second branch", "assignee": "echoer"},
        {
            "id": "c",
            "title": "C",
            "description": "breaks",
            "assignee": "failer",
            "dependsOn": ["a"],
        },
        {
            "id": "d",
            "title": "D",
            "description": "after c",
            "assignee": "echoer",
            "dependsOn": ["c"],
        },
        {
            "id": "e",
            "title": "E",
            "description": "joins",
            "assignee": "echoer",
            "dependsOn": ["a", "b"],
        },
    ]
    result = await host.request(
        "oma/runTasks", {"team": TEAM, "tasks": tasks, "progress": True, "runId": "dag-1"}
    )
    status = {task["id"]: task["status"] for task in result["tasks"]}
    assert status == {
        "a": "completed",
        "b": "completed",
        "c": "failed",
        "d": "skipped",
        "e": "completed",
    }
    assert result["success"] is False
    by_id = {task["id"]: task for task in result["tasks"]}
    assert "exited with code 4" in by_id["c"]["reason"]
    assert by_id["d"]["reason"] == "dependency 'c' did not complete"
    # Shared memory: E's prompt carried A's and B's outputs.
    e_output = by_id["e"]["result"]["output"]
    assert "### A\ndone: A\n\nfirst branch" in e_output and "### B\ndone: B" in e_output
    events = progress(host)
    assert all(event["runId"] == "dag-1" for event in events)
    kinds = [(event["type"], (event["data"] or {}).get("taskId")) for event in events]
    # A and B ran side by side: both started before either completed.
    first_complete = kinds.index(("task_complete", "a"))
    assert ("task_start", "b") in kinds[:first_complete]
    assert ("task_skipped", "d") in kinds
    assert ("task_start", "d") not in kinds
    assert {kind for kind, _ in kinds} == {
        "task_start",
        "agent_start",
        "agent_complete",
        "task_complete",
        "task_skipped",
        "plan",
    }
    assert result["output"] == by_id["e"]["result"]["output"]  # the completed sink
    # The tasks as a plan: all pending first, then each change, the last one final.
    plans = [
        [(entry["content"], entry["status"]) for entry in event["data"]["entries"]]
        for event in events
        if event["type"] == "plan"
    ]
    assert plans[0] == [(title, "pending") for title in "ABCDE"]
    assert plans[-1] == [
        ("A", "completed"),
        ("B", "completed"),
        (f"C (failed: {by_id['c']['reason']})", "completed"),
        ("D (skipped: dependency 'c' did not complete)", "completed"),
        ("E", "completed"),
    ]
    assert ("A", "in_progress") in plans[1]  # a task shows as running once it starts
    assert len(plans) == 1 + 4 + 4 + 1  # first; four starts, four ends; one skip


async def test_without_shared_memory_tasks_see_only_their_own_text(host: HostClient) -> None:
    team = {**TEAM, "sharedMemory": False}
    tasks = [
        {"id": "a", "title": "A", "description": "one", "assignee": "echoer"},
        {"id": "b", "title": "B", "description": "two", "assignee": "echoer", "dependsOn": ["a"]},
    ]
    result = await host.request(
        "oma/runTasks", {"team": team, "tasks": tasks, "workDoneToken": "w"}
    )
    assert result["success"] is True
    assert result["tasks"][1]["result"]["output"] == "done: B\n\ntwo"
    values = [value for value in host.progress("w") if value["kind"] != "report"]
    assert values == [{"kind": "begin", "title": "team"}, {"kind": "end", "message": "ok"}]


@pytest.mark.parametrize(
    ("tasks", "fragment"),
    [
        (
            [
                {
                    "title": "x",
                    "description": [{"role": "user", "content": []}],
                    "assignee": "echoer",
                }
            ],
            "tasks[0].description must be a string",
        ),
        (
            [{"title": "x", "description": [{"type": "text", "text": "hi"}]}],
            "text-only",
        ),
        (
            [
                {"id": "a", "title": "a", "description": "", "dependsOn": ["b"]},
                {"id": "b", "title": "b", "description": "", "dependsOn": ["a"]},
            ],
            "cycle: a -> b -> a",
        ),
        ([{"title": "x", "description": "", "dependsOn": ["nope"]}], "'nope' is not a task id"),
        ([{"title": "x", "description": "", "assignee": "ghost"}], "'ghost' is not a team agent"),
        ([], "non-empty array"),
    ],
)
async def test_bad_task_graphs_are_invalid_params_naming_the_field(
    host: HostClient, tasks: list[Any], fragment: str
) -> None:
    with pytest.raises(RpcError) as caught:
        await host.request("oma/runTasks", {"team": TEAM, "tasks": tasks})
    assert caught.value.code == -32602
    assert caught.value.data["type"] == "InvalidParams"
    assert fragment in caught.value.message


async def test_team_token_budget_skips_tasks_once_spent(host: HostClient) -> None:
    team = {
        "agents": [{"name": "llm", "provider": "test", "model": "echo"}],
        "maxTokenBudget": 10,
        "maxConcurrency": 1,
    }
    tasks = [
        {"id": "a", "title": "A", "description": "x" * 200},
        {"id": "b", "title": "B", "description": "y"},
    ]
    result = await host.request("oma/runTasks", {"team": team, "tasks": tasks})
    status = [task["status"] for task in result["tasks"]]
    assert status == ["completed", "skipped"]
    assert "maxTokenBudget=10" in result["tasks"][1]["reason"]


async def test_run_team_plans_runs_and_synthesises_against_the_simulator(
    host: HostClient,
) -> None:
    with Simulator() as sim:
        llm = {
            "provider": "anthropic",
            "model": "sim",
            "baseURL": sim.base_url,
            "apiKey": "k-123456",
        }
        team = {
            "agents": [
                {"name": "researcher", "systemPrompt": "You find facts.", **llm},
                {"name": "writer", "systemPrompt": "You write prose.", **llm},
            ],
            "maxConcurrency": 1,
            "sharedMemory": True,
        }
        cyclic = {
            "tasks": [
                {
                    "id": "t1",
                    "title": "R",
                    "description": "r",
                    "assignee": "researcher",
                    "dependsOn": ["t2"],
                },
                {
                    "id": "t2",
                    "title": "W",
                    "description": "w",
                    "assignee": "writer",
                    "dependsOn": ["t1"],
                },
            ]
        }
        plan = {
            "tasks": [
                {
                    "id": "t1",
                    "title": "Research",
                    "description": "Find three facts.",
                    "assignee": "researcher",
                },
                {
                    "id": "t2",
                    "title": "Write",
                    "description": "Write a paragraph.",
                    "assignee": "writer",
                    "dependsOn": ["t1"],
                },
            ]
        }
        sim.script(
            Reply.text(json.dumps(cyclic)),
            Reply.text(json.dumps(plan)),
            Reply.text("Fact one. Fact two. Fact three."),
            Reply.text("A paragraph about three facts."),
            Reply.text("Final: a paragraph about three facts."),
        )
        result = await host.request(
            "oma/runTeam", {"team": team, "goal": "Explain three facts.", "progress": True}
        )
        assert result["success"] is True
        assert result["output"] == "Final: a paragraph about three facts."
        assert [t["status"] for t in result["tasks"]] == ["completed", "completed"]
        assert result["plan"][1] == {
            "id": "t2",
            "title": "Write",
            "assignee": "writer",
            "dependsOn": ["t1"],
        }
        assert result["tokenUsage"]["input_tokens"] == 50  # five model calls of 10
        bodies = [request.body for request in sim.requests]
        assert len(bodies) == 5
        assert "Explain three facts." in bodies[0]["messages"][0]["content"][0]["text"]
        # Anthropic's system prompt goes as one text block marked for the prompt cache.
        assert '"enum": ["researcher", "writer"]' in bodies[0]["system"][0]["text"]
        assert "cycle" in bodies[1]["messages"][0]["content"][0]["text"]
        assert bodies[3]["system"][0]["text"] == "You write prose."
        assert "Fact one." in bodies[3]["messages"][0]["content"][0]["text"]
        assert "A paragraph about three facts." in bodies[4]["messages"][0]["content"][0]["text"]
        kinds = [event["type"] for event in progress(host)]
        assert kinds.count("task_start") == 2 and kinds.count("task_complete") == 2


async def test_run_team_goal_must_be_text(host: HostClient) -> None:
    team = {"agents": [{"name": "a", "provider": "test", "model": "echo"}]}
    with pytest.raises(RpcError) as caught:
        await host.request("oma/runTeam", {"team": team, "goal": [{"type": "text", "text": "hi"}]})
    assert caught.value.code == -32602 and "goal" in caught.value.message
