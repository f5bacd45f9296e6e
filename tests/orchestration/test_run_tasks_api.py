"""OpenMultiAgent.run_tasks, the Python API of oma/runTasks: the same graph,
results and refusals, with the local executor (the Ray executor's runs are
tests/orchestration/test_ray_executor.py's, through the host)."""

from __future__ import annotations

from typing import Any

import pytest

from oma_host import InvalidParamsError, OpenMultiAgent


def member(name: str, script: str) -> dict[str, Any]:
    return {"name": name, "backend": {"kind": "process", "command": "sh", "args": ["-c", script]}}


AGENTS = [member("echo", 'printf "done: "; cat'), member("fail", "exit 3")]


async def test_a_graph_runs_with_its_dependencies_and_progress() -> None:
    events: list[dict[str, Any]] = []
    result = await OpenMultiAgent().run_tasks(
        AGENTS,
        [
            {"id": "a", "title": "A", "description": "x", "assignee": "echo"},
            {"id": "b", "title": "B", "description": "y", "assignee": "fail", "dependsOn": ["a"]},
            {"id": "c", "title": "C", "description": "z", "assignee": "echo", "dependsOn": ["b"]},
        ],
        executor={"kind": "local"},
        shared_memory=True,
        run_id="api-1",
        on_progress=events.append,
    )
    status = {task["id"]: task["status"] for task in result["tasks"]}
    assert status == {"a": "completed", "b": "failed", "c": "skipped"}
    assert result["tasks"][0]["result"]["output"] == "done: A\n\nx"
    assert "exited with code 3" in result["tasks"][1]["reason"]
    assert result["identity"] == {"runId": "api-1"}
    kinds = [event["type"] for event in events]
    assert kinds.count("task_start") == 2 and kinds.count("task_skipped") == 1


@pytest.mark.parametrize(
    ("tasks", "options", "message"),
    [
        (
            [{"title": "t", "description": "d", "resources": {"numCpus": 1}}],
            {},
            'tasks[0].resources: resources are for executor.kind "ray"',
        ),
        (
            [{"title": "t", "description": "d", "resources": {"numCpus": -1}}],
            {"executor": {"kind": "ray"}},
            "tasks[0].resources.numCpus: Input should be greater than or equal to 0",
        ),
        (
            [{"title": "t", "description": "d"}],
            {"executor": {"kind": "ray", "placement": "everywhere"}},
            "executor.placement: Input should be 'host' or 'ray'",
        ),
        (
            [{"title": "t", "description": "d"}],
            {"executor": {"kind": "remote"}},
            "executor: Input tag 'remote' found using 'kind' does not match",
        ),
        ([{"title": "t", "description": "d"}], {"max_concurrency": 0}, "max_concurrency"),
    ],
)
async def test_refusals_come_before_any_task_runs(
    tasks: list[dict[str, Any]], options: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidParamsError) as caught:
        await OpenMultiAgent().run_tasks(AGENTS, tasks, **options)
    assert message in str(caught.value)
