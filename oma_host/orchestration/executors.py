"""Where a task graph's members run: ``oma/runTasks``'s ``executor``, a task's ``resources``.

``local`` (the default) runs every member in the host; ``ray`` runs external
agents, and with ``placement: "ray"`` LLM agents too, as Ray tasks.
``resources`` mean something to Ray only, so a task naming them under the local
executor is refused. docs/orchestration.md, "Executors: the host, or a Ray
cluster".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel

from oma_host.core.errors import InvalidParamsError
from oma_host.core.validation import describe_validation_error


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        strict=True,
    )


ResourceName = Annotated[str, Field(min_length=1)]


class TaskResources(_Model):
    """What one task holds on a node while it runs (Ray's task resources)."""

    num_cpus: Annotated[float, Field(ge=0)] | None = Field(
        default=None, description="CPUs (default 1: a member is a process of its own)"
    )
    num_gpus: Annotated[float, Field(ge=0)] | None = Field(default=None, description="GPUs")
    memory: Annotated[int, Field(ge=1)] | None = Field(default=None, description="bytes of memory")
    custom: dict[ResourceName, Annotated[float, Field(gt=0)]] | None = Field(
        default=None,
        description="custom resources by name, as the nodes declare them "
        '(e.g. {"repo-checkout": 1} for the nodes that have the repository)',
    )

    def over(self, base: TaskResources | None) -> TaskResources:
        """These resources over ``base``: each field set here replaces
        ``base``'s (``custom`` as a whole)."""
        if base is None:
            return self
        return TaskResources(
            num_cpus=self.num_cpus if self.num_cpus is not None else base.num_cpus,
            num_gpus=self.num_gpus if self.num_gpus is not None else base.num_gpus,
            memory=self.memory if self.memory is not None else base.memory,
            custom=self.custom if self.custom is not None else base.custom,
        )


class LocalExecutor(_Model):
    """Every member runs in the host (the default)."""

    kind: Literal["local"]


class RayExecutor(_Model):
    """External members (and LLM members with ``placement: "ray"``) run as
    Ray tasks on the cluster at ``address``."""

    kind: Literal["ray"]
    address: Annotated[str, Field(min_length=1)] | None = Field(
        default=None,
        description="the cluster's GCS address, host:port (default: RAY_ADDRESS)",
    )
    runtime_env: dict[str, Any] | None = Field(
        default=None,
        description="Ray's runtime environment for every task (pip, env_vars, working_dir...)",
    )
    resources: TaskResources | None = Field(
        default=None, description="every task's resources, under a task's own"
    )
    placement: Literal["host", "ray"] = Field(
        default="host", description='where LLM members run: "host" (default) or "ray"'
    )


ExecutorConfig = Annotated[LocalExecutor | RayExecutor, Field(discriminator="kind")]
_EXECUTOR: TypeAdapter[LocalExecutor | RayExecutor] = TypeAdapter(ExecutorConfig)
_RESOURCES: TypeAdapter[TaskResources] = TypeAdapter(TaskResources)
# The tags of that union, which pydantic puts into error locations.
EXECUTOR_KINDS = frozenset({"local", "ray"})


def parse_executor(value: Any, where: str = "executor") -> LocalExecutor | RayExecutor:
    """An executor from a mapping (the Python API); None is the local one."""
    if value is None:
        return LocalExecutor(kind="local")
    if isinstance(value, LocalExecutor | RayExecutor):
        return value
    if not isinstance(value, Mapping):
        raise InvalidParamsError(f"{where} must be an object")
    try:
        return _EXECUTOR.validate_python(dict(value))
    except ValidationError as error:
        raise InvalidParamsError(
            describe_validation_error(error, where, EXECUTOR_KINDS, RayExecutor)
        ) from None


def parse_resources(value: Any, where: str) -> TaskResources | None:
    """A task's ``resources`` from a mapping (the Python API, a plan)."""
    if value is None or isinstance(value, TaskResources):
        return value
    try:
        return _RESOURCES.validate_python(value)
    except ValidationError as error:
        raise InvalidParamsError(
            describe_validation_error(error, where, (), TaskResources)
        ) from None
