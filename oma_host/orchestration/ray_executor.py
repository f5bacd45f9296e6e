"""The Ray executor, host side: a task graph's members run as Ray tasks.

Ray is imported only here, when a run asks for it. A host connects to one
cluster (Ray holds one connection per process), in a thread so it keeps
serving; an unreachable address or a task no node can fit is refused up front,
where Ray would wait for ever. A member is one Ray task without retry, since it
may have changed files; what Ray could not run fails with ``errorInfo.kind:
"executor"``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from types import ModuleType
from typing import Any, cast

from oma_host.core.abort import Aborted, AbortSignal, unless_aborted
from oma_host.core.config import AgentConfig
from oma_host.core.errors import InvalidMessageError, InvalidParamsError
from oma_host.core.recorder import RunRecorder
from oma_host.core.redact import Redactor
from oma_host.core.results import AgentRunResult
from oma_host.orchestration.executors import RayExecutor, TaskResources
from oma_host.orchestration.ray_member import EXECUTOR_ERROR, RUNNER_GRACE_S, run_member_task
from oma_host.orchestration.team_specs import Task, Team

log = logging.getLogger(__name__)

RAY_EXTRA = "pip install 'oma-host[ray]'"
CONNECT_CHECK_S = 5.0  # the TCP check of the address before ray.init
# After ray.cancel, how long the task has to end its member before force.
CANCEL_GRACE_S = RUNNER_GRACE_S + 5.0
FORCED_WAIT_S = 10.0  # after a forced cancel, how long to wait for Ray to say so
DEFAULT_CPUS = 1.0  # a member is a process of its own

# The cluster this host process is connected to (Ray allows one).
_connected: str | None = None
_connecting = asyncio.Lock()


class _OffMainThreadNotice(logging.Filter):
    """Drops Ray's warning that ``ray.init``, called off the main thread, set
    no SIGTERM handler: the host calls it there so that its own handlers stay."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("SIGTERM handler is not set")


logging.getLogger("ray._private.worker").addFilter(_OffMainThreadNotice())

# The Ray task that runs a member, made once per process.
_member_task: Any = None


def import_ray(where: str) -> ModuleType:
    """Ray, or InvalidParamsError naming the extra that installs it."""
    try:
        import ray
    except ImportError as error:
        raise InvalidParamsError(
            f'{where}.kind "ray" needs Ray, an optional extra of oma-host: {RAY_EXTRA} ({error})'
        ) from None
    return ray


async def open_ray_executor(
    config: RayExecutor, team: Team, tasks: list[Task], where: str, tasks_where: str
) -> RayMembers:
    """Connect to the cluster and check the tasks it is to run (see the module docstring)."""
    ray = import_ray(where)
    address = config.address or os.environ.get("RAY_ADDRESS")
    if not address:
        raise InvalidParamsError(
            f"{where}.address is required: no address was given and RAY_ADDRESS is not set"
        )
    await _connect(ray, address, where)
    if config.runtime_env is not None:
        try:
            ray.runtime_env.RuntimeEnv(**config.runtime_env)
        except Exception as error:  # Ray's own checks, in Ray's words
            raise InvalidParamsError(f"{where}.runtimeEnv: {error}") from None
    members = RayMembers(ray, config)
    nodes = await asyncio.to_thread(ray.nodes)
    capacities = [node["Resources"] for node in nodes if node.get("Alive")]
    for index, task in enumerate(tasks):
        if not members.takes(team.agents[task.assignee]):
            continue
        demand = members.demand(task)
        if not any(_fits(demand, capacity) for capacity in capacities):
            raise InvalidParamsError(
                f"{tasks_where}[{index}].resources: no alive node of the Ray cluster at "
                f"{address} has the resources {_describe(demand)} (the nodes have: "
                + "; ".join(_describe(capacity) for capacity in capacities)
                + ")"
            )
    return members


async def _connect(ray: ModuleType, address: str, where: str) -> None:
    global _connected
    async with _connecting:
        if _connected is not None:
            if _connected != address:
                raise InvalidParamsError(
                    f"{where}.address: this host is connected to the Ray cluster at "
                    f"{_connected}; one host process uses one cluster"
                )
            return
        await _check_reachable(address, where)
        try:
            await asyncio.to_thread(
                ray.init,
                address=address,
                log_to_driver=False,  # workers' output must never reach the host's stdout
                logging_level=logging.WARNING,
                namespace="oma-host",
            )
        except Exception as error:
            raise InvalidParamsError(
                f"{where}.address: could not connect to the Ray cluster at {address}: {error}"
            ) from None
        _connected = address


async def _check_reachable(address: str, where: str) -> None:
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise InvalidParamsError(f"{where}.address must be host:port (the cluster's GCS address)")
    try:
        async with asyncio.timeout(CONNECT_CHECK_S):
            _reader, writer = await asyncio.open_connection(host.strip("[]"), int(port))
    except (OSError, TimeoutError) as error:
        raise InvalidParamsError(
            f"{where}.address: no Ray cluster answers at {address} ({error or 'timed out'})"
        ) from None
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()


