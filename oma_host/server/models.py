"""Wire models for request params, parsed at the edge with pydantic.

Params arrive from pygls as plain JSON; every handler parses them into one of
these before doing anything. Unknown fields are rejected so a misspelt field
is an InvalidParams error rather than a silently ignored one. ``input`` stays
``Any`` here: the shape guard, not pydantic, owns its validation and paths.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from oma_host.core.errors import InvalidParamsError
from oma_host.core.messages import schema_ref

ProgressToken = int | str

# Validation of these is the shape guard's and AgentConfig's, not pydantic's
# here; the annotations only point ``oma-host schema`` at their definitions.
RunInputField = Annotated[Any, schema_ref("RunInput")]
PromptInputField = Annotated[Any, schema_ref("PromptInput")]
ConfigField = Annotated[dict[str, Any], schema_ref("AgentConfig")]


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class CreateParams(_Params):
    config: ConfigField
    session_id: str | None = Field(default=None, alias="sessionId")


class AgentIdParams(_Params):
    agent_id: str = Field(alias="agentId")


class RunParams(AgentIdParams):
    input: RunInputField
    run_id: str | None = Field(default=None, alias="runId")
    work_done_token: ProgressToken | None = Field(default=None, alias="workDoneToken")
    partial_result_token: ProgressToken | None = Field(default=None, alias="partialResultToken")


class StreamParams(RunParams):
    partial_result_token: ProgressToken = Field(alias="partialResultToken")


class PromptParams(AgentIdParams):
    input: PromptInputField
    run_id: str | None = Field(default=None, alias="runId")
    work_done_token: ProgressToken | None = Field(default=None, alias="workDoneToken")


class ListParams(_Params):
    pass


class RunAgentParams(_Params):
    config: ConfigField
    input: RunInputField
    progress: bool = False
    run_id: str | None = Field(default=None, alias="runId")
    metadata: dict[str, Any] | None = None
    work_done_token: ProgressToken | None = Field(default=None, alias="workDoneToken")


class CancelParams(BaseModel):
    id: int | str


M = TypeVar("M", bound=BaseModel)


def parse_params(model: type[M], params: Any, method: str) -> M:
    """Parse params or raise InvalidParamsError saying which field and why."""
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise InvalidParamsError(f"{method}: params must be an object")
    try:
        return model.model_validate(params)
    except ValidationError as error:
        problems = []
        for item in error.errors():
            where = ".".join(str(part) for part in item["loc"])
            message = "is not a known field" if item["type"] == "extra_forbidden" else item["msg"]
            problems.append(f"params.{where}: {message}" if where else message)
        raise InvalidParamsError(f"{method}: " + "; ".join(problems)) from None
