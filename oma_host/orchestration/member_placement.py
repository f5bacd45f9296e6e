"""The executor opened for a task graph's run: none for local, the Ray executor when asked.

Kept apart from :mod:`.teams` and :mod:`.executors`, which the Ray executor
imports, so Ray is imported only when a run asks for it.
"""

from __future__ import annotations

from oma_host.orchestration.executors import LocalExecutor, RayExecutor
from oma_host.orchestration.team_specs import Task, Team
from oma_host.orchestration.teams import MemberExecutor


async def open_executor(
    executor: LocalExecutor | RayExecutor,
    team: Team,
    tasks: list[Task],
    where: str = "executor",
    tasks_where: str = "tasks",
) -> MemberExecutor | None:
    """The executor that runs members away from the host (None: the local
    one, which runs them all in it), connected and its tasks checked against
    the cluster. Raises InvalidParamsError naming ``where`` (or a task under
    ``tasks_where``): Ray not installed, no cluster at the address, a task no
    node can hold."""
    if executor.kind == "local":
        return None
    from oma_host.orchestration import ray_executor

    return await ray_executor.open_ray_executor(executor, team, tasks, where, tasks_where)