def _fits(demand: dict[str, float], capacity: dict[str, float]) -> bool:
    return all(capacity.get(name, 0.0) >= amount for name, amount in demand.items() if amount)


def _describe(resources: dict[str, float]) -> str:
    shown = {
        name: amount
        for name, amount in resources.items()
        if amount and not name.startswith("node:") and name != "object_store_memory"
    }
    return json.dumps(shown, sort_keys=True)


class RayMembers:
    """The members of one run that go to Ray, and how each is run there."""

    def __init__(self, ray: ModuleType, config: RayExecutor) -> None:
        self._ray = ray
        self._config = config
        global _member_task
        if _member_task is None:
            _member_task = ray.remote(run_member_task)
        self._remote = _member_task

    def takes(self, config: AgentConfig) -> bool:
        return config.backend is not None or self._config.placement == "ray"

    def resources(self, task: Task) -> TaskResources:
        own = task.resources or TaskResources()
        return own.over(self._config.resources)

    def demand(self, task: Task) -> dict[str, float]:
        """The task's resources, by Ray's names for them."""
        resources = self.resources(task)
        demand: dict[str, float] = {
            "CPU": DEFAULT_CPUS if resources.num_cpus is None else resources.num_cpus,
            "GPU": resources.num_gpus or 0.0,
            "memory": float(resources.memory or 0),
        }
        demand.update(resources.custom or {})
        return demand

    def _options(self, task: Task) -> dict[str, Any]:
        resources = self.resources(task)
        options: dict[str, Any] = {
            "num_cpus": DEFAULT_CPUS if resources.num_cpus is None else resources.num_cpus,
            "max_retries": 0,
            "name": f"oma-host:{task.id}",
        }
        if resources.num_gpus is not None:
            options["num_gpus"] = resources.num_gpus
        if resources.memory is not None:
            options["memory"] = resources.memory
        if resources.custom:
            options["resources"] = dict(resources.custom)
        if self._config.runtime_env is not None:
            options["runtime_env"] = self._config.runtime_env
        return options

    async def run(
        self,
        task: Task,
        config: AgentConfig,
        prompt: str,
        *,
        run_id: str,
        abort: AbortSignal | None,
    ) -> AgentRunResult:
        if not isinstance(prompt, str):  # the string-only boundary, before Ray sees anything
            raise InvalidMessageError("a team task's prompt must be a string", "prompt")
        if abort is not None and abort.aborted:
            return RunRecorder(run_id).result("cancelled", "the run was cancelled")
        payload = json.dumps(
            {
                "config": config.model_dump_json(by_alias=True, exclude_none=True),
                "prompt": prompt,
                "runId": run_id,
            }
        )
        redactor = Redactor(config.secrets, patterns=False)
        try:
            ref = await asyncio.to_thread(
                lambda: self._remote.options(**self._options(task)).remote(payload)
            )
        except Exception as error:  # Ray refused the task (its options, its runtime env)
            return _failed(run_id, f"Ray refused the task: {error}", redactor)
        answer = asyncio.wrap_future(ref.future())
        try:
            raw = await unless_aborted(asyncio.shield(answer), abort)
        except Aborted:
            raw = await self._cancel(ref, answer)
            if raw is None:
                return RunRecorder(run_id).result("cancelled", "the run was cancelled")
        except self._ray.exceptions.RayError as error:
            return _failed(run_id, f"the Ray task failed: {error}", redactor)
        return _result(run_id, raw, redactor)

    async def _cancel(self, ref: Any, answer: asyncio.Future[str]) -> str | None:
        """Cancel the task, with force if it has not ended within the grace;
        its answer if it gave one (the member's ``cancelled`` result)."""
        ray = self._ray
        await asyncio.to_thread(ray.cancel, ref)
        for force, wait in ((False, CANCEL_GRACE_S), (True, FORCED_WAIT_S)):
            if force:
                log.warning("a Ray task did not end within %ss of its cancel: forcing", wait)
                await asyncio.to_thread(ray.cancel, ref, force=True)
            try:
                async with asyncio.timeout(wait):
                    return await asyncio.shield(answer)
            except TimeoutError:
                continue
            except ray.exceptions.RayError:  # cancelled before it ran, or its worker killed
                return None
        return None


def _result(run_id: str, raw: str, redactor: Redactor) -> AgentRunResult:
    try:
        answer = json.loads(raw)
    except ValueError:
        return _failed(run_id, "the Ray task answered something that is not JSON", redactor)
    if EXECUTOR_ERROR in answer:
        return _failed(run_id, str(answer[EXECUTOR_ERROR]), redactor)
    return cast(AgentRunResult, redactor.redact_owned(answer))


def _failed(run_id: str, message: str, redactor: Redactor) -> AgentRunResult:
    message = redactor.redact(message)
    return RunRecorder(run_id).result("error", message, output=message, error_kind="executor")
