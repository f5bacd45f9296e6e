"""The params of every method as pydantic models: the one way params are checked.

Unknown fields are rejected and types are strict, so a misspelt field or a
``"3"`` for an integer is an error naming the field, never silently taken.
Fields whose owners know more than pydantic (``input``, an agent's ``config``,
``evaluation``) are left to them, with a schema reference for ``oma-host
schema``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, ClassVar, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    WithJsonSchema,
)

from oma_host.core.cli_options import collector_url
from oma_host.core.config import ModelDefaults
from oma_host.core.errors import InvalidParamsError
from oma_host.core.messages import schema_ref
from oma_host.core.validation import describe_validation_error, predicate_error
from oma_host.orchestration.executors import EXECUTOR_KINDS, ExecutorConfig, TaskResources
from oma_host.orchestration.team_specs import DEFAULT_MAX_CONCURRENCY
from oma_host.providers.http_settings import HttpSettings, Transport

ProgressToken = int | str

RunInputField = Annotated[Any, schema_ref("RunInput")]
PromptInputField = Annotated[Any, schema_ref("PromptInput")]
ConfigField = Annotated[dict[str, Any], schema_ref("AgentConfig")]
EvaluationField = Annotated[dict[str, Any], schema_ref("EvaluationConfig")]

_TEXT_ONLY = (
    "must be a string: team tasks and goals are text-only, "
    "so a message list or content blocks cannot be used here"
)


def _text_only(value: Any) -> Any:
    if isinstance(value, list):
        raise predicate_error(_TEXT_ONLY)
    return value


def _not_blank(value: str) -> str:
    if not value.strip():
        raise predicate_error("must be a non-empty string")
    return value


def _non_empty(what: str) -> Callable[[list[Any]], list[Any]]:
    def check(value: list[Any]) -> list[Any]:
        if not value:
            raise predicate_error(f"must be a non-empty array of {what}")
        return value

    return check


TeamText = Annotated[str, BeforeValidator(_text_only)]


def require_object(params: Any, method: str) -> dict[str, Any]:
    """Params as an object (absent params are an empty one)."""
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise InvalidParamsError(f"{method}: params must be an object")
    return params


class Params(BaseModel):
    """Base of every params model: strict, no unknown fields."""

    model_config = ConfigDict(extra="forbid", strict=True)
    # The tags of the discriminated unions among the fields, which pydantic
    # puts into error locations and an error's path leaves out.
    union_tags: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def from_wire(cls, params: Any, method: str) -> Self:
        """Parse params or raise InvalidParamsError saying which field and why."""
        try:
            return cls.model_validate(require_object(params, method))
        except ValidationError as error:
            raise InvalidParamsError(
                describe_validation_error(error, f"{method}: params", cls.union_tags, cls)
            ) from None

    @classmethod
    def wire_model(cls) -> type[BaseModel]:
        return cls


# -- lifecycle ------------------------------------------------------------------


def _http_field(alias: str, what: str, default: int, minimum: int = 1) -> Any:
    return Field(default=None, alias=alias, ge=minimum, description=f"{what} (default {default})")


_HTTP = HttpSettings()


class HttpOptions(Params):
    """The providers' HTTP client; it is shared by every session of the host
    process (``providers/http_settings.py``). A field left out keeps its default."""

    transport: Transport | None = Field(
        default=None, description='"aiohttp" (default), or "httpx" for its own transport'
    )
    max_connections: int | None = _http_field(
        "maxConnections", "connections open at once", _HTTP.max_connections
    )
    max_keep_alive_connections: int | None = _http_field(
        "maxKeepAliveConnections",
        "idle connections kept (httpx transport)",
        _HTTP.max_keep_alive_connections,
        minimum=0,
    )
    connect_timeout_ms: int | None = _http_field(
        "connectTimeoutMs", "connecting, TLS included", _HTTP.connect_timeout_ms
    )
    read_timeout_ms: int | None = _http_field(
        "readTimeoutMs", "longest wait for response bytes", _HTTP.read_timeout_ms
    )
    write_timeout_ms: int | None = _http_field(
        "writeTimeoutMs",
        "longest wait for the provider to take request bytes",
        _HTTP.write_timeout_ms,
    )
    pool_timeout_ms: int | None = _http_field(
        "poolTimeoutMs", "longest wait for a free connection", _HTTP.pool_timeout_ms
    )

    def settings(self) -> HttpSettings:
        return HttpSettings(**self.model_dump(exclude_none=True))


def _collector_url(value: str) -> str:
    try:
        return collector_url(value)
    except ValueError as error:
        raise predicate_error(str(error).replace("wants", "must be", 1)) from None


def _header_names(value: dict[str, str]) -> dict[str, str]:
    for name in value:
        if not name or not all(c.isalnum() or c in "!#$%&'*+-.^_`|~" for c in name):
            raise predicate_error(f"has {name!r}, which is not an HTTP header name")
    return value


class TelemetryOptions(Params):
    """Export the session's spans over OTLP/HTTP (docs/telemetry.md). Given
    (even empty), export is on unless ``export`` is false or
    ``OTEL_SDK_DISABLED=true``; a field left out is read from the ``OTEL_*``
    variables as the SDK reads them."""

    export: bool | None = Field(
        default=None,
        description="false: no export for this session, whatever the OTEL_* variables say "
        "(the runs are still recorded in the state directory; the other fields are not "
        "used); true or left out: export (OTEL_SDK_DISABLED=true still turns it off)",
    )
    endpoint: Annotated[str, AfterValidator(_collector_url)] | None = Field(
        default=None,
        description="the collector's OTLP/HTTP base URL; spans go to {endpoint}/v1/traces "
        "(default: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_ENDPOINT, "
        "else http://localhost:4318)",
    )
    headers: Annotated[dict[str, str], AfterValidator(_header_names)] | None = Field(
        default=None,
        description="HTTP headers sent with every export, over those of "
        "OTEL_EXPORTER_OTLP_HEADERS (an authorization token, say: never logged)",
    )
    service_name: str | None = Field(
        default=None,
        alias="serviceName",
        description="the resource's service.name (default: OTEL_SERVICE_NAME, else oma-host)",
    )
    capture_content: bool | None = Field(
        default=None,
        alias="captureContent",
        description="record message text in span attributes, redacted and bounded "
        "(default: OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true)",
    )


class InitializationOptions(Params):
    defaults: ModelDefaults | None = None
    http: HttpOptions | None = None
    telemetry: TelemetryOptions | None = None
    evaluation: EvaluationField | None = None
    state_dir: str | None = Field(default=None, alias="stateDir")
    # Checked, and taken out, by the connection before initialize runs
    # (server/app.py); declared so the schema documents it.
    auth_token: str | None = Field(
        default=None,
        alias="authToken",
        description="over TCP: the token from the host's token file (ignored on stdio)",
    )


# LSP's own fields are the client's business: documented, passed as they are.
_LspField = Annotated[Any, WithJsonSchema({"description": "as in LSP"})]


class LspInitializeParams(Params):
    """LSP's initialize params, of which ``initializationOptions`` is ours to check."""

    model_config = ConfigDict(extra="allow")

    process_id: _LspField = Field(default=None, alias="processId")
    capabilities: _LspField = None
    initialization_options: InitializationOptions | None = Field(
        default=None, alias="initializationOptions"
    )


