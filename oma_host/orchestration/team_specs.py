"""What a team run is given, parsed and checked before anything runs: members and task graph.

An error is InvalidParams (or InvalidMessage) naming the field.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from oma_host.core.config import AgentConfig
from oma_host.core.cycles import first_cycle
from oma_host.core.errors import InvalidMessageError, InvalidParamsError
from oma_host.core.plugins import check_agent_config
from oma_host.orchestration.executors import (
    LocalExecutor,
    RayExecutor,
    TaskResources,
    parse_resources,
)

DEFAULT_MAX_CONCURRENCY = 3
# The most tasks one run takes: a bound on the work a single request can queue.
MAX_TASKS = 1000


@dataclass(frozen=True)
class Task:
    id: str
    title: str
    description: str
    assignee: str
    depends_on: tuple[str, ...] = ()
    # What the task holds on a node (the Ray executor's; see executors.py).
    resources: TaskResources | None = None


@dataclass(frozen=True)
class Team:
    agents: dict[str, AgentConfig]
    shared_memory: bool = False
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY
    max_token_budget: int | None = None
    coordinator: AgentConfig | None = None


def _text(value: Any, where: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        raise InvalidParamsError(
            f"{where} must be a string: team tasks and goals are text-only, "
            "so a message list or content blocks cannot be used here"
        )
    raise InvalidParamsError(f"{where} must be a string")


def check_members(members: list[AgentConfig], where: str = "team.agents") -> dict[str, AgentConfig]:
    """The team's agents by name: each refused now if an Agent would refuse
    it, and no name used twice."""
    agents: dict[str, AgentConfig] = {}
    for index, config in enumerate(members):
        at = f"{where}[{index}]"
        check_member(config, at)
        if config.name in agents:
            raise InvalidParamsError(f"{at}.name {config.name!r} is used twice")
        agents[config.name] = config
    return agents


def check_member(config: AgentConfig, where: str) -> None:
    """Everything Agent() would refuse (provider, tools, outputSchema,
    history, delegates with no agents to find), refused now, before any task
    starts."""
    if config.delegates:
        raise InvalidParamsError(
            f"{where}.delegates: a team's agents cannot delegate (each task runs on a fresh "
            "agent with no session to find others in); hand work on with dependsOn"
        )
    try:
        check_agent_config(config)
    except InvalidParamsError as error:
        raise InvalidParamsError(f"{where}: {error}") from None
    except InvalidMessageError as error:
        path = f"{where}.{error.path}" if error.path else where
        raise InvalidMessageError(f"{where}: {error}", path) from None


def parse_tasks(
    raw: Any, team: Team, where: str = "tasks", *, with_resources: bool = False
) -> list[Task]:
    """Tasks with ids, assignees and dependencies checked; cycles refused.
    ``with_resources``: a task may name its ``resources`` (a caller's tasks;
    a coordinator's plan may not)."""
    fields = {"id", "title", "description", "assignee", "dependsOn"}
    if with_resources:
        fields.add("resources")
    if not isinstance(raw, list) or not raw:
        raise InvalidParamsError(f"{where} must be a non-empty array of tasks")
    names = list(team.agents)
    tasks: list[Task] = []
    for index, item in enumerate(raw):
        at = f"{where}[{index}]"
        if not isinstance(item, dict):
            raise InvalidParamsError(f"{at} must be an object")
        unknown = set(item) - fields
        if unknown:
            raise InvalidParamsError(f"{at}.{sorted(unknown)[0]}: is not a known field")
        task_id = item.get("id", f"task-{index + 1}")
        if not isinstance(task_id, str) or not task_id:
            raise InvalidParamsError(f"{at}.id must be a non-empty string")
        assignee = item.get("assignee", names[index % len(names)])
        if not isinstance(assignee, str):
            raise InvalidParamsError(f"{at}.assignee must be a string")
        depends = item.get("dependsOn", [])
        if not isinstance(depends, list) or not all(isinstance(d, str) for d in depends):
            raise InvalidParamsError(f"{at}.dependsOn must be an array of task ids")
        tasks.append(
            Task(
                id=task_id,
                title=_text(item.get("title"), f"{at}.title"),
                description=_text(item.get("description"), f"{at}.description"),
                assignee=assignee,
                depends_on=tuple(depends),
                resources=parse_resources(item.get("resources"), f"{at}.resources"),
            )
        )
    check_tasks(tasks, team, where)
    return tasks


def check_tasks(tasks: list[Task], team: Team, where: str = "tasks") -> None:
    """Assignees are team agents, ids are unique, dependencies name tasks,
    and ``dependsOn`` forms no cycle."""
    if len(tasks) > MAX_TASKS:
        raise InvalidParamsError(
            f"{where} has {len(tasks)} tasks, over the limit of {MAX_TASKS} tasks per run"
        )
    for index, task in enumerate(tasks):
        if task.assignee not in team.agents:
            raise InvalidParamsError(
                f"{where}[{index}].assignee {task.assignee!r} is not a team agent "
                f"(agents: {', '.join(team.agents)})"
            )
    uses = Counter(task.id for task in tasks)
    for index, task in enumerate(tasks):
        if uses[task.id] > 1:
            raise InvalidParamsError(f"{where}[{index}].id {task.id!r} is used twice")
        for dependency in task.depends_on:
            if dependency not in uses:
                raise InvalidParamsError(
                    f"{where}[{index}].dependsOn: {dependency!r} is not a task id"
                )
    _refuse_cycles(tasks, where)


def check_task_resources(
    tasks: list[Task], executor: LocalExecutor | RayExecutor, where: str = "tasks"
) -> None:
    """A task's ``resources`` are for the Ray executor: refused under the local one."""
    if executor.kind == "ray":
        return
    for index, task in enumerate(tasks):
        if task.resources is not None:
            raise InvalidParamsError(
                f'{where}[{index}].resources: resources are for executor.kind "ray"; '
                "the local executor runs every task in the host"
            )


def _refuse_cycles(tasks: list[Task], where: str) -> None:
    """The first cycle met depth-first from each task in order, along
    ``dependsOn`` in order, is named."""
    by_id = {task.id: task for task in tasks}
    cycle = first_cycle(by_id, lambda task_id: by_id[task_id].depends_on)
    if cycle is not None:
        raise InvalidParamsError(f"{where}: dependsOn forms a cycle: {' -> '.join(cycle)}")