# -- agents ---------------------------------------------------------------------


class NoParams(Params):
    """An empty object (or no params at all)."""


class CreateParams(Params):
    config: ConfigField
    session_id: str | None = Field(default=None, alias="sessionId")


class AgentIdParams(Params):
    agent_id: str = Field(alias="agentId")


class ConfigureParams(AgentIdParams):
    config_id: str = Field(
        alias="configId",
        min_length=1,
        description="a configOptions id, or mode / model for an agent with only modes / models",
    )
    value: str | bool = Field(description="a value id of that option (a boolean option: a boolean)")


class RewindParams(AgentIdParams):
    keep_turns: int = Field(
        alias="keepTurns",
        ge=0,
        description="the turns kept from the start; the conversation is cut back to before "
        "the next one (less than the turns the history holds)",
    )
    restore_files: bool = Field(
        default=False,
        alias="restoreFiles",
        description="also put the workspace back as it was before the first turn cut",
    )


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
    # Optional (an addition to the contract's agent/prompt): the turn streams
    # its events as $/progress under this token, as agent/stream does.
    partial_result_token: ProgressToken | None = Field(default=None, alias="partialResultToken")


class RunAgentParams(Params):
    config: ConfigField
    input: RunInputField
    progress: bool = False
    run_id: str | None = Field(default=None, alias="runId")
    metadata: dict[str, Any] | None = None
    work_done_token: ProgressToken | None = Field(default=None, alias="workDoneToken")


# -- teams ----------------------------------------------------------------------


class TeamParams(Params):
    agents: Annotated[list[ConfigField], AfterValidator(_non_empty("agent configs"))]
    shared_memory: bool = Field(default=False, alias="sharedMemory")
    max_concurrency: Annotated[int, Field(ge=1)] = Field(
        default=DEFAULT_MAX_CONCURRENCY, alias="maxConcurrency"
    )
    max_token_budget: Annotated[int, Field(ge=1)] | None = Field(
        default=None, alias="maxTokenBudget"
    )
    coordinator: ConfigField | None = None


class TaskParams(Params):
    """A task; ``id`` defaults to ``task-N`` (N counting from 1) and
    ``assignee`` to the team's agents in turn."""

    id: Annotated[str, Field(min_length=1)] | None = None
    title: TeamText
    description: TeamText
    assignee: str | None = None
    depends_on: list[str] = Field(default_factory=list, alias="dependsOn")
    resources: TaskResources | None = Field(
        default=None, description='what the task holds on a node (executor.kind "ray")'
    )


class RunTasksParams(Params):
    union_tags = EXECUTOR_KINDS

    team: TeamParams
    tasks: Annotated[list[TaskParams], AfterValidator(_non_empty("tasks"))]
    executor: ExecutorConfig | None = Field(
        default=None,
        description='where the members run: {"kind": "local"} (default, in the host) '
        'or {"kind": "ray", ...} (on a Ray cluster)',
    )
    progress: bool = False
    run_id: str | None = Field(default=None, alias="runId")
    work_done_token: ProgressToken | None = Field(default=None, alias="workDoneToken")


class RunTeamParams(Params):
    team: TeamParams
    goal: Annotated[TeamText, AfterValidator(_not_blank)]
    progress: bool = False
    run_id: str | None = Field(default=None, alias="runId")
    work_done_token: ProgressToken | None = Field(default=None, alias="workDoneToken")


# -- evaluation -----------------------------------------------------------------


class FlushParams(Params):
    timeout_ms: Annotated[float, Field(gt=0)] | None = Field(default=None, alias="timeoutMs")


class RecordsParams(Params):
    run_id: str | None = Field(default=None, alias="runId")
    limit: Annotated[int, Field(ge=1, le=10_000)] = 100


# -- models ---------------------------------------------------------------------


class ModelsListParams(Params):
    provider: str | None = Field(
        default=None, description="default: initializationOptions.defaults.provider, or anthropic"
    )
    base_url: str | None = Field(
        default=None,
        alias="baseURL",
        description=(
            "default: the defaults' baseURL for that provider, else the provider's "
            "variable (ANTHROPIC_BASE_URL...), else its own endpoint"
        ),
    )
    api_key_env: str | None = Field(
        default=None,
        alias="apiKeyEnv",
        description="the variable holding the key (default: the provider's standard one)",
    )
